"""Host copies of the small columns the per-request path buffers: numpy arrays, lists and 1-D
torch tensors (one host copy; bfloat16 as its raw bits, widened later for the whole buffer).

Torch is never imported here: a tensor's class and dtypes are looked up in ``sys.modules`` the
first time one is read (:func:`_tensor_read`).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from . import _inputs
from ._inputs import BFLOAT16_BITS, _is_tensor, _tensor_to_numpy
from .errors import InputError

#: Batches up to this many rows are checked and buffered; larger ones are folded at once.
SMALL_BATCH = 2048


def _small_column(x: Any) -> np.ndarray | None:
    """A copy of a column of at most ``SMALL_BATCH`` rows as an array, or None: an array, a
    list, or a 1-D torch tensor (one host copy; bfloat16 as its raw bits, see
    :func:`_small_tensor`)."""
    if type(x) is _TENSOR[0]:
        return _small_tensor(x)
    if isinstance(x, np.ndarray):
        if isinstance(x, np.ma.MaskedArray):
            return None  # the ordinary path refuses masked entries at the call
        return x.copy() if x.ndim == 1 and len(x) <= SMALL_BATCH else None
    if isinstance(x, list):
        if len(x) > SMALL_BATCH:
            return None
        try:
            return np.array(x)
        except (ValueError, TypeError, OverflowError, RuntimeError):
            # Ragged, of no numpy type, or tensors numpy cannot read (requiring grad): the
            # ordinary path reads them or says what is wrong.
            return None
    if _is_tensor(x):
        return _small_tensor(x)
    return None


def _bfloat16_bits(x: Any) -> np.ndarray:
    """The bits of a bfloat16 tensor as a host uint16 array (a view where torch gives one)."""
    bits: np.ndarray = x.view(_TENSOR[2]).numpy(force=True)
    return bits if bits.dtype.kind == "u" else bits.view(np.uint16)  # torch before 2.3: int16


def _small_tensor(x: Any) -> np.ndarray | None:
    """A host copy of a 1-D tensor of at most ``SMALL_BATCH`` rows (None otherwise): the values
    of the dtypes numpy has, the raw bits (``BFLOAT16_BITS``) of bfloat16, which the fold widens
    for the whole buffer at once, and float8 widened now."""
    try:
        if x.ndim != 1 or x.shape[0] > SMALL_BATCH:
            return None
        read = _TENSOR_READS.get(x.dtype)
        if read is None:
            read = _tensor_read(x.dtype)
        if read == _VALUES:  # one call: detach, copy to the host if on a device, resolve views
            out: np.ndarray = x.numpy(force=True).copy()
            return out
        if read == _BITS:
            out = _bfloat16_bits(x).copy().view(BFLOAT16_BITS)
            return out
        return _tensor_to_numpy(x, "column")  # widened: a fresh array already
    except (InputError, RuntimeError, TypeError):
        return None  # sparse layouts and the like: the ordinary path reads them


_VALUES, _BITS, _WIDEN = 0, 1, 2
_TENSOR_READS: dict[Any, int] = {}
#: ``(torch.Tensor, torch.bfloat16, torch.uint16)`` once a tensor has been read (torch is never
#: imported here): the exact-type tests of the hot path compare with these.
_TENSOR: list[Any] = [None, None, None]


def _tensor_read(dtype: Any) -> int:
    """How :func:`_small_tensor` reads a torch dtype (learnt once per dtype)."""
    torch = sys.modules["torch"]
    # torch.uint16 exists since torch 2.3; before it, the bits come as int16 (read unsigned)
    _TENSOR[:] = [torch.Tensor, torch.bfloat16, getattr(torch, "uint16", torch.int16)]
    numpy_dtypes = {getattr(torch, d) for d in _inputs._NUMPY_DTYPES if hasattr(torch, d)}
    if dtype is torch.bfloat16:
        read = _BITS
    else:
        read = _VALUES if dtype in numpy_dtypes else _WIDEN
    _TENSOR_READS[dtype] = read
    return read
