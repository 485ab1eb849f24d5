"""Wrappers around metrics they cannot serve: refused when built, with what to do instead; and
a collection routing a wrapper's own keyword column to the members that take it (0.8.7)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.clustering import NormalizedMutualInfo
from streammetrics.detection import MeanAveragePrecision
from streammetrics.ranking import NDCG
from streammetrics.text import BLEU
from tests.harness import assert_same_result


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
        args, keys = ([0, 1], [0, 1]), {"by": ["a", "b"], "timestamps": [1, 2]}
    else:
        keys = {}
    b.update(*args, **keys, ids=np.arange(len(args[0])))
    assert_same_result(b.compute(), make().update(*args, **keys).compute(), 0.0, 0.0)
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


@pytest.mark.parametrize(
    "make, args",
    [
        (lambda: sm.Sliced(BLEU()), ([1, "the cat"], ["1", "the cat"])),
        (lambda: sm.Sliced(sm.GAUC()), ([0, 1], [0.2, 0.8], ["u1", 7])),
        (lambda: sm.TumblingWindows(sm.ConfusionMatrix(), 10), (["a", 1], ["a", "b"])),
        (lambda: sm.SlidingWindow(NDCG(), 10), (["q1", 2], [1.0, 0.0], [0.9, 0.8])),
    ],
)
def test_wrappers_refuse_lists_mixing_strings_and_numbers(make: Any, args: Any) -> None:
    # numpy reads ["a", 1] as the strings ["a", "1"]: Sliced and the windows took such lists,
    # which the bare metric refuses.
    m = make()
    before = m.to_bytes()
    key = {"by": [0, 0]} if isinstance(m, sm.Sliced) else {"timestamps": [1, 2]}
    with pytest.raises(sm.InputError, match=r"string|mixes|str query ids"):
        m.update(*args, **key)
    assert m.to_bytes() == before


@pytest.mark.parametrize(
    "make, key",
    [
        (lambda: sm.Sliced(sm.Accuracy()), {"by": []}),
        (lambda: sm.Sliced(sm.Accuracy()), {"by": ([], [])}),
        (lambda: sm.Sliced(MeanAveragePrecision()), {"by": np.array([], int)}),
        (lambda: sm.TumblingWindows(MeanAveragePrecision(), 10), {"timestamps": []}),
        (lambda: sm.SlidingWindow(MeanAveragePrecision(), 10), {"timestamps": []}),
    ],
)
def test_wrappers_take_empty_plain_lists_as_no_rows(make: Any, key: Any) -> None:
    # API.md: empty batches are a no-op. [] reads as float64 (refused as slice keys), and
    # detection's lists became arrays, which it refuses.
    m = make()
    before = m.to_bytes()
    m.update([], [], **key)
    assert m.to_bytes() == before and m.count == 0


def test_a_late_row_is_checked_against_the_window() -> None:
    # Rows older than a sliding window were checked against an empty metric only: a row of 4
    # class columns beside the window's 3 was dropped silently (the bare metric refuses it).
    s = sm.SlidingWindow(sm.MulticlassROCAUC(), width=10, slots=2)
    s.update([0, 1, 2], np.full((3, 3), 1 / 3), timestamps=[100.0, 100.0, 101.0])
    before = s.to_bytes()
    for t in ([1.0], [1.0, 102.0]):
        with pytest.raises(
            sm.InputError, match=r"4 and 3 classes|4 columns, earlier batches had 3"
        ):
            s.update([0] * len(t), np.full((len(t), 4), 0.25), timestamps=t)
        assert s.to_bytes() == before
    s.update([0], np.full((1, 3), 1 / 3), timestamps=[1.0])  # late and good: dropped
    assert s.dropped == 1


@pytest.mark.parametrize(
    "make", [lambda: sm.TumblingWindows(sm.Accuracy(), 10), lambda: sm.SlidingWindow(sm.F1(), 5)]
)
def test_bootstrap_of_a_wrapper_does_not_say_it_takes_no_weights(make: Any) -> None:
    with pytest.raises(sm.InputError, match="Bootstrap does not wrap a") as info:
        sm.Bootstrap(make())
    assert "sample_weight" not in str(info.value)


def test_interval_and_bootstrap_refusals_name_the_wrapper_that_works():
    """0.8.14 told a ``TumblingWindows(Bootstrap(...))`` to wrap the metric in ``Bootstrap``
    (what it was), and a ``Bootstrap(SlidingWindow(...))`` to use ``TumblingWindows``."""
    windows = sm.TumblingWindows(sm.Bootstrap(sm.Accuracy(), replicates=20), 10)
    windows.update([1, 0], [1, 1], timestamps=[0, 1])
    with pytest.raises(sm.NoIntervalError, match=r"windows\[start\]\.interval\(level\)"):
        windows.interval()
    assert windows.windows[0].interval() == windows.windows[0].interval(0.95)
    for wrapper, advice in [
        (sm.SlidingWindow(sm.Accuracy(), 10), r"SlidingWindow\(Bootstrap\(metric\), \.\.\.\)"),
        (sm.TumblingWindows(sm.Accuracy(), 10), r"TumblingWindows\(Bootstrap\(metric\), \.\.\.\)"),
        (
            sm.Sliced(sm.Accuracy()),
            r"each slice, wrap the other way, Sliced\(Bootstrap\(metric\)\)$",
        ),
    ]:
        with pytest.raises(sm.InputError, match=advice):
            sm.Bootstrap(wrapper)


def test_a_metric_class_where_an_instance_belongs_is_told_so() -> None:
    # 0.8.16: "expected a streammetrics metric, got <class ...>", which reads as a metric
    # passed, refused (review).
    from streammetrics.serving import StateDirectory

    for make in (
        lambda: sm.MetricCollection(a=sm.Accuracy),
        lambda: sm.Sliced(sm.ROCAUC),
        lambda: sm.Bootstrap(sm.Accuracy),
    ):
        with pytest.raises(
            sm.InputError, match=r"got the class \w+, not a metric: give an instance"
        ):
            make()
    with pytest.raises(sm.InputError, match="path:"):  # (a bare TypeError before)
        StateDirectory(123)
