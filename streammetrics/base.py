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

Contracts every metric keeps (the conformance harness in ``tests/`` checks them all):

* ``update`` validates everything and computes its increment before it assigns anything, and
  assigns through :meth:`Metric._commit`, so an update that raises leaves the state unchanged;
* ``merge`` never changes its arguments and gives the same state for any split of a stream;
* ``count == 0`` means the state is exactly the freshly constructed one, and ``compute()``
  then returns ``nan`` (or the metric's all-``nan`` result) without raising.
"""

from __future__ import annotations

import copy as _copy
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import numpy as np

from . import _codec
from .errors import IncompatibleStateError, InputError, NoIntervalError, StateDecodeError

__all__ = [
    "Metric",
    "StateBlock",
    "loads",
    "metric_from_spec",
    "metric_spec",
    "registered_metrics",
]

_M = TypeVar("_M", bound="Metric")
_B = TypeVar("_B", bound="StateBlock")

Merge = Callable[[Any, Any], Any]
_MERGES: dict[str, Merge] = {
    "sum": lambda a, b: a + b,
    "max": lambda a, b: np.maximum(a, b) if isinstance(a, np.ndarray) else max(a, b),
    "min": lambda a, b: np.minimum(a, b) if isinstance(a, np.ndarray) else min(a, b),
}


class StateBlock(ABC):
    """A reusable piece of mergeable state (contingency counts, score buckets, moments, ...).

    A block owns its own merge and wire form, so a metric declares it as one state field and the
    base class merges, copies, compares and serialises it like any other field.
    """

    @abstractmethod
    def merge(self, other: Any) -> None:
        """Fold ``other`` (a block of the same type and configuration) into ``self``.

        Must not keep references to ``other``'s mutable parts.
        """

    @abstractmethod
    def to_wire(self) -> Any:
        """The block's logical contents as a codec tree (canonical: no arrival-order traces)."""

    @abstractmethod
    def from_wire(self: _B, wire: Any) -> _B:
        """A new block with this block's configuration and the contents ``wire`` describes.

        Raises ``ValueError`` or ``TypeError`` when ``wire`` is not a valid contents tree.
        """

    #: True for blocks made of counts or weights, which :meth:`scale` multiplies (``Decayed``
    #: relies on it to forget old data).
    scalable: ClassVar[bool] = False

    def scale(self, factor: float) -> None:
        """Multiply every count or weight by ``factor``, in place (``scalable`` blocks only)."""
        raise TypeError(f"{type(self).__name__} holds no counts or weights to scale")

    def check_mergeable(self, other: Any) -> None:  # noqa: B027 - most blocks accept any peer
        """Raise :class:`IncompatibleStateError` if ``other`` cannot be merged into ``self``.

        Called for every block before a merge changes anything, so that a merge is all or nothing.
        """

    def copy(self: _B) -> _B:
        return _copy.deepcopy(self)

    def __eq__(self, other: object) -> bool:
        if type(self) is not type(other):
            return NotImplemented
        assert isinstance(other, StateBlock)
        return _codec.encode(self.to_wire()) == _codec.encode(other.to_wire())

    __hash__ = None  # type: ignore[assignment]


class _Field:
    __slots__ = ("default", "dtypes", "merge")

    def __init__(self, default: Any, merge: Merge | None, dtypes: tuple[np.dtype[Any], ...]):
        self.default = default
        self.merge = merge
        self.dtypes = dtypes


_REGISTRY: dict[str, type[Metric]] = {}


def registered_metrics() -> dict[str, type[Metric]]:
    """Every metric class that :func:`loads` can build, by its wire name."""
    return dict(_REGISTRY)


class Metric:
    """Base of every streaming metric. See the module docstring for how to write one."""

    #: Version of this class's state layout; bump it with an ``_upgrade_state`` for the old one.
    _schema: ClassVar[int] = 1
    #: True for scores (higher is better), False for errors and losses, None for neither.
    higher_is_better: ClassVar[bool | None] = None
    #: The name written on the wire; defaults to the class name.
    _wire_name: ClassVar[str]

    _config: dict[str, Any]
    _fields: dict[str, _Field]
    _count: int

    def __init_subclass__(cls, register: bool = True, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
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
        self._config = {}
        self._fields = {}
        self._count = 0

    # -- declaration -------------------------------------------------------------------------

    def _add_config(self, **values: Any) -> None:
        """Record configuration values (keyword arguments of ``__init__``, already validated)."""
        for name, value in values.items():
            try:
                _codec.encode(value)
            except TypeError as exc:
                raise TypeError(f"config {name!r} cannot be serialised: {exc}") from None
            self._config[name] = _copy.deepcopy(value)

    def _add_state(
        self,
        name: str,
        default: Any,
        merge: str | Merge | None = "sum",
        *,
        dtypes: tuple[Any, ...] = (),
    ) -> None:
        """Declare a state field, set it to ``default``, and say how two values of it merge.

        ``merge`` is ``"sum"``, ``"max"``, ``"min"`` or a function ``(mine, theirs) -> merged``
        that returns a new value; ``None`` for a :class:`StateBlock` (it merges itself) or for a
        field the metric merges in its own ``_merge_from``. ``dtypes`` lists further dtypes an
        array field may hold besides the default's (e.g. int64 counts that become float64 once
        weights arrive).
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
        self._fields[name] = _Field(_copy.deepcopy(default), fn, kinds)
        setattr(self, name, _copy.deepcopy(default))

    # -- the update protocol -----------------------------------------------------------------

    def _commit(self: _M, n: int, **values: Any) -> _M:
        """Assign new values to state fields and add ``n`` samples to ``count``.

        The last step of every ``update``: everything that can fail happens before it.
        """
        for name, value in values.items():
            setattr(self, name, value)
        self._count += int(n)
        return self

    @property
    def count(self) -> int:
        """Samples seen so far (sample weights do not change it)."""
        return self._count

    @property
    def config(self) -> dict[str, Any]:
        """A copy of the configuration, as the keyword arguments that rebuild this metric."""
        return _copy.deepcopy(self._config)

    # -- compute -----------------------------------------------------------------------------

    def compute(self) -> Any:
        """The metric's value over everything seen; ``nan`` (or all-``nan``) when empty."""
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
        so a :class:`~streammetrics.errors.NoIntervalError` that points to ``Bootstrap``.
        """
        name = type(self).__name__
        raise NoIntervalError(
            f"{name} has no closed-form confidence interval (its value is not a float with a "
            f"known sampling distribution); wrap it in streammetrics.Bootstrap({name}(...))"
        )

    # -- lifecycle ---------------------------------------------------------------------------

    def reset(self: _M) -> _M:
        """Forget everything seen; keeps the configuration."""
        for name, field in self._fields.items():
            setattr(self, name, _copy.deepcopy(field.default))
        self._count = 0
        return self

    def copy(self: _M) -> _M:
        """An independent copy with the same configuration and state."""
        return _copy.deepcopy(self)

    # -- merge -------------------------------------------------------------------------------

    def _check_compatible(self, other: Any) -> None:
        if type(other) is not type(self):
            raise IncompatibleStateError(
                f"cannot merge {type(other).__name__} into {type(self).__name__}"
            )
        # Compared as canonical bytes, so that a nan in a config equals itself.
        if _codec.encode(other._config) != _codec.encode(self._config):
            diff = {
                k: (self._config.get(k), other._config.get(k))
                for k in set(self._config) | set(other._config)
                if not _same(self._config.get(k), other._config.get(k))
            }
            desc = ", ".join(f"{k}: {a!r} here, {b!r} there" for k, (a, b) in sorted(diff.items()))
            raise IncompatibleStateError(
                f"cannot merge {type(self).__name__} states with different config ({desc})"
            )
        for name in self._fields:
            mine, theirs = getattr(self, name), getattr(other, name)
            if isinstance(mine, StateBlock):
                mine.check_mergeable(theirs)
            elif isinstance(mine, Metric):
                mine._check_compatible(theirs)

    def merge(self: _M, *others: _M) -> _M:
        """Fold the states of ``others`` into this one (in place); ``others`` do not change.

        Raises :class:`IncompatibleStateError` (before changing anything) if any of them is of
        another class or configuration.
        """
        for other in others:
            self._check_compatible(other)
        for other in others:
            if other is self:
                other = other.copy()
            if other._count == 0:
                continue
            self._merge_from(other)
            self._count += other._count
        return self

    def _merge_from(self, other: Any) -> None:
        """Merge the declared fields of ``other`` into ``self`` (the caller adds ``count``)."""
        for name, field in self._fields.items():
            mine, theirs = getattr(self, name), getattr(other, name)
            if isinstance(mine, (StateBlock, Metric)):
                mine.merge(theirs)
            elif field.merge is not None:
                setattr(self, name, field.merge(mine, _copy.deepcopy(theirs)))

    def __add__(self: _M, other: _M) -> _M:
        return self.copy().merge(other)

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
        return f"{type(self).__name__}({args}{sep}count={self._count})"

    # -- serialisation -----------------------------------------------------------------------

    def _state_wire(self) -> dict[str, Any]:
        state: dict[str, Any] = {"count": self._count}
        for name in self._fields:
            value = getattr(self, name)
            if isinstance(value, StateBlock):
                value = value.to_wire()
            elif isinstance(value, Metric):
                value = value._envelope()
            state[name] = value
        return state

    def _envelope(self) -> dict[str, Any]:
        return _codec.envelope_tree(self._wire_name, self._schema, self._config, self._state_wire())

    def to_bytes(self) -> bytes:
        """The state as canonical msgpack bytes (``docs/format.md``), read by :func:`loads`."""
        return _codec.encode(self._envelope())

    @classmethod
    def from_bytes(cls: type[_M], blob: bytes) -> _M:
        """Rebuild a metric of this class from :meth:`to_bytes` output.

        Raises :class:`StateDecodeError` for anything else, including a valid blob of another
        class.
        """
        metric = loads(blob)
        if cls is not Metric and not isinstance(metric, cls):
            raise StateDecodeError(
                f"the blob holds a {type(metric).__name__}, not a {cls.__name__}"
            )
        return metric  # type: ignore[return-value]

    @classmethod
    def _from_config(cls: type[_M], config: dict[str, Any]) -> _M:
        return cls(**config)

    @classmethod
    def _upgrade_state(cls, state: Any, schema: int) -> Any:
        """Turn the state of an older schema into the current one (nothing to do at schema 1)."""
        return state

    def _load_state(self, state: Any) -> None:
        if not isinstance(state, dict):
            raise StateDecodeError("the state is not a map of field names to values")
        expected = {"count", *self._fields}
        if set(state) != expected:
            missing, extra = expected - set(state), set(state) - expected
            raise StateDecodeError(
                f"{type(self).__name__} state fields differ: missing {sorted(missing)}, "
                f"unexpected {sorted(map(str, extra))}"
            )
        count = state["count"]
        if type(count) is not int or count < 0:
            raise StateDecodeError("count must be a non-negative integer")
        for name, field in self._fields.items():
            setattr(self, name, _load_field(name, field, state[name]))
        self._count = count
        try:
            self._validate_state()
        except (InputError, TypeError, ValueError) as exc:
            if isinstance(exc, StateDecodeError):
                raise
            raise StateDecodeError(f"inconsistent {type(self).__name__} state: {exc}") from exc

    def _validate_state(self) -> None:
        """Check invariants across fields after decoding; raise ``ValueError`` if one fails.

        Decoding has already checked each field's type (and an array's dtype and number of
        dimensions). Metrics whose ``compute`` relies on more (matching shapes, non-negative
        counts) check it here.
        """


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def _load_field(name: str, field: _Field, wire: Any) -> Any:
    default = field.default
    where = f"state field {name!r}"
    try:
        if isinstance(default, StateBlock):
            return default.from_wire(wire)
        if isinstance(default, Metric):
            return _from_tree(_codec.check_envelope(wire), expect=default)
    except StateDecodeError:
        raise
    except (TypeError, ValueError, KeyError, IndexError) as exc:
        raise StateDecodeError(f"{where}: {exc}") from exc
    if isinstance(default, np.ndarray):
        if not isinstance(wire, np.ndarray):
            raise StateDecodeError(f"{where} must be an array")
        if wire.ndim != default.ndim:
            raise StateDecodeError(f"{where} must have {default.ndim} dimensions")
        if wire.dtype not in field.dtypes:
            raise StateDecodeError(f"{where} has dtype {wire.dtype}, expected {field.dtypes}")
        return wire
    if isinstance(default, bool):
        ok = isinstance(wire, bool)
    elif isinstance(default, int):
        ok = type(wire) is int
    elif isinstance(default, float):
        ok = isinstance(wire, float) or type(wire) is int
        wire = float(wire) if ok else wire
    else:
        ok = isinstance(wire, type(default))
    if not ok:
        raise StateDecodeError(f"{where} must be a {type(default).__name__}")
    return wire


def _from_tree(
    envelope: tuple[str, int, dict[str, Any], Any], expect: Metric | None = None
) -> Metric:
    name, schema, config, state = envelope
    klass = _REGISTRY.get(name)
    if klass is None:
        raise StateDecodeError(f"unknown metric class {name!r} (not a streammetrics metric)")
    if schema > klass._schema:
        raise StateDecodeError(
            f"{name} state schema {schema} is newer than this version reads ({klass._schema})"
        )
    try:
        metric = klass._from_config(config)
    except StateDecodeError:
        raise
    except (InputError, TypeError, ValueError) as exc:
        raise StateDecodeError(f"invalid {name} config {config!r}: {exc}") from exc
    if expect is not None:
        try:
            expect._check_compatible(metric)
        except IncompatibleStateError as exc:
            raise StateDecodeError(f"nested metric does not match its declaration: {exc}") from exc
    metric._load_state(klass._upgrade_state(state, schema))
    return metric


def metric_spec(metric: Metric) -> dict[str, Any]:
    """``{"class", "config"}``: how a wrapper's config names a metric it is built around."""
    return {"class": metric._wire_name, "config": metric.config}


def metric_from_spec(spec: Any) -> Metric:
    """An empty metric built from :func:`metric_spec` output; ``ValueError`` if it is not one.

    Classes are looked up in the registry of metric classes, never imported by name.
    """
    if not (isinstance(spec, dict) and set(spec) == {"class", "config"}):
        raise ValueError("a metric must be given as its class and config")
    klass = _REGISTRY.get(spec["class"]) if isinstance(spec["class"], str) else None
    if klass is None or not isinstance(spec["config"], dict):
        raise ValueError(f"unknown metric class {spec['class']!r}")
    return klass._from_config(spec["config"])


def loads(blob: bytes) -> Metric:
    """Rebuild whatever metric :meth:`Metric.to_bytes` wrote: the right class, config and state.

    Raises :class:`StateDecodeError`, and no other exception, for bytes that are not a valid
    state: truncated, corrupt, of an unsupported version or of an unknown class.
    """
    try:
        return _from_tree(_codec.unpack_envelope(blob))
    except StateDecodeError:
        raise
    except Exception as exc:  # a last guard: the contract allows no other exception type
        raise StateDecodeError(f"invalid state: {type(exc).__name__}: {exc}") from exc
