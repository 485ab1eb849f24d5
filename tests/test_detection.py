"""MeanAveragePrecision against pycocotools' COCOeval (a test-only reference)."""

from __future__ import annotations

import contextlib
import io
import random

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.detection import MeanAveragePrecision
from streammetrics.detection import mean_ap as mean_ap_module

pycoco = pytest.importorskip("pycocotools.coco")
cocoeval = pytest.importorskip("pycocotools.cocoeval")

STAT_KEYS = [
    "map",
    "map_50",
    "map_75",
    "map_small",
    "map_medium",
    "map_large",
    "mar_1",
    "mar_10",
    "mar_100",
    "mar_small",
    "mar_medium",
    "mar_large",
]


def synthetic(seed: int, n_images: int, n_classes: int = 4, grid: float = 0.5):
    """Images with several classes, crowd boxes, empty images and clutter.

    Coordinates lie on a grid of ``grid`` so that xyxy <-> xywh is exact in floating point.
    """
    rng = np.random.default_rng(seed)
    preds, targets = [], []
    for i in range(n_images):
        kind = rng.random()
        n_gt = 0 if kind < 0.1 else int(rng.integers(1, 12))
        size = rng.choice([8, 24, 40, 70, 120, 200], n_gt) * rng.uniform(0.6, 1.4, n_gt)
        w = np.maximum(np.round(size / grid) * grid, grid)
        h = np.maximum(np.round(size * rng.uniform(0.5, 2, n_gt) / grid) * grid, grid)
        x1 = np.round(rng.uniform(0, 400, n_gt) / grid) * grid
        y1 = np.round(rng.uniform(0, 400, n_gt) / grid) * grid
        gt_boxes = np.stack([x1, y1, x1 + w, y1 + h], axis=1)
        gt_labels = rng.integers(0, n_classes, n_gt)
        crowd = (rng.random(n_gt) < 0.08).astype(int)
        target = {"boxes": gt_boxes, "labels": gt_labels, "iscrowd": crowd, "image_id": i + 1}
        if rng.random() < 0.3:  # an explicit area, sometimes far from the box area
            target["area"] = w * h * rng.choice([1.0, 0.5, 3.0], n_gt)
        targets.append(target)
        # detections: jittered copies of some ground truth, duplicates, and false positives
        src = rng.random(n_gt) < 0.8
        jit = np.round(rng.normal(0, 0.12, (int(src.sum()), 4)) * np.c_[w, h, w, h][src] / grid)
        det = gt_boxes[src] + jit * grid
        dup_mask = rng.random(n_gt) < 0.2
        dup = gt_boxes[dup_mask]
        n_fp = 0 if kind < 0.05 else int(rng.integers(0, 6))
        fx = np.round(rng.uniform(0, 400, n_fp) / grid) * grid
        fy = np.round(rng.uniform(0, 400, n_fp) / grid) * grid
        fs = np.round(rng.uniform(4, 150, (n_fp, 2)) / grid) * grid
        fp = np.stack([fx, fy, fx + fs[:, 0], fy + fs[:, 1]], axis=1) if n_fp else np.zeros((0, 4))
        boxes = np.concatenate([det, dup, fp])
        boxes[:, 2] = np.maximum(boxes[:, 2], boxes[:, 0] + grid)
        boxes[:, 3] = np.maximum(boxes[:, 3], boxes[:, 1] + grid)
        labels = np.concatenate(
            [gt_labels[src], gt_labels[dup_mask], rng.integers(0, n_classes + 1, n_fp)]
        )
        if rng.random() < 0.1:  # a wrong class now and then
            labels = rng.integers(0, n_classes, len(boxes))
        preds.append({"boxes": boxes, "scores": rng.random(len(boxes)), "labels": labels})
    return preds, targets


