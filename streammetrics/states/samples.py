"""A bounded sample of rows per key, chosen deterministically: bottom-k by a hash of the row.

For each key (a label: integers or strings) the block keeps the ``capacity`` rows with the
smallest 64-bit hash of their bytes (ties, which only identical rows share in practice, broken by
the row values), and the number of rows the key has seen. The sample is therefore a function of
the multiset of rows of each key alone: any split of a stream, merged in any order, gives the
same sample byte for byte (no random draw, no arrival-order trace). While a key has seen at most
``capacity`` rows its sample holds every one of them (:meth:`BottomKSample.complete`); beyond
that the sample is a uniform-looking subset (the hash is a fixed bijective mixer, splitmix64,
applied column by column), fit for estimating means over the key's rows.

Rows are float64 vectors of one width ``d``; ``-0.0`` is stored as ``0.0`` so that equal values
hash equally.

Memory: O(k * capacity * d) floats plus one hash and one key code per kept row. ``batch``:
O(n * d) to hash plus O(n log n) to sort; ``merged``: O(m log m) for the m kept rows of both.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import StateBlock
from ..errors import IncompatibleStateError
from .labels import (
    EMPTY_LABELS,
    check_kinds,
    check_merge_rows,
    labels_from_wire,
    labels_to_wire,
    union,
    unique_codes,
)

__all__ = ["BottomKSample", "row_hash"]

_M64 = (1 << 64) - 1
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)
_SEED = 0x5EED5A3B1E5C0DE5


def _mix(z: np.ndarray) -> np.ndarray:
    # splitmix64's finaliser (Steele, Lea and Flood 2014): a bijection on uint64 with good
    # avalanche; array arithmetic wraps modulo 2**64 without warnings.
    z = (z ^ (z >> np.uint64(30))) * _MUL1
    z = (z ^ (z >> np.uint64(27))) * _MUL2
    out: np.ndarray = z ^ (z >> np.uint64(31))
    return out


def row_hash(rows: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row's float64 bytes (shape (n, d) -> (n,) uint64).

    Deterministic across machines and runs: it depends on the row values only.
    """
    rows = np.ascontiguousarray(rows, dtype=np.float64)
    n, d = rows.shape
    bits = rows.view(np.uint64)
    h = np.full(n, (_SEED ^ d) & _M64, dtype=np.uint64)
    for j in range(d):  # one vectorised pass per column
        h = _mix(h ^ (bits[:, j] + _GOLDEN * np.full(1, j + 1, dtype=np.uint64)))
    return h


