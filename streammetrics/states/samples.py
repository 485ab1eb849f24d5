"""A bounded sample of the distinct rows of each key, chosen deterministically, with their counts.

For each key (a label: integers or strings) the block keeps the ``capacity`` *distinct* rows
with the smallest 64-bit hash of their bytes (ties, which only identical rows share in
practice, broken by the row values), how many times each kept row occurred (``mult``), and
the number of rows the key has seen. The sample is therefore a function of the multiset of
rows of each key alone: any split of a stream, merged in any order, gives the same sample byte
for byte (no random draw, no arrival-order trace; counts add). While a key has at most
``capacity`` distinct rows, its sample holds every one of them with its exact count
(:meth:`BottomKSample.complete`): an estimate weighting each kept row by its count is then the
exact value. Beyond that the kept rows are a uniform-looking subset of the key's distinct rows
(the hash is a fixed bijective mixer, splitmix64, applied column by column), and a mean over
the key's rows is estimated by the count-weighted mean over the kept ones: a ratio estimate,
close when the counts are of similar size, biased when a few distinct rows hold much of a key
(each is kept only with probability ``capacity / distinct rows``; docs/clustering.md).

Up to 0.8.16 the sample kept rows, not distinct rows: identical rows share a hash, so copies of
one row were kept or dropped together and could fill a key's sample, which biased every
estimate on data with repeated values (integer features). :class:`Legacy` marks that older
form for :meth:`BottomKSample.from_wire`.

Rows are float64 vectors of one width ``d``; ``-0.0`` is stored as ``0.0`` so that equal values
hash equally.

Memory: O(k * capacity * d) floats plus one hash, one count and one key code per kept row.
``batch``: O(n * d) to hash plus O(n log n) to sort; ``merged``: O(m log m) for the m kept rows
of both.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._codec import typed_array
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

__all__ = ["BottomKSample", "Legacy", "row_hash"]

_M64 = (1 << 64) - 1
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)
_SEED = 0x5EED5A3B1E5C0DE5
_FIELDS = frozenset({"keys", "seen", "codes", "hashes", "rows", "mult"})


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


def _rank_in_code(codes: np.ndarray, new: np.ndarray) -> np.ndarray:
    """For entries sorted by code: the number of ``new`` entries of the same code before each
    (its rank among the code's distinct values, ``new`` marking each value's first entry)."""
    seq = np.cumsum(new) - 1
    first = np.searchsorted(codes, codes, side="left")
    out: np.ndarray = seq - seq[first]
    return out


def _select(
    codes: np.ndarray, hashes: np.ndarray, rows: np.ndarray, mult: np.ndarray, capacity: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per code, the ``capacity`` distinct rows of smallest (hash, row), each once with the sum
    of its entries' counts, sorted by (code, hash, row)."""
    if len(codes) == 0:
        return codes, hashes, rows, mult
    order = _order(codes, hashes)
    c, h = codes[order], hashes[order]
    new = np.ones(len(c), dtype=bool)
    new[1:] = (c[1:] != c[:-1]) | (h[1:] != h[:-1])
    # Candidates: the entries of the ``capacity`` smallest distinct hashes of each code (every
    # copy of a row, and the rare distinct rows sharing a hash with a kept one).
    cand = order[_rank_in_code(c, new) < capacity]
    c, h, r, w = codes[cand], hashes[cand], rows[cand], mult[cand]
    same = (c[1:] == c[:-1]) & (h[1:] == h[:-1])
    if same.any():
        if (r[1:][same] != r[:-1][same]).any():
            # Distinct rows sharing a 64-bit hash (rare): order them by value, for canonical
            # bytes, so that copies of each sit side by side.
            full = np.lexsort((*r.T[::-1], h, c))
            c, h, r, w = c[full], h[full], r[full], w[full]
            same = (c[1:] == c[:-1]) & (h[1:] == h[:-1]) & (r[1:] == r[:-1]).all(axis=1)
        starts = np.flatnonzero(np.concatenate(([True], ~same)))
        w = np.add.reduceat(w, starts)
        c, h, r = c[starts], h[starts], r[starts]
    cut = _rank_in_code(c, np.ones(len(c), dtype=bool)) < capacity
    return c[cut], h[cut], np.ascontiguousarray(r[cut]), w[cut]


