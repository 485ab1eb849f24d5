"""Conformance cases for the uncertainty and slice wrappers: Bootstrap and Sliced."""

from __future__ import annotations

import numpy as np

import streammetrics as sm
from streammetrics.text import BLEU, CHRF
from tests.harness import Case


def _labels(k: int, ids: bool = False, weighted: bool = False):
    def batch(rng: np.random.Generator, n: int):
        kwargs = {}
        if ids:
            kwargs["ids"] = rng.integers(0, 2**40, n)
        if weighted:
            kwargs["sample_weight"] = rng.integers(0, 4, n).astype(float)
        return (rng.integers(0, k, n), rng.integers(0, k, n)), kwargs

    return batch


def _clusters_with_ids(rng: np.random.Generator, n: int):
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(0, 2, n) * rng.integers(0, 4, n)) % 4
    return (a, b), {"ids": rng.integers(0, 2**40, n)}


#: Two hypotheses beside one set of references; a reference that is no text.
BAD_SENTENCES_WITH_IDS = [
    ((["a b", "c"], [["a b"]]), {"ids": ["x", "y"]}),
    ((["a"], [[3]]), {"ids": ["x"]}),
]


def _sentences_with_ids(rng: np.random.Generator, n: int):
    words = np.array("the a cat dog sat on mat ran fast".split())
    hyps = [" ".join(words[rng.integers(0, 9, int(rng.integers(1, 8)))]) for _ in range(n)]
    refs = [[" ".join(words[rng.integers(0, 9, int(rng.integers(1, 8)))])] for _ in range(n)]
    return (hyps, refs), {"ids": [f"doc-{i}" for i in rng.integers(0, 10**9, n)]}


def _scores_with_string_ids(rng: np.random.Generator, n: int):
    y = rng.integers(0, 2, n)
    s = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1)
    return (y, s), {"ids": [f"req-{i}" for i in rng.integers(0, 10**9, n)]}


def _sliced_labels(rng: np.random.Generator, n: int):
    return (rng.integers(0, 3, n), rng.integers(0, 3, n)), {"by": rng.integers(0, 6, n)}


def _sliced_binary_labels(rng: np.random.Generator, n: int):
    # Binary labels, some rows weighted: each slice judges its own label set, so its rows
    # take the grouped fold of label counts, not one packed table (0.8.30).
    yt, yp = rng.integers(0, 2, n), rng.integers(0, 2, n)
    w = rng.choice(np.array([1.0, 0.5, 2.0]), n)
    return (yt, yp), {"by": rng.integers(0, 6, n), "sample_weight": w}


def _sliced_binary_rows(rng: np.random.Generator, n: int):
    # Unweighted binary labels over string keys: one sample at a time, a slice's first row and
    # its second label wait in the buffer when its labels pass the rule (0.8.30).
    yt, yp = rng.integers(0, 2, n), rng.integers(0, 2, n)
    return (yt, yp), {"by": rng.choice(np.array(["de", "fr", "us", "jp", "br"]), n)}


def _sliced_scores(rng: np.random.Generator, n: int):
    y = rng.integers(0, 2, n)
    s = rng.integers(0, 20, n) / 20.0
    by = rng.choice(np.array(["de", "fr", "us", "jp"]), n)
    return (y, s), {"by": by, "sample_weight": rng.integers(1, 4, n).astype(float)}


def _sliced_probabilities(rng: np.random.Generator, n: int):
    y = rng.integers(0, 2, n)
    p = np.clip(0.3 * y + 0.7 * rng.integers(0, 21, n) / 20.0, 0.0, 1.0)
    by = rng.choice(np.array(["de", "fr", "us"]), n)
    return (y, p), {"by": by, "sample_weight": rng.uniform(0.0, 2.0, n)}


def _sliced_class_probabilities(rng: np.random.Generator, n: int):
    p = np.round(rng.dirichlet(np.ones(3), n) * 10) / 10
    return (rng.integers(0, 3, n), p), {"by": rng.integers(0, 4, n)}


def _sliced_weighted_labels(rng: np.random.Generator, n: int):
    args, kwargs = _sliced_labels(rng, n)
    return args, {**kwargs, "sample_weight": rng.choice(np.array([0.5, 1.0, 3.0]), n)}


def _sliced_regression(rng: np.random.Generator, n: int):
    y = rng.normal(size=n)
    return (y, y + rng.normal(size=n)), {"by": rng.integers(0, 5, n)}


def _sliced_weighted_regression(rng: np.random.Generator, n: int):
    args, kwargs = _sliced_regression(rng, n)
    return args, {**kwargs, "sample_weight": rng.uniform(0.0, 2.0, n)}


