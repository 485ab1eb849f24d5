"""``streammetrics.torch.sync`` for real: 2 and 3 processes on 127.0.0.1 with the gloo backend.

Each rank feeds its own share of seeded rows (as tensors), calls ``sync`` and writes the result's
bytes; the test compares them with one metric fed every rank's rows in rank order. A scenario in
which one rank holds another configuration must raise ``IncompatibleStateError`` on every rank,
and the process group must still work afterwards (the next scenario runs on it). Every run has a
timeout, so a hang fails instead of blocking.
"""

from __future__ import annotations

import multiprocessing as mp
import socket
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import streammetrics as sm  # noqa: E402
from streammetrics.errors import IncompatibleStateError  # noqa: E402
from streammetrics.torch import sync  # noqa: E402
from streammetrics.windows import TumblingWindows  # noqa: E402

TIMEOUT = 240  # seconds for a whole multi-process run (spawn + import torch on a busy machine)


def _labels(rng, n):
    y = rng.integers(0, 2, n)
    s = np.clip(0.3 * y + rng.normal(0.35, 0.2, n), 0, 1)
    return y, s


# name -> (make(rank, world), feed(metric, rng, rank), exact bytes?)
def _make_f1(rank, world):
    return sm.F1()


def _feed_f1(m, rng, rank):
    y, s = _labels(rng, 700 + 50 * rank)
    m.update(torch.tensor(y, dtype=torch.int8), torch.tensor(s > 0.5))


def _make_auc(rank, world):
    return sm.ROCAUC()


def _feed_auc(m, rng, rank):
    y, s = _labels(rng, 1000 + 10 * rank)
    m.update(torch.tensor(y), torch.tensor(s, dtype=torch.bfloat16))


def _make_mse(rank, world):
    return sm.MeanSquaredError()


def _feed_mse(m, rng, rank):
    t = rng.normal(size=600)
    m.update(torch.tensor(t), torch.tensor(t + rng.normal(scale=0.3, size=600)))


def _make_window(rank, world):
    return TumblingWindows(sm.ROCAUC(), width=100)


def _feed_window(m, rng, rank):
    y, s = _labels(rng, 900)
    m.update(torch.tensor(y), torch.tensor(s), timestamps=rng.uniform(0, 450, 900))


def _make_collection(rank, world):
    return sm.MetricCollection(
        acc=sm.Accuracy(), f1=sm.F1(average="macro"), cm=sm.ConfusionMatrix()
    )


def _feed_collection(m, rng, rank):
    m.update(torch.tensor(rng.integers(0, 3, 500)), torch.tensor(rng.integers(0, 3, 500)))


def _make_bad_config(rank, world):
    return sm.ROCAUC(resolution=64 if rank == world - 1 else 128)


def _make_bad_class(rank, world):
    return sm.F1() if rank == 1 else sm.ROCAUC()


def _feed_any(m, rng, rank):
    y, s = _labels(rng, 200)
    m.update(y, s > 0.5 if isinstance(m, sm.F1) else s)


def _make_big(rank, world):
    return sm.ROCAUC(exact=True)


def _feed_big(m, rng, rank):
    # distinct float64 scores: an exact state of several hundred KB, beyond the first gather
    y = rng.integers(0, 2, 20_000 + 7_000 * rank)
    m.update(y, rng.uniform(size=len(y)))


def _feed_mixed(m, rng, rank):
    # rank 0's state is longer than the first gather's row and goes compressed; the others' not
    y = rng.integers(0, 2, 3_000 if rank == 0 else 40)
    m.update(y, rng.uniform(size=len(y)))


def _make_gauc(rank, world):
    return sm.GAUC()


def _feed_gauc(m, rng, rank):
    # weighted, in several updates: float sums whose grouping every rank must reproduce
    for _ in range(3):
        n = 400 + 50 * rank
        y = rng.integers(0, 2, n)
        m.update(y, rng.uniform(size=n), rng.integers(0, 30, n), sample_weight=rng.random(n))


