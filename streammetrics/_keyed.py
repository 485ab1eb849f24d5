"""Keyed metrics: states that are maps from a key (a group, a query) to what that key holds.

``GAUC`` keeps a table per group and the ranking metrics a buffer per query. Such a state splits
by key, and states of disjoint keys join without any per-key merge work. That is what lets the
Dask and Spark adapters partition rows by a hash of the key, build each partition's state in
parallel (the states hold disjoint keys, so together they are no larger than the result), and
join them at the end (``docs/streams.md``); a model server sharded by user id can do the same.

The protocol is small: a class attribute naming the ``update`` argument that holds each row's
key (:attr:`Keyed.key_argument`), :meth:`Keyed.split` and :meth:`Keyed.join`. Blocks keyed by
group or query give :meth:`~streammetrics.base.StateBlock.join_many` a concatenating version.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ._config_values import config_int

__all__ = ["Keyed"]

#: The most parts ``split`` makes (each is a metric; past this, memory, not keys, runs out).
MAX_PARTS = 1 << 20


class Keyed:
    """Mixin of metrics whose state is keyed: :meth:`split` by key, :meth:`join` disjoint keys."""

    #: The ``update`` argument holding each row's key: a position (0 is the first column) or
    #: a keyword name.
    key_argument: ClassVar[int | str]

    def join(self: Any, *others: Any) -> Any:
        """Fold in metrics whose keys are disjoint from this one's and from each other's.

        The result is the one :meth:`~streammetrics.base.Metric.merge` gives, byte for byte;
        with disjoint keys it is reached by concatenating the keys' entries, without merging
        any key's entries with another state's (keys present in several operands are merged as
        ``merge`` merges them). ``others`` do not change. Complexity: O(E log k) for E entries
        in k states.
        """
        return self._combine(others, join=True)

    def split(self: Any, parts: int) -> list[Any]:
        """This state cut into ``parts`` metrics of disjoint keys (this metric does not change).

        Key ``k`` goes to part ``key_hash(k) % parts`` (:func:`streammetrics.states.labels.
        key_hash`: the same in every process and on every platform), so states split this way
        in different processes put each key in the same part. ``parts[0].join(*parts[1:])``
        equals this metric. Rows no longer tied to a key (ranking queries already folded into
        sums) stay with part 0.
        """
        n = config_int(parts, "parts", maximum=MAX_PARTS)
        with self._lock:
            if self._pending is not None:
                self._fold()
            out: list[Any] = self._split(n)
            return out

    def _split(self, parts: int) -> list[Any]:
        raise NotImplementedError