def _arrays(wire: dict[str, Any]) -> tuple[np.ndarray, ...]:
    """``seen, codes, hashes, rows`` of a wire form (either), their types checked."""
    return (
        typed_array(wire, "seen", np.int64, 1),
        typed_array(wire, "codes", np.int64, 1),
        typed_array(wire, "hashes", np.uint64, 1),
        typed_array(wire, "rows", np.float64, 2),
    )


class Legacy:
    """A sample's wire form of 0.8.16 and before (``keys, seen, codes, hashes, rows``: copies
    of a row side by side, no counts), as the upgrade of an older schema hands it to
    :meth:`BottomKSample.from_wire`. A decoded tree never holds one, so bytes of the current
    schema cannot pass for the older form."""

    __slots__ = ("wire",)

    def __init__(self, wire: Any) -> None:
        self.wire = wire


def _collapsed(wire: dict[str, Any]) -> dict[str, Any]:
    """``wire`` (the older form, its arrays checked) with each run of copies as one row and
    its count. Copies that are not side by side stay apart, for ``from_wire`` to refuse."""
    codes, hashes, rows = wire["codes"], wire["hashes"], wire["rows"]
    m = len(codes)
    if m == 0:
        return {**wire, "mult": np.zeros(0, dtype=np.int64)}
    same = (codes[1:] == codes[:-1]) & (hashes[1:] == hashes[:-1])
    same &= (rows[1:] == rows[:-1]).all(axis=1)
    starts = np.flatnonzero(np.concatenate(([True], ~same)))
    return {
        **wire,
        "codes": codes[starts],
        "hashes": hashes[starts],
        "rows": np.ascontiguousarray(rows[starts]),
        "mult": np.diff(np.append(starts, m)).astype(np.int64),
    }


