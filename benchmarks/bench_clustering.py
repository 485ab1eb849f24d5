"""Clustering benchmarks: ratios against a bare numpy kernel and against scikit-learn.

Run: ``python benchmarks/bench_clustering.py`` (add ``--quick`` for a smaller run). Prints
ratios (our time / baseline time), side by side on the same data; the figures recorded in
``docs/benchmarks/clustering.md`` come from this script.

1. External update: ``ClusterAgreement.update`` against a bare ``np.bincount`` contingency
   table over the same batches (the floor: no label mapping, no state).
2. External compute at 100 x 100 and 1,000 x 1,000 labels: every index of
   ``ClusterAgreement`` against the scikit-learn functions giving the same numbers, and AMI
   alone against ``adjusted_mutual_info_score`` (scikit-learn's expected-MI loop is the slow
   part: scikit-learn issue #24254). Ours is the first ``compute()`` of a freshly updated
   metric; scikit-learn's every run is kept and its range printed (interleaved rounds).
3. Internal update: ``ClusterGeometry.update`` against bare numpy per-cluster sums; CH + DB as
   a whole job (centres, updates, computes) against scikit-learn's calinski_harabasz +
   davies_bouldin scores (and, labelled as such, our compute alone from the state); the
   silhouette of the sample against scikit-learn's on the same rows.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from streammetrics.clustering import (
    AdjustedMutualInfo,
    CalinskiHarabasz,
    ClusterAgreement,
    ClusterGeometry,
    DaviesBouldin,
    Silhouette,
)


def best_of(fn: Callable[[], Any], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def timings(fns: dict[str, Callable[[], Any]], repeat: int) -> dict[str, list[float]]:
    """Every run's time of each function, ``repeat`` interleaved rounds (each function once
    per round), so a busy machine slows every side alike and the spread is visible."""
    out: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            out[name].append(time.perf_counter() - t0)
    return out


def fresh_compute(make: Callable[[], Any]) -> Callable[[], float]:
    """A timed ``compute()`` that is the first call on a metric ``make()`` builds afresh,
    outside the timing (a second call on one metric could time cached work)."""

    def run() -> float:
        m = make()
        t0 = time.perf_counter()
        m.compute()
        return time.perf_counter() - t0

    return run


def line(what: str, ours: float, base: float, base_name: str, spread: str = "") -> None:
    print(
        f"{what:<58} {ours * 1e3:9.1f} ms  vs {base_name:<22} {base * 1e3:9.1f} ms  "
        f"ratio {ours / base:8.3g}{spread}"
    )


def external_update(n: int, k: int, batch: int) -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(0, k, n)
    b = np.where(rng.random(n) < 0.5, a, rng.integers(0, k, n))

    def ours() -> None:
        m = ClusterAgreement()
        for lo in range(0, n, batch):
            m.update(a[lo : lo + batch], b[lo : lo + batch])

    def floor() -> None:
        table = np.zeros(k * k, dtype=np.int64)
        for lo in range(0, n, batch):
            table += np.bincount(a[lo : lo + batch] * k + b[lo : lo + batch], minlength=k * k)

    line(
        f"update {n:,} rows, {k}x{k} labels, batches of {batch:,}",
        best_of(ours),
        best_of(floor),
        "numpy bincount",
    )


def external_compute(k: int, n: int, sklearn_repeat: int) -> None:
    from sklearn import metrics as skm

    rng = np.random.default_rng(1)
    a = rng.integers(0, k, n)
    b = np.where(rng.random(n) < 0.5, a, rng.integers(0, k, n))
    found: list[float] = []
    ours_ami = fresh_compute(lambda: AdjustedMutualInfo().update(a, b))
    ours_all = fresh_compute(lambda: ClusterAgreement().update(a, b))
    t_ours = {"ami": [], "all": []}

    def sklearn_ami() -> None:
        found.append(skm.adjusted_mutual_info_score(a, b))

    def sklearn_all() -> None:
        skm.mutual_info_score(a, b)
        skm.normalized_mutual_info_score(a, b)
        skm.adjusted_mutual_info_score(a, b)
        skm.rand_score(a, b)
        skm.adjusted_rand_score(a, b)
        skm.fowlkes_mallows_score(a, b)
        skm.homogeneity_completeness_v_measure(a, b)

    # Interleaved rounds: ours (best of 3 first computes per round) then scikit-learn, so both
    # see the same machine; scikit-learn's every run is kept and its range printed.
    sk = timings(
        {
            "ami": sklearn_ami,
            "ours ami": lambda: t_ours["ami"].extend(ours_ami() for _ in range(3)),
            "all": sklearn_all,
            "ours all": lambda: t_ours["all"].extend(ours_all() for _ in range(3)),
        },
        sklearn_repeat,
    )

    def spread(xs: list[float]) -> str:
        if len(xs) < 2:
            return "  (scikit-learn: one run)"
        return f"  (scikit-learn runs {min(xs) * 1e3:,.0f}-{max(xs) * 1e3:,.0f} ms)"

    line(
        f"compute AMI, {k}x{k} labels, {n:,} rows",
        min(t_ours["ami"]),
        min(sk["ami"]),
        "sklearn AMI",
        spread(sk["ami"]),
    )
    line(
        f"compute all 12 indices, {k}x{k} labels, {n:,} rows",
        min(t_ours["all"]),
        min(sk["all"]),
        "sklearn (7 functions)",
        spread(sk["all"]),
    )
    got, want = AdjustedMutualInfo().update(a, b).compute(), found[0]
    print(f"    AMI ours {got:.15f}  sklearn {want:.15f}  |diff| {abs(got - want):.1e}")


def internal(n: int, d: int, k: int, batch: int) -> None:
    from sklearn import metrics as skm

    rng = np.random.default_rng(2)
    centres = rng.normal(0, 4, (k, d))
    labels = rng.integers(0, k, n)
    X = centres[labels] + rng.normal(size=(n, d))

    def ours() -> ClusterGeometry:
        m = ClusterGeometry()
        for lo in range(0, n, batch):
            m.update(X[lo : lo + batch], labels[lo : lo + batch])
        return m

    def floor() -> None:
        sums = np.zeros((k, d))
        sq = np.zeros(k)
        cnt = np.zeros(k, dtype=np.int64)
        for lo in range(0, n, batch):
            x, lab = X[lo : lo + batch], labels[lo : lo + batch]
            cnt += np.bincount(lab, minlength=k)
            for j in range(d):
                sums[:, j] += np.bincount(lab, weights=x[:, j], minlength=k)
            sq += np.bincount(lab, weights=np.einsum("ij,ij->i", x, x), minlength=k)

    line(
        f"ClusterGeometry update {n:,} rows, d={d}, k={k}",
        best_of(ours),
        best_of(floor),
        "numpy per-cluster sums",
    )

    def ours_ch_db() -> tuple[float, float]:
        # The whole job, as scikit-learn's: the centres (a pass over the rows, as DB's exact
        # mode needs them up front), both updates in batches, both computes.
        ch, db = CalinskiHarabasz(), DaviesBouldin(centers=means(X, labels, k))
        for lo in range(0, n, batch):
            ch.update(X[lo : lo + batch], labels[lo : lo + batch])
            db.update(X[lo : lo + batch], labels[lo : lo + batch])
        return ch.compute(), db.compute()

    def sklearn_ch_db() -> tuple[float, float]:
        return skm.calinski_harabasz_score(X, labels), skm.davies_bouldin_score(X, labels)

    t = timings({"ours": ours_ch_db, "sklearn": sklearn_ch_db}, 3)
    line(
        "CH + DB whole job (centres, updates, computes)",
        min(t["ours"]),
        min(t["sklearn"]),
        "sklearn CH + DB",
    )

    def states() -> tuple[Any, Any]:
        ch_db = CalinskiHarabasz().update(X, labels), DaviesBouldin(centers=means(X, labels, k))
        ch_db[1].update(X, labels)
        return ch_db

    def compute_only() -> float:
        ch_db = states()  # outside the timing
        t0 = time.perf_counter()
        for x in ch_db:
            x.compute()
        return time.perf_counter() - t0

    line(
        "CH + DB compute only, from the state (not a whole job)",
        min(compute_only() for _ in range(3)),
        min(t["sklearn"]),
        "sklearn CH + DB",
    )
    sil = Silhouette().update(X, labels)
    rows = len(sil.sample.rows)
    line(
        f"silhouette from the sample ({rows:,} rows)",
        best_of(sil.compute, 1),
        best_of(lambda: skm.silhouette_score(sil.sample.rows, sil.sample.codes), 1),
        "sklearn silhouette",
    )


def means(X: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    return np.array([X[labels == i].mean(axis=0) for i in range(k)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    args = parser.parse_args()
    n = 200_000 if args.quick else 2_000_000
    print("== external: update ==")
    external_update(n, 100, 100_000)
    external_update(n, 1000, 100_000)
    print("== external: compute ==")
    external_compute(100, 100_000, 3)
    external_compute(1000, 100_000 if args.quick else 1_000_000, 2)
    print("== internal ==")
    internal(n // 2, 8, 10, 100_000)
    try:
        import torchmetrics  # noqa: F401
    except ImportError:
        print("(torchmetrics not installed: no peer comparison)")


if __name__ == "__main__":
    main()
