"""Goodness-of-fit metrics: R2, explained variance, Pearson's correlation, and the report of
every regression metric at once."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .._config_values import config_flag
from ..uncertainty import (
    NAN_INTERVAL,
    check_level,
    fisher_z,
)
from ._base import _RegressionMetric
from ._variables import _AE, _APE, _E, _P, _SE, _T

__all__ = ["ExplainedVariance", "PearsonCorrCoef", "R2Score", "RegressionReport"]


class R2Score(_RegressionMetric):
    """Coefficient of determination, as ``sklearn.metrics.r2_score``.

    ``1 - sum w (y_true - y_pred)**2 / sum w (y_true - mean(y_true))**2`` per output, with
    scikit-learn's ``force_finite`` rule (a constant ``y_true`` scores 1.0 for a perfect
    prediction, 0.0 otherwise) and ``nan`` below two samples. The denominator is the running
    co-moment of ``y_true`` (Chan et al.), so no cancellation at any mean or count; a column that
    is exactly constant has exactly zero variance. Agrees with scikit-learn to 1e-9 relative on
    real data; merges agree to rounding. Memory O(n_outputs); update O(n * n_outputs).

    Examples
    --------
    >>> from streammetrics.regression import R2Score
    >>> m = R2Score().update([3, -0.5, 2, 7], [2.5, 0.0, 2, 8])
    >>> round(m.compute(), 6)
    0.948608
    """

    higher_is_better: ClassVar[bool | None] = True

    _vars = (_T, _SE)
    _pairs = ((_T, _T),)
    _shape = True
    _schema = 3

    def __init__(self, multioutput: Any = "uniform_average", force_finite: bool = True) -> None:
        super().__init__(multioutput)
        self._add_config(force_finite=config_flag(force_finite, "force_finite"))

    def _compute(self) -> Any:
        if self.count < 2:
            return self._empty_values()
        return self._average(self._r2(self._config["force_finite"]))

    def _empty_values(self) -> Any:
        width = self.moments.width or 1
        return self._average(np.full(width, math.nan))

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Delta-method interval of R2 from the fourth-order central moments of (error,
        ``y_true``) in the state (see :func:`~streammetrics.uncertainty.explained_delta_se`
        and ``docs/uncertainty.md``), on Kish's effective sample size. One output (or
        ``NoIntervalError``); ``nan, nan`` below 2 rows or for a constant ``y_true``. O(1)."""
        return self._explained_interval(level, "r2")


class ExplainedVariance(_RegressionMetric):
    """Explained variance, as ``sklearn.metrics.explained_variance_score``.

    ``1 - Var_w(y_true - y_pred) / Var_w(y_true)`` per output, with scikit-learn's
    ``force_finite`` rule. Both variances are running co-moments (Chan et al.): no cancellation.
    Agrees with scikit-learn to 1e-9 relative on real data; merges agree to rounding. Memory
    O(n_outputs); update O(n * n_outputs).

    Examples
    --------
    >>> from streammetrics.regression import ExplainedVariance
    >>> m = ExplainedVariance().update([3, -0.5, 2, 7], [2.5, 0.0, 2, 8])
    >>> round(m.compute(), 6)
    0.957173
    """

    higher_is_better: ClassVar[bool | None] = True

    _vars = (_T, _E)
    _pairs = ((_T, _T), (_E, _E))
    _shape = True
    _schema = 3

    def __init__(self, multioutput: Any = "uniform_average", force_finite: bool = True) -> None:
        super().__init__(multioutput)
        self._add_config(force_finite=config_flag(force_finite, "force_finite"))

    def _compute(self) -> Any:
        return self._average(self._ev(self._config["force_finite"]))

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Delta-method interval of the explained variance, as :meth:`R2Score.interval` (the
        ratio of the error's variance to ``y_true``'s instead of the mean squared error's). One
        output (or ``NoIntervalError``). O(1)."""
        return self._explained_interval(level, "ev")


class PearsonCorrCoef(_RegressionMetric):
    """Pearson correlation of ``y_true`` and ``y_pred``, as ``scipy.stats.pearsonr``'s statistic.

    ``cov_w(t, p) / sqrt(var_w(t) var_w(p))`` per output (weighted when ``sample_weight`` is
    given, as ``numpy.cov(..., aweights=w)`` would give it), ``nan`` when either column is
    constant (as scipy), clipped to [-1, 1]; averaged over outputs as ``multioutput`` says. The
    co-moments are running (Chan et al.): no cancellation. Agrees with scipy to 1e-9 relative on
    real data; merges agree to rounding. Memory O(n_outputs); update O(n * n_outputs).

    Examples
    --------
    >>> from streammetrics.regression import PearsonCorrCoef
    >>> m = PearsonCorrCoef().update([1, 2, 3, 4], [1, 3, 2, 5])
    >>> round(m.compute(), 6)
    0.831522
    """

    higher_is_better: ClassVar[bool | None] = True

    _vars = (_T, _P)
    _pairs = ((_T, _T), (_P, _P), (_T, _P))

    def _compute(self) -> Any:
        if self.count < 2:
            return self._average(np.full(self.moments.width or 1, math.nan))
        return self._average(self._pearson())

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Fisher's z interval, ``tanh(atanh(r) -/+ z / sqrt(n_eff - 3))`` (Fisher 1921), on
        Kish's effective sample size. One output (or ``NoIntervalError``). O(1)."""
        level = check_level(level)
        self._single_output()
        if self.count == 0:
            return NAN_INTERVAL
        return fisher_z(float(self.compute()), self._n_eff(), level)


class RegressionReport(_RegressionMetric):
    """Every regression metric at once, from one set of running moments.

    compute -> dict: ``mse``, ``rmse``, ``mae``, ``r2``, ``explained_variance``, ``mape``,
    ``pearson`` (each as the metric of that name with this ``multioutput`` and
    ``force_finite``) and ``count`` (samples seen). Memory O(n_outputs); update
    O(n * n_outputs), about three times one single metric's.

    Examples
    --------
    >>> from streammetrics.regression import RegressionReport
    >>> r = RegressionReport().update([3, -0.5, 2, 7], [2.5, 0.0, 2, 8]).compute()
    >>> round(r["mse"], 6), round(r["r2"], 6), r["count"]
    (0.375, 0.948608, 4)
    """

    higher_is_better: ClassVar[bool | None] = None

    _KEYS = ("mse", "rmse", "mae", "r2", "explained_variance", "mape", "pearson")
    _vars = (_T, _P, _E, _AE, _APE, _SE)
    _pairs = ((_T, _T), (_P, _P), (_T, _P), (_E, _E))

    def __init__(self, multioutput: Any = "uniform_average", force_finite: bool = True) -> None:
        super().__init__(multioutput)
        self._add_config(force_finite=config_flag(force_finite, "force_finite"))

    def _compute(self) -> dict[str, Any]:
        ff = self._config["force_finite"]
        nan = np.full(self.moments.width or 1, math.nan)
        few = self.count < 2
        return {
            "mse": self._average(self._mse()),
            "rmse": self._average(np.sqrt(self._mse())),
            "mae": self._average(self._mean(_AE)),
            "r2": self._average(nan if few else self._r2(ff)),
            "explained_variance": self._average(self._ev(ff)),
            "mape": self._average(self._mean(_APE)),
            "pearson": self._average(nan if few else self._pearson()),
            "count": self.count,
        }

    def _empty_result(self) -> dict[str, Any]:
        empty = super()._empty_result()
        out: dict[str, Any] = {
            k: np.copy(empty) if isinstance(empty, np.ndarray) else empty for k in self._KEYS
        }
        out["count"] = 0
        return out
