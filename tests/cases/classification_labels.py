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


def _two_strings(rng: np.random.Generator, n: int):
    pair = LABELS[:2]
    return (pair[rng.integers(0, 2, n)], pair[rng.integers(0, 2, n)].tolist()), {}


def _probabilities(rng: np.random.Generator, n: int):
    return (rng.integers(0, 2, n), rng.beta(2, 5, n)), {}


def _binary_probabilities(rng: np.random.Generator, n: int):
    y = np.array(["neg", "pos"])[rng.integers(0, 2, n)]
    return (y, np.round(rng.beta(2, 2, n), 3)), {"sample_weight": rng.integers(0, 3, n) * 1.0}


def _named_rows(rng: np.random.Generator, n: int):
    """String classes beside rows of class probabilities, one column per class in order."""
    p = np.round(rng.dirichlet(np.ones(3), n) * 20) / 20
    return (LABELS[rng.integers(0, 3, n)].tolist(), p), {}


BAD_NAMED_ROWS = [
    ((["cat", "yak"], np.full((2, 3), 1 / 3)), {}),
    (([0, 1], np.full((2, 3), 1 / 3)), {}),
    ((["cat", "dog"], np.full((2, 3), 1.5)), {}),
    ((["cat"], np.full((2, 3), 1 / 3)), {}),
]
BAD_PAIR = [*BAD_STRINGS, ((["cat", "emu"], ["cat", "dog"]), {})]  # a third label for binary

