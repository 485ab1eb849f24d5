"""The moments of one large batch, chunk by chunk, by the shifted-data algorithm.

:meth:`Moments.batch <streammetrics.states.moments.Moments.batch>` is the two-pass kernel: per
chunk, a rough mean, a min/max pass (so that a constant column has exactly zero variance) and
the corrected two-pass co-moment, then one block per chunk, folded into the next. For a batch of
many chunks, :class:`ShiftedSums` does less: every column is taken as deviations from its first
value ``K`` (from zero for non-negative losses: no deviation pass at all), and the sums
``S1 = sum w (x - K)`` and ``S2 = sum w (x - K)(y - L)`` simply add up across chunks. At the
end, with ``s = S1 / W``, the mean is ``K + s`` (kept as a double-double, as the block does)
and the co-moment ``S2 - W s_x s_y``.

Exact where the two-pass kernel is: a constant column deviates by exactly zero. The rounding
of a co-moment ``C`` is the two-pass kernel's times ``1 + W s**2 / C``: :meth:`result` returns
``None`` when that factor passes ``1 + SHIFT_RATIO`` for any variance (a first value more than
four standard deviations from the mean, or a loss whose spread is under a quarter of its mean),
and the caller then runs the two-pass kernel.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .moments import Moments, _rows_of, _scratch, two_sum

__all__ = [
    "SHIFTED_MIN_ROWS",
    "SHIFT_RATIO",
    "ShiftedSums",
    "one_loss_block",
    "one_loss_values",
]

#: Batches of at least this many rows take :class:`ShiftedSums`; smaller ones, where a call's
#: fixed cost dominates, keep the two-pass kernel (and the bytes they always had).
SHIFTED_MIN_ROWS = 4096
#: The result stands while ``W s**2 <= SHIFT_RATIO * C`` for every variance ``C``.
SHIFT_RATIO = 16.0


class ShiftedSums:
    """Accumulates one batch of ``block``'s layout, ``width`` columns per group.

    Usable only when every paired group has its variance among the pairs (``usable``): the
    check of :meth:`result` needs it.
    """

    def __init__(self, block: Moments, width: int, at_zero: frozenset[int] = frozenset()) -> None:
        self.block = block
        #: Groups taken as they are (``K = 0``, no deviation pass): non-negative losses, whose
        #: spread is of the order of their mean (the check of :meth:`result` still applies).
        self.at_zero = at_zero
        self.pairs = block.pairs
        self.paired = {g for pair in block.pairs for g in pair}
        self.usable = self.paired <= {g for g, h in block.pairs if g == h}
        self.first: list[np.ndarray | None] = [None] * block.groups
        self.sums = np.zeros((block.groups, width))
        self.products = np.zeros((len(block.pairs), width))
        self.total = 0.0
        pairs = np.array(block.pairs, dtype=np.intp).reshape(-1, 2)
        self._pair_index = pairs[:, 0], pairs[:, 1]
        #: One loss taken at zero and its variance (MSE, MAE, MAPE): a scalar :meth:`result`.
        self.one_loss = block.groups == 1 and tuple(block.pairs) == ((0, 0),) and at_zero == {0}

    def add(self, columns: Sequence[np.ndarray], weights: np.ndarray | None, scratch: bool) -> None:
        """Add one chunk: one (m, width) float64 array per group, ``m`` weights or ``None``.
        With ``scratch`` (``m * width <= CHUNK``) the temporaries are this thread's scratch."""
        width = columns[0].shape[1]
        dev: dict[int, np.ndarray] = {}
        for g, column in enumerate(columns):
            x = _rows_of(column, g, scratch)  # (width, m)
            if g in self.paired:
                first = self.first[g]
                if first is None:
                    first = self.first[g] = np.zeros(width) if g in self.at_zero else x[:, 0].copy()
                if g not in self.at_zero:
                    out = _scratch(f"dev{g}", x.shape) if scratch else None
                    x = np.subtract(x, first[:, None], out=out)
                dev[g] = x
            self.sums[g] += x.sum(axis=1) if weights is None else x @ weights
        for i, (g, h) in enumerate(self.pairs):
            a, b = dev[g], dev[h]
            if weights is not None:
                a = np.multiply(a, weights, out=_scratch("prod", a.shape) if scratch else None)
            self.products[i] += a[0] @ b[0] if width == 1 else np.einsum("ij,ij->i", a, b)
        self.total += columns[0].shape[0] if weights is None else float(weights.sum())

    def result(self) -> Moments | None:
        """The batch's block, or ``None`` where :data:`SHIFT_RATIO` says the two-pass kernel
        must run instead (or nothing was weighted)."""
        total = self.total
        if not total > 0.0:
            return None
        if self.one_loss and self.sums.shape == (1, 1):
            sums, products = float(self.sums[0, 0]), float(self.products[0, 0])
            return one_loss_block(self.block, sums, products, total)
        shift = self.sums / total
        # Unpaired groups are summed as they are: K = 0 gives hi = shift, lo = 0 exactly.
        first = np.array([np.zeros(shift.shape[1]) if f is None else f for f in self.first])
        hi, lo = two_sum(first, shift)
        g, h = self._pair_index
        comoment = self.products - total * shift[g] * shift[h]
        variance = g == h
        comoment[variance] = np.maximum(comoment[variance], 0.0)
        lost = total * shift[g[variance]] ** 2
        if not bool(np.all(lost <= SHIFT_RATIO * comoment[variance])):
            return None  # a first value far from the mean (or a nan): the two-pass kernel
        out = self.block._empty_like()
        out.weight, out.hi, out.lo, out.comoment = total, hi, lo, comoment
        return out


def one_loss_block(block: Moments, sums: float, products: float, total: float) -> Moments | None:
    """:meth:`ShiftedSums.result` of a :attr:`~ShiftedSums.one_loss` block of one column, in
    scalars, from the loss's ``sum l`` and ``sum l * l`` over ``total`` rows; None where the
    two-pass kernel must run instead."""
    values = one_loss_values(sums, products, total)
    return None if values is None else block.of_values(total, values[0], 0.0, values[1])


def one_loss_values(sums: float, products: float, total: float) -> tuple[float, float] | None:
    """The mean and the co-moment of :func:`one_loss_block`: the same arithmetic in the same
    order as :meth:`ShiftedSums.result` (``K = 0``, so the mean is ``0 + s``, exactly ``s``,
    and its low part 0); None where the two-pass kernel must run instead."""
    shift = 0.0 + sums / total
    comoment = products - total * shift * shift
    if comoment < 0.0:
        comoment = 0.0
    if not total * (shift * shift) <= SHIFT_RATIO * comoment:
        return None  # as in result(): the two-pass kernel
    if comoment == 0.0 and shift != 0.0:
        # Losses below about 1.5e-162, whose squares underflow to zero: the guard above cannot
        # tell a constant column from a spread one there, and the two-pass kernel keeps a
        # constant exactly (5,000 losses of 7e-165 gave a mean of 6.999999999999999e-165).
        return None
    return shift, comoment
