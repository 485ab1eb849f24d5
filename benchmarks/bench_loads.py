"""The fixed cost of ``streammetrics.loads``: small states, and the same metrics at 10,000 rows.

Run: ``python benchmarks/bench_loads.py`` (``--quick`` for a smaller run) for this checkout;
``python benchmarks/bench_loads.py --compare OLD_DIR NEW_DIR [--runs 2]`` for two checkouts
side by side, each measured in fresh processes (``PYTHONPATH`` set to it), old and new
alternated ``--runs`` times. Prints markdown tables recorded in ``docs/benchmarks/serving.md``.

What ``StateDirectory.collect()`` pays per worker state and an engine per partition state: the
blob of each state is built once, then ``loads`` is timed alone in the loop, ``CALLS`` calls
(a fifth of them at 10,000 rows), best of ``REPEATS`` repeats, in µs per call. Every loaded
state is checked to give back its bytes before anything is timed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

CALLS, REPEATS = 2_000, 7
SIZES = (10, 10_000)
NAMES = (
    "ROCAUC()",
    "ROCAUC(exact=True)",
    "AveragePrecision()",
    "Accuracy()",
    "F1(average='macro')",
    "ConfusionMatrix()",
    "MeanSquaredError()",
    "GAUC()",
    "MetricCollection(Accuracy, F1, ConfusionMatrix)",
)


def blobs(n: int) -> dict[str, bytes]:
    """The bytes of each measured state after ``n`` rows (5 labels, scores in [0, 1], about 5
    rows per GAUC group)."""
    import streammetrics as sm

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, n)
    s = np.clip(0.3 * y + rng.normal(0.35, 0.2, n), 0.0, 1.0)
    lab = rng.integers(0, 5, n)
    pred = np.where(rng.random(n) < 0.7, lab, rng.integers(0, 5, n))
    t, p = rng.random(n), rng.random(n)
    groups = rng.integers(0, max(1, n // 5), n)
    collection = sm.MetricCollection(
        acc=sm.Accuracy(), f1=sm.F1(average="macro"), cm=sm.ConfusionMatrix()
    )
    states = [
        sm.ROCAUC().update(y, s),
        sm.ROCAUC(exact=True).update(y, s),
        sm.AveragePrecision().update(y, s),
        sm.Accuracy().update(lab, pred),
        sm.F1(average="macro").update(lab, pred),
        sm.ConfusionMatrix().update(lab, pred),
        sm.MeanSquaredError().update(t, p),
        sm.GAUC().update(y, s, groups=groups),
        collection.update(lab, pred),
    ]
    return {name: m.to_bytes() for name, m in zip(NAMES, states, strict=True)}


def measure(quick: bool) -> dict[str, float]:
    """µs per ``loads`` call of every state at every size, ``{"name @rows": µs}``."""
    import streammetrics as sm

    calls, repeats = (400, 3) if quick else (CALLS, REPEATS)
    out = {}
    for n in SIZES:
        for name, blob in blobs(n).items():
            loads = sm.loads
            assert loads(blob).to_bytes() == blob, name
            k = calls if n <= 100 else max(100, calls // 5)
            best = float("inf")
            for _ in range(repeats):
                t0 = time.perf_counter()
                for _ in range(k):
                    loads(blob)
                best = min(best, time.perf_counter() - t0)
            out[f"{name} @{n}"] = best / k * 1e6
    return out


def _in_checkout(checkout: str, quick: bool) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": checkout}
    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
        "import json, bench_loads, streammetrics; "
        f"print(json.dumps([bench_loads.measure({quick}), streammetrics.__file__]))"
    )
    # cwd: ``python -c`` puts the working directory first on sys.path, ahead of PYTHONPATH.
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=checkout, capture_output=True, text=True
    )
    if done.returncode:
        raise RuntimeError(done.stderr)
    figures, source = json.loads(done.stdout.strip().splitlines()[-1])
    if not os.path.realpath(source).startswith(os.path.realpath(checkout) + os.sep):
        raise RuntimeError(f"measured {source}, not the checkout {checkout}")
    return figures


def compare(old: str, new: str, runs: int, quick: bool) -> list[str]:
    figures: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    for _ in range(runs):
        figures["old"].append(_in_checkout(old, quick))
        figures["new"].append(_in_checkout(new, quick))
    calls, repeats = (400, 3) if quick else (CALLS, REPEATS)
    out = [
        f"`loads` µs per call, best of {repeats} x {calls:,} calls ({max(100, calls // 5):,} "
        f"at 10,000 rows) in each of {runs} fresh processes per version, old and new "
        "alternated:",
        "",
        "| state | rows | old | new | new / old |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for key in figures["new"][0]:
        name, rows = key.rsplit(" @", 1)
        o = [f[key] for f in figures["old"]]
        n = [f[key] for f in figures["new"]]
        span = lambda v: f"{min(v):.1f}" + (f"-{max(v):.1f}" if len(v) > 1 else "")  # noqa: E731
        out.append(f"| `{name}` | {int(rows):,} | {span(o)} | {span(n)} | {min(n) / min(o):.2f} |")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    parser.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"), help="two checkouts")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    print("# The fixed cost of loads\n")
    if args.compare:
        print("\n".join(compare(*args.compare, args.runs, args.quick)))
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    print("| state | rows | `loads` µs |\n| --- | ---: | ---: |")
    for key, us in measure(args.quick).items():
        name, rows = key.rsplit(" @", 1)
        print(f"| `{name}` | {int(rows):,} | {us:.1f} |")


if __name__ == "__main__":
    main()
