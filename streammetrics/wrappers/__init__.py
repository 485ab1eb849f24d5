"""Metrics that wrap metrics: collections, time windows, decay, slices and the bootstrap.

One module per wrapper (``collection``, ``tumbling``, ``sliding``, ``decayed``, ``sliced``,
``bootstrap``); ``_rows`` splits a batch's rows between sub-metrics and ``_windowing`` holds what
the time wrappers share.

Each wrapper is itself a :class:`~streammetrics.base.Metric`: it merges, serialises and compares
like any other, and holds sub-states of the metric it wraps (declared as state fields, decoded
and checked by the registry like any top-level state).
"""

from .bootstrap import Bootstrap
from .collection import MetricCollection
from .decayed import Decayed
from .sliced import Sliced
from .sliding import SlidingWindow
from .tumbling import TumblingWindows

__all__ = ["Bootstrap", "Decayed", "MetricCollection", "Sliced", "SlidingWindow", "TumblingWindows"]
