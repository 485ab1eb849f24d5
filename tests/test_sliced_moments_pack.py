"""``Sliced`` of the one-loss regression metrics as one packed table of moments (0.8.20).

The pack (``streammetrics.wrappers._moments_pack``) folds a batch into every slice with a few
``bincount``; what each slice holds must still be the metric's state over its rows: equal to
scikit-learn and to the metric fed the slice alone to rounding, exact for constant losses,
bit for bit what the made states compute, and the per-slice path still runs (and words the
errors) for everything the pack does not take.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from sklearn.metrics import (
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_squared_error,
)

import streammetrics as sm
from streammetrics.wrappers._moments_pack import MomentsPack

REFERENCES = {
    "mse": (sm.MeanSquaredError, mean_squared_error),
    "rmse": (sm.RootMeanSquaredError, lambda t, p: math.sqrt(mean_squared_error(t, p))),
    "mae": (sm.MeanAbsoluteError, mean_absolute_error),
    "mape": (sm.MeanAbsolutePercentageError, mean_absolute_percentage_error),
}


def _stream(seed: int, n: int, slices: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = rng.normal(loc=3.0, size=n)
    keys = rng.integers(0, slices, n)
    return t, t + rng.normal(scale=0.2 + keys / slices, size=n), keys


def _fed(metric: sm.Metric, t, p, keys, batch: int) -> sm.Sliced:
    s = sm.Sliced(metric)
    for a in range(0, len(t), batch):
        s.update(t[a : a + batch], p[a : a + batch], by=keys[a : a + batch])
    return s


@pytest.mark.parametrize("name", sorted(REFERENCES))
@pytest.mark.parametrize("slices", [1, 7, 600])
def test_each_slice_agrees_with_sklearn_and_with_the_metric_alone(name: str, slices: int) -> None:
    cls, ref = REFERENCES[name]
    t, p, keys = _stream(slices, 30_000, slices)
    s = _fed(cls(), t, p, keys, 3_000)
    assert isinstance(s.slices._pack, MomentsPack)
    values = s.compute()
    assert sorted(values) == sorted(set(keys.tolist()))
    for k, v in values.items():
        rows = keys == k
        assert v == pytest.approx(ref(t[rows], p[rows]), rel=1e-12, abs=0)
        alone = cls().update(t[rows], p[rows])
        assert v == pytest.approx(alone.compute(), rel=1e-12, abs=0)
        assert s[k].count == alone.count
        assert s[k].interval() == pytest.approx(alone.interval(), rel=1e-9, abs=0)
    # The table's values are, bit for bit, what each made state computes.
    assert values == {k: s[k].compute() for k in values}
    back = sm.loads(s.to_bytes())
    assert back.compute() == values and back.to_bytes() == s.to_bytes()


def test_shards_merged_and_decoded_then_updated_agree_with_the_whole() -> None:
    t, p, keys = _stream(3, 40_000, 50)
    whole = _fed(sm.MeanSquaredError(), t, p, keys, 4_000)
    parts = [
        _fed(sm.MeanSquaredError(), t[s], p[s], keys[s], 1_500)
        for s in np.array_split(np.arange(40_000), 4)
    ]
    merged = sm.loads(parts[0].to_bytes()).merge(*parts[1:])
    assert merged.count == whole.count
    later = sm.loads(merged.to_bytes()).update(t[:5_000], p[:5_000], by=keys[:5_000])
    assert isinstance(later.slices._pack, MomentsPack)  # a decoded table is packed again
    for k, v in whole.compute().items():
        assert merged.compute()[k] == pytest.approx(v, rel=1e-12, abs=0)
        rows = keys == k
        tt = np.concatenate([t[rows], t[:5_000][keys[:5_000] == k]])
        pp = np.concatenate([p[rows], p[:5_000][keys[:5_000] == k]])
        assert later.compute()[k] == pytest.approx(mean_squared_error(tt, pp), rel=1e-12, abs=0)


def test_constant_losses_stay_exact() -> None:
    # A slice whose every loss is the same holds exactly that value and a zero spread, batch
    # after batch, as Moments.batch gives a constant column; a perfect slice holds exactly 0.
    s = sm.Sliced(sm.MeanAbsoluteError())
    for _ in range(5):
        s.update([0.3, 0.3, 0.3, 5.0, 2.0], [0.2, 0.2, 0.2, 5.0, 2.0], by=[0, 0, 0, 1, 1])
    assert isinstance(s.slices._pack, MomentsPack)
    const = s[0].moments
    assert (const.hi[0, 0], const.lo[0, 0]) == (abs(0.3 - 0.2), 0.0)
    assert const.comoment[0, 0] == 0.0
    assert s.compute() == {0: abs(0.3 - 0.2), 1: 0.0}
    assert s[1].moments.comoment[0, 0] == 0.0


def test_far_apart_batches_keep_the_heavier_sides_digits() -> None:
    # Chan's merge steps the mean from the heavier side (0.8.19), in the pack too: one huge
    # loss of weight 1 merged with a million tiny ones keeps the tiny ones' mean digits.
    s = sm.Sliced(sm.MeanSquaredError())
    s.update([1e8], [0.0], by=["a"])
    rng = np.random.default_rng(0)
    e = rng.uniform(0, 0.01, 1_000_000)
    s.update(e, np.zeros_like(e), by=np.full(len(e), "a"))
    expected = math.fsum([1e16, *(e * e).tolist()]) / (1 + len(e))
    assert s.compute()["a"] == pytest.approx(expected, rel=1e-14, abs=0)


def fed_with_mixed_weights(
    metric: type, pack: type, trial: int, rng: np.random.Generator
) -> tuple[sm.Sliced, dict]:
    """A ``Sliced(metric())`` fed five batches (weighted or not by ``trial``) with rows of
    weight zero and a slice seen only at weight zero, checked to stay a ``pack`` after each, and
    one lone metric per slice fed that slice's rows batch by batch."""
    n = 12_000
    t = rng.normal(size=n)
    p = t + rng.normal(size=n)
    keys = rng.integers(0, 9, n)
    w = rng.uniform(0.0, 2.0, n)
    w[rng.random(n) < 0.1] = 0.0
    w[(keys == 3) & (np.arange(n) < 4_000)] = 0.0
    s, alone = sm.Sliced(metric()), {}
    cuts = [0, 1_500, 4_000, 4_100, 9_000, n]
    for j, (a, b) in enumerate(itertools.pairwise(cuts)):
        weights = w[a:b] if (j + trial) % 3 else None
        s.update(t[a:b], p[a:b], by=keys[a:b], sample_weight=weights)
        assert isinstance(s.slices._pack, pack)
        for k in np.unique(keys[a:b]).tolist():
            rows = keys[a:b] == k
            one = alone.setdefault(k, metric())
            one.update(t[a:b][rows], p[a:b][rows], None if weights is None else weights[rows])
    return s, alone


