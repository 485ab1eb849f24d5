"""The decoders' checks as 0.8.24 made them, every one through numpy: what the checks of small
arrays as Python values (``tests/test_load_cost.py``) are held against. Copied, not imported:
the library's own now take the shortcuts."""

from __future__ import annotations

from typing import Any

import numpy as np

from streammetrics import _codec
from streammetrics._codec import COUNT_LIMIT, count_total
from streammetrics.states.mappings import REAL_FINE_BITS, REAL_MAX_BUCKETS, real_at

__all__ = ["check_counts", "checked_entries"]


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
