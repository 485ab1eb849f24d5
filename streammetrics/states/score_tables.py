"""Values from a table of score entries ascending by score: AUC and average precision with a
certified error bound, and the cumulative counts behind the ROC and precision-recall curves.

The entries are a :class:`~streammetrics.states.buckets.ScoreBuckets` store's (one per bucket,
or one per distinct score in exact mode), but the functions take plain arrays.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import digamma

from ._row_sums import row_dots

__all__ = ["ap_from_table", "ap_of_rows", "auc_from_table", "auc_of_rows", "curve_counts"]


def auc_from_table(
    lo: np.ndarray, hi: np.ndarray, pos: np.ndarray, neg: np.ndarray
) -> tuple[float, float]:
    """``(AUC, bound)`` from entries ascending by score.

    Pairs in different entries are ordered exactly; a (positive, negative) pair inside one entry
    counts 1/2. That is exact for an entry holding one distinct value (a true tie, as
    scikit-learn scores it) and off by at most 1/2 per pair otherwise, so
    ``|AUC - exact| <= 0.5 * sum_b pos_b * neg_b / (P * N)`` over entries with ``lo < hi``.
    ``(nan, nan)`` when either class is absent.
    """
    with np.errstate(all="ignore"):  # a forged state may hold huge weights
        return _auc_from_table(lo, hi, pos, neg)


#: Weights whose largest is below this are scaled up by a power of two before the products of
#: two weights are taken (they would underflow: 2**-540 squared is 0); the scaling is exact, so
#: the ratios are those of the unscaled weights.
TINY_WEIGHT = 2.0**-200


def _auc_from_table(
    lo: np.ndarray, hi: np.ndarray, pos: np.ndarray, neg: np.ndarray
) -> tuple[float, float]:
    values, bounds = auc_of_rows(lo[None, :], hi[None, :], pos[None, :], neg[None, :])
    return float(values[0]), float(bounds[0])


def auc_of_rows(
    lo: np.ndarray, hi: np.ndarray, pos: np.ndarray, neg: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`auc_from_table` of every row of ``(tables, entries)`` arrays (each row a table
    ascending by score), as ``(values, bounds)``, each row's floats its own table's (see
    :func:`ap_of_rows`)."""
    many = pos.shape[0]
    if pos.shape[1] == 0:
        return np.full(many, math.nan), np.full(many, math.nan)
    # Each class by its own power of two: the value and bound are bilinear in the two classes'
    # weights, so the scalings cancel exactly, and neither P * N nor a product of a positive's
    # and a negative's weight underflows however far apart the classes weigh (0.8.12 scaled
    # both by one power, set by the heavier class: weights 1e-300 beside 1e-60 gave P * N = 0
    # and ZeroDivisionError).
    (p,), (n,) = _unscaled_rows(pos), _unscaled_rows(neg)
    total_p, total_n = p.sum(axis=1), n.sum(axis=1)
    with np.errstate(all="ignore"):  # a forged state may hold huge weights
        below = np.cumsum(n, axis=1) - n
        ranked = row_dots(p, below + 0.5 * n)
        # (the pairs inside entries of more than one distinct score: a row's sum, not a mask's)
        pairs = row_dots(p, np.where(lo < hi, n, 0.0))
        if many == 1:  # one table (a state): the steps below on numpy scalars, the same
            # operations at a tenth of the cost of one-element arrays
            total_p, total_n, ranked, pairs = total_p[0], total_n[0], ranked[0], pairs[0]
        scale = total_p * total_n
        value = ranked / scale
        bound = 0.5 * pairs / scale
    if many == 1:
        if not (total_p > 0 and total_n > 0):
            return np.full(1, math.nan), np.full(1, math.nan)
        return np.array([min(max(value, 0.0), 1.0)]), np.array([bound], dtype=np.float64)
    value = np.where(0.0 > value, 0.0, value)  # min(max(value, 0.0), 1.0)
    value = np.where(1.0 < value, 1.0, value)
    known = (total_p > 0) & (total_n > 0)
    return np.where(known, value, math.nan), np.where(known, bound, math.nan)


#: Past this many counts ranked above, ``H(b + d) - H(b)`` is taken as ``ln((b + d) / b)``: the
#: difference of two digammas near ``ln(b)`` cancels (at 2e12 counts above a bucket of 4
#: positives it came out negative), and the log, never smaller, keeps the lower end certified.
_HARMONIC_LIMIT = 2.0**20


def _harmonic_step(d: np.ndarray, b: np.ndarray) -> np.ndarray:
    """H(b + d) - H(b) for non-negative reals, H(x) = digamma(x + 1) + Euler's gamma; past
    :data:`_HARMONIC_LIMIT` its upper bound ``ln(1 + d / b)`` (for whole ``b`` and ``d``,
    ``sum_{k=b+1}^{b+d} 1/k`` is at most the integral of ``1/x`` from ``b`` to ``b + d``)."""
    small = b < _HARMONIC_LIMIT
    out: np.ndarray = _log_step(d, b)
    if small.any():
        out[small] = digamma(b[small] + d[small] + 1.0) - digamma(b[small] + 1.0)
    return out


