"""Sliced: per-slice values equal to scikit-learn per slice, on real data split over shards."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, mean_squared_error, roc_auc_score

import streammetrics as sm
from streammetrics.errors import IncompatibleStateError, InputError
from streammetrics.windows import Decayed, TumblingWindows


@pytest.fixture(scope="module")
def cancer():
    """Breast cancer labels, model scores, and two slice columns (size band, texture band)."""
    X, y = load_breast_cancer(return_X_y=True)
    model = LogisticRegression(max_iter=5000).fit(X[::2], y[::2])
    score = model.predict_proba(X)[:, 1]
    size = np.array(["small", "medium", "large"])[np.digitize(X[:, 0], [12.0, 16.0])]
    texture = np.digitize(X[:, 1], [17.0, 21.0])
    return y, score, size, texture


def _shards(n: int, parts: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    cuts = np.sort(rng.choice(np.arange(1, n), parts - 1, replace=False))
    return np.split(order, cuts)


def _through_bytes(parts: list[sm.Metric], seed: int) -> sm.Metric:
    rng = np.random.default_rng(seed)
    blobs = [p.to_bytes() for p in parts]
    rng.shuffle(blobs)
    out = sm.loads(blobs[0])
    return out.merge(*[sm.loads(b) for b in blobs[1:]])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auc_and_accuracy_per_slice_equal_sklearn_over_shards(cancer, seed):
    y, score, size, texture = cancer
    pred = (score > 0.5).astype(int)
    auc_parts, acc_parts = [], []
    for idx in _shards(len(y), 5, seed):
        auc = sm.Sliced(sm.ROCAUC(exact=True))
        for chunk in np.array_split(idx, 3):
            auc.update(y[chunk], score[chunk], by=size[chunk])
        auc_parts.append(auc)
        acc = sm.Sliced(sm.Accuracy()).update(y[idx], pred[idx], by=(size[idx], texture[idx]))
        acc_parts.append(acc)
    auc = _through_bytes(auc_parts, seed)
    acc = _through_bytes(acc_parts, seed)
    want_auc = {k: roc_auc_score(y[size == k], score[size == k]) for k in np.unique(size)}
    got = auc.compute()
    assert list(got) == sorted(want_auc)
    for k, v in want_auc.items():
        assert got[k] == pytest.approx(v, rel=1e-12)
    got_acc = acc.compute()
    keys = sorted({(s, int(t)) for s, t in zip(size.tolist(), texture.tolist(), strict=True)})
    assert list(got_acc) == keys
    for s, t in keys:
        rows = (size == s) & (texture == t)
        assert got_acc[(s, t)] == accuracy_score(y[rows], pred[rows])
    # Byte-identical to one stream, whatever the split and merge order.
    whole = sm.Sliced(sm.Accuracy()).update(y, pred, by=(size, texture))
    assert acc.to_bytes() == whole.to_bytes()
    assert auc.to_bytes() == sm.Sliced(sm.ROCAUC(exact=True)).update(y, score, by=size).to_bytes()


def test_float_metric_per_slice_and_worst_for_errors():
    rng = np.random.default_rng(4)
    n = 3000
    y = rng.normal(size=n)
    g = rng.integers(0, 6, n)
    pred = y + rng.normal(scale=0.5 + g / 4, size=n)  # slice 5 is the noisiest
    s = sm.Sliced(sm.MeanSquaredError())
    for idx in np.array_split(np.arange(n), 7):
        s.update(y[idx], pred[idx], by=g[idx])
    values = s.compute()
    for k in range(6):
        assert values[k] == pytest.approx(mean_squared_error(y[g == k], pred[g == k]), rel=1e-9)
    worst = s.worst(k=2)
    assert [k for k, _ in worst] == sorted(values, key=values.get, reverse=True)[:2]
    assert worst[0][0] == 5
    assert s.gap() == pytest.approx(max(values.values()) - min(values.values()))
    ivs = s.intervals(0.9)
    assert list(ivs) == list(range(6))
    for k, (lo, hi) in ivs.items():
        assert lo < values[k] < hi
        assert (lo, hi) == s[k].interval(0.9)


def test_worst_lowest_when_higher_is_better_and_error_when_no_direction():
    s = sm.Sliced(sm.Accuracy())
    s.update([1, 1, 1, 0, 0, 1], [1, 1, 0, 1, 0, 1], by=["a", "a", "b", "b", "c", "c"])
    assert s.compute() == {"a": 1.0, "b": 0.0, "c": 1.0}
    assert s.worst(k=5) == [("b", 0.0), ("a", 1.0), ("c", 1.0)]  # ties in key order
    assert s.worst(k=1) == [("b", 0.0)]
    assert s.gap() == 1.0
    cm = sm.Sliced(sm.ConfusionMatrix()).update([0, 1], [0, 1], by=[0, 1])
    with pytest.raises(InputError, match="ConfusionMatrix"):
        cm.worst()
    with pytest.raises(TypeError, match="ConfusionMatrix"):
        cm.gap()


def test_nan_slices_are_left_out_of_gap_and_worst():
    s = sm.Sliced(sm.ROCAUC(exact=True))
    s.update([0, 1, 1, 1, 0, 1], [0.1, 0.9, 0.2, 0.3, 0.8, 0.4], by=[0, 0, 1, 1, 2, 2])
    values = s.compute()
    assert math.isnan(values[1])  # one class only
    assert s.gap() == pytest.approx(1.0)
    assert s.worst() == [(2, 0.0), (0, 1.0)]
    assert math.isnan(sm.Sliced(sm.Accuracy()).gap())


def test_max_slices_refuses_new_keys_and_keeps_the_state():
    s = sm.Sliced(sm.Accuracy(), max_slices=3).update([1, 0, 1], [1, 0, 0], by=[1, 2, 3])
    before = s.to_bytes()
    with pytest.raises(InputError, match="max_slices=3"):
        s.update([1, 1], [1, 1], by=[3, 4])
    assert s.to_bytes() == before
    s.update([1, 1], [1, 1], by=[3, 1])  # known keys are fine
    other = sm.Sliced(sm.Accuracy(), max_slices=3).update([1], [1], by=[9])
    before = s.to_bytes()
    with pytest.raises(IncompatibleStateError, match="max_slices=3"):
        s.merge(other)
    assert s.to_bytes() == before


def test_key_kinds_and_composite_forms():
    s = sm.Sliced(sm.Accuracy()).update([1, 0], [1, 1], by=[5, 7])
    with pytest.raises(InputError, match="kind"):
        s.update([1], [1], by=["x"])
    with pytest.raises(IncompatibleStateError):
        s.copy().merge(sm.Sliced(sm.Accuracy()).update([1], [1], by=["x"]))
    with pytest.raises(InputError, match="by"):
        s.update([1, 0], [1, 1], by=[0.5, 1.0])
    a = sm.Sliced(sm.Accuracy()).update([1, 0, 1], [1, 1, 1], by=(["fr", "de", "fr"], [1, 2, 1]))
    b = sm.Sliced(sm.Accuracy()).update(
        [1, 0, 1], [1, 1, 1], by=np.array([["fr", 1], ["de", 2], ["fr", 1]], dtype=object)
    )
    assert a.compute() == {("de", 2): 0.0, ("fr", 1): 1.0}
    assert b.compute() == {("de", 2): 0.0, ("fr", 1): 1.0}
    assert a == b
    assert sm.loads(a.to_bytes()).compute() == a.compute()


def test_inside_and_around_windows_decay_and_collections():
    rng = np.random.default_rng(7)
    n = 2000
    y, p = rng.integers(0, 2, n), rng.integers(0, 2, n)
    by, t = rng.integers(0, 4, n), rng.uniform(0, 100, n)
    inner = TumblingWindows(sm.Sliced(sm.Accuracy()), width=25).update(y, p, by=by, timestamps=t)
    outer = sm.Sliced(TumblingWindows(sm.Accuracy(), width=25)).update(y, p, by=by, timestamps=t)
    for start, per_slice in inner.compute().items():
        for key, value in per_slice.items():
            rows = (t >= start) & (t < start + 25) & (by == key)
            assert value == accuracy_score(y[rows], p[rows])
            assert outer.compute()[key][start] == value
    assert sm.loads(inner.to_bytes()) == inner and sm.loads(outer.to_bytes()) == outer
    decayed = Decayed(sm.Sliced(sm.Accuracy()), half_life=10.0).update(y, p, by=by, timestamps=t)
    w = 0.5 ** ((t.max() - t) / 10.0)
    for key, value in decayed.compute().items():
        rows = by == key
        assert value == pytest.approx(accuracy_score(y[rows], p[rows], sample_weight=w[rows]))
    c = sm.MetricCollection(acc=sm.Sliced(sm.Accuracy()), f1=sm.Sliced(sm.F1()))
    c.update(y, p, by=by)
    assert c.compute()["acc"] == sm.Sliced(sm.Accuracy()).update(y, p, by=by).compute()


def test_sample_weight_goes_with_the_rows():
    rng = np.random.default_rng(8)
    y, p, w, g = (
        rng.integers(0, 2, 500),
        rng.integers(0, 2, 500),
        rng.random(500),
        rng.integers(0, 3, 500),
    )
    s = sm.Sliced(sm.Accuracy()).update(y, p, by=g, sample_weight=w)
    for k, v in s.compute().items():
        assert v == pytest.approx(accuracy_score(y[g == k], p[g == k], sample_weight=w[g == k]))


def test_bad_input_leaves_state_unchanged_and_refuses_non_metrics():
    s = sm.Sliced(sm.Accuracy()).update([1, 0], [1, 1], by=[0, 1])
    before = s.to_bytes()
    for bad in [dict(by=[0, 1, 2]), dict(by=None), dict(by=[0, 1], sample_weight=[1.0])]:
        with pytest.raises(InputError):
            s.update([1, 0], [1, 1], **bad)
        assert s.to_bytes() == before
    with pytest.raises(InputError, match="metric"):
        sm.Sliced("accuracy")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="max_slices"):
        sm.Sliced(sm.Accuracy(), max_slices=0)


def test_one_row_calls_are_buffered_then_folded_as_one_batch():
    """A server's one-row calls (``by=`` a scalar key) take the per-request path: checked,
    buffered, folded as one batch before any read; the state is the batch's. A call the checks
    cannot vouch for (no key, a key of another kind) goes to ``update``, which refuses it and
    leaves the rows before it counted."""
    rng = np.random.default_rng(4)
    y, p, by = rng.integers(0, 3, 500), rng.integers(0, 3, 500), rng.integers(0, 40, 500)
    s = sm.Sliced(sm.Accuracy())
    s.update(y[:10], p[:10], by=by[:10])  # the first call teaches the checks the kinds
    for i in range(10, 500):
        s.update(int(y[i]), int(p[i]), by=int(by[i]))
    assert s._pending is not None  # buffered, not yet folded
    whole = sm.Sliced(sm.Accuracy()).update(y, p, by=by)
    assert s.to_bytes() == whole.to_bytes()
    with pytest.raises(sm.InputError, match="by"):
        s.update(0, 1)
    with pytest.raises(sm.InputError, match="by"):
        s.update(0, 1, by="a")
    assert s.to_bytes() == whole.to_bytes()
    assert sm.Sliced(sm.Accuracy(), max_slices=3)._rows is None  # a new key may be refused


def test_decoded_slices_are_independent_of_the_template_and_each_other() -> None:
    """``loads`` builds each slice as a twin of the declared template without ``__init__``
    (``Metric._blank_for_load``): every slice owns its state, the template stays empty, and
    the result equals the metrics built from their config."""
    rng = np.random.default_rng(21)
    n = 3_000
    sliced = sm.Sliced(sm.ROCAUC())
    sliced.update(rng.integers(0, 2, n), rng.random(n), by=rng.integers(0, 4, n))
    back = sm.loads(sliced.to_bytes())
    slices = back.slices.view()
    metrics = [slices[k] for k in sorted(slices)]
    blocks = [m.hist for m in metrics]
    assert len({id(b) for b in blocks}) == len(blocks)
    assert all(m._lock is not metrics[0]._lock for m in metrics[1:])
    before = [m.to_bytes() for m in metrics]
    back.update(np.ones(50, dtype=np.int64), np.full(50, 0.9), by=np.zeros(50, dtype=np.int64))
    for template in (back.slices.template, back._template):
        assert template.count == 0
        assert template.to_bytes() == sm.ROCAUC().to_bytes()
    for k, m in zip(sorted(slices)[1:], metrics[1:], strict=True):
        assert m.to_bytes() == before[sorted(slices).index(k)]
    for k in sorted(slices):
        fresh = sm.ROCAUC.from_bytes(slices[k].to_bytes())
        assert fresh == slices[k]


def test_a_merge_of_several_checks_kinds_and_max_slices_across_them_all() -> None:
    """Each operand was checked against ``self`` alone: an empty ``Sliced`` took str keys
    from one operand and int keys from another (``compute`` then raised ``TypeError``), or
    more slices than ``max_slices`` (bytes ``loads`` refused). Refused, and nothing changes."""
    a = sm.Sliced(sm.Accuracy()).update([1, 0], [1, 1], by=["a", "b"])
    b = sm.Sliced(sm.Accuracy()).update([1], [1], by=[7])
    for target in (sm.Sliced(sm.Accuracy()), sm.Sliced(sm.Accuracy()).update([1], [0], by=[3])):
        before = target.to_bytes()
        with pytest.raises(IncompatibleStateError, match="slice keys of kind"):
            target.merge(a, b)
        assert target.to_bytes() == before
    with pytest.raises(IncompatibleStateError, match="slice keys of kind"):
        sum([a, b])
    x = sm.Sliced(sm.Accuracy(), max_slices=3).update([1, 0], [1, 1], by=["a", "b"])
    y = sm.Sliced(sm.Accuracy(), max_slices=3).update([1, 0], [1, 1], by=["c", "d"])
    with pytest.raises(IncompatibleStateError, match="past max_slices=3"):
        sm.Sliced(sm.Accuracy(), max_slices=3).merge(x, y)
    make = lambda: sm.MetricCollection(s=sm.Sliced(sm.Accuracy()))  # noqa: E731
    c = make()
    with pytest.raises(IncompatibleStateError, match="slice keys of kind"):
        c.merge(make().update([1], [1], by=["a"]), make().update([1], [1], by=[7]))
    assert c.count == 0


def test_mixed_lists_and_ints_beyond_int64_are_refused_as_keys_and_ids() -> None:
    """numpy reads ["a", 1] as two strings, so Sliced took "1" for the key 1 and Bootstrap
    hashed 1 as "1" (shards then differed from one stream); GAUC already refused it.
    Integers beyond int64 raised numpy's OverflowError (not a ValueError) everywhere."""
    with pytest.raises(InputError, match="by: slice keys must all be integers or all be"):
        sm.Sliced(sm.Accuracy()).update([1, 1], [1, 0], by=["a", 1])
    with pytest.raises(InputError, match="ids: must all be integers or all be strings"):
        sm.Bootstrap(sm.Accuracy(), replicates=4).update([1, 1], [1, 1], ids=["a", 1])
    huge = [
        lambda: sm.GAUC().update([0], [0.1], [2**64]),
        lambda: sm.GAUC().update(0, 0.1, 2**64),
        lambda: sm.GAUC().update([0], [0.1], [-(2**63) - 1]),
        lambda: sm.ranking.NDCG(k=3).update([2**64], [1], [0.5]),
        lambda: sm.Sliced(sm.Accuracy()).update([1], [1], by=[2**64]),
        lambda: sm.Bootstrap(sm.Accuracy(), replicates=4).update([1], [1], ids=[2**64]),
    ]
    for call in huge:
        with pytest.raises(InputError, match="int64"):
            call()


