"""Metrics that wrap metrics: per-slice values and bootstrap intervals.

Each wrapper is itself a :class:`~streammetrics.base.Metric`: it merges, serialises and compares
like any other, and holds sub-states of the metric it wraps (declared as state fields, decoded
and checked by the registry like any top-level state).
"""

from .bootstrap import Bootstrap
from .sliced import Sliced

__all__ = ["Bootstrap", "Sliced"]
