"""DeLong's variance of the AUC of many score tables of one length, as of one.

:func:`streammetrics.uncertainty.delong` is :func:`delong_rows` on one row, so that
``Sliced(ROCAUC())`` reads the tables of one length as the rows of one array and every slice
gets its own state's floats: each step is elementwise or runs along a row (numpy sums,
accumulates and ``einsum``-s a row of a contiguous array as it does the row alone; ``row_dots``
for rows longer than einsum's buffer).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._row_sums import row_dots

__all__ = ["delong_rows"]


def delong_rows(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(auc, var)`` of every row of ``(tables, entries)`` arrays of positive and negative
    weights, each row ascending by score (see ``uncertainty.delong``); nan for a row without two
    of each class. The prefix sums run on the tables' own dtype (integer counts sum exactly);
    each spread is ``sum w v**2 - W mean**2`` from the placements, or a second pass where that
    difference cancels (``_spreads``)."""
    many, size = pos.shape
    if size == 0:
        return np.full(many, math.nan), np.full(many, math.nan)
    cum_n, cum_p = np.cumsum(neg, axis=1), np.cumsum(pos, axis=1)
    p_tot, n_tot = cum_p[:, -1].astype(np.float64), cum_n[:, -1].astype(np.float64)
    known = (p_tot > 1) & (n_tot > 1)
    if not known.any():  # (one state of few rows: no arithmetic)
        return np.full(many, math.nan), np.full(many, math.nan)
    with np.errstate(all="ignore"):
        below = np.subtract(cum_n, 0.5 * neg, dtype=np.float64)  # negatives below + half ties
        part = np.multiply(pos, below, dtype=np.float64)
        # einsum (row_dots), not ``@``: OpenBLAS threads a long dot product, which on a busy
        # machine can take milliseconds to synchronise; einsum's loop stays in this thread.
        s1, s2 = part.sum(axis=1), row_dots(part, below)
        under = np.subtract(cum_p, 0.5 * pos, dtype=np.float64)  # positives below + half ties
        np.multiply(neg, under, out=part, dtype=np.float64)
        u2 = row_dots(part, under)
        if many == 1:  # one table (a state): the steps below on numpy scalars, the same
            # operations at a tenth of the cost of one-element arrays
            p_tot, n_tot, s1, s2, u2 = p_tot[0], n_tot[0], s1[0], s2[0], u2[0]
        auc = s1 / (p_tot * n_tot)
        rest = 1.0 - auc
        s10 = _spreads(s2 / (n_tot * n_tot), p_tot * auc * auc, pos, below, n_tot, auc)
        s01 = _spreads(u2 / (p_tot * p_tot), n_tot * (rest * rest), neg, under, p_tot, rest)
        var = _floor(s10) / (p_tot - 1.0) / p_tot + _floor(s01) / (n_tot - 1.0) / n_tot
    if many == 1:  # (known: two of each class)
        return np.array([auc], dtype=np.float64), np.array([var], dtype=np.float64)
    return np.where(known, auc, math.nan), np.where(known, var, math.nan)


def _floor(x: Any) -> Any:
    """``max(x, 0.0)``: ``x`` unless 0.0 is above it (nan and -0.0 kept), of an array or a
    scalar."""
    if isinstance(x, np.ndarray):
        return np.where(0.0 > x, 0.0, x)
    return 0.0 if 0.0 > x else x


def _spreads(
    squares: Any, mean_term: Any, w: np.ndarray, counts: np.ndarray, total: Any, mean: Any
) -> Any:
    """``sum w (v - mean)**2`` of each row with ``v = counts / total``, from ``squares -
    mean_term`` (``sum w v**2 - W mean**2``), or by a second pass where that difference cancels:
    an AUC within about 1e-10 of 1 left only the rounding of the two terms (intervals 15x too
    wide, or 30% too narrow, at a million rows a class: a review found it). The sums are
    arrays, one per row, or scalars for a single row (``w``, ``counts`` one row then)."""
    out = squares - mean_term
    again = ~(out > 1e-6 * mean_term)
    if not isinstance(out, np.ndarray):
        if again:
            d = counts[0] / total - mean
            out = np.einsum("i,i->", np.multiply(w[0], d, dtype=np.float64), d)
        return out
    if again.any():
        d = counts[again] / total[again, None] - mean[again, None]
        out[again] = row_dots(np.multiply(w[again], d, dtype=np.float64), d)
    return out
