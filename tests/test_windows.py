"""Windows and decay: routing, late and out-of-order data, retention, closed forms, splits."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, confusion_matrix, f1_score

import streammetrics as sm
from streammetrics.errors import IncompatibleStateError, InputError
from streammetrics.windows import Decayed, SlidingWindow, TumblingWindows
from streammetrics.wrappers import Bootstrap, MetricCollection, Sliced


def _stream(seed: int, n: int, span: float):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 3, n), rng.integers(0, 3, n), rng.uniform(0, span, n)


def _chunks(n: int, k: int, seed: int):
    cuts = np.sort(np.random.default_rng(seed).choice(np.arange(1, n), k - 1, replace=False))
    return np.split(np.arange(n), cuts)


# -- tumbling -----------------------------------------------------------------------------------


def test_tumbling_matches_per_window_reference_with_out_of_order_rows() -> None:
    yt, yp, t = _stream(0, 5000, 1000.0)  # times in random order: every batch is out of order
    w = TumblingWindows(sm.F1(average="macro"), width=60)
    for idx in _chunks(len(t), 37, 1):
        w.update(yt[idx], yp[idx], timestamps=t[idx])
    got = w.compute()
    keys = np.floor(t / 60).astype(int)
    assert sorted(got) == [60 * k for k in np.unique(keys)]
    for k in np.unique(keys):
        sel = keys == k
        assert got[60 * k] == pytest.approx(f1_score(yt[sel], yp[sel], average="macro"), abs=1e-15)
    assert w.count == 5000


def test_tumbling_late_rows_go_to_their_own_window() -> None:
    w = TumblingWindows(sm.Accuracy(), width=10)
    w.update([1, 1], [1, 1], timestamps=[100, 105])
    w.update([1], [0], timestamps=[3])  # very late: its own, older window
    assert w.compute() == {0: 0.0, 100: 1.0}


def test_tumbling_retention_closes_oldest_and_pop_hands_them_out() -> None:
    yt, yp, t = _stream(2, 3000, 100.0)
    w = TumblingWindows(sm.ConfusionMatrix(labels=[0, 1, 2]), width=10, retention=3)
    for idx in _chunks(len(t), 20, 3):
        w.update(yt[idx], yp[idx], timestamps=t[idx])
    assert list(w.compute()) == [70, 80, 90]
    assert w.closed == [0, 10, 20, 30, 40, 50, 60]
    closed = w.pop_closed()
    assert list(closed) == [0, 10, 20, 30, 40, 50, 60] and w.closed == []
    keys = np.floor(t / 10).astype(int)
    for start, metric in {**closed, **w.windows}.items():
        sel = keys == start // 10
        np.testing.assert_array_equal(metric.compute(), confusion_matrix(yt[sel], yp[sel]))
    assert w.count == int((keys >= 7).sum())
    # a row for a window already popped is kept as a closed piece, never lost
    w.update([0], [0], timestamps=[5.0])
    assert w.closed == [0] and w.count == int((keys >= 7).sum()) + 1
    piece = w.pop_closed()[0]
    assert piece.count == 1


def test_tumbling_datetimes_and_timedelta_width() -> None:
    base = np.datetime64("2024-05-01T10:00:00")
    ts = base + np.array([0, 59, 60, 3599, 3600], dtype="timedelta64[s]")
    w = TumblingWindows(sm.Accuracy(), width=dt.timedelta(hours=1))
    w.update([1, 1, 0, 1, 1], [1, 0, 0, 1, 0], timestamps=ts)
    start = float((base - np.datetime64("1970-01-01T00:00:00")) / np.timedelta64(1, "s"))
    assert w.compute() == {start: 0.75, start + 3600: 0.0}


def test_tumbling_splits_and_bytes() -> None:
    yt, yp, t = _stream(4, 4000, 500.0)
    whole = TumblingWindows(sm.Accuracy(), width=25, retention=5)
    whole.update(yt, yp, timestamps=t)
    parts = []
    for idx in _chunks(len(t), 6, 5):
        p = TumblingWindows(sm.Accuracy(), width=25, retention=5)
        p.update(yt[idx], yp[idx], timestamps=t[idx])
        parts.append(p)
    merged = parts[3].copy().merge(*parts[:3], *parts[4:])
    assert merged.to_bytes() == whole.to_bytes()
    back = sm.loads(merged.to_bytes())
    assert back == whole and back.closed == whole.closed


def test_tumbling_wraps_a_collection() -> None:
    yt, yp, t = _stream(6, 600, 100.0)
    coll = sm.MetricCollection(acc=sm.Accuracy(), f1=sm.F1(average="micro"))
    w = TumblingWindows(coll, width=50)
    w.update(yt, yp, timestamps=t)
    got = sm.loads(w.to_bytes()).compute()
    sel = t < 50
    assert got[0]["acc"] == pytest.approx(accuracy_score(yt[sel], yp[sel]))
    assert set(got) == {0, 50}


def test_wrapper_refuses_bad_arguments() -> None:
    with pytest.raises(sm.InputError, match="width"):
        TumblingWindows(sm.Accuracy(), width=0)
    with pytest.raises(sm.InputError, match="metric"):
        TumblingWindows(object(), width=1)  # type: ignore[arg-type]
    with pytest.raises(sm.InputError, match="retention"):
        TumblingWindows(sm.Accuracy(), width=1, retention=0)
    with pytest.raises(sm.InputError, match="slots"):
        SlidingWindow(sm.Accuracy(), width=1, slots=0)
    w = TumblingWindows(sm.Accuracy(), width=1)
    with pytest.raises(sm.InputError, match="timestamps"):
        w.update([1], [1])


def test_decode_refuses_inconsistent_window_states() -> None:
    from streammetrics import _codec

    w = TumblingWindows(sm.Accuracy(), width=10, retention=2).update(
        [1, 0, 1], [1, 1, 1], timestamps=[1, 15, 25]
    )
    tree = _codec.decode(w.to_bytes())
    tree["state"]["count"] = 4
    with pytest.raises(sm.StateDecodeError, match="count"):
        sm.loads(_codec.encode(tree))
    tree = _codec.decode(w.to_bytes())
    tree["state"]["open"][0] = tree["state"]["closed"][0]  # a closed window reopened
    tree["state"]["count"] += 1
    with pytest.raises(sm.StateDecodeError):
        sm.loads(_codec.encode(tree))
    tree = _codec.decode(w.to_bytes())
    tree["config"]["metric"]["class"] = "NoSuchMetric"
    with pytest.raises(sm.StateDecodeError):
        sm.loads(_codec.encode(tree))


# -- sliding ------------------------------------------------------------------------------------


def test_sliding_window_covers_the_last_slots_and_counts_dropped_rows() -> None:
    yt, yp, t = _stream(7, 4000, 1000.0)
    w = SlidingWindow(sm.Accuracy(), width=100, slots=10)
    for idx in _chunks(len(t), 50, 8):
        w.update(yt[idx], yp[idx], timestamps=t[idx])
    head = int(np.floor(t.max() / 10))
    inside = np.floor(t / 10).astype(int) > head - 10
    assert w.compute() == pytest.approx(accuracy_score(yt[inside], yp[inside]), abs=1e-15)
    assert w.dropped == int((~inside).sum()) and w.count == 4000
    assert w.span == ((head - 9) * 10, (head + 1) * 10)
    assert w.window().count == int(inside.sum())


def test_sliding_late_row_is_dropped_but_validated() -> None:
    w = SlidingWindow(sm.Accuracy(), width=10, slots=2)
    w.update([1], [1], timestamps=[100])
    w.update([0], [1], timestamps=[50])
    assert w.dropped == 1 and w.compute() == 1.0
    before = w.to_bytes()
    with pytest.raises(sm.InputError, match="y_true"):
        w.update([0.5], [1], timestamps=[50])  # bad even though it would be dropped
    assert w.to_bytes() == before


def test_sliding_merge_aligns_slots_in_any_order() -> None:
    yt, yp, t = _stream(9, 3000, 300.0)
    order = np.argsort(t)  # in time order: early shards see rows the whole stream drops later
    whole = SlidingWindow(sm.ConfusionMatrix(), width=60, slots=6)
    for idx in np.array_split(order, 30):
        whole.update(yt[idx], yp[idx], timestamps=t[idx])
    shards = [SlidingWindow(sm.ConfusionMatrix(), width=60, slots=6) for _ in range(3)]
    for i, idx in enumerate(np.array_split(order, 30)):
        shards[i % 3].update(yt[idx], yp[idx], timestamps=t[idx])
    merged = shards[2] + shards[0] + shards[1]
    assert merged.to_bytes() == whole.to_bytes()
    assert merged.dropped == whole.dropped > 0


# -- decay --------------------------------------------------------------------------------------


def _decay_weights(t: np.ndarray, h: float) -> np.ndarray:
    return np.exp2(-(t.max() - t) / h)


def test_decayed_accuracy_equals_closed_form_across_many_epochs() -> None:
    yt, yp, t = _stream(10, 5000, 3000.0)  # 3000 / (64 * 5) ~ 9 renormalisations
    d = Decayed(sm.Accuracy(), half_life=5.0)
    for idx in _chunks(len(t), 40, 11):
        d.update(yt[idx], yp[idx], timestamps=t[idx])
    w = _decay_weights(t, 5.0)
    want = float(np.sum(w * (yt == yp)) / np.sum(w))
    assert d.compute() == pytest.approx(want, rel=1e-12)
    assert d.compute() == pytest.approx(accuracy_score(yt, yp, sample_weight=w), rel=1e-12)


def test_decayed_confusion_matrix_counts_decay_to_now() -> None:
    yt, yp, t = _stream(12, 2000, 400.0)
    sw = np.random.default_rng(13).uniform(0, 2, 2000)
    d = Decayed(sm.ConfusionMatrix(labels=[0, 1, 2]), half_life=3.0)
    for idx in _chunks(len(t), 25, 14):
        d.update(yt[idx], yp[idx], timestamps=t[idx], sample_weight=sw[idx])
    want = confusion_matrix(yt, yp, sample_weight=sw * _decay_weights(t, 3.0))
    np.testing.assert_allclose(d.compute(), want, rtol=1e-12, atol=1e-300)
    later = d.at(t.max() + 6.0).compute()  # two half-lives later, every count is a quarter
    np.testing.assert_allclose(later, want / 4, rtol=1e-12)
    with pytest.raises(sm.InputError, match="now"):
        d.at(t.max() - 1)


def test_decayed_split_merge_agrees_to_rounding() -> None:
    yt, yp, t = _stream(15, 3000, 2000.0)
    whole = Decayed(sm.F1(average="weighted"), half_life=4.0).update(yt, yp, timestamps=t)
    parts = [Decayed(sm.F1(average="weighted"), half_life=4.0) for _ in range(4)]
    for i, idx in enumerate(_chunks(len(t), 12, 16)):
        parts[i % 4].update(yt[idx], yp[idx], timestamps=t[idx])
    merged = sm.loads((parts[3] + parts[1] + parts[0] + parts[2]).to_bytes())
    assert merged.compute() == pytest.approx(whole.compute(), rel=1e-12)
    assert merged.epoch == whole.epoch and merged.count == whole.count


def test_decayed_very_old_rows_fade_to_nothing_without_overflow() -> None:
    d = Decayed(sm.Accuracy(), half_life=1.0)
    d.update([1], [0], timestamps=[0.0])
    d.update([1] * 3, [1] * 3, timestamps=[1e6, 1e6 + 1, 1e6 + 2])  # 1e6 half-lives later
    assert d.compute() == 1.0 and d.count == 4
    assert np.isfinite(d.inner.counts.table).all()


def test_decayed_refuses_states_that_cannot_be_scaled() -> None:
    class MaxScore(sm.Metric):
        def __init__(self) -> None:
            super().__init__()
            self._add_state("top", -math.inf, merge="max")

        def update(self, x, sample_weight=None):  # type: ignore[no-untyped-def]
            return self._commit(len(x), top=max(self.top, float(np.max(x))))

    with pytest.raises(sm.InputError, match="maximum"):
        Decayed(MaxScore(), half_life=1.0)

    class OwnMerge(sm.Metric):
        def __init__(self) -> None:
            super().__init__()
            self._add_state("total", 0.0, merge="sum")

        def update(self, x, sample_weight=None):  # type: ignore[no-untyped-def]
            return self._commit(len(x), total=self.total + float(np.sum(x)))

        def _merge_from(self, other):  # type: ignore[no-untyped-def]
            self.total += other.total

    with pytest.raises(sm.InputError, match="manages its own state"):
        Decayed(OwnMerge(), half_life=1.0)
    with pytest.raises(sm.InputError, match=r"Bootstrap\.drawn is a sum of int values"):
        Decayed(Bootstrap(sm.Accuracy()), half_life=1.0)
    with pytest.raises(sm.InputError, match="half_life"):
        Decayed(sm.Accuracy(), half_life=-1)


def test_decayed_auc_equals_scikit_learn_with_decayed_weights() -> None:
    # "AUC over the last hour, decayed": the score stores scale like any count state.
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(21)
    ts = np.sort(rng.uniform(0, 100, 5000))
    y = rng.integers(0, 2, 5000)
    s = np.clip(0.3 * y + 0.7 * rng.random(5000), 0, 1)
    want = roc_auc_score(y, s, sample_weight=2.0 ** ((ts - ts.max()) / 10.0))
    exact = sm.Decayed(sm.ROCAUC(exact=True), half_life=10.0)
    sketch = sm.Decayed(sm.ROCAUC(), half_life=10.0)
    for i in range(0, 5000, 500):
        exact.update(y[i : i + 500], s[i : i + 500], timestamps=ts[i : i + 500])
        sketch.update(y[i : i + 500], s[i : i + 500], timestamps=ts[i : i + 500])
    assert abs(exact.compute() - want) < 1e-12
    assert abs(sketch.compute() - want) <= sketch.inner.error_bound() + 1e-12
    assert sm.loads(sketch.to_bytes()) == sketch


def test_decayed_multiclass_auc_equals_scikit_learn_with_decayed_weights() -> None:
    # 0.8.4 refused MulticlassROCAUC ("manages its own state"); its per-class score stores are
    # now one registered block that scales like any count state.
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(22)
    ts = np.sort(rng.uniform(0, 100, 3000))
    y = rng.integers(0, 3, 3000)
    p = rng.dirichlet([1.0, 1.0, 1.0], 3000)
    p[np.arange(3000), y] += 0.5
    p /= p.sum(axis=1, keepdims=True)
    w = 2.0 ** ((ts - ts.max()) / 10.0)
    for average in ("macro", "weighted"):
        want = roc_auc_score(y, p, multi_class="ovr", average=average, sample_weight=w)
        m = sm.Decayed(sm.MulticlassROCAUC(average=average, exact=True), half_life=10.0)
        for i in range(0, 3000, 700):
            m.update(y[i : i + 700], p[i : i + 700], timestamps=ts[i : i + 700])
        assert abs(m.compute() - want) < 1e-12
        assert sm.loads(m.to_bytes()) == m


def test_windows_carry_lists_of_references() -> None:
    # Equal-length reference lists must reach the text metric as lists, not a 2-D array.
    from streammetrics.text import BLEU

    hyps = ["the cat sat on the mat today", "a dog ran in the park all day", "it is raining"]
    refs = [
        ["the cat sat on the mat", "a cat sat on the mat today"],
        ["a dog ran in the park", "the dog ran in the park all day"],
        ["it is raining now", "it rains"],
    ]
    w = TumblingWindows(BLEU(), width=10)
    w.update(hyps, refs, timestamps=[1, 2, 15])
    got = w.compute()
    assert got[0] == BLEU().update(hyps[:2], refs[:2]).compute() > 0
    assert got[10] == BLEU().update(hyps[2:], refs[2:]).compute()


def _refused_unchanged(window, call) -> None:
    before = window.to_bytes()
    with pytest.raises(sm.InputError, match="cannot join the window's other slots"):
        call()
    assert window.to_bytes() == before


def test_sliding_window_refuses_rows_its_slots_cannot_merge() -> None:
    """A sliding window's value is the merge of its slots: rows one slot accepts but the merge
    refuses were accepted, and ``compute()`` (or ``loads``) failed later. Refused at the call,
    on the batch and the one-row paths, as a plain metric refuses them."""
    w = sm.SlidingWindow(sm.Sliced(sm.Accuracy()), width=20, slots=2)
    w.update([1, 0], [1, 1], by=["a", "b"], timestamps=[1, 2])
    _refused_unchanged(w, lambda: w.update([1], [1], by=[7], timestamps=[12]))
    _refused_unchanged(w, lambda: w.update(1, 1, by=7, timestamps=12))
    w.update(1, 1, by="c", timestamps=12)
    assert w.compute() == {"a": 1.0, "b": 0.0, "c": 1.0}
    capped = sm.SlidingWindow(sm.Sliced(sm.Accuracy(), max_slices=2), width=20, slots=2)
    capped.update([1, 0], [1, 1], by=["a", "b"], timestamps=[1, 2])
    _refused_unchanged(capped, lambda: capped.update([1], [0], by=["c"], timestamps=[12]))
    _refused_unchanged(capped, lambda: capped.update(1, 0, by="c", timestamps=12))
    # A binary F1 over three slots of one label each: every pair has two labels, all three
    # have three (checked across every slot at once).
    f = sm.SlidingWindow(sm.F1(), width=30, slots=3)
    f.update([0], [0], timestamps=[1])
    f.update([1], [1], timestamps=[11])
    _refused_unchanged(f, lambda: f.update([2], [2], timestamps=[21]))
    _refused_unchanged(f, lambda: f.update(2, 2, timestamps=21))
    f.update(1, 1, timestamps=21)  # a label the window holds: in place
    assert f.compute() == 1.0
    # Once the slot holding 0 has aged out, label 2 joins the window.
    f.update([2], [2], timestamps=[31])
    assert sm.loads(f.to_bytes()).compute() == f.compute()


def test_tumbling_retention_refuses_rows_a_closed_window_cannot_take_and_changes_nothing() -> None:
    """Rows for a closed window join it at eviction: a merge there that failed had already
    changed the open windows (two open with ``retention=1``, a count its windows disagree
    with, bytes ``loads`` refused). Evictions are now built on copies."""
    w = sm.TumblingWindows(sm.Sliced(sm.Accuracy()), width=10, retention=1)
    w.update([1, 0, 1], [1, 1, 0], by=["a", "b", "a"], timestamps=[1, 12, 25])
    before = w.to_bytes()
    # (0.8.12: late rows join their closed window directly, whose own update refuses them)
    with pytest.raises(sm.InputError, match="keys of kind int, this stream holds keys of str"):
        w.update([1, 0], [1, 0], by=[1, 2], timestamps=[1, 35])
    assert w.to_bytes() == before
    w.update([1, 0], [1, 0], by=["c", "a"], timestamps=[1, 35])  # str keys: they join
    assert sm.loads(w.to_bytes()) == w
    assert w.closed == [0, 10, 20] and list(w.compute()) == [30]


@pytest.mark.parametrize("kind", ["tumbling", "sliding"])
def test_window_merges_are_checked_before_any_window_changes(kind) -> None:
    """Windows merge in place, one operand after another: a conflict found at the second
    window (or operand) left the first merged. Every window is checked first."""

    def make():
        inner = sm.Sliced(sm.Accuracy())
        if kind == "tumbling":
            return sm.TumblingWindows(inner, width=10)
        return sm.SlidingWindow(inner, width=20, slots=2)

    a = make().update([1, 1], [1, 1], by=["a", "b"], timestamps=[1, 12])
    b = make().update([1], [1], by=["c"], timestamps=[2])
    c = make().update([1], [1], by=[5], timestamps=[13])
    for target in (make(), a.copy()):
        before = target.to_bytes()
        with pytest.raises(sm.IncompatibleStateError, match="slice keys of kind"):
            target.merge(*(x for x in (a, b, c) if x != target))
        assert target.to_bytes() == before


def test_integer_timestamps_far_from_the_origin_are_refused() -> None:
    """Integer times more than 2**62 from the origin were accepted (the float path refused
    them), giving window keys ``loads`` refuses."""
    for t in (2**62 + 5, -(2**62) - 5):
        for w in (
            sm.TumblingWindows(sm.Accuracy(), width=1),
            sm.SlidingWindow(sm.Accuracy(), width=10, slots=10),
        ):
            with pytest.raises(sm.InputError, match="too far from origin"):
                w.update([1], [1], timestamps=[t])
            with pytest.raises(sm.InputError, match="too far from origin"):
                w.update(1, 1, timestamps=t)
            assert w.count == 0


@pytest.mark.parametrize(
    "make",
    [
        lambda: Sliced(Sliced(sm.Accuracy())),
        lambda: Sliced(MetricCollection(a=sm.Accuracy(), b=Sliced(sm.Accuracy()))),
        lambda: TumblingWindows(Decayed(sm.Accuracy(), half_life=10), width=10),
        lambda: SlidingWindow(SlidingWindow(sm.Accuracy(), width=5), width=10),
        lambda: Decayed(TumblingWindows(sm.Accuracy(), width=5), half_life=10),
    ],
)
def test_a_wrapper_that_could_never_be_updated_is_refused_at_construction(make) -> None:  # type: ignore[no-untyped-def]
    # The outer wrapper keeps its keyword column (by=, timestamps=) for itself, so an inner
    # one needing the same keyword would refuse every update: say so once, when built.
    with pytest.raises(sm.InputError, match=r"metric: .* could never be updated"):
        make()


def test_wrappers_taking_different_keywords_nest() -> None:
    m = Sliced(SlidingWindow(sm.Accuracy(), width=10))
    m.update([1, 0, 1], [1, 1, 1], by=["a", "b", "a"], timestamps=[1, 2, 3])
    assert m.compute() == {"a": 1.0, "b": 0.0}
    w = SlidingWindow(Sliced(sm.Accuracy()), width=10)
    w.update([1, 0], [1, 1], by=["a", "b"], timestamps=[1, 2])
    assert w.compute() == {"a": 1.0, "b": 0.0}


def test_a_time_on_a_slot_boundary_falls_in_the_slot_it_begins() -> None:
    # width 7 over 3 slots: 35 begins slot 15 (35 * 3 / 7), but 35 / (7 / 3) is
    # 14.999999999999998, so 0.8.3 put the row in slot 14 and dropped it, 5 units old.
    for times in ([35, 40], [35.0, 40.0]):
        w = SlidingWindow(sm.Accuracy(), width=7, slots=3).update([1, 1], [1, 0], timestamps=times)
        assert (w.compute(), w.dropped, w.span) == (0.5, 0, (35.0, 42.0))
        one = SlidingWindow(sm.Accuracy(), width=7, slots=3)
        for t, p in zip(times, [1, 0], strict=True):
            one.update(1, p, timestamps=t)  # the one-row path keys alike
        assert one.to_bytes() == w.to_bytes()
    # every integer time: the slot is floor(t * slots / width), exactly
    t = np.arange(-20_000, 20_000)
    for width, slots in ((7, 3), (100, 3), (3600, 7)):
        w = SlidingWindow(sm.Accuracy(), width=width, slots=slots)
        w.update(np.ones(len(t), int), np.ones(len(t), int), timestamps=t)
        assert w.span == (
            (t.max() * slots // width - slots + 1) * width / slots,
            (t.max() * slots // width + 1) * width / slots,
        )
        want = int(((t * slots) // width > t.max() * slots // width - slots).sum())
        assert w.window().count == want


def test_a_sliding_window_takes_its_metric_direction() -> None:
    # Sliced(SlidingWindow(m)).worst() was refused ("declares no direction"), as a window's
    # value is its metric's; Decayed already took the direction.
    s = Sliced(SlidingWindow(sm.Accuracy(), width=10))
    s.update([1, 0, 1], [1, 1, 1], by=["a", "b", "a"], timestamps=[1, 2, 3])
    assert s.worst(1) == [("b", 0.0)] and sm.loads(s.to_bytes()).worst(1) == [("b", 0.0)]
    assert SlidingWindow(sm.MeanSquaredError(), width=5).higher_is_better is False


def test_decayed_states_round_trip_after_old_weights_underflow() -> None:
    # 5,000 half-lives later the first rows weigh 0: 0.8.4 kept their buckets, empty, and its
    # bytes did not load. A timestamp of -0.0 read back as 0.0, so == failed after a round trip.
    for metric in (sm.ROCAUC(), sm.ROCAUC(exact=True), sm.MulticlassROCAUC(exact=True)):
        d = sm.Decayed(metric, half_life=1.0)
        if isinstance(metric, sm.MulticlassROCAUC):
            d.update([0, 1, 2], np.eye(3) * 0.6 + 0.1, timestamps=[-0.0, 0, 0])
            d.update([1, 0, 2], np.eye(3)[[1, 0, 2]] * 0.6 + 0.1, timestamps=[5000] * 3)
        else:
            d.update([0, 1, 0], [0.2, 0.7, 0.4], timestamps=[-0.0, 0, 0])
            d.update([1, 0], [0.9, 0.1], timestamps=[5000, 5000])
        loaded = sm.loads(d.to_bytes())
        assert loaded == d and loaded.compute() == d.compute()
    fresh = sm.Decayed(sm.ROCAUC(), half_life=1.0)
    fresh.update([1, 0], [0.9, 0.1], timestamps=[-0.0, -0.0])
    assert sm.loads(fresh.to_bytes()) == fresh


SCHEMA1 = Path(__file__).parent / "golden" / "schema1"


def _decayed_auc_stream(rng: np.random.Generator, n: int = 2000) -> tuple[np.ndarray, ...]:
    t = np.sort(rng.uniform(0, 100, n))
    y = rng.integers(0, 2, n)
    return t, y, 1 / (1 + np.exp(-rng.normal(y * 1.0, 1.0)))


@pytest.mark.parametrize("make", [sm.ROCAUC, sm.AveragePrecision])
def test_decayed_intervals_of_metrics_reading_weights_as_counts_take_kish_size(make) -> None:
    # ROCAUC and AP read weights as counts, so their interval followed the decayed weights'
    # scale: 1.4x too wide at the latest time, and wider (or narrower) as the weights scaled.
    from scipy.stats import norm

    t, y, s = _decayed_auc_stream(np.random.default_rng(0))
    d = Decayed(make(), half_life=10).update(y, s, timestamps=t)
    heavy = Decayed(make(), half_life=10)
    heavy.update(y, s, timestamps=t, sample_weight=np.full(2000, 1e3))
    later = Decayed(make(), half_life=10).update(y, s, timestamps=t + 500.0)
    low, high = d.interval()
    assert heavy.interval() == pytest.approx((low, high), abs=1e-12)
    assert later.interval() == pytest.approx((low, high), abs=1e-12)
    assert low < d.compute() < high
    # Kish's size: sum w = 288 decayed rows would be read as counts; (sum w)**2 / sum w**2 =
    # 576. The interval is the one of the inner metric fed those weights, scaled to Kish size.
    w = np.exp2((t - t.max()) / 10)
    counted = make().update(y, s, sample_weight=w * w.sum() / (w @ w))
    assert (low, high) == pytest.approx(counted.interval(), abs=1e-12)
    if make is sm.ROCAUC:  # coverage over seeded streams (true AUC of the binormal scores)
        truth, hits = norm.cdf(1 / np.sqrt(2)), 0
        rng = np.random.default_rng(11)
        for _ in range(200):
            t, y, s = _decayed_auc_stream(rng)
            low, high = Decayed(make(), half_life=10).update(y, s, timestamps=t).interval()
            hits += low <= truth <= high
        assert 0.92 <= hits / 200 <= 0.99  # 0.8.5: 99.75% (intervals 1.4x too wide)


@pytest.mark.parametrize("path", sorted(SCHEMA1.glob("Decayed*.bin")), ids=lambda p: p.stem)
def test_decayed_schema_1_blobs_of_0_8_5_load(path: Path) -> None:
    old = sm.loads(path.read_bytes())
    new = sm.loads((path.parent.parent / path.name).read_bytes())
    assert old.count == new.count and math.isnan(old.weight) and math.isnan(old.weight_sq)
    value, pinned = old.compute(), new.compute()
    if isinstance(value, float):
        assert value == pytest.approx(pinned, rel=1e-12)
    else:
        assert np.allclose(value, pinned, rtol=1e-12)
    assert sm.loads(old.to_bytes()) == old
    auc = Decayed(sm.ROCAUC(), half_life=2.0)
    auc.update([0, 1, 1], [0.2, 0.7, 0.4], timestamps=[0, 1, 2])
    forged = sm.loads(auc.to_bytes())
    forged.weight = forged.weight_sq = math.nan  # as a 0.8.5 state upgraded
    assert all(math.isnan(v) for v in forged.interval()) and forged.compute() == auc.compute()


def test_dates_beyond_nanoseconds_keep_their_time() -> None:
    # 0.8.7 read every datetime64 through nanoseconds, which numpy wraps around silently: a
    # 1600 row was filed under 2184, moved a sliding window's head by centuries (every real
    # row dropped) and became Decayed's latest time.
    ts = np.array(
        ["2024-05-01T10:00", "2024-05-01T10:01", "2024-05-01T10:02", "1600-01-01T00:00"],
        dtype="datetime64[s]",
    )
    y, p = [1, 1, 1, 0], [1, 1, 1, 1]
    w = TumblingWindows(sm.Accuracy(), width=dt.timedelta(days=1)).update(y, p, timestamps=ts)
    starts = [str(np.datetime64(int(k), "s")) for k in w.compute()]
    assert starts == ["1600-01-01T00:00:00", "2024-05-01T00:00:00"]
    s = SlidingWindow(sm.Accuracy(), width=dt.timedelta(hours=1), slots=6)
    s.update(y, p, timestamps=ts)
    assert (s.compute(), s.dropped) == (1.0, 1)
    assert Decayed(sm.Accuracy(), half_life=3600.0).update(y, p, timestamps=ts).compute() == 1.0
    far = np.array(["9999-12-31", "1600-01-01"], dtype="datetime64[D]")
    seconds = [(d - np.datetime64("1970-01-01")) / np.timedelta64(1, "s") for d in far]
    for unit in ("D", "h", "s", "ms", "us"):
        times = far.astype(f"datetime64[{unit}]")
        w = TumblingWindows(sm.Accuracy(), width=86_400).update([1, 1], [1, 1], timestamps=times)
        assert sorted(w.compute()) == sorted(seconds)


def test_decayed_int64_nanoseconds_weigh_rows_exactly() -> None:
    # 0.8.7 rounded int64 nanosecond times to float64 (256 ns steps near 1.7e18) before the
    # subtraction: at a 1 ms half-life the weights were off by 1e-4 relative.
    base, half_life = 1_714_000_000_000_000_000, 1_000_000
    t = base + np.array([0, 37, 1_000_001, 2_000_003], dtype=np.int64)
    y, p = [1, 0, 1, 0], [1, 1, 1, 1]
    d = Decayed(sm.ConfusionMatrix(), half_life=half_life).update(y, p, timestamps=t)
    w = [2.0 ** (-(int(t.max()) - int(x)) / half_life) for x in t]
    want = confusion_matrix(y, p, sample_weight=w)
    np.testing.assert_allclose(d.at(int(t.max())).compute(), want, rtol=1e-14)
    later = d.at(int(t.max()) + half_life).compute()
    np.testing.assert_allclose(later, want / 2, rtol=1e-14)
    acc = Decayed(sm.Accuracy(), half_life=half_life).update(y, [1, 1, 1, 1], timestamps=t)
    assert acc.compute() == pytest.approx(accuracy_score(y, [1, 1, 1, 1], sample_weight=w), 1e-15)


def test_sliding_window_of_sliced_refuses_a_slice_that_cannot_join_its_namesakes() -> None:
    """0.8.8 checked slices across slots by key kind only: a str label for a slice holding int
    labels in another slot was accepted, then compute() raised and the bytes did not load
    (a published worker's file was skipped whole). Found by a review, 0.8.9."""
    for scalars in (True, False):

        def one(v: object, scalars: bool = scalars) -> object:
            return v if scalars else [v]

        w = SlidingWindow(sm.Sliced(sm.Accuracy()), width=40, slots=4)
        w.update(one(1), one(1), by=one(1), timestamps=one(0))
        before = w.to_bytes()
        with pytest.raises(InputError, match="slice 1"):
            w.update(one("a"), one("a"), by=one(1), timestamps=one(15))
        assert w.to_bytes() == before
        w.update(one("a"), one("a"), by=one(2), timestamps=one(15))  # another slice: fine
        assert sm.loads(w.to_bytes()).compute() == {1: 1.0, 2: 1.0}
    # A binary F1 slice whose labels spread over slots: a third label across them is refused.
    w = SlidingWindow(sm.Sliced(sm.F1()), width=30, slots=3)
    w.update([0, 1], [0, 1], by=[7, 7], timestamps=[0, 0])
    with pytest.raises(InputError, match="slice 7"):
        w.update([2], [2], by=[7], timestamps=[10])
    # Inside a collection, beside a member that joins pair by pair.
    c = SlidingWindow(sm.MetricCollection(s=sm.Sliced(sm.Accuracy()), f=sm.F1()), width=30, slots=3)
    c.update([0, 1], [0, 1], by=[1, 1], timestamps=[0, 0])
    with pytest.raises(InputError, match="slice 1"):
        c.update(["x"], ["x"], by=[1], timestamps=[10])
    with pytest.raises(InputError):
        c.update([1, 2], [1, 2], by=[3, 3], timestamps=[10, 10])  # F1's third label
    assert c.count == 2


# -- review of 0.8.9: decay's weight budget, huge times, calendar units --------------------------


def test_decayed_accepts_the_weights_the_metric_accepts_at_any_time_in_any_order():
    """0.8.9 weighed fresh rows from the start of their epoch, up to 2**64 times their own
    weight, against the wrapped metric's bound of 2**100 on weights: a weight of 2**40 was
    refused at t=63.5 half-lives (not at 0.5 or 64.5), and two rows were accepted in one order
    and refused in the other. The reference is now the end of the epoch."""
    for t in (0.5, 63.5, 63.99, 64.5, 1e6 + 63.9):
        d = Decayed(sm.Accuracy(), half_life=1).update(
            [1], [1], timestamps=[t], sample_weight=[2**40]
        )
        assert d.compute() == 1.0
    rows = [([1], [1], [63.5], [2.0**40]), ([0], [1], [64.5], [1.0])]
    forward, backward = Decayed(sm.Accuracy(), half_life=1), Decayed(sm.Accuracy(), half_life=1)
    for y, p, t, w in rows:
        forward.update(y, p, timestamps=t, sample_weight=w)
    for y, p, t, w in reversed(rows):
        backward.update(y, p, timestamps=t, sample_weight=w)
    want = 2.0**40 * 2**-1 / (2.0**40 * 2**-1 + 1.0)  # the first row is one half-life older
    assert forward.compute() == pytest.approx(want, rel=1e-15)
    assert backward.compute() == pytest.approx(want, rel=1e-15)
    many = Decayed(sm.ConfusionMatrix(), half_life=1)
    many.update(np.ones(1000, int), np.ones(1000, int), timestamps=np.full(1000, 63.9),
                sample_weight=np.full(1000, 2.0**27))  # fmt: skip
    assert many.compute().sum() == pytest.approx(1000 * 2.0**27)
    # every stored weight is at most the row's own
    assert float(many.inner.counts.total()) <= 1000 * 2.0**27


@pytest.mark.parametrize("case_id", ["Decayed", "Decayed-confusion", "Decayed-topk"])
def test_decayed_states_of_schema_2_load_with_their_values(case_id):
    """Blobs of 0.8.9 (reference at the epoch's start) load rescaled by exactly 2**-64: the
    same value and interval as this version's golden state of the same rows, and they merge
    with new states."""
    golden = Path(__file__).parent / "golden"
    old = sm.loads((golden / "schema2" / f"{case_id}.bin").read_bytes())
    new = sm.loads((golden / f"{case_id}.bin").read_bytes())
    np.testing.assert_allclose(old.compute(), new.compute(), rtol=1e-12)
    assert old.weight == pytest.approx(new.weight, rel=1e-12)
    assert old.weight_sq == pytest.approx(new.weight_sq, rel=1e-12)
    if case_id != "Decayed-confusion":
        assert old.interval() == pytest.approx(new.interval(), rel=1e-12)
    assert sm.loads(old.to_bytes()).to_bytes() == old.to_bytes()  # the new layout, stable
    np.testing.assert_allclose((old + new).compute(), (new + new).compute(), rtol=1e-12)


def test_a_huge_time_over_a_tiny_width_is_an_input_error_on_every_path():
    """One row at 1e306 over a width of 1e-3 made ``OverflowError`` (floor of inf) where the
    batch path said ``InputError``; so did ``Decayed`` at 1e11 over a half-life of 1e-300."""
    for make in (
        lambda: TumblingWindows(sm.Accuracy(), width=0.001),
        lambda: SlidingWindow(sm.Accuracy(), width=0.001, slots=4),
    ):
        m = make()
        for t in (1e306, [1e306]):
            with pytest.raises(InputError, match="timestamps"):
                m.update(1, 1, timestamps=t) if not isinstance(t, list) else m.update(
                    [1], [1], timestamps=t
                )
        assert m.count == 0
    d = Decayed(sm.Accuracy(), half_life=1e-300)
    with pytest.raises(InputError, match="timestamps"):
        d.update([1], [1], timestamps=[1e11])
    assert d.count == 0


def test_calendar_units_and_timedelta_timestamps_are_input_errors():
    """``np.timedelta64(1, "M")`` has no length in seconds: a bare ``TypeError`` before; a
    ``timedelta64`` scalar timestamp went down the one-row path and raised ``TypeError``."""
    for unit in ("M", "Y"):
        for make in (
            lambda w: TumblingWindows(sm.Accuracy(), width=w),
            lambda w: SlidingWindow(sm.Accuracy(), width=w, slots=3),
        ):
            with pytest.raises(InputError, match=r"width: .* no fixed length"):
                make(np.timedelta64(1, unit))
        with pytest.raises(InputError, match=r"half_life: .* no fixed length"):
            Decayed(sm.Accuracy(), half_life=np.timedelta64(1, unit))
    assert TumblingWindows(sm.Accuracy(), width=np.timedelta64(2, "D")).config["width"] == 172800
    for m in (TumblingWindows(sm.Accuracy(), width=10), SlidingWindow(sm.Accuracy(), width=10)):
        m.update(1, 1, timestamps=5)  # the one-row path has learnt the call
        before = m.to_bytes()
        with pytest.raises(InputError, match="timestamps"):
            m.update(1, 1, timestamps=np.timedelta64(1, "s"))
        assert m.to_bytes() == before


def test_decayed_one_sample_reaches_the_inner_per_request_path():
    """One sample as scalars gave the wrapped metric a weight array of one row, which took its
    ordinary update (46-80 us per request); its weight is now a scalar, which the wrapped
    metric buffers (about 12 us), and the value is the batch's to rounding."""
    rng = np.random.default_rng(12)
    n = 400
    y, s, t = rng.integers(0, 2, n), rng.random(n), np.sort(rng.uniform(0, 300, n))
    for make, second in ((sm.ROCAUC, s), (sm.Accuracy, (s > 0.5).astype(int))):
        d = Decayed(make(), half_life=30.0)
        buffered = 0
        for i in range(n):
            d.update(int(y[i]), second[i].item(), timestamps=float(t[i]))
            buffered += d.inner._pending is not None
        assert buffered > n // 2
        whole = Decayed(make(), half_life=30.0).update(y, second, timestamps=t)
        assert d.compute() == pytest.approx(whole.compute(), rel=1e-12)
        assert d.weight == pytest.approx(whole.weight, rel=1e-12)


def test_a_sliding_window_of_slices_checks_each_new_slice_once(monkeypatch):
    """A label trusted in every slice let a slot buffer a row without learning its (label,
    slice) pair, so the window checked every later row of that slice against the other slots
    again: 2,000 rows over 50 slices ran the check 2,000 times, about 1 ms each (second review
    of this release). The window teaches the slot the row it checked."""
    from streammetrics.wrappers import sliding

    calls = []
    real = sliding.check_joins
    monkeypatch.setattr(sliding, "check_joins", lambda *a: calls.append(1) or real(*a))
    w = SlidingWindow(sm.Sliced(sm.Accuracy()), width=100, slots=10)
    w.update(1, 1, by="a", timestamps=1.0)
    w.update(1, 1, by="a", timestamps=2.0)
    calls.clear()
    for i in range(2000):
        w.update(1, 1, by=f"k{i % 50}", timestamps=3.0)
    assert len(calls) == 50
    whole = SlidingWindow(sm.Sliced(sm.Accuracy()), width=100, slots=10)
    whole.update([1, 1], [1, 1], by=["a", "a"], timestamps=[1.0, 2.0])
    keys = [f"k{i % 50}" for i in range(2000)]
    whole.update(np.ones(2000, int), np.ones(2000, int), by=keys, timestamps=np.full(2000, 3.0))
    assert w.compute() == whole.compute() and w.count == whole.count


def test_integer_times_near_the_int64_ends_do_not_wrap_over_a_float_width() -> None:
    # int64 times minus an int origin wrapped silently in the batch path (0.8.11): a time near
    # 2**63 fell in a window near -2**63, and a sliding window dropped its newest row as late.
    t = 2**63 - 10
    batch = sm.TumblingWindows(sm.Accuracy(), width=4.5, origin=-20)
    batch.update([1], [1], timestamps=np.array([t]))
    one = sm.TumblingWindows(sm.Accuracy(), width=4.5, origin=-20).update(1, 1, timestamps=t)
    assert list(batch.compute()) == list(one.compute()) and min(one.compute()) > 9e18
    assert batch.to_bytes() == one.to_bytes()
    s = sm.SlidingWindow(sm.Accuracy(), width=45.5, slots=1, origin=-20)
    s.update([1], [1], timestamps=[5])
    s.update([0], [1], timestamps=np.array([t]))
    assert s.compute() == 0.0 and s.span[0] > 9e18
    early = sm.TumblingWindows(sm.Accuracy(), width=4.5, origin=20)
    early.update([1, 0], [1, 1], timestamps=np.array([-(2**63), -(2**63) + 3]))
    assert list(early.compute()) == [min(early.compute())] and min(early.compute()) < -9e18


@pytest.mark.parametrize("one_row", [True, False])
def test_a_slice_held_in_more_than_64_slots_is_still_checked(one_row: bool) -> None:
    # 0.8.11 counted every slice state it read against a budget of 64, so a slice spread over
    # 70 slots went unchecked: a third label for a binary F1 slice was accepted, and then
    # compute() raised and the window's bytes did not load. Reads of states held one per slice
    # cost microseconds; only states built from a packed table count against that budget.
    w = SlidingWindow(sm.Sliced(sm.F1()), width=200, slots=200)
    for t in range(70):
        w.update(t % 2, t % 2, timestamps=t, by="x")
    before = w.to_bytes()
    with pytest.raises(InputError, match="cannot join the window's other slots"):
        if one_row:
            w.update(1, 2, timestamps=150, by="x")
        else:
            w.update([1, 0], [2, 0], timestamps=[150, 151], by=["x", "y"])
    assert w.to_bytes() == before
    assert w.compute() == {"x": 1.0}
    assert sm.loads(w.to_bytes()).to_bytes() == before


def test_rows_that_cannot_join_other_slots_name_their_argument() -> None:
    # 0.8.12 said "update: the rows cannot join ..." whatever the cause, where the same row
    # refused within one slot named its argument.
    cases = [
        (SlidingWindow(Sliced(sm.Accuracy()), width=10, slots=5), ("a", 7), "by"),
        (SlidingWindow(Sliced(sm.Accuracy(), max_slices=1), width=10, slots=5), ("a", "b"), "by"),
    ]
    for window, (first, second), name in cases:
        window.update(1, 1, by=first, timestamps=0)
        before = window.to_bytes()
        with pytest.raises(InputError, match=f"^{name}: the rows cannot join"):
            window.update(1, 1, by=second, timestamps=5)
        assert window.to_bytes() == before
    for window, rows in [
        (SlidingWindow(sm.F1(), width=10, slots=5), ([0, 1], [2])),
        (SlidingWindow(sm.Accuracy(), width=10, slots=5), ([0], ["x"])),
    ]:
        window.update(rows[0], rows[0], timestamps=[0] * len(rows[0]))
        with pytest.raises(InputError, match=r"^y_true/y_pred: the rows cannot join"):
            window.update(rows[1], rows[1], timestamps=[5])


def test_decayed_sliced_points_to_per_slice_intervals_that_hold() -> None:
    # Decayed(Sliced(ROCAUC())).interval() advised Bootstrap; at().intervals() then read the
    # decayed weights as counts (too wide, and wider the later it was asked).
    rng = np.random.default_rng(2)
    n = 4000
    y = rng.random(n) < 0.4
    s = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1)
    keys = np.where(rng.random(n) < 0.5, "a", "b")
    t = np.sort(rng.uniform(0, 1000, n))
    outer = Decayed(Sliced(sm.ROCAUC()), half_life=300.0).update(y, s, by=keys, timestamps=t)
    with pytest.raises(sm.NoIntervalError, match=r"Sliced\(Decayed\(metric, half_life\)\)"):
        outer.interval()
    inner = Sliced(Decayed(sm.ROCAUC(), half_life=300.0)).update(y, s, by=keys, timestamps=t)
    alone = Decayed(sm.ROCAUC(), half_life=300.0).update(y[keys == "a"], s[keys == "a"],
                                                         timestamps=t[keys == "a"])  # fmt: skip
    assert inner.intervals()["a"] == alone.interval()
    with pytest.raises(sm.NoIntervalError, match=r"Sliced.intervals\(level\)"):
        Sliced(sm.ROCAUC()).update([0, 1], [0.2, 0.8], by=["a", "a"]).interval()
    window = SlidingWindow(Sliced(sm.ROCAUC()), width=10, slots=2)
    window.update([0, 1], [0.2, 0.8], by=["a", "a"], timestamps=[0, 1])
    with pytest.raises(sm.NoIntervalError, match=r"window\(\).intervals\(level\)"):
        window.interval()
    assert set(window.window().intervals()) == {"a"}


