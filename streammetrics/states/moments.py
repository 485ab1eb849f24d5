"""Weighted running means and co-moments, merged with the parallel update of Chan et al.

The state behind the regression metrics (and reusable wherever a mean, a variance or a
covariance of streamed columns is needed). It holds, for ``groups`` variables that are each
``width`` columns wide (e.g. ``y_true``, ``y_pred`` and the residual of a d-output regression),

* ``weight``: the total sample weight W (the sample count when unweighted),
* ``mean``: shape (groups, width), the weighted mean of every column,
* ``comoment``: shape (len(pairs), width), for each configured pair (g, h) of groups the
  weighted co-moment ``sum w (x_g - mean_g) * (x_h - mean_h)`` column by column; a pair (g, g)
  is the sum of squared deviations (W times the variance).

Raw sums of squares are never kept: ``sum x**2 - (sum x)**2 / W`` loses every digit of the
variance when the mean is large against the spread (1e9 values around 1e6 with a spread of 1e-3
leave no significant digit in float64). Instead each batch is summarised around its own mean
(the corrected two-pass algorithm: centre on a first estimate of the mean, then correct both the
mean and the co-moment with the sum of the centred values) and two summaries combine with

    delta = mean_b - mean_a,  W = W_a + W_b,
    mean = mean_a + delta * W_b / W,
    C = C_a + C_b + delta_g * delta_h * W_a * W_b / W

(Chan, Golub & LeVeque, "Updating formulae and a pairwise algorithm for computing sample
variances", 1979), which only ever adds terms of the size of the spread. The mean steps from the
heavier side's (``mean_b - delta * W_a / W`` when ``W_b > W_a``): when the means lie far apart,
``delta`` loses the lighter mean's low digits, and that error must be scaled by the lighter
side's share of the weight, not the heavier's. The mean itself is kept
as an unevaluated sum ``mean + mean_low`` of two floats (a double-double, renormalised with
TwoSum after every merge), so ``delta`` keeps the digits of the spread even when the mean is
1e8 times larger than the spread. Columns that are
constant within a batch get exactly their value as mean and exactly zero co-moment, so a constant
column stays exactly constant (zero variance) through any number of updates and merges.

These are float sums: a stream split and merged differently agrees to rounding (about 1e-12
relative for the co-moments of well-conditioned data), not bit for bit.

Bounds (``docs/format.md``, "Float bounds"): the weight is at most ``WEIGHT_LIMIT`` (2**100),
every mean (and its low part) at most :data:`MEAN_LIMIT` (2**448, about 7e134) in magnitude and
every co-moment at most :data:`COMOMENT_LIMIT` (2**1000, about 1e301). Within them every step of
a merge and of the metrics' ``compute`` stays finite (``delta**2 * W <= 2**1000``). Decoding
refuses a block past them (``ValueError``), and a merge whose result would pass them raises
:class:`~streammetrics.errors.IncompatibleStateError` (``CountOverflowError`` for the weight)
before anything changes. Data never comes near them: the regression metrics refuse inputs above
2**200 in magnitude, whose squares and fourth powers, summed with weights up to 2**100, stay far
below.

Memory: ``(groups + len(pairs)) * width + 1`` floats. ``batch``: O(n * width * (groups +
len(pairs))). ``merge``: O((groups + len(pairs)) * width).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

from .._codec import WEIGHT_LIMIT, all_finite, check_sum, least
from ..base import StateBlock
from ..errors import IncompatibleStateError
from .mappings import CHUNK, scratch

__all__ = ["CHUNK", "COMOMENT_LIMIT", "MEAN_LIMIT", "Moments", "merged_mean", "two_sum"]

#: The largest magnitude of a mean (and of its low part) a block may hold.
MEAN_LIMIT = 2.0**448
#: The largest magnitude of a co-moment a block may hold: the product of two (or the square of
#: one) stays within float64 once taken as ``sqrt(a) * sqrt(b)``, and a merge's
#: ``C_a + C_b + delta**2 * W`` stays finite before it is checked.
COMOMENT_LIMIT = 2.0**1000


class Moments(StateBlock):
    """Weighted means of ``groups`` column groups and co-moments of the configured group pairs.

    Parameters
    ----------
    groups : int
        Number of variables (each ``width`` columns wide; ``width`` is fixed by the first
        non-empty batch).
    pairs : sequence of (int, int)
        The group pairs whose column-wise co-moments are kept; (g, g) gives a variance.
    """

    def __init__(self, groups: int, pairs: Sequence[tuple[int, int]] = ()) -> None:
        if groups < 1:
            raise ValueError("groups must be at least 1")
        for g, h in pairs:
            if not (0 <= g < groups and 0 <= h < groups):
                raise ValueError(f"pair {(g, h)} refers to a group outside 0..{groups - 1}")
        self.groups = int(groups)
        self.pairs: tuple[tuple[int, int], ...] = tuple((int(g), int(h)) for g, h in pairs)
        self.weight = 0.0
        # The mean as an unevaluated sum hi + lo (a double-double): differences of means are
        # then accurate to the spread of the data, however large the mean itself is.
        self.hi: np.ndarray = np.zeros((self.groups, 0))
        self.lo: np.ndarray = np.zeros((self.groups, 0))
        self.comoment: np.ndarray = np.zeros((len(self.pairs), 0))

    @property
    def mean(self) -> np.ndarray:
        """The weighted mean of every column, shape (groups, width)."""
        return np.asarray(self.hi + self.lo)

    # -- views -------------------------------------------------------------------------------

    @property
    def width(self) -> int | None:
        """Columns per group, or ``None`` before the first non-empty batch."""
        return int(self.hi.shape[1]) if self.hi.shape[1] else None

    def comoment_of(self, g: int, h: int) -> np.ndarray:
        """The co-moment row of the configured pair (g, h) (or (h, g))."""
        for i, pair in enumerate(self.pairs):
            if pair in ((g, h), (h, g)):
                return np.asarray(self.comoment[i])
        raise KeyError(f"the pair {(g, h)} is not kept by this block")

    def held_total(self) -> float:
        """The weight, for the bound of weight totals (the per-request buffer reads it)."""
        return self.weight

    def of_values(self, weight: float, mean: float, mean_low: float, comoment: float) -> Moments:
        """A block of this one's layout holding one column of one variable and its one pair."""
        out = Moments.__new__(Moments)
        out.groups, out.pairs = self.groups, self.pairs
        out.weight = weight
        out.hi, out.lo = np.array([[mean]]), np.array([[mean_low]])
        out.comoment = np.array([[comoment]])
        return out

    def _empty_like(self) -> Moments:
        out = Moments.__new__(Moments)
        out.groups, out.pairs = self.groups, self.pairs
        out.weight = 0.0
        out.hi = np.zeros((self.groups, 0))
        out.lo = np.zeros((self.groups, 0))
        out.comoment = np.zeros((len(self.pairs), 0))
        return out

    # -- building increments -----------------------------------------------------------------

    def batch(
        self, columns: Sequence[np.ndarray], weights: np.ndarray | None, scratch: bool = False
    ) -> Moments:
        """A new block summarising one batch: ``columns`` holds one (n, width) float64 array
        per group, ``weights`` n non-negative weights or ``None``. Pure: ``self`` is unchanged.

        With ``scratch`` (at most ``CHUNK`` values per group: ``n * width <= CHUNK``) every
        temporary lives in this thread's reused scratch arrays, so a stream of batches
        allocates (and page-faults) nothing per batch.
        """
        if len(columns) != self.groups:
            raise ValueError(f"expected {self.groups} column groups, got {len(columns)}")
        out = self._empty_like()
        n, width = columns[0].shape
        if n == 0:
            return out
        total = float(n) if weights is None else float(weights.sum())
        paired = {g for pair in self.pairs for g in pair}
        his = np.zeros((self.groups, width))
        los = np.zeros((self.groups, width))
        centred: dict[int, np.ndarray] = {}
        shifts: dict[int, np.ndarray] = {}
        for g, column in enumerate(columns):
            if total == 0.0:
                continue  # no weight: nothing to average (means and co-moments stay zero)
            x = _rows_of(column, g, scratch)
            rough = (x.sum(axis=1) if weights is None else x @ weights) / total
            if g not in paired:
                his[g] = rough
                continue
            lo, hi = x.min(axis=1), x.max(axis=1)
            rough = np.clip(rough, lo, hi)
            const = lo == hi
            rough[const] = lo[const]  # exactly the value: zero deviations, zero variance
            if scratch:
                dev = np.subtract(x, rough[:, None], out=_scratch(f"dev{g}", x.shape))
            else:
                dev = x - rough[:, None]
            shift = (dev.sum(axis=1) if weights is None else dev @ weights) / total
            shift[const] = 0.0
            his[g], los[g] = two_sum(rough, shift)
            # Deviations from the rough mean; the pairs below subtract the shift's share.
            centred[g], shifts[g] = dev, shift
        comoment = np.zeros((len(self.pairs), width))
        for i, (g, h) in enumerate(self.pairs):
            if total == 0.0:
                continue
            a, b = centred[g], centred[h]
            prod = np.multiply(a, b, out=_scratch("prod", a.shape)) if scratch else a * b
            s = prod.sum(axis=1) if weights is None else prod @ weights
            # Corrected two-pass: sum w (a - sa)(b - sb) = sum w a b - W sa sb.
            s = s - total * shifts[g] * shifts[h]
            if g == h:
                s = np.maximum(s, 0.0)
            comoment[i] = s
        out.weight = total
        out.hi, out.lo = his, los
        out.comoment = comoment
        return out

    # -- merging -----------------------------------------------------------------------------

    def check_mergeable(self, other: Any) -> None:
        if not isinstance(other, Moments) or (other.groups, other.pairs) != (
            self.groups,
            self.pairs,
        ):
            raise IncompatibleStateError("cannot merge moments of different layouts")
        if self.width is not None and other.width is not None and self.width != other.width:
            raise IncompatibleStateError(
                f"cannot merge moments of {self.width} columns with moments of {other.width}"
            )

    def copy(self) -> Moments:
        """Its arrays copied (``copy.deepcopy``, the default, costs 20x more, and ``Sliced``
        copies every slice it updates)."""
        out = self._empty_like()
        out.weight, out.hi, out.lo = self.weight, self.hi.copy(), self.lo.copy()
        out.comoment = self.comoment.copy()
        return out

    def merged(self, other: Moments) -> Moments:
        """A new block with the moments of both (Chan et al.); neither input changes. Raises
        ``IncompatibleStateError`` (``CountOverflowError`` for the weight) if the result would
        pass the bounds."""
        self.check_mergeable(other)
        check_sum("moments weight", "f", self.weight, other.weight)
        out = self.combined(other)
        out.check_bounds()
        return out

    def combined(self, other: Moments) -> Moments:
        """:meth:`merged` without the bound checks, for a caller that folds many blocks (an
        update, chunk by chunk) and checks the last one with :meth:`check_bounds`: a value past
        the bounds overflows to inf or nan on the way, and stays so."""
        if other.width is None:
            return self.copy()
        if self.width is None:
            return other.copy()
        wa, wb = self.weight, other.weight
        if wa != 0.0 and wb != 0.0 and self.hi.shape == other.hi.shape == (1, 1):
            if len(self.pairs) == 1:
                return self._combined_scalar(other)
        out = self._empty_like()
        total = wa + wb
        if wb == 0.0:
            out.weight, out.hi, out.lo = wa, self.hi.copy(), self.lo.copy()
            out.comoment = self.comoment.copy()
            return out
        if wa == 0.0:
            out.weight, out.hi, out.lo = wb, other.hi.copy(), other.lo.copy()
            out.comoment = other.comoment.copy()
            return out
        # hi_b - hi_a is exact when the means are within a factor 2 (Sterbenz), so delta keeps
        # the digits of the spread even when the means are huge.
        delta = (other.hi - self.hi) + (other.lo - self.lo)
        out.weight = total
        out.hi, out.lo = merged_mean(self.hi, self.lo, other.hi, other.lo, delta, wa, wb)
        factor = wa * (wb / total)
        comoment = self.comoment + other.comoment
        for i, (g, h) in enumerate(self.pairs):
            comoment[i] += delta[g] * delta[h] * factor
        out.comoment = comoment
        return out

    def _combined_scalar(self, other: Moments) -> Moments:
        """:meth:`combined` of two blocks of one variable, one pair and one column (MSE, MAE):
        the same operations in the same order on Python floats (IEEE doubles, as numpy's), at a
        tenth of numpy's per-call cost on 1 x 1 arrays."""
        return self.plus_values(
            other.weight,
            float(other.hi[0, 0]),
            float(other.lo[0, 0]),
            float(other.comoment[0, 0]),
        )

    def plus_values(self, weight: float, mean: float, mean_low: float, comoment: float) -> Moments:
        """``self.combined(self.of_values(weight, mean, mean_low, comoment))`` without building
        the second block: on Python floats when this block holds one variable, one pair and one
        column (the one-loss update of MSE, MAE and MAPE)."""
        wa = self.weight
        if not (wa != 0.0 and weight != 0.0 and self.hi.shape == (1, 1) and len(self.pairs) == 1):
            if self.width is None:
                return self.of_values(weight, mean, mean_low, comoment)
            return self.combined(self.of_values(weight, mean, mean_low, comoment))
        total = wa + weight
        a_hi, a_lo = float(self.hi[0, 0]), float(self.lo[0, 0])
        delta = (mean - a_hi) + (mean_low - a_lo)
        hi, lo = merged_mean(a_hi, a_lo, mean, mean_low, delta, wa, weight)
        factor = wa * (weight / total)
        comoment = float(self.comoment[0, 0]) + comoment
        comoment += delta * delta * factor  # one group: its one pair is (0, 0)
        return self.of_values(total, hi, lo, comoment)

    def check_bounds(self) -> None:
        """Raise ``IncompatibleStateError`` (``CountOverflowError`` for the weight) unless the
        block is within its bounds (a few reductions of O(width))."""
        check_sum("moments weight", "f", self.weight)
        _check_bounds(self.hi, self.lo, self.comoment, IncompatibleStateError)

    def merge(self, other: Any) -> None:
        new = self.merged(other)
        self.weight, self.hi, self.lo = new.weight, new.hi, new.lo
        self.comoment = new.comoment

    # -- wire --------------------------------------------------------------------------------

    def to_wire(self) -> Any:
        return {
            "weight": self.weight,
            "mean": self.hi,
            "mean_low": self.lo,
            "comoment": self.comoment,
        }

    def from_wire(self, wire: Any) -> Moments:
        if not isinstance(wire, dict) or set(wire) != {"weight", "mean", "mean_low", "comoment"}:
            raise ValueError("moments need exactly the fields comoment, mean, mean_low, weight")
        weight, mean, low = wire["weight"], wire["mean"], wire["mean_low"]
        comoment = wire["comoment"]
        if type(weight) is int:
            weight = float(weight)
        if not isinstance(weight, float) or not (0 <= weight <= WEIGHT_LIMIT):
            raise ValueError("the weight must be a non-negative float of at most 2**100")
        for name, arr, rows in (
            ("mean", mean, self.groups),
            ("mean_low", low, self.groups),
            ("comoment", comoment, len(self.pairs)),
        ):
            if not isinstance(arr, np.ndarray) or arr.dtype != np.float64 or arr.ndim != 2:
                raise ValueError(f"{name} must be a 2-D float64 array")
            if arr.shape[0] != rows:
                raise ValueError(f"{name} must have {rows} rows, has {arr.shape[0]}")
            if arr.size and not all_finite(arr):
                raise ValueError(f"{name} must be finite")
        if not mean.shape[1] == low.shape[1] == comoment.shape[1]:
            raise ValueError("mean, mean_low and comoment differ in width")
        for i, (g, h) in enumerate(self.pairs):
            if g == h and comoment.shape[1] and least(comoment[i]) < 0:
                raise ValueError("a sum of squared deviations is negative")
        _check_bounds(mean, low, comoment, ValueError)
        out = Moments.__new__(Moments)  # (not _empty_like: its empty arrays, replaced)
        out.groups, out.pairs = self.groups, self.pairs
        out.weight, out.hi, out.lo, out.comoment = weight, mean, low, comoment
        return out


