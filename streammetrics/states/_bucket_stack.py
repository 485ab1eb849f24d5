"""The stacked fold of score-bucket states (``ROCAUC``, ``AveragePrecision`` and the curves on a
grid mapping): one batch into many states at once, for ``Bootstrap`` (replicates) and ``Sliced``
(slices). The shared machinery and the contract are in :mod:`streammetrics.states.stacked`.

A fold counts every (state, bucket) pair of the batch in one pass, merges the result into the
entries the states hold (concatenated, sorted by state then key: ``Held``) by binary search,
and gives each state its slice of the merged arrays with a few attribute writes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._codec import COUNT_LIMIT, WEIGHT_LIMIT, check_sum
from .buckets import ScoreBuckets
from .stacked import (
    DENSE_CELLS,
    Stacked,
    _first_drawn,
    _replicate_sums,
    cell_starts,
    stable_order,
)

__all__ = ["BucketStack", "Held", "commit_all", "merge_sorted"]


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
        # -0.0 becomes +0.0 once here: every lo and hi is then a batch score or a held one
        # (states hold no -0.0), so the merged extremes need no second pass.
        self.y, self.x, self.sw = y, x + 0.0, sw
        self.keys = self.mapping.keys(self.x).astype(np.int64)
        self._kept = kept
        self._order: np.ndarray | None = None

    def _sorted(self) -> np.ndarray:
        """The kept rows sorted by (bucket, score), as positions among the kept rows
        (replicates only: groups need no sort on a dense grid)."""
        if self._order is None:
            self._order = np.lexsort((self.x, self.keys))
        return self._order

    @property
    def rows(self) -> np.ndarray:  # type: ignore[override]
        order = self._sorted()
        return order if self._kept is None else self._kept[order]

    def accepts(self, metrics: list[Any]) -> bool:
        mapping = self.mapping  # states made from one template share its mapping object
        return all((h := m.hist.mapping) is mapping or h == mapping for m in metrics)

    def fold_replicates(self, metrics: list[Any], counts: np.ndarray) -> None:
        order = self._sorted()
        keys = self.keys[order]
        xs, ys = self.x[order], self.y[order]
        starts = cell_starts(keys)  # one run of rows per bucket, sorted by score
        m = len(order)
        if m == 0:  # every row weighs 0: no entry, the rows still counted
            no_i, no_f = np.zeros(0, dtype=np.int64), np.zeros(0)
            entries: tuple[np.ndarray, ...] = (no_i, no_i, no_f, no_f, no_f, no_f)
        else:
            # The smallest and largest score of each bucket among the rows a replicate weighs
            # (> 0): the first and last such row, the bucket's rows being sorted by score.
            # (0.8.14 sorted by (bucket, label, score), took them per label and reduced the
            # two: on 10,000 rows x 200 replicates, twice the time for the same entries.)
            ends = np.append(starts[1:], m)
            first = _first_drawn(counts, starts, ends, 1)
            last = _first_drawn(counts, ends - 1, starts - 1, -1)
            if self.sw is None:
                total = _replicate_sums(counts, starts, None)
                pos = _replicate_sums(counts * ys.astype(np.uint8)[:, None], starts, None)
                neg = total - pos  # (integers below 2**53: exact)
            else:
                # Each label's rows of a bucket summed alone, in score order: the float sums
                # of 0.8.14, which summed runs of (bucket, label) (zeros in a run would
                # regroup numpy's pairwise sum, and change the last bits).
                step = np.zeros(m, dtype=np.int64)
                step[starts[1:]] = 1
                bucket = np.cumsum(step)  # each row's bucket, as its run's index
                pos, neg = (
                    _label_sums(counts, self.sw[order], bucket, ys == label, len(starts))
                    for label in (1, 0)
                )
            present = (first >= 0).T  # (R, buckets): entries sorted by (replicate, bucket)
            rep, b = np.nonzero(present)
            entries = (
                rep,
                keys[starts][b],
                pos.T[present],
                neg.T[present],
                np.append(xs, np.inf)[first].T[present],
                np.append(xs, -np.inf)[last].T[present],
            )
        grid = self.mapping.size
        assert grid is not None
        held = Held(metrics, True)
        self._combine(metrics, np.full(counts.shape[1], self.n), held, (grid, 0), entries=entries)

    def fold_groups(self, metrics: list[Any], codes: np.ndarray, size: int) -> bool:
        grid = self.mapping.size
        assert grid is not None
        n_rows = np.bincount(codes, minlength=size)
        if self._kept is not None:
            codes = codes[self._kept]
        held = Held(metrics, self.sw is not None)
        keys = self.keys
        if len(keys) or len(held.keys):
            kmin = int(min(keys.min(initial=grid), held.keys.min(initial=grid)))
            kmax = int(max(keys.max(initial=-1), held.keys.max(initial=-1)))
        else:
            kmin = kmax = 0
        span = kmax - kmin + 1  # the buckets the batch or a state touches
        if size * span <= DENSE_CELLS:
            # A dense (group, bucket) table of the batch: one bincount and one min / max pass,
            # no sort; the states are then added into it.
            cell = codes * span + (keys - kmin)
            lo = np.full(size * span, np.inf)
            hi = np.full(size * span, -np.inf)
            np.minimum.at(lo, cell, self.x)
            np.maximum.at(hi, cell, self.x)
            flat = np.bincount(2 * cell + self.y, weights=self.sw, minlength=2 * len(lo))
            dense = (flat.reshape(-1, 2), lo, hi)
            self._combine(metrics, n_rows, held, (span, kmin), dense=dense)
            return True
        # ... or from one stable sort of the cells (two radix passes of 16 bits).
        cells, pos, neg, lo, hi = self.cell_entries(codes)
        group = cells // grid
        entries = (group, cells - group * grid, pos, neg, lo, hi)
        self._combine(metrics, n_rows, held, (grid, 0), entries=entries)
        return True

    def cell_entries(self, groups: np.ndarray) -> tuple[np.ndarray, ...]:
        """The batch's entries per (group, bucket), ``groups`` giving each kept row's group:
        ``(cells, pos, neg, lo, hi)`` sorted by cell ``group * grid + key``, from one stable
        sort of the cells (each cell's rows are summed in row order, as ``bincount`` sums
        them on a dense table)."""
        grid = self.mapping.size
        assert grid is not None
        cell = groups * grid + self.keys
        order = stable_order(cell)
        cell_s = cell[order]
        starts = cell_starts(cell_s)
        inverse = np.cumsum(np.concatenate(([True], cell_s[1:] != cell_s[:-1]))) - 1
        counts = np.bincount(
            2 * inverse + self.y[order],
            weights=None if self.sw is None else self.sw[order],
            minlength=2 * len(starts),
        ).reshape(-1, 2)
        xs = self.x[order]
        return (
            cell_s[starts],
            np.ascontiguousarray(counts[:, 1]),
            np.ascontiguousarray(counts[:, 0]),
            np.minimum.reduceat(xs, starts) if len(xs) else np.zeros(0),
            np.maximum.reduceat(xs, starts) if len(xs) else np.zeros(0),
        )

    def _combine(
        self,
        metrics: list[Any],
        n_rows: np.ndarray,
        held: Held,
        layout: tuple[int, int],
        entries: tuple[np.ndarray, ...] | None = None,
        dense: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ) -> None:
        """Merge each state ``metrics[g]`` (``held``) with the batch's rows of group ``g`` and
        commit.

        The batch comes as ``entries``: (group, bucket key, pos, neg, lo, hi), sorted by
        (group, key), one per (group, bucket) a row of the group falls in; or as a ``dense``
        table over every (group, bucket): counts ``(cells, 2)`` (negative, positive), lo, hi,
        cell ``group * span + key - first`` for ``layout = (span, first)`` (the states' keys
        lie in that range). All states are merged in one pass (a dense table when it is
        small, one sort otherwise), as :meth:`ScoreBuckets.merged` merges one pair; the bound
        on counts is checked for every state before any changes.
        """
        grid = self.mapping.size
        assert grid is not None
        G = len(metrics)
        og, ok, opos, oneg, olo, ohi = held.group, held.keys, held.pos, held.neg, held.lo, held.hi
        wide = held.wide
        span, first = layout
        key_of: np.ndarray | None = None  # the grid key of each column of a compact table
        if dense is not None:
            counts, dense_lo, dense_hi = dense
            counts = counts.astype(wide, copy=False)
            if len(og):
                ocell = og * span + (ok - first)
                counts[ocell, 1] += opos
                counts[ocell, 0] += oneg
                dense_lo[ocell] = np.minimum(dense_lo[ocell], olo)
                dense_hi[ocell] = np.maximum(dense_hi[ocell], ohi)
            cells = np.flatnonzero(dense_lo <= dense_hi)
            pos, neg = counts[cells, 1], counts[cells, 0]
            lo, hi = dense_lo[cells], dense_hi[cells]
        elif entries is None:
            raise TypeError("give the batch as entries or as a dense table")
        elif G * grid <= DENSE_CELLS:
            g, k, pos, neg, lo, hi = entries
            # A dense table over the buckets some state or the batch holds, not the whole
            # grid: 200 replicates of 10,000-row batches use about half of it.
            used = np.zeros(grid, dtype=bool)
            used[ok] = True
            used[k] = True
            key_of = np.flatnonzero(used)
            span, first = len(key_of), 0
            if span < grid:
                at = np.cumsum(used) - 1
                ok, k = at[ok], at[k]
            else:
                key_of = None
            ocell, bcell = og * span + ok, g * span + k
            dense_pos = np.zeros(G * span, dtype=wide)
            dense_neg = np.zeros(G * span, dtype=wide)
            dense_lo = np.full(G * span, np.inf)
            dense_hi = np.full(G * span, -np.inf)
            dense_pos[ocell], dense_neg[ocell] = opos, oneg
            dense_lo[ocell], dense_hi[ocell] = olo, ohi
            dense_pos[bcell] += pos
            dense_neg[bcell] += neg
            dense_lo[bcell] = np.minimum(dense_lo[bcell], lo)
            dense_hi[bcell] = np.maximum(dense_hi[bcell], hi)
            cells = np.flatnonzero(dense_lo <= dense_hi)
            pos, neg = dense_pos[cells], dense_neg[cells]
            lo, hi = dense_lo[cells], dense_hi[cells]
        elif len(og) == 0:  # nothing held: the batch's entries are the states
            g, k, pos, neg, lo, hi = entries
            cells, pos, neg = g * grid + k, pos.astype(wide), neg.astype(wide)
        else:
            g, k, pos, neg, lo, hi = entries
            held_cols = (opos.astype(wide), oneg.astype(wide), olo, ohi)
            cells, (pos, neg, lo, hi) = merge_sorted(
                og * grid + ok, held_cols, g * grid + k, (pos, neg, lo, hi)
            )
        # The cells are sorted: each group's entries are one run, found by a binary search.
        edges = np.searchsorted(cells, np.arange(G + 1, dtype=np.int64) * span)
        keys = cells - np.repeat(np.arange(G, dtype=np.int64) * span - first, np.diff(edges))
        if key_of is not None:
            keys = key_of[keys]
        limit = COUNT_LIMIT if wide.kind in "iub" else WEIGHT_LIMIT
        grand = float(np.add.reduce(pos, dtype=np.float64) + np.add.reduce(neg, dtype=np.float64))
        if not grand <= limit / 2:  # (all states together well within: none can pass it)
            running = np.concatenate(([0.0], np.cumsum(pos + neg, dtype=np.float64)))
            totals = running[edges[1:]] - running[edges[:-1]]  # each state's held total
            check_sum("score buckets", wide.kind, float(totals.max(initial=0.0)))
        commit_all(
            metrics,
            self.mapping,
            edges.tolist(),
            n_rows.tolist(),
            (keys, pos, neg, lo, hi),
            held.dtypes,
            wide,
        )


def _label_sums(
    counts: np.ndarray, sw: np.ndarray, bucket: np.ndarray, mine: np.ndarray, buckets: int
) -> np.ndarray:
    """``(buckets, R)``: each replicate's weight of the rows ``mine`` in each bucket (rows
    sorted by bucket, ``bucket`` giving each row's); 0 where none."""
    rows = np.flatnonzero(mine)
    out = np.zeros((buckets, counts.shape[1]))
    if len(rows):
        runs = cell_starts(bucket[rows])
        out[bucket[rows[runs]]] = _replicate_sums(counts[rows], runs, sw[rows])
    return out


