"""Conformance cases for the time-window and decay wrappers."""

from __future__ import annotations

import numpy as np

import streammetrics as sm
from streammetrics.windows import Decayed, SlidingWindow, TumblingWindows
from tests.harness import Case


def _labels(k: int, span: float, ints: bool = False, weighted: bool = False):
    """Random label pairs at random, out-of-order times over ``span``."""

    def batch(rng: np.random.Generator, n: int):
        t = rng.integers(0, int(span), n) if ints else rng.uniform(0, span, n)
        kwargs = {"timestamps": t}
        if weighted:
            kwargs["sample_weight"] = rng.integers(0, 4, n).astype(float)
        return (rng.integers(0, k, n), rng.integers(0, k, n)), kwargs

    return batch


def _nanoseconds(rng: np.random.Generator, n: int):
    """Label pairs at int64 nanosecond times of today (past float64's integers), a few
    microseconds apart, so that a 1 us half-life tells every nanosecond apart."""
    t = 1_700_000_000_123_456_789 + rng.integers(0, 5_000, n)
    return (rng.integers(0, 3, n), rng.integers(0, 3, n)), {"timestamps": t}


def _topk(rng: np.random.Generator, n: int):
    scores = rng.integers(0, 4, (n, 4)) / 4.0
    return (rng.integers(0, 4, n), scores), {"timestamps": rng.uniform(0, 500, n)}


BAD = [
    (([0, 1], [0, 1]), {"timestamps": [1.0]}),
    (([0, 1], [0, 1]), {"timestamps": [1.0, float("nan")]}),
    (([0, 1], [0, 1]), {}),
    (([0.5, 1], [0, 1]), {"timestamps": [1.0, 2.0]}),
    (([0, 1], [0, 1, 1]), {"timestamps": [1.0, 2.0]}),
    (([0, 1], [0, 1]), {"timestamps": ["a", "b"]}),
]

CASES = [
    Case(
        "TumblingWindows",
        lambda: TumblingWindows(sm.Accuracy(), width=10),
        _labels(3, 100),
        BAD,
        other=lambda: TumblingWindows(sm.Accuracy(), width=20),
    ),
    Case(
        "TumblingWindows-retention",
        lambda: TumblingWindows(sm.ConfusionMatrix(), width=7, retention=3),
        _labels(4, 80, True),
        BAD,
        other=lambda: TumblingWindows(sm.ConfusionMatrix(), width=7, retention=4),
    ),
    Case(
        "TumblingWindows-weighted",
        lambda: TumblingWindows(sm.F1(average="macro"), width=25.5),
        _labels(3, 100, weighted=True),
        BAD,
        other=lambda: TumblingWindows(sm.F1(average="micro"), width=25.5),
    ),
    Case(
        "SlidingWindow",
        lambda: SlidingWindow(sm.Accuracy(), width=30, slots=6),
        _labels(3, 100),
        BAD,
        other=lambda: SlidingWindow(sm.Accuracy(), width=30, slots=5),
    ),
    Case(
        "SlidingWindow-int",
        lambda: SlidingWindow(sm.ConfusionMatrix(), width=40, slots=4),
        _labels(3, 200, True),
        BAD,
        other=lambda: SlidingWindow(sm.ConfusionMatrix(), width=40, slots=4, origin=5),
    ),
    Case(
        "Decayed",
        lambda: Decayed(sm.Accuracy(), half_life=2.0),
        _labels(3, 1000),
        BAD,
        exact=False,
        rtol=1e-9,
        other=lambda: Decayed(sm.Accuracy(), half_life=3.0),
    ),
    Case(
        "Decayed-confusion",
        lambda: Decayed(sm.ConfusionMatrix(), half_life=1.5),
        _labels(3, 600, weighted=True),
        BAD,
        exact=False,
        rtol=1e-9,
        other=lambda: Decayed(sm.ConfusionMatrix(labels=[0, 1, 2]), half_life=1.5),
    ),
    Case(
        "Decayed-nanoseconds",
        lambda: Decayed(sm.ConfusionMatrix(), half_life=1_000),
        _nanoseconds,
        BAD,
        exact=False,
        rtol=1e-9,
        other=lambda: Decayed(sm.ConfusionMatrix(), half_life=1_001),
    ),
    Case(
        "Decayed-topk",
        lambda: Decayed(sm.TopKAccuracy(k=2), half_life=20),
        _topk,
        [
            ((np.array([0, 9]), np.zeros((2, 4))), {"timestamps": [0, 1]}),
            ((np.array([0]), np.zeros((1, 4))), {"timestamps": [0], "sample_weight": [-1.0]}),
        ],
        exact=False,
        rtol=1e-9,
        other=lambda: Decayed(sm.TopKAccuracy(k=3), half_life=20),
    ),
]


def _scores(kind: str = "probability", weighted: bool = False, span: float = 400.0):
    """Binary labels and scores (probabilities on a grid, or reals) at random times."""

    def batch(rng: np.random.Generator, n: int):
        y = rng.integers(0, 2, n)
        if kind == "probability":
            x = rng.integers(0, 40, n) / 40
        else:
            x = np.round(rng.standard_cauchy(n) * 1e3, 1)
        kwargs = {"timestamps": rng.uniform(0, span, n)}
        if weighted:
            kwargs["sample_weight"] = rng.integers(0, 4, n).astype(float)
        return (y, x), kwargs

    return batch