def _order(codes: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """Indices sorting by (code, hash): a hash sort, then a stable (radix) sort by code."""
    by_hash = np.argsort(hashes)
    out: np.ndarray = by_hash[np.argsort(codes[by_hash], kind="stable")]
    return out


def _select(
    codes: np.ndarray, hashes: np.ndarray, rows: np.ndarray, capacity: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keep per code the ``capacity`` smallest (hash, row) entries, sorted by (code, hash, row)."""
    if len(codes) == 0:
        return codes, hashes, rows
    order = _order(codes, hashes)
    c, h = codes[order], hashes[order]
    start = np.searchsorted(c, c, side="left")
    rank = np.arange(len(c)) - start
    # Entries tied on the hash with the last kept one may be kept instead of it: keep them
    # all as candidates, then order fully and cut.
    last = np.minimum(start + capacity - 1, np.searchsorted(c, c, side="right") - 1)
    cand = order[(rank < capacity) | (h == h[last])]
    c, h, r = codes[cand], hashes[cand], rows[cand]
    tie = (c[1:] == c[:-1]) & (h[1:] == h[:-1])
    if tie.any() and (r[1:][tie] != r[:-1][tie]).any():
        # Distinct rows sharing a 64-bit hash (rare): order them by value, for canonical bytes.
        full = np.lexsort((*r.T[::-1], h, c))
        c, h, r = c[full], h[full], r[full]
    start = np.searchsorted(c, c, side="left")
    cut = (np.arange(len(c)) - start) < capacity
    return c[cut], h[cut], np.ascontiguousarray(r[cut])


class BottomKSample(StateBlock):
    """Per key, the ``capacity`` rows of smallest hash, and how many rows the key has seen.

    Parameters
    ----------
    capacity : int
        Rows kept per key (at least 1).
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = int(capacity)
        self.keys: np.ndarray = EMPTY_LABELS
        self.seen: np.ndarray = np.zeros(0, dtype=np.int64)
        self.codes: np.ndarray = np.zeros(0, dtype=np.int64)
        self.hashes: np.ndarray = np.zeros(0, dtype=np.uint64)
        self.rows: np.ndarray = np.zeros((0, 0), dtype=np.float64)

    def _new(self) -> BottomKSample:
        return BottomKSample(self.capacity)

    @property
    def dim(self) -> int:
        return int(self.rows.shape[1])

    # -- building increments -----------------------------------------------------------------

    def batch(self, labels: np.ndarray, rows: np.ndarray, name: str = "labels") -> BottomKSample:
        """A new block holding the sample of this batch alone; ``self`` does not change."""
        check_kinds(self.keys, labels, name)
        out = self._new()
        if len(labels) == 0:
            return out
        keys, codes = unique_codes(labels)
        rows = np.ascontiguousarray(rows, dtype=np.float64) + 0.0  # -0.0 -> 0.0
        out.keys = keys
        out.seen = np.bincount(codes, minlength=len(keys)).astype(np.int64)
        out.codes, out.hashes, out.rows = _select(codes, row_hash(rows), rows, self.capacity)
        return out

    # -- merging -----------------------------------------------------------------------------

    def check_mergeable(self, other: Any) -> None:
        if not isinstance(other, BottomKSample) or other.capacity != self.capacity:
            raise IncompatibleStateError("cannot merge samples of different capacity")
        check_merge_rows(self.keys, other.keys, self.dim, other.dim)

    def merged(self, other: BottomKSample) -> BottomKSample:
        """A new block with the sample of both streams together; neither input changes."""
        self.check_mergeable(other)
        if not len(other.keys):
            return self.copy()
        if not len(self.keys):
            return other.copy()
        out = self._new()
        keys = union(self.keys, other.keys)
        seen = np.zeros(len(keys), dtype=np.int64)
        ia, ib = np.searchsorted(keys, self.keys), np.searchsorted(keys, other.keys)
        seen[ia] += self.seen
        seen[ib] += other.seen
        codes = np.concatenate([ia[self.codes], ib[other.codes]])
        hashes = np.concatenate([self.hashes, other.hashes])
        rows = np.concatenate([self.rows, other.rows])
        out.keys, out.seen = keys, seen
        out.codes, out.hashes, out.rows = _select(codes, hashes, rows, self.capacity)
        return out

    def merge(self, other: Any) -> None:
        new = self.merged(other)
        self.keys, self.seen, self.codes = new.keys, new.seen, new.codes
        self.hashes, self.rows = new.hashes, new.rows

    # -- views -------------------------------------------------------------------------------

    def complete(self) -> np.ndarray:
        """Per key: True while the sample holds every row the key has seen."""
        return np.asarray(self.seen <= self.capacity)

    def segments(self) -> np.ndarray:
        """Start index in ``rows`` of each key's sample (rows are grouped by key, in key order)."""
        return np.asarray(np.searchsorted(self.codes, np.arange(len(self.keys))), dtype=np.int64)

    # -- wire --------------------------------------------------------------------------------

    def to_wire(self) -> Any:
        return {
            "keys": labels_to_wire(self.keys),
            "seen": self.seen,
            "codes": self.codes,
            "hashes": self.hashes,
            "rows": self.rows,
        }

    def from_wire(self, wire: Any) -> BottomKSample:
        if not isinstance(wire, dict) or set(wire) != {"keys", "seen", "codes", "hashes", "rows"}:
            raise ValueError("a sample needs exactly keys, seen, codes, hashes and rows")
        keys = labels_from_wire(wire["keys"])
        seen, codes, hashes, rows = wire["seen"], wire["codes"], wire["hashes"], wire["rows"]
        for what, arr, dtype, ndim in (
            ("seen", seen, np.int64, 1),
            ("codes", codes, np.int64, 1),
            ("hashes", hashes, np.uint64, 1),
            ("rows", rows, np.float64, 2),
        ):
            if not isinstance(arr, np.ndarray) or arr.dtype != dtype or arr.ndim != ndim:
                raise ValueError(f"{what} must be a {ndim}-D {np.dtype(dtype).name} array")
        k, m = len(keys), len(codes)
        if len(seen) != k or len(hashes) != m or len(rows) != m:
            raise ValueError("sample arrays disagree in length")
        if k == 0 and rows.shape[1] != 0:
            raise ValueError("an empty sample has no columns")
        if k and (seen.min() < 1 or rows.shape[1] < 1):
            raise ValueError("every key needs a positive count and rows at least one column")
        if m and (codes.min() < 0 or codes.max() >= k):
            raise ValueError("key codes out of range")
        if not np.array_equal(np.bincount(codes, minlength=k), np.minimum(seen, self.capacity)):
            raise ValueError("each key must keep min(seen, capacity) rows")
        if rows.size and not np.isfinite(rows).all():
            raise ValueError("sampled rows must be finite")
        rows = rows + 0.0
        if not np.array_equal(row_hash(rows), hashes):
            raise ValueError("the hashes do not match the rows")
        sc, sh, sr = _select(codes, hashes, rows, self.capacity)
        if not (np.array_equal(sc, codes) and np.array_equal(sh, hashes)):
            raise ValueError("the sample is not in canonical order")
        out = self._new()
        out.keys, out.seen, out.codes, out.hashes, out.rows = keys, seen, codes, hashes, sr
        return out
