"""``Sliced(LogLoss())`` and ``Sliced(BrierScore())`` keep their slices as one table of sums
(``streammetrics.wrappers._sum_pack``): each slice agrees with scikit-learn and with the metric
alone, the table's values, intervals and bytes are the made states', and every batch the
per-slice path refuses is refused alike, nothing changed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss, log_loss

import streammetrics as sm
from streammetrics import _codec
from streammetrics._codec import CountOverflowError
from streammetrics.errors import InputError
from streammetrics.wrappers._sum_pack import SumPack


def _binary(seed: int, n: int, slices: int):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    p = np.clip(0.35 * y + 0.65 * rng.random(n), 1e-6, 1 - 1e-6)
    return y, p, rng.integers(0, slices, n), rng.uniform(0.0, 2.0, n)


def _fed(metric: sm.Metric, cols: tuple, keys: np.ndarray, w, step: int) -> sm.Sliced:
    s = sm.Sliced(metric)
    for a in range(0, len(keys), step):
        kw = {} if w is None else {"sample_weight": w[a : a + step]}
        s.update(*(c[a : a + step] for c in cols), by=keys[a : a + step], **kw)
    return s


REFERENCES = {
    "logloss": (sm.LogLoss, lambda y, p, w: log_loss(y, p, sample_weight=w, labels=[0, 1])),
    "brier": (sm.BrierScore, lambda y, p, w: brier_score_loss(y, p, sample_weight=w)),
}


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name", sorted(REFERENCES))
@pytest.mark.parametrize("slices", [1, 9, 700])
def test_each_slice_agrees_with_the_reference_and_the_metric_alone(name, slices, weighted):
    cls, ref = REFERENCES[name]
    y, p, keys, w = _binary(slices, 30_000, slices)
    w = w if weighted else None
    s = _fed(cls(), (y, p), keys, w, 3_000)
    assert isinstance(s.slices._pack, SumPack)
    values = s.compute()
    assert sorted(values) == sorted(set(keys.tolist()))
    for k in list(values)[:40]:
        rows = keys == k
        wk = None if w is None else w[rows]
        assert values[k] == pytest.approx(ref(y[rows], p[rows], wk), rel=1e-12)
        plain = cls()
        for a in range(0, len(y), 3_000):
            part = rows[a : a + 3_000]
            kw = {} if w is None else {"sample_weight": w[a : a + 3_000][part]}
            plain.update(y[a : a + 3_000][part], p[a : a + 3_000][part], **kw)
        mine = s[k]
        assert mine.count == plain.count and mine.columns == plain.columns
        for field in ("weight_sum", "loss_sum", "loss_sq_sum", "weight_sq", "loss_wsq"):
            assert getattr(mine, field) == pytest.approx(getattr(plain, field), rel=1e-12)
        assert mine.interval() == pytest.approx(plain.interval(), rel=1e-9)
    # The table's values and intervals are, bit for bit, what each made state gives.
    made = s.slices.view()
    assert values == {k: made[k].compute() for k in values}
    assert s.intervals() == {k: made[k].interval() for k in values}
    assert s.intervals(0.8) == {k: made[k].interval(0.8) for k in values}


def test_the_bytes_are_the_made_states_and_decode_alike():
    y, p, keys, w = _binary(3, 20_000, 300)
    s = _fed(sm.LogLoss(), (y, p), keys, w, 2_500)
    blob = s.to_bytes()
    view = s.slices.view()
    pairs = [[k, view[k]._envelope()] for k in sorted(view)]
    tree = _codec.envelope_tree(
        s._wire_name, s._schema, s._config, {"count": s.count, "slices": pairs}
    )
    assert _codec.encode(tree) == blob
    back = sm.loads(blob)
    assert back.to_bytes() == blob and back.compute() == s.compute()
    # Decoded one state per slice, packed again at the next batch: the same table.
    more = _binary(4, 5_000, 300)
    after, again = s.copy(), back.copy()
    after.update(more[0], more[1], by=more[2])
    again.update(more[0], more[1], by=more[2])
    assert isinstance(again.slices._pack, SumPack) and after.to_bytes() == again.to_bytes()


def test_shards_merge_to_the_whole():
    y, p, keys, w = _binary(5, 40_000, 50)
    whole = _fed(sm.BrierScore(), (y, p), keys, w, 4_000)
    parts = [
        _fed(sm.BrierScore(), (y[a::4], p[a::4]), keys[a::4], w[a::4], 1_000) for a in range(4)
    ]
    merged = parts[0].copy().merge(*parts[1:])
    got, want = merged.compute(), whole.compute()
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=1e-12)


def test_multiclass_brier_halves_two_columns_per_slice():
    rng = np.random.default_rng(6)
    n = 6_000
    p3 = rng.dirichlet(np.ones(3), n)
    y3 = rng.integers(0, 3, n)
    p2 = rng.dirichlet(np.ones(2), n)
    y2 = rng.integers(0, 2, n)
    s = sm.Sliced(sm.BrierScore())
    s.update(y3, p3, by=np.full(n, "three"))
    s.update(y2, p2, by=np.full(n, "two"))
    assert isinstance(s.slices._pack, SumPack)
    three, two = sm.BrierScore().update(y3, p3), sm.BrierScore().update(y2, p2)
    assert s.compute()["three"] == pytest.approx(three.compute(), rel=1e-12)
    assert s.compute()["two"] == pytest.approx(two.compute(), rel=1e-12)
    assert s.intervals()["two"] == pytest.approx(two.interval(), rel=1e-9)
    assert s.compute() == {k: s[k].compute() for k in ("three", "two")}


def test_labels_by_name_and_string_slices():
    rng = np.random.default_rng(7)
    n = 4_000
    y = rng.choice(np.array(["no", "yes"]), n)
    p = rng.random(n)
    by = rng.choice(np.array(["de", "fr", "us"]), n)
    s = sm.Sliced(sm.LogLoss(labels=["no", "yes"])).update(y, p, by=by)
    assert isinstance(s.slices._pack, SumPack)
    for k in ("de", "fr", "us"):
        rows = by == k
        want = log_loss(y[rows], p[rows], labels=["no", "yes"])
        assert s.compute()[k] == pytest.approx(want, rel=1e-12)


def _bytes(s: sm.Sliced) -> bytes:
    return s.to_bytes()


REFUSED = [
    pytest.param(
        ([0, 1], [[0.5, 0.5], [0.5, 0.5]]), {"by": [0, 1]}, "earlier batches", id="columns"
    ),
    pytest.param(([0, 2], [0.5, 0.5]), {"by": [0, 1]}, "y_true", id="label"),
    pytest.param(([0, 1], [0.5, 1.5]), {"by": [0, 1]}, "y_prob", id="probability"),
    pytest.param(
        ([0, 1], [0.5, 0.5]),
        {"by": [0, 1], "sample_weight": [1.0, -1.0]},
        "sample_weight",
        id="weight",
    ),
    pytest.param(([0, 1], [0.5, 0.5]), {"by": [0]}, "by", id="keys"),
]


@pytest.mark.parametrize(("args", "kwargs", "word"), REFUSED)
def test_a_refused_batch_changes_nothing(args, kwargs, word):
    y, p, keys, w = _binary(8, 3_000, 5)
    s = sm.Sliced(sm.LogLoss()).update(y, p, by=keys, sample_weight=w)
    before = _bytes(s)
    with pytest.raises(InputError, match=word):
        s.update(*args, **kwargs)
    assert _bytes(s) == before and isinstance(s.slices._pack, SumPack)


def test_a_weight_past_the_bound_is_refused_by_the_slice():
    s = sm.Sliced(sm.LogLoss()).update([0, 1], [0.2, 0.7], by=[0, 1], sample_weight=[2.0**99, 1.0])
    before = _bytes(s)
    with pytest.raises(CountOverflowError):
        s.update([0], [0.2], by=[0], sample_weight=[2.0**99 + 2.0**98])
    assert _bytes(s) == before


def test_one_row_per_call_folds_into_the_table():
    y, p, keys, w = _binary(9, 2_000, 40)
    s, whole = sm.Sliced(sm.LogLoss()), sm.Sliced(sm.LogLoss())
    for i in range(len(y)):
        s.update(int(y[i]), float(p[i]), by=int(keys[i]), sample_weight=float(w[i]))
    whole.update(y, p, by=keys, sample_weight=w)
    got, want = s.compute(), whole.compute()
    assert isinstance(s.slices._pack, SumPack) and got.keys() == want.keys()
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=1e-12)


def test_a_long_slice_is_summed_pairwise():
    """A slice of 2M rows in one batch: its sums taken pairwise (``_packing.Sums``), as the
    metric alone takes them, not in row order."""
    rng = np.random.default_rng(10)
    n = 2_000_000
    y = rng.integers(0, 2, n)
    p = np.clip(0.3 * y + 0.7 * rng.random(n), 1e-9, 1 - 1e-9)
    s = sm.Sliced(sm.LogLoss()).update(y, p, by=np.zeros(n, dtype=int))
    alone = sm.LogLoss().update(y, p)
    assert s.compute()[0] == pytest.approx(alone.compute(), rel=1e-14)


class _Doubled(sm.LogLoss):
    def _compute(self) -> float:
        return 2 * super()._compute()


class _OwnUpdate(sm.BrierScore):
    def update(self, y_true, y_prob, sample_weight=None):  # type: ignore[no-untyped-def]
        return super().update(y_true, y_prob, sample_weight)


def test_subclasses_answer_for_themselves():
    y, p, keys, _ = _binary(11, 2_000, 4)
    doubled = sm.Sliced(_Doubled()).update(y, p, by=keys)
    plain = sm.Sliced(sm.LogLoss()).update(y, p, by=keys)
    assert isinstance(doubled.slices._pack, SumPack)
    for k, v in plain.compute().items():
        assert doubled.compute()[k] == 2 * v
    own = sm.Sliced(_OwnUpdate()).update(y, p, by=keys)
    assert own.slices._pack is None
    assert math.isfinite(own.compute()[0])


NEAR_BOUND = np.array([2.0**100 - 2.0**47] + [2.0**46 * 0.99] * 8)  # a review's weights


@pytest.mark.parametrize(
    "make",
    [sm.LogLoss, sm.MeanSquaredError, sm.R2Score, sm.Accuracy, sm.CalibrationError],
    ids=["logloss", "mse", "r2", "accuracy", "calibration"],
)
def test_a_weight_near_the_bound_is_decided_by_the_metrics_own_sum(make):
    """Nine rows whose weights a pairwise sum puts past 2**100 and a row-order sum does not:
    the table leaves them to the per-slice path, which refuses them exactly when the metric
    alone does (0.8.22's first table of sums took them where ``LogLoss`` refused them)."""
    y, p, by = np.zeros(9, int), np.full(9, 0.3), np.zeros(9, int)
    if make in (sm.MeanSquaredError, sm.R2Score):
        y = np.linspace(0.0, 1.0, 9)
    elif make is sm.Accuracy:
        p = np.zeros(9, int)
    try:
        alone = make().update(y, p, sample_weight=NEAR_BOUND)
    except CountOverflowError:
        alone = None
    assert alone is None or make not in (sm.LogLoss, sm.CalibrationError)  # (refused)
    s = sm.Sliced(make()).update(y[:2], p[:2], by=by[:2] + 1)
    before = s.to_bytes()
    if alone is None:
        with pytest.raises(CountOverflowError):
            s.update(y, p, by=by, sample_weight=NEAR_BOUND)
        assert s.to_bytes() == before
    else:
        s.update(y, p, by=by, sample_weight=NEAR_BOUND)
        assert s.compute()[0] == pytest.approx(alone.compute(), rel=1e-12)


class _Tagged(sm.LogLoss):
    """A user's subclass with a state field of its own (a review's): its slices keep one state
    each, since a table writes the library's fields only."""

    _wire_name = "tests.TaggedLogLoss"

    def __init__(self, eps="auto", labels=None):  # type: ignore[no-untyped-def]
        super().__init__(eps=eps, labels=labels)
        self._add_state("tag", 7)


def test_a_subclass_with_its_own_state_round_trips():
    y, p, keys, _ = _binary(12, 2_000, 30)
    s = sm.Sliced(_Tagged()).update(y, p, by=keys)
    assert s.slices._pack is None
    back = sm.loads(s.to_bytes())
    assert back.to_bytes() == s.to_bytes() and back[0].tag == 7
