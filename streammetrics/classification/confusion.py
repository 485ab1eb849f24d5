"""Metrics of predicted labels, all computed from one confusion matrix of label-pair counts.

Every metric here keeps a :class:`~streammetrics.states.ContingencyCounts` over the union of the
labels seen in ``y_true`` and ``y_pred`` (or the configured ``labels``). The state is made of
counts, so merging is exact and split-invariant byte for byte; with ``sample_weight`` the counts
become float64 sums of weights (exact for whole-number weights up to 2**53).

Memory: O(L**2) for L distinct labels. ``update``: O(n) for integer labels of small range,
O(n log n) otherwise. ``merge``: O(L**2). ``compute``: O(L**2).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .._inputs import (
    as_array,
    as_labels,
    as_scores,
    as_weights,
    check_same_length,
    config_int,
    config_number,
)
from ..base import Metric
from ..errors import IncompatibleStateError, InputError
from ..states.contingency import ContingencyCounts
from ..states.labels import config_labels, union
from ..states.stacked import ConfusionStack
from ..uncertainty import (
    NAN_INTERVAL,
    check_level,
    confusion_delta_se,
    counts_delta_se,
    kish,
    no_interval,
    normal_interval,
    wilson,
)

__all__ = [
    "Accuracy",
    "ClassificationReport",
    "CohenKappa",
    "ConfusionMatrix",
    "F1",
    "FBeta",
    "MatthewsCorrCoef",
    "Precision",
    "Recall",
    "TopKAccuracy",
]

_AVERAGES = ("binary", "micro", "macro", "weighted", None)


def _label_value(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


class _ConfusionMetric(Metric, register=False):
    """Shared state and update of every metric of (y_true, y_pred) label pairs."""

    #: A fixed label set (only ``ConfusionMatrix(labels=...)`` sets one, before ``__init__``).
    _fixed_labels: list[Any] | None = None
    #: 2: the state gained ``weight_sq`` (sum of squared weights, for Kish's effective size).
    _schema: ClassVar[int] = 2
    #: Whether the state keeps ``weight_sq`` (only the metrics with an ``interval`` need it;
    #: ConfusionMatrix and ClassificationReport keep their schema-1 state).
    _keeps_weight_sq: ClassVar[bool] = True

    def __init__(self) -> None:
        super().__init__()
        fixed = None if self._fixed_labels is None else np.asarray(self._fixed_labels)
        self._add_state("counts", ContingencyCounts(shared=True, labels=fixed), merge=None)
        if self._keeps_weight_sq:
            self._add_state("weight_sq", 0.0, power=2)
        self._declare_rows("label", "label")

    counts: ContingencyCounts
    weight_sq: float

    def update(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        """Count a batch of (true label, predicted label) pairs, optionally weighted.

        Complexity: O(n) for integer labels of small range, O(n log n) otherwise.
        """
        yt, yp = as_labels(y_true, "y_true"), as_labels(y_pred, "y_pred")
        n = check_same_length(y_true=yt, y_pred=yp)
        weights = as_weights(sample_weight, n)
        if n == 0:
            return self
        merged = self.counts.merged(self.counts.batch(yt, yp, weights, ("y_true", "y_pred")))
        self._check_labels(merged.rows)
        if not self._keeps_weight_sq:
            return self._commit(n, counts=merged)
        sq = float(n) if weights is None else float(weights @ weights)
        return self._commit(n, counts=merged, weight_sq=self.weight_sq + sq)

    def _stacked(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        """This batch for a stacked update of many states (``streammetrics.states.stacked``),
        validated as :meth:`update` validates it; None for an empty batch."""
        yt, yp = as_labels(y_true, "y_true"), as_labels(y_pred, "y_pred")
        n = check_same_length(y_true=yt, y_pred=yp)
        weights = as_weights(sample_weight, n)
        if n == 0 or type(self).update is not _ConfusionMetric.update:
            return None
        stack = ConfusionStack(self, yt, yp, weights)
        self._check_labels(stack.labels)
        return stack

    def _check_labels(self, labels: np.ndarray) -> None:
        """Refuse, at update time, label sets the configuration cannot score."""

    def _check_compatible(self, other: Any) -> None:
        super()._check_compatible(other)
        # A merge must not build a label set that an update would have refused.
        try:
            self._check_labels(union(self.counts.rows, other.counts.rows))
        except InputError as exc:
            raise IncompatibleStateError(f"the merged state could not be scored: {exc}") from exc

    def _validate_state(self) -> None:
        self._check_labels(self.counts.rows)

    @classmethod
    def _upgrade_state(cls, state: Any, schema: int) -> Any:
        """Schema 1 (0.1.0) kept no ``weight_sq``: unweighted (integer) counts give it exactly
        (the row count); for weighted counts it is unknown (nan, so ``interval`` is nan)."""
        if cls._keeps_weight_sq and schema < 2 and isinstance(state, dict):
            counts, count = state.get("counts"), state.get("count")
            table = counts.get("table") if isinstance(counts, dict) else None
            unweighted = isinstance(table, np.ndarray) and table.dtype.kind in "iu"
            sq = float(count) if unweighted and isinstance(count, int) else math.nan
            state = {**state, "weight_sq": sq}
        return state

    def _n_eff(self) -> float:
        """Kish's effective sample size of the counted rows."""
        return kish(self.counts.total(), self.weight_sq)

    def _delta_interval(self, value: float, se: float, level: float, low: float) -> Any:
        return normal_interval(value, se, level, (low, 1.0))

    # -- shared views on the counts ------------------------------------------------------------

    def _table(self) -> tuple[np.ndarray, np.ndarray]:
        table: np.ndarray = self.counts.table
        return self.counts.rows, table


