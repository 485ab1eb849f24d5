"""Binary-score metrics (ROC AUC, average precision, curves, GAUC, calibration).

ROC AUC, average precision and the two curves keep a :class:`~streammetrics.states.buckets.
ScoreBuckets` of positive and negative weight per score bucket. Two modes:

* ``exact=True``: one entry per distinct score; the values equal scikit-learn's
  ``roc_auc_score``, ``average_precision_score``, ``roc_curve`` and ``precision_recall_curve``
  (ties and sample weights included). Memory grows with the number of distinct scores (24 bytes
  each).
* ``exact=False`` (the default): a fixed bucket grid chosen by ``score_type`` (see
  :mod:`streammetrics.states.buckets` and ``docs/accuracy.md``); at most 4,098 buckets (160 KiB
  at most in memory) at the default ``resolution=128``, whatever the stream's size;
  ``error_bound()`` certifies how far the value can be from the exact one.

Counts are int64 until a sample weight arrives, then float64; the state is canonical, so it is
split-invariant byte for byte (for whole-number weights).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .._inputs import as_labels, as_matrix, as_weights, check_same_length
from ..base import Metric
from ..errors import IncompatibleStateError, InputError, StateDecodeError
from ..states.buckets import (
    DEFAULT_RESOLUTION,
    ScoreBuckets,
    ap_from_table,
    auc_from_table,
    curve_counts,
    mapping_for,
)
from ..states.stacked import BucketStack
from ..uncertainty import (
    NAN_INTERVAL,
    check_level,
    delong,
    no_interval,
    normal_interval,
    normal_quantile,
)
from ._checks import binary_labels, check_mode, checked_scores, class_columns, column_labels

__all__ = [
    "AveragePrecision",
    "BrierScore",
    "CalibrationError",
    "GAUC",
    "LogLoss",
    "MulticlassROCAUC",
    "PRCurve",
    "ROCAUC",
    "ROCCurve",
]


class _BinaryScoreMetric(Metric, register=False):
    """Shared state and update of the metrics of (binary label, score) pairs."""

    hist: ScoreBuckets

    def __init__(
        self,
        exact: bool = False,
        score_type: str = "probability",
        resolution: int = DEFAULT_RESOLUTION,
    ) -> None:
        super().__init__()
        check_mode(exact, score_type, resolution)
        self._add_config(exact=exact, score_type=score_type, resolution=resolution)
        mapping = None if exact else mapping_for(score_type, resolution)
        self._add_state("hist", ScoreBuckets(mapping), merge=None)
        self._declare_rows("label", "probability" if score_type == "probability" else "number")

    def update(self, y_true: Any, y_score: Any, sample_weight: Any = None) -> Any:
        """Add a batch of (label, score) pairs, optionally weighted.

        Complexity: O(n) in sketch mode (O(n log n) for ``score_type="real"``), O(n log n + m)
        in exact mode with m distinct scores held.
        """
        y = binary_labels(y_true)
        x = checked_scores(y_score, self._config["score_type"])
        n = check_same_length(y_true=y, y_score=x)
        w = as_weights(sample_weight, n)
        if n == 0:
            return self
        return self._commit(n, hist=self.hist.add(x, y, w))

    def _fold_rows(self, y_true: Any, y_score: Any, sample_weight: Any = None) -> Any:
        """:meth:`update` of buffered rows (``streammetrics._pending``), whose labels (0/1),
        scores (valid for the score type) and weights the per-request checks already passed:
        the same conversions, without checking every value again."""
        y = y_true.astype(np.int64, copy=False)
        x = y_score.astype(np.float64, copy=False)
        w = None if sample_weight is None else sample_weight.astype(np.float64, copy=False)
        return self._commit(len(x), hist=self.hist.add(x, y, w))

    def _stacked(self, y_true: Any, y_score: Any, sample_weight: Any = None) -> Any:
        """This batch for a stacked update of many states (``streammetrics.states.stacked``),
        validated as :meth:`update` validates it; None for an empty batch or a sparse store
        (exact scores, ``score_type="real"``), which keep the per-state path."""
        y = binary_labels(y_true)
        x = checked_scores(y_score, self._config["score_type"])
        n = check_same_length(y_true=y, y_score=x)
        w = as_weights(sample_weight, n)
        mapping = self.hist.mapping
        if n == 0 or mapping is None or mapping.size is None:
            return None
        if type(self).update is not _BinaryScoreMetric.update:
            return None
        return BucketStack(self, y, x, w)

    def _table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        h = self.hist
        return h.lo, h.hi, h.pos, h.neg


class ROCAUC(_BinaryScoreMetric):
    """Area under the ROC curve of a stream of binary labels and scores.

    Equals scikit-learn's ``roc_auc_score(y_true, y_score, sample_weight=...)``: the probability
    that a random positive scores above a random negative, ties counting 1/2.

    Parameters
    ----------
    exact : bool, default False
        Keep every distinct score (equal to scikit-learn to 1e-12; memory 24 bytes per distinct
        score) instead of the bucket sketch.
    score_type : {"probability", "logit", "real"}
        What the scores are, which picks the bucket grid: probabilities in [0, 1] (a uniform
        grid in logit space), logits (the same grid on the raw values), or any finite real
        (relative-error buckets). A probability outside [0, 1] is an ``InputError``.
    resolution : int, default 128
        Buckets per unit of logit; a power of two from 8 to 4096. For ``"real"``, whose buckets
        start at relative width ``2**-20`` and halve their resolution while there are more than
        1,920 of them, the coarsest relative width allowed (``1/resolution``). See
        ``docs/accuracy.md``.

    Notes
    -----
    Sketch mode: pairs in different buckets are ordered exactly, pairs inside one bucket count
    1/2, so ``|value - exact| <= error_bound() = 0.5 * sum_b pos_b * neg_b / (P * N)`` over the
    buckets holding more than one distinct score (tied data is exact). Memory: at most
    ``32 * resolution + 2`` buckets of 40 bytes. ``update`` O(n); ``merge`` O(buckets);
    ``compute`` O(buckets). ``nan`` when either class is absent.

    Examples
    --------
    >>> import streammetrics as sm
    >>> m = sm.ROCAUC(exact=True).update([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> m.compute()
    0.75
    >>> sketch = sm.ROCAUC().update([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> sketch.compute(), sketch.error_bound()
    (0.75, 0.0)
    """

    higher_is_better: ClassVar[bool | None] = True

    def _compute(self) -> float:
        return auc_from_table(*self._table())[0]

    def error_bound(self) -> float:
        """A certified bound on ``abs(compute() - exact AUC)``; 0.0 in exact mode."""
        if self.count == 0:
            return math.nan
        return 0.0 if self.hist.exact else auc_from_table(*self._table())[1]

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """DeLong (1988) interval of the AUC: ``AUC -/+ z sqrt(S10 / P + S01 / N)``.

        DeLong, DeLong and Clarke-Pearson (1988), Biometrics 44(3), 837-845: the placements of
        each positive (the share of negatives below it) and of each negative (the share of
        positives above it) come from the exact score table, ties counting 1/2. In sketch mode
        the placements come from the buckets (pairs inside a bucket count 1/2, as ``compute``
        counts them) and the interval is widened by ``error_bound()`` on each side. Weights
        count as frequency weights (a row of weight 2 is two rows). Clipped to [0, 1]; ``nan,
        nan`` with fewer than two positives or negatives. O(distinct scores or buckets).
        """
        level = check_level(level)
        if self.count == 0:
            return NAN_INTERVAL
        h = self.hist
        auc, var = delong(h.pos, h.neg)
        widen = 0.0 if h.exact else self.error_bound()
        return normal_interval(auc, math.sqrt(max(var, 0.0)), level, (0.0, 1.0), widen)


class AveragePrecision(_BinaryScoreMetric):
    """Average precision of a stream of binary labels and scores.

    Equals scikit-learn's ``average_precision_score``: ``sum_k (R_k - R_{k-1}) P_k`` over the
    distinct score thresholds, tied scores forming one threshold. Parameters as
    :class:`ROCAUC`.

    Notes
    -----
    Sketch mode: a bucket holding one distinct score is a true tie (exact). Otherwise its
    positives and negatives are interleaved evenly (Davis & Goadrich interpolation), and the
    exact contribution lies in ``[p - (F + n)(H(T+F+n+p) - H(T+F+n)), p (T + p) / (T + F + p)]``
    (``T``, ``F`` the positive and negative weight above the bucket, ``p``, ``n`` inside it,
    ``H`` the harmonic number); ``error_bound()`` is the sum of those widths over ``P``.
    Memory, complexity as :class:`ROCAUC`. ``nan`` without positives.

    Examples
    --------
    >>> import streammetrics as sm
    >>> m = sm.AveragePrecision(exact=True).update([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> round(m.compute(), 6)
    0.833333
    """

    higher_is_better: ClassVar[bool | None] = True

    def _compute(self) -> float:
        return ap_from_table(*self._table())[0]

    def error_bound(self) -> float:
        """A certified bound on ``abs(compute() - exact AP)``; 0.0 in exact mode."""
        if self.count == 0:
            return math.nan
        return 0.0 if self.hist.exact else ap_from_table(*self._table())[1]

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Logit interval of the average precision (Boyd, Eng and Page 2013).

        Boyd, K., Eng, K. H. and Page, C. D. (2013). Area under the precision-recall curve:
        point estimates and confidence intervals. ECML PKDD, LNCS 8190, 451-466: the binomial
        logit interval ``expit(logit(AP) -/+ z / sqrt(P AP (1 - AP)))`` with ``P`` the positive
        weight (frequency weights), which they found to cover best among the closed forms. In
        sketch mode it is widened by ``error_bound()`` on each side; clipped to [0, 1]. ``nan,
        nan`` without positives; an AP of exactly 0 or 1 gives a degenerate interval. O(1)
        after the value.
        """
        level = check_level(level)
        if self.count == 0:
            return NAN_INTERVAL
        ap = self._compute()
        big_p = float(self.hist.pos.sum())
        widen = 0.0 if self.hist.exact else self.error_bound()
        if not (math.isfinite(ap) and big_p > 0):
            return NAN_INTERVAL
        if ap <= 0.0 or ap >= 1.0:
            return normal_interval(ap, 0.0, level, (0.0, 1.0), widen)
        centre = math.log(ap / (1.0 - ap))
        half = normal_quantile(level) / math.sqrt(big_p * ap * (1.0 - ap))
        low = 1.0 / (1.0 + math.exp(-(centre - half))) - widen
        high = 1.0 / (1.0 + math.exp(-(centre + half))) + widen
        return max(low, 0.0), min(high, 1.0)


def _thresholds(metric: _BinaryScoreMetric) -> np.ndarray:
    h = metric.hist
    if h.exact:
        out: np.ndarray = h.keys[::-1].copy()
        return out
    assert h.mapping is not None
    return h.mapping.lower_edges(h.keys)[::-1]


class _Curve(_BinaryScoreMetric, register=False):
    """What ``ROCCurve`` and ``PRCurve`` share: ``drop_intermediate`` and the curve's points."""

    def __init__(
        self, exact: bool, score_type: str, resolution: int, drop_intermediate: bool
    ) -> None:
        super().__init__(exact, score_type, resolution)
        if not isinstance(drop_intermediate, bool):
            raise InputError(f"drop_intermediate: must be True or False; got {drop_intermediate!r}")
        self._add_config(drop_intermediate=drop_intermediate)

    def _empty_result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        empty = np.empty(0)
        return empty, empty.copy(), empty.copy()

    def _points(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Cumulative true and false positives and the threshold at each distinct point."""
        tps, fps = curve_counts(self.hist.pos, self.hist.neg)
        return tps, fps, _thresholds(self)


class ROCCurve(_Curve):
    """The ROC curve ``(fpr, tpr, thresholds)``, as scikit-learn's ``roc_curve`` returns it.

    Exact mode: identical to ``roc_curve(y_true, y_score, sample_weight=...,
    drop_intermediate=...)`` (thresholds decreasing, led by ``inf``). Sketch mode: one point
    per non-empty bucket, at the bucket's lower edge (the smallest score the bucket can hold),
    so each point is the exact rate of ``score >= threshold`` for that edge. Other parameters as
    :class:`ROCAUC`.

    Memory, complexity as :class:`ROCAUC`; ``compute`` returns arrays of O(buckets) points.

    Examples
    --------
    >>> import streammetrics as sm
    >>> m = sm.ROCCurve(exact=True).update([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    >>> fpr, tpr, thr = m.compute()
    >>> fpr.tolist(), tpr.tolist()
    ([0.0, 0.0, 0.5, 0.5, 1.0], [0.0, 0.5, 0.5, 1.0, 1.0])
    """

    higher_is_better: ClassVar[bool | None] = None

    def __init__(
        self,
        exact: bool = False,
        score_type: str = "probability",
        resolution: int = DEFAULT_RESOLUTION,
        drop_intermediate: bool = True,
    ) -> None:
        super().__init__(exact, score_type, resolution, drop_intermediate)

    def _compute(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        tps, fps, thr = self._points()
        if len(tps) == 0:
            return self._empty_result()
        if self._config["drop_intermediate"] and len(fps) > 2:
            keep = np.concatenate(([True], np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), [True]))
            tps, fps, thr = tps[keep], fps[keep], thr[keep]
        tps = np.concatenate(([0.0], tps))
        fps = np.concatenate(([0.0], fps))
        thr = np.concatenate(([np.inf], thr))
        fpr = fps / fps[-1] if fps[-1] > 0 else np.full(fps.shape, np.nan)
        tpr = tps / tps[-1] if tps[-1] > 0 else np.full(tps.shape, np.nan)
        return fpr, tpr, thr


class PRCurve(_Curve):
    """The precision-recall curve ``(precision, recall, thresholds)``, as scikit-learn's
    ``precision_recall_curve`` returns it (recall decreasing, ending at precision 1, recall 0).

    Exact mode: identical to scikit-learn. Sketch mode: one point per non-empty bucket, at the
    bucket's lower edge. Without positives, recall is 1 everywhere, as scikit-learn sets it.
    Other parameters as :class:`ROCAUC`; memory and complexity too.

    Examples
    --------
    >>> import streammetrics as sm
    >>> p, r, t = sm.PRCurve(exact=True).update([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]).compute()
    >>> p.round(4).tolist(), r.tolist(), t.tolist()
    ([0.5, 0.6667, 0.5, 1.0, 1.0], [1.0, 1.0, 0.5, 0.5, 0.0], [0.1, 0.35, 0.4, 0.8])
    """

    higher_is_better: ClassVar[bool | None] = None

    def __init__(
        self,
        exact: bool = False,
        score_type: str = "probability",
        resolution: int = DEFAULT_RESOLUTION,
        drop_intermediate: bool = False,
    ) -> None:
        super().__init__(exact, score_type, resolution, drop_intermediate)

    def _compute(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        tps, fps, thr = self._points()
        if len(tps) == 0:
            return self._empty_result()
        if self._config["drop_intermediate"] and len(fps) > 2:
            keep = np.concatenate(
                ([True], np.logical_or(np.diff(tps[:-1]), np.diff(tps[1:])), [True])
            )
            tps, fps, thr = tps[keep], fps[keep], thr[keep]
        ps = tps + fps
        precision = np.divide(tps, ps, out=np.zeros_like(tps), where=ps != 0)
        recall = np.ones_like(tps) if tps[-1] == 0 else tps / tps[-1]
        return (
            np.concatenate((precision[::-1], [1.0])),
            np.concatenate((recall[::-1], [0.0])),
            thr[::-1].copy(),
        )


class MulticlassROCAUC(Metric):
    """One-vs-rest ROC AUC of a probability matrix, as ``roc_auc_score(y_true, y_prob,
    multi_class="ovr", average=...)``.

    Parameters
    ----------
    average : {"macro", "weighted", "micro", None}
        Mean of the per-class AUCs, weighted by each class's (weighted) support, the AUC of the
        flattened one-hot problem, or the per-class array.
    exact, score_type, resolution
        As :class:`ROCAUC`; one score store per class column.
    labels : list, optional
        The class of each column, sorted. Without it, ``y_true`` holds column indices
        ``0 .. C-1``.

    Notes
    -----
    Unlike scikit-learn, rows need not sum to 1 (nothing is checked). A class with no positives
    or no negatives scores ``nan`` (so does a macro mean over it). ``error_bound()`` is the
    matching average of the per-class bounds (a bound on the average's error). Memory: C
    score stores. ``update`` O(n C); ``compute`` O(C buckets).

    Examples
    --------
    >>> import streammetrics as sm
    >>> m = sm.MulticlassROCAUC(exact=True)
    >>> rows = [[0.8, 0.1, 0.1], [0.3, 0.6, 0.1], [0.2, 0.2, 0.6], [0.5, 0.1, 0.4], [0.2, 0.3, 0.5]]
    >>> _ = m.update([0, 1, 2, 2, 1], rows)
    >>> round(m.compute(), 6)
    0.944444
    """

    higher_is_better: ClassVar[bool | None] = True

    def __init__(
        self,
        average: str | None = "macro",
        exact: bool = False,
        score_type: str = "probability",
        resolution: int = DEFAULT_RESOLUTION,
        labels: Any = None,
    ) -> None:
        super().__init__()
        check_mode(exact, score_type, resolution)
        if average not in ("macro", "weighted", "micro", None):
            raise InputError(
                f"average: must be 'macro', 'weighted', 'micro' or None; got {average!r}"
            )
        fixed = column_labels(labels)
        self._add_config(
            average=average, exact=exact, score_type=score_type, resolution=resolution, labels=fixed
        )
        self._mapping = None if exact else mapping_for(score_type, resolution)
        self._add_state("columns", [], merge=None)

    columns: list[ScoreBuckets]

    def update(self, y_true: Any, y_prob: Any, sample_weight: Any = None) -> Any:
        """Add a batch of (class, score row) pairs. Complexity O(n C)."""
        y = as_labels(y_true, "y_true")
        x = as_matrix(y_prob, "y_prob")
        n = check_same_length(y_true=y, y_prob=x)
        w = as_weights(sample_weight, n)
        if n == 0:
            return self
        k = x.shape[1]
        codes = class_columns(y, k, self._config["labels"])
        if self.columns and len(self.columns) != k:
            raise InputError(f"y_prob: has {k} columns, earlier batches had {len(self.columns)}")
        if self._config["score_type"] == "probability":
            checked_scores(x.reshape(-1), "probability", "y_prob")
        cols = self.columns or [ScoreBuckets(self._mapping) for _ in range(k)]
        new = [cols[j].add(np.ascontiguousarray(x[:, j]), codes == j, w) for j in range(k)]
        return self._commit(n, columns=new)

    def _merge_from(self, other: Any) -> None:
        if not self.columns:
            self.columns = [c.copy() for c in other.columns]
            return
        self.columns = [a.merged(b) for a, b in zip(self.columns, other.columns, strict=True)]

    def _check_compatible(self, other: Any) -> None:
        super()._check_compatible(other)
        if self.columns and other.columns and len(self.columns) != len(other.columns):
            raise IncompatibleStateError(
                f"cannot merge MulticlassROCAUC states of {len(self.columns)} and "
                f"{len(other.columns)} classes"
            )

    def _state_wire(self) -> dict[str, Any]:
        return {"count": self._count, "columns": [c.to_wire() for c in self.columns]}

    def _load_state(self, state: Any) -> None:
        if not isinstance(state, dict) or set(state) != {"count", "columns"}:
            raise StateDecodeError("MulticlassROCAUC state needs exactly count and columns")
        count, columns = state["count"], state["columns"]
        if type(count) is not int or count < 0 or not isinstance(columns, list):
            raise StateDecodeError("MulticlassROCAUC: invalid count or columns")
        labels = self._config["labels"]
        if labels is not None and columns and len(columns) != len(labels):
            raise StateDecodeError("MulticlassROCAUC: columns differ from the labels")
        if (count == 0) != (not columns):
            raise StateDecodeError("MulticlassROCAUC: count and columns disagree")
        try:
            self.columns = [ScoreBuckets(self._mapping).from_wire(c) for c in columns]
        except (TypeError, ValueError) as exc:
            raise StateDecodeError(f"MulticlassROCAUC column: {exc}") from exc
        self._count = count

    def _per_class(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        values, bounds, support = [], [], []
        for c in self.columns:
            v, b = auc_from_table(c.lo, c.hi, c.pos, c.neg)
            values.append(v)
            bounds.append(0.0 if c.exact else b)
            support.append(c.totals()[0])
        return np.array(values), np.array(bounds), np.array(support)

    def _result(self) -> tuple[Any, Any]:
        average = self._config["average"]
        if average == "micro":
            pooled = self.columns[0]
            for c in self.columns[1:]:
                pooled = pooled.merged(c)
            v, b = auc_from_table(pooled.lo, pooled.hi, pooled.pos, pooled.neg)
            return v, 0.0 if pooled.exact else b
        values, bounds, support = self._per_class()
        if average is None:
            return values, bounds
        if average == "weighted":
            if support.sum() == 0:
                return math.nan, math.nan
            return (
                float(np.average(values, weights=support)),
                float(np.average(bounds, weights=support)),
            )
        return float(np.mean(values)), float(np.mean(bounds))

    def _empty_result(self) -> Any:
        return np.empty(0) if self._config["average"] is None else math.nan

    def _compute(self) -> Any:
        return self._result()[0]

    def error_bound(self) -> Any:
        """A certified bound on the error of ``compute()`` (per class when ``average=None``)."""
        if self.count == 0:
            return self._empty_result()
        return self._result()[1]

    def interval(self, level: float = 0.95) -> Any:
        """DeLong intervals per class, and a conservative interval of their average.

        Each one-vs-rest AUC ``A_j`` gets DeLong's variance ``V_j`` from its own score table
        (as :meth:`ROCAUC.interval`; ties 1/2, weights as frequencies). ``average=None`` gives
        the per-class intervals as two arrays ``(low, high)``. The covariances between classes
        are not in the state (they need each row's placement in every class's table, and a
        score table does not keep which entries share a row), so ``"macro"`` and
        ``"weighted"`` bound the standard error of ``sum a_j A_j`` by ``sum a_j sqrt(V_j)``
        (the covariance inequality ``|Cov(A_j, A_k)| <= sqrt(V_j V_k)``, i.e. all classes
        perfectly correlated; the class supports taken as fixed): a valid but conservative
        interval, wider than the true one when the classes' errors are not perfectly
        correlated. ``"micro"`` pools the tables, whose entries are then not independent (each
        row appears in every class), so it raises :class:`NoIntervalError`. Sketch mode widens
        by ``error_bound()``; clipped to [0, 1]; ``nan`` where a class lacks two positives or
        two negatives. O(C buckets).
        """
        level = check_level(level)
        average = self._config["average"]
        if average == "micro":
            raise no_interval(
                "MulticlassROCAUC(average='micro')",
                "its pooled table counts each row once per class, so its entries are not "
                "independent and the table does not say which share a row",
            )
        if self.count == 0:
            empty = np.empty(0)
            return (empty, empty.copy()) if average is None else NAN_INTERVAL
        values, bounds, support = self._per_class()
        se = np.array([math.sqrt(max(delong(c.pos, c.neg)[1], 0.0)) for c in self.columns])
        if average is None:
            z = normal_quantile(level)
            half = z * se + bounds
            return np.clip(values - half, 0.0, 1.0), np.clip(values + half, 0.0, 1.0)
        weights = support if average == "weighted" else np.ones(len(values))
        if not weights.sum() > 0:
            return NAN_INTERVAL
        share = weights / weights.sum()
        value = float(share @ values)
        return normal_interval(value, float(share @ se), level, (0.0, 1.0), float(share @ bounds))


from .calibration import BrierScore, CalibrationError, LogLoss  # noqa: E402
from .gauc import GAUC  # noqa: E402
