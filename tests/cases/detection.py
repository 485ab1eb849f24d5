"""Conformance cases for detection mAP."""

from __future__ import annotations

import numpy as np

from streammetrics.detection import MeanAveragePrecision
from tests.harness import Case


def _batch(rng: np.random.Generator, n: int):
    n_img = max(n // 10, 0) if n > 1 else n
    preds, targets = [], []
    for _ in range(n_img):
        k = int(rng.integers(0, 6))
        xy = np.round(rng.uniform(0, 200, (k, 2)))
        gt = np.c_[xy, xy + np.round(rng.uniform(4, 120, (k, 2)))]
        targets.append(
            {
                "boxes": gt,
                "labels": rng.integers(0, 3, k),
                "iscrowd": (rng.random(k) < 0.1).astype(int),
            }
        )
        m = int(rng.integers(0, 8))
        src = gt[rng.integers(0, max(k, 1), m)] if k else np.c_[xy[:0], xy[:0]]
        det = np.round(src + rng.normal(0, 4, (len(src), 4))) if k else np.zeros((0, 4))
        if len(det):
            det[:, 2:] = np.maximum(det[:, 2:], det[:, :2] + 1)
        preds.append(
            {"boxes": det, "scores": rng.random(len(det)), "labels": rng.integers(0, 3, len(det))}
        )
    return (preds, targets), {}


OK_P = {"boxes": [[0, 0, 1, 1]], "scores": [0.5], "labels": [0]}
OK_T = {"boxes": [[0, 0, 1, 1]], "labels": [0]}
BAD = [
    (([OK_P], []), {}),
    (([{**OK_P, "scores": [float("inf")]}], [OK_T]), {}),
    (([{**OK_P, "boxes": [[0, 0, 1]]}], [OK_T]), {}),
    (([OK_P], [{**OK_T, "labels": [0.5]}]), {}),
    (([OK_P], [{**OK_T, "iscrowd": [3]}]), {}),
]

CASES = [
    Case(
        "MeanAveragePrecision",
        MeanAveragePrecision,
        _batch,
        BAD,
        other=lambda: MeanAveragePrecision(iou_thresholds=[0.5]),
    ),
    Case(
        "MeanAveragePrecision-sketch",
        lambda: MeanAveragePrecision(exact=False),
        _batch,
        [*BAD, (([{**OK_P, "scores": [2.0]}], [OK_T]), {})],
        other=lambda: MeanAveragePrecision(exact=False, resolution=64),
    ),
]


def _logit_batch(rng: np.random.Generator, n: int):
    """The batches above with each score as its logit, on a grid of quarters (ties occur)."""
    (preds, targets), kwargs = _batch(rng, n)
    for p in preds:
        s = np.clip(p["scores"], 1e-6, 1 - 1e-6)
        p["scores"] = np.round(np.log(s / (1 - s)) * 4) / 4
    return (preds, targets), kwargs


# Settings beyond COCO's defaults: other IoU thresholds, recall points and detection limits
# (the limits cut detections per image, which a split must not change), and the logit grid.
CASES += [
    Case(
        "MeanAveragePrecision-iou-maxdets",
        lambda: MeanAveragePrecision(
            iou_thresholds=[0.3, 0.5, 0.75],
            rec_thresholds=[0.0, 0.25, 0.5, 0.75, 1.0],
            max_detection_thresholds=(1, 2, 5),
        ),
        _batch,
        BAD,
        other=lambda: MeanAveragePrecision(iou_thresholds=[0.3, 0.5, 0.75]),
    ),
    Case(
        "MeanAveragePrecision-sketch-logit",
        lambda: MeanAveragePrecision(exact=False, score_type="logit"),
        _logit_batch,
        BAD,
        other=lambda: MeanAveragePrecision(exact=False, score_type="real"),
    ),
    Case(
        "MeanAveragePrecision-sketch-maxdets",
        lambda: MeanAveragePrecision(
            iou_thresholds=[0.5, 0.9],
            exact=False,
            max_detection_thresholds=(2, 3, 4),
            resolution=32,
        ),
        _batch,
        [*BAD, (([{**OK_P, "scores": [-0.5]}], [OK_T]), {})],
        other=lambda: MeanAveragePrecision(iou_thresholds=[0.5, 0.9], exact=False, resolution=32),
    ),
]
