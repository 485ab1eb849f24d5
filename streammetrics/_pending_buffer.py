"""The buffer of rows accepted but not yet folded into a metric's state.

:class:`Pending` holds what the per-request path (``streammetrics._pending``) accepted: rows given
as scalars, one tuple each, and small batches, kept as arrays. When it fills (``FOLD_ROWS`` rows,
or ``FOLD_CHUNK_BYTES`` / ``FOLD_CHUNK_ROWS`` of small batches) or before anything reads the state,
it hands them back as update batches that fold to exactly what the calls would have made.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._inputs import BFLOAT16_BITS, widen_bfloat16

__all__ = ["FOLD_CHUNK_BYTES", "FOLD_CHUNK_ROWS", "FOLD_ROWS", "Pending"]


#: When the buffer is folded into the state (one vectorised update): at ``FOLD_ROWS`` samples
#: given as scalars (Python objects, about 100 bytes a row), or when the small batches, kept as
#: arrays, hold ``FOLD_CHUNK_BYTES`` (16,384 rows of three 8-byte columns; 32,768 rows of an
#: int64 label and a float32 score) or ``FOLD_CHUNK_ROWS``: a buffer near 400 KB either way.
#: The fewer the folds, the less their fixed cost weighs on each call.
FOLD_ROWS = 4096
FOLD_CHUNK_BYTES = 16384 * 24
FOLD_CHUNK_ROWS = 65536

_TEXT = frozenset({str, bytes})


def _big_int(value: Any) -> bool:
    """Whether ``value`` is an integer (not a bool) that float64 does not hold exactly."""
    return (
        isinstance(value, (int, np.integer))
        and not isinstance(value, (bool, np.bool_))
        and abs(int(value)) > _EXACT_INT
    )


class Pending:
    """Rows accepted but not yet folded into the state: scalar rows and small batches.

    Rows of one call shape only (weighted or not): a call of the other kind folds first, so a
    fold never mixes rows with and without weights (the state's dtype stays what a sequence of
    ordinary updates would make it).
    """

    __slots__ = ("chunk_bytes", "chunk_rows", "chunks", "rows", "stash", "weighted")

    def __init__(self, weighted: bool) -> None:
        self.stash: dict[str, Any] = {}  # the metric's declared fields, out of it meanwhile
        self.rows: list[tuple[Any, ...]] = []  # one tuple per scalar row (weight last)
        self.chunks: list[tuple[np.ndarray, ...]] = []
        self.chunk_rows = 0
        self.chunk_bytes = 0
        self.weighted = weighted

    @property
    def size(self) -> int:
        return len(self.rows) + self.chunk_rows

    def add_chunk(self, cols: tuple[np.ndarray, ...]) -> None:
        self.chunks.append(cols)
        self.chunk_rows += len(cols[0])
        for c in cols:
            self.chunk_bytes += c.nbytes

    def batches(
        self, bfloat16: bool = False, exact: tuple[bool, ...] | None = None
    ) -> list[list[np.ndarray]]:
        """The buffered rows as update batches: one (:meth:`arrays`) when every column joins
        without changing a value; else each small batch, then each row, on its own, as the
        calls gave them. A join changes values when it turns integers beyond 2**53 into floats
        (labels of uint64 with int64 chunks, or a row's ``1.0`` among large Python ints).
        ``exact``: which columns must join exactly (labels and keys; a number column becomes
        float64 in any update anyway); all when None."""
        values = list(zip(*self.rows, strict=True)) if self.rows else []
        row_cols = [np.asarray(c) for c in values]
        if self._exact(row_cols, values, exact):
            return [self.arrays(bfloat16, row_cols)]
        out = [_part(chunk, bfloat16) for chunk in self.chunks]
        out += [[np.asarray([v]) for v in row] for row in self.rows]
        return out

    def _exact(
        self,
        row_cols: list[np.ndarray],
        values: list[tuple[Any, ...]],
        exact: tuple[bool, ...] | None,
    ) -> bool:
        for j, arr in enumerate(row_cols):
            if exact is not None and not exact[j]:
                continue
            if arr.dtype.kind in "US":
                # Strings beside numbers (rows of slices holding int labels and of slices
                # holding str labels): the join would turn the numbers into strings. (The set
                # of types first: one C-level pass, where most columns hold str alone.)
                kinds = set(map(type, values[j]))
                if not (kinds <= _TEXT or all(issubclass(t, (str, bytes)) for t in kinds)):
                    return False
                continue
            if arr.dtype.kind not in "fO":
                continue  # (integer columns hold their values exactly)
            if any(_big_int(v) for v in values[j]):
                return False  # an integer (Python's or numpy's) that the float join rounds
        parts = [*self.chunks, tuple(row_cols)] if self.rows else list(self.chunks)
        if len(parts) < 2:
            return True
        for j, col in enumerate(zip(*parts, strict=True)):
            if exact is not None and not exact[j]:
                continue
            kinds = {c.dtype.kind for c in col}
            if len({c.dtype for c in col}) == 1 or not kinds & {"i", "u"}:
                continue
            try:
                joined = np.result_type(*col)
            except TypeError:
                return False
            if joined.kind in "iu":
                continue
            if joined.kind in "USO":
                return False  # integer chunks beside string ones: they would become strings
            for c in col:
                if (
                    c.dtype.kind in "iu"
                    and c.size
                    and not (-_EXACT_INT <= int(c.min()) and int(c.max()) <= _EXACT_INT)
                ):
                    return False
        return True

    def arrays(
        self, bfloat16: bool = False, row_cols: list[np.ndarray] | None = None
    ) -> list[np.ndarray]:
        """Every buffered row, one array per column (weights last when weighted).

        A column of bfloat16 tensors is buffered as raw bits (``BFLOAT16_BITS``); it is widened
        to float32 here, once for the whole buffer, unless ``bfloat16`` says the fold reads the
        bits itself and every part of the column is bits.
        """
        parts = list(self.chunks)
        if self.rows:
            if row_cols is None:
                row_cols = [np.asarray(c) for c in zip(*self.rows, strict=True)]
            parts.append(tuple(row_cols))
        out = []
        for col in zip(*parts, strict=True):
            bits = [c.dtype is BFLOAT16_BITS for c in col]
            if not any(bits):
                out.append(col[0] if len(col) == 1 else np.concatenate(col))
            elif all(bits):
                # numpy concatenates record arrays field by field: join the plain bits instead,
                # then widen them (unless the fold reads bits) in one pass
                joined = np.concatenate([c.view(np.uint16) for c in col]).view(BFLOAT16_BITS)
                out.append(joined if bfloat16 else widen_bfloat16(joined))
            else:
                col = tuple(widen_bfloat16(c) if b else c for c, b in zip(col, bits, strict=True))
                out.append(col[0] if len(col) == 1 else np.concatenate(col))
        return out


#: Integers up to this magnitude survive a float64 join exactly.
_EXACT_INT = 2**53


def _part(chunk: tuple[np.ndarray, ...], bfloat16: bool) -> list[np.ndarray]:
    """One buffered small batch as update columns (bfloat16 bits widened unless read)."""
    return [c if c.dtype is not BFLOAT16_BITS or bfloat16 else widen_bfloat16(c) for c in chunk]
