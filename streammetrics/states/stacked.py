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

Each state then gets the same state a weighted ``update`` of its rows gives (byte for byte for
whole-number weights; fractional weights are summed in the same row order, except in score
buckets, whose replicate sums follow score order: equal to rounding). Metrics without the hook,
or configurations it does not cover (exact score tables, relative-error buckets), keep the
wrappers' per-state path.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from .buckets import ScoreBuckets
from .contingency import ContingencyCounts
from .labels import union

__all__ = ["BucketStack", "ConfusionStack", "Stacked", "cell_starts"]

#: Dense (group, bucket) tables up to this many cells; sparse (one sort) beyond.
DENSE_CELLS = 1 << 22


def cell_starts(sorted_cells: np.ndarray) -> np.ndarray:
    """Start of each run of equal values in a sorted array."""
    if len(sorted_cells) == 0:
        return np.zeros(0, dtype=np.intp)
    return np.flatnonzero(np.concatenate(([True], sorted_cells[1:] != sorted_cells[:-1])))


def group_bounds(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(present groups, bounds)``: the groups with rows, and where each starts and ends in
    the rows sorted by group (``bounds[i]:bounds[i + 1]``)."""
    counts = np.bincount(codes, minlength=size)
    present = np.flatnonzero(counts)
    return present, np.concatenate(([0], np.cumsum(counts[present])))


class Stacked(ABC):
    """One validated batch of a metric, ready to be folded into many states of that metric.

    ``n`` is the batch's row count (each state's ``count`` grows by it, or by its group's
    share); ``rows`` the batch rows :meth:`fold_replicates` reads, in the order it reads them.
    """

    n: int
    rows: np.ndarray
    #: Whether :meth:`fold_groups` is implemented (``Sliced``); replicates always are.
    groups = False

    @abstractmethod
    def accepts(self, metrics: list[Any]) -> bool:
        """Whether every state can take this batch stacked (checked before anything changes)."""

    @abstractmethod
    def fold_replicates(self, metrics: list[Any], counts: np.ndarray) -> None:
        """Commit into ``metrics[r]`` the batch with row ``rows[i]`` weighted by ``counts[i, r]``
        (times its sample weight)."""

    def fold_groups(self, metrics: list[Any], codes: np.ndarray, size: int) -> None:
        """Commit into ``metrics[j]`` the rows of the ``j``-th group present in ``codes``."""
        raise NotImplementedError


def _replicate_sums(counts: np.ndarray, starts: np.ndarray, sw: np.ndarray | None) -> np.ndarray:
    """``(cells, R)`` float64 sums of each replicate's weights over runs of rows."""
    if sw is None:
        if len(counts) < 2**24:  # 255 * 2**24 < 2**32: exact in uint32
            return np.add.reduceat(counts, starts, axis=0, dtype=np.uint32).astype(np.float64)
        return np.add.reduceat(counts, starts, axis=0, dtype=np.float64)
    return np.add.reduceat(counts * sw[:, None], starts, axis=0)


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
        size = len(self.labels)
        cells = ra * size + rb
        self.n = len(cells)
        self.rows = np.argsort(cells, kind="stable")
        sorted_cells = cells[self.rows]
        self.starts = cell_starts(sorted_cells)
        self.cells = sorted_cells[self.starts]
        self.sw = sw
        self.keeps_sq = "weight_sq" in metric._fields

    def accepts(self, metrics: list[Any]) -> bool:
        rows = self.base.rows
        return all(m.counts.rows is rows or np.array_equal(m.counts.rows, rows) for m in metrics)

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
            squares = counts.astype(np.uint16)
            squares *= squares
            sq = squares.sum(axis=0, dtype=np.int64).astype(np.float64).tolist()
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


