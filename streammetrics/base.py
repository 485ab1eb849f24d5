"""The ``Metric`` base class: declared config and state, merge, equality and serialisation.

A metric declares its configuration and its state fields once, in ``__init__``::

    class Mean(Metric):
        def __init__(self) -> None:
            super().__init__()
            self._add_state("total", 0.0)            # merged by adding (the default)

        def update(self, values):
            x = as_scores(values, "values")           # validate and compute first ...
            return self._commit(len(x), total=self.total + float(x.sum()))  # ... then commit

        def _compute(self):
            return self.total / self.count

The base class then provides ``reset``, ``copy``, ``==``, ``+``/``sum()``, ``merge`` with its
compatibility check, ``to_bytes``/``from_bytes``/:func:`loads`, ``count`` and ``repr``.
(Serialisation, merging and copying are the mixins
:class:`~streammetrics._serialised.Serialised`, :class:`~streammetrics._metric_merge.Mergeable`
and :class:`~streammetrics._metric_copy.Copyable`.)

It also makes every metric safe to share between threads and cheap to update per request:

* each metric holds a re-entrant lock; ``update``, ``merge``, ``reset``, every read and every
  public method a subclass defines run under it (the base class wraps them when the subclass is
  created), and ``merge`` takes the locks of all its operands in one global order, so neither a
  metric merged into itself nor two metrics merged into each other from two threads deadlock;
* a metric that declares its columns (:meth:`Metric._declare_rows`) has calls with one sample
  (scalars) or a small batch checked at once and buffered (``streammetrics._pending``); the
  buffer is folded by the metric's own ``update``, vectorised, when it fills and before anything
  reads the state (every read above, and any read of a declared state field).

Contracts every metric keeps (the conformance harness in ``tests/`` checks them all):

* ``update`` validates everything and computes its increment before it assigns anything, and
  assigns through :meth:`Metric._commit`, so an update that raises leaves the state unchanged;
* ``merge`` never changes its arguments and gives the same state for any split of a stream;
* ``count == 0`` means the state is exactly the freshly constructed one, and ``compute()``
  then returns ``nan`` (or the metric's all-``nan`` result) without raising.
"""

from __future__ import annotations

import copy as _copy
import inspect
import threading
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import numpy as np

from . import _codec
from ._block import StateBlock
from ._configs import keyword_config
from ._locking import StateAttr, wrap_class
from ._merges import MERGES
from ._metric_copy import Copyable, _copy_value
from ._metric_merge import Mergeable
from ._pending import PerRequest
from ._serialised import Serialised
from .errors import InputError, NoIntervalError
from .uncertainty import check_level

__all__ = [
    "Metric",
    "StateBlock",
    "loads",
    "metric_from_spec",
    "metric_spec",
    "registered_metrics",
]

_M = TypeVar("_M", bound="Metric")

Merge = Callable[[Any, Any], Any]


_MERGES: dict[str, Merge] = MERGES


class _Field:
    __slots__ = ("default", "dtypes", "merge", "power")

    def __init__(
        self, default: Any, merge: Merge | None, dtypes: tuple[np.dtype[Any], ...], power: int = 1
    ):
        self.default = default
        self.merge = merge
        self.dtypes = dtypes
        self.power = power


_REGISTRY: dict[str, type[Metric]] = {}


def not_a_metric(name: str, value: Any) -> InputError:
    """The error for ``value`` passed as argument ``name`` where a metric instance belongs; a
    metric class (``sm.Accuracy`` for ``sm.Accuracy()``) is told so."""
    if isinstance(value, type) and issubclass(value, Metric):
        return InputError(
            f"{name}: got the class {value.__name__}, not a metric: give an instance, "
            f"{value.__name__}() (with its options, if any)"
        )
    return InputError(f"{name}: expected a streammetrics metric, got {value!r}")


def registered_metrics() -> dict[str, type[Metric]]:
    """Every metric class that :func:`loads` can build, by its wire name."""
    return dict(_REGISTRY)


