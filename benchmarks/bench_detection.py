"""Detection mAP: time and memory of streammetrics against pycocotools' COCOeval.

Run: ``python benchmarks/bench_detection.py [--quick] [n_images_vs_peers] [n_images_alone]``
(defaults 2000 and 100000; ``--quick``: 300 and 5000). Prints, as a markdown table, times
against a floor (one vectorised IoU of every detection / ground-truth pair of the same image and
class: the least work any COCO evaluator does), pycocotools (build COCO objects + evaluate +
accumulate) and torchmetrics' ``MeanAveragePrecision`` (its pycocotools backend), best of
``REPEATS`` runs each. Memory (tracemalloc peaks) is measured in separate, untimed runs:
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


def floor(preds, targets) -> float:
    t0 = time.perf_counter()
    det = [], [], []
    for i, (p, t) in enumerate(zip(preds, targets, strict=True)):
        for j, lab in enumerate(p["labels"]):
            same = t["labels"] == lab
            if same.any():
                det[0].append(np.repeat(p["boxes"][j : j + 1], int(same.sum()), axis=0))
                det[1].append(t["boxes"][same])
                det[2].append(np.full(int(same.sum()), i))
    if det[0]:
        box_iou_pairs(
            np.concatenate(det[0]),
            np.concatenate(det[1]),
            np.zeros(sum(len(x) for x in det[1]), bool),
        )
    return time.perf_counter() - t0


def ours(
    preds, targets, batch: int = 1000, exact: bool = True
) -> tuple[float, int, MeanAveragePrecision]:
    t0 = time.perf_counter()
    m = MeanAveragePrecision(exact=exact)
    for i in range(0, len(preds), batch):
        m.update(preds[i : i + batch], targets[i : i + batch])
    m.compute()
    return time.perf_counter() - t0, m.memory_bytes(), m


REPEATS = 3


def best(run: Callable[[], Any]) -> tuple[float, Any]:
    """Best wall time of ``REPEATS`` runs (nothing else inside the timed section), and the last
    run's result."""
    times, out = [], None
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - t0)
    return min(times), out


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


def torchmetrics_map(preds, targets) -> float:
    import torch
    from torchmetrics.detection.mean_ap import MeanAveragePrecision as TMMeanAveragePrecision

    def t(x, dtype):
        return torch.as_tensor(np.asarray(x), dtype=dtype)

    metric = TMMeanAveragePrecision(iou_type="bbox", backend="pycocotools")
    for i in range(0, len(preds), 1000):
        metric.update(
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
    print(f"best of {REPEATS}; memory from separate untimed runs\n")
    f = min(floor(preds, targets) for _ in range(REPEATS))
    t_ours, (_, mem_ours, m) = best(lambda: ours(preds, targets))
    want = m.compute()["map"]
    rows: list[tuple[str, float, int | None, str]] = [
        ("streammetrics update+compute", t_ours, peak_memory(lambda: ours(preds, targets)), "")
    ]
    peers = [
        ("pycocotools COCOeval", coco),
        ("torchmetrics MeanAveragePrecision", torchmetrics_map),
    ]
    for name, run in peers:
        try:
            t_peer, value = best(lambda run=run: run(preds, targets))
        except ImportError as exc:
            print(f"({name}: not importable: {exc})")
            continue
        agree = "yes" if abs(value - want) < 1e-9 else f"no ({value:.6f} vs {want:.6f})"
        rows.append((name, t_peer, peak_memory(lambda run=run: run(preds, targets)), agree))
    print("| evaluator | time (s) | x floor | our speed-up | peak traced MiB | map agrees |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    print(f"| floor (IoU of all same-class pairs) | {f:.3f} | 1.0 | | | |")
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
        t_l, mem_l, m = ours(preds, targets)
        t0 = time.perf_counter()
        m.compute()
        t_c = time.perf_counter() - t0
        print(
            f"{n_large} images, {n_det} detections: update+compute {t_l:.1f} s "
            f"({n_large / t_l:.0f} images/s), compute alone {t_c:.2f} s, state "
            f"{mem_l / 2**20:.1f} MiB ({mem_l / n_det:.1f} B/detection), "
            f"serialised {len(m.to_bytes()) / 2**20:.1f} MiB"
        )
        want = m.compute()["map"]
        t_s, mem_s, sk = ours(preds, targets, exact=False)
        print(
            f"  sketch mode: update+compute {t_s:.1f} s, state {mem_s / 2**20:.2f} MiB, "
            f"map off by {abs(sk.compute()['map'] - want):.2e} (bound {sk.error_bound():.2e})"
        )


if __name__ == "__main__":
    main()
