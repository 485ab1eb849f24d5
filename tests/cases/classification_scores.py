"""Conformance cases for the binary-score metrics (AUC, AP, curves, GAUC, calibration)."""

from __future__ import annotations

import numpy as np

import streammetrics as sm
from tests.harness import Case


def _binary(kind: str = "probability", weighted: bool = False, grid: int = 0):
    """Random labels and scores; ``grid`` > 0 rounds scores so that ties occur."""

    def batch(rng: np.random.Generator, n: int):
        y = rng.integers(0, 2, n)
        if kind == "probability":
            x = rng.beta(2, 5, n)
        elif kind == "logit":
            x = rng.normal(0, 4, n)
        else:
            x = rng.standard_cauchy(n) * 1e5
        if grid:
            x = np.round(x * grid) / grid
        kwargs = {"sample_weight": rng.integers(0, 4, n).astype(float)} if weighted else {}
        return (y, x), kwargs

    return batch


BAD_BINARY = [
    (([0, 1, 1], [0.1, 0.2]), {}),
    (([0, 2], [0.1, 0.2]), {}),
    ((["a", "b"], [0.1, 0.2]), {}),
    (([0, 1], [0.1, float("nan")]), {}),
    (([0, 1], [0.1, 0.2]), {"sample_weight": [1.0, -1.0]}),
    (([[0, 1]], [[0.1, 0.2]]), {}),
]
BAD_PROB = [*BAD_BINARY, (([0, 1], [0.1, 1.5]), {}), (([0, 1], [-0.1, 0.5]), {})]


def _gauc_batch(weighted: bool = False, strings: bool = False, kind: str = "probability"):
    def batch(rng: np.random.Generator, n: int):
        (y, x), kwargs = _binary(kind, weighted, grid=50)(rng, n)
        g = rng.integers(0, 6, n)
        groups = np.array(["u0", "u1", "u2", "u3", "u4", "u5"])[g] if strings else g
        return (y, x, groups), kwargs

    return batch


BAD_GAUC = [
    (([0, 1], [0.1, 0.2], [1]), {}),
    (([0, 3], [0.1, 0.2], [1, 1]), {}),
    (([0, 1], [0.1, 1.2], [1, 1]), {}),
    (([0, 1], [0.1, 0.2], [1, 1]), {"sample_weight": [1.0, -2.0]}),
]


def _multiclass(k: int, weighted: bool = False):
    def batch(rng: np.random.Generator, n: int):
        p = rng.dirichlet(np.ones(k), n)
        p = np.round(p * 20) / 20
        kwargs = {"sample_weight": rng.integers(0, 3, n).astype(float)} if weighted else {}
        return (rng.integers(0, k, n), p), kwargs

    return batch


BAD_MULTI = [
    (([0, 1], np.full((3, 3), 0.3)), {}),
    (([0, 5], np.full((2, 3), 0.3)), {}),
    (([0, 1], np.full((2, 3), 1.3)), {}),
    (([0, 1], np.full((2, 4), 0.25)), {}),
]

