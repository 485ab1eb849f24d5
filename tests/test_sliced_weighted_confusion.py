"""Weighted rows into ``Sliced`` of a confusion metric, packed (0.8.20).

The label-count pack (``streammetrics.wrappers._confusion_pack``) took unweighted rows only; a
weighted batch updated one copy of the metric per slice (2.9 M rows/s at 100 slices, 0.35 M at
1,000). It now folds weighted batches too, making the additions each slice's own update makes:
every slice's counts must be, bit for bit, the per-slice path's (the squared weights to
rounding), whatever the mix of weighted and unweighted batches, new labels, reloads and merges.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.wrappers._confusion_pack import ConfusionPack
from streammetrics.wrappers._slice_table import SliceTable

MAKERS = {
    "accuracy": lambda: sm.Accuracy(),
    "f1-macro": lambda: sm.F1(average="macro"),
    "precision-weighted": lambda: sm.Precision(average="weighted"),
    "confusion": lambda: sm.ConfusionMatrix(),
    "recall-micro": lambda: sm.Recall(average="micro"),
    "f1-fixed": lambda: sm.F1(average="macro", labels=[0, 1, 2, 3, 4]),
    "kappa": lambda: sm.CohenKappa(),
    "mcc": lambda: sm.MatthewsCorrCoef(),
}


def _fed(make, steps, packed: bool, monkeypatch) -> sm.Sliced:
    """The state after ``steps`` (updates, ``"reload"``, ``("merge", steps)``), on the packed
    path or forced through the per-slice one."""
    with monkeypatch.context() as patch:
        if not packed:
            patch.setattr(SliceTable, "packed_fold", lambda self, *a: None)
        s = sm.Sliced(make())
        for step in steps:
            if step == "reload":
                s = sm.loads(s.to_bytes())
            else:
                args, kwargs = step
                s.update(*args, **kwargs)
        return s


def _steps(rng: np.random.Generator, name: str, text: bool) -> list:
    labels, slices = int(rng.integers(2, 6)), int(rng.integers(1, 700))
    steps: list = []
    for _ in range(int(rng.integers(2, 7))):
        n = int(rng.integers(1, 3000))
        y = rng.integers(0, labels, n)
        p = np.where(rng.random(n) < 0.7, y, rng.integers(0, labels, n))
        if name == "f1-fixed":
            y, p = y % 5, p % 5
        elif text:
            y, p = y.astype(str), p.astype(str)
        kwargs = {"by": rng.integers(0, slices, n)}
        if rng.random() < 0.6:
            w = rng.uniform(0.0, 2.0, n)
            w[rng.random(n) < 0.1] = 0.0  # zero weights: their labels count, their cells not
            kwargs["sample_weight"] = w
        steps.append(((y, p), kwargs))
        if rng.random() < 0.2:
            steps.append("reload")  # decoded one state per slice, packed at the next update
    return steps


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_weighted_slices_are_the_per_slice_states(name: str, monkeypatch) -> None:
    rng = np.random.default_rng(len(name))
    make = MAKERS[name]
    for trial in range(6):
        steps = _steps(rng, name, text=trial % 2 == 1)
        packed = _fed(make, steps, True, monkeypatch)
        alone = _fed(make, steps, False, monkeypatch)
        weighted = any(s != "reload" and "sample_weight" in s[1] for s in steps)
        if weighted and steps[-1] != "reload":
            assert isinstance(packed.slices._pack, ConfusionPack)
        assert packed.keys() == alone.keys()
        for key in alone.keys():
            a, b = packed[key], alone[key]
            assert a.count == b.count
            assert a.counts.dtype == b.counts.dtype
            assert np.array_equal(a.counts.rows, b.counts.rows)
            assert np.array_equal(a.counts.table, b.counts.table)
            if hasattr(b, "weight_sq"):
                assert a.weight_sq == pytest.approx(b.weight_sq, rel=1e-12, abs=0)
        values, expected = packed.compute(), alone.compute()
        for key, value in expected.items():
            if isinstance(value, float):
                assert value == values[key] or (math.isnan(value) and math.isnan(values[key]))
            else:
                assert np.array_equal(np.asarray(value), np.asarray(values[key]))
        assert sm.loads(packed.to_bytes()).to_bytes() == packed.to_bytes()


@pytest.mark.parametrize("name", ["f1-macro", "kappa", "confusion"])
def test_small_batches_into_a_large_table_add_their_cells(name: str, monkeypatch) -> None:
    # Batches of fewer rows than 1/16 of the table's cells add their cells into the held table
    # (0.8.21; a pass over every cell before): held cells, new cells, new slices, a new label
    # (every code moves), zero weights, unweighted batches, all the per-slice path's bits.
    from streammetrics.wrappers import _confusion_cells

    rng = np.random.default_rng(21)
    n = 20_000
    y = rng.integers(0, 3, n)
    steps: list = [((y, (y + rng.integers(0, 2, n)) % 3), {"by": rng.integers(0, 3_000, n)})]
    steps[0][1]["sample_weight"] = rng.uniform(0.0, 2.0, n)
    for j in range(25):
        m = int(rng.integers(1, 60))
        yy = rng.integers(0, 4 if j == 12 else 3, m)  # label 3 arrives at batch 12
        kwargs = {"by": rng.integers(0, 3_100, m)}
        if j % 4:
            w = rng.uniform(0.0, 3.0, m)
            w[rng.random(m) < 0.2] = 0.0
            kwargs["sample_weight"] = w
        steps.append(((yy, np.where(rng.random(m) < 0.5, yy, 0)), kwargs))
    calls = []
    real = _confusion_cells._added
    monkeypatch.setattr(_confusion_cells, "_added", lambda *a: calls.append(1) or real(*a))
    packed = _fed(MAKERS[name], steps, True, monkeypatch)
    assert len(calls) >= 5  # the small batches (buffered in groups) took the insertion path
    alone = _fed(MAKERS[name], steps, False, monkeypatch)
    assert packed.keys() == alone.keys()
    for key in alone.keys():
        a, b = packed[key], alone[key]
        assert np.array_equal(a.counts.rows, b.counts.rows)
        assert a.counts.dtype == b.counts.dtype
        assert np.array_equal(a.counts.table, b.counts.table)
    values, expected = packed.compute(), alone.compute()
    assert values.keys() == expected.keys()
    for key, value in expected.items():
        assert np.array_equal(np.asarray(values[key]), np.asarray(value), equal_nan=True)


def test_a_label_seen_only_at_weight_zero_stays_in_its_slice(monkeypatch) -> None:
    # Slice "a"'s label 1 comes from a row of weight 0: it fills no cell of the decoded state,
    # but it is in the slice's label set (macro F1 averages over it). A first cut of the
    # packed fold rebuilt the label sets from the filled cells and dropped it: F1 1.0, not 0.5.
    steps = [
        (([0, 1, 2], [0, 1, 2]), {"by": ["a", "a", "b"], "sample_weight": [1.0, 0.0, 2.0]}),
        "reload",
        (([0, 0], [0, 0]), {"by": ["a", "b"], "sample_weight": [0.5, 0.5]}),
    ]
    make = MAKERS["f1-macro"]
    packed = _fed(make, steps, True, monkeypatch)
    assert isinstance(packed.slices._pack, ConfusionPack)
    assert packed.compute() == _fed(make, steps, False, monkeypatch).compute()
    assert packed.compute() == {"a": 0.5, "b": 1.0}
    assert list(packed["a"].counts.rows) == [0, 1]


def test_unweighted_slices_keep_integer_tables_beside_weighted_ones() -> None:
    s = sm.Sliced(sm.Accuracy())
    s.update([1, 0, 1], [1, 1, 1], by=["int", "int", "int"])
    s.update([1, 0], [1, 0], by=["w", "w"], sample_weight=[0.5, 1.5])
    assert isinstance(s.slices._pack, ConfusionPack)
    assert s["int"].counts.dtype == np.int64 and s["w"].counts.dtype == np.float64
    assert s.compute() == {"int": 2 / 3, "w": 1.0}
    back = sm.loads(s.to_bytes())
    assert back["int"].counts.dtype == np.int64


def test_large_label_sets_with_weights_run_per_slice() -> None:
    rng = np.random.default_rng(3)
    y = rng.integers(0, 300, 5_000)
    by = rng.integers(0, 4, 5_000)
    w = rng.uniform(0.5, 1.5, 5_000)
    s = sm.Sliced(sm.Accuracy()).update(y, y, by=by, sample_weight=w)
    assert s.slices._pack is None  # 300 labels: sparse tables, the per-slice path
    assert s.compute() == {k: 1.0 for k in range(4)}


def test_weights_past_the_bound_are_refused_and_change_nothing() -> None:
    s = sm.Sliced(sm.Accuracy()).update([1, 0], [1, 0], by=["a", "b"], sample_weight=[1.0, 2.0])
    before = s.to_bytes()
    big = 0.7 * 2.0**100
    with pytest.raises(sm.InputError, match="sample_weight"):
        s.update([1, 1], [1, 1], by=["a", "a"], sample_weight=[big, big])
    assert s.to_bytes() == before
