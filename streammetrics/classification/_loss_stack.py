"""One batch of log loss, the Brier score or the calibration error, ready for ``Sliced``'s
packed fold (:class:`~streammetrics.wrappers._sum_pack.SumPack`,
:class:`~streammetrics.wrappers._bins_pack.BinsPack`): the per-row losses (or bins, confidences
and hits), computed and checked as the metric's own update computes and checks them, their
weights and the batch's number of probability columns. Anything the update would refuse gives
None, and the per-slice path runs, which words the refusal exactly as the metric does."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._inputs import as_weights, check_same_length
from ..errors import InputError
from ..states.stacked import Stacked

__all__ = ["BinStack", "SumStack", "sum_stack"]


class SumStack(Stacked):
    """The losses ``x`` (float64, ``n`` rows, each in ``[0, metric._max_loss()]``), their
    weights ``w`` (None: 1 each) and ``columns`` (0: 1-D probabilities, else their number), for
    ``Sliced``'s packed fold only: replicates (``Bootstrap``) keep the per-state path."""

    replicates = False

    def __init__(self, metric: Any, x: np.ndarray, w: np.ndarray | None, columns: int) -> None:
        self.template = metric
        self.x, self.w, self.columns = x, w, columns
        self.n = len(x)
        self.rows = np.arange(self.n)

    def accepts(self, metrics: list[Any]) -> bool:
        return all(m.columns in (-1, self.columns) for m in metrics)

    def fold_replicates(self, metrics: list[Any], counts: np.ndarray) -> None:
        raise NotImplementedError("a SumStack folds slices (Sliced), not replicates")


class BinStack(Stacked):
    """A batch of ``CalibrationError``: each row's confidence bin ``bins``, its confidence
    ``x`` and whether its prediction is right ``hit`` (1.0 or 0.0), the weights ``w`` (None: 1
    each) and ``columns``, for ``Sliced``'s packed fold only."""

    replicates = False

    def __init__(
        self,
        metric: Any,
        bins: np.ndarray,
        x: np.ndarray,
        hit: np.ndarray,
        w: np.ndarray | None,
        columns: int,
    ) -> None:
        self.template = metric
        self.bins, self.x, self.hit, self.w, self.columns = bins, x, hit, w, columns
        self.n = len(x)
        self.rows = np.arange(self.n)

    def accepts(self, metrics: list[Any]) -> bool:
        return all(m.columns in (-1, self.columns) for m in metrics)

    def fold_replicates(self, metrics: list[Any], counts: np.ndarray) -> None:
        raise NotImplementedError("a BinStack folds slices (Sliced), not replicates")


def sum_stack(metric: Any, y_true: Any, y_prob: Any, sample_weight: Any) -> SumStack | None:
    """The batch of ``metric`` (a ``LogLoss`` or ``BrierScore``) as :class:`SumStack`, or None
    when its update would refuse it or the batch is empty (the per-slice path then runs)."""
    from .calibration import _probabilities

    try:
        x = _probabilities(y_prob, y_true, metric._config.get("labels"))
        losses = np.ascontiguousarray(metric._losses(y_true, x), dtype=np.float64)
        check_same_length(y_true=losses, y_prob=x)
        w = as_weights(sample_weight, len(x))
    except InputError:
        return None
    if not len(x) or losses.ndim != 1:
        return None
    return SumStack(metric, losses, w, 0 if x.ndim == 1 else int(x.shape[1]))
