"""Score buckets: a fixed mapping from a score to a bucket key, and a mergeable store of
positive and negative weight per bucket (or per distinct score, in exact mode).

Two parts, kept apart as DDSketch keeps its mapping and its store:

* a :class:`BucketMapping` turns scores into integer keys, monotonically (a larger score never
  gets a smaller key), identically on every platform (only IEEE comparisons, exact products by a
  power of two and integer operations on the float bits; no transcendental function decides a
  key):

  - :class:`LogitGrid` (``score_type="logit"``): ``floor(resolution * x)`` on ``[-16, 16)``, plus
    one underflow and one overflow bucket (``32 * resolution + 2`` keys: 4,098 at 128);
  - :class:`ProbabilityGrid` (``score_type="probability"``): the same grid on ``logit(p)``. The
    key is decided by comparing ``p`` with the correctly rounded grid edges ``sigmoid(t)``
    (computed once with decimal arithmetic), found through a table indexed by the float bits of
    ``min(p, 1 - p)``: one table lookup and one comparison per score, no logarithm;
  - :class:`RealBits` (``score_type="real"``): the sign, the exponent and the top
    ``log2(resolution)`` mantissa bits of the float: relative bucket width ``1 / resolution`` at
    any scale (keys are sparse).

* :class:`ScoreBuckets`, the store: sorted keys with per-key positive weight, negative weight,
  and the smallest and largest score seen in the bucket. With ``mapping=None`` it is exact: one
  entry per distinct score. Counts are int64 until a sample weight arrives, then float64
  (whole-number weights stay exact up to 2**53). The entries are always sorted, reduced and free
  of empty buckets, so the state is canonical: any split of a stream merged in any order gives
  the same bytes.

:func:`auc_from_table` and :func:`ap_from_table` turn a store's entries into a value and a
certified error bound; :func:`curve_counts` gives the cumulative counts behind the curves.
"""

from __future__ import annotations

import math
import threading
from abc import ABC, abstractmethod
from decimal import Decimal, localcontext
from functools import cache
from typing import Any

import numpy as np
from scipy.special import digamma

from .._codec import COUNT_LIMIT, check_counts, check_sum, count_total, held_total
from ..base import StateBlock
from ..errors import IncompatibleStateError

