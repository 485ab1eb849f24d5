"""Contingency counts: how often each (row label, column label) pair occurred.

The state behind the confusion matrix and every classification score derived from it, and behind
the external clustering indices (true classes against predicted clusters). Labels are any
hashable values of one kind (integers or strings); the two axes share one label set (confusion
matrix) or keep their own (clustering). The canonical form keeps each label set sorted, so a
stream split any way and merged in any order gives the same state, byte for byte.

Two forms of one table. Dense: one count per (row label, column label) pair. Sparse (large label
sets, few pairs seen; :mod:`streammetrics.states._cells`): the filled cells only, as sorted flat
codes ``row * n_cols + col`` and their counts. The form is a function of the table's size and
number of filled cells alone (sparse from 2**16 cells while fewer than 1/8 are filled), so it
is canonical too. The dense form keeps its wire layout (``rows``, ``table``); the sparse one
travels as ``rows``, ``cells`` and ``counts`` (and ``cols`` when the axes have their own labels).

Memory: dense, 8 bytes per cell; sparse, 16 bytes per filled cell. Counts are int64 until a
sample weight arrives, then float64 (whole-number weights stay exact up to 2**53).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._codec import check_counts, check_sum, held_total
from ..base import StateBlock
from ..errors import InputError
from ._cells import (
    check_cells,
    dense_of,
    fold_cells,
    may_be_sparse,
    merge_cells,
    remap_cells,
    sparse_of,
    wants_sparse,
)
from ._fold import fold_equal
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

_Cells = tuple[np.ndarray, np.ndarray]


class ContingencyCounts(StateBlock):
    """Counts of label pairs, merged by label union.

    Parameters
    ----------
    shared : bool
        One label set for both axes (a confusion matrix: square table) instead of one per axis.
    labels : array-like, optional
        A fixed, complete label set (shared axes only): labels outside it are an ``InputError``
        and the table is always ``len(labels)`` square.

    ``sparse`` says which form the table is in; ``table`` is the dense table (built on demand
    from the sparse form: O(r * c) memory, which the views below avoid).

    Complexity: ``batch`` is O(n) for integer labels of small range and O(n log n) otherwise,
    counting only the batch's distinct pairs on large tables; ``merge`` adds in place when the
    label sets do not change (O(r * c) dense, O(m log s) sparse for m cells into s); a merge
    that grows the label sets is O(r * c) for the union's r row and c column labels (dense) or
    O(s + m) (sparse).
    """

    def __init__(self, *, shared: bool, labels: np.ndarray | None = None) -> None:
        self.shared = shared
        self.fixed = labels is not None
        base = np.sort(labels) if labels is not None else EMPTY_LABELS
        self.rows: np.ndarray = base
        self.cols: np.ndarray = base
        self._set_sparse(np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64), 0.0)
        self._settle()  # dense (a zero table) unless the fixed label set is large

    # -- the two forms -----------------------------------------------------------------------

    @property
    def sparse(self) -> bool:
        """True while the table is held as its filled cells only (``states._cells``)."""
        return self._dense is None

    @property
    def table(self) -> np.ndarray:
        """The dense table (rows x cols). In the sparse form a new array, built on each access."""
        if self._dense is not None:
            return self._dense
        return dense_of(self._cells, self._values, self.shape)

    @table.setter
    def table(self, table: np.ndarray) -> None:
        self._set_dense(table, None)
        if hasattr(self, "cols") and table.shape == self.shape:
            self._settle()

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.rows), len(self.cols)

    def _set_dense(self, table: np.ndarray, total: float | None) -> None:
        self._dense: np.ndarray | None = table
        self._cells = self._values = np.empty(0, dtype=np.int64)
        self._held = total

    def _set_sparse(self, cells: np.ndarray, values: np.ndarray, total: float | None) -> None:
        self._dense = None
        self._cells, self._values = cells, values
        self._held = total

    def _settle(self) -> None:
        """Take the form that the size and the number of filled cells call for."""
        size = self.shape[0] * self.shape[1]
        if self._dense is not None:
            if may_be_sparse(size) and wants_sparse(size, int(np.count_nonzero(self._dense))):
                self._set_sparse(*sparse_of(self._dense), self._held)
        elif not wants_sparse(size, len(self._cells)):
            self._set_dense(dense_of(self._cells, self._values, self.shape), self._held)

    def filled_count(self) -> int:
        """How many cells are not zero. O(1) sparse, O(r * c) dense."""
        return len(self._cells) if self._dense is None else int(np.count_nonzero(self._dense))

    def _as_cells(self) -> _Cells:
        return (self._cells, self._values) if self._dense is None else sparse_of(self._dense)

    @property
    def dtype(self) -> np.dtype[Any]:
        return self._values.dtype if self._dense is None else self._dense.dtype

    def _blank(self) -> ContingencyCounts:
        out = ContingencyCounts.__new__(ContingencyCounts)
        out.shared, out.fixed = self.shared, self.fixed
        return out

    # -- building increments -----------------------------------------------------------------

    def batch(
        self, a: np.ndarray, b: np.ndarray, weights: np.ndarray | None, names: tuple[str, str]
    ) -> ContingencyCounts:
        """A new block holding only this batch's counts, with label sets compatible with ``self``
        (the fixed labels, where there are some). Pure: ``self`` does not change.

        A table larger than a few times the batch counts the batch's distinct pairs (a sort of
        their codes) instead of filling a table of every pair."""
        out = self._blank()
        out.rows, out.cols, ra, rb = self._codes(a, b, names)
        nr, nc = out.shape
        codes = ra * nc + rb
        if not may_be_sparse(nr * nc) or nr * nc <= 4 * len(codes):
            flat = np.bincount(codes, weights=weights, minlength=nr * nc)
            out._set_dense(flat.reshape(nr, nc), None)
        else:
            out._set_sparse(*fold_cells(codes, weights), None)
        out._settle()
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
        kind = np.result_type(self.dtype, other.dtype).kind
        check_sum("contingency counts", kind, self.held_total(), other.held_total())

    def plus_known(
        self, a: np.ndarray, b: np.ndarray, weights: np.ndarray | None
    ) -> ContingencyCounts | None:
        """``self.merged(self.batch(a, b, weights, names))`` where that is quick: a dense table
        of shared axes, too small for the sparse form, whose labels hold every value of ``a``
        and ``b`` (so its label set does not change). The same block to the bit: the batch's
        cells summed in row order into a table of its own, which is then added to a copy of
        this one, after the count bound's check. None where it does not apply (the general
        path then also says what is wrong)."""
        dense = self._dense
        if dense is None or not self.shared or may_be_sparse(dense.size):
            return None
        ka, kb = known_codes(self.rows, a), known_codes(self.rows, b)
        if ka is None or kb is None:
            return None
        batch = np.bincount(ka * len(self.rows) + kb, weights=weights, minlength=dense.size)
        batch = batch.reshape(dense.shape)
        kind = np.result_type(dense.dtype, batch.dtype).kind
        mine, added = self.held_total(), held_total(batch)
        check_sum("contingency counts", kind, mine, added)
        out = self._blank()
        out.rows = out.cols = self.rows
        out._set_dense(dense + batch, mine + added)
        return out

    def merged(self, other: ContingencyCounts) -> ContingencyCounts:
        """A new block with the counts of both (label union); neither input changes."""
        self.check_mergeable(other)
        out = self._blank()
        out.rows, out.cols = self.rows, self.cols
        if self._dense is not None:
            out._set_dense(self._dense, self._held)
        else:
            out._set_sparse(self._cells, self._values, self._held)
        out._add(other, in_place=False)
        return out

    def merge(self, other: Any) -> None:
        """Fold ``other`` into ``self``: in place when the label sets do not change."""
        self.check_mergeable(other)
        self._add(other, in_place=True)

    def _add(self, other: ContingencyCounts, in_place: bool) -> None:
        """Add ``other``'s counts (checked mergeable). ``in_place``: ``self``'s arrays are its
        own and may be changed (decoded arrays, read-only views of the blob, never are)."""
        rows = union(self.rows, other.rows)
        cols = rows if self.shared else union(self.cols, other.cols)
        total = self.held_total() + other.held_total()
        dtype = np.result_type(self.dtype, other.dtype)
        same = self.shape == (len(rows), len(cols))
        size = len(rows) * len(cols)
        # The form of the sum is settled below from its filled cells; here the cheaper way to
        # build it, from an upper bound on them.
        if not wants_sparse(size, self.filled_bound() + other.filled_bound()):
            table = self._dense_on(rows, cols, dtype, own=in_place and same)
            other._add_into(table, rows, cols)
            self.rows, self.cols = rows, cols
            self._set_dense(table, total)
        else:
            own = self._dense is None and in_place and same and self._values.flags.writeable
            mine_cells, mine_values = self._as_cells()
            their_cells, their_values = other._as_cells()
            cells, values = merge_cells(
                (remap_cells(mine_cells, self.rows, self.cols, rows, cols), mine_values),
                (remap_cells(their_cells, other.rows, other.cols, rows, cols), their_values),
                in_place=own,
            )
            self.rows, self.cols = rows, cols
            self._set_sparse(cells, values, total)
        self._settle()

    def filled_bound(self) -> int:
        """An upper bound on the filled cells: the cells listed (sparse) or all of them (dense),
        in O(1)."""
        return len(self._cells) if self._dense is None else int(self._dense.size)

    def _dense_on(
        self, rows: np.ndarray, cols: np.ndarray, dtype: np.dtype[Any], own: bool
    ) -> np.ndarray:
        """This block's counts as a dense table on the supersets ``rows`` x ``cols``: its own
        table when ``own`` allows (same labels, same dtype, writable), otherwise a new one."""
        dense = self._dense
        if dense is None:
            cells = remap_cells(self._cells, self.rows, self.cols, rows, cols)
            return dense_of(cells, self._values.astype(dtype), (len(rows), len(cols)))
        if own and dense.dtype == dtype and dense.flags.writeable:
            return dense
        out = spread(spread(dense.astype(dtype), self.rows, rows, 0), self.cols, cols, 1)
        return out

    def _add_into(self, table: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> None:
        """Add this block's counts into ``table``, a dense table on supersets of its labels."""
        if self._dense is not None:
            table += spread(spread(self._dense, self.rows, rows, 0), self.cols, cols, 1)
        else:  # distinct cells: plain fancy-index addition is exact
            table.reshape(-1)[remap_cells(self._cells, self.rows, self.cols, rows, cols)] += (
                self._values
            )

    def held_total(self) -> float:
        """The table's total, kept with the table (every change sets it), so a merge of many
        blocks sums each table once."""
        held = getattr(self, "_held", None)
        if held is None:
            held = held_total(self._values if self._dense is None else self._dense)
            self._held = held
        return float(held)

    def merge_many(self, others: list[Any]) -> None:
        """Fold many blocks at once: one label union, then one accumulation into one table
        (dense), or one sort of every block's cell codes (sparse).

        Complexity: O(sum of the blocks' tables) plus the union of their label sets; sparse,
        O(m log m) for m cells in all.
        """
        parts = [self, *others]
        # Label kinds and the pairwise bound were checked with compatibility (check_mergeable,
        # called for every operand before any merge); pairs within the bound may still pass
        # it together.
        dtype = np.result_type(*(p.dtype for p in parts))
        totals = [p.held_total() for p in parts]
        check_sum("contingency counts", dtype.kind, *totals)
        rows, cols = self.rows, self.cols
        for p in others:
            rows = union(rows, p.rows)
            cols = rows if self.shared else union(cols, p.cols)
        size = len(rows) * len(cols)
        if not wants_sparse(size, sum(p.filled_bound() for p in parts)):
            table = np.zeros((len(rows), len(cols)), dtype=dtype)
            for p in parts:
                p._add_into(table, rows, cols)
            self.rows, self.cols = rows, cols
            self._set_dense(table, sum(totals))
        else:
            cells, values = [], []
            for p in parts:
                c, v = p._as_cells()
                cells.append(remap_cells(c, p.rows, p.cols, rows, cols))
                values.append(v.astype(dtype, copy=False))
            self.rows, self.cols = rows, cols
            # One stable sort of the sorted runs, equal cells summed in part order.
            (folded,), (summed,), _, _ = fold_equal(
                [np.concatenate(cells)], [np.concatenate(values)]
            )
            self._set_sparse(folded, summed, sum(totals))
        self._settle()

    def copy(self) -> ContingencyCounts:
        # Label arrays are replaced, never changed in place: only the counts are copied.
        out = self._blank()
        out.rows, out.cols = self.rows, self.cols
        if self._dense is not None:
            out._set_dense(self._dense.copy(), self._held)
        else:
            out._set_sparse(self._cells, self._values.copy(), self._held)
        return out

    scalable = True

    def scale(self, factor: float) -> None:
        """Multiply every count by ``factor``; the counts become float64 (weights)."""
        if self._dense is not None:
            self._set_dense(self._dense.astype(np.float64) * factor, None)
        else:
            values = self._values.astype(np.float64) * factor
            keep = values != 0
            self._set_sparse(self._cells[keep], values[keep], None)
        self._settle()

    # -- wire --------------------------------------------------------------------------------

    def to_wire(self) -> Any:
        # Counts are added in place: the wire takes a snapshot of them, since a metric's bytes
        # are encoded after its lock is released (label and cell arrays are only replaced).
        wire: dict[str, Any] = {"rows": labels_to_wire(self.rows)}
        if self._dense is not None:
            wire["table"] = self._dense.copy()
        else:
            wire["cells"], wire["counts"] = self._cells, self._values.copy()
        if not self.shared:
            wire["cols"] = labels_to_wire(self.cols)
        return wire

    def from_wire(self, wire: Any) -> ContingencyCounts:
        if not isinstance(wire, dict):
            raise ValueError("contingency counts must be a map")
        axes = {"rows"} if self.shared else {"rows", "cols"}
        if set(wire) not in (axes | {"table"}, axes | {"cells", "counts"}):
            raise ValueError(
                f"contingency counts need exactly the fields {sorted(axes | {'table'})} (dense) "
                f"or {sorted(axes | {'cells', 'counts'})} (sparse)"
            )
        out = self._blank()
        out.rows = labels_from_wire(wire["rows"])
        out.cols = out.rows if self.shared else labels_from_wire(wire["cols"])
        if self.fixed and not np.array_equal(out.rows, self.rows):
            raise ValueError("the labels differ from the configured labels")
        if "table" in wire:
            table = wire["table"]
            if not isinstance(table, np.ndarray) or table.dtype not in (np.int64, np.float64):
                raise ValueError("the table must be an int64 or float64 array")
            if table.shape != out.shape:
                raise ValueError(
                    f"the table has shape {table.shape}, the labels call for {out.shape}"
                )
            check_counts("contingency counts", table)
            out._set_dense(table, None)
        else:
            cells, counts = wire["cells"], wire["counts"]
            check_cells("contingency counts", cells, counts, out.shape[0] * out.shape[1])
            out._set_sparse(cells, counts, None)
        out._settle()  # a blob in the other form (an older writer's dense table) converts
        return out

    # -- views -------------------------------------------------------------------------------

    @property
    def weighted(self) -> bool:
        """True once a sample weight has been counted (the counts are float64)."""
        return self.dtype == np.float64

    def total(self) -> float:
        return float((self._values if self._dense is None else self._dense).sum())

    def filled(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(row index, column index, count)`` of every filled cell, in code order."""
        cells, values = self._as_cells()
        r, c = np.divmod(cells, max(len(self.cols), 1))
        return r, c, values

    def row_sums(self) -> np.ndarray:
        """Each row label's total (the counts' dtype)."""
        return self._sums(axis=1)

    def col_sums(self) -> np.ndarray:
        """Each column label's total (the counts' dtype)."""
        return self._sums(axis=0)

    def _sums(self, axis: int) -> np.ndarray:
        if self._dense is not None:
            out: np.ndarray = self._dense.sum(axis=axis)
            return out
        r, c, v = self.filled()
        at, size = (r, self.shape[0]) if axis == 1 else (c, self.shape[1])
        out = np.bincount(at, weights=v, minlength=size).astype(v.dtype)
        return out

    def diagonal(self) -> np.ndarray:
        """The cells (i, i) of a square table: the agreements of a confusion matrix."""
        if self._dense is not None:
            diagonal: np.ndarray = np.diagonal(self._dense).copy()
            return diagonal
        r, c, v = self.filled()
        out = np.zeros(min(self.shape), dtype=v.dtype)
        on = r == c
        out[r[on]] = v[on]
        return out

    @property
    def nbytes(self) -> int:
        """Bytes held by the counts (and sparse cell codes), labels aside."""
        if self._dense is not None:
            return int(self._dense.nbytes)
        return int(self._cells.nbytes + self._values.nbytes)
