"""Training-loop benchmarks: streammetrics against torchmetrics, side by side.

Run: ``python benchmarks/bench_training.py`` (a few minutes; ``--quick`` for a smoke run).
Needs torch and torchmetrics. Prints markdown tables with ratios.

1. **Per-step update** of a 256-row batch (float32 and bfloat16 score tensors, CPU) for AUC, F1
   and MSE: microseconds per step, best of several interleaved repeats. streammetrics
   ``ROCAUC()`` (sketch), ``F1()``, ``MeanSquaredError()`` against torchmetrics
   ``BinaryAUROC()`` (exact: appends the batch to a list), ``BinaryAUROC(thresholds=200)``,
   ``BinaryF1Score()``, ``MeanSquaredError()``; the floor is the bare work of one step in numpy
   (tensor to numpy, one ``np.bincount`` or one sum of squares).
2. **Sync at 2 ranks** (gloo on 127.0.0.1, one process per rank) with ``--samples`` (1M) rows
   per rank: ``streammetrics.torch.sync`` of ``ROCAUC()`` (and ``ROCAUC(exact=True)``) against
   torchmetrics' ``sync()`` of ``BinaryAUROC()`` (list states, every sample gathered) and
   ``BinaryAUROC(thresholds=200)``. Reported: bytes each rank contributes to the gather, time of
   the sync and of sync + compute (best of repeats, ranks started together by a barrier), and
   the peak memory growth during one sync, measured in a separate, untimed run (a thread samples
   the process's resident memory every millisecond).

Goals: per-step update no slower than torchmetrics'; a sketch AUC moves <= 64 KB whatever the
sample count; sync >= 10x faster than torchmetrics' exact AUROC sync at 1M samples per rank.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
import torch.multiprocessing as mp
from torchmetrics import MeanSquaredError as TMMeanSquaredError
from torchmetrics.classification import BinaryAUROC, BinaryF1Score

import streammetrics as sm
from streammetrics.torch import _FIRST, _wire, sync

BATCH = 256


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _data(n: int, seed: int):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = np.clip(0.3 * y + rng.normal(0.35, 0.2, n), 0.0, 1.0)
    return y, s


# -- 1. per-step update ---------------------------------------------------------------------


def _floor_auc(batches):
    for y, s in batches:
        idx = np.minimum((s.float().numpy() * 10_000).astype(np.intp), 9_999)
        np.bincount(idx + 10_000 * y.numpy(), minlength=20_000)


def _floor_f1(batches):
    for y, s in batches:
        np.bincount(2 * y.numpy() + (s.float().numpy() > 0.5), minlength=4)


def _floor_mse(batches):
    for y, s in batches:
        d = s.float().numpy().astype(np.float64) - y.numpy()
        float(d @ d)


def _loop(make, batches, prep):
    def run():
        m = make()
        for y, s in batches:
            m.update(*prep(y, s))
        # streammetrics buffers small batches: the rows still buffered are folded in the timed
        # section, so every row's cost is counted (torchmetrics' update leaves nothing behind)
        settle = getattr(m, "_fold_locked", None)
        if settle is not None:
            settle()

    return run


def bench_steps(steps: int, repeats: int) -> list[str]:
    y, s = _data(steps * BATCH, 0)
    rows = [
        "| metric | scores | streammetrics µs/step | torchmetrics µs/step | "
        "torchmetrics / streammetrics | numpy floor µs/step | streammetrics / floor |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for dtype in (torch.float32, torch.bfloat16):
        yt = torch.tensor(y)
        st = torch.tensor(s, dtype=dtype)
        batches = list(zip(yt.split(BATCH), st.split(BATCH), strict=True))
        pairs = [
            (
                "AUC (sketch) vs BinaryAUROC()",
                _loop(sm.ROCAUC, batches, lambda y, s: (y, s)),
                _loop(lambda: BinaryAUROC(validate_args=False), batches, lambda y, s: (s, y)),
                _floor_auc,
            ),
            (
                "AUC (sketch) vs BinaryAUROC(thresholds=200)",
                _loop(sm.ROCAUC, batches, lambda y, s: (y, s)),
                _loop(
                    lambda: BinaryAUROC(thresholds=200, validate_args=False),
                    batches,
                    lambda y, s: (s, y),
                ),
                _floor_auc,
            ),
            (
                "F1 vs BinaryF1Score()",
                _loop(sm.F1, batches, lambda y, s: (y, s > 0.5)),
                _loop(lambda: BinaryF1Score(validate_args=False), batches, lambda y, s: (s, y)),
                _floor_f1,
            ),
            (
                "MSE vs MeanSquaredError()",
                _loop(sm.MeanSquaredError, batches, lambda y, s: (y.to(s.dtype), s)),
                _loop(TMMeanSquaredError, batches, lambda y, s: (s, y.to(s.dtype))),
                _floor_mse,
            ),
        ]
        for name, ours, theirs, floor in pairs:
            t_ours = t_theirs = t_floor = float("inf")
            for _ in range(repeats):  # interleaved: a busy machine slows all three alike
                t_ours = min(t_ours, best_of(ours, 1))
                t_theirs = min(t_theirs, best_of(theirs, 1))
                t_floor = min(t_floor, best_of(lambda f=floor, b=batches: f(b), 1))
            us = 1e6 / steps
            rows.append(
                f"| {name} | {str(dtype).removeprefix('torch.')} | {t_ours * us:.1f} | "
                f"{t_theirs * us:.1f} | {t_theirs / t_ours:.2f}x | {t_floor * us:.1f} | "
                f"{t_ours / t_floor:.1f}x |"
            )
    return rows


# -- 2. sync at 2 ranks -----------------------------------------------------------------------


class PeakRSS:
    """Samples this process's resident memory every millisecond (untimed runs only)."""

    def __init__(self) -> None:
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.base = self._rss()
        self.peak = self.base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _rss(self) -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * self.page

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._rss())
            time.sleep(0.001)

    def __enter__(self) -> PeakRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())


