"""Ranking throughput: update rows/s (open and complete batches) and compute time, against a bare
numpy floor (one stable argsort of a packed (query, score) key plus a bincount: the least any
exact tie-aware ranking metric must do). torchmetrics' ``RetrievalNormalizedDCG`` is timed too
when torch and torchmetrics are installed (it takes no ``validate_args``).

Every side runs once per round, best of ``--repeat`` rounds (3), so a busy machine slows every
side alike. Nothing but the metric's own work is timed: the batches (shuffled rows for the open
updates) are gathered, and torchmetrics' tensors built, before any timing. ``compute`` is the
first call on the metric the timed updates just built (a fresh metric every round).

Run: ``python benchmarks/bench_ranking.py [--quick] [--repeat R] [n_queries]`` (default 1,000,000
queries of 10 rows; ``--quick``: 50,000).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from streammetrics.ranking import MAP, MRR, NDCG, HitRate


def _time(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _floor(q, rel, score):
    """NDCG's DCG sums per query, the rows ranked by (query, score descending). One stable
    argsort of a packed float key ``q + (1 - score)`` (scores in [0, 1]; exact here: ``q`` is
    below 2**26 and the score grid is far coarser than the key's spacing), ties kept in row
    order as a stable lexsort keeps them; ``q[order]`` gathered once."""
    order = np.argsort(q + (1.0 - score), kind="stable")
    qo = q[order]
    starts = np.flatnonzero(np.r_[True, qo[1:] != qo[:-1]])
    pos = np.arange(len(q)) - np.repeat(starts, np.diff(np.r_[starts, len(q)]))
    w = (np.exp2(rel[order]) - 1) / np.log2(pos + 2)
    return np.bincount(qo, weights=w)


def _floor_lexsort(q, rel, score):
    """The floor as it was until 0.8.8 (a two-key lexsort, ``q[order]`` gathered three times):
    checked equal to ``_floor``, not timed."""
    order = np.lexsort((-score, q))
    pos = np.arange(len(q)) - np.repeat(
        np.flatnonzero(np.r_[True, q[order][1:] != q[order][:-1]]), 10
    )
    w = (np.exp2(rel[order]) - 1) / np.log2(pos + 2)
    return np.bincount(q[order], weights=w)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n_queries", nargs="?", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="50,000 queries")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n_queries = args.n_queries or (50_000 if args.quick else 1_000_000)
    rng = np.random.default_rng(0)
    q = np.repeat(np.arange(n_queries), 10)
    rel = rng.integers(0, 4, len(q)).astype(float)
    score = rng.integers(0, 20, len(q)) / 20.0
    rows = len(q)
    if not np.array_equal(_floor(q, rel, score), _floor_lexsort(q, rel, score)):
        raise AssertionError("the packed-key floor differs from the lexsort floor")
    batches = np.array_split(np.arange(rows), 100)
    perm = rng.permutation(rows)
    open_batches = [(q[perm[b]], rel[perm[b]], score[perm[b]]) for b in batches]  # untimed
    complete_batches = [(q[b], rel[b], score[b]) for b in batches]
    classes = {"NDCG": NDCG, "MAP": MAP, "MRR": MRR, "HitRate": lambda: HitRate(k=3)}
    tm_inputs = None
    try:
        import torch
        from torchmetrics.retrieval import RetrievalNormalizedDCG

        tm_inputs = (torch.tensor(score), torch.tensor(rel).long(), torch.tensor(q))
    except ImportError:
        print("torchmetrics not installed: peer comparison skipped")
    best: dict[str, float] = {}

    def keep(name: str, t: float) -> None:
        best[name] = min(best.get(name, float("inf")), t)

    for _ in range(args.repeat):
        keep("floor", _time(lambda: _floor(q, rel, score))[0])
        for name, cls in classes.items():
            m = cls()
            t_upd, _ = _time(lambda m=m: [m.update(*b) for b in open_batches])
            t_cmp, _ = _time(m.compute)  # the first compute of this fresh metric
            keep(f"{name} open update", t_upd)
            keep(f"{name} open compute", t_cmp)
            keep(f"{name} open update+compute", t_upd + t_cmp)
            c = cls()
            t_cpl, _ = _time(lambda c=c: [c.update(*b, complete=True) for b in complete_batches])
            t_cpl_c, _ = _time(c.compute)
            keep(f"{name} complete update+compute", t_cpl + t_cpl_c)
        if tm_inputs is not None:
            ts, tr, tq = tm_inputs

            def peer(ts=ts, tr=tr, tq=tq):
                tm = RetrievalNormalizedDCG()
                tm.update(ts, tr, indexes=tq)
                return tm.compute()

            keep("torchmetrics", _time(peer)[0])
    floor = best["floor"]
    print(
        f"{n_queries} queries, {rows} rows; numpy floor {rows / floor:.3e} rows/s "
        f"(best of {args.repeat} interleaved rounds; 'x floor': our time over the floor's, lower "
        "is better)"
    )
    print(
        f"{'metric':10s} {'open upd rows/s':>16s} {'compute x floor':>16s} "
        f"{'open upd+cmp x floor':>21s} {'complete upd+cmp rows/s':>24s} {'x floor':>8s}"
    )
    for name in classes:
        t_upd = best[f"{name} open update"]
        t_cmp = best[f"{name} open compute"]
        t_job = best[f"{name} open update+compute"]
        t_cpl = best[f"{name} complete update+compute"]
        print(
            f"{name:10s} {rows / t_upd:16.3e} {t_cmp / floor:16.2f} {t_job / floor:21.2f} "
            f"{rows / t_cpl:24.3e} {t_cpl / floor:8.2f}"
        )
    if "torchmetrics" in best:
        t_tm = best["torchmetrics"]
        t_open = best["NDCG open update+compute"]
        t_complete = best["NDCG complete update+compute"]
        print(
            f"torchmetrics RetrievalNormalizedDCG update+compute (one call, tensors built "
            f"beforehand): {t_tm / floor:.2f} x floor; {t_tm / t_open:.1f}x our open NDCG "
            f"update+compute, {t_tm / t_complete:.1f}x our complete NDCG update+compute"
        )


if __name__ == "__main__":
    main()
