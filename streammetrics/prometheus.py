"""Expose metrics as Prometheus gauges, computed afresh on every scrape.

Needs the ``prometheus`` extra (``pip install 'streammetrics[prometheus]'``). A
:class:`MetricsCollector` is a custom ``prometheus_client`` collector: it holds a reference to a
metric (usually a :class:`~streammetrics.MetricCollection`, or a window of one) and computes it
when Prometheus scrapes, so the served values are always those of the state at that moment and
nothing runs between scrapes.

Several worker processes are served as one through a
:class:`~streammetrics.serving.StateDirectory`: every worker publishes its state there, and one
collector serves ``MetricsCollector(directory.collect)``, the merge of every worker's state,
computed on each scrape (``docs/serving.md``). A source that returns ``None`` (no worker has
published yet) serves no series at all.

Served series (``namespace`` defaults to ``streammetrics``):

* ``<namespace>_value{metric="<name>"}``: each computed value. Dict results are flattened with
  dots (``classification_report.f1_macro``), arrays with their index
  (``confusion_matrix.0.1``; ``value.0.1`` for a lone metric's array, as a lone metric's
  number is ``value``); ``nan`` is served as NaN (Prometheus' own value for it). A dot or a
  backslash inside a member name or a result key is escaped with a backslash (member ``x.a`` is
  ``x\\.a``), so that no two values share a series.
* ``<namespace>_rows``: rows seen (``count``).
* For :class:`~streammetrics.windows.TumblingWindows`, every value carries a ``window_start``
  label, one series per open window. For :class:`~streammetrics.windows.SlidingWindow`,
  ``<namespace>_dropped`` counts the rows older than the window. Windows inside a
  :class:`~streammetrics.MetricCollection` are served the same way: their values carry the
  ``window_start`` label (the collection's other values carry it empty, which Prometheus reads as
  no label), and ``<namespace>_dropped`` then has a ``metric`` label naming the window.

A tuple result (``PRCurve``'s precision, recall and thresholds, of different lengths) is
flattened item by item: ``pr.0.3`` is the fourth precision.

With ``interval=LEVEL`` (0.8.18), each value that has a confidence interval (``interval()``;
a ``Sliced``'s ``intervals()``, one per slice) is served with its ends as
``<namespace>_value_lower`` and ``<namespace>_value_upper``, under the same labels as its
value: a dashboard draws the band, and an alert can ask whether a drop left it. Values
without a closed-form interval (``NoIntervalError``: tables, clustering indices, BLEU, mAP)
and the values of ``TumblingWindows`` have no bounds series. The ends are computed from the
same snapshot as the values.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .base import Metric
from .errors import InputError, NoIntervalError
from .uncertainty import check_level

__all__ = ["DEFAULT_PORT", "MetricsCollector", "serve"]


#: The labels the collector sets per series (a constant label may not take their names).
_SERIES_LABELS = frozenset({"metric", "window_start"})
#: Prometheus' grammar of metric names and of label names (names starting "__" are reserved).
_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def _part(name: Any) -> str:
    """One part of a dotted series name: a member name or a result key, its dots (and
    backslashes) escaped, so that member ``x.a`` and key ``a`` of member ``x`` name two series
    (``x\\.a`` and ``x.a``), not one twice."""
    return str(name).replace("\\", "\\\\").replace(".", "\\.")


def _flat(prefix: str, value: Any) -> Iterator[tuple[str, float]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _flat(f"{prefix}.{_part(k)}" if prefix else _part(k), v)
    elif isinstance(value, np.ndarray):
        if value.dtype.kind in "biuf":
            for index in np.ndindex(value.shape):
                yield f"{prefix or 'value'}." + ".".join(map(str, index)), float(value[index])
    elif isinstance(value, (list, tuple)):  # item by item: a tuple's arrays may differ in length
        for i, item in enumerate(value):
            yield from _flat(f"{prefix or 'value'}.{i}", item)
    elif isinstance(value, (bool, int, float, np.generic)) and not isinstance(value, np.str_):
        if not isinstance(value, np.generic) or value.dtype.kind in "biuf":
            yield prefix or "value", float(value)


def _served(metric: Metric, name: str = "") -> Iterator[tuple[str, Metric]]:
    """``(name, metric)`` of each metric computed apart: the metric itself, or the members of a
    collection (nested ones too), so that windows inside a collection are recognised."""
    from .wrappers.collection import MetricCollection

    if isinstance(metric, MetricCollection):
        for key in metric.keys():
            yield from _served(metric[key], f"{name}.{_part(key)}" if name else _part(key))
    else:
        yield name, metric


def _client() -> Any:
    """``prometheus_client``, or an ``ImportError`` naming the extra that installs it."""
    try:
        import prometheus_client
    except ImportError:
        raise ImportError(
            "streammetrics.prometheus needs prometheus_client: "
            "pip install 'streammetrics[prometheus]'"
        ) from None
    return prometheus_client


class MetricsCollector:
    """A ``prometheus_client`` collector that computes ``source`` on every scrape.

    Parameters
    ----------
    source : Metric or callable
        The metric to serve, or a function returning it (e.g. ``lambda: state["current"]`` when
        the live object is replaced over time, or ``StateDirectory(path).collect``, which merges
        the states every worker process published). When the function returns ``None``, the
        scrape has no series.
    namespace : str
        Prefix of the series names.
    labels : dict, optional
        Constant labels added to every series (``{"model": "ranker-v3"}``). ``metric`` and
        ``window_start`` are the collector's own labels: an ``InputError`` names them.
    lock : threading.Lock, optional
        Held while copying the metric before computing. Not needed since 0.2: every metric is
        thread-safe, so a scrape never sees a half-applied update. Kept for code that takes the
        same lock around its own ``update`` calls.
    interval : float, optional
        A confidence level in (0, 1), e.g. ``0.95``: each value with a confidence interval is
        also served as ``<namespace>_value_lower`` and ``<namespace>_value_upper``.

    Examples
    --------
    >>> import streammetrics as sm
    >>> from prometheus_client import CollectorRegistry, generate_latest
    >>> from streammetrics.prometheus import MetricsCollector
    >>> m = sm.MetricCollection(acc=sm.Accuracy()).update([0, 1, 1, 1], [0, 1, 0, 1])
    >>> registry = CollectorRegistry()
    >>> registry.register(MetricsCollector(m, labels={"model": "a"}))
    >>> print(generate_latest(registry).decode().splitlines()[2])
    streammetrics_value{metric="acc",model="a"} 0.75
    """

    def __init__(
        self,
        source: Metric | Callable[[], Metric | None],
        namespace: str = "streammetrics",
        labels: dict[str, str] | None = None,
        lock: Any = None,
        *,
        interval: float | None = None,
    ) -> None:
        _client()
        if not (isinstance(source, Metric) or callable(source)):
            # (0.8.16 took any value and failed at every scrape)
            raise InputError(
                f"source: expected a metric or a function returning one, got {source!r}"
            )
        self._source = source
        if not isinstance(namespace, str) or not _METRIC_NAME.fullmatch(namespace):
            raise InputError(
                f"namespace: {namespace!r} is not a Prometheus metric name "
                "([a-zA-Z_:][a-zA-Z0-9_:]*)"
            )
        self._namespace = namespace
        if labels is not None and not isinstance(labels, dict):
            raise InputError(f"labels: expected a dict of label name -> value, got {labels!r}")
        self._labels = dict(labels or {})
        for key in self._labels:
            if not isinstance(key, str) or not _LABEL_NAME.fullmatch(key) or key.startswith("__"):
                raise InputError(
                    f"labels: {key!r} is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, "
                    "not starting with '__', which Prometheus reserves)"
                )
        clash = sorted(_SERIES_LABELS & set(self._labels))
        if clash:
            raise InputError(
                f"labels: {clash[0]!r} is the label streammetrics gives each series; a constant "
                "label of that name would merge the series (choose another name)"
            )
        self._lock = lock
        try:
            self._level = None if interval is None else check_level(interval)
        except InputError as exc:
            raise InputError(f"interval: {str(exc).split(': ', 1)[1]}") from None

    def _snapshot(self) -> Metric | None:
        source = (
            self._source()
            if callable(self._source) and not isinstance(self._source, Metric)
            else self._source
        )
        if source is None:
            return None
        if not isinstance(source, Metric):
            raise TypeError(
                f"the source of a MetricsCollector returned {type(source).__name__}, not a Metric"
            )
        if self._lock is not None:
            with self._lock:
                return source.copy()
        return source.copy()

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        from .wrappers.sliding import SlidingWindow
        from .wrappers.tumbling import TumblingWindows

        metric = self._snapshot()
        if metric is None:
            return
        const = sorted(self._labels)
        ns = self._namespace
        parts = list(_served(metric))
        windowed = any(isinstance(m, TumblingWindows) for _, m in parts)
        names = ["metric", *(["window_start"] if windowed else []), *const]
        values = GaugeMetricFamily(f"{ns}_value", "Metric values computed on scrape", labels=names)
        unwindowed = [""] if windowed else []  # an empty label is no label to Prometheus
        served: set[str] = set()  # the series of values outside tumbling windows
        for name, part in parts:
            if isinstance(part, TumblingWindows):
                for start, window_value in part.compute().items():
                    for key, v in _flat(name, window_value):
                        values.add_metric([key, _number(start), *self._consts(const)], v)
            else:
                for key, v in _flat(name, part.compute()):
                    values.add_metric([key, *unwindowed, *self._consts(const)], v)
                    served.add(key)
        yield values
        if self._level is not None:
            yield from self._bounds(parts, names, unwindowed, const, served)
        rows = GaugeMetricFamily(f"{ns}_rows", "Rows in the state", labels=const)
        rows.add_metric(self._consts(const), float(metric.count))
        yield rows
        sliding = [(name, m) for name, m in parts if isinstance(m, SlidingWindow)]
        if sliding:
            top = sliding[0][0] == ""  # the source itself: no metric label (as before 0.8.4)
            dropped = GaugeMetricFamily(
                f"{ns}_dropped",
                "Rows older than the sliding window",
                labels=const if top else ["metric", *const],
            )
            for name, window in sliding:
                named = [] if top else [name]
                dropped.add_metric([*named, *self._consts(const)], float(window.dropped))
            yield dropped

    def _bounds(
        self,
        parts: list[tuple[str, Metric]],
        names: list[str],
        unwindowed: list[str],
        const: list[str],
        served: set[str],
    ) -> Iterator[Any]:
        """The ``_value_lower`` and ``_value_upper`` families: each value's interval ends, for
        the values served (a ``Bootstrap`` of per-class values gives one ``(nan, nan)`` when
        every replicate is nan: no series of its own)."""
        from prometheus_client.core import GaugeMetricFamily

        from .wrappers.sliced import Sliced
        from .wrappers.tumbling import TumblingWindows

        assert self._level is not None
        what = f"confidence interval at level {self._level:g}"
        ns = self._namespace
        lower = GaugeMetricFamily(f"{ns}_value_lower", f"Lower end of each {what}", labels=names)
        upper = GaugeMetricFamily(f"{ns}_value_upper", f"Upper end of each {what}", labels=names)
        consts = self._consts(const)
        for name, part in parts:
            if isinstance(part, TumblingWindows):
                continue
            try:
                if isinstance(part, Sliced):
                    ends = part.intervals(self._level)
                    low: Any = {k: b[0] for k, b in ends.items()}
                    high: Any = {k: b[1] for k, b in ends.items()}
                else:
                    low, high = part.interval(self._level)
            except NoIntervalError:
                continue
            for (key, a), (_, b) in zip(_flat(name, low), _flat(name, high), strict=True):
                if key not in served:
                    continue
                lower.add_metric([key, *unwindowed, *consts], a)
                upper.add_metric([key, *unwindowed, *consts], b)
        yield lower
        yield upper

    def _consts(self, names: list[str]) -> list[str]:
        return [str(self._labels[k]) for k in names]


def _number(x: Any) -> str:
    if isinstance(x, float) and math.isfinite(x) and x.is_integer():
        return str(int(x))
    return str(x)


#: ``serve``'s default port. Not 9090, the Prometheus server's own port (an exporter there fails
#: beside a local Prometheus), nor 8000, the default of gunicorn, uvicorn and Django's development
#: server (the very servers this library instruments). The 9100-9999 range of the Prometheus
#: wiki's "Default port allocations" has been fully taken since 2023; 9464 is the default port of
#: OpenTelemetry's Prometheus exporters, which are what this is: an exporter embedded in an
#: application's process. Where one process runs both, pass another ``port`` to one of them.
DEFAULT_PORT = 9464


def serve(
    source: Metric | Callable[[], Metric | None],
    port: int = DEFAULT_PORT,
    addr: str = "127.0.0.1",
    *,
    namespace: str = "streammetrics",
    labels: dict[str, str] | None = None,
    lock: threading.Lock | None = None,
    registry: Any = None,
    interval: float | None = None,
) -> tuple[Any, Any, MetricsCollector]:
    """Serve ``source`` on ``http://addr:port/metrics`` from a background thread.

    Registers a :class:`MetricsCollector` in ``registry`` (a fresh ``CollectorRegistry`` by
    default, so the process's default metrics are not mixed in) and starts
    ``prometheus_client.start_http_server``. Returns ``(server, thread, collector)``; to stop,
    call ``server.shutdown()`` (ends the thread) and then ``server.server_close()`` (closes the
    listening socket: without it the port stays bound, and clients connect and hang).
    ``port`` defaults to :data:`DEFAULT_PORT` (9464; ``0`` picks a free port, read back from
    ``server.server_port``); ``addr`` defaults to loopback, so give ``"0.0.0.0"`` for a
    Prometheus on another machine. ``interval`` (a level such as 0.95) serves each value's
    confidence interval beside it (:class:`MetricsCollector`).
    """
    client = _client()  # (0.8.14 imported it bare here: ModuleNotFoundError, no extra named)
    CollectorRegistry, start_http_server = client.CollectorRegistry, client.start_http_server
    collector = MetricsCollector(
        source, namespace=namespace, labels=labels, lock=lock, interval=interval
    )
    registry = registry if registry is not None else CollectorRegistry()
    registry.register(collector)
    server, thread = start_http_server(port, addr=addr, registry=registry)
    return server, thread, collector
