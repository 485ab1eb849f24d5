"""The fold of a partial read of integer counts without a sort of the main table's entries.

A read after an update folds the entries of the groups it touched: those the main table holds
(about rows / groups each: 95,000 entries after 1,000 rows over 10,000 groups of a million
rows) and the few the queued tables hold. ``fold_tables`` concatenated them all and sorted and
reduced every entry, most of a 7 ms read. But the main table's entries are already canonical:
sorted by (group, key), keys distinct within a group, bucketed where their group is sketched.
So only the queued entries are folded (a small sort), and then merged into the main table's
run by a search of each queued entry's place: added to the entry of the same key, else
inserted. Two sorted tables merged by position give what sorting their union gives, and
integer sums are exact in any order, so the table is ``fold_tables``'s to the bit (float
weights would be summed in another order: weighted blocks keep ``fold_tables``).

The main table's entries of a group that became sketched since the main table was folded are
not yet bucket keys: they are folded with the queued ones (a group is sketched past
``max_exact`` rows, so they are few).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._group_table import _sort_reduce, _Table, composite, group_starts

if TYPE_CHECKING:
    from .grouped import GroupedScores

__all__ = ["held_codes", "merged_read_table"]

_COLUMNS = ("key", "pos", "neg", "value", "bucketed")


def held_codes(labels: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The positions in ``labels`` (sorted, distinct) of those of ``wanted`` it holds."""
    at = np.searchsorted(labels, wanted)
    inside = at < len(labels)
    at = at[inside]
    found: np.ndarray = at[labels[at] == wanted[inside]]
    return found


def _gather(
    t: _Table, runs: tuple[np.ndarray, np.ndarray] | None, names: tuple[str, ...] = _COLUMNS
) -> tuple[np.ndarray, ...]:
    """The columns ``names`` of ``t`` (all its entries when ``runs`` is None), or of the runs
    of entries ``starts[i] : starts[i] + lengths[i]`` for ``runs = (starts, lengths)``,
    concatenated (one gather per column)."""
    if runs is None:
        return tuple(getattr(t, name) for name in names)
    starts, lengths = runs
    total = int(lengths.sum())
    offsets = np.cumsum(lengths) - lengths
    take = np.arange(total, dtype=np.int64) + np.repeat(starts - offsets, lengths)
    return tuple(getattr(t, name)[take] for name in names)


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


def merged_read_table(
    block: GroupedScores, changed: np.ndarray, queued: list[_Table]
) -> _Table | None:
    """The canonical table of ``block``'s groups among ``changed`` (sorted, distinct), with
    ``queued`` the queued tables restricted to them; integer counts only. Equal, array for
    array, to ``fold_tables`` of the main table's and the queued tables' entries of those
    groups (``tests/test_group_reads.py``); None in the rare case where the merge cannot place
    an entry (two keys of a group equal in their top 50 bits or so): fold them then."""
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
    held = (np.repeat(at, lengths), *_gather(main, (starts, lengths), _COLUMNS[:4]))
    out = _merged(held, folded, len(groups))
    if out is None:
        return None
    g, key, pos, neg, value = out
    return _Table(groups, rows, g, key, pos, neg, value, sketched[g])


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
    held: tuple[np.ndarray, ...], small: tuple[np.ndarray, ...], groups: int
) -> tuple[np.ndarray, ...] | None:
    """``(g, key, pos, neg, value)`` of the canonical entries ``held`` with the canonical
    entries ``small`` merged in: each one added to the held entry of its group and key, or
    inserted where it sorts. None when a place is in doubt (see :func:`composite`)."""
    g, key, pos, neg, value = held
    sg, skey, spos, sneg, svalue = small
    if not len(sg):
        return held
    bits = max(groups.bit_length(), 1)
    mine = composite(g, key, bits)
    at = np.searchsorted(mine, composite(sg, skey, bits))
    hit = at < len(mine)
    hit[hit] = mine[at[hit]] == composite(sg[hit], skey[hit], bits)
    same = at[hit]
    if not bool((key[same] == skey[hit]).all()):
        return None  # (distinct keys sharing their composite)
    # Every held entry before ``at`` sorts strictly before the queued one (a smaller
    # composite), every one from ``at`` on after it, or has its group and key (a hit). The
    # held columns are fresh gathers: written in place.
    pos[same] += spos[hit]
    neg[same] += sneg[hit]
    value[same] = np.where(value[same] == svalue[hit], value[same], np.nan)
    new = np.flatnonzero(~hit)
    if not len(new):
        return held
    # The new entries' places in the merged columns, and the held entries' in the others.
    placed = at[new] + np.arange(len(new))
    fresh = np.zeros(len(g) + len(new), dtype=bool)
    fresh[placed] = True
    out = []
    for column, extra in zip(held, small, strict=True):
        merged = np.empty(len(fresh), dtype=column.dtype)
        merged[placed] = extra[new]
        merged[~fresh] = column
        out.append(merged)
    return tuple(out)