def _prf_divide(num: np.ndarray, den: np.ndarray, zero_division: float) -> np.ndarray:
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    mask = den == 0
    out = num / np.where(mask, 1.0, den)
    out[mask] = zero_division
    return out


def _nanaverage(values: np.ndarray, weights: np.ndarray | None) -> float:
    # scikit-learn's ``_nanaverage``: NaNs (from zero_division=nan) are left out; weights that
    # sum to zero fall back to the plain mean.
    if len(values) == 0:
        return math.nan
    keep = ~np.isnan(values)
    if not keep.any():
        return math.nan
    if weights is None:
        return float(np.mean(values[keep]))
    w = np.asarray(weights, dtype=np.float64)[keep]
    if w.sum() == 0:
        return float(np.mean(values[keep]))
    return float(np.average(values[keep], weights=w))


def _check_zero_division(zero_division: Any) -> float:
    if isinstance(zero_division, str) and zero_division == "warn":
        return 0.0  # scikit-learn's "warn" scores 0.0 (we do not warn)
    if isinstance(zero_division, (int, float)) and not isinstance(zero_division, bool):
        value = float(zero_division)
        if value in (0.0, 1.0) or math.isnan(value):
            return value
    raise InputError(f"zero_division: must be 0.0, 1.0, nan or 'warn'; got {zero_division!r}")


