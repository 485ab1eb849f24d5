"""Sparse cells of a contingency table: sorted flat cell codes and their counts.

A table of ``r`` row labels and ``c`` column labels numbers its cells ``row * c + col``
(row-major). The sparse form keeps only the filled cells (count or weight not zero), as a
strictly increasing int64 array of codes and a parallel array of counts (int64, or float64 once
weighted). Which form a table takes is :func:`wants_sparse` of its size and number of filled
cells alone, so any split of a stream merged in any order reaches the same form, byte for byte.

Memory: 16 bytes per filled cell, against 8 bytes per cell of the dense table.
"""

from __future__ import annotations

import numpy as np

from .._codec import check_counts
from ._fold import fold_equal

__all__ = [
    "SPARSE_FILL",
    "SPARSE_MIN_CELLS",
    "check_cells",
    "dense_of",
    "fold_cells",
    "may_be_sparse",
    "merge_cells",
    "remap_cells",
    "sparse_of",
    "wants_sparse",
]

#: Tables of fewer cells stay dense whatever their fill (256 x 256 labels, 512 KiB of int64).
SPARSE_MIN_CELLS = 1 << 16
#: A table at least SPARSE_MIN_CELLS large is sparse while fewer than 1 / SPARSE_FILL of its cells
#: are filled (the sparse form then takes at most a quarter of the dense table's memory).
SPARSE_FILL = 8

_EMPTY_CELLS = np.empty(0, dtype=np.int64)


def may_be_sparse(size: int) -> bool:
    """Whether a table of ``size`` cells takes the sparse form while few enough are filled."""
    return size >= SPARSE_MIN_CELLS


def wants_sparse(size: int, filled: int) -> bool:
    """Whether a table of ``size`` cells, ``filled`` of them not zero, takes the sparse form."""
    return size >= SPARSE_MIN_CELLS and filled * SPARSE_FILL < size


def fold_cells(cells: np.ndarray, weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """``(sorted distinct cells, count of each)`` of a column of cell codes, one per row; the
    counts sum ``weights`` (in row order within a cell: the shared fold, ``fold_equal``) when
    given. Cells that sum to zero are left out. O(n log n)."""
    if len(cells) == 0:
        dtype = np.int64 if weights is None else np.float64
        return _EMPTY_CELLS, np.empty(0, dtype=dtype)
    if weights is None:
        uniq, counts = np.unique(cells, return_counts=True)
        return uniq, counts.astype(np.int64, copy=False)
    (uniq,), (sums,), _, _ = fold_equal([cells], [weights.astype(np.float64, copy=False)])
    keep = sums != 0
    return uniq[keep], sums[keep]


def merge_cells(
    mine: tuple[np.ndarray, np.ndarray],
    theirs: tuple[np.ndarray, np.ndarray],
    in_place: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The cell-wise sum of two sparse tables on the same label sets (sorted distinct codes).

    When every cell of ``theirs`` is among ``mine`` and the dtypes agree, ``in_place`` adds
    into ``mine``'s count array instead of allocating. O(m log n) for m cells into n.
    """
    cells, values = mine
    new_cells, new_values = theirs
    dtype = np.result_type(values.dtype, new_values.dtype)
    if len(new_cells) == 0:  # the result never shares ``mine``'s counts unless in place
        return cells, values if in_place and values.dtype == dtype else values.astype(dtype)
    if len(cells) == 0:
        return new_cells, new_values.astype(dtype, copy=True)
    at = np.searchsorted(cells, new_cells)
    hit = at < len(cells)
    hit[hit] = cells[at[hit]] == new_cells[hit]
    if hit.all():
        out = values if in_place and values.dtype == dtype else values.astype(dtype, copy=True)
        out[at] += new_values
        return cells, out
    fresh = ~hit
    # Codes inserted before the same position keep their (sorted) order: the result is sorted.
    out_cells = np.insert(cells, at[fresh], new_cells[fresh])
    out_values = np.insert(values.astype(dtype, copy=False), at[fresh], 0)
    out_values[np.searchsorted(out_cells, new_cells)] += new_values
    return out_cells, out_values


def remap_cells(
    cells: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    new_rows: np.ndarray,
    new_cols: np.ndarray,
) -> np.ndarray:
    """Codes of cells on the label sets ``rows`` x ``cols`` re-numbered on their sorted
    supersets ``new_rows`` x ``new_cols``. The map is increasing, so sorted codes stay sorted."""
    if len(rows) == len(new_rows) and len(cols) == len(new_cols):
        return cells
    r, c = np.divmod(cells, len(cols))
    if len(rows) != len(new_rows):
        r = np.searchsorted(new_rows, rows)[r]
    if len(cols) != len(new_cols):
        c = np.searchsorted(new_cols, cols)[c]
    out: np.ndarray = r * len(new_cols) + c
    return out


def sparse_of(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sparse form of a dense table (its filled cells, in code order)."""
    flat = table.reshape(-1)
    cells = np.flatnonzero(flat).astype(np.int64, copy=False)
    return cells, flat[cells]


def dense_of(cells: np.ndarray, values: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """The dense table of a sparse one."""
    flat = np.zeros(shape[0] * shape[1], dtype=values.dtype)
    flat[cells] = values
    return flat.reshape(shape)


def check_cells(what: str, cells: np.ndarray, values: np.ndarray, size: int) -> None:
    """Decoding: ``ValueError`` unless ``cells`` are strictly increasing codes below ``size``
    and ``values`` are as many positive counts within the count bound."""
    if not isinstance(cells, np.ndarray) or cells.dtype != np.int64 or cells.ndim != 1:
        raise ValueError(f"{what}: the cells must be a 1-D int64 array")
    if not isinstance(values, np.ndarray) or values.dtype not in (np.int64, np.float64):
        raise ValueError(f"{what}: the counts must be an int64 or float64 array")
    if values.shape != cells.shape:
        raise ValueError(f"{what}: {len(cells)} cells but counts of shape {values.shape}")
    if len(cells):
        if len(cells) > 1 and not bool((cells[1:] > cells[:-1]).all()):
            raise ValueError(f"{what}: cells must be sorted and distinct")
        if int(cells[0]) < 0 or int(cells[-1]) >= size:
            raise ValueError(f"{what}: cell codes must lie in [0, {size})")
    check_counts(what, values)
    if len(values) and not bool((values != 0).all()):
        raise ValueError(f"{what}: the sparse form lists filled cells only (a count is zero)")
