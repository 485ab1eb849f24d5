"""Pictures of metric states: ROC and PR curves, reliability diagrams, confusion matrices,
metrics over time and per-slice bars, drawn with matplotlib (the ``plot`` extra).

:func:`plot` reads only the state, so it draws a metric merged from shards or loaded from bytes
as well as one fed in this process. It never touches global state: no ``pyplot``, no
``rcParams``; without ``ax`` it draws on a new :class:`matplotlib.figure.Figure` (no GUI
backend), whose ``savefig`` writes PNG, SVG or PDF.

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
  rows in each bin written above its bar.
* ``ConfusionMatrix``: a heat map (true labels on rows, predicted on columns), counts or, with
  ``normalize=True``, each row divided by its total; the labels on both axes.
* ``TumblingWindows``: the value of each open window against its start; ``SlidingWindow``: the
  value of each slot of the ring against the slot's start. When the wrapped metric has
  ``interval(level)``, the confidence band is shaded.
* ``Sliced`` (any metric whose ``compute()`` is ``{key: value}`` and which has
  ``intervals(level)``): one horizontal bar per slice, sorted by value, with error bars.

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

import math
from typing import Any

import numpy as np

from .base import Metric
from .errors import InputError

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


def plot(metric: Metric, ax: Any = None, *, normalize: bool = False, level: float = 0.95) -> Any:
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

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    InputError
        ``metric`` is not a metric this module can draw.
    ImportError
        matplotlib is not installed (the ``plot`` extra).
    """
    Figure = _matplotlib()
    if ax is None:
        ax = Figure(figsize=(5, 4), layout="constrained").add_subplot()
    name = type(metric).__name__
    drawer = _DRAWERS.get(name)
    if drawer is None and _is_sliced(metric):
        drawer = _sliced
    if drawer is None:
        raise InputError(
            f"metric: no picture for {name}; plot draws "
            + ", ".join(sorted(_DRAWERS))
            + " and Sliced metrics"
        )
    drawer(metric, ax, normalize=normalize, level=level)
    return ax


# -- curves ------------------------------------------------------------------------------------


def _roc_points(store: Any) -> tuple[np.ndarray, np.ndarray]:
    """Every point of the ROC curve of one score store, from (0, 0), one per bucket."""
    pos, neg = store.pos[::-1].astype(np.float64), store.neg[::-1].astype(np.float64)
    tps = np.concatenate(([0.0], np.cumsum(pos)))
    fps = np.concatenate(([0.0], np.cumsum(neg)))
    with np.errstate(invalid="ignore", divide="ignore"):
        return fps / fps[-1], tps / tps[-1]


def _uncertain(store: Any) -> np.ndarray:
    """Which buckets (descending by score) may hold rows in an unknown order."""
    if store.exact:
        return np.zeros(len(store.keys), dtype=bool)
    out: np.ndarray = (store.hi > store.lo)[::-1]
    return out


def _band(ax: Any, boxes: np.ndarray, color: Any) -> Any:
    """Shade rectangles (rows x0, x1, y0, y1) as one compound path: the certified band.

    One path of ``5 k`` vertices whatever the number ``k`` of rectangles, so drawing stays
    O(k) in numpy rather than O(k) matplotlib objects.
    """
    from matplotlib.patches import PathPatch
    from matplotlib.path import Path

    if len(boxes) == 0:
        return None
    x0, x1, y0, y1 = boxes.T
    verts = np.stack(
        [
            np.stack(corner, axis=-1)
            for corner in ((x0, y0), (x1, y0), (x1, y1), (x0, y1), (x0, y0))
        ],
        axis=1,
    ).reshape(-1, 2)
    codes = np.tile(
        np.array([Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY], np.uint8),
        len(boxes),
    )
    band = PathPatch(Path(verts, codes), facecolor=color, edgecolor="none", alpha=0.25)
    band.set_label("certified band (order unknown inside a bucket)")
    band.set_gid("band")
    # add_artist, not add_patch: the limits are fixed (0..1), and add_patch would walk every
    # segment of the path to update them, which costs more than all the rest of the drawing
    band.set_transform(ax.transData)
    band.set_clip_path(ax.patch)
    ax.add_artist(band)
    return band