CASES = [
    Case("ROCAUC", sm.ROCAUC, _binary(), BAD_PROB, other=lambda: sm.ROCAUC(exact=True)),
    Case(
        "ROCAUC-exact-weighted",
        lambda: sm.ROCAUC(exact=True),
        _binary(weighted=True, grid=20),
        BAD_PROB,
        other=sm.ROCAUC,
    ),
    Case(
        "ROCAUC-logit",
        lambda: sm.ROCAUC(score_type="logit"),
        _binary("logit"),
        BAD_BINARY,
        other=lambda: sm.ROCAUC(score_type="logit", resolution=64),
    ),
    Case(
        "ROCAUC-real-weighted",
        lambda: sm.ROCAUC(score_type="real"),
        _binary("real", weighted=True),
        BAD_BINARY,
        other=lambda: sm.ROCAUC(score_type="logit"),
    ),
    Case(
        "AveragePrecision",
        sm.AveragePrecision,
        _binary(grid=30),
        BAD_PROB,
        other=lambda: sm.AveragePrecision(exact=True),
    ),
    Case(
        "AveragePrecision-exact",
        lambda: sm.AveragePrecision(exact=True),
        _binary(weighted=True),
        BAD_PROB,
        other=sm.AveragePrecision,
    ),
    Case(
        "ROCCurve",
        sm.ROCCurve,
        _binary(),
        BAD_PROB,
        other=lambda: sm.ROCCurve(drop_intermediate=False),
    ),
    Case(
        "ROCCurve-exact",
        lambda: sm.ROCCurve(exact=True),
        _binary(weighted=True, grid=10),
        BAD_PROB,
        other=sm.ROCCurve,
    ),
    Case(
        "PRCurve-logit",
        lambda: sm.PRCurve(score_type="logit"),
        _binary("logit"),
        BAD_BINARY,
        other=sm.PRCurve,
    ),
    Case(
        "PRCurve-exact",
        lambda: sm.PRCurve(exact=True),
        _binary(grid=10),
        BAD_PROB,
        other=lambda: sm.PRCurve(exact=True, drop_intermediate=True),
    ),
    Case(
        "GAUC",
        lambda: sm.GAUC(max_exact=8),
        _gauc_batch(),
        BAD_GAUC,
        other=lambda: sm.GAUC(max_exact=9),
    ),
    Case(
        "GAUC-exact-str-weighted",
        lambda: sm.GAUC(exact=True, weighting="clicks"),
        _gauc_batch(weighted=True, strings=True),
        BAD_GAUC[:2],
        other=lambda: sm.GAUC(exact=True),
    ),
    Case(
        "GAUC-logit-uniform",
        lambda: sm.GAUC(score_type="logit", weighting="uniform", max_exact=4),
        _gauc_batch(kind="logit", weighted=True),
        [BAD_GAUC[0], BAD_GAUC[3]],
        other=lambda: sm.GAUC(score_type="logit"),
    ),
    Case(
        "MulticlassROCAUC",
        sm.MulticlassROCAUC,
        _multiclass(3),
        BAD_MULTI,
        other=lambda: sm.MulticlassROCAUC(average="weighted"),
    ),
    Case(
        "MulticlassROCAUC-exact-weighted",
        lambda: sm.MulticlassROCAUC(exact=True, average="weighted"),
        _multiclass(4, weighted=True),
        BAD_MULTI[:3],
        other=lambda: sm.MulticlassROCAUC(exact=True),
    ),
    Case(
        "MulticlassROCAUC-None",
        lambda: sm.MulticlassROCAUC(average=None),
        _multiclass(3),
        BAD_MULTI,
        other=lambda: sm.MulticlassROCAUC(average="micro"),
    ),
    Case(
        "CalibrationError",
        sm.CalibrationError,
        _binary(weighted=True),
        BAD_PROB,
        exact=False,
        rtol=1e-12,
        atol=1e-15,
        other=lambda: sm.CalibrationError(norm="max"),
    ),
    Case(
        "CalibrationError-multiclass",
        lambda: sm.CalibrationError(bins=10, norm="l2"),
        _multiclass(3),
        BAD_MULTI[:3],
        exact=False,
        atol=1e-15,
        other=lambda: sm.CalibrationError(bins=10),
    ),
    Case(
        "LogLoss",
        sm.LogLoss,
        _binary(weighted=True),
        BAD_PROB,
        exact=False,
        other=lambda: sm.LogLoss(eps=1e-7),
    ),
    Case(
        "LogLoss-multiclass",
        sm.LogLoss,
        _multiclass(3),
        BAD_MULTI[:3],
        exact=False,
        other=lambda: sm.LogLoss(labels=[0, 1, 2]),
    ),
    Case(
        "BrierScore",
        sm.BrierScore,
        _binary(weighted=True),
        BAD_PROB,
        exact=False,
        other=lambda: sm.BrierScore(labels=[0, 1]),
    ),
    Case("BrierScore-multiclass", sm.BrierScore, _multiclass(4), BAD_MULTI[:3], exact=False),
]


