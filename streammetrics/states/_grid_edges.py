"""The grid of :class:`~streammetrics.states.mappings.LogitGrid` and
:class:`~streammetrics.states.mappings.ProbabilityGrid` (its extent ``GRID_LIMIT`` and the
dtype of its keys), and the probability grid's edges and lookup table.

The grid covers logits in ``[-GRID_LIMIT, GRID_LIMIT)``; its edges on the probability scale,
``sigmoid(t)``, are computed once per resolution with decimal arithmetic and rounded up to
float64 (:func:`_sigmoid_edges`), so they are the same on every platform. The lookup cells
(:func:`_probability_cells`) split ``q = min(p, 1 - p)`` by its top float bits so that no cell
holds two edges, and the table (:func:`_probability_table`) packs each cell's key and edge into
one uint64 entry, so that the comparison with the edge is an integer carry. Every table is
computed once per resolution and cached.
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from functools import cache
from typing import Any

import numpy as np

#: The grid covers logits in [-GRID_LIMIT, GRID_LIMIT); beyond it one overflow bucket each side.
GRID_LIMIT = 16
_TINY = 2.0**-25  # below the first grid edge sigmoid(-16) ~ 1.1e-7: one cell of key 0
_SUBNORMAL = 2.0**-997  # _TINY * _SUBNORMAL is the smallest normal float64


def _grid_key_dtype(size: int) -> np.dtype[Any]:
    return np.dtype(np.uint16) if 2 * size <= 1 << 16 else np.dtype(np.int32)


@cache
def _sigmoid_edges(resolution: int) -> np.ndarray:
    """``E[j]`` = the smallest float64 >= sigmoid(-16 + (j - 1) / r), for ``j = 1 .. 32 r + 1``,
    padded with ``E[0] = -inf`` and ``E[-1] = +inf``: key(p) = #{j >= 1 : p >= E[j]}.

    Decimal arithmetic at 50 digits is exactly specified, so the table is the same everywhere.
    """
    half = GRID_LIMIT * resolution
    with localcontext() as ctx:
        ctx.prec = 50
        low = [
            1 / (1 + (Decimal(GRID_LIMIT) - Decimal(j) / Decimal(resolution)).exp())
            for j in range(half)
        ]
        exact = [*low, Decimal("0.5"), *(1 - s for s in reversed(low))]
        out = np.empty(len(exact) + 2)
        out[0], out[-1] = -np.inf, np.inf
        for i, s in enumerate(exact, start=1):
            d = float(s)
            if Decimal(d) < s:
                d = float(np.nextafter(d, np.inf))
            out[i] = d
    return out


@cache
def _probability_cells(resolution: int) -> tuple[int, int, np.ndarray, np.ndarray]:
    """The cells of :class:`ProbabilityGrid`'s lookup: ``(shift, side, K, B)``, packed into one
    table by :func:`_probability_table`.

    A cell is a range of ``q = min(p, 1 - p)`` sharing its top float bits (``bits`` mantissa
    bits), on the side ``p <= 1/2`` (index ``c``) or ``p > 1/2`` (index ``side + c``, ``side``
    a power of two). ``K`` is the key of the cell's smallest ``p`` and ``B`` the one grid edge
    inside the cell (``inf`` if none), so ``key(p) = K[i] + (p >= B[i])``. Mantissa bits are
    added until no cell holds two edges.

    The index is read from the bits of ``q * 2**-997``, which brings ``2**-25`` (below the first
    edge) to the smallest normal float: every smaller ``q`` becomes subnormal and falls in the
    first ``2**bits`` cells, which share key 0 (key ``32 r + 1`` on the upper side). The last
    entry (key 0, no edge) catches the one other index, the sign bit of ``-0.0``.
    """
    edges = _sigmoid_edges(resolution)
    inner = edges[1:-1]
    bits = resolution.bit_length()  # log2(resolution) + 1
    while True:
        shift = 52 - bits
        base = int(np.float64(_TINY).view(np.int64)) >> shift
        top = int(np.float64(0.5).view(np.int64)) >> shift
        cells = top - base + 1
        c = np.arange(cells, dtype=np.int64)
        qlo = ((c + base) << shift).view(np.float64).copy()
        qlo[0] = 0.0
        qhi = ((c + base + 1) << shift).view(np.float64)
        qmax = np.nextafter(qhi, 0.0)  # the largest q in the cell
        # Side p <= 1/2: p = q in [qlo, qmax], capped at 1/2.
        lo_p, hi_p = qlo, np.minimum(qmax, 0.5)
        # Side p > 1/2: p = 1 - q (exact), p in [1 - qmax, 1 - qlo], above 1/2.
        up_lo = np.maximum(_p_of_q(qmax, smallest=True), np.nextafter(0.5, 1.0))
        up_hi = _p_of_q(qlo, smallest=False)
        lows = np.concatenate([lo_p, up_lo])
        highs = np.concatenate([hi_p, up_hi])
        k_lo = np.searchsorted(inner, lows, side="right")
        k_hi = np.searchsorted(inner, highs, side="right")
        if (k_hi - k_lo).max() <= 1:
            break
        bits += 1  # pragma: no cover - the first try suffices for every allowed resolution
    bound = np.where(k_hi > k_lo, edges[np.minimum(k_lo + 1, len(edges) - 1)], np.inf)
    key_dtype = _grid_key_dtype(2 * GRID_LIMIT * resolution + 2)
    tiny = 1 << bits  # the subnormal cells, ahead of the cell of 2**-25
    side = 1 << (tiny + cells - 1).bit_length()
    table_k = np.zeros(side + tiny + cells + 1, dtype=key_dtype)
    table_b = np.full(len(table_k), np.inf)
    for at, part in ((0, slice(0, cells)), (side, slice(cells, 2 * cells))):
        ks, bs = k_lo[part], bound[part]
        table_k[at : at + tiny], table_b[at : at + tiny] = ks[0], bs[0]
        table_k[at + tiny : at + tiny + cells], table_b[at + tiny : at + tiny + cells] = ks, bs
    return shift, side, table_k, table_b


@cache
def _probability_table(resolution: int) -> tuple[int, int, np.ndarray]:
    """The one lookup table of :class:`ProbabilityGrid`: ``(shift, flip, table)``.

    The cells of :func:`_probability_cells` ask for two lookups and a float comparison per
    score (``K[i] + (p >= B[i])``); here both live in one uint64 entry, and the comparison
    becomes a carry. Let ``u`` be the bits of ``q * 2**-997`` (``q = min(p, 1 - p)``): its top
    bits ``u >> shift`` are the cell, its low bits ``r`` the position inside it. On the side
    ``p <= 1/2``, ``p = q`` and the nonnegative floats order as their bits, so ``p >= B`` is
    ``r >= t`` for the edge's own low bits ``t``. On the side ``p > 1/2``, ``p = 1 - q``
    exactly, so ``p >= B`` is ``q <= 1 - B`` (exact too): ``u`` is XORed with ``flip`` (all
    ones below the side bit), which mirrors the cell to ``2 side - 1 - cell`` and turns the
    low bits to ``mask - r`` (``mask = 2**shift - 1``), so that this is again a ``>=``
    (``mask - r >= mask - t``).

    The entry at index ``i`` is ``(K << shift) + 2**shift - t - (i << shift)`` modulo
    ``2**64`` (``t = 2**shift``: no edge in the cell), so that ``(entry + u) >> shift`` is
    ``K + (r >= t)``: the carry out of the low bits is the comparison, and the cell's own bits
    in ``u`` cancel. Only ``-0.0`` indexes beyond the table (its ``u`` is ``2**63``, the sign
    bit); its last entry, reached by ``mode="clip"``, gives it key 0.
    """
    shift, side, table_k, table_b = _probability_cells(resolution)
    ones = np.uint64(1 << shift)
    n = len(table_k) - 1  # the last entry of K and B: -0.0's
    index = np.arange(n, dtype=np.uint64)
    lower = index < side
    cell = np.where(lower, index, index - np.uint64(side))
    edge = table_b[:n]
    has_edge = np.isfinite(edge)
    bound = np.where(lower, edge, 1.0 - edge)  # q >= bound (lower side), q <= bound (upper)
    low_bits = (np.where(has_edge, bound, 0.0) * _SUBNORMAL).view(np.uint64) - (cell << shift)
    t = np.where(has_edge, np.where(lower, low_bits, (ones - 1) - low_bits), ones)
    if has_edge.any() and not (low_bits[has_edge] < ones).all():  # pragma: no cover
        raise AssertionError("a grid edge lies outside its lookup cell")
    at = np.where(lower, index, np.uint64(2 * side - 1) - cell)
    table = np.zeros(2 * side + 1, dtype=np.uint64)
    table[at] = (table_k[:n].astype(np.uint64) << shift) + ones - t - (at << shift)
    table[-1] = ((int(table_k[-1]) << shift) - (1 << 63)) % (1 << 64)  # -0.0: u = 2**63
    flip = ((2 * side) << shift) - 1
    return shift, flip, table


@cache
def _flip_float(flip: int) -> float:
    """The float64 whose bits are ``flip`` (``2**58 - 1`` at every resolution: a normal float,
    so ``1.0 * F`` keeps its bits and ``0.0 * F`` has none)."""
    return float(np.array([flip], dtype=np.uint64).view(np.float64)[0])


def _p_of_q(q: np.ndarray, *, smallest: bool) -> np.ndarray:
    """For q in [0, 1/2]: the smallest float p with ``1 - p <= q`` (``smallest=True``) or the
    largest float p with ``1 - p >= q``; ``1 - p`` is exact for every p in [1/2, 1]."""
    p = 1.0 - q
    for _ in range(4):  # rounding leaves p within an ulp or two; step to the exact answer
        if smallest:
            fix_up = (1.0 - p) > q
            p[fix_up] = np.nextafter(p[fix_up], 2.0)
            down = np.nextafter(p, 0.0)
            fix_down = (1.0 - down) <= q
            p[fix_down] = down[fix_down]
        else:
            fix_down = (1.0 - p) < q
            p[fix_down] = np.nextafter(p[fix_down], 0.0)
            up = np.nextafter(p, 2.0)
            fix_up = ((1.0 - up) >= q) & (up <= 1.0)
            p[fix_up] = up[fix_up]
    return p
