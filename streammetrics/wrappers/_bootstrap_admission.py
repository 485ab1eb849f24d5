"""Which metrics a ``Bootstrap`` wraps, and what to bootstrap instead of one it refuses.

A metric whose ``update`` takes ``sample_weight`` is bootstrapped by weights; one without, only
when its class sets ``bootstrap_by_rows`` (its rows are independent units it may repeat). A
collection, or a wrapper keyed by a column of its own (``Sliced``, the time windows), is
refused; the refusals, and that of a value with no one number per replicate, say which way
round to wrap instead (:func:`instead`).
"""

from __future__ import annotations

import inspect

from ..base import Metric

__all__ = ["instead", "is_wrapper", "takes_weights"]


def takes_weights(metric: Metric) -> bool:
    """Whether ``metric``'s ``update`` takes ``sample_weight``."""
    try:
        params = inspect.signature(type(metric).update).parameters  # type: ignore[attr-defined]
    except (AttributeError, TypeError, ValueError):
        return False
    return "sample_weight" in params


def is_wrapper(metric: Metric) -> bool:
    """Whether ``metric`` is a collection, or a wrapper keyed by a column of its own."""
    from .collection import MetricCollection

    return isinstance(metric, MetricCollection) or bool(getattr(type(metric), "own_keyword", None))


def instead(metric: Metric) -> str:
    """What to bootstrap instead of ``metric`` (empty when nothing more specific applies)."""
    from .collection import MetricCollection
    from .decayed import Decayed

    if isinstance(metric, Decayed):
        return ""  # (wrapping the other way would lose the decay)
    if isinstance(metric, MetricCollection):
        return ": bootstrap each member, MetricCollection(a=Bootstrap(...), b=Bootstrap(...))"
    if getattr(type(metric), "own_keyword", None):
        name = type(metric).__name__
        each = "slice" if name == "Sliced" else "window"
        rest = "" if name == "Sliced" else ", ..."
        return f": to bootstrap each {each}, wrap the other way, {name}(Bootstrap(metric){rest})"
    if hasattr(type(metric), "key_argument") and hasattr(metric, "interval"):
        return (
            f": {type(metric).__name__}.interval() already gives a t-interval over its "
            "groups or queries"
        )
    return ""