class Metric(Serialised, PerRequest, Mergeable, Copyable):
    """Base of every streaming metric. See the module docstring for how to write one."""

    #: True for scores (higher is better), False for errors and losses, None for neither.
    higher_is_better: ClassVar[bool | None] = None
    #: Whether a sliding window checks this state against each other slot pair by pair (False
    #: for states made of many states, ``Sliced``: checked across all slots at once only).
    _joins_pairwise: bool = True
    #: Attributes (beside the declared fields and the configuration) that ``__init__`` sets
    #: and nothing changes afterwards: copies share them rather than deep-copy them (``Sliced``
    #: copies every slice it updates: the regression metrics' index of their columns was most
    #: of that copy).
    _constant: ClassVar[frozenset[str]] = frozenset()

    _config: dict[str, Any]
    _fields: dict[str, _Field]
    _count: int

    def __init_subclass__(cls, register: bool = True, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        wrap_class(cls)
        keyword_config(cls)
        if not register:
            return
        name = cls.__dict__.get("_wire_name", cls.__name__)
        cls._wire_name = name
        other = _REGISTRY.get(name)
        if other is not None and (other.__module__, other.__qualname__) != (
            cls.__module__,
            cls.__qualname__,
        ):
            raise TypeError(f"two metric classes claim the wire name {name!r}")
        _REGISTRY[name] = cls

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._pending = None
        self._rows = None
        self._config = {}
        self._fields = {}
        self._count = 0

    # -- declaration -------------------------------------------------------------------------

    def _add_config(self, **values: Any) -> None:
        """Record configuration values (keyword arguments of ``__init__``, already validated)."""
        for name, value in values.items():
            if isinstance(value, np.generic):
                # A numpy scalar as its Python value (``average=np.str_("macro")`` read from a
                # numpy or pandas config): the bytes were the same, but a merge compared the
                # types and refused the state's own decoded copy (0.8.11).
                value = value.item()
            try:
                _codec.encode(value)
            except TypeError as exc:
                raise TypeError(f"config {name!r} cannot be serialised: {exc}") from None
            except UnicodeEncodeError:  # (a lone surrogate, in pos_label or labels)
                raise InputError(
                    f"{name}: {value!r} holds text without a UTF-8 form (a lone surrogate)"
                ) from None
            self._config[name] = _plus_zero(_copy.deepcopy(value))

    def _add_state(
        self,
        name: str,
        default: Any,
        merge: str | Merge | None = "sum",
        *,
        dtypes: tuple[Any, ...] = (),
        power: int = 1,
    ) -> None:
        """Declare a state field, set it to ``default``, and say how two values of it merge.

        ``power`` says how a sum of weights scales when every sample weight is multiplied by
        ``f``: by ``f ** power`` (1 for sums of weights, 2 for sums of squared weights);
        ``Decayed`` relies on it.

        ``merge`` is ``"sum"``, ``"max"``, ``"min"`` or a function ``(mine, theirs) -> merged``
        that returns a new value; ``None`` for a :class:`StateBlock` (it merges itself) or for a
        field the metric merges in its own ``_merge_from``. ``dtypes`` lists further dtypes an
        array field may hold besides the default's (e.g. int64 counts that become float64 once
        weights arrive); for a float field, ``int64`` among them keeps an integer value an
        integer on the wire and back (``Decayed.latest``).
        """
        if name == "count" or name in self._fields:
            raise TypeError(f"state field {name!r} is reserved or declared twice")
        if not isinstance(default, (np.ndarray, bool, int, float, str, list, dict, StateBlock)):
            if not isinstance(default, Metric):
                raise TypeError(f"state field {name!r}: {type(default).__name__} is not storable")
        fn = _MERGES[merge] if isinstance(merge, str) else merge
        kinds = tuple(np.dtype(d) for d in dtypes)
        if isinstance(default, np.ndarray):
            kinds = (default.dtype, *kinds)
        self._fields[name] = _Field(_copy_value(default), fn, kinds, power)
        cls = type(self)
        # Reads of the field fold pending rows first; nested metrics fold their own on read.
        if not isinstance(default, Metric) and not isinstance(getattr(cls, name, None), StateAttr):
            if any(name in klass.__dict__ for klass in cls.__mro__):
                raise TypeError(f"state field {name!r} hides an attribute of {cls.__name__}")
            setattr(cls, name, StateAttr(name))
        setattr(self, name, _copy_value(default))

    # -- the update protocol -----------------------------------------------------------------

    def _commit(self: _M, n: int, /, **values: Any) -> _M:
        """Assign new values to state fields and add ``n`` samples to ``count``.

        The last step of every ``update``: everything that can fail happens before it, and
        the row count's bound (2**53, as merges and decoding hold it) is checked first.
        """
        self._check_room(n)
        for name, value in values.items():
            setattr(self, name, value)
        self._count += int(n)
        return self

    def _check_room(self, n: int) -> None:
        """``CountOverflowError`` if ``n`` more rows would count past 2**53 (the bound merges
        and decoding hold). Wrappers that update their parts in place call it first."""
        count = self._count + int(n)
        if count > _codec.COUNT_LIMIT:
            raise _codec.CountOverflowError(
                f"count: {n} more rows would count {count} rows, past 2**53; refused, the "
                "state is unchanged"
            )

    @property
    def count(self) -> int:
        """Samples seen so far (sample weights do not change it)."""
        with self._lock:
            if self._pending is not None:
                self._fold()
            return self._count

    @property
    def config(self) -> dict[str, Any]:
        """A copy of the configuration, as the keyword arguments that rebuild this metric."""
        return _copy.deepcopy(self._config)

    # -- compute -----------------------------------------------------------------------------

    def compute(self) -> Any:
        """The metric's value over everything seen; ``nan`` (or all-``nan``) when empty."""
        with self._lock:
            if self._pending is not None:
                self._fold()
            if self._count == 0:
                return self._empty_result()
            return self._compute()

    def _compute(self) -> Any:
        raise NotImplementedError

    def _empty_result(self) -> Any:
        return float("nan")

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """A ``level`` confidence interval for ``compute()``, from the state alone.

        Metrics with a closed form override this (``docs/uncertainty.md``); here: no closed form,
        so a :class:`~streammetrics.errors.NoIntervalError` that points to ``Bootstrap`` (a
        ``level`` outside (0, 1) is an ``InputError`` first, as for every metric).
        """
        check_level(level)
        name = type(self).__name__
        update = getattr(type(self), "update", None)
        params = inspect.signature(update).parameters if callable(update) else {}
        # What Bootstrap asks of the metric it wraps: weights, or rows it may resample.
        many = isinstance(self._empty_result(), (dict, tuple, list))  # a report, a curve
        if many and getattr(self, "_template", None) is None:
            advice = (
                "nor has a bootstrap one (its value is many values): take the interval of a "
                "metric of one of them"
            )
        elif "sample_weight" in params or getattr(type(self), "bootstrap_by_rows", False):
            advice = f"wrap it in streammetrics.Bootstrap({name}(...))"
        elif callable(getattr(self, "intervals", None)):  # Sliced: one value per slice
            advice = (
                f"its value is one per slice: {name}.intervals(level) gives one per slice (for "
                f"a metric without a closed form, {name}(streammetrics.Bootstrap(metric), ...))"
            )
        elif isinstance(getattr(type(self), "windows", None), property):  # TumblingWindows
            advice = (
                f"its value is one per window: {name}.windows[start].interval(level) gives "
                f"each window's (for a metric without a closed form, "
                f"{name}(streammetrics.Bootstrap(metric), ...))"
            )
        elif getattr(self, "_template", None) is not None:  # the windows
            advice = (
                f"Bootstrap cannot wrap {name} (its update takes no sample_weight); wrap the "
                f"metric inside it instead, {name}(streammetrics.Bootstrap(metric), ...)"
            )
        else:
            advice = "nor can Bootstrap wrap it (its update takes no sample_weight)"
        raise NoIntervalError(
            f"{name} has no closed-form confidence interval (docs/uncertainty.md); {advice}"
        )

    # -- lifecycle ---------------------------------------------------------------------------

    def reset(self: _M) -> _M:
        """Forget everything seen; keeps the configuration."""
        with self._lock:
            self._drop_pending()
            if self._rows is not None:
                self._rows.restart()
            for name, field in self._fields.items():
                setattr(self, name, _copy_value(field.default))
            self._count = 0
            return self

    reset.__sm_locked__ = True  # type: ignore[attr-defined]

    # -- ``+``, ``sum()``, equality and repr ------------------------------------------------

    def __add__(self: _M, other: _M) -> _M:
        if not isinstance(other, Metric):
            return NotImplemented
        return self._copy(for_merge=True).merge(other)

    def __radd__(self: _M, other: Any) -> _M:
        if isinstance(other, int) and other == 0:  # so that sum([m1, m2]) works
            return self.copy()
        return NotImplemented

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Metric):
            return NotImplemented
        return type(self) is type(other) and self.to_bytes() == other.to_bytes()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._config.items())
        sep = ", " if args else ""
        return f"{type(self).__name__}({args}{sep}count={self.count})"

    # -- the per-request count bound ----------------------------------------------------------

    def _held_total(self) -> float:
        """The largest count or weight total among the declared blocks (the count bound)."""
        values = [self.__dict__.get(name) for name in self._fields]
        return max((v.held_total() for v in values if isinstance(v, StateBlock)), default=0.0)


def _plus_zero(value: Any) -> Any:
    """``value`` with every float ``-0.0`` in it (nested in lists, tuples and dicts) made
    ``0.0``: configurations merge when equal, and ``-0.0 == 0.0``, but the codec writes them
    apart, so a merge's bytes depended on which came first (0.8.18)."""
    if type(value) is float:
        return value + 0.0
    if isinstance(value, dict):
        return {k: _plus_zero(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plus_zero(v) for v in value)
    return value


# Decoding and the registry look-ups live beside the base class; imported last, since they use it.
from ._loading import loads, metric_from_spec, metric_spec  # noqa: E402
