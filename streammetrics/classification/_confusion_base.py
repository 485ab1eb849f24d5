"""The shared state and update of the label metrics: one confusion matrix of label-pair counts,
and the helpers of their averages."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .._codec import CountOverflowError
from .._input_labels import as_labels
from .._inputs import as_weights, check_same_length
from ..base import Metric
from ..errors import IncompatibleStateError, InputError
from ..states.contingency import ContingencyCounts
from ..states.labels import union
from ..states.stacked import ConfusionStack
from ..uncertainty import (
    cells_delta_se,
    check_weight_sq,
    confusion_delta_se,
    kish,
    normal_interval,
)

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
        batch = self.counts.batch(yt, yp, weights, ("y_true", "y_pred"))
        self._check_labels(union(self.counts.rows, batch.rows))
        try:
            self.counts.check_mergeable(batch)
        except CountOverflowError as exc:
            if weights is None:
                raise
            raise CountOverflowError(f"sample_weight: {exc}") from None  # the argument named
        # Everything that can fail has run: the counts add in place (their label set grows
        # only when the batch brings new labels).
        self.counts.merge(batch)
        if not self._keeps_weight_sq:
            return self._commit(n)
        sq = float(n) if weights is None else float(weights @ weights)
        return self._commit(n, weight_sq=self.weight_sq + sq)

    def _stacked(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        """This batch for a stacked update of many states (``streammetrics.states.stacked``),
        validated as :meth:`update` validates it; None for an empty batch.

        The label set is not checked here: each state's own is what :meth:`_check_labels`
        judges. ``Bootstrap`` updates its whole-stream state first (its replicates' label sets
        lie within that one's), and ``Sliced`` packs only metrics that accept every label set
        (:meth:`_any_labels`); others update one slice at a time."""
        yt, yp = as_labels(y_true, "y_true"), as_labels(y_pred, "y_pred")
        n = check_same_length(y_true=yt, y_pred=yp)
        weights = as_weights(sample_weight, n)
        if n == 0 or type(self).update is not _ConfusionMetric.update:
            return None
        return ConfusionStack(self, yt, yp, weights)

    def _check_labels(self, labels: np.ndarray) -> None:
        """Refuse, at update time, label sets the configuration cannot score."""

    def _slice_free_labels(self) -> bool:
        # Labels are checked by kind and by _check_labels alone.
        return self._any_labels()

    def _label_kinds(self) -> set[str]:
        rows = self.counts.rows
        return {"str" if rows.dtype.kind == "U" else "int"} if len(rows) else set()

    def _any_labels(self) -> bool:
        """Whether :meth:`_check_labels` accepts every label set (a wrapper holding many
        states then need not check each state's own)."""
        return True

    def _label_rule(self) -> tuple[int, Any] | None:
        """The label sets :meth:`_check_labels` accepts, where it does not accept them all,
        for a wrapper that judges a row without the state (``Sliced``'s per-request buffer,
        ``wrappers._slice_rows``): ``(most, must)``, at most ``most`` labels, and ``must``
        among them when there are ``most``. None: no such rule."""
        return None

    def _compute_margins(
        self, tp: np.ndarray, true: np.ndarray, pred: np.ndarray, edges: list[int]
    ) -> list[Any] | None:
        """``compute()`` of many states of this configuration at once, from each state's
        margins over its own labels (the true positives, true and predicted totals, as float64,
        state ``i``'s at ``edges[i]:edges[i + 1]``), equal to the bit to each state's own; an
        entry may be None where only the state's own compute gives that. None when the metric
        offers none (``Sliced`` then computes each slice's state)."""
        return None

    def _interval_margins(
        self,
        tp: np.ndarray,
        true: np.ndarray,
        pred: np.ndarray,
        edges: list[int],
        weight_sq: np.ndarray,
        level: float,
    ) -> list[tuple[float, float]] | None:
        """``interval(level)`` of many states at once, as :meth:`_compute_margins` computes
        their values (``weight_sq``: each state's sum of squared weights); None when the
        metric offers none."""
        return None

    def _compute_tables(self, stack: np.ndarray) -> list[Any] | None:
        """``compute()`` of many states of this configuration at once from their dense tables
        of one width (a float64 ``(g, L, L)`` stack, :mod:`._table_stack`), equal to the bit to
        each state's own, whether its counts are whole or weighted; an entry may be None where
        only the state's own compute gives that. None when the metric offers none."""
        return None

    def _interval_tables(
        self,
        stack: np.ndarray,
        count: np.ndarray,
        weight_sq: np.ndarray,
        level: float,
    ) -> list[Any] | None:
        """``interval(level)`` of many states at once, as :meth:`_compute_tables` computes
        their values (``count``: each state's rows; ``weight_sq``: its sum of squared
        weights); None when the metric offers none."""
        return None

    def _check_compatible(self, other: Any) -> None:
        super()._check_compatible(other)
        self._check_compatible_together((other,))

    def _check_compatible_together(self, others: tuple[Any, ...]) -> None:
        # A merge must not build a label set that an update would have refused; pair by pair,
        # {0} with {1} and {0} with {2} pass, but together a binary metric has three.
        labels = self.counts.rows
        for other in others:
            labels = union(labels, other.counts.rows)
        try:
            self._check_labels(labels)
        except InputError as exc:
            raise IncompatibleStateError(f"the merged state could not be scored: {exc}") from exc

    def _validate_state(self) -> None:
        self._check_labels(self.counts.rows)
        weighted, held = self.counts.weighted, self.counts.total()
        if not weighted and held != self._count:
            # Integer counts are unweighted rows: one per row counted.
            raise ValueError(f"the table counts {held:.0f} rows, the state {self._count}")
        if self._keeps_weight_sq:
            if not weighted and self.weight_sq != self._count:
                # Integer counts hold no weights: each row's squared weight is 1 (a forged
                # weight_sq loaded within Cauchy-Schwarz's range and widened the interval).
                raise ValueError("unweighted counts need weight_sq equal to the row count")
            check_weight_sq(self.weight_sq, held, self._count)

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
        """The labels and the dense table (built from the sparse form: O(L**2) memory)."""
        table: np.ndarray = self.counts.table
        return self.counts.rows, table

    def _margins(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(diagonal, row sums, column sums)`` of the counts in float64, from either form
        without building the dense table: the true positives, true and predicted totals."""
        counts = self.counts
        return (
            counts.diagonal().astype(np.float64),
            counts.row_sums().astype(np.float64),
            counts.col_sums().astype(np.float64),
        )

    def _delta_se(self, f: Any) -> float:
        """:func:`~streammetrics.uncertainty.confusion_delta_se` of ``f`` at the counts; the
        sparse form computes the same over its filled cells only (``cells_delta_se``)."""
        if not self.counts.sparse:
            return confusion_delta_se(self.counts.table, f, self._n_eff(), self._count)
        return cells_delta_se(self.counts.filled(), self._margins(), f, self._n_eff(), self._count)


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


def segments(edges: list[int]) -> np.ndarray:
    """The segment of each position, for segments ``edges[i]:edges[i + 1]``."""
    return np.repeat(np.arange(len(edges) - 1), np.diff(edges))


def segment_nanaverage(
    values: np.ndarray, weights: np.ndarray | None, edges: list[int]
) -> list[float | None]:
    """:func:`_nanaverage` of each segment ``values[edges[i]:edges[i + 1]]`` (and ``weights``),
    equal to the bit where a segment keeps fewer than 8 values: numpy sums such short arrays
    left to right, as ``np.bincount`` does, and longer ones pairwise. Those are None, for the
    caller to average one by one."""
    many = len(edges) - 1
    keep = ~np.isnan(values)
    seg, kept = segments(edges)[keep], values[keep]
    n = np.bincount(seg, minlength=many)
    mean = np.bincount(seg, weights=kept, minlength=many) / np.maximum(n, 1)
    out = mean
    if weights is not None:
        w = weights[keep]
        scale = np.bincount(seg, weights=w, minlength=many)
        weighted = np.bincount(seg, weights=kept * w, minlength=many)
        out = np.where(scale == 0, mean, weighted / np.where(scale == 0, 1.0, scale))
    result: list[float | None] = np.where(n == 0, np.nan, out).tolist()
    for j in np.flatnonzero(n >= 8).tolist():
        result[j] = None
    return result


def _check_zero_division(zero_division: Any) -> float:
    if isinstance(zero_division, str) and zero_division == "warn":
        return 0.0  # scikit-learn's "warn" scores 0.0 (we do not warn)
    if isinstance(zero_division, (int, float)) and not isinstance(zero_division, bool):
        value = float(zero_division)
        if value in (0.0, 1.0) or math.isnan(value):
            return value
    raise InputError(f"zero_division: must be 0.0, 1.0, nan or 'warn'; got {zero_division!r}")


def unit_scale(totals: np.ndarray) -> np.ndarray:
    """The powers of two bringing positive finite ``totals`` to [0.5, 1) (1.0 elsewhere):
    scaling by them is exact, and keeps products of squared totals from under- or
    overflowing."""
    finite = np.isfinite(totals) & (totals > 0)
    out: np.ndarray = np.where(
        finite, np.ldexp(1.0, -np.frexp(np.where(finite, totals, 1.0))[1]), 1.0
    )
    return out
