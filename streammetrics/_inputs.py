"""One coercion layer for every column a metric is given.

Everything ``numpy.asarray`` accepts goes in: lists, numpy arrays, pandas Series, Arrow arrays,
and torch tensors of every dtype on any device. A scalar is one sample. Every check raises
:class:`~streammetrics.errors.InputError` naming the argument. These functions never touch a
metric's state, so an ``update`` that calls them first and commits last is atomic.

Torch tensors are recognised without importing torch: a caller who passed a tensor has already
imported it, so ``sys.modules["torch"].Tensor`` is looked up only then. A tensor is detached and
copied to the host once per column (``.cpu()``, never a copy per row); ``requires_grad``,
non-contiguous and 0-d tensors are accepted. float16, float32 and float64 are read as they are;
bfloat16 and the float8 types, which numpy has no dtype for, are widened to float32 on the host,
which is exact. Integer and bool tensors keep their dtype.

A generator or other one-shot iterator is refused (as numpy and scikit-learn do not read one as a
column): pass ``list(it)`` or an array. A label column that mixes strings and numbers is refused,
as scikit-learn's ``type_of_target`` refuses it, even where numpy would silently read
``["a", 1]`` as strings.
"""

from __future__ import annotations

import datetime as _dt
import math
import sys
from collections.abc import Iterable, Iterator
from functools import cache
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
    "bfloat16_values",
    "check_same_length",
    "widen_bfloat16",
    "BFLOAT16_BITS",
]

#: The raw bits of a bfloat16 column, as the per-request path buffers them: copying the bits is
#: cheaper than widening each small batch, which happens once, for the whole buffer, at the fold
#: (:func:`widen_bfloat16`, or a lookup in :func:`bfloat16_values`). A dtype of its own (a
#: one-field record) so that the bits can never be taken for integers.
BFLOAT16_BITS = np.dtype([("bfloat16", np.uint16)])


def widen_bfloat16(bits: np.ndarray) -> np.ndarray:
    """float32 values of a :data:`BFLOAT16_BITS` column (exact: bfloat16 is float32's top half)."""
    out: np.ndarray = np.left_shift(bits.view(np.uint16), 16, dtype=np.uint32)
    return out.view(np.float32)


@cache
def bfloat16_values() -> np.ndarray:
    """The float64 value of each of the 65,536 bfloat16 bit patterns (NaN for the NaNs), so
    that ``bfloat16_values()[bits]`` widens a column with one lookup."""
    bits = np.arange(1 << 16, dtype=np.uint16).view(BFLOAT16_BITS)
    with np.errstate(invalid="ignore"):  # the signalling NaNs
        values = widen_bfloat16(bits).astype(np.float64)
    values.flags.writeable = False
    return values


