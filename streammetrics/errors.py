"""The errors of the public API, and its one warning.

Every error subclasses :class:`ValueError`, so code written against scikit-learn's habit of
raising ``ValueError`` for bad input keeps working. The warning is a :class:`UserWarning`.
"""

from __future__ import annotations

__all__ = [
    "IncompatibleStateError",
    "InputError",
    "NoIntervalError",
    "StateDecodeError",
    "StreamMetricsError",
    "UndefinedMetricWarning",
    "UnknownArgumentError",
]


class StreamMetricsError(ValueError):
    """Base of every error streammetrics raises on purpose."""


class InputError(StreamMetricsError):
    """Bad input to ``update`` or to a constructor.

    The message names the argument and says what was wrong with it. An ``update`` that raises
    this leaves the metric's state exactly as it was.
    """


class UnknownArgumentError(InputError, TypeError):
    """A keyword argument the call does not take (``Accuracy().update(y, p, ids=...)``).

    An :class:`InputError` naming the argument and the metric's public class, and a
    :class:`TypeError`, as Python raises for an unexpected keyword.
    """


class IncompatibleStateError(StreamMetricsError):
    """Two metrics cannot be merged: different classes or different configurations."""


class StateDecodeError(StreamMetricsError):
    """Bytes that are not a valid serialised state (truncated, corrupt, wrong version, ...)."""


class NoIntervalError(StreamMetricsError, TypeError):
    """The metric has no closed-form confidence interval: wrap it in ``Bootstrap`` instead.

    Raised by ``interval()`` on metrics whose value is not a float (tables, reports, curves) or
    whose value has no sound closed-form interval (clustering indices, BLEU, chrF, mAP). It is a
    ``TypeError`` as well, since the method does not apply to that kind of metric.
    """


class UndefinedMetricWarning(UserWarning):
    """A value that is defined but says nothing, as scikit-learn's warning of that name: for
    example ``TopKAccuracy(k)`` over at most ``k`` classes, where every row is a hit."""
