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
