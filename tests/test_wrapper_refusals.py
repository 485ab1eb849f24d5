"""Wrappers around metrics they cannot serve: refused when built, with what to do instead; and
a collection routing a wrapper's own keyword column to the members that take it (0.8.7)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.clustering import NormalizedMutualInfo
from streammetrics.ranking import NDCG


@pytest.mark.parametrize(
    "make, why",
    [
        (lambda: sm.Sliced(sm.Accuracy()), r"Sliced\(Bootstrap\(metric\)\)"),
        (lambda: sm.MetricCollection(a=sm.Accuracy()), "bootstrap each member"),
        (lambda: NDCG(), r"NDCG.interval\(\) already gives a t-interval"),
    ],
)
def test_bootstrap_refusals_say_what_to_do_instead(make: Any, why: str) -> None:
    with pytest.raises(sm.InputError, match=why):
        sm.Bootstrap(make())


@pytest.mark.parametrize(
    "make, args",
    [
        (lambda: sm.RegressionReport(), ([1.0, 2.0, 3.0], [1.5, 2.0, 2.0])),
        (lambda: sm.ClassificationReport(), ([0, 1, 1], [0, 1, 0])),
        (lambda: sm.PRCurve(), ([0, 1, 1], [0.2, 0.7, 0.4])),
        (lambda: sm.Decayed(sm.Sliced(sm.Accuracy()), half_life=5), None),
    ],
)
def test_bootstrap_of_a_value_of_many_values_says_so(make: Any, args: Any) -> None:
    # 0.8.6: interval() failed with "float() argument must be ... not 'dict'" (or numpy's
    # "inhomogeneous shape"). The replicates' states are still kept (the stacked fold covers
    # curves and reports) and compute() gives the value.
    b = sm.Bootstrap(make(), replicates=8)
    if args is None:
        b.update([0, 1], [0, 1], by=["a", "b"], timestamps=[1, 2], ids=[1, 2])
    else:
        b.update(*args, ids=np.arange(len(args[0])))
    assert b.compute() is not None
    for read in (b.replicates, b.std_error, b.interval):
        with pytest.raises(sm.NoIntervalError, match="bootstrap a metric of one value"):
            read()


def test_bootstrap_of_array_values_is_still_built() -> None:
    for metric in (sm.MeanSquaredError(multioutput="raw_values"), sm.ConfusionMatrix()):
        assert sm.Bootstrap(metric).count == 0


@pytest.mark.parametrize(
    "inner",
    [
        lambda: sm.Sliced(NormalizedMutualInfo()),
        lambda: sm.MetricCollection(a=NormalizedMutualInfo(), b=sm.Accuracy()),
    ],
)
def test_decayed_looks_inside_for_a_metric_without_weights(inner: Any) -> None:
    # 0.8.6 built these and every update raised "unexpected keyword argument 'sample_weight'".
    with pytest.raises(sm.InputError, match=r"NormalizedMutualInfo.update \(inside the metric\)"):
        sm.Decayed(inner(), half_life=10)


def test_a_collection_routes_by_to_its_sliced_members_only() -> None:
    # 0.8.6 passed by= to every member: TypeError "unexpected keyword argument 'by'".
    rng = np.random.default_rng(0)
    y, p = rng.normal(size=200), rng.normal(size=200)
    keys = rng.integers(0, 3, 200)
    c = sm.MetricCollection(s=sm.Sliced(sm.MeanSquaredError()), all=sm.MeanSquaredError())
    c.update(y[:150], p[:150], by=keys[:150])
    for i in range(150, 200):  # one sample at a time: the buffered path routes alike
        c.update(y[i], p[i], by=int(keys[i]))
    alone = sm.MeanSquaredError().update(y, p)  # (float sums: equal to rounding)
    assert c["all"].count == 200 and c["all"].compute() == pytest.approx(alone.compute())
    whole = sm.Sliced(sm.MeanSquaredError()).update(y, p, by=keys)
    assert c.compute()["s"] == pytest.approx(whole.compute())
    window = sm.TumblingWindows(
        sm.MetricCollection(s=sm.Sliced(sm.Accuracy()), all=sm.Accuracy()), width=10
    )
    window.update([0, 1, 1], [0, 1, 0], by=["a", "b", "a"], timestamps=[1, 2, 3])
    assert window.compute() == {0: {"s": {"a": 0.5, "b": 1.0}, "all": 2 / 3}}
