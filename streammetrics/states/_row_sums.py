"""Sums of products along the rows of ``(tables, entries)`` arrays, each row's float the one
the row alone gives.

``np.einsum("ij,ij->i", a, b)`` runs through numpy's buffered iterator, whose buffer holds
8,192 elements whatever ``np.setbufsize`` says: among other rows, a row longer than that is
summed a buffer at a time and the pieces added, while a row alone (a one-row array, or a 1-D
``np.einsum("i,i->", x, y)``) is summed in one loop. The two differ in the last bits. A single
state reads its table as one row, and ``Sliced`` reads tables of one length as the rows of one
array (``auc_of_rows``, ``delong_rows``): up to 0.8.24, weighted ``ROCAUC`` slices of more than
8,192 entries read from a pack of two or more such tables did not get their own states' bits.
"""

from __future__ import annotations

import numpy as np

__all__ = ["EINSUM_BUFFER", "row_dots"]

#: The elements numpy's einsum iterator buffers: rows up to this long are summed whole among
#: other rows too (``tests/test_score_rows.py`` holds it).
EINSUM_BUFFER = 8192


def row_dots(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.einsum("ij,ij->i", a, b)`` of float64 arrays, each row's sum the one that row alone
    gives (rows longer than :data:`EINSUM_BUFFER`, among others, one at a time)."""
    if a.shape[0] > 1 and a.shape[1] > EINSUM_BUFFER:
        return np.array(
            [np.einsum("i,i->", x, y) for x, y in zip(a, b, strict=True)], dtype=np.float64
        )
    out: np.ndarray = np.einsum("ij,ij->i", a, b)
    return out
