"""``TopKAccuracy`` fed one sample per call: the hit is decided at the call and waits in the
buffer (0.8.11 ran a batch update of one row, 15 µs); the state is what ordinary one-row
updates make, and a row ``update`` refuses is refused at its call, changing nothing."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import streammetrics as sm
from tests.harness import feed_in_threads


def _ordinary(metric: sm.TopKAccuracy) -> sm.TopKAccuracy:
    metric._take_row = None  # type: ignore[method-assign,assignment]
    return metric


def _rows(n: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    out: list = []
    for i in range(n):
        k = 5
        scores = rng.integers(0, 4, k).astype(float) / 4  # many ties
        y = int(rng.integers(0, k))
        form = i % 9
        if form == 0:
            row: object = scores  # a float array
        elif form == 1:
            row = scores.astype(np.float32)
        elif form == 2:
            row = (scores * 4).astype(np.int64)  # integer scores
        elif form == 3:
            row = tuple(np.float64(v) for v in scores)
        elif form == 4:
            row = [2**53 + 1, 2**53, 0, 1, 2]  # equal as float64: a tie there
        else:
            row = scores.tolist()
        kwargs: dict = {}
        if i % 4 == 1:
            kwargs["sample_weight"] = float(rng.integers(0, 4)) / 2  # dyadic, zeros too
        label: object = np.int32(y) if i % 5 == 2 else y
        out.append(((label, row), kwargs))
    return out


BAD = [
    ((5, [0.1, 0.2, 0.3]), {}),  # label past the columns
    ((-1, [0.1, 0.2, 0.3]), {}),
    ((True, [0.1, 0.2, 0.3]), {}),  # a bool label: update decides
    ((1, [0.1, float("nan"), 0.3]), {}),
    ((1, np.array([0.1, np.inf, 0.3])), {}),
    ((1, [0.1, 10**400, 0.3]), {}),
    ((1, [0.1, 0.2, 0.3]), {"sample_weight": -1.0}),
    ((1, [0.1, 0.2, 0.3]), {"sample_weight": 10**400}),
    ((1, ["a", "b", "c"]), {}),
    ((1, [0.1, 0.2]), {"ids": 3}),
]


@pytest.mark.parametrize("seed", [0, 1])
def test_one_row_calls_give_the_bytes_of_ordinary_updates(seed: int) -> None:
    rows = _rows(2_000, seed)
    for pos, bad in zip(range(100, 2_000, 190), BAD, strict=False):
        rows.insert(pos, bad)
    fast, slow = sm.TopKAccuracy(k=2), _ordinary(sm.TopKAccuracy(k=2))
    for args, kwargs in rows:
        outcomes = []
        for metric in (fast, slow):
            before = metric.to_bytes()
            try:
                metric.update(*args, **kwargs)
                outcomes.append(None)
            except (sm.StreamMetricsError, TypeError) as exc:
                outcomes.append(type(exc))
                assert metric.to_bytes() == before
        assert outcomes[0] == outcomes[1], (args, kwargs)
    assert fast._pending is not None or fast.count  # (rows waited, then folded on read)
    assert fast.to_bytes() == slow.to_bytes()
    assert fast.interval() == slow.interval()


def test_a_row_waits_and_every_read_folds_it() -> None:
    m = sm.TopKAccuracy(k=1)
    m.update(0, [0.9, 0.1])
    m.update(1, np.array([0.9, 0.1]), sample_weight=2.0)  # a weighted row: a new buffer
    assert m._pending is not None
    assert m.count == 2 and m.compute() == pytest.approx(1 / 3)
    assert m.total == 3.0 and m.weight_sq == 5.0


def test_threads_feeding_one_row_each() -> None:
    rows = _rows(4_000, 3)
    m = feed_in_threads(sm.TopKAccuracy(k=2), rows)
    one = _ordinary(sm.TopKAccuracy(k=2))
    for args, kwargs in rows:
        one.update(*args, **kwargs)
    assert m.count == one.count and m.hits == one.hits and m.total == one.total


@pytest.mark.parametrize("one_row", [False, True])
def test_k_at_least_the_classes_warns_as_scikit_learn(one_row: bool) -> None:
    """``top_k_accuracy_score`` warns (UndefinedMetricWarning) when ``k`` leaves no row out;
    so does ``update``, on the one-sample path too, and at the user's line. The value is
    still scikit-learn's (1.0)."""
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    y, scores = [0, 2, 1], [[0.1, 0.5, 0.4], [0.3, 0.3, 0.4], [0.9, 0.05, 0.05]]
    metric = sm.TopKAccuracy(k=3)
    with pytest.warns(sm.UndefinedMetricWarning, match=r"k \(3\).*classes \(3\)") as caught:
        if one_row:
            for label, row in zip(y, scores, strict=True):
                metric.update(label, row)
        else:
            metric.update(y, scores)
    assert caught[0].filename == __file__
    with pytest.warns(sklearn_metrics._ranking.UndefinedMetricWarning):
        expected = sklearn_metrics.top_k_accuracy_score(y, scores, k=3, labels=[0, 1, 2])
    assert metric.compute() == expected == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sm.TopKAccuracy(k=2).update(y, scores)  # k below the classes: no warning
        sm.TopKAccuracy(k=2).update(y[0], scores[0])
