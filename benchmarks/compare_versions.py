"""Two checkouts of streammetrics side by side on the paths every release must not slow down.

    python benchmarks/compare_versions.py OLD_DIR NEW_DIR [--runs 2]

Each measurement runs in a fresh process per checkout (``PYTHONPATH`` set to it), old and new
interleaved, ``--runs`` times; each process reports its best of several repeats. Nothing but
the measured call runs inside a timed section. Prints one markdown row per path with every
run's figure, old then new, for the release notes in ``docs/benchmarks/serving.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys


def _one_row(make: str, call: str, repeats: int) -> str:
    """The body timing 20,000 one-row calls ``call`` (on ``m``, row ``i``) of ``make``, in µs."""
    return f"""
m = {make}
def measure():
    return best(lambda: [{call} for i in range(20_000)], {repeats}) / 20_000 * 1e6
"""


def _fresh_rows(make: str, call: str, data: str = "") -> str:
    """The body timing 2,000 one-row calls ``call`` (row ``i``, label ``ys[i]``) on a fresh
    ``make``, the read that folds them (``count``) timed, in µs per call; ``data`` builds any
    other column the call reads."""
    return f"""
ys = rng.integers(0, 2, 2_000).tolist()
{data}
def measure():
    def run():
        m = {make}
        for i in range(2_000):
            {call}
        m.count
    return best(run, 3) / 2_000 * 1e6
"""


def _batched(data: str, make: str, columns: str, rows: int, batch: int, repeats: int) -> str:
    """The body timing ``make`` fed ``rows`` rows of ``columns`` (arrays built by ``data``) in
    batches of ``batch``, in M rows/s."""
    sliced = ", ".join(f"{c}[a:a + {batch}]" for c in columns.split())
    return f"""{data}
def measure():
    def run():
        m = {make}
        for a in range(0, {rows}, {batch}):
            m.update({sliced})
    return {rows / 1e6} / best(run, {repeats})
"""


_GEOMETRY = _batched(
    "from streammetrics import clustering\n"
    "x, lab = rng.normal(size=(1_000_000, 8)), rng.integers(0, 10, 1_000_000)",
    "clustering.ClusterGeometry()",
    "x lab",
    1_000_000,
    100_000,
    3,
)


CASES: dict[str, str] = {
    # name (with its unit): a body defining ``measure()``, which returns the figure.
    "`Accuracy` one-row update, int labels (µs)": _one_row("sm.Accuracy()", "m.update(1, 0)", 7),
    "`Accuracy` one-row update, str labels (µs)": _one_row(
        "sm.Accuracy()", 'm.update("cat", "dog")', 7
    ),
    "`MeanSquaredError` one-row update (µs)": _one_row(
        "sm.MeanSquaredError()", "m.update(1.0, 0.5)", 7
    ),
    "`Sliced(Accuracy())` one-row update, 100 int keys (µs)": _one_row(
        "sm.Sliced(sm.Accuracy())", "m.update(1, 0, by=i % 100)", 5
    ),
    "`ROCAUC()` update, 5M rows in 100k batches (M rows/s)": _batched(
        "y = rng.random(5_000_000) < 0.3\np = np.clip(0.3 * y + 0.7 * rng.random(5_000_000), 0, 1)",
        "sm.ROCAUC()",
        "y p",
        5_000_000,
        100_000,
        5,
    ),
    "`MeanSquaredError` update, 5M rows in 100k batches (M rows/s)": _batched(
        "t, p = rng.random(5_000_000), rng.random(5_000_000)",
        "sm.MeanSquaredError()",
        "t p",
        5_000_000,
        100_000,
        5,
    ),
    "`MeanSquaredError` update, 2M rows in 10k batches (M rows/s)": _batched(
        "t, p = rng.random(2_000_000), rng.random(2_000_000)",
        "sm.MeanSquaredError()",
        "t p",
        2_000_000,
        10_000,
        7,
    ),
    "`NDCG(k=10)` complete batches of 20k rows (M rows/s)": """
