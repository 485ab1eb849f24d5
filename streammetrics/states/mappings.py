"""Bucket mappings: a fixed, monotone map from a score to an integer bucket key.

Kept apart from the store (:mod:`streammetrics.states.buckets`) as DDSketch keeps its mapping
and its store. Every mapping decides keys identically on every platform: only IEEE comparisons,
exact products by a power of two and integer operations on the float bits; no transcendental
function decides a key.

- :class:`LogitGrid` (``score_type="logit"``): ``floor(resolution * x)`` on ``[-16, 16)``, plus
  one underflow and one overflow bucket (``32 * resolution + 2`` keys: 4,098 at 128);
- :class:`ProbabilityGrid` (``score_type="probability"``): the same grid on ``logit(p)``. The
  key is decided by comparing ``p`` with the correctly rounded grid edges ``sigmoid(t)``
  (computed once with decimal arithmetic), found through a table indexed by the float bits of
  ``min(p, 1 - p)``: one table lookup per score, whose entry also decides the comparison with
  the cell's edge (an integer carry), no logarithm (the edges and the table:
  :mod:`streammetrics.states._grid_edges`);
- :class:`RealBits` (``score_type="real"``): the sign, the exponent and the top
  ``log2(resolution)`` mantissa bits of the float: relative bucket width ``1 / resolution`` at
  any scale (keys are sparse).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from functools import cache
from typing import Any

import numpy as np

from .._inputs import bfloat16_values
from ..errors import InputError
from ._grid_edges import (
    _SUBNORMAL,
    GRID_LIMIT,
    _flip_float,
    _grid_key_dtype,
    _probability_table,
    _sigmoid_edges,
)

__all__ = [
    "CHUNK",
    "REAL_FINE_BITS",
    "REAL_MAX_BUCKETS",
    "DEFAULT_RESOLUTION",
    "GRID_LIMIT",
    "BucketMapping",
    "LogitGrid",
    "ProbabilityGrid",
    "RESOLUTIONS",
    "RealBits",
    "SCORE_TYPES",
    "SCRATCH_ROWS",
    "bfloat16_keys",
    "check_mode",
    "collapse_real",
    "mapping_for",
    "real_at",
    "scratch",
]

#: Buckets per unit of logit (probability and logit grids), 2**-bits relative width (real).
DEFAULT_RESOLUTION = 128
SCORE_TYPES = ("probability", "logit", "real")
#: The allowed ``resolution`` values: powers of two from 8 to 4096.
RESOLUTIONS = tuple(2**b for b in range(3, 13))

_F64 = np.dtype(np.float64)
#: Grid mappings work through a batch in chunks of this many scores, in reused scratch arrays:
#: a fresh array per step costs more in page faults than the arithmetic (measured 4x).
CHUNK = 1 << 15
#: Scratch arrays hold 2.5 ``CHUNK``: the unweighted counting kernel works through pieces of up to
#: this many rows (:func:`~streammetrics.states._bucket_batch.count_grid`).
SCRATCH_ROWS = 2 * CHUNK + CHUNK // 2


class _Scratch(threading.local):
    """Per-thread scratch arrays of ``SCRATCH_ROWS`` elements, one per (name, dtype)."""

    def __init__(self) -> None:
        self.arrays: dict[tuple[str, Any], np.ndarray] = {}

    def get(self, name: str, n: int, dtype: Any) -> np.ndarray:
        # Keyed by the dtype as given (``np.float64`` and ``np.dtype("f8")`` get arrays of their
        # own): normalising it with ``np.dtype`` cost half of each call, a dozen calls a chunk.
        arr = self.arrays.get((name, dtype))
        if arr is None:
            arr = self.arrays[(name, dtype)] = np.empty(SCRATCH_ROWS, dtype=dtype)
        return arr[:n]


_SCRATCH = _Scratch()
#: Per-thread scratch arrays of ``SCRATCH_ROWS`` elements (``scratch.get(name, n, dtype)``).
scratch = _SCRATCH
_I64 = np.dtype(np.int64)


class BucketMapping(ABC):
    """A monotone, platform-independent map from finite float64 scores to int64 bucket keys."""

    #: ``score_type`` this mapping serves.
    name: str
    #: Number of keys (keys are ``0 .. size - 1``), or ``None`` when keys are sparse.
    size: int | None

    #: The integer dtype of the keys (small for grids: ``2 * key + label`` fits in it).
    key_dtype: np.dtype[Any] = _I64

    def __init__(self, resolution: int = DEFAULT_RESOLUTION) -> None:
        if resolution not in RESOLUTIONS:
            raise ValueError(f"resolution must be a power of two from 8 to 4096; got {resolution}")
        self.resolution = resolution

    @abstractmethod
    def keys(self, x: np.ndarray) -> np.ndarray:
        """The bucket key of every score in ``x`` (finite float64), of dtype ``key_dtype``."""

    def keys_into(self, x: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Write the keys of ``x`` into ``out`` (an integer array of ``len(x)``); return it."""
        out[...] = self.keys(x)
        return out

    def checked_keys_into(self, x: np.ndarray, out: np.ndarray) -> np.ndarray:
        """:meth:`keys_into` for scores already checked to lie in the mapping's domain (as the
        counting kernel gets them); a mapping may have a faster way for those."""
        return self.keys_into(x, out)

    def holds(self, low: float, high: float) -> bool:
        """Decoding: whether scores from ``low`` to ``high`` (finite) lie in the domain of
        ``score_type`` (every update checked it). Any finite score, but for probabilities."""
        return True

    @abstractmethod
    def lower_edges(self, keys: np.ndarray) -> np.ndarray:
        """The smallest score each bucket can hold (``-inf`` for an open-ended bucket)."""

    def key_range(self) -> tuple[int, int]:
        """The smallest and the largest key a finite score can have (``0 .. size - 1``)."""
        assert self.size is not None
        return 0, self.size - 1

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.resolution == getattr(other, "resolution", 0)

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.resolution))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(resolution={self.resolution})"