class _PRF(_ConfusionMetric, register=False):
    """Precision, recall and F-beta exactly as scikit-learn's precision_recall_fscore_support."""

    _metric: str = "f"

    def __init__(
        self,
        *,
        beta: float | None = None,
        average: str | None = "binary",
        pos_label: Any = 1,
        labels: Any = None,
        zero_division: Any = 0.0,
    ) -> None:
        super().__init__()
        if average not in _AVERAGES:
            raise InputError(f"average: must be one of {_AVERAGES}; got {average!r}")
        if isinstance(pos_label, (np.generic,)):
            pos_label = pos_label.item()
        if isinstance(pos_label, bool):
            pos_label = int(pos_label)
        if not isinstance(pos_label, (int, str)):
            raise InputError(f"pos_label: must be an int or a str; got {pos_label!r}")
        # Only FBeta configures beta; Precision, Recall and F1 score with beta = 1.
        if beta is not None:
            beta = config_number(beta, "beta", finite=False)
            self._add_config(beta=beta)
        self._beta = 1.0 if beta is None else float(beta)
        self._zero = _check_zero_division(zero_division)
        self._add_config(
            average=average,
            pos_label=pos_label,
            labels=config_labels(labels),
            zero_division=zero_division if isinstance(zero_division, str) else float(zero_division),
        )

    def _check_labels(self, labels: np.ndarray) -> None:
        if self._config["average"] != "binary":
            return
        if len(labels) > 2:
            raise InputError(
                f"y_true/y_pred: average='binary' needs two classes, but the labels "
                f"{labels.tolist()[:10]} have been seen; choose average='micro', 'macro', "
                "'weighted' or None"
            )
        pos = self._config["pos_label"]
        if len(labels) == 2 and pos not in labels.tolist():
            raise InputError(
                f"pos_label: {pos!r} is not a valid label; it should be one of {labels.tolist()}"
            )

    def _sums(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        labels, table = self._table()
        tp, pred, true = np.diagonal(table), table.sum(axis=0), table.sum(axis=1)
        average = self._config["average"]
        if average == "binary":
            selected: list[Any] | None = [self._config["pos_label"]]
        else:
            selected = self._config["labels"]
        if selected is not None:
            index = {_label_value(v): i for i, v in enumerate(labels)}
            pick = np.array([index.get(v, -1) for v in selected], dtype=np.int64)
            found = pick >= 0
            sums = []
            for s in (tp, pred, true):
                out = np.zeros(len(pick), dtype=np.float64)
                out[found] = s[pick[found]]
                sums.append(out)
            tp, pred, true = sums
        if average == "micro":
            tp, pred, true = (np.array([s.sum()], dtype=np.float64) for s in (tp, pred, true))
        return (
            np.asarray(tp, np.float64),
            np.asarray(pred, np.float64),
            np.asarray(true, np.float64),
        )

    def _scores(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        tp, pred, true = self._sums()
        beta, zero = self._beta, self._zero
        precision = _prf_divide(tp, pred, zero)
        recall = _prf_divide(tp, true, zero)
        if math.isinf(beta * beta):  # beta so large that beta**2 overflows scores as recall
            f = recall
        elif beta == 0:
            f = precision
        else:
            b2 = beta * beta
            f = _prf_divide((1 + b2) * tp, b2 * true + pred, zero)
        return precision, recall, f, true

    def _compute(self) -> Any:
        self._check_labels(self.counts.rows)
        precision, recall, f, true = self._scores()
        value = {"precision": precision, "recall": recall, "f": f}[self._metric]
        average = self._config["average"]
        if average is None:
            return value
        return _nanaverage(value, true if average == "weighted" else None)

    def _empty_result(self) -> Any:
        if self._config["average"] is None and self._config["labels"] is not None:
            return np.full(len(self._config["labels"]), np.nan)
        return math.nan

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """A ``level`` confidence interval for ``compute()`` (``docs/uncertainty.md``).

        Precision and recall with ``average="binary"`` or ``"micro"`` are proportions: the
        Wilson (1927) score interval, on Kish's effective size of the denominator's rows. F-beta
        (any average) and the macro/weighted averages: the delta method over the multinomial
        confusion counts (Agresti, *Categorical Data Analysis*, sec. 16.1), normal, clipped to
        [0, 1]. ``average=None`` gives an array, so it raises :class:`NoIntervalError`.
        O(L**2).
        """
        level = check_level(level)
        average = self._config["average"]
        if average is None:
            raise no_interval(type(self).__name__, "average=None gives one value per label")
        if self.count == 0:
            return NAN_INTERVAL
        self._check_labels(self.counts.rows)
        _, table = self._table()
        total = float(table.sum())
        design = self._n_eff() / total if total > 0 else math.nan
        if self._metric != "f" and average in ("binary", "micro"):
            tp, pred, true = self._sums()
            den = float((pred if self._metric == "precision" else true)[0])
            if den == 0:
                return NAN_INTERVAL
            return wilson(float(tp[0]) * design, den * design, level)
        value = self._compute()
        se = confusion_delta_se(table, self._vectorised(), self._n_eff())
        return normal_interval(value, se, level, (0.0, 1.0))

    def _vectorised(self) -> Any:
        """``compute()`` as a function of the diagonal, row and column sums and total, each with
        a leading batch axis (for the delta method)."""
        labels, _ = self._table()
        average = self._config["average"]
        selected = [self._config["pos_label"]] if average == "binary" else self._config["labels"]
        pick: np.ndarray | None = None
        if selected is not None:
            index = {_label_value(v): i for i, v in enumerate(labels)}
            pick = np.array([index.get(v, -1) for v in selected], dtype=np.int64)
        beta, zero, metric = self._beta, self._zero, self._metric

        def take(s: np.ndarray) -> np.ndarray:
            if pick is None:
                return s
            out = np.where(pick >= 0, s[:, np.maximum(pick, 0)], 0.0)
            return out

        def divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
            safe = np.where(den == 0, 1.0, den)
            return np.where(den == 0, zero, num / safe)

        def f(d: np.ndarray, r: np.ndarray, c: np.ndarray, n: np.ndarray) -> np.ndarray:
            tp, pred, true = take(d), take(c), take(r)
            if average == "micro":
                tp, pred, true = (x.sum(axis=1, keepdims=True) for x in (tp, pred, true))
            if metric == "precision":
                v = divide(tp, pred)
            elif metric == "recall":
                v = divide(tp, true)
            elif math.isinf(beta * beta):
                v = divide(tp, true)
            elif beta == 0:
                v = divide(tp, pred)
            else:
                b2 = beta * beta
                v = divide((1 + b2) * tp, b2 * true + pred)
            keep = ~np.isnan(v)
            v0 = np.where(keep, v, 0.0)
            w = np.where(keep, true if average == "weighted" else 1.0, 0.0)
            wsum = w.sum(axis=1)
            plain = v0.sum(axis=1) / np.maximum(keep.sum(axis=1), 1)
            with np.errstate(invalid="ignore", divide="ignore"):
                out: np.ndarray = np.where(wsum > 0, (v0 * w).sum(axis=1) / wsum, plain)
            return out

        return f


class Precision(_PRF):
    """Precision, tp / (tp + fp), as ``sklearn.metrics.precision_score`` with the same arguments.

    ``average``: ``"binary"`` (the ``pos_label`` class), ``"micro"``, ``"macro"``,
    ``"weighted"`` (by support) or ``None`` (one value per label, in ``labels`` order or sorted).
    ``zero_division``: the value of a 0/0 ratio (0.0, 1.0 or nan; ``"warn"`` scores 0.0).
    Exact; state: the confusion matrix (O(L**2) memory).

    Examples
    --------
    >>> import streammetrics as sm
    >>> sm.Precision().update([0, 1, 1, 0], [1, 1, 0, 0]).compute()
    0.5
    """

    higher_is_better: ClassVar[bool | None] = True

    _metric = "precision"

    def __init__(
        self,
        average: str | None = "binary",
        pos_label: Any = 1,
        labels: Any = None,
        zero_division: Any = 0.0,
    ) -> None:
        super().__init__(
            average=average, pos_label=pos_label, labels=labels, zero_division=zero_division
        )


class Recall(_PRF):
    """Recall, tp / (tp + fn), as ``sklearn.metrics.recall_score`` with the same arguments.

    Arguments as :class:`Precision`. Exact; state: the confusion matrix.

    Examples
    --------
    >>> import streammetrics as sm
    >>> sm.Recall(average="macro").update([0, 1, 2, 2], [0, 2, 2, 2]).compute()
    0.6666666666666666
    """

    higher_is_better: ClassVar[bool | None] = True

    _metric = "recall"

    def __init__(
        self,
        average: str | None = "binary",
        pos_label: Any = 1,
        labels: Any = None,
        zero_division: Any = 0.0,
    ) -> None:
        super().__init__(
            average=average, pos_label=pos_label, labels=labels, zero_division=zero_division
        )


class FBeta(_PRF):
    """F-beta, (1 + b^2) tp / ((1 + b^2) tp + b^2 fn + fp), as ``sklearn.metrics.fbeta_score``.

    ``beta`` weighs recall ``beta`` times as much as precision; other arguments as
    :class:`Precision`. Exact; state: the confusion matrix.

    Examples
    --------
    >>> import streammetrics as sm
    >>> round(sm.FBeta(beta=2.0).update([0, 1, 1, 1], [1, 1, 0, 1]).compute(), 6)
    0.666667
    """

    higher_is_better: ClassVar[bool | None] = True

    def __init__(
        self,
        beta: float,
        average: str | None = "binary",
        pos_label: Any = 1,
        labels: Any = None,
        zero_division: Any = 0.0,
    ) -> None:
        super().__init__(
            beta=beta,
            average=average,
            pos_label=pos_label,
            labels=labels,
            zero_division=zero_division,
        )


class F1(_PRF):
    """F1, the harmonic mean of precision and recall, as ``sklearn.metrics.f1_score``.

    Arguments as :class:`Precision`. Exact; state: the confusion matrix.

    Examples
    --------
    >>> import streammetrics as sm
    >>> sm.F1(average="micro").update([0, 1, 2], [0, 2, 2]).compute()
    0.6666666666666666
    """

    higher_is_better: ClassVar[bool | None] = True

    def __init__(
        self,
        average: str | None = "binary",
        pos_label: Any = 1,
        labels: Any = None,
        zero_division: Any = 0.0,
    ) -> None:
        super().__init__(
            average=average,
            pos_label=pos_label,
            labels=labels,
            zero_division=zero_division,
        )


class ConfusionMatrix(_ConfusionMetric):
    """The confusion matrix, as ``sklearn.metrics.confusion_matrix``.

    Rows are true labels, columns predicted labels. Without ``labels`` the labels are the sorted
    union of those seen so far (so the matrix grows as new labels arrive); with ``labels`` the
    matrix is fixed in that order and a label outside it is an ``InputError`` (scikit-learn
    silently drops such rows; a stream should not lose data unnoticed). ``normalize`` is
    scikit-learn's (``"true"``, ``"pred"``, ``"all"`` or ``None``). Integer counts unless a
    ``sample_weight`` was given. Exact.

    Examples
    --------
    >>> import streammetrics as sm
    >>> sm.ConfusionMatrix().update(["a", "b", "b"], ["a", "a", "b"]).compute()
    array([[1, 0],
           [1, 1]])
    """

    higher_is_better: ClassVar[bool | None] = None
    _schema = 1
    _keeps_weight_sq = False

    def __init__(self, labels: Any = None, normalize: str | None = None) -> None:
        fixed = config_labels(labels)
        self._fixed_labels = fixed
        super().__init__()
        if normalize not in (None, "true", "pred", "all"):
            raise InputError(f"normalize: must be 'true', 'pred', 'all' or None; got {normalize!r}")
        self._add_config(labels=fixed, normalize=normalize)

    def labels(self) -> np.ndarray:
        """The labels of the rows and columns of :meth:`compute`, in order."""
        if self._config["labels"] is not None:
            return np.asarray(self._config["labels"])
        rows: np.ndarray = self.counts.rows.copy()
        return rows

    def _compute(self) -> np.ndarray:
        rows, table = self._table()
        if self._config["labels"] is not None:
            order = np.searchsorted(rows, np.asarray(self._config["labels"]))
            table = table[np.ix_(order, order)]
        else:
            table = table.copy()
        normalize = self._config["normalize"]
        if normalize is None:
            return table
        with np.errstate(divide="ignore", invalid="ignore"):
            if normalize == "true":
                out = table / table.sum(axis=1, keepdims=True)
            elif normalize == "pred":
                out = table / table.sum(axis=0, keepdims=True)
            else:
                out = table / table.sum()
        result: np.ndarray = np.nan_to_num(out)
        return result

    def _empty_result(self) -> Any:
        # Nothing seen is "no data", as everywhere else: nan cells (none without labels).
        k = 0 if self._config["labels"] is None else len(self._config["labels"])
        return np.full((k, k), np.nan)


class Accuracy(_ConfusionMetric):
    """Fraction of samples whose predicted label equals the true one (``accuracy_score``).

    Weighted by ``sample_weight`` when given; ``nan`` when the weights sum to zero. Exact.

    Examples
    --------
    >>> import streammetrics as sm
    >>> sm.Accuracy().update([0, 1, 2, 3], [0, 2, 1, 3]).compute()
    0.5
    """

    higher_is_better: ClassVar[bool | None] = True

    def _compute(self) -> float:
        _, table = self._table()
        total = float(table.sum())
        return float(np.trace(table)) / total if total else math.nan

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Wilson (1927) score interval of the accuracy, on Kish's effective sample size.

        ``nan, nan`` when empty. O(L).
        """
        level = check_level(level)
        if self.count == 0:
            return NAN_INTERVAL
        _, table = self._table()
        total = float(table.sum())
        if total <= 0:
            return NAN_INTERVAL
        return wilson(float(np.trace(table)) * self._n_eff() / total, self._n_eff(), level)


class MatthewsCorrCoef(_ConfusionMetric):
    """Matthews correlation coefficient (multiclass R_K), as ``matthews_corrcoef``.

    0.0 where the coefficient is undefined (a constant column), as scikit-learn does. Exact.

    Examples
    --------
    >>> import streammetrics as sm
    >>> round(sm.MatthewsCorrCoef().update([1, 1, 1, 0], [1, 0, 1, 1]).compute(), 6)
    -0.333333
    """

    higher_is_better: ClassVar[bool | None] = True

    def _compute(self) -> float:
        _, table = self._table()
        t_sum = table.sum(axis=1, dtype=np.float64)
        p_sum = table.sum(axis=0, dtype=np.float64)
        correct = float(np.trace(table))
        n = float(p_sum.sum())
        with np.errstate(over="ignore", invalid="ignore"):  # absurd weights give nan, not a crash
            cov_tp = correct * n - float(t_sum @ p_sum)
            cov_pp = n * n - float(p_sum @ p_sum)
            cov_tt = n * n - float(t_sum @ t_sum)
            if cov_pp * cov_tt == 0:
                return 0.0
            return float(cov_tp / np.sqrt(cov_pp * cov_tt))

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Delta-method interval of the MCC over the multinomial confusion counts (normal,
        clipped to [-1, 1]; Agresti, *Categorical Data Analysis*, sec. 16.1), on Kish's
        effective sample size. O(L**2).
        """
        level = check_level(level)
        if self.count == 0:
            return NAN_INTERVAL
        _, table = self._table()

        def f(d: np.ndarray, r: np.ndarray, c: np.ndarray, n: np.ndarray) -> np.ndarray:
            with np.errstate(invalid="ignore", divide="ignore"):
                cov_tp = d.sum(axis=1) * n - (r * c).sum(axis=1)
                den = (n * n - (c * c).sum(axis=1)) * (n * n - (r * r).sum(axis=1))
                out: np.ndarray = np.where(den > 0, cov_tp / np.sqrt(np.abs(den)), 0.0)
            return out

        se = confusion_delta_se(table, f, self._n_eff())
        return normal_interval(self._compute(), se, level, (-1.0, 1.0))


class CohenKappa(_ConfusionMetric):
    """Cohen's kappa between ``y_true`` and ``y_pred``, as ``cohen_kappa_score``.

    ``weights``: ``None``, ``"linear"`` or ``"quadratic"`` (distance between the positions of
    two labels in sorted order). ``nan`` where kappa is undefined. Exact.

    Examples
    --------
    >>> import streammetrics as sm
    >>> round(sm.CohenKappa().update([0, 1, 1, 2], [0, 1, 2, 2]).compute(), 6)
    0.636364
    """

    higher_is_better: ClassVar[bool | None] = True

    def __init__(self, weights: str | None = None) -> None:
        super().__init__()
        if weights not in (None, "linear", "quadratic"):
            raise InputError(f"weights: must be None, 'linear' or 'quadratic'; got {weights!r}")
        self._add_config(weights=weights)

    def _compute(self) -> float:
        _, table = self._table()
        conf = table.astype(np.float64)
        sum0, sum1 = conf.sum(axis=0), conf.sum(axis=1)
        total = sum0.sum()
        if total == 0:
            return math.nan
        with np.errstate(over="ignore", invalid="ignore"):  # absurd weights give nan
            return self._kappa(conf, np.outer(sum0, sum1) / total)

    def _kappa(self, conf: np.ndarray, expected: np.ndarray) -> float:
        k = conf.shape[0]
        if self._config["weights"] is None:
            w = np.ones((k, k))
            np.fill_diagonal(w, 0)
        else:
            pos = np.arange(k, dtype=np.float64)
            diff = pos[None, :] - pos[:, None]
            w = np.abs(diff) if self._config["weights"] == "linear" else diff**2
        den = float((w * expected).sum())
        if den == 0:
            return math.nan
        return float(1 - (w * conf).sum() / den)

    def _disagreement(self, k: int) -> np.ndarray:
        if self._config["weights"] is None:
            w = np.ones((k, k))
            np.fill_diagonal(w, 0)
            return w
        pos = np.arange(k, dtype=np.float64)
        diff = pos[None, :] - pos[:, None]
        out: np.ndarray = np.abs(diff) if self._config["weights"] == "linear" else diff**2
        return out

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Delta-method interval of kappa (unweighted, linear or quadratic) over the
        multinomial confusion counts, with the analytic gradient of ``1 - A / B``
        (``A = sum w_ij C_ij``, ``B = sum w_ij c_i r_j / n``; Fleiss, Cohen and Everitt 1969,
        "Large sample standard errors of kappa and weighted kappa", Psychological Bulletin 72,
        323-327), normal, on Kish's effective sample size. O(L**2).
        """
        level = check_level(level)
        if self.count == 0:
            return NAN_INTERVAL
        _, table = self._table()
        conf = table.astype(np.float64)
        n = float(conf.sum())
        if n <= 0:
            return NAN_INTERVAL
        w = self._disagreement(conf.shape[0])
        cols, rows = conf.sum(axis=0), conf.sum(axis=1)
        a = float((w * conf).sum())
        b = float(cols @ w @ rows) / n
        if b == 0:
            return NAN_INTERVAL
        # dB/dC_kl = ((w @ r)_l + (c @ w)_k - B) / n, for the cell (k true, l predicted).
        db = ((w @ rows)[None, :] + (cols @ w)[:, None] - b) / n
        grad = -(w * b - a * db) / (b * b)
        se = counts_delta_se(conf, grad, self._n_eff())
        return normal_interval(1.0 - a / b, se, level, (-math.inf, 1.0))


class ClassificationReport(_ConfusionMetric):
    """Every label-based score at once, from one confusion matrix.

    compute -> dict with ``accuracy``, ``precision_*``, ``recall_*``, ``f1_*`` for ``macro``,
    ``micro`` and ``weighted``, ``mcc``, ``kappa`` and ``per_class`` (label -> ``precision``,
    ``recall``, ``f1``, ``support``), each equal to the scikit-learn function of that name. With
    ``labels`` the averages and ``per_class`` cover those labels (as scikit-learn's
    ``labels=``); ``accuracy``, ``mcc`` and ``kappa`` always cover all. Exact.

    Examples
    --------
    >>> import streammetrics as sm
    >>> r = sm.ClassificationReport().update([0, 1, 1], [0, 1, 0]).compute()
    >>> round(r["f1_macro"], 6), r["per_class"][1]["support"]
    (0.666667, 2.0)
    """

    higher_is_better: ClassVar[bool | None] = None
    _schema = 1
    _keeps_weight_sq = False

    _KEYS = (
        "accuracy",
        "precision_macro",
        "recall_macro",
        "f1_macro",
        "precision_micro",
        "recall_micro",
        "f1_micro",
        "precision_weighted",
        "recall_weighted",
        "f1_weighted",
        "mcc",
        "kappa",
    )

    def __init__(self, labels: Any = None, zero_division: Any = 0.0) -> None:
        super().__init__()
        _check_zero_division(zero_division)
        self._add_config(
            labels=config_labels(labels),
            zero_division=zero_division if isinstance(zero_division, str) else float(zero_division),
        )

    def _with_state(self, metric: Metric) -> Any:
        metric.counts = self.counts  # type: ignore[attr-defined]
        metric._count = self._count
        return metric.compute()

    def _compute(self) -> dict[str, Any]:
        labels, zero = self._config["labels"], self._config["zero_division"]
        out: dict[str, Any] = {"accuracy": self._with_state(Accuracy())}
        for avg in ("macro", "micro", "weighted"):
            for key, cls in (("precision", Precision), ("recall", Recall), ("f1", F1)):
                out[f"{key}_{avg}"] = self._with_state(
                    cls(average=avg, labels=labels, zero_division=zero)
                )
        out["mcc"] = self._with_state(MatthewsCorrCoef())
        out["kappa"] = self._with_state(CohenKappa())
        per = F1(average=None, labels=labels, zero_division=zero)
        per.counts, per._count = self.counts, self._count
        precision, recall, f1, support = per._scores()
        names = labels if labels is not None else [_label_value(v) for v in self.counts.rows]
        out["per_class"] = {
            name: {"precision": float(p), "recall": float(r), "f1": float(f), "support": float(s)}
            for name, p, r, f, s in zip(names, precision, recall, f1, support, strict=True)
        }
        return out

    def _empty_result(self) -> dict[str, Any]:
        out: dict[str, Any] = dict.fromkeys(self._KEYS, math.nan)
        out["per_class"] = {
            label: dict.fromkeys(("precision", "recall", "f1", "support"), math.nan)
            for label in self._config["labels"] or []
        }
        return out


class TopKAccuracy(Metric):
    """Fraction of samples whose true class is among the ``k`` highest scores.

    As ``sklearn.metrics.top_k_accuracy_score`` with ``labels=range(n_classes)``: ``y_true``
    holds column indices of ``y_score_matrix`` (shape (n, n_classes)); ties are broken as
    scikit-learn's stable sort breaks them (among equal scores the higher column ranks first).
    State: two sums. Exact.

    Examples
    --------
    >>> import streammetrics as sm
    >>> scores = [[0.5, 0.2, 0.3], [0.3, 0.4, 0.3], [0.2, 0.4, 0.4]]
    >>> sm.TopKAccuracy(k=2).update([0, 1, 0], scores).compute()
    0.6666666666666666
    """

    higher_is_better: ClassVar[bool | None] = True

    #: 2: the state gained ``weight_sq`` (sum of squared weights, for Kish's effective size).
    _schema: ClassVar[int] = 2

    hits: float
    total: float
    weight_sq: float

    def __init__(self, k: int = 2) -> None:
        super().__init__()
        self._add_config(k=config_int(k, "k"))
        self._add_state("hits", 0.0)
        self._add_state("total", 0.0)
        self._add_state("weight_sq", 0.0, power=2)

    def update(self, y_true: Any, y_score_matrix: Any, sample_weight: Any = None) -> TopKAccuracy:
        """Score a batch. Complexity: O(n * n_classes)."""
        yt = as_labels(y_true, "y_true")
        raw = as_array(y_score_matrix, "y_score_matrix")
        if raw.ndim == 1 and raw.size == 0:
            raw = raw.reshape(0, 0)
        elif raw.ndim == 1 and np.ndim(y_true) == 0:
            raw = raw.reshape(1, -1)  # one sample: a scalar label and its row of scores
        scores = as_scores(raw, "y_score_matrix", ndim=2)
        n = check_same_length(y_true=yt, y_score_matrix=scores)
        weights = as_weights(sample_weight, n)
        if n == 0:
            return self
        n_classes = scores.shape[1]
        if yt.dtype.kind != "i" or yt.min() < 0 or yt.max() >= n_classes:
            raise InputError(
                f"y_true: must hold column indices of y_score_matrix, 0 to {n_classes - 1}"
            )
        true_score = scores[np.arange(n), yt][:, None]
        cols = np.arange(n_classes)[None, :]
        ahead = (scores > true_score) | ((scores == true_score) & (cols > yt[:, None]))
        hit = ahead.sum(axis=1) < self._config["k"]
        if weights is None:
            hits, total = float(hit.sum()), float(n)
        else:
            hits, total = float(weights[hit].sum()), float(weights.sum())
        sq = float(n) if weights is None else float(weights @ weights)
        return self._commit(
            n, hits=self.hits + hits, total=self.total + total, weight_sq=self.weight_sq + sq
        )

    def _compute(self) -> float:
        return self.hits / self.total if self.total else math.nan

    @classmethod
    def _upgrade_state(cls, state: Any, schema: int) -> Any:
        """Schema 1 (0.1.0) kept no ``weight_sq``: unknown (nan) for a non-empty state, so
        ``interval`` is nan; the value and merges are unchanged."""
        if schema < 2 and isinstance(state, dict) and "weight_sq" not in state:
            state = {**state, "weight_sq": 0.0 if state.get("count") == 0 else math.nan}
        return state

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Wilson (1927) score interval of the top-k hit rate, on Kish's effective sample size.
        O(1)."""
        level = check_level(level)
        if self.count == 0 or not self.total > 0:
            return NAN_INTERVAL
        n_eff = kish(self.total, self.weight_sq)
        return wilson(self.hits / self.total * n_eff, n_eff, level)