SCENARIOS = {
    "f1": (_make_f1, _feed_f1, True),
    "auc": (_make_auc, _feed_auc, True),
    "mse": (_make_mse, _feed_mse, False),
    "bad_config": (_make_bad_config, _feed_any, None),
    "window": (_make_window, _feed_window, True),
    "bad_class": (_make_bad_class, _feed_any, None),
    "collection": (_make_collection, _feed_collection, True),
    "empty": (_make_mse, lambda m, rng, rank: None, True),
    "big": (_make_big, _feed_big, True),
    "mixed": (_make_big, _feed_mixed, True),
    "gauc-weighted": (_make_gauc, _feed_gauc, False),
}


def _rank_metric(name, rank, world):
    make, feed, _ = SCENARIOS[name]
    m = make(rank, world)
    feed(m, np.random.default_rng([17, rank]), rank)
    return m


def _worker(rank: int, world: int, port: int, out: str) -> None:
    import torch.distributed as dist

    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=60),
    )
    try:
        for name in SCENARIOS:
            m = _rank_metric(name, rank, world)
            before = m.to_bytes()
            path = Path(out) / f"{name}.{rank}"
            try:
                merged = sync(m)
            except IncompatibleStateError as exc:
                path.with_suffix(f".{rank}.err").write_text(str(exc))
            else:
                path.write_bytes(merged.to_bytes())
            assert m.to_bytes() == before, "sync changed its argument"
        _measure_sync_memory(rank, world, Path(out))
        dist.barrier()
    finally:
        dist.destroy_process_group()


