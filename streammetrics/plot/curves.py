"""ROC and precision-recall curves of score stores, with the sketch's certified band."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base import Metric
from ..uncertainty import interval_or_none

__all__ = ["axes01", "band_boxes", "literal", "multiclass_roc", "pr", "roc"]


def literal(value: Any) -> str:
    """``value`` as text matplotlib draws as written: a ``$`` in a class label or a slice key
    would otherwise start mathematical text ("$5 to $10" drawn as "5to10", a ``$\\nope$``
    failing when the figure is saved). Under ``text.parse_math: False`` (which matplotlib reads
    when the text is made, as this is) every text is drawn as written: no escape."""
    from matplotlib import rcParams

    text = str(value)
    return text.replace("$", r"\$") if rcParams["text.parse_math"] else text


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


def _band(ax: Any, boxes: np.ndarray, color: Any, gid: str = "band") -> Any:
    """Shade rectangles (rows x0, x1, y0, y1) as one compound path: the certified band (``gid``
    is ``band``, ``band-{j}`` for class ``j``'s: ids are unique in an SVG).

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
    band.set_gid(gid)
    # add_artist, not add_patch: the limits are fixed (0..1), and add_patch would walk every
    # segment of the path to update them, which costs more than all the rest of the drawing
    band.set_transform(ax.transData)
    band.set_clip_path(ax.patch)
    ax.add_artist(band)
    return band


def band_boxes(ax: Any) -> np.ndarray:
    """The rectangles of the certified band drawn on ``ax`` (the first class's, one per class),
    rows ``x0, x1, y0, y1`` (tests)."""
    for patch in ax.get_children():
        gid = patch.get_gid() or ""
        if gid == "band" or gid.startswith("band-"):
            corners = patch.get_path().vertices.reshape(-1, 5, 2)
            return np.stack(
                [corners[:, 0, 0], corners[:, 1, 0], corners[:, 0, 1], corners[:, 2, 1]], axis=1
            )
    return np.empty((0, 4))


def _roc_band(
    ax: Any, store: Any, fpr: np.ndarray, tpr: np.ndarray, color: Any, gid: str = "band"
) -> Any:
    idx = np.flatnonzero(_uncertain(store))
    boxes = np.stack([fpr[idx], fpr[idx + 1], tpr[idx], tpr[idx + 1]], axis=1)
    return _band(ax, boxes, color, gid)


def _value_label(metric: Metric, what: str, level: float) -> str:
    value = metric.compute()
    text = f"{what} = {value:.4f}" if isinstance(value, float) else what
    bound = getattr(metric, "error_bound", None)
    if bound is not None and not getattr(metric, "_config", {}).get("exact", True):
        b = bound()
        if isinstance(b, float) and math.isfinite(b) and b > 0:
            text += f" ± {b:.2g}"
    interval = interval_or_none(metric, level)  # None: no closed form (the value alone)
    if interval is not None and math.isfinite(interval[0]) and math.isfinite(interval[1]):
        text += f" [{interval[0]:.4f}, {interval[1]:.4f}] {level * 100:g}%"
    return text


def axes01(ax: Any, xlabel: str, ylabel: str, title: str) -> None:
    ax.set_xlim(-0.01, 1.01)
    ax.set_ylim(-0.01, 1.01)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.set_aspect("equal")


def roc(metric: Any, ax: Any, **_: Any) -> None:
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
    axes01(ax, "false positive rate", "true positive rate", "ROC curve")
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


def pr(metric: Any, ax: Any, **kw: Any) -> None:
    metric.compute()
    store = metric.hist
    precision, recall, tps, fps = _pr_points(store)
    # Steps, as scikit-learn's display draws them: a point between two of the curve's cannot
    # be reached, and the area under the steps is the average precision (0.8.14 joined the
    # points with straight lines, whose area is not). Each recall interval takes the
    # precision at its higher-recall end.
    if type(metric).__name__ == "PRCurve":
        p, r, _thr = metric.compute()  # (recall decreasing, as scikit-learn returns it)
        label, steps = "precision-recall curve", "steps-post"
    else:
        p = np.concatenate(([1.0], precision))
        r = np.concatenate(([0.0], recall))  # (recall increasing)
        label, steps = _value_label(metric, "AP", kw["level"]), "steps-pre"
    (line,) = ax.plot(r, p, drawstyle=steps, label=label, gid="curve")
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
    axes01(ax, "recall", "precision", "Precision-recall curve")
    ax.legend(handles=_handles(line, band), loc="lower left", fontsize="small")


def multiclass_roc(metric: Any, ax: Any, **_: Any) -> None:
    from ..states.score_tables import auc_from_table

    metric.compute()
    labels = metric._config["labels"]
    stores = list(metric.columns)
    aucs = [float(auc_from_table(s.lo, s.hi, s.pos, s.neg)[0]) for s in stores]
    shown: list[int] = list(range(len(stores)))
    title = "ROC curves, one vs rest"
    if len(stores) > _MANY_CLASSES:
        # One colour and one legend line per class stop being readable past about ten: every
        # curve in grey, the lowest AUCs (nan last) in colour with their names.
        shown = sorted(shown, key=lambda j: (math.isnan(aucs[j]), aucs[j]))[:_HIGHLIGHTED]
        title = f"ROC, one vs rest: {_HIGHLIGHTED} lowest of {len(stores)} in colour"
        coloured = set(shown)
        for j, store in enumerate(stores):
            if j not in coloured:
                fpr, tpr = _roc_points(store)
                ax.plot(fpr, tpr, color="0.8", linewidth=0.6, gid=f"curve-{j}")
    handles: list[Any] = []
    for j in shown:
        store = stores[j]
        fpr, tpr = _roc_points(store)
        name = labels[j] if labels is not None else j
        text = f"class {literal(name)}: AUC = {aucs[j]:.4f}"
        (line,) = ax.plot(fpr, tpr, label=text, gid=f"curve-{j}")
        band = _roc_band(ax, store, fpr, tpr, line.get_color(), f"band-{j}")
        handles += _handles(line, band if not handles else None)
    ax.plot([0, 1], [0, 1], linestyle=":", color="grey", linewidth=1)
    axes01(ax, "false positive rate", "true positive rate", title)
    ax.legend(handles=handles, loc="lower right", fontsize="small")


_MANY_CLASSES = 10  # classes drawn each in its own colour, with a legend line
_HIGHLIGHTED = 5  # past that, the lowest AUCs in colour
