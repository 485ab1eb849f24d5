"""``MulticlassROCAUC`` fed one sample per call (a label and its row of class probabilities):
buffered when ``update`` would certainly take it, folded by one ordinary update before any
read, with the state that ordinary one-row updates give."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import streammetrics as sm
from tests.harness import feed_in_threads

LETTERS = ["a", "b", "c", "d", "e"]


def _ordinary(metric: sm.MulticlassROCAUC) -> sm.MulticlassROCAUC:
    metric._take_row = None  # type: ignore[method-assign,assignment]
    return metric


def _calls(n: int, labels: bool, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(5), n)
    ys = rng.integers(0, 5, n)
    weights = rng.integers(1, 5, n) / 4  # dyadic: float sums exact in any order
    out = []
    for i in range(n):
        y: Any = LETTERS[ys[i]] if labels else int(ys[i])
        if i % 4 == 1:
            y = np.str_(y) if labels else np.int64(y)
        row: Any = [probs[i], probs[i].tolist(), tuple(probs[i]), probs[i][None, :]][i % 4]
        if i % 11 == 5:
            row = probs[i].astype(np.float32)
        out.append(((y, row), {"sample_weight": float(weights[i])} if i % 9 == 7 else {}))
    return out


CONFIGS = [
    {},
    {"average": "micro"},
    {"average": "weighted", "exact": True},
    {"average": None, "labels": LETTERS},
    {"score_type": "logit"},  # (not buffered: the ordinary update, the same state)
]


@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_one_sample_calls_give_the_bytes_of_ordinary_updates(config: dict) -> None:
    labels = "labels" in config
    fast, slow = sm.MulticlassROCAUC(**config), _ordinary(sm.MulticlassROCAUC(**config))
    for i, (args, kwargs) in enumerate(_calls(900, labels)):
        fast.update(*args, **kwargs)
        slow.update(*args, **kwargs)
        if i == 400:
            assert fast.count == slow.count
    if config.get("score_type") != "logit":
        assert fast._pending is not None  # the rows since the last weighted one wait
    assert fast.to_bytes() == slow.to_bytes()
    np.testing.assert_array_equal(fast.compute(), slow.compute())


def test_a_bad_sample_is_refused_at_its_call_and_changes_nothing() -> None:
    good, tried = sm.MulticlassROCAUC(), sm.MulticlassROCAUC()
    bad = [
        ((1, [0.2, 0.2, 0.2, 0.2, 1.5]), {}),  # a probability above 1
        ((1, [0.2, 0.2, float("nan"), 0.2, 0.2]), {}),
        ((1, [0.25, 0.25, 0.25, 0.25]), {}),  # four columns, not five
        ((5, [0.2] * 5), {}),  # no column 5
        ((-1, [0.2] * 5), {}),
        (("a", [0.2] * 5), {}),  # a string label without labels=
        ((1, [0.2] * 5), {"sample_weight": -1.0}),
        ((1, [0.2] * 5), {"sample_weight": float("inf")}),
    ]
    for i, (args, kwargs) in enumerate(_calls(300, False, seed=4)):
        good.update(*args, **kwargs)
        tried.update(*args, **kwargs)
        if i % 13 == 6:
            args, kwargs = bad[(i // 13) % len(bad)]
            with pytest.raises(sm.InputError):
                tried.update(*args, **kwargs)
    assert tried.to_bytes() == good.to_bytes()


def test_values_the_ordinary_update_also_accepts_take_it() -> None:
    # Booleans, whole floats as labels, bool rows: not buffered, still accepted as before.
    fast, slow = sm.MulticlassROCAUC(), _ordinary(sm.MulticlassROCAUC())
    rows = [(0, [0.5, 0.5, 0.0]), (True, [0.1, 0.8, 0.1]), (2.0, [0.1, 0.1, 0.8])]
    rows += [(1, [False, True, False]), (1, np.array([0.2, 0.7, 0.1], dtype=np.float16))]
    for args in rows:
        fast.update(*args)
        slow.update(*args)
    assert fast.to_bytes() == slow.to_bytes()


def test_threads_feeding_one_sample_each() -> None:
    calls = [c for c in _calls(4000, False, seed=9) if not c[1]]
    whole = sm.MulticlassROCAUC()
    for args, kwargs in calls:
        whole.update(*args, **kwargs)
    shared = sm.MulticlassROCAUC()
    shared.update(*calls[0][0])
    feed_in_threads(shared, calls[1:], read=lambda m: m.compute(), every=101)
    assert shared.to_bytes() == whole.to_bytes()  # counting states: order does not matter


def test_rows_that_could_pass_the_pooled_bound_take_the_ordinary_path() -> None:
    # "micro" pools k columns: a buffer of heavy rows could take the pooled weight total past
    # its bound at the fold, where nothing may fail. Each waiting row spends its weight times
    # k from what the bound leaves; past that, rows take the ordinary update.
    fast = sm.MulticlassROCAUC(average="micro")
    slow = _ordinary(sm.MulticlassROCAUC(average="micro"))
    rows = [(0, [0.5, 0.3, 0.2], 1.0), (1, [0.2, 0.5, 0.3], 2.0**52), (2, [0.1, 0.2, 0.7], 1.0)]
    waiting = []
    for m in (fast, slow):
        m.update([0, 1, 2], np.eye(3) * 0.5 + 0.1)
    for y, row, w in rows:
        fast.update(y, row, sample_weight=w)
        slow.update(y, row, sample_weight=w)
        waiting.append(fast._pending is not None)
    assert waiting == [True, False, False]  # 3 * 2**52 > 2**53 - 3 * 3: the ordinary path
    assert fast.to_bytes() == slow.to_bytes()


def test_an_integer_weight_no_float_holds_is_an_input_error() -> None:
    m = sm.MulticlassROCAUC().update([0, 1, 2], np.eye(3) * 0.5 + 0.1)
    before = m.to_bytes()
    with pytest.raises(sm.InputError, match="sample_weight"):
        m.update(1, [0.1, 0.2, 0.7], sample_weight=10**400)
    assert m.to_bytes() == before
