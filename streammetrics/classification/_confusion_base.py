"""The shared state and update of the label metrics: one confusion matrix of label-pair counts,
and the helpers of their averages."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .._inputs import (
    as_labels,
    as_weights,
    check_same_length,
)
from ..base import Metric
from ..errors import IncompatibleStateError, InputError
from ..states.contingency import ContingencyCounts
from ..states.labels import union
from ..states.stacked import ConfusionStack
from ..uncertainty import (
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
