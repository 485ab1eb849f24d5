"""The slices of log loss or the Brier score held as one table, for ``Sliced``.

``Sliced(LogLoss())`` updated a copy of the metric per slice a batch touched: some 40-50 µs of
numpy calls on a few rows each, 0.2 M rows/s over 100,000 slices. The metric's state is six
running float sums of its per-row loss (``sum w``, ``sum w l``, ``sum w l**2`` and the same
under the weights squared), its row count and its number of probability columns, so a
:class:`SumPack` keeps one array per field, one element per slice, and folds a batch into every
slice at once: the losses computed once for the whole batch (``_loss_stack``), then one
``bincount`` per sum over the slice codes (summed pairwise for a slice of more than 4,096 rows,
``_packing.Sums``), added to the held sums.

The result per slice is the metric's state over that slice's rows to rounding, not bit for bit
(the metric sums a slice's losses pairwise, ``bincount`` in row order), as for the moment
tables. ``compute`` and ``intervals`` read the table, each value equal to the bit to what the
made state's ``compute()`` and ``interval()`` give; states are made for a merge or
``sliced[key]``, and bytes are written from the arrays.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._codec import WEIGHT_LIMIT
from ..states.stacked import blanks
from ._packing import ROOM, ArrayPack, Sums, alike, grown, slots

__all__ = ["SUM_PACK_MIN_SLICES", "ColumnsPack", "SumPack"]

#: Packed from the first slice, as the moment tables: a slice's state does not depend on how
#: many slices the table holds.
SUM_PACK_MIN_SLICES = 1

Key = Any

#: The float fields, in the order the table keeps them (``fields[i]``), and the wire's order of
#: every state field (sorted by name, as the codec writes a map).
FIELDS = ("weight_sum", "loss_sum", "loss_sq_sum", "weight_sq", "loss_wsq", "loss_sq_wsq")
_WIRE = tuple(sorted(("columns", "count", *FIELDS)))


def qualifies(template: Any) -> bool:
    """Whether slices of ``template`` can be packed: a ``LogLoss`` or ``BrierScore`` (a running
    sum of one per-row loss) of the base update."""
    from ..classification.calibration import _SumMetric

    return isinstance(template, _SumMetric) and type(template).update is _SumMetric.update


class ColumnsPack(ArrayPack):
    """A table of the probability metrics (log loss, the Brier score, the calibration error):
    ``keys[i]`` names slice ``i`` (arrival order); ``counts[i]`` its rows; ``columns[i]`` its
    probability columns (0: 1-D; -1 never, a stored slice has rows); ``fields`` its float sums
    (one array per field, a row or an element per slice). Never changed in place: an update
    makes a new pack."""

    def __init__(
        self,
        template: Any,
        keys: list[Key],
        index: dict[Key, int],
        counts: np.ndarray,
        columns: np.ndarray,
        fields: tuple[np.ndarray, ...],
    ) -> None:
        super().__init__(template, keys, index, counts, fields)
        self.columns = columns

    def _columns_held(self, slot: np.ndarray, columns: int) -> bool:
        """Whether every held slice a batch touches (at ``slot``) took rows of ``columns``
        columns (the per-slice path refuses the batch otherwise, naming ``y_prob``)."""
        held = self.columns[slot[slot < len(self.columns)]]
        return not len(held) or bool((held == columns).all())

    def _with(
        self,
        keys: list[Key],
        index: dict[Key, int],
        slot: np.ndarray,
        rows: np.ndarray,
        columns: int,
        fields: list[np.ndarray],
    ) -> Any:
        """A new table of the same kind: the slices at ``slot`` count ``rows`` more rows of
        ``columns`` columns and hold ``fields[j]`` (their new values of field ``j``)."""
        size = len(keys)
        counts = grown(self.counts, size).copy()
        counts[slot] += rows
        held_columns = grown(self.columns, size).copy()
        held_columns[slot] = columns
        out = []
        for old, new in zip(self.fields, fields, strict=True):
            table = grown(old, size).copy()
            table[slot] = new
            out.append(table)
        return type(self)(self.template, keys, index, counts, held_columns, tuple(out))


class SumPack(ColumnsPack):
    """Every slice's sums, one array element per slice, in :data:`FIELDS` order."""

    def _weights(self) -> np.ndarray:
        return self.fields[0]

    @classmethod
    def of_slices(cls, template: Any, slices: dict[Key, Any]) -> SumPack | None:
        """The pack of per-slice states (each of ``template``'s class and configuration,
        nothing buffered), or None when they do not qualify."""
        metrics = list(slices.values())
        if not (qualifies(template) and alike(template, metrics)):
            return None
        counts = np.array([m._count for m in metrics], dtype=np.int64)
        columns = np.array([m.columns for m in metrics], dtype=np.int64)
        fields = tuple(
            np.array([getattr(m, name) for m in metrics], dtype=np.float64) for name in FIELDS
        )
        keys = list(slices)
        return cls(template, keys, {k: i for i, k in enumerate(keys)}, counts, columns, fields)

    def folded(self, stack: Any, codes: np.ndarray, batch_keys: list[Key]) -> SumPack | None:
        """A new pack with the batch in (row ``i`` to slice ``batch_keys[codes[i]]``), or None
        when the stack is not a ``SumStack``, a touched slice holds rows of another number of
        columns, or a slice's weight would pass its bound (the per-slice path then refuses
        the batch, naming the argument)."""
        from ..classification._loss_stack import SumStack

        if not isinstance(stack, SumStack):
            return None
        keys, index, slot = slots(self.keys, self.index, batch_keys)
        size, k = len(keys), len(batch_keys)
        if not self._columns_held(slot, stack.columns):
            return None
        x, w = stack.x, stack.w
        rows = np.bincount(codes, minlength=k)
        sums = Sums(codes, rows)
        sq = x * x
        with np.errstate(over="ignore", invalid="ignore"):
            if w is None:
                weight = rows.astype(np.float64)
                total, sq_total = sums(x), sums(sq)
                batch = (weight, total, sq_total, weight, total, sq_total)
            else:
                w2 = w * w
                weight = sums(w)
                batch = (weight, sums(x * w), sums(sq * w), sums(w2), sums(x * w2), sums(sq * w2))
            held = [grown(f, size)[slot] for f in self.fields]
            new = [a + b for a, b in zip(held, batch, strict=True)]
        if not (new[0] <= WEIGHT_LIMIT * ROOM).all():
            return None  # (past the bound, or not finite: the per-slice path names it)
        out: SumPack = self._with(keys, index, slot, rows, stack.columns, new)
        return out

    def _states(self, rows: Any) -> list[Any]:
        at = np.asarray(list(rows), dtype=np.intp)
        metrics = blanks(self.template, len(at))
        counts, columns = self.counts[at].tolist(), self.columns[at].tolist()
        values = [f[at].tolist() for f in self.fields]
        for i, metric in enumerate(metrics):
            for name, column in zip(FIELDS, values, strict=True):
                setattr(metric, name, column[i])
            metric.columns, metric._count = columns[i], counts[i]
        return metrics

    def wire_states(self) -> list[tuple[Key, Any]]:
        """``(key, state)`` of every slice, sorted by key, each state in canonical form (its
        fields in sorted order, as each made state writes them), built from the arrays."""
        by_name = dict(zip(FIELDS, (f.tolist() for f in self.fields), strict=True))
        by_name["columns"], by_name["count"] = self.columns.tolist(), self.counts.tolist()
        columns = [by_name[name] for name in _WIRE]
        out: list[tuple[Key, Any]] = []
        for j in sorted(range(len(self.keys)), key=self.keys.__getitem__):
            out.append((self.keys[j], {name: c[j] for name, c in zip(_WIRE, columns, strict=True)}))
        return out

    def _scales(self) -> np.ndarray:
        """Each slice's factor between its mean loss and its value (``_scale``: the Brier
        score of two columns is halved)."""
        from ..classification.calibration import BrierScore

        if isinstance(self.template, BrierScore):
            return np.where(self.columns == 2, 0.5, 1.0)
        return np.ones(len(self.keys))

    def computed(self) -> dict[Key, float] | None:
        """``{key: value}`` of every slice at once, equal to the bit to each made state's
        ``compute()`` (``loss_sum / weight_sum * scale``; nan for a slice of zero weight)."""
        weight, loss = self.fields[0], self.fields[1]
        with np.errstate(invalid="ignore", divide="ignore"):
            values = loss / weight * self._scales()
        values[~(weight > 0)] = math.nan
        return dict(zip(self.keys, values.tolist(), strict=True))

    def intervals(self, level: float) -> dict[Key, tuple[float, float]] | None:
        """``{key: interval(level)}`` of every slice (``level`` already checked): each slice's
        ``mean_interval``, as array operations (``_intervals.mean_intervals``), equal to the bit
        to what each made state's ``interval()`` computes."""
        from .._intervals import mean_intervals

        weight, loss, squares, weight_sq, l_wsq, sq_wsq = self.fields
        known = ~(np.isnan(l_wsq) | np.isnan(sq_wsq))
        low, high = mean_intervals(
            weight, loss, squares, weight_sq, level, wsq=(known, l_wsq, sq_wsq)
        )
        scales = self._scales()
        pairs = zip((low * scales).tolist(), (high * scales).tolist(), strict=True)
        return dict(zip(self.keys, pairs, strict=True))