def coco_eval(preds, targets, iou_thresholds=None, max_dets=None):
    classes = sorted(
        {int(c) for t in targets for c in t["labels"]}
        | {int(c) for p in preds for c in p["labels"]}
    )
    anns, ann_id = [], 1
    for i, t in enumerate(targets):
        b = np.asarray(t["boxes"], float).reshape(-1, 4)
        area = t.get("area", (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]))
        for j in range(len(b)):
            anns.append(
                {
                    "id": ann_id,
                    "image_id": i + 1,
                    "category_id": int(t["labels"][j]),
                    "bbox": [b[j, 0], b[j, 1], b[j, 2] - b[j, 0], b[j, 3] - b[j, 1]],
                    "area": float(area[j]),
                    "iscrowd": int(t["iscrowd"][j]),
                }
            )
            ann_id += 1
    gt = pycoco.COCO()
    gt.dataset = {
        "images": [{"id": i + 1} for i in range(len(targets))],
        "annotations": anns,
        "categories": [{"id": c} for c in classes],
    }
    with contextlib.redirect_stdout(io.StringIO()):
        gt.createIndex()
        res = []
        for i, p in enumerate(preds):
            b = np.asarray(p["boxes"], float).reshape(-1, 4)
            for j in range(len(b)):
                res.append(
                    {
                        "image_id": i + 1,
                        "category_id": int(p["labels"][j]),
                        "score": float(p["scores"][j]),
                        "bbox": [b[j, 0], b[j, 1], b[j, 2] - b[j, 0], b[j, 3] - b[j, 1]],
                    }
                )
        dt = gt.loadRes(res)
        ev = cocoeval.COCOeval(gt, dt, "bbox")
        if iou_thresholds is not None:
            ev.params.iouThrs = np.array(iou_thresholds)
        if max_dets is not None:
            ev.params.maxDets = list(max_dets)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    stats = dict(zip(STAT_KEYS, ev.stats.tolist(), strict=True))
    per_class = {}
    for k, c in enumerate(classes):
        s = ev.eval["precision"][:, :, k, 0, -1]
        per_class[c] = float(s[s > -1].mean()) if (s > -1).any() else -1.0
    return stats, per_class, ev


def sharded(preds, targets, seed, **kwargs):
    rng = random.Random(seed)
    shards = [MeanAveragePrecision(**kwargs) for _ in range(rng.randint(2, 4))]
    i = 0
    while i < len(preds):
        j = i + rng.randint(0, 25)
        rng.choice(shards).update(preds[i:j], targets[i:j])
        i = j
    return sum(sm.loads(s.to_bytes()) for s in shards)


def check(got, stats, per_class):
    for key in STAT_KEYS:
        assert got[key] == pytest.approx(stats[key], abs=1e-6), key
    assert set(got["map_per_class"]) == set(per_class)
    for c, v in per_class.items():
        assert got["map_per_class"][c] == pytest.approx(v, abs=1e-6), c


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_cocoeval_split_over_shards(seed: int) -> None:
    preds, targets = synthetic(seed, 120)
    stats, per_class, _ = coco_eval(preds, targets)
    whole = MeanAveragePrecision().update(preds, targets)
    check(whole.compute(), stats, per_class)
    merged = sharded(preds, targets, seed)
    assert merged.to_bytes() == whole.to_bytes()
    check(merged.compute(), stats, per_class)


def test_crowded_images_and_many_detections(monkeypatch: pytest.MonkeyPatch) -> None:
    """More than 100 detections per image and class, heavy overlap, small blocks."""
    rng = np.random.default_rng(5)
    preds, targets = [], []
    for _ in range(6):
        n = int(rng.integers(20, 60))
        xy = np.round(rng.uniform(0, 100, (n, 2)))
        gt = np.c_[xy, xy + np.round(rng.uniform(10, 60, (n, 2)))]
        targets.append(
            {
                "boxes": gt,
                "labels": rng.integers(0, 2, n),
                "iscrowd": (rng.random(n) < 0.15).astype(int),
            }
        )
        m = int(rng.integers(150, 260))
        base = gt[rng.integers(0, n, m)] + np.round(rng.normal(0, 3, (m, 4)))
        base[:, 2:] = np.maximum(base[:, 2:], base[:, :2] + 1)
        preds.append({"boxes": base, "scores": rng.random(m), "labels": rng.integers(0, 2, m)})
    stats, per_class, _ = coco_eval(preds, targets)
    # (mean_ap reads its own copy of the name: until 0.8.15 this patched _matching's, and
    # the blocks stayed whole)
    monkeypatch.setattr(mean_ap_module, "BLOCK", 5000)
    check(MeanAveragePrecision().update(preds, targets).compute(), stats, per_class)


