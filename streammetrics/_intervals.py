"""The intervals of :mod:`streammetrics.uncertainty` over arrays of states at once.

``Sliced`` packs many slices' states into arrays; their intervals are the per-state functions
(``mean_interval``, ``t_interval``, ``normal_interval``, ``wilson``, ``kish``) applied slice
by slice, 2-4 µs of Python each: 0.2 s at 100,000 slices. These are the same IEEE operations
element by element, in the same order, with Python's ``max`` and ``min`` written as the
``np.where`` that picks the same operand (nan and -0.0 included) and the quantiles from the same
``scipy.special`` functions, so every slice gets its own function's floats to the bit (the
tests compare ``repr``)."""

from __future__ import annotations

import math
import sys

import numpy as np
from scipy import special
from scipy.special import expit

from .uncertainty import NAN_INTERVAL, TWO_ROWS, normal_quantile

__all__ = [
    "ap_interval",
    "ap_intervals",
    "clipped",
    "kishes",
    "mean_intervals",
    "normal_intervals",
    "pairs",
    "t_intervals",
    "wilsons",
]


def clipped(x: np.ndarray, low: float, high: float) -> np.ndarray:
    """``min(max(x, low), high)`` of every element, as Python's ``max`` and ``min`` pick: the
    first operand unless the second is strictly beyond it (so nan stays nan)."""
    x = np.where(low > x, low, x)
    out: np.ndarray = np.where(high < x, high, x)
    return out


def pairs(
    low: np.ndarray, high: np.ndarray, missing: np.ndarray | None = None
) -> list[tuple[float, float]]:
    """Every element's ``(low, high)`` as Python floats, ``(nan, nan)`` where ``missing``."""
    if missing is not None:
        low, high = np.where(missing, math.nan, low), np.where(missing, math.nan, high)
    return list(zip(low.tolist(), high.tolist(), strict=True))


