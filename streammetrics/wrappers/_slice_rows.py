"""One-sample requests that bring a slice new labels, for ``Sliced`` of a metric with a label
rule.

``Sliced``'s per-request buffer takes a row whose labels its slice has taken before (or, for
metrics that accept any label set, any slice). A binary ``F1`` judges each slice's own label
set (at most two labels, ``pos_label`` among two), so a slice's first row, and a row bringing
its second label, took the ordinary update: some 100-140 µs for every new user's first
request (0.8.29). Such a row is certain when the slice's labels, held and waiting, with the
row's own pass the metric's rule (and its key, for a new slice, passes the key checks):
:func:`slice_row_plan` says so, and the buffer takes it; ``Sliced._push`` then notes the row's
labels as waiting for its slice (``Sliced._waiting_labels``, until the buffer folds) and
learns them with its key, so the slice's next rows with those labels are buffered as any
held slice's are.
"""

from __future__ import annotations

from typing import Any

from .._row_checks import _key_kind
from ._packing import library_state
from ._slice_table import slice_kind

__all__ = ["slice_row_plan"]

_INT64 = 1 << 63


def _label_kind(value: Any) -> str | None:
    """``"int"`` or ``"str"`` for a label ``update`` takes as it is, given as a Python value:
    an int within int64 (not a bool), or an ASCII string without NULs (numpy keeps it whole);
    None for anything else (the ordinary update decides)."""
    kind = type(value)
    if kind is int:
        return "int" if -_INT64 <= value < _INT64 else None
    if kind is str and value.isascii() and "\x00" not in value:
        return "str"
    return None


def slice_row_plan(sliced: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``(row, False, key)`` when the one-sample request ``args`` (true label, predicted
    label, slice key; no keyword) certainly passes, its slice's labels (held, and waiting in
    the buffer) with its own passing the wrapped metric's label rule; else None. No change:
    ``Sliced._push`` of the plan notes it. Lock held."""
    rows = sliced._rows
    if rows is None or kwargs or len(args) != 3 or rows.n != 3 or not rows.scalars:
        return None  # (scalars not trusted: none yet, or near the count bound)
    template = sliced._template
    label_rule = getattr(template, "_label_rule", None)
    rule = None if label_rule is None else label_rule()
    if rule is None or not library_state(template):
        return None  # (a subclass's own label check: only its update can tell)
    true, pred, by = args
    kind = _label_kind(true)
    if kind is None or _label_kind(pred) != kind:
        return None  # (labels of two kinds: the update refuses the row)
    key_kind = _key_kind(by)
    if key_kind is None or (key_kind == "str" and by.endswith("\x00")):
        return None
    key = int(by) if key_kind == "int" else str(by)
    table = sliced._unfolded("slices")
    labels = {true, pred}
    if table.has(key):
        if table._pack is not None:
            return None  # (a packed table: the update reads the slice's labels)
        held = table.view()[key]._unfolded("counts").rows
        if len(held) and (held.dtype.kind == "U") != (kind == "str"):
            return None  # (labels of another kind than the slice's: refused)
        labels.update(held.tolist())
    else:
        new = sliced._new_keys or ()
        if key not in new:
            kinds = table.kind()
            if kinds is None and new:
                kinds = slice_kind(next(iter(new)))
            if kinds not in (None, key_kind):
                return None  # (keys of another kind than the stream's: refused)
            limit = sliced._config["max_slices"]
            if limit is not None and len(table) + len(new) + 1 > limit:
                return None
    waiting = (sliced._waiting_labels or {}).get(key)
    if waiting:
        if next(iter(waiting)).__class__ is not true.__class__:
            return None
        labels |= waiting
    most, must = rule
    if len(labels) > most or (len(labels) == most and must not in labels):
        return None  # (the slice would refuse it)
    return args, False, key
