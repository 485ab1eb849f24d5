"""The exact state of detection mAP: one record per kept detection, plus ground-truth counts.

A record holds what COCO's accumulation needs and nothing of the box: the class, the score, the
image id (only to order ties as COCOeval does), the rank of the detection in its (image, class)
by score, and two bit sets over (area range, IoU threshold): "matched a ground-truth box" and
"ignored" (matched an ignored box, or unmatched and outside the area range). Ground truth is
reduced to counts of non-ignored boxes per (class, area range).

The wire form is canonical: records sorted by (class, -score, image, rank, bits), classes
sorted, so any split of a stream merged in any order gives the same bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._codec import check_counts, check_sum, count_total
from ..base import StateBlock
from ..errors import IncompatibleStateError

__all__ = ["DetectionRecords"]

_COLUMNS = ("label", "score", "image", "rank", "tp", "ignored")


class DetectionRecords(StateBlock):
    """Per-detection records and per-class ground-truth counts, for ``n_bits`` (area, IoU)
    combinations and ``n_areas`` area ranges."""

    def __init__(self, n_bits: int, n_areas: int) -> None:
        self.n_bits = n_bits
        self.n_areas = n_areas
        self.n_bytes = (n_bits + 7) // 8
        self._parts: list[dict[str, np.ndarray]] = []
        self._sorted: dict[str, np.ndarray] = self._empty()
        self.classes = np.empty(0, dtype=np.int64)
        self.gt_counts = np.empty((0, n_areas), dtype=np.int64)

    def _empty(self) -> dict[str, np.ndarray]:
        return {
            "label": np.empty(0, dtype=np.int64),
            "score": np.empty(0, dtype=np.float64),
            "image": np.empty(0, dtype=np.int64),
            "rank": np.empty(0, dtype=np.int64),
            "tp": np.empty((0, self.n_bytes), dtype=np.uint8),
            "ignored": np.empty((0, self.n_bytes), dtype=np.uint8),
        }

    # -- building ------------------------------------------------------------------------------

    def added(
        self,
        records: dict[str, np.ndarray],
        classes: np.ndarray,
        gt_counts: np.ndarray,
    ) -> DetectionRecords:
        """A new block: this one plus a batch (records unsorted, counts per class)."""
        check_gt_sum(self.gt_counts, gt_counts)
        out = self._shell()
        out._parts = [*self._parts, records] if len(records["label"]) else list(self._parts)
        out._sorted = self._sorted
        out.classes, out.gt_counts = _add_counts(self.classes, self.gt_counts, classes, gt_counts)
        return out

    def _shell(self) -> DetectionRecords:
        return DetectionRecords(self.n_bits, self.n_areas)

    def records(self) -> dict[str, np.ndarray]:
        """All records in canonical order (sorted once, then cached)."""
        if self._parts:
            cols = {
                c: np.concatenate([self._sorted[c]] + [p[c] for p in self._parts]) for c in _COLUMNS
            }
            tp, ig = cols["tp"], cols["ignored"]
            keys = [ig[:, i] for i in range(self.n_bytes - 1, -1, -1)]
            keys += [tp[:, i] for i in range(self.n_bytes - 1, -1, -1)]
            keys += [cols["rank"], cols["image"], -cols["score"], cols["label"]]
            order = np.lexsort(keys)
            self._sorted = {c: v[order] for c, v in cols.items()}
            self._parts = []
        return self._sorted

    def __len__(self) -> int:
        return len(self._sorted["label"]) + sum(len(p["label"]) for p in self._parts)

    # -- StateBlock ------------------------------------------------------------------------------

    def check_mergeable(self, other: Any) -> None:
        if not isinstance(other, DetectionRecords) or (other.n_bits, other.n_areas) != (
            self.n_bits,
            self.n_areas,
        ):
            raise IncompatibleStateError("detection records of different layouts")
        check_gt_sum(self.gt_counts, other.gt_counts)

    def merge(self, other: Any) -> None:
        self.check_mergeable(other)
        theirs = other.records()
        if len(theirs["label"]):
            self._parts.append({c: v.copy() for c, v in theirs.items()})
        self.classes, self.gt_counts = _add_counts(
            self.classes, self.gt_counts, other.classes, other.gt_counts
        )

    def to_wire(self) -> Any:
        return {**self.records(), "classes": self.classes, "gt_counts": self.gt_counts}

    def from_wire(self, wire: Any) -> DetectionRecords:
        if not isinstance(wire, dict) or set(wire) != {*_COLUMNS, "classes", "gt_counts"}:
            raise ValueError("detection records must be a map of the record columns")
        dtypes = {
            "label": "i",
            "score": "f",
            "image": "i",
            "rank": "i",
            "tp": "u",
            "ignored": "u",
            "classes": "i",
            "gt_counts": "i",
        }
        for name, kind in dtypes.items():
            v = wire[name]
            if not isinstance(v, np.ndarray) or v.dtype.kind != kind:
                raise ValueError(f"{name} must be an array of kind {kind!r}")
        n = len(wire["label"])
        for name in ("score", "image", "rank"):
            if wire[name].shape != (n,):
                raise ValueError(f"{name} must have one value per record")
        for name in ("tp", "ignored"):
            if wire[name].shape != (n, self.n_bytes) or wire[name].dtype != np.uint8:
                raise ValueError(f"{name} must be a ({n}, {self.n_bytes}) uint8 array")
        k = len(wire["classes"])
        if wire["classes"].ndim != 1 or wire["gt_counts"].shape != (k, self.n_areas):
            raise ValueError("gt_counts must have one row of area counts per class")
        if k and (np.diff(wire["classes"]) <= 0).any():
            raise ValueError("classes must be sorted and distinct")
        check_counts("ground-truth counts", wire["gt_counts"])
        if (wire["rank"] < 0).any():
            raise ValueError("ranks must be non-negative")
        if not np.isfinite(wire["score"]).all():
            raise ValueError("scores must be finite")
        if n and not np.isin(wire["label"], wire["classes"]).all():
            raise ValueError("a record's class is missing from the class list")
        out = self._shell()
        cols = {c: np.ascontiguousarray(wire[c], dtype=self._empty()[c].dtype) for c in _COLUMNS}
        cols["score"] = cols["score"] + 0.0  # 0.8.6 kept -0.0, a tie of 0.0 on every sort key
        out._parts = [cols]
        out.classes = wire["classes"].astype(np.int64)
        out.gt_counts = wire["gt_counts"].astype(np.int64)
        return out

    def __deepcopy__(self, memo: Any) -> DetectionRecords:
        out = self._shell()
        out._sorted = {c: v.copy() for c, v in self.records().items()}
        out.classes, out.gt_counts = self.classes.copy(), self.gt_counts.copy()
        return out

    def nbytes(self) -> int:
        """Memory held by the records and counts."""
        recs = [self._sorted, *self._parts]
        return int(sum(v.nbytes for r in recs for v in r.values())) + int(
            self.classes.nbytes + self.gt_counts.nbytes
        )


def check_true_positives(
    classes: np.ndarray,
    gt_counts: np.ndarray,
    label: np.ndarray,
    combo: np.ndarray,
    tp: np.ndarray,
    thresholds: int,
) -> None:
    """Decoding: ``ValueError`` when a class counts more true positives in one combination than
    it has ground-truth boxes in that combination's area range (every true positive matches a
    distinct box). Entries: each one's class ``label``, ``combo`` and true positives ``tp``;
    combination ``c`` lies in area ``(c // thresholds) % areas``."""
    if not len(label):
        return
    k, areas = gt_counts.shape
    width = int(combo.max()) + 1
    cell = np.searchsorted(classes, label) * width + combo
    held = np.bincount(cell, weights=tp, minlength=k * width).reshape(k, width)
    area = (np.arange(width) // thresholds) % areas
    if (held > gt_counts[:, area]).any():
        raise ValueError("a class counts more true positives than its ground-truth boxes")


def check_gt_sum(mine: np.ndarray, theirs: np.ndarray) -> None:
    """Refuse ground-truth counts that together would pass 2**53 (:class:`CountOverflowError`)."""
    check_sum("ground-truth counts", "i", count_total(mine), count_total(theirs))


def _add_counts(
    ca: np.ndarray, na: np.ndarray, cb: np.ndarray, nb: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    if len(cb) == 0:
        return ca, na
    if len(ca) == 0:
        return cb.copy(), nb.copy()
    classes = np.union1d(ca, cb)
    counts = np.zeros((len(classes), na.shape[1]), dtype=np.int64)
    counts[np.searchsorted(classes, ca)] += na
    counts[np.searchsorted(classes, cb)] += nb
    return classes, counts