def test_custom_thresholds() -> None:
    preds, targets = synthetic(7, 60)
    ious = [0.3, 0.5, 0.75, 0.9]
    stats, per_class, _ = coco_eval(preds, targets, iou_thresholds=ious)
    got = MeanAveragePrecision(iou_thresholds=ious).update(preds, targets).compute()
    check(got, stats, per_class)
    # Other detection limits: COCOeval's summarize() looks for maxDets == 100 by name, so
    # compare with its precision and recall arrays at the largest limit instead.
    _, per_class, ev = coco_eval(preds, targets, max_dets=[1, 5, 20])
    got = MeanAveragePrecision(max_detection_thresholds=[1, 5, 20]).update(preds, targets)
    r = got.compute()
    prec, rec = ev.eval["precision"][:, :, :, 0, -1], ev.eval["recall"][:, :, 0, :]
    assert r["map"] == pytest.approx(prec[prec > -1].mean(), abs=1e-6)
    for i, cap in enumerate([1, 5, 20]):
        x = rec[:, :, i]
        assert r[f"mar_{cap}"] == pytest.approx(x[x > -1].mean(), abs=1e-6)
    assert r["map_per_class"] == pytest.approx(per_class, abs=1e-6)


def test_empty_and_degenerate_inputs() -> None:
    m = MeanAveragePrecision()
    r = m.compute()
    assert np.isnan(r["map"]) and r["map_per_class"] == {}
    m.update([], [])
    assert m.count == 0
    empty = {"boxes": np.zeros((0, 4)), "scores": [], "labels": []}
    m.update([empty], [{"boxes": [], "labels": []}])
    assert m.count == 1 and m.compute()["map"] == -1.0
    # detections only: no ground truth, so nothing to score (COCO's -1)
    m.update(
        [{"boxes": [[0, 0, 5, 5]], "scores": [0.5], "labels": [3]}], [{"boxes": [], "labels": []}]
    )
    assert m.compute()["map_per_class"] == {3: -1.0}
    # ground truth only: precision 0
    m.update([empty], [{"boxes": [[0, 0, 5, 5]], "labels": [1]}])
    assert m.compute()["map"] == 0.0


def test_bad_inputs() -> None:
    m = MeanAveragePrecision()
    ok_p = {"boxes": [[0, 0, 1, 1]], "scores": [0.5], "labels": [0]}
    ok_t = {"boxes": [[0, 0, 1, 1]], "labels": [0]}
    bad = [
        ([ok_p], []),
        ([{"boxes": [[0, 0, 1]], "scores": [0.5], "labels": [0]}], [ok_t]),
        ([{"boxes": [[0, 0, 1, 1]], "scores": [float("nan")], "labels": [0]}], [ok_t]),
        ([{"boxes": [[0, 0, 1, 1]], "labels": [0]}], [ok_t]),
        ([ok_p], [{"boxes": [[0, 0, 1, 1]], "labels": [0, 1]}]),
        ([ok_p], [{**ok_t, "iscrowd": [2]}]),
        ([ok_p], [{**ok_t, "area": [-1.0]}]),
        ([ok_p], ["not a dict"]),
    ]
    for p, t in bad:
        with pytest.raises(sm.InputError):
            m.update(p, t)
    assert m.count == 0
    with pytest.raises(sm.InputError, match="exact"):
        MeanAveragePrecision(exact="no")
    with pytest.raises(sm.InputError, match="score_type"):
        MeanAveragePrecision(exact=False).update([{**ok_p, "scores": [1.5]}], [ok_t])
    with pytest.raises(sm.InputError, match="resolution"):
        MeanAveragePrecision(exact=False, resolution=100)


