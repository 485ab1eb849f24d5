"""Sorted label sets and the vectorised mapping of a label column onto them.

Labels are either all integers (held as int64) or all strings (a numpy unicode array); a set is
kept sorted as scikit-learn sorts labels, which also makes every state built on it canonical.
"""

from __future__ import annotations

from operator import lt
from typing import Any

import numpy as np

from .._codec import SMALL_CHECK
from ..errors import IncompatibleStateError, InputError

__all__ = [
    "EMPTY_LABELS",
    "check_kinds",
    "check_merge_kinds",
    "check_merge_rows",
    "codes_in",
    "config_labels",
    "fnv1a",
    "key_hash",
    "known_codes",
    "labels_from_wire",
    "labels_to_wire",
    "splitmix64",
    "spread",
    "union",
    "unique_codes",
]

EMPTY_LABELS = np.empty(0, dtype=np.int64)
# Integer columns whose range is at most _DENSE_TIMES times their length (or at most
# _DENSE_RANGE) are uniqued with a counting pass instead of a sort: O(n + range) instead of
# O(n log n). (131,072 ids spread over a million: 3-4 ms against a sort's 11-15 ms; at 4
# million no faster than the sort.)
_DENSE_RANGE = 1 << 16
_DENSE_TIMES = 8


def _kind(labels: np.ndarray) -> str:
    return "str" if labels.dtype.kind == "U" else "int"


def check_kinds(labels: np.ndarray, values: np.ndarray, name: str) -> None:
    """``InputError`` when ``values`` are strings and ``labels`` integers, or the reverse."""
    if len(labels) and len(values) and _kind(labels) != _kind(values):
        raise InputError(
            f"{name}: {_kind(values)} labels, but this state holds {_kind(labels)} labels; "
            "use one kind of label throughout"
        )


def check_merge_kinds(mine: np.ndarray, theirs: np.ndarray) -> None:
    """``IncompatibleStateError`` when one label set holds integers and the other strings."""
    if len(mine) and len(theirs) and _kind(mine) != _kind(theirs):
        raise IncompatibleStateError(
            "cannot merge a state of integer labels with one of string labels"
        )


def check_merge_rows(mine: np.ndarray, theirs: np.ndarray, mine_dim: int, theirs_dim: int) -> None:
    """For keyed blocks of rows: one kind of key, and rows of one width (when both hold any)."""
    check_merge_kinds(mine, theirs)
    if len(mine) and len(theirs) and mine_dim != theirs_dim:
        raise IncompatibleStateError(
            f"cannot merge rows of {mine_dim} columns with rows of {theirs_dim} columns"
        )


def unique_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(sorted unique values, index of each value in them)``, fast for small-range integers."""
    if values.dtype.kind == "i" and len(values):
        lo, hi = int(values.min()), int(values.max())
        span = hi - lo + 1
        if span <= max(_DENSE_RANGE, _DENSE_TIMES * len(values)):
            shifted = values - lo if lo else values
            present = np.zeros(span, dtype=bool)
            present[shifted] = True
            uniq = np.flatnonzero(present)
            # (the look-up table in 32 bits where it fits: half the pages to touch)
            lut = np.cumsum(present, dtype=np.int32 if span < 2**31 else np.int64)
            lut -= 1
            return uniq + lo, lut[shifted].astype(np.int64)
    uniq, inverse = np.unique(values, return_inverse=True)
    return uniq, inverse.reshape(-1)


def union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sorted union of two sorted label sets of one kind."""
    if len(a) == 0:
        return b
    if len(b) == 0 or a is b:
        return a
    if len(a) == len(b) and a.dtype.kind == b.dtype.kind and bool((a == b).all()):
        return a  # the common case of shards of one label set, without array_equal's overhead
    if len(b) > len(a):
        a, b = b, a
    # The few values of the smaller set missing from the larger one, inserted where they sort:
    # O(len(b) log len(a)) look-ups and one copy, where np.union1d hashed both sets (a new
    # label in a table of 50,000 cost 10 ms per one-sample call, 0.8.11).
    dtype = np.result_type(a.dtype, b.dtype)
    a, b = a.astype(dtype, copy=False), b.astype(dtype, copy=False)
    at = np.searchsorted(a, b)
    inside = at < len(a)
    found = np.zeros(len(b), dtype=bool)
    found[inside] = a[at[inside]] == b[inside]
    missing = b[~found]
    if not len(missing):
        return a
    return np.insert(a, at[~found], missing)


def spread(values: np.ndarray, keys: np.ndarray, new_keys: np.ndarray, axis: int = 0) -> np.ndarray:
    """``values`` indexed along ``axis`` by the sorted ``keys``, re-indexed by their sorted
    superset ``new_keys``: zeros at the new keys. Returns ``values`` itself when nothing is new.
    """
    if len(keys) == len(new_keys):  # a superset of the same size is the same set
        return values
    shape = list(values.shape)
    shape[axis] = len(new_keys)
    out = np.zeros(shape, dtype=values.dtype)
    if len(keys):
        where: list[Any] = [slice(None)] * values.ndim
        where[axis] = np.searchsorted(new_keys, keys)
        out[tuple(where)] = values
    return out


