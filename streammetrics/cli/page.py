"""The HTML report of ``streammetrics report``: one self-contained page.

The page holds a summary table (each value with its certified error bound or confidence interval
where the metric has one), the pictures of :func:`streammetrics.plot.plot` (ROC and PR curves,
the reliability diagram, the confusion matrix) and the metrics over time, each picture an inline
SVG written by matplotlib's SVG backend (glyphs as paths: no font, script, style sheet or image
is fetched from anywhere). It opens offline in any browser.

The pictures are drawn and saved under the rc settings the page needs (:data:`_RC`), whatever a
``matplotlibrc`` says: the heat map inlined, glyphs as paths, ids from a fixed salt. Every other
setting (fonts, colours, a style) is the user's, as in :func:`streammetrics.plot.plot`. Each
figure's ids (matplotlib numbers them per figure: ``xtick_1``, the glyphs' ``DejaVuSans-30``)
take a prefix of their own, so that ids are unique on the page and every ``#reference`` finds
its own figure's element.

Besides the metrics asked for, a report on a log draws the pictures the columns allow: with
``--y-score`` and binary labels the ROC and precision-recall curves (sketched) and the
reliability diagram; with ``--y-pred`` and a classification metric the confusion matrix. A
picture whose metric refuses the data (scores outside [0, 1] for the reliability diagram, say)
is left out with a note on the page; it never stops the report.

The extra pictures cost little beside ``eval``: one whose metric keeps the very state of a
metric asked for (the confusion matrix beside ``accuracy`` or ``f1``, the ROC curve beside
``average_precision``: the same ``update`` in the same mode) is read off that metric's final
state instead of being fed every chunk; only the others (the reliability diagram, say) read the
chunks. Pictures whose texts are known in advance (axis labels, tick numbers, short class names)
are drawn on a figure of fixed margins, in one drawing pass; the others (long class names,
slices, windows) on a constrained layout that measures every text first.
"""

from __future__ import annotations

import datetime as _dt
import html
import inspect
import io
import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ..base import Metric
from ..errors import StreamMetricsError
from ..uncertainty import interval_or_none
from ..wrappers.collection import MetricCollection
from ..wrappers.sliced import Sliced
from .columns import parse_width
from .names import Member
from .output import flatten

__all__ = ["Report"]

#: Pictures drawn besides the metrics asked for: title -> (class, input kind).
_EXTRA = {
    "ROC curve": ("ROCAUC", "score"),
    "Precision-recall curve": ("AveragePrecision", "score"),
    "Reliability diagram": ("CalibrationError", "score"),
    "Confusion matrix": ("ConfusionMatrix", "pred"),
}
_DRAWN = {
    "ROCAUC",
    "ROCCurve",
    "AveragePrecision",
    "PRCurve",
    "MulticlassROCAUC",
    "CalibrationError",
    "ConfusionMatrix",
    "TumblingWindows",
    "SlidingWindow",
    "Sliced",
}


#: Margins (fractions of the 5 x 4 inch figure) of the pictures drawn without a layout engine.
_MARGINS = {"left": 0.13, "right": 0.97, "bottom": 0.12, "top": 0.92}
#: Pictures whose texts are all known in advance: they fit those margins.
_FIXED = {"ROCAUC", "ROCCurve", "AveragePrecision", "PRCurve", "CalibrationError"}
#: Class names up to this many characters fit the margins of a confusion matrix.
_SHORT_LABEL = 6

