"""DeLong's variance of the AUC of many score tables of one length, as of one.

:func:`streammetrics.uncertainty.delong` is :func:`delong_rows` on one row, so that
``Sliced(ROCAUC())`` reads the tables of one length as the rows of one array and every slice
gets its own state's floats: each step is elementwise or runs along a row (numpy sums,
accumulates and ``einsum``-s a row of a contiguous array as it does the row alone; ``row_dots``
for rows longer than einsum's buffer).
"""

from __future__ import annotations

import math

import numpy as np

from ._exact_sums import Sums, table_sums
from ._row_sums import row_dots

__all__ = ["delong_of_sums", "delong_row", "delong_rows"]


def delong_rows(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(auc, var)`` of every row of ``(tables, entries)`` arrays of positive and negative
    weights, each row ascending by score (see ``uncertainty.delong``); nan for a row without two
    of each class. The prefix sums run on the tables' own dtype (integer counts sum exactly);
    each spread is ``sum w v**2 - W mean**2`` from the placements, or a second pass where that
    difference cancels (``_spreads``). One row goes to :func:`delong_row`, as do rows of integer
    counts whose float sums may round or whose spread cancels (they take exact integer sums
    there)."""
    many, size = pos.shape
    if many == 1:
        found = delong_row(pos[0], neg[0])
        if found is not None:
            return np.array([found[0]]), np.array([found[1]])
    if size == 0:
        return np.full(many, math.nan), np.full(many, math.nan)
    with np.errstate(all="ignore"):  # (a forged state may hold huge weights)
        cum_n, cum_p = np.cumsum(neg, axis=1), np.cumsum(pos, axis=1)
    p_tot, n_tot = cum_p[:, -1].astype(np.float64), cum_n[:, -1].astype(np.float64)
    known = (p_tot > 1) & (n_tot > 1)
    if not known.any():
        return np.full(many, math.nan), np.full(many, math.nan)
    with np.errstate(all="ignore"):
        below = _less_half(cum_n, neg)  # negatives below + half ties
        part = np.multiply(pos, below, dtype=np.float64)
        # einsum (row_dots), not ``@``: OpenBLAS threads a long dot product, which on a busy
        # machine can take milliseconds to synchronise; einsum's loop stays in this thread.
        s1, s2 = part.sum(axis=1), row_dots(part, below)
        under = _less_half(cum_p, pos)  # positives below + half ties
        np.multiply(neg, under, out=part, dtype=np.float64)
        u2 = row_dots(part, under)
        auc = s1 / (p_tot * n_tot)
        rest = 1.0 - auc
        integer = pos.dtype.kind == "i" and neg.dtype.kind == "i"
        squares10, mean10 = s2 / (n_tot * n_tot), p_tot * auc * auc
        squares01, mean01 = u2 / (p_tot * p_tot), n_tot * (rest * rest)
        if integer:  # (a cancelling spread: the row's own exact form, below)
            s10, s01 = squares10 - mean10, squares01 - mean01
            again = ~(s10 > 1e-6 * mean10) | ~(s01 > 1e-6 * mean01)
        else:
            s10 = _spreads(squares10, mean10, pos, below, n_tot, auc)
            s01 = _spreads(squares01, mean01, neg, under, p_tot, rest)
        var = _floor(s10) / (p_tot - 1.0) / p_tot + _floor(s01) / (n_tot - 1.0) / n_tot
    auc, var = np.where(known, auc, math.nan), np.where(known, var, math.nan)
    if integer:
        # Rows whose float sums may round (a sum past 2**53), or whose spread cancels, are
        # read as one row reads them: from exact integer sums (see delong_of_sums).
        again |= 4.0 * p_tot * n_tot * np.maximum(p_tot, n_tot) >= _EXACT
        for i in np.flatnonzero(known & again):
            found = delong_row(pos[i].astype(np.int64), neg[i].astype(np.int64))
            assert found is not None
            auc[i], var[i] = found
    return auc, var


#: Integer sums below this are exact as float sums too (any order).
_EXACT = 2.0**53


#: The dtypes :func:`delong_row` takes (a store's counts or weights): ``np.add.accumulate``
#: keeps them, as ``np.cumsum`` does (which widens smaller integers).
_ROW_DTYPES = (np.dtype(np.int64), np.dtype(np.float64))
_I64 = np.dtype(np.int64)


def delong_row(pos: np.ndarray, neg: np.ndarray) -> tuple[float, float] | None:
    """:func:`delong_rows` of one table given as 1-D arrays of int64 or float64 (else None), by
    the same operations on 1-D arrays and, after the sums, on Python floats (IEEE's ``+ - *
    /`` as numpy's; no division by zero: both totals are above 1), at about a third of the
    cost; ``tests/test_score_rows.py`` holds every float to a two-row array's.

    Integer counts within :func:`~streammetrics.states._exact_sums.wide_fits` take their sums
    as exact integers (``table_sums``), each rounded once: the float sums' values wherever
    those are exact (every sum below 2**53), and the same whichever way the sums were reached
    (a served store reads them from kept prefix sums: :func:`delong_of_sums`)."""
    if pos.dtype not in _ROW_DTYPES or neg.dtype not in _ROW_DTYPES:
        return None
    if pos.shape[0] == 0:
        return math.nan, math.nan
    if pos.dtype == _I64 and neg.dtype == _I64:
        sums = table_sums(pos, neg)
        if sums is not None:
            return delong_of_sums(sums)
    with np.errstate(all="ignore"):
        cum_n, cum_p = _accumulate(neg), _accumulate(pos)
        p_tot, n_tot = float(cum_p[-1]), float(cum_n[-1])
        if not (p_tot > 1 and n_tot > 1):
            return math.nan, math.nan
        below = _less_half(cum_n, neg)
        part = np.multiply(pos, below, dtype=np.float64)
        s1, s2 = float(_sum(part)), float(np.einsum("i,i->", part, below))
        under = _less_half(cum_p, pos)
        np.multiply(neg, under, out=part, dtype=np.float64)
        u2 = float(np.einsum("i,i->", part, under))
        auc = s1 / (p_tot * n_tot)
        rest = 1.0 - auc
        s10 = _spread(s2 / (n_tot * n_tot), p_tot * auc * auc, pos, below, n_tot, auc)
        s01 = _spread(u2 / (p_tot * p_tot), n_tot * (rest * rest), neg, under, p_tot, rest)
    s10 = 0.0 if 0.0 > s10 else s10  # max(s10, 0.0)
    s01 = 0.0 if 0.0 > s01 else s01
    return auc, s10 / (p_tot - 1.0) / p_tot + s01 / (n_tot - 1.0) / n_tot


def delong_of_sums(sums: Sums) -> tuple[float, float]:
    """:func:`delong_row`'s ``(auc, var)`` of a table of integer counts from its exact sums
    ``(P, N, S1, S2, U2)`` (:mod:`~streammetrics.states._exact_sums`) alone.

    The steps after the sums, on ``s1, s2, u2 = S1 / 2, S2 / 4, U2 / 4`` (each exact after the
    one rounding of ``float``). Where ``sum w v**2 - W mean**2`` cancels (an AUC within about
    1e-6 of 0 or 1), the spread is taken from the integers instead: ``sum p (v10 - AUC)**2 =
    (P S2 - S1**2) / (4 N**2 P)`` and ``sum n (v01 - AUC)**2 = (N U2 - U1**2) / (4 P**2 N)``
    with ``U1 = sum n A = 2 P N - S1``, one rounding each (0.8.26 took a second pass over the
    table, with the rounded AUC as the mean)."""
    p_total, n_total, s1_x2, s2_x4, u2_x4 = sums
    p_tot, n_tot = float(p_total), float(n_total)
    if not (p_tot > 1 and n_tot > 1):
        return math.nan, math.nan
    auc = float(s1_x2) / 2.0 / (p_tot * n_tot)
    rest = 1.0 - auc
    mean10, mean01 = p_tot * auc * auc, n_tot * (rest * rest)
    s10 = float(s2_x4) / 4.0 / (n_tot * n_tot) - mean10
    s01 = float(u2_x4) / 4.0 / (p_tot * p_tot) - mean01
    if not s10 > 1e-6 * mean10:
        s10 = (p_total * s2_x4 - s1_x2 * s1_x2) / (4 * n_total * n_total * p_total)
    if not s01 > 1e-6 * mean01:
        u1_x2 = 2 * p_total * n_total - s1_x2
        s01 = (n_total * u2_x4 - u1_x2 * u1_x2) / (4 * p_total * p_total * n_total)
    s10 = 0.0 if 0.0 > s10 else s10  # max(s10, 0.0)
    s01 = 0.0 if 0.0 > s01 else s01
    return auc, s10 / (p_tot - 1.0) / p_tot + s01 / (n_tot - 1.0) / n_tot


def _less_half(cum: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``cum - 0.5 * w`` in float64. For int64 and float64 weights (a store's), as ``cum +
    (-0.5 * w)``: the same floats (IEEE's ``x - y`` is ``x + -y``), without numpy's
    mixed-dtype ``subtract``, which buffers its casts (5 ms at a million int64 entries,
    against under 2). Narrower floats halve in their own dtype first, as that did."""
    if w.dtype not in _ROW_DTYPES:
        found: np.ndarray = np.subtract(cum, 0.5 * w, dtype=np.float64)
        return found
    out: np.ndarray = np.multiply(w, -0.5, dtype=np.float64)
    out += cum
    return out


_sum, _accumulate = np.add.reduce, np.add.accumulate  # (ndarray.sum and np.cumsum, 1 µs less)


def _floor(x: np.ndarray) -> np.ndarray:
    """``max(x, 0.0)`` of every element: ``x`` unless 0.0 is above it (nan and -0.0 kept)."""
    out: np.ndarray = np.where(0.0 > x, 0.0, x)
    return out


def _spreads(
    squares: np.ndarray,
    mean_term: np.ndarray,
    w: np.ndarray,
    counts: np.ndarray,
    total: np.ndarray,
    mean: np.ndarray,
) -> np.ndarray:
    """``sum w (v - mean)**2`` of each row with ``v = counts / total``, from ``squares -
    mean_term`` (``sum w v**2 - W mean**2``), or by a second pass where that difference cancels:
    an AUC within about 1e-10 of 1 left only the rounding of the two terms (intervals 15x too
    wide, or 30% too narrow, at a million rows a class: a review found it)."""
    out: np.ndarray = squares - mean_term
    again = ~(out > 1e-6 * mean_term)
    if again.any():
        d = counts[again] / total[again, None] - mean[again, None]
        out[again] = row_dots(np.multiply(w[again], d, dtype=np.float64), d)
    return out


def _spread(
    squares: float, mean_term: float, w: np.ndarray, counts: np.ndarray, total: float, mean: float
) -> float:
    """:func:`_spreads` of one row (``w``, ``counts`` 1-D)."""
    out = squares - mean_term
    if not out > 1e-6 * mean_term:
        d = counts / total - mean
        out = float(np.einsum("i,i->", np.multiply(w, d, dtype=np.float64), d))
    return out