def _sliced_composite(rng: np.random.Generator, n: int):
    country = rng.choice(np.array(["de", "fr", "us"]), n)
    device = rng.integers(0, 3, n)
    # One (country, device) row per sample: a 2-D column the harness can cut into rows (the
    # tuple-of-columns form is tested in tests/test_sliced.py).
    by = np.empty((n, 2), dtype=object)
    by[:, 0], by[:, 1] = country, device
    return (rng.integers(0, 2, n), rng.integers(0, 2, n)), {"by": by}


BAD_BOOTSTRAP = [
    (([0, 1], [0, 1, 1]), {}),
    (([0, 1], [0, 1]), {"ids": [1]}),
    (([0, 1], [0, 1]), {"ids": [0.5, 1.5]}),
    (([0, 1], [0, 1]), {"sample_weight": [-1.0, 1.0]}),
    (([0.5, 1], [0, 1]), {}),
]

BAD_SLICED = [
    (([0, 1], [0, 1]), {}),
    (([0, 1], [0, 1]), {"by": [1]}),
    (([0, 1], [0, 1]), {"by": [0.5, 1.5]}),
    (([0, 1], [0, 1]), {"by": ["a", "b"]}),  # keys of another kind than the stream's ints
    (([0, 1], [0, 1, 1]), {"by": [0, 1]}),
    (([0, 1], [0, 1]), {"by": [0, 1], "sample_weight": [1.0, -1.0]}),
]

