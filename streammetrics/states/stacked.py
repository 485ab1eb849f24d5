"""Stacked updates: one batch folded into many states of one metric in one vectorised pass.

``Bootstrap`` updates ``R`` replicates of a metric with the same rows under ``R`` weightings, and
``Sliced`` updates one state per slice with that slice's rows. Done one state at a time, each
costs a full update of the metric (validation, bucketing, counting) per replicate or per slice.
For metrics whose state is a weighted count table of per-row cells (the confusion counts of label
pairs, the score buckets), the work splits into what depends on the rows only (validation,
each row's cell: label codes, bucket key) and a weighted sum per (state, cell). A metric exposes
the first through a hook, ``metric._stacked(*columns, sample_weight=None)``, which validates the
batch exactly as ``update`` does and returns a :class:`Stacked`; the wrappers then fold all
states at once:

* :meth:`Stacked.fold_replicates`: rows weighted by a ``(rows, R)`` matrix of Poisson counts;
  one ``np.add.reduceat`` over the rows sorted by cell gives every (cell, replicate) sum;
* :meth:`Stacked.fold_groups`: each row in one group; one ``np.bincount`` over (group, cell).
  (``Sliced`` keeps the slices of most confusion metrics as one packed table,
  ``wrappers._confusion_pack``, which reads the stack's label codes; the others, such as a
  binary ``F1``, whose every slice judges its own label set, fold group by group on new count
  blocks, without a copy of each slice first.)

Each state then gets the same state a weighted ``update`` of its rows gives (byte for byte for
whole-number weights; fractional weights are summed in the same row order, except in score
buckets, whose replicate sums follow score order: equal to rounding). Metrics without the hook,
or configurations it does not cover (exact score tables, relative-error buckets), keep the
wrappers' per-state path.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from ..errors import InputError
from ._cells import may_be_sparse
from .contingency import ContingencyCounts
from .labels import union

__all__ = [
    "ConfusionStack",
    "Stacked",
    "blanks",
    "cell_starts",
    "stable_order",
    "stacked_batch",
]

#: Dense (group, bucket) tables up to this many cells; sparse (one sort) beyond.
DENSE_CELLS = 1 << 22


def cell_starts(sorted_cells: np.ndarray) -> np.ndarray:
    """Start of each run of equal values in a sorted array."""
    if len(sorted_cells) == 0:
        return np.zeros(0, dtype=np.intp)
    return np.flatnonzero(np.concatenate(([True], sorted_cells[1:] != sorted_cells[:-1])))


def stable_order(values: np.ndarray) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` for non-negative int64 values: two radix passes of
    16 bits each (numpy's stable sort is a radix sort for 16-bit types) below 2**32."""
    if len(values) == 0 or int(values.max()) >= 1 << 32:
        return np.argsort(values, kind="stable")
    low = np.argsort((values & 0xFFFF).astype(np.uint16), kind="stable")
    high = np.argsort((values[low] >> 16).astype(np.uint16), kind="stable")
    out: np.ndarray = low[high]
    return out


