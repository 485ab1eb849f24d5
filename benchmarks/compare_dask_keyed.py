"""Dask's keyed metrics of one checkout, timed the way ``docs/benchmarks/streams.md`` records.

Usage: ``python benchmarks/compare_dask_keyed.py CHECKOUT [--rows N] [--users N ...]`` where
CHECKOUT is the root of a streammetrics checkout (this one, or a ``git worktree`` of an older
commit): run it once per checkout, alternating, to compare versions side by side. On a
2-process ``LocalCluster`` with 8 persisted partitions, each round times, in this order, one
process's ``GAUC().update`` of the whole table and its ``compute()``, Dask's ``ROCAUC``, Dask's
``GAUC`` and Dask's ``NDCG@10`` (the checkout's default path for each, each aggregate followed
by ``compute()`` of the metric it returns: every side does the whole job; until 0.8.8 only the
update and the aggregate were timed), and prints best / median seconds over the
rounds. Pass ``--key-parts 0`` to time a checkout's tree merge instead of its default.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("checkout")
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--users", type=int, nargs="*", default=[10_000, 1_000_000])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--key-parts", type=int, default=None)
    args = ap.parse_args()
    root = str(Path(args.checkout).resolve())
    sys.path.insert(0, root)
    os.environ["PYTHONPATH"] = root  # the workers import the same checkout
    import streammetrics  # from the checkout, before bench_engines puts this one first

    assert Path(streammetrics.__file__).resolve().is_relative_to(root)
    sys.path.insert(1, str(Path(__file__).resolve().parent))
    from bench_engines import make_frame

    # bench_engines put this checkout first on the path, which spawned workers inherit: the
    # checkout measured goes first again, or its workers would run this one's tasks.
    sys.path.insert(0, root)

    kw = {} if args.key_parts is None else {"key_parts": args.key_parts}
    for users in args.users:
        times = _rounds(make_frame(args.rows, users), args.rounds, kw)
        cells = " | ".join(f"{min(v):.2f} / {statistics.median(v):.2f}" for v in times.values())
        print(f"| {users:,} | {root} | {cells} |", flush=True)


def _rounds(frame: Any, rounds: int, kw: dict[str, Any]) -> dict[str, list[float]]:
    import dask.dataframe as dd
    import distributed

    def where() -> str:
        import streammetrics

        return str(Path(streammetrics.__file__).resolve().parents[1])

    import streammetrics as sm
    from streammetrics.dask import aggregate

    ranking = {"query_ids": "user", "relevance": "rel", "scores": "s"}
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        ddf = dd.from_pandas(frame, npartitions=8).persist()
        distributed.wait(ddf)
        workers = set(client.run(where).values())
        assert workers == {where()}, f"workers import {workers}, this process {where()}"
        aggregate(ddf, sm.GAUC(), ["y", "s", "user"], **kw)  # warm the workers
        cases = {
            # The whole job on every side: update (or aggregate) and compute().
            "one process GAUC": lambda: (
                sm.GAUC().update(frame["y"], frame["s"], frame["user"]).compute()
            ),
            "dask ROCAUC": lambda: aggregate(ddf, sm.ROCAUC(), ["y", "s"]).compute(),
            "dask GAUC": lambda: aggregate(ddf, sm.GAUC(), ["y", "s", "user"], **kw).compute(),
            "dask NDCG@10": lambda: aggregate(ddf, sm.ranking.NDCG(k=10), ranking, **kw).compute(),
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(rounds):
            for name, fn in cases.items():
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
    return times


if __name__ == "__main__":
    main()
