"""Per-call cost of a single small ``ROCAUC`` / ``AveragePrecision`` state's reads.

The score-table functions on one table (``auc_from_table``, ``delong``, ``ap_from_table``) at
a few entry counts, and the first ``compute()`` / ``interval()`` of fresh states: updated with
``--rows`` rows, and loaded from their bytes (``streammetrics.loads(m.to_bytes())``). Each line
is the best of ``--repeats`` rounds of ``--calls`` calls, in µs per call; the lines of one
round run interleaved (``_timing.interleaved``). The states are built before each round,
outside the timing (a read is kept by its state, so every call needs its own).

Same API since 0.8.22: compare versions by running it on each checkout in turn,
``PYTHONPATH=<checkout> python benchmarks/bench_small_reads.py``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import streammetrics as sm
from streammetrics.states.score_tables import ap_from_table, auc_from_table
from streammetrics.uncertainty import delong


def _table(size: int, weighted: bool, seed: int = 0) -> tuple[np.ndarray, ...]:
    """A table of ``size`` entries ascending by score, half of them spread (``lo < hi``, as a
    bucket holding several distinct scores), both classes in most entries."""
    rng = np.random.default_rng(seed)
    lo = np.arange(size) / size
    hi = np.where(rng.random(size) < 0.5, lo, lo + 0.5 / size)
    pos, neg = rng.integers(0, 5, size), rng.integers(0, 5, size)
    if weighted:
        pos, neg = pos * rng.random(size), neg * rng.random(size)
    return lo, hi, pos, neg


def _per_call(fn: Callable[[], Any], calls: int, make: Callable[[], list[Any]] | None) -> float:
    """Seconds per call of ``calls`` calls of ``fn`` (``make``: ``calls`` fresh objects, built
    untimed, each read once by ``fn``, which then takes one)."""
    if make is None:
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - t0) / calls
    objects = make()
    t0 = time.perf_counter()
    for m in objects:
        fn(m)
    return (time.perf_counter() - t0) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 1000])
    parser.add_argument("--rows", type=int, default=10)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    opts = parser.parse_args()
    lines: dict[str, tuple[Callable[..., Any], Callable[[], list[Any]] | None]] = {}
    for size in opts.sizes:
        for weighted in (False, True):
            lo, hi, pos, neg = _table(size, weighted)
            tag = f"{size} entries, {'float' if weighted else 'int'}"
            lines[f"auc_from_table, {tag}"] = (
                lambda t=(lo, hi, pos, neg): auc_from_table(*t),
                None,
            )
            lines[f"delong, {tag}"] = (lambda p=pos, n=neg: delong(p, n), None)
            lines[f"ap_from_table, {tag}"] = (lambda t=(lo, hi, pos, neg): ap_from_table(*t), None)
    rng = np.random.default_rng(1)
    y = np.arange(opts.rows) % 2  # both classes, two of each from 4 rows
    score = rng.random(opts.rows)
    for cls in (sm.ROCAUC, sm.AveragePrecision):
        blob = cls().update(y, score).to_bytes()
        for how, make in (
            ("updated", lambda c=cls: [c().update(y, score) for _ in range(opts.calls)]),
            ("loaded", lambda b=blob: [sm.loads(b) for _ in range(opts.calls)]),
        ):
            for read in ("compute", "interval"):
                name = f"{cls.__name__}().{read}(), {opts.rows} rows, {how}"
                lines[name] = (lambda m, r=read: getattr(m, r)(), make)
    best = dict.fromkeys(lines, float("inf"))
    for _ in range(opts.repeats):
        for name, (fn, make) in lines.items():
            best[name] = min(best[name], _per_call(fn, opts.calls, make))
    print(f"streammetrics {sm.__version__} ({sm.__file__})")
    print("| call | µs per call |")
    print("| --- | ---: |")
    for name, seconds in best.items():
        print(f"| {name} | {seconds * 1e6:.1f} |")


if __name__ == "__main__":
    main()
