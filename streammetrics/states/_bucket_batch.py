"""How batches of (score, label, weight) rows, and stores, become score-bucket entries.

The kernels of :class:`~streammetrics.states.buckets.ScoreBuckets`'s updates, which
:func:`batch_entries` picks between:

* :func:`count_grid`: on a grid mapping (a fixed, small key range), and for ``"real"`` keys
  spanning a small range in the batch, one dense count per key and label (one ``bincount``)
  and the smallest and largest score per key (``ufunc.at`` on the rows outside their bucket's
  range so far), in chunks whose keys live in a reused scratch array; a store's entries may
  be added in the same pass;
* :func:`reduce_raw`: otherwise (exact scores, ``"real"`` keys spread wide), sort the rows
  by key and fold equal keys (:func:`~streammetrics.states._fold.fold_equal`), in
  cache-sized pieces for long batches.

Entries come back as sorted keys with per-key negative and positive weight, lowest and highest
score: the store's canonical form. The merges of stores are in
:mod:`~streammetrics.states._bucket_merge`.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np

from ._fold import fold_equal
from .mappings import CHUNK, SCRATCH_ROWS, BucketMapping, scratch

__all__ = [
    "SORT_CHUNK",
    "Fields",
    "Grid",
    "batch_entries",
    "count_grid",
    "reduce_entries",
    "reduce_raw",
]

#: A raw batch longer than this is reduced in pieces (each sorted while it fits in the cache),
#: whose reduced entries one stable sort then merges: about 2x faster at a million scores.
SORT_CHUNK = 1 << 18

#: Up to this many cells, a chunk is counted by ``np.bincount`` (the fastest) into a table of
#: its own; above it (the wide key ranges of ``"real"``), added in place.
_BINCOUNT_CELLS = 1 << 16

_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)

Grid = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # keys, neg, pos, lo, hi
#: A store's fields: keys, pos, neg, lo and hi (None when exact), bits (``"real"`` only).
Fields = tuple[np.ndarray, np.ndarray, np.ndarray, Any, Any, "int | None"]
Entries = tuple[np.ndarray, list[np.ndarray], np.ndarray | None, np.ndarray | None]


def batch_entries(
    mapping: BucketMapping | None,
    scores: np.ndarray,
    positive: np.ndarray,
    weights: np.ndarray | None,
    keys: np.ndarray | None = None,
    base: Any = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """``(keys, pos, neg, lo, hi)`` of a batch of at least one row (validated float64 scores,
    0/1 or bool labels, nonzero weights or None).

    ``mapping``: the one the store's keys are on now (for ``"real"``, at the store's current
    resolution), None for exact stores (whose keys are the scores; ``lo`` and ``hi`` None).
    ``keys`` may pass precomputed keys of ``scores``. With ``base`` (a folded store of this
    grid) the entries are ``base``'s and the batch's together, counted in one dense pass.
    """
    size = None if mapping is None else mapping.size
    offset = 0
    if mapping is not None and size is None:
        # Sparse keys ("real"): count densely over the batch's key range when it is small.
        keys = mapping.keys(scores) if keys is None else keys
        kmin, kmax = int(keys.min()), int(keys.max())
        if kmax - kmin < max(1 << 16, 4 * len(keys)):
            offset, size = kmin, kmax - kmin + 1
            keys = keys - kmin
    if size is not None:
        assert mapping is not None
        dtype = _I64 if weights is None else _F64
        if base is not None:
            dtype = np.result_type(dtype, base._pos.dtype)
        held = None if base is None or not len(base._keys) else base
        k, neg, pos, lo, hi = count_grid(
            mapping, size, dtype, scores, positive, weights, keys, held
        )
        k += offset
        return k, pos, neg, lo, hi
    scores = scores + 0.0  # -0.0 becomes +0.0: one value, one key
    if mapping is None:
        k = scores
    else:
        k = mapping.keys(scores) if keys is None else keys
    w = np.ones(len(scores), dtype=_I64) if weights is None else weights
    pos, neg = np.where(positive, w, 0), np.where(positive, 0, w)
    k, (pos, neg), lo_r, hi_r = reduce_raw(k, [pos, neg], None if mapping is None else scores)
    return k, pos, neg, lo_r, hi_r


def reduce_entries(
    keys: np.ndarray,
    cols: list[np.ndarray],
    lo: np.ndarray | None,
    hi: np.ndarray | None,
    unordered: bool = False,
) -> Entries:
    """Sort entries by key and fold equal keys: sum ``cols``, min ``lo``, max ``hi``.

    ``unordered``: the keys come in no particular order (a raw batch), so numpy's default sort
    (an introsort, vectorised) beats the stable one ``fold_equal`` uses for queues of sorted
    runs: about 3x at a million scores."""
    order = np.argsort(keys) if unordered and len(keys) else None
    (k,), sums, mins, maxs = fold_equal(
        [keys], cols, [] if lo is None else [lo], [] if hi is None else [hi], order=order
    )
    return k, sums, (mins[0] if mins else None), (maxs[0] if maxs else None)


def reduce_raw(keys: np.ndarray, cols: list[np.ndarray], values: np.ndarray | None) -> Entries:
    """:func:`reduce_entries` of a raw batch (``values``: the scores, whose smallest and largest
    per key are kept, or None)."""
    n = len(keys)
    if n <= SORT_CHUNK:
        return reduce_entries(keys, cols, values, values, unordered=True)
    parts = [
        reduce_entries(
            keys[a : a + SORT_CHUNK],
            [c[a : a + SORT_CHUNK] for c in cols],
            None if values is None else values[a : a + SORT_CHUNK],
            None if values is None else values[a : a + SORT_CHUNK],
            unordered=True,
        )
        for a in range(0, n, SORT_CHUNK)
    ]
    joined = [np.concatenate([p[1][j] for p in parts]) for j in range(len(cols))]
    keys = np.concatenate([p[0] for p in parts])
    if values is None:
        return reduce_entries(keys, joined, None, None)
    lo = np.concatenate([p[2] for p in parts])
    hi = np.concatenate([p[3] for p in parts])
    return reduce_entries(keys, joined, lo, hi)


def count_grid(
    mapping: BucketMapping,
    size: int,
    dtype: Any,
    scores: np.ndarray,
    positive: np.ndarray,
    weights: np.ndarray | None,
    keys: np.ndarray | None,
    held: Any = None,
) -> Grid:
    """``(keys, neg, pos, lo, hi)`` of a batch over the keys ``0 .. size - 1`` (``keys``, if
    given, are the batch's precomputed keys, else ``mapping`` computes them, by
    ``checked_keys_into``: the scores are checked for the mapping's domain), counted densely
    in ``dtype``. ``held``: a store (``ScoreBuckets`` with distinct keys in that range) whose
    counts are added after the batch's chunks, as a merge would add them; its smallest and
    largest scores seed the table's (min and max do not depend on order), so that few of the
    batch's rows need ``ufunc.at`` (:func:`_extremes`)."""
    lo = np.full(size, np.inf)
    hi = np.full(size, -np.inf)
    if held is not None:  # a store's keys are distinct: plain fancy indexing is exact
        lo[held._keys], hi[held._keys] = held.lo, held.hi
    flat = np.zeros(2 * size, dtype=dtype)
    for a, b in _pieces(len(scores), whole_chunks=weights is not None):
        xs = scores[a:b]
        # intp keys in a reused scratch array: ufunc.at and bincount run fastest on it.
        k = scratch.get("keys", len(xs), np.intp)
        if keys is None:
            mapping.checked_keys_into(xs, k)
        else:
            np.copyto(k, keys[a:b], casting="unsafe")
        _extremes(lo, hi, k, xs, fresh=held is None and a == 0)
        k <<= 1  # 2 * key + label: one bincount for both classes
        lab = positive[a:b]
        if lab.dtype == np.bool_:  # as uint8: no intp copy of the labels
            np.add(k, lab.view(np.uint8), out=k)
        else:
            k += lab if lab.dtype == np.intp else lab.astype(np.intp)
        wt = None if weights is None else weights[a:b]
        if 2 * size <= _BINCOUNT_CELLS:
            flat += np.bincount(k, weights=wt, minlength=2 * size)
        else:  # no fresh table per chunk: its pages would cost more than the counting
            np.add.at(flat, k, 1 if wt is None else wt)
    flat_neg, flat_pos = flat[0::2], flat[1::2]
    if held is not None:  # distinct keys: ufunc.at adds once per key, as fancy += would
        np.add.at(flat_neg, held._keys, held._neg)  # (on strided views: 2x faster than +=)
        np.add.at(flat_pos, held._keys, held._pos)
    seen = np.flatnonzero(lo <= hi)
    # (Fancy indexing reads the strided views in place; take() would copy the whole table.)
    neg, pos, lo, hi = flat_neg[seen], flat_pos[seen], lo.take(seen), hi.take(seen)
    lo += 0.0  # -0.0 -> +0.0
    hi += 0.0
    return seen.astype(np.int64, copy=False), neg, pos, lo, hi


def _pieces(n: int, whole_chunks: bool) -> list[tuple[int, int]]:
    """The row ranges :func:`count_grid` works through.

    Weighted counts (``whole_chunks``): ``CHUNK`` rows each, every break at a multiple of
    ``CHUNK``: float sums are added chunk by chunk, and their rounding depends on where the
    chunks break. Unweighted counts are integers, and the smallest and largest score of a
    bucket do not depend on the order of the rows, so any breaks give the same entries: the
    batch is cut into the fewest even pieces of at most ``SCRATCH_ROWS`` rows, which pays a
    piece's fixed cost (some 25 numpy calls) fewer times: 100,000 rows are two pieces, not
    three (3-5% faster on 100k-row batches than 32k pieces; wider pieces gained no more).
    """
    if n <= 0:
        return []
    if whole_chunks:
        starts = list(range(0, n, CHUNK))
        return list(zip(starts, [*starts[1:], n], strict=True))
    count = -(-n // SCRATCH_ROWS)
    return list(pairwise([n * i // count for i in range(count + 1)]))


def _extremes(lo: np.ndarray, hi: np.ndarray, k: np.ndarray, xs: np.ndarray, fresh: bool) -> None:
    """Lower ``lo[k]`` to ``xs`` and raise ``hi[k]`` to it, where they are beyond.

    Only a score outside its bucket's current ``[lo, hi]`` can move them, and once a bucket has
    seen a few scores, few are: the rows are screened with two lookups (``mode="clip"``: the
    keys are in range), and ``ufunc.at``, twice the cost per row, runs on the few left. A
    ``fresh`` table (every bucket empty) or a chunk where most rows qualify skips the screen; a
    chunk where none does (the common case on a long stream) stops after the screen.
    """
    if not fresh:
        n = len(xs)
        at = np.take(lo, k, out=scratch.get("at", n, np.float64), mode="clip")
        beyond = np.less(xs, at, out=scratch.get("beyond", n, np.bool_))
        np.take(hi, k, out=at, mode="clip")
        beyond |= np.greater(xs, at, out=scratch.get("above", n, np.bool_))
        if not beyond.any():  # the common case once the buckets have seen a few scores
            return
        rows = np.flatnonzero(beyond)
        if len(rows) < n // 2:
            k, xs = k[rows], xs[rows]
    np.minimum.at(lo, k, xs)
    np.maximum.at(hi, k, xs)