def band_boxes(ax: Any) -> np.ndarray:
    """The rectangles of the certified band drawn on ``ax``, rows ``x0, x1, y0, y1`` (tests)."""
    for patch in ax.get_children():
        if patch.get_gid() == "band":
            corners = patch.get_path().vertices.reshape(-1, 5, 2)
            return np.stack(
                [corners[:, 0, 0], corners[:, 1, 0], corners[:, 0, 1], corners[:, 2, 1]], axis=1
            )
    return np.empty((0, 4))


def _roc_band(ax: Any, store: Any, fpr: np.ndarray, tpr: np.ndarray, color: Any) -> Any:
    idx = np.flatnonzero(_uncertain(store))
    return _band(ax, np.stack([fpr[idx], fpr[idx + 1], tpr[idx], tpr[idx + 1]], axis=1), color)


def _value_label(metric: Metric, what: str, level: float) -> str:
    value = metric.compute()
    text = f"{what} = {value:.4f}" if isinstance(value, float) else what
    bound = getattr(metric, "error_bound", None)
    if bound is not None and not getattr(metric, "_config", {}).get("exact", True):
        b = bound()
        if isinstance(b, float) and math.isfinite(b) and b > 0:
            text += f" ± {b:.2g}"
    interval = getattr(metric, "interval", None)
    if callable(interval):
        low, high = interval(level)
        if math.isfinite(low) and math.isfinite(high):
            text += f" [{low:.4f}, {high:.4f}] {level:.0%}"
    return text


def _axes01(ax: Any, xlabel: str, ylabel: str, title: str) -> None:
    ax.set_xlim(-0.01, 1.01)
    ax.set_ylim(-0.01, 1.01)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.set_aspect("equal")


def _roc(metric: Any, ax: Any, **_: Any) -> None:
    metric.compute()  # folds anything pending before the state is read
    store = metric.hist
    if type(metric).__name__ == "ROCCurve":
        fpr, tpr, _thr = metric.compute()
        label = "ROC curve"
        full_fpr, full_tpr = _roc_points(store)
    else:
        fpr, tpr = full_fpr, full_tpr = _roc_points(store)
        label = _value_label(metric, "AUC", _["level"])
    (line,) = ax.plot(fpr, tpr, drawstyle="default", label=label, gid="curve")
    band = _roc_band(ax, store, full_fpr, full_tpr, line.get_color())
    (chance,) = ax.plot([0, 1], [0, 1], linestyle=":", color="grey", linewidth=1, label="chance")
    _axes01(ax, "false positive rate", "true positive rate", "ROC curve")
    ax.legend(handles=_handles(line, band, chance), loc="lower right", fontsize="small")


def _handles(*artists: Any) -> list[Any]:
    return [a for a in artists if a is not None]


