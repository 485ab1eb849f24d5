"""streammetrics: streaming, mergeable, serialisable evaluation metrics.

Every metric is a small state with ``update`` / ``merge`` / ``compute``; states serialise to
msgpack bytes (:meth:`Metric.to_bytes`, :func:`loads`) so that partial states from shards,
processes, machines or time windows combine into the exact result.
"""

# Every family module is imported here so that loads() knows all of their classes.
from . import classification, clustering, detection, ranking, regression, text  # noqa: F401
from ._codec import CountOverflowError
from .base import Metric, StateBlock, loads, registered_metrics
from .classification import *  # noqa: F403
from .clustering import *  # noqa: F403
from .errors import (
    IncompatibleStateError,
    InputError,
    NoIntervalError,
    StateDecodeError,
    StreamMetricsError,
    UndefinedMetricWarning,
    UnknownArgumentError,
)
from .regression import *  # noqa: F403
from .wrappers import Bootstrap, Sliced
from .wrappers.collection import MetricCollection
from .wrappers.decayed import Decayed
from .wrappers.sliding import SlidingWindow
from .wrappers.tumbling import TumblingWindows

__version__ = "0.8.30"

__all__ = [
    "Bootstrap",
    "Sliced",
    "Decayed",
    "CountOverflowError",
    "IncompatibleStateError",
    "InputError",
    "Metric",
    "MetricCollection",
    "NoIntervalError",
    "StateBlock",
    "StateDecodeError",
    "StreamMetricsError",
    "UndefinedMetricWarning",
    "UnknownArgumentError",
    "loads",
    "registered_metrics",
    "SlidingWindow",
    "TumblingWindows",
    *classification.__all__,
    *clustering.__all__,
    *regression.__all__,
]