def test_weighted_and_unweighted_batches_agree_with_the_metric_fed_each_slice() -> None:
    # Weighted batches are packed too, with the sums under the weights squared that the
    # interval reads; rows of weight zero, a slice seen only at weight zero, and unweighted
    # batches into weighted slices, all as the metric alone keeps them.
    rng = np.random.default_rng(11)
    for trial, cls in enumerate(REFERENCES.values()):
        s, alone = fed_with_mixed_weights(cls[0], MomentsPack, trial, rng)
        for k, one in alone.items():
            mine = s[k]
            assert mine.count == one.count
            assert mine.wsq_mean.size == one.wsq_mean.size
            assert mine.compute() == pytest.approx(one.compute(), rel=1e-12, abs=0, nan_ok=True)
            assert mine.interval() == pytest.approx(one.interval(), rel=1e-9, abs=0, nan_ok=True)
            assert mine.weight_sq == pytest.approx(one.weight_sq, rel=1e-12, abs=0)
        back = sm.loads(s.to_bytes())  # every made state passes the decoder's checks
        assert back.to_bytes() == s.to_bytes()


def test_several_outputs_run_per_slice() -> None:
    t, p, keys = _stream(5, 6_000, 5)
    two = sm.Sliced(sm.MeanSquaredError()).update(np.c_[t, t], np.c_[p, t], by=keys)
    assert two.slices._pack is None
    assert two.compute()[0] == pytest.approx(
        mean_squared_error(np.c_[t, t][keys == 0], np.c_[p, t][keys == 0]), rel=1e-12
    )


def test_a_refused_batch_leaves_the_packed_table_unchanged() -> None:
    t, p, keys = _stream(6, 1_000, 3)
    s = sm.Sliced(sm.MeanSquaredError()).update(t, p, by=keys)
    before = s.to_bytes()
    bad = p.copy()
    bad[700] = math.nan
    with pytest.raises(sm.InputError, match=r"y_pred.*700"):
        s.update(t, bad, by=keys)
    with pytest.raises(sm.InputError, match="y_true"):
        s.update(np.full(1_000, 1e200), p, by=keys)  # squares past float64
    assert s.to_bytes() == before
    assert isinstance(s.slices._pack, MomentsPack)


