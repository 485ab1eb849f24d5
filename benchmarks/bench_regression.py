"""Regression update throughput against the fastest plain numpy floor and the peers.

Run: ``python benchmarks/bench_regression.py`` (``--quick`` for a smoke run). Every case feeds
the same float64 batches, best of ``repeats`` runs, update + compute. The floors are what a numpy
user would write per batch, in float64 (raw sums: numerically unsafe, which is why the metrics
do more):

* MSE: ``e = t - p; e @ e; e.sum()``
* R2: ``e = t - p; e @ e; t.sum(); t @ t``
* Pearson: ``t.sum(); p.sum(); t @ t; p @ p; t @ p``
* RegressionReport: ``e = t - p; e @ e; e.sum(); np.abs(e).sum(); t.sum(); t @ t``

For 2-D ``(n, d)`` targets each floor first copies its arrays transposed (into buffers
allocated once, inside the timing) and then reduces rows (``einsum("ij,ij->i")``,
``sum(axis=1)``): until 0.8.14 it reduced the C-ordered columns in place
(``einsum("ij,ij->j")``), several times slower, which flattered the 2-D ratios. The floor and
streammetrics run interleaved (each once per round, best of ``repeats``). Peers at their best
settings, side by side on the same batches: torchmetrics and torcheval (float64 tensors shared
with numpy), each timed with one thread and with torch's default (one per core: its elementwise
kernels split batches of more than 32k values across threads), the better one reported with its
thread count; and river (per sample, a Python loop: on a 20,000-row prefix). Prints a markdown
table of M rows/s and ``x floor`` (floor time / our time: 1.0 is as fast as the floor, higher
is better).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _timing import interleaved  # (this folder: the script's own)

from streammetrics.regression import MeanSquaredError, PearsonCorrCoef, R2Score, RegressionReport


def _best(fn: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


_SCRATCH: dict[str, np.ndarray] = {}


def _scratch(key: str, shape: tuple[int, ...]) -> np.ndarray:
    a = _SCRATCH.get(key)
    if a is None or a.shape != shape:
        a = _SCRATCH[key] = np.empty(shape)
    return a


def _diff(t: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``t - p``; for 2-D batches into a buffer allocated once (see ``_cols``)."""
    return t - p if t.ndim == 1 else np.subtract(t, p, out=_scratch("diff", t.shape))


def _cols(a: np.ndarray, key: str) -> np.ndarray:
    """A 2-D ``(n, d)`` batch as ``d`` contiguous rows (one transposed copy per batch): column
    reductions of a C-ordered ``(n, d)`` array (``einsum("ij,ij->j")``, ``sum(axis=0)``) are
    several times slower than row reductions of its transpose. The copy goes into a buffer
    allocated once: a fresh 3.2 MB temporary per batch, freed at the top of the heap, is handed
    back to the OS and page-faulted in again by the next batch, which cost this floor 4x (the
    fastest plain numpy, like ``bench_scores.py``'s preallocated floor, avoids that). 1-D
    batches are returned as they are."""
    if a.ndim == 1:
        return a
    out = _scratch(key, a.shape[::-1])
    np.copyto(out, a.T)
    return out


def _dot(a: np.ndarray, b: np.ndarray) -> Any:
    return a @ b if a.ndim == 1 else np.einsum("ij,ij->i", a, b)


FLOORS: dict[str, Callable[[np.ndarray, np.ndarray], None]] = {}


def _floor(name: str):
    def register(fn: Callable[[np.ndarray, np.ndarray], None]):
        FLOORS[name] = fn
        return fn

    return register


@_floor("MeanSquaredError")
def _mse(t: np.ndarray, p: np.ndarray) -> None:
    e = _cols(_diff(t, p), "e")
    _dot(e, e)
    e.sum(axis=-1)


@_floor("R2Score")
def _r2(t: np.ndarray, p: np.ndarray) -> None:
    e = _cols(_diff(t, p), "e")
    t = _cols(t, "t")
    _dot(e, e)
    t.sum(axis=-1)
    _dot(t, t)


@_floor("PearsonCorrCoef")
def _pearson(t: np.ndarray, p: np.ndarray) -> None:
    t, p = _cols(t, "t"), _cols(p, "p")
    t.sum(axis=-1)
    p.sum(axis=-1)
    _dot(t, t)
    _dot(p, p)
    _dot(t, p)


@_floor("RegressionReport")
def _report(t: np.ndarray, p: np.ndarray) -> None:
    e = _cols(_diff(t, p), "e")
    t = _cols(t, "t")
    _dot(e, e)
    e.sum(axis=-1)
    (np.abs(e) if e.ndim == 1 else np.abs(e, out=_scratch("abs", e.shape))).sum(axis=-1)
    t.sum(axis=-1)
    _dot(t, t)


