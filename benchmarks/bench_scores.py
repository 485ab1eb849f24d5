"""Benchmarks of the binary-score metrics, each against a bare numpy floor run side by side.

Run: ``python benchmarks/bench_scores.py`` (``--quick`` for a smaller run). Prints ratios
(higher is better for "x floor" throughput ratios) and the figures recorded in
``docs/benchmarks/scores.md``. Timings are the best of several interleaved repeats, so a busy
machine slows both sides alike.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _timing import interleaved, torch_threads

import streammetrics as sm
from streammetrics.states.mappings import mapping_for
from tests.score_datasets import DATASETS


def best_of(fn, repeats: int) -> float:
    return interleaved({"fn": fn}, repeats)["fn"]


def first_call(make, method: str, repeats: int) -> float:
    """Best over ``repeats`` of the first ``method()`` call on a metric that ``make()`` builds
    afresh each repeat, outside the timing: what a reader pays after the updates (a fold of
    whatever is queued included). Timing repeated calls on one metric would measure cached
    work (folded queues, cached totals)."""
    best = float("inf")
    for _ in range(repeats):
        m = make()
        t0 = time.perf_counter()
        getattr(m, method)()
        best = min(best, time.perf_counter() - t0)
    return best


def loaded_call(metric, method: str, repeats: int) -> float:
    """Best over ``repeats`` of ``method()`` on a fresh ``loads(metric.to_bytes())`` each repeat
    (loaded outside the timing): a folded state with nothing cached, i.e. the cost of the
    computation alone (``to_bytes`` folds the queue, so the fold is not in this figure)."""
    blob = metric.to_bytes()
    best = float("inf")
    for _ in range(repeats):
        m = sm.loads(blob)
        t0 = time.perf_counter()
        getattr(m, method)()
        best = min(best, time.perf_counter() - t0)
    return best


def floor_bincount(y: np.ndarray, p: np.ndarray, batch: int) -> None:
    """The floor as a user writes it (issue 11's): 10,000 uniform bins on [0, 1], labels
    interleaved into one ``np.bincount`` per batch, fresh temporaries every batch."""
    counts = np.zeros(20_000, dtype=np.int64)
    for i in range(0, len(p), batch):
        idx = np.minimum((p[i : i + batch] * 10_000).astype(np.intp), 9_999)
        counts += np.bincount(2 * idx + y[i : i + batch], minlength=20_000)


def floor_preallocated(y: np.ndarray, p: np.ndarray, batch: int) -> None:
    """The same floor with its temporaries allocated once: the fastest plain numpy we found (a
    fresh 800 KB temporary is page-faulted in on most batches, which can halve the floor's
    speed depending on the allocator's state). Ratios are quoted against this one. The labels
    are added as they come (bool), as the issue's floor adds them: converting them to integers
    first would cost the floor a third of its speed."""
    counts = np.zeros(20_000, dtype=np.int64)
    scaled = np.empty(batch)
    idx = np.empty(batch, dtype=np.intp)
    for i in range(0, len(p), batch):
        pb = p[i : i + batch]
        m = len(pb)
        np.multiply(pb, 10_000, out=scaled[:m])
        np.copyto(idx[:m], scaled[:m], casting="unsafe")
        np.minimum(idx[:m], 9_999, out=idx[:m])
        idx[:m] <<= 1
        idx[:m] += y[i : i + batch]
        counts += np.bincount(idx[:m], minlength=20_000)


def peers(y: np.ndarray, p: np.ndarray, batch: int) -> dict[str, tuple[int, Any]]:
    """``{name: (rows, fn or (setup, fn))}`` for the peers' ROC AUC update + compute at their
    best settings, to be timed interleaved with the floor and our lines: torchmetrics and
    torcheval exact (they keep every score) on every row; binned (1,000 thresholds: an
    O(rows x thresholds) pass) on a 200,000-row prefix; river (per sample, a Python loop) on a
    20,000-row prefix. Every torch peer runs at one thread and at torch's default (one per core),
    both in every round (the thread count is set outside the timing); the faster is quoted.
    Rates are rows per second either way."""
    out: dict[str, tuple[int, Any]] = {}
    threads = torch_threads()
    if threads:
        import torch

        yt, pt = torch.from_numpy(y.astype(np.int64)), torch.from_numpy(p)

        def run_torch(make, rows):
            def go():
                m = make()
                for i in range(0, rows, batch):
                    j = min(i + batch, rows)
                    m.update(pt[i:j], yt[i:j])
                m.compute()

            return go

        makers = []
        try:
            from torchmetrics.classification import BinaryAUROC

            # validate_args=False: torchmetrics' fastest documented mode (no input checks).
            makers += [
                (
                    "torchmetrics BinaryAUROC (exact)",
                    lambda: BinaryAUROC(thresholds=None, validate_args=False),
                ),
                (
                    "torchmetrics BinaryAUROC(thresholds=1000)",
                    lambda: BinaryAUROC(thresholds=1000, validate_args=False),
                ),
            ]
        except ImportError:
            print("(torchmetrics not importable)")
        try:
            from torcheval.metrics import BinaryAUROC as TEAUROC
            from torcheval.metrics import BinaryBinnedAUROC

            makers += [
                ("torcheval BinaryAUROC (exact)", TEAUROC),
                (
                    "torcheval BinaryBinnedAUROC(threshold=1000)",
                    lambda: BinaryBinnedAUROC(threshold=1000),
                ),
            ]
        except ImportError:
            print("(torcheval not importable)")
        for name, make in makers:
            rows = len(p) if "exact" in name else min(len(p), 200_000)
            for tag, pin in threads:
                out[name + tag] = (rows, (pin, run_torch(make, rows)))
    else:
        print("(torch not importable: torchmetrics and torcheval skipped)")
    try:
        from river.metrics import ROCAUC as RiverROCAUC

        k = min(len(p), 20_000)

        def river_run():
            m = RiverROCAUC(n_thresholds=10)
            for yy, pp in zip(y[:k].tolist(), p[:k].tolist(), strict=True):
                m.update(yy, pp)
            m.get()

        out["river ROCAUC(n_thresholds=10), per sample"] = (k, river_run)
    except ImportError:
        print("(river not importable)")
    return out


def _restore_threads() -> None:
    threads = torch_threads()
    if threads:
        threads[-1][1]()  # torch's default thread count


def feed(metric, y, p, batch, *extra):
    for i in range(0, len(p), batch):
        metric.update(y[i : i + batch], p[i : i + batch], *(e[i : i + batch] for e in extra))
    return metric


def bench_update(n: int, batch: int, repeats: int) -> None:
    y, p = DATASETS["calibrated_auc75"](n, 0)
    print(f"## sketch update: {n:,} samples in batches of {batch:,}")
    logit = np.log(p / (1 - p))
    fns: dict[str, Any] = {
        "floor: np.bincount(2 * bin + y), 10k bins, as written": lambda: floor_bincount(
            y, p, batch
        ),
        "floor, temporaries preallocated": lambda: floor_preallocated(y, p, batch),
    }
    for score_type, scores in (("probability", p), ("logit", logit), ("real", logit)):
        fns[f"ROCAUC(score_type={score_type!r})"] = lambda st=score_type, s=scores: feed(
            sm.ROCAUC(score_type=st), y, s, batch
        )
    ours = list(fns)
    peer_fns = peers(y, p, batch)
    # The peers run in the same interleaved rounds as the floors and our lines.
    times = interleaved({**fns, **{k: fn for k, (_, fn) in peer_fns.items()}}, repeats)
    _restore_threads()
    t_floor = times["floor, temporaries preallocated"]
    t_written = times["floor: np.bincount(2 * bin + y), 10k bins, as written"]
    print("| update (+ compute for peers) | M rows/s | x floor | x floor as written |")
    print("| --- | ---: | ---: | ---: |")
    for name in ours:
        t = times[name]
        print(f"| {name} | {n / t / 1e6:.1f} | {t_floor / t:.2f} | {t_written / t:.2f} |")
    for name, (rows, _) in peer_fns.items():
        rate = rows / times[name]
        print(f"| {name} | {rate / 1e6:.2f} | {rate / (n / t_floor):.3f} | - |")
    t_ours = times["ROCAUC(score_type='probability')"]
    for base in sorted({k.split(" [")[0] for k in peer_fns if "exact" in k}):
        t_peer = min(t for k, t in times.items() if k.split(" [")[0] == base)
        print(
            f"ROCAUC() update / {base} update + compute (faster thread count): "
            f"{t_peer / t_ours:.1f}x"
        )
    mapping = mapping_for("probability")
    t_keys = best_of(lambda: [mapping.keys(p[i : i + batch]) for i in range(0, n, batch)], repeats)

    def log_keys():
        for i in range(0, n, batch):
            pb = p[i : i + batch]
            with np.errstate(divide="ignore"):
                z = np.log(pb / (1.0 - pb)) * 128.0
            np.clip(z, -2049, 2048, out=z)
            np.floor(z).astype(np.int64)

    t_log = best_of(log_keys, repeats)
    print(
        f"probability keys: table lookup {n / t_keys / 1e6:.1f} M/s vs np.log logit "
        f"{n / t_log / 1e6:.1f} M/s ({t_log / t_keys:.2f}x)"
    )
    t_exact = best_of(lambda: feed(sm.ROCAUC(exact=True), y, p, batch), 1)
    print(
        f"ROCAUC(exact=True) update: {n / t_exact / 1e6:8.2f} M rows/s, "
        f"{t_floor / t_exact:5.2f}x floor"
    )


def bench_compute_merge(n: int, repeats: int) -> None:
    from sklearn.metrics import average_precision_score, roc_auc_score

    y, p = DATASETS["ctr_like"](n, 1)
    print(f"\n## compute, state size, merge ({n:,} CTR-like samples)")
    auc = feed(sm.ROCAUC(), y, p, 100_000)
    ap = feed(sm.AveragePrecision(), y, p, 100_000)
    # The first compute() of a freshly fed metric, and compute() of a freshly loaded state (no
    # cached totals); repeated calls on one metric would time a cached result.
    t_auc = first_call(lambda: feed(sm.ROCAUC(), y, p, 100_000), "compute", 3)
    t_ap = first_call(lambda: feed(sm.AveragePrecision(), y, p, 100_000), "compute", 3)
    t_auc_l = loaded_call(auc, "compute", 20)
    t_ap_l = loaded_call(ap, "compute", 20)
    print(
        f"ROCAUC.compute, first call after the updates: {t_auc * 1e3:.3f} ms (on a loaded state: "
        f"{t_auc_l * 1e3:.3f} ms)"
    )
    print(
        f"AveragePrecision.compute, first call: {t_ap * 1e3:.3f} ms (on a loaded state: "
        f"{t_ap_l * 1e3:.3f} ms)"
    )
    # The same work on both sides: our update + compute from the raw rows against sklearn's one
    # call on the raw rows, interleaved (compute alone is not compared with sklearn's whole job).
    jobs = interleaved(
        {
            "ROCAUC() update + compute": lambda: feed(sm.ROCAUC(), y, p, 100_000).compute(),
            "ROCAUC(exact=True) update + compute": lambda: feed(
                sm.ROCAUC(exact=True), y, p, 100_000
            ).compute(),
            "sklearn roc_auc_score": lambda: roc_auc_score(y, p),
            "AveragePrecision() update + compute": lambda: feed(
                sm.AveragePrecision(), y, p, 100_000
            ).compute(),
            "sklearn average_precision_score": lambda: average_precision_score(y, p),
        },
        repeats,
    )
    for ours_name, sk_name in (
        ("ROCAUC() update + compute", "sklearn roc_auc_score"),
        ("ROCAUC(exact=True) update + compute", "sklearn roc_auc_score"),
        ("AveragePrecision() update + compute", "sklearn average_precision_score"),
    ):
        print(
            f"{ours_name}: {jobs[ours_name]:.3f} s; {sk_name} on the same rows "
            f"{jobs[sk_name]:.3f} s ({jobs[sk_name] / jobs[ours_name]:.1f}x)"
        )
    print(
        f"error: AUC {abs(auc.compute() - roc_auc_score(y, p)):.1e} (bound "
        f"{auc.error_bound():.1e}); AP {abs(ap.compute() - average_precision_score(y, p)):.1e}"
        f" (bound {ap.error_bound():.1e})"
    )
    blob = auc.to_bytes()
    print(f"state: {len(blob):,} bytes ({len(auc.hist):,} non-empty buckets)")
    shards = [feed(sm.ROCAUC(), y[i::100], p[i::100], 100_000) for i in range(100)]
    # The floor's 99 dense arrays are built before the timing (as in bench_merges.py): only
    # the adds are timed, as only the merges are on our side.
    dense = [np.bincount(np.arange(4098) % 4098, minlength=8196) for _ in range(100)]

    def floor_merge():
        total = dense[0].copy()
        for arr in dense[1:]:
            total += arr
        return total

    t_floor = interleaved(
        {"ours": lambda: shards[0].copy().merge(*shards[1:]), "floor": floor_merge}, repeats
    )
    t_merge, t_floor = t_floor["ours"], t_floor["floor"]
    print(
        f"merge of 100 sketch shards: {t_merge * 1e3:.2f} ms ({t_merge / 99 * 1e6:.1f} us per "
        f"merge; floor of 99 dense 8,196-bin adds {t_floor * 1e3:.2f} ms)"
    )
    t_bytes = best_of(lambda: sm.loads(blob), repeats)
    print(f"loads: {t_bytes * 1e3:.2f} ms")
    exact = feed(sm.ROCAUC(exact=True), y[:1_000_000], p[:1_000_000], 100_000)
    t_exact = loaded_call(exact, "compute", 3)
    print(
        f"exact mode at 1M samples: state {len(exact.to_bytes()):,} bytes, compute on a loaded "
        f"state {t_exact * 1e3:.1f} ms"
    )


def bench_gauc(n: int, groups: int, repeats: int) -> None:
    rng = np.random.default_rng(3)
    g = rng.integers(0, groups, n)
    y = rng.random(n) < 0.05
    p = np.clip(rng.lognormal(np.log(0.03), 0.5, n) * (1 + 0.4 * y), 0, 1)
    print(f"\n## GAUC: {n:,} rows, {groups:,} groups, batches of 100,000")
    for exact in (False, True):
        t = best_of(lambda ex=exact: feed(sm.GAUC(exact=ex), y, p, 100_000, g), repeats)
        m = feed(sm.GAUC(exact=exact), y, p, 100_000, g)
        # First compute() of a freshly fed metric (folds the queued batches), and compute() of a
        # freshly loaded (already folded) state: never a repeated call on one metric.
        t_c = first_call(lambda ex=exact: feed(sm.GAUC(exact=ex), y, p, 100_000, g), "compute", 3)
        t_cl = loaded_call(m, "compute", 3)
        size = len(m.to_bytes())
        print(
            f"GAUC(exact={exact}): update {n / t / 1e6:.2f} M rows/s; first compute "
            f"{t_c * 1e3:.1f} ms (on a loaded state {t_cl * 1e3:.1f} ms); state "
            f"{size / groups:,.0f} bytes/group; bound {m.error_bound():.1e}"
        )
    half = n // 2
    a = feed(sm.GAUC(), y[:half], p[:half], 100_000, g[:half])
    b = feed(sm.GAUC(), y[half:], p[half:], 100_000, g[half:])
    t_m = best_of(lambda: a.copy().merge(b), repeats)
    print(f"GAUC merge of two halves: {t_m * 1e3:.1f} ms")
    try:
        import pandas as pd
        from sklearn.metrics import roc_auc_score
    except ImportError:  # pragma: no cover
        return
    small = 200_000
    df = pd.DataFrame({"y": y[:small], "p": p[:small], "g": g[:small] % 2_000})

    def reference():
        parts = [
            (len(d), roc_auc_score(d.y, d.p)) for _, d in df.groupby("g") if d.y.nunique() == 2
        ]
        w = np.array([c for c, _ in parts], dtype=float)
        return float(np.dot(w, [a for _, a in parts]) / w.sum())

    def numpy_floor():
        # The fastest plain numpy we found: one lexsort by (group, score), mid-ranks of tied
        # runs within each group, Mann-Whitney U per group through np.bincount.
        yy = df.y.to_numpy().astype(np.int64)
        gs_all, ps_all = df.g.to_numpy(), df.p.to_numpy()
        order = np.lexsort((ps_all, gs_all))
        gs, ps, ys = gs_all[order], ps_all[order], yy[order]
        k = len(ps)
        new = np.empty(k, bool)
        new[0] = True
        new[1:] = (gs[1:] != gs[:-1]) | (ps[1:] != ps[:-1])
        run_id = np.cumsum(new) - 1
        run_start = np.flatnonzero(new)
        run_len = np.diff(np.append(run_start, k))
        gnew = np.empty(k, bool)
        gnew[0] = True
        gnew[1:] = gs[1:] != gs[:-1]
        gid = np.cumsum(gnew) - 1
        gstart = np.flatnonzero(gnew)
        rank = ((run_start - gstart[gid[run_start]]) + (run_len + 1) / 2.0)[run_id]
        ng = len(gstart)
        pos = np.bincount(gid, weights=ys, minlength=ng)
        cnt = np.bincount(gid, minlength=ng).astype(float)
        neg = cnt - pos
        rsum = np.bincount(gid, weights=rank * ys, minlength=ng)
        ok = (pos > 0) & (neg > 0)
        auc = (rsum[ok] - pos[ok] * (pos[ok] + 1) / 2) / (pos[ok] * neg[ok])
        return float(cnt[ok] @ auc / cnt[ok].sum())

    def ours():
        return feed(
            sm.GAUC(exact=True), df.y.to_numpy(), df.p.to_numpy(), 100_000, df.g.to_numpy()
        ).compute()

    # The GAUC / floor ratio depends on the process's allocator state: here (after the larger
    # work above has raised glibc's mmap threshold) GAUC ran 2.9-3.0x the floor; in a fresh
    # process, where each big temporary is a new page-faulted mmap, 1.4x
    # (docs/benchmarks/scores.md, 0.8.14 correction).
    values = {"pandas": reference(), "numpy floor": numpy_floor(), "GAUC(exact=True)": ours()}
    t = interleaved(
        {"pandas": reference, "numpy floor": numpy_floor, "GAUC(exact=True)": ours},
        max(repeats, 3),
    )
    print(
        f"GAUC, {len(df):,} rows / 2,000 groups (values {values}): pandas groupby + roc_auc_score "
        f"{t['pandas']:.2f} s; vectorised numpy floor {t['numpy floor']:.4f} s; "
        f"GAUC(exact=True) update + compute {t['GAUC(exact=True)']:.4f} s "
        f"({t['numpy floor'] / t['GAUC(exact=True)']:.2f}x the floor, "
        f"{t['pandas'] / t['GAUC(exact=True)']:,.0f}x the pandas loop)"
    )


def accuracy_table(n: int) -> None:
    """Actual error and certified bound per distribution and resolution (docs/accuracy.md)."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    print(f"\n## accuracy at {n:,} samples: |error| / bound")
    resolutions = (32, 128, 512)
    print(
        "| distribution | exact AUC | "
        + " | ".join(f"AUC r={r}" for r in resolutions)
        + " | exact AP | "
        + " | ".join(f"AP r={r}" for r in resolutions)
        + " |"
    )
    print("|---" * (2 * len(resolutions) + 3) + "|")
    for name, draw in DATASETS.items():
        y, p = draw(n, 21)
        exact_auc, exact_ap = roc_auc_score(y, p), average_precision_score(y, p)
        cells_auc, cells_ap = [], []
        for r in resolutions:
            auc = feed(sm.ROCAUC(resolution=r), y, p, 500_000)
            ap = feed(sm.AveragePrecision(resolution=r), y, p, 500_000)
            cells_auc.append(f"{abs(auc.compute() - exact_auc):.1e} / {auc.error_bound():.1e}")
            cells_ap.append(f"{abs(ap.compute() - exact_ap):.1e} / {ap.error_bound():.1e}")
        print(
            f"| {name} | {exact_auc:.4f} | "
            + " | ".join(cells_auc)
            + f" | {exact_ap:.4f} | "
            + " | ".join(cells_ap)
            + " |"
        )
    y, p = DATASETS["calibrated_auc75"](n, 21)
    sizes = [len(feed(sm.ROCAUC(resolution=r), y, p, 500_000).to_bytes()) for r in resolutions]
    print(
        "state bytes (calibrated_auc75): "
        + ", ".join(f"r={r}: {b:,}" for r, b in zip(resolutions, sizes, strict=True))
    )


def bench_gauc_stream(n: int, repeats: int) -> None:
    """Issue 11's GAUC figures: a 5M-row stream in batches of 100,000 at 100k and 1M groups.
    ``update`` times the updates alone (folds of the queue included as they fall due);
    ``whole job`` adds the final ``compute``, which folds what is still queued; ``compute`` is
    timed alone after 4M rows (two runs, the best)."""
    rng = np.random.default_rng(0)
    print(f"\n## GAUC stream: {n:,} rows in batches of 100,000")
    print("| groups | update M rows/s | whole job M rows/s | compute after 4M rows, s |")
    print("| ---: | ---: | ---: | ---: |")
    for groups in (100_000, 1_000_000):
        g = rng.integers(0, groups, n)
        y = rng.integers(0, 2, n)
        p = np.clip(rng.normal(0.4 + 0.2 * y, 0.2), 0, 1)
        t_update = best_of(lambda g=g, y=y, p=p: feed(sm.GAUC(), y, p, 100_000, g), repeats)
        t_job = best_of(lambda g=g, y=y, p=p: feed(sm.GAUC(), y, p, 100_000, g).compute(), repeats)
        cut = min(n, 4_000_000)
        t_compute = min(
            _timed_compute(feed(sm.GAUC(), y[:cut], p[:cut], 100_000, g[:cut])) for _ in range(2)
        )
        print(
            f"| {groups:,} | {n / t_update / 1e6:.2f} | {n / t_job / 1e6:.2f} | {t_compute:.3f} |"
        )


def _timed_compute(metric) -> float:
    t0 = time.perf_counter()
    metric.compute()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--accuracy", action="store_true", help="only the accuracy table")
    parser.add_argument("--gauc-stream", action="store_true", help="only the GAUC stream table")
    args = parser.parse_args()
    if args.accuracy:
        accuracy_table(1_000_000 if args.quick else 5_000_000)
        return
    if args.gauc_stream:
        bench_gauc_stream(1_000_000 if args.quick else 5_000_000, 2 if args.quick else 3)
        return
    n = 2_000_000 if args.quick else 10_000_000
    repeats = 2 if args.quick else 3
    bench_update(n, 100_000, repeats)
    bench_compute_merge(n, repeats)
    bench_gauc(n // 5 if args.quick else n // 2, 100_000, 2)


if __name__ == "__main__":
    main()
