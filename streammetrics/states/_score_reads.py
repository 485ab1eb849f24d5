"""Reads of an exact score store that a server updates and reads in turn: the AUC's and
DeLong's exact sums (:mod:`~streammetrics.states._exact_sums`), read past a short queue of
batches without folding it into the table.

Folding a batch of a few rows into a table of a million distinct scores, then summing the
table again, costs O(table) per read (12-19 ms at a million entries in 0.8.26). Here the first
read that finds a queue marks the store as served: it keeps the table's prefix sums (32 bytes
per entry) and where the queued keys fall in the table (``_exact_sums.placed``), both dropped
when a fold, merge or scale replaces the table. Each later read folds the queue among itself
(the same contents: the next read starts from that one batch), places the keys it has not
placed yet, and moves the table's sums by the queue: O(queue + new keys x log table). Past
:data:`READ_QUEUE` entries (or an eighth of the table) the queue is folded in, and the prefix
sums are taken again: O(table), once per that many entries. The sums are integers, so every
path gives the same floats.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._exact_sums import Placed, Prefix, Sums, moved_sums, placed, table_prefix, table_sums

if TYPE_CHECKING:
    from .buckets import ScoreBuckets

__all__ = ["READ_QUEUE", "SERVED_MEMOS", "exact_sums"]

#: A read moves the table's sums past a queue of up to this many entries.
READ_QUEUE = 8192

#: What a served store keeps with its main table (a flush, which replaces it, drops them).
SERVED_MEMOS = ("prefix", "placed", "moved", "sums")


def exact_sums(store: ScoreBuckets) -> Sums | None:
    """``ScoreBuckets.exact_sums``: ``(P, N, S1, S2, U2)`` of ``store`` with its queue; None
    for weights, grids, an empty store, or past ``_exact_sums.wide_fits``."""
    if store.mapping is not None or store._weighted():
        return None
    queue = store._pending
    if queue and sum(len(p._keys) for p in queue) <= min(READ_QUEUE, len(store._keys) >> 3):
        if len(queue) > 1:
            folded = store._empty_like()
            folded._flush_from(queue)
            if store._pending is queue:  # (reads hold the metric's lock; if not, no harm)
                store._pending = [folded]
            queue = [folded]
        store.remember("served", (), True)
        held, new = _prefix(store), queue[0]
        if held is not None:
            read = (held, _placed(store, held, new._keys), new._pos, new._neg)
            version = (*store._fields(), new._keys, new._pos, new._neg)
            found: Sums | None = store.remembered("moved", version, lambda: moved_sums(*read))
            if found is not None:
                return found
    served = store.holds("served")
    store._flush()
    if served:
        held = _prefix(store)
        return None if held is None else held.sums
    main = store._pos, store._neg
    sums: Sums | None = store.remembered("sums", store._fields(), lambda: table_sums(*main))
    return sums


def _prefix(store: ScoreBuckets) -> Prefix | None:
    """The main table's :class:`~streammetrics.states._exact_sums.Prefix`, kept with it."""
    main = store._pos, store._neg, store._keys
    held: Prefix | None = store.remembered("prefix", store._fields(), lambda: table_prefix(*main))
    return held


def _placed(store: ScoreBuckets, held: Prefix, keys: np.ndarray) -> Placed:
    """Where ``keys`` fall in the main table, kept with the table: the next read searches only
    the keys this one did not place."""
    known: Placed | None = store.remembered("placed", store._fields(), lambda: None)
    if known is None or known.keys is not keys:
        known = placed(held, store._keys, keys, known)
        store.remember("placed", store._fields(), known)
    return known
