"""Intervals of R2 and explained variance: the fourth-order central moments behind them, the
delta-method variance against a direct computation from the rows, seeded coverage, and the
schema-2 blobs (before the moments were kept) that must still load."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import streammetrics as sm
from streammetrics.regression import ExplainedVariance, R2Score
from streammetrics.states.central import CentralMoments
from streammetrics.uncertainty import explained_delta_se

SHAPE = ((2, 0), (3, 0), (4, 0), (0, 2), (0, 3), (0, 4), (1, 1), (2, 1), (1, 2), (2, 2))
GOLDEN = Path(__file__).parent / "golden"


def _direct(e: np.ndarray, t: np.ndarray, w: np.ndarray) -> dict[tuple[int, int], float]:
    """Central sums computed the slow way, in extended precision."""
    e, t, w = (np.asarray(x, dtype=np.longdouble) for x in (e, t, w))
    de, dt = e - (w @ e) / w.sum(), t - (w @ t) / w.sum()
    return {k: float(w @ (de ** k[0] * dt ** k[1])) for k in SHAPE}


@pytest.mark.parametrize("offset", [0.0, 1e6])
def test_central_moments_match_direct_sums_under_any_split(offset: float) -> None:
    rng = np.random.default_rng(3)
    n = 3000
    e = rng.standard_t(6, n)
    t = offset + rng.exponential(size=n) + 0.3 * e
    w = rng.integers(0, 4, n).astype(float)
    want = _direct(e, t, w)
    cuts = sorted(rng.choice(np.arange(1, n), 9, replace=False))
    parts = [
        CentralMoments(2, SHAPE).batch([e[a:b, None], t[a:b, None]], w[a:b])
        for a, b in itertools.pairwise([0, *cuts, n])
    ]
    rng.shuffle(parts)
    block = CentralMoments(2, SHAPE)
    for p in parts:
        block = block.merged(p)
    assert block.weight == w.sum()
    np.testing.assert_allclose(
        block.mean[:, 0], [np.average(e, weights=w), np.average(t, weights=w)], rtol=1e-13
    )
    for k, i in zip(SHAPE, range(len(SHAPE)), strict=True):
        assert math.isclose(block.moments[i, 0], want[k], rel_tol=1e-8, abs_tol=1e-8 * n), k


def test_central_moments_refuse_an_open_index_set() -> None:
    with pytest.raises(ValueError, match="lower index"):
        CentralMoments(2, [(2, 2)])


@pytest.mark.parametrize("cls,kind", [(R2Score, "r2"), (ExplainedVariance, "ev")])
def test_delta_variance_equals_the_influence_function_of_the_rows(cls, kind) -> None:
    # The variance from the state equals sum w IF**2 / sum w / n_eff computed from the rows.
    rng = np.random.default_rng(11)
    n = 2000
    t = rng.gamma(2.0, size=n)
    p = t + rng.normal(0.3, 0.8, n)
    w = rng.lognormal(0, 0.5, n)
    m = cls().update(t, p, sample_weight=w)
    e = t - p
    big_w = w.sum()
    mt, me = w @ t / big_w, w @ e / big_w
    u = (t - mt) ** 2
    b = w @ u / big_w
    s = e**2 if kind == "r2" else (e - me) ** 2
    a = w @ s / big_w
    influence = -((s - a) - a / b * (u - b)) / b
    n_eff = big_w**2 / (w @ w)
    want = math.sqrt((w @ influence**2) / big_w / n_eff)
    got = explained_delta_se(m.shape, kind, n_eff)
    assert math.isclose(got, want, rel_tol=1e-9)
    assert math.isclose(m.compute(), 1 - a / b, rel_tol=1e-12)
    low, high = m.interval(0.9)
    z = stats.norm.ppf(0.95)
    assert math.isclose(high - low, 2 * z * want, rel_tol=1e-9)


@pytest.mark.parametrize("cls,kind", [(R2Score, "r2"), (ExplainedVariance, "ev")])
@pytest.mark.parametrize("weighted", [False, True])
def test_coverage(cls, kind, weighted: bool) -> None:
    # y_true ~ N(0, 4), y_pred = y_true + N(0, 1) + 0.5: R2 = 1 - 1.25 / 4, EV = 1 - 1 / 4.
    truth = 1 - 1.25 / 4 if kind == "r2" else 0.75
    rng = np.random.default_rng(2024 + weighted)
    streams, n, hits = 400, 300, 0
    for _ in range(streams):
        t = rng.normal(0, 2, n)
        p = t + rng.normal(size=n) + 0.5
        w = rng.lognormal(0, 0.7, n) if weighted else None
        m = cls()
        for chunk in np.array_split(np.arange(n), 3):
            m.update(t[chunk], p[chunk], sample_weight=None if w is None else w[chunk])
        low, high = m.interval(0.95)
        hits += low <= truth <= high
    assert 0.92 <= hits / streams <= 0.98, hits / streams


def test_edge_cases() -> None:
    assert all(math.isnan(v) for v in R2Score().update([1.0], [2.0]).interval())
    constant = R2Score().update([2.0, 2.0, 2.0], [1.0, 2.0, 3.0])
    assert all(math.isnan(v) for v in constant.interval())
    perfect = ExplainedVariance().update([1.0, 2.0, 4.0], [1.0, 2.0, 4.0])
    assert perfect.interval() == (1.0, 1.0)
    with pytest.raises(sm.NoIntervalError, match="Bootstrap"):
        R2Score().update(np.ones((4, 2)), np.zeros((4, 2))).interval()
    with pytest.raises(sm.NoIntervalError):
        ExplainedVariance(multioutput="raw_values").update([1.0, 2.0], [1.0, 3.0]).interval()
    with pytest.raises(sm.InputError, match="level"):
        R2Score().update([1.0, 2.0, 3.0], [1.0, 2.0, 2.0]).interval(1.5)


@pytest.mark.parametrize(
    "case_id", ["R2Score-large-mean", "R2Score-variance-weighted", "ExplainedVariance"]
)
def test_schema2_blobs_still_load(case_id: str) -> None:
    # Blobs written before the state kept ``shape`` (schema 2): same value; interval unknown
    # (nan) until reset, also after merging fresh rows in; the upgraded state re-serialises
    # in the new layout.
    old = (GOLDEN / "schema2" / f"{case_id}.bin").read_bytes()
    pinned = json.loads((GOLDEN / "index.json").read_text())[case_id]["compute"]
    metric = sm.loads(old)
    value = metric.compute()
    got = value.tolist() if isinstance(value, np.ndarray) else value
    want = pinned["nd"] if isinstance(pinned, dict) and "nd" in pinned else pinned
    if isinstance(want, dict):
        want = float(want["f"])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    again = sm.loads(metric.to_bytes())
    assert again.to_bytes() == metric.to_bytes()
    assert math.isnan(metric.weight_sq)
    width = metric.moments.width
    rng = np.random.default_rng(0)
    fresh = type(metric)(**metric._config).update(
        rng.normal(size=(50, width)), rng.normal(size=(50, width))
    )
    merged = metric.copy().merge(fresh)
    assert math.isnan(merged.weight_sq)
    if width == 1:
        assert all(math.isnan(v) for v in merged.interval())
        metric.reset()
        metric.update(rng.normal(size=20), rng.normal(size=20))
        assert all(math.isfinite(v) for v in metric.interval())


@pytest.mark.parametrize("cls", [R2Score, ExplainedVariance])
def test_interval_of_a_tiny_spread_is_nan_not_an_error(cls: type) -> None:
    # Var(y_true) ~ 1e-200: its square (the scale of the fourth moments) underflows, and
    # 0.8.10 divided by it (ZeroDivisionError). The value stays exact; the interval is nan
    # where the state's fourth moments lost their digits, and right just above that.
    base_t, base_p = np.array([1.0, 2, 3, 4]), np.array([1.5, 2, 2.5, 4.5])
    want = cls().update(base_t, base_p).interval()
    for scale in (1e-100, 1e-81, 1e-79):
        m = cls().update(base_t * scale, base_p * scale)
        assert m.compute() == pytest.approx(cls().update(base_t, base_p).compute(), rel=1e-12)
        low, high = m.interval()
        assert math.isnan(low) and math.isnan(high)
    got = cls().update(base_t * 1e-60, base_p * 1e-60).interval()
    assert got == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("cls", [R2Score, ExplainedVariance])
@pytest.mark.parametrize("forge", ["weight", "m20"])
def test_a_forged_shape_block_gives_an_interval_or_nan_never_overflow(cls, forge) -> None:
    # 0.8.12: R2Score's interval raised OverflowError (Python's float power) for a decoded
    # shape block whose weight or (2, 0) sum, each within its bound, disagreed with the moments.
    from streammetrics import _codec

    rng = np.random.default_rng(0)
    t = rng.normal(size=30)
    tree = _codec.decode(cls().update(t, t + rng.normal(size=30)).to_bytes())
    shape = tree["state"]["shape"]
    if forge == "weight":
        shape["weight"] = 1e-300
    else:
        shape["moments"] = shape["moments"].copy()
        shape["moments"][0, 0] = 2.0**530
    m = sm.loads(_codec.encode(tree))
    low, high = m.interval(0.9)
    assert (math.isnan(low) and math.isnan(high)) or low <= m.compute() <= high
