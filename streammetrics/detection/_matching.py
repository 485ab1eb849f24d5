"""COCO's per-image greedy matching, vectorised over images, classes, area ranges and IoU
thresholds at once.

pycocotools' ``COCOeval.evaluateImg`` runs, per (image, class, area range, IoU threshold), a loop
over detections in descending score order and, inside it, a loop over ground truth (the
non-ignored boxes first). A detection takes the still-unmatched ground truth (crowd boxes stay
available) with the highest IoU of at least the threshold, the last one in that order on a tie,
and falls back to ignored ground truth only when no regular box qualifies. Here the outer loop
runs over the detection rank ``d`` only, and step ``d`` handles the ``d``-th detection of every
(image, class) group of the batch, for every area range and threshold, in a few array
operations on a ``(groups, areas, thresholds, ground truth)`` block.
"""

from __future__ import annotations

import numpy as np

__all__ = ["box_iou_pairs", "match_groups"]

#: Largest padded block (groups x detections x ground truth) handled in one piece.
BLOCK = 1 << 22


def box_iou_pairs(det: np.ndarray, gt: np.ndarray, crowd: np.ndarray) -> np.ndarray:
    """IoU of paired xyxy boxes, as pycocotools' ``bbIou``: a crowd box divides the
    intersection by the detection's area only."""
    w = np.minimum(det[:, 2], gt[:, 2]) - np.maximum(det[:, 0], gt[:, 0])
    h = np.minimum(det[:, 3], gt[:, 3]) - np.maximum(det[:, 1], gt[:, 1])
    inter = np.where((w > 0) & (h > 0), w * h, 0.0)
    da = (det[:, 2] - det[:, 0]) * (det[:, 3] - det[:, 1])
    ga = (gt[:, 2] - gt[:, 0]) * (gt[:, 3] - gt[:, 1])
    union = np.where(crowd, da, da + ga - inter)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / union
    return np.where(inter > 0, iou, 0.0)


def match_groups(
    iou: np.ndarray,
    n_det: np.ndarray,
    n_gt: np.ndarray,
    gt_ignore: np.ndarray,
    crowd: np.ndarray,
    thresholds: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy COCO matching of padded groups.

    iou:       (K, D, G) IoU of each group's d-th detection (by score) and g-th ground truth;
    n_det:     (K,) detections per group, sorted descending (groups with n_det > d are a prefix);
    n_gt:      (K,) ground-truth boxes per group;
    gt_ignore: (K, A, G) ground truth ignored in each area range (crowd or area out of range);
    crowd:     (K, G);
    thresholds:(T,) IoU thresholds.

    Returns ``matched`` and ``on_ignored``, both (K, D, A, T) booleans: the detection found a
    ground-truth box, and that box is ignored.
    """
    k, dmax, gmax = iou.shape
    a = gt_ignore.shape[1]
    t = len(thresholds)
    thr = np.minimum(thresholds, 1 - 1e-10)[None, None, :, None]
    valid = np.arange(gmax)[None, :] < n_gt[:, None]  # (K, G)
    taken = np.zeros((k, a, t, gmax), dtype=bool)
    matched = np.zeros((k, dmax, a, t), dtype=bool)
    on_ignored = np.zeros((k, dmax, a, t), dtype=bool)
    ig = gt_ignore[:, :, None, :]
    free_always = (crowd & valid)[:, None, None, :]
    rev = np.arange(gmax - 1, -1, -1)
    for d in range(dmax):
        live = int(np.count_nonzero(n_det > d))
        if live == 0:
            break
        x = iou[:live, d][:, None, None, :]  # (k, 1, 1, G)
        cand = (x >= thr) & (~taken[:live] | free_always[:live]) & valid[:live, None, None, :]
        best_any = np.zeros((live, a, t), dtype=bool)
        pick = np.zeros((live, a, t), dtype=np.int64)
        hit_ig = np.zeros((live, a, t), dtype=bool)
        for want_ignored in (False, True):
            c = cand & (ig[:live] if want_ignored else ~ig[:live])
            vals = np.where(c, x, -np.inf)[..., rev]
            # The highest IoU, the last box in COCO's order on a tie (hence the reversal).
            idx = gmax - 1 - np.argmax(vals, axis=-1)
            has = c.any(axis=-1) & ~best_any
            pick = np.where(has, idx, pick)
            hit_ig |= has & want_ignored
            best_any |= has
        matched[:live, d] = best_any
        on_ignored[:live, d] = hit_ig
        kk, aa, tt = np.nonzero(best_any)
        taken[kk, aa, tt, pick[kk, aa, tt]] = True
    return matched, on_ignored
