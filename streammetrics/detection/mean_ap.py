"""COCO detection mAP (``pycocotools.cocoeval.COCOeval``, bbox) as a mergeable state."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .._input_labels import as_labels
from ..base import Metric
from ..errors import InputError
from ..states.mappings import DEFAULT_RESOLUTION, check_mode, mapping_for
from ._inputs import float_list, parse_images
from ._matching import BLOCK, box_iou_pairs, match_groups
from ._records import DetectionRecords, check_true_positives
from ._sketch import DetectionBuckets

__all__ = ["MeanAveragePrecision"]

COCO_IOU_THRESHOLDS = np.linspace(0.5, 0.95, 10)
COCO_REC_THRESHOLDS = np.linspace(0.0, 1.0, 101)
COCO_MAX_DETS = (1, 10, 100)
# all, small, medium, large: COCO's area ranges, bounds inclusive on both sides.
COCO_AREAS = ((0.0, 1e10), (0.0, 32.0**2), (32.0**2, 96.0**2), (96.0**2, 1e10))
AREA_NAMES = ("all", "small", "medium", "large")


class MeanAveragePrecision(Metric):
    """COCO box mAP and mAR, equal to ``pycocotools.cocoeval.COCOeval(..., "bbox")``.

    For each class and image, detections (at most ``max_detection_thresholds[-1]`` per image
    and class, by score) are matched greedily in descending score order to the unmatched
    ground-truth box of highest IoU at or above each threshold (IoU 0.50:0.05:0.95 by
    default); crowd boxes (``iscrowd``) and boxes outside the area range are ignored, a
    detection matching one is ignored too, as is an unmatched detection outside the area
    range. Per class, area range and detection limit, precision is interpolated at 101 recall
    points; ``map`` is the mean over thresholds, recall points and classes with ground truth,
    ``mar_k`` the mean recall with at most ``k`` detections per image.

    Parameters
    ----------
    iou_thresholds : list of float, optional
        Default COCO's ``0.5, 0.55, ..., 0.95``; values in [0, 1], at most 100.
    exact : bool
        ``True``: the exact state below. ``False``: sketch mode, bounded memory (see Notes),
        with a certified :meth:`error_bound`.
    rec_thresholds : list of float, optional
        Recall points of the interpolated precision (default COCO's 101); values in [0, 1], at
        most 1001.
    max_detection_thresholds : tuple of 3 ints
        COCO's ``maxDets`` (1, 10, 100), increasing.
    score_type, resolution :
        Sketch mode only: the score bucket mapping shared with the binary-score metrics
        (``streammetrics.states.buckets``): ``"probability"`` scores in [0, 1], ``"logit"``
        or ``"real"``, and buckets per unit of logit (a power of two from 8 to 4096).

    Notes
    -----
    State: the matching is done at ``update`` time, per image, so no box is kept. What is kept
    is one record per detection (class, score, image id, rank in its image, and one
    matched/ignored bit pair per (area range, IoU threshold): 8 + 8 + 8 + 8 + 2 * 5 = 42 bytes
    at the defaults) plus a count of non-ignored ground truth per (class, area range): memory
    O(detections), independent of the number of ground-truth boxes. Exact: integer flags and
    the scores themselves; splits merge to identical bytes and ``compute`` equals COCOeval's
    ``stats`` (tested to 1e-6; it is the same arithmetic). Ties in score between images are
    ordered by the targets' optional ``image_id`` (as COCOeval orders them), then by rank.

    Sketch mode (``exact=False``) keeps, per (class, detection limit, area range, IoU
    threshold), true- and false-positive counts per score bucket: at most ``classes x 120 x
    buckets`` entries of 40 bytes (4,098 buckets at the default resolution), whatever the
    number of images. Recall keys stay exact; the precision keys are the midpoint between the
    curves with each bucket's true positives first and last, which bracket COCO's value, and
    :meth:`error_bound` is half that gap (a certified bound for every key).

    ``update``: O(sum over images and classes of detections x ground truth x areas x
    thresholds), vectorised across images. ``merge``: O(1) (records are sorted lazily).
    ``compute``: O(R log R) for R records.

    compute() returns a dict: ``map``, ``map_50``, ``map_75``, ``map_small``, ``map_medium``,
    ``map_large``, ``mar_1``, ``mar_10``, ``mar_100`` (named after the detection limits),
    ``mar_small``, ``mar_medium``, ``mar_large``, and ``map_per_class`` (class -> mAP over
    all areas at the largest limit). As in COCOeval, a value without any ground truth to score
    is -1.

    Examples
    --------
    >>> from streammetrics.detection import MeanAveragePrecision
    >>> m = MeanAveragePrecision()
    >>> preds = [{"boxes": [[10, 10, 50, 50], [60, 60, 90, 95]], "scores": [0.9, 0.6],
    ...           "labels": [1, 2]}]
    >>> targets = [{"boxes": [[12, 10, 50, 52], [0, 0, 5, 5]], "labels": [1, 2]}]
    >>> r = m.update(preds, targets).compute()
    >>> round(r["map"], 6), round(r["map_50"], 6), r["map_per_class"]
    (0.45, 0.5, {1: 0.9, 2: 0.0})
    """

    higher_is_better: ClassVar[bool | None] = True
    #: Set in ``__init__`` and never changed: copies share them (``Metric._constant``).
    _constant: ClassVar[frozenset[str]] = frozenset({"_ious", "_areas"})

    def __init__(
        self,
        iou_thresholds: Any = None,
        exact: bool = True,
        *,
        rec_thresholds: Any = None,
        max_detection_thresholds: Any = COCO_MAX_DETS,
        score_type: str = "probability",
        resolution: int = DEFAULT_RESOLUTION,
    ) -> None:
        super().__init__()
        exact, score_type, resolution = check_mode(exact, score_type, resolution)
        ious = float_list(iou_thresholds, "iou_thresholds", COCO_IOU_THRESHOLDS)
        recs = float_list(rec_thresholds, "rec_thresholds", COCO_REC_THRESHOLDS)
        dets = [int(v) for v in as_labels(max_detection_thresholds, "max_detection_thresholds")]
        if len(dets) != 3 or min(dets) < 1 or not dets[0] < dets[1] < dets[2]:
            raise InputError("max_detection_thresholds: must be 3 increasing positive ints")
        mapping = mapping_for(score_type, resolution)
        self._add_config(
            iou_thresholds=ious,
            exact=exact,
            rec_thresholds=recs,
            max_detection_thresholds=dets,
            score_type=score_type,
            resolution=resolution,
        )
        self._ious = np.array(ious)
        self._areas = np.array(COCO_AREAS)
        a, t = len(COCO_AREAS), len(ious)
        block: DetectionRecords | DetectionBuckets
        if exact:
            block = DetectionRecords(a * t, a)
        else:
            block = DetectionBuckets(mapping, len(dets) * a * t, a)
        self._add_state("records", block, merge=None)

    records: Any

    # -- update ----------------------------------------------------------------------------------

    def update(self, preds: Any, targets: Any) -> MeanAveragePrecision:
        """Match one batch of images (one dict per image in each list) and keep the records.

        Complexity: O(sum over (image, class) of detections x ground truth x areas x IoU
        thresholds), vectorised over all images of the batch.
        """
        unit = not self._config["exact"] and self._config["score_type"] == "probability"
        dets, gts, extra = parse_images(preds, targets, unit_scores=unit)
        n_images = len(extra["image_ids"])
        if n_images == 0:
            return self
        a, t = len(self._areas), len(self._ious)
        max_det = self._config["max_detection_thresholds"][-1]
        classes = np.union1d(dets["labels"].astype(np.int64), gts["labels"].astype(np.int64))
        n_cls = max(len(classes), 1)

        # Detections: order by (image, class, -score), stable; keep the top max_det of each.
        d_cls = np.searchsorted(classes, dets["labels"])
        d_group = dets["img"] * n_cls + d_cls
        order = np.lexsort((np.arange(len(d_group)), -dets["scores"], d_group))
        d_group = d_group[order]
        boxes, scores, labels = dets["boxes"][order], dets["scores"][order], dets["labels"][order]
        starts = _group_starts(d_group)
        rank = np.arange(len(d_group)) - np.repeat(starts, np.diff(np.append(starts, len(d_group))))
        keep = rank < max_det
        d_group, boxes, scores, labels, rank = (
            d_group[keep],
            boxes[keep],
            scores[keep],
            labels[keep],
            rank[keep],
        )
        img = d_group // n_cls
        d_area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
        outside = (d_area[:, None] < self._areas[:, 0]) | (d_area[:, None] > self._areas[:, 1])

        # Ground truth: order by (image, class), stable (COCO keeps annotation order).
        g_group = gts["img"] * n_cls + np.searchsorted(classes, gts["labels"])
        g_order = np.argsort(g_group, kind="stable")
        g_group = g_group[g_order]
        g_boxes, crowd, g_area = gts["boxes"][g_order], gts["crowd"][g_order], gts["area"][g_order]
        g_outside = (g_area[:, None] < self._areas[:, 0]) | (g_area[:, None] > self._areas[:, 1])
        g_ignore = crowd[:, None] | g_outside  # (M, A)
        g_cls = g_group % n_cls
        gt_counts = np.zeros((len(classes), a), dtype=np.int64)
        if len(g_group):
            np.add.at(gt_counts, g_cls, (~g_ignore).astype(np.int64))

        matched = np.zeros((len(d_group), a, t), dtype=bool)
        on_ignored = np.zeros((len(d_group), a, t), dtype=bool)
        both = np.intersect1d(d_group, g_group)
        if len(both):
            self._match(
                both, d_group, boxes, g_group, g_boxes, crowd, g_ignore, matched, on_ignored
            )
        tp = matched & ~on_ignored
        ignored = on_ignored | (~matched & outside[:, :, None])
        classes = classes.astype(np.int64)
        if not self._config["exact"]:
            block = self.records.added(
                self._bucket_entries(labels, scores, rank, tp, ignored), classes, gt_counts
            )
            return self._commit(n_images, records=block)
        records = {
            "label": labels.astype(np.int64),
            "score": scores.astype(np.float64) + 0.0,  # -0.0 -> 0.0: they sort as equals
            "image": extra["image_ids"][img],
            "rank": rank.astype(np.int64),
            "tp": np.packbits(tp.reshape(len(tp), a * t), axis=1),
            "ignored": np.packbits(ignored.reshape(len(tp), a * t), axis=1),
        }
        block = self.records.added(records, classes, gt_counts)
        return self._commit(n_images, records=block)

    def _bucket_entries(
        self,
        labels: np.ndarray,
        scores: np.ndarray,
        rank: np.ndarray,
        tp: np.ndarray,
        ignored: np.ndarray,
    ) -> dict[str, np.ndarray]:
        """One (label, combination, bucket, tp, fp) entry per counted detection and combination."""
        n, a, t = tp.shape
        caps = np.array(self._config["max_detection_thresholds"])
        counted = (rank[:, None] < caps[None, :])[:, :, None, None] & ~ignored[:, None]
        d, combo_m, combo_a, combo_t = np.nonzero(counted)  # (n, M, A, T) in C order
        combo = (combo_m * a + combo_a) * t + combo_t
        is_tp = tp[d, combo_a, combo_t]
        keys = self.records.keys(scores) if n else np.empty(0, dtype=np.int64)
        return {
            "label": labels[d].astype(np.int64),
            "combo": combo.astype(np.int64),
            "key": keys[d],
            "tp": is_tp.astype(np.int64),
            "fp": (~is_tp).astype(np.int64),
        }

    def _match(
        self,
        groups: np.ndarray,
        d_group: np.ndarray,
        boxes: np.ndarray,
        g_group: np.ndarray,
        g_boxes: np.ndarray,
        crowd: np.ndarray,
        g_ignore: np.ndarray,
        matched: np.ndarray,
        on_ignored: np.ndarray,
    ) -> None:
        d_lo, d_hi = np.searchsorted(d_group, groups), np.searchsorted(d_group, groups, "right")
        g_lo, g_hi = np.searchsorted(g_group, groups), np.searchsorted(g_group, groups, "right")
        n_det, n_gt = d_hi - d_lo, g_hi - g_lo
        by = np.argsort(-n_det, kind="stable")  # groups with more detections first
        d_lo, n_det, g_lo, n_gt = d_lo[by], n_det[by], g_lo[by], n_gt[by]
        # A block's largest arrays are its IoUs (groups x dmax x gmax) and each matching step's
        # (groups x areas x thresholds x gmax): both stay within BLOCK elements. (0.8.4 left
        # out the second: 10,000 images of one detection each peaked at 1.4 GB.)
        width = len(self._areas) * len(self._ious)
        start = 0
        while start < len(by):
            stop = start + 1
            dmax, gmax = int(n_det[start]), int(n_gt[start])
            rows = max(dmax, width)
            while stop < len(by) and (stop - start + 1) * rows * max(gmax, n_gt[stop]) <= BLOCK:
                gmax = max(gmax, int(n_gt[stop]))
                stop += 1
            sl = slice(start, stop)
            self._match_block(
                d_lo[sl],
                n_det[sl],
                g_lo[sl],
                n_gt[sl],
                dmax,
                gmax,
                boxes,
                g_boxes,
                crowd,
                g_ignore,
                matched,
                on_ignored,
            )
            start = stop

    def _match_block(
        self,
        d_lo: np.ndarray,
        n_det: np.ndarray,
        g_lo: np.ndarray,
        n_gt: np.ndarray,
        dmax: int,
        gmax: int,
        boxes: np.ndarray,
        g_boxes: np.ndarray,
        crowd: np.ndarray,
        g_ignore: np.ndarray,
        matched: np.ndarray,
        on_ignored: np.ndarray,
    ) -> None:
        k = len(d_lo)
        pairs = n_det * n_gt
        owner = np.repeat(np.arange(k), pairs)
        q = np.arange(int(pairs.sum())) - np.repeat(np.cumsum(pairs) - pairs, pairs)
        dd, gg = q // n_gt[owner], q % n_gt[owner]
        di, gi = d_lo[owner] + dd, g_lo[owner] + gg
        iou = np.zeros((k, dmax, gmax))
        iou[owner, dd, gg] = box_iou_pairs(boxes[di], g_boxes[gi], crowd[gi])
        g_index = g_lo[:, None] + np.minimum(
            np.arange(gmax)[None, :], np.maximum(n_gt - 1, 0)[:, None]
        )
        ign = np.transpose(g_ignore[g_index], (0, 2, 1))  # (K, A, G)
        crw = crowd[g_index]
        m, on_ig = match_groups(iou, n_det, n_gt, ign, crw, self._ious)
        d_owner = np.repeat(np.arange(k), n_det)
        d_rank = np.arange(int(n_det.sum())) - np.repeat(np.cumsum(n_det) - n_det, n_det)
        target = d_lo[d_owner] + d_rank
        matched[target] = m[d_owner, d_rank]
        on_ignored[target] = on_ig[d_owner, d_rank]

    # -- compute ---------------------------------------------------------------------------------

    def _interpolate(
        self, tps: np.ndarray, fps: np.ndarray, npig: int, recs: np.ndarray
    ) -> np.ndarray:
        """COCO's interpolated precision at ``recs`` of cumulative (points, T) TP / FP counts."""
        nd = len(tps)
        out = np.zeros((tps.shape[1], len(recs)))
        if nd == 0:
            return out
        rc = tps / npig
        pr = tps / (fps + tps + np.spacing(1))
        pr = np.maximum.accumulate(pr[::-1], axis=0)[::-1]
        for ti in range(tps.shape[1]):
            at = np.searchsorted(rc[:, ti], recs, side="left")
            ok = at < nd
            out[ti, ok] = pr[at[ok], ti]
        return out

    def _accumulate(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """COCOeval.accumulate: precision (T, R, K, A, M) (a lower and an upper bound, equal in
        exact mode) and recall (T, K, A, M)."""
        classes, counts = self.records.classes, self.records.gt_counts
        ious, recs = self._ious, np.array(self._config["rec_thresholds"])
        max_dets = self._config["max_detection_thresholds"]
        a, t, r, k, md = len(self._areas), len(ious), len(recs), len(classes), len(max_dets)
        lower = -np.ones((t, r, k, a, md))
        upper = -np.ones((t, r, k, a, md))
        recall = -np.ones((t, k, a, md))
        exact = self._config["exact"]
        table = self.records.records() if exact else self.records.table
        lo_hi = (
            np.searchsorted(table["label"], classes),
            np.searchsorted(table["label"], classes, "right"),
        )
        for ki in range(k):
            if not (counts[ki] > 0).any():
                continue
            lo, hi = int(lo_hi[0][ki]), int(lo_hi[1][ki])
            if exact:
                rank = table["rank"][lo:hi]
                tp_all = np.unpackbits(table["tp"][lo:hi], axis=1, count=a * t)
                ig_all = np.unpackbits(table["ignored"][lo:hi], axis=1, count=a * t)
                tp_all = tp_all.reshape(-1, a, t).astype(bool)
                ig_all = ig_all.reshape(-1, a, t).astype(bool)
            else:
                combo, tp_b, fp_b = (table[c][lo:hi] for c in ("combo", "tp", "fp"))
            for mi, cap in enumerate(max_dets):
                if exact:
                    sel = rank < cap
                    tp, ig = tp_all[sel], ig_all[sel]
                    tp_sum = np.cumsum(tp & ~ig, axis=0).astype(float)
                    fp_sum = np.cumsum(~tp & ~ig, axis=0).astype(float)
                for ai in range(a):
                    npig = int(counts[ki, ai])
                    if npig == 0:
                        continue
                    if exact:
                        tps, fps = tp_sum[:, ai, :], fp_sum[:, ai, :]
                        q = self._interpolate(tps, fps, npig, recs)
                        lower[:, :, ki, ai, mi] = upper[:, :, ki, ai, mi] = q
                        recall[:, ki, ai, mi] = tps[-1] / npig if len(tps) else 0.0
                        continue
                    for ti in range(t):
                        pick = combo == (mi * a + ai) * t + ti
                        # keys ascend; COCO walks scores descending
                        tpc = np.cumsum(tp_b[pick][::-1]).astype(float)[:, None]
                        fpc = np.cumsum(fp_b[pick][::-1]).astype(float)[:, None]
                        fp_before = fpc - fp_b[pick][::-1][:, None]
                        lower[ti, :, ki, ai, mi] = self._interpolate(tpc, fpc, npig, recs)[0]
                        upper[ti, :, ki, ai, mi] = self._interpolate(tpc, fp_before, npig, recs)[0]
                        recall[ti, ki, ai, mi] = tpc[-1, 0] / npig if len(tpc) else 0.0
        return lower, upper, recall, classes

    def _summarize(
        self, precision: np.ndarray, recall: np.ndarray, classes: np.ndarray
    ) -> dict[str, Any]:
        ious = self._ious
        dets = self._config["max_detection_thresholds"]

        def mean(x: np.ndarray) -> float:
            x = x[x > -1]
            return float(np.mean(x)) if x.size else -1.0

        out: dict[str, Any] = {"map": mean(precision[:, :, :, 0, -1])}
        for name, v in (("map_50", 0.5), ("map_75", 0.75)):
            hit = np.flatnonzero(np.isclose(ious, v, rtol=0, atol=1e-12))
            out[name] = mean(precision[hit, :, :, 0, -1]) if len(hit) else math.nan
        for ai, name in enumerate(AREA_NAMES[1:], start=1):
            out[f"map_{name}"] = mean(precision[:, :, :, ai, -1])
        for mi, cap in enumerate(dets):
            out[f"mar_{cap}"] = mean(recall[:, :, 0, mi])
        for ai, name in enumerate(AREA_NAMES[1:], start=1):
            out[f"mar_{name}"] = mean(recall[:, :, ai, -1])
        out["map_per_class"] = {
            int(c): mean(precision[:, :, ki, 0, -1]) for ki, c in enumerate(classes)
        }
        return out

    def _bounds(self) -> tuple[dict[str, Any], float]:
        lower, upper, recall, classes = self._accumulate()
        lo = self._summarize(lower, recall, classes)
        if self._config["exact"]:
            return lo, 0.0
        hi = self._summarize(upper, recall, classes)
        out: dict[str, Any] = {}
        gap = 0.0
        for key, v in lo.items():
            if key == "map_per_class":
                out[key] = {c: (x + hi[key][c]) / 2 for c, x in v.items()}
                gaps = [(hi[key][c] - x) / 2 for c, x in v.items()]
                gap = max([gap, *gaps])
            else:
                out[key] = (v + hi[key]) / 2
                if not math.isnan(v):
                    gap = max(gap, (hi[key] - v) / 2)
        return out, gap

    def _compute(self) -> dict[str, Any]:
        return self._bounds()[0]

    def error_bound(self) -> float:
        """A certified bound on abs(value - COCOeval's value), over every key of ``compute()``.

        0.0 in exact mode. In sketch mode: half the gap between the mAP with each score
        bucket's true positives ordered first and last (recall keys are exact).
        """
        if self._config["exact"] or self.count == 0:
            return 0.0
        return self._bounds()[1]

    def _empty_result(self) -> dict[str, Any]:
        keys = ["map", "map_50", "map_75", "map_small", "map_medium", "map_large"]
        keys += [f"mar_{c}" for c in self._config["max_detection_thresholds"]]
        keys += ["mar_small", "mar_medium", "mar_large"]
        out: dict[str, Any] = dict.fromkeys(keys, math.nan)
        out["map_per_class"] = {}
        return out

    def memory_bytes(self) -> int:
        """Bytes held by the state's arrays (records and ground-truth counts)."""
        return int(self.records.nbytes())

    def _validate_state(self) -> None:
        """Decoding: no class has more true positives than ground-truth boxes (per area)."""
        recs, t = self.records, len(self._ious)
        if (recs.gt_counts[:, 1:] > recs.gt_counts[:, :1]).any():
            # (The first range, "all", holds every other: COCO's areas.)
            raise ValueError("a class counts more ground truth in an area range than in all")
        if not self._config["exact"]:
            table = recs.table
            args = (table["label"], table["combo"], table["tp"])
            check_true_positives(recs.classes, recs.gt_counts, *args, t)
            return
        table = recs.records()
        bits = recs.n_bits
        tp = np.unpackbits(table["tp"], axis=1, count=bits).astype(bool)
        tp &= ~np.unpackbits(table["ignored"], axis=1, count=bits).astype(bool)
        row, combo = np.nonzero(tp)
        ones = np.ones(len(row))
        check_true_positives(recs.classes, recs.gt_counts, table["label"][row], combo, ones, t)


def _group_starts(sorted_groups: np.ndarray) -> np.ndarray:
    if len(sorted_groups) == 0:
        return np.empty(0, dtype=np.int64)
    edge = np.empty(len(sorted_groups), dtype=bool)
    edge[0] = True
    np.not_equal(sorted_groups[1:], sorted_groups[:-1], out=edge[1:])
    return np.flatnonzero(edge)
