"""The fold of a partial read of integer counts without a sort of the main table's entries.

A read after an update folds the entries of the groups it touched: those the main table holds
(about rows / groups each: 95,000 entries after 1,000 rows over 10,000 groups of a million
rows) and the few the queued tables hold. ``fold_tables`` concatenated them all and sorted and
reduced every entry, most of a 7 ms read. But the main table's entries are already canonical:
sorted by (group, key), keys distinct within a group, bucketed where their group is sketched.
So only the queued entries are folded (a small sort), and then merged into the main table's
run by a binary search of each queued entry's place among its group's keys: added to the
entry of the same key, else inserted. Two sorted tables merged by position give what sorting
their union gives, and integer sums are exact in any order, so the table is
``fold_tables``'s to the bit (float weights would be summed in another order: weighted blocks
keep ``fold_tables``).

The main table's entries of a group that became sketched since the main table was folded are
not yet bucket keys: they are folded with the queued ones (a group is sketched past
``max_exact`` rows, so they are few).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._group_table import _sort_reduce, _Table, group_starts

if TYPE_CHECKING:
    from .grouped import GroupedScores

__all__ = ["held_codes", "merged_read_table", "runs_index"]


def held_codes(labels: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The positions in ``labels`` (sorted, distinct) of those of ``wanted`` it holds."""
    at = np.searchsorted(labels, wanted)
    inside = at < len(labels)
    at = at[inside]
    found: np.ndarray = at[labels[at] == wanted[inside]]
    return found


def _gather(t: _Table, runs: tuple[np.ndarray, np.ndarray] | None) -> tuple[np.ndarray, ...]:
    """``key, pos, neg, value, bucketed`` of ``t`` (all its entries when ``runs`` is None),
    or of the runs of entries ``starts[i] : starts[i] + lengths[i]`` for ``runs = (starts,
    lengths)``, concatenated (one gather per column)."""
    columns = (t.key, t.pos, t.neg, t.value, t.bucketed)
    if runs is None:
        return columns
    take = runs_index(*runs)
    return tuple(c[take] for c in columns)


