"""Large label sets: F1 and the confusion counts with 10,000 labels, against scikit-learn.

Run: ``python benchmarks/bench_large_labels.py [--rows N] [--labels K] [--batches B]``.

Each line is one whole job on the same rows: count, then (for F1) compute macro F1. Peers:
scikit-learn's batch ``f1_score`` (the issue's reference) and torchmetrics'
``MulticlassF1Score`` when installed; the floor is plain numpy (``np.unique`` of the pair codes,
then the per-class sums by ``bincount``). Best of ``--repeat`` runs; the ratio is the other's
time over ours (above 1: we are faster).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

import streammetrics as sm


def best_time(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--labels", type=int, default=10_000)
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    k, n = args.labels, args.rows
    rng = np.random.default_rng(0)
    y = rng.integers(0, k, n)
    p = np.where(rng.random(n) < 0.6, y, rng.integers(0, k, n))
    pieces = np.array_split(np.arange(n), args.batches)
    batches = [(y[i], p[i]) for i in pieces]

    def floor() -> float:
        codes, counts = np.unique(y * k + p, return_counts=True)
        r, c = np.divmod(codes, k)
        tp = np.bincount(r[r == c], weights=counts[r == c], minlength=k)
        true = np.bincount(r, weights=counts, minlength=k)
        pred = np.bincount(c, weights=counts, minlength=k)
        present = (true + pred) > 0
        den = true + pred
        f1 = np.divide(2 * tp, den, out=np.zeros(k), where=den > 0)
        return float(f1[present].mean())

    def ours_f1(data: list) -> Callable[[], float]:
        def go() -> float:
            m = sm.F1(average="macro")
            for a, b in data:
                m.update(a, b)
            return float(m.compute())

        return go

    def ours_cm(data: list) -> Callable[[], object]:
        def go() -> object:
            m = sm.ConfusionMatrix()
            for a, b in data:
                m.update(a, b)
            return m

        return go

    from sklearn.metrics import f1_score

    def sklearn_f1() -> float:
        return float(f1_score(y, p, average="macro"))

    ref = sklearn_f1()
    assert abs(ours_f1(batches)() - ref) < 1e-12 and abs(floor() - ref) < 1e-12
    state = ours_cm(batches)()
    print(
        f"{n:,} rows, {k:,} labels, {args.batches} batches; state {len(state.to_bytes()):,} "
        f"bytes ({state.counts.filled_count():,} cells filled; sparse={state.counts.sparse})"
    )
    t_sk = best_time(sklearn_f1, args.repeat)
    rows = [
        ("plain numpy floor (one batch)", best_time(floor, args.repeat)),
        ("scikit-learn f1_score (one batch)", t_sk),
        ("F1(average='macro'), one update", best_time(ours_f1([(y, p)]), args.repeat)),
        (f"F1(average='macro'), {args.batches} updates", best_time(ours_f1(batches), args.repeat)),
        (
            f"ConfusionMatrix() counts, {args.batches} updates",
            best_time(ours_cm(batches), args.repeat),
        ),
    ]
    try:
        import torch
        from torchmetrics.classification import MulticlassF1Score

        ty, tp = torch.from_numpy(y), torch.from_numpy(p)
        tbatches = [(tp[i], ty[i]) for i in (torch.from_numpy(j) for j in pieces)]

        def torchmetrics_f1() -> float:
            m = MulticlassF1Score(num_classes=k, average="macro")
            for a, b in tbatches:
                m.update(a, b)
            return float(m.compute())

        rows.append(
            (
                f"torchmetrics MulticlassF1Score, {args.batches} updates",
                best_time(torchmetrics_f1, min(args.repeat, 2)),
            )
        )
    except ImportError:
        print("torchmetrics not installed: skipped")
    print(f"{'work':<48} {'seconds':>9} {'sklearn / it':>13}")
    for name, t in rows:
        print(f"{name:<48} {t:>9.4f} {t_sk / t:>13.2f}")


if __name__ == "__main__":
    main()
