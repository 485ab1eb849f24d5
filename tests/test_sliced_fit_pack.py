"""``Sliced`` of R2, explained variance, Pearson's r and the regression report as one packed
table (0.8.21).

The pack (``streammetrics.wrappers._fit_pack``) folds a batch into every slice's moments and
fourth-order central moments with a few ``bincount``; each slice must still hold the metric's
state over its rows: equal to scikit-learn and scipy and to the metric fed the slice alone to
rounding (intervals included), exact for constant columns, bit for bit what the made states
compute and write, and the per-slice path still runs (and words the errors) for what the pack
does not take.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import pearsonr
from sklearn.metrics import explained_variance_score, r2_score

import streammetrics as sm
from streammetrics.wrappers._fit_pack import FitPack
from tests.test_sliced_moments_pack import fed_with_mixed_weights

REFERENCES = {
    "r2": (sm.R2Score, r2_score),
    "ev": (sm.ExplainedVariance, explained_variance_score),
    "pearson": (sm.PearsonCorrCoef, lambda t, p: pearsonr(t, p).statistic),
}


def _stream(seed: int, n: int, slices: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = rng.normal(loc=3.0, size=n)
    keys = rng.integers(0, slices, n)
    return t, t + rng.normal(scale=0.2 + keys / slices, size=n), keys


def _fed(metric: sm.Metric, t, p, keys, batch: int, w=None) -> sm.Sliced:
    s = sm.Sliced(metric)
    for a in range(0, len(t), batch):
        weights = None if w is None else w[a : a + batch]
        s.update(t[a : a + batch], p[a : a + batch], by=keys[a : a + batch], sample_weight=weights)
    return s


def _same_state(mine: sm.Metric, alone: sm.Metric, rel: float = 1e-12) -> None:
    assert mine.count == alone.count
    assert mine.weight_sq == pytest.approx(alone.weight_sq, rel=rel, abs=0)
    for name in ("moments", "shape") if alone._shape else ("moments",):
        a, b = getattr(mine, name), getattr(alone, name)
        assert a.weight == pytest.approx(b.weight, rel=rel, abs=0)
        np.testing.assert_allclose(a.hi + a.lo, b.hi + b.lo, rtol=rel, atol=0)
        sums = a.comoment if name == "moments" else a.moments
        theirs = b.comoment if name == "moments" else b.moments
        scale = np.abs(theirs).max()
        np.testing.assert_allclose(sums, theirs, rtol=1e-9, atol=1e-12 * scale)


@pytest.mark.parametrize("name", sorted(REFERENCES))
@pytest.mark.parametrize("slices", [1, 7, 600])
def test_each_slice_agrees_with_the_reference_and_the_metric_alone(name: str, slices: int) -> None:
    cls, ref = REFERENCES[name]
    t, p, keys = _stream(slices, 30_000, slices)
    s = _fed(cls(), t, p, keys, 3_000)
    assert isinstance(s.slices._pack, FitPack)
    values = s.compute()
    assert sorted(values) == sorted(set(keys.tolist()))
    for k, v in values.items():
        rows = keys == k
        assert v == pytest.approx(ref(t[rows], p[rows]), rel=1e-10, abs=0)
        alone = sm.Sliced(cls()).update(t[rows], p[rows], by=keys[rows])  # one slice, one batch
        plain = cls()
        for a in range(0, len(t), 3_000):
            part = rows[a : a + 3_000]
            plain.update(t[a : a + 3_000][part], p[a : a + 3_000][part])
        _same_state(s[k], plain)
        assert v == pytest.approx(alone.compute()[k], rel=1e-12, abs=0)
        assert s[k].interval() == pytest.approx(plain.interval(), rel=1e-9, abs=0)
    # The table's values are, bit for bit, what each made state computes, and its bytes what
    # the made states write; decoded (into a table from 4 slices, else one state per slice),
    # the same.
    assert values == {k: s[k].compute() for k in values}
    back = sm.loads(s.to_bytes())
    assert (back.slices._pack is None) == (slices < 4)
    assert back.compute() == values and back.to_bytes() == s.to_bytes()


def test_the_report_agrees_with_each_metric_alone() -> None:
    t, p, keys = _stream(2, 20_000, 30)
    w = np.random.default_rng(2).uniform(0.0, 2.0, len(t))
    s = _fed(sm.RegressionReport(), t, p, keys, 2_500, w)
    assert isinstance(s.slices._pack, FitPack)
    for k, got in s.compute().items():
        rows = keys == k
        alone = sm.RegressionReport().update(t[rows], p[rows], w[rows]).compute()
        assert got["count"] == alone["count"]
        for key, value in alone.items():
            assert got[key] == pytest.approx(value, rel=1e-10, abs=1e-13)
    assert sm.loads(s.to_bytes()).to_bytes() == s.to_bytes()


def test_shards_merged_and_decoded_then_updated_agree_with_the_whole() -> None:
    t, p, keys = _stream(3, 40_000, 50)
    whole = _fed(sm.R2Score(), t, p, keys, 4_000)
    parts = [
        _fed(sm.R2Score(), t[s], p[s], keys[s], 1_500) for s in np.array_split(np.arange(40_000), 4)
    ]
    merged = sm.loads(parts[0].to_bytes()).merge(*parts[1:])
    assert merged.count == whole.count
    later = sm.loads(merged.to_bytes()).update(t[:5_000], p[:5_000], by=keys[:5_000])
    assert isinstance(later.slices._pack, FitPack)  # a decoded table is packed again
    for k, v in whole.compute().items():
        assert merged.compute()[k] == pytest.approx(v, rel=1e-12, abs=0)
        assert merged[k].interval() == pytest.approx(whole[k].interval(), rel=1e-9, abs=0)
        rows, first = keys == k, keys[:5_000] == k
        tt = np.concatenate([t[rows], t[:5_000][first]])
        pp = np.concatenate([p[rows], p[:5_000][first]])
        assert later.compute()[k] == pytest.approx(r2_score(tt, pp), rel=1e-10, abs=0)


def test_constant_columns_stay_exact() -> None:
    # A slice whose y_true is constant has exactly zero variance, batch after batch (R2 then
    # follows scikit-learn's force_finite rule), and its central sums are exact zeros.
    s = sm.Sliced(sm.R2Score())
    for _ in range(4):
        s.update(
            [0.3, 0.3, 0.3, 5.0, 2.0, 1.0], [0.3, 0.3, 0.3, 5.5, 2.0, 1.5], by=[0, 0, 0, 1, 1, 1]
        )
    assert isinstance(s.slices._pack, FitPack)
    const = s[0]
    assert const.moments.hi[0, 0] == 0.3 and const.moments.lo[0, 0] == 0.0
    assert const.moments.comoment[0, 0] == 0.0
    assert (const.shape.moments == 0.0).all()
    assert s.compute()[0] == 1.0  # a perfect prediction of a constant: 1.0, as scikit-learn
    assert (
        sm.Sliced(sm.R2Score(force_finite=False))
        .update([0.3, 0.3], [0.3, 0.4], by=[0, 0])
        .compute()[0]
        == -math.inf
    )


def test_far_apart_batches_keep_the_heavier_sides_digits() -> None:
    # One huge row of weight 1 merged with a million small ones: the mean steps from the
    # heavier side, as Moments.combined and CentralMoments.merged do.
    s = sm.Sliced(sm.PearsonCorrCoef())
    s.update([1e8], [2e8], by=["a"])
    rng = np.random.default_rng(0)
    t = rng.uniform(0, 0.01, 1_000_000)
    p = t + rng.normal(scale=1e-3, size=len(t))
    s.update(t, p, by=np.full(len(t), "a"))
    alone = sm.PearsonCorrCoef().update([1e8], [2e8]).update(t, p)
    assert s.compute()["a"] == pytest.approx(alone.compute(), rel=1e-12, abs=0)
    _same_state(s["a"], alone)


def test_a_large_mean_with_a_small_spread_keeps_its_digits() -> None:
    # 1e6 +- 1e-3 in long slices (summed pairwise past 4,096 rows) and short ones.
    rng = np.random.default_rng(4)
    n = 200_000
    t = 1e6 + rng.normal(scale=1e-3, size=n)
    p = t + rng.normal(scale=3e-4, size=n)
    keys = np.where(np.arange(n) < 150_000, 0, rng.integers(1, 2_000, n))
    s = _fed(sm.R2Score(), t, p, keys, 100_000)
    for k in (0, 1, 17):
        rows = keys == k
        assert s.compute()[k] == pytest.approx(r2_score(t[rows], p[rows]), rel=1e-8, abs=0)
        assert s[k].interval() == pytest.approx(
            sm.R2Score().update(t[rows], p[rows]).interval(), rel=1e-6, abs=0
        )


def test_weighted_and_unweighted_batches_agree_with_the_metric_fed_each_slice() -> None:
    # Rows of weight zero, a slice seen only at weight zero, unweighted batches into weighted
    # slices: as the metric alone keeps them.
    rng = np.random.default_rng(11)
    for trial, (metric, _) in enumerate([*REFERENCES.values(), (sm.RegressionReport, None)]):
        s, alone = fed_with_mixed_weights(metric, FitPack, trial, rng)
        for k, one in alone.items():
            _same_state(s[k], one)
            if metric is not sm.RegressionReport:
                assert s[k].compute() == pytest.approx(one.compute(), rel=1e-12, nan_ok=True)
                assert s[k].interval() == pytest.approx(one.interval(), rel=1e-9, nan_ok=True)
        back = sm.loads(s.to_bytes())  # every state written from the arrays decodes
        assert back.to_bytes() == s.to_bytes()


def test_a_slice_seen_only_at_weight_zero() -> None:
    s = sm.Sliced(sm.R2Score()).update([1.0, 2.0, 3.0], [1.0, 2.5, 3.0], by=[0, 1, 1])
    s.update([1.0, 2.0, 4.0], [1.5, 2.0, 4.0], by=[0, 2, 2], sample_weight=[1.0, 0.0, 0.0])
    alone = sm.R2Score().update([2.0, 4.0], [2.0, 4.0], sample_weight=[0.0, 0.0])
    assert isinstance(s.slices._pack, FitPack)
    assert s[2].to_bytes() == alone.to_bytes()
    assert math.isnan(s.compute()[2]) and math.isnan(alone.compute())


def test_several_outputs_and_other_settings_run_per_slice() -> None:
    t, p, keys = _stream(5, 6_000, 5)
    two = sm.Sliced(sm.R2Score()).update(np.c_[t, t], np.c_[p, t], by=keys)
    assert two.slices._pack is None
    rows = keys == 0
    assert two.compute()[0] == pytest.approx(r2_score(np.c_[t, t][rows], np.c_[p, t][rows]))
    # Settings whose compute() averages otherwise: packed, but computed by the made states.
    raw = sm.Sliced(sm.R2Score(multioutput="raw_values")).update(t, p, by=keys)
    assert isinstance(raw.slices._pack, FitPack)
    assert raw.compute()[0] == pytest.approx([r2_score(t[rows], p[rows])], rel=1e-10)


def test_a_refused_batch_leaves_the_packed_table_unchanged() -> None:
    t, p, keys = _stream(6, 1_000, 3)
    s = sm.Sliced(sm.ExplainedVariance()).update(t, p, by=keys)
    before = s.to_bytes()
    bad = p.copy()
    bad[700] = math.nan
    with pytest.raises(sm.InputError, match=r"y_pred.*700"):
        s.update(t, bad, by=keys)
    with pytest.raises(sm.InputError, match="y_true"):
        s.update(np.full(1_000, 1e201), p, by=keys)
    with pytest.raises(sm.InputError, match="sample_weight"):
        s.update(t, p, by=keys, sample_weight=-np.ones(1_000))
    assert s.to_bytes() == before
    assert isinstance(s.slices._pack, FitPack)


def test_rows_one_at_a_time_give_the_batch_values() -> None:
    t, p, keys = _stream(7, 2_000, 4)
    one = sm.Sliced(sm.R2Score())
    for a, b, k in zip(t.tolist(), p.tolist(), keys.tolist(), strict=True):
        one.update(a, b, by=k)
    whole = sm.Sliced(sm.R2Score()).update(t, p, by=keys)
    assert one.count == whole.count
    for k, v in whole.compute().items():
        assert one.compute()[k] == pytest.approx(v, rel=1e-12, abs=0)
        assert one[k].interval() == pytest.approx(whole[k].interval(), rel=1e-9, abs=0)


def test_the_merges_are_the_blocks_merges_element_for_element() -> None:
    # chan and pebay step every slice as Moments.combined and CentralMoments.merged step one
    # state: given the same two sides, the same bits (far apart means, unequal weights).
    from streammetrics.regression._base import _SHAPE
    from streammetrics.states.central import CentralMoments
    from streammetrics.states.moments import Moments
    from streammetrics.wrappers._fit_kernels import chan, pebay

    rng = np.random.default_rng(8)
    pairs = ((0, 0), (1, 1), (0, 1))
    moments, central = Moments(2, pairs), CentralMoments(2, _SHAPE)
    sides: list[tuple[Moments, CentralMoments]] = []
    for j in range(40):
        n = int(rng.integers(1, 50))
        cols = [rng.normal(loc=10.0 ** rng.integers(-3, 6), size=(n, 1)) for _ in range(2)]
        w = None if j % 3 else rng.uniform(0.1, 5.0, n)
        sides.append((moments.batch(cols, w), central.batch(cols, w)))
    a, b = sides[:20], sides[20:]

    def rows(blocks, names):
        return [
            np.array([getattr(x, f) for x in blocks])
            if f == "weight"
            else np.stack([getattr(x, f)[:, 0] for x in blocks])
            for f in names
        ]

    seen = np.ones(20, dtype=bool)
    names = ("weight", "hi", "lo", "comoment")
    got = chan(rows([s[0] for s in a], names), tuple(rows([s[0] for s in b], names)), pairs, seen)
    for j in range(20):
        want = a[j][0].combined(b[j][0])
        assert got[0][j] == want.weight
        for field, arr in zip(names[1:], got[1:], strict=True):
            assert np.array_equal(arr[j], getattr(want, field)[:, 0])
    names = ("weight", "hi", "lo", "moments")
    got = pebay(
        rows([s[1] for s in a], names), tuple(rows([s[1] for s in b], names)), central, seen
    )
    for j in range(20):
        want = a[j][1].merged(b[j][1])
        assert got[0][j] == want.weight
        for field, arr in zip(names[1:], got[1:], strict=True):
            assert np.array_equal(arr[j], getattr(want, field)[:, 0])


@pytest.mark.parametrize(
    "make",
    [
        sm.R2Score,
        sm.ExplainedVariance,
        sm.PearsonCorrCoef,
        lambda: sm.R2Score(force_finite=False),
        lambda: sm.ExplainedVariance(multioutput=[2.0]),  # per slice: no table interval
    ],
)
def test_intervals_of_the_table_are_each_slices_own(make) -> None:
    # intervals() reads the table (the delta method and Kish's size as array operations, then
    # each slice's normal_interval or fisher_z): the bits each made state's interval() gives,
    # for one-row slices, constant ones, zero-weight ones and weighted ones.
    rng = np.random.default_rng(31)
    s = sm.Sliced(make())
    n = 6_000
    t = rng.normal(loc=2.0, size=n)
    p = t + rng.normal(scale=0.5, size=n)
    keys = rng.integers(0, 400, n)
    t[keys == 5] = 1.5  # a constant y_true
    p[keys == 6] = t[keys == 6]  # perfect predictions
    w = rng.uniform(0.0, 3.0, n)
    w[keys == 7] = 0.0  # a slice of no weight
    s.update(t[:3_000], p[:3_000], by=keys[:3_000])
    s.update(t[3_000:], p[3_000:], by=keys[3_000:], sample_weight=w[3_000:])
    s.update([1.0], [2.0], by=[10_000])  # one row
    made = sm.loads(s.to_bytes())  # one state per slice
    for level in (0.95, 0.5, 0.999):
        got, expected = s.intervals(level), made.intervals(level)
        assert list(got) == list(expected)
        for key, pair in expected.items():
            assert np.array_equal(got[key], pair, equal_nan=True), (key, got[key], pair)


def test_made_states_do_not_share_the_tables_arrays() -> None:
    # sliced[key] and the states a merge reads are made from the table: changing one in place
    # (as a scaling or a careless caller may) must not reach the table.
    t, p, keys = _stream(12, 2_000, 5)
    s = sm.Sliced(sm.R2Score()).update(t, p, by=keys)
    before, blob = s.compute(), s.to_bytes()
    for state in (s[0], s.slices.view()[1]):
        state.moments.comoment *= 3.0
        state.shape.moments *= 3.0
        state.moments.hi += 1.0
    assert isinstance(s.slices._pack, FitPack)
    assert s.compute() == before and s.to_bytes() == blob


@pytest.mark.parametrize("at", [0, -1])
def test_a_far_row_of_weight_zero_does_not_centre_the_interval_moments(at: int) -> None:
    # A review found the pack centring a slice's fourth moments on its last row, the metric on
    # its first, whatever their weight: a far row of weight zero there cost every centred
    # value its digits (an R2 interval half as wide). Both centre on a row of positive weight.
    rng = np.random.default_rng(1)
    t = rng.normal(1.0, 1.0, 1_000)
    p = t + rng.normal(0.0, 0.3, 1_000)
    far_t, far_p, w = (
        np.insert(a, at if at == 0 else len(a), v)
        for a, v in ((t, 1e15), (p, 1e15), (np.ones(1_000), 0.0))
    )
    for cls in (sm.R2Score, sm.ExplainedVariance):
        clean = cls().update(t, p)
        alone = cls().update(far_t, far_p, sample_weight=w)
        sliced = sm.Sliced(cls()).update(far_t, far_p, by=np.zeros(1_001, int), sample_weight=w)
        for state in (alone, sliced[0]):
            np.testing.assert_allclose(state.shape.moments, clean.shape.moments, rtol=1e-9)
            assert state.interval() == pytest.approx(clean.interval(), rel=1e-9)
