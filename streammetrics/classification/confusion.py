"""Metrics of predicted labels, all computed from one confusion matrix of label-pair counts.

Every metric here keeps a :class:`~streammetrics.states.ContingencyCounts` over the union of the
labels seen in ``y_true`` and ``y_pred`` (or the configured ``labels``). The state is made of
counts, so merging is exact and split-invariant byte for byte; with ``sample_weight`` the counts
become float64 sums of weights (exact for whole-number weights up to 2**53).

Memory: O(L**2) for L distinct labels, or O(cells seen) while few of the L**2 pairs have been
seen (the sparse form of ``ContingencyCounts``). ``update``: O(n) for integer labels of small
range, O(n log n) otherwise. ``merge``: O(L**2) dense, O(cells log cells) sparse. ``compute``:
O(L**2) dense; O(L + cells) sparse, except ``ConfusionMatrix`` (its result is the dense matrix)
and the delta-method intervals of F-beta and MCC (O(L**2) time, O(L + cells) memory).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .._intervals import kishes, normal_intervals, pairs, wilsons
from ..base import Metric
from ..errors import InputError
from ..states.labels import config_labels
from ..uncertainty import (
    NAN_INTERVAL,
    check_level,
    normal_interval,
    wilson,
)
from ._confusion_base import (
    _check_zero_division,
    _ConfusionMetric,
    _label_value,
    segments,
    unit_scale,
)
from ._table_stack import delta_ses, summaries
from .kappa import CohenKappa
from .prf import F1, FBeta, Precision, Recall

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
]


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

    def _counts_table(self) -> np.ndarray:
        """The table of counts (or weights) in the order of :meth:`labels`, whatever
        ``normalize`` says (the picture's own ``normalize=True`` divides these)."""
        rows, table = self._table()
        if self._config["labels"] is not None:
            order = np.searchsorted(rows, np.asarray(self._config["labels"]))
            return table[np.ix_(order, order)]
        copied: np.ndarray = table.copy()
        return copied

    def _compute(self) -> np.ndarray:
        table = self._counts_table()
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
        total = self.counts.total()
        return float(self.counts.diagonal().sum()) / total if total else math.nan

    def _compute_margins(
        self, tp: np.ndarray, true: np.ndarray, pred: np.ndarray, edges: list[int]
    ) -> list[Any] | None:
        seg = segments(edges)
        correct = np.bincount(seg, weights=tp, minlength=len(edges) - 1)
        total = np.bincount(seg, weights=true, minlength=len(edges) - 1)
        # Sums of whole numbers below 2**53: exact in any order, as the state's own sums.
        with np.errstate(invalid="ignore", divide="ignore"):
            out: list[Any] = np.where(total != 0, correct / total, np.nan).tolist()
        return out

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Wilson (1927) score interval of the accuracy, on Kish's effective sample size.

        ``nan, nan`` when empty. O(L).
        """
        level = check_level(level)
        if self.count == 0:
            return NAN_INTERVAL
        total = self.counts.total()
        if total <= 0:
            return NAN_INTERVAL
        correct = float(self.counts.diagonal().sum())
        return wilson(correct * self._n_eff() / total, self._n_eff(), level)

    def _interval_margins(
        self,
        tp: np.ndarray,
        true: np.ndarray,
        pred: np.ndarray,
        edges: list[int],
        weight_sq: np.ndarray,
        level: float,
    ) -> list[tuple[float, float]] | None:
        """:meth:`interval` of many states at once from their margins and sums of squared
        weights (as :meth:`_compute_margins`): Wilson's interval on Kish's size, the same
        operations in the same order on arrays, so equal to the bit to each state's own."""
        level = check_level(level)
        seg, many = segments(edges), len(edges) - 1
        correct = np.bincount(seg, weights=tp, minlength=many)
        total = np.bincount(seg, weights=true, minlength=many)
        return _wilson_pairs(correct, total, kishes(total, weight_sq), level)

    def _compute_tables(self, stack: np.ndarray) -> list[Any] | None:
        diagonal, _, _, total = summaries(stack)
        correct = diagonal.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out: list[Any] = np.where(total != 0, correct / total, np.nan).tolist()
        return out

    def _interval_tables(
        self,
        stack: np.ndarray,
        count: np.ndarray,
        weight_sq: np.ndarray,
        level: float,
    ) -> list[Any] | None:
        diagonal, _, _, total = summaries(stack)
        total = np.where(count == 0, np.nan, total)  # (an empty state: nan, nan)
        return _wilson_pairs(diagonal.sum(axis=1), total, kishes(total, weight_sq), level)


def _wilson_pairs(
    correct: np.ndarray, total: np.ndarray, n_eff: np.ndarray, level: float
) -> list[tuple[float, float]]:
    """``Accuracy.interval`` of states with these sums: Wilson's interval of
    ``correct * n_eff / total`` out of ``n_eff``; nan, nan where the total is not positive."""
    with np.errstate(invalid="ignore", divide="ignore"):
        low, high = wilsons(correct * n_eff / total, n_eff, level)
    return pairs(low, high, ~(total > 0))


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
        diag, t_sum, p_sum = self._margins()
        # Margins scaled by the power of two bringing the total to [0.5, 1): exact, so the
        # value is the same to the bit, but products of squared totals can no longer underflow
        # (decayed weights of 1e-77 gave 0.0) or overflow.
        scale = float(unit_scale(np.array([p_sum.sum()], dtype=np.float64))[0])
        diag, t_sum, p_sum = (np.asarray(a, dtype=np.float64) * scale for a in (diag, t_sum, p_sum))
        correct = float(diag.sum())
        n = float(p_sum.sum())
        # Sums of products, not ``@``: BLAS's order is its own, and ``Sliced`` computes many
        # states' values with these same sums (``_compute_tables``).
        with np.errstate(over="ignore", invalid="ignore"):  # absurd weights give nan, not a crash
            cov_tp = correct * n - float((t_sum * p_sum).sum())
            cov_pp = n * n - float((p_sum * p_sum).sum())
            cov_tt = n * n - float((t_sum * t_sum).sum())
            if cov_pp * cov_tt == 0:
                return 0.0
            return float(cov_tp / np.sqrt(cov_pp * cov_tt))

    def _compute_tables(self, stack: np.ndarray) -> list[Any] | None:
        """:meth:`_compute` of many dense tables at once (``_ConfusionMetric``), the same
        operations on a ``(g, L, L)`` stack."""
        diag, t_sum, p_sum, _ = summaries(stack)
        scale = unit_scale(p_sum.sum(axis=1))[:, None]
        diag, t_sum, p_sum = diag * scale, t_sum * scale, p_sum * scale
        correct, n = diag.sum(axis=1), p_sum.sum(axis=1)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            cov_tp = correct * n - (t_sum * p_sum).sum(axis=1)
            cov_pp = n * n - (p_sum * p_sum).sum(axis=1)
            cov_tt = n * n - (t_sum * t_sum).sum(axis=1)
            den = cov_pp * cov_tt
            value = np.where(den == 0, 0.0, cov_tp / np.sqrt(den))
        out: list[Any] = value.tolist()
        return out

    def _compute_margins(
        self, tp: np.ndarray, true: np.ndarray, pred: np.ndarray, edges: list[int]
    ) -> list[Any] | None:
        seg, many = segments(edges), len(edges) - 1

        def total(x: np.ndarray) -> np.ndarray:
            out: np.ndarray = np.bincount(seg, weights=x, minlength=many)
            return out

        correct, n = total(tp), total(pred)
        # Whole numbers: every product and sum below is exact, in any order, while n * n is
        # below 2**53; larger slices (none short of 94 million rows) are left to their state.
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            cov_tp = correct * n - total(true * pred)
            cov_pp = n * n - total(pred * pred)
            cov_tt = n * n - total(true * true)
            den = cov_pp * cov_tt
            value = np.where(den == 0, 0.0, cov_tp / np.sqrt(np.where(den == 0, 1.0, den)))
        out: list[Any] = value.tolist()
        for j in np.flatnonzero(~(n * n < 2.0**53)).tolist():
            out[j] = None
        return out

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Delta-method interval of the MCC over the multinomial confusion counts (normal,
        clipped to [-1, 1]; Agresti, *Categorical Data Analysis*, sec. 16.1), on Kish's
        effective sample size. O(L**2).
        """
        level = check_level(level)
        if self.count == 0:
            return NAN_INTERVAL
        _, t_sum, p_sum = self._margins()
        if np.count_nonzero(t_sum) < 2 or np.count_nonzero(p_sum) < 2:
            # One class among the labels or the predictions: the MCC is undefined (reported as
            # 0 by convention, as scikit-learn does), so no interval (0.8.9 gave (0, 0)).
            return NAN_INTERVAL
        se = self._delta_se(self._vectorised())
        return normal_interval(self._compute(), se, level, (-1.0, 1.0))

    def _vectorised(self) -> Any:
        """``compute()`` as a function of the diagonal, row and column sums and total, each with
        a leading batch axis (for the delta method)."""

        def f(d: np.ndarray, r: np.ndarray, c: np.ndarray, n: np.ndarray) -> np.ndarray:
            scale = unit_scale(n)  # as in _compute: exact, no underflow
            d, r, c, n = d * scale[:, None], r * scale[:, None], c * scale[:, None], n * scale
            with np.errstate(invalid="ignore", divide="ignore"):
                cov_tp = d.sum(axis=1) * n - (r * c).sum(axis=1)
                den = (n * n - (c * c).sum(axis=1)) * (n * n - (r * r).sum(axis=1))
                out: np.ndarray = np.where(den > 0, cov_tp / np.sqrt(np.abs(den)), 0.0)
            return out

        return f

    def _interval_tables(
        self,
        stack: np.ndarray,
        count: np.ndarray,
        weight_sq: np.ndarray,
        level: float,
    ) -> list[Any] | None:
        """:meth:`interval` of many states from their tables (values by :meth:`_compute_tables`,
        the delta method of every table at once)."""
        g = len(stack)
        _, rows, cols, total = summaries(stack)
        value = np.array(self._compute_tables(stack))
        one_class = (np.count_nonzero(rows, axis=1) < 2) | (np.count_nonzero(cols, axis=1) < 2)
        scored = ~one_class & (count > 0)
        se = np.full(g, math.nan)
        n_eff = kishes(total[scored], weight_sq[scored])
        se[scored] = delta_ses(stack[scored], self._vectorised(), n_eff, count[scored])
        low, high = normal_intervals(value, se, level, (-1.0, 1.0))
        return pairs(low, high, ~scored)


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
