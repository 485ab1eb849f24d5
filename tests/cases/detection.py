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