def merge_sorted(
    cells: np.ndarray, cols: tuple[np.ndarray, ...], add: np.ndarray, extra: tuple[np.ndarray, ...]
) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Entries ``(cells, (pos, neg, lo, hi))`` with ``(add, extra)`` folded in: both sorted by
    cell, each cell at most once per side. A cell on both sides adds its counts (held + batch,
    the sum a sort-and-reduce gives) and takes the min / max of its extremes; the others are
    inserted in order. O(m + b log m) for m held entries and b batch ones: a binary search and
    one insert pass per column, where a sort and a reduction of all m + b entries cost several.
    ``cols[0]`` and ``cols[1]`` are written into (fresh arrays of the caller's).
    """
    pos, neg, lo, hi = cols
    at = np.searchsorted(cells, add)
    inside = at < len(cells)
    hit = np.zeros(len(add), dtype=bool)
    hit[inside] = cells[at[inside]] == add[inside]
    where = at[hit]  # distinct positions: each batch cell is one held cell at most
    pos[where] += extra[0][hit]
    neg[where] += extra[1][hit]
    lo, hi = lo.copy(), hi.copy()
    lo[where] = np.minimum(lo[where], extra[2][hit])
    hi[where] = np.maximum(hi[where], extra[3][hit])
    new = ~hit
    if not new.any():
        return cells, (pos, neg, lo, hi)
    slots = at[new]  # each new entry goes before the held entry at its slot
    size = len(cells) + len(slots)
    put = slots + np.arange(len(slots))
    # The held entries fill the other places, in order: a boolean mask writes them in one
    # sequential pass (a third faster than scattering them by index).
    held = np.ones(size, dtype=bool)
    held[put] = False
    out = []
    for col, more in zip((cells, pos, neg, lo, hi), (add, *extra), strict=True):
        merged = np.empty(size, dtype=col.dtype)
        merged[held] = col
        merged[put] = more[new]
        out.append(merged)
    return out[0], tuple(out[1:])


def commit_all(
    metrics: list[Any],
    mapping: Any,
    bounds: list[int],
    rows: list[int],
    entries: tuple[np.ndarray, ...],
    dtypes: list[Any] | None = None,
    wide: Any = None,
) -> None:
    """Give ``metrics[j]`` the entries ``bounds[j]:bounds[j + 1]`` (views; keys relative to the
    state) and ``rows[j]`` more samples: what ``metric._commit(rows[j],
    hist=ScoreBuckets.of_entries(...))`` does, with the per-state Python cut to a few attribute
    writes (a fold of 100,000 slices makes 100,000 of these). ``dtypes`` (``Held.dtypes``): the
    count dtype each state keeps where they differ from ``wide``'s. Nothing here can fail: the
    fold checked the count bound of every state first.
    """
    keys, pos, neg, lo, hi = entries
    new = ScoreBuckets.__new__
    for j, metric in enumerate(metrics):
        a, b = bounds[j], bounds[j + 1]
        p, q = pos[a:b], neg[a:b]
        if dtypes is not None and dtypes[j] != wide:
            p, q = p.astype(dtypes[j]), q.astype(dtypes[j])
        # ScoreBuckets.of_entries, inlined: a grid store (no queue, no "real" bits).
        out = new(ScoreBuckets)
        out.mapping, out._pending, out._total, out._bits = mapping, [], None, None
        out._keys, out._pos, out._neg, out._lo, out._hi = keys[a:b], p, q, lo[a:b], hi[a:b]
        # Metric._commit, inlined: the one field and the count (``hist`` has no setter).
        metric.hist = out
        metric._count += rows[j]


class Held:
    """The entries every state of a fold holds, concatenated: group, key, pos, neg, lo, hi
    (sorted by group, then key), and the dtypes the merged states take."""

    def __init__(self, metrics: list[Any], weighted: bool) -> None:
        held = [j for j, m in enumerate(metrics) if m._count]  # blank states hold nothing
        stores = [metrics[j].hist for j in held]
        for h in stores:
            if h._pending:  # grid stores queue nothing; folded here all the same
                h._flush()
        # Grid stores (the fold accepted only those): their arrays are read as they are held,
        # without a property call (and a flush check) per array per state.
        keys = [h._keys for h in stores]
        pos = [h._pos for h in stores]
        batch = np.dtype(np.float64 if weighted else np.int64)
        kinds = {p.dtype for p in pos}
        self.wide = np.result_type(batch, *kinds)
        self.dtypes: list[Any] | None = None
        if len(kinds | {batch}) > 1:  # states of several dtypes: each keeps its own
            self.dtypes = [batch] * len(metrics)
            for j, p in zip(held, pos, strict=True):
                self.dtypes[j] = np.result_type(batch, p.dtype)
        if stores:
            lens = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
            self.group = np.repeat(np.asarray(held, dtype=np.int64), lens)
            self.keys, self.pos = np.concatenate(keys), np.concatenate(pos)
            self.neg = np.concatenate([h._neg for h in stores])
            self.lo = np.concatenate([h._lo for h in stores])
            self.hi = np.concatenate([h._hi for h in stores])
        else:
            self.group = self.keys = np.zeros(0, dtype=np.int64)
            self.pos = self.neg = self.lo = self.hi = np.zeros(0)
