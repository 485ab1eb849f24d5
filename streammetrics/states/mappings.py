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
  the cell's edge (an integer carry), no logarithm;
- :class:`RealBits` (``score_type="real"``): the sign, the exponent and the top
  ``log2(resolution)`` mantissa bits of the float: relative bucket width ``1 / resolution`` at
  any scale (keys are sparse).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from decimal import Decimal, localcontext
from functools import cache
from typing import Any

import numpy as np

from .._inputs import bfloat16_values
from ..errors import InputError

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

#: The grid covers logits in [-GRID_LIMIT, GRID_LIMIT); beyond it one overflow bucket each side.
GRID_LIMIT = 16
#: Buckets per unit of logit (probability and logit grids), 2**-bits relative width (real).
DEFAULT_RESOLUTION = 128
SCORE_TYPES = ("probability", "logit", "real")
#: The allowed ``resolution`` values: powers of two from 8 to 4096.
RESOLUTIONS = tuple(2**b for b in range(3, 13))

_F64 = np.dtype(np.float64)
_TINY = 2.0**-25  # below the first grid edge sigmoid(-16) ~ 1.1e-7: one cell of key 0
_SUBNORMAL = 2.0**-997  # _TINY * _SUBNORMAL is the smallest normal float64
#: Grid mappings work through a batch in chunks of this many scores, in reused scratch arrays:
#: a fresh array per step costs more in page faults than the arithmetic (measured 4x).
CHUNK = 1 << 15
#: Scratch arrays hold a little more than ``CHUNK``, so that a batch's short last piece can join
#: the chunk before it (:func:`~streammetrics.states._bucket_batch.count_grid`).
SCRATCH_ROWS = CHUNK + CHUNK // 4


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


def _grid_key_dtype(size: int) -> np.dtype[Any]:
    return np.dtype(np.uint16) if 2 * size <= 1 << 16 else np.dtype(np.int32)


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


@cache
def _sigmoid_edges(resolution: int) -> np.ndarray:
    """``E[j]`` = the smallest float64 >= sigmoid(-16 + (j - 1) / r), for ``j = 1 .. 32 r + 1``,
    padded with ``E[0] = -inf`` and ``E[-1] = +inf``: key(p) = #{j >= 1 : p >= E[j]}.

    Decimal arithmetic at 50 digits is exactly specified, so the table is the same everywhere.
    """
    half = GRID_LIMIT * resolution
    with localcontext() as ctx:
        ctx.prec = 50
        low = [
            1 / (1 + (Decimal(GRID_LIMIT) - Decimal(j) / Decimal(resolution)).exp())
            for j in range(half)
        ]
        exact = [*low, Decimal("0.5"), *(1 - s for s in reversed(low))]
        out = np.empty(len(exact) + 2)
        out[0], out[-1] = -np.inf, np.inf
        for i, s in enumerate(exact, start=1):
            d = float(s)
            if Decimal(d) < s:
                d = float(np.nextafter(d, np.inf))
            out[i] = d
    return out


@cache
def _probability_cells(resolution: int) -> tuple[int, int, np.ndarray, np.ndarray]:
    """The cells of :class:`ProbabilityGrid`'s lookup: ``(shift, side, K, B)``, packed into one
    table by :func:`_probability_table`.

    A cell is a range of ``q = min(p, 1 - p)`` sharing its top float bits (``bits`` mantissa
    bits), on the side ``p <= 1/2`` (index ``c``) or ``p > 1/2`` (index ``side + c``, ``side``
    a power of two). ``K`` is the key of the cell's smallest ``p`` and ``B`` the one grid edge
    inside the cell (``inf`` if none), so ``key(p) = K[i] + (p >= B[i])``. Mantissa bits are
    added until no cell holds two edges.

    The index is read from the bits of ``q * 2**-997``, which brings ``2**-25`` (below the first
    edge) to the smallest normal float: every smaller ``q`` becomes subnormal and falls in the
    first ``2**bits`` cells, which share key 0 (key ``32 r + 1`` on the upper side). The last
    entry (key 0, no edge) catches the one other index, the sign bit of ``-0.0``.
    """
    edges = _sigmoid_edges(resolution)
    inner = edges[1:-1]
    bits = resolution.bit_length()  # log2(resolution) + 1
    while True:
        shift = 52 - bits
        base = int(np.float64(_TINY).view(np.int64)) >> shift
        top = int(np.float64(0.5).view(np.int64)) >> shift
        cells = top - base + 1
        c = np.arange(cells, dtype=np.int64)
        qlo = ((c + base) << shift).view(np.float64).copy()
        qlo[0] = 0.0
        qhi = ((c + base + 1) << shift).view(np.float64)
        qmax = np.nextafter(qhi, 0.0)  # the largest q in the cell
        # Side p <= 1/2: p = q in [qlo, qmax], capped at 1/2.
        lo_p, hi_p = qlo, np.minimum(qmax, 0.5)
        # Side p > 1/2: p = 1 - q (exact), p in [1 - qmax, 1 - qlo], above 1/2.
        up_lo = np.maximum(_p_of_q(qmax, smallest=True), np.nextafter(0.5, 1.0))
        up_hi = _p_of_q(qlo, smallest=False)
        lows = np.concatenate([lo_p, up_lo])
        highs = np.concatenate([hi_p, up_hi])
        k_lo = np.searchsorted(inner, lows, side="right")
        k_hi = np.searchsorted(inner, highs, side="right")
        if (k_hi - k_lo).max() <= 1:
            break
        bits += 1  # pragma: no cover - the first try suffices for every allowed resolution
    bound = np.where(k_hi > k_lo, edges[np.minimum(k_lo + 1, len(edges) - 1)], np.inf)
    key_dtype = _grid_key_dtype(2 * GRID_LIMIT * resolution + 2)
    tiny = 1 << bits  # the subnormal cells, ahead of the cell of 2**-25
    side = 1 << (tiny + cells - 1).bit_length()
    table_k = np.zeros(side + tiny + cells + 1, dtype=key_dtype)
    table_b = np.full(len(table_k), np.inf)
    for at, part in ((0, slice(0, cells)), (side, slice(cells, 2 * cells))):
        ks, bs = k_lo[part], bound[part]
        table_k[at : at + tiny], table_b[at : at + tiny] = ks[0], bs[0]
        table_k[at + tiny : at + tiny + cells], table_b[at + tiny : at + tiny + cells] = ks, bs
    return shift, side, table_k, table_b


