"""Regression update throughput against a bare numpy floor.

The floor is the least work any streaming MSE / R2 must do per batch: one pass for the error,
weighted sums of the squared error, y_true and y_true**2 (raw sums: what a naive implementation
keeps, and numerically unsafe). Run: ``python benchmarks/bench_regression.py``. Prints ratios
(streammetrics time / floor time) for 1-D and 2-D targets.
"""

from __future__ import annotations

import time

import numpy as np

from streammetrics.regression import MeanSquaredError, PearsonCorrCoef, R2Score, RegressionReport


def _best(fn, repeat=5):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _floor(batches):
    def run():
        acc = np.zeros(4)
        for t, p in batches:
            e = t - p
            acc[0] += (e * e).sum()
            acc[1] += t.sum()
            acc[2] += (t * t).sum()
            acc[3] += len(t)
        return acc

    return run


def _metric(cls, batches):
    def run():
        m = cls()
        for t, p in batches:
            m.update(t, p)
        return m.compute()

    return run


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"{'case':40s} {'rows/s (sm)':>14s} {'x floor':>8s}")
    for shape, n_batches in (((100_000,), 50), ((10_000,), 200), ((100_000, 4), 20)):
        batches = []
        for _ in range(n_batches):
            t = rng.normal(size=shape) + 1e6
            batches.append((t, t + rng.normal(size=shape)))
        rows = shape[0] * n_batches
        floor = _best(_floor(batches))
        for cls in (MeanSquaredError, R2Score, PearsonCorrCoef, RegressionReport):
            took = _best(_metric(cls, batches), repeat=3)
            label = f"{cls.__name__} {shape} x{n_batches}"
            print(f"{label:40s} {rows / took:14.3e} {took / floor:8.2f}")


if __name__ == "__main__":
    main()
