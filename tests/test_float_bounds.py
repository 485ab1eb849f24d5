"""No silent overflow in float sums: the regression moments and the calibration sums.

Each case is a bug the strict fuzz invariant (``tests/fuzz/fuzz_loads.py``) found: a decoded
state whose compute or merge gave inf (or a RuntimeWarning), or an update that turned huge but
finite inputs into inf. Now decoding refuses such states, merges refuse (before changing
anything) results past the bounds of ``docs/format.md``, and updates refuse the inputs with an
``InputError`` naming the argument, the state unchanged.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import streammetrics as sm
from streammetrics import _codec
from streammetrics._codec import CountOverflowError
from streammetrics.states.moments import COMOMENT_LIMIT, MEAN_LIMIT

REGRESSION = [
    sm.MeanSquaredError,
    sm.RootMeanSquaredError,
    sm.MeanAbsoluteError,
    sm.MeanAbsolutePercentageError,
    sm.R2Score,
    sm.ExplainedVariance,
    sm.PearsonCorrCoef,
    sm.RegressionReport,
]


def _forged(metric: sm.Metric, edit) -> bytes:
    name, schema, config, state = _codec.unpack_envelope(metric.to_bytes())
    edit(state)
    return _codec.pack_envelope(name, schema, config, state)


def _finite(result) -> bool:
    if isinstance(result, dict):
        return all(_finite(v) for v in result.values())
    return not np.isinf(np.asarray(result, dtype=np.float64)).any()


@pytest.mark.parametrize("cls", REGRESSION)
def test_regression_update_refuses_values_the_state_cannot_hold(cls):
    # 1e200 made inf squared errors with only a RuntimeWarning; now the batch is refused,
    # naming the argument past 2**200.
    m = cls().update([1.0, 2.0, 3.0], [1.5, 2.0, 2.0])
    before = m.to_bytes()
    cases = [("y_true", [1e200, 0.0], [0.0, 1.0]), ("y_pred", [0.0, 1.0], [0.0, -1e200])]
    if cls is sm.MeanAbsolutePercentageError:
        # Its per-row loss |e| / |y_true| of a huge y_true is small: that batch fits, finitely.
        assert _finite(cls().update(*cases[0][1:]).compute())
        cases = cases[1:]  # a huge y_pred over y_true = 0 gives 1e200 / eps: past 2**448
    for arg, t, p in cases:
        with pytest.raises(sm.InputError, match=arg):
            m.update(t, p)
        assert m.to_bytes() == before
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.update([1e60, -1e60], [-1e60, 1e60])  # within the bound: finite, no warning
        assert _finite(m.compute())


def test_regression_update_refuses_weights_past_2_100():
    m = sm.MeanSquaredError().update([1.0, 2.0], [1.0, 3.0])
    before = m.to_bytes()
    with pytest.raises(CountOverflowError, match="sample_weight"):
        m.update([1.0, 2.0], [1.0, 3.0], sample_weight=[1e308, 1e308])
    assert m.to_bytes() == before


@pytest.mark.parametrize(
    "field,value",
    [("weight", 1e308), ("mean", 1e308), ("mean_low", -1e200), ("comoment", 1e308)],
)
def test_moments_past_their_bounds_do_not_decode(field, value):
    m = sm.R2Score().update([1.0, 2.0, 4.0], [1.0, 3.0, 3.0])

    def edit(state):
        block = state["moments"]
        if isinstance(block[field], np.ndarray):
            block[field] = np.full_like(block[field], value)
        else:
            block[field] = value

    with pytest.raises(sm.StateDecodeError):
        sm.loads(_forged(m, edit))


def test_merge_past_the_comoment_bound_is_refused_unchanged():
    a = sm.PearsonCorrCoef().update([1.0, 2.0, 3.0], [1.0, 2.0, 4.0])

    def edit(state):  # co-moments at 3/4 of the bound: one merge of two passes it
        co = state["moments"]["comoment"]
        state["moments"]["comoment"] = co / np.abs(co).max() * (0.75 * COMOMENT_LIMIT)

    x = sm.loads(_forged(a, edit))
    before = x.to_bytes()
    for other in (x, x.copy(), a):
        if other is a:
            continue
        with pytest.raises(sm.IncompatibleStateError):
            x.merge(other)
        assert x.to_bytes() == before
    assert math.isclose(x.compute(), a.compute(), rel_tol=1e-12)


def test_merge_of_the_farthest_means_stays_finite():
    # Means 2**449 apart (each at the bound) with weights of 2**99 each: delta**2 * W is
    # 2**996, inside the co-moment bound, so the merge is taken and computes without a warning.
    a = sm.PearsonCorrCoef().update([1.0, 2.0], [1.0, 3.0], sample_weight=[2.0**98, 2.0**98])

    def shift(sign):
        def edit(state):
            block = state["moments"]
            block["mean"] = np.full_like(block["mean"], sign * MEAN_LIMIT)
            block["mean_low"] = np.zeros_like(block["mean_low"])

        return edit

    x, y = sm.loads(_forged(a, shift(1))), sm.loads(_forged(a, shift(-1)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x.merge(y)
        assert math.isfinite(x.compute())
    assert sm.loads(x.to_bytes()) == x
    with pytest.raises(CountOverflowError):  # twice its weight (2**100) passes the bound
        x.merge(x)


def test_merge_past_the_weight_bound_is_refused_unchanged():
    m = sm.MeanAbsoluteError().update([1.0, 2.0], [1.0, 3.0], sample_weight=[2.0**99, 2.0**99])
    before = m.to_bytes()
    with pytest.raises(CountOverflowError):
        m.merge(m.copy())
    assert m.to_bytes() == before


def test_three_way_merge_is_all_or_nothing():
    m = sm.R2Score().update([1.0, 2.0], [1.0, 3.0], sample_weight=[2.0**98, 2.0**98])
    before = m.to_bytes()
    with pytest.raises(CountOverflowError):
        m.merge(m.copy(), m.copy())  # the first merge fits, the second does not
    assert m.to_bytes() == before


def test_r2_over_a_subnormal_variance_is_finite():
    # Real data: a finite error over a variance of 5e-321 overflows the ratio.
    for ff in (True, False):
        m = sm.R2Score(force_finite=ff).update([0.0, 1e-160], [1.0, 1.0])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            value = m.compute()
        assert value == -np.finfo(np.float64).max
    # force_finite=False over a zero variance stays scikit-learn's -inf.
    assert sm.R2Score(force_finite=False).update([2, 2], [2, 3]).compute() == -math.inf


def test_pearson_of_variances_near_the_bound_is_finite():
    m = sm.PearsonCorrCoef().update([1.0, 2.0, 3.0], [1.0, 2.0, 4.0])

    def edit(state):
        state["moments"]["comoment"] = state["moments"]["comoment"] * 2.0**990

    loaded = sm.loads(_forged(m, edit))
    assert loaded.moments.comoment.max() <= COMOMENT_LIMIT
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isclose(loaded.compute(), m.compute(), rel_tol=1e-12)


def test_pearson_where_the_product_of_variances_is_subnormal():
    """``r = tp / sqrt(tt * pp)``: 0.8.17 took one root of each variance only when the product
    fell to 0 or overflowed; a product among the subnormals kept a few digits of it, and
    values spread about 1e-82 (or weights about 1e-162) gave r 7.7e-4 (5e-6) off. A review
    found it."""
    from scipy.stats import pearsonr

    rng = np.random.default_rng(0)
    t = rng.normal(size=1000)
    p = 0.9 * t + 0.4 * rng.normal(size=1000)
    want = pearsonr(t, p)[0]
    for scale in (1e-70, 1e-80, 1e-81, 1e-82, 1e-83, 1e-90):
        got = sm.PearsonCorrCoef().update(t * scale, p * scale).compute()
        assert got == pytest.approx(want, rel=1e-13)
    w = rng.uniform(0.5, 1.5, 1000)
    plain = sm.PearsonCorrCoef().update(t, p, sample_weight=w).compute()
    for scale in (1e-158, 1e-160, 1e-162, 1e-165):
        got = sm.PearsonCorrCoef().update(t, p, sample_weight=w * scale).compute()
        assert got == pytest.approx(plain, rel=1e-13)


@pytest.mark.parametrize(
    "cls,field,value",
    [
        (sm.LogLoss, "loss_sum", 1e308),
        (sm.LogLoss, "weight_sum", 1e-308),  # loss_sum above 36 times the weight
        (sm.BrierScore, "loss_sum", -1e308),
        (sm.BrierScore, "weight_sum", 1e200),  # past 2**100
    ],
)
def test_loss_sums_past_their_bounds_do_not_decode(cls, field, value):
    m = cls().update([0, 1, 1], [0.2, 0.7, 0.9])

    def edit(state):
        state[field] = value

    with pytest.raises(sm.StateDecodeError):
        sm.loads(_forged(m, edit))


@pytest.mark.parametrize("field", ["confidence", "outcome", "weight"])
def test_calibration_bins_past_their_bounds_do_not_decode(field):
    m = sm.CalibrationError(bins=4).update([0, 1, 1, 0], [0.2, 0.9, 0.7, 0.6])

    def edit(state):
        state[field] = np.full_like(state[field], 1e308)

    with pytest.raises(sm.StateDecodeError):
        sm.loads(_forged(m, edit))


@pytest.mark.parametrize("make", [sm.LogLoss, sm.BrierScore, lambda: sm.CalibrationError(bins=3)])
def test_calibration_weights_past_2_100_are_refused_unchanged(make):
    m = make().update([0, 1], [0.2, 0.9], sample_weight=[2.0**99, 2.0**99])
    before = m.to_bytes()
    with pytest.raises(CountOverflowError):
        m.merge(m.copy())
    assert m.to_bytes() == before
    with pytest.raises(CountOverflowError, match="sample_weight"):
        m.update([0, 1], [0.2, 0.9], sample_weight=[2.0**99, 1.0])
    assert m.to_bytes() == before


# -- clustering -------------------------------------------------------------------------------

CLUSTER = [
    sm.CalinskiHarabasz,
    sm.ClusterGeometry,
    sm.Compactness,
    sm.DaviesBouldin,
    sm.DunnIndex,
    sm.Separation,
    sm.Silhouette,
]
_X = np.array([[0.0, 0.0], [1.0, 0.5], [4.0, 4.0], [5.0, 4.5], [9.0, 0.0], [8.0, 1.0]])
_LABELS = np.array([0, 0, 1, 1, 2, 2])


@pytest.mark.parametrize("cls", CLUSTER)
def test_cluster_update_refuses_rows_the_state_cannot_hold(cls):
    m = cls().update(_X, _LABELS)
    before = m.to_bytes()
    with pytest.raises(sm.InputError, match="X"):
        m.update(np.array([[1e200, 0.0], [0.0, 0.0]]), [0, 1])
    assert m.to_bytes() == before
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.update(_X * 1e59, _LABELS)  # within the bound: finite, no warning
        assert _finite({k: v for k, v in _as_dict(m.compute()).items() if k != "exact"})


def _as_dict(result):
    return result if isinstance(result, dict) else {"value": result}


def test_centres_past_2_200_are_refused():
    with pytest.raises(sm.InputError, match="centers"):
        sm.Separation(centers=[[0.0, 1e200], [1.0, 1.0]])


@pytest.mark.parametrize(
    "field,value",
    [("means", 1e308), ("m2", 1e308), ("m2", 2.0**901)],
)
def test_cluster_moments_past_their_bounds_do_not_decode(field, value):
    m = sm.CalinskiHarabasz().update(_X, _LABELS)

    def edit(state):
        state["moments"][field] = np.full_like(state["moments"][field], value)

    with pytest.raises(sm.StateDecodeError):
        sm.loads(_forged(m, edit))


def test_sampled_rows_past_2_200_do_not_decode():
    m = sm.Silhouette().update(_X, _LABELS)

    def edit(state):
        state["sample"]["rows"] = np.full_like(state["sample"]["rows"], 1e300)

    with pytest.raises(sm.StateDecodeError):
        sm.loads(_forged(m, edit))


def test_cluster_merge_past_the_spread_bound_is_refused_unchanged():
    m = sm.CalinskiHarabasz().update(_X, _LABELS)

    def edit(state):
        m2 = state["moments"]["m2"]
        state["moments"]["m2"] = np.full_like(m2, 0.75 * 2.0**900)

    x = sm.loads(_forged(m, edit))
    before = x.to_bytes()
    with pytest.raises(sm.IncompatibleStateError):
        x.merge(x.copy())
    assert x.to_bytes() == before


def test_calinski_harabasz_over_a_subnormal_spread_is_finite():
    # Real data: clusters 1e50 apart whose rows differ by 1e-160.
    x = np.array([[0.0], [1e-160], [1e50], [1e50]])
    m = sm.CalinskiHarabasz().update(x, [0, 0, 1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert m.compute() == np.finfo(np.float64).max


# -- found by the atheris run -----------------------------------------------------------------


def test_sliding_window_whose_slots_pass_the_count_bound_does_not_decode():
    # Each slot decoded (its table within 2**53) but the window, their merge, passed the
    # bound: compute raised CountOverflowError. Now loads refuses the blob.
    m = sm.SlidingWindow(sm.Accuracy(), width=30, slots=6)
    for t in range(0, 30, 3):
        m.update([0, 1], [0, 1], timestamps=[t, t])
    name, schema, config, state = _codec.unpack_envelope(m.to_bytes())
    assert len(state["slots"]) >= 2
    for slot in state["slots"].values():  # each slot as if it had counted 2**52 + 2**51 rows
        table = slot["state"]["counts"]["table"]
        table[0, 0] = 2**52 + 2**51 - int(table.sum() - table[0, 0])
        slot["state"]["count"] = 2**52 + 2**51  # any two of them total past 2**53
        slot["state"]["weight_sq"] = float(2**52 + 2**51)
    state["count"] = state["dropped"] + sum(v["state"]["count"] for v in state["slots"].values())
    with pytest.raises(sm.StateDecodeError, match="merge"):
        sm.loads(_codec.pack_envelope(name, schema, config, state))


def test_top_k_accuracy_sums_are_bounded():
    import streammetrics._codec as codec

    m = sm.TopKAccuracy(k=1).update([0, 1], [[0.9, 0.1], [0.2, 0.8]])
    name, schema, config, state = codec.unpack_envelope(m.to_bytes())
    for bad in ({"hits": 3.0}, {"total": 2.0**101, "hits": 1.0}, {"hits": -1.0}):
        blob = codec.pack_envelope(name, schema, config, {**state, **bad})
        with pytest.raises(sm.StateDecodeError):
            sm.loads(blob)
    big = sm.TopKAccuracy(k=1).update([0], [[0.9, 0.1]], sample_weight=[2.0**99])
    before = big.to_bytes()
    with pytest.raises(sm.CountOverflowError, match="sample_weight"):
        big.update([0], [[0.9, 0.1]], sample_weight=[2.0**99 + 2.0**98])
    with pytest.raises(sm.CountOverflowError):
        big.copy().merge(big, big)
    assert big.to_bytes() == before


def test_ranking_relevance_is_bounded():
    from streammetrics.ranking import NDCG, CumulativeGain

    with pytest.raises(sm.InputError, match="relevance"):
        CumulativeGain().update([1, 1], [1e300, 1e300], [0.5, 0.4])
    with pytest.raises(sm.InputError, match="relevance"):
        NDCG(gain="exponential").update([1, 1], [201.0, 1.0], [0.5, 0.4])
    ok = CumulativeGain().update([1, 1], [2.0**200, 2.0**200], [0.5, 0.4])
    assert math.isfinite(ok.compute())
    blob = CumulativeGain().update([1, 2], [3.0, 1.0], [0.5, 0.4]).to_bytes()
    name, schema, config, state = _codec.unpack_envelope(blob)
    tree = _codec.decode(_codec.encode(state))

    def poison(node):  # every relevance array of the buffered rows -> 1e308
        if isinstance(node, dict):
            return {
                k: (np.full_like(v, 1e308) if k == "relevance" else poison(v))
                for k, v in node.items()
            }
        if isinstance(node, list):
            return [poison(v) for v in node]
        return node

    bad = _codec.pack_envelope(name, schema, config, poison(tree))
    assert bad != blob
    with pytest.raises(sm.StateDecodeError):
        sm.loads(bad)


def _multiclass_with_more_rows(average: str, rows: int) -> bytes:
    """A three-class ``MulticlassROCAUC`` state of 60 rows, forged to hold ``rows`` more, all
    positive in class 0: each column counts every row."""
    rng = np.random.default_rng(0)
    m = sm.MulticlassROCAUC(average=average).update(
        rng.integers(0, 3, 60), rng.dirichlet(np.ones(3), 60)
    )
    name, schema, config, state = _codec.unpack_envelope(m.to_bytes())
    columns = []
    for j, col in enumerate(state["columns"]):
        side = "pos" if j == 0 else "neg"
        counts = col[side].copy()
        counts[0] += rows
        columns.append({**col, side: counts})
    more = {**state, "columns": columns, "count": state["count"] + rows}
    return _codec.pack_envelope(name, schema, config, more)


def test_micro_multiclass_auc_pooled_counts_are_bounded():
    for average, refused in (("micro", True), ("macro", False)):
        # 2**52 more rows: each column counts every row (within 2**53), the three pooled
        # together pass it.
        blob = _multiclass_with_more_rows(average, 2**52)
        if refused:
            with pytest.raises(sm.StateDecodeError):
                sm.loads(blob)
        else:
            assert math.isfinite(sm.loads(blob).compute())


def test_top_k_weights_past_the_bound_are_refused_without_a_warning() -> None:
    # 0.8.13 squared the weights before checking their total: "overflow encountered in matmul"
    # came out before the CountOverflowError.
    rng = np.random.default_rng(0)
    y, scores = rng.integers(0, 3, 50), rng.random((50, 3))
    m = sm.TopKAccuracy(k=2).update(y, scores)
    before = m.to_bytes()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(CountOverflowError, match="sample_weight"):
            m.update(y, scores, sample_weight=np.full(50, 1e200))
    assert m.to_bytes() == before


def _scaled_text_state(make, total: int):  # type: ignore[no-untyped-def]
    """A valid BLEU or chrF state of one sentence whose statistics are scaled to sum just
    under ``total``."""
    from streammetrics.text import BLEU  # noqa: F401  (registers the text metrics)

    m = make().update(["the cat sat on the mat"], [["the cat sat on a mat"]])
    name, schema, config, state = _codec.unpack_envelope(m.to_bytes())
    stats = np.asarray(state["stats"], dtype=np.int64)
    scale = total // int(stats.sum())
    forged = {**state, "stats": stats * scale, "count": state["count"] * scale}
    return _codec.pack_envelope(name, schema, config, forged)


@pytest.mark.parametrize("family", ["bleu", "chrf"])
def test_text_counts_merged_many_at_once_keep_their_bound(family: str) -> None:
    # Each pair of these three states is within 2**53, the three together are not: 0.8.18
    # checked the statistics pair by pair only, so merge(b, c) took them (bytes loads then
    # refused), and 2,100 operands wrapped the counts negative (compute: math domain error).
    from streammetrics.text import BLEU, CHRF

    blob = _scaled_text_state(BLEU if family == "bleu" else CHRF, 2**52)
    a, b, c = (sm.loads(blob) for _ in range(3))
    before = a.to_bytes()
    with pytest.raises(sm.CountOverflowError, match="statistics"):
        a.merge(b, c)
    assert a.to_bytes() == before
    with pytest.raises(sm.CountOverflowError):
        sum([a, b, c][1:], a.copy())  # (pairwise: the second addition is refused)
    total = a.copy().merge(b)  # a pair within the bound still merges
    assert sm.loads(total.to_bytes()).to_bytes() == total.to_bytes()


def test_micro_multiclass_pooled_counts_merged_many_at_once_keep_their_bound() -> None:
    # 2**50 more rows in each state: three columns of two states pool 6 * 2**50 (within 2**53),
    # of three states 9 * 2**50 (past it). 0.8.18 checked the pooled counts pair by pair only.
    blob = _multiclass_with_more_rows("micro", 2**50)
    a, b, c = (sm.loads(blob) for _ in range(3))
    before = a.to_bytes()
    with pytest.raises(sm.CountOverflowError, match="pooled"):
        a.merge(b, c)
    assert a.to_bytes() == before
    assert sm.loads(a.copy().merge(b).to_bytes()).count == 2 * a.count
