"""``ScoreColumns``: one score store per class column, the state of one-vs-rest metrics.

``MulticlassROCAUC`` keeps, for each column ``j`` of a probability matrix, the
:class:`~streammetrics.states.buckets.ScoreBuckets` of (score ``x[:, j]``, label ``y == j``)
pairs. Every column holds every row, so the block's count-bound total is its largest column's.
The block behaves as a read-only sequence of its stores (``len``, iteration, indexing); an
update or a merge replaces stores, never writes into them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .._block import StateBlock
from ..errors import IncompatibleStateError
from .buckets import ScoreBuckets
from .mappings import BucketMapping

__all__ = ["ScoreColumns"]


class ScoreColumns(StateBlock):
    """Score stores of one grid (``mapping``; ``None``: exact), one per class column.

    Empty (no column) until the first batch fixes the number of columns.
    """

    scalable = True

    def __init__(self, mapping: BucketMapping | None) -> None:
        self.mapping = mapping
        self.stores: list[ScoreBuckets] = []

    def _with(self, stores: list[ScoreBuckets]) -> ScoreColumns:
        out = ScoreColumns(self.mapping)
        out.stores = stores
        return out

    # -- a sequence of stores -------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.stores)

    def __iter__(self) -> Iterator[ScoreBuckets]:
        return iter(self.stores)

    def __getitem__(self, j: int) -> ScoreBuckets:
        return self.stores[j]

    # -- building -------------------------------------------------------------------------------

    def added(self, scores: np.ndarray, codes: np.ndarray, weights: np.ndarray | None) -> Any:
        """A new block with the rows added: ``scores`` is the (n, C) matrix, ``codes`` each
        row's column (its class), ``weights`` per row or ``None``. This block does not change."""
        k = scores.shape[1]
        stores = self.stores or [ScoreBuckets(self.mapping) for _ in range(k)]
        return self._with(
            [
                stores[j].add(np.ascontiguousarray(scores[:, j]), codes == j, weights)
                for j in range(k)
            ]
        )

    def scale(self, factor: float) -> None:
        for store in self.stores:
            store.scale(factor)

    # -- merging --------------------------------------------------------------------------------

    def check_mergeable(self, other: Any) -> None:
        if not isinstance(other, ScoreColumns) or other.mapping != self.mapping:
            theirs = getattr(other, "mapping", type(other).__name__)
            raise IncompatibleStateError(
                f"cannot merge score columns of {self.mapping!r} with {theirs!r}"
            )
        if self.stores and other.stores:
            if len(self.stores) != len(other.stores):
                raise IncompatibleStateError(
                    f"cannot merge states of {len(self.stores)} and {len(other.stores)} classes"
                )
            for mine, theirs in zip(self.stores, other.stores, strict=True):
                mine.check_mergeable(theirs)

    def held_total(self) -> float:
        return max((s.held_total() for s in self.stores), default=0.0)

    def merge(self, other: Any) -> None:
        self.merge_many([other])

    def merge_many(self, others: list[Any]) -> None:
        """Column by column, each one :meth:`ScoreBuckets.merge_many` of every operand's."""
        filled = [o for o in others if o.stores]
        if not filled:
            return
        if not self.stores:
            first, filled = filled[0], filled[1:]
            self.stores = [s.copy() for s in first.stores]
            if not filled:
                return
        merged = []
        for j, store in enumerate(self.stores):
            target = store.merge_target()
            target.merge_many([o.stores[j] for o in filled])
            merged.append(target)
        self.stores = merged

    # -- copies and wire ------------------------------------------------------------------------

    def copy(self) -> ScoreColumns:
        return self._with([s.copy() for s in self.stores])

    def merge_target(self) -> ScoreColumns:
        return self._with([s.merge_target() for s in self.stores])

    def __deepcopy__(self, memo: dict[int, Any]) -> ScoreColumns:
        return self.copy()

    def to_wire(self) -> Any:
        return [s.to_wire() for s in self.stores]

    def from_wire(self, wire: Any) -> ScoreColumns:
        if not isinstance(wire, list):
            raise ValueError("the columns must be a list of score stores")
        template = ScoreBuckets(self.mapping)
        return self._with([template.from_wire(c) for c in wire])
