"""Conformance cases for wrappers inside wrappers.

The wrappers' own cases (``windows.py``, ``wrappers_uq.py``, ``collection.py``,
``wrapped_families.py``) put one wrapper around a plain metric; a review found that no
composition went through the laws. Here windows hold slices and slices hold windows, decays and
bootstraps, a window holds a bootstrap, and collections hold wrappers or sit inside ``Sliced``.
Every batch carries each wrapper's own key column (``by``, ``timestamps``, ``ids``) beside the
labels or scores.
"""

from __future__ import annotations

import numpy as np

import streammetrics as sm
from streammetrics.windows import Decayed, SlidingWindow, TumblingWindows
from tests.harness import Case

KEYS = np.array(["de", "fr", "us"])


def _labels(k: int, span: float = 100.0, ids: bool = False, weighted: bool = False):
    """Label pairs with string slice keys and random, out-of-order times over ``span``."""

    def batch(rng: np.random.Generator, n: int):
        kwargs = {"by": KEYS[rng.integers(0, 3, n)], "timestamps": rng.uniform(0, span, n)}
        if ids:
            kwargs["ids"] = rng.integers(0, 2**40, n)
        if weighted:
            kwargs["sample_weight"] = rng.integers(0, 4, n).astype(float)
        return (rng.integers(0, k, n), rng.integers(0, k, n)), kwargs

    return batch


def _scores(rng: np.random.Generator, n: int):
    y = rng.integers(0, 2, n)
    s = rng.integers(0, 20, n) / 20.0
    return (y, s), {"by": rng.integers(0, 4, n), "timestamps": rng.uniform(0, 100, n)}


def _only(batch, *keys: str):
    """``batch`` with only the keyword columns ``keys`` (a wrapper refuses the others)."""

    def cut(rng: np.random.Generator, n: int):
        args, kwargs = batch(rng, n)
        return args, {k: v for k, v in kwargs.items() if k in keys}

    return cut


T2 = [1.0, 2.0]
BAD_TIMED_SLICES = [
    (([0, 1], [0, 1]), {"timestamps": T2}),
    (([0, 1], [0, 1]), {"by": ["de", "fr"]}),
    (([0, 1], [0, 1]), {"by": ["de"], "timestamps": T2}),
    (([0, 1], [0, 1]), {"by": ["de", "fr"], "timestamps": [1.0, float("nan")]}),
    (([0, 1], [0, 1, 1]), {"by": ["de", "fr"], "timestamps": T2}),
    (([0.5, 1], [0, 1]), {"by": ["de", "fr"], "timestamps": T2}),
]
BAD_TIMED_INT_SLICES = [
    (([0, 1], [0.1, 0.2]), {"timestamps": T2}),
    (([0, 1], [0.1, 0.2]), {"by": [0, 1]}),
    (([0, 1], [0.1, 0.2]), {"by": [0], "timestamps": T2}),
    (([0, 2], [0.1, 0.2]), {"by": [0, 1], "timestamps": T2}),
    (([0, 1], [0.1, 1.5]), {"by": [0, 1], "timestamps": T2}),
    (([0, 1], [0.1, float("nan")]), {"by": [0, 1], "timestamps": T2}),
]
BAD_SLICED_IDS = [
    (([0, 1], [0, 1]), {"ids": [1, 2]}),
    (([0, 1], [0, 1]), {"by": ["de", "fr"], "ids": [1]}),
    (([0, 1], [0, 1]), {"by": ["de", "fr"], "ids": [0.5, 1.5]}),
    (([0.5, 1], [0, 1]), {"by": ["de", "fr"], "ids": [1, 2]}),
]
BAD_TIMED_IDS = [
    (([0, 1], [0, 1]), {"ids": [1, 2]}),
    (([0, 1], [0, 1]), {"timestamps": T2, "ids": [1]}),
    (([0, 1], [0, 1]), {"timestamps": [1.0], "ids": [1, 2]}),
    (([0, 1], [0, 1]), {"timestamps": T2, "ids": [1, 2], "sample_weight": [1.0, -1.0]}),
]
BAD_SLICES = [
    (([0, 1], [0, 1]), {}),
    (([0, 1], [0, 1]), {"by": ["de"]}),
    (([0, 1], [0, 1]), {"by": [1, 2]}),  # int keys after string ones
    (([0.5, 1], [0, 1]), {"by": ["de", "fr"]}),
    (([0, 1], [0, 1]), {"by": ["de", "fr"], "sample_weight": [1.0, -1.0]}),
]