def test_decayed_counts_at_nanosecond_times_are_exact() -> None:
    """int64 nanoseconds (about 1.7e18) lie past float64's integers: 0.8.17 kept the latest
    time as a float64, up to 128 ns off, and ``compute()`` rescaled by it, so one fresh row
    weighed 1.0147 at a 1 us half-life (1.0015 at 10 us) where ``at(now=latest)`` gave 1. The
    latest time is now kept as an int, on the wire too, and every count equals the closed
    form worked out in exact integers."""
    T = 1_700_000_000_123_456_789
    for half_life in (1_000_000, 10_000, 1_000):
        d = Decayed(sm.ConfusionMatrix(labels=[0, 1]), half_life)
        d.update([1], [1], timestamps=np.array([T], dtype=np.int64))
        back = sm.loads(d.to_bytes())
        assert back.latest == T and type(back.latest) is int and back == d
        for m in (d, back):
            assert m.compute()[1, 1] == 1.0 == m.at(T).compute()[1, 1]
        d.update([0, 1], [0, 1], timestamps=np.array([T - 1_000, T - 3], dtype=np.int64))
        want = [2.0 ** (-1_000 / half_life), 1.0 + 2.0 ** (-3 / half_life)]
        got = d.compute()
        np.testing.assert_allclose([got[0, 0], got[1, 1]], want, rtol=1e-12)
        # A float timestamp as late as the int one: the float is kept, in either order.
        a = Decayed(sm.ConfusionMatrix(labels=[0, 1]), half_life)
        a.update([1], [1], timestamps=[2**60])
        b = Decayed(sm.ConfusionMatrix(labels=[0, 1]), half_life)
        b.update([1], [1], timestamps=[float(2**60)])  # the same time, as a float
        ab, ba = a.copy().merge(b), b.copy().merge(a)
        assert type(ab.latest) is float is type(ba.latest) and ab.to_bytes() == ba.to_bytes()
    # A forged latest time past int64 (msgpack writes it as an unsigned int) is refused.
    from streammetrics import _codec

    name, schema, config, state = _codec.check_envelope(_codec.decode(d.to_bytes()))
    forged = _codec.encode((name, schema, config, {**state, "latest": 2**63}))
    with pytest.raises(sm.StateDecodeError):
        sm.loads(forged)