@pytest.mark.parametrize(
    ("score_type", "resolution"), [("probability", 128), ("probability", 16), ("real", 64)]
)
def test_sketch_within_its_error_bound(score_type: str, resolution: int) -> None:
    preds, targets = synthetic(11, 150)
    stats, per_class, _ = coco_eval(preds, targets)
    kwargs = {"exact": False, "score_type": score_type, "resolution": resolution}
    m = sharded(preds, targets, 4, **kwargs)
    whole = MeanAveragePrecision(**kwargs).update(preds, targets)
    assert m.to_bytes() == whole.to_bytes()
    got, bound = m.compute(), m.error_bound()
    assert 0 < bound < 0.2
    for key in STAT_KEYS:
        if key.startswith("mar"):  # recall does not depend on the order within a bucket
            assert got[key] == pytest.approx(stats[key], abs=1e-9), key
        else:
            assert abs(got[key] - stats[key]) <= bound + 1e-12, key
    for c, v in per_class.items():
        assert abs(got["map_per_class"][c] - v) <= bound + 1e-12
    # memory is bounded by classes x combinations x buckets, whatever the number of images
    n_classes = len(m.records.classes)
    if m.records.mapping.size is not None:
        assert len(m.records) <= n_classes * 120 * m.records.mapping.size
    if resolution == 16:
        more = sharded(*synthetic(12, 300), 5, **kwargs)
        assert len(more.records) <= n_classes * 120 * m.records.mapping.size


def test_sketch_bound_shrinks_with_resolution() -> None:
    preds, targets = synthetic(13, 100)
    bounds = [
        MeanAveragePrecision(exact=False, resolution=r).update(preds, targets).error_bound()
        for r in (8, 64, 1024)
    ]
    assert bounds[0] > bounds[1] > bounds[2]
    assert MeanAveragePrecision().update(preds, targets).error_bound() == 0.0


def test_recall_thresholds_in_any_order() -> None:
    # COCOeval stops at the first threshold above the highest recall (map 0.0 for the shuffled
    # list on these detections); each threshold is read on its own here: the sorted list's
    # value, which is COCOeval's.
    rng = np.random.default_rng(0)
    preds, targets = [], []
    for _ in range(20):
        g = rng.random((5, 2)) * 50
        boxes = np.hstack([g, g + rng.random((5, 2)) * 30 + 5])
        labels = rng.integers(0, 3, 5)
        noisy = boxes + rng.normal(0, 4, boxes.shape)
        preds.append({"boxes": noisy, "scores": rng.random(5), "labels": labels.copy()})
        targets.append({"boxes": boxes, "labels": labels, "iscrowd": np.zeros(5, int)})
    ordered = [0.0, 0.25, 0.5, 0.75, 1.0]
    _, _, ev = coco_eval(preds, targets)
    ev.params.recThrs = np.array(ordered)
    with contextlib.redirect_stdout(io.StringIO()):
        ev.accumulate()
        ev.summarize()
    for exact in (True, False):
        sorted_map = MeanAveragePrecision(rec_thresholds=ordered, exact=exact)
        shuffled = MeanAveragePrecision(rec_thresholds=[1.0, 0.5, 0.0, 0.75, 0.25], exact=exact)
        value = sorted_map.update(preds, targets).compute()["map"]
        assert shuffled.update(preds, targets).compute()["map"] == pytest.approx(value, abs=1e-15)
        if exact:
            assert value == pytest.approx(ev.stats[0], abs=1e-12) and value > 0.1
