"""Reliability diagram, confusion heat map, metrics over time, slices as bars."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base import Metric
from ..errors import InputError
from ..uncertainty import interval_or_none
from .curves import axes01, literal

__all__ = ["calibration", "confusion", "is_sliced", "sliced", "sliding", "tumbling"]


def calibration(metric: Any, ax: Any, **_: Any) -> None:
    value = metric.compute()
    bins = metric._config["bins"]
    weight = metric.weight
    # 1-D probabilities (``columns`` 0) are of the positive class: each bar is the fraction of
    # positives, as scikit-learn's calibration_curve names it; rows of class probabilities
    # give the top class's confidence and whether it was right (0.8.14 said accuracy for both).
    binary = metric.columns == 0
    outcome = "fraction of positives" if binary else "accuracy"
    confidence_name = "predicted probability" if binary else "confidence"
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
        label=f"{outcome} per bin (ECE {metric._config['norm']} = {value:.4f})",
    )
    for b, patch in zip(np.flatnonzero(keep), bars, strict=True):
        patch.set_gid(f"accuracy-{b}")  # (a gid per bar: ids are unique in an SVG)
    weighted = _weighted(metric)
    counts = [f"{w:g}" if weighted else f"{w:.0f}" for w in weight[keep]]
    ax.bar_label(bars, labels=counts, fontsize="x-small", padding=2)
    ax.plot(
        confidence[keep],
        accuracy[keep],
        "o",
        color="black",
        markersize=3,
        label=f"mean {confidence_name}",
        gid="confidence",
    )
    ax.plot([0, 1], [0, 1], linestyle=":", color="grey", label="perfect calibration")
    above = "weight" if weighted else "rows"
    axes01(ax, confidence_name, outcome, f"Reliability diagram ({above} per bin above bars)")
    ax.set_ylim(0, 1.1)
    ax.legend(loc="upper left", fontsize="small")


def _weighted(metric: Any) -> bool:
    """Whether the bin weights of a ``CalibrationError`` state may differ from its rows per bin.

    The state keeps no flag: it holds the weight of each bin and the rows fed (``count``). Rows
    of weight 1 (no ``sample_weight``) make whole bin weights totalling ``count``; anything else
    was weighted (rows of weight 0 count but weigh nothing). Whole weights that happen to total
    the rows (2 and 0, say) cannot be told from rows: those are still written as rows.
    """
    weight = metric.weight
    return bool(float(weight.sum()) != metric.count or (weight != np.floor(weight)).any())


def confusion(metric: Any, ax: Any, *, normalize: bool, **_: Any) -> None:
    matrix = np.asarray(metric.compute(), dtype=np.float64)
    labels = [literal(v) for v in metric.labels()]
    if matrix.size == 0 or not metric.count:  # (fixed labels: a table of nan until a row comes)
        ax.set_title("Confusion matrix (no rows yet)")
        ax.set_axis_off()
        return
    if normalize:  # the counts' rows, whatever the metric's own normalize (0.8.18 divided
        matrix = np.asarray(metric._counts_table(), dtype=np.float64)  # its "pred" columns)
        with np.errstate(invalid="ignore", divide="ignore"):
            total = matrix.sum(axis=1, keepdims=True)
            matrix = np.where(total > 0, matrix / np.where(total > 0, total, 1.0), 0.0)
    image = ax.imshow(matrix, cmap="Blues", gid="matrix")
    ax.figure.colorbar(image, ax=ax, shrink=0.8)
    ticks = np.arange(len(labels))
    if len(labels) > 40:  # every label's name is unreadable there: at most 20, evenly spaced
        ticks = ticks[:: -(-len(labels) // 20)]
    names = [labels[i] for i in ticks]
    ax.set_xticks(ticks, names, rotation=45 if len(labels) > 6 else 0)
    ax.set_yticks(ticks, names)
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
        interval = interval_or_none(m, level)  # None: no closed form, no band
        if interval is not None:
            lows.append(interval[0])
            highs.append(interval[1])
    (line,) = ax.plot(times, values, marker="o", markersize=3, gid="series")
    if lows and len(lows) == len(times):
        ax.fill_between(
            times,
            lows,
            highs,
            alpha=0.25,
            color=line.get_color(),
            label=f"{level * 100:g}% interval",
            gid="interval",
        )
        ax.legend(fontsize="small")
    ax.set_xlabel("window start")
    ax.set_ylabel("value")
    ax.set_title(title)


def _number(x: Any) -> int | float:
    """A slot start as matplotlib takes it: an int as it is, anything else as a float."""
    return x if isinstance(x, int) else float(x)


def tumbling(metric: Any, ax: Any, *, level: float, **_: Any) -> None:
    name = type(metric._template).__name__
    _series(ax, metric.windows, f"{name} per window", level)


def sliding(metric: Any, ax: Any, *, level: float, **_: Any) -> None:
    metric.compute()
    origin, unit = metric._config["origin"], metric._unit
    # (a slot of width / slots, a Fraction when the slots do not divide the width: as floats,
    # which matplotlib draws; 0.8.14 raised TypeError for an interval band of Fractions)
    pieces = {_number(origin + k * unit): m for k, m in sorted(metric._slots.items())}
    name = type(metric._template).__name__
    _series(ax, pieces, f"{name} per slot of the sliding window", level)


def is_sliced(metric: Any) -> bool:
    return type(metric).__name__ == "Sliced" or (
        callable(getattr(metric, "intervals", None)) and isinstance(metric, Metric)
    )


def sliced(metric: Any, ax: Any, *, level: float, max_bars: int | None = 40, **_: Any) -> None:
    values = metric.compute()
    inner = type(getattr(metric, "_template", metric)).__name__
    for k, v in values.items():
        if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, bool):
            raise InputError(
                "metric: a chart by slice needs a number per slice; slice "
                f"{k!r} holds a {type(v).__name__} ({inner})"
            )
    order = sorted(values, key=lambda k: (not math.isfinite(values[k]), values[k]))
    title = f"{inner} by slice"
    cut = None  # where the lowest bars end and the highest begin, when some are left out
    if max_bars is not None and len(order) > max_bars:
        # Thousands of bars are unreadable and cost minutes to lay out: draw the lowest and
        # the highest values (slices without a finite value draw no bar: sorted last, left out).
        finite = [k for k in order if math.isfinite(values[k])]
        high = max_bars // 2
        low = max_bars - high
        if len(finite) > max_bars:
            order = finite[:low] + finite[len(finite) - high :]
            cut = low - 0.5
        else:
            order = finite
        title = f"{inner}: {len(order)} of {len(values):,} slices"
        if cut is not None:
            title = f"{inner}: {low} lowest, {high} highest of {len(values):,} slices"
    intervals = interval_or_none(metric, level, many=True)  # None: no closed form, no bars
    keys = [literal(" / ".join(map(str, k)) if isinstance(k, tuple) else k) for k in order]
    y = np.arange(len(order))
    v = np.array([values[k] for k in order], dtype=np.float64)
    if intervals is None:
        bars = ax.barh(y, v)
        ax.set_xlabel("value")
    else:
        lows = np.array([intervals[k][0] for k in order], dtype=np.float64)
        highs = np.array([intervals[k][1] for k in order], dtype=np.float64)
        # (clipped at 0: an interval that stops a rounding short of its value draws no bar)
        err = np.clip(np.vstack([np.nan_to_num(v - lows), np.nan_to_num(highs - v)]), 0.0, None)
        bars = ax.barh(y, v, xerr=err, capsize=3)
        ax.set_xlabel(f"value ({level * 100:g}% interval)")
    for i, patch in enumerate(bars):
        patch.set_gid(f"slices-{i}")  # (a gid per bar: ids are unique in an SVG)
    if cut is not None:
        ax.axhline(cut, color="grey", linestyle="--", linewidth=0.8, gid="slices-left-out")
    ax.set_yticks(y, keys)
    ax.set_title(title)
