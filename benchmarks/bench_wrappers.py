"""Benchmarks of the Bootstrap and Sliced wrappers, side by side with peers and a numpy floor.

Run: ``python benchmarks/bench_wrappers.py`` (``--quick`` for a smoke run of a few seconds).
Prints markdown tables of update throughput (rows/s) and ratios:

* ``Bootstrap(Accuracy(), 200)`` and ``Bootstrap(ROCAUC(), 200)`` against torchmetrics'
  ``BootStrapper(num_bootstraps=200)`` (its default Poisson sampling) on the same batches, and a
  bare-numpy Poisson bootstrap floor for accuracy (it keeps no mergeable state): one Poisson(1)
  weight per row and replicate, drawn as ``rng.integers(0, 65536, dtype=np.uint16)`` cells of a
  uint8 Poisson(1) quantile table (``rng.poisson`` into float64, which the floor used until
  0.8.14, is 5-10x slower), summed per replicate over the correct rows and over all rows. A
  second line, "Poisson-sum shortcut", draws each batch's per-replicate counts directly (a sum
  of k Poisson(1) weights is Poisson(k)): the same distribution of replicate counts with no
  per-row weights, possible only for a metric that is one proportion, and not reproducible per
  row (no ``ids``), so it is shown but not used as the floor. The AUC peer is timed in both
  torchmetrics modes, binned (``BinaryAUROC(thresholds=128)``, constant memory) and exact
  (``thresholds=None``, every row kept in each replicate), and the ratio is against the faster;
  the exact mode's state size after the run is printed (its memory cost);
* ``Bootstrap(AdjustedRandIndex(), 200)`` (resampled rows: the metric takes no weights)
  against torchmetrics' ``BootStrapper(AdjustedRandScore(), 200)`` with Poisson sampling;
* ``Sliced(ROCAUC())`` at 10, 100 (in batches of 200 k and of 1 M rows), 1,000 and 100,000
  slices (the last timed once, on one batch of 1 M rows; ``compute()`` of every slice is inside
  every timing) against a bare-numpy floor: counts in one (slice x 128 score bins x class)
  table, filled per batch by whichever of three ways is fastest at that slice count (a dense
  float64 ``np.bincount``, a dense int64 ``np.bincount``, or ``np.add.at`` into the int64 table:
  the dense ones allocate the whole table per batch, which dominates at 10,000 slices and up;
  all three run interleaved and the best is reported);
* ``Sliced(Accuracy())`` and ``Sliced(F1(average="macro"))`` (3 labels) at 100 to 100,000
  slices against a bare-numpy accuracy floor (two ``np.bincount`` per batch: each slice's
  correct and total counts).

torch runs at one thread and at its default (one per core), both timed and the faster used for
the ratios (on a quiet machine the default is its best; on a shared one, one thread can be), and
every
torchmetrics metric that takes ``validate_args`` runs with ``validate_args=False`` (its fastest
documented mode; ``AdjustedRandScore`` takes no such argument).

Timings are the best of interleaved repeats, so a busy machine slows every side alike.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import streammetrics as sm


def best_of(fns: dict[str, Any], repeats: int) -> dict[str, float]:
    """The best time of each function over ``repeats`` interleaved rounds. A value may be a
    pair ``(setup, fn)``: ``setup()`` runs before the timing of each round (a thread count)."""
    best = {k: float("inf") for k in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            if isinstance(fn, tuple):
                fn[0]()
                fn = fn[1]
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    score = 1 / (1 + np.exp(-(rng.normal(size=n) + 1.2 * y - 0.6)))
    return y, score, (score > 0.5).astype(np.int64)


def _batches(n: int, batch: int) -> list[slice]:
    return [slice(i, min(i + batch, n)) for i in range(0, n, batch)]


def bench_bootstrap(n: int, batch: int, repeats: int) -> None:
    y, score, pred = _data(n)
    ids = np.arange(n)
    parts = _batches(n, batch)

    def ours(metric: sm.Metric, x: np.ndarray, with_ids: bool) -> Callable[[], object]:
        def run() -> object:
            b = sm.Bootstrap(metric, replicates=200)
            for s in parts:
                b.update(y[s], x[s], ids=ids[s] if with_ids else None)
            return b.interval()

        return run

    # Poisson(1) quantiles on 2**16 equal cells: an index drawn as uint16 picks a weight with
    # probability within 2**-16 of Poisson(1)'s (what a numpy user builds for cheap weights).
    table = stats.poisson.ppf((np.arange(65536) + 0.5) / 65536, 1.0).astype(np.uint8)

    def numpy_floor() -> object:
        rng = np.random.default_rng(0)
        correct = np.zeros(200, dtype=np.int64)
        total = np.zeros(200, dtype=np.int64)
        for s in parts:
            w = table[rng.integers(0, 65536, (200, s.stop - s.start), dtype=np.uint16)]
            correct += w[:, y[s] == pred[s]].sum(axis=1, dtype=np.int64)
            total += w.sum(axis=1, dtype=np.int64)
        return np.quantile(correct / total, [0.025, 0.975])

    def poisson_sum() -> object:
        rng = np.random.default_rng(0)
        correct = np.zeros(200, dtype=np.int64)
        total = np.zeros(200, dtype=np.int64)
        for s in parts:
            c = int(np.count_nonzero(y[s] == pred[s]))
            a, b = rng.poisson(c, 200), rng.poisson(s.stop - s.start - c, 200)
            correct += a
            total += a + b
        return np.quantile(correct / total, [0.025, 0.975])

    fns: dict[str, Callable[[], object]] = {
        "numpy floor (accuracy)": numpy_floor,
        "Poisson-sum shortcut (accuracy, no per-row weights)": poisson_sum,
        "Bootstrap(Accuracy) ids": ours(sm.Accuracy(), pred, True),
        "Bootstrap(Accuracy) no ids": ours(sm.Accuracy(), pred, False),
        "Bootstrap(ROCAUC) ids": ours(sm.ROCAUC(), score, True),
    }
    try:
        import torch
        from torchmetrics.classification import BinaryAccuracy, BinaryAUROC
        from torchmetrics.wrappers import BootStrapper

        # torch runs at one thread and at its default (one per core), each timed in every
        # round, and the faster is reported: on a quiet machine the default was its best
        # (BootStrapper(BinaryAUROC) ran 1.5x slower on one thread), but when other jobs share
        # the two cores its threads contend and one thread can be far faster.
        threads = sorted({1, torch.get_num_threads()})
        yt, st, pt = torch.from_numpy(y), torch.from_numpy(score), torch.from_numpy(pred)

        def theirs(make: Callable[[], object], x: torch.Tensor) -> Callable[[], object]:
            def run() -> object:
                torch.manual_seed(0)
                b = BootStrapper(make(), num_bootstraps=200)
                for s in parts:
                    b.update(x[s], yt[s])
                return b.compute()

            return run

        for n_threads in threads:

            def pin(n: int = n_threads) -> None:
                torch.set_num_threads(n)

            tag = f" [{n_threads} thread{'s' * (n_threads > 1)}]"
            # validate_args=False: torchmetrics' fastest documented mode (no input checks).
            fns["torchmetrics BootStrapper(BinaryAccuracy)" + tag] = (
                pin,
                theirs(lambda: BinaryAccuracy(validate_args=False), pt),
            )
            # Both torchmetrics AUROC modes: binned (thresholds=128, constant memory, the closest
            # kin of our sketch) and exact (thresholds=None: keeps every row in each replicate,
            # 2.5x faster than binned here). The ratio is against the faster of the two.
            fns["torchmetrics BootStrapper(BinaryAUROC(128))" + tag] = (
                pin,
                theirs(lambda: BinaryAUROC(thresholds=128, validate_args=False), st),
            )
            fns["torchmetrics BootStrapper(BinaryAUROC exact)" + tag] = (
                pin,
                theirs(lambda: BinaryAUROC(thresholds=None, validate_args=False), st),
            )
    except ImportError as exc:  # the peer is optional
        print(f"(torchmetrics not available: {exc})")
    times = best_of(fns, repeats)
    try:
        import torch

        torch.set_num_threads(max(threads))  # back to the default
    except (ImportError, NameError):
        pass
    print(f"\n## Bootstrap, 200 replicates: {n:,} rows in batches of {batch:,}\n")
    print("| implementation | rows/s | vs torchmetrics (its fastest mode and thread count) |")
    print("|---|---:|---:|")

    def fastest(prefix: str) -> float | None:
        found = [t for name, t in times.items() if name.startswith(prefix)]
        return min(found) if found else None

    peer = {
        "Accuracy": fastest("torchmetrics BootStrapper(BinaryAccuracy)"),
        "ROCAUC": fastest("torchmetrics BootStrapper(BinaryAUROC"),
    }
    for name, t in times.items():
        ref = peer["ROCAUC" if ("ROCAUC" in name or "AUROC" in name) else "Accuracy"]
        ratio = f"{ref / t:.1f}x" if ref else "-"
        print(f"| {name} | {n / t:,.0f} | {ratio} |")
    floor = times["numpy floor (accuracy)"]
    for name in ("Bootstrap(Accuracy) ids", "Bootstrap(Accuracy) no ids"):
        print(f"{name}: {floor / times[name]:.2f}x the numpy floor's rate")
    if peer["ROCAUC"] is not None:
        print(
            "exact BootStrapper(BinaryAUROC) state after the run: "
            f"{_exact_state_bytes(parts):,} bytes"
        )


def _exact_state_bytes(parts: list[slice]) -> int:
    """Bytes of the tensors an exact ``BootStrapper(BinaryAUROC)`` holds after the batches (its
    200 replicates keep every resampled row: the memory its speed costs). Untimed."""
    import torch
    from torchmetrics.classification import BinaryAUROC
    from torchmetrics.wrappers import BootStrapper

    n = parts[-1].stop
    y, score, _ = _data(n)
    yt, st = torch.from_numpy(y), torch.from_numpy(score)
    torch.manual_seed(0)
    b = BootStrapper(BinaryAUROC(thresholds=None, validate_args=False), num_bootstraps=200)
    for s in parts:
        b.update(st[s], yt[s])
    return sum(
        t.numel() * t.element_size()
        for m in b.metrics
        for name in ("preds", "target")
        for t in getattr(m, name)
    )


def _sliced(y: np.ndarray, score: np.ndarray, by: np.ndarray, parts: list[slice]) -> object:
    s = sm.Sliced(sm.ROCAUC())
    for p in parts:
        s.update(y[p], score[p], by=by[p])
    return s.compute()


def _sliced_floor(
    y: np.ndarray, score: np.ndarray, by: np.ndarray, parts: list[slice], k: int, how: str
) -> object:
    """Counts per (slice, score bin, class). ``how``: "bincount" (float64 table, a dense
    ``np.bincount`` per batch), "bincount int64" (the same into an int64 table) or "add.at"
    (``np.add.at`` into the int64 table: no dense temporary per batch)."""
    counts = np.zeros(k * 128 * 2, dtype=np.float64 if how == "bincount" else np.int64)
    for p in parts:
        bins = np.minimum((score[p] * 128).astype(np.int64), 127)
        cell = (by[p] * 128 + bins) * 2 + y[p]
        if how == "add.at":
            np.add.at(counts, cell, 1)
        else:
            counts += np.bincount(cell, minlength=len(counts))
    return counts


FLOORS = ("bincount", "bincount int64", "add.at")


def bench_sliced(runs: list[tuple[int, int, int]], repeats: int) -> None:
    """``runs``: (slices, rows, batch) per line; keys uniform over the slices."""
    print("\n## Sliced(ROCAUC())\n")
    print(
        "| slices | rows | batch | Sliced rows/s | numpy floor rows/s (fastest way) "
        "| floor / Sliced |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for k, n, batch in runs:
        y, score, _ = _data(n, 1)
        parts = _batches(n, batch)
        by = np.random.default_rng(k).integers(0, k, n)
        fns: dict[str, Callable[[], object]] = {
            "ours": lambda: _sliced(y, score, by, parts),  # noqa: B023 - called in this pass
        }
        for how in FLOORS:
            fns[how] = lambda how=how: _sliced_floor(y, score, by, parts, k, how)  # noqa: B023
        t = best_of(fns, repeats)
        fastest = min(FLOORS, key=t.__getitem__)
        print(
            f"| {k:,} | {n:,} | {batch:,} | {n / t['ours']:,.0f} | {n / t[fastest]:,.0f} "
            f"({fastest}) | {t['ours'] / t[fastest]:.1f} |"
        )


def _sliced_labels(
    metric: Callable[[], sm.Metric],
    y: np.ndarray,
    pred: np.ndarray,
    by: np.ndarray,
    parts: list[slice],
) -> object:
    s = sm.Sliced(metric())
    for p in parts:
        s.update(y[p], pred[p], by=by[p])
    return s.compute()


def _accuracy_floor(
    y: np.ndarray, pred: np.ndarray, by: np.ndarray, parts: list[slice], k: int
) -> object:
    correct, total = np.zeros(k), np.zeros(k)
    for p in parts:
        correct += np.bincount(by[p], weights=y[p] == pred[p], minlength=k)
        total += np.bincount(by[p], minlength=k)
    return correct / total


def bench_sliced_labels(runs: list[tuple[int, int, int]], repeats: int) -> None:
    """``Sliced(Accuracy())`` and ``Sliced(F1(average="macro"))`` (3 classes), against a numpy
    floor for the accuracy (two ``np.bincount`` per batch); ``compute()`` inside every timing."""
    print("\n## Sliced(Accuracy()) and Sliced(F1(average='macro')), 3 classes\n")
    print("| slices | rows | batch | Accuracy rows/s | F1 macro rows/s | numpy floor rows/s |")
    print("|---:|---:|---:|---:|---:|---:|")
    for k, n, batch in runs:
        rng = np.random.default_rng(k)
        y = rng.integers(0, 3, n)
        pred = np.where(rng.random(n) < 0.7, y, rng.integers(0, 3, n))
        by = rng.integers(0, k, n)
        parts = _batches(n, batch)
        fns: dict[str, Callable[[], object]] = {
            "accuracy": lambda: _sliced_labels(sm.Accuracy, y, pred, by, parts),  # noqa: B023
            "f1": lambda: _sliced_labels(
                lambda: sm.F1(average="macro"),
                y,  # noqa: B023
                pred,  # noqa: B023
                by,  # noqa: B023
                parts,  # noqa: B023
            ),
            "floor": lambda: _accuracy_floor(y, pred, by, parts, k),  # noqa: B023
        }
        t = best_of(fns, repeats)
        print(
            f"| {k:,} | {n:,} | {batch:,} | {n / t['accuracy']:,.0f} | {n / t['f1']:,.0f} | "
            f"{n / t['floor']:,.0f} |"
        )


def bench_sliced_weighted_labels(runs: list[tuple[int, int, int]], repeats: int) -> None:
    """Weighted ``Sliced(Accuracy())`` and ``Sliced(F1(average="macro"))`` (3 classes, uniform
    weights in [0.5, 1.5)), against the weighted numpy floor (two ``np.bincount`` per batch);
    ``compute()`` inside every timing."""
    print("\n## Weighted Sliced(Accuracy()) and Sliced(F1(average='macro')), 3 classes\n")
    print("| slices | rows | batch | Accuracy rows/s | F1 macro rows/s | numpy floor rows/s |")
    print("|---:|---:|---:|---:|---:|---:|")
    for k, n, batch in runs:
        rng = np.random.default_rng(k)
        y = rng.integers(0, 3, n)
        pred = np.where(rng.random(n) < 0.7, y, rng.integers(0, 3, n))
        by = rng.integers(0, k, n)
        w = rng.uniform(0.5, 1.5, n)
        parts = _batches(n, batch)

        def ours(make: Callable[[], sm.Metric], y=y, pred=pred, by=by, w=w, parts=parts):  # type: ignore[no-untyped-def]
            def run() -> object:
                s = sm.Sliced(make())
                for p in parts:
                    s.update(y[p], pred[p], by=by[p], sample_weight=w[p])
                return s.compute()

            return run

        def floor(y=y, pred=pred, by=by, w=w, parts=parts, k=k) -> object:  # type: ignore[no-untyped-def]
            correct, total = np.zeros(k), np.zeros(k)
            for p in parts:
                correct += np.bincount(by[p], weights=w[p] * (y[p] == pred[p]), minlength=k)
                total += np.bincount(by[p], weights=w[p], minlength=k)
            return correct / total

        fns: dict[str, Callable[[], object]] = {
            "accuracy": ours(sm.Accuracy),
            "f1": ours(lambda: sm.F1(average="macro")),
            "floor": floor,
        }
        t = best_of(fns, repeats)
        print(
            f"| {k:,} | {n:,} | {batch:,} | {n / t['accuracy']:,.0f} | {n / t['f1']:,.0f} | "
            f"{n / t['floor']:,.0f} |"
        )


def bench_sliced_parts(k: int, n: int, repeats: int) -> None:
    """One ``n``-row batch into ``k`` fresh slices, and ``compute()`` of them, timed apart
    (best of ``repeats`` each): the update alone and the scoring alone."""
    y, score, _ = _data(n, 1)
    by = np.random.default_rng(k).integers(0, k, n)
    updates, computes = [], []
    for _ in range(repeats):
        s = sm.Sliced(sm.ROCAUC())
        t0 = time.perf_counter()
        s.update(y, score, by=by)
        t1 = time.perf_counter()
        s.compute()
        computes.append(time.perf_counter() - t1)
        updates.append(t1 - t0)
    print(
        f"\nSliced(ROCAUC()), {k:,} slices, one batch of {n:,} rows: update "
        f"{min(updates):.3f} s ({n / min(updates) / 1e6:.2f} M rows/s), compute "
        f"{min(computes):.3f} s"
    )


def bench_bootstrap_rows(n: int, batch: int, repeats: int) -> None:
    """``Bootstrap(AdjustedRandIndex(), 200)`` (no sample_weight: rows repeated by their
    Poisson counts) against torchmetrics' ``BootStrapper(AdjustedRandScore(), 200)`` with
    Poisson sampling, on the same batches of cluster labels."""
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 5, n)
    found = np.where(rng.random(n) < 0.7, truth, rng.integers(0, 5, n))
    ids = np.arange(n)
    parts = _batches(n, batch)

    def ours() -> None:
        m = sm.Bootstrap(sm.AdjustedRandIndex(), replicates=200, seed=0)
        for s in parts:
            m.update(truth[s], found[s], ids=ids[s])
        m.interval()

    fns: dict[str, Callable[[], object]] = {"streammetrics": ours}
    try:
        import torch
        from torchmetrics.clustering import AdjustedRandScore
        from torchmetrics.wrappers import BootStrapper
    except ImportError:
        torch = None
    if torch is not None:
        t_truth, t_found = torch.from_numpy(truth), torch.from_numpy(found)

        def theirs() -> None:
            m = BootStrapper(AdjustedRandScore(), num_bootstraps=200, sampling_strategy="poisson")
            for s in parts:
                m.update(t_found[s], t_truth[s])
            m.compute()

        fns["torchmetrics"] = theirs
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchmetrics' sparse-tensor notice
        best = best_of(fns, repeats)
    print(f"\nBootstrap by rows, ARI, 200 replicates, {n:,} rows in batches of {batch:,}\n")
    print("| side | rows/s | ratio to streammetrics |\n| --- | ---: | ---: |")
    for name, t in best.items():
        print(f"| {name} | {n / t / 1e3:,.1f} k | {best['streammetrics'] / t:.3f} |")


def bench_sliced_regression(runs: list[tuple[int, int, int]], repeats: int) -> None:
    """``Sliced`` of the regression metrics beside the numpy floor of per-slice MSE (two
    ``bincount`` per batch) and of per-slice R2 (four: the rows, ``sum t``, ``sum t**2`` and
    ``sum e**2``, the textbook sums, which lose digits to a large mean). The one-loss metrics
    (MSE, RMSE, MAE, MAPE) fold every slice at once (``wrappers._moments_pack``, 0.8.20), and
    so do R2, explained variance and Pearson (``wrappers._fit_pack``, 0.8.21), with the
    fourth-order moments R2's interval reads."""
    print("\n## Sliced regression metrics\n")
    print("| slices | rows | batch | metric | Sliced rows/s | numpy floor rows/s (MSE or R2) |")
    print("|---:|---:|---:|---|---:|---:|")
    for k, n, batch in runs:
        rng = np.random.default_rng(k)
        t = rng.normal(size=n)
        p = t + rng.normal(size=n)
        by = rng.integers(0, k, n)
        w = rng.uniform(0.5, 1.5, n)
        parts = _batches(n, batch)

        def ours(make: Callable[[], sm.Metric], weights=None, t=t, p=p, by=by, parts=parts):  # type: ignore[no-untyped-def]
            def run() -> object:
                m = sm.Sliced(make())
                for s in parts:
                    m.update(
                        t[s], p[s], by=by[s], sample_weight=None if weights is None else weights[s]
                    )
                return m

            return run

        def floor(weights=None, t=t, p=p, by=by, parts=parts, k=k):  # type: ignore[no-untyped-def]
            def run() -> object:
                sums, rows = np.zeros(k), np.zeros(k)
                for s in parts:
                    e = t[s] - p[s]
                    if weights is None:
                        sums += np.bincount(by[s], weights=e * e, minlength=k)
                        rows += np.bincount(by[s], minlength=k)
                    else:
                        sums += np.bincount(by[s], weights=weights[s] * e * e, minlength=k)
                        rows += np.bincount(by[s], weights=weights[s], minlength=k)
                return sums / rows

            return run

        def r2_floor(t=t, p=p, by=by, parts=parts, k=k):  # type: ignore[no-untyped-def]
            def run() -> object:
                rows, st, stt, see = (np.zeros(k) for _ in range(4))
                for s in parts:
                    e, ts, b = t[s] - p[s], t[s], by[s]
                    rows += np.bincount(b, minlength=k)
                    st += np.bincount(b, weights=ts, minlength=k)
                    stt += np.bincount(b, weights=ts * ts, minlength=k)
                    see += np.bincount(b, weights=e * e, minlength=k)
                return 1.0 - see / (stt - st * st / rows)

            return run

        lines = {  # name: (our update, its floor)
            "MeanSquaredError": (ours(sm.MeanSquaredError), "floor"),
            "MeanAbsoluteError": (ours(sm.MeanAbsoluteError), "floor"),
            "MeanSquaredError, weighted": (ours(sm.MeanSquaredError, w), "weighted floor"),
            "R2Score": (ours(sm.R2Score), "R2 floor"),
            "R2Score, weighted": (ours(sm.R2Score, w), "R2 floor"),
            "PearsonCorrCoef": (ours(sm.PearsonCorrCoef), "R2 floor"),
        }
        fns: dict[str, Callable[[], object]] = {name: fn for name, (fn, _) in lines.items()}
        fns["floor"], fns["weighted floor"] = floor(), floor(w)
        fns["R2 floor"] = r2_floor()
        best = best_of(fns, repeats)
        for name, (_, against) in lines.items():
            print(
                f"| {k:,} | {n:,} | {batch:,} | {name} | {n / best[name]:,.0f} "
                f"| {n / best[against]:,.0f} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument(
        "--bootstrap", action="store_true", help="only the Bootstrap(Accuracy/ROCAUC) table"
    )
    parser.add_argument(
        "--regression", action="store_true", help="only the Sliced regression metrics table"
    )
    parser.add_argument(
        "--labels",
        action="store_true",
        help="only the Sliced(Accuracy/F1) tables, unweighted and weighted",
    )
    args = parser.parse_args()
    if args.labels:
        runs = [(100, 200_000, 20_000), (1_000, 200_000, 20_000)]
        bench_sliced_labels(runs, 1 if args.quick else 5)
        bench_sliced_weighted_labels(runs, 1 if args.quick else 5)
        return
    if args.regression:
        runs = [(100, 200_000, 20_000), (1_000, 200_000, 20_000)]
        bench_sliced_regression(runs[:1] if args.quick else runs, 1 if args.quick else 5)
        return
    if args.bootstrap:
        bench_bootstrap(20_000 if args.quick else 200_000, 10_000, 1 if args.quick else 3)
        return
    if args.quick:
        bench_bootstrap(20_000, 10_000, 1)
        bench_bootstrap_rows(10_000, 5_000, 1)
        bench_sliced(
            [(10, 200_000, 100_000), (100, 200_000, 100_000), (1_000, 200_000, 100_000)], 1
        )
        bench_sliced_labels([(100, 200_000, 100_000), (1_000, 200_000, 100_000)], 1)
    else:
        bench_bootstrap(200_000, 10_000, 3)
        bench_bootstrap_rows(50_000, 10_000, 3)
        bench_sliced(
            [
                (10, 2_000_000, 200_000),
                (100, 2_000_000, 200_000),
                (100, 2_000_000, 1_000_000),
                (1_000, 2_000_000, 500_000),
                (100_000, 1_000_000, 1_000_000),
                (100_000, 4_000_000, 1_000_000),  # later batches meet held entries
                (100_000, 4_000_000, 200_000),  # a stream: 20 batches into one table
                (10_000, 4_000_000, 200_000),
            ],
            2,
        )
        bench_sliced_parts(100_000, 1_000_000, 3)
        bench_sliced_labels(
            [
                (100, 2_000_000, 200_000),
                (1_000, 2_000_000, 200_000),
                (10_000, 2_000_000, 200_000),
                (100_000, 2_000_000, 200_000),
            ],
            2,
        )
        bench_sliced_weighted_labels(
            [(100, 2_000_000, 200_000), (1_000, 2_000_000, 200_000), (10_000, 2_000_000, 200_000)],
            2,
        )


if __name__ == "__main__":
    main()
