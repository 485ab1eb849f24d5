"""Integer counts on the wire in the narrowest unsigned dtype that holds them.

Most counts of a large keyed state are tiny (a user's rows at one distinct score: 1), so
carrying them as int64 makes the bytes several times larger than the information. The encoder
picks ``uint8``, ``uint16``, ``uint32`` or ``uint64`` from the array's largest value, so the
bytes stay a function of the state; the decoder accepts any unsigned width and returns int64.
"""

from __future__ import annotations

import numpy as np

from .._codec import COUNT_LIMIT

__all__ = ["narrow_counts", "widened_counts"]

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
