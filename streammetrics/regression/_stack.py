"""One batch of a regression metric, ready for ``Sliced``'s packed folds: the losses of a
one-loss metric (MSE, RMSE, MAE, MAPE) for
:class:`~streammetrics.wrappers._moments_pack.MomentsPack`, the columns of the others (R2,
explained variance, Pearson, the report) for :class:`~streammetrics.wrappers._fit_pack.FitPack`.

``Sliced(MeanSquaredError())`` updated one copy of the metric per slice a batch touched: some
30-50 µs of numpy calls per slice and batch, 90-3,000x slower than the two ``bincount`` a numpy
user writes. The metric's work per row is only its loss (``(y_true - y_pred)**2``, ...); what
the slices need from a batch is each one's count, mean and sum of squared deviations of that
loss, which a few ``bincount`` over the slice codes give for every slice at once. This stack
holds the batch's losses, computed as the metric's own update computes them.

It takes the plain case only: one output, finite values within the metric's range
(``VALUE_LIMIT``), valid weights if any. Anything else gives None and the per-slice path runs,
which says what is wrong with a bad batch exactly as the metric itself does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._inputs import as_matrix, as_weights
from ..errors import InputError
from ..states.stacked import Stacked

__all__ = ["FitStack", "LossStack", "regression_stack"]


class _SliceStack(Stacked):
    """A batch of a regression metric (one output) for ``Sliced``'s packed folds only:
    replicates (the ``Bootstrap`` fold) keep the per-state path."""

    replicates = False

    def accepts(self, metrics: list[Any]) -> bool:
        return all(m.moments.width in (None, 1) for m in metrics)

    def fold_replicates(self, metrics: list[Any], counts: np.ndarray) -> None:
        raise NotImplementedError(f"a {type(self).__name__} folds slices (Sliced), not replicates")


class LossStack(_SliceStack):
    """The per-row losses of a batch of a one-loss regression metric (one output): ``x``
    (float64, finite, ``n`` rows) and their weights ``w`` (None: 1 each)."""

    def __init__(self, metric: Any, x: np.ndarray, w: np.ndarray | None) -> None:
        self.template = metric
        self.x, self.w = x, w
        self.n = len(x)
        self.rows = np.arange(self.n)


class FitStack(_SliceStack):
    """The checked columns of a batch of a regression metric that is not a one-loss metric (one
    output): ``t``, ``p`` (float64, finite, within ``VALUE_LIMIT``, ``n`` rows each) and their
    weights ``w`` (None: 1 each)."""

    def __init__(self, metric: Any, t: np.ndarray, p: np.ndarray, w: np.ndarray | None) -> None:
        self.template = metric
        self.t, self.p, self.w = t, p, w
        self.n = len(t)
        self.rows = np.arange(self.n)


def regression_stack(
    metric: Any, y_true: Any, y_pred: Any, sample_weight: Any
) -> LossStack | FitStack | None:
    """The batch for ``metric``'s packed slices (:class:`LossStack` for a one-loss metric,
    :class:`FitStack` for the others), or None when it is not the plain case (the per-slice
    path then takes it, and words its errors)."""
    from ._base import VALUE_LIMIT

    mo = metric._config["multioutput"]
    if isinstance(mo, list) and len(mo) != 1:
        return None
    if metric.moments.width not in (None, 1):
        return None
    try:
        t = as_matrix(y_true, "y_true", finite=False)
        p = as_matrix(y_pred, "y_pred", finite=False)
    except InputError:
        return None
    if t.shape != p.shape or t.shape[1] != 1 or not len(t):
        return None
    try:
        w = as_weights(sample_weight, len(t))
    except InputError:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        if not (
            t.max() <= VALUE_LIMIT
            and p.max() <= VALUE_LIMIT
            and t.min() >= -VALUE_LIMIT
            and p.min() >= -VALUE_LIMIT
        ):
            return None  # (nan, infinities and values past the range: the metric says which)
        if not metric._one_loss:
            return FitStack(metric, t.reshape(-1), p.reshape(-1), w)
        x = metric._columns(t, p)[0].reshape(-1)
    return LossStack(metric, np.ascontiguousarray(x), w)
