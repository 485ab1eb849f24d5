"""Per-group reads of a :class:`~streammetrics.states.grouped.GroupedScores` block that only
compute again the groups changed since the last read.

A server updates ``GAUC`` per request and reads it between requests. Folding the queued
batches into the whole table and computing every group again cost O(entries) per read (30 ms
at a million entries after a one-row update). A block instead keeps its last read (the groups
and one array per group of values) and the labels of the groups each later batch touched. A
read then:

1. takes the entries of just the touched groups out of the main table and every queued
   table (a search per table, no pass over the entries);
2. folds them as the full fold would (the same tables in the same order, so each group's
   entries and sums are the ones a full fold gives it); integer counts by folding just the
   queued entries and merging them into the main table's canonical run
   (:mod:`~streammetrics.states._group_merge`, the same table without a sort of its entries);
3. computes those groups, and splices them into the last read's arrays.

Each group's values depend on that group's entries alone, so the read holds the same floats a
full fold and read give (``tests/test_group_reads.py`` compares them bit for bit). A read is
made in full when there is no last read, when the touched groups are more than a quarter of
them, or when integer sums could take the float path (a group's sums then depend on the
totals). Queued tables of integer counts are first folded among themselves by size (each size
class of four tables into one), so a read searches O(log) tables however many batches came,
and into the main table once they hold an eighth of its entries (:data:`READ_FOLD_SHARE`);
float weights are never folded out of order (their sums would round differently), so a
weighted block reads in full past :data:`MAX_WEIGHTED_TABLES` queued tables.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ._group_merge import held_codes, merged_read_table, runs_index
from ._group_table import _INT_LIMIT, _Table, fold_tables, group_starts

if TYPE_CHECKING:
    from .grouped import GroupedScores

__all__ = ["GroupRead", "read_groups", "restricted"]

#: A read is made in full when more than this share of its groups changed.
FULL_SHARE = 0.25
#: A weighted block with more queued tables than this reads in full (see the module doc).
MAX_WEIGHTED_TABLES = 16
#: Integer queued tables of one size class (by powers of FAN) are folded together when FAN of
#: them are queued.
FAN = 4
#: A partial read of integer counts folds the queue into the main table first once it holds
#: more than this share of the main table's entries: every read gathers the changed groups'
#: entries from every queued table, so a growing queue made each read dearer (a served
#: ``GAUC`` of 1M rows read after every 1,000: 4.4 -> 9.5 ms over 300 reads, 5.4 after a fold).
READ_FOLD_SHARE = 0.125

Arrays = tuple[np.ndarray, ...]
#: ``(name, groups, arrays)``: the last read of a block.
GroupRead = tuple[str, np.ndarray, Arrays]


def restricted(t: _Table, labels: np.ndarray) -> _Table:
    """The entries of ``t``'s groups among ``labels`` (sorted, distinct), as a table of those
    groups: a search of its labels, two of its group codes and one gather per column,
    O(len(labels) log + entries taken)."""
    codes = held_codes(t.labels, labels)
    if not len(codes):  # (most queued tables hold none of a small update's groups)
        e = slice(0, 0)
        return _Table(
            t.labels[e], t.rows[e], t.g[e], t.key[e], t.pos[e], t.neg[e], t.value[e], t.bucketed[e]
        )
    starts = np.searchsorted(t.g, codes, "left")
    lengths = np.searchsorted(t.g, codes, "right") - starts
    take = runs_index(starts, lengths)
    g = np.repeat(np.arange(len(codes), dtype=np.int64), lengths)
    columns = (t.key[take], t.pos[take], t.neg[take], t.value[take], t.bucketed[take])
    return _Table(t.labels[codes], t.rows[codes], g, *columns)


def spliced(
    labels: np.ndarray, arrays: Arrays, new_labels: np.ndarray, new_arrays: Arrays
) -> tuple[np.ndarray, Arrays]:
    """The union of two sorted label sets, with each label's values from ``new_arrays`` where
    it is among ``new_labels``, else from ``arrays``."""
    at = np.searchsorted(labels, new_labels)
    known = at < len(labels)
    known[known] = labels[at[known]] == new_labels[known]
    # (labels of the dtype a full fold's union would have: strings as wide as the widest)
    kind = np.result_type(labels, new_labels)
    if known.all():
        labels = labels.astype(kind, copy=False)
        arrays = tuple(a.copy() for a in arrays)
    else:
        # The new labels go in where they sort, each array grown the same way: no search of
        # every held label (12 ms at a million groups).
        where = at[~known]
        labels = np.insert(labels.astype(kind, copy=False), where, new_labels[~known])
        arrays = tuple(np.insert(a, where, 0) for a in arrays)
        at = np.searchsorted(labels, new_labels)
    for a, values in zip(arrays, new_arrays, strict=True):
        a[at] = values
    return labels, arrays


def _size_class(t: _Table) -> int:
    size, level = len(t.g), 0
    while size >= FAN:
        size //= FAN
        level += 1
    return level


def _fold_by_size(block: GroupedScores) -> None:
    """Fold the queued tables (integer counts) of each size class holding :data:`FAN` of them
    into one, until no class does: at most ``FAN - 1`` tables per class remain. The contents
    and the folded state's bytes are unchanged (integer sums are exact in any order)."""
    pending = block._pending
    while True:
        classes: dict[int, list[int]] = {}
        for i, t in enumerate(pending):
            classes.setdefault(_size_class(t), []).append(i)
        full = next((set(ix) for ix in classes.values() if len(ix) >= FAN), None)
        if full is None:
            break
        folded = fold_tables([pending[i] for i in sorted(full)], block.mapping, block._sketched)
        pending = [t for i, t in enumerate(pending) if i not in full] + [folded]
    block._pending = pending