def _check_bounds(
    hi: np.ndarray, lo: np.ndarray, comoment: np.ndarray, error: type[Exception]
) -> None:
    """Raise ``error`` unless the means and co-moments are within :data:`MEAN_LIMIT` and
    :data:`COMOMENT_LIMIT` (three reductions)."""
    if not hi.size:
        return
    if hi.shape == (1, 1) and comoment.shape == (1, 1):  # one value each: Python floats
        h, low, co = float(hi[0, 0]), float(lo[0, 0]), float(comoment[0, 0])
        mean = abs(h + low)
        if not (mean <= MEAN_LIMIT and abs(h) <= MEAN_LIMIT and abs(low) <= MEAN_LIMIT):
            raise error(f"moments: a mean of magnitude {mean:.6g} is past the bound 2**448")
        if not abs(co) <= COMOMENT_LIMIT:
            raise error("moments: a co-moment is past the bound 2**1000 (float64 would overflow)")
        return
    mean = np.abs(hi + lo).max()
    if not (
        mean <= MEAN_LIMIT and np.abs(hi).max() <= MEAN_LIMIT and np.abs(lo).max() <= MEAN_LIMIT
    ):
        raise error(f"moments: a mean of magnitude {mean:.6g} is past the bound 2**448")
    if comoment.size and not np.abs(comoment).max() <= COMOMENT_LIMIT:
        raise error("moments: a co-moment is past the bound 2**1000 (float64 would overflow)")


