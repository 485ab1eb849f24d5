"""The wire form of :class:`~streammetrics.states.grouped.GroupedScores`: its canonical table
written in the compact schema 2 (0.8.0), and read back from untrusted bytes (schema 2, or
0.7.0's form) with every field checked before a block is built from it (a ``ValueError`` naming
the field otherwise, which ``loads`` reports as a ``StateDecodeError``)."""

from __future__ import annotations

from collections.abc import Callable
from math import isfinite
from operator import gt, lt
from typing import Any

import numpy as np

from .._codec import SMALL_CHECK, check_counts
from ._group_table import _Table
from ._narrow import (
    narrow_counts,
    narrow_floats,
    stepped_from_wire,
    stepped_to_wire,
    widened_counts,
    widened_floats,
)
from .labels import labels_from_wire, labels_to_wire
from .mappings import BucketMapping

__all__ = ["checked_table", "grouped_to_wire"]


def grouped_to_wire(groups: np.ndarray, rows: np.ndarray, t: _Table) -> dict[str, Any]:
    """Schema 2 (0.8.0): integer counts, row counts and sizes in the narrowest unsigned
    dtype that holds them; ``sketch_value`` carrying the one-distinct-score values of
    sketched entries only (an exact entry's value is its score); keys and values as
    float32 when every one is a float32 (scores of a float32 model); integer groups as the
    first one and the steps between them. About a quarter of the bytes of the 0.7.0 form
    (``value`` for every entry, all counts and groups int64), a sixth for float32 scores;
    :func:`checked_table` still reads the 0.7.0 form."""
    sizes = np.bincount(t.g, minlength=len(groups)).astype(np.int64)
    counted = t.pos.dtype == np.int64
    stepped = groups.dtype.kind == "i" and len(groups) > 0
    return {
        "groups": stepped_to_wire(groups) if stepped else labels_to_wire(groups),
        "rows": narrow_counts(rows),
        "sizes": narrow_counts(sizes),
        "key": narrow_floats(t.key),
        "pos": narrow_counts(t.pos) if counted else t.pos,
        "neg": narrow_counts(t.neg) if counted else t.neg,
        "sketch_value": narrow_floats(t.value[t.bucketed]),
    }


def checked_table(
    wire: Any,
    mapping: BucketMapping | None,
    is_sketched: Callable[[np.ndarray], np.ndarray],
) -> _Table:
    """The canonical table of a block's wire form (schema 2, or 0.7.0's with ``value`` for every
    entry), checked. ``mapping``: the block's bucket grid (None: every group exact);
    ``is_sketched``: which groups of these row counts are sketched (the block's rule)."""
    common = {"groups", "rows", "sizes", "key", "pos", "neg"}
    if not isinstance(wire, dict) or set(wire) not in (
        common | {"sketch_value"},
        common | {"value"},
    ):
        raise ValueError(
            f"grouped scores need exactly the fields {sorted(common)} and "
            "'sketch_value' (or 'value', as 0.7.0 wrote)"
        )
    legacy = "value" in wire
    stepped = not legacy and isinstance(wire["groups"], dict)
    groups = stepped_from_wire(wire["groups"]) if stepped else labels_from_wire(wire["groups"])
    names = ("rows", "sizes", "key", "pos", "neg", "value" if legacy else "sketch_value")
    for name in names:
        if not isinstance(wire[name], np.ndarray) or wire[name].ndim != 1:
            raise ValueError(f"grouped scores: {name} must be a 1-D array")
    rows, sizes, key, pos, neg, value = (wire[name] for name in names)
    if legacy:
        if rows.dtype != np.int64 or sizes.dtype != np.int64:
            raise ValueError("grouped scores: rows and sizes must be int64")
        if pos.dtype != neg.dtype or pos.dtype not in (np.int64, np.float64):
            raise ValueError("grouped scores: pos and neg must both be int64 or float64")
    else:
        rows = widened_counts("grouped scores: rows", rows)
        sizes = widened_counts("grouped scores: sizes", sizes)
        key = widened_floats("grouped scores: key", key)
        value = widened_floats("grouped scores: sketch_value", value)
        if pos.dtype.kind == "u" and neg.dtype.kind == "u":
            pos = widened_counts("grouped scores: pos", pos)
            neg = widened_counts("grouped scores: neg", neg)
        elif pos.dtype != np.float64 or neg.dtype != np.float64:
            raise ValueError("grouped scores: pos and neg must both be unsigned or float64")
    if len(rows) != len(groups) or len(sizes) != len(groups):
        raise ValueError("grouped scores: one row count and one size per group")
    small = len(rows) <= SMALL_CHECK and len(key) <= SMALL_CHECK
    g = (_checked_small if small else _checked_entries)(rows, sizes, key, pos, neg, value)
    group_sketched = is_sketched(rows)
    sketched = group_sketched[g]
    held = int(sizes[group_sketched].sum())  # entries of sketched groups
    if legacy:
        exact = ~sketched
        if len(value) != len(key):
            raise ValueError("grouped scores: entry arrays do not match the sizes")
        if not np.array_equal(value[exact], key[exact]):
            raise ValueError("grouped scores: an exact entry's value must equal its score")
        sv = value[sketched]
    else:
        if len(value) != held:
            raise ValueError("grouped scores: one sketch_value per sketched entry")
        sv = value
        value = key.copy()
        value[sketched] = sv
    if held:
        assert mapping is not None
        sk = key if held == len(key) else key[sketched]
        known = ~np.isnan(sv)
        every = bool(known.all())
        sv_known, sk_known = (sv, sk) if every else (sv[known], sk[known])
        if not np.isfinite(sv_known).all():
            raise ValueError("grouped scores: values must be finite or nan")
        # (Only the values of sketched groups are read here: 0.8.15 gathered them from an
        # array of every entry, and checked every key's integrality, about half of the
        # time of decoding a GAUC state of few groups.)
        if not np.array_equal(mapping.keys(sv_known + 0.0), sk_known):
            raise ValueError("grouped scores: a bucket's value lies outside the bucket")
        if len(sv_known) and not mapping.holds(sv_known.min(), sv_known.max()):
            raise ValueError(f"grouped scores: a value lies outside score_type={mapping.name!r}'s")
        # Keys of known values are the mapping's (integers); those of unknown ones may
        # be anything, so their integrality is checked apart.
        unknown = sk[:0] if every else sk[~known]
        if mapping.size is not None and (
            sk.min() < 0 or sk.max() >= mapping.size or (unknown % 1 != 0).any()
        ):
            raise ValueError("grouped scores: bucket keys out of range")
    return _Table(groups, rows, g, key + 0.0, pos, neg, value, sketched)