def _multiclass_numbers(k: int, kind: str):
    """Class score rows that are not probabilities: logits, or reals over many decades."""

    def batch(rng: np.random.Generator, n: int):
        if kind == "logit":
            x = np.round(rng.normal(0, 3, (n, k)) * 4) / 4
        else:
            x = rng.standard_cauchy((n, k)) * 1e4
        return (rng.integers(0, k, n), x), {}

    return batch


def _multiclass_named(rng: np.random.Generator, n: int):
    (y, p), kwargs = _multiclass(3, weighted=True)(rng, n)
    return (NAMES[y], p), kwargs


NAMES = np.array(["cat", "dog", "emu"])
BAD_NUMBERS = [b for b in BAD_MULTI if b is not BAD_MULTI[2]]  # 1.3 is a logit or a real
BAD_FOUR = [*BAD_MULTI[:3], (([0, 1], np.full((2, 5), 0.2)), {})]  # after four columns

# Configurations of the score metrics beyond the defaults above: the other score types (logit,
# real) and exact stores, GAUC's other modes, and MulticlassROCAUC's other averages and labels.
CASES += [
    Case(
        "ROCAUC-exact-logit",
        lambda: sm.ROCAUC(exact=True, score_type="logit"),
        _binary("logit", grid=4),
        BAD_BINARY,
        other=lambda: sm.ROCAUC(exact=True),
    ),
    Case(
        "ROCAUC-exact-real-weighted",
        lambda: sm.ROCAUC(exact=True, score_type="real"),
        _binary("real", weighted=True),
        BAD_BINARY,
        other=lambda: sm.ROCAUC(exact=True, score_type="logit"),
    ),
    Case(
        "AveragePrecision-logit",
        lambda: sm.AveragePrecision(score_type="logit"),
        _binary("logit"),
        BAD_BINARY,
        other=lambda: sm.AveragePrecision(score_type="logit", resolution=64),
    ),
    Case(
        "AveragePrecision-real-weighted",
        lambda: sm.AveragePrecision(score_type="real"),
        _binary("real", weighted=True),
        BAD_BINARY,
        other=lambda: sm.AveragePrecision(score_type="logit"),
    ),
    Case(
        "AveragePrecision-exact-real",
        lambda: sm.AveragePrecision(exact=True, score_type="real"),
        _binary("real", grid=1),
        BAD_BINARY,
        other=lambda: sm.AveragePrecision(score_type="real"),
    ),
    Case(
        "ROCCurve-real",
        lambda: sm.ROCCurve(score_type="real"),
        _binary("real", weighted=True),
        BAD_BINARY,
        other=lambda: sm.ROCCurve(score_type="real", drop_intermediate=False),
    ),
    Case(
        "ROCCurve-exact-logit",
        lambda: sm.ROCCurve(exact=True, score_type="logit"),
        _binary("logit", grid=2),
        BAD_BINARY,
        other=lambda: sm.ROCCurve(exact=True),
    ),
    Case(
        "PRCurve-real",
        lambda: sm.PRCurve(score_type="real"),
        _binary("real"),
        BAD_BINARY,
        other=lambda: sm.PRCurve(score_type="real", resolution=256),
    ),
    Case(
        "GAUC-real",
        lambda: sm.GAUC(score_type="real", max_exact=6),
        _gauc_batch(kind="real"),
        [BAD_GAUC[0], BAD_GAUC[1], BAD_GAUC[3]],
        other=lambda: sm.GAUC(score_type="logit", max_exact=6),
    ),
    Case(
        "GAUC-exact-impressions-weighted",
        lambda: sm.GAUC(exact=True, weighting="impressions"),
        _gauc_batch(weighted=True),
        BAD_GAUC,
        other=lambda: sm.GAUC(exact=True, weighting="uniform"),
    ),
    Case(
        "GAUC-sketch-str",
        lambda: sm.GAUC(max_exact=3),
        _gauc_batch(strings=True),
        BAD_GAUC,
        other=lambda: sm.GAUC(max_exact=3, weighting="clicks"),
    ),
    Case(
        "MulticlassROCAUC-micro",
        lambda: sm.MulticlassROCAUC(average="micro"),
        _multiclass(3, weighted=True),
        BAD_MULTI,
        other=lambda: sm.MulticlassROCAUC(average="micro", exact=True),
    ),
    Case(
        "MulticlassROCAUC-None-exact",
        lambda: sm.MulticlassROCAUC(average=None, exact=True),
        _multiclass(4),
        BAD_FOUR,
        other=lambda: sm.MulticlassROCAUC(average=None),
    ),
    Case(
        "MulticlassROCAUC-logit",
        lambda: sm.MulticlassROCAUC(score_type="logit"),
        _multiclass_numbers(3, "logit"),
        BAD_NUMBERS,
        other=lambda: sm.MulticlassROCAUC(score_type="real"),
    ),
    Case(
        "MulticlassROCAUC-real-weighted-avg",
        lambda: sm.MulticlassROCAUC(score_type="real", average="weighted"),
        _multiclass_numbers(4, "real"),
        [b for b in BAD_FOUR if b is not BAD_FOUR[2]],
        other=lambda: sm.MulticlassROCAUC(score_type="real"),
    ),
    Case(
        "MulticlassROCAUC-labels",
        lambda: sm.MulticlassROCAUC(labels=["cat", "dog", "emu"]),
        _multiclass_named,
        [
            ((["cat", "yak"], np.full((2, 3), 0.3)), {}),
            (([0, 1], np.full((2, 3), 0.3)), {}),
            ((["cat", "dog"], np.full((2, 4), 0.25)), {}),
            ((["cat", "dog"], np.full((2, 3), 1.3)), {}),
        ],
        other=lambda: sm.MulticlassROCAUC(labels=["cat", "dog", "yak"]),
    ),
]

