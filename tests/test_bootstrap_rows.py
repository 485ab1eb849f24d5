"""``Bootstrap`` fed one sample per call: the wrapped metric takes the row at its call, the
replicates draw it at the next fold, and the state is what ordinary one-row updates make."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.wrappers._bootstrap_ids import id_hashes
from streammetrics.wrappers._bootstrap_rows import id_hash, position_hash
from streammetrics.wrappers._poisson import position_hashes
from tests.harness import feed_in_threads


def _ordinary(metric: sm.Bootstrap) -> sm.Bootstrap:
    """``metric`` with the per-request split switched off: every call is a batch update."""
    metric._take_row = None  # type: ignore[method-assign,assignment]
    return metric


def _calls(kind: str, n: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3 if kind == "f1" else 2, n)
    score = rng.random(n)
    pred = np.where(rng.random(n) < 0.7, y, rng.integers(0, 3, n))
    weights = rng.integers(1, 5, n) / 4  # dyadic: float sums exact in any order
    out = []
    for i in range(n):
        second = float(score[i]) if kind in ("auc", "mse") else int(pred[i])
        args = (int(y[i]), second) if i % 3 else (np.int64(y[i]), np.float64(second))
        kwargs: dict = {}
        r = i % 7
        if r == 1:
            kwargs["ids"] = int(rng.integers(-(2**63), 2**63, dtype=np.int64))
        elif r == 2:
            kwargs["ids"] = [f"req-{i}-é\x00x"]  # a list of one id, a NUL inside the string
        elif r == 3:
            kwargs["sample_weight"] = float(weights[i])
        elif r == 4:
            kwargs["ids"] = np.uint64(2**64 - 1 - i)  # ids past int64, as uint64 holds them
        elif r == 5:
            kwargs["ids"] = f"user-{i % 11}"
            kwargs["sample_weight"] = float(weights[i])
        out.append((args, kwargs))
    return out


MAKERS = {
    "accuracy": ("acc", lambda: sm.Accuracy()),
    "f1-macro": ("f1", lambda: sm.F1(average="macro")),
    "rocauc": ("auc", lambda: sm.ROCAUC()),
    "rocauc-exact": ("auc", lambda: sm.ROCAUC(exact=True)),
    "confusion": ("f1", lambda: sm.ConfusionMatrix()),
}


@pytest.mark.parametrize("name", list(MAKERS))
def test_one_row_calls_give_the_bytes_of_ordinary_updates(name: str) -> None:
    kind, make = MAKERS[name]
    fast = sm.Bootstrap(make(), replicates=24, seed=5)
    slow = _ordinary(sm.Bootstrap(make(), replicates=24, seed=5))
    for i, (args, kwargs) in enumerate(_calls(kind, 700)):
        fast.update(*args, **kwargs)
        slow.update(*args, **kwargs)
        if i == 300:
            assert fast.count == slow.count  # a read folds; the rows after it queue anew
        if i == 500:  # a batch between one-row calls folds the queue first
            batch = (np.array([0, 1, 1]), np.array([0.2, 0.9, 0.4] if kind == "auc" else [0, 1, 0]))
            fast.update(*batch, ids=[1, 2, 3])
            slow.update(*batch, ids=[1, 2, 3])
    assert fast._pending is not None  # rows still wait: the split took them
    assert fast.to_bytes() == slow.to_bytes()
    assert sm.loads(fast.to_bytes()).to_bytes() == slow.to_bytes()


def test_float_states_agree_to_rounding() -> None:
    fast = sm.Bootstrap(sm.MeanSquaredError(), replicates=16, seed=1)
    slow = _ordinary(sm.Bootstrap(sm.MeanSquaredError(), replicates=16, seed=1))
    for args, kwargs in _calls("mse", 400):
        fast.update(*args, **kwargs)
        slow.update(*args, **kwargs)
    assert fast.count == slow.count == 400
    assert fast.drawn == slow.drawn
    np.testing.assert_allclose(fast.replicates(), slow.replicates(), rtol=1e-12)
    assert fast.compute() == pytest.approx(slow.compute(), rel=1e-12)


def test_hashes_equal_the_batch_path() -> None:
    rng = np.random.default_rng(3)
    ints = [*rng.integers(-(2**63), 2**63, 200, dtype=np.int64).tolist(), 0, -1, 2**63 - 1]
    for v in ints:
        assert id_hash(v) == int(id_hashes([v], 1)[0])
    for v in [2**63, 2**64 - 1, np.uint64(2**63 + 5), np.int8(-3), np.uint32(7)]:
        assert id_hash(v) == int(id_hashes([v], 1)[0])
    texts = ["", "a", "a\x00b", "é", "\U0001f600x", "req-" * 30, np.str_("z")]
    for s in texts:
        assert id_hash(s) == int(id_hashes([s], 1)[0])
    for bad in [True, np.bool_(False), 1.5, 2**64, -(2**63) - 1, b"x", None]:
        assert id_hash(bad) is None
    for p in [0, 1, 12345, 2**40]:
        assert position_hash(p) == int(position_hashes(p, 1)[0])


def test_a_bad_row_is_refused_at_its_call_and_changes_nothing() -> None:
    good = sm.Bootstrap(sm.ROCAUC(), replicates=8, seed=2)
    tried = sm.Bootstrap(sm.ROCAUC(), replicates=8, seed=2)
    calls = _calls("auc", 60)
    bad = [
        ((1, 1.5), {}),  # a score outside [0, 1]
        ((2, 0.5), {}),  # a label that is not 0/1
        ((1, 0.5), {"sample_weight": float("nan")}),
        ((1, 0.5), {"ids": 1.5}),
        ((1, 0.5), {"ids": True}),
        ((1, 0.5), {"ids": 2**64}),
        ((1, 0.5), {"ids": [1, 2]}),
    ]
    for i, (args, kwargs) in enumerate(calls):
        good.update(*args, **kwargs)
        tried.update(*args, **kwargs)
        if i % 9 == 4:
            args, kwargs = bad[(i // 9) % len(bad)]
            with pytest.raises(sm.InputError):
                tried.update(*args, **kwargs)
    assert tried.to_bytes() == good.to_bytes()


def test_heavy_weights_take_the_ordinary_path() -> None:
    # A row that could take a replicate past 2**53 is checked against every replicate's
    # total by the ordinary update, and is not queued.
    calls = [(1, 1, 1e13), (1, 0, 3e13), (0, 0, 1.0), (1, 1, 0.5)]
    b = sm.Bootstrap(sm.Accuracy(), replicates=8, seed=0)
    slow = _ordinary(sm.Bootstrap(sm.Accuracy(), replicates=8, seed=0))
    waiting = []
    for y, p, w in calls:
        b.update(y, p, sample_weight=w)
        slow.update(y, p, sample_weight=w)
        waiting.append(b._pending is not None)
    # 1e13 (x 255 < 2**53) waits; 3e13 more could pass the bound: ordinary, as is every row
    # while the held total stays that close to it.
    assert waiting == [True, False, False, False]
    assert b.to_bytes() == slow.to_bytes()


def test_threads_feeding_one_row_each() -> None:
    calls = _calls("acc", 4000, seed=9)
    calls = [(a, {**k, "ids": i}) for i, (a, k) in enumerate(calls) if "ids" not in k]
    whole = sm.Bootstrap(sm.Accuracy(), replicates=16, seed=4)
    for args, kwargs in calls:
        whole.update(*args, **kwargs)
    shared = sm.Bootstrap(sm.Accuracy(), replicates=16, seed=4)
    feed_in_threads(shared, calls, read=lambda m: m.interval(), every=97)
    # ids make every row's weights its own, whatever the order the threads interleave in.
    assert shared.to_bytes() == whole.to_bytes()


def test_inside_a_collection_the_split_survives_the_call() -> None:
    # The collection read the member's count around the call, which folded the waiting row
    # into the 200 replicates on every request (about 580 µs, a review of this release).
    def make() -> sm.MetricCollection:
        return sm.MetricCollection(
            acc=sm.Accuracy(), boot=sm.Bootstrap(sm.Accuracy(), replicates=16)
        )

    fast, slow = make(), make()
    _ordinary(slow["boot"])  # type: ignore[arg-type]
    for i, (args, kwargs) in enumerate(_calls("acc", 500, seed=2)):
        kwargs = {k: v for k, v in kwargs.items() if k == "ids"}
        fast.update(*args, **kwargs)
        slow.update(*args, **kwargs)
        if i == 200:
            assert fast.count == slow.count == 201
    assert fast["boot"]._pending is not None  # the rows since the last read still wait
    assert fast.to_bytes() == slow.to_bytes()


def test_an_integer_weight_no_float_holds_is_an_input_error() -> None:
    # float(10**400) raised OverflowError from the split (a review of this release).
    b = sm.Bootstrap(sm.Accuracy(), replicates=4)
    b.update(1, 1)
    with pytest.raises(sm.InputError, match="sample_weight"):
        b.update(1, 1, sample_weight=10**400)
    assert b.count == 1


def test_integer_ids_past_int64_in_a_list_hash_as_one_row_at_a_time() -> None:
    # numpy reads [2**63 + 5, 7] as float64: 0.8.13 refused the batch ("got float64") that one
    # row at a time it took, and called [2**70, 1] "past int64" though uint64 ids are taken.
    ids = [2**63 + 5, 2**63 + 6, 7, -3]
    y, p = [1, 1, 1, 0], [0, 0, 0, 0]
    batch = sm.Bootstrap(sm.Accuracy(), replicates=8).update(y, p, ids=ids)
    rows = sm.Bootstrap(sm.Accuracy(), replicates=8)
    for a, b, i in zip(y, p, ids, strict=True):
        rows.update(a, b, ids=i)
    assert batch.to_bytes() == rows.to_bytes()
    wide = np.array(ids[:2], dtype=np.uint64)
    assert (
        sm.Bootstrap(sm.Accuracy(), replicates=8).update(y[:2], p[:2], ids=wide).to_bytes()
        == sm.Bootstrap(sm.Accuracy(), replicates=8).update(y[:2], p[:2], ids=ids[:2]).to_bytes()
    )
    m = sm.Bootstrap(sm.Accuracy(), replicates=8)
    with pytest.raises(sm.InputError, match=r"^ids: integer ids must lie within int64 or uint64 "):
        m.update([1, 1], [0, 0], ids=[2**70, 1])
    assert m.count == 0


def test_mixed_numpy_and_python_integer_ids_and_the_metrics_error_first() -> None:
    # [np.uint64(2**63 + 5), 7] reads as float64 too; and a column beside one value is the
    # wrapped metric's error, not "ids: expected one id per row (1)".
    one_by_one = sm.Bootstrap(sm.Accuracy(), replicates=8)
    for a, b, i in zip([1, 0], [1, 1], [np.uint64(2**63 + 5), 7], strict=True):
        one_by_one.update(a, b, ids=i)
    batch = sm.Bootstrap(sm.Accuracy(), replicates=8)
    batch.update([1, 0], [1, 1], ids=[np.uint64(2**63 + 5), 7])
    assert batch.to_bytes() == one_by_one.to_bytes()
    with pytest.raises(sm.InputError, match="columns differ in length"):
        sm.Bootstrap(sm.Accuracy(), replicates=8).update([0, 1, 1], 1, ids=[1, 2, 3])
