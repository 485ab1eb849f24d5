"""Update cost of R2Score and ExplainedVariance with and without the fourth-order moments their
``interval()`` reads, side by side in one process (best of ``--repeat``, interleaved).

"Without" is the same class with the ``shape`` block switched off (the schema-2 layout), so
the ratio is the price of the interval. Run: ``python benchmarks/bench_explained_update.py``.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from streammetrics.regression import ExplainedVariance, R2Score


class _R2Before(R2Score, register=False):
    _shape = False
    _schema = 2


class _EVBefore(ExplainedVariance, register=False):
    _shape = False
    _schema = 2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=40)
    opts = parser.parse_args()
    rng = np.random.default_rng(0)
    n = opts.rows
    t = rng.normal(size=n)
    p = t + rng.normal(size=n)
    w = rng.random(n)
    print("| metric | weights | without shape | with shape | slowdown |")
    print("| --- | --- | ---: | ---: | ---: |")
    for before, after in ((_R2Before, R2Score), (_EVBefore, ExplainedVariance)):
        for weights in (None, w):
            a, b = before(), after()
            best_a = best_b = math.inf
            for _ in range(opts.repeat):
                t0 = time.perf_counter()
                a.update(t, p, sample_weight=weights)
                t1 = time.perf_counter()
                b.update(t, p, sample_weight=weights)
                t2 = time.perf_counter()
                best_a, best_b = min(best_a, t1 - t0), min(best_b, t2 - t1)
            label = "none" if weights is None else "uniform(0, 1)"
            print(
                f"| {after.__name__} | {label} | {n / best_a / 1e6:.1f} M rows/s | "
                f"{n / best_b / 1e6:.1f} M rows/s | {best_b / best_a:.2f}x |"
            )


if __name__ == "__main__":
    main()
