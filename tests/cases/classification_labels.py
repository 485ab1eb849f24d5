"""Conformance cases for the label-based classification metrics."""

from __future__ import annotations

import numpy as np

import streammetrics as sm
from tests.harness import Case

LABELS = np.array(["cat", "dog", "emu", "yak"])


def _ints(k: int, weighted: bool = False):
    def batch(rng: np.random.Generator, n: int):
        kwargs = {"sample_weight": rng.integers(0, 4, n).astype(float)} if weighted else {}
        return (rng.integers(0, k, n), rng.integers(0, k, n)), kwargs

    return batch


def _wide(k: int, weighted: bool = False):
    ints = _ints(k, weighted)

    def batch(rng: np.random.Generator, n: int):
        return ints(rng, 8 * n)

    return batch


def _strings(rng: np.random.Generator, n: int):
    return (LABELS[rng.integers(0, 4, n)].tolist(), LABELS[rng.integers(0, 4, n)]), {}


BAD_LABEL_PAIRS = [
    (([0, 1, 1], [0, 1]), {}),
    (([0, 1], [0, 1]), {"sample_weight": [1.0, -1.0]}),
    (([0, 1], [0, 1]), {"sample_weight": [1.0, float("nan")]}),
    (([0.5, 1.0], [0, 1]), {}),
    (([[0, 1]], [[0, 1]]), {}),
    ((["a", 1], ["a", "b"]), {}),
]
BAD_STRINGS = [((["cat", "dog"], [0, 1]), {}), ((["cat"], ["dog", "dog"]), {})]

CASES = [
    Case(
        "ConfusionMatrix",
        sm.ConfusionMatrix,
        _ints(5),
        BAD_LABEL_PAIRS,
        other=lambda: sm.ConfusionMatrix(labels=[0, 1, 2, 3, 4]),
    ),
    Case(
        "ConfusionMatrix-fixed",
        lambda: sm.ConfusionMatrix(labels=[4, 0, 3, 1, 2]),
        _ints(5),
        [*BAD_LABEL_PAIRS, (([0, 7], [0, 1]), {})],
        other=sm.ConfusionMatrix,
    ),
    Case("ConfusionMatrix-weighted", sm.ConfusionMatrix, _ints(4, weighted=True), BAD_LABEL_PAIRS),
    Case("ConfusionMatrix-str", sm.ConfusionMatrix, _strings, BAD_STRINGS),
    Case("Accuracy", sm.Accuracy, _ints(3, weighted=True), BAD_LABEL_PAIRS),
    Case(
        "Precision-binary",
        sm.Precision,
        _ints(2),
        [*BAD_LABEL_PAIRS, (([0, 2], [1, 1]), {})],
        other=lambda: sm.Precision(average="macro"),
    ),
    Case(
        "Precision-None-labels",
        lambda: sm.Precision(average=None, labels=[2, 0]),
        _ints(4),
        BAD_LABEL_PAIRS,
    ),
    Case(
        "Recall-weighted",
        lambda: sm.Recall(average="weighted"),
        _ints(6, weighted=True),
        BAD_LABEL_PAIRS,
        other=lambda: sm.Recall(average="macro"),
    ),
    Case(
        "FBeta-micro",
        lambda: sm.FBeta(beta=0.5, average="micro"),
        _ints(4),
        BAD_LABEL_PAIRS,
        other=lambda: sm.FBeta(beta=2.0, average="micro"),
    ),
    Case(
        "F1-macro-str",
        lambda: sm.F1(average="macro", zero_division=float("nan")),
        _strings,
        BAD_STRINGS,
        other=lambda: sm.F1(average="macro"),
    ),
    Case("MatthewsCorrCoef", sm.MatthewsCorrCoef, _ints(3, weighted=True), BAD_LABEL_PAIRS),
    Case(
        "CohenKappa-linear",
        lambda: sm.CohenKappa(weights="linear"),
        _ints(5),
        BAD_LABEL_PAIRS,
        other=sm.CohenKappa,
    ),
    Case(
        "ClassificationReport",
        sm.ClassificationReport,
        _ints(4, weighted=True),
        BAD_LABEL_PAIRS,
        other=lambda: sm.ClassificationReport(labels=[0, 1]),
    ),
    Case("ClassificationReport-str", sm.ClassificationReport, _strings, BAD_STRINGS),
    # Up to 2,000 labels, eight rows per row asked: past 256 labels seen the table has 2**16
    # cells or more, few of them filled, and the counts take the sparse form.
    Case(
        "F1-macro-sparse",
        lambda: sm.F1(average="macro"),
        _wide(2_000, weighted=True),
        BAD_LABEL_PAIRS,
        other=lambda: sm.F1(average="micro"),
    ),
    Case(
        "CohenKappa-quadratic-sparse",
        lambda: sm.CohenKappa(weights="quadratic"),
        _wide(2_000),
        BAD_LABEL_PAIRS,
        other=sm.CohenKappa,
    ),
    Case("MatthewsCorrCoef-sparse", sm.MatthewsCorrCoef, _wide(2_000), BAD_LABEL_PAIRS),
]


def _topk_batch(rng: np.random.Generator, n: int):
    # Scores on a coarse grid so that ties occur and the tie rule is exercised.
    return (rng.integers(0, 5, n), rng.integers(0, 4, (n, 5)) / 4.0), {}


CASES.append(
    Case(
        "TopKAccuracy",
        lambda: sm.TopKAccuracy(k=2),
        _topk_batch,
        [
            ((np.array([0, 5]), np.zeros((2, 5))), {}),
            ((np.array([0, 1]), np.zeros((3, 5))), {}),
            ((np.array([0]), np.array([[0.1, float("inf"), 0, 0, 0]])), {}),
            ((np.array([0]), np.zeros(5)), {}),
        ],
        other=lambda: sm.TopKAccuracy(k=3),
    )
)
