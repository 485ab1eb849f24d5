"""``Sliced(LogLoss())``, ``Sliced(BrierScore())`` and ``Sliced(CalibrationError())`` beside the
numpy floor a user would write.

The loss floor computes each row's loss (``-log(clip(where(y, p, 1 - p)))``, or ``(y - p)**2``)
and two ``np.bincount`` per batch over the slice codes (the weighted loss and the weight): the
mean loss per slice, without the second moments and the sums under the weights squared that our
intervals read. The calibration floor bins each probability (``min(int(p * 15), 14)``) and
takes three ``np.bincount`` over the (slice, bin) cells: the bin weights, probabilities and
outcomes. Our metric is timed from an empty state through every batch, the floor the same.
Best of ``--repeats``, the lines interleaved in each repeat; then, for ``--big`` slices, one
2M-row batch, ``compute()``, ``intervals()``, ``to_bytes()`` and ``loads``, one run each.

    PYTHONPATH=. python benchmarks/bench_sliced_losses.py [--quick]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

import streammetrics as sm

EPS = float(np.finfo(np.float64).eps)


def _data(n: int, k: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    p = np.clip(0.3 * y + 0.7 * rng.random(n), 0.0, 1.0)
    return y, p, rng.integers(0, k, n), rng.uniform(0.5, 1.5, n)


def _ours(
    make: Callable[[], sm.Metric], cols: tuple, parts: list[slice], w
) -> Callable[[], object]:  # type: ignore[no-untyped-def]
    y, p, by = cols

    def run() -> object:
        m = sm.Sliced(make())
        for s in parts:
            m.update(y[s], p[s], by=by[s], sample_weight=None if w is None else w[s])
        return m.compute()

    return run


def _floor(kind: str, cols: tuple, parts: list[slice], w, k: int) -> Callable[[], object]:  # type: ignore[no-untyped-def]
    y, p, by = cols

    def run() -> object:
        sums, rows = np.zeros(k), np.zeros(k)
        for s in parts:
            ys, ps = y[s], p[s]
            if kind == "log":
                loss = -np.log(np.clip(np.where(ys == 1, ps, 1.0 - ps), EPS, 1.0 - EPS))
            else:
                d = ys - ps
                loss = d * d
            ws = None if w is None else w[s]
            sums += np.bincount(by[s], weights=loss if ws is None else loss * ws, minlength=k)
            rows += np.bincount(by[s], weights=ws, minlength=k)
        with np.errstate(invalid="ignore", divide="ignore"):  # (a slice no row reached)
            return sums / rows

    return run


def _ece_floor(cols: tuple, parts: list[slice], k: int) -> Callable[[], object]:
    y, p, by = cols

    def run() -> object:
        weight, conf, hits = np.zeros(k * 15), np.zeros(k * 15), np.zeros(k * 15)
        for s in parts:
            ps = p[s]
            cells = by[s] * 15 + np.minimum((ps * 15).astype(np.intp), 14)
            weight += np.bincount(cells, minlength=k * 15)
            conf += np.bincount(cells, weights=ps, minlength=k * 15)
            hits += np.bincount(cells, weights=y[s], minlength=k * 15)
        with np.errstate(invalid="ignore", divide="ignore"):
            gap = np.abs(hits / weight - conf / weight).reshape(k, 15)
        w = weight.reshape(k, 15)
        return np.nansum(w * gap, axis=1) / w.sum(axis=1)

    return run


def bench_rates(runs: list[tuple[int, int, int]], repeats: int) -> None:
    print("| slices | rows | batch | metric | Sliced rows/s | numpy floor rows/s | x floor |")
    print("|---:|---:|---:|---|---:|---:|---:|")
    for k, n, batch in runs:
        y, p, by, w = _data(n, k, k)
        parts = [slice(a, a + batch) for a in range(0, n, batch)]
        cols = (y, p, by)
        lines = {
            "LogLoss": (_ours(sm.LogLoss, cols, parts, None), _floor("log", cols, parts, None, k)),
            "LogLoss, weighted": (
                _ours(sm.LogLoss, cols, parts, w),
                _floor("log", cols, parts, w, k),
            ),
            "BrierScore": (
                _ours(sm.BrierScore, cols, parts, None),
                _floor("brier", cols, parts, None, k),
            ),
            "CalibrationError": (
                _ours(sm.CalibrationError, cols, parts, None),
                _ece_floor(cols, parts, k),
            ),
        }
        best = {name: np.inf for name in lines} | {name + " floor": np.inf for name in lines}
        for _ in range(repeats):
            for name, (ours, floor) in lines.items():
                for label, fn in ((name, ours), (name + " floor", floor)):
                    t0 = time.perf_counter()
                    fn()
                    best[label] = min(best[label], time.perf_counter() - t0)
        for name in lines:
            a, b = n / best[name], n / best[name + " floor"]
            print(f"| {k:,} | {n:,} | {batch:,} | {name} | {a:,.0f} | {b:,.0f} | {a / b:.3f} |")


def bench_big(k: int, n: int) -> None:
    y, p, by, _ = _data(n, k, 1)
    print(f"\n{k:,} slices, one {n:,}-row batch (`Sliced(LogLoss())`), one run each:\n")
    steps: dict[str, float] = {}
    t0 = time.perf_counter()
    m = sm.Sliced(sm.LogLoss()).update(y, p, by=by)
    steps["update"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    m.compute()
    steps["compute()"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    m.intervals()
    steps["intervals()"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    blob = m.to_bytes()
    steps["to_bytes()"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    back = sm.loads(blob)
    steps["loads"] = time.perf_counter() - t0
    assert back.to_bytes() == blob
    for name, seconds in steps.items():
        print(f"- {name}: {seconds:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    runs = [(100, 200_000, 20_000), (1_000, 200_000, 20_000), (100_000, 1_000_000, 200_000)]
    bench_rates(runs[:1] if args.quick else runs, 1 if args.quick else args.repeats)
    if not args.quick:
        bench_big(100_000, 2_000_000)


if __name__ == "__main__":
    main()