def _peers(name: str, outputs: int) -> list[tuple[str, Callable[[], Any]]]:
    """(label, factory) of torch peers for one metric; empty where a peer lacks it."""
    out: list[tuple[str, Callable[[], Any]]] = []
    try:
        import torchmetrics.regression as tm

        tm_classes = {
            "MeanSquaredError": lambda: tm.MeanSquaredError(num_outputs=outputs),
            "R2Score": lambda: (
                tm.R2Score(multioutput="raw_values") if outputs > 1 else tm.R2Score()
            ),
            "PearsonCorrCoef": lambda: tm.PearsonCorrCoef(num_outputs=outputs),
        }
        if name in tm_classes:
            out.append((f"torchmetrics {name}", tm_classes[name]))
    except ImportError:
        print("(torchmetrics not importable)")
    try:
        import torcheval.metrics as te

        te_classes = {
            "MeanSquaredError": lambda: te.MeanSquaredError(
                multioutput="raw_values" if outputs > 1 else "uniform_average"
            ),
            "R2Score": lambda: te.R2Score(
                multioutput="raw_values" if outputs > 1 else "uniform_average"
            ),
        }
        if name in te_classes:
            out.append((f"torcheval {name}", te_classes[name]))
    except ImportError:
        print("(torcheval not importable)")
    return out


def _river(name: str) -> Callable[[], Any] | None:
    try:
        from river import metrics
    except ImportError:
        print("(river not importable)")
        return None
    return {"MeanSquaredError": metrics.MSE, "R2Score": metrics.R2}.get(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run (fewer rows)")
    parser.add_argument("--only-2d", action="store_true", help="only the (100k, 4) batches")
    args = parser.parse_args()
    repeats = 2 if args.quick else 5
    scale = 10 if args.quick else 1
    try:
        import torch

        thread_counts = sorted({1, torch.get_num_threads()})
    except ImportError:
        torch = None  # type: ignore[assignment]
        thread_counts = []
    rng = np.random.default_rng(0)
    print("| case | M rows/s | x floor |")
    print("| --- | ---: | ---: |")
    cases = (((100_000,), 50), ((10_000,), 200), ((100_000, 4), 20))
    for shape, n_batches in cases[2:] if args.only_2d else cases:
        n_batches = max(2, n_batches // scale)
        batches = []
        for _ in range(n_batches):
            t = rng.normal(size=shape) + 1e6
            batches.append((t, t + rng.normal(size=shape)))
        rows = shape[0] * n_batches
        outputs = shape[1] if len(shape) > 1 else 1
        tag = f"{shape} x{n_batches}"
        tensors = [(torch.from_numpy(p), torch.from_numpy(t)) for t, p in batches] if torch else []
        for cls in (MeanSquaredError, R2Score, PearsonCorrCoef, RegressionReport):
            name = cls.__name__
            fl = FLOORS[name]

            def ours(cls=cls, bs=batches):
                m = cls()
                for t, p in bs:
                    m.update(t, p)
                m.compute()

            pair = interleaved(
                {"floor": lambda fl=fl, bs=batches: [fl(t, p) for t, p in bs], "ours": ours},
                repeats,
            )
            floor, took = pair["floor"], pair["ours"]
            print(f"| floor {name} {tag} | {rows / floor / 1e6:.1f} | 1.00 |")
            print(f"| streammetrics {name} {tag} | {rows / took / 1e6:.1f} | {floor / took:.2f} |")
            for label, make in _peers(name, outputs):

                def peer(make=make, ts=tensors):
                    m = make()
                    for p_t, t_t in ts:
                        m.update(p_t, t_t)
                    m.compute()

                timed = []
                for threads in thread_counts:
                    torch.set_num_threads(threads)
                    timed.append((_best(peer, repeats), threads))
                torch.set_num_threads(thread_counts[-1])
                took, threads = min(timed)
                print(
                    f"| {label} {tag} ({threads} thread{'s' * (threads > 1)}) | "
                    f"{rows / took / 1e6:.1f} | {floor / took:.2f} |"
                )
            river_cls = _river(name) if outputs == 1 else None
            if river_cls is not None:
                t_all = np.concatenate([t for t, _ in batches])[:20_000].tolist()
                p_all = np.concatenate([p for _, p in batches])[:20_000].tolist()

                def river_run(river_cls=river_cls, ta=t_all, pa=p_all):
                    m = river_cls()
                    for a, b in zip(ta, pa, strict=True):
                        m.update(a, b)
                    m.get()

                took = _best(river_run, 1)
                k = len(t_all)
                fl_rate = rows / floor
                print(
                    f"| river {name} per sample {tag} | {k / took / 1e6:.3f} | "
                    f"{k / took / fl_rate:.4f} |"
                )


if __name__ == "__main__":
    main()
