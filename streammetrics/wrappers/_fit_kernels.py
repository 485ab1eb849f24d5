"""The batch and merge kernels of :class:`~streammetrics.wrappers._fit_pack.FitPack`: every
slice's two-pass summary of a batch (``Moments.batch``, ``CentralMoments.batch``, a few
``bincount`` over the slice codes per moment) and the merges of those summaries into the held
rows (``Moments.combined``, ``CentralMoments.merged``, element for element), array-wide."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._codec import WEIGHT_LIMIT
from ..states.central import CENTRAL_MEAN_LIMIT
from ..states.moments import COMOMENT_LIMIT, MEAN_LIMIT, two_sum
from ._packing import ROOM, Sums

__all__ = ["central_batch", "chan", "moments_batch", "pebay", "within"]


def _pivot(
    x: np.ndarray, codes: np.ndarray, k: int, w: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(ref, rows)``: some value of each code's rows (of one of positive weight, given
    weights ``w``: a far row of weight zero would cost the centred values their digits), and
    that value on each row."""
    ref = np.zeros(k)
    if w is None:
        ref[codes] = x
    else:
        heavy = w > 0
        ref[codes[heavy]] = x[heavy]
    return ref, ref[codes]


def _constant(x: np.ndarray, codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(ref, const)``: some value of each code's rows, and whether they all equal it."""
    ref, rows = _pivot(x, codes, k)
    return ref, np.bincount(codes, weights=x != rows, minlength=k) == 0


def moments_batch(
    columns: list[np.ndarray],
    pairs: tuple[tuple[int, int], ...],
    codes: np.ndarray,
    m: np.ndarray,
    w: np.ndarray | None,
    sums: Sums,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(hi, lo, comoment)`` of each code's rows, shapes (k, groups), (k, groups), (k, pairs):
    ``Moments.batch`` (the corrected two-pass: a rough mean, exact for a constant column, then
    the deviations' sum and products), every code at once. Zeros for a code of no weight.
    Run under ``np.errstate(invalid="ignore", divide="ignore")``."""
    k = len(m)
    hi, lo = np.zeros((k, len(columns))), np.zeros((k, len(columns)))
    paired = {g for pair in pairs for g in pair}
    devs: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for g, x in enumerate(columns):
        rough = sums(x if w is None else w * x) / m
        if g not in paired:
            hi[:, g] = rough
            continue
        ref, const = _constant(x, codes, k)
        rough[const] = ref[const]  # exactly the value: zero deviations, zero variance
        dev = x - rough[codes]
        wdev = dev if w is None else w * dev
        shift = sums(wdev) / m
        shift[const] = 0.0
        hi[:, g], lo[:, g] = two_sum(rough, shift)
        devs[g] = (dev, wdev, shift)
    co = np.zeros((k, len(pairs)))
    for i, (g, h) in enumerate(pairs):
        s = sums(devs[g][1] * devs[h][0]) - m * devs[g][2] * devs[h][2]
        co[:, i] = np.maximum(s, 0.0) if g == h else s
    empty = m == 0.0
    hi[empty], lo[empty], co[empty] = 0.0, 0.0, 0.0
    return hi, lo, co


def central_batch(
    columns: list[np.ndarray],
    block: Any,
    codes: np.ndarray,
    m: np.ndarray,
    w: np.ndarray | None,
    sums: Sums,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(hi, lo, moments)`` of each code's rows, shapes (k, variables) twice and (k,
    indices): ``CentralMoments.batch`` of ``block``'s layout (centre on one of the code's
    values, so that a constant column gives exact zeros, correct the mean by the mean deviation,
    then sum the products of the centred values), every code at once. Zeros for a code of no
    weight. Run under ``np.errstate(invalid="ignore", divide="ignore")``."""
    k = len(m)
    hi, lo = np.zeros((k, len(columns))), np.zeros((k, len(columns)))
    powers: list[dict[int, np.ndarray]] = []
    for v, x in enumerate(columns):
        pivot, pivots = _pivot(x, codes, k, w)
        dev = x - pivots
        shift = sums(dev if w is None else w * dev) / m
        hi[:, v], lo[:, v] = two_sum(pivot, shift)
        powers.append({1: dev - shift[codes]})
    out = np.zeros((k, len(block.indices)))
    for i, index in enumerate(block.indices):
        product: np.ndarray | None = None
        for v, e in enumerate(index):
            if e:
                term = _power(powers[v], e)
                product = term if product is None else product * term
        assert product is not None
        total = sums(product if w is None else w * product)
        out[:, i] = np.maximum(total, 0.0) if all(e % 2 == 0 for e in index) else total
    empty = m == 0.0
    hi[empty], lo[empty], out[empty] = 0.0, 0.0, 0.0
    return hi, lo, out


def _power(powers: dict[int, np.ndarray], e: int) -> np.ndarray:
    """The e-th power of the centred values, built from (and kept in) ``powers``."""
    if e not in powers:
        half = _power(powers, e // 2)
        powers[e] = half * half if e % 2 == 0 else half * _power(powers, e - e // 2)
    return powers[e]


def _mean_of(
    a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(hi, lo, delta, total)`` of two sides' ``(weight, hi, lo, ...)`` rows:
    ``merged_mean`` element by element, stepped from the heavier side."""
    wa, wb = a[0][:, None], b[0][:, None]
    total = wa + wb
    delta = (b[1] - a[1]) + (b[2] - a[2])
    heavier = wb > wa
    hi, lo = two_sum(
        np.where(heavier, b[1], a[1]),
        np.where(heavier, b[2] - delta * (wa / total), a[2] + delta * (wb / total)),
    )
    return hi, lo, delta, total


def _pick(
    merged: np.ndarray, a: np.ndarray, b: np.ndarray, keep: np.ndarray, take: np.ndarray
) -> np.ndarray:
    """``merged`` with the rows where one side wins whole replaced by that side's."""
    if merged.ndim == 2:
        keep, take = keep[:, None], take[:, None]
    return np.where(keep, a, np.where(take, b, merged))


def _sides(
    a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...], seen: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Where a merge keeps the held side whole (a batch of no weight) and where it takes the
    batch's (a new slice, or one of no weight), as ``Moments.combined`` and
    ``CentralMoments.merged`` decide."""
    keep = seen & (b[0] == 0.0)
    return keep, ~keep & (~seen | (a[0] == 0.0))


def chan(
    a: list[np.ndarray],
    b: tuple[np.ndarray, ...],
    pairs: tuple[tuple[int, int], ...],
    seen: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """``Moments.combined`` of the held rows ``a`` and the batch's ``b`` (each ``(weight, hi,
    lo, comoment)``), element for element."""
    hi, lo, delta, total = _mean_of(tuple(a), b)
    factor = a[0] * (b[0] / total[:, 0])
    co = a[3] + b[3]
    for i, (g, h) in enumerate(pairs):
        co[:, i] += delta[:, g] * delta[:, h] * factor
    keep, take = _sides(tuple(a), b, seen)
    merged = (total[:, 0], hi, lo, co)
    return tuple(_pick(x, y, z, keep, take) for x, y, z in zip(merged, a, b, strict=True))


def pebay(
    a: list[np.ndarray], b: tuple[np.ndarray, ...], block: Any, seen: np.ndarray
) -> tuple[np.ndarray, ...]:
    """``CentralMoments.merged`` of the held rows ``a`` and the batch's ``b`` (each ``(weight,
    hi, lo, moments)``), element for element (its plan of shift terms)."""
    hi, lo, delta, total = _mean_of(tuple(a), b)
    wa, wb = a[0][:, None], b[0][:, None]
    da, db = -delta * (wb / total), delta * (wa / total)
    pa, pb = _ShiftPowers(da), _ShiftPowers(db)
    out = np.zeros_like(a[3])
    for i, terms in enumerate(block._plan):
        acc = np.zeros(len(out))
        for pos, coef, rest in terms:
            ma = a[0] if pos < 0 else a[3][:, pos]
            mb = b[0] if pos < 0 else b[3][:, pos]
            acc += coef * (pa(rest) * ma + pb(rest) * mb)
        out[:, i] = acc
    for i, index in enumerate(block.indices):
        if all(e % 2 == 0 for e in index):
            out[:, i] = np.maximum(out[:, i], 0.0)
    keep, take = _sides(tuple(a), b, seen)
    merged = (total[:, 0], hi, lo, out)
    return tuple(_pick(x, y, z, keep, take) for x, y, z in zip(merged, a, b, strict=True))


class _ShiftPowers:
    """``prod_v delta[:, v]**rest_v`` per row (1.0 for the zero index), as ``_power`` of
    ``states.central`` computes it (``1.0 * d0**e0 * d1**e1``, the same bits), each power of a
    column taken once per merge instead of once per term (some 60 terms)."""

    def __init__(self, delta: np.ndarray) -> None:
        self.delta = delta
        self.cache: dict[tuple[int, int], np.ndarray] = {}

    def __call__(self, rest: tuple[int, ...]) -> np.ndarray | float:
        out: np.ndarray | float = 1.0
        for v, e in enumerate(rest):
            if e:
                power = self.cache.get((v, e))
                if power is None:
                    power = self.cache[(v, e)] = self.delta[:, v] ** e
                out = power if isinstance(out, float) else out * power  # (1.0 * x is x)
        return out


def within(
    moments: tuple[np.ndarray, ...], shape: tuple[np.ndarray, ...] | None, template: Any
) -> bool:
    """Whether the merged rows are within the bounds of ``Moments`` (and ``CentralMoments``)."""
    weight, hi, lo, co = moments
    with np.errstate(invalid="ignore"):
        if not (
            weight.max() <= WEIGHT_LIMIT * ROOM
            and np.abs(hi).max() <= MEAN_LIMIT * ROOM
            and np.abs(lo).max() <= MEAN_LIMIT * ROOM
            and np.abs(hi + lo).max() <= MEAN_LIMIT * ROOM
            and np.abs(co).max() <= COMOMENT_LIMIT * ROOM
        ):
            return False
        if shape is None:
            return True
        _, s_hi, s_lo, s_mom = shape
        return bool(
            np.abs(s_hi).max() <= CENTRAL_MEAN_LIMIT * ROOM
            and np.abs(s_lo).max() <= CENTRAL_MEAN_LIMIT * ROOM
            and np.abs(s_hi + s_lo).max() <= CENTRAL_MEAN_LIMIT * ROOM
            and (np.abs(s_mom) <= template.shape._limits * ROOM).all()
        )
