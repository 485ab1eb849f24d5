"""How metrics merge: the compatibility checks and ``merge``, the merging half of ``Metric``.

A merge changes nothing until every check has passed. It checks first, without any lock, that
each operand is of this class and configuration (:meth:`Mergeable._check_kind`, which names what
differs); then, under the locks of all the operands (taken in one global order, so that two
merges in opposite directions cannot deadlock), that their states can merge (each block's
``check_mergeable``, a nested metric's own checks, and what a class adds in
``_check_compatible`` and ``_check_compatible_together``) and that the counts and weight totals
together stay within their bounds. Empty operands are skipped. The declared fields then merge
one field at a time over all the operands (:meth:`Mergeable._merge_many`), unless the class
merges in its own ``_merge_from``.
"""

from __future__ import annotations

import copy as _copy
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from . import _codec
from ._block import StateBlock
from ._configs import same_config
from .errors import IncompatibleStateError

if TYPE_CHECKING:
    from ._pending_buffer import Pending
    from ._rows import Rows
    from .base import _Field

__all__ = ["Mergeable"]

_M = TypeVar("_M", bound="Mergeable")


class Mergeable:
    """``merge`` and its checks (a mixin of ``Metric``, the one class that inherits it: an
    instance of it is a metric)."""

    _config: dict[str, Any]
    _fields: dict[str, _Field]
    _count: int
    _lock: threading.RLock
    _pending: Pending | None
    _rows: Rows | None

    _fold: Callable[[], None]  # PerRequest's
    _held_total: Callable[[], float]  # Metric's
    _from_config: Callable[[dict[str, Any]], Any]  # Serialised's

    if TYPE_CHECKING:  # Copyable's (declared for the type checker only)

        def copy(self: _M) -> _M: ...

    def _check_compatible(self, other: Any) -> None:
        self._check_kind(other)
        for name in self._fields:
            mine, theirs = getattr(self, name), getattr(other, name)
            if isinstance(mine, StateBlock):
                mine.check_mergeable(theirs)
            elif isinstance(mine, Mergeable):
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
        involved = {id(m): m for m in (self, *others) if isinstance(m, Mergeable)}
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
        if type(self)._merge_from is not Mergeable._merge_from:
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
            elif isinstance(mine, Mergeable):
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
            if isinstance(mine, (StateBlock, Mergeable)):
                mine.merge(theirs)
            elif field.merge is not None:
                setattr(self, name, field.merge(mine, _copy.deepcopy(theirs)))