def _checked_entries(
    rows: np.ndarray,
    sizes: np.ndarray,
    key: np.ndarray,
    pos: np.ndarray,
    neg: np.ndarray,
    value: np.ndarray,
) -> np.ndarray:
    """The checks of a table's groups and entries (their counts, sizes and keys); the group
    index of each entry."""
    if len(rows) and (rows.min() < 1 or sizes.min() < 0):
        raise ValueError("grouped scores: rows must be positive and sizes non-negative")
    if int(sizes.sum()) != len(key) or not len(key) == len(pos) == len(neg):
        raise ValueError("grouped scores: entry arrays do not match the sizes")
    if key.dtype != np.float64 or value.dtype != np.float64:
        raise ValueError("grouped scores: key and values must be float64")
    check_counts("grouped scores", rows, pos, neg)
    if len(pos) and not ((pos + neg) > 0).all():
        raise ValueError("grouped scores: an entry is empty")
    if sizes.max(initial=0) > rows.max(initial=0) or (sizes > rows).any():
        raise ValueError("grouped scores: a group has more entries than rows")
    g = np.repeat(np.arange(len(rows), dtype=np.int64), sizes)
    if pos.dtype == np.int64:
        # Exact integer sums per group, from one running total (each count column totals
        # at most 2**53: no overflow); 0.8.15's float bincount took 3x longer for few
        # groups.
        ends = np.cumsum(sizes)
        running = np.concatenate([[0], np.cumsum(pos + neg)])
        if not np.array_equal(running[ends] - running[ends - sizes], rows):
            raise ValueError("grouped scores: the counts of a group do not add up to its rows")
    if not np.isfinite(key).all():
        raise ValueError("grouped scores: keys must be finite")
    if ((g[1:] == g[:-1]) & (key[1:] <= key[:-1])).any():
        raise ValueError("grouped scores: keys must increase within a group")
    return g


def _checked_small(
    rows: np.ndarray,
    sizes: np.ndarray,
    key: np.ndarray,
    pos: np.ndarray,
    neg: np.ndarray,
    value: np.ndarray,
) -> np.ndarray:
    """:func:`_checked_entries` of at most ``SMALL_CHECK`` groups and entries, read as Python
    values: the same checks in the same order, so the same tables refused with the same
    messages (int64 sums wrap as numpy's do), without two dozen numpy calls whose fixed cost
    was most of a small ``GAUC`` state's ``loads``."""
    r, s = rows.tolist(), sizes.tolist()
    if r and (min(r) < 1 or min(s) < 0):
        raise ValueError("grouped scores: rows must be positive and sizes non-negative")
    entries = (sum(s) + 2**63) % 2**64 - 2**63  # (int64 sizes: their sum wraps as numpy's)
    if entries != len(key) or not len(key) == len(pos) == len(neg):
        raise ValueError("grouped scores: entry arrays do not match the sizes")
    if key.dtype != np.float64 or value.dtype != np.float64:
        raise ValueError("grouped scores: key and values must be float64")
    check_counts("grouped scores", rows, pos, neg)
    p, q = pos.tolist(), neg.tolist()
    if not all(a + b > 0 for a, b in zip(p, q, strict=True)):  # (finite, non-negative)
        raise ValueError("grouped scores: an entry is empty")
    if max(s, default=0) > max(r, default=0) or any(map(gt, s, r)):
        raise ValueError("grouped scores: a group has more entries than rows")
    g = np.repeat(np.arange(len(rows), dtype=np.int64), sizes)
    k = key.tolist()
    at = 0
    for size, held in zip(s, r, strict=True) if pos.dtype == np.int64 else ():
        if sum(p[at : at + size]) + sum(q[at : at + size]) != held:  # (exact, as int64's)
            raise ValueError("grouped scores: the counts of a group do not add up to its rows")
        at += size
    if not all(map(isfinite, k)):
        raise ValueError("grouped scores: keys must be finite")
    at = 0
    for size in s:
        if not all(map(lt, k[at : at + size], k[at + 1 : at + size])):
            raise ValueError("grouped scores: keys must increase within a group")
        at += size
    return g
