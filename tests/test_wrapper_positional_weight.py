"""A wrapper takes ``sample_weight`` by position where the wrapped metric does
(``update(y, p, w)``): the same state as by keyword, through every wrapper, in a batch and one
sample at a time. (0.8.14: ``Bootstrap`` around a metric without a stacked path and
``Decayed`` passed the weight twice and raised ``TypeError``.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import streammetrics as sm

RNG = np.random.default_rng(7)
N = 40
Y = RNG.integers(0, 2, N)
P = RNG.random(N)
W = RNG.random(N) + 0.5
IDS = np.arange(N)

METRICS: dict[str, tuple[Callable[[], Any], tuple[Any, ...]]] = {
    "Accuracy": (sm.Accuracy, (Y, (P > 0.5).astype(int))),
    "ROCAUC": (sm.ROCAUC, (Y, P)),
    "MeanSquaredError": (sm.MeanSquaredError, (Y.astype(float), P)),
    "GAUC": (sm.GAUC, (Y, P, IDS % 5)),
}

WRAPPERS: dict[str, tuple[Callable[[Any], Any], dict[str, Any]]] = {
    "Bootstrap": (lambda m: sm.Bootstrap(m, replicates=5), {"ids": IDS}),
    "Sliced": (sm.Sliced, {"by": IDS % 3}),
    "SlidingWindow": (lambda m: sm.SlidingWindow(m, 10), {"timestamps": IDS / 10}),
    "TumblingWindows": (lambda m: sm.TumblingWindows(m, 10), {"timestamps": IDS / 10}),
    "Decayed": (lambda m: sm.Decayed(m, half_life=2.0), {"timestamps": IDS / 10}),
    "MetricCollection": (lambda m: sm.MetricCollection(a=m), {}),
}


def _cases() -> list[Any]:
    out = []
    for metric in METRICS:
        for wrapper in WRAPPERS:
            if wrapper == "Decayed" and metric in ("MeanSquaredError", "GAUC"):
                continue  # (moments and score tables do not scale: Decayed refuses them)
            out.append(pytest.param(metric, wrapper, id=f"{wrapper}-{metric}"))
    return out


@pytest.mark.parametrize(("metric", "wrapper"), _cases())
def test_weight_by_position_is_weight_by_keyword(metric: str, wrapper: str) -> None:
    make, cols = METRICS[metric]
    wrap, kw = WRAPPERS[wrapper]
    by_position = wrap(make()).update(*cols, W, **kw)
    by_keyword = wrap(make()).update(*cols, sample_weight=W, **kw)
    assert by_position.to_bytes() == by_keyword.to_bytes()
    one_by_position, one_by_keyword = wrap(make()), wrap(make())
    for i in range(N):
        row = tuple(c[i].item() for c in cols)
        row_kw = {k: v[i].item() for k, v in kw.items()}
        one_by_position.update(*row, W[i].item(), **row_kw)
        one_by_keyword.update(*row, sample_weight=W[i].item(), **row_kw)
    assert one_by_position.to_bytes() == one_by_keyword.to_bytes()


@pytest.mark.parametrize("wrapper", ["Bootstrap", "Decayed"])
def test_weight_given_twice_is_a_type_error(wrapper: str) -> None:
    wrap, kw = WRAPPERS[wrapper]
    m = wrap(sm.ROCAUC())
    before = m.to_bytes()
    with pytest.raises(TypeError, match="sample_weight"):
        m.update(Y, P, W, sample_weight=W, **kw)
    assert m.to_bytes() == before


def test_every_declared_update_takes_its_weight_right_after_its_columns() -> None:
    """The per-request path reads ``update(*columns, w)`` as ``sample_weight=w`` for every
    metric that declares weighted columns (``Rows.weight_by_keyword``): that holds only where
    ``sample_weight`` is the positional parameter right after them."""
    from streammetrics.wrappers._rows import column_names
    from tests.harness import all_cases

    checked = 0
    for case in all_cases():
        metric = case.make()
        rows = metric._rows
        if rows is None or not rows.weights:
            continue
        names = column_names(metric)
        columns = rows.n - (rows.keyword is not None)
        assert names[columns : columns + 1] == ("sample_weight",), (case.id, names, rows.n)
        checked += 1
    assert checked > 50


def test_decayed_collection_takes_its_members_positional_weight() -> None:
    """A collection's ``update`` takes ``*args``: the weight's position is its members' (0.8.15
    passed it on as a third column and every member raised ``TypeError``)."""

    def make() -> Any:
        members = sm.MetricCollection(acc=sm.Accuracy(), f1=sm.F1())
        return sm.Decayed(members, half_life=2.0)

    labels = (P > 0.5).astype(int)
    times = IDS / 10
    by_position = make().update(Y, labels, W, timestamps=times)
    by_keyword = make().update(Y, labels, sample_weight=W, timestamps=times)
    assert by_position.to_bytes() == by_keyword.to_bytes()
    alone = sm.Decayed(sm.Accuracy(), half_life=2.0).update(Y, labels, W, timestamps=times)
    assert by_position.compute()["acc"] == alone.compute()
    one = make()
    for i in range(N):
        one.update(int(Y[i]), int(labels[i]), float(W[i]), timestamps=float(times[i]))
    assert one.compute() == pytest.approx(by_keyword.compute(), rel=1e-12)