def test_decayed_merges_of_float_and_int_times_keep_the_epoch_of_the_later() -> None:
    """A float time's epoch, floor(t / D), may round up to the next epoch near 2**53 and
    above, where an int time's is exact: a merge of a float-time state (float timestamps, or
    any 0.8.17 state) with an int-time one a few nanoseconds later kept the larger epoch beside
    the later time, and loads refused the merged bytes (a review of 0.8.18's first cut).
    Also ``at(now=float(T))`` for an int latest time T past 2**53 (its float lies below T)."""
    t_float = 1152921504606846848.0  # floor(t / 192) rounds up to the next epoch
    t_int = 1152921504606846849  # one ns later, the epoch before it exactly
    a = Decayed(sm.Accuracy(), half_life=3).update([1], [1], timestamps=np.array([t_float]))
    b = Decayed(sm.Accuracy(), half_life=3).update([1], [0], timestamps=np.array([t_int]))
    assert a.epoch == b.epoch + 1
    # A 0.8.17 state of int64 nanoseconds kept its time as a float: the same meeting.
    old = Decayed(sm.Accuracy(), half_life=1001)
    old.update([1], [1], timestamps=np.array([float(1700000000000061569)]))
    new = Decayed(sm.Accuracy(), half_life=1001)
    new.update([1], [0], timestamps=np.array([1700000000000061697]))
    # (A 3 ns half-life at float times spaced 256 ns apart weighs nothing exactly: only the
    # epoch and the bytes are checked there.)
    gap = 1700000000000061697 - int(float(1700000000000061569))
    want = 2.0 ** (-gap / 1001) / (2.0 ** (-gap / 1001) + 1.0)  # the old row's share
    for x, y in ((a, b), (b, a), (old, new), (new, old)):
        merged = x.copy().merge(y)
        assert merged.epoch == merged._epoch_of(merged.latest)
        back = sm.loads(merged.to_bytes())
        assert back == merged
        if x is old or y is old:
            assert merged.compute() == pytest.approx(want, rel=1e-9)
    t = 1_700_000_000_123_456_789
    d = Decayed(sm.ConfusionMatrix(labels=[0, 1]), 1_000).update([1], [1], timestamps=[t])
    assert d.at(float(t)).compute()[1, 1] == pytest.approx(1.0, rel=1e-6)
    assert d.at(np.float64(t)).compute()[1, 1] == pytest.approx(1.0, rel=1e-6)


