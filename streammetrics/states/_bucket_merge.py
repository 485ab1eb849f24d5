"""How the entries of several score stores become one store's: the merges of
:class:`~streammetrics.states.buckets.ScoreBuckets`, and the fold of its queued batches (a merge
of the batches into the store).

* :func:`fold_grid` and :func:`merge_subset`: grid stores, one dense accumulation over the whole
  grid, or the larger of two updated where the smaller's keys all lie among its own;
* :func:`fold_sparse`: exact and ``"real"`` stores, their entries concatenated and sorted by
  key (each store is sorted, so one stable sort merges the runs), equal keys folded; a few
  exact counts into many by insertion instead (:func:`insert_entries`);
* the adaptive resolution of ``"real"`` stores, which changes here only: :func:`fold_sparse`
  takes every store to the coarsest resolution among them, then :func:`fit_budget` halves the
  resolution of every bucket while more than ``REAL_MAX_BUCKETS`` remain (not below the
  configured resolution). The level reached depends only on the set of buckets held, so the
  result is canonical like the other stores'.

Entries come and go as plain arrays, which the store reads from and assigns to its own fields,
so every function here is pure: as ``Grid`` tuples (keys, neg, pos, lo, hi: the order the grid
counts them in) or as ``Fields`` (keys, pos, neg, lo, hi, bits: the store's order).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._bucket_batch import Fields, Grid, reduce_entries
from .mappings import REAL_FINE_BITS, REAL_MAX_BUCKETS, collapse_real

__all__ = ["fit_budget", "fold_grid", "fold_sparse", "insert_entries", "merge_subset"]


def fold_grid(parts: list[Grid], dtype: Any, size: int) -> Grid:
    """The entries of grid stores ``parts`` (as ``(keys, neg, pos, lo, hi)``, keys distinct,
    in ``0 .. size - 1``), accumulated over the whole grid in their order."""
    pos = np.zeros(size, dtype=dtype)
    neg = np.zeros(size, dtype=dtype)
    lo = np.full(size, np.inf)
    hi = np.full(size, -np.inf)
    for k, p_neg, p_pos, p_lo, p_hi in parts:  # distinct keys: plain fancy indexing is exact
        pos[k] += p_pos
        neg[k] += p_neg
        lo[k] = np.minimum(lo[k], p_lo)
        hi[k] = np.maximum(hi[k], p_hi)
    keys = np.flatnonzero(lo <= hi)
    return keys.astype(np.int64), neg[keys], pos[keys], lo[keys], hi[keys]


def merge_subset(first: Grid, second: Grid, dtype: Any) -> Grid | None:
    """The merge of two grid stores' entries when one's keys all lie among the other's: the
    larger's arrays updated at the smaller's positions (no pass over the whole grid), sums
    added in the order :func:`fold_grid` adds them. None otherwise."""
    big, small = (first, second) if len(first[0]) >= len(second[0]) else (second, first)
    keys, small_keys = big[0], small[0]
    if not len(small_keys):
        return keys, big[1].astype(dtype), big[2].astype(dtype), big[3], big[4]
    at = np.searchsorted(keys, small_keys)
    if at[-1] >= len(keys) or not (keys[at] == small_keys).all():
        return None
    neg, pos = big[1].astype(dtype), big[2].astype(dtype)  # copies
    lo, hi = big[3].copy(), big[4].copy()
    if big is first:  # first part first, as fold_grid adds them
        neg[at] += small[1]
        pos[at] += small[2]
    else:
        neg[at] = small[1] + neg[at]
        pos[at] = small[2] + pos[at]
    lo[at] = np.minimum(lo[at], small[3])
    hi[at] = np.maximum(hi[at], small[4])
    return keys, neg, pos, lo, hi


def insert_entries(
    keys: np.ndarray, cols: list[np.ndarray], new_keys: np.ndarray, new_cols: list[np.ndarray]
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Exact entries (sorted, distinct keys) with a few more (sorted, distinct) folded in:
    the same entries :func:`reduce_entries` gives their concatenation, for integer ``cols``
    (their sums are exact in any order), by one search and one insertion per column instead
    of a sort of every entry (a hundred new scores into a million: about 3 ms against 20)."""
    at = np.searchsorted(keys, new_keys)
    held = np.zeros(len(new_keys), dtype=bool)
    inside = at < len(keys)
    held[inside] = keys[at[inside]] == new_keys[inside]
    fresh = ~held
    before = at[fresh]
    out_keys = np.insert(keys, before, new_keys[fresh])
    out = [np.insert(c, before, n[fresh]) for c, n in zip(cols, new_cols, strict=True)]
    if held.any():
        # A held key's entry moved up by the new keys inserted before it.
        where = at[held] + np.searchsorted(before, at[held], side="right")
        for c, n in zip(out, new_cols, strict=True):
            c[where] += n[held]
    return out_keys, out