#: The rc settings a picture of the page is drawn and saved under, whatever the matplotlibrc
#: (in the working folder, ~/.config/matplotlib, $MATPLOTLIBRC) in force says: without them
#: ``svg.image_inline: False`` wrote the heat map to hidden files ``.image0.png`` in the working
#: folder (a broken image once the page moved) and ``svg.fonttype: none`` wrote ``<text>`` in a
#: font the reader may not have.
_RC: dict[Any, Any] = {  # (Any: matplotlib types the names as literals)
    "svg.image_inline": True,  # the heat map as a data: URI, no file beside the page
    "svg.fonttype": "path",  # glyphs as paths: no font needed to read the page
    "svg.hashsalt": "streammetrics report",  # ids hashed from the content, not from uuid4
    "text.usetex": False,  # TeX needs an installation (and a cache) the page must not
    "text.parse_math": True,  # labels escape "$" for mathtext (curves.literal)
    "figure.dpi": 100.0,  # the heat map's pixels (savefig.dpi 1200: a page 4 times as large)
    "savefig.dpi": "figure",
    "savefig.bbox": None,  # the fixed margins of _axes, in one drawing pass
}


class Report:
    """What a report draws, fed chunk by chunk (:meth:`sinks`), then written (:meth:`html`)."""

    def __init__(self, level: float | None = None) -> None:
        #: title -> (metric, member, name of the metric asked for whose state it reads, or None)
        self.extras: dict[str, tuple[Any, Member, str | None]] = {}
        self.windows: dict[str, tuple[Any, Member]] = {}
        self.notes: list[str] = []
        self.plan: Any = None
        self.time: str | None = None
        self.sections: list[tuple[str, str]] = []
        self.summary: list[tuple[str, str, str]] = []
        self.rows = 0
        self.source = ""
        #: The level of the intervals on the page (``--ci``; 0.95 without it).
        self.level = 0.95 if level is None else level

    # -- building --------------------------------------------------------------------------------

    @classmethod
    def for_data(cls, plan: Any, args: Any) -> Report:
        import streammetrics as sm
        from streammetrics.windows import TumblingWindows

        self = cls(getattr(args, "ci", None))
        self.plan = plan
        drawn = {type(m.metric).__name__ for m in plan.members}
        kinds = {(m.family, m.kind) for m in plan.members}
        sliced = bool(getattr(args, "by", None))  # members are per slice: no whole state
        # (--pos-label: the curves read --y-true as the score metrics do)
        positive = next(
            (m.positive_rows for m in plan.members if m.positive_rows is not None), None
        )
        for title, (name, kind) in _EXTRA.items():
            # (Under --by the metric asked for is drawn by slice: its whole-log curve is extra.)
            if (name in drawn and not sliced) or ("classification", kind) not in kinds:
                continue
            klass = getattr(sm, name)
            score_type = getattr(args, "score_type", None)
            takes = score_type is not None and "score_type" in inspect.signature(klass).parameters
            made = klass(score_type=score_type) if takes else klass()
            scored = positive is not None and kind in ("score", "group")
            member = Member(
                title, made, "classification", kind, scored, positive if scored else None
            )
            source = None
            if not sliced:
                source = next(
                    (m.name for m in plan.members if _shared_fields(member.metric, m.metric)),
                    None,
                )
            self.extras[title] = (member.metric, member, source)
        if args.window is not None:
            width = parse_width(args.window)
            self.time = args.time
            for m in plan.members:
                if isinstance(m.metric.compute(), float):  # a number per window
                    self.windows[m.name] = (TumblingWindows(m.metric, width=width), m)
        return self

    @classmethod
    def for_state(cls, metric: Metric, level: float | None = None) -> Report:
        return cls(level)

    def sinks(self) -> list[Callable[[dict[str, np.ndarray]], None]]:
        return [self._feed]

    def _feed(self, cols: dict[str, np.ndarray]) -> None:
        for title, (metric, member, asked) in list(self.extras.items()):
            if asked is not None:
                continue  # read off the final state of the metric asked for
            try:
                metric.update(*self.plan.columns(member, cols))
            except StreamMetricsError as exc:
                del self.extras[title]
                self.notes.append(f"No {title.lower()}: {exc}")
        if self.windows:
            t = cols[self.time] if self.time is not None else None
            for window, member in self.windows.values():
                window.update(*self.plan.columns(member, cols), timestamps=t)

    # -- drawing ---------------------------------------------------------------------------------

    def finish(self, metric: Metric, rows: int, source: str) -> None:
        """Compute the summary and draw every picture of the final state ``metric``."""
        self.rows, self.source = rows, source
        members = (
            {name: metric[name] for name in metric.keys()}
            if isinstance(metric, MetricCollection)
            else {type(metric).__name__: metric}
        )
        for name, m in members.items():
            self.summary += _summary_rows(name, m, self.level)
        for name, m in members.items():
            if type(m).__name__ in _DRAWN and m.count:
                self._draw(name, m)
        for title, (m, _member, asked) in self.extras.items():
            if asked is not None:
                m = _with_state_of(m, members[asked])
            if m.count:
                self._draw(title, m)
        for name, (window, _member) in self.windows.items():
            if window.count:
                self._draw(f"{name} over time", window)

    def _draw(self, title: str, metric: Metric) -> None:
        from ..plot import plot

        try:
            import matplotlib  # (checked before the log is read: this never fails)

            with matplotlib.rc_context(_RC):  # (a Text reads usetex when made: draw under it too)
                ax = plot(metric, _axes(metric), level=self.level)
                # (matplotlib lays texts out only now: some fail here)
                svg = _svg(ax.figure, f"fig{len(self.sections) + 1}-")
        except StreamMetricsError as exc:
            self.notes.append(f"No picture of {title}: {exc}")
            return
        except Exception as exc:  # any failure: one picture never stops the report
            self.notes.append(f"No picture of {title}: {type(exc).__name__}: {exc}")
            return
        self.sections.append((title, svg))

    def html(self) -> str:
        rows = "\n".join(
            f"<tr><td>{html.escape(a)}</td><td>{html.escape(b)}</td><td>{html.escape(c)}</td></tr>"
            for a, b, c in self.summary
        )
        figures = "\n".join(
            f"<figure><figcaption>{html.escape(t)}</figcaption>{svg}</figure>"
            for t, svg in self.sections
        )
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        return _PAGE.format(
            title=html.escape(f"streammetrics report: {self.source}"),
            source=html.escape(self.source),
            rows=f"{self.rows:,}",
            when=when,
            table=rows,
            figures=figures or "<p>No pictures for these metrics.</p>",
            notes=f"<ul class='notes'>{notes}</ul>" if notes else "",
        )