def test_decayed_a_row_about_2_63_away_leaves_the_others_exact() -> None:
    """A batch holding a row so far in the past that its difference from the reference passes
    int64 (a sentinel time beside nanoseconds) took the float path as a whole, rounding every
    row by up to 128 ns: the same rows weighed 8% apart split into other batches (a review of
    0.8.18's first cut). Only that row takes it now."""
    t = 1_700_000_000_000_000_123
    old = -(2**63) + 1
    together = Decayed(sm.ConfusionMatrix(labels=[0, 1]), 1_000)
    together.update([1, 0], [1, 0], timestamps=np.array([t, old], dtype=np.int64))
    apart = Decayed(sm.ConfusionMatrix(labels=[0, 1]), 1_000)
    apart.update([1], [1], timestamps=np.array([t], dtype=np.int64))
    apart.update([0], [0], timestamps=np.array([old], dtype=np.int64))
    for m in (together, apart):
        assert m.compute()[1, 1] == 1.0 and m.compute()[0, 0] == 0.0


def test_a_row_whose_values_another_slot_holds_skips_the_join_check_and_nothing_else() -> None:
    """A row new to its slot's slice, whose values another slot has seen in that slice, joins
    without checking every slot (0.8.27 folded every slot's waiting rows to check it: 0.33 ms
    a request for 20 slices). The bytes are those of the rows fed as a batch, and a row whose
    values no slot holds together is still refused whole."""
    rng = np.random.default_rng(21)
    n = 1500
    y, by = rng.integers(0, 2, n), rng.choice(["a", "b", "c", "d"], n)
    pred = np.where(rng.random(n) < 0.8, y, 1 - y)
    t = np.arange(n) / 10.0  # 100 rows per 10 s slot
    one = SlidingWindow(Sliced(sm.F1()), width=60, slots=6)
    for i in range(n):
        one.update(int(y[i]), int(pred[i]), by=str(by[i]), timestamps=float(t[i]))
    batch = SlidingWindow(Sliced(sm.F1()), width=60, slots=6).update(y, pred, by=by, timestamps=t)
    assert one.to_bytes() == batch.to_bytes()
    last = float(t[-1])
    # Slice "e" holds labels 1 and 2 in the newest slot only. The same values in an older
    # slot's "e" are known elsewhere: joined unchecked, as the batch joins them. A third label
    # in any slice's slot is still refused whole: (2, 2) in "a", which holds 0 and 1, and (0, 0)
    # in "e".
    extra = ([1, 2], [2, 1], ["e", "e"], [last, last])
    late = (1, 2, "e", last - 25.0)
    for row in [*zip(*extra, strict=True), late]:  # one row a call: each slot learns its rows
        one.update(row[0], row[1], by=row[2], timestamps=row[3])
    assert one._slots[max(one._slots)]._row_trusted((1, 2), {"by": "e"})  # known elsewhere
    batch.update(
        [*extra[0], late[0]],
        [*extra[1], late[1]],
        by=[*extra[2], late[2]],
        timestamps=[*extra[3], late[3]],
    )
    assert one.to_bytes() == batch.to_bytes()
    before = one.to_bytes()
    for row in [(2, 2, "a", last - 25.0), (0, 0, "e", last - 25.0), (0, 0, "e", last)]:
        with pytest.raises(InputError, match="two classes"):
            one.update(row[0], row[1], by=row[2], timestamps=row[3])
        assert one.to_bytes() == before