def codes_in(labels: np.ndarray, values: np.ndarray, name: str) -> np.ndarray:
    """Index of each value in the sorted ``labels``; ``InputError`` naming the unknown ones."""
    check_kinds(labels, values, name)
    if values.dtype.kind == "i" and len(labels) and len(values):
        lo, hi = int(labels[0]), int(labels[-1])
        if hi - lo + 1 == len(labels):  # a contiguous range: no search needed
            vmin, vmax = int(values.min()), int(values.max())
            if vmin >= lo and vmax <= hi:
                return values - lo if lo else values
            bad = values[(values < lo) | (values > hi)]
            raise InputError(
                f"{name}: labels {sorted(set(bad.tolist()))[:10]} are not among the configured "
                f"labels {labels.tolist()[:20]}"
            )
    idx = np.searchsorted(labels, values)
    idx_clipped = np.minimum(idx, max(len(labels) - 1, 0))
    ok = (idx < len(labels)) & (labels[idx_clipped] == values) if len(labels) else idx < 0
    if not ok.all():
        bad = values[~ok]
        raise InputError(
            f"{name}: labels {sorted(set(bad.tolist()))[:10]} are not among the configured "
            f"labels {labels.tolist()[:20]}"
        )
    return idx


def known_codes(labels: np.ndarray, values: np.ndarray) -> np.ndarray | None:
    """Index of each value in the sorted ``labels`` when every value is among them, else None.

    The steady state of a stream: after the first batches every label is known, and looking it
    up (an offset for a contiguous integer range, a binary search otherwise) is much cheaper
    than finding the batch's unique labels again.
    """
    if len(labels) == 0 or len(values) == 0 or _kind(labels) != _kind(values):
        return None
    if values.dtype.kind == "i":
        lo, hi = int(labels[0]), int(labels[-1])
        if int(values.min()) < lo or int(values.max()) > hi:
            return None
        if hi - lo + 1 == len(labels):  # a contiguous range: an offset is the index
            return values - lo if lo else values
    idx = np.searchsorted(labels, values)
    if int(idx.max()) >= len(labels) or not np.array_equal(labels[idx], values):
        return None
    codes: np.ndarray = idx
    return codes


def labels_to_wire(labels: np.ndarray) -> Any:
    """Integer labels travel as an int64 array, string labels as a list of str."""
    return labels.tolist() if labels.dtype.kind == "U" else labels.astype(np.int64)


def labels_from_wire(wire: Any) -> np.ndarray:
    """Inverse of :func:`labels_to_wire`; ``ValueError`` unless strictly sorted and unique."""
    if isinstance(wire, np.ndarray):
        if wire.dtype != np.int64 or wire.ndim != 1:
            raise ValueError("integer labels must be a 1-D int64 array")
        labels = wire
    elif isinstance(wire, list) and all(isinstance(v, str) for v in wire):
        labels = np.array(wire, dtype=np.str_) if wire else EMPTY_LABELS
    else:
        raise ValueError("labels must be an int64 array or a list of strings")
    if len(labels) > 1 and not _increasing(labels):
        raise ValueError("labels must be sorted and unique")
    return labels


def _increasing(labels: np.ndarray) -> bool:
    """Whether ``labels`` strictly increase: a few int64 labels (a decoded state's, most
    often) compared as Python ints, others by numpy (whose strings compare without their
    trailing NULs)."""
    if labels.dtype.kind == "i" and len(labels) <= SMALL_CHECK:
        values = labels.tolist()
        return all(map(lt, values, values[1:]))
    return bool((labels[1:] > labels[:-1]).all())


def config_labels(labels: Any, name: str = "labels") -> list[Any] | None:
    """Validate a ``labels=`` argument: ``None`` or a non-empty list of distinct labels of one
    kind, returned as a plain list (ints or strs) that the codec can carry."""
    from .._input_labels import as_labels

    if labels is None:
        return None
    arr = as_labels(labels, name)
    if len(arr) == 0:
        raise InputError(f"{name}: must hold at least one label")
    if len(np.unique(arr)) != len(arr):
        raise InputError(f"{name}: holds a label twice")
    return [str(v) for v in arr] if arr.dtype.kind == "U" else [int(v) for v in arr]


_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


def splitmix64(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (Steele, Lea and Flood, "Fast splittable pseudorandom number
    generators", 2014) on uint64, wrapping: a bijection that mixes every input bit."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        out: np.ndarray = z ^ (z >> np.uint64(31))
    return out


def fnv1a(strings: np.ndarray, offset: np.uint64 = _FNV_OFFSET) -> np.ndarray:
    """64-bit FNV-1a of each string of a unicode array over its code points, from ``offset``.

    numpy pads shorter strings with NULs: those are skipped, so a string's hash does not
    depend on the longest string of its array. One pass per character position, not per row.
    """
    width = strings.dtype.itemsize // 4
    native = strings.astype(strings.dtype.newbyteorder("="), copy=False)  # (big-endian ones)
    points = np.ascontiguousarray(native).view(np.uint32).reshape(len(strings), width)
    h = np.full(len(strings), offset, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(width):
            cp = points[:, j].astype(np.uint64)
            h = np.where(cp != 0, (h ^ cp) * _FNV_PRIME, h)
    return h


def key_hash(keys: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each key (int64 or unicode), the same in every process and platform.

    Integers go through the splitmix64 finaliser (Steele, Lea and Flood, "Fast splittable
    pseudorandom number generators", 2014); strings through 64-bit FNV-1a over their code
    points (trailing NULs, which numpy does not store, are skipped, so the array's width does
    not matter). Used to assign keys to parts (``Keyed.split``), never as a state.
    """
    if keys.dtype.kind == "U":
        return fnv1a(keys)
    with np.errstate(over="ignore"):
        return splitmix64(keys.astype(np.int64).view(np.uint64) + np.uint64(0x9E3779B97F4A7C15))
