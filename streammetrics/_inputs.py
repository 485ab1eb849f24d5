"""One coercion layer for every column a metric is given.

Everything ``numpy.asarray`` accepts goes in: lists, numpy arrays, pandas Series, Arrow arrays,
and torch tensors on any device (moved with ``.detach().cpu()`` without importing torch). A scalar
is one sample. Every check raises :class:`~streammetrics.errors.InputError` naming the argument.
These functions never touch a metric's state, so an ``update`` that calls them first and commits
last is atomic.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from .errors import InputError

__all__ = [
    "config_int",
    "config_number",
    "as_array",
    "as_labels",
    "as_matrix",
    "as_scores",
    "as_weights",
    "check_same_length",
]


def as_array(x: Any, name: str) -> np.ndarray:
    """``x`` as a numpy array of at least one dimension (a scalar becomes one sample).

    An iterator or generator is read once, to the end, as a column of its values.
    """
    if x is None:
        raise InputError(f"{name}: got None, expected an array-like")
    if isinstance(x, Iterator):
        x = list(x)
    # torch tensors (any device) without importing torch; ``.numpy()`` after ``.cpu()``.
    if hasattr(x, "detach") and hasattr(x, "cpu") and hasattr(x, "numpy"):
        x = x.detach().cpu().numpy()
    elif hasattr(x, "to_numpy") and not isinstance(x, np.ndarray):
        # pandas Series/Index and Arrow arrays: avoids object detours for nullable dtypes.
        try:
            x = x.to_numpy(zero_copy_only=False)
        except TypeError:
            x = x.to_numpy()
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged lists and exotic objects
        raise InputError(f"{name}: cannot be read as an array ({exc})") from exc
    if arr.ndim == 0:
        arr = arr.reshape(1)
    return arr


def _vector(x: Any, name: str) -> np.ndarray:
    arr = as_array(x, name)
    if arr.ndim != 1:
        raise InputError(f"{name}: expected a 1-D array, got shape {arr.shape}")
    return arr


def check_same_length(**columns: np.ndarray | None) -> int:
    """The common length of the named columns; ``InputError`` naming them when they differ."""
    lengths = {k: len(v) for k, v in columns.items() if v is not None}
    distinct = set(lengths.values())
    if len(distinct) > 1:
        desc = ", ".join(f"{k} has {n}" for k, n in lengths.items())
        raise InputError(f"columns differ in length: {desc}")
    return distinct.pop() if distinct else 0


def _finite(arr: np.ndarray, name: str, what: str) -> None:
    if arr.size and not np.isfinite(arr).all():
        bad = np.flatnonzero(~np.isfinite(arr.reshape(-1)))[0]
        raise InputError(f"{name}: {what} must be finite; found {arr.reshape(-1)[bad]} at {bad}")


def as_scores(x: Any, name: str, *, ndim: int = 1) -> np.ndarray:
    """Finite float64 values (scores, probabilities, regression targets)."""
    arr = as_array(x, name)
    if arr.ndim != ndim:
        raise InputError(f"{name}: expected a {ndim}-D array, got shape {arr.shape}")
    kind = arr.dtype.kind
    if kind in "USc" or (
        kind == "O" and any(isinstance(v, (str, bytes, complex)) for v in arr.flat)
    ):
        # As scikit-learn: strings are not numbers, even "0.5", and a complex is not a real.
        raise InputError(f"{name}: expected real numbers, got {_describe(arr)}")
    if kind not in "biuf":
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise InputError(f"{name}: expected numbers, got dtype {arr.dtype}") from exc
    arr = np.asarray(arr, dtype=np.float64)
    _finite(arr, name, "values")
    return arr


def _describe(arr: np.ndarray) -> str:
    if arr.dtype.kind in "US":
        return "strings"
    if arr.dtype.kind == "c":
        return "complex numbers"
    return f"values of types {sorted({type(v).__name__ for v in arr.flat})}"


def as_matrix(x: Any, name: str) -> np.ndarray:
    """A finite float64 matrix of shape (n, d); a 1-D input is one row per value (d = 1)."""
    arr = as_array(x, name)
    if arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2:
        raise InputError(f"{name}: expected a 2-D array (n, d), got shape {arr.shape}")
    return as_scores(arr, name, ndim=2)


def as_weights(w: Any, n: int, name: str = "sample_weight") -> np.ndarray | None:
    """Non-negative finite float64 weights of length ``n``, or ``None`` when ``w`` is ``None``."""
    if w is None:
        return None
    arr = as_scores(w, name)
    if len(arr) == 1 and n != 1 and np.ndim(w) == 0:
        arr = np.full(n, arr[0])
    if len(arr) != n:
        raise InputError(f"{name}: has {len(arr)} values, the other columns have {n}")
    if arr.size and arr.min() < 0:
        raise InputError(f"{name}: weights must be non-negative; found {arr.min()}")
    return arr


def as_labels(x: Any, name: str) -> np.ndarray:
    """Class labels as a 1-D int64 or unicode array.

    Integers and booleans become int64; floats are accepted when every value is whole (as
    scikit-learn accepts ``[0.0, 1.0]``); strings become a unicode array. A column mixing strings
    and numbers, NaN, or fractional floats is refused.
    """
    if isinstance(x, Iterator):
        x = list(x)
    arr = _vector(x, name)
    kind = arr.dtype.kind
    if kind == "U" and isinstance(x, (list, tuple)) and not all(isinstance(v, str) for v in x):
        # numpy reads ["a", 1] as two strings; scikit-learn refuses such a column.
        raise InputError(
            f"{name}: mixes strings and numbers "
            f"({sorted({type(v).__name__ for v in x})}); use one kind of label"
        )
    if kind in "biu":
        if kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
            raise InputError(f"{name}: labels above 2**63 - 1 are not supported")
        return arr.astype(np.int64, copy=False)
    if kind == "f":
        _finite(arr, name, "labels")
        whole = arr.astype(np.int64)
        if not np.array_equal(whole, arr):
            raise InputError(
                f"{name}: labels must be whole numbers or strings; got fractional values "
                "(continuous targets are a regression task)"
            )
        return whole
    if kind == "U":
        return arr
    if kind in "OS":
        if kind == "S":
            return arr.astype(np.str_)
        if arr.size == 0:
            return np.empty(0, dtype=np.int64)
        types = {type(v) for v in arr.tolist()}
        if types <= {str}:
            return arr.astype(np.str_)
        if types <= {int, bool} or all(issubclass(t, (int, np.integer)) for t in types):
            return np.array(arr.tolist(), dtype=np.int64)
        if any(issubclass(t, str) for t in types):
            raise InputError(
                f"{name}: mixes strings and numbers ({sorted(t.__name__ for t in types)}); "
                "use one kind of label"
            )
        return as_labels(np.array(arr.tolist()), name)
    raise InputError(f"{name}: labels of dtype {arr.dtype} are not supported")


def config_int(value: Any, name: str, minimum: int = 1, maximum: int | None = None) -> int:
    """A whole-number configuration value within bounds, as a Python int (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{name}: must be an integer; got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        upper = f" to {maximum}" if maximum is not None else " or more"
        raise InputError(f"{name}: must be from {minimum}{upper}; got {value}")
    return int(value)


def config_number(value: Any, name: str, minimum: float = 0.0, finite: bool = True) -> float:
    """A numeric configuration value of at least ``minimum``, as a Python float."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"{name}: must be a number; got {value!r}")
    number = float(value)
    if not number >= minimum or (finite and math.isinf(number)):
        kind = "a finite number" if finite else "a number"
        raise InputError(f"{name}: must be {kind} of at least {minimum}; got {value!r}")
    return number
