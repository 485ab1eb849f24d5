"""The hash of each row's id in a ``Bootstrap`` batch: the "id" that the row's Poisson weights
are drawn for (:func:`~streammetrics.wrappers._poisson.poisson_rows`).

One 64-bit hash per id, a pure function of the id (splitmix64 of an integer's 64 bits, or of
the FNV-1a hash of a string under its own domain tag), so that shards given the same ids draw
the same weights and merge byte for byte. ``_bootstrap_rows.id_hash`` is the same hash of one
id in plain Python; rows given without ids are hashed by their stream position instead
(``_poisson.position_hashes``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._inputs import as_array
from ..errors import InputError
from ..states.labels import fnv1a, splitmix64
from ._bootstrap_rows import _M64
from ._poisson import _STR
from ._rows import one_kind

__all__ = ["id_hashes"]

_mix = splitmix64


def id_hashes(ids: Any, n: int) -> np.ndarray:
    """One 64-bit hash per id (integers or strings), a pure function of the id."""
    arr = as_array(ids, "ids")
    if arr.dtype.kind in "fO" and isinstance(ids, (list, tuple)):
        arr = _wide_int_ids(ids, arr)
    if arr.ndim != 1 or len(arr) != n:
        raise InputError(f"ids: expected one id per row ({n}), got shape {arr.shape}")
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    arr = one_kind(arr, "ids: must all be integers or all be strings", ids)
    with np.errstate(over="ignore"):
        if arr.dtype.kind in "iu":
            if arr.dtype.kind == "u" and arr.dtype.itemsize == 8:
                return _mix(arr.astype(np.uint64))
            return _mix(arr.astype(np.int64).view(np.uint64))
        if arr.dtype.kind == "U":
            return _mix(fnv1a(arr, _STR))
    raise InputError(f"ids: must be integers or strings, got {arr.dtype}")


def _wide_int_ids(ids: list[Any] | tuple[Any, ...], arr: np.ndarray) -> np.ndarray:
    """A list of integers numpy read as float64 or objects (some past int64) as the uint64
    images the one-row path hashes (``v mod 2**64``); ``arr`` (numpy's reading) when they are
    not all integers. 0.8.13 refused ``[2**63 + 5, 7]`` as float64 ids, which one row at a
    time it took."""
    if not all(
        isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in ids
    ):
        return arr  # (floats or mixed kinds: the checks below name them)
    for v in ids:
        if not -(1 << 63) <= int(v) <= _M64:
            raise InputError(
                "ids: integer ids must lie within int64 or uint64 (-2**63 .. 2**64 - 1), "
                f"got {int(v)}"
            )
    return np.array([int(v) & _M64 for v in ids], dtype=np.uint64)
