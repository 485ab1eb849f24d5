"""Regression metrics against scikit-learn and scipy, on real and random data, after many
updates, split over shards, through bytes; and the cancellation cases of issue 5."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import pearsonr
from sklearn import metrics as skm
from sklearn.datasets import load_diabetes, load_linnerud
from sklearn.linear_model import LinearRegression, Ridge

import streammetrics as sm
from streammetrics import regression as R
from streammetrics.states.moments import Moments

SKLEARN = {
    R.MeanSquaredError: skm.mean_squared_error,
    R.RootMeanSquaredError: skm.root_mean_squared_error,
    R.MeanAbsoluteError: skm.mean_absolute_error,
    R.MeanAbsolutePercentageError: skm.mean_absolute_percentage_error,
    R.R2Score: skm.r2_score,
    R.ExplainedVariance: skm.explained_variance_score,
}
REPORT_KEYS = {
    "mse": skm.mean_squared_error,
    "rmse": skm.root_mean_squared_error,
    "mae": skm.mean_absolute_error,
    "r2": skm.r2_score,
    "explained_variance": skm.explained_variance_score,
    "mape": skm.mean_absolute_percentage_error,
}


def _sharded(make, t, p, w=None, *, n_shards=7, seed=0):
    """Feed rows in random batches to random shards, merge via bytes in shuffled order."""
    rng = np.random.default_rng(seed)
    shards = [make() for _ in range(n_shards)]
    cuts = np.sort(rng.choice(np.arange(1, len(t)), size=min(40, len(t) - 1), replace=False))
    for idx in np.split(rng.permutation(len(t)), cuts):
        kw = {} if w is None else {"sample_weight": w[idx]}
        shards[int(rng.integers(n_shards))].update(t[idx], p[idx], **kw)
    blobs = [s.to_bytes() for s in shards]
    rng.shuffle(blobs)
    return sm.loads(blobs[0]).merge(*[sm.loads(b) for b in blobs[1:]])


def _close(got, want, rtol):
    np.testing.assert_allclose(np.asarray(got, float), np.asarray(want, float), rtol=rtol, atol=0)


@pytest.fixture(scope="module")
def diabetes():
    X, y = load_diabetes(return_X_y=True)
    pred = Ridge(alpha=0.1).fit(X[::2], y[::2]).predict(X)
    return y, pred


@pytest.fixture(scope="module")
def linnerud():
    X, Y = load_linnerud(return_X_y=True)
    return Y, LinearRegression().fit(X, Y).predict(X)


@pytest.mark.parametrize("cls", list(SKLEARN))
@pytest.mark.parametrize("weighted", [False, True])
def test_diabetes_regressor_matches_sklearn(diabetes, cls, weighted):
    y, pred = diabetes
    w = np.random.default_rng(3).random(len(y)) * 3 if weighted else None
    got = _sharded(cls, y, pred, w).compute()
    _close(got, SKLEARN[cls](y, pred, sample_weight=w), 1e-9)


def test_diabetes_pearson_matches_scipy(diabetes):
    y, pred = diabetes
    _close(_sharded(R.PearsonCorrCoef, y, pred).compute(), pearsonr(y, pred)[0], 1e-9)


def test_weighted_pearson_matches_weighted_covariance(diabetes):
    y, pred = diabetes
    w = np.random.default_rng(4).random(len(y))
    c = np.cov(y, pred, aweights=w)
    _close(
        _sharded(R.PearsonCorrCoef, y, pred, w).compute(),
        c[0, 1] / np.sqrt(c[0, 0] * c[1, 1]),
        1e-9,
    )


@pytest.mark.parametrize(
    "multioutput", ["raw_values", "uniform_average", "variance_weighted", [0.2, 0.5, 0.3]]
)
def test_multioutput_linnerud(linnerud, multioutput):
    Y, P = linnerud
    w = np.random.default_rng(5).integers(1, 4, len(Y)).astype(float)
    for cls in (R.R2Score, R.ExplainedVariance):
        got = _sharded(lambda c=cls: c(multioutput=multioutput), Y, P, w, n_shards=3).compute()
        _close(got, SKLEARN[cls](Y, P, sample_weight=w, multioutput=multioutput), 1e-9)
    if multioutput != "variance_weighted":  # scikit-learn offers it for r2 / EV only
        for cls in (
            R.MeanSquaredError,
            R.RootMeanSquaredError,
            R.MeanAbsoluteError,
            R.MeanAbsolutePercentageError,
        ):
            got = _sharded(lambda c=cls: c(multioutput=multioutput), Y, P, w, n_shards=3)
            _close(
                got.compute(), SKLEARN[cls](Y, P, sample_weight=w, multioutput=multioutput), 1e-9
            )
    pear = _sharded(lambda: R.PearsonCorrCoef(multioutput="raw_values"), Y, P, n_shards=3)
    _close(pear.compute(), [pearsonr(Y[:, j], P[:, j])[0] for j in range(3)], 1e-9)


def test_variance_weighted_extension_for_errors(linnerud):
    Y, P = linnerud
    m = R.MeanSquaredError(multioutput="variance_weighted").update(Y, P)
    var = Y.var(axis=0)
    _close(m.compute(), np.average(((Y - P) ** 2).mean(axis=0), weights=var), 1e-12)


def test_report_matches_sklearn_on_random_2d():
    rng = np.random.default_rng(6)
    t = rng.normal(size=(3000, 4)) * [1, 10, 100, 0.1] + [0, 5, -3, 1e3]
    p = t + rng.normal(size=t.shape)
    w = rng.random(3000)
    r = _sharded(lambda: R.RegressionReport(multioutput="raw_values"), t, p, w).compute()
    for key, fn in REPORT_KEYS.items():
        _close(r[key], fn(t, p, sample_weight=w, multioutput="raw_values"), 1e-9)
    c = [np.cov(t[:, j], p[:, j], aweights=w) for j in range(4)]
    _close(r["pearson"], [x[0, 1] / np.sqrt(x[0, 0] * x[1, 1]) for x in c], 1e-9)
    assert r["count"] == 3000


def _cancellation_data(seed):
    rng = np.random.default_rng(seed)
    off = rng.normal(0, 1e-3, 100_000)
    noise = rng.normal(0, 3e-4, 100_000)
    return 1e6 + off, 1e6 + off + noise + 0.2 * off, off, off + noise + 0.2 * off


def test_billion_values_around_1e6_keep_their_variance():
    # 1e5 rows of weight 1e4: the moments of a billion values around 1e6 with spread 1e-3,
    # fed in 200 batches to 30 shards and merged. Raw sums of squares lose every digit here.
    t, p, t0, p0 = _cancellation_data(7)
    w = np.full(len(t), 1e4)
    shards = [R.RegressionReport() for _ in range(30)]
    for i, idx in enumerate(np.array_split(np.arange(len(t)), 200)):
        shards[i % 30].update(t[idx], p[idx], sample_weight=w[idx])
    r = sum(shards).compute()
    # References on the offsets (exactly t - 1e6), where nothing cancels.
    _close(r["r2"], skm.r2_score(t0, p0), 1e-6)
    _close(r["explained_variance"], skm.explained_variance_score(t0, p0), 1e-6)
    _close(r["pearson"], pearsonr(t0, p0)[0], 1e-6)
    _close(r["mse"], skm.mean_squared_error(t0, p0), 1e-6)
    assert float(np.sum(w * t * t) / w.sum() - (np.sum(w * t) / w.sum()) ** 2) != pytest.approx(
        np.var(t0), rel=1e-2
    )  # the naive formula really fails on this data
    m = sum(shards).moments
    _close(m.comoment_of(0, 0)[0] / m.weight, np.var(t0), 1e-6)
    assert m.weight == 1e9


def test_many_unweighted_batches_around_1e6():
    t, p, t0, p0 = _cancellation_data(8)
    m = R.R2Score()
    for idx in np.array_split(np.arange(len(t)), 2000):
        m.update(t[idx], p[idx])
    _close(m.compute(), skm.r2_score(t0, p0), 1e-6)
    pear = _sharded(R.PearsonCorrCoef, t, p, n_shards=30, seed=9)
    _close(pear.compute(), pearsonr(t0, p0)[0], 1e-6)


def test_constant_columns_and_force_finite():
    m = R.R2Score().update([0.1, 0.1, 0.1], [0.1, 0.1, 0.1])
    assert m.compute() == 1.0  # exactly zero variance, perfect prediction
    m = R.R2Score().update([0.1, 0.1], [0.1, 0.2]).merge(R.R2Score().update([0.1], [0.3]))
    assert m.compute() == 0.0
    assert math.isnan(R.R2Score(force_finite=False).update([2, 2], [2, 2]).compute())
    assert R.R2Score(force_finite=False).update([2, 2], [2, 3]).compute() == -math.inf
    assert math.isnan(R.PearsonCorrCoef().update([1, 2, 3], [5, 5, 5]).compute())
    assert math.isnan(R.R2Score().update([1.0], [2.0]).compute())  # below two samples


def test_zero_weights_and_empty():
    m = R.MeanSquaredError().update([1.0, 2.0], [0.0, 0.0], sample_weight=[0.0, 0.0])
    assert math.isnan(m.compute()) and m.count == 2
    m.update([1.0], [0.0], sample_weight=[2.0])
    assert m.compute() == 1.0
    assert math.isnan(R.MeanSquaredError().compute())
    raw = R.RegressionReport(multioutput="raw_values").compute()
    assert raw["count"] == 0 and np.isnan(raw["mse"]).all()


def test_inputs_and_errors():
    m = R.MeanAbsoluteError().update(3.0, 1.0)  # scalars are one sample
    assert m.compute() == 2.0 and m.count == 1
    m2 = R.MeanAbsoluteError(multioutput="raw_values").update([[1.0], [2.0]], [1.0, 4.0])
    np.testing.assert_array_equal(m2.compute(), [1.0])
    with pytest.raises(sm.InputError, match="multioutput"):
        R.R2Score(multioutput="mean")
    with pytest.raises(sm.InputError, match="multioutput"):
        R.R2Score(multioutput=[1.0, 2.0]).update(np.zeros((3, 3)), np.zeros((3, 3)))
    with pytest.raises(sm.InputError, match="y_true"):
        R.R2Score().update(np.zeros((3, 2)), np.zeros((3, 2))).update([1.0], [1.0])
    with pytest.raises(sm.IncompatibleStateError):
        R.R2Score().update(np.zeros((3, 2)), np.ones((3, 2))).merge(
            R.R2Score().update([1.0], [2.0])
        )


def test_pandas_inputs():
    pd = pytest.importorskip("pandas")
    t = pd.Series([1.0, 2.0, 3.0, 4.0])
    p = pd.Series([1.5, 2.0, 2.0, 5.0])
    _close(R.R2Score().update(t, p).compute(), skm.r2_score(t, p), 1e-12)


def test_moments_block_direct():
    rng = np.random.default_rng(10)
    x = rng.normal(size=(500, 2)) + 1e8
    y = rng.normal(size=(500, 2))
    whole = Moments(2, [(0, 0), (0, 1)])
    whole = whole.merged(whole.batch([x, y], None))
    parts = Moments(2, [(0, 0), (0, 1)])
    for idx in np.array_split(np.arange(500), 9):
        parts.merge(parts.batch([x[idx], y[idx]], None))
    _close(parts.comoment_of(0, 0), whole.comoment_of(0, 0), 1e-9)
    x0 = x - 1e8  # exact: the reference works on small numbers
    _close(parts.comoment_of(1, 0), ((x0 - x0.mean(0)) * (y - y.mean(0))).sum(0), 1e-9)
    _close(parts.comoment_of(0, 0), ((x0 - x0.mean(0)) ** 2).sum(0), 1e-9)
    with pytest.raises(KeyError):
        parts.comoment_of(1, 1)
    back = parts.from_wire(parts.to_wire())
    assert back == parts
    with pytest.raises(ValueError):
        parts.from_wire({"weight": -1.0, "mean": parts.mean, "comoment": parts.comoment})


@pytest.mark.parametrize("outputs", [1, 3])
def test_batches_larger_than_a_scratch_chunk_agree_with_scikit_learn(outputs: int) -> None:
    """A batch longer than the scratch chunk (32,768 values) is summarised chunk by chunk in
    reused buffers: the values match scikit-learn's, and a second metric fed the same rows in
    small batches, to rounding."""
    from sklearn.metrics import mean_absolute_percentage_error, mean_squared_error, r2_score

    from streammetrics.states.moments import CHUNK

    rng = np.random.default_rng(11)
    n = 3 * CHUNK + 17
    t = rng.normal(5.0, 2.0, (n, outputs))
    p = t + rng.normal(0.0, 0.5, (n, outputs))
    w = rng.random(n)
    if outputs == 1:
        t, p = t[:, 0], p[:, 0]
    for cls, ref in [
        (sm.MeanSquaredError, mean_squared_error),
        (sm.MeanAbsolutePercentageError, mean_absolute_percentage_error),
        (sm.R2Score, r2_score),
    ]:
        big = cls().update(t, p, sample_weight=w)
        small = cls()
        for a in range(0, n, 5_000):
            small.update(t[a : a + 5_000], p[a : a + 5_000], sample_weight=w[a : a + 5_000])
        assert big.compute() == pytest.approx(ref(t, p, sample_weight=w), rel=1e-12)
        assert big.compute() == pytest.approx(small.compute(), rel=1e-12)
        assert big.count == n


@pytest.mark.parametrize(
    "make, sk",
    [
        (sm.MeanSquaredError, skm.mean_squared_error),
        (sm.MeanAbsolutePercentageError, skm.mean_absolute_percentage_error),
        (sm.R2Score, skm.r2_score),
    ],
)
def test_merging_a_light_far_state_into_a_heavy_one_keeps_the_heavy_mean(make, sk) -> None:
    # One row of squared error 1e16 beside rows of weight 1e16 and squared error 0.01: a merge
    # stepped from the first operand's mean, whose error the heavy side's share (nearly 1)
    # carried whole: MSE 0.0 one way, 1.01 the other (0.8.18). Now from the heavier mean,
    # either way round, and so also the sequential update and one-sample calls.
    t, p, w = [0.0, 1.0, 1.2], [1e8, 1.1, 1.3], [1.0, 1e16, 1e16]
    want = sk(t, p, sample_weight=w)
    light = make().update(t[:1], p[:1])
    heavy = make().update(t[1:], p[1:], sample_weight=w[1:])
    for merged in (light + heavy, heavy + light, make().merge(light, heavy)):
        assert merged.compute() == pytest.approx(want, rel=1e-12)
    seq = make().update(t[:1], p[:1]).update(t[1:], p[1:], sample_weight=w[1:])
    assert seq.compute() == pytest.approx(want, rel=1e-12)
    one = make()
    for a, b, c in zip(t, p, w, strict=True):
        one.update(a, b, sample_weight=c)
    assert one.compute() == pytest.approx(want, rel=1e-12)