def normal_intervals(
    value: np.ndarray,
    se: np.ndarray,
    level: float,
    bounds: tuple[float, float],
    widen: np.ndarray | float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """``normal_interval(value, se, level, bounds, widen)`` of every element, as ``(low,
    high)`` arrays (nan where it gives ``(nan, nan)``)."""
    with np.errstate(all="ignore"):
        half = normal_quantile(level) * se + widen  # (a widen of 0.0 makes -0.0 0.0)
        low = clipped(value - half, *bounds)
        high = clipped(value + half, *bounds)
    bad = ~(np.isfinite(value) & np.isfinite(se))
    low[bad], high[bad] = math.nan, math.nan
    return low, high


def wilsons(successes: np.ndarray, n: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """``wilson(successes, n, level)`` of every element, as ``(low, high)`` arrays."""
    z = normal_quantile(level)
    z2 = z * z
    with np.errstate(all="ignore"):
        p = clipped(successes / n, 0.0, 1.0)
        centre = (p + z2 / (2 * n)) / (1 + z2 / n)
        half = z / (1 + z2 / n) * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
        low = clipped(np.where(p == 0.0, 0.0, centre - half), 0.0, 1.0)
        high = clipped(np.where(p == 1.0, 1.0, centre + half), 0.0, 1.0)
        bad = ~((n > 0) & (n * n > 0) & np.isfinite(n))
    low[bad], high[bad] = math.nan, math.nan
    return low, high


def kishes(weight: np.ndarray, weight_sq: np.ndarray) -> np.ndarray:
    """``kish`` of every element."""
    with np.errstate(all="ignore"):
        out: np.ndarray = np.where(
            weight_sq >= sys.float_info.min, weight / weight_sq * weight, 0.0
        )
    return out


def t_intervals(
    mean: np.ndarray, spread: np.ndarray, n_eff: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """``t_interval(mean, spread, n_eff, level, (0.0, inf))`` of every element, as ``(low,
    high)`` arrays (nan where it gives ``(nan, nan)``)."""
    with np.errstate(all="ignore"):
        ok = (n_eff >= TWO_ROWS) & np.isfinite(mean) & np.isfinite(spread)
        var = np.where(0.0 > spread, 0.0, spread) * n_eff / (n_eff - 1.0)  # max(spread, 0.0)
        df = n_eff - 1.0
        p = 0.5 + level / 2.0
        quantile = np.full(len(df), math.nan)
        finite = ok & np.isfinite(df)
        quantile[finite] = special.stdtrit(df[finite], p)
        quantile[ok & np.isinf(df)] = float(special.ndtri(p))
        half = quantile * np.sqrt(var / n_eff)
        low, high = mean - half, mean + half
        low = np.where(0.0 > low, 0.0, low)  # _clip: max(x, 0.0), then min(x, inf) keeps x
        high = np.where(0.0 > high, 0.0, high)
    low[~ok], high[~ok] = math.nan, math.nan
    return low, high


def mean_intervals(
    weight: np.ndarray,
    values: np.ndarray,
    squares: np.ndarray,
    weight_sq: np.ndarray,
    level: float,
    wsq: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``mean_interval(..., level, (0.0, inf), wsq=...)`` of every element; ``wsq`` is
    ``(known, sum w**2 x, sum w**2 x**2)``, ``known`` where the element passes them."""
    with np.errstate(all="ignore"):
        mean = values / weight
        n_eff = kishes(weight, weight_sq)
        spread = squares / weight - mean * mean
        spread = np.where(0.0 > spread, 0.0, spread)  # max(..., 0.0)
        if wsq is not None:
            known, wsq_total, wsq_squares = wsq
            dev = wsq_squares - 2.0 * mean * wsq_total + mean * mean * weight_sq
            alt = n_eff * dev / weight / weight
            spread = np.where(known & (alt > spread), alt, spread)  # max(spread, alt)
    low, high = t_intervals(mean, spread, n_eff, level)
    empty = ~(weight > 0)
    low[empty], high[empty] = math.nan, math.nan
    return low, high


def ap_intervals(
    ap: np.ndarray, widen: np.ndarray, big_p: np.ndarray, big_n: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """``AveragePrecision.interval`` of every element (Boyd, Eng and Page 2013's logit
    interval; the metric calls this on one element): ``expit(logit(AP) -/+ z / sqrt(P AP (1 -
    AP)))`` widened by ``widen`` and clipped to [0, 1], ``AP -/+ widen`` at an AP of 0 or 1;
    nan unless the AP is finite and ``big_p``, ``big_n`` (the positive and negative weight)
    are both above 1."""
    z = normal_quantile(level)
    with np.errstate(all="ignore"):
        # expit, not 1 / (1 + exp(-x)): half is over 700 for a tiny AP of few positives.
        centre = np.log(ap / (1.0 - ap))
        half = z / np.sqrt(big_p * ap * (1.0 - ap))
        low = expit(centre - half) - widen
        high = expit(centre + half) + widen
        low = np.where(0.0 > low, 0.0, low)  # max(low, 0.0)
        high = np.where(1.0 < high, 1.0, high)  # min(high, 1.0)
        edge = (ap <= 0.0) | (ap >= 1.0)  # normal_interval(ap, 0.0, level, (0, 1), widen)
        side = z * 0.0 + widen
        low = np.where(edge, clipped(ap - side, 0.0, 1.0), low)
        high = np.where(edge, clipped(ap + side, 0.0, 1.0), high)
    bad = ~(np.isfinite(ap) & (big_p > 1) & (big_n > 1))
    low[bad], high[bad] = math.nan, math.nan
    return low, high


def ap_interval(
    ap: float, widen: float, big_p: float, big_n: float, level: float
) -> tuple[float, float]:
    """:func:`ap_intervals` of one element (``AveragePrecision.interval``), by the same
    operations on Python floats (``+ - * /`` and ``math.sqrt`` round as numpy's) and numpy
    scalars (the log and ``expit`` as numpy and scipy take them): the same floats
    (``tests/test_score_rows.py``), without the dozen one-element arrays. The edge and the
    missing cases return before the logit, which they would discard (and which divides by zero
    at an AP of 1)."""
    if not (math.isfinite(ap) and big_p > 1 and big_n > 1):
        return NAN_INTERVAL
    z = normal_quantile(level)
    if ap <= 0.0 or ap >= 1.0:  # normal_interval(ap, 0.0, level, (0, 1), widen)
        side = z * 0.0 + widen
        low, high = ap - side, ap + side
        low = 0.0 if 0.0 > low else low  # clipped(..., 0.0, 1.0)
        high = 0.0 if 0.0 > high else high
        return (1.0 if 1.0 < low else low), (1.0 if 1.0 < high else high)
    centre = np.log(ap / (1.0 - ap))
    half = z / math.sqrt(big_p * ap * (1.0 - ap))
    low = float(expit(centre - half)) - widen
    high = float(expit(centre + half)) + widen
    return (0.0 if 0.0 > low else low), (1.0 if 1.0 < high else high)