def test_composite_keys_as_columns_inside_windows_and_as_row_tuples() -> None:
    # Inside a window a tuple of key columns was read as a list of rows: transposed when it had
    # as many parts as rows (keys ('fr', 'de') and ('1', '2')), refused otherwise. A list of
    # per-row key tuples turned their integer parts into strings.
    want = sm.Sliced(sm.Accuracy()).update([1, 1, 0], [1, 0, 0], by=(["fr", "de", "fr"], [1, 2, 1]))
    assert set(want.compute()) == {("fr", 1), ("de", 2)}
    rows = sm.Sliced(sm.Accuracy()).update(
        [1, 1, 0], [1, 0, 0], by=[("fr", 1), ("de", 2), ("fr", 1)]
    )
    assert rows.to_bytes() == want.to_bytes()
    for make in (
        lambda m: sm.TumblingWindows(m, width=60),
        lambda m: sm.SlidingWindow(m, width=60, slots=2),
    ):
        for n in (2, 3):
            y, p = [1, 1, 0][:n], [1, 0, 0][:n]
            by = (["fr", "de", "fr"][:n], [1, 2, 1][:n])
            w = make(sm.Sliced(sm.Accuracy())).update(y, p, by=by, timestamps=list(range(n)))
            flat = sm.Sliced(sm.Accuracy()).update(y, p, by=by)
            got = w.compute()
            got = got[0] if 0 in got else got
            assert got == flat.compute()
        one = make(sm.Sliced(sm.Accuracy())).update(1, 1, by=("fr", 1), timestamps=0)
        assert sm.loads(one.to_bytes()) == one


