"""Weighted central moments of any order of a few variables, merged with Pebay's formulas.

The state behind intervals that need more than second moments (the delta method for R2 and
explained variance needs fourth moments of the error and of ``y_true``). For ``variables``
variables that are each ``width`` columns wide it holds

* ``weight``: the total sample weight W,
* ``mean``: shape (variables, width), the weighted mean of every column, kept as a double-double
  ``mean + mean_low`` like :class:`~streammetrics.states.moments.Moments`,
* ``moments``: shape (len(indices), width): for each multi-index ``k = (k_1, .., k_v)`` of total
  order >= 2 the central sum ``sum w prod_i (x_i - mean_i)**k_i``, column by column.

The index set must be closed downwards (every index below a kept one, of order >= 2, is kept),
because two summaries combine with the binomial shift of every index to the merged mean
(Pebay, P. (2008). Formulas for robust, one-pass parallel computation of covariances and
arbitrary-order statistical moments. Sandia report SAND2008-6212, eq. 1.6 and its multivariate
form): with ``delta = mean_b - mean_a``, ``W = W_a + W_b``, ``d_a = -delta W_b / W`` and
``d_b = delta W_a / W``,

    M[k] = sum_{j <= k} C(k, j) (d_a**(k - j) M_a[j] + d_b**(k - j) M_b[j])

where ``C(k, j) = prod_i binom(k_i, j_i)``, ``M[0] = W`` and first-order central sums vanish.
Every term is of the size of the spread, never of the mean, so no digit is lost to a large
mean. Each batch is summarised around its own mean by a two-pass (centre on the batch's first value,
so that a constant column gives exact zeros, correct the mean by the mean deviation, then take
the products of the values centred on that mean).

Bounds (``docs/format.md``, "Float bounds"): the weight is at most ``WEIGHT_LIMIT`` (2**100),
every mean (and its low part) at most :data:`CENTRAL_MEAN_LIMIT` (2**210) in magnitude, and a
central sum of total order k at most ``2**(110 + 212 k)`` (2**958 for the fourth order): each
term ``C(k, j) d**(k - j) M[j]`` of a merge is then below that bound too, so a merge stays
finite before its result is checked. Decoding refuses a block past them (``ValueError``); a
merge whose result would pass them raises
:class:`~streammetrics.errors.IncompatibleStateError` (``CountOverflowError`` for the weight)
before anything changes. Data within 2**200 (what the regression metrics accept) stays below.

These are float sums: any split merged in any order agrees to rounding, not bit for bit.
Memory: ``(variables * 2 + len(indices)) * width + 1`` floats. ``batch``: O(n * width *
len(indices)); ``merge``: O(len(indices) * 2**order * width).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._codec import WEIGHT_LIMIT, check_sum
from ..base import StateBlock
from ..errors import IncompatibleStateError
from .moments import merged_mean, two_sum

__all__ = ["CENTRAL_MEAN_LIMIT", "CentralMoments"]

#: The largest magnitude of a mean (and of its low part) a block may hold.
CENTRAL_MEAN_LIMIT = 2.0**210

Index = tuple[int, ...]
#: The index positions, shift plans and bounds of each layout built so far (read only).
_LAYOUTS: dict[
    tuple[int, tuple[Index, ...]], tuple[dict[Index, int], tuple[Any, ...], np.ndarray]
] = {}
_CHUNK = 8192  # values per chunk of the products (a few chunk-sized powers fit in L2 cache)


def _check_indices(variables: int, indices: Sequence[Index]) -> tuple[Index, ...]:
    out = tuple(tuple(int(e) for e in k) for k in indices)
    kept = set(out)
    for k in out:
        if len(k) != variables or min(k) < 0 or sum(k) < 2:
            raise ValueError(f"index {k} must have {variables} non-negative orders summing to >= 2")
        if sum(1 for e in k if e) > 2:
            raise ValueError(f"index {k} mixes more than two variables")
        for j in itertools.product(*(range(e + 1) for e in k)):
            if sum(j) >= 2 and j not in kept:
                raise ValueError(f"index {k} needs the lower index {j}, which is not kept")
    if len(kept) != len(out):
        raise ValueError("an index is listed twice")
    return out


class CentralMoments(StateBlock):
    """Weighted central sums ``sum w prod (x_i - mean_i)**k_i`` for a closed set of indices.

    Parameters
    ----------
    variables : int
        Number of variables (each ``width`` columns wide, fixed by the first non-empty batch).
    indices : sequence of tuples
        The multi-indices kept, each of total order >= 2 and touching at most two variables,
        closed downwards.
    """

    def __init__(self, variables: int, indices: Sequence[Index]) -> None:
        if variables < 1:
            raise ValueError("variables must be at least 1")
        self.variables = int(variables)
        self.indices = _check_indices(self.variables, indices)
        layout = _LAYOUTS.get((self.variables, self.indices))
        if layout is None:  # (some 0.8 ms: once per layout, not per state a loads makes)
            self._position = {k: i for i, k in enumerate(self.indices)}
            limits = _limits(self.indices)
            limits.setflags(write=False)  # (shared by every block of the layout)
            layout = (self._position, tuple(self._terms(k) for k in self.indices), limits)
            _LAYOUTS[(self.variables, self.indices)] = layout
        self._position, self._plan, self._limits = layout
        self.weight = 0.0
        self.hi: np.ndarray = np.zeros((self.variables, 0))
        self.lo: np.ndarray = np.zeros((self.variables, 0))
        self.moments: np.ndarray = np.zeros((len(self.indices), 0))

    def _terms(self, k: Index) -> list[tuple[int, float, Index]]:
        """The shift terms of index k: (position of j or -1 for j = 0, C(k, j), k - j)."""
        terms = []
        for j in itertools.product(*(range(e + 1) for e in k)):
            if sum(j) == 1:
                continue  # a first-order central sum is zero
            coef = float(np.prod([math.comb(a, b) for a, b in zip(k, j, strict=True)]))
            rest = tuple(a - b for a, b in zip(k, j, strict=True))
            terms.append((-1 if sum(j) == 0 else self._position[j], coef, rest))
        return terms

    # -- views -------------------------------------------------------------------------------

    @property
    def width(self) -> int | None:
        """Columns per variable, or ``None`` before the first non-empty batch."""
        return int(self.hi.shape[1]) if self.hi.shape[1] else None

    @property
    def mean(self) -> np.ndarray:
        """The weighted mean of every column, shape (variables, width)."""
        return np.asarray(self.hi + self.lo)

    def central(self, index: Index) -> np.ndarray:
        """The central moment ``sum w prod (x_i - mean_i)**k_i / W`` of a kept index, per
        column (nan without weight)."""
        row = self.moments[self._position[tuple(index)]]
        if not self.weight > 0:
            return np.full(row.shape, math.nan)
        with np.errstate(over="ignore", invalid="ignore"):  # (a subnormal weight: inf, nan)
            return np.asarray(row / self.weight)

    def held_total(self) -> float:
        """The weight, for the bound of weight totals (the per-request buffer reads it)."""
        return self.weight

    def _empty_like(self) -> CentralMoments:
        out = CentralMoments.__new__(CentralMoments)
        out.variables, out.indices = self.variables, self.indices
        out._position, out._plan, out._limits = self._position, self._plan, self._limits
        out.weight = 0.0
        out.hi = np.zeros((self.variables, 0))
        out.lo = np.zeros((self.variables, 0))
        out.moments = np.zeros((len(self.indices), 0))
        return out

    def copy(self) -> CentralMoments:
        out = self._empty_like()
        out.weight, out.hi, out.lo = self.weight, self.hi.copy(), self.lo.copy()
        out.moments = self.moments.copy()
        return out

    # -- building increments -----------------------------------------------------------------

    def batch(self, columns: Sequence[np.ndarray], weights: np.ndarray | None) -> CentralMoments:
        """A new block summarising one batch: one (n, width) float64 array per variable and n
        non-negative weights or ``None``. Pure: ``self`` is unchanged."""
        if len(columns) != self.variables:
            raise ValueError(f"expected {self.variables} variables, got {len(columns)}")
        out = self._empty_like()
        n, width = columns[0].shape
        if n == 0:
            return out
        total = float(n) if weights is None else float(weights.sum())
        if total == 0.0:  # no weight: nothing to average (everything stays zero)
            out.hi = np.zeros((self.variables, width))
            out.lo = np.zeros((self.variables, width))
            out.moments = np.zeros((len(self.indices), width))
            return out
        # Every pass runs chunk by chunk: no temporary as large as the batch (allocating and
        # faulting in those costs more than the arithmetic), and the powers stay in cache.
        step = max(1024, _CHUNK // width)
        chunks = [(lo, min(n, lo + step)) for lo in range(0, n, step)]
        xs = [np.ascontiguousarray(column.T) for column in columns]
        # Centred on a row of positive weight (a constant column centres to exact zeros); a
        # row of weight zero adds nothing, and as the pivot a far one cost every centred
        # value its digits (a review: an R2 interval 0.5x too narrow, 0.8.21).
        first = 0 if weights is None else int(np.argmax(weights > 0))
        pivots = np.stack([x[:, first] for x in xs])
        shifts = np.zeros((self.variables, width))
        for lo, hi in chunks:
            for v, x in enumerate(xs):
                dev = x[:, lo:hi] - pivots[v][:, None]
                shifts[v] += dev.sum(axis=1) if weights is None else dev @ weights[lo:hi]
        shifts /= total
        his, los = two_sum(pivots, shifts)
        sums = np.zeros((len(self.indices), width))
        for lo, hi in chunks:
            w = None if weights is None else weights[lo:hi]
            powers = [
                {1: (x[:, lo:hi] - pivots[v][:, None]) - shifts[v][:, None]}
                for v, x in enumerate(xs)
            ]
            sums += _products(self.indices, powers, w)
        for i, k in enumerate(self.indices):
            if all(e % 2 == 0 for e in k):
                sums[i] = np.maximum(sums[i], 0.0)
        out.weight, out.hi, out.lo, out.moments = total, his, los, sums
        self._check_bounds(his, los, sums, IncompatibleStateError)  # values too large: inf, nan
        return out

    # -- merging -----------------------------------------------------------------------------

    def check_mergeable(self, other: Any) -> None:
        if not isinstance(other, CentralMoments) or (other.variables, other.indices) != (
            self.variables,
            self.indices,
        ):
            raise IncompatibleStateError("cannot merge central moments of different layouts")
        if self.width is not None and other.width is not None and self.width != other.width:
            raise IncompatibleStateError(
                f"cannot merge central moments of {self.width} columns with {other.width}"
            )

    def merged(self, other: CentralMoments) -> CentralMoments:
        """A new block with the moments of both (Pebay's shift); neither input changes."""
        self.check_mergeable(other)
        if other.width is None or (other.weight == 0.0 and self.width is not None):
            return self.copy()
        if self.width is None or self.weight == 0.0:
            return other.copy()
        out = self._empty_like()
        wa, wb = self.weight, other.weight
        check_sum("central moments weight", "f", wa, wb)
        total = wa + wb
        delta = (other.hi - self.hi) + (other.lo - self.lo)
        out.weight = total
        out.hi, out.lo = merged_mean(self.hi, self.lo, other.hi, other.lo, delta, wa, wb)
        da, db = -delta * (wb / total), delta * (wa / total)
        if self.moments.shape[1] == 1:
            moments = self._shifted_column(other, da, db)
        else:
            moments = np.zeros_like(self.moments)
            for i, terms in enumerate(self._plan):
                acc = np.zeros(self.moments.shape[1])
                for pos, coef, rest in terms:
                    ma = wa if pos < 0 else self.moments[pos]
                    mb = wb if pos < 0 else other.moments[pos]
                    acc += coef * (_power(da, rest) * ma + _power(db, rest) * mb)
                moments[i] = acc
        for i, k in enumerate(self.indices):
            if all(e % 2 == 0 for e in k):
                moments[i] = np.maximum(moments[i], 0.0)
        out.moments = moments
        self._check_bounds(out.hi, out.lo, moments, IncompatibleStateError)
        return out

    def _shifted_column(self, other: CentralMoments, da: np.ndarray, db: np.ndarray) -> np.ndarray:
        """The shifted sums of :meth:`merged` for blocks one column wide (``R2Score`` of one
        output, as ``Sliced`` merges one per slice and batch): the same operations in the same
        order on Python floats (IEEE doubles, as numpy's), where 1 x 1 arrays cost a numpy call
        each, about 70 per merge of fourth moments. The powers of the shifts are numpy's own
        (``delta ** e``, computed once each), so every value is the array path's, bit for bit.
        """
        ma_all, mb_all = self.moments[:, 0].tolist(), other.moments[:, 0].tolist()
        wa, wb = self.weight, other.weight
        cache: dict[tuple[int, int, int], float] = {}

        def power(side: int, d: np.ndarray, rest: Index) -> float:
            out = 1.0
            for v, e in enumerate(rest):
                if e:
                    key = (side, v, e)
                    if key not in cache:
                        cache[key] = float((d[v] ** e)[0])
                    out = out * cache[key]
            return out

        sums = []
        for terms in self._plan:
            acc = 0.0
            for pos, coef, rest in terms:
                ma = wa if pos < 0 else ma_all[pos]
                mb = wb if pos < 0 else mb_all[pos]
                acc += coef * (power(0, da, rest) * ma + power(1, db, rest) * mb)
            sums.append(acc)
        return np.array(sums).reshape(-1, 1)

    def _check_bounds(
        self, hi: np.ndarray, lo: np.ndarray, moments: np.ndarray, error: type[Exception]
    ) -> None:
        """Raise ``error`` unless the means and central sums are within their bounds."""
        if not hi.size:
            return
        limit = CENTRAL_MEAN_LIMIT
        if not (np.abs(hi).max() <= limit and np.abs(lo).max() <= limit):
            raise error("central moments: a mean is past the bound 2**210")
        if not (np.abs(hi + lo).max() <= limit):
            raise error("central moments: a mean is past the bound 2**210")
        if moments.size and not (np.abs(moments).max(axis=1) <= self._limits).all():
            raise error("central moments: a central sum is past its bound 2**(110 + 212 k)")

    def merge(self, other: Any) -> None:
        new = self.merged(other)
        self.weight, self.hi, self.lo, self.moments = new.weight, new.hi, new.lo, new.moments

    # -- wire --------------------------------------------------------------------------------

    def to_wire(self) -> Any:
        return {
            "weight": self.weight,
            "mean": self.hi,
            "mean_low": self.lo,
            "moments": self.moments,
        }

    def from_wire(self, wire: Any) -> CentralMoments:
        if not isinstance(wire, dict) or set(wire) != {"weight", "mean", "mean_low", "moments"}:
            raise ValueError(
                "central moments need exactly the fields mean, mean_low, moments, weight"
            )
        weight = wire["weight"]
        if type(weight) is int:
            weight = float(weight)
        if not isinstance(weight, float) or not (0 <= weight <= WEIGHT_LIMIT):
            raise ValueError("the weight must be a non-negative float of at most 2**100")
        arrays = {}
        for name, rows in (
            ("mean", self.variables),
            ("mean_low", self.variables),
            ("moments", len(self.indices)),
        ):
            arr = wire[name]
            if not isinstance(arr, np.ndarray) or arr.dtype != np.float64 or arr.ndim != 2:
                raise ValueError(f"{name} must be a 2-D float64 array")
            if arr.shape[0] != rows:
                raise ValueError(f"{name} must have {rows} rows, has {arr.shape[0]}")
            if arr.size and not np.isfinite(arr).all():
                raise ValueError(f"{name} must be finite")
            arrays[name] = arr
        if len({a.shape[1] for a in arrays.values()}) != 1:
            raise ValueError("mean, mean_low and moments differ in width")
        for i, k in enumerate(self.indices):
            if all(e % 2 == 0 for e in k) and arrays["moments"].shape[1]:
                if arrays["moments"][i].min() < 0:
                    raise ValueError(f"the central sum of even orders {k} is negative")
        self._check_bounds(arrays["mean"], arrays["mean_low"], arrays["moments"], ValueError)
        out = self._empty_like()
        out.weight, out.hi, out.lo = weight, arrays["mean"], arrays["mean_low"]
        out.moments = arrays["moments"]
        return out


def _limits(indices: Sequence[Index]) -> np.ndarray:
    """The bound of each kept central sum: ``2**(110 + 212 k)`` for total order k (at most
    2**1000: the merge argument above holds to the fourth order)."""
    return np.array([2.0 ** min(110 + 212 * sum(k), 1000) for k in indices])


def _products(
    indices: Sequence[Index], powers: list[dict[int, np.ndarray]], weights: np.ndarray | None
) -> np.ndarray:
    """``sum w prod_i dev_i**k_i`` of every index, per column, over the rows of ``powers``."""
    width = powers[0][1].shape[0]
    weighted: list[dict[int, np.ndarray]] = [{} for _ in powers]
    sums = np.zeros((len(indices), width))
    for i, k in enumerate(indices):
        (va, ea), (vb, eb) = _factors(k)
        b = _pow(powers[vb], eb)
        if weights is None:
            a = _pow(powers[va], ea)
        else:  # the weights folded into the first factor, once per (variable, power)
            if ea not in weighted[va]:
                weighted[va][ea] = _pow(powers[va], ea) * weights
            a = weighted[va][ea]
        if width == 1:
            sums[i, 0] = a[0] @ b[0]  # one BLAS dot product
        else:
            sums[i] = np.einsum("ij,ij->i", a, b)
    return sums


def _power(delta: np.ndarray, rest: Index) -> np.ndarray | float:
    """``prod_i delta_i**rest_i`` per column (1.0 for the zero index)."""
    out: np.ndarray | float = 1.0
    for v, e in enumerate(rest):
        if e:
            out = out * delta[v] ** e
    return out


def _pow(powers: dict[int, np.ndarray], e: int) -> np.ndarray:
    """The e-th power of the centred values, built from (and stored in) the cache."""
    if e not in powers:
        half = _pow(powers, e // 2)
        powers[e] = half * half if e % 2 == 0 else half * _pow(powers, e - e // 2)
    return powers[e]


def _factors(k: Index) -> tuple[tuple[int, int], tuple[int, int]]:
    """Two (variable, power) factors whose product is ``prod_i dev_i**k_i`` (one dot product
    each), the first of the lower power so that few weighted powers are needed."""
    used = [(v, e) for v, e in enumerate(k) if e]
    if len(used) == 1:
        v, e = used[0]
        return (v, e // 2), (v, e - e // 2)
    (v1, e1), (v2, e2) = used
    return ((v1, e1), (v2, e2)) if e1 <= e2 else ((v2, e2), (v1, e1))
