"""Ranking throughput: update rows/s (open and complete batches) and compute time at 1M
queries, against a bare numpy floor (one lexsort of the rows by query and score plus a
bincount: the least any exact tie-aware ranking metric must do). torchmetrics' retrieval
metrics are timed too when torch and torchmetrics are installed.

Run: ``python benchmarks/bench_ranking.py [--quick] [n_queries]`` (default 1,000,000 queries of
10 rows; ``--quick``: 50,000).
"""

from __future__ import annotations

import sys
import time

import numpy as np

from streammetrics.ranking import MAP, MRR, NDCG, HitRate


def _time(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _floor(q, rel, score):
    order = np.lexsort((-score, q))
    pos = np.arange(len(q)) - np.repeat(
        np.flatnonzero(np.r_[True, q[order][1:] != q[order][:-1]]), 10
    )
    w = (np.exp2(rel[order]) - 1) / np.log2(pos + 2)
    return np.bincount(q[order], weights=w).mean()


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--quick"]
    n_queries = int(args[0]) if args else (50_000 if "--quick" in sys.argv else 1_000_000)
    rng = np.random.default_rng(0)
    q = np.repeat(np.arange(n_queries), 10)
    rel = rng.integers(0, 4, len(q)).astype(float)
    score = rng.integers(0, 20, len(q)) / 20.0
    rows = len(q)
    floor, _ = _time(lambda: _floor(q, rel, score))
    print(f"{n_queries} queries, {rows} rows; numpy floor {rows / floor:.3e} rows/s")
    print(
        f"{'metric':12s} {'open upd rows/s':>16s} {'compute x floor':>16s} "
        f"{'complete rows/s':>16s} {'x floor':>8s}"
    )
    batches = np.array_split(np.arange(rows), 100)
    perm = rng.permutation(rows)
    for cls in (NDCG, MAP, MRR, lambda: HitRate(k=3)):
        m = cls()
        t_upd, _ = _time(
            lambda m=m: [m.update(q[perm[b]], rel[perm[b]], score[perm[b]]) for b in batches]
        )
        t_cmp, _ = _time(m.compute)
        c = cls()
        t_cpl, _ = _time(
            lambda c=c: [c.update(q[b], rel[b], score[b], complete=True) for b in batches]
        )
        name = type(m).__name__
        print(
            f"{name:12s} {rows / t_upd:16.3e} {t_cmp / floor:16.2f} {rows / t_cpl:16.3e} "
            f"{t_cpl / floor:8.2f}"
        )
    try:
        import torch
        from torchmetrics.retrieval import RetrievalNormalizedDCG
    except ImportError:
        print("torchmetrics not installed: peer comparison skipped")
        return
    tm = RetrievalNormalizedDCG()
    t_tm, _ = _time(
        lambda: (
            tm.update(torch.tensor(score), torch.tensor(rel).long(), indexes=torch.tensor(q)),
            tm.compute(),
        )
    )
    print(f"torchmetrics RetrievalNormalizedDCG update+compute: {t_tm / floor:.2f} x floor")


if __name__ == "__main__":
    main()