CASES = [
    Case(
        "Bootstrap-ids",
        lambda: sm.Bootstrap(sm.Accuracy(), replicates=20, seed=3),
        _labels(3, ids=True),
        BAD_BOOTSTRAP,
        other=lambda: sm.Bootstrap(sm.Accuracy(), replicates=20, seed=4),
    ),
    Case(
        "Bootstrap-ids-weighted",
        lambda: sm.Bootstrap(sm.F1(average="macro"), replicates=16),
        _labels(4, ids=True, weighted=True),
        BAD_BOOTSTRAP,
        other=lambda: sm.Bootstrap(sm.F1(average="macro"), replicates=17),
    ),
    Case(
        "Bootstrap-auc-string-ids",
        lambda: sm.Bootstrap(sm.ROCAUC(), replicates=12, seed=1),
        _scores_with_string_ids,
        [(([0, 1], [0.2, 1.5]), {"ids": ["a", "b"]}), (([0, 1], [0.2, 0.5]), {"ids": ["a"]})],
        other=lambda: sm.Bootstrap(sm.ROCAUC(exact=True), replicates=12, seed=1),
    ),
    Case(
        "Bootstrap-no-ids",
        lambda: sm.Bootstrap(sm.Accuracy(), replicates=20),
        _labels(3),
        BAD_BOOTSTRAP,
        exact=False,  # row positions differ between splits; the value does not
        split_interval=False,  # nor do its replicates: its interval differs between splits
        other=lambda: sm.Bootstrap(sm.Accuracy(), replicates=21),
    ),
    Case(
        "Bootstrap-rows-ari",  # no sample_weight: rows repeated by their Poisson counts
        lambda: sm.Bootstrap(sm.AdjustedRandIndex(), replicates=8, seed=5),
        _clusters_with_ids,
        [
            (([0, 1], [0, 1, 1]), {}),
            (([0, 1], [0, 1]), {"ids": [1]}),
            (([0.5, 1], [0, 1]), {"ids": [1, 2]}),
        ],
        other=lambda: sm.Bootstrap(sm.AdjustedRandIndex(), replicates=8, seed=6),
    ),
    Case(
        "Bootstrap-rows-bleu",
        lambda: sm.Bootstrap(BLEU(), replicates=6, seed=2),
        _sentences_with_ids,
        BAD_SENTENCES_WITH_IDS,
        other=lambda: sm.Bootstrap(BLEU(max_ngram_order=2), replicates=6, seed=2),
    ),
    Case(
        "Sliced-counts",
        lambda: sm.Sliced(sm.ConfusionMatrix()),
        _sliced_labels,
        BAD_SLICED,
        other=lambda: sm.Sliced(sm.ConfusionMatrix(), max_slices=100),
    ),
    Case(
        "Sliced-weighted-counts",  # weighted rows, one per call, buffered (0.8.17)
        lambda: sm.Sliced(sm.F1(average="macro")),
        _sliced_weighted_labels,
        BAD_SLICED,
        other=lambda: sm.Sliced(sm.F1(average="micro")),
    ),
    Case(
        "Sliced-binary-counts",
        lambda: sm.Sliced(sm.F1()),
        _sliced_binary_labels,
        [*BAD_SLICED, (([0, 2], [2, 0]), {"by": [0, 0]})],  # a slice's labels without pos_label
        other=lambda: sm.Sliced(sm.Precision()),
    ),
    Case(
        "Sliced-binary-rows",
        lambda: sm.Sliced(sm.Recall(pos_label=0)),
        _sliced_binary_rows,
        [
            (([0, 1], [0, 1]), {}),
            (([0, 1], [0, 1]), {"by": [1, 2]}),  # int keys beside strings
            (([1, 2], [2, 1]), {"by": ["de", "de"]}),  # two labels without pos_label
        ],
        other=lambda: sm.Sliced(sm.Recall(pos_label=0), max_slices=10),
    ),
    Case(
        "Sliced-auc",
        lambda: sm.Sliced(sm.ROCAUC(exact=True)),
        _sliced_scores,
        [(([0, 1], [0.1, 0.2]), {"by": [1, 2]}), (([0, 1], [0.1, 2.0]), {"by": ["a", "b"]})],
        other=lambda: sm.Sliced(sm.ROCAUC()),
    ),
    Case(
        "Sliced-float",
        lambda: sm.Sliced(sm.MeanSquaredError()),
        _sliced_regression,
        [(([0.0, 1.0], [0.0, float("nan")]), {"by": [0, 1]})],
        exact=False,
        rtol=1e-9,
        other=lambda: sm.Sliced(sm.MeanAbsoluteError()),
    ),
    # One-loss regression metrics are held as one packed table of moments (0.8.20):
    Case(
        "Sliced-rmse",
        lambda: sm.Sliced(sm.RootMeanSquaredError()),
        _sliced_regression,
        [(([0.0, 1.0], [0.0, float("inf")]), {"by": [0, 1]})],
        exact=False,
        rtol=1e-9,
        other=lambda: sm.Sliced(sm.RootMeanSquaredError(multioutput="raw_values")),
    ),
    Case(
        "Sliced-mape-raw",
        lambda: sm.Sliced(sm.MeanAbsolutePercentageError(multioutput="raw_values")),
        _sliced_regression,
        [(([0.0, 1.0], [0.0, 2.0]), {"by": [0, 1], "sample_weight": [1.0, -1.0]})],
        exact=False,
        rtol=1e-9,
        other=lambda: sm.Sliced(sm.MeanAbsolutePercentageError()),
    ),
    # R2, explained variance and Pearson's r: one packed table of moments too (0.8.21).
    Case(
        "Sliced-r2-weighted",
        lambda: sm.Sliced(sm.R2Score()),
        _sliced_weighted_regression,
        [(([0.0, 1.0], [0.0, float("nan")]), {"by": [0, 1], "sample_weight": [1.0, 2.0]})],
        exact=False,
        rtol=1e-9,
        other=lambda: sm.Sliced(sm.R2Score(force_finite=False)),
    ),
    Case(
        "Sliced-pearson",
        lambda: sm.Sliced(sm.PearsonCorrCoef()),
        _sliced_regression,
        [(([0.0, 1.0], [0.0, 1e201]), {"by": [0, 1]})],
        exact=False,
        rtol=1e-9,
        other=lambda: sm.Sliced(sm.ExplainedVariance()),
    ),
    Case(
        "Sliced-report",
        lambda: sm.Sliced(sm.RegressionReport()),
        _sliced_weighted_regression,
        [(([0.0, 1.0], [0.0, 1.0]), {"by": [0, 1], "sample_weight": [1.0, float("nan")]})],
        exact=False,
        rtol=1e-9,
        other=lambda: sm.Sliced(sm.RegressionReport(force_finite=False)),
    ),
    # Log loss and the Brier score: one packed table of sums (0.8.22).
    Case(
        "Sliced-logloss-weighted",
        lambda: sm.Sliced(sm.LogLoss()),
        _sliced_probabilities,
        [
            (([0, 1], [0.5, 1.5]), {"by": [0, 1], "sample_weight": [1.0, 1.0]}),
            (([0, 2], [0.5, 0.5]), {"by": [0, 1]}),
            (([0, 1], [0.5, 0.5]), {"by": [0, 1], "sample_weight": [1.0, -1.0]}),
        ],
        exact=False,
        rtol=1e-9,
        other=lambda: sm.Sliced(sm.LogLoss(eps=1e-7)),
    ),
    Case(
        "Sliced-brier-multiclass",
        lambda: sm.Sliced(sm.BrierScore()),
        _sliced_class_probabilities,
        [
            (([0, 1], [[0.5, 0.5, 1.5], [0.2, 0.2, 0.6]]), {"by": [0, 1]}),
            (([0, 3], [[0.5, 0.5, 0.0], [0.2, 0.2, 0.6]]), {"by": [0, 1]}),
            (([0, 1], [0.5, 0.5]), {"by": [0, 1]}),  # 1-D rows into slices of three columns
        ],
        exact=False,
        rtol=1e-9,
        other=lambda: sm.Sliced(sm.BrierScore(labels=[0, 1, 2])),
    ),
    # The calibration error: one packed table of bin sums (0.8.22).
    Case(
        "Sliced-calibration-weighted",
        lambda: sm.Sliced(sm.CalibrationError(bins=8)),
        _sliced_probabilities,
        [
            (([0, 1], [0.5, 1.5]), {"by": [0, 1], "sample_weight": [1.0, 1.0]}),
            (([0, 1], [[0.5, 0.5], [0.2, 0.8]]), {"by": [0, 1]}),
            (([0, 1], [0.5, 0.5]), {"by": [0, 1], "sample_weight": [1.0, float("nan")]}),
        ],
        exact=False,
        rtol=1e-9,
        other=lambda: sm.Sliced(sm.CalibrationError(bins=9)),
    ),
    Case(
        "Sliced-composite",
        lambda: sm.Sliced(sm.Accuracy(), max_slices=50),
        _sliced_composite,
        [
            (([0, 1], [0, 1]), {"by": (["de", "fr"], [0])}),
            (([0, 1], [0, 1]), {"by": ([0, 1], [0, 1])}),
        ],
        other=lambda: sm.Sliced(sm.Accuracy(), max_slices=51),
    ),
]


