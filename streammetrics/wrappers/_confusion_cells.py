"""The cell codes of :class:`~streammetrics.wrappers._confusion_pack.ConfusionPack`: distinct
cells of a batch, label codes of cells, codes moved to a grown label set, queued runs folded,
and the fold of a weighted batch into a table of float counts."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._codec import WEIGHT_LIMIT
from ..states._fold import fold_equal
from ..states.stacked import cell_starts
from ._packing import ROOM

__all__ = [
    "concatenated",
    "counted_cells",
    "distinct",
    "folded_runs",
    "present_of",
    "recoded",
    "weighted_fold",
]


def present_of(cells: np.ndarray, size: int) -> np.ndarray:
    """The sorted distinct label codes ``slice * L + label`` of sorted cell codes (both labels
    of each cell)."""
    s, rest = np.divmod(cells, size * size)
    true, pred = np.divmod(rest, size)
    return distinct(np.concatenate((s * size + true, s * size + pred)))[0]


def distinct(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(sorted distinct codes, int64 count of each)``: one sort (``np.unique`` hashes, 5x
    slower on a 200k-row batch)."""
    ordered = np.sort(codes)
    starts = cell_starts(ordered)
    counts = np.diff(np.append(starts, len(ordered)))
    return ordered[starts], counts.astype(np.int64, copy=False)


