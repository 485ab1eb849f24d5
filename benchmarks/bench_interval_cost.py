"""``interval()`` of exact-mode ROCAUC and GAUC before and after the fused passes, side by side.

The costs that ``bench_uncertainty.py --quick`` showed above the 1 ms goal: ``ROCAUC(exact=True)``
at 100k distinct scores and ``GAUC()`` at 10k groups (100k rows), unweighted and weighted. The
"before" functions are read from the commit given by ``--before`` (default ``314a2d6``, the last
one with the old code) and run on the same state in the same process, interleaved, best of
``--repeat``. Run from the repository root: ``python benchmarks/bench_interval_cost.py``.
"""

from __future__ import annotations

import argparse
import ast
import math
import subprocess
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import stats

import streammetrics as sm
from streammetrics import uncertainty


def _old_function(commit: str, path: str, name: str, env: dict[str, Any]) -> Any:
    """The function (or method) ``name`` as it was in ``path`` at ``commit``."""
    source = subprocess.run(
        ["git", "show", f"{commit}:{path}"], check=True, capture_output=True, text=True
    ).stdout
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            scope = dict(env)
            exec(compile(ast.Module([node], []), path, "exec"), scope)
            return scope[name]
    raise LookupError(f"{name} not in {path} at {commit}")


def _best(fn: Callable[[], Any], repeat: int) -> float:
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="314a2d6")
    parser.add_argument("--repeat", type=int, default=50)
    opts = parser.parse_args()
    env = {"np": np, "math": math, "NAN_INTERVAL": uncertainty.NAN_INTERVAL}
    old_delong = _old_function(opts.before, "streammetrics/uncertainty.py", "delong", env)
    old_per_group = _old_function(
        opts.before, "streammetrics/classification/gauc.py", "_per_group_unchecked", env
    )
    rng = np.random.default_rng(0)
    n = 100_000
    y = rng.integers(0, 2, n)
    score = stats.norm.cdf(rng.normal(y * 1.0, 1.0))
    groups = rng.integers(0, 10_000, n)
    print("| interval() part | weights | before | after | after / before |")
    print("| --- | --- | ---: | ---: | ---: |")
    for weights in (None, rng.random(n)):
        label = "none" if weights is None else "uniform(0, 1)"
        auc = sm.ROCAUC(exact=True).update(y, score, sample_weight=weights)
        table = auc.hist
        pos, neg = table.pos, table.neg
        g = sm.GAUC().update(y, score, groups=groups, sample_weight=weights)
        g.interval()  # consolidates the table once
        pairs = [
            (
                "DeLong, ROCAUC(exact=True), 100k distinct scores",
                lambda p=pos, n=neg: old_delong(p, n),
                lambda p=pos, n=neg: uncertainty.delong(p, n),
            ),
            (
                "per-group AUCs, GAUC(), 10k groups",
                lambda m=g: old_per_group(m),
                g._per_group_unchecked,
            ),
        ]
        for name, before, after in pairs:
            # Same results (the old weighted per-group AUCs were off by up to 4e-9 from
            # scikit-learn; the new ones agree with it to 1e-11).
            np.testing.assert_allclose(before(), after(), rtol=1e-7, atol=1e-8)
            b = a = math.inf
            for _ in range(opts.repeat):  # interleaved: both see the same machine load
                b = min(b, _best(before, 1))
                a = min(a, _best(after, 1))
            print(f"| {name} | {label} | {b * 1e3:.3f} ms | {a * 1e3:.3f} ms | {a / b:.2f} |")
        # The whole call, never repeated on one metric (that would time cached work): the
        # first interval() of a metric freshly updated with the rows (the fold of its queue
        # included, what a reader pays after updates), and the first interval() of a fresh
        # loads(to_bytes()) (to_bytes folds the queue: the computation alone). Fresh metrics
        # are built outside the timing, every repeat.
        makers = [
            (
                "ROCAUC(exact=True).interval()",
                lambda w=weights: sm.ROCAUC(exact=True).update(y, score, sample_weight=w),
            ),
            (
                "GAUC().interval()",
                lambda w=weights: sm.GAUC().update(y, score, groups=groups, sample_weight=w),
            ),
        ]
        for name, make in makers:
            blob = make().to_bytes()
            first = loaded = math.inf
            for _ in range(min(opts.repeat, 10)):
                fresh = make()
                t0 = time.perf_counter()
                fresh.interval()
                first = min(first, time.perf_counter() - t0)
                fresh = sm.loads(blob)
                t0 = time.perf_counter()
                fresh.interval()
                loaded = min(loaded, time.perf_counter() - t0)
            print(
                f"| {name}, whole call, first after update | {label} | - | "
                f"{first * 1e3:.3f} ms | - |"
            )
            print(f"| {name}, whole call, loaded state | {label} | - | {loaded * 1e3:.3f} ms | - |")


if __name__ == "__main__":
    main()
