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

from ..base import Metric
from ..errors import InputError
from ..states.labels import config_labels
from ..uncertainty import (
    NAN_INTERVAL,
    check_level,
    counts_delta_se,
    normal_interval,
    normal_quantile,
    wilson,
)
from ._confusion_base import (
    _check_zero_division,
    _ConfusionMetric,
    _label_value,
    kappa_weight_at,
    kappa_weight_dot,
    segments,
)
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
        z = normal_quantile(level)
        z2 = z * z
        with np.errstate(invalid="ignore", divide="ignore"):
            n = np.where(weight_sq > 0, total / weight_sq * total, 0.0)  # as kish()
            p = np.minimum(np.maximum(correct * n / total / n, 0.0), 1.0)
            centre = (p + z2 / (2 * n)) / (1 + z2 / n)
            half = z / (1 + z2 / n) * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
            low = np.minimum(np.maximum(np.where(p == 0.0, 0.0, centre - half), 0.0), 1.0)
            high = np.minimum(np.maximum(np.where(p == 1.0, 1.0, centre + half), 0.0), 1.0)
        ok = (total > 0) & (n > 0)
        return [
            (lo, hi) if good else NAN_INTERVAL
            for lo, hi, good in zip(low.tolist(), high.tolist(), ok.tolist(), strict=True)
        ]


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
        scale = float(_unit_scale(np.array([p_sum.sum()], dtype=np.float64))[0])
        diag, t_sum, p_sum = (np.asarray(a, dtype=np.float64) * scale for a in (diag, t_sum, p_sum))
        correct = float(diag.sum())
        n = float(p_sum.sum())
        with np.errstate(over="ignore", invalid="ignore"):  # absurd weights give nan, not a crash
            cov_tp = correct * n - float(t_sum @ p_sum)
            cov_pp = n * n - float(p_sum @ p_sum)
            cov_tt = n * n - float(t_sum @ t_sum)
            if cov_pp * cov_tt == 0:
                return 0.0
            return float(cov_tp / np.sqrt(cov_pp * cov_tt))

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

        def f(d: np.ndarray, r: np.ndarray, c: np.ndarray, n: np.ndarray) -> np.ndarray:
            scale = _unit_scale(n)  # as in _compute: exact, no underflow
            d, r, c, n = d * scale[:, None], r * scale[:, None], c * scale[:, None], n * scale
            with np.errstate(invalid="ignore", divide="ignore"):
                cov_tp = d.sum(axis=1) * n - (r * c).sum(axis=1)
                den = (n * n - (c * c).sum(axis=1)) * (n * n - (r * r).sum(axis=1))
                out: np.ndarray = np.where(den > 0, cov_tp / np.sqrt(np.abs(den)), 0.0)
            return out

        se = self._delta_se(f)
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
        if self.counts.sparse:
            return self._sparse_kappa(unit=True)[0]
        _, table = self._table()
        conf = table.astype(np.float64)
        total = conf.sum()
        if total == 0:
            return math.nan
        # Counts scaled by the power of two bringing the total to [0.5, 1), as
        # MatthewsCorrCoef scales them: exact, the same value to the bit, but the products of
        # margins no longer underflow (weights of 1e-160 lost digits, of 1e-170 gave nan).
        conf *= float(_unit_scale(np.array([total], dtype=np.float64))[0])
        sum0, sum1 = conf.sum(axis=0), conf.sum(axis=1)
        with np.errstate(over="ignore", invalid="ignore"):  # absurd weights give nan
            return self._kappa(conf, np.outer(sum0, sum1) / sum0.sum())

    def _sparse_kappa(
        self, unit: bool = False
    ) -> tuple[float, float, float, np.ndarray, np.ndarray]:
        """``(kappa, A, B, rows, cols)`` from the filled cells, without the L x L weights:
        ``A = sum w_ij C_ij`` over the filled cells, ``B = cols @ w @ rows / n`` in O(L).
        ``unit``: the counts scaled to a total in [0.5, 1) first (for the value: see
        ``_compute``)."""
        r, c, v = self.counts.filled()
        _, rows, cols = self._margins()
        n = float(rows.sum())
        if n == 0:
            return math.nan, math.nan, math.nan, rows, cols
        if unit:
            scale = float(_unit_scale(np.array([n], dtype=np.float64))[0])
            v = v.astype(np.float64) * scale
            rows, cols = rows * scale, cols * scale
            n = float(rows.sum())
        weights = self._config["weights"]
        with np.errstate(over="ignore", invalid="ignore"):
            a = float(kappa_weight_at(weights, r, c) @ v.astype(np.float64))
            b = float(cols @ kappa_weight_dot(weights, rows)) / n
            kappa = math.nan if b == 0 else 1.0 - a / b
        return kappa, a, b, rows, cols

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
        323-327), normal, on Kish's effective sample size, clipped to [-1, 1] (where every
        weighting of kappa lies). O(L**2).
        """
        level = check_level(level)
        if self.count == 0:
            return NAN_INTERVAL
        if self.counts.sparse:
            return self._sparse_interval(level)
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
        return normal_interval(1.0 - a / b, se, level, (-1.0, 1.0))

    def _sparse_interval(self, level: float) -> tuple[float, float]:
        """:meth:`interval` from the filled cells (empty cells add nothing to the variance)."""
        kappa, a, b, rows, cols = self._sparse_kappa()
        n = float(rows.sum())
        if not n > 0 or b == 0 or math.isnan(b):
            return NAN_INTERVAL
        weights = self._config["weights"]
        r, c, v = self.counts.filled()
        db = (kappa_weight_dot(weights, rows)[c] + kappa_weight_dot(weights, cols)[r] - b) / n
        grad = -(kappa_weight_at(weights, r, c) * b - a * db) / (b * b)
        se = counts_delta_se(v.astype(np.float64), grad, self._n_eff())
        return normal_interval(kappa, se, level, (-1.0, 1.0))


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


def _unit_scale(totals: np.ndarray) -> np.ndarray:
    """The powers of two bringing positive finite ``totals`` to [0.5, 1) (1.0 elsewhere):
    scaling by them is exact, and keeps products of squared totals from under- or
    overflowing."""
    finite = np.isfinite(totals) & (totals > 0)
    out: np.ndarray = np.where(
        finite, np.ldexp(1.0, -np.frexp(np.where(finite, totals, 1.0))[1]), 1.0
    )
    return out
