"""Error metrics: mean squared, root mean squared, mean absolute and mean absolute percentage
error."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from ._base import _RegressionMetric
from ._variables import _AE, _APE, _SE

__all__ = [
    "MeanAbsoluteError",
    "MeanAbsolutePercentageError",
    "MeanSquaredError",
    "RootMeanSquaredError",
]


class MeanSquaredError(_RegressionMetric):
    """Mean squared error, as ``sklearn.metrics.mean_squared_error``.

    ``sum_i w_i (y_true_i - y_pred_i)**2 / sum_i w_i`` per output, averaged over outputs as
    ``multioutput`` says (``"variance_weighted"``, which scikit-learn does not offer here,
    weights each output by the variance of its ``y_true`` column). State: the running weighted
    mean of the squared error (a sum of non-negative terms: no cancellation). Agrees with
    scikit-learn to rounding (1e-12 relative); merges agree to rounding. Memory O(n_outputs);
    update O(n * n_outputs); merge and compute O(n_outputs).

    Examples
    --------
    >>> from streammetrics.regression import MeanSquaredError
    >>> m = MeanSquaredError().update([3, -0.5, 2, 7], [2.5, 0.0, 2, 8])
    >>> round(m.compute(), 6)
    0.375
    """

    higher_is_better: ClassVar[bool | None] = False

    _vars = (_SE,)
    _loss = _SE
    _schema = 3  # (0.8.9: wsq_mean, wsq_spread)

    def _compute(self) -> Any:
        return self._average(self._mse())

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Student-t interval (central limit theorem) of the mean squared error, from the
        running variance of the squared error, on Kish's effective sample size. One output
        (or ``NoIntervalError``). O(1)."""
        return self._loss_interval(level)


class RootMeanSquaredError(_RegressionMetric):
    """Root mean squared error, as ``sklearn.metrics.root_mean_squared_error``.

    The square root of each output's mean squared error, then averaged over outputs (so the
    ``"uniform_average"`` of two outputs is the mean of two RMSEs, as in scikit-learn, not the
    root of the mean MSE). State, exactness and cost as :class:`MeanSquaredError`.

    Examples
    --------
    >>> from streammetrics.regression import RootMeanSquaredError
    >>> m = RootMeanSquaredError().update([3, -0.5, 2, 7], [2.5, 0.0, 2, 8])
    >>> round(m.compute(), 6)
    0.612372
    """

    higher_is_better: ClassVar[bool | None] = False

    _vars = (_SE,)
    _loss = _SE
    _schema = 3  # (0.8.9: wsq_mean, wsq_spread)

    def _compute(self) -> Any:
        return self._average(np.sqrt(self._mse()))

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """The square roots of the mean squared error's interval (a monotone transform of
        :meth:`MeanSquaredError.interval`). O(1)."""
        low, high = self._loss_interval(level)
        return math.sqrt(low), math.sqrt(high)


class MeanAbsoluteError(_RegressionMetric):
    """Mean absolute error, as ``sklearn.metrics.mean_absolute_error``.

    ``sum_i w_i |y_true_i - y_pred_i| / sum_i w_i`` per output; state: its running weighted
    mean. Agrees with scikit-learn to rounding. Memory O(n_outputs); update O(n * n_outputs).

    Examples
    --------
    >>> from streammetrics.regression import MeanAbsoluteError
    >>> MeanAbsoluteError().update([3, -0.5, 2, 7], [2.5, 0.0, 2, 8]).compute()
    0.5
    """

    higher_is_better: ClassVar[bool | None] = False

    _vars = (_AE,)
    _loss = _AE
    _schema = 3  # (0.8.9: wsq_mean, wsq_spread)

    def _compute(self) -> Any:
        return self._average(self._mean(_AE))

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Student-t interval (central limit theorem) of the mean absolute error, on Kish's
        effective sample size. One output (or ``NoIntervalError``). O(1)."""
        return self._loss_interval(level)


class MeanAbsolutePercentageError(_RegressionMetric):
    """Mean absolute percentage error, as ``sklearn.metrics.mean_absolute_percentage_error``.

    ``|y_true - y_pred| / max(|y_true|, eps)`` averaged with the sample weights (a fraction, not
    a percentage; ``eps`` is float64's machine epsilon, as in scikit-learn, so a zero target
    gives a huge value rather than inf). State: its running weighted mean. Agrees with
    scikit-learn to rounding. Memory O(n_outputs); update O(n * n_outputs).

    Examples
    --------
    >>> from streammetrics.regression import MeanAbsolutePercentageError
    >>> m = MeanAbsolutePercentageError().update([3, -0.5, 2, 7], [2.5, 0.0, 2, 8])
    >>> round(m.compute(), 6)
    0.327381
    """

    higher_is_better: ClassVar[bool | None] = False

    _vars = (_APE,)
    _loss = _APE
    _schema = 3  # (0.8.9: wsq_mean, wsq_spread)

    def _compute(self) -> Any:
        return self._average(self._mean(_APE))

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Student-t interval (central limit theorem) of the mean absolute percentage error,
        on Kish's effective sample size. One output (or ``NoIntervalError``). O(1)."""
        return self._loss_interval(level)
