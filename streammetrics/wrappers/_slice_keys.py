"""The slice keys of a ``Sliced`` batch: one dense code per row and the sorted distinct keys.

``by=`` is one key column (integers or strings) or several (composite keys, as a tuple of
columns, a list of key tuples or a 2-D array); :func:`slice_keys` codes them once per batch (a
counting pass for integers of small range, a sort otherwise), and refuses, naming the column,
what is no slice key (floats, booleans, bytes, integers past int64 in a list).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._inputs import as_array
from ..errors import InputError
from ..states.labels import unique_codes
from ._rows import joint_codes, one_kind

__all__ = ["slice_keys"]

Key = Any  # int, str, or a tuple of them


def _component(x: Any, name: str) -> tuple[np.ndarray, list[Any]]:
    """Dense codes (sorted by value) and the distinct values of one key column."""
    arr = as_array(x, name)
    if arr.ndim != 1:
        raise InputError(f"{name}: expected one slice key per row, got shape {arr.shape}")
    if not len(arr):  # no rows: no keys, whatever the dtype (``[]`` reads as float64)
        return np.zeros(0, dtype=np.int64), []
    arr = one_kind(arr, f"{name}: slice keys must all be integers or all be strings", x)
    if arr.dtype.kind == "S":
        raise InputError(f"{name}: bytes are not slice keys; decode them to strings")
    if arr.dtype.kind not in "iuU":
        if arr.dtype.kind == "b":
            why = "booleans (map them to labels first)"
        elif arr.dtype.kind == "f" and isinstance(x, list) and all(type(k) is int for k in x):
            # (numpy reads Python ints on both sides of 2**63 as float64; 0.8.14 said to round)
            why = "integers past int64 in a list (give a uint64 array, or strings)"
        elif arr.dtype.kind == "f":
            why = f"{arr.dtype} (round or label float keys first)"
        else:
            why = str(arr.dtype)
        raise InputError(f"{name}: slice keys must be integers or strings, got {why}")
    uniq, inv = unique_codes(arr)  # a counting pass for integers of small range, else a sort
    return inv.reshape(len(arr)).astype(np.int64, copy=False), uniq.tolist()


def slice_keys(by: Any) -> tuple[np.ndarray, list[Key]]:
    """``(codes, keys)``: one dense code per row and the sorted distinct keys they index.

    ``by`` is one key per row (integers or strings), a tuple of such columns (composite keys),
    or a 2-D array of shape ``(n, parts)`` (composite keys, one column per part).
    """
    if by is None:
        raise InputError("by: required (one slice key per row, beside the metric's columns)")
    kind = type(by)
    if (kind is str and by.isascii() and not by.endswith("\x00")) or (
        kind is int and -(2**63) <= by < 2**63
    ):
        # One key, as a one-sample request passes it: the code and key the array path gives,
        # without it. (Other strings take it: numpy drops trailing NULs, and a string without
        # a UTF-8 form is refused there.)
        return np.zeros(1, dtype=np.int64), [by]
    if isinstance(by, tuple):
        parts = list(by)
    elif isinstance(by, list) and by and all(isinstance(k, (tuple, list)) for k in by):
        # One key tuple (or list) per row: its parts as columns of the Python values (numpy
        # would read ("fr", 1) as two strings, and the integer part would become "1"; 0.8.14
        # did so for a list of lists).
        if len({len(k) for k in by}) != 1:
            raise InputError("by: composite keys must all have the same number of parts")
        parts = [list(column) for column in zip(*by, strict=True)]
    else:
        arr = as_array(by, "by")
        if arr.ndim == 2:
            parts = [arr[:, j] for j in range(arr.shape[1])]
        elif arr.ndim == 1:
            codes, keys = _component(by if isinstance(by, list) else arr, "by")
            return codes, keys
        else:
            raise InputError(f"by: expected one key per row, got shape {arr.shape}")
    if not parts:
        raise InputError("by: a composite key needs at least one column")
    coded = [_component(p, f"by[{j}]") for j, p in enumerate(parts)]
    n = len(coded[0][0])
    for j, (c, _) in enumerate(coded):
        if len(c) != n:
            raise InputError(f"by[{j}]: has {len(c)} rows, by[0] has {n}")
    if n == 0:
        return np.zeros(0, dtype=np.int64), []
    codes = joint_codes([c for c, _ in coded])  # lexicographic, as the parts' codes are sorted
    _, first = np.unique(codes, return_index=True)
    columns = [[values[i] for i in c[first].tolist()] for c, values in coded]
    return codes, [tuple(k) for k in zip(*columns, strict=True)]
