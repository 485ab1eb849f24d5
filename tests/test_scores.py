"""ROC AUC, AP, curves, multiclass AUC and calibration against scikit-learn."""

from __future__ import annotations

import functools
import math
import random
import warnings
from decimal import Decimal, localcontext

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import (
    average_precision_score,
    brier_score_loss,
    log_loss,
    precision_recall_curve,
    roc_auc_score,
    roc_curve,
)
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import streammetrics as sm
from streammetrics.states.mappings import LogitGrid, ProbabilityGrid, RealBits, mapping_for
from tests.score_datasets import DATASETS

# -- helpers -------------------------------------------------------------------------------------


@functools.cache
def _model_proba(loader):
    """Predicted probabilities of a logistic regression fitted on half of a shipped dataset."""
    data = loader()
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=200))
    model.fit(data.data[::2], data.target[::2])
    return data.target, model.predict_proba(data.data)


def _stream(make, columns, seed, kwargs=None):
    """Feed ``columns`` in random batches to random shards; merge, round-trip through bytes."""
    rnd = random.Random(seed)
    n = len(columns[0])
    cuts = sorted(rnd.sample(range(1, n), min(n - 1, 12)))
    shards = [make() for _ in range(3)]
    for a, b in zip([0, *cuts], [*cuts, n], strict=True):
        extra = {k: v[a:b] for k, v in (kwargs or {}).items()}
        shards[rnd.randrange(3)].update(*(c[a:b] for c in columns), **extra)
    merged = shards[0].merge(shards[1], shards[2])
    return sm.loads(merged.to_bytes())


def _data(seed, n=3000, grid=0, weights=None):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    x = np.clip(rng.normal(0.4 + 0.2 * y, 0.25, n), 0, 1)
    if grid:
        x = np.round(x * grid) / grid
    w = None
    if weights == "float":
        w = rng.random(n) * 3
        w[rng.random(n) < 0.05] = 0.0
    elif weights == "int":
        w = rng.integers(0, 4, n).astype(float)
    return y, x, w


# -- the seed 004 examples -----------------------------------------------------------------------


@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize(
    ("y", "x", "want"),
    [
        ([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8], 0.75),
        ([0, 0, 1, 1], [0.1, 0.4, 0.4, 0.8], 0.875),
        ([0, 1, 1, 0, 0, 1, 1], [0.3, 0.5, 0.5, 0.5, 0.5, 0.7, 0.8], 10 / 12),
    ],
)
def test_seed_004_auc(y, x, want, exact):
    m = sm.ROCAUC(exact=exact).update(y, x)
    assert m.compute() == pytest.approx(want, abs=1e-15)
    assert m.error_bound() == 0.0  # one distinct score per bucket: the sketch is exact
    assert roc_auc_score(y, x) == pytest.approx(want)