class BottomKSample(StateBlock):
    """Per key, the ``capacity`` distinct rows of smallest hash with their counts, and how many
    rows the key has seen.

    Parameters
    ----------
    capacity : int
        Distinct rows kept per key (at least 1).
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
        self.mult: np.ndarray = np.zeros(0, dtype=np.int64)

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
        ones = np.ones(len(codes), dtype=np.int64)
        out.codes, out.hashes, out.rows, out.mult = _select(
            codes, row_hash(rows), rows, ones, self.capacity
        )
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
        mult = np.concatenate([self.mult, other.mult])
        out.keys, out.seen = keys, seen
        out.codes, out.hashes, out.rows, out.mult = _select(
            codes, hashes, rows, mult, self.capacity
        )
        return out

    def merge(self, other: Any) -> None:
        new = self.merged(other)
        self.keys, self.seen, self.codes = new.keys, new.seen, new.codes
        self.hashes, self.rows, self.mult = new.hashes, new.rows, new.mult

    # -- views -------------------------------------------------------------------------------

    def per_key(self, values: np.ndarray, reduce: np.ufunc = np.add) -> np.ndarray:
        """Per key, ``reduce`` over ``values`` of its kept rows (one value per kept row; 0 for
        a key keeping none)."""
        out: np.ndarray = np.zeros(len(self.keys), dtype=values.dtype)
        if len(self.codes):
            starts = self.segments()
            present = np.flatnonzero(np.diff(np.append(starts, len(self.codes))) > 0)
            out[present] = reduce.reduceat(values, starts[present])
        return out

    def held(self) -> np.ndarray:
        """Per key: the rows its sample stands for (the sum of its kept rows' counts)."""
        return self.per_key(self.mult)

    def complete(self) -> np.ndarray:
        """Per key: True while the sample holds every row the key has seen (at most
        ``capacity`` distinct rows, each with its exact count)."""
        return np.asarray(self.held() == self.seen)

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
            "mult": self.mult,
        }

    def from_wire(self, wire: Any) -> BottomKSample:
        if isinstance(wire, Legacy):
            return self._from_legacy(wire.wire)
        if not isinstance(wire, dict) or set(wire) != _FIELDS:
            raise ValueError("a sample needs exactly keys, seen, codes, hashes, rows and mult")
        keys = labels_from_wire(wire["keys"])
        seen, codes, hashes, rows = _arrays(wire)
        mult = typed_array(wire, "mult", np.int64, 1)
        k, m = len(keys), len(codes)
        if len(seen) != k or len(hashes) != m or len(rows) != m or len(mult) != m:
            raise ValueError("sample arrays disagree in length")
        if k == 0 and rows.shape[1] != 0:
            raise ValueError("an empty sample has no columns")
        if k and (seen.min() < 1 or rows.shape[1] < 1):
            raise ValueError("every key needs a positive count and rows at least one column")
        if m and (codes.min() < 0 or codes.max() >= k):
            raise ValueError("key codes out of range")
        if m and (mult.min() < 1 or (mult > seen[codes]).any()):
            raise ValueError("each kept row needs a count from 1 to its key's rows")
        if np.bincount(codes, minlength=k).max(initial=0) > self.capacity:
            raise ValueError("a key keeps more than capacity distinct rows")
        if rows.size and not np.isfinite(rows).all():
            raise ValueError("sampled rows must be finite")
        if rows.size and (np.signbit(rows) & (rows == 0)).any():
            raise ValueError("a sampled row holds -0.0, which every update stores as 0.0")
        if not np.array_equal(row_hash(rows), hashes):
            raise ValueError("the hashes do not match the rows")
        sc, sh, sr, sm = _select(codes, hashes, rows, mult, self.capacity)
        if not (np.array_equal(sc, codes) and np.array_equal(sh, hashes)):
            raise ValueError("the sample is not in canonical order, or keeps a row twice")
        out = self._new()
        out.keys, out.seen, out.codes, out.hashes, out.rows, out.mult = (
            keys,
            seen,
            codes,
            hashes,
            sr,
            sm,
        )
        # Each count is at most its key's rows (2**53 at most), and a key keeps at most
        # ``capacity`` rows: a float sum tells a total far past ``seen`` before int64 could wrap.
        if k and (np.bincount(codes, weights=mult.astype(np.float64), minlength=k) > 2.0**62).any():
            raise ValueError("a key's counts add to more than its rows")
        held = out.held()
        if (held > seen).any():
            raise ValueError("a key's counts add to more than its rows")
        # Every stream keeps all its rows or ``capacity`` distinct ones, each counted at least
        # once (an upgraded sample of 0.8.16: exactly ``min(seen, capacity)`` rows).
        if (held < np.minimum(seen, self.capacity)).any():
            raise ValueError("a key's sample stands for fewer rows than it must keep")
        return out

    def _from_legacy(self, wire: Any) -> BottomKSample:
        """The older form (:class:`Legacy`), held to what 0.8.16 held it to (each key kept
        ``min(seen, capacity)`` rows), then read with each run of copies as one row."""
        if not isinstance(wire, dict) or set(wire) != _FIELDS - {"mult"}:
            raise ValueError("a sample of 0.8.16 needs exactly keys, seen, codes, hashes and rows")
        seen, codes, hashes, rows = _arrays(wire)
        m = len(codes)
        if len(hashes) != m or len(rows) != m:
            raise ValueError("sample arrays disagree in length")
        if m and (codes.min() < 0 or codes.max() >= len(seen)):
            raise ValueError("key codes out of range")
        kept = np.bincount(codes, minlength=len(seen))
        if not np.array_equal(kept, np.minimum(seen, self.capacity)):
            raise ValueError("each key must keep min(seen, capacity) rows")
        return self.from_wire(_collapsed(wire))
