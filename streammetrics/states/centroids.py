"""Running per-cluster moments: count, mean vector and sum of squared deviations per key.

The state behind the internal clustering indices that running sums give exactly: the centroids,
the within-cluster sum of squares (SSW), the between-cluster sum of squares (SSB) and so the
Calinski-Harabasz index. Each key (a cluster label: integers or strings) keeps

* ``counts``: rows seen (int64),
* ``means``, ``means_lo``: the mean row as an unevaluated sum ``means + means_lo`` of two
  float64 rows (length d; the low part keeps the digits a single float64 loses far from the
  origin),
* ``m2``: the sum of squared Euclidean distances of its rows to that mean (float64),
* ``extra``: optional further per-key columns merged by adding (e.g. a running sum of distances
  to a fixed centre).

Mean and ``m2`` rather than raw sums of ``x`` and of ``|x|**2``: the raw form loses every digit
of the spread when the data sit far from the origin (``sum |x|**2 - n |mean|**2`` cancels). A
batch's means and ``m2`` are computed two-pass on its rows shifted by each key's first row, with
a corrected second pass summed in blocks (a far first row otherwise skews the rounding), and
two blocks combine with Chan et al.'s
update (Chan, Golub and LeVeque, "Algorithms for computing the sample variance", 1983)::

    n = na + nb;  delta = mean_b - mean_a
    mean = mean_a + delta * nb / n;  m2 = m2_a + m2_b + |delta|**2 * na * nb / n

(the mean stepped from the heavier side's, ``mean_b - delta * na / n`` when ``nb > na``).

The low part of the means makes the centroids' differences (the between-cluster spread, the
distances between centres) as accurate far from the origin as near it: at an offset of 1e12 a
single float64 mean is rounded to 1.2e-4, which split the Calinski-Harabasz index by 1e-4.

Merging is exact in the counts and agrees to rounding (about 1e-15 relative to the spread) in
the means and ``m2`` whatever the split and merge order: this is a float state. Keys are kept
sorted, so equal contents give equal bytes.

Bounds (``docs/format.md``, "Float bounds"): every mean coordinate at most
:data:`CENTROID_LIMIT` (2**300) in magnitude, every ``m2`` and extra sum at most
:data:`SPREAD_LIMIT` (2**900). Within them a merge's ``|delta|**2 * na * nb / n`` and the
indices' sums (SSB, SSW) stay finite. Decoding refuses a block past them (``ValueError``); a
merge whose result would pass them raises :class:`~streammetrics.errors.IncompatibleStateError`
before anything changes. Rows within 2**200 (what the clustering indices accept) stay far
below.

Memory: O(k * (d + e)) for k keys, d columns, e extra columns. ``batch``: O(n * d) (plus
O(n log n) to sort string keys); ``merged``: O(k * d).
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
    spread,
    union,
    unique_codes,
)
from .moments import two_sum

__all__ = ["CENTROID_LIMIT", "SPREAD_LIMIT", "ClusterMoments"]

#: The largest magnitude of a mean coordinate a block may hold.
CENTROID_LIMIT = 2.0**300
#: The largest ``m2`` (sum of squared deviations) or extra sum a block may hold.
SPREAD_LIMIT = 2.0**900


class ClusterMoments(StateBlock):
    """Per-key count, mean row, sum of squared deviations and optional extra sums.

    Parameters
    ----------
    n_extra : int
        Number of extra per-key columns summed on merge (0 for none).

    The number of columns ``d`` is set by the first batch; blocks of different ``d`` refuse to
    merge.
    """

    def __init__(self, n_extra: int = 0) -> None:
        self.n_extra = int(n_extra)
        self.keys: np.ndarray = EMPTY_LABELS
        self.counts: np.ndarray = np.zeros(0, dtype=np.int64)
        self.means: np.ndarray = np.zeros((0, 0), dtype=np.float64)
        self.means_lo: np.ndarray = np.zeros((0, 0), dtype=np.float64)
        self.m2: np.ndarray = np.zeros(0, dtype=np.float64)
        self.extra: np.ndarray = np.zeros((0, self.n_extra), dtype=np.float64)

    def _new(self) -> ClusterMoments:
        return ClusterMoments(self.n_extra)

    @property
    def dim(self) -> int:
        """Number of columns of the rows (0 while empty)."""
        return int(self.means.shape[1])

    # -- building increments -----------------------------------------------------------------

    def batch(
        self,
        labels: np.ndarray,
        x: np.ndarray,
        extra: np.ndarray | None = None,
        name: str = "labels",
    ) -> ClusterMoments:
        """A new block holding only this batch (``labels`` (n,), ``x`` (n, d), ``extra`` (n, e)).

        Pure: ``self`` does not change; raises ``InputError`` (naming ``name``) when the labels
        are of another kind than this block's.
        """
        check_kinds(self.keys, labels, name)
        out = self._new()
        if len(labels) == 0:
            return out
        keys, codes = unique_codes(labels)
        k = len(keys)
        counts = np.bincount(codes, minlength=k).astype(np.int64)
        # Deviations from each key's first row, then from their mean (two-pass on shifted
        # rows): far from the origin a plain sum of the rows loses the spread's digits (at
        # 1e12, 1e-3 of a Calinski-Harabasz index), and a key whose rows are all equal gets
        # exactly its row as mean and an m2 of exactly 0.
        first = np.full(k, len(labels), dtype=np.intp)
        np.minimum.at(first, codes, np.arange(len(labels)))
        shift = x[first]
        dev = x - shift[codes]
        # One weighted bincount per column: O(n d) with no sort of the rows.
        offsets = np.empty((k, x.shape[1]), dtype=np.float64)
        for j in range(x.shape[1]):
            offsets[:, j] = np.bincount(codes, weights=dev[:, j], minlength=k)
        offsets /= counts[:, None]
        dev -= offsets[codes]
        # A second pass corrects the mean by the deviations' own mean (Chan, Golub and
        # LeVeque's corrected two-pass), summed in blocks: the first pass adds deviations
        # from the first row one by one, and a far first row made their rounding one-sided
        # (2.7e-5 of an SSB, whose rows in another order gave 4e-16: 0.8.18).
        correction = _key_sums(codes, dev, k) / counts[:, None]
        means, means_lo = two_sum(shift, offsets)
        means, means_lo = two_sum(means, means_lo + correction)
        # sum |dev - c|**2 = sum |dev|**2 - n |c|**2 (sum dev = n c), in blocks too: a far
        # row's square first, then many small ones, lost them one by one
        squares = np.einsum("ij,ij->i", dev, dev)[:, None]
        m2 = _key_sums(codes, squares, k)[:, 0] - counts * np.einsum(
            "ij,ij->i", correction, correction
        )
        m2 = np.maximum(m2, 0.0)
        if self.n_extra:
            assert extra is not None and extra.shape == (len(labels), self.n_extra)
            ext = np.empty((k, self.n_extra), dtype=np.float64)
            for j in range(self.n_extra):
                ext[:, j] = np.bincount(codes, weights=extra[:, j], minlength=k)
        else:
            ext = np.zeros((k, 0), dtype=np.float64)
        out.keys, out.counts, out.means, out.m2, out.extra = keys, counts, means, m2, ext
        out.means_lo = means_lo
        return out

    # -- merging -----------------------------------------------------------------------------

    def check_mergeable(self, other: Any) -> None:
        if not isinstance(other, ClusterMoments) or other.n_extra != self.n_extra:
            raise IncompatibleStateError("cannot merge cluster moments of another layout")
        check_merge_rows(self.keys, other.keys, self.dim, other.dim)

    def merged(self, other: ClusterMoments) -> ClusterMoments:
        """A new block with the rows of both (Chan et al.'s pairwise update); inputs unchanged."""
        self.check_mergeable(other)
        if not len(other.keys):
            return self.copy()
        if not len(self.keys):
            out = other.copy()  # a fresh batch, maybe of rows too large: checked too
            _check_bounds(out.means, out.m2, out.extra, IncompatibleStateError)
            return out
        out = self._new()
        keys = union(self.keys, other.keys)
        na = spread(self.counts, self.keys, keys)
        nb = spread(other.counts, other.keys, keys)
        ma = spread(self.means, self.keys, keys)
        mb = spread(other.means, other.keys, keys)
        la = spread(self.means_lo, self.keys, keys)
        lb = spread(other.means_lo, other.keys, keys)
        n = na + nb
        # mean_b - mean_a from both parts: exact in its high part, so accurate to the
        # difference's own size however far the means sit from the origin.
        high, err = two_sum(mb, -ma)
        delta = high + (err + (lb - la))
        frac = nb / n  # every key of the union has n >= 1
        out.keys, out.counts = keys, n
        # Each key's mean steps from its heavier side: far apart means make delta lose the
        # lighter one's low digits, an error the step scales by the other side's share (from
        # the lighter side, nearly all of it: 4.6e-12 of an SSB one way, 4e-16 the other,
        # 0.8.18). Keys as heavy on both sides step from this block's, as before.
        heavy = (nb > na)[:, None]
        step = np.where(heavy, -delta * (na / n)[:, None], delta * frac[:, None])
        hi, lo = two_sum(np.where(heavy, mb, ma), step)
        out.means, out.means_lo = two_sum(hi, lo + np.where(heavy, lb, la))
        # A key on one side only keeps that side's two parts as they are (``ma + delta`` would
        # round the low part away).
        for only, mean, low in ((na == 0, mb, lb), (nb == 0, ma, la)):
            if only.any():
                out.means[only], out.means_lo[only] = mean[only], low[only]
        out.m2 = (
            spread(self.m2, self.keys, keys)
            + spread(other.m2, other.keys, keys)
            + np.einsum("ij,ij->i", delta, delta) * (na * frac)
        )
        out.extra = spread(self.extra, self.keys, keys) + spread(other.extra, other.keys, keys)
        _check_bounds(out.means, out.m2, out.extra, IncompatibleStateError)
        return out

    def merge(self, other: Any) -> None:
        new = self.merged(other)
        self.keys, self.counts, self.means = new.keys, new.counts, new.means
        self.means_lo, self.m2, self.extra = new.means_lo, new.m2, new.extra

    def centred(self) -> np.ndarray:
        """Each mean minus the first key's, from both parts of each (``(k, d)``): the
        centroids' positions relative to each other, to full precision far from the origin."""
        high, err = two_sum(self.means, -self.means[:1])
        out: np.ndarray = high + (err + (self.means_lo - self.means_lo[:1]))
        return out

    # -- wire --------------------------------------------------------------------------------

    def to_wire(self) -> Any:
        return {
            "keys": labels_to_wire(self.keys),
            "counts": self.counts,
            "means": self.means,
            "means_lo": self.means_lo,
            "m2": self.m2,
            "extra": self.extra,
        }

    def from_wire(self, wire: Any) -> ClusterMoments:
        fields = {"keys", "counts", "means", "means_lo", "m2", "extra"}
        if not isinstance(wire, dict) or set(wire) != fields:
            raise ValueError(
                "cluster moments need exactly keys, counts, means, means_lo, m2 and extra"
            )
        out = self._new()
        keys = labels_from_wire(wire["keys"])
        k = len(keys)
        arrays = [
            typed_array(wire, what, dtype, ndim)
            for what, dtype, ndim in (
                ("counts", np.int64, 1),
                ("means", np.float64, 2),
                ("means_lo", np.float64, 2),
                ("m2", np.float64, 1),
                ("extra", np.float64, 2),
            )
        ]
        for what, arr in zip(("counts", "means", "means_lo", "m2", "extra"), arrays, strict=True):
            if len(arr) != k:
                raise ValueError(f"{what} has {len(arr)} rows for {k} keys")
        counts, means, low, m2, extra = arrays
        if extra.shape[1] != self.n_extra:
            raise ValueError(f"extra must have {self.n_extra} columns")
        if low.shape != means.shape:
            raise ValueError("means_lo must have the shape of means")
        if k == 0 and means.shape[1] != 0:
            raise ValueError("an empty block has no columns")
        if k and (counts.min() < 1 or means.shape[1] < 1):
            raise ValueError("every key needs a positive count and at least one column")
        for arr in (means, low, m2, extra):
            if arr.size and not np.isfinite(arr).all():
                raise ValueError("moments must be finite")
        # The low part is what the high part could not hold: at most half its last place.
        if means.size and not (np.abs(low) <= 0.5 * np.spacing(np.abs(means))).all():
            raise ValueError("means_lo must be below half a unit in the last place of means")
        if m2.size and m2.min() < 0:
            raise ValueError("sums of squares must be non-negative")
        _check_bounds(means, m2, extra, ValueError)
        out.keys, out.counts, out.means, out.m2, out.extra = keys, counts, means, m2, extra
        out.means_lo = low
        return out

    def total(self) -> int:
        """Rows seen over all keys."""
        return int(self.counts.sum())


def _check_bounds(
    means: np.ndarray, m2: np.ndarray, extra: np.ndarray, error: type[Exception]
) -> None:
    """Raise ``error`` unless the means and the sums are within their bounds (3 reductions)."""
    if means.size and not np.abs(means).max() <= CENTROID_LIMIT:
        raise error("cluster moments: a mean coordinate is past the bound 2**300")
    for arr in (m2, extra):
        if arr.size and not np.abs(arr).max() <= SPREAD_LIMIT:
            raise error("cluster moments: a sum of squares or distances is past 2**900")


def _key_sums(codes: np.ndarray, values: np.ndarray, k: int) -> np.ndarray:
    """Per key, the column sums of ``values`` (n, d): ``np.bincount`` (which adds one row at a
    time) over blocks of rows, the blocks' sums added with their rounding errors kept (TwoSum):
    a key's error grows with its rows in one block (at most ``max(8192, 8 k)``), not with all
    of them. One block when the batch is that short."""
    n, d = values.shape
    block = max(1 << 13, 8 * k)
    out = np.empty((k, d), dtype=np.float64)
    if n <= block:
        for j in range(d):
            out[:, j] = np.bincount(codes, weights=values[:, j], minlength=k)
        return out
    total = np.zeros((k, d))
    errors = np.zeros((k, d))
    for a in range(0, n, block):
        part = codes[a : a + block]
        for j in range(d):
            out[:, j] = np.bincount(part, weights=values[a : a + block, j], minlength=k)
        total, error = two_sum(total, out)
        errors += error
    return total + errors
