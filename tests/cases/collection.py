"""Conformance cases for MetricCollection."""

from __future__ import annotations

import numpy as np

import streammetrics as sm
from tests.harness import Case


def _batch(rng: np.random.Generator, n: int):
    return (rng.integers(0, 3, n), rng.integers(0, 3, n)), {}


CASES = [
    Case(
        "MetricCollection",
        lambda: sm.MetricCollection(
            acc=sm.Accuracy(), f1=sm.F1(average="macro"), cm=sm.ConfusionMatrix()
        ),
        _batch,
        [(([0, 1], [0, 1, 2]), {}), (([0, 1], [0, 1]), {"sample_weight": [1, -1]})],
        other=lambda: sm.MetricCollection(acc=sm.Accuracy()),
    ),
    Case(
        # F1(average="binary") refuses a third label that Accuracy accepts: all or nothing.
        "MetricCollection-atomic",
        lambda: sm.MetricCollection(acc=sm.Accuracy(), f1=sm.F1()),
        lambda rng, n: ((rng.integers(0, 2, n), rng.integers(0, 2, n)), {}),
        [(([0, 2], [1, 1]), {})],
    ),
]
