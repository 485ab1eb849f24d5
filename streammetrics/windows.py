"""Time windows and exponential decay around any metric (kept for imports written for 0.1).

The wrappers live in :mod:`streammetrics.wrappers` (``tumbling``, ``sliding``, ``decayed``);
import them from ``streammetrics`` (``sm.TumblingWindows``, ...) or from there.
"""

from .wrappers.decayed import Decayed
from .wrappers.sliding import SlidingWindow
from .wrappers.tumbling import TumblingWindows

__all__ = ["Decayed", "SlidingWindow", "TumblingWindows"]