def _union(
    changed: np.ndarray, label_sets: list[np.ndarray], row_sets: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """``union_labels`` of label sets that are all among ``changed`` (sorted, distinct): the
    labels held, each one's rows summed, and each set's positions in the union; a search of
    each set instead of a sort of them all. The labels are of the dtype the sets' concatenation
    has (strings as wide as the widest), as ``union_labels`` gives."""
    places = [np.searchsorted(changed, labels) for labels in label_sets]
    held = np.zeros(len(changed), dtype=bool)
    for at in places:
        held[at] = True
    rank = np.cumsum(held) - 1
    at = np.concatenate(places)
    # Row counts are below the count bound (2**53): exact as float64 sums.
    rows = np.bincount(at, weights=np.concatenate(row_sets), minlength=len(changed))[held]
    groups = changed[held].astype(np.result_type(*label_sets), copy=False)
    return groups, rows.astype(np.int64), [rank[p] for p in places]


def merged_read_table(block: GroupedScores, changed: np.ndarray, queued: list[_Table]) -> _Table:
    """The canonical table of ``block``'s groups among ``changed`` (sorted, distinct), with
    ``queued`` the queued tables restricted to them; integer counts only. Equal, array for
    array, to ``fold_tables`` of the main table's and the queued tables' entries of those
    groups (``tests/test_group_reads.py``)."""
    main = block._main
    codes = held_codes(main.labels, changed)
    main_rows = main.rows[codes]
    label_sets = [main.labels[codes], *(t.labels for t in queued)]
    groups, rows, index = _union(changed, label_sets, [main_rows, *(t.rows for t in queued)])
    sketched = block._sketched(rows)
    bounds = group_starts(main)
    starts = bounds[codes]
    lengths = bounds[codes + 1] - starts
    at = index[0]
    # The queued entries, their groups coded as in ``groups``: (g, key, pos, neg, value,
    # bucketed) per table.
    small = [(place[t.g], *_gather(t, None)) for t, place in zip(queued, index[1:], strict=True)]
    # Main-table groups sketched since that table was folded: their entries hold raw scores,
    # to be bucketed and folded with the queued entries.
    moving = sketched[at] & ~block._sketched(main_rows)
    if moving.any():
        g = np.repeat(at[moving], lengths[moving])
        small.append((g, *_gather(main, (starts[moving], lengths[moving]))))
        starts, lengths, at = starts[~moving], lengths[~moving], at[~moving]
    folded = _fold_small(small, sketched, block)
    held = np.zeros(len(groups), dtype=np.int64)  # each group's entries in the main table
    held[at] = lengths
    g, key, pos, neg, value = _merged(main, runs_index(starts, lengths), held, folded)
    return _Table(groups, rows, g, key, pos, neg, value, sketched[g])


def runs_index(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The entries ``starts[i] : starts[i] + lengths[i]`` of every run, in order."""
    offsets = np.cumsum(lengths) - lengths
    index: np.ndarray = np.arange(int(lengths.sum()), dtype=np.int64)
    index += np.repeat(starts - offsets, lengths)
    return index


def _fold_small(
    parts: list[tuple[np.ndarray, ...]], sketched: np.ndarray, block: GroupedScores
) -> tuple[np.ndarray, ...]:
    """``(g, key, pos, neg, value)`` of the entries ``parts`` (each ``(g, key, pos, neg,
    value, bucketed)``, ``g`` a code of the union), bucketed where their group is
    ``sketched`` and folded: what ``fold_tables`` does to one piece of entries (the same
    conversion and sort)."""
    if not parts:
        e = np.zeros(0)
        return np.zeros(0, np.int64), e, np.zeros(0, np.int64), np.zeros(0, np.int64), e
    g, key, pos, neg, value, bucketed = (np.concatenate(c) for c in zip(*parts, strict=True))
    g = g.astype(np.int64, copy=False)
    convert = sketched[g] & ~bucketed
    if convert.any():
        assert block.mapping is not None
        key[convert] = block.mapping.keys(key[convert])
    return _sort_reduce(g, key, [pos, neg], value, presorted_runs=True)


def _merged(
    main: _Table, take: np.ndarray, held: np.ndarray, small: tuple[np.ndarray, ...]
) -> tuple[np.ndarray, ...]:
    """``(g, key, pos, neg, value)`` of the main table's entries ``take`` (canonical; ``held[i]``
    of them in group ``i``) with the canonical entries ``small`` merged in: each one added to
    the held entry of its group and key, or inserted where it sorts. Each column of the main
    table is gathered once, straight into its place in the merged column."""
    sg, skey, spos, sneg, svalue = small
    key = main.key[take]
    runs = np.zeros(len(held) + 1, dtype=np.int64)
    np.cumsum(held, out=runs[1:])
    at = _places(key, runs[sg], held[sg], skey)
    hit = at < runs[sg + 1]
    hit[hit] = key[at[hit]] == skey[hit]
    new = np.flatnonzero(~hit)
    size = len(take) + len(new)
    # The new entries' places in the merged columns (``at`` ascends: ``small`` is sorted as
    # the held entries are), the held entries' in the others, and the hits' among those.
    placed = at[new] + np.arange(len(new))
    source = np.zeros(size, dtype=np.int64)
    fresh = np.zeros(size, dtype=bool)
    fresh[placed] = True
    source[~fresh] = take
    same = at[hit]
    same += np.searchsorted(at[new], same, "right")
    out = []
    for column, extra in zip((main.key, main.pos, main.neg, main.value), small[1:], strict=True):
        merged = column[source]
        merged[placed] = extra[new]
        out.append(merged)
    key, pos, neg, value = out
    pos[same] += spos[hit]
    neg[same] += sneg[hit]
    value[same] = np.where(value[same] == svalue[hit], value[same], np.nan)
    held = held + np.bincount(sg[new], minlength=len(held))
    g = np.repeat(np.arange(len(held), dtype=np.int64), held)
    return g, key, pos, neg, value


def _places(
    key: np.ndarray, first: np.ndarray, count: np.ndarray, wanted: np.ndarray
) -> np.ndarray:
    """For each ``wanted[j]``, the first of the sorted keys ``key[first[j] : first[j] +
    count[j]]`` not below it (or the end of that run): a binary search of every run at once,
    ``log2(longest run)`` vectorised steps over the wanted keys only."""
    lo: np.ndarray = first
    for _ in range(int(count.max(initial=0)).bit_length()):
        half = count >> 1
        mid = lo + half
        right = (count > 0) & (key.take(mid, mode="clip") < wanted)
        lo = np.where(right, mid + 1, lo)
        count = np.where(right, count - half - 1, half)
    return lo