def test_rows_one_at_a_time_give_the_batch_values() -> None:
    t, p, keys = _stream(7, 3_000, 4)
    one = sm.Sliced(sm.RootMeanSquaredError())
    for a, b, k in zip(t.tolist(), p.tolist(), keys.tolist(), strict=True):
        one.update(a, b, by=k)
    whole = sm.Sliced(sm.RootMeanSquaredError()).update(t, p, by=keys)
    assert one.count == whole.count
    for k, v in whole.compute().items():
        assert one.compute()[k] == pytest.approx(v, rel=1e-12, abs=0)


def test_a_slice_of_many_rows_keeps_the_metrics_precision() -> None:
    # np.bincount adds in row order: one slice of 2M alternating losses in one batch was 1e-11
    # off in its mean and 4e-10 in its co-moment (a review of the first cut), where the metric,
    # summing pairwise, is within 1e-15 and 1e-13. Slices of many rows are summed pairwise.
    n = 2_000_000
    loss = np.where(np.arange(n) % 2 == 0, 0.287, 0.487)
    keys = np.zeros(n, dtype=np.int64)
    keys[:10] = 1  # a small slice beside it, summed by bincount
    for weights in (None, np.full(n, 0.5)):
        s = sm.Sliced(sm.MeanAbsoluteError()).update(
            loss, np.zeros(n), by=keys, sample_weight=weights
        )
        exact_mean = math.fsum(loss[10:].tolist()) / (n - 10)
        mine = s[0].moments
        assert float(mine.hi[0, 0] + mine.lo[0, 0]) == pytest.approx(exact_mean, rel=1e-14, abs=0)
        alone = sm.MeanAbsoluteError().update(
            loss[10:], np.zeros(n - 10), None if weights is None else weights[10:]
        )
        assert mine.comoment[0, 0] == pytest.approx(alone.moments.comoment[0, 0], rel=1e-12)


@pytest.mark.parametrize("value", [7e-165, 3e-170, 1.1e-200])
def test_constant_losses_whose_squares_underflow_stay_exact(value: float) -> None:
    # Below about 1.5e-162 the squares underflow and the shifted sums' guard passes as 0 <= 0:
    # the first cut kept sum / n (7.000000000000001e-165); the two-pass keeps the value. The
    # metric's own large-batch path had the same flaw (5,000 rows: 6.999999999999999e-165).
    for rows in (3, 5_000):
        s = sm.Sliced(sm.MeanAbsoluteError()).update(
            np.full(rows, value), np.zeros(rows), by=np.zeros(rows, dtype=np.int64)
        )
        assert s.compute() == {0: value}
        assert (
            sm.MeanAbsoluteError().update(np.full(rows, value), np.zeros(rows)).compute() == value
        )


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_intervals_of_the_table_are_each_slices_own(name: str) -> None:
    # intervals() reads the table (each slice's loss_interval on its floats, 0.8.21): the bits
    # each made state's interval() gives, weighted or not, for one-row and zero-weight slices.
    cls = REFERENCES[name][0]
    rng = np.random.default_rng(9)
    t, p, keys = _stream(9, 8_000, 300)
    w = rng.uniform(0.0, 3.0, len(t))
    w[keys == 4] = 0.0
    s = sm.Sliced(cls()).update(t[:4_000], p[:4_000], by=keys[:4_000])
    s.update(t[4_000:], p[4_000:], by=keys[4_000:], sample_weight=w[4_000:])
    s.update([1.0], [2.0], by=[10_000])
    assert isinstance(s.slices._pack, MomentsPack)
    made = sm.loads(s.to_bytes())  # one state per slice
    for level in (0.95, 0.6):
        got, expected = s.intervals(level), made.intervals(level)
        assert list(got) == list(expected)
        for key, pair in expected.items():
            assert np.array_equal(got[key], pair, equal_nan=True), (key, got[key], pair)


class HalvedMSE(sm.MeanSquaredError):
    """A user's subclass: its own compute and interval (registered: Sliced reads it back)."""

    _wire_name = "tests.HalvedMSE"

    def _compute(self):
        return super()._compute() / 2

    def interval(self, level=0.95):
        low, high = super().interval(level)
        return low / 2, high / 2


def test_a_subclass_computes_and_intervals_through_its_own_states() -> None:
    s = sm.Sliced(HalvedMSE()).update([1.0, 3.0, 0.0], [0.0, 0.0, 0.0], by=[0, 0, 1])
    assert isinstance(s.slices._pack, MomentsPack)
    assert s.compute() == {0: 2.5, 1: 0.0}
    got = s.intervals()
    for k in (0, 1):
        assert np.array_equal(got[k], s[k].interval(), equal_nan=True)
    assert got[0][1] == pytest.approx(
        sm.MeanSquaredError().update([1.0, 3.0], [0, 0]).interval()[1] / 2
    )
