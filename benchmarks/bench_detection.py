"""Detection mAP: time and memory of streammetrics against pycocotools' COCOeval.

Run: ``python benchmarks/bench_detection.py [--quick] [n_images_vs_peers] [n_images_alone]``
(defaults 2000 and 100000; ``--quick``: 300 and 5000). Prints, as a markdown table, times
against a floor (the IoU of every detection / ground-truth pair of the same image and class,
the pairs found in vectorised numpy: the least work any COCO evaluator does), pycocotools (build
COCO objects + evaluate + accumulate) and torchmetrics' ``MeanAveragePrecision`` (its
pycocotools backend, fed tensors built before the timing), best of ``REPEATS`` interleaved
rounds. Memory (tracemalloc peaks) is measured in separate, untimed runs:
tracemalloc slows pure-Python code such as pycocotools' many times over, so it never runs inside
a timed section. Then our own time and state size at the larger count.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

from streammetrics.detection import MeanAveragePrecision
from streammetrics.detection._matching import box_iou_pairs


def synthetic(seed: int, n_images: int, n_classes: int = 10):
    rng = np.random.default_rng(seed)
    preds, targets = [], []
    for _ in range(n_images):
        n = int(rng.integers(0, 10))
        xy = np.round(rng.uniform(0, 500, (n, 2)))
        gt = np.c_[xy, xy + np.round(rng.uniform(8, 200, (n, 2)))]
        labels = rng.integers(0, n_classes, n)
        targets.append({"boxes": gt, "labels": labels, "iscrowd": (rng.random(n) < 0.05) * 1})
        keep = rng.random(n) < 0.8
        det = gt[keep] + np.round(rng.normal(0, 5, (int(keep.sum()), 4)))
        k = int(rng.integers(0, 5))
        fxy = np.round(rng.uniform(0, 500, (k, 2)))
        fp = np.c_[fxy, fxy + np.round(rng.uniform(8, 200, (k, 2)))]
        boxes = np.concatenate([det, fp])
        boxes[:, 2:] = np.maximum(boxes[:, 2:], boxes[:, :2] + 1)
        preds.append(
            {
                "boxes": boxes,
                "scores": rng.random(len(boxes)),
                "labels": np.concatenate([labels[keep], rng.integers(0, n_classes, k)]),
            }
        )
    return preds, targets


def floor_pairs(preds, targets) -> np.ndarray:
    """The floor: the IoU of every same-image, same-class (detection, ground truth) pair, in
    plain vectorised numpy: flatten the lists, sort the ground truths by (image, class) (a
    stable sort keeps each image's own order), ``searchsorted`` each detection's range of them
    and ``np.repeat`` the detections over it. The pairs and their order are those of a Python
    loop over images and detections (``floor_loop``, checked equal in ``main``)."""
    n_det = [len(p["labels"]) for p in preds]
    n_gt = [len(t["labels"]) for t in targets]
    if not sum(n_det) or not sum(n_gt):
        return np.zeros(0)
    image = np.arange(len(preds))
    d_lab = np.concatenate([p["labels"] for p in preds]).astype(np.int64)
    g_lab = np.concatenate([t["labels"] for t in targets]).astype(np.int64)
    width = int(max(d_lab.max(), g_lab.max())) + 1
    d_key = np.repeat(image, n_det) * width + d_lab
    g_key = np.repeat(image, n_gt) * width + g_lab
    order = np.argsort(g_key, kind="stable")
    g_sorted = g_key[order]
    lo = np.searchsorted(g_sorted, d_key, "left")
    count = np.searchsorted(g_sorted, d_key, "right") - lo
    d_idx = np.repeat(np.arange(len(d_key)), count)
    starts = np.repeat(lo - np.cumsum(count) + count, count)  # each run's first sorted gt
    g_idx = order[starts + np.arange(len(d_idx))]
    d_boxes = np.concatenate([p["boxes"] for p in preds]).reshape(-1, 4)
    g_boxes = np.concatenate([t["boxes"] for t in targets]).reshape(-1, 4)
    return box_iou_pairs(d_boxes[d_idx], g_boxes[g_idx], np.zeros(len(g_idx), bool))


def floor_loop(preds, targets) -> np.ndarray:
    """The floor as it was until 0.8.8 (a Python loop over detections), kept to check that
    ``floor_pairs`` gives the same pairs in the same order; not timed."""
    det = [], []
    for p, t in zip(preds, targets, strict=True):
        for j, lab in enumerate(p["labels"]):
            same = t["labels"] == lab
            if same.any():
                det[0].append(np.repeat(p["boxes"][j : j + 1], int(same.sum()), axis=0))
                det[1].append(t["boxes"][same])
    if not det[0]:
        return np.zeros(0)
    return box_iou_pairs(
        np.concatenate(det[0]), np.concatenate(det[1]), np.zeros(sum(len(x) for x in det[1]), bool)
    )


def ours(preds, targets, batch: int = 1000, exact: bool = True) -> MeanAveragePrecision:
    m = MeanAveragePrecision(exact=exact)
    for i in range(0, len(preds), batch):
        m.update(preds[i : i + batch], targets[i : i + batch])
    m.compute()
    return m


def timed(run: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = run()
    return time.perf_counter() - t0, out


REPEATS = 3


def interleaved(fns: dict[str, Callable[[], Any]]) -> tuple[dict[str, float], dict[str, Any]]:
    """Best wall time of each function over ``REPEATS`` interleaved rounds (every function once
    per round, nothing else inside a timed section), and each one's last result."""
    best = dict.fromkeys(fns, float("inf"))
    out: dict[str, Any] = {}
    for _ in range(REPEATS):
        for name, fn in fns.items():
            t, out[name] = timed(fn)
            best[name] = min(best[name], t)
    return best, out


def peak_memory(run: Callable[[], Any]) -> int:
    """Peak traced memory of one untimed run."""
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def coco(preds, targets) -> float:
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    anns, res, k = [], [], 1
    for i, (p, t) in enumerate(zip(preds, targets, strict=True)):
        for b, c, z in zip(t["boxes"], t["labels"], t["iscrowd"], strict=True):
            anns.append(
                {
                    "id": k,
                    "image_id": i + 1,
                    "category_id": int(c),
                    "iscrowd": int(z),
                    "bbox": [b[0], b[1], b[2] - b[0], b[3] - b[1]],
                    "area": float((b[2] - b[0]) * (b[3] - b[1])),
                }
            )
            k += 1
        for b, s, c in zip(p["boxes"], p["scores"], p["labels"], strict=True):
            res.append(
                {
                    "image_id": i + 1,
                    "category_id": int(c),
                    "score": float(s),
                    "bbox": [b[0], b[1], b[2] - b[0], b[3] - b[1]],
                }
            )
    cats = sorted({a["category_id"] for a in anns} | {r["category_id"] for r in res})
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO()
        gt.dataset = {
            "images": [{"id": i + 1} for i in range(len(targets))],
            "annotations": anns,
            "categories": [{"id": c} for c in cats],
        }
        gt.createIndex()
        ev = COCOeval(gt, gt.loadRes(res), "bbox")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return float(ev.stats[0])


def torch_inputs(preds, targets) -> list[tuple[list[dict], list[dict]]]:
    """The torchmetrics peer's inputs, as tensors in batches of 1,000 images: built once, before
    any timing (a training loop hands it tensors already)."""
    import torch

    def t(x, dtype):
        return torch.as_tensor(np.asarray(x), dtype=dtype)

    return [
        (
            [
                {
                    "boxes": t(p["boxes"], torch.float32).reshape(-1, 4),
                    "scores": t(p["scores"], torch.float32),
                    "labels": t(p["labels"], torch.int64),
                }
                for p in preds[i : i + 1000]
            ],
            [
                {
                    "boxes": t(g["boxes"], torch.float32).reshape(-1, 4),
                    "labels": t(g["labels"], torch.int64),
                    "iscrowd": t(g["iscrowd"], torch.int64),
                }
                for g in targets[i : i + 1000]
            ],
        )
        for i in range(0, len(preds), 1000)
    ]


def torchmetrics_map(batches) -> float:
    """torchmetrics' ``MeanAveragePrecision`` (pycocotools backend; the class takes no
    ``validate_args``) on tensors built beforehand by ``torch_inputs``."""
    from torchmetrics.detection.mean_ap import MeanAveragePrecision as TMMeanAveragePrecision

    metric = TMMeanAveragePrecision(iou_type="bbox", backend="pycocotools")
    for p, g in batches:
        metric.update(p, g)
    with contextlib.redirect_stdout(io.StringIO()):
        return float(metric.compute()["map"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="300 and 5000 images")
    parser.add_argument("n_small", nargs="?", type=int, default=None)
    parser.add_argument("n_large", nargs="?", type=int, default=None)
    args = parser.parse_args()
    n_small = args.n_small or (300 if args.quick else 2000)
    n_large = args.n_large if args.n_large is not None else (5000 if args.quick else 100_000)
    preds, targets = synthetic(0, n_small)
    n_det = sum(len(p["scores"]) for p in preds)
    n_gt = sum(len(t["labels"]) for t in targets)
    print(f"{n_small} images, {n_det} detections, {n_gt} ground-truth boxes, 10 classes")
    print(f"best of {REPEATS} interleaved rounds; memory from separate untimed runs\n")
    if not np.array_equal(floor_pairs(preds, targets), floor_loop(preds, targets)):
        raise AssertionError("the vectorised floor's pairs differ from the loop's")
    fns: dict[str, Callable[[], Any]] = {
        "floor": lambda: floor_pairs(preds, targets),
        "ours": lambda: ours(preds, targets),
        "pycocotools COCOeval": lambda: coco(preds, targets),
    }
    try:
        from torchmetrics.detection.mean_ap import MeanAveragePrecision as TMMeanAveragePrecision

        # Its bbox mode needs torchvision, checked at construction: construct one up front.
        TMMeanAveragePrecision(iou_type="bbox", backend="pycocotools")
        batches = torch_inputs(preds, targets)
        fns["torchmetrics MeanAveragePrecision"] = lambda: torchmetrics_map(batches)
    except ImportError as exc:  # ModuleNotFoundError too (no torchvision)
        print(f"(torchmetrics peer: not importable: {exc})")
    try:
        import pycocotools  # noqa: F401
    except ImportError as exc:
        print(f"(pycocotools: not importable: {exc})")
        del fns["pycocotools COCOeval"]
    times, results = interleaved(fns)
    f, t_ours, m = times["floor"], times["ours"], results["ours"]
    mem_ours = m.memory_bytes()
    want = m.compute()["map"]
    rows: list[tuple[str, float, int | None, str]] = [
        ("streammetrics update+compute", t_ours, peak_memory(lambda: ours(preds, targets)), "")
    ]
    for name in fns:
        if name in ("floor", "ours"):
            continue
        value = results[name]
        agree = "yes" if abs(value - want) < 1e-9 else f"no ({value:.6f} vs {want:.6f})"
        rows.append((name, times[name], peak_memory(fns[name]), agree))
    print("| evaluator | time (s) | x floor | our speed-up | peak traced MiB | map agrees |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    print(f"| floor (IoU of all same-class pairs, vectorised) | {f:.3f} | 1.0 | | | |")
    for name, t, peak, agree in rows:
        mib = f"{peak / 2**20:.1f}" if peak is not None else ""
        print(f"| {name} | {t:.3f} | {t / f:.1f} | {t / t_ours:.1f}x | {mib} | {agree} |")
    print(
        f"\nstate size: {mem_ours / n_det:.1f} bytes per detection, "
        f"{len(m.to_bytes()) / n_det:.1f} bytes per detection serialised"
    )
    if n_large:
        preds, targets = synthetic(1, n_large)
        n_det = sum(len(p["scores"]) for p in preds)
        t_l, m = timed(lambda: ours(preds, targets))
        mem_l = m.memory_bytes()
        # compute alone: the first compute() of a freshly updated metric (a second call on the
        # same metric would reuse its cached record order).
        fresh = MeanAveragePrecision(exact=True)
        for i in range(0, len(preds), 1000):
            fresh.update(preds[i : i + 1000], targets[i : i + 1000])
        t_c, _ = timed(fresh.compute)
        print(
            f"{n_large} images, {n_det} detections: update+compute {t_l:.1f} s "
            f"({n_large / t_l:.0f} images/s), compute alone (first call) {t_c:.2f} s, state "
            f"{mem_l / 2**20:.1f} MiB ({mem_l / n_det:.1f} B/detection), "
            f"serialised {len(m.to_bytes()) / 2**20:.1f} MiB"
        )
        want = m.compute()["map"]
        t_s, sk = timed(lambda: ours(preds, targets, exact=False))
        mem_s = sk.memory_bytes()
        print(
            f"  sketch mode: update+compute {t_s:.1f} s, state {mem_s / 2**20:.2f} MiB, "
            f"map off by {abs(sk.compute()['map'] - want):.2e} (bound {sk.error_bound():.2e})"
        )


if __name__ == "__main__":
    main()