def read_groups(
    block: GroupedScores, name: str, make: Callable[[_Table], Arrays]
) -> tuple[np.ndarray, Arrays]:
    """``(groups, make(table))`` of ``block`` as it is, ``make`` giving one array per group of
    a canonical table (aligned with its labels, each group's values from its entries alone);
    kept as the block's last read, and made again only for the groups changed since."""
    last, fresh = block._read, block._fresh
    if last is None or last[0] != name or fresh is None:
        return _read_all(block, name, make)
    if not fresh:
        return last[1], last[2]
    changed = np.unique(np.concatenate(fresh))
    integer = not block.weighted
    if (
        len(changed) > FULL_SHARE * len(last[1])
        or 2 * block._total * block._total + block._total >= _INT_LIMIT
        or (not integer and len(block._pending) > MAX_WEIGHTED_TABLES)
    ):
        return _read_all(block, name, make)
    if integer and sum(len(t.g) for t in block._pending) > READ_FOLD_SHARE * len(block._main.g):
        block._consolidate()  # (the values do not change: the kept read stays)
    elif integer and len(block._pending) >= FAN:
        _fold_by_size(block)
    queued = [restricted(t, changed) for t in block._pending]
    if integer:
        table = merged_read_table(block, changed, queued)
    else:
        table = fold_tables(
            [restricted(block._main, changed), *queued], block.mapping, block._sketched
        )
    labels, arrays = spliced(last[1], last[2], table.labels, make(table))
    block._read, block._fresh, block._fresh_size = (name, labels, arrays), [], 0
    return labels, arrays


def _read_all(
    block: GroupedScores, name: str, make: Callable[[_Table], Arrays]
) -> tuple[np.ndarray, Arrays]:
    table = block.table()
    arrays = make(table)
    if not block.weighted:
        group_starts(table)  # (for the partial reads to come: O(groups log entries) once)
    block._read, block._fresh, block._fresh_size = (name, table.labels, arrays), [], 0
    return table.labels, arrays