class LogitGrid(BucketMapping):
    """``key = clip(floor(resolution * x), -L * r - 1, L * r) + L * r + 1`` with ``L = 16``.

    ``resolution * x`` is exact (a power of two), so the key is exactly the grid cell of ``x``.
    """

    name = "logit"

    def __init__(self, resolution: int = DEFAULT_RESOLUTION) -> None:
        super().__init__(resolution)
        self.half = GRID_LIMIT * resolution
        self.size = 2 * self.half + 2
        self.key_dtype = _grid_key_dtype(self.size)

    def keys(self, x: np.ndarray) -> np.ndarray:
        return _chunked(self, x)

    def keys_into(self, x: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Keys of at most ``SCRATCH_ROWS`` scores, written into ``out``.

        The product comes first, straight from ``x``: a score beyond ``2**1023 / resolution``
        overflows to an infinity, which the clip then brings to the end bucket it belongs to
        (clipping ``x`` first would cost one more pass over the chunk)."""
        with np.errstate(over="ignore"):
            y = np.multiply(x, float(self.resolution), out=_SCRATCH.get("q", len(x), _F64))
        np.floor(y, out=y)
        np.clip(y, -self.half - 1, self.half, out=y)
        y += self.half + 1
        np.copyto(out, y, casting="unsafe")
        return out

    def lower_edges(self, keys: np.ndarray) -> np.ndarray:
        edges = (np.asarray(keys, dtype=np.float64) - (self.half + 1)) / self.resolution
        edges[np.asarray(keys) == 0] = -np.inf
        return edges


class ProbabilityGrid(BucketMapping):
    """The :class:`LogitGrid` on ``logit(p)``: ``key = clip(floor(r * logit(p)), ...)`` decided
    exactly (in real arithmetic) by comparing ``p`` with correctly rounded grid edges."""

    name = "probability"

    def __init__(self, resolution: int = DEFAULT_RESOLUTION) -> None:
        super().__init__(resolution)
        self.size = 2 * GRID_LIMIT * resolution + 2
        self.key_dtype = _grid_key_dtype(self.size)

    def holds(self, low: float, high: float) -> bool:
        # (The grid's end buckets also take scores a hair outside [0, 1], which no update
        # lets in: 0.8.15 decoded a bucket holding -1e-10.)
        return bool(low >= 0.0 and high <= 1.0)

    def keys(self, x: np.ndarray) -> np.ndarray:
        return _chunked(self, x)

    def keys_into(self, x: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Keys of at most ``SCRATCH_ROWS`` scores, written into ``out``.

        Every step is one whole-array ufunc on unsigned 64-bit integers or floats (numpy's
        signed shifts and mixed bool-with-integer arithmetic are 2x to 10x slower), and the one
        lookup (:func:`_probability_table`) uses ``mode="clip"`` (2x faster than the default;
        only ``-0.0`` is out of range, and it is meant for the last entry). Into an 8-byte
        ``out`` (the ``intp`` keys the counting uses) the keys are computed in place."""
        shift, flip, table = _probability_table(self.resolution)
        n = len(x)
        q = np.subtract(1.0, x, out=_SCRATCH.get("q", n, _F64))  # exact where x >= 1/2
        np.minimum(q, x, out=q)
        q *= _SUBNORMAL  # exact for q >= 2**-25; below it, subnormal: the shared first cells
        bits = q.view(np.uint64)
        # The side (x > 1/2): the sign bit of 0.5 - x, widened to the mask that mirrors it.
        side = np.subtract(0.5, x, out=_SCRATCH.get("b", n, _F64)).view(np.uint64)
        np.right_shift(side, 63, out=side)
        np.multiply(side, np.uint64(flip), out=side)
        bits ^= side
        index = np.right_shift(bits, shift, out=side).view(np.int64)
        direct = out.dtype.kind in "iu" and out.dtype.itemsize == 8 and out.flags.c_contiguous
        key = out.view(np.uint64) if direct else _SCRATCH.get("k", n, np.uint64)
        table.take(index, out=key, mode="clip")  # (np.take's Python wrapper: a µs per call)
        key += bits  # the carry out of the low bits: one more where p is at or past the edge
        key >>= shift
        if not direct:
            np.copyto(out, key, casting="unsafe")
        return out

    def checked_keys_into(self, x: np.ndarray, out: np.ndarray) -> np.ndarray:
        """:meth:`keys_into` for scores checked to lie in [0, 1] (``-0.0`` included), as the
        counting kernel gets them: the same keys, two passes fewer.

        The mask that mirrors the side ``x > 1/2`` is the float ``rint(x) * F``, ``F`` the float
        whose bits are ``flip``: on [0, 1] ``rint`` gives 0 up to 1/2 (ties to even) and 1 above,
        and both products are exact, so the mask costs two float passes where the sign of
        ``0.5 - x`` costs three. ``-0.0`` (``q = -0.0``, ``rint(x) = -0.0``) has the sign bit in
        both, and the XOR leaves it ``u = 0``: key 0, as :meth:`keys_into` gives it through the
        table's last entry. Outside [0, 1] the keys differ from :meth:`keys_into`'s (whose keys
        for such scores the decoder relies on to refuse them): never use it there."""
        shift, flip, table = _probability_table(self.resolution)
        n = len(x)
        q = np.subtract(1.0, x, out=_SCRATCH.get("q", n, _F64))  # exact where x >= 1/2
        np.minimum(q, x, out=q)
        q *= _SUBNORMAL  # exact for q >= 2**-25; below it, subnormal: the shared first cells
        side = np.rint(x, out=_SCRATCH.get("b", n, _F64))  # 1.0 where x > 1/2, else +-0.0
        side *= _flip_float(flip)
        bits = q.view(np.uint64)
        bits ^= side.view(np.uint64)
        index = np.right_shift(bits, shift, out=side.view(np.uint64)).view(np.int64)
        direct = out.dtype.kind in "iu" and out.dtype.itemsize == 8 and out.flags.c_contiguous
        key = out.view(np.uint64) if direct else _SCRATCH.get("k", n, np.uint64)
        table.take(index, out=key, mode="clip")  # (every index is in range)
        key += bits  # the carry out of the low bits: one more where p is at or past the edge
        key >>= shift
        if not direct:
            np.copyto(out, key, casting="unsafe")
        return out

    def lower_edges(self, keys: np.ndarray) -> np.ndarray:
        edges = _sigmoid_edges(self.resolution).copy()
        edges[0] = 0.0
        out: np.ndarray = edges[np.asarray(keys, dtype=np.int64)]
        return out


#: The bits of the largest finite float64, as an integer.
_LARGEST_FINITE_BITS = 0x7FEFFFFFFFFFFFFF


class RealBits(BucketMapping):
    """Sign, exponent and the top ``log2(resolution)`` mantissa bits of the float64 score.

    Keys are signed: ``m = bits(|x|) >> (52 - b)``, key ``m`` for ``x >= 0`` and ``-m - 1`` for
    ``x < 0`` (``-0.0`` counts as ``+0.0``). A bucket spans a relative width of ``2**-b``.
    """

    name = "real"
    size = None

    def __init__(self, resolution: int = DEFAULT_RESOLUTION) -> None:
        super().__init__(resolution)
        self.shift = 52 - (resolution.bit_length() - 1)

    def keys(self, x: np.ndarray) -> np.ndarray:
        v: np.ndarray = np.abs(x).view(np.int64) >> self.shift
        neg = x < 0
        v[neg] = -v[neg] - 1
        return v

    def key_range(self) -> tuple[int, int]:
        """The smallest and the largest key of a finite score (of -max and +max float64)."""
        top = _LARGEST_FINITE_BITS >> self.shift
        return -top - 1, top

    def lower_edges(self, keys: np.ndarray) -> np.ndarray:
        k = np.asarray(keys, dtype=np.int64)
        neg = k < 0
        mag = np.where(neg, -k - 1, k)
        low = (mag << self.shift).view(np.float64)
        # Negative buckets start at minus the largest magnitude they hold.
        top = (((mag + 1) << self.shift) - 1).view(np.float64)
        out = np.where(neg, -top, low)
        return np.where(np.isfinite(out), out, -np.finfo(np.float64).max)


#: ``"real"`` score stores (:class:`~streammetrics.states.buckets.ScoreBuckets`) start with
#: buckets of relative width ``2**-REAL_FINE_BITS`` ...
REAL_FINE_BITS = 20
#: ... and halve the resolution of every bucket (uniform collapse, as UDDSketch does) while they
#: hold more than this many buckets, down to the configured ``resolution``: 1,920 buckets of 32
#: bytes keep the state under 64 KiB.
REAL_MAX_BUCKETS = 1920


@cache
def real_at(bits: int) -> RealBits:
    """The ``"real"`` mapping keeping ``bits`` mantissa bits (relative width ``2**-bits``)."""
    mapping = RealBits.__new__(RealBits)  # finer than the configurable resolutions
    mapping.resolution, mapping.shift = 1 << bits, 52 - bits
    return mapping


def collapse_real(keys: np.ndarray, shift: int) -> np.ndarray:
    """``RealBits`` keys ``shift`` levels coarser: an arithmetic shift is exact for both signs
    (``-m - 1 >> d == -(m >> d) - 1``), and keeps the keys sorted."""
    return keys >> shift if shift else keys


def _chunked(mapping: BucketMapping, x: np.ndarray) -> np.ndarray:
    out = np.empty(len(x), dtype=mapping.key_dtype)
    for a in range(0, len(x), CHUNK):
        mapping.keys_into(x[a : a + CHUNK], out[a : a + CHUNK])
    return out


@cache
def bfloat16_keys(mapping: BucketMapping) -> np.ndarray:
    """The key of each of the 65,536 bfloat16 bit patterns on a grid ``mapping`` (read-only),
    computed once by the mapping itself. Patterns outside the mapping's domain (NaNs, infinities
    and, for probabilities, values outside [0, 1]) get the key of 0.0: callers look up only
    patterns that passed the checks of that domain."""
    values = bfloat16_values()
    valid = np.isfinite(values)
    if mapping.name == "probability":
        valid &= (values >= 0.0) & (values <= 1.0)
    keys = mapping.keys(np.where(valid, values, 0.0))
    keys.flags.writeable = False
    return keys


def mapping_for(score_type: str, resolution: int = DEFAULT_RESOLUTION) -> BucketMapping:
    """The bucket mapping of a ``score_type`` (``"probability"``, ``"logit"`` or ``"real"``)."""
    if score_type == "probability":
        return ProbabilityGrid(resolution)
    if score_type == "logit":
        return LogitGrid(resolution)
    if score_type == "real":
        return RealBits(resolution)
    raise ValueError(f"score_type must be one of {SCORE_TYPES}; got {score_type!r}")


def check_mode(exact: Any, score_type: Any, resolution: Any) -> tuple[bool, str, int]:
    """``(exact, score_type, resolution)`` as plain Python values (numpy's bools and integers
    too), or an ``InputError`` unless ``exact`` is a bool, ``score_type`` one of
    ``SCORE_TYPES`` and ``resolution`` one of the bucket grids' ``RESOLUTIONS``."""
    if not isinstance(exact, (bool, np.bool_)):
        raise InputError(f"exact: must be True or False; got {exact!r}")
    if not isinstance(score_type, str) or score_type not in SCORE_TYPES:
        raise InputError(f"score_type: must be one of {SCORE_TYPES}; got {score_type!r}")
    ok = isinstance(resolution, (int, np.integer)) and not isinstance(resolution, bool)
    if not ok or resolution not in RESOLUTIONS:
        raise InputError(f"resolution: must be a power of two from 8 to 4096; got {resolution!r}")
    return bool(exact), str(score_type), int(resolution)
