"""The sorted entry table of :class:`~streammetrics.states.grouped.GroupedScores` and the sorts,
reductions and unions over it (one sort of (group, key) per batch, one k-way pass per merge)."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np

from ._fold import fold_equal
from .score_tables import TINY_WEIGHT

if TYPE_CHECKING:
    from .mappings import BucketMapping

#: Entries per slice of a fold: small enough for each slice's sort to stay in cache.
SLICE = 1 << 17
#: A batch of at most this many rows is sorted whole, into one table that needs no fold: a
#: fold of the pieces of a 250k-row batch cost as much as their sorts (GAUC, 1M users:
#: 57 -> 30 ms for the batch and its bytes). Past it, sorts out of cache cost more than the
#: fold saves (a million rows sorted whole: 250-290 ms, in pieces then folded: 166 ms).
BATCH_SLICE = 4 * SLICE

_NAN = float("nan")


class _Table:
    """Entries of some groups, sorted by (group, key) once canonical.

    ``labels``: the groups (sorted, distinct), ``rows``: each one's row count; ``g``: index
    into ``labels``; ``key``: the score (exact) or the bucket key (sketched) as
    float64; ``pos``/``neg``: weights; ``value``: the one distinct score of the entry, nan when
    a bucket holds several; ``bucketed``: whether ``key`` is a bucket key. ``starts``: where
    each group's entries begin, and their count last, once :func:`group_starts` found them
    (kept: a table is never written).
    """

    __slots__ = ("bucketed", "g", "key", "labels", "neg", "pos", "rows", "starts", "value")

    def __init__(
        self,
        labels: np.ndarray,
        rows: np.ndarray,
        g: np.ndarray,
        key: np.ndarray,
        pos: np.ndarray,
        neg: np.ndarray,
        value: np.ndarray,
        bucketed: np.ndarray,
    ) -> None:
        self.labels, self.rows = labels, rows
        self.g, self.key, self.pos, self.neg = g, key, pos, neg
        self.value, self.bucketed = value, bucketed
        self.starts: np.ndarray | None = None


def group_starts(t: _Table) -> np.ndarray:
    """The first entry of each of ``t``'s groups, and its entry count last (``len(t.labels) +
    1`` items): counted at the first call (one pass; a search per group was 3.6x slower at a
    million groups), then kept with the table. A read of a few groups of a large table then
    finds their entries without two searches of its million group codes per group (cache
    misses, most of them)."""
    starts = getattr(t, "starts", None)  # (tables pickled by 0.8.26 have no such slot)
    if starts is None:
        starts = np.zeros(len(t.labels) + 1, dtype=np.int64)
        np.cumsum(np.bincount(t.g, minlength=len(t.labels)), out=starts[1:])
        t.starts = starts
    return starts


def _order(g: np.ndarray, key: np.ndarray, presorted_runs: bool) -> np.ndarray:
    """The permutation sorting entries by (g, key).

    One argsort of a single uint64 composite, ``g`` in the high bits and the top bits of the
    key's order-preserving integer image below (20x faster than ``np.lexsort``). Keys that
    share their top bits in one group (closer than about 2**-40 relative) are then put in
    order by an exact ``lexsort`` of just those entries.
    """
    g_bits = max(int(g.max()).bit_length(), 1)
    k_bits = 64 - g_bits
    bits = key.view(np.uint64)
    negative = key < 0  # keys are finite and never -0.0
    image = np.where(negative, ~bits, bits | np.uint64(1 << 63))
    comp = (g.astype(np.uint64) << np.uint64(k_bits)) | (image >> np.uint64(g_bits))
    # Timsort merges the sorted runs a consolidation concatenates in linear time.
    order = np.argsort(comp, kind="stable" if presorted_runs else "quicksort")
    cs = comp[order]
    clash = np.flatnonzero(cs[1:] == cs[:-1])
    if len(clash):
        ks = key[order]
        clash = clash[ks[clash + 1] != ks[clash]]
    if len(clash):
        # Positions of every entry in a run of equal composites holding distinct keys.
        same = np.concatenate(([False], cs[1:] == cs[:-1]))
        run_id = np.cumsum(~same)
        bad_runs = np.unique(run_id[clash])
        where = np.flatnonzero(np.isin(run_id, bad_runs))
        sub = order[where]
        order[where] = sub[np.lexsort((key[sub], run_id[where]))]
    return order


def _sort_reduce(
    g: np.ndarray,
    key: np.ndarray,
    cols: list[np.ndarray],
    value: np.ndarray,
    presorted_runs: bool = False,
) -> tuple[np.ndarray, ...]:
    """Sort entries by (g, key) and fold equal pairs (sum ``cols``; one value or nan)."""
    if len(g) == 0:
        return (g, key, *cols, value)
    order = _order(g, key, presorted_runs)
    (g, key), out_cols, (vmin,), (vmax,) = fold_equal([g, key], cols, [value], [value], order)
    return (g, key, *out_cols, np.where(vmin == vmax, vmin, _NAN))


def fold_tables(
    parts: list[_Table],
    mapping: BucketMapping | None,
    sketched: Callable[[np.ndarray], np.ndarray],
) -> _Table:
    """The canonical table of the entries of ``parts`` (tables sorted by group, then key):
    their groups' union, each group's entries sorted by key with equal keys folded (summed in
    the order of ``parts``), and the entries of every group ``sketched`` (given the groups' row
    counts) bucketed by ``mapping``.

    Every table is sorted by group, so the work is cut into ranges of groups of about
    :data:`SLICE` entries, each sorted and reduced while it fits in cache.
    """
    dtype = np.result_type(*(t.pos.dtype for t in parts))
    groups, rows, index = union_labels([t.labels for t in parts], [t.rows for t in parts])
    codes = [at[t.g] if len(t.g) else t.g for t, at in zip(parts, index, strict=True)]
    total = sum(len(c) for c in codes)
    pieces = max(1, total // SLICE)
    bounds = np.linspace(0, len(groups), pieces + 1).astype(np.int64)
    cuts = [np.searchsorted(c, bounds) for c in codes]
    sketched_groups = sketched(rows)
    # Each range's entries are written into arrays sized for all of them (the fold only
    # shrinks), and the unused tail is cut off at the end: no second copy of every column.
    g: np.ndarray = np.empty(total, dtype=np.int64)
    key: np.ndarray = np.empty(total)
    value: np.ndarray = np.empty(total)
    pos, neg = np.empty(total, dtype=dtype), np.empty(total, dtype=dtype)
    filled = 0
    for i in range(pieces):
        sl = [slice(int(cut[i]), int(cut[i + 1])) for cut in cuts]
        pg = np.concatenate([c[s] for c, s in zip(codes, sl, strict=True)]).astype(np.int64)
        if len(pg) == 0:
            continue
        pkey = np.concatenate([t.key[s] for t, s in zip(parts, sl, strict=True)])
        pvalue = np.concatenate([t.value[s] for t, s in zip(parts, sl, strict=True)])
        bucketed = np.concatenate([t.bucketed[s] for t, s in zip(parts, sl, strict=True)])
        ppos = np.concatenate([t.pos[s] for t, s in zip(parts, sl, strict=True)])
        pneg = np.concatenate([t.neg[s] for t, s in zip(parts, sl, strict=True)])
        convert = sketched_groups[pg] & ~bucketed
        if convert.any():
            assert mapping is not None
            pkey[convert] = mapping.keys(pkey[convert])
        reduced = _sort_reduce(
            pg, pkey, [ppos.astype(dtype), pneg.astype(dtype)], pvalue, presorted_runs=True
        )
        end = filled + len(reduced[0])
        for column, piece in zip((g, key, pos, neg, value), reduced, strict=True):
            column[filled:end] = piece
        filled = end
    # The state keeps the arrays: cut to size by a copy when the fold shrank them much.
    shrunk = filled < 0.9 * total
    g, key, pos, neg, value = (
        c[:filled].copy() if shrunk else c[:filled] for c in (g, key, pos, neg, value)
    )
    return _Table(groups, rows, g, key, pos, neg, value, sketched_groups[g])


_INT_LIMIT = 2**62  # integer sums below this cannot overflow int64


def _group_sums(
    pos: np.ndarray, neg: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per run of entries (one group each, ascending by score): positive weight ``P``,
    negative weight ``N`` and ``sum pos * (negatives below + neg / 2)``, the AUC numerator.

    Integer counts take exact integer prefix sums: the numerator is ``(sum pos (2 cum - neg)
    - 2 before P) / 2`` with ``cum`` the running negative count and ``before`` the negatives
    of the earlier groups (a few integer passes, no gather). Weights, or counts whose products
    could overflow, take float sums of the within-group ranks, each group's running sum
    started from zero (:func:`_run_cumsum`), totals segmented by ``reduceat``.
    """
    if pos.dtype.kind == "i" and neg.dtype.kind == "i":
        cum_n = np.cumsum(neg)
        before = cum_n[starts] - neg[starts]
        cum_p = np.cumsum(pos)
        big_p = cum_p[ends] - cum_p[starts] + pos[starts]
        big_n = cum_n[ends] - before
        total_p, total_n = int(cum_p[-1]), int(cum_n[-1])
        if 2 * total_p * total_n + total_p < _INT_LIMIT:
            twice = cum_n + cum_n
            twice -= neg
            twice *= pos
            acc = np.cumsum(twice)
            inner = acc[ends] - acc[starts] + twice[starts] - 2 * before * big_p
            return big_p.astype(np.float64), big_n.astype(np.float64), inner * 0.5
        big_p, big_n = big_p.astype(np.float64), big_n.astype(np.float64)
    else:
        big_p = np.add.reduceat(pos.astype(np.float64), starts)
        big_n = np.add.reduceat(neg.astype(np.float64), starts)
    # Within-group ranks entry by entry, each group's running sum started from zero: a running
    # total over every group, less the earlier groups' part, lost a light group's weights to
    # the rounding of heavy groups before it (0.8.7: exact GAUC off by 0.05 at a weight ratio
    # of 1e13, with a bound of 0).
    below = _run_cumsum(neg.astype(np.float64), starts, ends - starts + 1)
    below -= 0.5 * neg  # (the running sum holds the entry's own negatives: half of them)
    below *= pos
    return big_p, big_n, np.add.reduceat(below, starts)