def test_membership_and_iteration_read_the_keys():
    # 0.8.14 had neither: `in` and `list()` probed s[0], s[1], ... and raised KeyError: 0
    s = sm.Sliced(sm.Accuracy()).update([1, 0, 1], [1, 1, 0], by=["fr", "de", "fr"])
    assert "fr" in s and "it" not in s and 0 not in s and ["fr"] not in s
    assert list(s) == ["de", "fr"] == s.keys()
    assert {k: s[k].compute() for k in s} == s.compute()
    ints = sm.Sliced(sm.Accuracy()).update([1, 0], [1, 1], by=[0, 1])
    assert 1 in ints and 2 not in ints and list(ints) == [0, 1]


def test_a_list_of_lists_is_composite_keys_as_a_list_of_tuples():
    # 0.8.14 read [["de", 2], ...] through numpy: every part a string, ("de", "2")
    y, p = [1, 0, 1], [1, 1, 1]
    lists = sm.Sliced(sm.Accuracy()).update(y, p, by=[["de", 2], ["fr", 1], ["de", 2]])
    tuples = sm.Sliced(sm.Accuracy()).update(y, p, by=[("de", 2), ("fr", 1), ("de", 2)])
    assert lists.to_bytes() == tuples.to_bytes()
    assert lists.keys() == [("de", 2), ("fr", 1)]
    lists.update([0], [0], by=[("fr", 1)])  # the same keys given either way
    assert lists.compute() == {("de", 2): 1.0, ("fr", 1): 0.5}


