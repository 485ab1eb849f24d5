"""The Python blocks of the docs pages that have no doctest (``>>>``) run as written.

They use the reader's data by name (``y_true``, ``y_score``, ``country``, ...): each runs here
on random data of those names, and the values it prints in comments are checked for their
kind (a dict of slices, an interval around the value), not their digits.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import streammetrics as sm

DOCS = Path(__file__).resolve().parent.parent / "docs"


def blocks(page: str) -> list[str]:
    text = (DOCS / page).read_text()
    return [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]


def data() -> dict[str, Any]:
    rng = np.random.default_rng(0)
    n = 2_000
    y_true = rng.integers(0, 2, n)
    y_score = np.clip(0.3 * y_true + 0.7 * rng.random(n), 0.0, 1.0)
    return {
        "y_true": y_true,
        "y_score": y_score,
        "y_pred": (y_score > 0.5).astype(int),
        "request_ids": np.arange(n),
        "country": np.array(["de", "fr", "us"])[rng.integers(0, 3, n)],
        "device": np.array(["ios", "android"])[rng.integers(0, 2, n)],
    }


@pytest.mark.parametrize("page", ["bootstrap.md", "slices.md", "uncertainty.md"])
def test_the_pages_blocks_run(page: str) -> None:
    found = blocks(page)
    assert found, f"{page} has no python block"
    for block in found:
        space = data()
        exec(compile(block, f"docs/{page}", "exec"), space)
        if page == "bootstrap.md":
            b = space["b"]
            low, high = b.interval(0.95)
            assert low < b.compute() < high and b.replicates().shape == (200,)
        elif page == "slices.md":
            assert set(space["s"].compute()) == {"de", "fr", "us"}
            assert all(len(k) == 2 for k in space["by_pair"].compute())
            assert [k for k, _ in space["s"].worst(k=2)] == [
                k for k, _ in sorted(space["s"].compute().items(), key=lambda kv: kv[1])[:2]
            ]
        else:
            m = space["m"]
            low, high = m.interval()
            wide = m.interval(0.99)
            assert wide[0] < low < m.compute() < high < wide[1]
            assert isinstance(m, sm.ROCAUC)


def test_the_training_loop_of_the_training_page_runs_and_its_state_loads() -> None:
    # Its loop once updated the collection's members directly, which left the collection's
    # row count at 0: its bytes did not load, and a merge dropped it.
    pytest.importorskip("torch")
    loop = [b for b in blocks("training.md") if "history" in b and "update_each" in b]
    assert len(loop) == 1
    space: dict[str, Any] = {}
    exec(compile(loop[0], "docs/training.md", "exec"), space)
    metrics = space["metrics"]
    x, y = space["x"], space["y"]
    metrics.update_each({"auc": ((y, x[:, 0].sigmoid()), {}), "f1": ((y, x[:, 0] > 0), {})})
    assert metrics.count == len(y)
    assert sm.loads(metrics.to_bytes()) == metrics


def test_the_distributed_and_lightning_blocks_of_the_training_page_run(monkeypatch: Any) -> None:
    # Both used torch.sigmoid without importing torch (NameError as written); no test ran them.
    import socket
    import sys
    import types

    torch = pytest.importorskip("torch")
    dist = pytest.importorskip("torch.distributed")
    found = blocks("training.md")
    (epoch,) = [b for b in found if "def run_epoch" in b]
    (module,) = [b for b in found if "LightningModule" in b]
    lightning = types.ModuleType("lightning")

    class LightningModule(torch.nn.Module):  # the members the block uses
        global_rank = 0

        def log_dict(self, values: dict[str, Any], sync_dist: bool = False) -> None:
            self.logged = values

    lightning.LightningModule = LightningModule  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "lightning", lightning)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    try:
        torch.manual_seed(0)
        x, y = torch.randn(64, 8), torch.randint(0, 2, (64,))
        space: dict[str, Any] = {}
        exec(compile(epoch, "docs/training.md", "exec"), space)
        metric = sm.ROCAUC()
        space["run_epoch"](torch.nn.Linear(8, 1), [(x[:32], y[:32]), (x[32:], y[32:])], metric)
        assert metric.count == 0  # reset for the next epoch
        exec(compile(module, "docs/training.md", "exec"), space)
        model = space["Model"]()
        model.net = torch.nn.Linear(8, 1)
        model.validation_step((x, y), 0)
        checkpoint: dict[str, Any] = {}
        model.on_save_checkpoint(checkpoint)
        model.on_validation_epoch_end()
        assert set(model.logged) == {"auc", "f1"} and model.val_metrics.count == 0
        model.on_load_checkpoint(checkpoint)
        assert model.val_metrics.count == len(y)
        model.global_rank = 1  # (another rank resumes from rank 0's file empty)
        model.on_load_checkpoint(checkpoint)
        assert model.val_metrics.count == 0
    finally:
        dist.destroy_process_group()