def _log_step(d: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ln((b + d) / b) for d, b >= 0, as ``log1p(d / b)`` (not of ``(b + d) - b``, which rounds
    to 0 when ``d`` is below ``b``'s last bit); 0 where b is 0 (its factor is 0 there)."""
    out: np.ndarray = np.log1p(np.divide(d, b, out=np.zeros_like(d), where=b > 0))
    return out


def ap_from_table(
    lo: np.ndarray, hi: np.ndarray, pos: np.ndarray, neg: np.ndarray
) -> tuple[float, float]:
    """``(average precision, bound)`` from entries ascending by score (scikit-learn's
    ``average_precision_score``: sum over thresholds of recall step times precision).

    An entry with ``lo == hi`` is a true tie: it adds ``p (T + p) / (T + F + p + n)``, with
    ``T``, ``F`` the positive and negative weight ranked above it and ``p``, ``n`` its own.
    Otherwise its order is unknown: it adds the Davis & Goadrich interpolation (positives and
    negatives interleaved evenly), which lies in ``[p - (F + n)(H(T+F+n+p) - H(T+F+n)),
    p (T + p) / (T + F + p)]`` (all negatives first, all positives first); the bound is the sum of
    those widths, over ``P``.

    The harmonic numbers ``H`` count one step per unit of weight, so they hold for counts.
    With sample weights (float tables) a row may weigh less than 1, and a positive's precision
    rises continuously with the weight ranked before it: the sums become integrals, the
    differences ``H(a) - H(b)`` become ``ln(a / b)`` (a lower bound for rows of any weight, as
    the precision only rises along the bucket), and the value and bound do not change when
    every weight is scaled. (0.8.4 used the counts' form for weights too: below weight 1 its
    "lower" end could pass the value, and the bound was not certified.)

    Computed by :func:`ap_of_rows` on one row, so that ``Sliced`` scores many tables of one
    length at once to the same bits.
    """
    values, bounds = ap_of_rows(lo[None, :], hi[None, :], pos[None, :], neg[None, :])
    return float(values[0]), float(bounds[0])


def ap_of_rows(
    lo: np.ndarray, hi: np.ndarray, pos: np.ndarray, neg: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`ap_from_table` of every row of ``(tables, entries)`` arrays (each row a table
    ascending by score), as ``(values, bounds)``. Every step is elementwise or runs along a
    row (numpy sums and accumulates a row of a contiguous array as it does the row alone), so
    a row's floats do not depend on the rows beside it."""
    many = pos.shape[0]
    if pos.shape[1] == 0:
        return np.full(many, math.nan), np.full(many, math.nan)
    weighted = pos.dtype.kind == "f" or neg.dtype.kind == "f"
    with np.errstate(all="ignore"):  # a forged state may hold huge weights
        p, n = _unscaled_rows(pos[:, ::-1], neg[:, ::-1])
        total_p = p.sum(axis=1)
        t = np.cumsum(p, axis=1) - p  # positives ranked above
        f = np.cumsum(n, axis=1) - n  # negatives ranked above
        spread = (lo < hi)[:, ::-1] & (p > 0)
        tie_den = t + f + p + n
        # The precision first, then times the weight: p * (t + p) underflowed for positives
        # weighing 1e-160 of the negatives (0.8.12: AP 0 with a bound of 0 where it is 1).
        contrib = p * np.divide(t + p, tie_den, out=np.zeros_like(p), where=tie_den > 0)
        bound = np.zeros(many)
        if spread.any():
            ps, ns, ts, fs = p[spread], n[spread], t[spread], f[spread]
            upper = ps * ((ts + ps) / (ts + fs + ps))
            step = _log_step if weighted else _harmonic_step
            # (Rounding may leave the lower end a hair above the upper one: never below zero
            # width.)
            lower = np.minimum(ps - (fs + ns) * step(ps, ts + fs + ns), upper)
            # Davis & Goadrich: the j-th positive comes with j * n / p negatives:
            # sum_j (T + j) / (T + F + j r), r = 1 + n / p, summed in closed form with digamma
            # (with weights, the integral over the positive weight, in closed form with a log).
            r = 1.0 + ns / ps
            c = (ts + fs) / r
            interp = (ps + (ts - c) * step(ps, c)) / r
            contrib[spread] = np.clip(interp, lower, upper)
            # Each row's widths summed along the row, zeros where no bucket spreads (a row's
            # sum, as one table's: not a sum over the mask).
            width = np.zeros_like(p)
            width[spread] = upper - lower
            bound = width.sum(axis=1) / total_p
        value = contrib.sum(axis=1) / total_p
    known = total_p > 0
    value = np.where(0.0 > value, 0.0, value)  # min(max(value, 0.0), 1.0)
    value = np.where(1.0 < value, 1.0, value)
    bound = np.where(1.0 < bound, 1.0, bound)  # min(bound, 1.0)
    return np.where(known, value, math.nan), np.where(known, bound, math.nan)


def _unscaled_rows(*weights: np.ndarray) -> list[np.ndarray]:
    """Each row of ``(tables, entries)`` arrays of weights as float64, times the power of two
    that brings the row's largest weight (in any of them) to [0.5, 1) when it is below
    :data:`TINY_WEIGHT` (decayed or tiny sample weights), else unchanged: the scaling is exact,
    and products of two weights no longer underflow."""
    out = [np.ascontiguousarray(w, dtype=np.float64) for w in weights]
    top = out[0].max(axis=1)
    for w in out[1:]:
        top = np.maximum(top, w.max(axis=1))
    tiny = (0.0 < top) & (top < TINY_WEIGHT)
    if not tiny.any():
        return out
    shift = np.where(tiny, -np.frexp(np.where(tiny, top, 1.0))[1], 0)
    return [np.ldexp(w, shift[:, None]) for w in out]


def curve_counts(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative (tps, fps) at each entry's threshold, descending by score, in float64."""
    tps = np.cumsum(pos[::-1].astype(np.float64))
    fps = np.cumsum(neg[::-1].astype(np.float64))
    return tps, fps