CASES = [
    Case(
        "TumblingWindows(Sliced)",
        lambda: TumblingWindows(sm.Sliced(sm.Accuracy()), width=10),
        _only(_labels(3), "by", "timestamps"),
        BAD_TIMED_SLICES,
        other=lambda: TumblingWindows(sm.Sliced(sm.Accuracy()), width=20),
    ),
    Case(
        "Sliced(TumblingWindows)",
        lambda: sm.Sliced(TumblingWindows(sm.ConfusionMatrix(), width=10, retention=4)),
        _only(_labels(3, weighted=True), "by", "timestamps", "sample_weight"),
        BAD_TIMED_SLICES,
        other=lambda: sm.Sliced(TumblingWindows(sm.ConfusionMatrix(), width=10)),
    ),
    Case(
        "SlidingWindow(Sliced(ROCAUC))",
        lambda: SlidingWindow(sm.Sliced(sm.ROCAUC()), width=40, slots=4),
        _scores,
        BAD_TIMED_INT_SLICES,
        other=lambda: SlidingWindow(sm.Sliced(sm.ROCAUC(exact=True)), width=40, slots=4),
    ),
    Case(
        "Sliced(SlidingWindow(ROCAUC-exact))",
        lambda: sm.Sliced(SlidingWindow(sm.ROCAUC(exact=True), width=40, slots=4)),
        _scores,
        BAD_TIMED_INT_SLICES,
        other=lambda: sm.Sliced(SlidingWindow(sm.ROCAUC(exact=True), width=40, slots=5)),
    ),
    Case(
        "Sliced(Decayed)",
        lambda: sm.Sliced(Decayed(sm.Accuracy(), half_life=5)),
        _only(_labels(3, span=500, weighted=True), "by", "timestamps", "sample_weight"),
        BAD_TIMED_SLICES,
        exact=False,
        rtol=1e-9,
        other=lambda: sm.Sliced(Decayed(sm.Accuracy(), half_life=6)),
    ),
    Case(
        "Sliced(Bootstrap)",
        lambda: sm.Sliced(sm.Bootstrap(sm.Accuracy(), replicates=8, seed=1)),
        _only(_labels(3, ids=True), "by", "ids"),
        BAD_SLICED_IDS,
        other=lambda: sm.Sliced(sm.Bootstrap(sm.Accuracy(), replicates=8, seed=2)),
    ),
    Case(
        "TumblingWindows(Bootstrap)",
        lambda: TumblingWindows(sm.Bootstrap(sm.F1(average="macro"), replicates=8), width=25),
        _only(_labels(3, ids=True, weighted=True), "timestamps", "ids", "sample_weight"),
        BAD_TIMED_IDS,
        other=lambda: TumblingWindows(sm.Bootstrap(sm.F1(average="macro"), replicates=9), width=25),
    ),
    Case(
        # Each member takes its own key column (the collection routes by=, timestamps= and
        # ids= to the members that take them) and the labels every member takes.
        "MetricCollection(wrappers)",
        lambda: sm.MetricCollection(
            plain=sm.Accuracy(),
            sliced=sm.Sliced(sm.F1(average="macro")),
            tumbling=TumblingWindows(sm.ConfusionMatrix(), width=10),
            sliding=SlidingWindow(sm.Accuracy(), width=40, slots=4),
            boot=sm.Bootstrap(sm.Accuracy(), replicates=4, seed=4),
        ),
        _labels(3, ids=True),
        [
            (([0, 1], [0, 1]), {"timestamps": T2, "ids": [1, 2]}),
            (([0, 1], [0, 1]), {"by": ["de", "fr"], "ids": [1, 2]}),
            (([0, 1], [0, 1]), {"by": ["de", "fr"], "timestamps": T2, "ids": [0.5, 1]}),
            (([0.5, 1], [0, 1]), {"by": ["de", "fr"], "timestamps": T2, "ids": [1, 2]}),
        ],
        other=lambda: sm.MetricCollection(
            plain=sm.Accuracy(),
            sliced=sm.Sliced(sm.F1(average="macro")),
            tumbling=TumblingWindows(sm.ConfusionMatrix(), width=20),
            sliding=SlidingWindow(sm.Accuracy(), width=40, slots=4),
            boot=sm.Bootstrap(sm.Accuracy(), replicates=4, seed=4),
        ),
    ),
    Case(
        "MetricCollection(Decayed+Sliced)",
        lambda: sm.MetricCollection(
            decayed=Decayed(sm.F1(average="micro"), half_life=10),
            sliced=sm.Sliced(sm.Accuracy()),
        ),
        _only(_labels(3, span=300, weighted=True), "by", "timestamps", "sample_weight"),
        BAD_TIMED_SLICES,
        exact=False,
        rtol=1e-9,
        other=lambda: sm.MetricCollection(
            decayed=Decayed(sm.F1(average="micro"), half_life=20),
            sliced=sm.Sliced(sm.Accuracy()),
        ),
    ),
    Case(
        "Sliced(MetricCollection)",
        lambda: sm.Sliced(
            sm.MetricCollection(acc=sm.Accuracy(), cm=sm.ConfusionMatrix()), max_slices=20
        ),
        _only(_labels(4, weighted=True), "by", "sample_weight"),
        BAD_SLICES,
        other=lambda: sm.Sliced(sm.MetricCollection(acc=sm.Accuracy()), max_slices=20),
    ),
]
