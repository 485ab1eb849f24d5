"""Class labels and text: the label columns of every metric, and the UTF-8 check of any text.

:func:`as_labels` reads a column of class labels as int64 or unicode, as scikit-learn reads
them: integers, booleans and whole floats (``[0.0, 1.0]``) as integers, bytes as UTF-8 text. A
label column that mixes strings and numbers is refused, as scikit-learn's ``type_of_target``
refuses it, even where numpy would silently read ``["a", 1]`` as strings. A string without a
UTF-8 form (a lone surrogate) is refused in any column of text (:func:`check_text`): a state
holding it could never be written. The column itself is read by
:func:`~streammetrics._inputs.as_array` first; every check raises
:class:`~streammetrics.errors.InputError` naming the argument.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._inputs import _finite, _vector
from .errors import InputError

__all__ = [
    "as_labels",
]


def _int64_labels(arr: np.ndarray, name: str) -> np.ndarray:
    """An object array of Python or numpy integers as int64 (an ``InputError`` naming
    ``name`` for integers beyond int64, not numpy's ``OverflowError``)."""
    try:
        return np.array(arr.tolist(), dtype=np.int64)
    except OverflowError:
        raise InputError(f"{name}: integers must lie within int64 (-2**63 to 2**63 - 1)") from None


def surrogate_row(arr: np.ndarray) -> int | None:
    """The first string of ``arr`` (unicode) holding a lone surrogate, or None: how Python
    decodes bytes that are not UTF-8 (``os.fsdecode``, ``errors="surrogateescape"``). Such a
    string has no UTF-8 form, so a state holding it could never be written (0.8.10)."""
    if not arr.size:
        return None
    # (In native byte order: a big-endian array's code points read byte-swapped.)
    native = arr.astype(arr.dtype.newbyteorder("="), copy=False)
    points = np.ascontiguousarray(native).view(np.uint32)
    bad = (points - np.uint32(0xD800)) < np.uint32(0x800)  # (0xD800 .. 0xDFFF, wrapping)
    if not bad.any():
        return None
    return int(np.flatnonzero(bad.reshape(len(arr), -1).any(axis=1))[0])


def check_text(arr: np.ndarray, name: str) -> np.ndarray:
    """``arr`` (unicode); ``InputError`` naming ``name`` if a string has no UTF-8 form
    (:func:`surrogate_row`)."""
    row = surrogate_row(arr)
    if row is not None:
        raise InputError(
            f"{name}: {str(arr[row])!r} (row {row}) holds a lone surrogate, which has no UTF-8 "
            "form (undecodable bytes read with surrogateescape?); decode the bytes as what "
            "they are, or with errors='replace'"
        )
    return arr


def encodable(text: str) -> bool:
    """Whether ``text`` has a UTF-8 form (:func:`check_text` of one string, for the checks
    of one sample)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def as_labels(x: Any, name: str) -> np.ndarray:
    """Class labels as a 1-D int64 or unicode array.

    Integers and booleans become int64; floats are accepted when every value is whole (as
    scikit-learn accepts ``[0.0, 1.0]``); strings become a unicode array. A column mixing strings
    and numbers, NaN, or fractional floats is refused.
    """
    arr = _vector(x, name)
    kind = arr.dtype.kind
    if kind in "US" and isinstance(x, (list, tuple)):
        # numpy reads ["a", 1] as strings: only a Python sequence can hide numbers this way
        _no_mixed_labels(x, name)
    if kind in "biu":
        if kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
            raise InputError(
                f"{name}: labels above 2**63 - 1 are not supported (integer labels are kept "
                "as int64): give labels this large as strings"
            )
        return arr.astype(np.int64, copy=False)
    if kind == "f":
        _finite(arr, name, "labels")
        if arr.size and not float(np.abs(arr).max()) < 2.0**63:  # (astype would wrap them)
            raise InputError(
                f"{name}: labels must lie within int64 (|label| < 2**63); found "
                f"{np.abs(arr).max():g} (a list mixing such integers with others reads as "
                "floats): give labels this large as strings"
            )
        whole = arr.astype(np.int64)
        if not np.array_equal(whole, arr):
            raise InputError(
                f"{name}: labels must be whole numbers or strings; got fractional values "
                "(continuous targets are a regression task)"
            )
        return whole
    if kind == "U":
        return check_text(arr, name)
    if kind in "OS":
        if kind == "S":
            try:
                return np.char.decode(arr, "utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"{name}: bytes labels must be UTF-8 text ({exc})") from None
        if arr.size == 0:
            return np.empty(0, dtype=np.int64)
        values = arr.tolist()
        types = {type(v) for v in values}
        missing = sorted(t.__name__ for t in types if t is type(None) or t.__name__ == "NAType")
        if missing:  # pandas' NA, None: not a label of either kind
            raise InputError(f"{name}: missing values ({', '.join(missing)}) are not labels")
        if all(issubclass(t, bytes) for t in types):
            return as_labels(np.array(values, dtype=np.bytes_), name)  # decoded as UTF-8
        if all(issubclass(t, str) for t in types):
            return check_text(arr.astype(np.str_), name)
        if all(issubclass(t, (int, np.integer, np.bool_)) for t in types):
            return _int64_labels(arr, name)
        if any(issubclass(t, (str, bytes)) for t in types):
            if any(isinstance(v, float) and math.isnan(v) for v in values):
                # (pandas writes a missing string or category as nan)
                raise InputError(f"{name}: missing values (nan) are not labels")
            raise _mixed_labels(name, types)
        if not all(issubclass(t, (int, float, np.integer, np.floating)) for t in types):
            odd = sorted(t.__name__ for t in types)
            raise InputError(f"{name}: labels must be numbers or strings; got {odd}")
        return as_labels(np.array(arr.tolist(), dtype=np.float64), name)
    raise InputError(f"{name}: labels of dtype {arr.dtype} are not supported")


def _mixed_labels(name: str, types: set[type]) -> InputError:
    return InputError(
        f"{name}: mixes strings and numbers ({sorted(t.__name__ for t in types)}); a Mix of "
        "label input types (string and number) is refused, as in scikit-learn: use one kind"
    )


def _no_mixed_labels(x: list[Any] | tuple[Any, ...], name: str) -> None:
    types = {type(v) for v in x}
    if not all(issubclass(t, (str, bytes)) for t in types):
        raise _mixed_labels(name, types)
