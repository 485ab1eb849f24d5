"""Sorting rows by several key columns with one vectorised sort instead of ``np.lexsort``.

``np.lexsort`` runs one stable merge sort per key: on millions of rows with float keys it costs
several times numpy's default sort (an introsort, vectorised). :func:`lex_order` replaces each
key by its dense rank (no sort at all for integers of small range), packs the ranks into one
int64 and sorts that once. Rows equal in every key come out in an unspecified (but, for the
same input, fixed) order, which is all the callers need: such rows are interchangeable to them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["grouped_order", "lex_order", "small_levels"]

#: Below this many rows ``np.lexsort`` is as fast, and exactly what the callers had.
SMALL = 1 << 14
_LIMIT = 1 << 62


def lex_order(keys: Sequence[np.ndarray]) -> np.ndarray:
    """Indices sorting the rows by ``keys[0]``, then ``keys[1]``, ... (the most significant
    first, unlike ``np.lexsort``), in any order among rows equal in every key.

    Falls back to ``np.lexsort`` for small inputs and when the packed ranks would not fit in
    an int64. Cost: one sort per key that is not an integer of small range, plus one sort of
    int64s.

    >>> lex_order([np.array([1, 0, 1, 0]), np.array([0.5, 0.2, 0.1, 0.9])]).tolist()
    [1, 3, 2, 0]
    """
    n = len(keys[0])
    if n < SMALL:
        return np.asarray(np.lexsort(tuple(reversed(keys))))
    packed: np.ndarray | None = None
    span = 1
    for key in keys:
        ranks, size = _dense_rank(key)
        if span * size >= _LIMIT:
            return np.asarray(np.lexsort(tuple(reversed(keys))))
        if packed is None:
            packed = ranks
        else:
            packed *= size
            packed += ranks
        span *= size
    assert packed is not None
    return np.asarray(np.argsort(packed))


def _dense_rank(key: np.ndarray) -> tuple[np.ndarray, int]:
    """``(ranks, size)``: int64 ranks in ``0 .. size - 1`` that order like ``key`` (equal values,
    ``-0.0`` and ``0.0`` included, share a rank)."""
    n = len(key)
    if key.dtype.kind in "biu":
        low, high = int(key.min()), int(key.max())
        if high - low < 4 * n:  # a small range: the values themselves, shifted
            return key.astype(np.int64) - low, high - low + 1
    order = np.argsort(key)
    ordered = key[order]
    new = np.empty(n, dtype=np.int64)
    new[0] = 0
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:], casting="unsafe")
    np.cumsum(new, out=new)
    ranks = np.empty(n, dtype=np.int64)
    ranks[order] = new
    return ranks, int(new[-1]) + 1


_SIGN = np.uint64(1 << 63)
#: Fewer score bits than this left in the composite of :func:`grouped_order`: ``lex_order``.
_MIN_SCORE_BITS = 24


def small_levels(values: np.ndarray, limit: int = 1 << 12) -> tuple[np.ndarray, int] | None:
    """``(values as int64, number of levels)`` when every value is a whole number from 0 to
    ``limit - 1`` (graded relevance), else None."""
    if not len(values):
        return None
    top = values.max()
    if not (values.min() >= 0 and top < limit):  # (nan fails both)
        return None
    ints = values.astype(np.int64)
    if not np.array_equal(ints, values):
        return None
    return ints, int(top) + 1


def grouped_order(
    codes: np.ndarray,
    n_codes: int,
    score: np.ndarray,
    levels: np.ndarray,
    n_levels: int,
    runs: bool = False,
) -> np.ndarray | None:
    """Indices sorting rows by (``codes``, ``score``, ``levels``) ascending, as
    ``lex_order([codes, score, levels])`` orders them, with one sort of uint64 instead of
    three: ``codes`` (integers from 0 to ``n_codes - 1``) in the high bits, ``levels`` (from 0
    to ``n_levels - 1``) in the low bits, and between them the top bits of an integer that
    orders like the finite float ``score``. Rows whose code and top score bits are equal but
    whose scores are not (closer than about 2**-24 relative at worst; rare) are then put in
    order by an exact ``lexsort`` of just those rows. ``runs``: the rows are sorted runs
    (numpy's stable sort merges them in linear time). None when fewer than 24 bits of score
    would fit, or a score is ``-0.0`` (which ``lex_order`` ties with ``0.0``)."""
    code_bits = max(1, (n_codes - 1).bit_length())
    level_bits = (n_levels - 1).bit_length()
    score_bits = 64 - code_bits - level_bits
    bits = score.view(np.uint64)
    if score_bits < _MIN_SCORE_BITS or (bits == _SIGN).any():
        return None
    image = np.where(score < 0, ~bits, bits | _SIGN)  # orders like the floats
    image >>= np.uint64(code_bits + level_bits)
    image <<= np.uint64(level_bits)
    comp = codes.astype(np.uint64) << np.uint64(64 - code_bits)
    comp |= image
    comp |= levels.astype(np.uint64)
    order = np.argsort(comp, kind="stable" if runs else "quicksort")
    top = comp[order] >> np.uint64(level_bits)  # (code, top score bits) of the sorted rows
    ordered = score[order]
    clash = np.flatnonzero((top[1:] == top[:-1]) & (ordered[1:] != ordered[:-1]))
    if len(clash):
        # The runs of equal (code, top score bits) holding distinct scores, sorted exactly.
        run_id = np.cumsum(np.concatenate(([True], top[1:] != top[:-1])))
        where = np.flatnonzero(np.isin(run_id, run_id[clash]))
        sub = order[where]
        order[where] = sub[np.lexsort((levels[sub], score[sub], run_id[where]))]
    return order
