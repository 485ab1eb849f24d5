"""Warnings that point at the user's line, however deep in streammetrics they are raised."""

from __future__ import annotations

import os
import sys
import warnings
from types import FrameType

__all__ = ["warn"]

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` at the first frame outside streammetrics: the user's call, which
    reaches the warning through a varying depth of wrappers and generators (a fixed
    ``stacklevel`` would point into the package, where a filter on the user's module never
    matches)."""
    warnings.warn(message, category, stacklevel=_outside())


def _outside() -> int:
    frame: FrameType | None = sys._getframe(2)  # the caller of warn()
    level = 2  # (1 is warn() itself)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level
