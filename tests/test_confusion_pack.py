"""``Sliced`` over many slices of a confusion metric keeps them as one table
(``streammetrics.wrappers._confusion_pack``): the same states, bytes and values as one state
per slice, through the conformance harness (confusion tables pack from the first slice)."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
import streammetrics.wrappers._slice_table as sliced_module
from tests import test_conformance as conformance
from tests.harness import Case
from tests.test_slice_pack import CHECKS


def _labels(weighted: str, classes: int = 3, slices: int = 40):
    def batch(rng: np.random.Generator, n: int):
        y = rng.integers(0, classes, n)
        p = np.where(rng.random(n) < 0.7, y, rng.integers(0, classes, n))
        kwargs = {"by": rng.integers(0, slices, n)}
        if weighted == "always" or (weighted == "sometimes" and rng.random() < 0.5):
            kwargs["sample_weight"] = rng.integers(0, 4, n).astype(float)
        return (y, p), kwargs

    return batch


BAD = [
    (([0, 1], [0, 1]), {"by": [1]}),
    (([0, 1], [0, 1.5]), {"by": [1, 2]}),
    (([0, 1], [0, "a"]), {"by": [1, 2]}),
    (([0, 1], [0, 1]), {"by": ["a", "b"]}),
    (([0, 1], [0, 1]), {"by": [1, 2], "sample_weight": [1.0, -1.0]}),
]

CASES = [
    Case(
        f"Sliced-accuracy-packed-{weighted}",
        lambda: sm.Sliced(sm.Accuracy()),
        _labels(weighted),
        BAD,
        other=lambda: sm.Sliced(sm.F1(average="macro")),
    )
    for weighted in ("never", "sometimes")
] + [
    Case(
        "Sliced-f1-macro-packed",
        lambda: sm.Sliced(sm.F1(average="macro"), max_slices=35),
        lambda rng, n: (*_labels("never", classes=5)(rng, n)[:1], {"by": rng.integers(0, 30, n)}),
        BAD,
        other=lambda: sm.Sliced(sm.F1(average="micro")),
    ),
    Case(
        "Sliced-confusion-matrix-fixed-packed",
        lambda: sm.Sliced(sm.ConfusionMatrix(labels=[0, 1, 2, 3])),
        _labels("never", classes=4),
        [*BAD[:4], (([0, 7], [0, 1]), {"by": [1, 2]})],
        other=lambda: sm.Sliced(sm.ConfusionMatrix(labels=[0, 1, 2])),
    ),
]


@pytest.fixture
def packed(monkeypatch):
    """Every Sliced confusion table packs, however few its slices (the default), and decodes
    packed however few its slices (the harness's round trips and corrupt bytes then go
    through the packed decoder)."""
    assert sliced_module.CONFUSION_PACK_MIN_SLICES == 1
    monkeypatch.setattr(sliced_module, "CONFUSION_PACK_DECODE_MIN", 1)


@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__ for c in CHECKS])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_packed_table_passes_the_harness(case, check, packed):
    check(case)


@pytest.mark.parametrize("seed", [10, 11])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_packed_table_is_split_invariant(case, seed, packed):
    conformance.test_split_invariance(case, seed)


@pytest.mark.parametrize("scalars", [True, False])
def test_the_packed_table_one_sample_at_a_time(scalars, packed):
    conformance.test_one_sample_at_a_time(CASES[0], scalars)


def _stream(slices: int, seed: int = 0, strings: bool = False, weighted: bool = False) -> list:
    """Batches whose slices see growing label sets (new labels arrive late, in few slices)."""
    rng = np.random.default_rng(seed)
    out = []
    for i, n in enumerate((12_000, 1, 20_000, 0, 8_000, 5)):
        classes = 3 + 2 * i
        y = rng.integers(0, classes, n)
        p = np.where(rng.random(n) < 0.6, y, rng.integers(0, classes, n))
        if strings:
            y, p = np.char.add("c", y.astype(str)), np.char.add("c", p.astype(str))
        kwargs = {"by": rng.integers(0, slices, n)}
        if weighted and i == 2:
            kwargs["sample_weight"] = rng.random(n)
        out.append(((y, p), kwargs))
    return out


def _same(a, b) -> bool:
    """Equal results (floats, arrays, or dicts of them, as ClassificationReport gives), nan
    equal to nan."""
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)


def _run(metric, stream) -> sm.Sliced:
    s = sm.Sliced(metric)
    for args, kwargs in stream:
        s.update(*args, **kwargs)
    return s


METRICS = {
    "accuracy": sm.Accuracy,
    "f1-macro": lambda: sm.F1(average="macro"),
    "precision-weighted": lambda: sm.Precision(average="weighted", zero_division=float("nan")),
    "recall-micro": lambda: sm.Recall(average="micro"),
    "fbeta-none": lambda: sm.FBeta(beta=0.5, average=None, zero_division=1.0),
    "mcc": sm.MatthewsCorrCoef,
    "kappa": lambda: sm.CohenKappa(weights="linear"),
    "confusion": sm.ConfusionMatrix,
    "report": sm.ClassificationReport,
    "fixed": lambda: sm.ConfusionMatrix(labels=list(range(13))),
}


@pytest.mark.parametrize("strings", [False, True])
@pytest.mark.parametrize("name", list(METRICS))
def test_packed_and_per_slice_states_are_the_same(name, strings, monkeypatch):
    """The same stream over 2,000 slices, packed (the default) and one state per slice: the
    same bytes, values, slices and intervals; merges of either kind with the other give the
    same bytes too."""
    if name == "fixed" and strings:
        pytest.skip("the fixed label set is integers")
    stream = _stream(2_000, strings=strings)
    packed = _run(METRICS[name](), stream)
    monkeypatch.setattr(sliced_module, "CONFUSION_PACK_MIN_SLICES", 10**9)
    plain = _run(METRICS[name](), stream)
    assert packed.slices._pack is not None
    assert plain.slices._pack is None
    assert packed.to_bytes() == plain.to_bytes()
    assert _same(packed.compute(), plain.compute())
    assert packed.keys() == plain.keys()
    for key in packed.keys()[::500]:
        assert packed[key].to_bytes() == plain[key].to_bytes()
    if name in ("accuracy", "f1-macro", "precision-weighted", "recall-micro", "mcc", "kappa"):
        assert _same(packed.intervals(), plain.intervals())
    assert (packed + plain).to_bytes() == (plain + plain).to_bytes()
    monkeypatch.undo()
    more = stream[0]
    assert plain.copy().update(*more[0], **more[1]).to_bytes() == (
        packed.copy().update(*more[0], **more[1]).to_bytes()
    )


def test_a_weighted_batch_stays_packed(monkeypatch):
    """Weights make the table's counts float (0.8.20; before, they left the pack): every
    slice's counts are the per-slice path's bits, its squared weights equal to rounding."""
    stream = _stream(1_500, seed=4, weighted=True)
    packed = _run(sm.Accuracy(), stream)
    assert packed.slices._pack is not None and packed.slices._pack.floaty is not None
    monkeypatch.setattr(sliced_module, "CONFUSION_PACK_MIN_SLICES", 10**9)
    plain = _run(sm.Accuracy(), stream)
    assert plain.slices._pack is None
    assert packed.compute() == plain.compute()
    for key in packed.keys()[::50]:
        a, b = packed[key], plain[key]
        assert a.count == b.count and a.counts.dtype == b.counts.dtype
        assert np.array_equal(a.counts.table, b.counts.table)
        assert a.weight_sq == pytest.approx(b.weight_sq, rel=1e-12, abs=0)


def test_binary_averages_are_checked_slice_by_slice(monkeypatch):
    """average='binary' refuses a slice of three labels, not a batch whose slices hold two
    each: such a metric keeps one state per slice."""
    rng = np.random.default_rng(2)
    by = rng.integers(0, 2_000, 20_000)
    y = np.where(by % 2 == 0, rng.integers(0, 2, 20_000), 1 + rng.integers(0, 2, 20_000))
    s = sm.Sliced(sm.F1(pos_label=1))
    s.update(y, y, by=by)
    assert s.slices._pack is None
    values = s.compute()
    holds_one = set(by[y == 1].tolist())
    assert all(values[k] == (1.0 if k in holds_one else 0.0) for k in values)
    with pytest.raises(sm.InputError, match="two classes"):
        s.update([0, 2], [0, 1], by=[1, 1])  # slice 1 would hold three labels


def test_packed_accuracy_is_scored_from_the_table():
    """Accuracy scores every packed slice at once, equal to the bit to each slice's compute(),
    without making the slices' states."""
    s = _run(sm.Accuracy(), _stream(1_500, seed=3))
    assert s.slices._pack is not None
    values = s.compute()
    assert s.slices._dict is None
    alone = {key: s[key] for key in s.keys()[::97]}
    assert s.slices._dict is None
    for key, state in alone.items():
        assert values[key] == state.compute()
    for level in (0.9, 0.95, 0.999):
        intervals = s.intervals(level)  # Wilson on Kish's size, from the table at once
        assert s.slices._dict is None
        for key, state in alone.items():
            assert intervals[key] == state.interval(level)
    with pytest.raises(sm.InputError, match="level"):
        s.intervals(1.5)
    for key, state in alone.items():
        assert state.to_bytes() == s.slices.view()[key].to_bytes()


