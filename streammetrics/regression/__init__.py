"""Regression metrics from numerically stable running moments.

Every metric here keeps one :class:`~streammetrics.states.moments.Moments` block: the total
sample weight, the weighted means of the columns it needs (``y_true``, ``y_pred``, the error
``y_true - y_pred``, its absolute value, its absolute value relative to ``|y_true|``, its square)
and the co-moments of the pairs it needs, merged with the parallel update of Chan et al. No raw
sum of squares is kept, so a stream of 1e9 values around 1e6 with a spread of 1e-3 keeps its
variance to about 1e-9 relative (see ``docs/regression.md``).

The state holds float sums: a stream split over updates and shards and merged in any order
gives the same values to rounding (about 1e-12 relative), not the same bytes.

Targets may be 1-D (one output) or 2-D ``(n, n_outputs)``; ``multioutput`` is scikit-learn's:
``"raw_values"`` (an array, one value per output), ``"uniform_average"``, ``"variance_weighted"``
(weights proportional to the variance of each ``y_true`` column) or an array of weights.

Memory: O(n_outputs). ``update``: O(n * n_outputs). ``merge``: O(n_outputs). ``compute``:
O(n_outputs).
"""

from __future__ import annotations

from .errors import (
    MeanAbsoluteError,
    MeanAbsolutePercentageError,
    MeanSquaredError,
    RootMeanSquaredError,
)
from .fit import ExplainedVariance, PearsonCorrCoef, R2Score, RegressionReport

__all__ = [
    "ExplainedVariance",
    "MeanAbsoluteError",
    "MeanAbsolutePercentageError",
    "MeanSquaredError",
    "PearsonCorrCoef",
    "R2Score",
    "RegressionReport",
    "RootMeanSquaredError",
]
