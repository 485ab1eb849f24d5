"""Reads of a served state: a large state updated with a small batch, then read, again and again.

    python benchmarks/bench_served_reads.py [--rows 1000000] [--groups 10000] [--rounds 40]

A model server updates its metrics per request (or per small batch) and serves a value and an
interval between them, so what it pays is the read *after a change*, on a state that already
holds many rows. The first read of an unchanged or freshly loaded state is another figure
(``bench_uncertainty.py``); here each metric is built from ``--rows`` rows and read once, then
each round updates it with a batch of 1, 100 or 1,000 rows (outside the timing) and times the
``interval()`` that follows. Reported per batch size: median, 90th percentile and largest read,
in ms. The floor is the numpy a user would write to get the same value from the raw rows kept
in memory (GAUC: one sort by (group, score) and per-group rank sums; the last row only,
as it is O(rows) whatever the change).

Run it under two checkouts (``PYTHONPATH=<checkout>``) to compare versions; nothing else runs
inside a timed section.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import streammetrics as sm


def _gauc_floor(y: np.ndarray, s: np.ndarray, g: np.ndarray) -> float:
    """GAUC (impressions-weighted) from raw rows: one lexsort, average ranks of ties by run."""
    order = np.lexsort((s, g))
    gs, ss, ys = g[order], s[order], y[order]
    new = np.ones(len(gs), bool)
    new[1:] = (gs[1:] != gs[:-1]) | (ss[1:] != ss[:-1])
    run = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    first_of_group = np.ones(len(gs), bool)
    first_of_group[1:] = gs[1:] != gs[:-1]
    group = np.cumsum(first_of_group) - 1
    group_start = np.flatnonzero(first_of_group)
    rank_lo = starts - group_start[group[starts]]
    lengths = np.diff(np.append(starts, len(gs)))
    avg_rank = (rank_lo + (lengths + 1) / 2.0)[run]  # 1-based within the group
    pos = np.bincount(group, weights=ys)
    size = np.bincount(group)
    neg = size - pos
    rank_sum = np.bincount(group, weights=avg_rank * ys)
    ok = (pos > 0) & (neg > 0)
    auc = (rank_sum[ok] - pos[ok] * (pos[ok] + 1) / 2) / (pos[ok] * neg[ok])
    return float(np.dot(size[ok], auc) / size[ok].sum())


def _served(
    name: str, make: Callable[[], Any], update: Callable[[Any, int], None], rounds: int
) -> None:
    for batch in (1, 100, 1000):
        m = make()
        m.interval()
        times = []
        for _ in range(rounds):
            update(m, batch)
            t0 = time.perf_counter()
            m.interval()
            times.append(time.perf_counter() - t0)
        ms = np.array(times) * 1e3
        print(
            f"| {name} | {batch:,} | {np.median(ms):.3f} | {np.percentile(ms, 90):.3f} "
            f"| {ms.max():.3f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=40)
    opts = parser.parse_args()
    rng = np.random.default_rng(0)
    n, groups = opts.rows, opts.groups
    y, s, g = rng.integers(0, 2, n), rng.random(n), rng.integers(0, groups, n)

    def batch_rows(k: int) -> tuple[np.ndarray, ...]:
        return rng.integers(0, 2, k), rng.random(k), rng.integers(0, groups, k)

    def gauc(**config: Any) -> Callable[[], Any]:
        def make() -> Any:
            m = sm.GAUC(**config)
            m.update(y, s, g)
            return m

        return make

    def scores(cls: type, **config: Any) -> Callable[[], Any]:
        def make() -> Any:
            m = cls(**config)
            m.update(y, s)
            return m

        return make

    def grouped_update(m: Any, k: int) -> None:
        m.update(*batch_rows(k))

    def scored_update(m: Any, k: int) -> None:
        m.update(*batch_rows(k)[:2])

    print(f"{sm.__version__}: {n:,} rows held, {groups:,} groups; interval() after each update, ms")
    print("| state | rows per update | median | 90th pct | largest |")
    print("| --- | ---: | ---: | ---: | ---: |")
    _served(f"GAUC(), {groups:,} groups", gauc(), grouped_update, opts.rounds)
    _served(f"GAUC(exact=True), {groups:,} groups", gauc(exact=True), grouped_update, opts.rounds)
    _served("ROCAUC()", scores(sm.ROCAUC), scored_update, opts.rounds)
    _served("ROCAUC(exact=True)", scores(sm.ROCAUC, exact=True), scored_update, opts.rounds)
    _served("AveragePrecision()", scores(sm.AveragePrecision), scored_update, opts.rounds)
    floor = []
    for _ in range(5):
        t0 = time.perf_counter()
        _gauc_floor(y, s, g)
        floor.append(time.perf_counter() - t0)
    print(f"numpy floor, GAUC of the {n:,} raw rows: {min(floor) * 1e3:.1f} ms (best of 5)")


if __name__ == "__main__":
    main()
