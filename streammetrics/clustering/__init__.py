"""Clustering: external indices (classes against clusters) and internal indices (geometry)."""

from . import external, internal
from .external import *  # noqa: F403
from .internal import *  # noqa: F403

__all__ = [*external.__all__, *internal.__all__]
