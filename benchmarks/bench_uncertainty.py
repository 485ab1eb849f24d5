"""Cost of ``interval()`` per metric at 1k, 1M and ~100M-row streams (goal: <= 1 ms at any size).

``interval()`` reads only the state, so its cost follows the state's size (buckets, distinct
scores, labels, groups), not the rows seen. The large streams are built as a 1M-row state merged
with itself (doubling) until it holds ~100M rows (2**7 * 1M = 134M): the same state a 134M-row
stream of those values gives, built in seconds. Exact-mode AUC keeps its 1M distinct scores
(a real 100M-distinct-score stream would hold 2.4 GB).

Beside it, a bare-numpy floor: the same interval computed from the raw rows, as a user without
a mergeable state must (sort the scores for DeLong's placements, one pass for the moments),
for the sizes whose rows fit in memory (1k, 1M). Peers (torchmetrics, torcheval, river) have no
closed-form interval to compare with; torchmetrics' ``BootStrapper`` is measured by the
``Bootstrap`` rows (added to this file by the ``slices`` branch).

Three timings of ``interval()`` (never a best-of of repeated calls on one metric, which would
time cached work: a folded queue, cached totals): "first call" is the first ``interval()`` of a
metric freshly fed its rows (rebuilt outside the timing each repeat, so a fold of the queued
batches is included: what a reader pays after updates; streams of up to 1M rows); "loaded" is
the first ``interval()`` of a fresh ``loads(to_bytes())`` each repeat (``to_bytes`` folds the
queue, so this is the interval from a folded state with nothing cached: the cost of the
computation alone, at every size); "repeated" is a second call on one metric, for reference.

Run: ``python benchmarks/bench_uncertainty.py`` (a few minutes) or ``--quick`` (seconds: 1k
and 100k rows, fewer repeats). Prints a markdown table. To add a measurement, write one
function ``(rows, repeat) -> Row`` and list it in ``MEASUREMENTS``.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special, stats

import streammetrics as sm
from streammetrics import ranking

BASE_ROWS = 1_000_000
BATCH = 100_000


@dataclass
class Row:
    name: str
    rows: int
    seconds: float  # the first interval() on a freshly loaded state, best of `repeat`
    floor: float | None  # the same interval from the raw rows (bare numpy), when measured
    first: float | None  # the first interval() after the updates (a fold included), <= 1M rows
    repeated: float  # interval() called again on one metric (cached work: for reference only)


def _best(fn: Callable[[], Any], repeat: int) -> float:
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _state(make: Callable[[], sm.Metric], draw: Callable[[Any, int], tuple], rows: int) -> Any:
    """A metric holding ``rows`` rows (or the nearest 1M * 2**k above, by self-merges)."""
    rng = np.random.default_rng(0)
    m = make()
    base = min(rows, BASE_ROWS)
    for start in range(0, base, BATCH):
        args, kwargs = draw(rng, min(BATCH, base - start))
        m.update(*args, **kwargs)
    while m.count < rows:
        m.merge(m)
    return m


# -- data -------------------------------------------------------------------------------------


def _scores(rng: Any, n: int) -> tuple:
    y = rng.integers(0, 2, n)
    return (y, stats.norm.cdf(rng.normal(y * 1.0, 1.0))), {}


def _labels(rng: Any, n: int) -> tuple:
    y = rng.integers(0, 10, n)
    return (y, np.where(rng.random(n) < 0.7, y, rng.integers(0, 10, n))), {}


def _regression(rng: Any, n: int) -> tuple:
    t = rng.normal(size=n)
    return (t, t + rng.normal(size=n)), {}


def _queries(rng: Any, n: int) -> tuple:
    q = np.arange(n) // 10
    rel = rng.integers(0, 3, n).astype(float)
    return (q + rng.integers(0, 1 << 40), rel, rel + rng.normal(size=n)), {"complete": True}


def _multiclass(rng: Any, n: int) -> tuple:
    y = rng.integers(0, 5, n)
    z = rng.normal(size=(n, 5))
    z[np.arange(n), y] += 1.0
    return (y, stats.norm.cdf(z)), {}


def _grouped(rng: Any, n: int) -> tuple:
    (y, s), _ = _scores(rng, n)
    return (y, s), {"groups": rng.integers(0, 10_000, n)}


# -- floors: the interval from raw rows --------------------------------------------------------


def _floor_delong(y: np.ndarray, s: np.ndarray) -> tuple[float, float]:
    order = np.argsort(s, kind="stable")
    ss, yy = s[order], y[order]
    _, start = np.unique(ss, return_index=True)
    pos = np.add.reduceat(yy, start).astype(float)
    neg = np.diff(np.r_[start, len(ss)]) - pos
    big_p, big_n = pos.sum(), neg.sum()
    v10 = (np.cumsum(neg) - neg + neg / 2) / big_n
    v01 = (big_p - np.cumsum(pos) + pos / 2) / big_p
    auc = pos @ v10 / big_p
    var = (pos @ (v10 - auc) ** 2) / (big_p - 1) / big_p
    var += (neg @ (v01 - auc) ** 2) / (big_n - 1) / big_n
    half = 1.959963984540054 * math.sqrt(var)
    return auc - half, auc + half


def _floor_mean(x: np.ndarray) -> tuple[float, float]:
    """Student-t interval of the mean, the quantile from ``scipy.special.stdtrit`` as the
    library takes it (``scipy.stats.t.ppf`` spends most of its ~40 us on argument handling:
    until 0.8.14 this floor called it, which made the floor look 3-4x slower at 1k rows)."""
    m, s = x.mean(), x.std(ddof=1)
    half = special.stdtrit(len(x) - 1, 0.975) * s / math.sqrt(len(x))
    return m - half, m + half


def _floor_wilson(correct: np.ndarray) -> tuple[float, float]:
    """Wilson's score interval of a proportion from the raw rows: the kind of interval
    ``Accuracy.interval()`` gives (until 0.8.14 the floor gave a t interval of the mean)."""
    n = len(correct)
    p = np.count_nonzero(correct) / n
    z = special.ndtri(0.975)
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return centre - half, centre + half


# -- measurements (one function each) ----------------------------------------------------------


def _measure(
    name: str,
    make: Callable[[], sm.Metric],
    draw: Callable[[Any, int], tuple],
    rows: int,
    repeat: int,
    floor: Callable[[tuple], Any] | None = None,
) -> Row:
    m = _state(make, draw, rows)
    blob = m.to_bytes()
    seconds = math.inf
    for _ in range(repeat):
        fresh = sm.loads(blob)  # outside the timing
        t0 = time.perf_counter()
        fresh.interval()
        seconds = min(seconds, time.perf_counter() - t0)
    first = None
    floor_s = None
    if rows <= BASE_ROWS:
        # The first call and the raw-row floor are interleaved: one of each per round.
        args, _ = draw(np.random.default_rng(0), rows)
        first = floor_s = math.inf
        for _ in range(min(repeat, 5) if floor is None else repeat):
            fed = _state(make, draw, rows)  # outside the timing
            t0 = time.perf_counter()
            fed.interval()
            first = min(first, time.perf_counter() - t0)
            if floor is not None:
                t0 = time.perf_counter()
                floor(args)
                floor_s = min(floor_s, time.perf_counter() - t0)
        if floor is None:
            floor_s = None
    m.interval()
    repeated = _best(m.interval, repeat)
    return Row(name, m.count, seconds, floor_s, first, repeated)


def auc_sketch(rows: int, repeat: int) -> Row:
    return _measure("ROCAUC()", sm.ROCAUC, _scores, rows, repeat, lambda a: _floor_delong(*a))


def auc_exact(rows: int, repeat: int) -> Row:
    make = lambda: sm.ROCAUC(exact=True)  # noqa: E731
    return _measure("ROCAUC(exact=True)", make, _scores, rows, repeat, lambda a: _floor_delong(*a))


def average_precision(rows: int, repeat: int) -> Row:
    return _measure("AveragePrecision()", sm.AveragePrecision, _scores, rows, repeat)


def gauc(rows: int, repeat: int) -> Row:
    return _measure("GAUC() 10k groups", sm.GAUC, _grouped, rows, repeat)


def accuracy(rows: int, repeat: int) -> Row:
    floor = lambda a: _floor_wilson(a[0] == a[1])  # noqa: E731
    return _measure("Accuracy (10 labels)", sm.Accuracy, _labels, rows, repeat, floor)


def f1_macro(rows: int, repeat: int) -> Row:
    make = lambda: sm.F1(average="macro")  # noqa: E731
    return _measure("F1(macro, 10 labels)", make, _labels, rows, repeat)


def kappa(rows: int, repeat: int) -> Row:
    return _measure("CohenKappa (10 labels)", sm.CohenKappa, _labels, rows, repeat)


def mse(rows: int, repeat: int) -> Row:
    floor = lambda a: _floor_mean((a[0] - a[1]) ** 2)  # noqa: E731
    return _measure("MeanSquaredError", sm.MeanSquaredError, _regression, rows, repeat, floor)


def pearson(rows: int, repeat: int) -> Row:
    return _measure("PearsonCorrCoef", sm.PearsonCorrCoef, _regression, rows, repeat)


def r2(rows: int, repeat: int) -> Row:
    return _measure("R2Score", sm.R2Score, _regression, rows, repeat)


def explained_variance(rows: int, repeat: int) -> Row:
    return _measure("ExplainedVariance", sm.ExplainedVariance, _regression, rows, repeat)


def multiclass_auc(rows: int, repeat: int) -> Row:
    return _measure("MulticlassROCAUC() 5 classes", sm.MulticlassROCAUC, _multiclass, rows, repeat)


def log_loss(rows: int, repeat: int) -> Row:
    return _measure("LogLoss", sm.LogLoss, _scores, rows, repeat)


def ndcg(rows: int, repeat: int) -> Row:
    return _measure("NDCG(k=10), folded queries", ranking.NDCG, _queries, rows, repeat)


MEASUREMENTS: list[Callable[[int, int], Row]] = [
    auc_sketch,
    auc_exact,
    average_precision,
    gauc,
    multiclass_auc,
    accuracy,
    f1_macro,
    kappa,
    mse,
    pearson,
    r2,
    explained_variance,
    log_loss,
    ndcg,
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1k and 100k rows, fewer repeats")
    opts = parser.parse_args()
    sizes = (1_000, 100_000) if opts.quick else (1_000, 1_000_000, 100_000_000)
    repeat = 10 if opts.quick else 20
    print(
        "| metric | rows | interval(), first call after updates | interval(), loaded state "
        "| repeated call (cached) | from raw rows (numpy) | first / raw rows |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for measure in MEASUREMENTS:
        for rows in sizes:
            r = measure(rows, repeat)
            floor = "-" if r.floor is None else f"{r.floor * 1e3:.3f} ms"
            first = "-" if r.first is None else f"{r.first * 1e3:.3f} ms"
            ratio = "-" if r.floor is None or r.first is None else f"{r.first / r.floor:.3g}"
            print(
                f"| {r.name} | {r.rows:,} | {first} | {r.seconds * 1e3:.3f} ms | "
                f"{r.repeated * 1e3:.3f} ms | {floor} | {ratio} |"
            )


if __name__ == "__main__":
    main()