def _build(kind: str, y: np.ndarray, s: np.ndarray):
    yt, st = torch.tensor(y), torch.tensor(s, dtype=torch.float32)
    if kind.startswith("sm"):
        m = sm.ROCAUC(exact=kind == "sm-exact")
        for yb, sb in zip(yt.split(65536), st.split(65536), strict=True):
            m.update(yb, sb)
        return m
    m = (
        BinaryAUROC(validate_args=False)
        if kind == "tm-exact"
        else BinaryAUROC(thresholds=200, validate_args=False)
    )
    for yb, sb in zip(yt.split(65536), st.split(65536), strict=True):
        m.update(sb, yb)
    return m


def _state_bytes(kind: str, m) -> int:
    """What a rank contributes: the compressed state for streammetrics, the state tensors for
    torchmetrics (both are padded to the longest rank's in the gather)."""
    if kind.startswith("sm"):
        return len(_wire(m)[0])
    total = 0
    for name in m._defaults:
        value = getattr(m, name)
        for t in value if isinstance(value, list) else [value]:
            total += t.numel() * t.element_size()
    return total


def _sync_once(kind: str, m, with_compute: bool):
    if kind.startswith("sm"):
        merged = sync(m)
        return merged.compute() if with_compute else merged
    if with_compute:
        m._computed = None  # no cached value: compute() syncs, computes and unsyncs
        return m.compute()
    m.sync(should_sync=True)
    m.unsync()
    return None