def _rows_of(column: np.ndarray, g: int, scratch: bool) -> np.ndarray:
    """Group ``g``'s (n, width) column as a contiguous (width, n) array, reductions running
    along its rows (numpy reduces a C-ordered (n, width) array along axis 0 several times
    slower); with ``scratch``, copied into this thread's scratch array."""
    if scratch and not column.T.flags.c_contiguous:
        x = _scratch(f"x{g}", column.T.shape)
        np.copyto(x, column.T)
        return x
    return np.ascontiguousarray(column.T)


def _scratch(name: str, shape: tuple[int, ...]) -> np.ndarray:
    """A (width, n) float64 view of this thread's scratch array ``name`` (``n * width`` at most
    ``CHUNK``)."""
    return scratch.get("moments-" + name, math.prod(shape), np.float64).reshape(shape)


_N = TypeVar("_N", float, np.ndarray)


def two_sum(a: _N, b: _N) -> tuple[_N, _N]:
    """``(s, e)`` with ``s = fl(a + b)`` and ``s + e == a + b`` exactly (Knuth's TwoSum); keeps
    a mean as the unevaluated sum hi + lo."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def merged_mean(
    a_hi: _N, a_lo: _N, b_hi: _N, b_lo: _N, delta: _N, wa: float, wb: float
) -> tuple[_N, _N]:
    """The two parts of the mean of two sides (``delta = mean_b - mean_a``, weights ``wa``,
    ``wb``), stepped from the heavier side's: far apart means make ``delta`` lose the lighter
    one's low digits, an error the step scales by the other side's share of the weight. From
    the lighter side that share is nearly 1 (MSE of weights 1 and 1e16 merged to 0.0, not
    1.01: 0.8.18). Equal weights step from ``a``."""
    total = wa + wb
    if wb > wa:
        return two_sum(b_hi, b_lo - delta * (wa / total))
    return two_sum(a_hi, a_lo + delta * (wb / total))