__all__ = [
    "DEFAULT_RESOLUTION",
    "GRID_LIMIT",
    "BucketMapping",
    "LogitGrid",
    "ProbabilityGrid",
    "RESOLUTIONS",
    "RealBits",
    "SCORE_TYPES",
    "ScoreBuckets",
    "ap_from_table",
    "auc_from_table",
    "curve_counts",
    "mapping_for",
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
#: Grid mappings work through a batch in chunks of this many scores, in reused scratch arrays:
#: a fresh array per step costs more in page faults than the arithmetic (measured 4x).
CHUNK = 1 << 15


class _Scratch(threading.local):
    """Per-thread scratch arrays of ``CHUNK`` elements, one per (name, dtype)."""

    def __init__(self) -> None:
        self.arrays: dict[tuple[str, str], np.ndarray] = {}

    def get(self, name: str, n: int, dtype: Any) -> np.ndarray:
        dt = np.dtype(dtype)
        arr = self.arrays.get((name, dt.str))
        if arr is None:
            arr = self.arrays[(name, dt.str)] = np.empty(CHUNK, dtype=dt)
        return arr[:n]


_SCRATCH = _Scratch()
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

    @abstractmethod
    def lower_edges(self, keys: np.ndarray) -> np.ndarray:
        """The smallest score each bucket can hold (``-inf`` for an open-ended bucket)."""

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
        """Keys of at most ``CHUNK`` scores, written into ``out``."""
        lim = GRID_LIMIT + 1.0
        y = np.clip(x, -lim, lim, out=_SCRATCH.get("q", len(x), _F64))
        y *= float(self.resolution)
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
def _probability_tables(resolution: int) -> tuple[int, int, int, np.ndarray, np.ndarray]:
    """Lookup tables of :class:`ProbabilityGrid`: ``(shift, base, cells, K, B)``.

    A cell is a range of ``q = min(p, 1 - p)`` sharing its top float bits, on the side
    ``p <= 1/2`` (index ``c``) or ``p > 1/2`` (index ``cells + c``). ``K`` is the key of the
    cell's smallest ``p`` and ``B`` the one grid edge inside the cell (``inf`` if none), so
    ``key(p) = K[i] + (p >= B[i])``. Mantissa bits are added until no cell holds two edges.
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
            bound = np.where(k_hi > k_lo, edges[np.minimum(k_lo + 1, len(edges) - 1)], np.inf)
            key_dtype = _grid_key_dtype(2 * GRID_LIMIT * resolution + 2)
            return shift, base, cells, k_lo.astype(key_dtype), bound
        bits += 1  # pragma: no cover - the first try suffices for every allowed resolution


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

    def keys(self, x: np.ndarray) -> np.ndarray:
        return _chunked(self, x)

    def keys_into(self, x: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Keys of at most ``CHUNK`` scores, written into ``out``."""
        shift, base, cells, table_k, table_b = _probability_tables(self.resolution)
        n = len(x)
        q = np.subtract(1.0, x, out=_SCRATCH.get("q", n, _F64))  # exact where x >= 1/2
        np.minimum(q, x, out=q)
        np.maximum(q, _TINY, out=q)  # everything below 2**-25 shares cell 0
        cell = q.view(np.int64)
        np.right_shift(cell, shift, out=cell)
        # The side (x > 1/2) from the sign bit of 0.5 - x, in int64 throughout: numpy's mixed
        # bool/uint8-with-int64 arithmetic is an order of magnitude slower than this.
        buf = np.subtract(0.5, x, out=_SCRATCH.get("b", n, _F64))
        side = buf.view(np.int64)
        np.right_shift(side, 63, out=side)
        side &= cells
        side -= base
        cell += side
        k = np.take(table_k, cell, out=_SCRATCH.get("k", n, table_k.dtype))
        edge = np.take(table_b, cell, out=buf)
        k += np.greater_equal(x, edge, out=_SCRATCH.get("c", n, np.bool_)).view(np.uint8)
        np.copyto(out, k, casting="unsafe")
        return out

    def lower_edges(self, keys: np.ndarray) -> np.ndarray:
        edges = _sigmoid_edges(self.resolution).copy()
        edges[0] = 0.0
        out: np.ndarray = edges[np.asarray(keys, dtype=np.int64)]
        return out


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

    def lower_edges(self, keys: np.ndarray) -> np.ndarray:
        k = np.asarray(keys, dtype=np.int64)
        neg = k < 0
        mag = np.where(neg, -k - 1, k)
        low = (mag << self.shift).view(np.float64)
        # Negative buckets start at minus the largest magnitude they hold.
        top = (((mag + 1) << self.shift) - 1).view(np.float64)
        out = np.where(neg, -top, low)
        return np.where(np.isfinite(out), out, -np.finfo(np.float64).max)


def _chunked(mapping: BucketMapping, x: np.ndarray) -> np.ndarray:
    out = np.empty(len(x), dtype=mapping.key_dtype)
    for a in range(0, len(x), CHUNK):
        mapping.keys_into(x[a : a + CHUNK], out[a : a + CHUNK])
    return out


def mapping_for(score_type: str, resolution: int = DEFAULT_RESOLUTION) -> BucketMapping:
    """The bucket mapping of a ``score_type`` (``"probability"``, ``"logit"`` or ``"real"``)."""
    if score_type == "probability":
        return ProbabilityGrid(resolution)
    if score_type == "logit":
        return LogitGrid(resolution)
    if score_type == "real":
        return RealBits(resolution)
    raise ValueError(f"score_type must be one of {SCORE_TYPES}; got {score_type!r}")


# -- the store --------------------------------------------------------------------------------


def _reduce(
    keys: np.ndarray, cols: list[np.ndarray], lo: np.ndarray | None, hi: np.ndarray | None
) -> tuple[np.ndarray, list[np.ndarray], np.ndarray | None, np.ndarray | None]:
    """Sort entries by key and fold equal keys: sum ``cols``, min ``lo``, max ``hi``."""
    if len(keys) == 0:
        return keys, cols, lo, hi
    order = np.argsort(keys, kind="stable")  # timsort: linear on concatenated sorted runs
    keys = keys[order]
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    out_cols = [np.add.reduceat(c[order], starts) for c in cols]
    out_lo = None if lo is None else np.minimum.reduceat(lo[order], starts)
    out_hi = None if hi is None else np.maximum.reduceat(hi[order], starts)
    return keys[starts], out_cols, out_lo, out_hi


class ScoreBuckets(StateBlock):
    """Positive and negative weight per score bucket (or per distinct score when exact).

    Parameters
    ----------
    mapping : BucketMapping or None
        How scores become keys; ``None`` keeps every distinct score (exact mode).

    Attributes (read-only views, ascending by score): ``keys`` (int64 bucket keys, or the
    distinct float64 scores), ``pos``, ``neg`` (int64 counts, or float64 weights once a sample
    weight arrives), ``lo``, ``hi`` (smallest and largest score seen in each bucket; equal to
    ``keys`` in exact mode).

    Memory: 40 bytes per non-empty bucket (24 per distinct score when exact); at most
    ``mapping.size`` buckets for a grid. Complexity: :meth:`add` is O(n) plus O(size) for a
    grid (chunked, no sort); for exact or ``"real"`` keys a batch is reduced (O(n log n), or
    O(n + key range) for ``"real"``) and queued, and the queue is folded in by a merge of sorted
    runs once it outgrows the m entries held (amortised O(log) passes per entry);
    :meth:`merge` is O(size) or O(m1 + m2).

    Examples
    --------
    >>> import numpy as np
    >>> scores, labels = np.array([0.1, 0.1, 0.9]), np.array([0, 1, 1])
    >>> store = ScoreBuckets(ProbabilityGrid()).add(scores, labels, None)
    >>> store.keys.tolist(), store.pos.tolist(), store.neg.tolist()  # floor(128 logit(p)) + 2049
    ([1767, 2330], [1, 1], [1, 0])
    >>> auc_from_table(store.lo, store.hi, store.pos, store.neg)
    (0.75, 0.0)
    """

    def __init__(self, mapping: BucketMapping | None) -> None:
        self.mapping = mapping
        self._pending: list[ScoreBuckets] = []  # sparse stores: batches not yet folded in
        # (pos, neg, their total): see _held
        self._total: tuple[np.ndarray, np.ndarray, float] | None = None
        self._keys: np.ndarray = np.empty(0, dtype=_F64 if mapping is None else _I64)
        self._pos: np.ndarray = np.empty(0, dtype=_I64)
        self._neg: np.ndarray = np.empty(0, dtype=_I64)
        self._lo: np.ndarray | None = None if mapping is None else np.empty(0, dtype=_F64)
        self._hi: np.ndarray | None = None if mapping is None else np.empty(0, dtype=_F64)

    @property
    def exact(self) -> bool:
        return self.mapping is None

    @property
    def keys(self) -> np.ndarray:
        self._flush()
        return self._keys

    @property
    def pos(self) -> np.ndarray:
        self._flush()
        return self._pos

    @property
    def neg(self) -> np.ndarray:
        self._flush()
        return self._neg

    @property
    def lo(self) -> np.ndarray:
        self._flush()
        return self._keys if self._lo is None else self._lo

    @property
    def hi(self) -> np.ndarray:
        self._flush()
        return self._keys if self._hi is None else self._hi

    @property
    def weighted(self) -> bool:
        return self.pos.dtype == _F64

    def __len__(self) -> int:
        return len(self.keys)

    def totals(self) -> tuple[float, float]:
        """Total positive and negative weight."""
        return float(self.pos.sum()), float(self.neg.sum())

    def _flush(self) -> None:
        """Fold queued batches into the main arrays (same logical contents)."""
        if not self._pending:
            return
        parts = [self, *self._pending]
        self._pending = []
        self._reduce_parts(parts, np.result_type(*(p._pos.dtype for p in parts)))

    def _reduce_parts(self, parts: list[ScoreBuckets], dtype: Any) -> None:
        """Set this store to the entries of ``parts``, sorted and folded by key."""
        keys = np.concatenate([p._keys for p in parts])
        cols = [
            np.concatenate([p._pos for p in parts]).astype(dtype),
            np.concatenate([p._neg for p in parts]).astype(dtype),
        ]
        lo = None if self.exact else np.concatenate([p.lo for p in parts])
        hi = None if self.exact else np.concatenate([p.hi for p in parts])
        # Each part is sorted: the stable sort in _reduce merges the runs (timsort).
        self._keys, (self._pos, self._neg), self._lo, self._hi = _reduce(keys, cols, lo, hi)

    def _empty_like(self) -> ScoreBuckets:
        return ScoreBuckets(self.mapping)

    scalable = True

    def scale(self, factor: float) -> None:
        """Multiply every weight by ``factor`` (counts become float64 weights): ``Decayed``."""
        self._flush()
        self._pos = self._pos.astype(_F64) * factor
        self._neg = self._neg.astype(_F64) * factor

    # -- building ------------------------------------------------------------------------------

    def batch(
        self,
        scores: np.ndarray,
        positive: np.ndarray,
        weights: np.ndarray | None,
        keys: np.ndarray | None = None,
        base: ScoreBuckets | None = None,
    ) -> ScoreBuckets:
        """A new store holding only this batch (validated float64 scores, 0/1 or bool labels).

        Rows of zero weight are left out, as scikit-learn leaves them out of its curves.
        ``keys`` may pass precomputed bucket keys of ``scores``. With ``base`` (a folded store
        of a grid mapping, like this one) the result is ``base`` merged with the batch, counted
        in one dense pass: the grid's arrays start from ``base`` instead of from zero.
        """
        out = self._empty_like()
        if weights is not None:
            keep = weights != 0
            if not keep.all():
                scores, positive, weights = scores[keep], positive[keep], weights[keep]
                keys = None if keys is None else keys[keep]
        if len(scores) == 0:
            if base is not None:
                out = base.copy()
            if weights is not None:
                out._pos, out._neg = out._pos.astype(_F64), out._neg.astype(_F64)
            return out
        size = None if self.mapping is None else self.mapping.size
        offset = 0
        if self.mapping is not None and size is None:
            # Sparse keys ("real"): count densely over the batch's key range when it is small.
            keys = self.mapping.keys(scores) if keys is None else keys
            kmin, kmax = int(keys.min()), int(keys.max())
            if kmax - kmin < max(1 << 16, 4 * len(keys)):
                offset, size = kmin, kmax - kmin + 1
                keys = keys - kmin
        if size is not None:
            assert self.mapping is not None
            lo = np.full(size, np.inf)
            hi = np.full(size, -np.inf)
            dtype = _I64 if weights is None else _F64
            if base is not None:
                dtype = np.result_type(dtype, base._pos.dtype)
            flat = np.zeros(2 * size, dtype=dtype)
            for a in range(0, len(scores), CHUNK):
                xs = scores[a : a + CHUNK]
                # intp keys in a reused scratch array: ufunc.at and bincount run fastest on it.
                k = _SCRATCH.get("keys", len(xs), np.intp)
                if keys is None:
                    self.mapping.keys_into(xs, k)
                else:
                    np.copyto(k, keys[a : a + CHUNK], casting="unsafe")
                np.minimum.at(lo, k, xs)
                np.maximum.at(hi, k, xs)
                k <<= 1  # 2 * key + label: one bincount for both classes
                lab = positive[a : a + CHUNK]
                k += lab if lab.dtype == np.intp else lab.astype(np.intp)
                wt = None if weights is None else weights[a : a + CHUNK]
                flat += np.bincount(k, weights=wt, minlength=2 * size)
            if base is not None and len(base._keys):  # a store's keys are distinct
                # Added after the batch's chunks: base + (chunk sums), as a merge would add them.
                k0 = base._keys
                lo[k0] = np.minimum(lo[k0], base.lo)
                hi[k0] = np.maximum(hi[k0], base.hi)
                flat[2 * k0] += base._neg
                flat[2 * k0 + 1] += base._pos
            counts = flat.reshape(size, 2)
            seen = np.flatnonzero(lo <= hi)
            out._keys = seen.astype(np.int64) + offset
            out._neg = np.ascontiguousarray(counts[seen, 0])
            out._pos = np.ascontiguousarray(counts[seen, 1])
            out._lo, out._hi = lo[seen] + 0.0, hi[seen] + 0.0  # -0.0 becomes +0.0
            return out
        scores = scores + 0.0  # -0.0 becomes +0.0: one value, one key
        if self.mapping is None:
            k = scores
        else:
            k = self.mapping.keys(scores) if keys is None else keys
        w = np.ones(len(scores), dtype=_I64) if weights is None else weights
        pos = np.where(positive, w, 0)
        neg = np.where(positive, 0, w)
        minmax = None if self.mapping is None else scores
        keys_r, (pos_r, neg_r), lo_r, hi_r = _reduce(k, [pos, neg], minmax, minmax)
        out._keys, out._pos, out._neg = keys_r, pos_r, neg_r
        out._lo, out._hi = lo_r, hi_r
        return out

    def add(
        self, scores: np.ndarray, positive: np.ndarray, weights: np.ndarray | None
    ) -> ScoreBuckets:
        """A new store: ``self`` plus a batch. Pure: ``self`` does not change.

        Sparse stores (exact, ``"real"``) queue the batch and fold the queue in once it outgrows
        the main arrays, so a stream of m distinct scores costs O(m log m) in all, not O(m) per
        update.
        """
        if self.mapping is not None and self.mapping.size is not None:
            # A grid: count the batch straight into a dense copy of this store's arrays.
            total = float(len(scores)) if weights is None else float(np.sum(weights))
            kind = "f" if weights is not None or self._pos.dtype == _F64 else "i"
            check_sum("score buckets", kind, self._held(), total)
            return self.batch(scores, positive, weights, base=self)
        batch = self.batch(scores, positive, weights)
        out = self._empty_like()
        out._keys, out._pos, out._neg, out._lo, out._hi = (
            self._keys,
            self._pos,
            self._neg,
            self._lo,
            self._hi,
        )
        out._pending = [*self._pending, batch]
        if sum(len(p._keys) for p in out._pending) > max(len(out._keys), 1 << 16):
            out._flush()
        return out

    # -- merging -------------------------------------------------------------------------------

    def check_mergeable(self, other: Any) -> None:
        self._check_mapping(other)
        check_sum("score buckets", self._kind(other), self._held(), other._held())

    def _check_mapping(self, other: Any) -> None:
        if not isinstance(other, ScoreBuckets) or other.mapping != self.mapping:
            theirs = getattr(other, "mapping", type(other).__name__)
            raise IncompatibleStateError(
                f"cannot merge score buckets of {self.mapping!r} with {theirs!r}"
            )

    def held_total(self) -> float:
        return self._held()

    def _kind(self, other: ScoreBuckets) -> str:
        return "f" if _F64 in (self._pos.dtype, other._pos.dtype) else "i"

    def _held(self) -> float:
        """Total weight, queue included, without folding it (reading never writes).

        The main arrays' total is remembered with the arrays it was taken from (they are
        replaced, never changed in place), so the count-bound checks of a merge of many
        operands cost one reduction per operand, not one per check."""
        cached = self._total
        if cached is not None and cached[0] is self._pos and cached[1] is self._neg:
            main = cached[2]
        else:
            main = held_total(self._pos) + held_total(self._neg)
            self._total = (self._pos, self._neg, main)
        return main + sum(held_total(p._pos) + held_total(p._neg) for p in self._pending)

    def merged(self, other: ScoreBuckets) -> ScoreBuckets:
        """A new store with the entries of both; neither input changes."""
        self.check_mergeable(other)
        self._flush()
        other._flush()
        dtype = np.result_type(self._pos.dtype, other._pos.dtype)
        if len(other) == 0 or len(self) == 0:
            src = self if len(other) == 0 else other
            out = src.copy()
            out._pos, out._neg = out._pos.astype(dtype), out._neg.astype(dtype)
            return out
        out = self._empty_like()
        size = None if self.mapping is None else self.mapping.size
        if size is not None:
            pos = np.zeros(size, dtype=dtype)
            neg = np.zeros(size, dtype=dtype)
            lo = np.full(size, np.inf)
            hi = np.full(size, -np.inf)
            seen = np.zeros(size, dtype=bool)
            for part in (self, other):
                pos[part._keys] += part._pos
                neg[part._keys] += part._neg
                lo[part._keys] = np.minimum(lo[part._keys], part.lo)
                hi[part._keys] = np.maximum(hi[part._keys], part.hi)
                seen[part._keys] = True
            keys = np.flatnonzero(seen)
            out._keys, out._pos, out._neg = keys.astype(np.int64), pos[keys], neg[keys]
            out._lo, out._hi = lo[keys], hi[keys]
            return out
        keys = np.concatenate([self._keys, other._keys])
        cols = [
            np.concatenate([self._pos, other._pos]).astype(dtype),
            np.concatenate([self._neg, other._neg]).astype(dtype),
        ]
        lo_c = None if self.exact else np.concatenate([self.lo, other.lo])
        hi_c = None if self.exact else np.concatenate([self.hi, other.hi])
        out._keys, (out._pos, out._neg), out._lo, out._hi = _reduce(keys, cols, lo_c, hi_c)
        return out

    def merge(self, other: Any) -> None:
        new = self.merged(other)
        self._keys, self._pos, self._neg, self._lo, self._hi = (
            new._keys,
            new._pos,
            new._neg,
            new._lo,
            new._hi,
        )

    def merge_many(self, others: list[Any]) -> None:
        """Fold many stores at once: one dense accumulation over a grid, one sorted reduction
        of every entry otherwise. Complexity O(grid size + entries), or O(E log k) for E
        entries in k sparse stores."""
        for other in others:
            self._check_mapping(other)  # the count bound: all operands together, below
        # Pairs within the bound may still pass it together.
        kind = "f" if any(p._pos.dtype == _F64 for p in (self, *others)) else "i"
        check_sum("score buckets", kind, *(p._held() for p in (self, *others)))
        parts = [p for p in (self, *others) if len(p)]  # len() folds each part's queue
        if len(parts) <= 1:
            if parts and parts[0] is not self:
                self.merge(parts[0])
            return
        dtype = np.result_type(*(p._pos.dtype for p in parts))
        size = None if self.mapping is None else self.mapping.size
        if size is not None and len(parts) == 2 and self._merge_subset(parts, dtype):
            return
        if size is not None:
            pos = np.zeros(size, dtype=dtype)
            neg = np.zeros(size, dtype=dtype)
            lo = np.full(size, np.inf)
            hi = np.full(size, -np.inf)
            for p in parts:  # a store's keys are distinct: plain fancy indexing is exact
                k = p._keys
                pos[k] += p._pos
                neg[k] += p._neg
                lo[k] = np.minimum(lo[k], p._lo)
                hi[k] = np.maximum(hi[k], p._hi)
            keys = np.flatnonzero(lo <= hi)
            self._keys, self._pos, self._neg = keys.astype(np.int64), pos[keys], neg[keys]
            self._lo, self._hi = lo[keys], hi[keys]
            return
        self._reduce_parts(parts, dtype)

    def _merge_subset(self, parts: list[ScoreBuckets], dtype: Any) -> bool:
        """Set this store to the merge of two when one's buckets are all among the other's
        (a running total absorbing one more shard, as ``sum()`` does): the larger store's
        arrays updated at the smaller's positions, no pass over the whole grid. False, with
        nothing changed, otherwise."""
        big, small = sorted(parts, key=len, reverse=True)
        at = np.searchsorted(big._keys, small._keys)
        if at[-1] >= len(big._keys) or not (big._keys[at] == small._keys).all():
            return False
        pos, neg = big._pos.astype(dtype), big._neg.astype(dtype)  # copies
        assert big._lo is not None and big._hi is not None
        lo, hi = big._lo.copy(), big._hi.copy()
        if big is parts[0]:  # the same order of additions as the dense path: first part first
            pos[at] += small._pos
            neg[at] += small._neg
        else:
            pos[at] = small._pos + pos[at]
            neg[at] = small._neg + neg[at]
        lo[at] = np.minimum(lo[at], small.lo)
        hi[at] = np.maximum(hi[at], small.hi)
        self._keys, self._pos, self._neg, self._lo, self._hi = big._keys, pos, neg, lo, hi
        return True

    # -- wire ----------------------------------------------------------------------------------

    def to_wire(self) -> Any:
        self._flush()
        if self.exact:
            return {"scores": self._keys, "pos": self._pos, "neg": self._neg}
        return {"lo": self.lo, "hi": self.hi, "pos": self._pos, "neg": self._neg}

    def from_wire(self, wire: Any) -> ScoreBuckets:
        names = ("scores", "pos", "neg") if self.exact else ("lo", "hi", "pos", "neg")
        if not isinstance(wire, dict) or set(wire) != set(names):
            raise ValueError(f"score buckets need exactly the fields {sorted(names)}")
        arrays = [wire[n] for n in names]
        for n, a in zip(names, arrays, strict=True):
            if not isinstance(a, np.ndarray) or a.ndim != 1:
                raise ValueError(f"score buckets: {n} must be a 1-D array")
        if len({len(a) for a in arrays}) != 1:
            raise ValueError("score buckets: the arrays differ in length")
        pos, neg = wire["pos"], wire["neg"]
        if pos.dtype != neg.dtype or pos.dtype not in (_I64, _F64):
            raise ValueError("score buckets: pos and neg must both be int64 or float64")
        check_counts("score buckets", pos, neg)
        if pos.dtype == _I64 and count_total(pos) + count_total(neg) > COUNT_LIMIT:
            raise ValueError("score buckets: counts total more than 2**53")
        if len(pos) and not ((pos + neg) > 0).all():
            raise ValueError("score buckets: a bucket is empty")
        out = self._empty_like()
        out._pos, out._neg = pos, neg
        if self.exact:
            scores = wire["scores"]
            if scores.dtype != _F64 or not np.isfinite(scores).all():
                raise ValueError("score buckets: scores must be finite float64")
            if len(scores) > 1 and not (scores[1:] > scores[:-1]).all():
                raise ValueError("score buckets: scores must be sorted and distinct")
            out._keys = scores + 0.0
            return out
        lo, hi = wire["lo"], wire["hi"]
        if lo.dtype != _F64 or hi.dtype != _F64:
            raise ValueError("score buckets: lo and hi must be float64")
        if len(lo) and not (np.isfinite(lo).all() and np.isfinite(hi).all() and (lo <= hi).all()):
            raise ValueError("score buckets: lo and hi must be finite with lo <= hi")
        assert self.mapping is not None
        keys = self.mapping.keys(lo + 0.0).astype(np.int64)
        if not np.array_equal(keys, self.mapping.keys(hi + 0.0)):
            raise ValueError("score buckets: a bucket's lo and hi fall in different buckets")
        if len(keys) > 1 and not (keys[1:] > keys[:-1]).all():
            raise ValueError("score buckets: buckets must be sorted and distinct")
        out._keys, out._lo, out._hi = keys, lo + 0.0, hi + 0.0
        return out

    def copy(self) -> ScoreBuckets:
        self._flush()
        out = self._empty_like()
        out._keys, out._pos, out._neg = self._keys.copy(), self._pos.copy(), self._neg.copy()
        out._lo = None if self._lo is None else self._lo.copy()
        out._hi = None if self._hi is None else self._hi.copy()
        cached = self._total
        if cached is not None and cached[0] is self._pos and cached[1] is self._neg:
            out._total = (out._pos, out._neg, cached[2])
        return out

    def __deepcopy__(self, memo: dict[int, Any]) -> ScoreBuckets:
        return self.copy()


# -- values from a table of entries ------------------------------------------------------------


def auc_from_table(
    lo: np.ndarray, hi: np.ndarray, pos: np.ndarray, neg: np.ndarray
) -> tuple[float, float]:
    """``(AUC, bound)`` from entries ascending by score.

    Pairs in different entries are ordered exactly; a (positive, negative) pair inside one entry
    counts 1/2. That is exact for an entry holding one distinct value (a true tie, as
    scikit-learn scores it) and off by at most 1/2 per pair otherwise, so
    ``|AUC - exact| <= 0.5 * sum_b pos_b * neg_b / (P * N)`` over entries with ``lo < hi``.
    ``(nan, nan)`` when either class is absent.
    """
    with np.errstate(all="ignore"):  # a forged state may hold huge weights
        return _auc_from_table(lo, hi, pos, neg)


def _auc_from_table(
    lo: np.ndarray, hi: np.ndarray, pos: np.ndarray, neg: np.ndarray
) -> tuple[float, float]:
    p = pos.astype(np.float64)
    n = neg.astype(np.float64)
    total_p, total_n = float(p.sum()), float(n.sum())
    if not (total_p > 0 and total_n > 0):
        return math.nan, math.nan
    below = np.cumsum(n) - n
    scale = total_p * total_n
    value = float(np.dot(p, below + 0.5 * n)) / scale
    spread = lo < hi
    bound = 0.5 * float(np.dot(p[spread], n[spread])) / scale
    return min(max(value, 0.0), 1.0), bound


def _harmonic_diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """H(a) - H(b) for non-negative reals, H(x) = digamma(x + 1) + Euler's gamma."""
    out: np.ndarray = digamma(a + 1.0) - digamma(b + 1.0)
    return out


def ap_from_table(
    lo: np.ndarray, hi: np.ndarray, pos: np.ndarray, neg: np.ndarray
) -> tuple[float, float]:
    """``(average precision, bound)`` from entries ascending by score (scikit-learn's
    ``average_precision_score``: sum over thresholds of recall step times precision).

    An entry with ``lo == hi`` is a true tie: it adds ``p (T + p) / (T + F + p + n)``, with
    ``T``, ``F`` the positive and negative weight ranked above it and ``p``, ``n`` its own.
    Otherwise its order is unknown: it adds the Davis & Goadrich interpolation (positives and
    negatives interleaved evenly), which lies in ``[p - (F + n)(H(T+F+n+p) - H(T+F+n)),
    p (T + p) / (T + F + p)]`` (all negatives first, all positives first); the bound is the sum of
    those widths, over ``P``.
    """
    with np.errstate(all="ignore"):  # a forged state may hold huge weights
        return _ap_from_table(lo, hi, pos, neg)


def _ap_from_table(
    lo: np.ndarray, hi: np.ndarray, pos: np.ndarray, neg: np.ndarray
) -> tuple[float, float]:
    p = pos[::-1].astype(np.float64)
    n = neg[::-1].astype(np.float64)
    total_p = float(p.sum())
    if not total_p > 0:
        return math.nan, math.nan
    t = np.cumsum(p) - p  # positives ranked above
    f = np.cumsum(n) - n  # negatives ranked above
    spread = (lo < hi)[::-1] & (p > 0)
    tie_den = t + f + p + n
    contrib = np.divide(p * (t + p), tie_den, out=np.zeros_like(p), where=tie_den > 0)
    bound = 0.0
    if spread.any():
        ps, ns, ts, fs = p[spread], n[spread], t[spread], f[spread]
        upper = ps * (ts + ps) / (ts + fs + ps)
        lower = ps - (fs + ns) * _harmonic_diff(ts + fs + ns + ps, ts + fs + ns)
        # Davis & Goadrich: the j-th positive comes with j * n / p negatives:
        # sum_j (T + j) / (T + F + j r), r = 1 + n / p, summed in closed form with digamma.
        r = 1.0 + ns / ps
        c = (ts + fs) / r
        interp = (ps + (ts - c) * _harmonic_diff(ps + c, c)) / r
        contrib[spread] = np.clip(interp, lower, upper)
        bound = float(np.sum(upper - lower)) / total_p
    value = float(np.sum(contrib)) / total_p
    return min(max(value, 0.0), 1.0), min(bound, 1.0)


def curve_counts(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative (tps, fps) at each entry's threshold, descending by score, in float64."""
    tps = np.cumsum(pos[::-1].astype(np.float64))
    fps = np.cumsum(neg[::-1].astype(np.float64))
    return tps, fps
