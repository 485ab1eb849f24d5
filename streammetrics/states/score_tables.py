"""Values from a table of score entries ascending by score: AUC and average precision with a
certified error bound, and the cumulative counts behind the ROC and precision-recall curves.

The entries are a :class:`~streammetrics.states.buckets.ScoreBuckets` store's (one per bucket,
or one per distinct score in exact mode), but the functions take plain arrays.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import digamma

from ._exact_sums import ranked_sum
from ._row_sums import row_dots

__all__ = [
    "ap_from_table",
    "ap_of_rows",
    "auc_from_table",
    "auc_of_rows",
    "auc_of_sums",
    "curve_counts",
]


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
    found = _auc_row(lo, hi, pos, neg)
    if found is None:
        values, bounds = _auc_rows(lo[None, :], hi[None, :], pos[None, :], neg[None, :])
        return float(values[0]), float(bounds[0])
    return found


def auc_of_sums(sums: tuple[int, int, int, int, int]) -> float:
    """:func:`auc_from_table`'s value of a table of integer counts from its exact sums
    ``(P, N, S1, ...)`` (:mod:`~streammetrics.states._exact_sums`): ``S1 / 2`` is the numerator
    :func:`_auc_row` sums, exactly below 2**53 and as ``_exact_ranked`` past it."""
    p_total, n_total, s1_x2 = sums[:3]
    if p_total <= 0 or n_total <= 0:
        return math.nan
    value = float(s1_x2) / 2.0 / (float(p_total) * float(n_total))
    return min(max(value, 0.0), 1.0)


#: Weights whose largest is below this are scaled up by a power of two before the products of
#: two weights are taken (they would underflow: 2**-540 squared is 0); the scaling is exact, so
#: the ratios are those of the unscaled weights.
TINY_WEIGHT = 2.0**-200


def auc_of_rows(
    lo: np.ndarray, hi: np.ndarray, pos: np.ndarray, neg: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`auc_from_table` of every row of ``(tables, entries)`` arrays (each row a table
    ascending by score), as ``(values, bounds)``, each row's floats its own table's (see
    :func:`ap_of_rows`)."""
    if pos.shape[0] == 1:
        found = _auc_row(lo[0], hi[0], pos[0], neg[0])
        if found is not None:
            return np.array([found[0]]), np.array([found[1]])
    return _auc_rows(lo, hi, pos, neg)


