"""The decoders' checks as 0.8.24 made them, every one through numpy: what the checks of small
arrays as Python values (``tests/test_load_cost.py``) are held against. Copied, not imported:
the library's own now take the shortcuts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from streammetrics import _codec
from streammetrics._codec import COUNT_LIMIT, count_total
from streammetrics.states._group_table import _Table
from streammetrics.states._narrow import widened_floats
from streammetrics.states.labels import EMPTY_LABELS
from streammetrics.states.mappings import REAL_FINE_BITS, REAL_MAX_BUCKETS, BucketMapping, real_at

__all__ = ["check_counts", "checked_entries", "checked_table"]


def check_counts(what: str, *arrays: np.ndarray) -> None:
    """``check_counts`` of 0.8.24, every array through numpy."""
    for arr in arrays:
        if not arr.size:
            continue
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            raise ValueError(f"{what}: counts must be finite")
        if arr.min() < 0:
            raise ValueError(f"{what}: counts must be non-negative")
        limit = _codec._limit(arr.dtype.kind) * (1.0 + 1e-9 * (arr.dtype.kind == "f"))
        total = _codec.count_total(arr)
        if arr.dtype.kind in "iub" and total <= 2 * limit:
            total = int(arr.sum(dtype=np.int64))
        if not total <= limit:
            raise ValueError(f"{what}: counts total more than 2**53 (weights: 2**100)")


def checked_entries(wire: Any, mapping: Any, floor_bits: int | None) -> Any:
    """``checked_entries`` of 0.8.24 (``states/_bucket_wire.py``), every check through numpy."""
    f64, i64 = np.dtype(np.float64), np.dtype(np.int64)
    exact = mapping is None
    names = ("scores", "pos", "neg") if exact else ("lo", "hi", "pos", "neg")
    bits = None
    if floor_bits is not None and isinstance(wire, dict):
        wire = dict(wire)
        bits = wire.pop("bits", floor_bits)
        if type(bits) is not int or not floor_bits <= bits <= REAL_FINE_BITS:
            raise ValueError(
                f"score buckets: bits must be an integer from {floor_bits} to "
                f"{REAL_FINE_BITS}, got {bits!r}"
            )
    if not isinstance(wire, dict) or set(wire) != set(names):
        raise ValueError(f"score buckets need exactly the fields {sorted(names)}")
    arrays = [wire[n] for n in names]
    for n, a in zip(names, arrays, strict=True):
        if not isinstance(a, np.ndarray) or a.ndim != 1:
            raise ValueError(f"score buckets: {n} must be a 1-D array")
    if len({len(a) for a in arrays}) != 1:
        raise ValueError("score buckets: the arrays differ in length")
    pos, neg = wire["pos"], wire["neg"]
    if pos.dtype != neg.dtype or pos.dtype not in (i64, f64):
        raise ValueError("score buckets: pos and neg must both be int64 or float64")
    check_counts("score buckets", pos, neg)
    if pos.dtype == i64 and count_total(pos) + count_total(neg) > COUNT_LIMIT:
        raise ValueError("score buckets: counts total more than 2**53")
    if len(pos) and not ((pos + neg) > 0).all():
        raise ValueError("score buckets: a bucket is empty")
    if exact:
        scores = wire["scores"]
        if scores.dtype != f64 or not np.isfinite(scores).all():
            raise ValueError("score buckets: scores must be finite float64")
        if len(scores) > 1 and not (scores[1:] > scores[:-1]).all():
            raise ValueError("score buckets: scores must be sorted and distinct")
        return scores + 0.0, pos, neg, None, None, None
    lo, hi = wire["lo"], wire["hi"]
    if lo.dtype != f64 or hi.dtype != f64:
        raise ValueError("score buckets: lo and hi must be float64")
    if len(lo) and not (np.isfinite(lo).all() and np.isfinite(hi).all() and (lo <= hi).all()):
        raise ValueError("score buckets: lo and hi must be finite with lo <= hi")
    keymap = mapping if bits is None else real_at(bits)
    both = keymap.keys(np.concatenate([lo, hi]) + 0.0).astype(np.int64)
    keys, hi_keys = both[: len(lo)].copy(), both[len(lo) :]
    if not np.array_equal(keys, hi_keys):
        raise ValueError("score buckets: a bucket's lo and hi fall in different buckets")
    if len(keys) > 1 and not (keys[1:] > keys[:-1]).all():
        raise ValueError("score buckets: buckets must be sorted and distinct")
    if keymap.size is not None and len(keys) and not (keys[0] >= 0 and keys[-1] < keymap.size):
        raise ValueError("score buckets: a bucket lies outside the grid's scores")
    if len(lo) and not keymap.holds(lo.min(), hi.max()):
        raise ValueError(f"score buckets: a score lies outside score_type={keymap.name!r}'s")
    if bits is not None and floor_bits is not None:
        if len(keys) > REAL_MAX_BUCKETS and bits > floor_bits:
            raise ValueError(
                f"score buckets: {len(keys)} buckets at {bits} bits, more than "
                f"{REAL_MAX_BUCKETS} above the configured resolution"
            )
    return keys, pos, neg, lo + 0.0, hi + 0.0, bits


def widened_counts(what: str, arr: np.ndarray) -> np.ndarray:
    """The int64 counts of a wire array of unsigned integers; ``ValueError`` naming ``what``
    for any other dtype or for a value past 2**53 (which int64 would hold, but no count may
    reach)."""
    if arr.dtype.kind != "u":
        raise ValueError(f"{what} must be an unsigned integer array")
    if len(arr) and int(arr.max()) > COUNT_LIMIT:
        raise ValueError(f"{what}: a count above 2**53")
    return arr.astype(np.int64)


def stepped_from_wire(wire: object) -> np.ndarray:
    """The int64 labels of :func:`stepped_to_wire` output; ``ValueError`` unless they are
    strictly increasing int64 values (a step of 0, or one that passes 2**63 - 1, is refused:
    rebuilt modulo 2**64, such a step shows as a decrease)."""
    if not (isinstance(wire, dict) and set(wire) == {"first", "steps"}):
        raise ValueError("stepped labels need exactly the fields 'first' and 'steps'")
    first, steps = wire["first"], wire["steps"]
    if type(first) is not int or not -(2**63) <= first < 2**63:
        raise ValueError("stepped labels: first must be an int64")
    if not isinstance(steps, np.ndarray) or steps.ndim != 1 or steps.dtype.kind != "u":
        raise ValueError("stepped labels: steps must be a 1-D unsigned integer array")
    start = np.array([first], dtype=np.int64).view(np.uint64)
    labels = np.concatenate([start, steps.astype(np.uint64)]).cumsum(dtype=np.uint64)
    out = labels.view(np.int64)
    if len(out) > 1 and not (out[1:] > out[:-1]).all():
        raise ValueError("stepped labels: steps must be positive and stay within int64")
    return out


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
    if len(labels) > 1 and not (labels[1:] > labels[:-1]).all():
        raise ValueError("labels must be sorted and unique")
    return labels


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
    g = np.repeat(np.arange(len(groups), dtype=np.int64), sizes)
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