def test_packed_slices_agree_with_scikit_learn():
    """Per-slice macro F1 and accuracy of a packed table against scikit-learn on each slice's
    rows."""
    from sklearn.metrics import accuracy_score, f1_score

    stream = _stream(1_000, seed=6)
    f1 = _run(sm.F1(average="macro"), stream).compute()
    acc = _run(sm.Accuracy(), stream).compute()
    y = np.concatenate([a[0] for a, _ in stream])
    p = np.concatenate([a[1] for a, _ in stream])
    by = np.concatenate([k["by"] for _, k in stream])
    for key in list(f1)[::37]:
        rows = by == key
        assert f1[key] == pytest.approx(f1_score(y[rows], p[rows], average="macro"), abs=1e-12)
        assert acc[key] == pytest.approx(accuracy_score(y[rows], p[rows]), abs=1e-15)


def test_packed_table_refuses_past_max_slices_and_bad_rows():
    s = sm.Sliced(sm.Accuracy(), max_slices=5_000)
    rng = np.random.default_rng(5)
    y, p = rng.integers(0, 3, 40_000), rng.integers(0, 3, 40_000)
    s.update(y, p, by=rng.integers(0, 4_500, 40_000))
    assert s.slices._pack is not None
    before = s.to_bytes()
    with pytest.raises(sm.InputError, match="max_slices"):
        s.update(y, p, by=rng.integers(0, 6_000, 40_000))
    with pytest.raises(sm.InputError, match="y_pred"):
        s.update(y, np.where(np.arange(40_000) == 7, "x", p.astype(str)), by=np.arange(40_000) % 9)
    with pytest.raises(sm.InputError, match="y_true"):
        s.update(np.full(40_000, "a"), np.full(40_000, "b"), by=rng.integers(0, 4_500, 40_000))
    assert s.to_bytes() == before
    assert len(s) == len(s.keys()) <= 4_500