def _measure_sync_memory(rank: int, world: int, out: Path) -> None:
    """Python and numpy memory (tracemalloc, from just before ``sync``) held when the first state
    is decoded, less that state's own bytes (the argument of ``loads``), with the size of this
    rank's state on the wire: written as ``memory.<rank>.json``."""
    import json
    import tracemalloc
    import zlib

    import streammetrics.torch as smt

    rng = np.random.default_rng([23, rank])
    m = sm.ROCAUC(exact=True)  # distinct float64 scores: 7 MB to_bytes(), 2 MB compressed
    n = 300_000 - 20_000 * rank
    m.update(rng.integers(0, 2, n), rng.uniform(size=n))
    wire = len(zlib.compress(m.to_bytes(), 1))
    held: list[int] = []
    real = smt.loads

    def spy(blob):
        if not held:
            held.append(tracemalloc.get_traced_memory()[0] - base - len(blob))
        return real(blob)

    smt.loads = spy
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    try:
        merged = sync(m)
    finally:
        tracemalloc.stop()
        smt.loads = real
    (out / f"memory.{rank}.json").write_text(
        json.dumps({"held": held[0], "wire": wire, "count": merged.count})
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(world: int, out: Path) -> None:
    ctx = mp.get_context("spawn")
    port = _free_port()
    procs = [ctx.Process(target=_worker, args=(r, world, port, str(out))) for r in range(world)]
    for p in procs:
        p.start()
    try:
        for p in procs:
            p.join(TIMEOUT)
        hung = [r for r, p in enumerate(procs) if p.is_alive()]
        assert not hung, f"ranks {hung} did not finish within {TIMEOUT}s"
        codes = [p.exitcode for p in procs]
        assert codes == [0] * world, f"exit codes {codes}"
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join(10)


@pytest.fixture(scope="module", params=[2, 3], ids=["2-ranks", "3-ranks"])
def synced(request, tmp_path_factory):
    """One real multi-process run of every scenario: (world size, folder of results)."""
    out = tmp_path_factory.mktemp(f"sync{request.param}")
    _run(request.param, out)
    return request.param, out


def test_sync_equals_one_metric_fed_every_rank(synced):
    world, tmp_path = synced
    for name, (_, _, exact) in SCENARIOS.items():
        if exact is None:
            continue
        blobs = [(tmp_path / f"{name}.{r}").read_bytes() for r in range(world)]
        assert all(b == blobs[0] for b in blobs), f"{name}: ranks disagree"
        single = SCENARIOS[name][0](0, world)
        for r in range(world):
            SCENARIOS[name][1](single, np.random.default_rng([17, r]), r)
        got = sm.loads(blobs[0])
        assert type(got) is type(single) and got.count == single.count, name
        if exact:
            assert blobs[0] == single.to_bytes(), f"{name}: not the single stream's bytes"
        else:
            assert got.compute() == pytest.approx(single.compute(), rel=1e-12), name


def test_mismatched_ranks_fail_on_every_rank(synced):
    world, tmp_path = synced
    for name, odd in [("bad_config", world - 1), ("bad_class", 1)]:
        for r in range(world):
            err = tmp_path / f"{name}.{r}.err"
            assert err.exists(), f"{name}: rank {r} did not raise"
            text = err.read_text()
            assert f"rank {odd} has a" in text and f"this is rank {r}" in text, text
            # The same class on both sides reads as a contradiction unless the message says
            # the configuration differs (a new user's review, 0.8.16).
            if name == "bad_config":
                assert "of another configuration" in text, text


def test_merging_holds_world_size_times_the_largest_state_on_the_wire(synced):
    """The documented bound: while states are decoded and merged, ``sync`` holds one buffer of
    ``world_size`` times the largest state on the wire, besides the state being decoded (no
    second copy of its own state, of the gathered rows or of the received bytes)."""
    import json

    world, tmp_path = synced
    got = [json.loads((tmp_path / f"memory.{r}.json").read_text()) for r in range(world)]
    assert all(g["count"] == sum(300_000 - 20_000 * r for r in range(world)) for g in got)
    bound = world * max(g["wire"] for g in got)
    for r, g in enumerate(got):
        assert g["held"] <= 1.05 * bound + 256 * 1024, (
            f"rank {r} held {g['held'] / 1e6:.1f} MB at the first decode, "
            f"over the documented {bound / 1e6:.1f} MB"
        )


def test_an_unsupported_gather_into_one_tensor_falls_back_to_views_of_it():
    """gloo of older torch (2.1) has no all-gather into one tensor: the list form fills its rows."""
    from streammetrics.torch import _gather_into

    class OldGloo:
        def all_gather_single(self, out, mine, group=None):
            raise RuntimeError("no support for _allgather_base in Gloo process group")

        def all_gather(self, outs, mine, group=None):
            for i, o in enumerate(outs):
                o.copy_(mine + i)

    out = torch.zeros(3, 4, dtype=torch.uint8)
    _gather_into(OldGloo(), out, torch.arange(4, dtype=torch.uint8), None)
    assert out.tolist() == [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5]]

    class Broken(OldGloo):
        def all_gather_single(self, out, mine, group=None):
            raise RuntimeError("Connection closed by peer")

    with pytest.raises(RuntimeError, match="closed by peer"):
        _gather_into(Broken(), out, torch.arange(4, dtype=torch.uint8), None)


def test_outside_a_process_group_sync_is_a_copy():
    m = sm.MetricCollection(mse=sm.MeanSquaredError(), mae=sm.MeanAbsoluteError())
    m.update([1.0, 2.0], torch.tensor([1.5, 2.0], dtype=torch.bfloat16))
    got = sync(m)
    assert got == m and got is not m
    got.update([0.0], [1.0])
    assert m.count == 2