class BucketStack(Stacked):
    """A batch of (label, score) pairs of a score-bucket state on a fixed grid."""

    groups = True

    def __init__(self, metric: Any, y: np.ndarray, x: np.ndarray, sw: np.ndarray | None) -> None:
        hist: ScoreBuckets = metric.hist
        assert hist.mapping is not None and hist.mapping.size is not None
        self.mapping = hist.mapping
        self.n = len(y)
        kept = None
        if sw is not None:
            keep = sw != 0  # rows of zero weight leave no trace in score buckets
            if not keep.all():
                kept = np.flatnonzero(keep)
                y, x, sw = y[kept], x[kept], sw[kept]
        self.y, self.x, self.sw = y, x, sw
        self.keys = self.mapping.keys(x).astype(np.int64)
        self._kept = kept
        self._order: np.ndarray | None = None

    def _sorted(self) -> np.ndarray:
        """The kept rows sorted by (bucket, label, score), as positions among the kept rows
        (replicates only: groups need no sort on a dense grid)."""
        if self._order is None:
            self._order = np.lexsort((self.x, 2 * self.keys + self.y))
        return self._order

    @property
    def rows(self) -> np.ndarray:  # type: ignore[override]
        order = self._sorted()
        return order if self._kept is None else self._kept[order]

    def accepts(self, metrics: list[Any]) -> bool:
        return all(m.hist.mapping == self.mapping for m in metrics)

    def _commit(self, metric: Any, arrays: tuple[np.ndarray, ...], n: int) -> None:
        keys, pos, neg, lo, hi = arrays
        batch = ScoreBuckets(self.mapping)
        batch._keys, batch._pos, batch._neg = keys, pos, neg
        batch._lo, batch._hi = lo + 0.0, hi + 0.0  # -0.0 becomes +0.0
        metric._commit(n, hist=metric.hist.merged(batch))

    def fold_replicates(self, metrics: list[Any], counts: np.ndarray) -> None:
        order = self._sorted()
        cells = 2 * self.keys[order] + self.y[order]
        xs = self.x[order]
        starts = cell_starts(cells)
        sw = None if self.sw is None else self.sw[order]
        sums = _replicate_sums(counts, starts, sw)  # (cells, R)
        m = len(order)
        # The smallest and largest score of each cell among the rows a replicate weighs (> 0):
        # the first and last such row, the cell's rows being sorted by score.
        at = np.arange(m, dtype=np.int32)[:, None]
        drawn = counts > 0
        first = np.minimum.reduceat(np.where(drawn, at, np.int32(m)), starts, axis=0)
        last = np.maximum.reduceat(np.where(drawn, at, np.int32(-1)), starts, axis=0)
        lo_cell = np.append(xs, np.inf)[first]
        hi_cell = np.append(xs, -np.inf)[last]  # index -1: the appended -inf
        seg = cells[starts]
        bucket_start = cell_starts(seg >> 1)
        which = np.cumsum(np.concatenate(([True], (seg[1:] >> 1) != (seg[:-1] >> 1)))) - 1
        nb, R = len(bucket_start), counts.shape[1]
        pos = np.zeros((nb, R))
        neg = np.zeros((nb, R))
        positive = (seg & 1).astype(bool)
        pos[which[positive]] = sums[positive]
        neg[which[~positive]] = sums[~positive]
        lo = np.minimum.reduceat(lo_cell, bucket_start, axis=0)
        hi = np.maximum.reduceat(hi_cell, bucket_start, axis=0)
        keys = seg[bucket_start] >> 1
        present = (lo <= hi).T
        pos_t, neg_t, lo_t, hi_t = pos.T.copy(), neg.T.copy(), lo.T.copy(), hi.T.copy()
        for r, metric in enumerate(metrics):
            sel = np.flatnonzero(present[r])
            arrays = (keys[sel], pos_t[r, sel], neg_t[r, sel], lo_t[r, sel], hi_t[r, sel])
            self._commit(metric, arrays, self.n)

    def fold_groups(self, metrics: list[Any], codes: np.ndarray, size: int) -> None:
        grid = self.mapping.size
        assert grid is not None
        n_rows = np.bincount(codes, minlength=size)
        if self._kept is not None:
            codes = codes[self._kept]
        present = np.flatnonzero(n_rows)
        unweighted = self.sw is None
        if len(present) * grid <= DENSE_CELLS:
            # Dense over the groups present: one bincount and one min / max pass.
            dense = np.full(size, -1, dtype=np.int64)
            dense[present] = np.arange(len(present))
            cell = dense[codes] * grid + self.keys
            lo = np.full(len(present) * grid, np.inf)
            hi = np.full(len(present) * grid, -np.inf)
            np.minimum.at(lo, cell, self.x)
            np.maximum.at(hi, cell, self.x)
            flat = np.bincount(2 * cell + self.y, weights=self.sw, minlength=2 * len(lo))
            seen = np.flatnonzero(lo <= hi)
            counts = flat.reshape(-1, 2)[seen]
            group = seen // grid
            keys = seen - group * grid
            lo, hi = lo[seen], hi[seen]
        else:
            # Sparse: one sort of the (group, bucket) cells.
            cell = codes * grid + self.keys
            order = np.argsort(cell, kind="stable")
            cell_s = cell[order]
            starts = cell_starts(cell_s)
            inverse = np.cumsum(np.concatenate(([True], cell_s[1:] != cell_s[:-1]))) - 1
            flat = np.bincount(
                2 * inverse + self.y[order],
                weights=None if self.sw is None else self.sw[order],
                minlength=2 * len(starts),
            )
            counts = flat.reshape(-1, 2)
            xs = self.x[order]
            lo = np.minimum.reduceat(xs, starts)
            hi = np.maximum.reduceat(xs, starts)
            cells = cell_s[starts]
            group = np.searchsorted(present, cells // grid)
            keys = cells - (cells // grid) * grid
        if unweighted:
            counts = counts.astype(np.int64)
        neg, pos = np.ascontiguousarray(counts[:, 0]), np.ascontiguousarray(counts[:, 1])
        bounds = np.searchsorted(group, np.arange(len(present) + 1))
        empty = np.zeros(0, dtype=np.int64 if unweighted else np.float64)
        for j, metric in enumerate(metrics):
            a, b = bounds[j], bounds[j + 1]
            if a == b:  # every row of the group weighs zero
                arrays = (np.zeros(0, np.int64), empty, empty, np.zeros(0), np.zeros(0))
            else:
                arrays = (keys[a:b], pos[a:b], neg[a:b], lo[a:b], hi[a:b])
            self._commit(metric, arrays, int(n_rows[present[j]]))