class Stacked(ABC):
    """One validated batch of a metric, ready to be folded into many states of that metric.

    ``n`` is the batch's row count (each state's ``count`` grows by it, or by its group's
    share); ``rows`` the batch rows :meth:`fold_replicates` reads, in the order it reads them.
    """

    n: int
    rows: np.ndarray
    #: Whether :meth:`fold_groups` is implemented (``Sliced``).
    groups = False
    #: Whether the states :meth:`fold_groups` takes keep their per-request path: new states
    #: get their own ``Rows`` (``blanks(rows=True)``), and a batch for one state it holds goes
    #: through that state's own ``update``, where it learns which rows it certainly takes (as
    #: the per-slice path did for confusion metrics before they had a grouped fold).
    per_request = False
    #: Whether :meth:`fold_replicates` is (``Bootstrap``); a stack made for ``Sliced``'s packed
    #: fold alone (``regression._stack.LossStack``) has none.
    replicates = True

    @abstractmethod
    def accepts(self, metrics: list[Any]) -> bool:
        """Whether every state can take this batch stacked (checked before anything changes)."""

    def accepts_groups(self, metrics: list[Any]) -> bool:
        """Whether :meth:`fold_groups` may be tried on these states (``Sliced``)."""
        return self.accepts(metrics)

    @abstractmethod
    def fold_replicates(self, metrics: list[Any], counts: np.ndarray) -> None:
        """Commit into ``metrics[r]`` the batch with row ``rows[i]`` weighted by ``counts[i, r]``
        (times its sample weight)."""

    def fold_groups(self, metrics: list[Any], codes: np.ndarray, size: int) -> bool:
        """Commit into ``metrics[g]`` the rows whose code is ``g`` (codes in ``range(size)``,
        ``size == len(metrics)``); True. False, with nothing changed, where some state's own
        update would refuse its rows: the caller's per-state path then runs, and says why."""
        raise NotImplementedError


def _replicate_sums(counts: np.ndarray, starts: np.ndarray, sw: np.ndarray | None) -> np.ndarray:
    """``(cells, R)`` float64 sums of each replicate's weights over runs of rows."""
    if sw is None:
        if len(counts) >= 2**24:  # 255 * 2**24 < 2**32: below, exact in uint32
            return np.add.reduceat(counts, starts, axis=0, dtype=np.float64)
        if len(starts) * 8 > len(counts):
            return np.add.reduceat(counts, starts, axis=0, dtype=np.uint32).astype(np.float64)
        # Runs of 8 rows or more: one contiguous sum per run. numpy's reduceat over axis 0
        # casts uint8 to uint32 element by element; a run's sum(axis=0) adds whole rows. On
        # 10,000 rows x 200 replicates (0.8.9, best of 30): 0.7 against 2.2 ms at 4 runs, 5.6
        # against 7.5 ms at 3,000 runs. The same integers either way.
        out = np.empty((len(starts), counts.shape[1]), dtype=np.uint32)
        ends = [*starts[1:].tolist(), len(counts)]
        for i, (a, b) in enumerate(zip(starts.tolist(), ends, strict=True)):
            counts[a:b].sum(axis=0, dtype=np.uint32, out=out[i])
        return out.astype(np.float64)
    return np.add.reduceat(counts * sw[:, None], starts, axis=0)


def square_sums(counts: np.ndarray) -> list[float]:
    """Each replicate's sum of squared Poisson counts, ``(rows, R)`` uint8 -> R floats
    (exact: integers)."""
    squares = counts.astype(np.uint16)
    squares *= squares
    # 255**2 * 66,000 < 2**32: whole-row adds in uint32, 1.6x faster than int64 at 10,000 rows.
    wide = np.uint32 if len(counts) < 66_000 else np.int64
    return squares.sum(axis=0, dtype=wide).astype(np.float64).tolist()  # type: ignore[no-any-return]


def _first_drawn(counts: np.ndarray, begin: np.ndarray, stop: np.ndarray, step: int) -> np.ndarray:
    """``(cells, R)``: the first row from ``begin`` towards ``stop`` (exclusive, by ``step``)
    whose count in replicate ``r`` is positive; -1 where there is none.

    Walks only the (cell, replicate) pairs still looking: a row is drawn with probability
    1 - 1/e, so the pairs left fall geometrically (about 15 steps for a million pairs), and
    the cost is O(cells x replicates), not O(rows x replicates).
    """
    R = counts.shape[1]
    out = np.repeat(begin[:, None], R, axis=1)
    looking = np.flatnonzero(counts[begin].reshape(-1) == 0)  # flat (cell, replicate) pairs
    cell, rep = np.divmod(looking, R)
    row = begin[cell]
    while len(looking):
        row = row + step
        inside = row != stop[cell]
        out.reshape(-1)[looking[~inside]] = -1  # every row of the cell weighs zero
        looking, cell, rep, row = looking[inside], cell[inside], rep[inside], row[inside]
        found = counts[row, rep] > 0
        out.reshape(-1)[looking[found]] = row[found]
        missing = ~found
        looking, cell, rep, row = looking[missing], cell[missing], rep[missing], row[missing]
    return out