from streammetrics import ranking
n = 1_000_000
q = np.repeat(np.arange(n // 20), 20)
rel, score = rng.integers(0, 4, n).astype(float), rng.random(n)
def measure():
    def run():
        m = ranking.NDCG(k=10)
        for a in range(0, n, 20_000):
            m.update(q[a:a + 20_000], rel[a:a + 20_000], score[a:a + 20_000], complete=True)
    return n / 1e6 / best(run, 5)
""",
    "`MulticlassROCAUC` `merge(*1000 shards)`, 10 classes (ms)": """
y = rng.integers(0, 10, 100_000)
p = rng.dirichlet(np.ones(10), 100_000)
shards = [sm.MulticlassROCAUC().update(y[a:a + 100], p[a:a + 100]) for a in range(0, 100_000, 100)]
def measure():
    return best(lambda: sm.MulticlassROCAUC().merge(*shards), 3) * 1e3
""",
    "`Bootstrap(ROCAUC(), 200)` with ids, 10k-row batches (k rows/s)": """
n = 200_000
y, s, ids = rng.random(n) < 0.3, rng.random(n), np.arange(n)
def measure():
    def run():
        m = sm.Bootstrap(sm.ROCAUC(), replicates=200)
        for a in range(0, n, 10_000):
            m.update(y[a:a + 10_000], s[a:a + 10_000], ids=ids[a:a + 10_000])
    return n / 1e3 / best(run, 3)
""",
    "`Bootstrap(Accuracy(), 200)` one-row update with ids, 2,000 calls on a fresh state, "
    "the read that folds them timed (µs)": _fresh_rows(
        "sm.Bootstrap(sm.Accuracy(), replicates=200)",
        "m.update(ys[i], 1, ids=ids[i])",
        'ids = [f"req-{i}" for i in range(2_000)]',
    ),
    "`Sliced(Bootstrap(Accuracy(), 200))` one-row update, 10 keys, 2,000 calls on a fresh "
    "state, the read that folds them timed (µs)": _fresh_rows(
        "sm.Sliced(sm.Bootstrap(sm.Accuracy(), replicates=200))", "m.update(ys[i], 1, by=i % 10)"
    ),
    "`SlidingWindow(Bootstrap(Accuracy(), 200), 3600, 60)` one-row update, 100 calls a "
    "second, 2,000 calls on a fresh state, the read timed (µs)": _fresh_rows(
        "sm.SlidingWindow(sm.Bootstrap(sm.Accuracy(), replicates=200), 3600, 60)",
        "m.update(ys[i], 1, timestamps=i / 100)",
    ),
    "`TopKAccuracy(k=2)` one-row update, 5 classes as a list (µs)": """
rows = rng.random((1_000, 5)).tolist()
ys = rng.integers(0, 5, 1_000).tolist()
def measure():
    def run():
        m = sm.TopKAccuracy(k=2)
        for i in range(20_000):
            m.update(ys[i % 1_000], rows[i % 1_000])
        m.count
    return best(run, 5) / 20_000 * 1e6
""",
    "`BLEU` one sentence of 12 words per call (µs)": """
from streammetrics.text import BLEU
words = "the a cat dog sat on mat quickly ran home big small red".split()
hyps = [" ".join(rng.choice(words, 12)) for _ in range(2_000)]
refs = [[" ".join(rng.choice(words, 12))] for _ in range(2_000)]
def measure():
    def run():
        m = BLEU()
        for h, r in zip(hyps, refs):
            m.update(h, r)
    return best(run, 3) / 2_000 * 1e6
""",
    "`MetricCollection(Accuracy, F1)` one-row update, weighted (µs)": _one_row(
        "sm.MetricCollection(a=sm.Accuracy(), f=sm.F1())", "m.update(1, 0, sample_weight=2.0)", 5
    ),
    "`TumblingWindows(Accuracy(), width=60)` one-row update (µs)": _one_row(
        "sm.TumblingWindows(sm.Accuracy(), width=60)", "m.update(1, 0, timestamps=i)", 5
    ),
    "`ClusterGeometry` update, 1M rows of 8 columns, 10 clusters, 100k batches (M rows/s)": (
        _GEOMETRY
    ),
    "CLI `eval` of 200k JSON Lines rows, accuracy + roc_auc (s)": """
import contextlib, io, json, os, tempfile
from streammetrics.cli import main
path = os.path.join(tempfile.mkdtemp(), "log.jsonl")
y, s = rng.integers(0, 2, 200_000).tolist(), rng.random(200_000).tolist()
with open(path, "w") as f:
    f.writelines(json.dumps({"y": a, "p": a, "s": b}) + "\\n" for a, b in zip(y, s))
args = ["eval", path, "--metric", "accuracy", "--metric", "roc_auc", "--y-true", "y",
        "--y-pred", "p", "--y-score", "s", "--json"]
def measure():
    def run():
        with contextlib.redirect_stdout(io.StringIO()):
            main(args)
    return best(run, 3)
""",
    "`pickle.dumps` of an exact `ROCAUC` of 2M distinct scores (ms)": """
import pickle
m = sm.ROCAUC(exact=True).update(rng.random(2_000_000) < 0.3, rng.random(2_000_000))
def measure():
    return best(lambda: pickle.dumps(m), 5) * 1e3
""",
}

PRELUDE = """
import time
import numpy as np
import streammetrics as sm
rng = np.random.default_rng(0)
def best(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)
"""


def run_case(checkout: str, body: str) -> float:
    code = PRELUDE + body + "\nimport json\nprint(json.dumps([measure(), sm.__file__]))\n"
    env = {**os.environ, "PYTHONPATH": checkout}
    # cwd too: ``python -c`` puts the working directory first on sys.path, ahead of PYTHONPATH,
    # so run from elsewhere, the current checkout would be measured twice.
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
    )
    value, source = json.loads(out.stdout.strip().splitlines()[-1])
    if not os.path.realpath(source).startswith(os.path.realpath(checkout) + os.sep):
        raise RuntimeError(f"measured {source}, not the checkout {checkout}")
    return float(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--only", help="run the cases whose name contains this text")
    args = parser.parse_args()
    print("| path | old | new |\n| --- | ---: | ---: |")
    for name, body in CASES.items():
        if args.only and args.only not in name:
            continue
        old, new = [], []
        for _ in range(args.runs):
            old.append(run_case(args.old, body))
            new.append(run_case(args.new, body))
        fmt = ", ".join
        print(f"| {name} | {fmt(f'{v:.3g}' for v in old)} | {fmt(f'{v:.3g}' for v in new)} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