def _inserted(parts: list[Fields]) -> Fields | None:
    """Exact stores of integer counts folded by inserting the entries of all but the largest
    into it, when they are few (at most an eighth of it); None otherwise."""
    at = max(range(len(parts)), key=lambda i: len(parts[i][0]))
    big, rest = parts[at], [p for i, p in enumerate(parts) if i != at]
    if not rest or 8 * sum(len(p[0]) for p in rest) > len(big[0]):
        return None
    keys, cols, _, _ = reduce_entries(
        np.concatenate([p[0] for p in rest]),
        [np.concatenate([p[1] for p in rest]), np.concatenate([p[2] for p in rest])],
        None,
        None,
    )
    keys, (pos, neg) = insert_entries(big[0], [big[1], big[2]], keys, cols)
    return keys, pos, neg, None, None, None


def fold_sparse(parts: list[Fields], dtype: Any, floor_bits: int | None) -> Fields:
    """The fields of one store holding the entries of exact or ``"real"`` stores ``parts``
    (each sorted and folded), counts in ``dtype``.

    ``floor_bits``: for ``"real"`` stores, the configured resolution's mantissa bits, the
    coarsest :func:`fit_budget` may go; None for exact stores (no ``lo``, ``hi`` or bits).
    A few exact counts join many by insertion (:func:`insert_entries`), the same entries.
    """
    if floor_bits is None and np.dtype(dtype) == np.int64:
        few = _inserted(parts)
        if few is not None:
            return few
    if floor_bits is not None:  # "real": every part at the coarsest level held
        held = [bits for keys, *_, bits in parts if len(keys) and bits is not None]
        level = min(held) if held else REAL_FINE_BITS
        keys = np.concatenate([collapse_real(p[0], (p[5] or level) - level) for p in parts])
    else:
        keys = np.concatenate([p[0] for p in parts])
    cols = [
        np.concatenate([p[1] for p in parts]).astype(dtype),
        np.concatenate([p[2] for p in parts]).astype(dtype),
    ]
    lo = None if floor_bits is None else np.concatenate([p[3] for p in parts])
    hi = None if floor_bits is None else np.concatenate([p[4] for p in parts])
    # Each part is sorted: the stable sort in reduce_entries merges the runs (timsort).
    keys, (pos, neg), lo, hi = reduce_entries(keys, cols, lo, hi)
    if floor_bits is None:
        return keys, pos, neg, lo, hi, None
    return fit_budget((keys, pos, neg, lo, hi, level), floor_bits)


def fit_budget(fields: Fields, floor_bits: int) -> Fields:
    """A ``"real"`` store's ``fields`` with the resolution of every bucket halved until at
    most ``REAL_MAX_BUCKETS`` remain (not below ``floor_bits``, the configured resolution's).
    The level reached depends only on the set of buckets held, so any split of a stream,
    merged in any order, gives the same bytes."""
    keys, pos, neg, lo, hi, bits = fields
    assert bits is not None
    if len(keys) <= REAL_MAX_BUCKETS:
        return fields
    shift, room = 0, bits - floor_bits
    while shift < room:
        shift += 1
        if np.count_nonzero(np.diff(collapse_real(keys, shift))) + 1 <= REAL_MAX_BUCKETS:
            break
    if shift == 0:
        return fields
    keys, (pos, neg), lo, hi = reduce_entries(collapse_real(keys, shift), [pos, neg], lo, hi)
    return keys, pos, neg, lo, hi, bits - shift
