"""The bounded-memory state of detection mAP: TP and FP counts per score bucket.

For every (class, detection limit, area range, IoU threshold) "combination", detections that are
not ignored are counted as true or false positives in score buckets given by a shared
:class:`~streammetrics.states.buckets.BucketMapping` (the score sketch of the binary-score
metrics). Memory is bounded by ``classes x combinations x mapping.size`` entries whatever the
number of images (40 bytes each, and only non-empty buckets are kept).

Within a bucket the order of its detections is lost. Putting each bucket's true positives first
gives a precision envelope at least COCO's at every recall point, putting them last one at most
COCO's (every point of the true curve is dominated by, and dominates, a bucket-end point of
the two orderings), so the true mAP lies between the two; the metric reports the midpoint and
half the gap as its error bound. Recall does not depend on the order: it is exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._codec import COUNT_LIMIT, check_counts, check_sum, count_total
from ..base import StateBlock
from ..errors import IncompatibleStateError
from ..states._fold import fold_equal, queue_full
from ..states.mappings import BucketMapping
from ._records import _add_counts, check_gt_sum

__all__ = ["DetectionBuckets"]

_COLUMNS = ("label", "combo", "key", "tp", "fp")


def _reduce(cols: dict[str, np.ndarray], size: int | None = None) -> dict[str, np.ndarray]:
    """Sort by (label, combo, key) and add up the counts of equal entries.

    With a grid mapping (``size`` keys) and few classes this is one ``bincount`` over the dense
    (class, combination, key) cube; otherwise a sort.
    """
    n = len(cols["label"])
    if n == 0:
        return cols
    if size is not None:
        codes, code = np.unique(cols["label"], return_inverse=True)
        n_combo = int(cols["combo"].max()) + 1
        cells = len(codes) * n_combo * size
        if cells <= max(1 << 16, 8 * n):
            flat = (code.reshape(-1) * n_combo + cols["combo"]) * size + cols["key"]
            tp = np.bincount(flat, weights=cols["tp"], minlength=cells)
            fp = np.bincount(flat, weights=cols["fp"], minlength=cells)
            seen = np.flatnonzero((tp + fp) > 0)
            c, rest = np.divmod(seen, n_combo * size)
            combo, key = np.divmod(rest, size)
            # float64 bincount sums of integers are exact below 2**53
            return {
                "label": codes[c].astype(np.int64),
                "combo": combo.astype(np.int64),
                "key": key.astype(np.int64),
                "tp": tp[seen].astype(np.int64),
                "fp": fp[seen].astype(np.int64),
            }
    (label, combo, key), (tp, fp), _, _ = fold_equal(
        [cols["label"], cols["combo"], cols["key"]], [cols["tp"], cols["fp"]]
    )
    return {"label": label, "combo": combo, "key": key, "tp": tp, "fp": fp}


class DetectionBuckets(StateBlock):
    """TP / FP counts per (class, combination, score bucket), and ground-truth counts."""

    def __init__(self, mapping: BucketMapping, n_combos: int, n_areas: int) -> None:
        self.mapping = mapping
        self.n_combos = n_combos
        self.n_areas = n_areas
        self._table: dict[str, np.ndarray] = {c: np.empty(0, dtype=np.int64) for c in _COLUMNS}
        # Reduced batches not yet folded in; folded once they outweigh the table, so an update
        # costs O(batch log batch) amortised, and memory stays within twice the table.
        self._pending: list[dict[str, np.ndarray]] = []
        self.classes = np.empty(0, dtype=np.int64)
        self.gt_counts = np.empty((0, n_areas), dtype=np.int64)

    def _shell(self) -> DetectionBuckets:
        return DetectionBuckets(self.mapping, self.n_combos, self.n_areas)

    def keys(self, scores: np.ndarray) -> np.ndarray:
        return self.mapping.keys(scores).astype(np.int64)

    def added(
        self, entries: dict[str, np.ndarray], classes: np.ndarray, gt_counts: np.ndarray
    ) -> DetectionBuckets:
        """A new block: this one plus a batch of (label, combo, key, tp, fp) entries."""
        check_gt_sum(self.gt_counts, gt_counts)
        out = self._shell()
        out._table = self._table
        out._pending = [
            *self._pending,
            _reduce({c: entries[c].astype(np.int64) for c in _COLUMNS}, self.mapping.size),
        ]
        if queue_full(sum(len(p["label"]) for p in out._pending), len(out._table["label"])):
            out._flush()
        out.classes, out.gt_counts = _add_counts(self.classes, self.gt_counts, classes, gt_counts)
        return out

    def _flush(self) -> None:
        if self._pending:
            parts = [self._table, *self._pending]
            self._table = _reduce(
                {c: np.concatenate([p[c] for p in parts]) for c in _COLUMNS}, self.mapping.size
            )
            self._pending = []

    @property
    def table(self) -> dict[str, np.ndarray]:
        """The reduced table, sorted by (class, combination, bucket key)."""
        self._flush()
        return self._table

    def __len__(self) -> int:
        return len(self.table["label"])

    def check_mergeable(self, other: Any) -> None:
        if not isinstance(other, DetectionBuckets) or (
            other.mapping,
            other.n_combos,
            other.n_areas,
        ) != (self.mapping, self.n_combos, self.n_areas):
            raise IncompatibleStateError("detection buckets of different layouts or mappings")
        check_gt_sum(self.gt_counts, other.gt_counts)
        check_sum("detection bucket counts", "i", self._held(), other._held())

    def _held(self) -> float:
        """TP and FP counts held, queue included, without folding it (reading never writes)."""
        parts = [self._table, *self._pending]
        return sum(count_total(p["tp"]) + count_total(p["fp"]) for p in parts)

    def merge(self, other: Any) -> None:
        self.check_mergeable(other)
        merged = self.added(other.table, other.classes, other.gt_counts)
        self._table, self._pending = merged._table, merged._pending
        self.classes, self.gt_counts = merged.classes, merged.gt_counts

    def to_wire(self) -> Any:
        return {**self.table, "classes": self.classes, "gt_counts": self.gt_counts}

    def from_wire(self, wire: Any) -> DetectionBuckets:
        if not isinstance(wire, dict) or set(wire) != {*_COLUMNS, "classes", "gt_counts"}:
            raise ValueError("detection buckets must be a map of the table columns")
        for name, v in wire.items():
            if not isinstance(v, np.ndarray) or v.dtype != np.int64:
                raise ValueError(f"{name} must be an int64 array")
        n = len(wire["label"])
        if any(wire[c].shape != (n,) for c in _COLUMNS):
            raise ValueError("the table columns differ in shape")
        k = len(wire["classes"])
        if wire["classes"].ndim != 1 or wire["gt_counts"].shape != (k, self.n_areas):
            raise ValueError("gt_counts must have one row of area counts per class")
        if k and (np.diff(wire["classes"]) <= 0).any():
            raise ValueError("classes must be sorted and distinct")
        if n:
            t = wire
            check_counts("detection bucket counts", t["tp"], t["fp"])
            if count_total(t["tp"]) + count_total(t["fp"]) > COUNT_LIMIT:
                raise ValueError("detection bucket counts total more than 2**53")
            if ((t["tp"] + t["fp"]) == 0).any():
                raise ValueError("bucket counts must be non-empty")
            # (A key past the grid asked _reduce for a table that large; "real" keys are
            # signed, negative for negative scores: 0.8.12 refused every one of them.)
            low, high = self.mapping.key_range()
            if (
                (t["combo"] < 0).any()
                or (t["combo"] >= self.n_combos).any()
                or (len(t["key"]) and (t["key"].min() < low or t["key"].max() > high))
            ):
                raise ValueError("bucket combination or key out of range")
            if not np.isin(t["label"], wire["classes"]).all():
                raise ValueError("a bucket's class is missing from the class list")
        check_counts("ground-truth counts", wire["gt_counts"])
        out = self._shell()
        out._table = _reduce({c: wire[c] for c in _COLUMNS}, self.mapping.size)
        if any(len(out._table[c]) != n for c in _COLUMNS):
            raise ValueError("the bucket table holds duplicate entries")
        out.classes, out.gt_counts = wire["classes"], wire["gt_counts"]
        return out

    def nbytes(self) -> int:
        return int(sum(v.nbytes for v in self.table.values())) + int(
            self.classes.nbytes + self.gt_counts.nbytes
        )
