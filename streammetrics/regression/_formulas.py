"""What the regression metrics compute from their moments, as plain functions of arrays (the
metrics' own ``compute`` and ``Sliced``'s packed slices share them): the fraction of explained
deviance of R2 and explained variance (scikit-learn's assembly, output by output), Pearson's r
from the co-moments, the Student-t interval of a mean loss, and the floor that reports a value
past float64's range as the most negative float, never as -inf."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..uncertainty import NAN_INTERVAL, kish, t_interval

_FMAX = float(np.finfo(np.float64).max)


def _explained(num: np.ndarray, den: np.ndarray, force_finite: bool) -> np.ndarray:
    """scikit-learn's ``_assemble_fraction_of_explained_deviance``, output by output."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if not force_finite:
            # -inf over a zero variance is scikit-learn's value; over a positive one, overflow.
            out = np.asarray(1 - num / den, dtype=np.float64)
            return np.where(den != 0, _floor(out), out)
        out = np.ones(len(num))
        valid = (den != 0) & (num != 0)
        out[valid] = _floor(1 - num[valid] / den[valid])
        out[(num != 0) & (den == 0)] = 0.0
        return out


def _floor(values: Any, parts: np.ndarray | None = None) -> Any:
    """-inf (a ratio or an average past float64's range) as the most negative float; nan
    stays nan, and so does an average of ``parts`` that holds a -inf (force_finite=False over a
    zero variance: scikit-learn's value)."""
    if isinstance(values, np.ndarray):
        return np.maximum(values, -_FMAX)
    if parts is not None and np.isneginf(parts).any():
        return values
    return max(values, -_FMAX) if values == values else values


def loss_interval(
    w: float,
    mean: float,
    co: float,
    weight_sq: float,
    wsq_mean: float | None,
    wsq_spread: float,
    level: float,
) -> tuple[float, float]:
    """The Student-t interval of a mean loss of weight ``w``, co-moment ``co`` and squared
    weights ``weight_sq`` (``wsq_mean``, ``wsq_spread``: its moments under the weights squared,
    None when every weight was 1); ``level`` checked."""
    if not w > 0:
        return NAN_INTERVAL
    n_eff = kish(w, weight_sq)
    spread = co / w  # Kish's rule
    if wsq_mean is not None and math.isfinite(wsq_mean):
        # Weighted: the linearised (ratio-estimator) variance, Cochran (1977) sec. 6.4,
        # sum w**2 (x - m)**2 = spread + weight_sq (a - m)**2 about the w**2-mean a, if
        # larger (``uncertainty.mean_interval`` says why). Every weight 1: the same value;
        # unknown (weighted before 0.8.9): Kish's alone.
        dev = wsq_spread + weight_sq * (wsq_mean - mean) ** 2
        spread = max(spread, n_eff * dev / (w * w))  # the spread t_interval reads
    return t_interval(mean, spread, n_eff, level, (0.0, math.inf))


def pearson(tt: np.ndarray, pp: np.ndarray, tp: np.ndarray) -> np.ndarray:
    """Pearson's r of each element from the co-moments ``tt``, ``pp`` and ``tp`` (``nan``
    where a column is constant), clipped to [-1, 1]."""
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        prod = tt * pp
        den = np.sqrt(prod)
        # Past float64's range (variances near the bound of the moments): one root each.
        # Also where the product fell among the subnormals, whose few digits it keeps
        # (0.8.17 caught only 0 there: values spread about 1e-82 gave r 7.7e-4 off).
        tiny = np.abs(prod) < np.finfo(np.float64).tiny
        far = ~np.isfinite(den) | (tiny & (tt != 0) & (pp != 0))
        den[far] = np.sqrt(tt[far]) * np.sqrt(pp[far])
        r = tp / den
    r[(tt == 0) | (pp == 0)] = math.nan  # a constant column: undefined, as scipy says
    return np.asarray(np.clip(r, -1.0, 1.0))