@cache
def _probability_table(resolution: int) -> tuple[int, int, np.ndarray]:
    """The one lookup table of :class:`ProbabilityGrid`: ``(shift, flip, table)``.

    The cells of :func:`_probability_cells` ask for two lookups and a float comparison per
    score (``K[i] + (p >= B[i])``); here both live in one uint64 entry, and the comparison
    becomes a carry. Let ``u`` be the bits of ``q * 2**-997`` (``q = min(p, 1 - p)``): its top
    bits ``u >> shift`` are the cell, its low bits ``r`` the position inside it. On the side
    ``p <= 1/2``, ``p = q`` and the nonnegative floats order as their bits, so ``p >= B`` is
    ``r >= t`` for the edge's own low bits ``t``. On the side ``p > 1/2``, ``p = 1 - q``
    exactly, so ``p >= B`` is ``q <= 1 - B`` (exact too): ``u`` is XORed with ``flip`` (all
    ones below the side bit), which mirrors the cell to ``2 side - 1 - cell`` and turns the
    low bits to ``mask - r`` (``mask = 2**shift - 1``), so that this is again a ``>=``
    (``mask - r >= mask - t``).

    The entry at index ``i`` is ``(K << shift) + 2**shift - t - (i << shift)`` modulo
    ``2**64`` (``t = 2**shift``: no edge in the cell), so that ``(entry + u) >> shift`` is
    ``K + (r >= t)``: the carry out of the low bits is the comparison, and the cell's own bits
    in ``u`` cancel. Only ``-0.0`` indexes beyond the table (its ``u`` is ``2**63``, the sign
    bit); its last entry, reached by ``mode="clip"``, gives it key 0.
    """
    shift, side, table_k, table_b = _probability_cells(resolution)
    ones = np.uint64(1 << shift)
    n = len(table_k) - 1  # the last entry of K and B: -0.0's
    index = np.arange(n, dtype=np.uint64)
    lower = index < side
    cell = np.where(lower, index, index - np.uint64(side))
    edge = table_b[:n]
    has_edge = np.isfinite(edge)
    bound = np.where(lower, edge, 1.0 - edge)  # q >= bound (lower side), q <= bound (upper)
    low_bits = (np.where(has_edge, bound, 0.0) * _SUBNORMAL).view(np.uint64) - (cell << shift)
    t = np.where(has_edge, np.where(lower, low_bits, (ones - 1) - low_bits), ones)
    if has_edge.any() and not (low_bits[has_edge] < ones).all():  # pragma: no cover
        raise AssertionError("a grid edge lies outside its lookup cell")
    at = np.where(lower, index, np.uint64(2 * side - 1) - cell)
    table = np.zeros(2 * side + 1, dtype=np.uint64)
    table[at] = (table_k[:n].astype(np.uint64) << shift) + ones - t - (at << shift)
    table[-1] = ((int(table_k[-1]) << shift) - (1 << 63)) % (1 << 64)  # -0.0: u = 2**63
    flip = ((2 * side) << shift) - 1
    return shift, flip, table


@cache
def _flip_float(flip: int) -> float:
    """The float64 whose bits are ``flip`` (``2**58 - 1`` at every resolution: a normal float,
    so ``1.0 * F`` keeps its bits and ``0.0 * F`` has none)."""
    return float(np.array([flip], dtype=np.uint64).view(np.float64)[0])


def _p_of_q(q: np.ndarray, *, smallest: bool) -> np.ndarray:
    """For q in [0, 1/2]: the smallest float p with ``1 - p <= q`` (``smallest=True``) or the
    largest float p with ``1 - p >= q``; ``1 - p`` is exact for every p in [1/2, 1]."""
    p = 1.0 - q
    for _ in range(4):  # rounding leaves p within an ulp or two; step to the exact answer
        if smallest:
            fix_up = (1.0 - p) > q
            p[fix_up] = np.nextafter(p[fix_up], 2.0)
            down = np.nextafter(p, 0.0)
            fix_down = (1.0 - down) <= q
            p[fix_down] = down[fix_down]
        else:
            fix_down = (1.0 - p) < q
            p[fix_down] = np.nextafter(p[fix_down], 0.0)
            up = np.nextafter(p, 2.0)
            fix_up = ((1.0 - up) >= q) & (up <= 1.0)
            p[fix_up] = up[fix_up]
    return p


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
        np.take(table, index, out=key, mode="clip")
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
        np.take(table, index, out=key, mode="clip")  # (every index is in range)
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
