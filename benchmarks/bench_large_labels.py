"""Large label sets: F1 and the confusion counts with 10,000 labels, against scikit-learn.

Run: ``python benchmarks/bench_large_labels.py [--rows N] [--labels K] [--batches B]``.

Each line is one whole job on the same rows: count, then (for F1) compute macro F1. Peers:
scikit-learn's batch ``f1_score`` (the issue's reference) and torchmetrics'
``MulticlassF1Score`` (``validate_args=False``) when installed; the floor is plain numpy: three
``np.bincount`` (true positives, true counts, predicted counts per label), bit-equal to the
``np.unique``-of-pair-codes floor used until 0.8.8 (checked in the run). Best of ``--repeat``
interleaved rounds (every line once per round); the ratio is scikit-learn's time over the
line's (above 1: faster than scikit-learn).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
from _timing import interleaved  # (this folder: the script's own)

import streammetrics as sm


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
        tp = np.bincount(y[y == p], minlength=k)
        true = np.bincount(y, minlength=k)
        pred = np.bincount(p, minlength=k)
        den = true + pred
        f1 = np.divide(2 * tp, den, out=np.zeros(k), where=den > 0)
        return float(f1[den > 0].mean())

    def floor_unique() -> float:
        """The floor until 0.8.8, kept to check the bincount floor against (not timed)."""
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
    assert floor() == floor_unique()  # bit-equal
    state = ours_cm(batches)()
    print(
        f"{n:,} rows, {k:,} labels, {args.batches} batches; state {len(state.to_bytes()):,} "
        f"bytes ({state.counts.filled_count():,} cells filled; sparse={state.counts.sparse})"
    )
    fns: dict[str, Callable[[], object]] = {
        "plain numpy floor (one batch, three bincounts)": floor,
        "scikit-learn f1_score (one batch)": sklearn_f1,
        "F1(average='macro'), one update": ours_f1([(y, p)]),
        f"F1(average='macro'), {args.batches} updates": ours_f1(batches),
        f"ConfusionMatrix() counts, {args.batches} updates": ours_cm(batches),
    }
    try:
        import torch
        from torchmetrics.classification import MulticlassF1Score

        ty, tp = torch.from_numpy(y), torch.from_numpy(p)
        tbatches = [(tp[i], ty[i]) for i in (torch.from_numpy(j) for j in pieces)]

        def torchmetrics_f1() -> float:
            m = MulticlassF1Score(num_classes=k, average="macro", validate_args=False)
            for a, b in tbatches:
                m.update(a, b)
            return float(m.compute())

        fns[f"torchmetrics MulticlassF1Score, {args.batches} updates"] = torchmetrics_f1
    except ImportError:
        print("torchmetrics not installed: skipped")
    times = interleaved(fns, args.repeat)
    t_sk = times["scikit-learn f1_score (one batch)"]
    rows = list(times.items())
    print(f"{'work':<48} {'seconds':>9} {'sklearn / it':>13}")
    for name, t in rows:
        print(f"{name:<48} {t:>9.4f} {t_sk / t:>13.2f}")


if __name__ == "__main__":
    main()