def test_a_window_of_bootstrap_refuses_a_label_only_all_its_slots_together_cannot_hold() -> None:
    """``Bootstrap`` checked nothing across more than two operands: a binary ``F1`` window
    took labels 0, 1 and 2 in three slots (each pair fine) and wrote bytes that ``loads``
    refused (found by a review of 0.8.28). A merge of three such states is refused too."""
    w = SlidingWindow(Bootstrap(sm.F1(), replicates=5), width=6, slots=3)
    w.update(0, 0, timestamps=0)
    w.update(1, 1, timestamps=2)
    before = w.to_bytes()
    with pytest.raises(InputError, match="two classes"):
        w.update(1, 2, timestamps=4)
    assert w.to_bytes() == before
    assert sm.loads(w.to_bytes()).to_bytes() == before
    a, b, c = (Bootstrap(sm.F1(), replicates=5).update([x], [x]) for x in (0, 1, 2))
    kept = a.to_bytes()
    with pytest.raises(IncompatibleStateError):
        a.merge(b, c)
    assert a.to_bytes() == kept


def test_a_sliding_window_checks_its_slots_weights_together() -> None:
    """The window's value merges every slot, so their weights together must stay within the
    bound (2**100): a row whose slot's weights fit with its neighbour's but not with every
    slot's was accepted, and the window's ``compute`` and bytes were then refused (found by
    a review of 0.8.29; 0.8.28 did the same). Refused at its call, by one row or a batch."""
    for one in (True, False):
        w = SlidingWindow(sm.ROCAUC(), width=20, slots=4)
        w.update(1, 0.1, sample_weight=2.0**99.5, timestamps=0)
        w.update(0, 0.5, timestamps=6)
        before = w.to_bytes()
        with pytest.raises(InputError, match=r"^sample_weight: .*2\*\*100"):
            if one:
                w.update(1, 0.9, sample_weight=2.0**99.5, timestamps=11)
            else:
                w.update([1], [0.9], sample_weight=[2.0**99.5], timestamps=[11])
        assert w.to_bytes() == before
        assert sm.loads(before).compute() == w.compute()


