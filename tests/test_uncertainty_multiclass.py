"""Intervals of MulticlassROCAUC: per-class DeLong intervals, the conservative bound of the
macro and weighted averages, and their seeded coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import streammetrics as sm

MU = np.array([0.5, 1.0, 1.5])
TRUE_AUC = stats.norm.cdf(MU / math.sqrt(2))  # column j: N(mu_j, 1) for class j, N(0, 1) else


def _draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    y = rng.integers(0, 3, n)
    z = rng.normal(size=(n, 3))
    z[np.arange(n), y] += MU[y]
    return y, stats.norm.cdf(z)


def test_per_class_intervals_are_the_one_vs_rest_delong_intervals() -> None:
    y, p = _draw(np.random.default_rng(5), 3000)
    m = sm.MulticlassROCAUC(average=None, exact=True).update(y, p)
    low, high = m.interval(0.9)
    for j in range(3):
        one = sm.ROCAUC(exact=True).update(y == j, p[:, j]).interval(0.9)
        assert low[j] == pytest.approx(one[0], abs=1e-14)
        assert high[j] == pytest.approx(one[1], abs=1e-14)


@pytest.mark.parametrize("average", ["macro", "weighted"])
def test_average_bounds_the_standard_error_by_the_sum_of_the_classes(average: str) -> None:
    y, p = _draw(np.random.default_rng(6), 3000)
    w = np.random.default_rng(7).integers(1, 4, 3000).astype(float)
    m = sm.MulticlassROCAUC(average=average, exact=True).update(y, p, sample_weight=w)
    se, support = [], []
    for j in range(3):
        one = sm.ROCAUC(exact=True).update(y == j, p[:, j], sample_weight=w)
        low, high = one.interval()
        se.append((high - low) / (2 * stats.norm.ppf(0.975)))
        support.append(w[y == j].sum())
    share = np.asarray(support) / sum(support) if average == "weighted" else np.ones(3) / 3
    want_half = stats.norm.ppf(0.975) * float(share @ se)
    low, high = m.interval()
    assert (high - low) / 2 == pytest.approx(want_half, rel=1e-9)
    assert (low + high) / 2 == pytest.approx(m.compute(), rel=1e-12)


def test_micro_refuses_and_empty_is_nan() -> None:
    with pytest.raises(sm.NoIntervalError, match="Bootstrap"):
        sm.MulticlassROCAUC(average="micro").update([0, 1, 2], np.eye(3)).interval()
    assert all(math.isnan(v) for v in sm.MulticlassROCAUC().interval())
    low, high = sm.MulticlassROCAUC(average=None).interval()
    assert low.shape == high.shape == (0,)
    with pytest.raises(sm.InputError, match="level"):
        sm.MulticlassROCAUC().interval(0)


@pytest.mark.parametrize("exact", [True, False])
def test_coverage(exact: bool) -> None:
    # 400 streams of 300 rows: each class's DeLong interval covers its true one-vs-rest AUC in
    # 92-98% of streams; the macro interval, a conservative bound, covers at least 92%.
    rng = np.random.default_rng(99 + exact)
    streams = 400
    per_class = np.zeros(3)
    macro = 0
    for _ in range(streams):
        y, p = _draw(rng, 300)
        parts = [sm.MulticlassROCAUC(average=None, exact=exact) for _ in range(2)]
        parts[0].update(y[:150], p[:150])
        parts[1].update(y[150:], p[150:])
        m = parts[0].merge(parts[1])
        low, high = m.interval()
        per_class += (low <= TRUE_AUC) & (TRUE_AUC <= high)
        mlow, mhigh = sm.MulticlassROCAUC(exact=exact).update(y, p).interval()
        macro += mlow <= TRUE_AUC.mean() <= mhigh
    rates = per_class / streams
    assert np.all((rates >= 0.92) & (rates <= 0.98)), rates
    assert macro / streams >= 0.92, macro / streams
