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
column): pass ``list(it)`` or an array.

Class labels and text are read by :mod:`streammetrics._input_labels`, on top of these functions;
a metric's configuration values are checked in :mod:`streammetrics._config_values`.
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
    "as_array",
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
