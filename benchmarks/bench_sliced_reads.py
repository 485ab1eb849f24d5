"""Reading a ``Sliced`` metric: ``compute()`` and ``intervals()`` of every slice.

One 2M-row batch (3 labels, 70% right; or binary labels and scores ``clip(0.3 y + 0.7 u)``)
goes into ``Sliced(metric)`` over ``--slices`` slices, unweighted or with weights uniform in
[0.5, 1.5); each read is then timed as the first read of that state just loaded from its bytes
(the score tables keep what they have read), best of ``--repeats``:

- "tables": the packed table's reads (the dense tables of each width stacked and scored at
  once, or the margins of whole counts);
- "states": one state made per slice and asked, the path every read without a table method
  takes (the tables' ``computed``/``intervals`` answering None);
- "floor" (values only): the read a numpy user keeping a dense ``(slices, 3, 3)`` array of
  counts would write for per-slice accuracy or macro F1 (arrays, where we answer a dict keyed
  by slice); no intervals (no peer gives per-slice intervals: fairlearn's ``MetricFrame`` and
  torchmetrics give values).

    PYTHONPATH=. python benchmarks/bench_sliced_reads.py [--quick]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

import streammetrics as sm
from streammetrics.wrappers._confusion_pack import ConfusionPack
from streammetrics.wrappers._slice_pack import SlicePack

#: name: (metric, columns): predicted labels, or scores of binary labels.
METRICS: dict[str, tuple[Callable[[], sm.Metric], str]] = {
    "Accuracy": (sm.Accuracy, "labels"),
    "F1 macro": (lambda: sm.F1(average="macro"), "labels"),
    "Precision micro": (lambda: sm.Precision(average="micro"), "labels"),
    "MCC": (sm.MatthewsCorrCoef, "labels"),
    "CohenKappa": (sm.CohenKappa, "labels"),
    "ROCAUC": (sm.ROCAUC, "scores"),
    "AveragePrecision": (sm.AveragePrecision, "scores"),
}
PACKS = (ConfusionPack, SlicePack)


def _first_read(blob: bytes, read: str, repeats: int, alone: bool) -> float:
    """The best time of ``read`` on a state just loaded from ``blob`` (a first read: the score
    tables keep what they read), from the packed table or (``alone``) with the table's read
    methods answering None, so that one state is made per slice and asked."""
    own = [(pack, pack.computed, pack.intervals) for pack in PACKS]
    if alone:
        for pack in PACKS:
            pack.computed = lambda self: None  # type: ignore[method-assign,assignment]
            pack.intervals = lambda self, level: None  # type: ignore[method-assign,assignment]
    best = float("inf")
    try:
        for _ in range(repeats):
            state = sm.loads(blob)
            t = time.perf_counter()
            getattr(state, read)()
            best = min(best, time.perf_counter() - t)
    finally:
        for pack, computed, intervals in own:
            pack.computed, pack.intervals = computed, intervals  # type: ignore[method-assign]
    return best


def _best(fn: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _floor(name: str, y, p, by, w, k: int) -> Callable[[], object]:  # type: ignore[no-untyped-def]
    """The read a numpy user keeping a dense ``(slices, 3, 3)`` count table would write."""
    weights = np.ones(len(y)) if w is None else w
    table = np.bincount((by * 3 + y) * 3 + p, weights, minlength=k * 9).reshape(k, 3, 3)

    def accuracy() -> object:
        return np.trace(table, axis1=1, axis2=2) / table.sum(axis=(1, 2))

    def f1() -> object:
        tp = np.diagonal(table, axis1=1, axis2=2)
        den = table.sum(axis=2) + table.sum(axis=1)
        f = np.divide(2 * tp, den, out=np.zeros_like(tp), where=den > 0)
        seen = den > 0
        return f.sum(axis=1) / seen.sum(axis=1)

    return accuracy if name == "Accuracy" else f1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--slices", type=int, nargs="+", default=[1_000, 100_000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.quick:
        args.rows, args.slices, args.repeats = 50_000, [600], 1
    rng = np.random.default_rng(0)
    n = args.rows
    y = rng.integers(0, 3, n)
    p = np.where(rng.random(n) < 0.7, y, rng.integers(0, 3, n))
    w = rng.uniform(0.5, 1.5, n)
    print(f"{n:,} rows, 3 labels; ms, best of {args.repeats}")
    print(
        f"{'slices':>8} {'metric':<16} {'weights':<8} {'read':<10} {'tables':>8} {'states':>8} "
        f"{'floor':>8} {'states/tables':>14}"
    )
    score = np.clip(0.3 * (y == 1) + 0.7 * rng.random(n), 0.0, 1.0)
    for k in args.slices:
        by = rng.integers(0, k, n)
        for weighted in (False, True):
            sw = w if weighted else None
            for name, (make, columns) in METRICS.items():
                cols = (y, p) if columns == "labels" else ((y == 1).astype(int), score)
                blob = sm.Sliced(make()).update(*cols, by=by, sample_weight=sw).to_bytes()
                for read in ("compute", "intervals"):
                    tables = _first_read(blob, read, args.repeats, alone=False)
                    states = _first_read(blob, read, args.repeats, alone=True)
                    floor = ""
                    if read == "compute" and name in ("Accuracy", "F1 macro"):
                        ms = 1e3 * _best(_floor(name, y, p, by, sw, k), args.repeats)
                        floor = f"{ms:8.1f}"
                    print(
                        f"{k:>8,} {name:<16} {'yes' if weighted else 'no':<8} {read:<10} "
                        f"{1e3 * tables:8.1f} {1e3 * states:8.1f} {floor:>8} "
                        f"{states / tables:13.1f}x"
                    )


if __name__ == "__main__":
    main()
