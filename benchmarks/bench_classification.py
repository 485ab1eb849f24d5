"""Label classification metrics: update throughput against a bare numpy floor and peers.

Run: ``python benchmarks/bench_classification.py [--rows N] [--batch N]``. Every line reports
the ratio of the floor's time to ours (1.0 = as fast as the floor, higher is better), measured
side by side on the same batches, best of 5 interleaved rounds (every line once per round).
Peers run when installed: torchmetrics' ``MulticlassConfusionMatrix`` (``validate_args=False``,
its fastest documented mode) and torcheval's ``MulticlassConfusionMatrix``, each on tensors
built before the timing, ``compute()`` included.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
from _timing import interleaved  # (this folder: the script's own)

import streammetrics as sm


def best_time(fn: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--batch", type=int, default=100_000)
    parser.add_argument("--classes", type=int, default=10)
    args = parser.parse_args()
    k = args.classes
    rng = np.random.default_rng(0)
    y_true = rng.integers(0, k, args.rows)
    y_pred = np.where(rng.random(args.rows) < 0.7, y_true, rng.integers(0, k, args.rows))
    batches = [
        (y_true[i : i + args.batch], y_pred[i : i + args.batch])
        for i in range(0, args.rows, args.batch)
    ]
    names = np.array([f"class-{i:02d}" for i in range(k)])
    str_batches = [(names[a], names[b]) for a, b in batches]

    def floor() -> None:
        total = np.zeros(k * k, dtype=np.int64)
        for a, b in batches:
            total += np.bincount(a * k + b, minlength=k * k)

    def run(make: Callable[[], sm.Metric], data: list = batches) -> Callable[[], None]:
        def go() -> None:
            m = make()
            for a, b in data:
                m.update(a, b)

        return go

    cases: list[tuple[str, Callable[[], None]]] = [
        ("ConfusionMatrix(labels=range(k))", run(lambda: sm.ConfusionMatrix(labels=range(k)))),
        ("ConfusionMatrix() (labels discovered)", run(sm.ConfusionMatrix)),
        ("F1(average='macro')", run(lambda: sm.F1(average="macro"))),
        ("ClassificationReport()", run(sm.ClassificationReport)),
        ("ConfusionMatrix() string labels", run(sm.ConfusionMatrix, str_batches)),
    ]
    tb = None
    try:  # peers, when installed
        import torch
        from torchmetrics.classification import MulticlassConfusionMatrix

        tb = [(torch.from_numpy(a), torch.from_numpy(b)) for a, b in batches]

        def torchmetrics_cm() -> None:
            m = MulticlassConfusionMatrix(num_classes=k, validate_args=False)
            for a, b in tb:
                m.update(b, a)
            m.compute()

        cases.append(("torchmetrics MulticlassConfusionMatrix", torchmetrics_cm))
    except ImportError:
        print("(torchmetrics not installed: peer skipped)")
    try:
        import torch
        from torcheval.metrics import MulticlassConfusionMatrix as TEConfusionMatrix

        tb = tb or [(torch.from_numpy(a), torch.from_numpy(b)) for a, b in batches]

        def torcheval_cm() -> None:
            m = TEConfusionMatrix(num_classes=k)
            for a, b in tb:
                m.update(b, a)
            m.compute()

        cases.append(("torcheval MulticlassConfusionMatrix", torcheval_cm))
    except ImportError:
        print("(torcheval not installed: peer skipped)")
    times = interleaved({"floor": floor, **dict(cases)})
    t_floor = times.pop("floor")
    print(f"{args.rows:,} rows in batches of {args.batch:,}, {k} classes")
    print(f"floor: np.bincount(y_true * k + y_pred): {args.rows / t_floor / 1e6:.0f}M rows/s")
    print(f"{'metric':<44}{'floor/ours':>12}{'M rows/s':>10}")
    for name, t in times.items():
        print(f"{name:<44}{t_floor / t:>12.2f}{args.rows / t / 1e6:>10.1f}")

    a = sm.ConfusionMatrix(labels=range(k)).update(y_true, y_pred)
    b = a.copy()
    t_merge = best_time(lambda: a.copy().merge(b), repeat=200) - best_time(a.copy, repeat=200)
    t_bytes = best_time(a.to_bytes, repeat=200)
    blob = a.to_bytes()
    t_loads = best_time(lambda: sm.loads(blob), repeat=200)
    print(
        f"merge of two {k}x{k} states: {max(t_merge, 0) * 1e6:.1f} us; "
        f"to_bytes {t_bytes * 1e6:.1f} us; loads {t_loads * 1e6:.1f} us; "
        f"state {len(blob)} bytes"
    )


if __name__ == "__main__":
    main()