@pytest.mark.parametrize(
    "make",
    [lambda: sm.ROCAUC(), lambda: sm.Accuracy(), lambda: sm.F1()],
)
def test_decayed_one_sample_of_python_scalars_is_the_batch_path(make) -> None:  # type: ignore[no-untyped-def]
    """``Decayed`` takes one unweighted sample at a Python int or float time without building
    the batch's columns (0.8.29): the same state, byte for byte, as the same calls through
    the batch path (numpy scalar times), across epochs, with int and float times mixed, and
    the same refusals, with nothing changed."""
    rng = np.random.default_rng(29)
    fast, slow = Decayed(make(), half_life=2), Decayed(make(), half_life=2)
    t = 0.0
    for i in range(600):
        t += float(rng.exponential(1.5))
        when: int | float = int(t) if i % 3 == 0 else t
        row: tuple = (int(rng.integers(0, 2)), float(rng.random()))
        if not isinstance(make(), sm.ROCAUC):
            row = (row[0], int(row[1] > 0.5))
        fast.update(*row, timestamps=when)
        slow.update(*row, timestamps=np.asarray(when)[()])
        if i % 50 == 0:
            assert fast.to_bytes() == slow.to_bytes()
    assert fast.to_bytes() == slow.to_bytes()
    before = fast.to_bytes()
    for bad in ((float("nan"), 1), (0.5, 1)):
        with pytest.raises(InputError):
            fast.update(*bad, timestamps=t)
    for when in (float("inf"), float("nan"), True):
        with pytest.raises(InputError):
            fast.update(1, 1, timestamps=when)
    assert fast.to_bytes() == before
