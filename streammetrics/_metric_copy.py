"""How a metric is copied: ``copy``, pickling and deep copies, the copying half of ``Metric``.

A copy is made from the metric's attributes, not by calling ``__init__`` again: each declared
state field is copied (a block or a nested metric by its own ``copy``, an array by
``ndarray.copy``), what is fixed at construction is shared (the configuration, the field
declarations, scalars, template metrics, a class's ``_constant`` attributes), and anything else
mutable is deep-copied. Every copy folds the pending rows first and gets a lock of its own.
Classes that keep state outside declared fields are deep-copied whole. The same twin, with its
fields left for the decoder to replace, is what :func:`~streammetrics.base.loads` fills.
"""

from __future__ import annotations

import copy as _copy
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np

from ._block import StateBlock
from ._metric_merge import Mergeable
from ._serialised import Serialised

if TYPE_CHECKING:
    from ._pending_buffer import Pending
    from ._rows import Rows
    from .base import _Field

__all__ = ["Copyable", "GUARDED_METHODS"]

_C = TypeVar("_C", bound="Copyable")


class Copyable:
    """``copy``, ``pickle`` and ``copy.deepcopy`` of a metric, and the blank twin a decoder
    fills (a mixin of ``Metric``, the one class that inherits it: an instance of it is a
    metric)."""

    _constant: ClassVar[frozenset[str]]
    _fields: dict[str, _Field]
    _lock: threading.RLock
    _pending: Pending | None
    _rows: Rows | None

    _fold: Callable[[], None]  # PerRequest's
    # (Compared with the mixins' own in ``_state_in_fields``, through the class.)
    _merge_from: Callable[..., None]  # Mergeable's
    _state_wire: Callable[..., dict[str, Any]]  # Serialised's
    _load_state: Callable[..., None]  # Serialised's

    def copy(self: _C) -> _C:
        """An independent copy with the same configuration and state (and a lock of its own).

        Copies the declared state fields and any other mutable attribute, and shares what is
        fixed at construction (the configuration, scalars, template metrics); classes that keep
        state outside declared fields (their own ``_merge_from``, ``_state_wire`` or
        ``_load_state``) are deep-copied.
        """
        return self._copy(for_merge=False)

    def _copy(self: _C, for_merge: bool) -> _C:
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

    def _blank_for_load(self: _C) -> _C | None:
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
            cls._merge_from is Mergeable._merge_from
            and cls._state_wire is Serialised._state_wire
            and cls._load_state is Serialised._load_state
        )

    def _twin(self: _C, field_copy: Callable[[Any], Any] | None, blank_rows: bool) -> _C:
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

    def __deepcopy__(self: _C, memo: dict[int, Any]) -> _C:
        new = object.__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update(self._snapshot(memo))
        new._lock = threading.RLock()
        return new

    def _snapshot(self, memo: dict[int, Any]) -> dict[str, Any]:
        with self._lock:
            if self._pending is not None:
                self._fold()
            attrs = self.__dict__
            skip = GUARDED_METHODS & attrs.keys()
            state = {k: v for k, v in attrs.items() if k != "_lock" and k not in skip}
            # What is fixed at construction is shared, as ``copy`` shares it: the deep copy
            # goes through it as through the state (a window's or ``Sliced``'s copy walked its
            # configuration, field declarations and template metric again in every slot: 0.8.28
            # spent 0.8 ms copying a window of six 20-slice states, most of it there).
            for name in (*_COPY_SHARED, *type(self)._constant):
                value = attrs.get(name)
                if value is not None:
                    memo.setdefault(id(value), value)
            return _copy.deepcopy(state, memo)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()


# Attributes a copy shares: set once in __init__ and never changed in place afterwards.
_SHARED = frozenset({"_config", "_fields", "_lock", "_rows", "_pending"})
#: Attributes a deep copy (or a pickle's snapshot) shares: the configuration, the field
#: declarations and a wrapper's template metric (only ever copied, never updated).
_COPY_SHARED = ("_config", "_fields", "_template")
#: Methods a ``MetricCollection`` shadows on a member it hands out (``collection[name]``), to
#: refuse changing the member alone; copies, pickles and snapshots of the member drop them.
GUARDED_METHODS = frozenset({"update", "merge", "join", "reset"})
# Values a copy shares: immutable, or template metrics (only ever copied, never updated).
_IMMUTABLE = (int, float, str, bool, bytes, tuple, frozenset, type(None), Copyable)


def _copy_value(value: Any) -> Any:
    if isinstance(value, (StateBlock, Copyable)):
        return value.copy()
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (list, dict)):
        return _copy.deepcopy(value)
    return value  # int, float, str, bool: immutable
