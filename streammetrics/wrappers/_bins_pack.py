"""The slices of the calibration error held as one table, for ``Sliced``.

``CalibrationError``'s state is three float arrays of ``bins`` sums (each bin's weight,
summed confidence and summed hits), its row count and its number of probability columns.
``Sliced(CalibrationError())`` updated a copy per slice a batch touched (0.36 M rows/s over
1,000 slices); a :class:`BinsPack` keeps one ``(slices, bins)`` array per sum instead, and adds
a batch with one ``np.bincount`` per sum over the (slice, bin) cells.

Each cell's sum is the per-slice update's to the bit: ``np.bincount`` adds a cell's rows in row
order from zero whether the cells are a slice's bins or every slice's, and the held sums are
added element by element, as the slice's update adds them. ``compute()`` reads the table, each
slice by :func:`~streammetrics.classification.reliability.calibration_error` on a copy of its
rows (what its own state computes on); states are made for a merge or ``sliced[key]``, and
bytes are written from the arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _codec
from .._codec import WEIGHT_LIMIT
from ..states.stacked import blanks
from ._packing import ROOM, Sums, alike, grown, slots
from ._sum_pack import ColumnsPack

__all__ = ["BINS_PACK_MIN_SLICES", "BinsPack"]

#: Packed from the first slice, as the other float tables.
BINS_PACK_MIN_SLICES = 1

Key = Any

_SUMS = ("weight", "confidence", "outcome")


def qualifies(template: Any) -> bool:
    """Whether slices of ``template`` can be packed: a ``CalibrationError`` of the base
    update."""
    from ..classification.reliability import CalibrationError

    return isinstance(template, CalibrationError) and (
        type(template).update is CalibrationError.update
    )


class BinsPack(ColumnsPack):
    """Every slice's bin sums, one row per slice: ``fields`` are the ``(weight, confidence,
    outcome)`` tables, each ``(slices, bins)``."""

    def _weights(self) -> np.ndarray:
        out: np.ndarray = self.fields[0].sum(axis=1)
        return out

    @classmethod
    def of_slices(cls, template: Any, slices: dict[Key, Any]) -> BinsPack | None:
        """The pack of per-slice states (each of ``template``'s class and configuration,
        nothing buffered), or None when they do not qualify."""
        metrics = list(slices.values())
        if not (qualifies(template) and alike(template, metrics)):
            return None
        bins = template._config["bins"]
        counts = np.array([m._count for m in metrics], dtype=np.int64)
        columns = np.array([m.columns for m in metrics], dtype=np.int64)
        sums = tuple(
            np.array([getattr(m, name) for m in metrics], dtype=np.float64).reshape(-1, bins)
            for name in _SUMS
        )
        keys = list(slices)
        return cls(template, keys, {k: i for i, k in enumerate(keys)}, counts, columns, sums)

    def folded(self, stack: Any, codes: np.ndarray, batch_keys: list[Key]) -> BinsPack | None:
        """A new pack with the batch in (row ``i`` to slice ``batch_keys[codes[i]]``), or None
        when the stack is not a ``BinStack``, a touched slice holds rows of another number of
        columns, or a slice's weight would come near its bound (the per-slice path then
        refuses what it must, naming the argument)."""
        from ..classification._loss_stack import BinStack

        if not isinstance(stack, BinStack):
            return None
        keys, index, slot = slots(self.keys, self.index, batch_keys)
        size, k = len(keys), len(batch_keys)
        if not self._columns_held(slot, stack.columns):
            return None
        bins = self.template._config["bins"]
        w = stack.w
        held = [grown(f, size)[slot] for f in self.fields]
        if w is not None:
            rows = np.bincount(codes, minlength=k)
            with np.errstate(over="ignore", invalid="ignore"):
                total = held[0].sum(axis=1) + Sums(codes, rows)(w)
            if not (total <= WEIGHT_LIMIT * ROOM).all():
                return None
        cells = codes * bins + stack.bins
        n_cells = k * bins
        count = np.bincount(cells, weights=w, minlength=n_cells).astype(np.float64)
        cw = stack.x if w is None else stack.x * w
        hw = stack.hit if w is None else stack.hit * w
        batch = (
            count,
            np.bincount(cells, weights=cw, minlength=n_cells),
            np.bincount(cells, weights=hw, minlength=n_cells),
        )
        new = [a + b.reshape(k, bins) for a, b in zip(held, batch, strict=True)]
        out: BinsPack = self._with(
            keys, index, slot, np.bincount(codes, minlength=k), stack.columns, new
        )
        return out

    def _states(self, rows: Any) -> list[Any]:
        at = np.asarray(list(rows), dtype=np.intp)
        metrics = blanks(self.template, len(at))
        counts, columns = self.counts[at].tolist(), self.columns[at].tolist()
        picked = [f[at] for f in self.fields]
        for i, metric in enumerate(metrics):
            for name, table in zip(_SUMS, picked, strict=True):
                setattr(metric, name, table[i].copy())
            metric.columns, metric._count = columns[i], counts[i]
        return metrics

    def wire_states(self) -> list[tuple[Key, Any]]:
        """``(key, state)`` of every slice, sorted by key, each state in canonical form (its
        fields in sorted order, as each made state writes them), built from the arrays."""
        bins = self.template._config["bins"]
        weight, confidence, outcome = (_codec.canonical_rows(f, (bins,)) for f in self.fields)
        counts, columns = self.counts.tolist(), self.columns.tolist()
        out: list[tuple[Key, Any]] = []
        for j in sorted(range(len(self.keys)), key=self.keys.__getitem__):
            state = {
                "columns": columns[j],
                "confidence": confidence[j],
                "count": counts[j],
                "outcome": outcome[j],
                "weight": weight[j],
            }
            out.append((self.keys[j], state))
        return out

    def computed(self) -> dict[Key, float] | None:
        """``{key: compute()}`` of every slice, each by ``calibration_error`` on copies of its
        rows: the operations its own state's ``compute()`` makes, on equal arrays."""
        from ..classification.reliability import calibration_error

        norm = self.template._config["norm"]
        weight, confidence, outcome = self.fields
        out = []
        with np.errstate(all="ignore"):  # (as compute(): a forged state may hold huge sums)
            for j in range(len(self.keys)):
                value = calibration_error(
                    weight[j].copy(), confidence[j].copy(), outcome[j].copy(), norm
                )
                out.append(value)
        return dict(zip(self.keys, out, strict=True))

    def intervals(self, level: float) -> None:
        """None: the calibration error has no closed-form interval (its states say so)."""
        return None