def _groups_with_ids(rng: np.random.Generator, n: int):
    y = rng.integers(0, 2, n)
    s = rng.integers(0, 10, n) / 10.0
    return (y, s, rng.integers(0, 5, n)), {"ids": rng.integers(0, 2**40, n)}


def _classes_with_ids(rng: np.random.Generator, n: int):
    p = np.round(rng.dirichlet(np.ones(3), n) * 10) / 10
    return (rng.integers(0, 3, n), p), {"ids": [f"row-{i}" for i in rng.integers(0, 10**9, n)]}


def _regression_with_ids(rng: np.random.Generator, n: int):
    y = rng.normal(size=n)
    kwargs = {"ids": rng.integers(0, 2**40, n), "sample_weight": rng.integers(0, 3, n) * 1.0}
    return (y, y + rng.normal(scale=0.5, size=n)), kwargs


# Bootstrap around the families its cases above leave out: grouped scores (GAUC), a score
# matrix (MulticlassROCAUC), chrF's sentence statistics, and float moments (R2Score). Few
# replicates: each one-sample read computes every replicate.
CASES += [
    Case(
        "Bootstrap-gauc",
        lambda: sm.Bootstrap(sm.GAUC(exact=True), replicates=4, seed=1),
        _groups_with_ids,
        [
            (([0, 1], [0.2, 0.5], [1]), {"ids": [1, 2]}),
            (([0, 1], [0.2, 1.5], [1, 1]), {"ids": [1, 2]}),
            (([0, 1], [0.2, 0.5], [1, 1]), {"ids": [1]}),
        ],
        other=lambda: sm.Bootstrap(sm.GAUC(exact=True), replicates=4, seed=2),
    ),
    Case(
        "Bootstrap-multiclass-auc",
        lambda: sm.Bootstrap(sm.MulticlassROCAUC(), replicates=4, seed=3),
        _classes_with_ids,
        [
            (([0, 1], np.full((2, 3), 0.3)), {"ids": ["a"]}),
            (([0, 5], np.full((2, 3), 0.3)), {"ids": ["a", "b"]}),
            (([0, 1], np.full((2, 4), 0.25)), {"ids": ["a", "b"]}),
        ],
        other=lambda: sm.Bootstrap(sm.MulticlassROCAUC(exact=True), replicates=4, seed=3),
    ),
    Case(
        "Bootstrap-rows-chrf",
        lambda: sm.Bootstrap(CHRF(), replicates=6, seed=2),
        _sentences_with_ids,
        BAD_SENTENCES_WITH_IDS,
        other=lambda: sm.Bootstrap(CHRF(word_order=2), replicates=6, seed=2),
    ),
    Case(
        "Bootstrap-r2",
        lambda: sm.Bootstrap(sm.R2Score(), replicates=4, seed=5),
        _regression_with_ids,
        [
            (([0.0, 1.0], [0.0, float("nan")]), {"ids": [1, 2]}),
            (([0.0, 1.0], [0.0, 1.0]), {"ids": [1]}),
            (([0.0, 1.0], [0.0, 1.0]), {"ids": [1, 2], "sample_weight": [1.0, -1.0]}),
        ],
        exact=False,
        rtol=1e-9,
        other=lambda: sm.Bootstrap(sm.R2Score(force_finite=False), replicates=4, seed=5),
    ),
]
