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
equal to the bit to each made state's ``compute()`` for ``uniform_average``), and so do
``intervals`` (:meth:`FitPack.intervals`); states are made for a merge or ``sliced[key]``, and
bytes are written from the arrays. Batches of
several outputs, and batches the bounds refuse, take the per-slice path.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from .. import _codec
from ..regression._stack import FitStack
from ..states.stacked import blanks
from ._fit_kernels import central_batch, chan, moments_batch, pebay, within
from ._packing import ArrayPack, Sums, alike, grown, slots

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


class FitPack(ArrayPack):
    """Every slice's regression state, one array row per slice.

    ``keys[i]`` names slice ``i`` (arrival order); ``counts[i]`` its rows; ``fields`` holds
    ``weight_sq`` (k,), the moments' ``weight`` (k,), ``hi``, ``lo`` (k, groups), ``comoment``
    (k, pairs) and, for a metric with ``shape``, its ``weight`` (k,), ``hi``, ``lo`` (k, 2) and
    ``moments`` (k, indices). Never changed in place: an update makes a new pack.
    """

    def _weights(self) -> np.ndarray:
        return self.fields[1]

    @classmethod
    def of_slices(cls, template: Any, slices: dict[Key, Any]) -> FitPack | None:
        """The pack of per-slice states (each of ``template``'s class and configuration, one
        output, nothing buffered), or None when they do not qualify."""
        shaped = template._shape
        metrics = list(slices.values())
        if not (qualifies(template) and alike(template, metrics)):
            return None
        for m in metrics:
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
        sums = Sums(codes, rows)
        bw = rows.astype(np.float64) if w is None else sums(w)
        seen = grown(self.counts, size)[slot] > 0
        held = [grown(f, size)[slot] for f in self.fields]
        columns = [c.reshape(-1) for c in template._columns(stack.t[:, None], stack.p[:, None])]
        block = template.moments
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            b_hi, b_lo, b_co = moments_batch(columns, block.pairs, codes, bw, w, sums)
            moments = chan(held[1:5], (bw, b_hi, b_lo, b_co), block.pairs, seen)
            shape = None
            if template._shape:
                e = stack.t - stack.p
                c_hi, c_lo, c_mom = central_batch([e, stack.t], template.shape, codes, bw, w, sums)
                shape = pebay(held[5:9], (bw, c_hi, c_lo, c_mom), template.shape, seen)
        if not within(moments, shape, template):
            return None  # (the per-slice path refuses it, naming the argument)
        b_sq = bw if w is None else sums(w * w)
        counts = grown(self.counts, size).copy()
        counts[slot] += rows
        out = [grown(f, size).copy() for f in self.fields]
        for field, value in zip(out, (held[0] + b_sq, *moments, *(shape or ())), strict=False):
            field[slot] = value
        return FitPack(template, keys, index, counts, tuple(out))

    def _states(self, rows: Any) -> list[Any]:
        """The made states of the slices at ``rows``. Their arrays are rows of copies taken
        here (one per field), never views of the pack's: a state may be changed in place."""
        at = np.asarray(list(rows), dtype=np.intp)
        template = self.template
        metrics = blanks(template, len(at))
        sq, weight, counts = (a[at].tolist() for a in (*self.fields[:2], self.counts))
        hi, lo, co = (a[at][:, :, None] for a in self.fields[2:5])
        if template._shape:
            s_weight = self.fields[5][at].tolist()
            s_hi, s_lo, s_mom = (a[at][:, :, None] for a in self.fields[6:9])
        for i, metric in enumerate(metrics):
            block = template.moments._empty_like()
            block.weight, block.hi, block.lo, block.comoment = weight[i], hi[i], lo[i], co[i]
            metric.moments, metric.weight_sq, metric._count = block, sq[i], counts[i]
            if template._shape:
                shape = template.shape._empty_like()
                shape.weight, shape.hi, shape.lo = s_weight[i], s_hi[i], s_lo[i]
                shape.moments = s_mom[i]
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
        values = self._values()
        return None if values is None else dict(zip(self.keys, values.tolist(), strict=True))

    def _values(self) -> np.ndarray | None:
        from ..regression._formulas import _FMAX, _explained, pearson
        from ..regression.fit import ExplainedVariance, PearsonCorrCoef, R2Score

        template = self.template
        kind = type(template)
        if template._config["multioutput"] != "uniform_average":
            return None
        if kind not in (R2Score, ExplainedVariance, PearsonCorrCoef):
            return None
        f = self.fields
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            if kind is PearsonCorrCoef:
                tt, pp, tp = (self._co(a, b) for a, b in (("t", "t"), ("p", "p"), ("t", "p")))
                values = pearson(tt, pp, tp)
            else:
                finite = template._config["force_finite"]
                if kind is R2Score:
                    i = template._index["sq_error"]
                    num = (f[2][:, i] + f[3][:, i]) * f[1]
                else:
                    num = self._co("e", "e")
                values = _explained(num, self._co("t", "t"), finite)
            values = np.where(np.isneginf(values), values, np.maximum(values, -_FMAX))
        if kind is not ExplainedVariance:
            values[self.counts < 2] = math.nan
        values[f[1] == 0.0] = math.nan
        return values

    def _co(self, a: str, b: str) -> np.ndarray:
        """Every slice's co-moment of the variables ``a``, ``b`` ("t" ``y_true``, "p"
        ``y_pred``, "e" the error)."""
        names = {"t": "y_true", "p": "y_pred", "e": "error"}
        index, pairs = self.template._index, self.template.moments.pairs
        return self.fields[4][:, pairs.index((index[names[a]], index[names[b]]))]

    def intervals(self, level: float) -> dict[Key, tuple[float, float]] | None:
        """``{key: interval(level)}`` of every slice at once, equal to the bit to each slice's
        own (``level`` already checked): the delta method's standard error of R2 and explained
        variance (``uncertainty.explained_delta_se``) and Kish's size as array operations, the
        same operations on IEEE doubles, then each slice's ``normal_interval`` or
        ``fisher_z`` on its floats. None where :meth:`computed` gives none."""
        from ..regression.fit import PearsonCorrCoef
        from ..uncertainty import NAN_INTERVAL, fisher_z, normal_interval

        values = self._values()
        if values is None:
            return None
        f = self.fields
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            n_eff = np.where(f[0] >= sys.float_info.min, f[1] / f[0] * f[1], 0.0)  # kish()
        few = (self.counts < (1 if type(self.template) is PearsonCorrCoef else 2)).tolist()
        n_list, v_list = n_eff.tolist(), values.tolist()
        if type(self.template) is PearsonCorrCoef:
            out = [
                NAN_INTERVAL if no else fisher_z(v, n, level)
                for no, v, n in zip(few, v_list, n_list, strict=True)
            ]
        else:
            se = self._delta_se(n_eff).tolist()
            out = [
                NAN_INTERVAL if no else normal_interval(v, e, level, (-math.inf, 1.0))
                for no, v, e in zip(few, v_list, se, strict=True)
            ]
        return dict(zip(self.keys, out, strict=True))

    def _delta_se(self, n_eff: np.ndarray) -> np.ndarray:
        """``explained_delta_se`` of every slice, operation for operation on arrays."""
        from ..regression.fit import R2Score
        from ..uncertainty import _SMALLEST_NORMAL, TWO_ROWS

        f = self.fields
        weight, mom = f[5], f[8]
        position = {k: i for i, k in enumerate(self.template.shape.indices)}
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            m = {k: mom[:, i] / weight for k, i in position.items()}
            d = f[6][:, 0] + f[7][:, 0]  # the error's mean
            b = m[(0, 2)]
            var_u = m[(0, 4)] - b * b
            m20 = m[(2, 0)]
            if type(self.template) is R2Score:
                a = m20 + d * d
                var_s = m[(4, 0)] - m20 * m20 + 4 * d * m[(3, 0)] + 4 * d * d * m20
                cov = m[(2, 2)] - m20 * b + 2 * d * m[(1, 2)]
            else:
                a = m20
                var_s = m[(4, 0)] - a * a
                cov = m[(2, 2)] - a * b
            k = a / b
            var = (var_s + k * k * var_u - 2 * k * cov) / (b * b * n_eff)
            se = np.sqrt(np.where(0.0 > var, 0.0, var))  # max(var, 0.0)
            known = (n_eff >= TWO_ROWS) & (weight > 0) & (b * b >= _SMALLEST_NORMAL)
        return np.where(known & np.isfinite(var), se, math.nan)


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