def test_module_without_torch_names_the_extra(tmp_path):
    # a fake ``torch`` that fails to import, first on the path
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("raise ImportError('no torch here')\n")
    root = Path(__file__).resolve().parents[1]
    code = (
        "import sys\n"
        f"sys.path[:0] = [{str(tmp_path)!r}, {str(root)!r}]\n"
        "import streammetrics\n"
        "try:\n"
        "    import streammetrics.torch\n"
        "except ImportError as e:\n"
        '    assert "streammetrics[torch]" in str(e), e\n'
        "else:\n"
        "    raise SystemExit('imported')\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_tensors_and_nccl_device_choice():
    # single process: CUDA tensors as columns; the device rule picks CUDA for NCCL
    import streammetrics.torch as smt

    class FakeDist:
        def get_backend(self, group):
            return "nccl"

    assert smt._device(FakeDist(), None).type == "cuda"
    y = torch.randint(0, 2, (1000,), device="cuda")
    s = torch.rand(1000, device="cuda", dtype=torch.bfloat16)
    a, b = sm.ROCAUC(), sm.ROCAUC()
    a.update(y, s)
    b.update(y.cpu(), s.cpu())
    assert a == b


def test_training_docs_blocks_run():
    """Every self-contained code block of docs/training.md runs (not the multi-rank sketches)."""
    import re

    text = (Path(__file__).resolve().parents[1] / "docs" / "training.md").read_text()
    blocks = [
        b
        for b in re.findall(r"```python\n(.*?)```", text, re.S)
        if "import lightning" not in b and "torch.distributed" not in b
    ]
    assert len(blocks) >= 3
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/training.md block {i}", "exec"), {})


def test_sketch_auc_fits_the_first_gather_whatever_the_sample_count():
    from streammetrics.torch import _FIRST, _HEADER, _wire

    rng = np.random.default_rng(0)
    m = sm.ROCAUC()
    for _ in range(6):  # 3M uniform scores fill every bucket of the sketch
        m.update(rng.integers(0, 2, 500_000), rng.uniform(size=500_000))
    wire, compressed = _wire(m)
    assert compressed and len(wire) <= min(64 * 1024, _FIRST - _HEADER)


@pytest.fixture
def one_rank_group(tmp_path):
    """A real gloo process group of this process alone, destroyed after the test."""
    import torch.distributed as dist

    if dist.is_initialized():
        pytest.skip("a process group is already initialised in this process")
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1
    )
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_every_conformance_case_syncs_in_a_one_rank_group(one_rank_group):
    """Every metric, wrapper and collection of the harness goes through a real (1-rank) sync."""
    from tests.harness import all_cases, assert_same_result, feed

    for case in all_cases():
        rng = np.random.default_rng(1)
        m = feed(case.make(), [case.batch(rng, n) for n in (5, 17, 0, 40)])
        before = m.to_bytes()
        got = sync(m)
        assert m.to_bytes() == before, case.id
        assert type(got) is type(m) and got is not m, case.id
        if case.exact:
            assert got.to_bytes() == before, case.id
        assert_same_result(got.compute(), m.compute(), case.rtol, case.atol, case.id)


def test_a_synced_collection_lists_its_members_as_the_rank_does(one_rank_group):
    # Bytes list a collection's members by name: 0.8.13's sync gave {"auc", "loss"} where the
    # rank's compute() gave {"loss", "auc"}.
    inner = sm.MetricCollection(z=sm.ROCAUC(), b=sm.AveragePrecision())
    c = sm.MetricCollection(loss=sm.LogLoss(), auc=sm.ROCAUC(), inner=inner)
    c.update([0, 1, 1], [0.2, 0.7, 0.9])
    got = sync(c)
    assert list(got.compute()) == list(c.compute()) == ["loss", "auc", "inner"]
    assert got.keys() == ["loss", "auc", "inner"] and got == c
    assert got["inner"].keys() == ["z", "b"]


def test_one_host_copy_per_column():
    from streammetrics._input_labels import as_labels
    from streammetrics._inputs import as_scores

    class Counting(torch.Tensor):
        reads = 0

        def numpy(self, *args, **kwargs):
            Counting.reads += 1
            return super().numpy(*args, **kwargs)

    scores = torch.rand(10_000, requires_grad=True).as_subclass(Counting)
    as_scores(scores, "y_score")
    labels = torch.randint(0, 2, (10_000,)).as_subclass(Counting)
    as_labels(labels, "y_true")
    assert Counting.reads == 2
