"""The checks of a score store's wire form: every field of ``ScoreBuckets.to_wire``, decoded
from untrusted bytes, is checked before a store is built from it (a ``ValueError`` naming the
field otherwise, which ``loads`` reports as a ``StateDecodeError``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._codec import COUNT_LIMIT, check_counts, count_total
from .mappings import REAL_FINE_BITS, REAL_MAX_BUCKETS, BucketMapping, real_at

__all__ = ["checked_entries"]

_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)

Entries = tuple[np.ndarray, np.ndarray, np.ndarray, Any, Any, "int | None"]


def checked_entries(wire: Any, mapping: BucketMapping | None, floor_bits: int | None) -> Entries:
    """``(keys, pos, neg, lo, hi, bits)`` of a store's wire form, checked.

    ``mapping``: the store's (None: exact, the keys are the distinct scores and ``lo``/``hi``
    None). ``floor_bits``: for ``"real"`` stores, the configured resolution's bits (the wire
    then carries the ``bits`` the store adapted to; 0.2.0 wrote none: they were the configured
    ones); None otherwise.
    """
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
    if pos.dtype != neg.dtype or pos.dtype not in (_I64, _F64):
        raise ValueError("score buckets: pos and neg must both be int64 or float64")
    check_counts("score buckets", pos, neg)
    if pos.dtype == _I64 and count_total(pos) + count_total(neg) > COUNT_LIMIT:
        raise ValueError("score buckets: counts total more than 2**53")
    if len(pos) and not ((pos + neg) > 0).all():
        raise ValueError("score buckets: a bucket is empty")
    if exact:
        scores = wire["scores"]
        if scores.dtype != _F64 or not np.isfinite(scores).all():
            raise ValueError("score buckets: scores must be finite float64")
        if len(scores) > 1 and not (scores[1:] > scores[:-1]).all():
            raise ValueError("score buckets: scores must be sorted and distinct")
        return scores + 0.0, pos, neg, None, None, None
    lo, hi = wire["lo"], wire["hi"]
    if lo.dtype != _F64 or hi.dtype != _F64:
        raise ValueError("score buckets: lo and hi must be float64")
    if len(lo) and not (np.isfinite(lo).all() and np.isfinite(hi).all() and (lo <= hi).all()):
        raise ValueError("score buckets: lo and hi must be finite with lo <= hi")
    assert mapping is not None
    keymap = mapping if bits is None else real_at(bits)
    # One call for both ends: a slice of a ``Sliced`` holds a few buckets, and a call's fixed
    # cost is most of the work.
    both = keymap.keys(np.concatenate([lo, hi]) + 0.0).astype(np.int64)
    keys, hi_keys = both[: len(lo)].copy(), both[len(lo) :]
    if not np.array_equal(keys, hi_keys):
        raise ValueError("score buckets: a bucket's lo and hi fall in different buckets")
    if len(keys) > 1 and not (keys[1:] > keys[:-1]).all():
        raise ValueError("score buckets: buckets must be sorted and distinct")
    if keymap.size is not None and len(keys) and not (keys[0] >= 0 and keys[-1] < keymap.size):
        # (a probability grid's keys for scores outside [0, 1]: no update makes them, and the
        # curves index their bucket edges with them)
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