def _shared_fields(target: Metric, source: Metric) -> list[str]:
    """The state fields of ``target`` that ``source`` keeps exactly as ``target`` would, fed the
    same rows (empty when it keeps none): both run one ``update`` (of their common base class) in
    one mode (no configuration value they share differs), and ``source`` holds every field of
    ``target`` in blocks of the same kind (a confusion table of the same fixed labels)."""
    if getattr(type(target), "update", None) is not getattr(type(source), "update", None):
        return []
    common = target._config.keys() & source._config.keys()
    if any(target._config[k] != source._config[k] for k in common):
        return []
    fields = list(target._fields)
    if not set(fields) <= set(source._fields):
        return []
    for name in fields:
        mine, theirs = getattr(target, name), getattr(source, name)
        if type(mine) is not type(theirs):
            return []
        if getattr(mine, "fixed", False) or getattr(theirs, "fixed", False):
            return []  # labels fixed by configuration: not the same table in general
    return fields


def _with_state_of(target: Metric, source: Metric) -> Metric:
    """A copy of ``target`` holding ``source``'s shared state: the metric fed ``source``'s rows."""
    out = target.copy()
    fields = _shared_fields(target, source)
    out._commit(source.count, **{f: _copied(getattr(source, f)) for f in fields})
    return out


def _copied(value: Any) -> Any:
    return value.copy() if hasattr(value, "copy") else value


def _axes(metric: Metric) -> Any:
    """Axes of fixed margins for a picture whose texts fit them, else None (a constrained
    layout, :func:`streammetrics.plot.plot`'s default)."""
    name = type(metric).__name__
    if name == "ConfusionMatrix":
        labels = metric.labels()  # type: ignore[attr-defined]
        if len(labels) > 12 or any(len(str(v)) > _SHORT_LABEL for v in labels):
            return None
    elif name not in _FIXED:
        return None
    from matplotlib.figure import Figure

    figure = Figure(figsize=(5, 4))
    figure.subplots_adjust(**_MARGINS)
    return figure.add_subplot()


