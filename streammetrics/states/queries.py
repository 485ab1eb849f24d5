"""Per-query row buffers: the rows of queries that may still receive rows from other batches.

The state behind the ranking metrics. A query's rows (query id, relevance, score) may arrive in
many updates and on many shards, and its score is only defined once all of them are together.
This block keeps those rows. Its logical contents are the multiset of rows, and its canonical
form sorts them by (query id, score, relevance), so a stream split any way and merged in any
order gives the same bytes.

Appending is O(b) for a batch of b rows: batches are kept as chunks and sorted into canonical
form only when the rows are read (``rows``, ``to_wire``, ``take``), once per read; a read costs
O(B log B) for B buffered rows. Query ids are integers (int64) or strings, one kind per block.

Memory: three values per buffered row. Rows leave the buffer only through ``take`` (when the
caller declares their queries complete).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import StateBlock
from ..errors import IncompatibleStateError
from ._order import SMALL, grouped_order, lex_order, small_levels
from .labels import check_kinds, unique_codes

__all__ = ["QueryBuffers"]

_EMPTY_IDS = np.empty(0, dtype=np.int64)
_EMPTY_F = np.empty(0, dtype=np.float64)
# Consolidate into one sorted chunk once this many chunks pile up (bounds per-chunk overhead).
_MAX_CHUNKS = 64
# A chunk at least this fraction of the one before it joins it: the chunks' sizes then fall
# geometrically (O(log B) chunks), so each row is sorted again O(log B) times in all.
_JOIN_RATIO = 0.5

Rows = tuple[np.ndarray, np.ndarray, np.ndarray]


def canonical(
    query: np.ndarray, relevance: np.ndarray, score: np.ndarray, *, runs: bool = False
) -> Rows:
    """The rows sorted by (query id, score, relevance): the same for any order of arrival.

    Graded relevance (whole numbers below 4096) and not too many queries take one sort of a
    composite key (:func:`~streammetrics.states._order.grouped_order`); other rows
    ``lex_order``'s three. Both give the same rows (rows equal in all three columns are
    alike). ``runs``: the rows are sorted runs (the chunks of a block being joined)."""
    if len(query) < 2:
        return query, relevance, score
    order = None
    if len(query) >= SMALL:
        graded = small_levels(relevance)
        if graded is not None:
            uniq, codes = unique_codes(query)
            order = grouped_order(codes, len(uniq), score, *graded, runs=runs)
    if order is None:
        order = lex_order([query, score, relevance])
    return query[order], relevance[order], score[order]


class QueryBuffers(StateBlock):
    """Rows of open queries, merged by concatenation; canonical form sorted.

    Chunks are never modified in place once stored, so blocks may share them.
    """

    def __init__(self) -> None:
        self._chunks: list[Rows] = []
        self._size = 0

    def __len__(self) -> int:
        return self._size

    @property
    def kind(self) -> str | None:
        """``"int"`` or ``"str"`` once rows are held, else ``None``."""
        for q, _, _ in self._chunks:
            if len(q):
                return "str" if q.dtype.kind == "U" else "int"
        return None

    def _sample_ids(self) -> np.ndarray:
        for q, _, _ in self._chunks:
            if len(q):
                return q
        return _EMPTY_IDS

    def check_query_ids(self, query: np.ndarray, name: str) -> None:
        """``InputError`` when ``query`` holds another kind of id than the buffered rows."""
        check_kinds(self._sample_ids(), query, name)

    # -- contents ----------------------------------------------------------------------------

    def rows(self) -> Rows:
        """All buffered rows in canonical order (query ids, relevance, scores)."""
        if not self._chunks:
            return _EMPTY_IDS, _EMPTY_F, _EMPTY_F
        if len(self._chunks) > 1:
            joined = tuple(np.concatenate([c[i] for c in self._chunks]) for i in range(3))
            self._chunks = [canonical(*joined, runs=True)]  # same contents, sorted once
        return self._chunks[0]

    def _with_chunks(self, chunks: list[Rows]) -> QueryBuffers:
        """A block of these chunks. The last chunks are joined (sorted together) while one is
        at least half the size of the one before it: appending one row at a time then costs
        O(log B) amortised, not the full sort of all B buffered rows that a consolidation
        every ``_MAX_CHUNKS`` appends cost (0.8.4: 30 ms per row at 4M buffered rows)."""
        out = QueryBuffers()
        kept = [c for c in chunks if len(c[0])]
        # The chunks joined two at a time from the end while the joined one is at least half
        # the one before it, found first and joined by one sort of their sorted runs (a merge
        # of many states joined the last pair, then that with the one before, ...).
        joined, size = 1, len(kept[-1][0]) if kept else 0
        while joined < len(kept) and size >= _JOIN_RATIO * len(kept[-joined - 1][0]):
            joined += 1
            size += len(kept[-joined][0])
        if joined > 1:
            tail = kept[-joined:]
            rows = (np.concatenate([c[i] for c in tail]) for i in range(3))
            kept[-joined:] = [canonical(*rows, runs=True)]
        out._chunks = kept
        out._size = sum(len(c[0]) for c in kept)
        if len(kept) > _MAX_CHUNKS:
            out.rows()
        return out

    def appended(self, query: np.ndarray, relevance: np.ndarray, score: np.ndarray) -> QueryBuffers:
        """A new block with these rows added (``self`` does not change). O(b log b) for the
        batch, and amortised O(log B) re-sorts per row for the joins of chunks."""
        chunk = canonical(query, relevance, score)
        return self._with_chunks([*self._chunks, chunk])

    def take(self, queries: np.ndarray) -> tuple[Rows, QueryBuffers]:
        """Split off the rows of ``queries``: ``(their rows, a block of the others)``.

        ``self`` does not change. O(B log B) for B buffered rows (none when empty).
        """
        if not self._size or not len(queries):
            return (_EMPTY_IDS, _EMPTY_F, _EMPTY_F), self
        q, r, s = self.rows()
        if len(q) and (q.dtype.kind == "U") != (queries.dtype.kind == "U"):
            return (_EMPTY_IDS, _EMPTY_F, _EMPTY_F), self
        hit = np.isin(q, queries)
        if not hit.any():
            return (_EMPTY_IDS, _EMPTY_F, _EMPTY_F), self
        keep = ~hit
        return (q[hit], r[hit], s[hit]), self._with_chunks([(q[keep], r[keep], s[keep])])

    # -- merging -----------------------------------------------------------------------------

    def check_mergeable(self, other: Any) -> None:
        if not isinstance(other, QueryBuffers):
            raise IncompatibleStateError("cannot merge query buffers with another state")
        mine, theirs = self.kind, other.kind
        if mine is not None and theirs is not None and mine != theirs:
            raise IncompatibleStateError(
                f"cannot merge a state of {mine} query ids with one of {theirs} query ids"
            )

    def merged(self, other: QueryBuffers) -> QueryBuffers:
        self.check_mergeable(other)
        return self._with_chunks([*self._chunks, *other._chunks])

    def merge(self, other: Any) -> None:
        new = self.merged(other)
        self._chunks, self._size = new._chunks, new._size

    def check_mergeable_together(self, others: list[Any]) -> None:
        """:meth:`check_mergeable` of every operand, and one kind of query id among them all
        (each may be compatible with an empty block and not with another)."""
        for other in others:
            self.check_mergeable(other)
        kinds = {b.kind for b in (self, *others)} - {None}
        if len(kinds) > 1:
            raise IncompatibleStateError(
                "cannot merge states of int query ids with states of str query ids"
            )

    def merge_many(self, others: list[Any]) -> None:
        """Every operand's chunks appended at once: the ones joined are then sorted together
        once (merging them one by one sorted the growing tail again for each)."""
        self.check_mergeable_together(others)
        new = self._with_chunks([*self._chunks, *(c for o in others for c in o._chunks)])
        self._chunks, self._size = new._chunks, new._size

    def copy(self) -> QueryBuffers:
        return self._with_chunks(list(self._chunks))  # chunks are immutable: share them

    # -- wire --------------------------------------------------------------------------------

    def to_wire(self) -> Any:
        q, r, s = self.rows()
        ids: Any = q.tolist() if q.dtype.kind == "U" else q.astype(np.int64)
        return {"query": ids, "relevance": r, "score": s}

    def from_wire(self, wire: Any) -> QueryBuffers:
        if not isinstance(wire, dict) or set(wire) != {"query", "relevance", "score"}:
            raise ValueError("query buffers need exactly the fields query, relevance, score")
        ids, rel, score = wire["query"], wire["relevance"], wire["score"]
        if isinstance(ids, np.ndarray):
            if ids.dtype != np.int64 or ids.ndim != 1:
                raise ValueError("integer query ids must be a 1-D int64 array")
            q = ids
        elif isinstance(ids, list) and all(isinstance(v, str) for v in ids):
            q = np.array(ids, dtype=np.str_) if ids else _EMPTY_IDS
        else:
            raise ValueError("query ids must be an int64 array or a list of strings")
        for name, arr in (("relevance", rel), ("score", score)):
            if not isinstance(arr, np.ndarray) or arr.dtype != np.float64 or arr.ndim != 1:
                raise ValueError(f"{name} must be a 1-D float64 array")
            if len(arr) != len(q):
                raise ValueError(f"{name} has {len(arr)} rows, query has {len(q)}")
            if arr.size and not np.isfinite(arr).all():
                raise ValueError(f"{name} must be finite")
        if rel.size and rel.min() < 0:
            raise ValueError("relevance must be non-negative")
        # -0.0 -> 0.0, as update writes them: the canonical order ties the two, and a merge's
        # bytes then depended on which state came first (0.8.18 kept a forged -0.0)
        return self._with_chunks([canonical(q, rel + 0.0, score + 0.0)])
