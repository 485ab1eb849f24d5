"""How a metric becomes bytes and back: the serialisation half of ``Metric``.

A metric's bytes are one envelope (``docs/format.md``): its wire name, its class's schema
version, its config and its state, a map of ``count`` and every declared field in its wire form
(a :class:`~streammetrics.base.StateBlock`'s ``to_wire``, a nested metric's own envelope, or
the value as it is). :func:`~streammetrics.base.loads` builds the metric from the config and
hands the state, upgraded from an older schema if need be, to :meth:`Serialised._load_state`,
which checks what the fields alone cannot: the set of fields, the count, the metric's own
invariants (``_validate_state``) and that a state of count 0 is the freshly constructed one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from . import _codec
from ._block import StateBlock
from .errors import InputError, StateDecodeError

if TYPE_CHECKING:
    from ._pending_buffer import Pending
    from .base import _Field

__all__ = ["Serialised"]

_S = TypeVar("_S", bound="Serialised")


class Serialised:
    """``to_bytes``, ``from_bytes`` and the loading of a decoded state (a mixin of ``Metric``)."""

    #: Version of this class's state layout; bump it with an ``_upgrade_state`` for the old one.
    _schema: ClassVar[int] = 1
    #: The name written on the wire; defaults to the class name.
    _wire_name: ClassVar[str]

    _config: dict[str, Any]
    _fields: dict[str, _Field]
    _count: int
    _lock: threading.RLock
    _pending: Pending | None

    _fold: Callable[[], None]  # PerRequest's

    def _state_wire(self) -> dict[str, Any]:
        state: dict[str, Any] = {"count": self._count}
        for name in self._fields:
            state[name] = _field_wire(getattr(self, name))
        return state

    def _envelope(self) -> dict[str, Any]:
        with self._lock:
            if self._pending is not None:
                self._fold()
            return _codec.envelope_tree(
                self._wire_name, self._schema, self._config, self._state_wire()
            )

    def to_bytes(self) -> bytes:
        """The state as canonical msgpack bytes (``docs/format.md``), read by :func:`loads`."""
        return _codec.encode(self._envelope())

    @classmethod
    def from_bytes(cls: type[_S], blob: bytes) -> _S:
        """Rebuild a metric of this class from :meth:`to_bytes` output.

        Raises :class:`StateDecodeError` for anything else, including a valid blob of another
        class.
        """
        from ._loading import loads

        metric = loads(blob)
        if not isinstance(metric, cls):
            raise StateDecodeError(
                f"the blob holds a {type(metric).__name__}, not a {cls.__name__}"
            )
        return metric

    @classmethod
    def _from_config(cls: type[_S], config: dict[str, Any]) -> _S:
        return cls(**config)

    @classmethod
    def _upgrade_state(cls, state: Any, schema: int) -> Any:
        """Turn the state of an older schema into the current one (nothing to do at schema 1)."""
        return state

    def _load_state(self, state: Any) -> None:
        load_field = _LOAD_FIELD or _field_loader()
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
        if type(count) is not int or not 0 <= count <= _codec.COUNT_LIMIT:
            raise StateDecodeError("count must be a non-negative integer of at most 2**53")
        for name, field in self._fields.items():
            setattr(self, name, load_field(name, field, state[name]))
        self._count = count
        try:
            self._validate_state()
        except (InputError, TypeError, ValueError) as exc:
            if isinstance(exc, StateDecodeError):
                raise
            raise StateDecodeError(f"inconsistent {type(self).__name__} state: {exc}") from exc
        if count == 0 and _codec.encode(self._state_wire()) != _codec.encode(self._blank_wire()):
            # ``count == 0`` means the freshly constructed state: a merge skips such operands,
            # and ``compute`` answers nan, so data under a count of 0 would be lost silently.
            raise StateDecodeError(f"{type(self).__name__} state of count 0 holds data")

    def _blank_wire(self) -> dict[str, Any]:
        """:meth:`_state_wire` of the freshly constructed state."""
        state: dict[str, Any] = {"count": 0}
        for name, field in self._fields.items():
            state[name] = _field_wire(field.default)
        return state

    def _validate_state(self) -> None:
        """Check invariants across fields after decoding; raise ``ValueError`` if one fails.

        Decoding has already checked each field's type (and an array's dtype and number of
        dimensions). Metrics whose ``compute`` relies on more (matching shapes, non-negative
        counts) check it here.
        """


#: ``streammetrics._loading._load_field`` (which imports this module), once imported: an import
#: statement in ``_load_state`` cost a microsecond per metric loaded.
_LOAD_FIELD: Callable[[str, _Field, Any], Any] | None = None


def _field_loader() -> Callable[[str, _Field, Any], Any]:
    global _LOAD_FIELD
    from ._loading import _load_field

    _LOAD_FIELD = _load_field
    return _load_field


def _field_wire(value: Any) -> Any:
    """A state field's value as a codec tree (a block's wire form, a nested metric's envelope)."""
    if isinstance(value, StateBlock):
        return value.to_wire()
    if isinstance(value, Serialised):  # a nested metric
        return value._envelope()
    return value