def _rank(rank: int, world: int, port: int, n: int, repeats: int, kinds, queue) -> None:
    import torch.distributed as dist

    # One thread per rank: the ranks are processes sharing the machine's two cores, one each
    # (a second thread per rank would only oversubscribe them).
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=600),
    )
    y, s = _data(n, 100 + rank)
    results = {}
    for kind in kinds:
        m = _build(kind, y, s)
        size = _state_bytes(kind, m)
        timings = {}
        for with_compute in (False, True):
            best = float("inf")
            for _ in range(repeats):
                dist.barrier()
                t0 = time.perf_counter()
                _sync_once(kind, m, with_compute)
                best = min(best, time.perf_counter() - t0)
            timings[with_compute] = best
        # untimed run for memory
        dist.barrier()
        with PeakRSS() as rss:
            _sync_once(kind, m, True)
        results[kind] = (size, timings[False], timings[True], rss.peak - rss.base)
        del m
    dist.barrier()
    if rank == 0:
        queue.put(results)
    dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


KINDS = {
    "sm-sketch": "streammetrics ROCAUC() (sketch)",
    "sm-exact": "streammetrics ROCAUC(exact=True)",
    "tm-exact": "torchmetrics BinaryAUROC() (list states)",
    "tm-binned": "torchmetrics BinaryAUROC(thresholds=200)",
}


def bench_sync(n: int, repeats: int, world: int = 2) -> list[str]:
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    port = _free_port()
    kinds = list(KINDS)
    procs = [
        ctx.Process(target=_rank, args=(r, world, port, n, repeats, kinds, queue))
        for r in range(world)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(1800)
    for p in procs:
        if p.is_alive():
            p.kill()
            raise SystemExit("a rank did not finish within 30 minutes")
    if any(p.exitcode != 0 for p in procs):
        raise SystemExit(f"rank exit codes {[p.exitcode for p in procs]}")
    res = queue.get()
    ref = res["tm-exact"]
    rows = [
        f"{world} ranks, gloo, {n:,} samples per rank",
        "",
        "| method | state bytes per rank | sync ms | sync + compute ms | "
        "time vs torchmetrics exact | peak memory growth MB |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for kind, label in KINDS.items():
        size, t_sync, t_both, mem = res[kind]
        rows.append(
            f"| {label} | {size:,} | {t_sync * 1e3:.2f} | {t_both * 1e3:.2f} | "
            f"{ref[1] / t_sync:.1f}x faster | {mem / 2**20:.1f} |"
        )
    sketch = res["sm-sketch"][0]
    rows += [
        "",
        f"- sketch AUC state {sketch:,} bytes per rank, sent in one {_FIRST:,}-byte gather row "
        f"(goal <= 65,536 bytes moved): {'met' if sketch <= _FIRST <= 65536 else 'MISSED'}",
        f"- sync {ref[1] / res['sm-sketch'][1]:.1f}x faster than torchmetrics' exact AUROC sync "
        f"(goal >= 10x): {'met' if ref[1] / res['sm-sketch'][1] >= 10 else 'MISSED'}",
    ]
    return rows


def sketch_sizes(counts: list[int]) -> list[str]:
    rows = ["| samples | ROCAUC() bytes |", "|---:|---:|"]
    for n in counts:
        y, s = _data(n, 7)
        rows.append(f"| {n:,} | {len(sm.ROCAUC().update(y, s).to_bytes()):,} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    parser.add_argument(
        "--samples", type=int, default=None, help="rows per rank for sync (1M; 20k with --quick)"
    )
    args = parser.parse_args()
    # One torch thread: the per-step batches are small (see BATCH), where torch's intra-op
    # threads only add dispatch cost; both sides (ours takes the same tensors) run on it.
    torch.set_num_threads(1)
    steps, repeats, n = (40, 2, 20_000) if args.quick else (400, 5, 1_000_000)
    n = args.samples or n
    print(f"# streammetrics vs torchmetrics in training loops (torch {torch.__version__})\n")
    print(f"## Per-step update, {BATCH}-row batches, {steps} steps, CPU\n")
    print("\n".join(bench_steps(steps, repeats)))
    print("\n## Sketch AUC state size against the sample count\n")
    print("\n".join(sketch_sizes([10_000, 100_000, 1_000_000] if not args.quick else [10_000])))
    print("\n## Sync\n")
    print("\n".join(bench_sync(n, 2 if args.quick else 5)))


if __name__ == "__main__":
    main()
