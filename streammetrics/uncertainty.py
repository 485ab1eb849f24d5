"""Closed-form confidence intervals from the statistics a metric state already keeps.

Neutral helpers (no metric imports) for the ``interval(level)`` method of every metric whose
value is a float; ``docs/uncertainty.md`` names the method each metric uses.

* :func:`wilson`: Wilson (1927) score interval of a proportion.
* :func:`mean_interval`: Student-t interval of a (weighted) mean from running sums of the value
  and its square: the central limit theorem on a per-sample loss or per-query value.
* :func:`delong`: DeLong, DeLong and Clarke-Pearson (1988) variance of the AUC from the
  structural components (placements) of a sorted score table, ties counting 1/2.
* :func:`confusion_delta_se`: the delta method over multinomial counts for any function of the
  diagonal, row sums, column sums and total of a confusion matrix.
* :func:`fisher_z`: Fisher's (1921) z interval of a correlation.
* :func:`explained_delta_se`: the delta method on sample moments for R2 and explained variance
  (ratios of a mean loss to the variance of ``y_true``).
* :func:`kish`: Kish's (1965) effective sample size ``(sum w)**2 / sum w**2`` of weighted rows.
* :func:`interval_or_none`: a metric's interval, or None where it has no closed form.

Every helper costs O(size of the state), never O(rows seen).

Examples
--------
>>> from streammetrics.uncertainty import wilson
>>> [round(v, 4) for v in wilson(8, 10, 0.95)]
[0.4902, 0.9433]
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import special

from .errors import InputError, NoIntervalError

__all__ = [
    "NAN_INTERVAL",
    "cells_delta_se",
    "check_level",
    "check_weight_sq",
    "confusion_delta_se",
    "counts_delta_se",
    "delong",
    "explained_delta_se",
    "fisher_z",
    "kish",
    "mean_interval",
    "no_interval",
    "normal_interval",
    "normal_quantile",
    "summary_gradient",
    "t_interval",
    "t_quantile",
    "wilson",
]

NAN_INTERVAL = (math.nan, math.nan)


def check_level(level: object) -> float:
    """``level`` as a float in (0, 1), or an :class:`InputError` naming ``level``."""
    if isinstance(level, bool) or not isinstance(level, (int, float, np.floating, np.integer)):
        raise InputError(f"level: must be a number between 0 and 1; got {level!r}")
    value = float(level)
    if not 0.0 < value < 1.0:
        raise InputError(f"level: must be between 0 and 1 (exclusive); got {level!r}")
    return value


def no_interval(name: str, why: str) -> NoIntervalError:
    """The error ``interval()`` raises where no closed form exists, pointing to ``Bootstrap``."""
    return NoIntervalError(
        f"{name} has no closed-form confidence interval ({why}); wrap it in "
        f"streammetrics.Bootstrap({name}(...)) and call interval() on that"
    )


def interval_or_none(metric: Any, level: float, many: bool = False) -> Any:
    """``metric.interval(level)`` (``intervals(level)`` with ``many``), or None where the
    metric has no closed form (:class:`NoIntervalError`): for pictures and reports, which
    show an interval where there is one and the value alone otherwise."""
    try:
        return metric.intervals(level) if many else metric.interval(level)
    except NoIntervalError:
        return None


def normal_quantile(level: float) -> float:
    """The two-sided standard normal quantile ``z`` with ``P(|Z| <= z) = level``.

    ``scipy.special.ndtri`` (what ``scipy.stats.norm.ppf`` evaluates, without its 50 us of
    argument handling), kept for the last 64 levels asked (a state's interval asks one).
    ``level`` is read as a float (a 0-d array or numpy scalar too)."""
    return _normal_quantile(float(level))


@functools.lru_cache(maxsize=64)
def _normal_quantile(level: float) -> float:
    return float(special.ndtri(0.5 + level / 2.0))


@functools.lru_cache(maxsize=4096)
def t_quantile(level: float, df: float) -> float:
    """The two-sided Student-t quantile with ``df`` degrees of freedom (normal when df is inf).

    Kept for the last 4,096 ``(level, df)`` asked: the intervals of many slices of whole
    counts share few degrees of freedom (100,000 ``Sliced(LogLoss())`` slices: 0.17 of 0.48 s
    went to ``stdtrit``, 2 µs a call)."""
    if not df > 0:
        return math.nan
    if math.isinf(df):
        return normal_quantile(level)
    return float(special.stdtrit(df, 0.5 + level / 2.0))  # what scipy.stats.t.ppf evaluates


def kish(weight_sum: float, weight_sq_sum: float) -> float:
    """Kish's effective sample size ``(sum w)**2 / sum w**2`` (``n`` for unit weights).

    Divided before it is multiplied: ``(sum w)**2`` overflows for weights of 1e154 and more,
    and underflows below 1e-154 (0.8.11 gave no interval there). Below about 1e-154 the
    squared weights themselves fall among float64's subnormals in the state, where they keep
    few digits (weights of 2e-162 gave intervals 1.11x too wide in 0.8.16), then to 0: a
    ``sum w**2`` below the smallest normal float is read as unknown, 0, no interval."""
    if not weight_sq_sum >= sys.float_info.min:
        return 0.0
    return weight_sum / weight_sq_sum * weight_sum


def _clip(low: float, high: float, bounds: tuple[float, float]) -> tuple[float, float]:
    lo, hi = bounds
    return float(min(max(low, lo), hi)), float(min(max(high, lo), hi))


def normal_interval(
    value: float,
    se: float,
    level: float,
    bounds: tuple[float, float] = (-math.inf, math.inf),
    widen: float = 0.0,
) -> tuple[float, float]:
    """``value -/+ z se``, widened by ``widen`` on each side and clipped to ``bounds``."""
    if not (math.isfinite(value) and math.isfinite(se)):
        return NAN_INTERVAL
    half = normal_quantile(level) * se + widen
    return _clip(value - half, value + half, bounds)


def check_weight_sq(weight_sq: float, total: float, count: int) -> None:
    """``ValueError`` unless ``weight_sq`` (the sum of squared weights of ``count`` rows of
    total weight ``total``) is one a stream can give: nan (unknown, older states) or within
    ``[total**2 / count, total**2]`` (Cauchy-Schwarz, weights non-negative), to 1e-6."""
    if math.isnan(weight_sq):
        return
    if not (math.isfinite(weight_sq) and weight_sq >= 0):
        raise ValueError(f"weight_sq must be finite and non-negative, got {weight_sq!r}")
    square = total * total
    if count and math.isfinite(square):
        # Generous: float sums of many weights round. Linear in the sums and the count, so a
        # merge of states that pass passes too (0.8.11's absolute 1e-300 did not: a forged
        # weight_sq of 1e-300 beside zero weights loaded, then failed once merged with itself).
        slack = 1e-6 * square + count * 1e-300
        if not square / count - slack <= weight_sq <= square + slack:
            raise ValueError(
                f"weight_sq {weight_sq!r} is not a sum of squared weights of {count} rows "
                f"totalling {total!r}"
            )


def wilson(successes: float, n: float, level: float) -> tuple[float, float]:
    """Wilson's score interval for a proportion ``successes / n`` (``n`` may be Kish's).

    Wilson, E. B. (1927). Probable inference, the law of succession, and statistical inference.
    JASA 22(158), 209-212. ``nan, nan`` when ``n == 0``.
    """
    if not (n > 0 and n * n > 0 and math.isfinite(n)):  # (n * n: a forged tiny n underflows)
        return NAN_INTERVAL
    p = min(max(successes / n, 0.0), 1.0)
    z = normal_quantile(level)
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    # At p = 0 or 1 one end is exactly 0 or 1; rounding gave 0.9999999999999999, short of p.
    low = 0.0 if p == 0.0 else centre - half
    high = 1.0 if p == 1.0 else centre + half
    return _clip(low, high, (0.0, 1.0))


def mean_interval(
    weight_sum: float,
    value_sum: float,
    square_sum: float,
    weight_sq_sum: float,
    level: float,
    bounds: tuple[float, float] = (-math.inf, math.inf),
    wsq: tuple[float, float] | None = None,
) -> tuple[float, float]:
    """Student-t interval of the weighted mean ``m = value_sum / weight_sum``.

    ``square_sum`` is ``sum w x**2`` and ``weight_sq_sum`` is ``sum w**2``; the sample size is
    Kish's effective size ``n_eff`` and the standard error ``s / sqrt(n_eff)`` with
    ``s**2 = n_eff / (n_eff - 1) * (sum w x**2 / sum w - m**2)`` and ``n_eff - 1`` degrees of
    freedom (the central limit theorem, with the small-sample t correction). ``nan, nan`` below
    an effective size of 2 (no variance to estimate) or when a sum is not finite.

    ``wsq``: ``(sum w**2 x, sum w**2 x**2)``, for the linearised (ratio-estimator) variance
    ``n_eff / (n_eff - 1) * sum w**2 (x - m)**2 / (sum w)**2`` (Cochran 1977, sec. 6.4), the
    squared deviations expanded as ``sum w**2 x**2 - 2 m sum w**2 x + m**2 sum w**2``. Unlike
    Kish's rule it stays right when the weights go with the values (heavy rows with larger
    losses); for unit weights the two are the same. Where the weights are unrelated to the
    values Kish's is the steadier estimate (the linearised one rests on the few heaviest rows:
    lognormal(0, 1) weights over 200 rows covered 90.6% against Kish's 94.6%), so with
    ``wsq`` the interval takes the larger of the two.
    """
    if not weight_sum > 0:
        return NAN_INTERVAL
    mean = value_sum / weight_sum
    n_eff = kish(weight_sum, weight_sq_sum)
    spread = max(square_sum / weight_sum - mean * mean, 0.0)  # Kish's
    if wsq is not None:
        dev = wsq[1] - 2.0 * mean * wsq[0] + mean * mean * weight_sq_sum
        # (divided twice: the square of a total below 1e-154 is 0, a ZeroDivisionError in
        # 0.8.11)
        spread = max(spread, n_eff * dev / weight_sum / weight_sum)  # what t_interval reads
    return t_interval(mean, spread, n_eff, level, bounds)


def check_linearised_sums(
    plain: tuple[float, float, float], squared: tuple[float, float, float], count: int, top: float
) -> None:
    """``ValueError`` unless the sums under the weights squared, ``squared = (sum w**2,
    sum w**2 x, sum w**2 x**2)``, agree with the plain ones, ``plain = (sum w, sum w x,
    sum w x**2)``, as every stream of ``count`` values within ``[0, top]`` gives them:
    ``sum w**2 (x - m)**2 <= max(w) sum w (x - m)**2``, ``max(w)`` at most ``sqrt(sum w**2)``
    and 1 when every weight is 1; the raw sums' rounding as slack (relative, and absolute
    where squared weights are subnormal)."""
    w, total, squares = plain
    sq, wsq_total, wsq_squares = squared
    m = total / w
    dev = wsq_squares - 2.0 * m * wsq_total + m * m * sq
    spread = squares - m * total
    top_w = 1.0 if count == w == sq else math.sqrt(sq)
    slack = 1e-9 * (wsq_squares + m * m * sq + top_w * squares)
    # Squared weights below 2**-1022 are subnormal: each rounds by up to 2**-1074 absolute,
    # times a value up to ``top`` (squared).
    slack += 4.0 * count * 2.0**-1074 * (top * top + m * m + 1.0)
    if not dev <= top_w * max(spread, 0.0) * (1 + 1e-6) + slack:
        raise ValueError("the sums under the weights squared exceed what the plain sums allow")
    if not (dev >= -slack and spread >= -1e-9 * squares - slack):
        # (Sums of squared deviations are never negative: 0.8.11 clamped them to 0, a forged
        # state then gave an interval of width 0, and its next valid update unloadable bytes.)
        raise ValueError("the sums give a negative spread, which no stream gives")


#: Two effective rows, less rounding (Kish's size of two equal float weights may come out a
#: few ulps short of 2): below it a mean or R2 has no interval. 0.8.9 asked only for more than
#: one, and one weight of 1e6 among 199 of 1 (1.0004 effective rows) gave MSE (0, 5e151).
TWO_ROWS = 2.0 - 1e-9


def t_interval(
    mean: float,
    spread: float,
    n_eff: float,
    level: float,
    bounds: tuple[float, float] = (-math.inf, math.inf),
) -> tuple[float, float]:
    """Student-t interval of a mean from its weighted spread ``sum w (x - mean)**2 / sum w``.

    The sample variance is ``spread * n_eff / (n_eff - 1)``, the standard error its square root
    over ``sqrt(n_eff)``, with ``n_eff - 1`` degrees of freedom. ``nan, nan`` below 2 rows.
    """
    if not (n_eff >= TWO_ROWS and math.isfinite(mean) and math.isfinite(spread)):
        return NAN_INTERVAL
    var = max(spread, 0.0) * n_eff / (n_eff - 1.0)
    half = t_quantile(level, n_eff - 1.0) * math.sqrt(var / n_eff)
    return _clip(mean - half, mean + half, bounds)


def delong(pos: np.ndarray, neg: np.ndarray) -> tuple[float, float]:
    """AUC and its DeLong variance from a score table sorted by ascending score.

    ``pos[k]``/``neg[k]`` are the positive and negative weights at the k-th distinct score (or
    bucket). The structural components (placements) are ``V10 = (negatives below + neg[k]/2)
    / N`` for a positive at k and ``V01 = (positives above + pos[k]/2) / P`` for a negative;
    ``Var = S10 / P + S01 / N`` with ``S10``, ``S01`` their sample variances.

    DeLong, E. R., DeLong, D. M. and Clarke-Pearson, D. L. (1988). Comparing the areas under two
    or more correlated receiver operating characteristic curves: a nonparametric approach.
    Biometrics 44(3), 837-845. O(len(pos)). ``(nan, nan)`` without two of each class.

    One pass per term: the prefix sums run on the table's own dtype (integer counts sum
    exactly, several times faster than floats), and each variance is taken as ``sum w v**2 -
    W mean**2`` from the placements before scaling (``V01 = 1 - A / P`` with ``A`` the
    positives below plus half the tied ones, so ``S01`` is the spread of ``A / P``), which the
    tests hold to 1e-12 of the two-pass formulas of the paper. The floats of
    ``states._delong_rows.delong_rows`` on one row (``Sliced`` reads many tables at once), by
    ``delong_row``.
    """
    pos, neg = np.asarray(pos), np.asarray(neg)
    found = delong_row(pos, neg) if pos.ndim == 1 and neg.ndim == 1 else None
    if found is not None:
        return found
    auc, var = delong_rows(pos[None, :], neg[None, :])
    return float(auc[0]), float(var[0])


Confusion = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


#: Central differences are evaluated this many summary values at a time (memory O(chunk * L)).
_GRAD_BUDGET = 1 << 22


def summary_gradient(
    f: Confusion,
    diag: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    n: float,
    unit: float = 1.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
    """``df`` with respect to the diagonal, the row sums, the column sums and the total of a
    confusion matrix, by central differences on those 3L + 1 summaries (``f`` vectorised over a
    leading axis, evaluated a bounded number of rows at a time); ``None`` if not finite.

    Each step is ``1e-6`` of its summary, and at least ``1e-6 * unit``: ``unit`` is one row's
    mean weight (1 for counts), so that scaling every weight scales the steps alike and leaves
    the gradient's relative accuracy unchanged (a fixed floor of 1e-6 dwarfed counts whose total
    weight is below one)."""
    size = len(diag)
    base = np.concatenate([diag, rows, cols, [n]])
    m = len(base)
    step = 1e-6 * np.maximum(np.abs(base), unit)
    grad = np.empty(m)
    chunk = max(1, _GRAD_BUDGET // (2 * m))
    for lo in range(0, m, chunk):
        idx = np.arange(lo, min(lo + chunk, m))
        k = len(idx)
        points = np.repeat(base[None, :], 2 * k, axis=0)
        points[np.arange(k), idx] += step[idx]
        points[k + np.arange(k), idx] -= step[idx]
        values = f(
            points[:, :size],
            points[:, size : 2 * size],
            points[:, 2 * size : 3 * size],
            points[:, -1],
        )
        with np.errstate(invalid="ignore", over="ignore"):  # (subnormal weights: inf - inf)
            grad[idx] = (values[:k] - values[k:]) / (2 * step[idx])
    if not np.all(np.isfinite(grad)):
        return None
    return grad[:size], grad[size : 2 * size], grad[2 * size : 3 * size], float(grad[-1])


def confusion_delta_se(
    table: np.ndarray, f: Confusion, n_eff: float | None = None, samples: int = 0
) -> float:
    """Delta-method standard error of ``f`` at a confusion matrix ``table`` (true x predicted).

    ``f(diag, rows, cols, total)`` is vectorised over a leading axis and depends on the counts
    only through the diagonal, the row sums, the column sums and the total (accuracy, F-beta
    averages, MCC, Cohen's kappa do). With the gradient ``h_ij = df/dC_ij`` the multinomial
    delta method (e.g. Agresti, *Categorical Data Analysis*, 3rd ed., sec. 16.1) gives
    ``Var = sum_ij C_ij h_ij**2 - (sum_ij C_ij h_ij)**2 / n``. The partial derivatives come from
    :func:`summary_gradient`. With weighted counts the variance is rescaled to Kish's effective
    size ``n_eff``. ``samples``: the rows counted (their mean weight sets the differences'
    smallest step; 0: one per unit of count).
    """
    c = np.asarray(table, dtype=np.float64)
    n = float(c.sum())
    if not n > 0:
        return math.nan
    unit = n / samples if samples else 1.0
    parts = summary_gradient(f, np.diagonal(c), c.sum(axis=1), c.sum(axis=0), n, unit)
    if parts is None:
        return math.nan
    e, a, b, z = parts
    size = c.shape[0]
    h = a[:, None] + b[None, :] + z
    h[np.arange(size), np.arange(size)] += e
    return counts_delta_se(c, h, n_eff)


def cells_delta_se(
    cells: tuple[np.ndarray, np.ndarray, np.ndarray],
    margins: tuple[np.ndarray, np.ndarray, np.ndarray],
    f: Confusion,
    n_eff: float | None = None,
    samples: int = 0,
) -> float:
    """:func:`confusion_delta_se` from the filled cells ``(row, column, count)`` of a square
    table and its ``(diagonal, row sums, column sums)``: empty cells add nothing to either sum,
    so ``h`` is taken at the filled cells only (O(L + cells) memory, no L x L array)."""
    r, c, v = cells
    v = v.astype(np.float64)
    n = float(v.sum())
    if not n > 0:
        return math.nan
    parts = summary_gradient(f, *margins, n, n / samples if samples else 1.0)
    if parts is None:
        return math.nan
    e, a, b, z = parts
    h = a[r] + b[c] + z
    on = r == c
    h[on] += e[r[on]]
    return counts_delta_se(v, h, n_eff)


def counts_delta_se(table: np.ndarray, grad: np.ndarray, n_eff: float | None = None) -> float:
    """Multinomial delta-method standard error from the gradient ``grad`` of a value with
    respect to the counts ``table``: ``sqrt(sum C h**2 - (sum C h)**2 / n)``, rescaled from the
    total weight ``n`` to Kish's effective size ``n_eff`` when given."""
    c = np.asarray(table, dtype=np.float64)
    n = float(c.sum())
    if not n > 0 or not np.all(np.isfinite(grad)):
        return math.nan
    mean = float((c * grad).sum())
    var = float((c * grad * grad).sum()) - mean * mean / n
    if n_eff is not None:
        if not n_eff > 0:
            return math.nan
        var *= n / n_eff
    return math.sqrt(max(var, 0.0))


def fisher_z(r: float, n_eff: float, level: float) -> tuple[float, float]:
    """Fisher's z interval of a correlation: ``tanh(atanh(r) -/+ z / sqrt(n_eff - 3))``.

    Fisher, R. A. (1921). On the "probable error" of a coefficient of correlation deduced from a
    small sample. Metron 1, 3-32. ``nan, nan`` below an effective size of 4.
    """
    if not (math.isfinite(r) and n_eff > 3):
        return NAN_INTERVAL
    r = min(max(r, -1.0), 1.0)
    if abs(r) == 1.0:
        return r, r
    centre = math.atanh(r)
    half = normal_quantile(level) / math.sqrt(n_eff - 3.0)
    return math.tanh(centre - half), math.tanh(centre + half)


#: The smallest positive normal float64: below it a float keeps fewer than 53 bits.
_SMALLEST_NORMAL = 2.0**-1022


def explained_delta_se(block: Any, kind: str, n_eff: float) -> float:
    """Delta-method standard error of R2 (``kind="r2"``) or explained variance (``"ev"``).

    Both are ``1 - a / b`` with ``b = Var(t)`` the variance of ``y_true`` and ``a`` the mean
    squared error ``E[e**2]`` (R2) or the error's variance ``Var(e)`` (explained variance),
    ``e = y_true - y_pred``. Each of ``a`` and ``b`` is a smooth function of sample moments, so
    the delta method on sample moments (Cramer, *Mathematical Methods of Statistics*, 1946,
    sec. 27.7 and 28.4; van der Vaart, *Asymptotic Statistics*, 1998, ch. 3) gives the
    influence function ``-(1 / b) (s - a - k (u - b))`` with ``k = a / b``, ``u = (t - mean
    t)**2`` and ``s = e**2`` (R2) or ``(e - mean e)**2`` (explained variance); the estimating
    of the means adds no first-order term. Hence

        Var = (Var(s) + k**2 Var(u) - 2 k Cov(s, u)) / (b**2 n_eff)

    with, in central moments ``m_ij = E[(e - mean e)**i (t - mean t)**j]`` and ``d = mean e``,
    ``Var(u) = m04 - m02**2`` and, for R2, ``Var(s) = m40 - m20**2 + 4 d m30 + 4 d**2 m20``,
    ``Cov(s, u) = m22 - m20 m02 + 2 d m12``; for explained variance ``Var(s) = m40 - m20**2``,
    ``Cov(s, u) = m22 - m20 m02``. No normality is assumed (the normal-theory variance of the
    fitted R2 of Olkin and Finn does not apply: the predictions here are not fitted to these
    rows). ``block`` is a :class:`~streammetrics.states.central.CentralMoments` of
    (error, ``y_true``), one column. ``nan`` below 2 effective rows or when ``Var(t) = 0``.
    """
    if not n_eff >= TWO_ROWS or not block.weight > 0:
        return math.nan
    m = {k: float(block.central(k)[0]) for k in block.indices}
    d = float(block.mean[0, 0])
    b = m[(0, 2)]
    if not b * b >= _SMALLEST_NORMAL:
        # (Var(t) = 0; or so small that the fourth moments, of the order of b**2, lost their
        # digits below float64's normal range: the state cannot give the variance.)
        return math.nan
    var_u = m[(0, 4)] - b * b
    if kind == "r2":
        a = m[(2, 0)] + d * d
        # (m20 * m20, not m20 ** 2: Python's power raises OverflowError past float64, where
        # the product gives inf and the variance nan; a forged state reached it, 0.8.12.)
        var_s = m[(4, 0)] - m[(2, 0)] * m[(2, 0)] + 4 * d * m[(3, 0)] + 4 * d * d * m[(2, 0)]
        cov = m[(2, 2)] - m[(2, 0)] * b + 2 * d * m[(1, 2)]
    else:
        a = m[(2, 0)]
        var_s = m[(4, 0)] - a * a
        cov = m[(2, 2)] - a * b
    k = a / b
    var = (var_s + k * k * var_u - 2 * k * cov) / (b * b * n_eff)
    return math.sqrt(max(var, 0.0)) if math.isfinite(var) else math.nan


# (at the end: ``states`` import this module)
from .states._delong_rows import delong_row, delong_rows  # noqa: E402
