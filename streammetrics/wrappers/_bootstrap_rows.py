"""One sample per call into a :class:`~streammetrics.wrappers.bootstrap.Bootstrap`: checked now,
drawn into the replicates later.

An ordinary ``Bootstrap.update`` of one row draws that row's Poisson weight in every replicate
and commits every replicate's state: hundreds of microseconds for 200 replicates of a counting
metric, tens of milliseconds where each replicate takes its own update. A server calling it per
request cannot pay that. So a call of one sample given as scalars is split in two:

* the wrapped metric (the real rows) takes the row at once, through its own per-request path:
  its checks refuse a bad row at this call, with nothing changed;
* the row's hash (of its id, or of its position in the stream) is computed here, in plain
  Python, and the row waits in the metric's pending buffer (``streammetrics._pending``);
* before anything reads the state, and when the buffer fills, the waiting rows are drawn into
  every replicate in one vectorised update (``Bootstrap._fold_rows``).

The replicates then hold what ordinary one-row updates would have given them: the same weights
(a pure function of seed, replicate and hash), summed in one batch (exactly the same state for
counting metrics; float sums to rounding, as for any metric's buffered rows).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._input_labels import encodable
from .._row_checks import _REAL_TYPES, _STR_TYPES, KEY, scalar_weight_ok
from ..states import labels as _labels
from . import _poisson

__all__ = ["held_total", "id_hash", "position_hash", "row_columns"]

_M64 = (1 << 64) - 1
# The domain tags of string ids and of row positions, and FNV-1a's prime, as the batch path's.
_STR, _NO_ID = int(_poisson._STR), int(_poisson._NO_ID)
_FNV_PRIME = int(_labels._FNV_PRIME)


def _splitmix64(z: int) -> int:
    """``streammetrics.states.labels.splitmix64`` of one uint64, as a Python int."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def position_hash(position: int) -> int:
    """The hash of stream position ``position`` (a row given without an id), as
    ``_poisson.position_hashes`` draws it."""
    return _splitmix64((position & _M64) ^ _NO_ID)


def id_hash(value: Any) -> int | None:
    """The hash ``Bootstrap`` gives one id (an integer within int64 or uint64, or a string), as
    its batch path computes it; None for anything else (the batch path checks and refuses it)."""
    t = type(value)
    if t in _STR_TYPES:
        if not encodable(value):
            return None  # (a lone surrogate: the batch path refuses it, as every text column)
        h = _STR
        for ch in value:  # FNV-1a over the code points, NULs skipped (numpy drops them)
            cp = ord(ch)
            if cp:
                h = ((h ^ cp) * _FNV_PRIME) & _M64
        return _splitmix64(h)
    if t is bool or t is np.bool_ or not isinstance(value, (int, np.integer)):
        return None
    v = int(value)
    if not -(1 << 63) <= v <= _M64:
        return None
    return _splitmix64(v & _M64)


def row_columns(metric: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``(weight, hashed)`` when ``update(*args, **kwargs)`` is one sample that the split above
    can take for ``metric`` (the wrapped metric: one with declared, unkeyed columns), else
    None. ``weight`` is the scalar ``sample_weight`` or None; ``hashed`` the hash of the one id
    given (:func:`id_hash`), or None when no id is."""
    rows = metric._rows
    if rows is None or rows.keyword is not None or len(args) != rows.n or KEY in rows.kinds:
        return None
    for a in args:
        if type(a) not in _REAL_TYPES and type(a) not in _STR_TYPES:
            return None
    weight = hashed = None
    for name, value in kwargs.items():
        if name == "ids":
            if type(value) in (list, tuple) and len(value) == 1 and value[0] is not None:
                value = value[0]  # (one id per row: a list of one is what a batch of one passes)
            if value is not None:
                hashed = id_hash(value)
                if hashed is None:
                    return None  # ([None], a float, a bool: the ordinary update refuses it)
        elif name == "sample_weight" and rows.weights and scalar_weight_ok(value):
            weight = value
        else:
            return None
    return weight, hashed


def held_total(metric: Any) -> float:
    """``metric``'s largest count or weight total, its buffer folded first."""
    with metric._lock:
        metric._fold()
        return float(metric._held_total())
