"""The slices of a one-loss regression metric held as one table, for ``Sliced``.

``Sliced(MeanSquaredError())`` updated a copy of the metric per slice a batch touched, some
30-50 µs of numpy calls on one-value arrays each: 3.2 M rows/s at 100 slices, 0.33 M at 1,000,
against 280-310 M for the numpy floor (two ``bincount`` per batch). A :class:`MomentsPack` keeps
each slice's moments of the loss in arrays instead (rows, weight, the mean as a double-double
``hi + lo``, the sum of squared deviations, the sum of squared weights), and folds a batch into
every slice at once:

* the batch's moments per slice (:func:`batch_moments`): the shifted sums about zero that the
  metric's own update takes for a large batch, two ``bincount`` over the slice codes, with the
  corrected two-pass algorithm of ``Moments.batch`` for the slices where they would lose
  digits; a slice whose batch losses are all equal gets exactly that value and a zero spread,
  as ``Moments.batch`` gives;
* merged into the held moments by Chan's formula, stepping the mean from the heavier side,
  element for element the operations of :meth:`Moments.plus_values`.

The result per slice is the metric's state over that slice's rows to rounding, not bit for bit
(the metric sums one slice's losses pairwise, ``bincount`` in row order; a float state depends
on its batches' boundaries anyway). It is the same whether the table holds 1 or 100,000
slices: every one-output batch of these metrics takes this path. One state per slice
is made only when something asks for the slices themselves (a merge, an interval,
``sliced[key]``; their bytes are written from the arrays); ``compute`` reads the table
(:meth:`computed`, equal to the bit to each made state's ``compute()``).

Weighted batches are folded the same way (``w x`` and ``w x**2`` summed per slice), with the sums
under the weights squared that the metric keeps for its interval (``wsq_mean``, ``wsq_spread``:
:func:`_wsq_folded`). Batches of several outputs take the per-slice path. A batch the table
cannot take within the bounds of ``Moments`` gives None, and the per-slice path words the
refusal.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _codec
from .._codec import WEIGHT_LIMIT
from ..regression._stack import LossStack
from ..states._shifted import SHIFT_RATIO
from ..states.moments import COMOMENT_LIMIT, MEAN_LIMIT, two_sum
from ..states.stacked import blanks
from ._fit_kernels import moments_batch
from ._packing import ROOM, ArrayPack, Sums, alike, grown, slots

__all__ = ["MOMENTS_PACK_MIN_SLICES", "MomentsPack"]

#: Packed from the first slice, so that a slice's state does not depend on how many slices the
#: table holds (one fold beats the per-slice updates from 2 slices on).
MOMENTS_PACK_MIN_SLICES = 1

Key = Any


def qualifies(template: Any) -> bool:
    """Whether slices of ``template`` can be packed: a one-loss regression metric (MSE, RMSE,
    MAE, MAPE), whose state is one ``Moments`` block of the loss."""
    from ..regression._base import _RegressionMetric

    return (
        isinstance(template, _RegressionMetric)
        and template._one_loss
        and not template._shape
        and type(template).update is _RegressionMetric.update
    )


class MomentsPack(ArrayPack):
    """Every slice's moments of the loss, one array element per slice.

    ``keys[i]`` names slice ``i`` (arrival order); ``counts[i]`` its rows; ``weight``, ``hi``,
    ``lo``, ``comoment`` its ``Moments`` (one variable, one column); ``weight_sq`` its sum of
    squared weights. Never changed in place: an update makes a new pack. ``queue`` is always
    empty (floats are folded batch by batch, in the order the slices' own updates add them).
    """

    def __init__(
        self,
        template: Any,
        keys: list[Key],
        index: dict[Key, int],
        counts: np.ndarray,
        fields: tuple[np.ndarray, ...],
        has_wsq: np.ndarray,
    ) -> None:
        super().__init__(template, keys, index, counts, fields)
        self.weight, self.hi, self.lo, self.comoment, self.weight_sq = fields[:5]
        self.wsq_mean, self.wsq_spread = fields[5:]
        self.has_wsq = has_wsq  # which slices keep wsq_mean and wsq_spread (weighted ones)

    def _fields(self) -> tuple[np.ndarray, ...]:
        return self.fields

    def _weights(self) -> np.ndarray:
        return self.weight

    @classmethod
    def of_slices(cls, template: Any, slices: dict[Key, Any]) -> MomentsPack | None:
        """The pack of per-slice states (each of ``template``'s class and configuration, one
        output, nothing buffered), or None when they do not qualify."""
        metrics = list(slices.values())
        if not (qualifies(template) and alike(template, metrics)):
            return None
        k = len(metrics)
        counts = np.zeros(k, dtype=np.int64)
        fields = tuple(np.zeros(k) for _ in range(7))
        weight, hi, lo, co, sq, wa, wq = fields
        has = np.zeros(k, dtype=bool)
        for i, m in enumerate(metrics):
            block = m.moments
            if block.width not in (None, 1):
                return None
            counts[i], sq[i] = m._count, m.weight_sq
            if block.width is not None:
                weight[i] = block.weight
                hi[i], lo[i], co[i] = block.hi[0, 0], block.lo[0, 0], block.comoment[0, 0]
            if m.wsq_mean.size:
                has[i], wa[i], wq[i] = True, m.wsq_mean[0], m.wsq_spread[0]
        keys = list(slices)
        return cls(template, keys, {key: i for i, key in enumerate(keys)}, counts, fields, has)

    def folded(self, stack: Any, codes: np.ndarray, batch_keys: list[Key]) -> MomentsPack | None:
        """A new pack with the batch in (row ``i`` to slice ``batch_keys[codes[i]]``), or None
        when the stack is not a :class:`LossStack` or the result would pass the bounds of
        ``Moments`` (the per-slice path then runs, and refuses what it must)."""
        if not isinstance(stack, LossStack):
            return None
        keys, index, slot = slots(self.keys, self.index, batch_keys)
        size, k = len(keys), len(batch_keys)
        x, w = stack.x, stack.w
        rows = np.bincount(codes, minlength=k)
        sums = Sums(codes, rows)
        bw = rows.astype(np.float64) if w is None else sums(w)
        b_hi, b_lo, b_co = batch_moments(x, codes, bw, w, sums)
        held = [grown(f, size)[slot] for f in self._fields()]
        a_w, a_hi, a_lo, a_co, a_sq = held[:5]
        # Chan's merge into the held moments (Moments.combined, element for element): a batch
        # of no weight leaves the slice as it was; a slice holding no weight (new, or only
        # zero-weight rows) takes the batch's.
        total = a_w + bw
        delta = (b_hi - a_hi) + (b_lo - a_lo)
        heavier = bw > a_w
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            share = np.where(heavier, a_w, bw) / total
            base_hi = np.where(heavier, b_hi, a_hi)
            base_lo = np.where(heavier, b_lo - delta * share, a_lo + delta * share)
            hi, lo = two_sum(base_hi, base_lo)
            co = (a_co + b_co) + delta * delta * (a_w * (bw / total))
        keep, fresh = bw == 0.0, a_w == 0.0
        hi = np.where(keep, a_hi, np.where(fresh, b_hi, hi))
        lo = np.where(keep, a_lo, np.where(fresh, b_lo, lo))
        co = np.where(keep, a_co, np.where(fresh, b_co, co))
        with np.errstate(invalid="ignore"):
            if not (
                np.abs(hi + lo).max() <= MEAN_LIMIT * ROOM
                and np.abs(hi).max() <= MEAN_LIMIT * ROOM
                and np.abs(lo).max() <= MEAN_LIMIT * ROOM
                and np.abs(co).max() <= COMOMENT_LIMIT * ROOM
                and total.max() <= WEIGHT_LIMIT * ROOM
            ):
                return None  # (the per-slice path refuses it, naming the argument)
        w2 = None if w is None else w * w
        b_sq = bw if w2 is None else sums(w2)
        counts = grown(self.counts, size).copy()
        out = [grown(f, size).copy() for f in self._fields()]
        has = grown(self.has_wsq, size).copy()
        counts[slot] += rows
        for field, value in zip(out, (total, hi, lo, co, a_sq + b_sq), strict=False):
            field[slot] = value
        a_has = has[slot]
        if w is not None or a_has.any():
            seen = grown(self.counts, size)[slot] > 0
            held_wsq = (a_sq, a_hi + a_lo, a_co, *held[5:])
            wsq = _wsq_folded(x, w2, b_sq, held_wsq, a_has, seen, sums)
            applies = (w is not None) | a_has
            out[5][slot] = np.where(applies, wsq[0], held[5])
            out[6][slot] = np.where(applies, wsq[1], held[6])
            has[slot] = a_has | (applies & (seen | (b_sq > 0.0)))
        return MomentsPack(self.template, keys, index, counts, tuple(out), has)

    def materialize(self) -> dict[Key, Any]:
        """One state per slice, in arrival order: what the metric holds after the same
        moments (``_commit``'s fields, set directly)."""
        metrics = blanks(self.template, len(self.keys))
        block = self.template.moments
        values = zip(
            metrics,
            self.counts.tolist(),
            self.weight.tolist(),
            self.hi.tolist(),
            self.lo.tolist(),
            self.comoment.tolist(),
            self.weight_sq.tolist(),
            strict=True,
        )
        for metric, count, w, h, low, c, sq in values:
            metric.moments = block.of_values(w, h, low, c)
            metric.weight_sq = sq
            metric._count = count
        for j in np.flatnonzero(self.has_wsq).tolist():
            metrics[j].wsq_mean = self.wsq_mean[j : j + 1].copy()
            metrics[j].wsq_spread = self.wsq_spread[j : j + 1].copy()
        return dict(zip(self.keys, metrics, strict=True))

    def state(self, key: Key) -> Any:
        """The state of one slice (``KeyError`` if there is none), made alone."""
        j = self.index[key]
        metric = blanks(self.template, 1)[0]
        metric.moments = self.template.moments.of_values(
            float(self.weight[j]), float(self.hi[j]), float(self.lo[j]), float(self.comoment[j])
        )
        metric.weight_sq = float(self.weight_sq[j])
        metric._count = int(self.counts[j])
        if self.has_wsq[j]:
            metric.wsq_mean = self.wsq_mean[j : j + 1].copy()
            metric.wsq_spread = self.wsq_spread[j : j + 1].copy()
        return metric

    def wire_states(self) -> list[tuple[Key, Any]]:
        """``(key, state)`` of every slice, sorted by key, each state in canonical form: what
        each made state writes (``count``, ``moments``, ``weight_sq``, ``wsq_mean``,
        ``wsq_spread``, in sorted order), built from the arrays without making the states
        (100,000 slices: 3.5 s through made states)."""
        empty = _codec.canonical_array(np.zeros(0))
        counts, weight, sq = self.counts.tolist(), self.weight.tolist(), self.weight_sq.tolist()
        hi, lo, co = (
            _codec.canonical_singles(a, (1, 1)) for a in (self.hi, self.lo, self.comoment)
        )
        wsq_mean = _codec.canonical_singles(self.wsq_mean, (1,))
        wsq_spread = _codec.canonical_singles(self.wsq_spread, (1,))
        has = self.has_wsq.tolist()
        out: list[tuple[Key, Any]] = []
        for j in sorted(range(len(self.keys)), key=self.keys.__getitem__):
            moments = {"comoment": co[j], "mean": hi[j], "mean_low": lo[j], "weight": weight[j]}
            state = {
                "count": counts[j],
                "moments": moments,
                "weight_sq": sq[j],
                "wsq_mean": wsq_mean[j] if has[j] else empty,
                "wsq_spread": wsq_spread[j] if has[j] else empty,
            }
            out.append((self.keys[j], state))
        return out

    def computed(self) -> dict[Key, float] | None:
        """``{key: value}`` of every slice at once, equal to the bit to each slice's
        ``compute()`` (the mean loss, its root for RMSE; nan for a slice of zero weight); None
        for other ``multioutput`` settings."""
        from ..regression.errors import RootMeanSquaredError

        if self.template._config["multioutput"] != "uniform_average":
            return None
        with np.errstate(invalid="ignore"):
            # (+ 0.0: a mean of -0.0, which a forged state may hold, is 0.0 averaged, as the
            # metric's own compute() averages its outputs: a review of 0.8.22)
            values = self.hi + self.lo + 0.0
            if type(self.template) is RootMeanSquaredError:
                values = np.sqrt(values)
        values[self.weight == 0.0] = math.nan
        return dict(zip(self.keys, values.tolist(), strict=True))

    def intervals(self, level: float) -> dict[Key, tuple[float, float]] | None:
        """``{key: interval(level)}`` of every slice (``level`` checked): each slice's
        ``loss_interval``, what each made state's ``interval()`` computes, without making the
        states; None for ``raw_values`` (whose states refuse). (``Sliced`` asks a table of the
        library's own classes only.) As array operations (``_intervals.t_intervals``), equal to
        the bit to each slice's own."""
        from .._intervals import kishes, t_intervals
        from ..regression.errors import RootMeanSquaredError

        if self.template._config["multioutput"] == "raw_values":
            return None
        means = self.hi + self.lo
        w, sq = self.weight, self.weight_sq
        with np.errstate(all="ignore"):
            n_eff = kishes(w, sq)
            spread = self.comoment / w  # Kish's rule
            use = np.flatnonzero(self.has_wsq & np.isfinite(self.wsq_mean))
            if len(use):
                # The linearised variance where it is known: ``(a - m) ** 2`` squared by
                # Python's ``**`` (libm's ``pow``, which ``x * x`` may round otherwise).
                gap = (self.wsq_mean[use] - means[use]).tolist()
                squared = np.array([v**2 for v in gap], dtype=np.float64)
                dev = self.wsq_spread[use] + sq[use] * squared
                alt = n_eff[use] * dev / (w[use] * w[use])
                spread[use] = np.where(alt > spread[use], alt, spread[use])  # max(spread, alt)
            low, high = t_intervals(means, spread, n_eff, level)
        empty = ~(w > 0)
        low[empty], high[empty] = math.nan, math.nan
        if type(self.template) is RootMeanSquaredError:
            low, high = np.sqrt(low), np.sqrt(high)
        return dict(zip(self.keys, zip(low.tolist(), high.tolist(), strict=True), strict=True))


def batch_moments(
    x: np.ndarray, codes: np.ndarray, m: np.ndarray, w: np.ndarray | None, sums: Sums
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(hi, lo, comoment)`` of the values ``x`` of each code, weighted by ``w`` (None: 1
    each; ``m[c]``: the weight of code ``c``'s rows): the mean as ``hi + lo`` and the weighted
    sum of squared deviations. Zeros for a code of no weight.

    The shifted sums about zero that the metric's own update takes for a large batch of one
    loss (``one_loss_values``: ``s = sum w x / m``, ``C = sum w x**2 - m s**2``), two
    ``bincount`` for every code at once. Their result stands where ``m s**2 <= SHIFT_RATIO * C``
    (a spread not too small against the mean, so that few digits cancel), as there; the other
    codes (nearly constant losses) are summed again by the corrected two-pass of
    ``Moments.batch`` (``_fit_kernels.moments_batch``: a code whose values are all equal gets
    exactly that value and a zero spread)."""
    k = len(m)
    wx = x if w is None else w * x
    with np.errstate(invalid="ignore", divide="ignore"):
        shift = 0.0 + sums(wx) / m
        co = sums(wx * x) - m * shift * shift
        np.maximum(co, 0.0, out=co)
        bad = ~(m * (shift * shift) <= SHIFT_RATIO * co)
    lo = np.zeros(k)
    # (Losses whose squares underflow, below about 1.5e-162, pass the guard as 0 <= 0: the
    # two-pass tells a constant slice, which it keeps exact, from a spread one.)
    bad |= (co == 0.0) & (shift != 0.0)
    bad &= m > 0.0
    if bad.any():
        keep = bad[codes]
        sub, sub_w = codes[keep], None if w is None else w[keep]
        sub_sums = Sums(sub, np.bincount(sub, minlength=k))
        with np.errstate(invalid="ignore", divide="ignore"):
            fixed = moments_batch([x[keep]], ((0, 0),), sub, m, sub_w, sub_sums)
        shift[bad], lo[bad], co[bad] = (f[bad, 0] for f in fixed)
    empty = m == 0.0
    if empty.any():
        shift[empty], co[empty] = 0.0, 0.0
    return shift, lo, co


def _wsq_folded(
    x: np.ndarray,
    w2: np.ndarray | None,
    s2: np.ndarray,
    held: tuple[np.ndarray, ...],
    has: np.ndarray,
    seen: np.ndarray,
    sums: Sums,
) -> tuple[np.ndarray, np.ndarray]:
    """``(wsq_mean, wsq_spread)`` of each batch code's slice after the batch: the loss's mean and
    spread under the weights squared (``w2``, None: 1 each; ``s2`` their sums per code; ``sums``
    the batch's per-code sums), merged
    by Chan's formula into the held ones (``regression._wsq``: ``wsq_batch`` then
    ``wsq_merged``, element for element). ``held`` is each slice's ``(weight_sq, mean,
    comoment, wsq_mean, wsq_spread)``, ``has`` whether it keeps the last two and ``seen``
    whether it holds rows; a slice without them contributes its moments' (as ``_wsq()`` reads
    them), an empty one nothing.
    Non-finite results are nan, as there."""
    sq, mean, co, wa, wq = held
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        a2 = sums(x if w2 is None else w2 * x) / s2
        d2 = x - a2[sums.codes]
        sq_dev = d2 * d2
        q2 = sums(sq_dev if w2 is None else w2 * sq_dev)
        a1, q1 = np.where(has, wa, mean), np.where(has, wq, co)
        total = sq + s2
        d = a2 - a1
        a = np.where(s2 > sq, a2 - d * (sq / total), a1 + d * (s2 / total))
        q = q1 + q2 + d * d * (sq * s2 / total)
    a = np.where(s2 == 0.0, a1, np.where(seen, a, a2))
    q = np.where(s2 == 0.0, q1, np.where(seen, q, q2))
    bad = ~(np.isfinite(a) & np.isfinite(q))
    return np.where(bad, math.nan, a), np.where(bad, math.nan, q)