def concatenated(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.empty(0, dtype)


def recoded(
    table: tuple[np.ndarray, np.ndarray, np.ndarray | None], at: np.ndarray, old: int, size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """A table's codes over ``old`` labels moved to ``size`` labels (old label ``i`` is new
    label ``at[i]``; ``at`` increases, so the codes stay sorted)."""
    cells, values, present = table
    s, rest = np.divmod(cells, old * old)
    true, pred = np.divmod(rest, old)
    cells = (s * size + at[true]) * size + at[pred]
    if present is not None:
        s, label = np.divmod(present, old)
        present = s * size + at[label]
    return cells, values, present


def folded_runs(
    runs: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """One table from sorted runs of cells (counts added) and label codes (united): one stable
    sort of each concatenation (timsort merges the runs)."""
    runs = [r for r in runs if len(r[0])] or runs[:1]
    if len(runs) == 1:
        return runs[0]
    (cells,), (values,), _, _ = fold_equal(
        [np.concatenate([r[0] for r in runs])], [np.concatenate([r[1] for r in runs])]
    )
    present = None
    if runs[0][2] is not None:
        (present,), _, _, _ = fold_equal([np.concatenate([r[2] for r in runs])])
    return cells, values, present


def _dense(cells: int, rows: int) -> bool:
    """Whether a batch of ``rows`` rows is counted over all ``cells`` (slice, cell) codes at
    once (one ``bincount`` and a few passes over the codes, about 3 ns each) rather than by
    sorting its codes (about 50 ns a row): 2-2.6x the rows/s of a 20k-row batch at 100-1,000
    slices of 3 labels. Not for a few rows over many slices (one-row calls folded in small
    groups into 100,000 slices: a sort)."""
    return cells <= 16 * rows


def counted_cells(
    cell: np.ndarray, slices: int, size: int, with_labels: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``(cells, counts, labels)`` of a batch's rows (cell codes ``cell`` over ``slices``
    slices of ``size`` labels): the sorted distinct cells, the int64 rows of each, and (when
    ``with_labels``) the sorted distinct label codes ``slice * size + label`` of its cells."""
    area = slices * size * size
    if not _dense(area, len(cell)):
        cells, counts = distinct(cell)
        return cells, counts, present_of(cells, size) if with_labels else None
    every = np.bincount(cell, minlength=area)
    cells = np.flatnonzero(every)
    labels = None
    if with_labels:
        both = (every != 0).reshape(slices, size, size)
        labels = np.flatnonzero(both.any(axis=2) | both.any(axis=1))
    return cells, every[cells].astype(np.int64, copy=False), labels


def weighted_fold(
    held_floaty: np.ndarray | None,
    table: tuple[np.ndarray, np.ndarray, np.ndarray | None],
    queue: tuple[tuple[np.ndarray, np.ndarray, np.ndarray | None], ...],
    cell: np.ndarray,
    sw: np.ndarray | None,
    size: int,
    slices: int,
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray | None], np.ndarray] | None:
    """A pack's table (float counts) with the batch's rows (cell codes ``cell``, weights
    ``sw`` or 1 each) added, and which of ``slices`` slices hold weights; None past the
    weight bound (``held_floaty``: which slices held weights before, None for none).

    Each slice's own update adds its rows' weights per cell in row order (one
    ``bincount``), then adds that sum to its held count: the same additions here, so
    the counts are the bits each slice's update makes. Float sums depend on their order,
    so nothing is queued: a queued integer table is folded first (exactly)."""
    if queue:
        table = folded_runs([table, *queue])
    held_cells, held_values, held_present = table
    area = slices * size * size
    if _dense(area, len(cell)):
        # A batch large enough for one dense pass over every (slice, cell): no sort.
        values = np.zeros(area)
        values[held_cells] = held_values
        values += np.bincount(cell, weights=sw, minlength=area)  # + 0.0 leaves a count
        filled = np.zeros(area, dtype=bool)
        filled[held_cells] = True
        filled[cell] = True
        merged = np.flatnonzero(filled)
        values = values[merged]
        present = None
        if held_present is not None:  # each slice's labels: true or predicted in a cell
            both = filled.reshape(slices, size, size)
            seen = (both.any(axis=2) | both.any(axis=1)).reshape(-1)
            seen[held_present] = True  # (labels of zero-weight rows fill no held cell)
            present = np.flatnonzero(seen)
        totals = np.bincount(merged // (size * size), weights=values, minlength=slices)
    else:
        # A few rows into a large table: the batch's cells are added where held and inserted
        # where new (copies of the table, no sort of it), and only the slices it touched are
        # summed for the bound (100-row batches into 100,000 slices: 15 ms a batch, when the
        # whole table was sorted and summed each time).
        batch_cells, inverse = np.unique(cell, return_inverse=True)
        sums = np.bincount(inverse.reshape(-1), weights=sw, minlength=len(batch_cells))
        merged, values = _added(held_cells, held_values.astype(np.float64), batch_cells, sums)
        present = None
        if held_present is not None:
            present = _inserted(held_present, present_of(batch_cells, size))
        totals = _touched_totals(merged, values, batch_cells, size * size)
    if not totals.max(initial=0.0) <= WEIGHT_LIMIT * ROOM:
        return None  # (the slice's own update refuses it, naming sample_weight)
    floaty = np.zeros(slices, dtype=bool)
    if held_floaty is not None:
        floaty[: len(held_floaty)] = held_floaty
    return (merged, values, present), floaty


def _added(
    cells: np.ndarray, values: np.ndarray, new_cells: np.ndarray, sums: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted ``cells`` with their float ``values`` (changed in place: a copy of the held
    ones) and the sorted distinct ``new_cells`` with ``sums`` added: a held cell's value plus
    its sum, a new cell its sum."""
    at, held = _found(cells, new_cells)
    values[at[held]] += sums[held]
    fresh = ~held
    return np.insert(cells, at[fresh], new_cells[fresh]), np.insert(values, at[fresh], sums[fresh])


def _inserted(codes: np.ndarray, new: np.ndarray) -> np.ndarray:
    """The sorted distinct ``codes`` with the sorted distinct ``new`` ones united."""
    at, held = _found(codes, new)
    return np.insert(codes, at[~held], new[~held])


def _found(codes: np.ndarray, new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(at, held)``: where each of ``new`` sits in the sorted ``codes``, and whether it is
    there already."""
    at = np.searchsorted(codes, new)
    held = at < len(codes)
    held[held] = codes[at[held]] == new[held]
    return at, held


def _touched_totals(
    cells: np.ndarray, values: np.ndarray, batch_cells: np.ndarray, area: int
) -> np.ndarray:
    """The summed values of each slice holding one of ``batch_cells`` (``area`` cells per
    slice), each over its cells in order, as a ``bincount`` over the whole table sums it."""
    touched = np.unique(batch_cells // area)
    lo = np.searchsorted(cells, touched * area)
    hi = np.searchsorted(cells, (touched + 1) * area)
    lengths = hi - lo
    starts = np.cumsum(lengths) - lengths
    rows = np.arange(int(lengths.sum())) + np.repeat(lo - starts, lengths)
    owner = np.repeat(np.arange(len(touched)), lengths)
    return np.bincount(owner, weights=values[rows], minlength=len(touched))
