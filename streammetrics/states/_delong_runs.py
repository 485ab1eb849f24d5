"""DeLong's interval of the AUC of many integer score tables at once (``Sliced(ROCAUC())``).

``ROCAUC.interval`` of one sketch takes the DeLong variance from its buckets
(``uncertainty.delong``: prefix sums of the counts, the placements' sums and sums of squares)
and widens the interval by the certified bound of ``auc_from_table``. ``Sliced.intervals()``
asked each of 100,000 slices for it, one made state and a few numpy calls each: 5.3 s.

For integer counts every quantity those functions sum is a multiple of 1/4 (the placements
hold halves of ties; their squares quarters), so while each table's sums stay below 2**50 they
are exact in float64, whatever the order of the additions: the per-table sums of one
``np.bincount`` over all tables are then, to the bit, those of ``delong``'s ``sum``, ``einsum``
and ``dot``. The scalar steps after the sums run per table in Python, with ``delong``'s and
``_spread``'s own operations. A table past the bound, or whose one-pass spread cancels (an AUC
within about 1e-10 of 1, where ``_spread`` takes a second pass), is left to its own state.
"""

from __future__ import annotations

import math

import numpy as np

from ..uncertainty import NAN_INTERVAL, delong, normal_interval
from .score_tables import auc_from_table

__all__ = ["roc_interval", "roc_intervals"]

#: Per-table sums below this are exact (multiples of 1/4 below 2**51 are floats).
_EXACT = 2**50


def roc_intervals(
    pos: np.ndarray,
    neg: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    edges: np.ndarray,
    level: float,
) -> list[tuple[float, float] | None]:
    """``ROCAUC.interval(level)`` of each sketch whose entries (ascending by score; integer
    counts) are ``[edges[i], edges[i + 1])`` of ``pos``, ``neg``, ``lo``, ``hi``: equal to the
    bit, or None where the table must give its own (see the module)."""
    k = len(edges) - 1
    starts, stops = edges[:-1], edges[1:]
    lengths = stops - starts
    run = np.repeat(np.arange(k, dtype=np.int64), lengths)
    p = pos.astype(np.int64, copy=False)
    n = neg.astype(np.int64, copy=False)
    cum_p, cum_n = _run_cumsum(p, starts, stops, run), _run_cumsum(n, starts, stops, run)
    has = lengths > 0
    last = np.where(has, stops - 1, 0)
    big_p = np.where(has, cum_p[last] if len(p) else 0, 0)
    big_n = np.where(has, cum_n[last] if len(n) else 0, 0)
    top = np.maximum(big_p, big_n).astype(np.float64)
    exact = big_p.astype(np.float64) * big_n * top < _EXACT
    below = cum_n - 0.5 * n  # negatives below, and half the tied ones
    part = p * below
    under = cum_p - 0.5 * p  # positives below, and half the tied ones
    s1 = np.bincount(run, weights=part, minlength=k)
    s2 = np.bincount(run, weights=part * below, minlength=k)
    u2 = np.bincount(run, weights=n * under * under, minlength=k)
    spread = lo < hi
    pairs = np.bincount(run[spread], weights=(p * n)[spread], minlength=k)
    z = (big_p.tolist(), big_n.tolist(), s1.tolist(), s2.tolist(), u2.tolist(), pairs.tolist())
    out: list[tuple[float, float] | None] = []
    for ok, (bp, bn, a, b, u, c) in zip(exact.tolist(), zip(*z, strict=True), strict=True):
        out.append(_interval(float(bp), float(bn), a, b, u, c, level) if ok else None)
    return out


def roc_interval(
    pos: np.ndarray, neg: np.ndarray, lo: np.ndarray, hi: np.ndarray, level: float
) -> tuple[float, float]:
    """``ROCAUC.interval(level)`` of one sketch's entries, as its own state computes it
    (``delong``, widened by ``auc_from_table``'s bound), without making the state."""
    auc, var = delong(pos, neg)
    bound = auc_from_table(lo, hi, pos, neg)[1]
    return normal_interval(auc, math.sqrt(max(var, 0.0)), level, (0.0, 1.0), bound)


def _run_cumsum(
    x: np.ndarray, starts: np.ndarray, stops: np.ndarray, run: np.ndarray
) -> np.ndarray:
    """The prefix sums of ``x`` within each run (integers: exact)."""
    total = np.cumsum(x)
    before = np.zeros(len(starts), dtype=total.dtype)
    inner = starts > 0
    before[inner] = total[starts[inner] - 1]
    out: np.ndarray = total - before[run]
    return out


def _interval(
    p_tot: float, n_tot: float, s1: float, s2: float, u2: float, pairs: float, level: float
) -> tuple[float, float] | None:
    """``delong``'s AUC and variance from one table's exact sums, then the interval widened by
    ``auc_from_table``'s bound; None where ``_spread`` would take its second pass."""
    if not (p_tot > 1 and n_tot > 1):
        return NAN_INTERVAL
    auc = s1 / (p_tot * n_tot)
    s10: float | None
    s01: float | None
    if auc == 1.0 or auc == 0.0:
        # The classes apart (exact sums: no pair tied or misordered): every placement equals
        # its class's mean, so both spreads are 0, as ``_spread``'s second pass finds them
        # (each of its terms a zero, or a zero weight times a finite deviation, squared).
        # Most slices of a few rows are so: 86% of those ``_spread`` would read again.
        s10, s01 = 0.0, 0.0
    else:
        s10 = _one_pass(s2 / (n_tot * n_tot), p_tot * auc * auc)
        s01 = _one_pass(u2 / (p_tot * p_tot), n_tot * (1.0 - auc) ** 2)
    if s10 is None or s01 is None:
        return None
    var = max(s10, 0.0) / (p_tot - 1.0) / p_tot + max(s01, 0.0) / (n_tot - 1.0) / n_tot
    bound = 0.5 * pairs / (p_tot * n_tot)
    return normal_interval(auc, math.sqrt(max(var, 0.0)), level, (0.0, 1.0), bound)


def _one_pass(squares: float, mean_term: float) -> float | None:
    one_pass = squares - mean_term
    return one_pass if one_pass > 1e-6 * mean_term else None
