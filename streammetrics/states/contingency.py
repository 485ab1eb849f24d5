"""Contingency counts: how often each (row label, column label) pair occurred.

The state behind the confusion matrix and every classification score derived from it, and behind
the external clustering indices (true classes against predicted clusters). Labels are any
hashable values of one kind (integers or strings); the two axes share one label set (confusion
matrix) or keep their own (clustering). The canonical form keeps each label set sorted, so a
stream split any way and merged in any order gives the same state, byte for byte.

Memory: one count per (row label, column label) pair, int64 until a sample weight arrives, then
float64 (whole-number weights stay exact up to 2**53).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._codec import check_counts, check_sum, held_total
from ..base import StateBlock
from ..errors import InputError
from .labels import (
    EMPTY_LABELS,
    check_kinds,
    check_merge_kinds,
    codes_in,
    known_codes,
    labels_from_wire,
    labels_to_wire,
    spread,
    union,
    unique_codes,
)

__all__ = ["ContingencyCounts"]


class ContingencyCounts(StateBlock):
    """Counts of label pairs, merged by label union.

    Parameters
    ----------
    shared : bool
        One label set for both axes (a confusion matrix: square table) instead of one per axis.
    labels : array-like, optional
        A fixed, complete label set (shared axes only): labels outside it are an ``InputError``
        and the table is always ``len(labels)`` square.

    Complexity: ``add`` is O(n) for integer labels of small range and O(n log n) otherwise;
    ``merged`` is O(r * c) for the union's r row and c column labels.
    """

    def __init__(self, *, shared: bool, labels: np.ndarray | None = None) -> None:
        self.shared = shared
        self.fixed = labels is not None
        base = np.sort(labels) if labels is not None else EMPTY_LABELS
        self.rows: np.ndarray = base
        self.cols: np.ndarray = base
        size = len(base)
        self.table: np.ndarray = np.zeros((size, size), dtype=np.int64)

    # -- building increments -----------------------------------------------------------------

    def batch(
        self, a: np.ndarray, b: np.ndarray, weights: np.ndarray | None, names: tuple[str, str]
    ) -> ContingencyCounts:
        """A new block holding only this batch's counts, with label sets compatible with ``self``
        (the fixed labels, where there are some). Pure: ``self`` does not change."""
        out = ContingencyCounts.__new__(ContingencyCounts)
        out.shared, out.fixed = self.shared, self.fixed
        out.rows, out.cols, ra, rb = self._codes(a, b, names)
        nr, nc = len(out.rows), len(out.cols)
        flat = np.bincount(ra * nc + rb, weights=weights, minlength=nr * nc)
        out.table = flat.reshape(nr, nc)
        return out

    def codes(
        self, a: np.ndarray, b: np.ndarray, names: tuple[str, str]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(labels, codes of a, codes of b)`` of a batch on shared axes: the label set
        :meth:`batch` would give it, and each row's index in it (validated as ``batch``)."""
        labels, _, ra, rb = self._codes(a, b, names)
        return labels, ra, rb

    def _codes(
        self, a: np.ndarray, b: np.ndarray, names: tuple[str, str]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The batch's row and column label sets and each row's codes in them."""
        if self.fixed:
            ra, rb = codes_in(self.rows, a, names[0]), codes_in(self.rows, b, names[1])
            return self.rows, self.rows, ra, rb
        if self.shared:
            check_kinds(self.rows, a, names[0])
            check_kinds(self.rows, b, names[1])
            if len(a) and len(b) and a.dtype.kind != b.dtype.kind:
                raise InputError(f"{names[0]} and {names[1]} hold different kinds of label")
            ka, kb = known_codes(self.rows, a), known_codes(self.rows, b)
            if ka is not None and kb is not None:
                # Every label is known already: the union stays the state's label set.
                return self.rows, self.rows, ka, kb
            labels, codes = unique_codes(np.concatenate([a, b]))
            return labels, labels, codes[: len(a)], codes[len(a) :]
        check_kinds(self.rows, a, names[0])
        check_kinds(self.cols, b, names[1])
        ka, kb = known_codes(self.rows, a), known_codes(self.cols, b)
        rows, ra = (self.rows, ka) if ka is not None else unique_codes(a)
        cols, rb = (self.cols, kb) if kb is not None else unique_codes(b)
        return rows, cols, ra, rb

    # -- merging -----------------------------------------------------------------------------

    def check_mergeable(self, other: ContingencyCounts) -> None:
        check_merge_kinds(self.rows, other.rows)
        check_merge_kinds(self.cols, other.cols)
        # Every cell is at most the table's total, so totals within the bound cannot wrap.
        kind = np.result_type(self.table.dtype, other.table.dtype).kind
        check_sum("contingency counts", kind, self.held_total(), other.held_total())

    def merged(self, other: ContingencyCounts) -> ContingencyCounts:
        """A new block with the counts of both (label union); neither input changes."""
        self.check_mergeable(other)
        out = ContingencyCounts.__new__(ContingencyCounts)
        out.shared, out.fixed = self.shared, self.fixed
        out.rows = union(self.rows, other.rows)
        out.cols = out.rows if self.shared else union(self.cols, other.cols)
        dtype = np.result_type(self.table.dtype, other.table.dtype)

        def aligned(part: ContingencyCounts) -> np.ndarray:
            table = spread(part.table.astype(dtype, copy=False), part.rows, out.rows, axis=0)
            return spread(table, part.cols, out.cols, axis=1)

        out.table = aligned(self) + aligned(other)
        return out

    def merge(self, other: Any) -> None:
        new = self.merged(other)
        self.rows, self.cols, self.table = new.rows, new.cols, new.table

    def held_total(self) -> float:
        """The table's total, remembered with the table it was taken from (tables are replaced,
        never changed in place), so a merge of many blocks sums each table once."""
        table = self.table
        cached = getattr(self, "_total", None)
        if cached is not None and cached[0] is table:
            return float(cached[1])
        total = held_total(table)
        self._total = (table, total)
        return total

    def merge_many(self, others: list[Any]) -> None:
        """Fold many blocks at once: one label union, then one accumulation into one table.

        Complexity: O(sum of the blocks' tables) plus the union of their label sets.
        """
        parts = [self, *others]
        # Label kinds and the pairwise bound were checked with compatibility (check_mergeable,
        # called for every operand before any merge); pairs within the bound may still pass
        # it together.
        kind = np.result_type(*(p.table.dtype for p in parts)).kind
        check_sum("contingency counts", kind, *(p.held_total() for p in parts))
        rows, cols = self.rows, self.cols
        for p in others:
            rows = union(rows, p.rows)
            cols = rows if self.shared else union(cols, p.cols)
        dtype = np.result_type(*(p.table.dtype for p in parts))
        table = np.zeros((len(rows), len(cols)), dtype=dtype)
        for p in parts:
            if len(p.rows) == len(rows) and len(p.cols) == len(cols):
                table += p.table  # the same label sets: add in place
            else:
                part = spread(p.table, p.rows, rows, axis=0)
                table += spread(part, p.cols, cols, axis=1)
        self.rows, self.cols, self.table = rows, cols, table

    def copy(self) -> ContingencyCounts:
        # Label arrays are replaced, never changed in place: only the table is copied.
        out = ContingencyCounts.__new__(ContingencyCounts)
        out.shared, out.fixed, out.rows, out.cols = self.shared, self.fixed, self.rows, self.cols
        out.table = self.table.copy()
        return out

    scalable = True

    def scale(self, factor: float) -> None:
        """Multiply every count by ``factor``; the table becomes float64 (weights)."""
        self.table = self.table.astype(np.float64) * factor

    # -- wire --------------------------------------------------------------------------------

    def to_wire(self) -> Any:
        wire: dict[str, Any] = {"rows": labels_to_wire(self.rows), "table": self.table}
        if not self.shared:
            wire["cols"] = labels_to_wire(self.cols)
        return wire

    def from_wire(self, wire: Any) -> ContingencyCounts:
        if not isinstance(wire, dict):
            raise ValueError("contingency counts must be a map")
        keys = {"rows", "table"} if self.shared else {"rows", "cols", "table"}
        if set(wire) != keys:
            raise ValueError(f"contingency counts need exactly the fields {sorted(keys)}")
        out = ContingencyCounts.__new__(ContingencyCounts)
        out.shared, out.fixed = self.shared, self.fixed
        out.rows = labels_from_wire(wire["rows"])
        out.cols = out.rows if self.shared else labels_from_wire(wire["cols"])
        if self.fixed and not np.array_equal(out.rows, self.rows):
            raise ValueError("the labels differ from the configured labels")
        table = wire["table"]
        if not isinstance(table, np.ndarray) or table.dtype not in (np.int64, np.float64):
            raise ValueError("the table must be an int64 or float64 array")
        if table.shape != (len(out.rows), len(out.cols)):
            raise ValueError(
                f"the table has shape {table.shape}, the labels call for "
                f"{(len(out.rows), len(out.cols))}"
            )
        check_counts("contingency counts", table)
        out.table = table
        return out

    # -- views -------------------------------------------------------------------------------

    @property
    def weighted(self) -> bool:
        """True once a sample weight has been counted (the table is float64)."""
        return self.table.dtype == np.float64

    def total(self) -> float:
        return float(self.table.sum())
