"""Merging many states at once, against adding the same dense arrays in numpy (the floor).

Run: ``python benchmarks/bench_merges.py`` (``--quick`` for a smaller run). Prints markdown
tables recorded in ``docs/benchmarks/streams.md``.

What ``StateDirectory.collect()``, the Spark and Dask engines and ``torch.sync`` pay on every
call: shard states, already decoded (``loads`` is not timed), folded into one with
``merge(*others)`` and with Python's ``sum()`` (a copy and one pairwise merge per shard). The
floor is the fastest plain numpy a user holding the same contents as dense arrays would write:
one ``+=`` per shard for counts (and ``np.minimum``/``np.maximum`` for the sketch's per-bucket
score range). Timings are the best of several repeats; the merged result is checked against
one metric fed every row before anything is timed.

Goals (issue 11): ``merge(*others)`` <= 3x the floor; ``sum()`` of 10,000 shard states < 0.5 s.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import streammetrics as sm


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _confusion_shards(shards: int, rows: int, labels: int, seed: int):
    rng = np.random.default_rng(seed)
    states, whole = [], sm.ConfusionMatrix()
    for _ in range(shards):
        y = rng.integers(0, labels, rows)
        p = np.where(rng.random(rows) < 0.7, y, rng.integers(0, labels, rows))
        states.append(sm.ConfusionMatrix().update(y, p))
        whole.update(y, p)
    dense = [s.compute() for s in states]  # the same contents as dense arrays

    def floor() -> None:
        acc = np.zeros_like(dense[0])
        for d in dense:
            acc += d

    return states, whole, floor


def _auc_shards(shards: int, rows: int, seed: int):
    rng = np.random.default_rng(seed)
    states, whole = [], sm.ROCAUC()
    for _ in range(shards):
        y = rng.integers(0, 2, rows)
        s = np.clip(0.3 * y + rng.normal(0.35, 0.2, rows), 0.0, 1.0)
        states.append(sm.ROCAUC().update(y, s))
        whole.update(y, s)
    size = states[0].hist.mapping.size
    dense = []
    for m in states:  # pos, neg, lo, hi on the full grid, as a numpy user would keep them
        h = m.hist
        pos, neg = np.zeros(size, np.int64), np.zeros(size, np.int64)
        lo, hi = np.full(size, np.inf), np.full(size, -np.inf)
        pos[h.keys], neg[h.keys], lo[h.keys], hi[h.keys] = h.pos, h.neg, h.lo, h.hi
        dense.append((pos, neg, lo, hi))

    def floor() -> None:
        pos, neg = np.zeros(size, np.int64), np.zeros(size, np.int64)
        lo, hi = np.full(size, np.inf), np.full(size, -np.inf)
        for p, n, a, b in dense:
            pos += p
            neg += n
            np.minimum(lo, a, out=lo)
            np.maximum(hi, b, out=hi)

    return states, whole, floor


def _merge_all(states):
    out = states[0].copy()
    out.merge(*states[1:])
    return out


def table(shards: int, rows: int, repeats: int) -> list[str]:
    out = [
        f"{shards:,} shard states of {rows:,} rows each, µs per shard (best of {repeats}):",
        "",
        "| states | `merge(*others)` | `sum()` | floor: adding the dense arrays "
        "| merge / floor | sum / floor |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    cases = [
        ("ConfusionMatrix, 100 labels", *_confusion_shards(shards, rows, 100, 1)),
        ("ROCAUC sketch", *_auc_shards(shards, rows, 2)),
    ]
    for name, states, whole, floor in cases:
        assert _merge_all(states).to_bytes() == whole.to_bytes(), name
        assert sum(states).to_bytes() == whole.to_bytes(), name
        t_merge = best_of(lambda s=states: _merge_all(s), repeats)
        t_sum = best_of(lambda s=states: sum(s), repeats)
        t_floor = best_of(floor, repeats)
        us = 1e6 / shards
        out.append(
            f"| {name} | {t_merge * us:.1f} | {t_sum * us:.1f} | {t_floor * us:.1f} | "
            f"{t_merge / t_floor:.1f}x | {t_sum / t_floor:.1f}x |"
        )
    return out


def sum_many(shards: int, repeats: int) -> list[str]:
    out = [
        f"`sum()` of {shards:,} shard states of 1,000 rows each (goal < 0.5 s):",
        "",
        "| states | `sum()` s | `merge(*others)` s |",
        "| --- | ---: | ---: |",
    ]
    for name, (states, whole, _) in [
        ("ConfusionMatrix, 100 labels", _confusion_shards(shards, 1_000, 100, 3)),
        ("ROCAUC sketch", _auc_shards(shards, 1_000, 4)),
    ]:
        assert sum(states).to_bytes() == whole.to_bytes(), name
        t_sum = best_of(lambda s=states: sum(s), repeats)
        t_merge = best_of(lambda s=states: _merge_all(s), repeats)
        out.append(f"| {name} | {t_sum:.3f} | {t_merge:.3f} |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    args = parser.parse_args()
    shards, many, repeats = (100, 1_000, 2) if args.quick else (1_000, 10_000, 5)
    print("# Merging many states\n")
    print("\n".join(table(shards, 5_000, repeats)))
    print()
    print("\n".join(sum_many(many, max(2, repeats - 2))))


if __name__ == "__main__":
    main()