def _classes(rng: np.random.Generator, n: int):
    p = np.round(rng.dirichlet(np.ones(3), n) * 10) / 10
    return (rng.integers(0, 3, n), p), {"timestamps": rng.uniform(0, 300, n)}


def _sliced(rng: np.random.Generator, n: int):
    (y, p), kwargs = _labels(3, 500)(rng, n)
    return (y, p), {**kwargs, "by": rng.choice(np.array(["a", "b", "c"]), n)}


BAD_SCORES = [
    (([0, 1], [0.1, 0.2]), {"timestamps": [1.0]}),
    (([0, 1], [0.1, 0.2]), {}),
    (([0, 2], [0.1, 0.2]), {"timestamps": [1.0, 2.0]}),
    (([0, 1], [0.1, float("nan")]), {"timestamps": [1.0, 2.0]}),
    (([0, 1], [0.1, 0.2]), {"timestamps": [1.0, 2.0], "sample_weight": [1.0, -1.0]}),
]
BAD_PROB = [*BAD_SCORES, (([0, 1], [0.1, 1.5]), {"timestamps": [1.0, 2.0]})]
DECAYED = {"exact": False, "rtol": 1e-9}

# Decay around the score metrics (whose states are bucket or exact score tables of weights),
# F1, and the wrappers Decayed looks inside: Sliced and MetricCollection.
CASES += [
    Case(
        "Decayed-ROCAUC",
        lambda: Decayed(sm.ROCAUC(), half_life=10),
        _scores(weighted=True),
        BAD_PROB,
        **DECAYED,
        other=lambda: Decayed(sm.ROCAUC(), half_life=11),
    ),
    Case(
        "Decayed-ROCAUC-exact",
        lambda: Decayed(sm.ROCAUC(exact=True), half_life=3),
        _scores(),
        BAD_PROB,
        **DECAYED,
        other=lambda: Decayed(sm.ROCAUC(), half_life=3),
    ),
    Case(
        "Decayed-ROCAUC-real",
        lambda: Decayed(sm.ROCAUC(score_type="real"), half_life=50),
        _scores("real"),
        BAD_SCORES,
        **DECAYED,
        other=lambda: Decayed(sm.ROCAUC(score_type="logit"), half_life=50),
    ),
    Case(
        "Decayed-AveragePrecision",
        lambda: Decayed(sm.AveragePrecision(), half_life=8),
        _scores(weighted=True),
        BAD_PROB,
        **DECAYED,
        other=lambda: Decayed(sm.AveragePrecision(exact=True), half_life=8),
    ),
    Case(
        "Decayed-MulticlassROCAUC",
        lambda: Decayed(sm.MulticlassROCAUC(), half_life=6),
        _classes,
        [
            (([0, 1], np.full((2, 3), 0.3)), {"timestamps": [1.0]}),
            (([0, 5], np.full((2, 3), 0.3)), {"timestamps": [1.0, 2.0]}),
            (([0, 1], np.full((2, 4), 0.25)), {"timestamps": [1.0, 2.0]}),
        ],
        **DECAYED,
        other=lambda: Decayed(sm.MulticlassROCAUC(average=None), half_life=6),
    ),
    Case(
        "Decayed-F1",
        lambda: Decayed(sm.F1(), half_life=4),
        _labels(2, 300, weighted=True),
        [*BAD, (([0, 2], [0, 1]), {"timestamps": [1.0, 2.0]})],
        exact=False,
        rtol=1e-9,
        # F1's interval differentiates numerically (central differences: about 1e-11 of
        # rounding, docs in F1.interval), so float counts summed in another order move its ends
        # by more than 1e-9 of a small lower end.
        atol=1e-10,
        other=lambda: Decayed(sm.F1(average="macro"), half_life=4),
    ),
    Case(
        "Decayed-Sliced",
        lambda: Decayed(sm.Sliced(sm.Accuracy()), half_life=5),
        _sliced,
        [
            (([0, 1], [0, 1]), {"timestamps": [1.0, 2.0]}),
            (([0, 1], [0, 1]), {"timestamps": [1.0, 2.0], "by": ["a"]}),
            (([0, 1], [0, 1]), {"timestamps": [1.0, 2.0], "by": [1, 2]}),
            (([0.5, 1], [0, 1]), {"timestamps": [1.0, 2.0], "by": ["a", "b"]}),
        ],
        **DECAYED,
        other=lambda: Decayed(sm.Sliced(sm.Accuracy(), max_slices=10), half_life=5),
    ),
    Case(
        "Decayed-MetricCollection",
        lambda: Decayed(
            sm.MetricCollection(acc=sm.Accuracy(), f1=sm.F1(average="macro")), half_life=7
        ),
        _labels(3, 400, weighted=True),
        BAD,
        **DECAYED,
        other=lambda: Decayed(sm.MetricCollection(acc=sm.Accuracy()), half_life=7),
    ),
]
