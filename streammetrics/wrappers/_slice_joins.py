"""Whether the slices of ``Sliced`` states can merge, checked before anything changes.

Across every operand of a merge, the slice keys must be of one kind and their union within
``max_slices`` (:func:`check_keys_join`). A window also checks each slice of a changed slot
against its namesakes in its other slots (:func:`check_slices_join`), as far as a budget of
slice states read and built allows: a slice read from a packed table of many slices is built
first (some 0.2 ms), so a long window of many slices is checked by keys alone.
"""

from __future__ import annotations

from typing import Any

from ..errors import IncompatibleStateError
from ._slice_table import SliceTable

__all__ = ["PER_SLICE_READS", "check_keys_join", "check_slices_join"]

#: The most slice states a window compares to check one changed slot against its other slots
#: (``_check_slices_join``; a few µs each when held one state per slice).
PER_SLICE_READS = 4096


def _builds(table: SliceTable) -> bool:
    """Whether reading one slice of ``table`` builds its state (a packed table not yet
    materialised, some 0.2 ms a slice) rather than looking it up."""
    return table._pack is not None and table._dict is None


def check_slices_join(table: SliceTable, others: list[Any], limit: int) -> None:
    """``IncompatibleStateError`` unless each slice of ``table`` merges with its namesakes in
    ``others`` (``Sliced`` states which already join each other; a window's other slots):
    checked when that builds at most ``limit`` slice states from packed tables (some 0.2 ms
    each) and compares at most ``PER_SLICE_READS`` slice states in all, else not at all.
    (0.8.11 counted every state read against ``limit``, built or not: a slice held in more
    than 64 slots of a window went unchecked, and a third label of a binary ``F1`` slice, one
    row, made the window's value and bytes fail.)"""
    builds = len(table) if _builds(table) else 0
    reads = len(table)
    if builds > limit or reads > PER_SLICE_READS:
        return
    holders: list[tuple[Any, list[Any]]] = []
    for key in table.key_list():
        found = [o for o in others if o.slices.has(key)]
        reads += len(found)
        builds += sum(1 for o in found if _builds(o.slices))
        if builds > limit or reads > PER_SLICE_READS:
            return
        if found:
            holders.append((key, found))
    for key, found in holders:
        theirs = tuple(o.slices.state(key) for o in found)
        mine = table.state(key)
        try:
            if mine._joins_pairwise:
                mine._check_compatible(theirs[-1])
            mine._check_compatible_together(theirs)
        except IncompatibleStateError as exc:
            raise IncompatibleStateError(f"slice {key!r}: {exc}") from None


def check_keys_join(tables: list[SliceTable], limit: int | None) -> None:
    """Key kinds and ``max_slices`` (``limit``) across the slice tables of every operand of a
    merge of several."""
    kinds = [k for k in (t.kind() for t in tables) if k is not None]
    for kind in kinds[1:]:
        if kind != kinds[0]:
            raise IncompatibleStateError(
                f"slice keys of kind {kinds[0]} cannot meet keys of {kind}"
            )
    if limit is not None:
        union = set().union(*(t.key_list() for t in tables))
        if len(union) > limit:
            raise IncompatibleStateError(
                f"the merge would hold {len(union)} slices, past max_slices={limit}"
            )
