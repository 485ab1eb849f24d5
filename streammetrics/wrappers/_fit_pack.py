"""The slices of R2, explained variance, Pearson's r or the regression report held as one table,
for ``Sliced``.

``Sliced(R2Score())`` updated a copy of the metric per slice a batch touched: a two-pass of
its moments and the fourth-order central moments its interval reads, some 1.3 ms of numpy
calls on one-value arrays per slice and batch (0.077 M rows/s at 1,000 slices). A
:class:`FitPack` keeps every slice's state in arrays instead, one row per slice:

* the ``Moments`` block (weight, the mean of each variable as a double-double ``hi + lo``, the
  co-moment of each kept pair) and the sum of squared weights;
* for R2 and explained variance, the ``CentralMoments`` block of (error, ``y_true``) (weight,
  means, the central sums of every index up to (2, 2)).

A batch is summarised per slice at once (:func:`moments_batch`, :func:`central_batch`): the
two-pass algorithms of ``Moments.batch`` and ``CentralMoments.batch``, each pass a few
``bincount`` over the slice codes (summed pairwise for a slice of more than 4,096 rows, as in
``_moments_pack``), a slice whose values are all equal keeping exactly that mean and zero spread.
The summaries merge into the held rows by Chan's and Pebay's formulas, element for element the
operations of ``Moments.combined`` and ``CentralMoments.merged``.

The result per slice is the metric's state over that slice's rows to rounding, not bit for bit
(the metric sums a batch in chunks of 8,192 rows or by shifted sums; ``bincount`` adds in row
order), as for the one-loss metrics. ``compute`` reads the table (:meth:`FitPack.computed`,
equal to the bit to each made state's ``compute()`` for ``uniform_average``); states are made
for a merge, an interval or ``sliced[key]``, and bytes are written from the arrays. Batches of
several outputs, and batches the bounds refuse, take the per-slice path.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _codec
from .._codec import WEIGHT_LIMIT
from ..regression._stack import FitStack
from ..states.central import CENTRAL_MEAN_LIMIT
from ..states.moments import COMOMENT_LIMIT, MEAN_LIMIT, two_sum
from ..states.stacked import blanks
from ._moments_pack import _Sums
from ._packing import grown, slots

__all__ = ["FIT_PACK_MIN_SLICES", "FitPack"]

#: Packed from the first slice, as the one-loss metrics' moments.
FIT_PACK_MIN_SLICES = 1

Key = Any


def qualifies(template: Any) -> bool:
    """Whether slices of ``template`` can be packed: a regression metric of the base update
    that is not a one-loss metric (those have ``MomentsPack``)."""
    from ..regression._base import _RegressionMetric

    return (
        isinstance(template, _RegressionMetric)
        and not template._one_loss
        and template._loss is None
        and type(template).update is _RegressionMetric.update
    )


class FitPack:
    """Every slice's regression state, one array row per slice.

    ``keys[i]`` names slice ``i`` (arrival order); ``counts[i]`` its rows; ``fields`` holds
    ``weight_sq`` (k,), the moments' ``weight`` (k,), ``hi``, ``lo`` (k, groups), ``comoment``
    (k, pairs) and, for a metric with ``shape``, its ``weight`` (k,), ``hi``, ``lo`` (k, 2) and
    ``moments`` (k, indices). Never changed in place: an update makes a new pack.
    """

    queue: tuple[Any, ...] = ()

    def __init__(
        self,
        template: Any,
        keys: list[Key],
        index: dict[Key, int],
        counts: np.ndarray,
        fields: tuple[np.ndarray, ...],
    ) -> None:
        self.template = template
        self.keys, self.index, self.counts = keys, index, counts
        self.fields = fields

    def settled(self) -> FitPack:
        return self

    def __len__(self) -> int:
        return len(self.keys)

    def held_bound(self) -> float:
        """The largest row count or weight of any slice."""
        return float(max(self.counts.max(initial=0), self.fields[1].max(initial=0.0)))

    @classmethod
    def of_slices(cls, template: Any, slices: dict[Key, Any]) -> FitPack | None:
        """The pack of per-slice states (each of ``template``'s class and configuration, one
        output, nothing buffered), or None when they do not qualify."""
        if not qualifies(template):
            return None
        kind, shaped = type(template), template._shape
        metrics = list(slices.values())
        for m in metrics:
            if type(m) is not kind or m._pending is not None or m._config != template._config:
                return None
            if m.moments.width != 1 or (shaped and m.shape.width != 1):
                return None
        counts = np.array([m._count for m in metrics], dtype=np.int64)
        fields = _blank_fields(template, len(metrics))
        if metrics:
            fields[0][:] = [m.weight_sq for m in metrics]
            fields[1][:] = [m.moments.weight for m in metrics]
            for j, name in ((2, "hi"), (3, "lo"), (4, "comoment")):
                fields[j][:] = np.stack([getattr(m.moments, name)[:, 0] for m in metrics])
            if shaped:
                fields[5][:] = [m.shape.weight for m in metrics]
                for j, name in ((6, "hi"), (7, "lo"), (8, "moments")):
                    fields[j][:] = np.stack([getattr(m.shape, name)[:, 0] for m in metrics])
        keys = list(slices)
        return cls(template, keys, {key: i for i, key in enumerate(keys)}, counts, tuple(fields))

    def folded(self, stack: Any, codes: np.ndarray, batch_keys: list[Key]) -> FitPack | None:
        """A new pack with the batch in (row ``i`` to slice ``batch_keys[codes[i]]``), or None
        when the stack is not a :class:`FitStack` or the result would pass the bounds (the
        per-slice path then runs, and refuses what it must)."""
        if not isinstance(stack, FitStack):
            return None
        template = self.template
        keys, index, slot = slots(self.keys, self.index, batch_keys)
        size, k = len(keys), len(batch_keys)
        w = stack.w
        rows = np.bincount(codes, minlength=k)
        sums = _Sums(codes, rows)
        bw = rows.astype(np.float64) if w is None else sums(w)
        seen = grown(self.counts, size)[slot] > 0
        held = [_grown_rows(f, size)[slot] for f in self.fields]
        columns = [c.reshape(-1) for c in template._columns(stack.t[:, None], stack.p[:, None])]
        block = template.moments
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            b_hi, b_lo, b_co = moments_batch(columns, block.pairs, codes, bw, w, sums)
            moments = _chan(held[1:5], (bw, b_hi, b_lo, b_co), block.pairs, seen)
            shape = None
            if template._shape:
                e = stack.t - stack.p
                c_hi, c_lo, c_mom = central_batch([e, stack.t], template.shape, codes, bw, w, sums)
                shape = _pebay(held[5:9], (bw, c_hi, c_lo, c_mom), template.shape, seen)
        if not _within(moments, shape, template):
            return None  # (the per-slice path refuses it, naming the argument)
        b_sq = bw if w is None else sums(w * w)
        counts = grown(self.counts, size).copy()
        counts[slot] += rows
        out = [_grown_rows(f, size).copy() for f in self.fields]
        for field, value in zip(out, (held[0] + b_sq, *moments, *(shape or ())), strict=False):
            field[slot] = value
        return FitPack(template, keys, index, counts, tuple(out))

    def materialize(self) -> dict[Key, Any]:
        """One state per slice, in arrival order: what the metric holds after the same
        moments (``_commit``'s fields, set directly)."""
        return dict(zip(self.keys, self._states(range(len(self.keys))), strict=True))

    def state(self, key: Key) -> Any:
        """The state of one slice (``KeyError`` if there is none), made alone."""
        return self._states([self.index[key]])[0]

    def _states(self, rows: Any) -> list[Any]:
        rows = list(rows)
        template = self.template
        metrics = blanks(template, len(rows))
        f = [field.tolist() for field in self.fields[:2]]
        counts = self.counts.tolist()
        for metric, j in zip(metrics, rows, strict=True):
            block = template.moments._empty_like()
            block.weight = f[1][j]
            block.hi, block.lo = self.fields[2][j, :, None], self.fields[3][j, :, None]
            block.comoment = self.fields[4][j, :, None]
            metric.moments, metric.weight_sq, metric._count = block, f[0][j], counts[j]
            if template._shape:
                shape = template.shape._empty_like()
                shape.weight = float(self.fields[5][j])
                shape.hi, shape.lo = self.fields[6][j, :, None], self.fields[7][j, :, None]
                shape.moments = self.fields[8][j, :, None]
                metric.shape = shape
        return metrics

    def wire_states(self) -> list[tuple[Key, Any]]:
        """``(key, state)`` of every slice, sorted by key, each state in canonical form: what
        each made state writes (its fields in sorted order), built from the arrays without
        making the states."""
        f = self.fields
        counts, sq, weight = self.counts.tolist(), f[0].tolist(), f[1].tolist()
        hi, lo, co = (_codec.canonical_rows(a) for a in f[2:5])
        shaped = self.template._shape
        if shaped:
            s_weight = f[5].tolist()
            s_hi, s_lo, s_mom = (_codec.canonical_rows(a) for a in f[6:9])
        out: list[tuple[Key, Any]] = []
        for j in sorted(range(len(self.keys)), key=self.keys.__getitem__):
            moments = {"comoment": co[j], "mean": hi[j], "mean_low": lo[j], "weight": weight[j]}
            state: dict[str, Any] = {"count": counts[j], "moments": moments}
            if shaped:
                state["shape"] = {
                    "mean": s_hi[j],
                    "mean_low": s_lo[j],
                    "moments": s_mom[j],
                    "weight": s_weight[j],
                }
            state["weight_sq"] = sq[j]
            out.append((self.keys[j], state))
        return out

    def computed(self) -> dict[Key, float] | None:
        """``{key: value}`` of every slice at once, equal to the bit to each slice's
        ``compute()`` (R2, explained variance, Pearson with ``uniform_average``, the one
        output's value); None otherwise (the made states compute)."""
        from ..regression._base import _FMAX, _explained, pearson
        from ..regression.fit import ExplainedVariance, PearsonCorrCoef, R2Score

        template = self.template
        kind = type(template)
        if template._config["multioutput"] != "uniform_average":
            return None
        if kind not in (R2Score, ExplainedVariance, PearsonCorrCoef):
            return None
        pairs, index = template.moments.pairs, template._index
        f = self.fields

        def co(a: str, b: str) -> np.ndarray:
            return f[4][:, pairs.index((index[a], index[b]))]

        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            if kind is PearsonCorrCoef:
                values = pearson(
                    co("y_true", "y_true"), co("y_pred", "y_pred"), co("y_true", "y_pred")
                )
            else:
                finite = template._config["force_finite"]
                if kind is R2Score:
                    i = index["sq_error"]
                    num = (f[2][:, i] + f[3][:, i]) * f[1]
                else:
                    num = co("error", "error")
                values = _explained(num, co("y_true", "y_true"), finite)
            values = np.where(np.isneginf(values), values, np.maximum(values, -_FMAX))
        if kind is not ExplainedVariance:
            values[self.counts < 2] = math.nan
        values[f[1] == 0.0] = math.nan
        return dict(zip(self.keys, values.tolist(), strict=True))

    def intervals(self, level: float) -> None:
        """None: each slice's interval comes from its made state."""
        return None


def _blank_fields(template: Any, k: int) -> list[np.ndarray]:
    block = template.moments
    fields = [np.zeros(k), np.zeros(k)]
    fields += [np.zeros((k, block.groups)), np.zeros((k, block.groups))]
    fields.append(np.zeros((k, len(block.pairs))))
    if template._shape:
        shape = template.shape
        fields += [np.zeros(k), np.zeros((k, shape.variables)), np.zeros((k, shape.variables))]
        fields.append(np.zeros((k, len(shape.indices))))
    return fields


def _grown_rows(values: np.ndarray, size: int) -> np.ndarray:
    """``values`` (1-D or 2-D) padded with zero rows to ``size`` rows."""
    if values.ndim == 1:
        return grown(values, size)
    if len(values) == size:
        return values
    out = np.zeros((size, values.shape[1]))
    out[: len(values)] = values
    return out


def _pivot(x: np.ndarray, codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(ref, rows)``: some value of each code's rows, and that value on each row."""
    ref = np.zeros(k)
    ref[codes] = x
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
    sums: _Sums,
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
    sums: _Sums,
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
        pivot, pivots = _pivot(x, codes, k)
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


def _chan(
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


def _pebay(
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


def _within(
    moments: tuple[np.ndarray, ...], shape: tuple[np.ndarray, ...] | None, template: Any
) -> bool:
    """Whether the merged rows are within the bounds of ``Moments`` (and ``CentralMoments``)."""
    weight, hi, lo, co = moments
    with np.errstate(invalid="ignore"):
        if not (
            weight.max() <= WEIGHT_LIMIT
            and np.abs(hi).max() <= MEAN_LIMIT
            and np.abs(lo).max() <= MEAN_LIMIT
            and np.abs(hi + lo).max() <= MEAN_LIMIT
            and np.abs(co).max() <= COMOMENT_LIMIT
        ):
            return False
        if shape is None:
            return True
        _, s_hi, s_lo, s_mom = shape
        return bool(
            np.abs(s_hi).max() <= CENTRAL_MEAN_LIMIT
            and np.abs(s_lo).max() <= CENTRAL_MEAN_LIMIT
            and np.abs(s_hi + s_lo).max() <= CENTRAL_MEAN_LIMIT
            and (np.abs(s_mom) <= template.shape._limits).all()
        )