@pytest.mark.parametrize(
    "by, says",
    [
        ([True, False, True], "got booleans"),
        ([2**63, -1, 1], "integers past int64 in a list"),
        ([0.5, 1.5, 2.5], "round or label float keys first"),
        # (past uint64: the message says how keys past int64 are given)
        (
            [2**64, 1, 2],
            r"within int64 \(.*\); give values from 2\*\*63 to 2\*\*64 - 1 as a uint64",
        ),
    ],
)
def test_key_refusals_say_what_the_keys_were(by, says):
    s = sm.Sliced(sm.Accuracy())
    with pytest.raises(sm.InputError, match=says):
        s.update([1, 0, 1], [1, 1, 1], by=by)
    assert s.count == 0


def test_a_decoded_key_ending_in_nul_is_refused():
    # every path reads "a\x00" as the slice "a": a blob holding both came from no stream
    import msgpack

    s = sm.Sliced(sm.Accuracy()).update([1, 0], [1, 1], by=["a", "b"])
    tree = msgpack.unpackb(s.to_bytes(), strict_map_key=False)
    pairs = tree["state"]["slices"]
    assert [p[0] for p in pairs] == ["a", "b"]
    pairs[1][0] = "a\x00"
    with pytest.raises(sm.StateDecodeError, match="not ending in NUL"):
        sm.loads(msgpack.packb(tree, use_bin_type=True))


