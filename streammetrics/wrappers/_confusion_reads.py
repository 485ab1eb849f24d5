"""The reads of :class:`~streammetrics.wrappers._confusion_pack.ConfusionPack`: the slices'
states, their wire form, values and intervals, all from its settled table.

The pack's filled cells are coded ``(slice * L + true) * L + predicted`` over the union of the
slices' ``L`` labels; a slice's own table is laid out on its own labels (the codes
``slice * L + label`` in ``present``). :class:`ConfusionReads` finds every cell's place in its
slice's table at once, and from there builds the slices' states (exactly those the per-slice
updates make), writes their canonical wire form without making them, and scores every slice from the
table's margins or from each width's dense tables stacked, making a state only for the few
slices neither answers for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .. import _codec
from ..states._cells import may_be_sparse
from ..states.contingency import ContingencyCounts
from ..states.stacked import blanks

__all__ = ["ConfusionReads"]

Key = Any
#: The cells of dense tables stacked at a time to be scored together (32 MB of float64).
_STACK_CELLS = 1 << 22


class ConfusionReads:
    """The reads of a ``ConfusionPack`` (its base class), from its settled table: the pack
    holds the fields below (see ``ConfusionPack``), and its queue must be empty
    (``ConfusionPack.settled``)."""

    template: Any
    keys: list[Key]
    index: dict[Key, int]
    counts: np.ndarray
    weight_sq: np.ndarray
    labels: np.ndarray
    cells: np.ndarray
    values: np.ndarray
    present: np.ndarray | None
    queue: tuple[tuple[np.ndarray, np.ndarray, np.ndarray | None], ...]
    floaty: np.ndarray | None

    def _slice_states(self, which: np.ndarray) -> list[Any]:
        """The states of slices ``which`` (sorted indices): the blocks each slice's own
        updates build, and its row count and squared weights.

        Each cell's code in its slice's own table (the positions of its labels among the
        slice's) is computed for every cell at once; the loop per slice only cuts and commits.
        """
        assert not self.queue, "read a settled() pack"
        size = len(self.labels)
        template = self.template
        bounds = np.stack((which, which + 1))
        cell_edges = np.searchsorted(self.cells, bounds * size * size)
        a_all, b_all = cell_edges[0].tolist(), cell_edges[1].tolist()
        # The selected slices' cells (all of them when every slice is asked for).
        if len(which) == len(self.keys):
            picked = np.arange(len(self.cells))
        else:
            picked = np.concatenate(
                [np.arange(a, b) for a, b in zip(a_all, b_all, strict=True)] or [np.empty(0, int)]
            )
        cells = self.cells[picked]
        slot, rest = np.divmod(cells, size * size)
        true, pred = np.divmod(rest, size)
        label_lo: list[int] = []  # where each slice's labels start and end in ``present``
        label_hi: list[int] = []
        if self.present is None:  # every slice holds every label: codes as they are
            local_all, widths = rest, np.full(len(which), size)
        else:
            label_edges = np.searchsorted(self.present, bounds * size)
            label_lo, label_hi = label_edges[0].tolist(), label_edges[1].tolist()
            widths = label_edges[1] - label_edges[0]
            first = np.searchsorted(self.present, slot * size)
            at_true = np.searchsorted(self.present, slot * size + true) - first
            at_pred = np.searchsorted(self.present, slot * size + pred) - first
            width = np.searchsorted(self.present, (slot + 1) * size) - first
            local_all = at_true * width + at_pred
            own_labels = self.present % size
        metrics = blanks(template, len(which))
        keeps_sq = template._keeps_weight_sq
        base = template.counts
        offset = 0
        for j, (s, metric) in enumerate(zip(which.tolist(), metrics, strict=True)):
            a, b = a_all[j], b_all[j]
            local = local_all[offset : offset + b - a]
            offset += b - a
            if self.present is None:
                rows = self.labels
            else:
                rows = self.labels[own_labels[label_lo[j] : label_hi[j]]]
            width_j = int(widths[j])
            dtype = np.float64 if self.floaty is not None and self.floaty[s] else np.int64
            block = ContingencyCounts.__new__(ContingencyCounts)
            block.shared, block.fixed = base.shared, base.fixed
            block.rows = block.cols = rows
            if may_be_sparse(width_j * width_j):  # the form depends on the filled cells
                block._set_sparse(local, self.values[a:b].astype(dtype), None)
                block._settle()
            else:  # small tables are dense whatever their fill
                table = np.zeros(width_j * width_j, dtype=dtype)
                table[local] = self.values[a:b]
                block._set_dense(table.reshape(width_j, width_j), None)
            n = int(self.counts[s])
            if keeps_sq:
                metric._commit(n, counts=block, weight_sq=float(self.weight_sq[s]))
            else:
                metric._commit(n, counts=block)
        return metrics

    def _layout(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(widths, label_start, slot, at_true, at_pred)``: each slice's number of labels and
        where they start in ``present``; each cell's slice and the positions of its labels among
        its slice's own (its row and column in the slice's table)."""
        many, size = len(self.keys), len(self.labels)
        slot, rest = np.divmod(self.cells, size * size)
        true, pred = np.divmod(rest, size)
        if self.present is None:  # every slice has every label: codes as they are
            widths = np.full(many, size, dtype=np.int64)
            return widths, np.arange(many, dtype=np.int64) * size, slot, true, pred
        edges = np.searchsorted(self.present, np.arange(many + 1) * size)
        widths, label_start = np.diff(edges), edges[:-1]
        first = label_start[slot]
        at_true = np.searchsorted(self.present, slot * size + true) - first
        at_pred = np.searchsorted(self.present, slot * size + pred) - first
        return widths, label_start, slot, at_true, at_pred

    def _stacks(self, wanted: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """``(which, stack)``: wanted slices ``which`` (sorted indices; ``wanted`` a mask over
        the slices) of one width ``L`` whose tables are dense, and their tables as a float64
        ``(len(which), L, L)`` stack, at most ``_STACK_CELLS`` cells at a time. Slices whose
        tables may take the sparse form are in none (their states answer for them)."""
        assert not self.queue, "read a settled() pack"
        widths, _, slot, at_true, at_pred = self._layout()
        mine = np.flatnonzero(wanted[slot])
        order = mine[np.argsort(widths[slot[mine]], kind="stable")]  # by width, then slice
        sorted_width = widths[slot[order]]
        for w in np.unique(widths[wanted]).tolist():
            if w == 0 or may_be_sparse(w * w):
                continue
            group = np.flatnonzero((widths == w) & wanted)
            a, b = np.searchsorted(sorted_width, [w, w + 1]).tolist()
            cells = order[a:b]
            rank = np.searchsorted(group, slot[cells])  # each cell's slice within the group
            local = at_true[cells] * w + at_pred[cells]
            values = self.values[cells]
            step = max(1, _STACK_CELLS // (w * w))
            for lo in range(0, len(group), step):
                hi = min(lo + step, len(group))
                c0, c1 = np.searchsorted(rank, [lo, hi]).tolist()
                stack = np.zeros((hi - lo, w * w))
                stack[rank[c0:c1] - lo, local[c0:c1]] = values[c0:c1]
                yield group[lo:hi], stack.reshape(hi - lo, w, w)

    def _by_tables(
        self,
        score: Callable[[np.ndarray, np.ndarray], list[Any] | None],
        alone: str,
        *args: Any,
        known: list[Any] | None = None,
    ) -> list[Any] | None:
        """Every slice's answer: ``known``'s entries that are not None, then ``score(which,
        stack)`` over :meth:`_stacks` of the others (a list, None where a slice's own state
        must answer), then each remaining slice's made state's method ``alone`` (called with
        ``args``). None when nothing is known and ``score`` offers none (it answers None)."""
        out: list[Any] = [None] * len(self.keys) if known is None else known
        wanted = np.fromiter((v is None for v in out), dtype=bool, count=len(out))
        if not wanted.any():
            return out  # (the margins answered for every slice)
        for which, stack in self._stacks(wanted):
            got = score(which, stack)
            if got is None:
                if known is None:
                    return None
                break  # the metric offers none: the states answer
            for j, value in zip(which.tolist(), got, strict=True):
                out[j] = value
        rest = np.array([j for j, v in enumerate(out) if v is None], dtype=np.int64)
        for j, state in zip(rest.tolist(), self._slice_states(rest), strict=True):
            out[j] = getattr(state, alone)(*args)
        return out

    def wire_states(self) -> list[tuple[Key, Any]] | None:
        """``(key, state)`` of every slice, sorted by key, each state in canonical form: what
        each slice's own state writes (its row count, its labels and dense table, its squared
        weights), built from the table without making the states; None when some slice's
        table is large enough to take the sparse form (the states then write it)."""
        assert not self.queue, "read a settled() pack"
        many = len(self.keys)
        widths, label_start, slot, at_true, at_pred = self._layout()
        if self.present is None:
            own = np.tile(self.labels, many)
        else:
            own = self.labels[self.present % len(self.labels)]
        if many and may_be_sparse(int(widths.max()) ** 2):
            return None
        areas = widths * widths
        table_start = np.cumsum(areas) - areas
        tables = np.zeros(int(areas.sum()), dtype=self.values.dtype)
        tables[table_start[slot] + at_true * widths[slot] + at_pred] = self.values
        keeps_sq, text = self.template._keeps_weight_sq, own.dtype.kind == "U"
        floaty = [False] * many if self.floaty is None else self.floaty.tolist()
        array = _codec.canonical_array
        counts, weight_sq = self.counts.tolist(), self.weight_sq.tolist()
        w_all, l_all, t_all = widths.tolist(), label_start.tolist(), table_start.tolist()
        out: list[tuple[Key, Any]] = []
        for j in sorted(range(many), key=self.keys.__getitem__):
            w, a, b = w_all[j], l_all[j], t_all[j]
            rows = own[a : a + w]
            cut = tables[b : b + w * w].reshape(w, w)
            if self.floaty is not None and not floaty[j]:
                cut = cut.astype(np.int64)  # a slice without weights keeps integer counts
            # canonical({"count": .., "counts": {"rows": .., "table": ..}, "weight_sq": ..}),
            # in its sorted order (labels_to_wire: strings as a list, integers as int64)
            block = {
                "rows": rows.tolist() if text else array(rows.astype(np.int64, copy=False)),
                "table": array(cut),
            }
            state: dict[str, Any] = {"count": counts[j], "counts": block}
            if keeps_sq:
                state["weight_sq"] = weight_sq[j]
            out.append((self.keys[j], state))
        return out

    def materialize(self) -> dict[Key, Any]:
        """One state per slice, in arrival order: the states the per-slice updates make."""
        metrics = self._slice_states(np.arange(len(self.keys), dtype=np.int64))
        return dict(zip(self.keys, metrics, strict=True))

    def state(self, key: Key) -> Any:
        """The state of one slice (``KeyError`` if there is none), made alone."""
        return self._slice_states(np.array([self.index[key]], dtype=np.int64))[0]

    def computed(self) -> dict[Key, Any] | None:
        """``{key: compute()}`` of every slice at once, equal to the bit to each slice's
        ``compute()``: whole counts from the table's margins where the metric offers that (its
        ``_compute_margins``), weighted ones, and the slices the margins leave, from each
        width's dense tables stacked (its ``_compute_tables``: the margins would add float
        counts in another order than a slice's own table does); the few slices both leave are
        made and asked. None when the metric offers neither."""
        assert not self.queue, "read a settled() pack"
        template = self.template
        known = None
        if self.floaty is None:
            tp, true, pred, edges = self._margins()
            known = template._compute_margins(tp, true, pred, edges)
        values = self._by_tables(
            lambda _, stack: template._compute_tables(stack), "compute", known=known
        )
        return None if values is None else dict(zip(self.keys, values, strict=True))

    def intervals(self, level: float) -> dict[Key, tuple[float, float]] | None:
        """``{key: interval(level)}`` of every slice at once, equal to the bit to each slice's
        own: from the table's margins where the metric offers that (``_interval_margins``,
        whole counts), else from each width's dense tables stacked (``_interval_tables``: the
        delta method of every slice at once); None when the metric offers neither."""
        assert not self.queue, "read a settled() pack"
        template = self.template
        if self.floaty is None:
            tp, true, pred, edges = self._margins()
            out = template._interval_margins(tp, true, pred, edges, self.weight_sq, level)
            if out is not None:
                return dict(zip(self.keys, out, strict=True))

        def score(which: np.ndarray, stack: np.ndarray) -> list[Any] | None:
            return template._interval_tables(  # type: ignore[no-any-return]
                stack, self.counts[which], self.weight_sq[which], level
            )

        got = self._by_tables(score, "interval", level)
        return None if got is None else dict(zip(self.keys, got, strict=True))

    def _margins(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
        """Each slice's true positives, true and predicted totals over its own labels (float64,
        slice ``i``'s at ``edges[i]:edges[i + 1]``)."""
        size, many = len(self.labels), len(self.keys)
        s, rest = np.divmod(self.cells, size * size)
        true, pred = np.divmod(rest, size)
        weights = self.values.astype(np.float64)
        if self.present is None:  # every slice has every label
            places, at_true, at_pred = many * size, s * size + true, s * size + pred
            edges = np.arange(many + 1) * size
        else:
            places = len(self.present)
            at_true = np.searchsorted(self.present, s * size + true)
            at_pred = np.searchsorted(self.present, s * size + pred)
            edges = np.searchsorted(self.present, np.arange(many + 1) * size)
        agree = true == pred
        return (
            np.bincount(at_true[agree], weights=weights[agree], minlength=places),
            np.bincount(at_true, weights=weights, minlength=places),
            np.bincount(at_pred, weights=weights, minlength=places),
            edges.tolist(),
        )