class ConfusionStack(Stacked):
    """A batch of (true, predicted) label pairs against a confusion state's label set."""

    def __init__(self, metric: Any, yt: np.ndarray, yp: np.ndarray, sw: np.ndarray | None) -> None:
        block: ContingencyCounts = metric.counts
        labels, ra, rb = block.codes(yt, yp, ("y_true", "y_pred"))
        self.base = block
        self.labels = union(block.rows, labels)
        if len(self.labels) != len(labels):
            remap = np.searchsorted(self.labels, labels)
            ra, rb = remap[ra], remap[rb]
        #: Each row's true and predicted label, as indices in ``labels``.
        self.true_codes, self.pred_codes = ra, rb
        self.n = len(ra)
        self.sw = sw
        self.keeps_sq = "weight_sq" in metric._fields
        self._sorted: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def _by_cell(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(rows, starts, cells)``: the rows in (stable) cell order, where each cell's run
        starts, and the distinct cells (sorted once, on first use: a packed slice table reads
        the codes only)."""
        if self._sorted is None:
            cells = self.true_codes * len(self.labels) + self.pred_codes
            rows = np.argsort(cells, kind="stable")
            sorted_cells = cells[rows]
            starts = cell_starts(sorted_cells)
            self._sorted = rows, starts, sorted_cells[starts]
        return self._sorted

    @property
    def rows(self) -> np.ndarray:  # type: ignore[override]
        return self._by_cell()[0]

    @property
    def starts(self) -> np.ndarray:
        return self._by_cell()[1]

    @property
    def cells(self) -> np.ndarray:
        return self._by_cell()[2]

    groups = True
    per_request = True

    def accepts(self, metrics: list[Any]) -> bool:
        # A stack holds a dense (states, L * L) table: large label sets, which the states keep
        # sparse, are folded state by state instead.
        if may_be_sparse(len(self.labels) ** 2):
            return False
        rows = self.base.rows
        return all(m.counts.rows is rows or np.array_equal(m.counts.rows, rows) for m in metrics)

    def accepts_groups(self, metrics: list[Any]) -> bool:
        # Each group is counted on its state's own label set, dense or sparse as its update
        # makes it: any states (``fold_groups`` declines where one would refuse its rows).
        return True

    def fold_groups(self, metrics: list[Any], codes: np.ndarray, size: int) -> bool:
        """Each group's rows counted as its state's own ``update`` counts them, on new count
        blocks (a state is never changed in place: a ``Sliced`` blank shares the template's
        fields): the group's block on the state's label set, the state's label check, the count
        bounds, all of them for every group before any state changes. A slice's update of its
        own rows, on a copy of the slice, cost a copy and a whole update per slice: 69 us a
        request for a ``Sliced(F1())`` (binary: each slice judges its own label set, so the
        slices are not one packed table) whose requests went to slices it held (0.8.29)."""
        labels = self.labels
        true, pred = labels[self.true_codes], labels[self.pred_codes]
        order = stable_order(codes)
        bounds = np.searchsorted(codes[order], np.arange(size + 1)).tolist()
        names = ("y_true", "y_pred")
        plans = []
        for g, metric in enumerate(metrics):
            rows = order[bounds[g] : bounds[g + 1]]  # (in row order: a stable sort)
            n = len(rows)
            if n == 0:
                continue
            weights = None if self.sw is None else self.sw[rows]
            held: ContingencyCounts = metric.counts
            try:
                # Labels the state holds already: its label set, which passed its check, stays.
                counts = held.plus_known(true[rows], pred[rows], weights)
                if counts is None:
                    batch = held.batch(true[rows], pred[rows], weights, names)
                    metric._check_labels(union(held.rows, batch.rows))
                    counts = held.merged(batch)
                metric._check_room(n)
            except InputError:  # (a CountOverflowError too) the state's own update says why
                return False
            sq = float(n) if weights is None else float(weights @ weights)
            plans.append((metric, n, counts, sq))
        for metric, n, counts, sq in plans:
            if self.keeps_sq:
                metric._commit(n, counts=counts, weight_sq=metric.weight_sq + sq)
            else:
                metric._commit(n, counts=counts)
        return True

    def _tables(self, metrics: list[Any]) -> np.ndarray:
        """The states' tables on the batch's label set, stacked ``(states, L * L)`` float64."""
        size, old = len(self.labels), len(self.base.rows)
        out = np.zeros((len(metrics), size, size), dtype=np.float64)
        if old:
            stacked = np.stack([m.counts.table for m in metrics])
            if old == size:
                out[:] = stacked
            else:
                at = np.searchsorted(self.labels, self.base.rows)
                out[:, at[:, None], at[None, :]] = stacked
        return out.reshape(len(metrics), size * size)

    def _commit(self, metric: Any, table: np.ndarray, n: int, sq: float) -> None:
        block = ContingencyCounts.__new__(ContingencyCounts)
        block.shared, block.fixed = self.base.shared, self.base.fixed
        block.rows = block.cols = self.labels
        size = len(self.labels)
        block.table = table.reshape(size, size)
        if self.keeps_sq:
            metric._commit(n, counts=block, weight_sq=metric.weight_sq + sq)
        else:
            metric._commit(n, counts=block)

    def fold_replicates(self, metrics: list[Any], counts: np.ndarray) -> None:
        sw = None if self.sw is None else self.sw[self.rows]
        sums = _replicate_sums(counts, self.starts, sw)
        if self.sw is None:
            sq = square_sums(counts)
        else:
            # Sums of squared weights in the rows' own order, as an update of each replicate
            # computes them (one dot product of contiguous weights).
            weighted = np.empty((len(metrics), self.n), dtype=np.float64)
            weighted[:, self.rows] = (counts * self.sw[self.rows, None]).T
            sq = [float(w @ w) for w in weighted]
        tables = self._tables(metrics)
        tables[:, self.cells] += sums.T
        for r, metric in enumerate(metrics):
            self._commit(metric, tables[r], self.n, sq[r])


def blanks(template: Any, k: int, rows: bool = False) -> list[Any]:
    """``k`` empty states of ``template``'s class and configuration for a stacked fold.

    Cheaper than ``k`` copies: a fold commits every state field of every state it is given, so
    until then the blanks share the template's empty field values (read, never written). They
    take no per-request buffer (``_rows``): they are a wrapper's internal states, updated by
    folds and merges only; with ``rows``, each has its own, as a copy of the template has (a
    ``Sliced`` slice whose labels it judges itself learns, at its one-sample requests, which
    rows it certainly takes).
    """
    if k == 0:  # (no copy of the template for nothing: every slice of a batch may be held)
        return []
    base: Any = template.copy()
    attrs = base.__dict__
    cls: Any = type(base)
    own = base._rows if rows else None
    out = []
    for _ in range(k):
        metric = cls.__new__(cls)
        metric.__dict__.update(attrs)
        metric._lock = threading.RLock()
        metric._rows = None if own is None else own.copy()
        out.append(metric)
    return out


def stacked_batch(metric: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Stacked | None:
    """``metric``'s description of a batch for one stacked fold (its ``_stacked`` hook), or None
    when it offers none or the call has arguments the hook does not take (the wrappers then
    take the per-state path, which says what is wrong with the arguments)."""
    hook = getattr(metric, "_stacked", None)
    if hook is None:
        return None
    try:
        stack: Stacked | None = hook(*args, **kwargs)
    except TypeError:
        return None
    return stack
