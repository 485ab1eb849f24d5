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
(Serialisation is the mixin :class:`~streammetrics._serialised.Serialised`.)

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
from ._configs import keyword_config, same_config
from ._locking import StateAttr, wrap_class
from ._merges import MERGES
from ._pending import PerRequest
from ._serialised import Serialised
from .errors import IncompatibleStateError, InputError, NoIntervalError
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


class Metric(Serialised, PerRequest):
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
                self._rows.forget()
            for name, field in self._fields.items():
                setattr(self, name, _copy_value(field.default))
            self._count = 0
            return self

    reset.__sm_locked__ = True  # type: ignore[attr-defined]

    def copy(self: _M) -> _M:
        """An independent copy with the same configuration and state (and a lock of its own).

        Copies the declared state fields and any other mutable attribute, and shares what is
        fixed at construction (the configuration, scalars, template metrics); classes that keep
        state outside declared fields (their own ``_merge_from``, ``_state_wire`` or
        ``_load_state``) are deep-copied.
        """
        return self._copy(for_merge=False)

    def _copy(self: _M, for_merge: bool) -> _M:
        """:meth:`copy`; ``for_merge``: a copy that a merge is about to change (``a + b``),
        which keeps none of the trust the per-request path learnt (a merge forgets it) and
        takes its blocks' :meth:`StateBlock.merge_target` copies."""
        with self._lock:
            if self._pending is not None:
                self._fold()
            if not type(self)._state_in_fields():
                return _copy.deepcopy(self)

            def field_copy(value: Any) -> Any:
                if for_merge and isinstance(value, StateBlock):
                    return value.merge_target()
                return _copy_value(value)

            return self._twin(field_copy, blank_rows=for_merge)

    def _blank_for_load(self: _M) -> _M | None:
        """A metric of this class and configuration for :func:`loads` to fill, built without
        ``__init__`` (whose checks the configuration already passed here); its declared fields
        are this metric's own objects until the loader replaces every one of them. None for
        classes that keep state outside declared fields (the loader then builds from config).
        Decoding 100,000 slices of a ``Sliced`` builds 100,000 metrics: this is most of it."""
        if not type(self)._state_in_fields() or self._pending is not None:
            return None
        return self._twin(None, blank_rows=True)

    @classmethod
    def _state_in_fields(cls) -> bool:
        """Whether the class keeps all its state in declared fields (the base class's merge,
        wire form and loading): it can then be copied attribute by attribute."""
        return (
            cls._merge_from is Metric._merge_from
            and cls._state_wire is Metric._state_wire
            and cls._load_state is Metric._load_state
        )

    def _twin(self: _M, field_copy: Callable[[Any], Any] | None, blank_rows: bool) -> _M:
        """A new instance of this class from this one's attributes: a lock of its own, its
        row declaration blank or copied, declared fields through ``field_copy`` (``None``:
        kept as they are), what is fixed at construction shared and anything else mutable
        deep-copied."""
        cls = type(self)
        new = cls.__new__(cls)
        attrs = self.__dict__.copy()
        for name in GUARDED_METHODS & attrs.keys():  # (a collection's guard: not the copy's)
            del attrs[name]
        attrs["_lock"] = threading.RLock()
        rows = self._rows
        if rows is not None:
            attrs["_rows"] = rows.blank() if blank_rows else rows.copy()
        fields = self._fields
        for name, value in attrs.items():
            if name in fields:
                if field_copy is not None:
                    attrs[name] = field_copy(value)
            elif not (name in _SHARED or name in cls._constant or isinstance(value, _IMMUTABLE)):
                attrs[name] = _copy.deepcopy(value)
        new.__dict__.update(attrs)
        return new

    def __getstate__(self) -> dict[str, Any]:
        # pickle and copy.copy (Dask and Spark ship metrics this way): a deep snapshot taken
        # under the lock, pending rows folded, the lock left behind. (0.8.4 returned the live
        # containers and released the lock: pickle then walked them while other threads
        # updated them, and raised, or its copies' flushes lost their queued rows.)
        return self._snapshot({})

    def __deepcopy__(self: _M, memo: dict[int, Any]) -> _M:
        new = object.__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update(self._snapshot(memo))
        new._lock = threading.RLock()
        return new

    def _snapshot(self, memo: dict[int, Any]) -> dict[str, Any]:
        with self._lock:
            if self._pending is not None:
                self._fold()
            skip = GUARDED_METHODS & self.__dict__.keys()
            state = {k: v for k, v in self.__dict__.items() if k != "_lock" and k not in skip}
            return _copy.deepcopy(state, memo)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    # -- merge -------------------------------------------------------------------------------

    def _check_compatible(self, other: Any) -> None:
        self._check_kind(other)
        for name in self._fields:
            mine, theirs = getattr(self, name), getattr(other, name)
            if isinstance(mine, StateBlock):
                mine.check_mergeable(theirs)
            elif isinstance(mine, Metric):
                mine._check_compatible(theirs)

    def _check_kind(self, other: Any) -> None:
        """The class and configuration of ``other`` are this metric's (neither changes after
        construction: no lock is needed to read them)."""
        if type(other) is not type(self):
            raise IncompatibleStateError(
                f"cannot merge {type(other).__name__} into {type(self).__name__}"
            )
        # Compared as canonical bytes, so that a nan in a config equals itself.
        if not same_config(self._config, other._config):
            diff = {
                k: (self._config.get(k), other._config.get(k))
                for k in set(self._config) | set(other._config)
                if not same_config(self._config.get(k), other._config.get(k))
            }
            desc = ", ".join(f"{k}: {a!r} here, {b!r} there" for k, (a, b) in sorted(diff.items()))
            raise IncompatibleStateError(
                f"cannot merge {type(self).__name__} states with different config ({desc})"
            )

    def _check_compatible_together(self, others: tuple[Any, ...]) -> None:
        """What :meth:`_check_compatible`, pair by pair, cannot see: a conflict among the
        operands of one merge (each compatible with ``self``, not with each other)."""

    def merge(self: _M, *others: _M) -> _M:
        """Fold the states of ``others`` into this one (in place); ``others`` do not change.

        Raises :class:`IncompatibleStateError` (before changing anything) if any of them is of
        another class or configuration. Holds the locks of this metric and of every metric of
        its class among ``others`` (taken in one global order, so concurrent merges in opposite
        directions cannot deadlock).
        """
        return self._combine(others, join=False)

    def _combine(self: _M, others: tuple[Any, ...], join: bool) -> _M:
        """``merge`` (or, for keyed metrics, ``join``) under every operand's lock."""
        # Class and configuration first, without the locks: a metric nested in this one (a
        # collection's member) would otherwise be locked before it, the reverse of the order
        # an update takes them in, and the two threads would wait for each other for good.
        for other in others:
            self._check_kind(other)
        involved = {id(m): m for m in (self, *others) if isinstance(m, Metric)}
        locks = [involved[k]._lock for k in sorted(involved)]
        for lock in locks:
            lock.acquire()
        try:
            for metric in involved.values():
                if metric._pending is not None:
                    metric._fold()
            for other in others:
                self._check_compatible(other)
            if len(others) > 1:
                self._check_compatible_together(others)
            # The row count has the bound of every count (a decoded state may sit at it).
            _codec.check_sum("count", "i", self._count, *(o._count for o in others))
            if len(others) > 1:  # pairs checked above may still pass a weight bound together
                held = [m._held_total() for m in (self, *others)]
                _codec.check_sum("weights", "f", *held)
            parts = [o.copy() if o is self else o for o in others if o._count]
            if parts:
                self._merge_many(parts, join)
                self._count += sum(o._count for o in parts)
            if self._rows is not None:
                self._rows.forget()
            return self
        finally:
            for lock in reversed(locks):
                lock.release()

    def _merge_many(self, others: list[Any], join: bool = False) -> None:
        """Merge the states of ``others`` (non-empty, checked compatible) into ``self``.

        Field by field in one pass (:meth:`StateBlock.merge_many`, or ``join_many`` when
        ``join``: the operands hold disjoint keys) unless the class merges in its own
        ``_merge_from``, which is then called once per operand. The caller adds ``count``.
        """
        if type(self)._merge_from is not Metric._merge_from:
            if len(others) > 1:
                # Several operands merge one after another: into a new empty state first,
                # then that one into this, checked whole as a pair. A bound that only the
                # last operand passes must not leave the first ones merged in (0.8.14 did:
                # the windows and Decayed then wrote bytes that loads refused), and nothing
                # here copies this state (a first version of 0.8.15 did: 80x the time of
                # `total.merge(*small)` into 5,000 windows).
                combined = type(self)._from_config(self._config)
                for other in others:
                    combined._merge_from(other)
                combined._count = sum(o._count for o in others)
                self._check_compatible(combined)
                others = [combined]
            self._merge_from(others[0])  # (the pair was checked whole: it cannot fail)
            return
        for name, field in self._fields.items():
            mine = getattr(self, name)
            theirs = [getattr(o, name) for o in others]
            if isinstance(mine, StateBlock):
                mine.join_many(theirs) if join else mine.merge_many(theirs)
            elif isinstance(mine, Metric):
                mine._combine(tuple(theirs), join and hasattr(mine, "join"))
            elif field.merge is not None:
                value = mine
                for t in theirs:
                    value = field.merge(value, _copy.deepcopy(t))
                setattr(self, name, value)

    def _merge_from(self, other: Any) -> None:
        """Merge the declared fields of ``other`` into ``self`` (the caller adds ``count``)."""
        for name, field in self._fields.items():
            mine, theirs = getattr(self, name), getattr(other, name)
            if isinstance(mine, (StateBlock, Metric)):
                mine.merge(theirs)
            elif field.merge is not None:
                setattr(self, name, field.merge(mine, _copy.deepcopy(theirs)))

    def __add__(self: _M, other: _M) -> _M:
        if not isinstance(other, Metric):
            return NotImplemented
        return self._copy(for_merge=True).merge(other)

    def __radd__(self: _M, other: Any) -> _M:
        if isinstance(other, int) and other == 0:  # so that sum([m1, m2]) works
            return self.copy()
        return NotImplemented

    # -- equality and repr -------------------------------------------------------------------

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


# Attributes a copy shares: set once in __init__ and never changed in place afterwards.
_SHARED = frozenset({"_config", "_fields", "_lock", "_rows", "_pending"})
#: Methods a ``MetricCollection`` shadows on a member it hands out (``collection[name]``), to
#: refuse changing the member alone; copies, pickles and snapshots of the member drop them.
GUARDED_METHODS = frozenset({"update", "merge", "join", "reset"})
# Values a copy shares: immutable, or template metrics (only ever copied, never updated).
_IMMUTABLE = (int, float, str, bool, bytes, tuple, frozenset, type(None), Metric)


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


def _copy_value(value: Any) -> Any:
    if isinstance(value, (StateBlock, Metric)):
        return value.copy()
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (list, dict)):
        return _copy.deepcopy(value)
    return value  # int, float, str, bool: immutable


# Decoding and the registry look-ups live beside the base class; imported last, since they use it.
from ._loading import loads, metric_from_spec, metric_spec  # noqa: E402