#: Up to this many distinct run lengths, runs are summed length by length (no padding);
#: past it, by powers of two (padded), so that the passes stay O(log longest).
_EXACT_LENGTHS = 256


def _run_cumsum(x: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Running sums of ``x`` within each run ``x[starts[i] : starts[i] + lengths[i]]`` (runs
    tile ``x``), each from zero. Runs are summed together as the rows of a matrix
    (``np.cumsum`` along rows adds in order): runs of one length when there are few lengths,
    else runs whose lengths share a power of two (``2**(e-1) < length <= 2**e``), zero-padded:
    O(log longest) numpy passes over at most twice the entries, whatever the spread of the
    group sizes (one pass per length was 2.6x slower on heavy-tailed sizes)."""
    out = np.empty_like(x)
    if not len(lengths):
        return out
    few = np.count_nonzero(np.bincount(lengths)) <= _EXACT_LENGTHS
    key = lengths if few else np.frexp((lengths - 1).astype(np.float64))[1]
    small = int(key.max()) < 1 << 16  # (a radix sort for 16-bit keys)
    by_key = np.argsort(key.astype(np.uint16) if small else key, kind="stable")
    ordered = key[by_key]
    edges = [0, *(np.flatnonzero(ordered[1:] != ordered[:-1]) + 1).tolist(), len(ordered)]
    last = len(x) - 1
    for a, b in pairwise(edges):
        runs = by_key[a:b]
        first, size = starts[runs], lengths[runs]
        width = int(size.max())
        if width == 1:
            out[first] = x[first]
            continue
        at = first[:, None] + np.arange(width)
        if few:  # one length: every position is the run's
            out[at] = np.cumsum(x[at], axis=1)
            continue
        valid = np.arange(width) < size[:, None]
        sums = np.cumsum(np.where(valid, x[np.minimum(at, last)], 0.0), axis=1)
        out[at[valid]] = sums[valid]
    return out


#: Below this many (positive, negative) pairs per table, every sum of ``auc_from_table`` is an
#: exact float, so integer sums give the same AUC to the bit.
_EXACT_PAIRS = 2**52


def auc_of_counts(pos: list[np.ndarray], neg: list[np.ndarray]) -> np.ndarray | None:
    """The AUC of many tables of integer counts at once (each ascending by score), by
    :func:`_group_sums` over their concatenation: ``auc_from_table(...)[0]`` of each, equal to
    the bit. ``None`` when there is no table, a table is empty, one holds ``2**52`` pairs or
    more, or the integer sums could overflow (then float sums may round differently: compute
    the tables one by one).

    Below ``2**52`` pairs the numerator ``sum_i p_i (below_i + n_i / 2)`` and ``P * N`` are
    exact floats, as are the per-table computation's float sums, so the one division rounds
    the same way in both.
    """
    lengths = np.fromiter(map(len, pos), dtype=np.int64, count=len(pos))
    if not len(lengths) or not bool(lengths.all()):
        return None  # no run to segment
    ends = np.cumsum(lengths)
    return auc_of_runs(np.concatenate(pos), np.concatenate(neg), ends - lengths, ends)


def auc_of_runs(
    pos: np.ndarray, neg: np.ndarray, starts: np.ndarray, stops: np.ndarray
) -> np.ndarray | None:
    """:func:`auc_of_counts` of the tables ``pos[starts[i]:stops[i]]`` (and ``neg``) of one
    concatenation, each non-empty; ``None`` as there."""
    if not len(starts) or not bool((stops > starts).all()):
        return None
    if pos.dtype.kind != "i" or neg.dtype.kind != "i":
        return None
    p = pos.astype(np.int64, copy=False)
    n = neg.astype(np.int64, copy=False)
    if 2 * int(p.sum()) * int(n.sum()) + int(p.sum()) >= _INT_LIMIT:
        return None  # _group_sums would take its float path
    big_p, big_n, numerator = _group_sums(p, n, starts, stops - 1)
    pairs = big_p * big_n
    if not bool((pairs < _EXACT_PAIRS).all()):
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        value = numerator / pairs
    out: np.ndarray = np.where(pairs > 0, np.clip(value, 0.0, 1.0), np.nan)
    return out


def _scatter(values: np.ndarray, at: np.ndarray, size: int, fill: float = 0.0) -> np.ndarray:
    out = np.full(size, fill)
    out[at] = values
    return out


def tiny_groups_scaled(
    pos: np.ndarray, neg: np.ndarray, starts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Float weights ``pos`` and ``neg`` (runs of one group each, from ``starts``) with, in
    every group, each class whose largest weight is below ``TINY_WEIGHT`` multiplied by the
    power of two that brings that weight to [0.5, 1); and those powers per run, for ``pos`` and
    for ``neg`` (None when no group needs one for that class).

    Products of a positive's and a negative's weight would underflow otherwise (1e-162 squared
    is 0). A group's AUC (and its bound) is bilinear in its two classes' weights, so the
    scalings cancel exactly. Per group and per class: one power for the whole table, set by the
    heaviest weight of any group, left a light group beside a heavy one in the underflow
    (0.8.12: its AUC wrong or the group left out)."""
    out: list[np.ndarray] = []
    shifts: list[np.ndarray | None] = []
    lengths = np.diff(np.append(starts, len(pos)))
    for w in (pos, neg):
        if not ((w > 0.0) & (w < TINY_WEIGHT)).any():  # (no tiny weight: the common case)
            out.append(w)
            shifts.append(None)
            continue
        top = np.maximum.reduceat(w, starts)
        tiny = (top > 0.0) & (top < TINY_WEIGHT)
        shift = np.where(tiny, -np.frexp(top)[1], 0)
        out.append(np.ldexp(w, np.repeat(shift, lengths)))
        shifts.append(shift)
    return out[0], out[1], shifts[0], shifts[1]


def union_labels(
    label_sets: list[np.ndarray], row_sets: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """The sorted union of sorted, distinct label sets with their row counts summed, and for
    each set the position of each of its labels in the union. One stable sort of the sets'
    concatenation: sorted runs, which timsort merges in about linear time."""
    labels = np.concatenate(label_sets)
    rows = np.concatenate(row_sets).astype(np.int64, copy=False)
    if len(labels) == 0:
        return labels, rows, [np.zeros(0, dtype=np.int64) for _ in label_sets]
    cuts = np.cumsum([len(x) for x in label_sets])[:-1]
    if labels.dtype.kind == "i":
        lo = min(int(x[0]) for x in label_sets if len(x))
        hi = max(int(x[-1]) for x in label_sets if len(x))
        if hi - lo < 4 * len(labels) + 4096:
            # Integer groups of a compact range: a presence table instead of a sort.
            offset = labels - lo
            present = np.zeros(hi - lo + 1, dtype=bool)
            present[offset] = True
            rank = np.cumsum(present, dtype=np.int64) - 1
            union = np.flatnonzero(present)
            # Row counts are below the count bound (2**53): exact as float64 sums.
            summed = np.bincount(offset, weights=rows, minlength=hi - lo + 1)[union]
            out = (union + lo).astype(labels.dtype)
            return out, summed.astype(np.int64), np.split(rank[offset], cuts)
    order = np.argsort(labels, kind="stable")
    ordered = labels[order]
    new = np.empty(len(ordered), dtype=bool)
    new[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    position = np.empty(len(labels), dtype=np.int64)
    position[order] = np.cumsum(new) - 1
    return ordered[starts], np.add.reduceat(rows[order], starts), np.split(position, cuts)