def test_a_refused_row_is_named_by_its_place_in_the_batch():
    # The per-slice path fed each slice its rows alone: 0.8.14 said "found nan at 1" for the
    # batch's fourth row (the second of its slice).
    y, p = [1.0, 2.0, 0.5, 0.3], [1.0, 2.0, 3.0, float("nan")]
    with pytest.raises(sm.InputError) as bare:
        sm.MeanSquaredError().update(y, p)
    s = sm.Sliced(sm.MeanSquaredError())
    with pytest.raises(sm.InputError) as sliced:
        s.update(y, p, by=["a", "b", "a", "b"])
    assert str(sliced.value) == str(bare.value) and "at 3" in str(bare.value)
    assert s.count == 0


def test_a_slices_own_refusal_is_kept_when_the_whole_batch_fails_otherwise():
    # The slice's error is a label kind its state refuses; the whole batch fed to an empty
    # metric fails on the weights' bound instead, which no slice passes: the slice's error.
    s = sm.Sliced(sm.Accuracy()).update(["x"], ["x"], by=["a"])
    before = s.to_bytes()
    big = 0.7 * 2.0**100
    with pytest.raises(sm.InputError, match="str labels"):
        s.update([1, 2, 1], [1, 2, 1], by=["a", "b", "c"], sample_weight=[1, big, big])
    assert s.to_bytes() == before


