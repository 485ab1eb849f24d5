"""The slices of a score-bucket metric held as one table, for ``Sliced`` with many slices.

``Sliced(ROCAUC())`` over 100,000 slices spent most of an update on Python work per slice: the
held entries of every touched slice gathered into one array, then the merged arrays cut back into
one store per slice. A :class:`SlicePack` keeps the slices' entries in one table instead, sorted
by (slice, bucket), with each slice's row count: an update merges the batch's entries into it by
binary search (``merge_sorted``), with no work per slice, and ``ROCAUC`` scores every slice from
it at once. One ``ROCAUC`` per slice is made only when something asks for the slices themselves
(their bytes, a merge, ``sliced[key]``), and gives exactly the stores the per-slice fold gives.

A pack holds slices of one dtype: integer counts (unweighted batches) or float weights (every
slice weighted). A batch that would mix them, and any other metric, take the per-slice path.
Integer packs queue their batches' entries and fold the queue into the table when it outgrows
it (``queue_full``, as the sparse stores do), so an update costs about its own rows, not a pass
over the table; integer sums do not depend on the order of folding. Float packs fold every
batch at once, in the order the per-slice states add them (floats do depend on it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _codec
from .._codec import check_sum
from .._intervals import ap_intervals, normal_intervals, pairs
from ..states._bucket_stack import BucketStack, Held, commit_all, merge_sorted
from ..states._delong_rows import delong_rows
from ..states._fold import fold_equal, pushed, queue_full
from ..states._group_table import auc_of_runs
from ..states.score_tables import ap_of_rows, auc_of_rows
from ..states.stacked import blanks
from ._packing import slots

__all__ = ["PACK_MIN_SLICES", "READ_PACK_FROM", "READ_PACK_MIN_SLICES", "SlicePack"]

#: Tables of this many slices, or batches touching this many, are packed; below, one state per
#: slice is as fast (its dense tables cost nothing per slice at 100 slices: 27 against 13 M
#: rows/s packed) and the pack's whole-table merge pass would not pay for itself. Measured
#: crossing: about 500 slices (equal in 200k-row batches, packed 3x faster in 20k-row ones).
PACK_MIN_SLICES = 512

#: Slices held one state each (fewer than :data:`PACK_MIN_SLICES`) are read through a pack of
#: their states (:meth:`SlicePack.of_slices`) from this many, per read (:meth:`SlicePack.reads`):
#: the pack takes the tables of one length at once, where each state pays some 30 numpy calls,
#: but building it costs too. The first read of a loaded ``Sliced`` of 200k rows, pack against
#: states (0.8.26, unweighted / weighted; 0.8.25 made a single state's reads cheaper, so the
#: crossings moved up from about 100): ``ROCAUC`` values, states as fast or faster up to 450
#: slices (never packed: its unweighted values have ``ROCAUC._compute_many``); ``ROCAUC``
#: intervals, equal at about 300 / 400; ``AveragePrecision`` values about 300 / 380, its
#: intervals about 200 / 220 (``docs/benchmarks/uncertainty.md``).
READ_PACK_FROM: dict[tuple[str, ...], int] = {
    ("auc",): PACK_MIN_SLICES,
    ("delong", "auc"): 384,
    ("ap",): 320,
    ("ap", "totals"): 224,
}
#: The fewest slices any read is packed from.
READ_PACK_MIN_SLICES = min(READ_PACK_FROM.values())

Key = Any
#: The tables of one length are read as rows of one array this many entries at a time.
_ROW_ENTRIES = 1 << 20


class SlicePack:
    """Entries ``(cell, pos, neg, lo, hi)`` of every slice, ``cell = slice * grid + bucket``,
    sorted, and a queue of batches' entries not yet folded in; ``keys[i]`` names slice ``i``
    (arrival order), ``counts[i]`` its rows. Never changed in place: an update makes a new
    pack, and :meth:`settled` a new one with the queue folded."""

    def __init__(
        self,
        template: Any,
        keys: list[Key],
        index: dict[Key, int],
        counts: np.ndarray,
        totals: np.ndarray,
        entries: tuple[np.ndarray, ...],
        queue: tuple[tuple[np.ndarray, ...], ...] = (),
    ) -> None:
        self.template = template
        self.mapping = template.hist.mapping
        self.grid: int = self.mapping.size
        self.keys, self.index = keys, index
        self.counts, self.totals = counts, totals  # rows, and held weight, per slice
        self.cells, self.pos, self.neg, self.lo, self.hi = entries
        self.queue = queue
        #: :meth:`intervals` of each level asked (the pack never changes).
        self._intervals: dict[float, dict[Key, tuple[float, float]]] = {}
        self._reads: dict[str, tuple[np.ndarray, ...]] = {}

    def _entries(self) -> tuple[np.ndarray, ...]:
        return self.cells, self.pos, self.neg, self.lo, self.hi

    def settled(self) -> SlicePack:
        """This pack with its queue folded into the table (itself if the queue is empty)."""
        if not self.queue:
            return self
        return SlicePack(
            self.template,
            self.keys,
            self.index,
            self.counts,
            self.totals,
            _folded_runs([self._entries(), *self.queue]),
        )

    def __len__(self) -> int:
        return len(self.keys)

    def held_bound(self) -> float:
        """The largest row count or held weight of any slice (queued batches included: the
        counts and totals are kept as each batch arrives)."""
        return float(max(self.counts.max(initial=0), self.totals.max(initial=0.0)))

    @classmethod
    def of_slices(cls, template: Any, slices: dict[Key, Any]) -> SlicePack | None:
        """The pack of per-slice states (each ``template``'s class on its grid, nothing
        buffered, all of one count dtype), or None when they do not qualify."""
        mapping = getattr(getattr(template, "hist", None), "mapping", None)
        if mapping is None or mapping.size is None:
            return None
        kind = type(template)
        metrics = list(slices.values())
        for metric in metrics:
            h = metric.hist
            if type(metric) is not kind or metric._pending is not None or h._pending:
                return None
            if h.mapping is not mapping and h.mapping != mapping:
                return None
        held = Held(metrics, any(m.hist._pos.dtype.kind == "f" for m in metrics))
        if held.dtypes is not None:  # integer and float counts: not one pack
            return None
        keys = list(slices)
        counts = np.fromiter((m._count for m in metrics), np.int64, count=len(keys))
        totals = np.fromiter((m.hist.held_total() for m in metrics), np.float64, count=len(keys))
        # The counts' dtype is the pack's (an empty pack: integer, until a first batch sets it).
        pos, neg = held.pos.astype(held.wide, copy=False), held.neg.astype(held.wide, copy=False)
        entries = (held.group * mapping.size + held.keys, pos, neg, held.lo, held.hi)
        return cls(template, keys, {k: i for i, k in enumerate(keys)}, counts, totals, entries)

    def folded(self, stack: BucketStack, codes: np.ndarray, batch_keys: list[Key]) -> Any:
        """A new pack with the batch in (row ``i`` to slice ``batch_keys[codes[i]]``), or None
        when the batch's count dtype differs from the pack's (the per-slice path then runs).
        Raises ``CountOverflowError`` before anything is made if a slice would pass its bound.
        """
        weighted = stack.sw is not None
        if len(self.keys) and weighted != (self.pos.dtype.kind == "f"):
            return None  # an empty pack takes the first batch's dtype
        keys, index, slot = slots(self.keys, self.index, batch_keys)
        size = len(keys)
        counts = np.zeros(size, dtype=np.int64)
        counts[: len(self.counts)] = self.counts
        counts += np.bincount(slot[codes], minlength=size)  # zero-weight rows count too
        kept = codes if stack._kept is None else codes[stack._kept]
        cells, pos, neg, lo, hi = stack.cell_entries(slot[kept])
        batch = np.bincount(cells // self.grid, weights=pos + neg, minlength=size)
        totals = np.zeros(size)
        totals[: len(self.totals)] = self.totals
        totals += batch
        check_sum("score buckets", "f" if weighted else "i", float(totals.max(initial=0.0)))
        batch_entries = (cells, pos, neg, lo, hi)
        if not weighted:  # integer counts: queue the batch until the queue outgrows the table
            queue = pushed(self.queue, batch_entries, _folded_runs)
            if not queue_full(sum(len(q[0]) for q in queue), len(self.cells)):
                return SlicePack(self.template, keys, index, counts, totals, self._entries(), queue)
            entries = _folded_runs([self._entries(), *queue])
        elif len(self.cells):  # weights: held + batch, as each slice's own merge adds them
            held = (self.pos.copy(), self.neg.copy(), self.lo, self.hi)
            cells, (pos, neg, lo, hi) = merge_sorted(self.cells, held, cells, (pos, neg, lo, hi))
            entries = (cells, pos, neg, lo, hi)
        else:
            entries = batch_entries
        return SlicePack(self.template, keys, index, counts, totals, entries)

    def _edges(self) -> np.ndarray:
        """Where each slice's entries start in the table (and, last, where they end)."""
        assert not self.queue, "read a settled() pack"
        bounds = np.arange(len(self.keys) + 1, dtype=np.int64) * self.grid
        out: np.ndarray = np.searchsorted(self.cells, bounds)
        return out

    def materialize(self) -> dict[Key, Any]:
        """One state per slice, in arrival order: the stores the per-slice fold makes (views of
        this table's arrays, which are never written)."""
        metrics = blanks(self.template, len(self.keys))
        edges = self._edges()
        first = np.repeat(np.arange(len(self.keys), dtype=np.int64) * self.grid, np.diff(edges))
        entries = (self.cells - first, self.pos, self.neg, self.lo, self.hi)
        commit_all(metrics, self.mapping, edges.tolist(), self.counts.tolist(), entries)
        return dict(zip(self.keys, metrics, strict=True))

    def state(self, key: Key) -> Any:
        """The state of one slice (``KeyError`` if there is none), made alone: reading one
        slice does not make the others."""
        assert not self.queue, "read a settled() pack"
        j = self.index[key]
        a, b = np.searchsorted(self.cells, [j * self.grid, (j + 1) * self.grid]).tolist()
        entries = (self.cells[a:b] - j * self.grid, *(c[a:b] for c in self._entries()[1:]))
        metrics = blanks(self.template, 1)
        commit_all(metrics, self.mapping, [0, b - a], [int(self.counts[j])], entries)
        return metrics[0]

    def wire_states(self) -> list[tuple[Key, Any]]:
        """``(key, state)`` of every slice, sorted by key, each state in canonical form: what
        each slice's own state writes (``count`` and a store of ``lo``, ``hi``, ``pos``,
        ``neg``, as ``ScoreBuckets.to_wire`` on a grid), built from the table without making
        the states (``SliceTable.to_wire`` wraps them in their envelopes)."""
        edges = self._edges().tolist()
        counts = self.counts.tolist()
        lo, hi, pos, neg = self.lo, self.hi, self.pos, self.neg
        array = _codec.canonical_array
        out: list[tuple[Key, Any]] = []
        for j in sorted(range(len(self.keys)), key=self.keys.__getitem__):
            a, b = edges[j], edges[j + 1]
            # canonical({"count": .., "hist": {"lo": .., "hi": .., "pos": .., "neg": ..}}),
            # written in its sorted order (the walk would cost as much as the arrays).
            store = {
                "hi": array(hi[a:b]),
                "lo": array(lo[a:b]),
                "neg": array(neg[a:b]),
                "pos": array(pos[a:b]),
            }
            out.append((self.keys[j], {"count": counts[j], "hist": store}))
        return out

    def computed(self) -> dict[Key, float] | None:
        """``{key: compute()}`` of every slice at once, equal to the bit to each slice's: a
        plain ``ROCAUC`` by ``auc_of_runs`` (integer counts) or ``auc_of_rows`` (weights), an
        ``AveragePrecision`` by ``ap_of_rows``; None for the others."""
        from ..classification.scores import ROCAUC, AveragePrecision

        kind = type(self.template)
        if kind is AveragePrecision:
            values = self._rows("ap")[0]
        elif kind is ROCAUC and self.pos.dtype.kind == "f":
            values = self._rows("auc")[0]
        elif kind is ROCAUC:
            edges = self._edges()
            found = auc_of_runs(self.pos, self.neg, edges[:-1], edges[1:])
            if found is None:
                return None
            values = found
        else:
            return None
        return dict(zip(self.keys, values.tolist(), strict=True))

    def intervals(self, level: float) -> dict[Key, tuple[float, float]] | None:
        """``{key: interval(level)}`` of every slice (``level`` already checked), equal to the
        bit: for a plain ``ROCAUC``, ``delong_rows`` widened by ``auc_of_rows``'s bound; for an
        ``AveragePrecision``, the logit intervals of ``ap_of_rows``'s values (the functions
        each state calls on its one table). None for other metrics. Kept per level: a pack
        never changes (the states cached theirs too)."""
        from ..classification.scores import ROCAUC, AveragePrecision

        kind = type(self.template)
        if kind is not AveragePrecision and kind is not ROCAUC:
            return None
        known = self._intervals.get(level)
        if known is not None:
            return known
        if kind is AveragePrecision:
            ap, bound, big_p, big_n = self._rows("ap")
            low, high = ap_intervals(ap, bound, big_p, big_n, level)
        else:
            auc, var = self._rows("delong")
            se = np.sqrt(np.where(0.0 > var, 0.0, var))  # math.sqrt(max(var, 0.0))
            low, high = normal_intervals(auc, se, level, (0.0, 1.0), self._rows("auc")[1])
        out = dict(zip(self.keys, pairs(low, high), strict=True))
        self._intervals[level] = out
        return out

    @staticmethod
    def reads(template: Any, read: str) -> tuple[str, ...] | None:
        """The values (``ScoreBuckets.derived`` names) a ``template``-like state reads for
        ``read`` (``"compute"`` or ``"interval"``), which :meth:`keep_reads` can give it; None
        for a metric whose reads the pack does not make."""
        from ..classification.scores import ROCAUC, AveragePrecision

        kind = type(template)
        if kind is AveragePrecision:
            return ("ap",) if read == "compute" else ("ap", "totals")
        if kind is ROCAUC:
            return ("auc",) if read == "compute" else ("delong", "auc")
        return None

    def keep_reads(self, states: list[Any]) -> None:
        """Give ``states`` (this pack's slices, in its order: the states it was made of) what
        its reads made, as each keeps its own reads (``ScoreBuckets.derived``), so that their
        next read finds them: the same floats each would make (``_rows``). Slices of no rows
        answer without reading, and are left alone."""
        for what, columns in self._reads.items():
            lists = [c.tolist() for c in columns]
            for i, metric in enumerate(states):
                if not metric._count:
                    continue
                hist = metric.hist
                if what == "ap":
                    hist.keep("ap", (lists[0][i], lists[1][i]))
                    hist.keep("totals", (lists[2][i], lists[3][i]))
                else:  # "auc", "delong": (value, bound) and (AUC, variance)
                    hist.keep(what, (lists[0][i], lists[1][i]))

    def _rows(self, what: str) -> tuple[np.ndarray, ...]:
        """What every slice's state reads from its table, the tables of each number of entries
        read as the rows of one array (at most ``_ROW_ENTRIES`` entries at a time), nan for a
        slice of no rows: ``"ap"``, ``ap_of_rows``'s values and bounds and the positive and
        negative weights; ``"auc"``, ``auc_of_rows``'s values and bounds; ``"delong"``,
        ``delong_rows``'s AUC and variance. Kept: a pack never changes."""
        known = self._reads.get(what)
        if known is not None:
            return known
        edges = self._edges()
        lengths = np.diff(edges)
        many = len(lengths)
        width = 4 if what == "ap" else 2
        out = [np.full(many, np.nan) for _ in range(width)]
        order = np.argsort(lengths, kind="stable")
        sorted_lengths = lengths[order]
        for size in np.unique(lengths).tolist():
            a, b = np.searchsorted(sorted_lengths, [size, size + 1]).tolist()
            step = max(1, _ROW_ENTRIES // max(size, 1))
            for lo in range(a, b, step):
                which = order[lo : min(lo + step, b)]
                at = edges[which][:, None] + np.arange(size)
                pos, neg = self.pos[at], self.neg[at]
                if what == "ap":
                    got: tuple[np.ndarray, ...] = ap_of_rows(self.lo[at], self.hi[at], pos, neg)
                    got = (*got, pos.sum(axis=1), neg.sum(axis=1))  # as float(h.pos.sum())
                elif what == "auc":
                    got = auc_of_rows(self.lo[at], self.hi[at], pos, neg)
                else:
                    got = delong_rows(pos, neg)
                for column, values in zip(out, got, strict=True):
                    column[which] = values
        empty = self.counts == 0
        for column in out:
            column[empty] = np.nan
        self._reads[what] = tuple(out)
        return self._reads[what]


def _folded_runs(runs: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """One table of entries from sorted runs of integer-count entries (counts added, extremes
    kept): one stable sort of their concatenation (timsort merges the runs)."""
    runs = [r for r in runs if len(r[0])] or runs[:1]
    if len(runs) == 1:
        return runs[0]  # already one sorted run of distinct cells
    (cells,), (pos, neg), (lo,), (hi,) = fold_equal(
        [np.concatenate([r[0] for r in runs])],
        [np.concatenate([r[1] for r in runs]), np.concatenate([r[2] for r in runs])],
        [np.concatenate([r[3] for r in runs])],
        [np.concatenate([r[4] for r in runs])],
    )
    return cells, pos, neg, lo, hi