def _summary_rows(name: str, metric: Metric, level: float) -> list[tuple[str, str, str]]:
    """(name, value, its bound or interval) of each number ``metric`` computes; a sliced
    metric's slices each with their own interval."""
    value = metric.compute()
    if isinstance(metric, Sliced):
        bounds = interval_or_none(metric, level, many=True) or {}
        rows = []
        for key, v in value.items():
            flat = flatten(name, {key: v})
            extra = _interval_text(bounds.get(key), level) if isinstance(v, float) else ""
            rows += [(a, b, extra if len(flat) == 1 else "") for a, b in flat]
        return rows
    flat = flatten(name, value)
    if len(flat) != 1 or not isinstance(value, float):
        return [(a, b, "") for a, b in flat]
    extra = ""
    bound = getattr(metric, "error_bound", None)
    if callable(bound) and not metric.config.get("exact", True):
        b = bound()
        if isinstance(b, float) and math.isfinite(b) and b > 0:  # (0: every entry exact)
            extra = f"± {b:.2g} (certified sketch bound)"
    interval = _interval_text(interval_or_none(metric, level), level)  # "": no closed form
    return [(flat[0][0], flat[0][1], " ".join(t for t in (extra, interval) if t))]


def _interval_text(interval: Any, level: float) -> str:
    if interval is None or not (math.isfinite(interval[0]) and math.isfinite(interval[1])):
        return ""
    return f"{level * 100:g}% interval [{interval[0]:.6g}, {interval[1]:.6g}]"


def _svg(figure: Any, prefix: str) -> str:
    """``figure`` as an SVG element for the page, every id in it starting with ``prefix``."""
    buf = io.StringIO()
    figure.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    # the RDF metadata names web addresses (never fetched); the page needs none of it
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, count=1, flags=re.S)
    return _TAG.sub(lambda m: _prefixed(m.group(0), prefix), text)


#: A comment or a tag of matplotlib's SVG (which escapes "<" and ">" in attributes and comments).
_TAG = re.compile(r"<!--.*?-->|<[^>]*>", re.S)
_ID = re.compile(r'(\sid=")([^"]*")')
_REF = re.compile(r'(href="#|url\(#)')


def _prefixed(tag: str, prefix: str) -> str:
    """``tag`` with its id and its references to ids (``xlink:href="#..."``, ``url(#...)``)
    starting with ``prefix``. matplotlib numbers ids per figure (and hashes clip paths from their
    content), so two figures on one page share ids, and a browser resolves a reference to the
    first element of that id on the page: another figure's glyph or clip path. Comments (the
    figure's texts as written, which may hold anything) are left as they are."""
    if tag.startswith("<!--"):
        return tag
    tag = _ID.sub(lambda m: m.group(1) + prefix + m.group(2), tag)
    return _REF.sub(lambda m: m.group(1) + prefix, tag)


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #222;
       background: #fff; padding: 0 1em; }}
h1 {{ font-size: 1.5em; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border-bottom: 1px solid #ddd; padding: 0.3em 1em; text-align: left; }}
td:nth-child(2) {{ font-variant-numeric: tabular-nums; }}
.figures {{ display: flex; flex-wrap: wrap; gap: 1.5em; }}
figure {{ margin: 0; }}
figcaption {{ font-weight: 600; margin-bottom: 0.3em; }}
figure svg {{ width: 30em; height: auto; }}
.notes {{ color: #a50; }}
.meta {{ color: #666; }}
</style>
</head>
<body>
<h1>streammetrics report</h1>
<p class="meta">{source}: {rows} rows, written {when}</p>
<h2>Summary</h2>
<table>
<tr><th>metric</th><th>value</th><th>uncertainty</th></tr>
{table}
</table>
{notes}
<h2>Pictures</h2>
<div class="figures">
{figures}
</div>
</body>
</html>
"""
