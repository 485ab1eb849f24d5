"""Compact wire forms: integer counts in the narrowest unsigned dtype that holds them, float64
values as float32 when every one of them is a float32, and sorted distinct int64 labels as
their first value and the steps between them (small for dense ids such as user indices).

Most counts of a large keyed state are tiny (a user's rows at one distinct score: 1), so
carrying them as int64 makes the bytes several times larger than the information. The encoder
picks ``uint8``, ``uint16``, ``uint32`` or ``uint64`` from the array's largest value, so the
bytes stay a function of the state; the decoder accepts any unsigned width and returns int64.
"""

from __future__ import annotations

from operator import lt

import numpy as np

from .._codec import COUNT_LIMIT, SMALL_CHECK

__all__ = [
    "narrow_counts",
    "narrow_floats",
    "stepped_from_wire",
    "stepped_to_wire",
    "widened_counts",
    "widened_floats",
]

_WIDTHS = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64))


def narrow_counts(counts: np.ndarray) -> np.ndarray:
    """Non-negative int64 ``counts`` in the narrowest unsigned dtype holding their maximum."""
    top = int(counts.max()) if len(counts) else 0
    for dtype in _WIDTHS:
        if top <= np.iinfo(dtype).max:
            return counts.astype(dtype)
    raise AssertionError("int64 counts fit uint64")


def widened_counts(what: str, arr: np.ndarray) -> np.ndarray:
    """The int64 counts of a wire array of unsigned integers; ``ValueError`` naming ``what``
    for any other dtype or for a value past 2**53 (which int64 would hold, but no count may
    reach)."""
    if arr.dtype.kind != "u":
        raise ValueError(f"{what} must be an unsigned integer array")
    top = (max(arr.tolist()) if len(arr) <= SMALL_CHECK else int(arr.max())) if len(arr) else 0
    if top > COUNT_LIMIT:
        raise ValueError(f"{what}: a count above 2**53")
    return arr.astype(np.int64)


_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


def narrow_floats(values: np.ndarray) -> np.ndarray:
    """Float64 ``values`` as float32 when that loses nothing (every value is a float32: scores
    a float32 model wrote, bucket keys below 2**24; nan is kept), else as they are."""
    if not len(values):
        return values.astype(_F32)
    with np.errstate(over="ignore"):  # beyond float32's range: inf, which then differs
        single = values.astype(_F32)
    same = single.astype(_F64)
    if np.array_equal(same, values, equal_nan=True):
        return single
    return values


def widened_floats(what: str, arr: np.ndarray) -> np.ndarray:
    """The float64 values of a float32 or float64 wire array; ``ValueError`` naming ``what``
    for any other dtype."""
    if arr.dtype not in (_F32, _F64):
        raise ValueError(f"{what} must be float32 or float64")
    return arr.astype(_F64)


def stepped_to_wire(labels: np.ndarray) -> dict[str, object]:
    """Sorted distinct int64 ``labels`` (at least one) as ``{"first", "steps"}``: the first
    label and the narrow unsigned differences between neighbours (computed modulo 2**64, so
    exact for any span of int64)."""
    steps = np.diff(labels.view(np.uint64))
    return {"first": int(labels[0]), "steps": narrow_counts(steps)}


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
    if len(steps) <= SMALL_CHECK:
        return _stepped_small(first, steps.tolist())
    start = np.array([first], dtype=np.int64).view(np.uint64)
    labels = np.concatenate([start, steps.astype(np.uint64)]).cumsum(dtype=np.uint64)
    out = labels.view(np.int64)
    if len(out) > 1 and not (out[1:] > out[:-1]).all():
        raise ValueError("stepped labels: steps must be positive and stay within int64")
    return out


def _stepped_small(first: int, steps: list[int]) -> np.ndarray:
    """:func:`stepped_from_wire` of a few steps, summed as Python ints modulo 2**64 (as the
    uint64 running sum wraps) and read back as int64: the same labels, and the same refusal."""
    values, at = [first], first % 2**64
    for step in steps:
        at = (at + step) % 2**64
        values.append(at - 2**64 if at >= 2**63 else at)
    if not all(map(lt, values, values[1:])):
        raise ValueError("stepped labels: steps must be positive and stay within int64")
    return np.array(values, dtype=np.int64)
