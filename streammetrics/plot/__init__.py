"""Pictures of metric states: ROC and PR curves, reliability diagrams, confusion matrices,
metrics over time and per-slice bars, drawn with matplotlib (the ``plot`` extra).

:func:`plot` reads only the state, so it draws a metric merged from shards or loaded from bytes
as well as one fed in this process. It never touches global state: no ``pyplot``, no
``rcParams``; without ``ax`` it draws on a new :class:`matplotlib.figure.Figure` (no GUI
backend), whose ``savefig`` writes PNG, SVG or PDF. The figure is the user's: it is drawn and
saved under the rc settings in force (``streammetrics report`` alone pins the few its page
needs). Artists that may repeat in one figure carry numbered gids (``accuracy-3`` for bin 3,
``slices-0``, ``band-2`` for class 2), so that the ids of a saved SVG are unique.

What is drawn, by metric:

* ``ROCCurve``, ``ROCAUC``: the ROC curve (false against true positive rate), the AUC in the
  legend. ``PRCurve``, ``AveragePrecision``: the precision-recall curve, the AP in the legend.
  In sketch mode the curve runs through the bucket edges (each point is exact for the threshold
  at its bucket's lower edge); where a bucket holds more than one distinct score the order of
  its rows is unknown, and the true curve lies inside the rectangle spanned by the bucket's two
  end points: those rectangles are the shaded certified band, and ``error_bound()`` goes beside
  the value in the legend.
* ``MulticlassROCAUC``: one one-vs-rest ROC curve per class, each with its AUC.
* ``CalibrationError``: the reliability diagram, mean outcome (accuracy) per confidence bin as
  bars, the mean confidence of each bin as points, the diagonal of perfect calibration, and the
  rows in each bin written above its bar (the weight in each bin when rows were weighted: the
  title says which).
* ``ConfusionMatrix``: a heat map (true labels on rows, predicted on columns), counts or, with
  ``normalize=True``, each row divided by its total; the labels on both axes.
* ``TumblingWindows``: the value of each open window against its start; ``SlidingWindow``: the
  value of each slot of the ring against the slot's start. When the wrapped metric has
  ``interval(level)``, the confidence band is shaded.
* ``Sliced`` (any metric whose ``compute()`` is ``{key: value}`` and which has
  ``intervals(level)``): one horizontal bar per slice, sorted by value, with error bars. Past
  ``max_bars`` slices (40 by default) the chart keeps the lowest and the highest half of them,
  a dashed line between, and its title says how many of how many it shows (a bar per slice of
  thousands is unreadable, and laying out their names took matplotlib a minute).

Cost: O(points drawn): at most one point per bucket for sketched curves (a few thousand at the
default resolution), whatever the number of rows.

Examples
--------
>>> import streammetrics as sm
>>> from streammetrics.plot import plot
>>> m = sm.ROCAUC().update([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
>>> ax = plot(m)
>>> ax.get_xlabel(), ax.get_ylabel()
('false positive rate', 'true positive rate')
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import Metric
from ..errors import InputError
from .curves import band_boxes, multiclass_roc, pr, roc
from .panels import calibration, confusion, is_sliced, sliced, sliding, tumbling

__all__ = ["band_boxes", "plot"]


def _matplotlib() -> Any:
    try:
        import matplotlib  # noqa: F401
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(
            "streammetrics.plot needs matplotlib: pip install 'streammetrics[plot]'"
        ) from None
    return Figure


def plot(
    metric: Metric,
    ax: Any = None,
    *,
    normalize: bool = False,
    level: float = 0.95,
    max_bars: int | None = 40,
) -> Any:
    """Draw ``metric`` on ``ax`` (a new figure's axes when ``None``) and return the axes.

    Parameters
    ----------
    metric : Metric
        One of the metrics listed in the module's documentation.
    ax : matplotlib.axes.Axes, optional
        Where to draw; by default a new :class:`matplotlib.figure.Figure` of 5 x 4 inches.
    normalize : bool, default False
        Confusion matrices only: divide each row by its total (the recall of each class on the
        diagonal).
    level : float, default 0.95
        Confidence level of interval bands and error bars, where the metric has intervals.
    max_bars : int or None, default 40
        ``Sliced`` metrics only: the most bars drawn (at least 2); past it, the lowest and the
        highest values. ``None`` draws every slice.

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    InputError
        ``metric`` is not a metric this module can draw, or ``max_bars`` is not an integer
        of at least 2 (or None).
    ImportError
        matplotlib is not installed (the ``plot`` extra).
    """
    if max_bars is not None and (
        isinstance(max_bars, bool) or not isinstance(max_bars, (int, np.integer)) or max_bars < 2
    ):
        raise InputError(f"max_bars: expected an integer of at least 2 or None, got {max_bars!r}")
    Figure = _matplotlib()
    name = type(metric).__name__
    drawer = _DRAWERS.get(name)
    if drawer is None and is_sliced(metric):
        drawer = sliced
    if drawer is None:
        raise InputError(
            f"metric: no picture for {name}; plot draws "
            + ", ".join(sorted(_DRAWERS))
            + " and Sliced metrics"
        )
    if ax is None:
        height = 4.0
        if drawer is sliced:  # a fifth of an inch per bar, so that their names never overlap
            keys = getattr(metric, "keys", None)  # (Sliced: without computing every slice)
            bars = len(keys() if callable(keys) else metric.compute())
            height = max(height, 1.2 + 0.2 * (bars if max_bars is None else min(bars, max_bars)))
        ax = Figure(figsize=(5, height), layout="constrained").add_subplot()
    drawer(metric, ax, normalize=normalize, level=level, max_bars=max_bars)
    return ax


_DRAWERS: dict[str, Any] = {
    "ROCAUC": roc,
    "ROCCurve": roc,
    "AveragePrecision": pr,
    "PRCurve": pr,
    "MulticlassROCAUC": multiclass_roc,
    "CalibrationError": calibration,
    "ConfusionMatrix": confusion,
    "TumblingWindows": tumbling,
    "SlidingWindow": sliding,
}
