"""Conformance cases for the regression metrics (running float moments: exact=False)."""

from __future__ import annotations

import numpy as np

from streammetrics import regression as R
from tests.harness import Case


def _batch(d: int | None, weighted: bool = False, offset: float = 0.0):
    def batch(rng: np.random.Generator, n: int):
        shape = (n,) if d is None else (n, d)
        t = offset + rng.normal(size=shape)
        p = t + rng.normal(scale=0.5, size=shape)
        kwargs = {"sample_weight": rng.integers(0, 4, n).astype(float)} if weighted else {}
        return (t, p), kwargs

    return batch


BAD = [
    (([1.0, 2.0, 3.0], [1.0, 2.0]), {}),
    (([1.0, 2.0], [1.0, float("nan")]), {}),
    (([1.0, float("inf")], [1.0, 2.0]), {}),
    (([1.0, 2.0], [1.0, 2.0]), {"sample_weight": [1.0, -1.0]}),
    (([1.0, 2.0], [1.0, 2.0]), {"sample_weight": [1.0, 2.0, 3.0]}),
    ((np.zeros((2, 2, 2)), np.zeros((2, 2, 2))), {}),
    ((["a", "b"], [1.0, 2.0]), {}),
]
BAD_2D = [
    *BAD,
    ((np.zeros((2, 3)), np.zeros((2, 2))), {}),
    ((np.zeros((2, 5)), np.zeros((2, 5))), {}),
]
BAD_1D = [*BAD, ((np.zeros((2, 2)), np.zeros((2, 2))), {})]

RTOL = 1e-10  # float moments: split-invariant to rounding only

CASES = [
    Case(
        "MeanSquaredError",
        R.MeanSquaredError,
        _batch(None, True),
        BAD_1D,
        exact=False,
        rtol=RTOL,
        other=lambda: R.MeanSquaredError(multioutput="raw_values"),
    ),
    Case(
        "MeanSquaredError-2d-raw",
        lambda: R.MeanSquaredError(multioutput="raw_values"),
        _batch(3),
        BAD_2D,
        exact=False,
        rtol=RTOL,
        other=R.MeanSquaredError,
    ),
    Case(
        "RootMeanSquaredError",
        R.RootMeanSquaredError,
        _batch(2, True),
        BAD_2D,
        exact=False,
        rtol=RTOL,
        other=lambda: R.RootMeanSquaredError(multioutput=[1.0, 3.0]),
    ),
    Case(
        "MeanAbsoluteError",
        R.MeanAbsoluteError,
        _batch(None),
        BAD_1D,
        exact=False,
        rtol=RTOL,
        other=lambda: R.MeanAbsoluteError(multioutput="raw_values"),
    ),
    Case(
        "MeanAbsolutePercentageError",
        R.MeanAbsolutePercentageError,
        _batch(None, True),
        BAD_1D,
        exact=False,
        rtol=RTOL,
        other=lambda: R.MeanAbsolutePercentageError(multioutput="raw_values"),
    ),
    Case(
        "R2Score-large-mean",
        R.R2Score,
        _batch(None, True, offset=1e6),
        BAD_1D,
        exact=False,
        rtol=1e-8,
        other=lambda: R.R2Score(force_finite=False),
    ),
    Case(
        "R2Score-variance-weighted",
        lambda: R.R2Score(multioutput="variance_weighted"),
        _batch(3),
        BAD_2D,
        exact=False,
        rtol=RTOL,
        other=R.R2Score,
    ),
    Case(
        "ExplainedVariance",
        R.ExplainedVariance,
        _batch(2, True),
        BAD_2D,
        exact=False,
        rtol=RTOL,
        other=lambda: R.ExplainedVariance(multioutput="raw_values"),
    ),
    Case(
        "ExplainedVariance-1d-large-mean",
        R.ExplainedVariance,
        _batch(None, True, offset=1e6),
        BAD_1D,
        exact=False,
        rtol=1e-8,
        other=lambda: R.ExplainedVariance(force_finite=False),
    ),
    Case(
        "PearsonCorrCoef",
        R.PearsonCorrCoef,
        _batch(None, True),
        BAD_1D,
        exact=False,
        rtol=RTOL,
        other=lambda: R.PearsonCorrCoef(multioutput="raw_values"),
    ),
    Case(
        "RegressionReport",
        R.RegressionReport,
        _batch(None, True),
        BAD_1D,
        exact=False,
        rtol=RTOL,
        other=lambda: R.RegressionReport(force_finite=False),
    ),
    Case(
        "RegressionReport-2d-raw",
        lambda: R.RegressionReport(multioutput="raw_values"),
        _batch(3, True),
        BAD_2D,
        exact=False,
        rtol=RTOL,
        other=R.RegressionReport,
    ),
]