def _auc_rows(
    lo: np.ndarray, hi: np.ndarray, pos: np.ndarray, neg: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    many = pos.shape[0]
    if pos.shape[1] == 0:
        return np.full(many, math.nan), np.full(many, math.nan)
    # Each class by its own power of two: the value and bound are bilinear in the two classes'
    # weights, so the scalings cancel exactly, and neither P * N nor a product of a positive's
    # and a negative's weight underflows however far apart the classes weigh (0.8.12 scaled
    # both by one power, set by the heavier class: weights 1e-300 beside 1e-60 gave P * N = 0
    # and ZeroDivisionError).
    if pos.dtype.kind == "i" and neg.dtype.kind == "i":
        exact = _exact_rows(lo, hi, pos, neg)
        if exact is not None:
            return exact
    (p,), (n,) = _unscaled_rows(pos), _unscaled_rows(neg)
    with np.errstate(all="ignore"):  # a forged state may hold huge weights
        total_p, total_n = p.sum(axis=1), n.sum(axis=1)
        below = np.cumsum(n, axis=1) - n
        ranked = row_dots(p, below + 0.5 * n)
        # (the pairs inside entries of more than one distinct score: a row's sum, not a mask's)
        pairs = row_dots(p, np.where(lo < hi, n, 0.0))
        scale = total_p * total_n
        value = ranked / scale
        bound = 0.5 * pairs / scale
    value = np.where(0.0 > value, 0.0, value)  # min(max(value, 0.0), 1.0)
    value = np.where(1.0 < value, 1.0, value)
    known = (total_p > 0) & (total_n > 0)
    return np.where(known, value, math.nan), np.where(known, bound, math.nan)


def _exact_rows(
    lo: np.ndarray, hi: np.ndarray, pos: np.ndarray, neg: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`_auc_rows` of integer tables some of whose sums reach 2**53, each row as
    :func:`_auc_row` reads it (exact integer sums there); None when no row does."""
    p_tot = pos.sum(axis=1, dtype=np.float64)
    n_tot = neg.sum(axis=1, dtype=np.float64)
    big = 2.0 * p_tot * n_tot >= _EXACT_TOTAL
    if not big.any():
        return None
    small = ~big
    values, bounds = np.empty(len(pos)), np.empty(len(pos))
    if small.any():
        values[small], bounds[small] = _auc_rows(lo[small], hi[small], pos[small], neg[small])
    for i in np.flatnonzero(big):
        row = pos[i].astype(np.int64), neg[i].astype(np.int64)
        found = _auc_row(lo[i], hi[i], *row)
        assert found is not None  # (integer counts: no weight below TINY_WEIGHT)
        values[i], bounds[i] = found
    return values, bounds


def _auc_row(
    lo: np.ndarray, hi: np.ndarray, pos: np.ndarray, neg: np.ndarray
) -> tuple[float, float] | None:
    """:func:`_auc_rows` of one table given as 1-D arrays, by the same operations on 1-D arrays
    and numpy scalars (a row's sums and prefix sums are the 1-D array's; ``tests/
    test_score_rows.py`` holds every float to a two-row array's), at a third of the cost; None
    where a weight may be below :data:`TINY_WEIGHT` (the rows' path scales them).

    A class's total of at least ``2 * entries * TINY_WEIGHT`` has an entry of at least
    ``TINY_WEIGHT`` (pairwise sums of smaller entries stay below), so no scaling; a total that
    is not positive reads nan whatever the scaling (a power of two). Without spread entries
    (``lo`` is ``hi`` in exact stores) the pairs' sum is 0.0 when the positives' total is
    finite: every product is a zero."""
    size = pos.shape[0]
    if size == 0:
        return math.nan, math.nan
    with np.errstate(all="ignore"):  # a forged state may hold huge weights
        p = np.ascontiguousarray(pos, dtype=np.float64)
        n = np.ascontiguousarray(neg, dtype=np.float64)
        total_p, total_n = _sum(p), _sum(n)
        least = 2.0 * size * TINY_WEIGHT
        if not (total_p >= least and total_n >= least):
            return None if total_p > 0 and total_n > 0 else (math.nan, math.nan)
        exact = _exact_ranked(pos, neg) if 2.0 * total_p * total_n >= _EXACT_TOTAL else None
        if exact is None:
            below = _running(neg, n, total_n)
            below -= n
            ranked = np.einsum("i,i->", p, below + 0.5 * n)
            scale = total_p * total_n
        else:
            ranked, scale = exact
        value = ranked / scale
        spread = None if lo is hi else lo < hi
        if (spread is not None and np.count_nonzero(spread)) or not math.isfinite(total_p):
            bound = 0.5 * np.einsum("i,i->", p, np.where(lo < hi, n, 0.0)) / scale
        else:
            bound = 0.0
    return float(min(max(value, 0.0), 1.0)), float(bound)


_sum, _accumulate = np.add.reduce, np.add.accumulate  # (ndarray.sum and np.cumsum, 1 µs less)


def _exact_ranked(pos: np.ndarray, neg: np.ndarray) -> tuple[float, float] | None:
    """``(sum_i p_i (below_i + n_i / 2), P N)`` of int64 counts from exact integer sums:
    ``S1 / 2`` (``S1`` the sum of ``p (2 below + n)``, ``states._exact_sums.ranked_sum``) and
    ``float(P) * float(N)``, each total rounded once; None for other dtypes or where those
    sums are not taken. Float sums round past 2**53, in a way that depends on their order;
    these are the values a served store reads from its kept sums (``auc_of_sums``)."""
    s1 = ranked_sum(pos, neg)
    if s1 is None:
        return None
    return float(s1) / 2.0, float(int(_sum(pos))) * float(int(_sum(neg)))


#: Integer running sums of a total below this are exact as float64 sums too.
_EXACT_TOTAL = 2.0**53


def _running(counts: np.ndarray, as_float: np.ndarray, total: float | None) -> np.ndarray:
    """The running sums of ``as_float`` (``counts`` as float64), in float64. Non-negative
    integer counts whose float total (``None``: not yet known) is below 2**53 are summed as
    integers: every partial sum is then an exact float either way, so the floats are the
    float sum's, and an integer running sum vectorises (a float one waits on each add: 3.3 ms
    at a million entries, against 0.4). (A true total past 2**53 never sums below it as
    floats; a store's counts are never negative, forged ones are refused.)"""
    if counts.dtype.kind == "i":
        if total is None:
            total = float(_sum(as_float))
        if total < _EXACT_TOTAL and (not len(counts) or counts.min() >= 0):
            out: np.ndarray = _accumulate(counts).astype(np.float64)
            return out
    found: np.ndarray = _accumulate(as_float)
    return found


#: Past this many counts ranked above, ``H(b + d) - H(b)`` is taken as ``ln((b + d) / b)``: the
#: difference of two digammas near ``ln(b)`` cancels (at 2e12 counts above a bucket of 4
#: positives it came out negative), and the log, never smaller, keeps the lower end certified.
_HARMONIC_LIMIT = 2.0**20


def _harmonic_step(d: np.ndarray, b: np.ndarray) -> np.ndarray:
    """H(b + d) - H(b) for non-negative reals, H(x) = digamma(x + 1) + Euler's gamma; past
    :data:`_HARMONIC_LIMIT` its upper bound ``ln(1 + d / b)`` (for whole ``b`` and ``d``,
    ``sum_{k=b+1}^{b+d} 1/k`` is at most the integral of ``1/x`` from ``b`` to ``b + d``)."""
    small = b < _HARMONIC_LIMIT
    if np.count_nonzero(small) == small.size:  # (the usual case: no log would be kept)
        every: np.ndarray = digamma(b + d + 1.0) - digamma(b + 1.0)
        return every
    out: np.ndarray = _log_step(d, b)
    if small.any():
        out[small] = digamma(b[small] + d[small] + 1.0) - digamma(b[small] + 1.0)
    return out


def _log_step(d: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ln((b + d) / b) for d, b >= 0, as ``log1p(d / b)`` (not of ``(b + d) - b``, which rounds
    to 0 when ``d`` is below ``b``'s last bit); 0 where b is 0 (its factor is 0 there)."""
    above = b > 0
    if np.count_nonzero(above) == above.size:  # (the usual case: every quotient taken)
        out: np.ndarray = np.log1p(d / b)
    else:
        out = np.log1p(np.divide(d, b, out=np.zeros_like(d), where=above))
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

    The floats of :func:`ap_of_rows` on one row, so that ``Sliced`` scores many tables of one
    length at once to the same bits.
    """
    found = _ap_row(lo, hi, pos, neg)
    if found is None:
        values, bounds = _ap_rows(lo[None, :], hi[None, :], pos[None, :], neg[None, :])
        return float(values[0]), float(bounds[0])
    return found


def ap_of_rows(
    lo: np.ndarray, hi: np.ndarray, pos: np.ndarray, neg: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`ap_from_table` of every row of ``(tables, entries)`` arrays (each row a table
    ascending by score), as ``(values, bounds)``. Every step is elementwise or runs along a
    row (numpy sums and accumulates a row of a contiguous array as it does the row alone), so
    a row's floats do not depend on the rows beside it."""
    if pos.shape[0] == 1:
        found = _ap_row(lo[0], hi[0], pos[0], neg[0])
        if found is not None:
            return np.array([found[0]]), np.array([found[1]])
    return _ap_rows(lo, hi, pos, neg)


def _ap_rows(
    lo: np.ndarray, hi: np.ndarray, pos: np.ndarray, neg: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
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


def _ap_row(
    lo: np.ndarray, hi: np.ndarray, pos: np.ndarray, neg: np.ndarray
) -> tuple[float, float] | None:
    """:func:`_ap_rows` of one table given as 1-D arrays (as :func:`_auc_row`), by the same
    operations on 1-D arrays and numpy scalars; None where a weight may be below
    :data:`TINY_WEIGHT`. Where every entry spreads, the ties' contributions, which the spread
    ones replace, are not computed, and no mask selects the entries."""
    size = pos.shape[0]
    if size == 0:
        return math.nan, math.nan
    weighted = pos.dtype.kind == "f" or neg.dtype.kind == "f"
    with np.errstate(all="ignore"):  # a forged state may hold huge weights
        p = np.ascontiguousarray(pos[::-1], dtype=np.float64)
        n = np.ascontiguousarray(neg[::-1], dtype=np.float64)
        total_p = _sum(p)
        if not total_p > 0:
            return math.nan, math.nan
        t, f = _running(pos[::-1], p, total_p), _running(neg[::-1], n, None)
        # (then the largest weight of either class is at least TINY_WEIGHT, as in _auc_row: a
        # running sum of smaller entries stays below the bound too)
        least = 2.0 * size * TINY_WEIGHT
        if not (total_p >= least or f[-1] >= least):
            return None
        t -= p  # positives ranked above
        f -= n  # negatives ranked above
        if lo is hi:  # (an exact store: no entry spreads)
            spread, spreading = None, 0
        else:
            spread = (lo < hi)[::-1] & (p > 0)
            spreading = int(np.count_nonzero(spread))
        every = spreading == size
        if not every:
            tie_den = t + f + p + n
            above = tie_den > 0
            if np.count_nonzero(above) == size:
                contrib = p * ((t + p) / tie_den)
            else:
                contrib = p * np.divide(t + p, tie_den, out=np.zeros(size), where=above)
        bound = 0.0
        if spreading:
            ps, ns, ts, fs = (p, n, t, f) if every else (p[spread], n[spread], t[spread], f[spread])
            upper = ps * ((ts + ps) / (ts + fs + ps))
            step = _log_step if weighted else _harmonic_step
            lower = np.minimum(ps - (fs + ns) * step(ps, ts + fs + ns), upper)
            r = 1.0 + ns / ps
            c = (ts + fs) / r
            interp = (ps + (ts - c) * step(ps, c)) / r
            if every:
                contrib = interp.clip(lower, upper)  # (np.clip calls it)
                width = upper - lower
            else:
                contrib[spread] = interp.clip(lower, upper)
                width = np.zeros(size)
                width[spread] = upper - lower
            bound = _sum(width) / total_p
        value = _sum(contrib) / total_p
    value = 0.0 if 0.0 > value else value
    return float(1.0 if 1.0 < value else value), float(1.0 if 1.0 < bound else bound)


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
