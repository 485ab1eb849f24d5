"""``GroupedScores``: per-group score tables (exact distinct scores while a group is small, a
bucket sketch beyond), the state of :class:`~streammetrics.GAUC`.

A group switches from exact scores to the sketch on its *total* row count only, so the state is
a function of the multiset of rows: any split merged in any order gives the same bytes. Merges
of many blocks are one k-way pass; blocks of disjoint groups join by concatenation.

The entry table and its sorts live in :mod:`streammetrics.states._group_table`, the wire form
and its checks in :mod:`streammetrics.states._group_wire`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._codec import WEIGHT_LIMIT, check_sum, held_total
from ..base import StateBlock
from ..errors import IncompatibleStateError
from ._fold import queue_full
from ._group_reads import GroupRead, read_groups
from ._group_table import BATCH_SLICE, SLICE, _sort_reduce, _Table, fold_tables
from ._group_wire import checked_table, grouped_to_wire
from .labels import EMPTY_LABELS, check_kinds, unique_codes
from .mappings import BucketMapping

__all__ = ["GroupedScores"]


class GroupedScores(StateBlock):
    """Per-group positive and negative weight per distinct score or score bucket.

    Parameters
    ----------
    mapping : BucketMapping or None
        The bucket grid of sketched groups; ``None`` keeps every group exact.
    max_exact : int
        A group stays exact while it has at most this many rows (ignored without a mapping).

    Memory: 32 bytes per (group, distinct score) or (group, bucket) entry plus 24 per group.
    ``add``: O(n log n) for a batch of n rows, whatever the number of groups held (the batch's
    groups are joined to the held ones when the queue is folded); ``merge``: O(1) (queued),
    canonicalised lazily in O(m log m) for m entries, at most doubling work over a stream.
    """

    #: (Class defaults: blocks pickled by 0.8.25 have no such attributes.)
    _read: GroupRead | None = None
    _fresh: list[np.ndarray] | None = None
    _fresh_size = 0

    def __init__(self, mapping: BucketMapping | None, max_exact: int) -> None:
        self.mapping = mapping
        self.max_exact = max_exact if mapping is not None else -1
        # The groups of the main table and their row counts; queued tables carry their own.
        self._groups: np.ndarray = EMPTY_LABELS
        self._rows: np.ndarray = np.zeros(0, dtype=np.int64)
        self._total = 0  # rows held, queue included
        self._main = self._empty_table(np.dtype(np.int64))
        self._pending: list[_Table] = []
        #: The total weight held as :meth:`add` keeps it, or None where unknown (a new block,
        #: which may be given tables, or one merged into): the next weighted add sums it.
        self._held_bound: float | None = None
        #: The last per-group read and the labels of the groups each batch since touched
        #: (``states._group_reads``); None when there is none, or after a merge.
        self._read: GroupRead | None = None
        self._fresh: list[np.ndarray] | None = None
        self._fresh_size = 0

    @property
    def groups(self) -> np.ndarray:
        """Every group held, sorted (folds the queue)."""
        self._consolidate()
        return self._groups

    @property
    def rows(self) -> np.ndarray:
        """Each group's row count, in the order of :attr:`groups` (folds the queue)."""
        self._consolidate()
        return self._rows

    def _some_labels(self) -> np.ndarray:
        """Labels held (some of them, without folding the queue): their kind is the state's."""
        if len(self._groups):
            return self._groups
        return next((t.labels for t in self._pending if len(t.labels)), EMPTY_LABELS)

    def _empty_table(self, dtype: np.dtype[Any]) -> _Table:
        e = np.empty(0)
        return _Table(
            self._groups,
            self._rows,
            np.zeros(0, np.int64),
            e,
            np.zeros(0, dtype),
            np.zeros(0, dtype),
            e.copy(),
            np.zeros(0, bool),
        )

    def _sketched(self, rows: np.ndarray) -> np.ndarray:
        if self.mapping is None:
            return np.zeros(len(rows), dtype=bool)
        result: np.ndarray = rows > self.max_exact
        return result

    @property
    def weighted(self) -> bool:
        return self._main.pos.dtype == np.float64 or any(
            t.pos.dtype == np.float64 for t in self._pending
        )

    # -- building ------------------------------------------------------------------------------

    def add(
        self,
        groups: np.ndarray,
        scores: np.ndarray,
        positive: np.ndarray,
        weights: np.ndarray | None,
    ) -> GroupedScores:
        """A new block: ``self`` plus a batch (validated columns). ``self`` does not change.

        The batch becomes a table of its own groups, queued: a group is bucketed here when the
        batch alone holds more than ``max_exact`` of its rows, and the fold of the queue
        buckets the entries of every group whose total passed it.
        """
        check_kinds(self._some_labels(), groups, "groups")
        check_sum("grouped scores", "i", float(self._total), len(groups))
        out = self._shallow()
        if weights is not None and not self.weighted:
            # Weights make every sum a float one: a kept read of integer sums may differ from
            # the float sums' in the last bits (past 2**53 pairs in a group).
            out._forget_read()
        out._total = self._total + len(groups)
        # Weights past 2**100 would make the bytes unreadable: checked against a running bound
        # of the weight held (exact sums added), recomputed only where it is unknown.
        added = float(len(groups)) if weights is None else float(np.sum(weights))
        held = self._held_bound
        if weights is not None:
            if held is None or held + added > WEIGHT_LIMIT:
                held = self._held()
            check_sum("sample_weight (grouped scores)", "f", held, added)
        out._held_bound = None if held is None else held + added
        # A batch of up to BATCH_SLICE rows is one table, canonical as it is; a longer one is
        # cut into pieces that sort in cache, and the fold merges their sorted tables.
        cut = len(groups) if len(groups) <= BATCH_SLICE else SLICE
        for a in range(0, len(groups), cut):
            w = None if weights is None else weights[a : a + cut]
            piece = groups[a : a + cut], scores[a : a + cut], positive[a : a + cut]
            out._pending.append(self._table_of(*piece, w))
            out._note_changed(out._pending[-1].labels)
        out._consolidate_if_large()
        return out

    def _table_of(
        self,
        groups: np.ndarray,
        scores: np.ndarray,
        positive: np.ndarray,
        weights: np.ndarray | None,
    ) -> _Table:
        """The entries of a batch, reduced and sorted, as a table of its own groups."""
        labels, code = unique_codes(groups)
        batch_rows = np.bincount(code, minlength=len(labels)).astype(np.int64)
        if weights is not None:
            keep = weights != 0
            if not keep.all():
                code, scores, positive, weights = (
                    code[keep],
                    scores[keep],
                    positive[keep],
                    weights[keep],
                )
        group_sketched = self._sketched(batch_rows)
        sketched = group_sketched[code]
        scores = scores + 0.0
        key = scores.copy()
        if sketched.any():
            assert self.mapping is not None
            key[sketched] = self.mapping.keys(scores[sketched])
        if weights is None:
            pos = positive.astype(np.int64)
            neg = 1 - pos
        else:
            pos = np.where(positive, weights, 0.0)
            neg = np.where(positive, 0.0, weights)
        g, key, pos, neg, value = _sort_reduce(code, key, [pos, neg], scores)
        return _Table(labels, batch_rows, g, key, pos, neg, value, group_sketched[g])

    def _consolidate_if_large(self) -> None:
        # Queued tables are folded in once they outgrow the main one, so a stream (or a chain
        # of merges) of m entries costs O(m log m) in all, not a full re-sort per step.
        if queue_full(sum(len(t.g) for t in self._pending), len(self._main.g), 4, 1 << 20):
            self._consolidate()

    def _shallow(self) -> GroupedScores:
        out = GroupedScores.__new__(GroupedScores)
        out.mapping, out.max_exact = self.mapping, self.max_exact
        out._groups, out._rows, out._total = self._groups, self._rows, self._total
        out._main, out._pending = self._main, list(self._pending)
        out._held_bound = self._held_bound
        out._read, out._fresh_size = self._read, self._fresh_size
        out._fresh = None if self._fresh is None else list(self._fresh)
        return out

    def _note_changed(self, labels: np.ndarray) -> None:
        """Record that the groups ``labels`` changed since the last read; forget that read
        once more labels changed than it holds groups (the next read is a full one anyway)."""
        if self._fresh is None or self._read is None:
            return
        self._fresh.append(labels)
        self._fresh_size += len(labels)
        if self._fresh_size > len(self._read[1]):
            self._forget_read()

    def _forget_read(self) -> None:
        self._read, self._fresh, self._fresh_size = None, None, 0

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.update(_read=None, _fresh=None, _fresh_size=0)  # (a read is never sent)
        return state

    # -- canonical form ------------------------------------------------------------------------

    def _consolidate(self) -> None:
        """Fold the queued tables into the main one (same logical contents, canonical form)."""
        if not self._pending:
            return
        if len(self._pending) == 1 and not len(self._main.labels):
            # One table and nothing held (a state built by one update of at most BATCH_SLICE
            # rows): the table is canonical already, as every queued table is (sorted by
            # group, then key, equal pairs folded, and its groups sketched by their rows).
            self._main = self._pending[0]
        else:
            self._main = fold_tables([self._main, *self._pending], self.mapping, self._sketched)
        self._groups, self._rows = self._main.labels, self._main.rows
        self._pending = []

    def table(self) -> _Table:
        """The canonical entries (sorted by group, then key)."""
        self._consolidate()
        return self._main

    def per_group(
        self, name: str, make: Callable[[_Table], tuple[np.ndarray, ...]]
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """``(groups, make(table))`` of the block as it is: ``make`` gives one array per group
        of a canonical table, each group's values from its own entries. Only the groups
        changed since the last read are computed again (``states._group_reads``)."""
        return read_groups(self, name, make)

    # -- merging -------------------------------------------------------------------------------

    def check_mergeable(self, other: Any) -> None:
        if not isinstance(other, GroupedScores) or (other.mapping, other.max_exact) != (
            self.mapping,
            self.max_exact,
        ):
            raise IncompatibleStateError("cannot merge grouped scores of different configs")
        mine, theirs = self._some_labels(), other._some_labels()
        if len(mine) and len(theirs) and ((mine.dtype.kind == "U") != (theirs.dtype.kind == "U")):
            raise IncompatibleStateError(
                "cannot merge a state of integer groups with one of string groups"
            )
        # Rows bound every count; weights must stay finite.
        check_sum("grouped scores", "i", float(self._total), float(other._total))
        if self.weighted or other.weighted:
            check_sum("grouped scores", "f", self._held(), other._held())

    def held_total(self) -> float:
        if not self.weighted:  # counts: every row adds 1 to one entry, so rows are the total
            return float(self._total)
        return max(float(self._total), self._held())

    def _check_total(self, others: list[Any]) -> None:
        # Pairs within the bound may still pass it together.
        parts = [self, *others]
        check_sum("grouped scores", "i", *(float(p._total) for p in parts))
        if any(p.weighted for p in parts):
            check_sum("grouped scores", "f", *(p._held() for p in parts))

    def _held(self) -> float:
        """Total weight, queue included, without folding it (reading never writes)."""
        parts = [self._main, *self._pending]
        return sum(held_total(t.pos) + held_total(t.neg) for t in parts)

    def merge(self, other: Any) -> None:
        self.check_mergeable(other)
        self._pending.append(other.table())  # its groups join this block's at the fold
        self._total += other._total
        self._held_bound = None
        self._forget_read()
        self._consolidate_if_large()

    def merge_many(self, others: list[Any]) -> None:
        """Fold many blocks at once: their tables are queued and canonicalised together (one
        k-way merge of sorted runs, when they outgrow the main table or at the next read)
        instead of one full re-sort per operand."""
        for other in others:
            self.check_mergeable(other)
        self._check_total(others)
        for other in others:
            self._pending.append(other.table())  # its groups join this block's at the fold
            self._total += other._total
        self._held_bound = None
        self._forget_read()
        self._consolidate_if_large()

    def join_many(self, others: list[Any]) -> None:
        """Fold blocks of groups disjoint from this block's and from each other's.

        The groups' entries are concatenated and put in group order by one stable sort of the
        group codes (each block's entries are already sorted within their groups): no entry is
        merged with another. Blocks sharing a group are merged as :meth:`merge_many` merges.
        """
        for other in others:
            self.check_mergeable(other)
        self._check_total(others)
        parts = [p for p in (self, *others) if len(p.groups)]
        if len(parts) < 2:
            self.merge_many(others)
            return
        labels = np.concatenate([p.groups for p in parts])
        order = np.argsort(labels, kind="stable")  # sorted runs: a linear merge (timsort)
        groups = labels[order]
        if (groups[1:] == groups[:-1]).any():
            self.merge_many(others)  # shared groups: their entries must be merged
            return
        where = np.empty(len(order), dtype=np.int64)
        where[order] = np.arange(len(order))
        tables = [p.table() for p in parts]
        starts = np.cumsum([0] + [len(p.groups) for p in parts])
        g = np.concatenate(
            [
                where[s : s + len(p.groups)][t.g]
                for p, s, t in zip(parts, starts, tables, strict=False)
            ]
        )
        by_group = np.argsort(g, kind="stable")
        dtype = np.result_type(*(t.pos.dtype for t in tables))
        # Every column is concatenated into this one buffer before its gather: a fresh
        # concatenation per column faulted in its pages each time (a joined state is as large
        # as its rows; 0.1-0.3 s of a cold join of 4M entries).
        scratch = np.empty(len(g) * 8, dtype=np.uint8)

        def column(name: str) -> np.ndarray:
            parts = [getattr(t, name) for t in tables]
            kind = np.result_type(*parts)
            joined = scratch[: len(g) * kind.itemsize].view(kind)
            np.concatenate(parts, out=joined)
            out: np.ndarray = joined.take(by_group)
            return out

        rows = np.concatenate([p.rows for p in parts])[order]
        self._groups, self._rows = groups, rows
        self._total = sum(p._total for p in parts)
        self._held_bound = None
        self._forget_read()
        self._main = _Table(
            groups,
            rows,
            g[by_group],
            column("key"),
            column("pos").astype(dtype, copy=False),
            column("neg").astype(dtype, copy=False),
            column("value"),
            column("bucketed"),
        )
        self._pending = []

    def split_groups(self, part_of: np.ndarray, parts: int) -> list[GroupedScores]:
        """Blocks holding the groups ``part_of`` assigns to each part (one index per group).

        One stable sort of the groups and one of the entries by part (counting sorts of small
        integers), then one gather per column: each part is a contiguous range of it, in group
        order. (A boolean selection per part made ``parts`` passes over every entry.)
        """
        t = self.table()
        # 16-bit parts: numpy's stable sort of them is a radix sort.
        part_of = np.asarray(part_of).astype(np.uint16 if parts <= 1 << 16 else np.intp)
        by_part = np.argsort(part_of, kind="stable")
        group_edges = np.searchsorted(part_of[by_part], np.arange(parts + 1)).tolist()
        rank = np.empty(len(part_of), dtype=np.int64)  # each group's index within its part
        for i in range(parts):
            a, b = group_edges[i], group_edges[i + 1]
            rank[by_part[a:b]] = np.arange(b - a)
        entry_part = part_of[t.g]
        order = np.argsort(entry_part, kind="stable")
        entry_edges = np.searchsorted(entry_part[order], np.arange(parts + 1)).tolist()
        g = rank[t.g[order]]
        columns = [c[order] for c in (t.key, t.pos, t.neg, t.value, t.bucketed)]
        groups, rows = self._groups[by_part], self._rows[by_part]
        out = []
        for i in range(parts):
            a, b = group_edges[i], group_edges[i + 1]
            lo, hi = entry_edges[i], entry_edges[i + 1]
            block = GroupedScores(self.mapping, self.max_exact)
            block._groups, block._rows = groups[a:b], rows[a:b]
            block._total = int(block._rows.sum())
            block._main = _Table(block._groups, block._rows, g[lo:hi], *(c[lo:hi] for c in columns))
            out.append(block)
        return out

    def copy(self) -> GroupedScores:
        return self._shallow()  # tables are never written in place: sharing them is safe

    def __deepcopy__(self, memo: dict[int, Any]) -> GroupedScores:
        return self.copy()  # arrays are never written in place, so sharing them is safe

    # -- wire ----------------------------------------------------------------------------------

    def to_wire(self) -> Any:
        """Schema 2 (0.8.0), written by
        :func:`~streammetrics.states._group_wire.grouped_to_wire`."""
        t = self.table()
        return grouped_to_wire(self._groups, self._rows, t)

    def from_wire(self, wire: Any) -> GroupedScores:
        table = checked_table(wire, self.mapping, self._sketched)
        out = GroupedScores(self.mapping, self.max_exact)
        out._groups, out._rows, out._total = table.labels, table.rows, int(table.rows.sum())
        out._main = table
        return out