class _HalvedAUC(sm.ROCAUC):
    """A user's subclass of a metric whose slices are packed (score buckets)."""

    _wire_name = "tests.HalvedAUC"

    def _compute(self):
        return super()._compute() / 2


class _ShiftedAccuracy(sm.Accuracy):
    """A user's subclass of a metric whose slices are packed (label counts)."""

    _wire_name = "tests.ShiftedAccuracy"

    def _compute(self):
        return super()._compute() - 1.0

    def interval(self, level=0.95):
        low, high = super().interval(level)
        return low - 1.0, high - 1.0


def test_a_subclass_of_a_packed_metric_computes_through_its_own_states() -> None:
    # The packed tables (and ROCAUC's _compute_many) give the library classes' values for
    # every slice at once; a subclass's own compute() and interval() answer for it.
    rng = np.random.default_rng(2)
    y, p, by = rng.integers(0, 2, 3_000), rng.random(3_000), rng.integers(0, 50, 3_000)
    auc = sm.Sliced(_HalvedAUC()).update(y, p, by=by)
    assert auc.compute() == {k: auc[k].compute() for k in auc.keys()}
    assert auc.compute()[0] == pytest.approx(
        sm.ROCAUC().update(y[by == 0], p[by == 0]).compute() / 2
    )
    acc = sm.Sliced(_ShiftedAccuracy()).update(y, (p > 0.5).astype(int), by=by)
    assert all(v < 0 for v in acc.compute().values())
    assert acc.intervals() == {k: acc[k].interval() for k in acc.keys()}


class _FlippedAccuracy(sm.Accuracy):
    """A user's subclass whose update changes the rows (predictions flipped)."""

    _wire_name = "tests.FlippedAccuracy"

    def update(self, y_true, y_pred, sample_weight=None):
        return super().update(y_true, 1 - np.asarray(y_pred), sample_weight)


def test_a_subclass_with_its_own_update_is_fed_through_it() -> None:
    # The stacked folds (packed slices, Bootstrap's replicates) read the rows through the
    # base class's hook, which declines for a subclass overriding update: its own update runs.
    rng = np.random.default_rng(4)
    y, by = rng.integers(0, 2, 2_000), rng.integers(0, 20, 2_000)
    p = np.where(rng.random(2_000) < 0.8, y, 1 - y)
    s = sm.Sliced(_FlippedAccuracy()).update(y, p, by=by)
    for k, v in s.compute().items():
        assert v == pytest.approx(accuracy_score(y[by == k], 1 - p[by == k]))
    b = sm.Bootstrap(_FlippedAccuracy(), replicates=20, seed=1).update(y, p)
    assert b.compute() == pytest.approx(accuracy_score(y, 1 - p))
    plain = sm.Bootstrap(sm.Accuracy(), replicates=20, seed=1).update(y, 1 - p)
    assert b.interval() == plain.interval()


def test_one_row_of_a_held_slice_updates_it_in_place_all_or_nothing() -> None:
    """A row for a slice already held is given to that slice's state in place, through its
    own (all or nothing) update: 0.8.27 copied the slice's state first, every slot of a
    window in it, 1 ms a request. Reads between the rows see each change, the bytes are
    those of the rows fed at once, and a refused row changes nothing."""
    rng = np.random.default_rng(4)
    n = 1200
    y, p = rng.integers(0, 2, n), np.round(rng.random(n), 3)
    by, t = rng.integers(0, 6, n), np.arange(n) / 10.0
    one = sm.Sliced(sm.SlidingWindow(sm.ROCAUC(), width=30, slots=3))
    seen = []
    for i in range(n):
        one.update(int(y[i]), float(p[i]), by=int(by[i]), timestamps=float(t[i]))
        if i % 97 == 0:
            seen.append(one.compute())
    whole = sm.Sliced(sm.SlidingWindow(sm.ROCAUC(), width=30, slots=3))
    whole.update(y, p, by=by, timestamps=t)
    assert one.to_bytes() == whole.to_bytes()
    assert one.compute() == whole.compute()
    for i, got in zip(range(0, n, 97), seen, strict=True):
        want = sm.Sliced(sm.SlidingWindow(sm.ROCAUC(), width=30, slots=3))
        want.update(y[: i + 1], p[: i + 1], by=by[: i + 1], timestamps=t[: i + 1])
        assert got == want.compute()
    before = one.to_bytes()
    with pytest.raises(InputError):
        one.update(1, 1.5, by=2, timestamps=float(t[-1]))
    assert one.to_bytes() == before