# Configurations beyond the defaults above: other averages, string positive labels, normalised
# matrices, the max calibration norm and string labels for the log loss.
CASES += [
    Case(
        "CohenKappa-unweighted",
        lambda: sm.CohenKappa(weights=None),
        _ints(4, weighted=True),
        BAD_LABEL_PAIRS,
        other=lambda: sm.CohenKappa(weights="quadratic"),
    ),
    Case(
        "ConfusionMatrix-normalize-true",
        lambda: sm.ConfusionMatrix(normalize="true"),
        _ints(4, weighted=True),
        BAD_LABEL_PAIRS,
        other=lambda: sm.ConfusionMatrix(normalize="pred"),
    ),
    Case(
        "ConfusionMatrix-normalize-pred-str",
        lambda: sm.ConfusionMatrix(normalize="pred"),
        _strings,
        BAD_STRINGS,
        other=lambda: sm.ConfusionMatrix(normalize="all"),
    ),
    Case(
        "ConfusionMatrix-normalize-all-fixed",
        lambda: sm.ConfusionMatrix(labels=[2, 0, 1], normalize="all"),
        _ints(3),
        [*BAD_LABEL_PAIRS, (([0, 3], [0, 1]), {})],
        other=lambda: sm.ConfusionMatrix(labels=[2, 0, 1]),
    ),
    Case(
        "Precision-macro",
        lambda: sm.Precision(average="macro"),
        _ints(5, weighted=True),
        BAD_LABEL_PAIRS,
        other=lambda: sm.Precision(average="micro"),
    ),
    Case(
        "Recall-str-pos-label",
        lambda: sm.Recall(pos_label="dog"),
        _two_strings,
        BAD_PAIR,
        other=lambda: sm.Recall(pos_label="cat"),
    ),
    Case(
        "F1-binary-weighted",
        sm.F1,
        _ints(2, weighted=True),
        [*BAD_LABEL_PAIRS, (([0, 2], [1, 1]), {})],
        other=lambda: sm.F1(pos_label=0),
    ),
    Case(
        "FBeta-None",
        lambda: sm.FBeta(beta=2.0, average=None),
        _ints(4, weighted=True),
        BAD_LABEL_PAIRS,
        other=lambda: sm.FBeta(beta=2.0, average="macro"),
    ),
    Case(
        "CalibrationError-max",
        lambda: sm.CalibrationError(bins=8, norm="max"),
        _probabilities,
        [
            (([0, 1], [0.1, 1.5]), {}),
            (([0, 2], [0.1, 0.2]), {}),
            (([0, 1], [0.1, float("nan")]), {}),
        ],
        exact=False,
        atol=1e-15,
        other=lambda: sm.CalibrationError(bins=8),
    ),
    Case(
        "LogLoss-str",
        lambda: sm.LogLoss(labels=["neg", "pos"]),
        _binary_probabilities,
        [
            ((["neg", "yak"], [0.1, 0.2]), {}),
            (([0, 1], [0.1, 0.2]), {}),
            ((["neg", "pos"], [0.1, 1.2]), {}),
            ((["neg", "pos"], [0.1, 0.2]), {"sample_weight": [1.0, -1.0]}),
        ],
        exact=False,
        other=lambda: sm.LogLoss(labels=["neg", "pos"], eps=1e-7),
    ),
    Case(
        "LogLoss-multiclass-str",
        lambda: sm.LogLoss(labels=["cat", "dog", "emu"]),
        _named_rows,
        BAD_NAMED_ROWS,
        exact=False,
        other=lambda: sm.LogLoss(labels=["cat", "dog", "yak"]),
    ),
    Case(
        "CalibrationError-max-multiclass-str",
        lambda: sm.CalibrationError(bins=5, norm="max", labels=["cat", "dog", "emu"]),
        _named_rows,
        BAD_NAMED_ROWS,
        exact=False,
        atol=1e-15,
        other=lambda: sm.CalibrationError(bins=5, labels=["cat", "dog", "emu"]),
    ),
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

# Settings no case above ran (a review's audit, 0.8.19): each passed the whole harness then.
CASES += [
    Case(
        "Precision-micro-weighted",
        lambda: sm.Precision(average="micro"),
        _ints(4, True),
        BAD_LABEL_PAIRS,
        other=lambda: sm.Precision(average="macro"),
    ),
    Case(
        "Precision-weighted-fixed-labels",
        lambda: sm.Precision(average="weighted", labels=[3, 1, 5]),
        _ints(4, True),
        BAD_LABEL_PAIRS,
        other=lambda: sm.Precision(average="weighted"),
    ),
    Case(
        "Recall-per-class-weighted",
        lambda: sm.Recall(average=None),
        _ints(4, True),
        BAD_LABEL_PAIRS,
        other=lambda: sm.Recall(average="macro"),
    ),
    Case(
        "Recall-macro-fixed-labels",
        lambda: sm.Recall(average="macro", labels=[0, 1, 2, 3, 7]),
        _ints(4, True),
        BAD_LABEL_PAIRS,
        other=lambda: sm.Recall(average="macro"),
    ),
    Case(
        "F1-weighted-zero-division-1",
        lambda: sm.F1(average="weighted", zero_division=1.0),
        _ints(5, True),
        BAD_LABEL_PAIRS,
        other=lambda: sm.F1(average="weighted"),
    ),
    Case(
        "F1-binary-pos-label-0",
        lambda: sm.F1(pos_label=0),
        _ints(2, True),
        BAD_LABEL_PAIRS,
        other=lambda: sm.F1(),
    ),
    Case(
        "FBeta-macro-strings",
        lambda: sm.FBeta(beta=3.0, average="macro"),
        _strings,
        BAD_STRINGS,
        other=lambda: sm.FBeta(beta=3.0),
    ),
    Case(
        "ClassificationReport-fixed-labels",
        lambda: sm.ClassificationReport(labels=[0, 1, 2, 5]),
        _ints(3, True),
        BAD_LABEL_PAIRS,
        other=lambda: sm.ClassificationReport(),
    ),
    Case(
        "ClassificationReport-zero-division-nan",
        lambda: sm.ClassificationReport(zero_division=float("nan")),
        _ints(4, True),
        BAD_LABEL_PAIRS,
        other=lambda: sm.ClassificationReport(),
    ),
]
