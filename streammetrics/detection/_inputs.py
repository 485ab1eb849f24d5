"""The inputs of :class:`~streammetrics.detection.MeanAveragePrecision`: one dict per image of
boxes, scores and labels (and ground truths' ``iscrowd``, ``area`` and ``image_id``), checked and
flattened into arrays, every check an ``InputError`` naming the image and the key."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._input_labels import as_labels
from .._inputs import as_array, as_scores
from ..errors import InputError

__all__ = ["float_list", "parse_images"]


#: The most IoU thresholds and recall points a ``MeanAveragePrecision`` takes (COCO's: 10 and
#: 101). ``compute`` holds a few float64 tables of thresholds x recall points per class and
#: area range: a decoded configuration of thousands of each asked for gigabytes.
MAX_THRESHOLDS = {"iou_thresholds": 100, "rec_thresholds": 1001}


def float_list(value: Any, name: str, default: np.ndarray) -> list[float]:
    """Values in [0, 1], at most ``MAX_THRESHOLDS[name]`` of them."""
    if value is None:
        return [float(v) for v in default]
    arr = as_scores(value, name)
    if len(arr) == 0 or (arr < 0).any() or (arr > 1).any():
        raise InputError(f"{name}: must be a non-empty list of values in [0, 1]")
    most = MAX_THRESHOLDS.get(name)
    if most is not None and len(arr) > most:
        raise InputError(f"{name}: at most {most} values; got {len(arr)}")
    return [float(v) for v in arr]


def _boxes(x: Any, name: str, truth: bool = False) -> np.ndarray:
    """Boxes as an (n, 4) float64 array. A ground-truth box (``truth``) with x2 < x1 or y2 < y1
    is an ``InputError``: its negative area lies outside every area range, so it would be
    dropped without a word. A predicted one is scored as COCOeval scores it, as a detector's
    raw output may hold such boxes: flipped on one axis, outside every area range (never
    counted); on both, of positive area (counted there, unmatched: a false positive)."""
    arr = as_array(x, name)
    if arr.size == 0 and (arr.ndim == 1 or arr.shape[-1:] == (4,)):
        return np.zeros((0, 4), dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise InputError(f"{name}: expected boxes of shape (n, 4) in xyxy, got {arr.shape}")
    boxes = as_scores(arr, name, ndim=2)
    flipped = (boxes[:, 2] < boxes[:, 0]) | (boxes[:, 3] < boxes[:, 1]) if truth else None
    if flipped is not None and flipped.any():
        i = int(np.argmax(flipped))
        raise InputError(
            f"{name}: box {i} {boxes[i].tolist()} has x2 < x1 or y2 < y1; boxes are "
            "(x1, y1, x2, y2) with x1 <= x2 and y1 <= y2"
        )
    return boxes


def _column(d: dict[str, Any], key: str, n: int, where: str, kind: str) -> np.ndarray:
    if key not in d:
        raise InputError(f"{where}: missing {key!r}")
    x = d[key]
    arr = (
        as_labels(x, f"{where}[{key!r}]") if kind == "label" else as_scores(x, f"{where}[{key!r}]")
    )
    if arr.size == 0:
        arr = arr.reshape(0)
    if len(arr) != n:
        raise InputError(f"{where}[{key!r}]: has {len(arr)} values for {n} boxes")
    if kind == "label" and arr.dtype.kind != "i":
        raise InputError(f"{where}[{key!r}]: labels must be integers")
    return arr


def parse_images(preds: Any, targets: Any, unit_scores: bool) -> tuple[dict[str, np.ndarray], ...]:
    """One batch of images as flat arrays: ``(detections, ground truths, extra)``, every
    detection and ground-truth box tagged with its image's position in the batch.
    ``unit_scores``: scores must lie in [0, 1] (the probability sketch)."""
    if not isinstance(preds, (list, tuple)) or not isinstance(targets, (list, tuple)):
        raise InputError("preds, targets: expected lists with one dict per image")
    if len(preds) != len(targets):
        raise InputError(
            f"columns differ in length: preds has {len(preds)}, targets has {len(targets)}"
        )
    det: dict[str, list[np.ndarray]] = {k: [] for k in ("boxes", "scores", "labels", "img")}
    gt: dict[str, list[np.ndarray]] = {k: [] for k in ("boxes", "labels", "crowd", "area", "img")}
    image_ids = np.zeros(len(preds), dtype=np.int64)
    for i, (p, t) in enumerate(zip(preds, targets, strict=True)):
        if not isinstance(p, dict):
            raise InputError(f"preds[{i}]: expected a dict, got {type(p).__name__}")
        if not isinstance(t, dict):
            raise InputError(f"targets[{i}]: expected a dict, got {type(t).__name__}")
        where = f"preds[{i}]"
        boxes = _boxes(p.get("boxes"), f"{where}['boxes']")
        n = len(boxes)
        det["boxes"].append(boxes)
        sc = _column(p, "scores", n, where, "score")
        if unit_scores and n and (sc.min() < 0 or sc.max() > 1):
            raise InputError(
                f"{where}['scores']: sketch mode with score_type='probability' needs scores "
                "in [0, 1]; use score_type='logit' or 'real'"
            )
        det["scores"].append(sc)
        det["labels"].append(_column(p, "labels", n, where, "label"))
        det["img"].append(np.full(n, i, dtype=np.int64))
        where = f"targets[{i}]"
        boxes = _boxes(t.get("boxes"), f"{where}['boxes']", truth=True)
        m = len(boxes)
        gt["boxes"].append(boxes)
        gt["labels"].append(_column(t, "labels", m, where, "label"))
        if t.get("iscrowd") is not None:
            crowd = _column(t, "iscrowd", m, where, "label")
            if ((crowd != 0) & (crowd != 1)).any():
                raise InputError(f"{where}['iscrowd']: must be 0 or 1")
            gt["crowd"].append(crowd.astype(bool))
        else:
            gt["crowd"].append(np.zeros(m, dtype=bool))
        if t.get("area") is not None:
            area = _column(t, "area", m, where, "score")
            if (area < 0).any():
                raise InputError(f"{where}['area']: must be non-negative")
        else:
            area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
        gt["area"].append(area)
        gt["img"].append(np.full(m, i, dtype=np.int64))
        if t.get("image_id") is not None:
            image_id = as_labels(t["image_id"], f"{where}['image_id']")
            if len(image_id) != 1 or image_id.dtype.kind != "i":
                raise InputError(f"{where}['image_id']: must be one integer")
            image_ids[i] = image_id[0]
    dets = {k: np.concatenate(v) if v else np.empty(0) for k, v in det.items()}
    gts = {k: np.concatenate(v) if v else np.empty(0) for k, v in gt.items()}
    dets["boxes"] = dets["boxes"].reshape(-1, 4)
    gts["boxes"] = gts["boxes"].reshape(-1, 4)
    return dets, gts, {"image_ids": image_ids}