# -- exact mode equals scikit-learn --------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("weights", [None, "float", "int"])
@pytest.mark.parametrize("grid", [0, 20])
def test_exact_auc_ap_equal_sklearn(seed, weights, grid):
    y, x, w = _data(seed, grid=grid, weights=weights)
    kw = {} if w is None else {"sample_weight": w}
    auc = _stream(lambda: sm.ROCAUC(exact=True), [y, x], seed, kw)
    ap = _stream(lambda: sm.AveragePrecision(exact=True), [y, x], seed, kw)
    assert auc.compute() == pytest.approx(roc_auc_score(y, x, sample_weight=w), abs=1e-12)
    assert ap.compute() == pytest.approx(average_precision_score(y, x, sample_weight=w), abs=1e-12)
    assert auc.error_bound() == 0.0 and ap.error_bound() == 0.0


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("weights", [None, "int"])
@pytest.mark.parametrize("drop", [True, False])
def test_exact_curves_equal_sklearn(seed, weights, drop):
    y, x, w = _data(seed, n=800, grid=25 if seed else 0, weights=weights)
    kw = {} if w is None else {"sample_weight": w}
    got = _stream(lambda: sm.ROCCurve(exact=True, drop_intermediate=drop), [y, x], seed, kw)
    want = roc_curve(y, x, sample_weight=w, drop_intermediate=drop)
    for a, b in zip(got.compute(), want, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    got = _stream(lambda: sm.PRCurve(exact=True, drop_intermediate=drop), [y, x], seed, kw)
    want = precision_recall_curve(y, x, sample_weight=w, drop_intermediate=drop)
    for a, b in zip(got.compute(), want, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


def test_float_weight_curves_without_dropping():
    y, x, w = _data(7, n=1500, grid=30, weights="float")
    got = _stream(
        lambda: sm.ROCCurve(exact=True, drop_intermediate=False), [y, x], 7, {"sample_weight": w}
    ).compute()
    for a, b in zip(got, roc_curve(y, x, sample_weight=w, drop_intermediate=False), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("loader", [load_breast_cancer, load_wine])
def test_exact_on_real_data(loader):
    data = loader()
    y = (data.target == data.target.max()).astype(int)
    for j in range(0, data.data.shape[1], 4):  # raw features as scores: any scale, many ties
        x = data.data[:, j]
        for st in ("logit", "real"):
            m = _stream(lambda st=st: sm.ROCAUC(exact=True, score_type=st), [y, x], j)
            assert m.compute() == pytest.approx(roc_auc_score(y, x), abs=1e-12)
        ap = _stream(lambda: sm.AveragePrecision(exact=True, score_type="real"), [y, x], j)
        assert ap.compute() == pytest.approx(average_precision_score(y, x), abs=1e-12)
        sketch = _stream(lambda: sm.ROCAUC(score_type="real"), [y, x], j)
        assert abs(sketch.compute() - roc_auc_score(y, x)) <= sketch.error_bound() + 1e-12


def test_one_class_gives_nan():
    m = sm.ROCAUC().update([1, 1], [0.2, 0.3])
    assert math.isnan(m.compute())
    assert math.isnan(sm.AveragePrecision().update([0, 0], [0.2, 0.3]).compute())
    assert math.isnan(sm.ROCAUC().compute()) and math.isnan(sm.ROCAUC().error_bound())


def test_probability_out_of_range_names_logit():
    m = sm.ROCAUC()
    with pytest.raises(sm.InputError, match='score_type="logit"'):
        m.update([0, 1], [0.5, 2.0])
    assert m.count == 0
    sm.ROCAUC(score_type="logit").update([0, 1], [0.5, 2.0])


def test_bad_config():
    for bad in (dict(score_type="prob"), dict(resolution=100), dict(exact=1)):
        with pytest.raises(sm.InputError):
            sm.ROCAUC(**bad)
    with pytest.raises(sm.InputError):
        sm.GAUC(weighting="views")


# -- the bucket mappings -------------------------------------------------------------------------


def _key_decimal(p: float, r: int = 128) -> int:
    """floor(r * logit(p)) clipped, in 60-digit decimal arithmetic (the definition)."""
    if p <= 0.0:
        return 0
    if p >= 1.0:
        return 32 * r + 1
    with localcontext() as ctx:
        ctx.prec = 60
        d = Decimal(p)
        z = (d / (1 - d)).ln() * r
        k = int(z.to_integral_value(rounding="ROUND_FLOOR"))
    return min(max(k, -16 * r - 1), 16 * r) + 16 * r + 1


def test_probability_grid_matches_definition():
    rng = np.random.default_rng(0)
    g = ProbabilityGrid()
    x = np.concatenate([rng.random(300), rng.random(300) ** 12, 1 - rng.random(300) ** 12])
    edges = g.lower_edges(np.arange(1, 4098))
    near = np.concatenate([edges, np.nextafter(edges, 0), np.nextafter(edges, 1)])
    x = np.concatenate([x, rng.choice(near, 600), [0.0, 1.0, 0.5, 5e-324]])
    got = g.keys(x)
    want = np.array([_key_decimal(float(v)) for v in x])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("r", [8, 128, 4096])
def test_probability_grid_at_the_ends(r):
    """The lookup index reads the bits of min(p, 1 - p) * 2**-997: every q below 2**-25 turns
    subnormal and shares the first cells, -0.0 takes the table's last entry; all must still give
    the key of the definition, on both sides, at every resolution."""
    g = ProbabilityGrid(r)
    tiny = np.array([2.0**-25, 2.0**-26, 2.0**-24, 2.0**-23, 1e-7, 1.2e-7, 5e-324, 2.2e-308])
    tiny = np.concatenate([tiny, np.nextafter(tiny, 0), np.nextafter(tiny, 1)])
    x = np.concatenate([tiny, 1.0 - tiny, [-0.0, 0.0, 1.0, 0.5, np.nextafter(0.5, 1.0)]])
    edges = g.lower_edges(np.arange(1, 32 * r + 2))
    rng = np.random.default_rng(r)
    near = rng.choice(edges, 200)
    x = np.concatenate([x, near, np.nextafter(near, 0), np.nextafter(near, 1), rng.random(200)])
    got = g.keys(x)
    want = np.array([_key_decimal(float(v), r) for v in x])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("order", ["random", "ascending", "descending"])
def test_bucket_extremes_over_many_batches(order):
    """Each bucket's smallest and largest score, kept batch by batch (rows inside a bucket's
    current range are screened out before ``ufunc.at``), equal the direct per-bucket min and max,
    whatever the arrival order, including the order where every row is a new extreme."""
    rng = np.random.default_rng(7)
    x = rng.random(150_000) ** 3
    x = {"random": x, "ascending": np.sort(x), "descending": np.sort(x)[::-1].copy()}[order]
    y = rng.integers(0, 2, len(x))
    m = sm.ROCAUC()
    for a in range(0, len(x), 40_000):
        m.update(y[a : a + 40_000], x[a : a + 40_000])
    keys = ProbabilityGrid().keys(x)
    seen = np.unique(keys)
    lo = np.full(4098, np.inf)
    hi = np.full(4098, -np.inf)
    np.minimum.at(lo, keys, x)
    np.maximum.at(hi, keys, x)
    h = m.hist
    np.testing.assert_array_equal(h.keys, seen)
    np.testing.assert_array_equal(h.lo, lo[seen])
    np.testing.assert_array_equal(h.hi, hi[seen])
    np.testing.assert_array_equal(h.pos + h.neg, np.bincount(keys)[seen])


def test_mappings_are_monotone_and_pinned():
    rng = np.random.default_rng(1)
    for name, x in (
        ("probability", np.sort(rng.random(20000))),
        ("logit", np.sort(rng.normal(0, 10, 20000))),
        ("real", np.sort(rng.standard_cauchy(20000) * 1e3)),
    ):
        k = mapping_for(name).keys(x)
        assert (np.diff(k) >= 0).all(), name
    # Golden keys: the mapping is part of the state format and must never drift.
    assert ProbabilityGrid().keys(np.array([0.0, 1e-8, 0.01, 0.5, 0.75, 1.0])).tolist() == [
        0,
        0,
        1460,
        2049,
        2189,
        4097,
    ]
    assert LogitGrid().keys(np.array([-1e9, -16.0, -0.001, 0.0, 3.3, 16.0])).tolist() == [
        0,
        1,
        2048,
        2049,
        2471,
        4097,
    ]
    assert RealBits().keys(np.array([-2.0, -0.0, 0.0, 1.0, 3.0])).tolist() == [
        -131073,
        0,
        0,
        130944,
        131136,
    ]


def test_sketch_curves_on_bucket_edges():
    y, x, _ = _data(3, n=5000)
    m = sm.ROCCurve().update(y, x)
    fpr, tpr, thr = m.compute()
    g = ProbabilityGrid()
    edges = g.lower_edges(np.arange(4098))
    assert np.isin(thr[1:], edges).all()
    for t, f, tp in zip(thr[1:], fpr[1:], tpr[1:], strict=True):  # exact rates at each edge
        assert f == pytest.approx(((x >= t) & (y == 0)).sum() / (y == 0).sum(), abs=1e-15)
        assert tp == pytest.approx(((x >= t) & (y == 1)).sum() / (y == 1).sum(), abs=1e-15)
    p, r, t2 = sm.PRCurve().update(y, x).compute()
    assert p[-1] == 1.0 and r[-1] == 0.0 and len(t2) == len(p) - 1


# -- sketch accuracy on the named distributions ---------------------------------------------------


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_sketch_bound_holds(name):
    y, x = DATASETS[name](200_000, 3)
    auc = sm.ROCAUC()
    ap = sm.AveragePrecision()
    for i in range(0, len(y), 50_000):
        auc.update(y[i : i + 50_000], x[i : i + 50_000])
        ap.update(y[i : i + 50_000], x[i : i + 50_000])
    exact_auc, exact_ap = roc_auc_score(y, x), average_precision_score(y, x)
    assert abs(auc.compute() - exact_auc) <= auc.error_bound() + 1e-12
    assert abs(ap.compute() - exact_ap) <= ap.error_bound() + 1e-12
    assert abs(auc.compute() - exact_auc) < 1e-4
    if name == "heavily_tied":
        assert auc.error_bound() == 0.0 and ap.error_bound() == 0.0


@pytest.mark.parametrize("name", ["ctr_like", "calibrated_auc75"])
def test_sketch_error_at_two_million(name):
    y, x = DATASETS[name](2_000_000, 11)
    auc, ap = sm.ROCAUC(), sm.AveragePrecision()
    for i in range(0, len(y), 250_000):
        auc.update(y[i : i + 250_000], x[i : i + 250_000])
        ap.update(y[i : i + 250_000], x[i : i + 250_000])
    exact_auc, exact_ap = roc_auc_score(y, x), average_precision_score(y, x)
    assert abs(auc.compute() - exact_auc) < 1e-4
    assert abs(ap.compute() - exact_ap) < 1e-3
    assert abs(auc.compute() - exact_auc) <= auc.error_bound()
    assert abs(ap.compute() - exact_ap) <= ap.error_bound()
    assert len(auc.to_bytes()) < 200_000


@pytest.mark.parametrize("score_type", ["logit", "real"])
def test_sketch_on_raw_scores(score_type):
    rng = np.random.default_rng(5)
    y = rng.random(100_000) < 0.4
    z = rng.normal(0, 3, 100_000) + y
    x = z if score_type == "logit" else z * 1e150
    m = sm.ROCAUC(score_type=score_type).update(y, x)
    exact = roc_auc_score(y, x)
    assert abs(m.compute() - exact) <= m.error_bound() + 1e-12
    assert abs(m.compute() - exact) < 1e-4


def test_resolution_trades_memory_for_bound():
    y, x = DATASETS["calibrated_auc75"](100_000, 2)
    bounds = [sm.ROCAUC(resolution=r).update(y, x).error_bound() for r in (16, 128, 1024)]
    assert bounds[0] > bounds[1] > bounds[2]


# -- multiclass and calibration -----------------------------------------------------------------


@pytest.mark.parametrize("loader", [load_iris, load_digits])
@pytest.mark.parametrize("average", ["macro", "weighted", "micro", None])
def test_multiclass_auc_on_real_data(loader, average):
    y, proba = _model_proba(loader)
    want = roc_auc_score(y, proba, multi_class="ovr", average=average)
    exact = _stream(lambda: sm.MulticlassROCAUC(average=average, exact=True), [y, proba], 1)
    np.testing.assert_allclose(exact.compute(), want, rtol=0, atol=1e-12)
    sketch = _stream(lambda: sm.MulticlassROCAUC(average=average), [y, proba], 2)
    assert np.all(
        np.abs(np.asarray(sketch.compute()) - want) <= np.asarray(sketch.error_bound()) + 1e-12
    )


def test_multiclass_weighted_and_labels():
    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.ones(3), 2000)
    names = np.array(["a", "b", "c"])
    y = rng.integers(0, 3, 2000)
    w = rng.random(2000)
    m = sm.MulticlassROCAUC(exact=True, average="weighted", labels=["a", "b", "c"])
    m.update(names[y], p, sample_weight=w)
    want = roc_auc_score(names[y], p, multi_class="ovr", average="weighted", sample_weight=w)
    assert m.compute() == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("bins", [5, 15])
def test_calibration_error_matches_sklearn_curve(bins):
    y, proba = _model_proba(load_breast_cancer)
    p = proba[:, 1]
    prob_true, prob_pred = calibration_curve(y, p, n_bins=bins, strategy="uniform")
    counts = np.bincount(np.searchsorted(np.linspace(0, 1, bins + 1)[1:-1], p), minlength=bins)
    counts = counts[counts > 0]
    gap = np.abs(prob_true - prob_pred)
    for norm, want in (
        ("l1", np.dot(counts / counts.sum(), gap)),
        ("max", gap.max()),
        ("l2", np.sqrt(np.dot(counts / counts.sum(), gap**2))),
    ):
        got = _stream(lambda norm=norm: sm.CalibrationError(bins=bins, norm=norm), [y, p], 3)
        assert got.compute() == pytest.approx(want, rel=1e-12)


def test_calibration_multiclass_top_label():
    rng = np.random.default_rng(8)
    p = rng.dirichlet(np.ones(4), 3000)
    y = rng.integers(0, 4, 3000)
    conf, hit = p.max(axis=1), (p.argmax(axis=1) == y)
    b = np.searchsorted(np.linspace(0, 1, 11)[1:-1], conf)
    ece = sum(
        abs(hit[b == i].mean() - conf[b == i].mean()) * (b == i).mean()
        for i in range(10)
        if (b == i).any()
    )
    assert sm.CalibrationError(bins=10).update(y, p).compute() == pytest.approx(ece, rel=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_logloss_and_brier_match_sklearn(weighted):
    rng = np.random.default_rng(6)
    y = rng.integers(0, 2, 4000)
    p = np.clip(rng.beta(2, 2, 4000) * 0.5 + 0.5 * y * rng.random(4000), 0, 1)
    p[:5] = [0.0, 1.0, 0.0, 1.0, 0.5]  # clipping as scikit-learn clips
    w = rng.random(4000) if weighted else None
    kw = {} if w is None else {"sample_weight": w}
    ll = _stream(sm.LogLoss, [y, p], 1, kw).compute()
    assert ll == pytest.approx(log_loss(y, p, sample_weight=w, labels=[0, 1]), rel=1e-12)
    bs = _stream(sm.BrierScore, [y, p], 2, kw).compute()
    assert bs == pytest.approx(brier_score_loss(y, p, sample_weight=w), rel=1e-12)
    mat = rng.dirichlet(np.ones(3), 4000)
    yc = rng.integers(0, 3, 4000)
    ll3 = _stream(sm.LogLoss, [yc, mat], 3, kw).compute()
    assert ll3 == pytest.approx(log_loss(yc, mat, sample_weight=w), rel=1e-12)
    bs3 = _stream(sm.BrierScore, [yc, mat], 4, kw).compute()
    assert bs3 == pytest.approx(brier_score_loss(yc, mat, sample_weight=w), rel=1e-12)


# -- probability metrics keep one row shape per state ---------------------------------------------


def _prob_batches(seed, columns, n=200):
    """(y_true, y_prob) of ``columns`` classes; ``columns=0`` is the 1-D binary form."""
    rng = np.random.default_rng(seed)
    if columns == 0:
        return rng.integers(0, 2, n), rng.random(n)
    return rng.integers(0, columns, n), rng.dirichlet(np.ones(columns), n)


@pytest.mark.parametrize("make", [sm.LogLoss, sm.BrierScore, sm.CalibrationError])
@pytest.mark.parametrize(("mine", "theirs"), [(0, 3), (3, 0), (2, 3), (0, 2)])
def test_merging_states_of_different_shapes_is_refused(make, mine, theirs):
    a = make().update(*_prob_batches(1, mine))
    b = make().update(*_prob_batches(2, theirs))
    fine = make().update(*_prob_batches(3, mine))
    before, value = a.to_bytes(), a.compute()
    with pytest.raises(sm.IncompatibleStateError, match="cannot merge"):
        a.merge(fine, b)  # all or nothing: the compatible `fine` is not merged either
    with pytest.raises(sm.IncompatibleStateError):
        a + b
    assert a.to_bytes() == before and a.compute() == value
    assert b.to_bytes() == make().update(*_prob_batches(2, theirs)).to_bytes()
    # an empty state merges with either shape, and a same-shape merge still works
    assert make().merge(b) == b
    assert a.copy().merge(fine).count == a.count + fine.count


@pytest.mark.parametrize("make", [sm.LogLoss, sm.BrierScore, sm.CalibrationError])
@pytest.mark.parametrize(("first", "then"), [(0, 3), (3, 0), (2, 3)])
def test_update_of_another_shape_is_refused(make, first, then):
    m = make().update(*_prob_batches(1, first))
    before = m.to_bytes()
    with pytest.raises(sm.InputError, match="y_prob"):
        m.update(*_prob_batches(2, then))
    assert m.to_bytes() == before
    m.update(*_prob_batches(3, then, n=0))  # an empty batch is a no-op, whatever its shape
    assert m.to_bytes() == before


@pytest.mark.parametrize("make", [sm.LogLoss, sm.BrierScore, sm.CalibrationError])
def test_decoded_shape_must_match_the_state(make):
    m = make().update(*_prob_batches(1, 3))
    assert sm.loads(m.to_bytes()) == m
    empty = make()
    empty.columns = 3  # an empty state that claims rows
    with pytest.raises(sm.StateDecodeError, match="columns"):
        sm.loads(empty.to_bytes())


def test_calibration_error_sorts_its_labels():
    rng = np.random.default_rng(11)
    p = rng.dirichlet(np.ones(3), 500)
    codes = rng.integers(0, 3, 500)
    names = np.array(["ant", "bee", "cat"])[codes]  # columns in sorted order: ant, bee, cat
    want = sm.CalibrationError(bins=10).update(codes, p)
    sorted_ = sm.CalibrationError(bins=10, labels=["ant", "bee", "cat"]).update(names, p)
    unsorted = sm.CalibrationError(bins=10, labels=["cat", "ant", "bee"]).update(names, p)
    assert unsorted.config["labels"] == ["ant", "bee", "cat"]
    assert unsorted == sorted_
    assert unsorted.compute() == sorted_.compute() == pytest.approx(want.compute(), rel=1e-12)
    assert unsorted.copy().merge(sorted_).count == 1000  # same config: they merge
    with pytest.raises(sm.InputError, match="y_true"):
        unsorted.update(["ant", "dog"], p[:2])
    with pytest.raises(sm.InputError, match="labels"):
        sm.CalibrationError(labels=["a", "a"])
    # LogLoss and BrierScore read labels as scikit-learn's log_loss does: sorted.
    rng = np.random.default_rng(3)
    probs = rng.dirichlet([1, 1, 1], 300)
    names = np.array(["b", "a", "c"])[rng.integers(0, 3, 300)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # scikit-learn notes that it sorts them
        want_loss = log_loss(names, probs, labels=["c", "a", "b"])
    got = sm.LogLoss(labels=["c", "a", "b"]).update(names, probs).compute()
    assert got == pytest.approx(want_loss, rel=1e-12)
    assert sm.BrierScore(labels=["c", "a", "b"]) == sm.BrierScore(labels=["a", "b", "c"])


@pytest.mark.parametrize("weighted", [False, True])
def test_sketch_merges_of_nested_and_overlapping_buckets_equal_one_stream(weighted):
    """Merging a store into one holding all its buckets (either side larger, as ``sum()``
    does) and merging overlapping stores give the bytes of one metric fed every row."""
    rng = np.random.default_rng(5)
    big_y, big_s = rng.integers(0, 2, 50_000), rng.uniform(size=50_000)
    small_y, small_s = rng.integers(0, 2, 300), rng.uniform(0.4, 0.6, size=300)
    odd_y, odd_s = rng.integers(0, 2, 300), rng.uniform(size=300) ** 9  # buckets the others lack
    w = (lambda n: rng.uniform(0.5, 2.0, n)) if weighted else (lambda n: None)
    wb, ws, wo = w(50_000), w(300), w(300)
    big = sm.ROCAUC().update(big_y, big_s, sample_weight=wb)
    small = sm.ROCAUC().update(small_y, small_s, sample_weight=ws)
    odd = sm.ROCAUC().update(odd_y, odd_s, sample_weight=wo)
    assert set(small.hist.keys.tolist()) <= set(big.hist.keys.tolist())
    for first, second, rows in [
        (big, small, [(big_y, big_s, wb), (small_y, small_s, ws)]),
        (small, big, [(small_y, small_s, ws), (big_y, big_s, wb)]),
        (small, odd, [(small_y, small_s, ws), (odd_y, odd_s, wo)]),
    ]:
        one = sm.ROCAUC()
        for y, s, wt in rows:
            one.update(y, s, sample_weight=wt)
        assert (first + second).to_bytes() == one.to_bytes()
        assert first.copy().merge(second).to_bytes() == one.to_bytes()


@pytest.mark.parametrize(
    "make", [sm.ROCAUC, sm.AveragePrecision, lambda: sm.ROCAUC(score_type="real")]
)
def test_a_shard_of_zero_weight_rows_merges_in_any_order(make) -> None:
    """Zero-weight rows leave no bucket but make the store weighted (float64 counts), as one
    stream of every row has it. A merge of several skipped the empty store, and with it its
    dtype: ``a + b`` (int64) and ``b + a`` (float64) differed byte for byte."""
    import itertools

    a = make().update([1, 1, 0, 1], [0.796, 0.044, 0.775, 0.186])
    b = make().update([1, 1], [0.019, 0.918], sample_weight=[0.0, 0.0])
    c = make().update([0, 1], [0.3, 0.9])
    one = make().update([1, 1, 0, 1], [0.796, 0.044, 0.775, 0.186])
    one.update([1, 1], [0.019, 0.918], sample_weight=[0.0, 0.0]).update([0, 1], [0.3, 0.9])
    for order in itertools.permutations([a, b, c]):
        assert make().merge(*order) == one
        assert order[0].copy().merge(*order[1:]) == one
        assert sum(order) == one
    assert a + b == b + a


@pytest.mark.parametrize(
    "make", [lambda: sm.ROCAUC(exact=True), lambda: sm.ROCAUC(score_type="real")]
)
def test_queued_weighted_batches_take_the_weight_bound_in_merges(make) -> None:
    """A sparse store whose weighted batch was still queued (its main arrays int64) was checked
    against the integer bound, 2**53: a merge the one stream accepts was refused, depending on
    whether the queue had been folded. Weights have the bound 2**100."""
    w = 2.0**60
    s = make().update([1, 0], [0.4, 0.2], sample_weight=[w, 1.0])
    t = make().update([0], [0.1])
    whole = make().update([1, 0], [0.4, 0.2], sample_weight=[w, 1.0]).update([0], [0.1])
    assert t + s == whole
    assert make().merge(s, t) == whole
    assert t + sm.loads(s.to_bytes()) == whole


@pytest.mark.parametrize("margin", [10.0, 18.0, 22.0])
def test_multiclass_brier_of_confident_rows_keeps_its_digits(margin: float) -> None:
    # The row's loss was sum p**2 + (1 - 2 p_true): for p_true near 1 that cancels (0.8.18:
    # 1.9e-4 off scikit-learn at a logit margin of 18, 0.34 at 22, a loss of 1e-20 read 0.0).
    from sklearn.metrics import brier_score_loss

    rng = np.random.default_rng(7)
    y = rng.integers(0, 3, 1000)
    logits = rng.normal(size=(1000, 3))
    logits[np.arange(1000), y] += margin
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    want = brier_score_loss(y, p, labels=[0, 1, 2])
    assert sm.BrierScore().update(y, p).compute() == pytest.approx(want, rel=1e-12, abs=0)
    one = sm.BrierScore().update([0], [[1 - 1e-10, 1e-10, 0.0]]).compute()
    assert one == pytest.approx(
        brier_score_loss([0], [[1 - 1e-10, 1e-10, 0.0]], labels=[0, 1, 2]), rel=1e-12, abs=0
    )


def test_brier_of_two_probability_columns_is_the_binary_brier() -> None:
    # predict_proba of a binary model: scikit-learn halves the multiclass sum for two columns
    # (scale_by_half="auto"); 0.8.3 gave twice its value. Three columns stay unhalved.
    from sklearn.metrics import brier_score_loss

    rng = np.random.default_rng(4)
    y, p = rng.integers(0, 2, 200), rng.random(200)
    w = rng.random(200)
    two = np.column_stack([1 - p, p])
    got = sm.BrierScore().update(y[:70], two[:70], w[:70]) + sm.BrierScore().update(
        y[70:], two[70:], w[70:]
    )
    assert got.compute() == pytest.approx(brier_score_loss(y, two, sample_weight=w), rel=1e-12)
    one = sm.BrierScore().update(y, p, w)
    assert got.compute() == pytest.approx(one.compute(), rel=1e-12)
    assert got.interval() == pytest.approx(one.interval(), rel=1e-9)
    assert sm.loads(got.to_bytes()).compute() == got.compute()
    three = rng.dirichlet([1, 1, 1], 200)
    y3 = rng.integers(0, 3, 200)
    want3 = brier_score_loss(y3, three, labels=[0, 1, 2])
    assert sm.BrierScore().update(y3, three).compute() == pytest.approx(want3, rel=1e-12)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")
def test_multiclass_auc_weighted_leaves_out_classes_not_seen_yet() -> None:
    # A class absent from y_true (or only in rows of weight 0) weighs 0 in the weighted mean,
    # as scikit-learn zeroes its nan; 0.8.3 spread the nan to the value and the interval.
    from sklearn.metrics import roc_auc_score

    p = np.array([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7], [0.3, 0.3, 0.4]])
    for y, w in (([0, 1, 1, 0], None), ([0, 1, 1, 2], [1, 1, 1, 0])):
        kw = {} if w is None else {"sample_weight": w}
        want = roc_auc_score(y, p, multi_class="ovr", average="weighted", labels=[0, 1, 2], **kw)
        for exact in (True, False):
            m = sm.MulticlassROCAUC(average="weighted", exact=exact).update(y, p, **kw)
            assert abs(m.compute() - want) <= (1e-12 if exact else m.error_bound() + 1e-12)
            low, high = m.interval()
            if w is None:  # (weighted: class 0 has one positive, too few for DeLong: nan)
                assert low <= m.compute() <= high


def test_multiclass_probabilities_one_sample_and_empty_per_class() -> None:
    # A scalar label beside its row of class probabilities is one sample (as TopKAccuracy
    # takes it; 0.8.3: "columns differ in length"); an empty per-class result with labels=
    # is nan per label, as F1(average=None, labels=...).
    from sklearn.metrics import log_loss

    row = [0.2, 0.5, 0.3]
    for cls in (sm.MulticlassROCAUC, sm.LogLoss, sm.BrierScore, sm.CalibrationError):
        one, batch = cls().update(1, row), cls().update([1], [row])
        assert one.to_bytes() == batch.to_bytes()
    assert sm.LogLoss().update(1, row).compute() == pytest.approx(
        log_loss([1], [row], labels=[0, 1, 2])
    )
    assert sm.LogLoss().update(1, [0.7]).count == 1  # a one-value row stays a binary sample
    empty = sm.MulticlassROCAUC(average=None, labels=["a", "b", "c"])
    for got in (empty.compute(), empty.error_bound(), *empty.interval()):
        assert got.shape == (3,) and np.isnan(got).all()
    assert sm.MulticlassROCAUC(average=None).compute().shape == (0,)


def test_tiny_weights_give_the_ratios_of_any_scale() -> None:
    # Weights of 1e-170 (or rows decayed over 540 half-lives): products of two weights
    # underflowed, so ROCAUC raised ZeroDivisionError, AveragePrecision gave 0.0 and GAUC
    # dropped the group. Weights are scaled by an exact power of two first.
    from streammetrics.windows import Decayed

    y, s = [0, 1, 0, 1, 1, 0], [0.1, 0.4, 0.35, 0.8, 0.2, 0.5]
    ones = np.ones(6)
    for tiny in (1e-170, 1e-300, 2.0**-1060):
        w = np.full(6, tiny)
        for make in (
            lambda: sm.ROCAUC(exact=True),
            sm.ROCAUC,
            lambda: sm.AveragePrecision(exact=True),
        ):
            assert make().update(y, s, sample_weight=w).compute() == pytest.approx(
                make().update(y, s, sample_weight=ones).compute(), rel=1e-12
            )
        g = sm.GAUC(exact=True).update(y, s, [1, 1, 1, 2, 2, 2], sample_weight=w).compute()
        assert g == pytest.approx(sm.GAUC(exact=True).update(y, s, [1, 1, 1, 2, 2, 2]).compute())
    for cls in (sm.ROCAUC, sm.AveragePrecision):
        decayed = Decayed(cls(), half_life=1.0).update(y, s, timestamps=[0] * 6).at(560)
        assert decayed.compute() == pytest.approx(cls().update(y, s).compute(), rel=1e-12)
    # AveragePrecision's interval: nan unless both classes weigh more than 1 (as ROCAUC's),
    # where 0.8.3 gave (2e-36, 1.0) or raised OverflowError.
    for tiny in (1e-3, 1e-5):
        assert np.isnan(
            sm.AveragePrecision(exact=True).update(y, s, sample_weight=np.full(6, tiny)).interval()
        ).all()


@pytest.mark.parametrize("score_type", ["probability", "logit"])
def test_ap_sketch_bound_holds_for_weights_below_one(score_type: str) -> None:
    # 0.8.4 counted one step per unit of weight: two rows of weight 1e-3 in one bucket gave
    # AP 0.998 with a bound of 0.0016 (exact 0.5), and normalised weights a negative bound.
    from sklearn.metrics import average_precision_score

    m = sm.AveragePrecision(score_type=score_type).update([1, 0], [0.5, 0.5001], [1e-3, 1e-3])
    assert abs(m.compute() - 0.5) <= m.error_bound()
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, 20_000)
    s = np.clip(0.25 * y + 0.75 * rng.random(20_000), 0, 1)
    w = rng.random(20_000)
    want = average_precision_score(y, s, sample_weight=w)
    values = set()
    for scale in (1.0, 1e-2, 1 / w.sum(), 1e3):
        for resolution in (8, 128):
            a = sm.AveragePrecision(score_type=score_type, resolution=resolution)
            a.update(y, s, sample_weight=w * scale)
            assert a.error_bound() >= 0
            assert abs(a.compute() - want) <= a.error_bound() + 1e-12
            values.add((resolution, round(a.compute(), 12)))
    assert len(values) == 2  # the same value at every scale of the weights


@pytest.mark.parametrize("score_type", ["probability", "logit", "real"])
def test_sketch_curve_points_are_the_rates_at_their_thresholds(score_type: str) -> None:
    # 0.8.4 read the "real" sketch's keys at the configured resolution, not the sketch's own:
    # thresholds [inf, 0, 0, 0, 0] for scores 1..4, and rates 0.66 off on random rows.
    rng = np.random.default_rng(11)
    y = rng.integers(0, 2, 3_000)
    s = rng.normal(0.3 * y, 1.0) if score_type != "probability" else rng.random(3_000)
    if score_type == "real":
        s = 1e4 + 250 * s
    fpr, tpr, thr = sm.ROCCurve(score_type=score_type).update(y, s).compute()
    assert (np.diff(thr) < 0).all()
    for t, a, b in zip(thr[1:], fpr[1:], tpr[1:], strict=True):
        assert b == pytest.approx(np.mean(s[y == 1] >= t), abs=1e-12)
        assert a == pytest.approx(np.mean(s[y == 0] >= t), abs=1e-12)
    small = sm.ROCCurve(score_type="real").update([0, 1, 0, 1], [1.0, 2.0, 3.0, 4.0]).compute()
    assert small[2].tolist() == [np.inf, 4.0, 3.0, 2.0, 1.0]


def test_average_precision_bound_holds_with_weights_far_apart() -> None:
    # A bucket's lower end took log1p((a - b) / b) with a - b rounding to 0 beside a weight
    # 1e20 times larger: the bound came out negative (-0.44) and the value fell outside it.
    from sklearn.metrics import average_precision_score

    from streammetrics.states.score_tables import ap_from_table

    y, s = [1, 0, 0, 1, 1], [0.95000001, 0.95, 0.9, 0.1, 0.1000001]
    w = [1, 1, 1e20, 1, 1]
    m = sm.AveragePrecision().update(y, s, sample_weight=w)
    assert m.error_bound() >= 0
    assert abs(m.compute() - average_precision_score(y, s, sample_weight=w)) <= m.error_bound()
    # Counts: the digamma difference cancelled past 2e12 negatives above a bucket.
    value, bound = ap_from_table(
        np.array([0.1, 0.5]), np.array([0.2, 0.5]), np.array([4, 0]), np.array([0, 2 * 10**12])
    )
    exact = sum(j / (2 * 10**12 + j) for j in range(1, 5)) / 4  # each positive below them all
    assert bound >= 0 and value - bound <= exact <= value + bound


def test_multiclass_rocauc_update_names_its_matrix_as_the_contract_does() -> None:
    """API.md: ``MulticlassROCAUC.update(y_true, y_prob_matrix, sample_weight=None)``; 0.8.9
    named the second column ``y_prob``, so keyword callers written from the contract failed."""
    import inspect

    assert list(inspect.signature(sm.MulticlassROCAUC.update).parameters) == [
        "self", "y_true", "y_prob_matrix", "sample_weight",
    ]  # fmt: skip
    probs = [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.5, 0.4, 0.1]]
    by_keyword = sm.MulticlassROCAUC().update(y_true=[0, 1, 2, 1], y_prob_matrix=probs)
    assert by_keyword.to_bytes() == sm.MulticlassROCAUC().update([0, 1, 2, 1], probs).to_bytes()
    with pytest.raises(sm.InputError, match="y_prob_matrix"):
        by_keyword.update([0], [[0.5, 0.5]])


@pytest.mark.parametrize("exact", [True, False])
def test_classes_weighing_far_apart_keep_their_auc_and_ap(exact) -> None:
    # 0.8.12 scaled both classes by one power of two, set by the heavier: positives of weight
    # 1e-300 beside negatives of 1e-60 gave P * N = 0 and ZeroDivisionError (ROCAUC, its
    # bound, MulticlassROCAUC, Sliced); positives of 1e-170 beside negatives of 1 gave AP 0
    # with a bound of 0 (p * (t + p) underflowed).
    from sklearn.metrics import average_precision_score

    rng = np.random.default_rng(4)
    y = rng.random(200) < 0.4
    s = np.round(rng.random(200), 2)
    for wp, wn in [(1e-300, 1e-60), (1e-60, 1e-300), (1e-170, 1.0), (1.0, 1e-170)]:
        w = np.where(y, wp, wn) * rng.uniform(0.5, 2.0, 200)
        auc = sm.ROCAUC(exact=exact).update(y, s, sample_weight=w)
        ap = sm.AveragePrecision(exact=exact).update(y, s, sample_weight=w)
        want_auc = roc_auc_score(y, s, sample_weight=w / w.max())
        want_ap = average_precision_score(y, s, sample_weight=w / w.max())
        if exact:
            assert auc.compute() == pytest.approx(want_auc, rel=1e-12)
            assert ap.compute() == pytest.approx(want_ap, rel=1e-9)
        else:
            assert abs(auc.compute() - want_auc) <= auc.error_bound() + 1e-12
            assert abs(ap.compute() - want_ap) <= ap.error_bound() + 1e-9
        sliced = sm.Sliced(sm.ROCAUC(exact=exact)).update(
            y, s, by=np.zeros(200, int), sample_weight=w
        )
        assert sliced.compute()[0] == auc.compute()
    multi = sm.MulticlassROCAUC(exact=exact).update(
        [0, 1, 2, 0],
        [[0.5, 0.3, 0.2], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [0.4, 0.4, 0.2]],
        sample_weight=[1e-60, 1e-300, 1e-60, 1e-60],
    )
    assert multi.compute() == 1.0


@pytest.mark.parametrize("exact", [True, False])
def test_reads_of_an_unchanged_score_table_are_made_once(exact: bool, monkeypatch) -> None:
    # compute(), interval() and error_bound() are kept with the arrays they were read from
    # (a store's arrays are replaced, never written in place); 0.8.16 read the table again
    # at every call (6-17 ms at a million distinct scores).
    # An exact ROCAUC of counts reads both from its exact sums (states._score_reads).
    from streammetrics.classification import scores
    from streammetrics.states import _score_reads

    calls: dict[str, int] = {}
    for module, name in [(scores, n) for n in ("auc_from_table", "ap_from_table", "delong")] + [
        (_score_reads, "table_sums"),
        (_score_reads, "table_prefix"),
    ]:
        original = getattr(module, name)

        def counted(*args, _name=name, _original=original):
            calls[_name] = calls.get(_name, 0) + 1
            return _original(*args)

        monkeypatch.setattr(module, name, counted)
    rng = np.random.default_rng(5)
    y, s = rng.integers(0, 2, 2000), rng.random(2000)
    auc, ap = sm.ROCAUC(exact=exact).update(y, s), sm.AveragePrecision(exact=exact).update(y, s)
    first = [(m.compute(), m.interval(), m.error_bound()) for m in (auc, ap)]
    again = [(m.compute(), m.interval(), m.error_bound()) for m in (auc, ap)]
    assert again == first
    read_auc = {"table_sums": 1} if exact else {"auc_from_table": 1, "delong": 1}
    assert calls == {**read_auc, "ap_from_table": 1}
    auc.update(y[:5], s[:5])  # a change: read again, and right
    assert (
        auc.compute() == sm.ROCAUC(exact=exact).update(np.r_[y, y[:5]], np.r_[s, s[:5]]).compute()
    )
    # (the fresh metric's read, and this one's: served from here on, by kept prefix sums)
    assert calls == (
        {"table_sums": 2, "table_prefix": 1, "ap_from_table": 1}
        if exact
        else {"auc_from_table": 3, "delong": 1, "ap_from_table": 1}
    )
    assert auc.copy().compute() == auc.compute()