def _pr_points(store: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Precision and recall at each bucket (recall increasing), and the cumulative counts."""
    pos, neg = store.pos[::-1].astype(np.float64), store.neg[::-1].astype(np.float64)
    tps, fps = np.cumsum(pos), np.cumsum(neg)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(tps + fps > 0, tps / (tps + fps), 0.0)
        recall = tps / tps[-1] if len(tps) and tps[-1] > 0 else np.ones_like(tps)
    return precision, recall, tps, fps


def _pr(metric: Any, ax: Any, **kw: Any) -> None:
    metric.compute()
    store = metric.hist
    precision, recall, tps, fps = _pr_points(store)
    if type(metric).__name__ == "PRCurve":
        p, r, _thr = metric.compute()
        label = "precision-recall curve"
    else:
        p = np.concatenate(([1.0], precision))
        r = np.concatenate(([0.0], recall))
        label = _value_label(metric, "AP", kw["level"])
    (line,) = ax.plot(r, p, drawstyle="default", label=label, gid="curve")
    total = tps[-1] if len(tps) else 0.0
    idx = np.flatnonzero(_uncertain(store)) if total > 0 else np.empty(0, dtype=np.intp)
    t0 = np.where(idx > 0, tps[idx - 1], 0.0)
    f0 = np.where(idx > 0, fps[idx - 1], 0.0)
    t1, f1 = tps[idx], fps[idx]
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(t0 + f1 > 0, t0 / (t0 + f1), 0.0)  # the bucket's negatives first
        high = np.where(t1 + f0 > 0, t1 / (t1 + f0), 1.0)  # its positives first
    boxes = np.stack([t0 / total, t1 / total, low, high], axis=1) if len(idx) else np.empty((0, 4))
    band = _band(ax, boxes, line.get_color())
    _axes01(ax, "recall", "precision", "Precision-recall curve")
    ax.legend(handles=_handles(line, band), loc="lower left", fontsize="small")


def _multiclass(metric: Any, ax: Any, **_: Any) -> None:
    from .states.buckets import auc_from_table

    metric.compute()
    labels = metric._config["labels"]
    handles: list[Any] = []
    for j, store in enumerate(metric.columns):
        fpr, tpr = _roc_points(store)
        auc = auc_from_table(store.lo, store.hi, store.pos, store.neg)[0]
        name = labels[j] if labels is not None else j
        (line,) = ax.plot(fpr, tpr, label=f"class {name}: AUC = {auc:.4f}", gid=f"curve-{j}")
        band = _roc_band(ax, store, fpr, tpr, line.get_color())
        handles += _handles(line, band if not handles else None)
    ax.plot([0, 1], [0, 1], linestyle=":", color="grey", linewidth=1)
    _axes01(ax, "false positive rate", "true positive rate", "ROC curves, one vs rest")
    ax.legend(handles=handles, loc="lower right", fontsize="small")


# -- calibration, confusion --------------------------------------------------------------------


def _calibration(metric: Any, ax: Any, **_: Any) -> None:
    value = metric.compute()
    bins = metric._config["bins"]
    weight = metric.weight
    keep = weight > 0
    width = 1.0 / bins
    centres = (np.arange(bins) + 0.5) * width
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = np.where(keep, metric.outcome / np.where(keep, weight, 1.0), 0.0)
        confidence = metric.confidence / np.where(keep, weight, 1.0)
    bars = ax.bar(
        centres[keep],
        accuracy[keep],
        width=width,
        edgecolor="black",
        linewidth=0.5,
        label=f"accuracy per bin (ECE {metric._config['norm']} = {value:.4f})",
        gid="accuracy",
    )
    counts = [f"{w:g}" for w in weight[keep]]
    ax.bar_label(bars, labels=counts, fontsize="x-small", padding=2)
    ax.plot(
        confidence[keep],
        accuracy[keep],
        "o",
        color="black",
        markersize=3,
        label="mean confidence",
        gid="confidence",
    )
    ax.plot([0, 1], [0, 1], linestyle=":", color="grey", label="perfect calibration")
    _axes01(ax, "confidence", "accuracy", "Reliability diagram (rows per bin above bars)")
    ax.set_ylim(0, 1.1)
    ax.legend(loc="upper left", fontsize="small")


def _confusion(metric: Any, ax: Any, *, normalize: bool, **_: Any) -> None:
    matrix = np.asarray(metric.compute(), dtype=np.float64)
    labels = [str(v) for v in metric.labels()]
    if matrix.size == 0:
        ax.set_title("Confusion matrix (no rows yet)")
        ax.set_axis_off()
        return
    if normalize:
        with np.errstate(invalid="ignore", divide="ignore"):
            total = matrix.sum(axis=1, keepdims=True)
            matrix = np.where(total > 0, matrix / np.where(total > 0, total, 1.0), 0.0)
    image = ax.imshow(matrix, cmap="Blues", gid="matrix")
    ax.figure.colorbar(image, ax=ax, shrink=0.8)
    ticks = np.arange(len(labels))
    ax.set_xticks(ticks, labels, rotation=45 if len(labels) > 6 else 0)
    ax.set_yticks(ticks, labels)
    ax.set_xlabel("predicted label")
    ax.set_ylabel("true label")
    ax.set_title("Confusion matrix" + (" (rows normalised)" if normalize else ""))
    if len(labels) <= 20:
        top = matrix.max() if matrix.size else 0.0
        for (i, j), v in np.ndenumerate(matrix):
            text = f"{v:.2f}" if normalize or v != int(v) else f"{int(v)}"
            ax.text(
                j,
                i,
                text,
                ha="center",
                va="center",
                fontsize="small",
                color="white" if v > top / 2 else "black",
            )


# -- over time, slices -------------------------------------------------------------------------


def _series(ax: Any, pieces: dict[Any, Metric], title: str, level: float) -> None:
    times, values, lows, highs = [], [], [], []
    for start, m in pieces.items():
        v = m.compute()
        if not isinstance(v, (int, float, np.floating)):
            raise InputError(f"metric: the windowed metric's value must be a number; got {v!r}")
        times.append(start)
        values.append(float(v))
        interval = getattr(m, "interval", None)
        if callable(interval):
            low, high = interval(level)
            lows.append(low)
            highs.append(high)
    (line,) = ax.plot(times, values, marker="o", markersize=3, gid="series")
    if lows and len(lows) == len(times):
        ax.fill_between(
            times,
            lows,
            highs,
            alpha=0.25,
            color=line.get_color(),
            label=f"{level:.0%} interval",
            gid="interval",
        )
        ax.legend(fontsize="small")
    ax.set_xlabel("window start")
    ax.set_ylabel("value")
    ax.set_title(title)


def _tumbling(metric: Any, ax: Any, *, level: float, **_: Any) -> None:
    name = type(metric._template).__name__
    _series(ax, metric.windows, f"{name} per window", level)


def _sliding(metric: Any, ax: Any, *, level: float, **_: Any) -> None:
    metric.compute()
    origin, unit = metric._config["origin"], metric._unit
    pieces = {origin + k * unit: m for k, m in sorted(metric._slots.items())}
    name = type(metric._template).__name__
    _series(ax, pieces, f"{name} per slot of the sliding window", level)


def _is_sliced(metric: Any) -> bool:
    return type(metric).__name__ == "Sliced" or (
        callable(getattr(metric, "intervals", None)) and isinstance(metric, Metric)
    )


def _sliced(metric: Any, ax: Any, *, level: float, **_: Any) -> None:
    values = metric.compute()
    intervals = metric.intervals(level)
    order = sorted(values, key=lambda k: (not math.isfinite(values[k]), values[k]))
    keys = [" / ".join(map(str, k)) if isinstance(k, tuple) else str(k) for k in order]
    y = np.arange(len(order))
    v = np.array([values[k] for k in order], dtype=np.float64)
    lows = np.array([intervals[k][0] for k in order], dtype=np.float64)
    highs = np.array([intervals[k][1] for k in order], dtype=np.float64)
    err = np.vstack([np.nan_to_num(v - lows), np.nan_to_num(highs - v)])
    ax.barh(y, v, xerr=err, capsize=3, gid="slices")
    ax.set_yticks(y, keys)
    ax.set_xlabel(f"value ({level:.0%} interval)")
    ax.set_title(f"{type(getattr(metric, '_template', metric)).__name__} by slice")


_DRAWERS: dict[str, Any] = {
    "ROCAUC": _roc,
    "ROCCurve": _roc,
    "AveragePrecision": _pr,
    "PRCurve": _pr,
    "MulticlassROCAUC": _multiclass,
    "CalibrationError": _calibration,
    "ConfusionMatrix": _confusion,
    "TumblingWindows": _tumbling,
    "SlidingWindow": _sliding,
}
