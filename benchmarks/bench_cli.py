"""CLI throughput: ``streammetrics eval`` on a large CSV against reading it with pandas alone.

Writes an N-row prediction log (default 10M rows: y_true, y_score, y_pred, user_id) to /tmp,
then times, side by side on the same file:

* the floor: ``pandas.read_csv`` of the needed columns in the same chunks, doing nothing else
  (in a subprocess as well, so both sides pay for starting python and importing pandas);
* ``streammetrics eval`` (a subprocess, as a user runs it) with label metrics, and with score
  metrics when ROCAUC is available.

Then ``streammetrics report`` against ``streammetrics eval`` on the same file with the same
metrics (goal: report <= 1.5x eval; report also draws the ROC and PR curves, the reliability
diagram and the confusion matrix and writes the page), and the time to draw a sketched ROC curve
(``streammetrics.plot.plot`` on a new figure) for streams of growing size (goal < 50 ms whatever
the size), beside scikit-learn's ``RocCurveDisplay.from_predictions`` on the raw rows (a peer
that has to keep them) and a bare ``Axes.plot`` of the same points (the floor).

Prints markdown tables of rows/s and ratios. Usage:
``python benchmarks/bench_cli.py [--rows N] [--batch-size N] [--repeats N] [--quick]``
(``--quick``: 200,000 rows, a smoke run of a few seconds; ``--repeats``: every side of the
throughput table, and report and eval, each run N times, interleaved, best of N;
``--throughput-only``: the first table alone).
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
    ap.add_argument("--quick", action="store_true", help="200,000 rows: a smoke run")
    ap.add_argument(
        "--repeats", type=int, default=3, help="runs of report and of eval (best of; default 3)"
    )
    ap.add_argument(
        "--throughput-only", action="store_true", help="only the eval-against-floor table"
    )
    args = ap.parse_args()
    if args.quick:
        args.rows = min(args.rows, 200_000)
        args.batch_size = min(args.batch_size, 50_000)
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

    def cli(*metric_args: str, command: str = "eval") -> None:
        out = ["-o", f"{path}.html"] if command == "report" else []
        subprocess.run(
            [
                sys.executable,
                "-m",
                "streammetrics.cli",
                command,
                path,
                *metric_args,
                "--batch-size",
                str(args.batch_size),
                *out,
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
    # Every run once per round, best of --repeats rounds: a busy spell of a shared machine hits
    # the floor and the CLI alike (until 0.8.8 each ran once, the floor first).
    best = dict.fromkeys((name for name, _ in runs), float("inf"))
    for _ in range(args.repeats):
        for name, fn in runs:
            best[name] = min(best[name], timed(fn))
    print(
        f"{args.rows:,} rows, {size:.0f} MB, chunks of {args.batch_size:,}; best of "
        f"{args.repeats} interleaved rounds\n"
    )
    print("| run | M rows/s | time / floor |\n| --- | ---: | ---: |")
    base = None
    for name, _ in runs:
        t = best[name]
        if "floor" in name:
            base = t
        assert base is not None
        print(f"| {name} | {args.rows / t / 1e6:.2f} | {t / base:.2f}x |")
    if args.throughput_only:
        return
    report_vs_eval(cli, args.rows, args.repeats)
    plot_times(args.quick)


def report_vs_eval(cli, rows: int, repeats: int = 3) -> None:  # type: ignore[no-untyped-def]
    """Best of ``repeats`` runs of each, interleaved (eval, report, eval, report, ...), so that
    a busy spell of a shared machine hits both sides alike."""
    columns = ["--y-true", "y_true", "--y-score", "y_score", "--y-pred", "y_pred"]
    metrics = ["--metric", "roc_auc", "--metric", "average_precision", "--metric", "accuracy"]
    evals, reports = [], []
    for _ in range(repeats):
        evals.append(timed(lambda: cli(*metrics, *columns)))
        reports.append(timed(lambda: cli(*metrics, *columns, command="report")))
    t_eval, t_report = min(evals), min(reports)
    print(
        f"\n| same file, same metrics (best of {repeats}) | s | M rows/s | time / eval |\n"
        "| --- | ---: | ---: | ---: |"
    )
    for name, t, goal in (
        ("eval roc_auc average_precision accuracy", t_eval, ""),
        ("report (same, + 4 pictures, HTML page)", t_report, " (goal <= 1.5x)"),
    ):
        print(f"| {name} | {t:.2f} | {rows / t / 1e6:.2f} | {t / t_eval:.2f}x{goal} |")


def plot_times(quick: bool) -> None:
    from matplotlib.figure import Figure

    from streammetrics.plot import plot

    try:
        from sklearn.metrics import RocCurveDisplay
    except ImportError:
        RocCurveDisplay = None
    sizes = [10_000, 100_000] if quick else [10_000, 1_000_000, 10_000_000]
    print(
        "\n| rows | plot(ROCAUC sketch) ms | floor: Axes.plot of its points ms | "
        "sklearn RocCurveDisplay ms |\n| ---: | ---: | ---: | ---: |"
    )
    rng = np.random.default_rng(1)
    for n in sizes:
        y = rng.integers(0, 2, n)
        s = 1 / (1 + np.exp(-(rng.normal(size=n) + y)))
        m = sm.ROCAUC().update(y, s)
        curve = sm.ROCCurve(drop_intermediate=False).update(y, s).compute()

        def ours(m: sm.ROCAUC = m) -> None:
            plot(m)

        def floor(curve: tuple[np.ndarray, ...] = curve) -> None:
            Figure().add_subplot().plot(curve[0], curve[1])

        def peer(y: np.ndarray = y, s: np.ndarray = s) -> None:
            RocCurveDisplay.from_predictions(y, s, ax=Figure().add_subplot())

        best = [min(timed(f) for _ in range(5)) * 1e3 for f in (ours, floor)]
        other = f"{min(timed(peer) for _ in range(3)) * 1e3:.1f}" if RocCurveDisplay else "n/a"
        print(f"| {n:,} | {best[0]:.1f} (goal < 50) | {best[1]:.1f} | {other} |")


if __name__ == "__main__":
    main()
