"""Binary-score metrics (ROC AUC, average precision, curves, GAUC, calibration).

ROC AUC, average precision and the two curves keep a :class:`~streammetrics.states.buckets.
ScoreBuckets` of positive and negative weight per score bucket. Two modes:

* ``exact=True``: one entry per distinct score; the values equal scikit-learn's
  ``roc_auc_score``, ``average_precision_score``, ``roc_curve`` and ``precision_recall_curve``
  (ties and sample weights included). Memory grows with the number of distinct scores (24 bytes
  each).
* ``exact=False`` (the default): a fixed bucket grid chosen by ``score_type`` (see
  :mod:`streammetrics.states.buckets` and ``docs/accuracy.md``); for ``"probability"`` and
  ``"logit"`` scores at most 4,098 buckets (160 KiB at most in memory) at the default
  ``resolution=128``, whatever the stream's size (``"real"``: as many as the scores' range of
  binades needs, ``docs/scores.md``);
  ``error_bound()`` certifies how far the value can be from the exact one.

Counts are int64 until a sample weight arrives, then float64; the state is canonical, so it is
split-invariant byte for byte (for whole-number weights).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .._inputs import BFLOAT16_BITS, as_weights, bfloat16_values, check_same_length
from .._intervals import ap_interval
from .._rows import BINARY_LABELS
from ..base import Metric
from ..errors import InputError
from ..states._bucket_stack import BucketStack
from ..states._delong_rows import delong_of_sums
from ..states._group_table import auc_of_counts
from ..states.buckets import ScoreBuckets
from ..states.mappings import DEFAULT_RESOLUTION, mapping_for
from ..states.score_tables import ap_from_table, auc_from_table, auc_of_sums, curve_counts
from ..uncertainty import (
    NAN_INTERVAL,
    check_level,
    delong,
    normal_interval,
)
from ._checks import binary_labels, check_exact_probabilities, check_mode, checked_scores

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

    #: Sample weights are read as counts (a row of weight 2 is two rows): ``Decayed`` scales
    #: them to Kish's effective size before asking for an interval.
    _weights_are_counts: ClassVar[bool] = True

    hist: ScoreBuckets

    def _slice_free_labels(self) -> bool:
        return True  # y_true is 0/1 (or bool) whatever the state holds

    def _label_kinds(self) -> set[str]:
        return set()  # (0/1 labels: no kind to mix)

    def __init__(
        self,
        exact: bool = False,
        score_type: str = "probability",
        resolution: int = DEFAULT_RESOLUTION,
    ) -> None:
        super().__init__()
        exact, score_type, resolution = check_mode(exact, score_type, resolution)
        self._add_config(exact=exact, score_type=score_type, resolution=resolution)
        mapping = None if exact else mapping_for(score_type, resolution)
        self._add_state("hist", ScoreBuckets(mapping), merge=None)
        self._declare_rows(
            "label",
            "probability" if score_type == "probability" else "number",
            labels=BINARY_LABELS,
        )

    def update(self, y_true: Any, y_score: Any, sample_weight: Any = None) -> Any:
        """Add a batch of (label, score) pairs, optionally weighted.

        Complexity: O(n) in sketch mode (O(n log n) for ``score_type="real"``), O(n log n + m)
        in exact mode with m distinct scores held.
        """
        y = binary_labels(y_true, keep_bool=True)  # the store counts bools as they are
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
        w = None if sample_weight is None else sample_weight.astype(np.float64, copy=False)
        keys = None
        if y_score.dtype == BFLOAT16_BITS:
            # 65,536 possible values: widened, and bucketed on a grid, by lookup.
            bits = y_score.view(np.uint16)
            x = bfloat16_values()[bits]
            table = self.hist.bfloat16_keys()
            keys = None if table is None else table[bits]
        else:
            x = y_score.astype(np.float64, copy=False)
        return self._commit(len(x), hist=self.hist.add(x, y, w, keys=keys))

    #: :meth:`_fold_rows` reads buffered bfloat16 scores as raw bits.
    _fold_bfloat16 = True

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

    #: ``_validate_state`` checks, beyond what the packed decoder of ``Sliced`` (grid stores
    #: only) checks itself, exact stores alone, so that decoder need not run it.
    _validates_exact_only: ClassVar[bool] = True

    def _validate_state(self) -> None:
        if self.hist.exact and self._config["score_type"] == "probability":
            check_exact_probabilities(self.hist.keys)
        if not self.hist.weighted:
            # Integer buckets are unweighted rows, one per row counted (as the confusion
            # metrics check): a flipped byte gave 4.5e15 rows under a count of 120, and a
            # silently wrong value.
            held = int(self.hist.pos.sum()) + int(self.hist.neg.sum())
            if held != self._count:
                raise ValueError(f"the buckets hold {held} rows, the state {self._count}")


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
    ``32 * resolution + 2`` buckets of 40 bytes (``"real"``: see ``docs/scores.md``).
    ``update`` O(n); ``merge`` O(buckets); ``compute`` O(buckets). ``nan`` when either class
    is absent.

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
        return self._auc()[0]

    def _auc(self) -> tuple[float, float]:
        """``(AUC, bound)``, once per state (``ScoreBuckets.derived``); an exact store of
        counts from its exact sums (``ScoreBuckets.exact_sums``: a served store reads past a
        few queued rows), the same floats as from its table."""
        h = self.hist
        sums = h.exact_sums() if h.exact else None
        if sums is not None:
            return auc_of_sums(sums), 0.0
        found: tuple[float, float] = h.derived("auc", lambda: auc_from_table(*self._table()))
        return found

    @classmethod
    def _compute_many(cls, metrics: list[Any]) -> list[float] | None:
        """``[m.compute() for m in metrics]`` for many non-empty ``ROCAUC`` states held by a
        wrapper (``Sliced``), equal to the bit, in a few array passes instead of a few numpy
        calls per state; ``None`` (compute them one by one) unless every state is an
        unweighted ``ROCAUC`` with nothing buffered."""
        if any(type(m) is not cls or m._pending is not None or m._count == 0 for m in metrics):
            return None
        pos, neg = [m.hist.pos for m in metrics], [m.hist.neg for m in metrics]
        if any(p.dtype.kind != "i" for p in pos) or any(q.dtype.kind != "i" for q in neg):
            return None
        values = auc_of_counts(pos, neg)
        return None if values is None else values.tolist()

    def error_bound(self) -> float:
        """A certified bound on ``abs(compute() - exact AUC)``; 0.0 in exact mode."""
        if self.count == 0:
            return math.nan
        return 0.0 if self.hist.exact else self._auc()[1]

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
        sums = h.exact_sums() if h.exact else None
        if sums is not None:
            auc, var = delong_of_sums(sums)
        else:
            auc, var = h.derived("delong", lambda: delong(h.pos, h.neg))
        widen = 0.0 if h.exact else self._auc()[1]  # error_bound(), its count checked
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
        return self._ap()[0]

    def _ap(self) -> tuple[float, float]:
        """``(AP, bound)``, once per state (``ScoreBuckets.derived``)."""
        found: tuple[float, float] = self.hist.derived("ap", lambda: ap_from_table(*self._table()))
        return found

    def error_bound(self) -> float:
        """A certified bound on ``abs(compute() - exact AP)``; 0.0 in exact mode."""
        if self.count == 0:
            return math.nan
        return 0.0 if self.hist.exact else self._ap()[1]

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Logit interval of the average precision (Boyd, Eng and Page 2013).

        Boyd, K., Eng, K. H. and Page, C. D. (2013). Area under the precision-recall curve:
        point estimates and confidence intervals. ECML PKDD, LNCS 8190, 451-466: the binomial
        logit interval ``expit(logit(AP) -/+ z / sqrt(P AP (1 - AP)))`` with ``P`` the positive
        weight (frequency weights), which they found to cover best among the closed forms. In
        sketch mode it is widened by ``error_bound()`` on each side; clipped to [0, 1]. ``nan,
        nan`` unless the positives and the negatives each weigh more than 1; an AP of exactly 0
        or 1 gives a degenerate interval. O(1) after the value.
        """
        level = check_level(level)
        if self.count == 0:
            return NAN_INTERVAL
        ap, bound = self._ap()  # (compute() and error_bound(), the count checked)
        h = self.hist
        big_p, big_n = h.derived("totals", lambda: (float(h.pos.sum()), float(h.neg.sum())))
        # (nan unless both classes weigh more than 1, as ROCAUC: weights as counts)
        return ap_interval(ap, 0.0 if h.exact else bound, big_p, big_n, level)


def _thresholds(metric: _BinaryScoreMetric) -> np.ndarray:
    h = metric.hist
    if h.exact:
        out: np.ndarray = h.keys[::-1].copy()
        return out
    # The edges at the store's own resolution ("real" sketches adapt theirs; 0.8.4 read their
    # keys at the configured one and returned thresholds of 0 or garbage).
    return h.lower_edges()[::-1]


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


from .calibration import BrierScore, LogLoss  # noqa: E402
from .gauc import GAUC  # noqa: E402
from .multiclass import MulticlassROCAUC  # noqa: E402
from .reliability import CalibrationError  # noqa: E402
