"""The named merge rules of a declared state field (``Metric._add_state(..., merge="sum")``).

Named functions, not lambdas: every state field holds its rule, and pickle (multiprocessing
queues and pools) finds functions by their qualified name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["MERGES"]


def merge_sum(a: Any, b: Any) -> Any:
    return a + b


def merge_max(a: Any, b: Any) -> Any:
    return np.maximum(a, b) if isinstance(a, np.ndarray) else max(a, b)


def merge_min(a: Any, b: Any) -> Any:
    return np.minimum(a, b) if isinstance(a, np.ndarray) else min(a, b)


MERGES: dict[str, Callable[[Any, Any], Any]] = {
    "sum": merge_sum,
    "max": merge_max,
    "min": merge_min,
}