@pytest.mark.parametrize("wrap", ["decayed", "tumbling"])
def test_decayed_and_windowed_packed_slices(wrap, monkeypatch):
    stream = _stream(1_500, seed=8)

    def run() -> sm.Metric:
        m = (
            sm.Decayed(sm.Sliced(sm.Accuracy()), half_life=2.0)
            if wrap == "decayed"
            else sm.TumblingWindows(sm.Sliced(sm.Accuracy()), width=2.0)
        )
        for i, (args, kwargs) in enumerate(stream):
            m.update(*args, timestamps=np.full(len(args[0]), float(i)), **kwargs)
        return m

    packed = run()
    monkeypatch.setattr(sliced_module, "CONFUSION_PACK_MIN_SLICES", 10**9)
    assert packed.to_bytes() == run().to_bytes()


@pytest.mark.parametrize("metric", [sm.Accuracy, sm.ROCAUC])
def test_one_row_updates_keep_the_queue_short(metric, monkeypatch):
    """A packed table fed one row per call folds its short queued runs among themselves (a
    binary counter of runs), so the queue stays a few runs long instead of one per call, and
    the state is the one-batch state."""
    monkeypatch.setattr(sliced_module, "PACK_MIN_SLICES", 1)
    rng = np.random.default_rng(9)
    y, by = rng.integers(0, 2, 3_000), rng.integers(0, 300, 3_000)
    x = rng.integers(0, 2, 3_000) if metric is sm.Accuracy else rng.random(3_000)
    one = sm.Sliced(metric())
    for i in range(3_000):
        one.update(y[i].item(), x[i].item(), by=by[i].item())
        assert len(one.slices._pack.queue) <= 16
    assert one.to_bytes() == sm.Sliced(metric()).update(y, x, by=by).to_bytes()
