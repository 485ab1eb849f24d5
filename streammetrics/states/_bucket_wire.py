"""A score store's wire form: the tree :func:`wire_form` writes for ``ScoreBuckets.to_wire``,
and its checks. Every field of such a tree, decoded from untrusted bytes, is checked before a
store is built from it (:func:`checked_entries`: a ``ValueError`` naming the field otherwise,
which ``loads`` reports as a ``StateDecodeError``)."""

from __future__ import annotations

from math import isfinite
from operator import le, lt
from typing import Any

import numpy as np

from .._codec import COUNT_LIMIT, SMALL_CHECK, check_counts
from ._bucket_batch import Fields
from .mappings import REAL_FINE_BITS, REAL_MAX_BUCKETS, BucketMapping, real_at

__all__ = ["checked_entries", "wire_form"]

_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)


def wire_form(fields: Fields, exact: bool) -> dict[str, Any]:
    """The wire tree of a folded store's ``fields``: ``scores``, ``pos``, ``neg`` when
    ``exact``; else ``lo``, ``hi``, ``pos``, ``neg`` and, for ``"real"`` stores, ``bits``."""
    keys, pos, neg, lo, hi, bits = fields
    if exact:
        return {"scores": keys, "pos": pos, "neg": neg}
    wire: dict[str, Any] = {"lo": lo, "hi": hi, "pos": pos, "neg": neg}
    if bits is not None:  # an empty store has no resolution of its own yet
        wire["bits"] = bits if len(keys) else REAL_FINE_BITS
    return wire


def checked_entries(wire: Any, mapping: BucketMapping | None, floor_bits: int | None) -> Fields:
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
    if len(pos) <= SMALL_CHECK:
        return _small_entries(wire, mapping, floor_bits, bits, exact)
    # (The totals are count_total's: integers within 2**53 each sum exactly in float64.)
    totals = check_counts("score buckets", pos, neg)
    if pos.dtype == _I64 and totals[0] + totals[1] > COUNT_LIMIT:
        raise ValueError("score buckets: counts total more than 2**53")
    # Non-negative, finite: a bucket holds something where the sum is not 0 (one pass fewer).
    if len(pos) and np.count_nonzero(pos + neg) != len(pos):
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
    # Every lo <= hi (False for a nan on either side), then the smallest lo and the largest hi
    # finite: all finite (an infinite lo is the least, or below a hi that is infinite too).
    low = high = 0.0
    if len(lo):
        low, high = lo.min(), hi.max()
        if not ((lo <= hi).all() and np.isfinite(low) and np.isfinite(high)):
            raise ValueError("score buckets: lo and hi must be finite with lo <= hi")
    assert mapping is not None
    keymap = mapping if bits is None else real_at(bits)
    # One call for both ends: a slice of a ``Sliced`` holds a few buckets, and a call's fixed
    # cost is most of the work.
    both = keymap.keys(np.concatenate([lo, hi]) + 0.0).astype(np.int64)
    keys, hi_keys = both[: len(lo)].copy(), both[len(lo) :]
    if not (keys == hi_keys).all():
        raise ValueError("score buckets: a bucket's lo and hi fall in different buckets")
    if len(keys) > 1 and not (keys[1:] > keys[:-1]).all():
        raise ValueError("score buckets: buckets must be sorted and distinct")
    if keymap.size is not None and len(keys) and not (keys[0] >= 0 and keys[-1] < keymap.size):
        # (a probability grid's keys for scores outside [0, 1]: no update makes them, and the
        # curves index their bucket edges with them)
        raise ValueError("score buckets: a bucket lies outside the grid's scores")
    if len(lo) and not keymap.holds(low, high):
        raise ValueError(f"score buckets: a score lies outside score_type={keymap.name!r}'s")
    _check_budget(len(keys), bits, floor_bits)
    return keys, pos, neg, lo + 0.0, hi + 0.0, bits


def _check_budget(buckets: int, bits: int | None, floor_bits: int | None) -> None:
    if bits is not None and floor_bits is not None:
        if buckets > REAL_MAX_BUCKETS and bits > floor_bits:
            raise ValueError(
                f"score buckets: {buckets} buckets at {bits} bits, more than "
                f"{REAL_MAX_BUCKETS} above the configured resolution"
            )


def _small_entries(
    wire: dict[str, Any],
    mapping: BucketMapping | None,
    floor_bits: int | None,
    bits: int | None,
    exact: bool,
) -> Fields:
    """:func:`checked_entries` past the arrays' types, for at most ``SMALL_CHECK`` entries:
    the same checks in the same order (the same stores refused, with the same messages), read
    off the values as Python numbers rather than by a dozen numpy reductions, whose fixed cost
    was most of a small state's ``loads``. Only the keys are the mapping's own numpy call."""
    pos, neg = wire["pos"], wire["neg"]
    totals = check_counts("score buckets", pos, neg)
    if pos.dtype == _I64 and totals[0] + totals[1] > COUNT_LIMIT:
        raise ValueError("score buckets: counts total more than 2**53")
    p, q = pos.tolist(), neg.tolist()
    if not all(a + b > 0 for a, b in zip(p, q, strict=True)):  # (finite, non-negative)
        raise ValueError("score buckets: a bucket is empty")
    if exact:
        scores = wire["scores"]
        s = scores.tolist()
        if scores.dtype != _F64 or not all(map(isfinite, s)):
            raise ValueError("score buckets: scores must be finite float64")
        if not all(map(lt, s, s[1:])):
            raise ValueError("score buckets: scores must be sorted and distinct")
        return scores + 0.0, pos, neg, None, None, None
    lo, hi = wire["lo"], wire["hi"]
    if lo.dtype != _F64 or hi.dtype != _F64:
        raise ValueError("score buckets: lo and hi must be float64")
    low, high = lo.tolist(), hi.tolist()
    if not (all(map(isfinite, low)) and all(map(isfinite, high)) and all(map(le, low, high))):
        raise ValueError("score buckets: lo and hi must be finite with lo <= hi")
    assert mapping is not None
    keymap = mapping if bits is None else real_at(bits)
    scores = np.concatenate([lo, hi])
    scores += 0.0  # (-0.0 as 0.0: the scores the store keeps, and the keys' input)
    n = len(lo)
    inside = not n or keymap.holds(min(low), max(high))
    if inside:  # the mapping's domain: its keys for checked scores, as the updates count them
        k = keymap.checked_keys_into(scores, np.empty(2 * n, dtype=np.int64))
    else:  # (outside, the keys keys() gives, whose checks below refuse them as before)
        k = keymap.keys(scores).astype(np.int64)
    both = k.tolist()
    keys = both[:n]
    if keys != both[n:]:
        raise ValueError("score buckets: a bucket's lo and hi fall in different buckets")
    if not all(map(lt, keys, keys[1:])):
        raise ValueError("score buckets: buckets must be sorted and distinct")
    if keymap.size is not None and n and not (keys[0] >= 0 and keys[-1] < keymap.size):
        raise ValueError("score buckets: a bucket lies outside the grid's scores")
    if not inside:
        raise ValueError(f"score buckets: a score lies outside score_type={keymap.name!r}'s")
    _check_budget(n, bits, floor_bits)
    return k[:n].copy(), pos, neg, scores[:n], scores[n:], bits
