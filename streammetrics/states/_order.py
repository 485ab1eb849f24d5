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

__all__ = ["lex_order"]

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
