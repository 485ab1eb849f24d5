"""The slices of a confusion metric held as one table, for ``Sliced`` with many slices.

``Sliced(Accuracy())`` over 100,000 slices ran one update of a copy of the metric per touched
slice (tens of microseconds each: 0.03 M rows/s). A :class:`ConfusionPack` keeps every slice's
counts in one table instead: the filled cells of all slices as sorted codes
``(slice * L + true) * L + predicted`` over one label set of ``L`` labels (the union of every
slice's), with their counts, and which labels each slice has seen as sorted codes
``slice * L + label`` (a slice's own label set decides its table's shape and its bytes). An
update counts the batch's distinct (slice, true, predicted) cells with one sort and queues them;
the queue is folded into the table once it outgrows it (``queue_full``, as the sparse stores
do), so an update costs about its own rows. ``Accuracy``, and precision, recall and F-beta
averaged over the labels each slice has seen, are scored for every slice from the table's
margins at once (``_compute_margins``); one state per slice is made only when something asks for
the slices themselves (their bytes, a merge, an interval, ``sliced[key]``), and it is exactly
the state the per-slice update makes. This module builds the pack and folds batches into it;
its reads (the slices' states, their bytes, values and intervals) are its base class,
:class:`~streammetrics.wrappers._confusion_reads.ConfusionReads`.

Weighted rows (0.8.20) make the table's counts float64: each batch is then folded at once,
its weights summed per cell in row order and added to the held counts, the additions each
slice's own update makes (so the counts are its bits; the squared weights agree to rounding).
Slices never weighted keep integer tables on the wire. Weights are packed only on label sets
small enough for dense tables (fewer than 256 labels); there, and for a metric that refuses
some label sets (``average="binary"``), the per-slice path runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._codec import check_sum
from ..states._cells import may_be_sparse
from ..states._fold import pushed, queue_full
from ..states.stacked import ConfusionStack
from ._confusion_cells import (
    concatenated,
    counted_cells,
    folded_runs,
    recoded,
    weighted_fold,
)
from ._confusion_reads import ConfusionReads
from ._packing import slots

__all__ = ["CONFUSION_PACK_MIN_SLICES", "ConfusionPack"]

#: Confusion tables are packed from the first slice: one sort of the batch's cells beats one
#: update per slice at any number of slices (1M rows in 200k-row batches: 55 against 28 M rows/s
#: at 2 slices, 51 against 9.6 M at 100; 10k-row batches at 100 slices: 32 against 2.0 M).
CONFUSION_PACK_MIN_SLICES = 1

Key = Any
#: Cell codes stay below this (int64 with room): a larger table of slices x labels**2 is not
#: packed.
_CODE_LIMIT = 1 << 62


def qualifies(template: Any) -> bool:
    """Whether slices of ``template`` can be packed: a confusion metric with the shared update,
    whose every label set is valid."""
    from ..classification._confusion_base import _ConfusionMetric

    return (
        isinstance(template, _ConfusionMetric)
        and type(template).update is _ConfusionMetric.update
        and template._any_labels()
    )


class ConfusionPack(ConfusionReads):
    """Every slice's counts as one table, sorted, and a queue of batches not yet folded in.

    ``labels`` is the union of the slices' label sets (the fixed labels, if configured);
    ``cells``/``values`` the filled cells ``(slice * L + true) * L + predicted`` and their
    counts; ``present`` the codes ``slice * L + label`` of each slice's labels (None with fixed
    labels: every slice has them all). ``keys[i]`` names slice ``i`` (arrival order),
    ``counts[i]`` its rows and ``weight_sq[i]`` its sum of squared weights. Never changed in
    place: an update makes a new pack, and :meth:`settled` a new one with the queue folded.
    """

    def __init__(
        self,
        template: Any,
        keys: list[Key],
        index: dict[Key, int],
        counts: np.ndarray,
        weight_sq: np.ndarray,
        labels: np.ndarray,
        table: tuple[np.ndarray, np.ndarray, np.ndarray | None],
        queue: tuple[tuple[np.ndarray, np.ndarray, np.ndarray | None], ...] = (),
        floaty: np.ndarray | None = None,
    ) -> None:
        self.template = template
        self.keys, self.index = keys, index
        self.counts, self.weight_sq = counts, weight_sq
        self.labels = labels
        self.cells, self.values, self.present = table
        self.queue = queue
        #: None: integer counts (``values`` int64). Else ``values`` are float64 and this says
        #: which slices hold weights (float tables; the others write integer ones).
        self.floaty = floaty

    def _table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        return self.cells, self.values, self.present

    def __len__(self) -> int:
        return len(self.keys)

    def held_bound(self) -> float:
        """A bound above every slice's row count and cell total: the largest count, or every
        slice's cells together, queued batches included."""
        cells = sum(
            float(values.sum(dtype=np.float64)) for _, values, _ in (self._table(), *self.queue)
        )
        return max(float(self.counts.max(initial=0)), cells)

    def settled(self) -> ConfusionPack:
        """This pack with its queue folded into the table (itself if the queue is empty)."""
        if not self.queue:
            return self
        table = folded_runs([self._table(), *self.queue])
        return self._with(self.keys, self.index, self.counts, self.weight_sq, table, ())

    def _with(
        self,
        keys: list[Key],
        index: dict[Key, int],
        counts: np.ndarray,
        weight_sq: np.ndarray,
        table: tuple[np.ndarray, np.ndarray, np.ndarray | None],
        queue: tuple[tuple[np.ndarray, np.ndarray, np.ndarray | None], ...],
        labels: np.ndarray | None = None,
        floaty: np.ndarray | None = None,
    ) -> ConfusionPack:
        labels = self.labels if labels is None else labels
        return ConfusionPack(
            self.template, keys, index, counts, weight_sq, labels, table, queue, floaty
        )

    # -- building ----------------------------------------------------------------------------

    @classmethod
    def of_slices(cls, template: Any, slices: dict[Key, Any]) -> ConfusionPack | None:
        """The pack of per-slice states (``template``'s class, nothing buffered; weighted
        (float) counts only on label sets small enough for dense tables), or None when they do
        not qualify."""
        if not qualifies(template):
            return None
        kind, keeps_sq = type(template), template._keeps_weight_sq
        metrics = list(slices.values())
        for m in metrics:
            if type(m) is not kind or m._pending is not None:
                return None
            if m.counts.dtype not in (np.int64, np.float64):
                return None
        floats = [m.counts.dtype == np.float64 for m in metrics]
        if len({m.counts.rows.dtype.kind for m in metrics if len(m.counts.rows)}) > 1:
            return None  # integer and string labels in different slices: not one label set
        fixed = template.counts.fixed
        labels = template.counts.rows
        if not fixed and metrics:
            labels = np.unique(np.concatenate([m.counts.rows for m in metrics]))
        size = len(labels)
        if len(metrics) * size * size >= _CODE_LIMIT:
            return None
        if any(floats) and may_be_sparse(size * size):
            return None
        cells, values, present = [], [], []
        for s, m in enumerate(metrics):
            block = m.counts
            at = np.searchsorted(labels, block.rows)  # the slice's labels in the union
            r, c, v = block.filled()
            cells.append((s * size + at[r]) * size + at[c])
            values.append(v)
            present.append(s * size + at)
        keys = list(slices)
        counts = np.fromiter((m._count for m in metrics), np.int64, count=len(keys))
        if keeps_sq:
            weight_sq = np.fromiter((m.weight_sq for m in metrics), np.float64, count=len(keys))
        else:
            weight_sq = np.zeros(len(keys))
        dtype = np.float64 if any(floats) else np.int64
        table = (
            concatenated(cells, np.int64),
            concatenated(values, dtype),
            None if fixed else concatenated(present, np.int64),
        )
        index = {k: i for i, k in enumerate(keys)}
        floaty = np.array(floats, dtype=bool) if any(floats) else None
        return cls(template, keys, index, counts, weight_sq, labels, table, (), floaty)

    def folded(self, stack: ConfusionStack, codes: np.ndarray, batch_keys: list[Key]) -> Any:
        """A new pack with the batch in (row ``i`` to slice ``batch_keys[codes[i]]``), or None
        when the table would grow too large to code, or hold weights on a label set large
        enough for sparse tables, or pass a weight bound (the per-slice path then runs, and
        refuses what it must). Raises ``CountOverflowError`` before anything is made if a
        slice's row count would pass its bound."""
        labels, table, queue = self.labels, self._table(), self.queue
        if len(labels) and labels.dtype.kind != stack.labels.dtype.kind:
            return None  # string labels in some slices, integers in others
        if len(stack.labels) != len(labels) or not np.array_equal(stack.labels, labels):
            labels = np.union1d(labels, stack.labels) if len(labels) else stack.labels
        size = len(labels)
        keys, index, slot = slots(self.keys, self.index, batch_keys)
        if len(keys) * size * size >= _CODE_LIMIT:
            return None
        weighted = stack.sw is not None or self.floaty is not None
        if weighted and may_be_sparse(size * size):
            return None
        if len(self.labels) and size != len(self.labels):  # every code moves to the new labels
            at = np.searchsorted(labels, self.labels)
            table = recoded(table, at, len(self.labels), size)
            queue = tuple(recoded(q, at, len(self.labels), size) for q in queue)
        row_slot = slot[codes]
        counts = np.zeros(len(keys), dtype=np.int64)
        counts[: len(self.counts)] = self.counts
        batch = np.bincount(row_slot, minlength=len(keys))
        counts += batch
        check_sum("contingency counts", "i", float(counts.max(initial=0)))
        weight_sq = np.zeros(len(keys))
        weight_sq[: len(self.weight_sq)] = self.weight_sq
        if self.template._keeps_weight_sq:
            # An unweighted row adds 1.0, as each slice's update adds n; a weighted one w**2
            # (summed per slice in row order: each slice's own update sums its rows' w @ w,
            # so the two agree to rounding).
            sw = stack.sw
            weight_sq += batch if sw is None else np.bincount(row_slot, sw * sw, len(keys))
        at = np.searchsorted(labels, stack.labels)
        cell = (row_slot * size + at[stack.true_codes]) * size + at[stack.pred_codes]
        if weighted:
            folded = weighted_fold(self.floaty, table, queue, cell, stack.sw, size, len(keys))
            if folded is None:
                return None
            table, floaty = folded
            if stack.sw is not None:
                floaty[slot] = True  # every slice the batch touched now holds weights
            return self._with(keys, index, counts, weight_sq, table, (), labels, floaty)
        run = counted_cells(cell, len(keys), size, table[2] is not None)
        queue = pushed(queue, run, folded_runs)
        if queue_full(sum(len(q[0]) for q in queue), len(table[0])):
            table, queue = folded_runs([table, *queue]), ()
        return self._with(keys, index, counts, weight_sq, table, queue, labels)
