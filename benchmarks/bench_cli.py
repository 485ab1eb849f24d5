"""CLI throughput: ``streammetrics eval`` on a large CSV against reading it with pandas alone.

Writes an N-row prediction log (default 10M rows: y_true, y_score, y_pred, user_id) to /tmp,
then times, side by side on the same file:

* the floor: ``pandas.read_csv`` of the needed columns in the same chunks, doing nothing else
  (in a subprocess as well, so both sides pay for starting python and importing pandas);
* ``streammetrics eval`` (a subprocess, as a user runs it) with label metrics, and with score
  metrics when ROCAUC is available.

Prints rows/s and each run's time as a ratio to the floor. Usage:
``python benchmarks/bench_cli.py [--rows N] [--batch-size N]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np
import pandas as pd

import streammetrics as sm


def make(path: str, rows: int) -> None:
    rng = np.random.default_rng(0)
    chunk = 1_000_000
    with open(path, "w") as fh:
        fh.write("y_true,y_score,y_pred,user_id\n")
        for start in range(0, rows, chunk):
            n = min(chunk, rows - start)
            y = rng.integers(0, 2, n)
            s = np.clip(0.3 * y + rng.random(n) * 0.7, 0, 1).round(6)
            df = pd.DataFrame(
                {
                    "y_true": y,
                    "y_score": s,
                    "y_pred": (s >= 0.5).astype(int),
                    "user_id": rng.integers(0, 100_000, n),
                }
            )
            df.to_csv(fh, header=False, index=False)


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--batch-size", type=int, default=1_000_000)
    args = ap.parse_args()
    path = f"/tmp/streammetrics_bench_{args.rows}.csv"
    if not os.path.exists(path):
        print(f"writing {args.rows:,} rows to {path} ...", flush=True)
        make(path, args.rows)
    size = os.path.getsize(path) / 1e6

    def floor(cols: list[str]) -> None:
        # A subprocess too, so that both sides pay for starting python and importing pandas.
        code = (
            "import sys, pandas as pd\n"
            f"for c in pd.read_csv({path!r}, usecols={cols!r}, chunksize={args.batch_size}):\n"
            "    [c[k].to_numpy() for k in c]\n"
        )
        subprocess.run([sys.executable, "-c", code], check=True)

    def cli(*metric_args: str) -> None:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "streammetrics.cli",
                "eval",
                path,
                *metric_args,
                "--batch-size",
                str(args.batch_size),
            ],
            check=True,
            capture_output=True,
        )

    runs = [
        ("pandas.read_csv y_true,y_pred (floor)", lambda: floor(["y_true", "y_pred"])),
        (
            "eval accuracy f1_macro mcc",
            lambda: cli(
                "--metric",
                "accuracy",
                "--metric",
                "f1_macro",
                "--metric",
                "mcc",
                "--y-true",
                "y_true",
                "--y-pred",
                "y_pred",
            ),
        ),
    ]
    if hasattr(sm, "ROCAUC"):
        runs += [
            ("pandas.read_csv y_true,y_score (floor)", lambda: floor(["y_true", "y_score"])),
            (
                "eval roc_auc average_precision",
                lambda: cli(
                    "--metric",
                    "roc_auc",
                    "--metric",
                    "average_precision",
                    "--y-true",
                    "y_true",
                    "--y-score",
                    "y_score",
                ),
            ),
        ]
    print(f"{args.rows:,} rows, {size:.0f} MB, chunks of {args.batch_size:,}")
    base = None
    for name, fn in runs:
        if "floor" in name:
            base = timed(fn)
            print(f"{name:42s} {args.rows / base / 1e6:6.2f} M rows/s  1.00x")
        else:
            t = timed(fn)
            assert base is not None
            print(f"{name:42s} {args.rows / t / 1e6:6.2f} M rows/s  {t / base:.2f}x the floor")


if __name__ == "__main__":
    main()
