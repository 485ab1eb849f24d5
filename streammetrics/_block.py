"""``StateBlock``: a reusable piece of mergeable state that a metric declares as one field.

Contingency counts, score buckets, moments, per-query buffers ... each owns its merge, its wire
form and its count-bound total; :class:`~streammetrics.base.Metric` merges, copies, compares and
serialises a block like any other state field. Re-exported by :mod:`streammetrics.base`.
"""

from __future__ import annotations

import copy as _copy
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import numpy as np

from . import _codec

__all__ = ["StateBlock"]

_B = TypeVar("_B", bound="StateBlock")


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

    def merge_many(self, others: list[Any]) -> None:
        """Fold every block of ``others`` into ``self`` (checked mergeable beforehand).

        The default merges them one by one; blocks whose merge can gather many operands in one
        pass (one label union, one dense accumulation) override it, so that ``merge(*others)``
        and ``sum()`` over many shards cost about one pass over their contents.
        """
        for other in others:
            self.merge(other)

    def held_total(self) -> float:
        """The total of the block's counts or weights, for the count bound (0.0: none held)."""
        return 0.0

    def join_many(self, others: list[Any]) -> None:
        """:meth:`merge_many` for blocks keyed by group, query or slice whose keys are disjoint
        from this block's and from each other's: keyed blocks override it to concatenate
        instead of merging key by key. The result is the same as ``merge_many``."""
        self.merge_many(others)

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

    def merge_target(self: _B) -> _B:
        """A copy for a merge to write into (``a + b``): blocks whose merges and updates replace
        their arrays instead of writing into them may share those arrays with ``self``."""
        return self.copy()

    def remembered(self, name: str, version: tuple[Any, ...], make: Callable[[], Any]) -> Any:
        """``make()``, a value read off this block, kept with ``version``: the objects it was
        read from (arrays compared by identity, other values by equality). For blocks whose
        updates and merges replace their arrays, never write into them, the same objects mean
        the same contents, so reads of an unchanged state share one pass (``compute()``,
        ``interval()``, ``error_bound()``). The memory is the block's own: copies and pickles
        start without it, and it is never on the wire."""
        memo: dict[str, tuple[tuple[Any, ...], Any]] = self.__dict__.setdefault("_memo", {})
        found = memo.get(name)
        if found is not None and _same_version(found[0], version):
            return found[1]
        value = make()
        memo[name] = (version, value)
        return value

    def remember(self, name: str, version: tuple[Any, ...], value: Any) -> None:
        """Hold ``value`` as :meth:`remembered` would have made it for ``version``, in place of
        what ``name`` held."""
        self.__dict__.setdefault("_memo", {})[name] = (version, value)

    def forget(self, *names: str) -> None:
        """Drop what :meth:`remembered` holds under ``names`` (the memory it keeps alive)."""
        memo = self.__dict__.get("_memo")
        if memo:
            for name in names:
                memo.pop(name, None)

    def holds(self, name: str) -> bool:
        """Whether :meth:`remembered` holds anything under ``name``, for any version."""
        return name in self.__dict__.get("_memo", {})

    def pass_on(self, other: StateBlock, names: tuple[str, ...]) -> None:
        """Give ``other`` what this block remembers under ``names``: each stays kept with its
        version, so it serves ``other`` only while those objects are ``other``'s too (a block
        built around this one's arrays)."""
        memo = self.__dict__.get("_memo", {})
        kept = {name: memo[name] for name in names if name in memo}
        if kept:
            other.__dict__.setdefault("_memo", {}).update(kept)

    def is_remembered(self, name: str, version: tuple[Any, ...]) -> bool:
        """Whether :meth:`remembered` holds ``name`` for ``version``."""
        found = self.__dict__.get("_memo", {}).get(name)
        return found is not None and _same_version(found[0], version)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_memo", None)  # (see remembered)
        return state

    def __eq__(self, other: object) -> bool:
        if type(self) is not type(other):
            return NotImplemented
        assert isinstance(other, StateBlock)
        return _codec.encode(self.to_wire()) == _codec.encode(other.to_wire())

    __hash__ = None  # type: ignore[assignment]


def _same_version(held: tuple[Any, ...], now: tuple[Any, ...]) -> bool:
    if len(held) != len(now):
        return False
    for a, b in zip(held, now, strict=True):  # (a loop: half the cost of all() of a generator)
        if a is not b and (isinstance(a, np.ndarray) or isinstance(b, np.ndarray) or not a == b):
            return False
    return True