def _is_tensor(x: Any) -> bool:
    """True for a torch tensor, without importing torch (it is imported if a tensor exists)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


_NUMPY_DTYPES = (
    "bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
)  # fmt: skip
_numpy_dtypes: frozenset[Any] = frozenset()
_widened: frozenset[Any] = frozenset()  # floating dtypes numpy lacks, read through float32


def _tensor_to_numpy(x: Any, name: str) -> np.ndarray:
    """A host numpy copy of a tensor: one device-to-host copy for the whole column."""
    global _numpy_dtypes, _widened
    torch: Any = sys.modules["torch"]
    if not _numpy_dtypes:
        _numpy_dtypes = frozenset(getattr(torch, d) for d in _NUMPY_DTYPES if hasattr(torch, d))
        _widened = frozenset(
            getattr(torch, d) for d in dir(torch) if d.startswith(("bfloat16", "float8_"))
        )
    if x.layout is torch.strided:
        try:
            if x.dtype in _numpy_dtypes:
                # one call: detach, copy to the host if on a device, resolve conj/neg views
                return x.numpy(force=True)  # type: ignore[no-any-return]
            if x.dtype in _widened:  # bfloat16 (and float8): exact in float32
                return x.float().numpy(force=True)  # type: ignore[no-any-return]
        except (RuntimeError, TypeError):
            pass
    try:
        t = x.detach()
        if t.layout is not torch.strided:
            t = t.to_dense()
        t = t.cpu()
        if t.is_floating_point() and t.dtype not in _numpy_dtypes:
            t = t.float()  # bfloat16 and float8 fit in float32 exactly
        return np.asarray(t.numpy(force=True))
    except (RuntimeError, TypeError, NotImplementedError) as exc:
        if getattr(x.device, "type", None) == "meta":
            raise InputError(
                f"{name}: a tensor on the meta device holds no values; pass it once it is "
                "materialised on a real device"
            ) from exc
        raise InputError(f"{name}: cannot read a tensor of dtype {x.dtype} ({exc})") from exc


def as_array(x: Any, name: str) -> np.ndarray:
    """``x`` as a numpy array of at least one dimension (a scalar becomes one sample)."""
    if type(x) is np.ndarray and x.ndim and x.dtype.fields is None:
        return x  # the common case, before the checks for tensors and containers
    if x is None:
        raise InputError(f"{name}: got None, expected an array-like")
    if _is_tensor(x):
        x = _tensor_to_numpy(x, name)
    elif hasattr(x, "detach") and hasattr(x, "cpu") and hasattr(x, "numpy"):
        x = x.detach().cpu().numpy()  # other tensor-like objects (JAX, CuPy wrappers, ...)
    elif isinstance(x, Iterator):
        raise InputError(
            f"{name}: got a {type(x).__name__} (a one-shot iterator); pass a list or an array, "
            f"e.g. list({name})"
        )
    elif hasattr(x, "to_numpy") and not isinstance(x, np.ndarray):
        # pandas Series/Index and Arrow arrays: avoids object detours for nullable dtypes.
        try:
            x = x.to_numpy(zero_copy_only=False)
        except TypeError:
            x = x.to_numpy()
    if isinstance(x, np.ma.MaskedArray):
        # np.asarray drops the mask: the hidden values would be counted.
        if np.ma.getmaskarray(x).any():
            raise InputError(
                f"{name}: a masked array with masked entries; drop them (np.ma.compressed) or "
                "fill them first"
            )
        x = x.data
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged lists and exotic objects
        if not (isinstance(x, (list, tuple)) and any(_is_tensor(v) for v in x)):
            raise InputError(f"{name}: cannot be read as an array ({exc})") from exc
        # A list of tensors numpy cannot read itself (one sample's outputs that require grad,
        # or of bfloat16): each read as a tensor column is.
        try:
            arr = np.asarray([_tensor_to_numpy(v, name) if _is_tensor(v) else v for v in x])
        except InputError:
            raise
        except Exception as exc2:
            raise InputError(f"{name}: cannot be read as an array ({exc2})") from exc2
    if arr.ndim == 0:
        item = arr.item() if arr.dtype.kind == "O" else None
        if isinstance(item, Iterable) and not isinstance(item, (str, bytes)):
            # a set, dict or other container numpy could not read as a sequence
            raise InputError(
                f"{name}: got a {type(item).__name__}, which has no order; pass a list or an array"
            )
        arr = arr.reshape(1)
    fields = arr.dtype.fields
    if fields is not None and (len(fields) > 1 or any(f[0].shape for f in fields.values())):
        # numpy casts a one-field record to its field's first value: a field of shape (2,)
        # would silently lose its second column. (One scalar field reads as before.)
        raise InputError(
            f"{name}: a structured array (fields {list(fields)}); pass one field, "
            f"e.g. {name}[{next(iter(fields))!r}], or a plain array"
        )
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
    if not arr.size:
        return
    with np.errstate(over="ignore", invalid="ignore"):
        # One pass and no temporary: a nan or an infinity makes the sum non-finite, and a
        # finite sum means every value is finite. Only a sum that overflows (or a bad value)
        # takes the element-wise check.
        if math.isfinite(np.add.reduce(arr, axis=None)):
            return
    if not np.isfinite(arr).all():
        bad = np.flatnonzero(~np.isfinite(arr.reshape(-1)))[0]
        raise InputError(f"{name}: {what} must be finite; found {arr.reshape(-1)[bad]} at {bad}")


def as_scores(x: Any, name: str, *, ndim: int = 1, finite: bool = True) -> np.ndarray:
    """Finite float64 values (scores, probabilities, regression targets). ``finite=False``
    leaves the finite check to the caller (:func:`check_finite`), who must run it before
    anything built from the values is kept."""
    arr = as_array(x, name)
    if arr.ndim != ndim:
        raise InputError(f"{name}: expected a {ndim}-D array, got shape {arr.shape}")
    kind = arr.dtype.kind
    if not_real(arr) or kind in "mM":
        # As scikit-learn: strings are not numbers, even "0.5", and a complex is not a real;
        # nor are dates and durations, whose float value depends on their unit.
        raise InputError(f"{name}: expected real numbers, got {_describe(arr)}")
    if kind not in "biuf":
        try:
            arr = arr.astype(np.float64)
        except OverflowError as exc:  # a Python int beyond float64's range
            raise InputError(f"{name}: a value lies beyond float64's range ({exc})") from exc
        except (TypeError, ValueError) as exc:
            raise InputError(f"{name}: expected numbers, got dtype {arr.dtype}") from exc
    if arr.dtype.itemsize > 8 and arr.dtype.kind == "f":
        with np.errstate(over="ignore"):  # longdouble beyond float64: the finite check names it
            arr = arr.astype(np.float64)
    arr = np.asarray(arr, dtype=np.float64)
    if finite:
        _finite(arr, name, "values")
    return arr


def one_value(x: Any) -> bool:
    """Whether ``x`` is one value (a scalar or a 0-d array), never raising (a ragged list is
    not one value; the column's own check names what is wrong with it)."""
    if isinstance(x, np.ndarray):
        return x.ndim == 0
    if x is None or isinstance(x, (str, bytes, Iterator)):
        return False  # (an iterator has no length, but is no value: the column's check says so)
    ndim = getattr(x, "ndim", None)  # 0-d tensors have a __len__ that raises
    if isinstance(ndim, int):
        return ndim == 0
    return not hasattr(x, "__len__")


def one_sample_row(y_true: Any, arr: np.ndarray) -> np.ndarray:
    """``arr`` as one row ``(1, k)`` when it is a 1-D row of k > 1 class scores beside one
    label (one sample given as a scalar label and its row: a string label is one label here);
    else unchanged."""
    one = one_value(y_true) or isinstance(y_true, (str, bytes))
    if one and arr.ndim == 1 and arr.size > 1:
        return arr.reshape(1, -1)
    return arr


#: Values of an object array that are not real numbers (dates and durations too: ``astype``
#: would read them as counts of their unit).
_NOT_REAL: tuple[type, ...] = (
    str,
    bytes,
    complex,
    np.datetime64,
    np.timedelta64,
    _dt.date,
    _dt.timedelta,
)


def not_real(arr: np.ndarray, booleans: bool = False) -> bool:
    """Whether ``arr`` holds strings, bytes or complex numbers (as an array, or as values of an
    object array), or, with ``booleans``, booleans or timedeltas: values no conversion to
    float64 should read as real numbers."""
    kinds, types = "USc", _NOT_REAL
    if booleans:
        kinds, types = kinds + "bm", (*types, bool)
    kind = arr.dtype.kind
    return kind in kinds or (kind == "O" and any(isinstance(v, types) for v in arr.flat))


def check_finite(arr: np.ndarray, name: str) -> None:
    """``InputError`` naming ``name`` unless every value of ``arr`` is finite."""
    _finite(arr, name, "values")


def _describe(arr: np.ndarray) -> str:
    if arr.dtype.kind in "US":
        return "strings"
    if arr.dtype.kind == "c":
        return "complex numbers"
    if arr.dtype.kind in "mM":
        return f"dates or durations ({arr.dtype}; convert them to numbers of a unit first)"
    return f"values of types {sorted({type(v).__name__ for v in arr.flat})}"


def as_matrix(x: Any, name: str, finite: bool = True) -> np.ndarray:
    """A finite float64 matrix of shape (n, d); a 1-D input is one row per value (d = 1).
    ``finite=False``: as :func:`as_scores`."""
    arr = as_array(x, name)
    if arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    if arr.ndim != 2:
        raise InputError(f"{name}: expected a 2-D array (n, d), got shape {arr.shape}")
    return as_scores(arr, name, ndim=2, finite=finite)


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


#: The largest integer a configuration holds without a ``maximum`` of its own: the wire's
#: integers are 64-bit (0.8.12 took ``GAUC(max_exact=2**70)`` and raised ``OverflowError``
#: writing its configuration).
CONFIG_INT_MAX = 2**63 - 1


def config_int(value: Any, name: str, minimum: int = 1, maximum: int | None = None) -> int:
    """A whole-number configuration value within bounds (``maximum`` at most
    ``CONFIG_INT_MAX``, the default), as a Python int (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{name}: must be an integer; got {value!r}")
    top = CONFIG_INT_MAX if maximum is None else min(maximum, CONFIG_INT_MAX)
    if value < minimum or value > top:
        upper = "2**63 - 1" if top == CONFIG_INT_MAX else str(top)
        raise InputError(f"{name}: must be from {minimum} to {upper}; got {value}")
    return int(value)


def config_flag(value: Any, name: str) -> bool:
    """A yes/no configuration value: a bool (numpy's too), or the integers 0 and 1. Anything
    else (``"no"``, which ``bool()`` reads as True) is an ``InputError``."""
    if isinstance(value, (bool, np.bool_)) or (
        isinstance(value, (int, np.integer)) and value in (0, 1)
    ):
        return bool(value)
    raise InputError(f"{name}: must be True or False; got {value!r}")


def whole_if_integral(value: int | float) -> int | float:
    """A float holding a whole number (below 2**53) as that int, another float as a Python
    float, any other value unchanged: so that ``beta=2`` and ``beta=2.0`` are one configuration
    (merges compare configurations by type as well as by value), written as the int a default
    of ``2`` always wrote."""
    if isinstance(value, float):  # numpy floats too, written as Python's
        return int(value) if value.is_integer() and abs(value) < 2.0**53 else float(value)
    return value


def config_number(
    value: Any,
    name: str,
    minimum: float = 0.0,
    finite: bool = True,
    maximum: float | None = None,
) -> float:
    """A numeric configuration value of at least ``minimum`` (and at most ``maximum``), as a
    Python float. numpy's numbers too, compared as float64 (a float32 value compared with a
    bound past its range made the bound inf); an int past float64 is infinite."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise InputError(f"{name}: must be a number; got {value!r}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    top = math.inf if maximum is None else maximum
    if not minimum <= number <= top or (finite and math.isinf(number)):
        kind = "a finite number" if finite else "a number"
        upto = "" if maximum is None else f" and at most {maximum:g}"
        raise InputError(f"{name}: must be {kind} of at least {minimum:g}{upto}; got {value!r}")
    return number
