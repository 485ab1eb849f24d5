"""Integer counts on the wire in the narrowest unsigned dtype that holds them, and float64
values as float32 when every one of them is a float32.

Most counts of a large keyed state are tiny (a user's rows at one distinct score: 1), so
carrying them as int64 makes the bytes several times larger than the information. The encoder
picks ``uint8``, ``uint16``, ``uint32`` or ``uint64`` from the array's largest value, so the
bytes stay a function of the state; the decoder accepts any unsigned width and returns int64.
"""

from __future__ import annotations

import numpy as np

from .._codec import COUNT_LIMIT

__all__ = ["narrow_counts", "narrow_floats", "widened_counts", "widened_floats"]

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
    if len(arr) and int(arr.max()) > COUNT_LIMIT:
        raise ValueError(f"{what}: a count above 2**53")
    return arr.astype(np.int64)


_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


def narrow_floats(values: np.ndarray) -> np.ndarray:
    """Float64 ``values`` as float32 when that loses nothing (every value is a float32: scores
    a float32 model wrote, bucket keys below 2**24; nan is kept), else as they are."""
    if not len(values):
        return values.astype(_F32)
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