# Settings no case above ran (a review's audit, 0.8.19): each passed the whole harness then.
from tests.cases.classification_labels import _binary_probabilities  # noqa: E402

CASES += [
    Case(
        "ROCCurve-every-threshold-weighted",
        lambda: sm.ROCCurve(drop_intermediate=False),
        _binary(weighted=True),
        BAD_PROB,
        other=lambda: sm.ROCCurve(),
    ),
    Case(
        "PRCurve-drop-intermediate-weighted",
        lambda: sm.PRCurve(drop_intermediate=True),
        _binary(weighted=True, grid=40),
        BAD_PROB,
        other=lambda: sm.PRCurve(),
    ),
    Case(
        "PRCurve-exact-logit",
        lambda: sm.PRCurve(exact=True, score_type="logit"),
        _binary("logit", grid=10),
        BAD_BINARY,
        other=lambda: sm.PRCurve(exact=True),
    ),
    Case(
        "ROCCurve-exact-real-every-threshold",
        lambda: sm.ROCCurve(exact=True, score_type="real", drop_intermediate=False),
        _binary("real", weighted=True, grid=1),
        BAD_BINARY,
        other=lambda: sm.ROCCurve(exact=True, score_type="real"),
    ),
    Case(
        "MulticlassROCAUC-micro-exact-weighted",
        lambda: sm.MulticlassROCAUC(exact=True, average="micro"),
        _multiclass(3, True),
        BAD_MULTI,
        other=lambda: sm.MulticlassROCAUC(exact=True),
    ),
    Case(
        "MulticlassROCAUC-per-class-weighted",
        lambda: sm.MulticlassROCAUC(average=None),
        _multiclass(4, True),
        BAD_MULTI[:3],
        other=lambda: sm.MulticlassROCAUC(),
    ),
    Case(
        "BrierScore-named-labels",
        lambda: sm.BrierScore(labels=["neg", "pos"]),
        _binary_probabilities,
        [((["neg", "yak"], [0.1, 0.2]), {}), ((["neg", "pos"], [0.1, 1.2]), {})],
        exact=False,
        other=lambda: sm.BrierScore(),
    ),
    Case(
        "LogLoss-eps",
        lambda: sm.LogLoss(eps=1e-7),
        _binary(weighted=True),
        BAD_PROB,
        exact=False,
        other=lambda: sm.LogLoss(),
    ),
    Case(
        "CalibrationError-l2-weighted",
        lambda: sm.CalibrationError(norm="l2"),
        _binary(weighted=True),
        BAD_PROB,
        exact=False,
        other=lambda: sm.CalibrationError(),
    ),
]
