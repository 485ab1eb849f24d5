"""``Sliced`` over many slices of a score-bucket metric keeps them as one table
(``streammetrics.wrappers._slice_pack``): the same states, bytes and values as one state per
slice, through the whole conformance harness, with the threshold lowered so that small test
streams take the packed path."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
import streammetrics.wrappers._slice_table as sliced_module
from tests import test_conformance as conformance
from tests.harness import Case


def _scores(weighted: str):
    def batch(rng: np.random.Generator, n: int):
        y = rng.integers(0, 2, n)
        s = np.clip(0.25 * y + 0.75 * rng.random(n), 0, 1)
        kwargs = {"by": rng.integers(0, 40, n)}
        if weighted == "always" or (weighted == "sometimes" and rng.random() < 0.5):
            kwargs["sample_weight"] = rng.integers(0, 4, n).astype(float)
        return (y, s), kwargs

    return batch


BAD = [
    (([0, 1], [0.1, 0.2]), {"by": [1]}),
    (([0, 1], [0.1, 2.0]), {"by": [1, 2]}),
    (([0, 1], [0.1, float("nan")]), {"by": [1, 2]}),
    (([0, 1], [0.1, 0.2]), {"by": ["a", "b"]}),
    (([0, 1], [0.1, 0.2]), {"by": [1, 2], "sample_weight": [1.0, -1.0]}),
]

CASES = [
    Case(
        f"Sliced-auc-packed-{weighted}",
        lambda: sm.Sliced(sm.ROCAUC()),
        _scores(weighted),
        BAD,
        other=lambda: sm.Sliced(sm.ROCAUC(resolution=64)),
    )
    for weighted in ("never", "always", "sometimes")
] + [
    Case(
        "Sliced-ap-packed",
        lambda: sm.Sliced(sm.AveragePrecision(), max_slices=35),
        lambda rng, n: (*_scores("never")(rng, n)[:1], {"by": rng.integers(0, 30, n)}),
        BAD,
        other=lambda: sm.Sliced(sm.AveragePrecision()),
    )
]

CHECKS = [
    conformance.test_empty_metric,
    conformance.test_roundtrip_every_field,
    conformance.test_compute_is_idempotent_and_pure,
    conformance.test_merge_with_empty_is_identity,
    conformance.test_merge_leaves_argument_unchanged,
    conformance.test_failed_update_leaves_state_unchanged,
    conformance.test_incompatible_merges_refused,
    conformance.test_reset_and_copy,
    conformance.test_corrupt_bytes_raise_only_state_decode_error,
    conformance.test_concurrent_feeding,
    conformance.test_bad_sample_refused_at_its_call,
    conformance.test_interval_is_mergeable_or_refused,
]


@pytest.fixture
def packed(monkeypatch):
    """Every Sliced score-bucket table packs, however few its slices."""
    monkeypatch.setattr(sliced_module, "PACK_MIN_SLICES", 1)


@pytest.mark.parametrize("check", CHECKS, ids=[c.__name__ for c in CHECKS])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_packed_table_passes_the_harness(case, check, packed):
    check(case)


@pytest.mark.parametrize("seed", [10, 11])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_packed_table_is_split_invariant(case, seed, packed):
    conformance.test_split_invariance(case, seed)


@pytest.mark.parametrize("scalars", [True, False])
@pytest.mark.parametrize("case", CASES[:1], ids=[c.id for c in CASES[:1]])
def test_the_packed_table_one_sample_at_a_time(case, scalars, packed):
    conformance.test_one_sample_at_a_time(case, scalars)


def _stream(weighted: str, slices: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for n in (30_000, 1, 50_000, 0, 20_000):
        y = rng.integers(0, 2, n)
        s = np.clip(0.2 * y + 0.8 * rng.random(n), 0, 1)
        kwargs = {"by": rng.integers(0, slices, n)}
        if weighted == "always" or (weighted == "sometimes" and n % 2 == 0):
            kwargs["sample_weight"] = rng.random(n) * (rng.random(n) > 0.1)
        out.append(((y, s), kwargs))
    return out


def _same(a: dict, b: dict) -> bool:
    """Equal dicts of floats (or tuples of them), nan equal to nan."""
    return list(a) == list(b) and all(
        np.array_equal(np.asarray(a[k]), np.asarray(b[k]), equal_nan=True) for k in a
    )


@pytest.mark.parametrize("weighted", ["never", "always", "sometimes"])
def test_packed_and_per_slice_states_are_the_same(weighted, monkeypatch):
    """The same stream over 6,000 slices, packed (the default past PACK_MIN_SLICES) and one
    state per slice: the same bytes, values, slices and intervals; merges of either kind with
    the other give the same bytes too."""
    stream = _stream(weighted, 6_000)

    def run() -> sm.Sliced:
        s = sm.Sliced(sm.ROCAUC())
        for args, kwargs in stream:
            s.update(*args, **kwargs)
        return s

    packed = run()
    monkeypatch.setattr(sliced_module, "PACK_MIN_SLICES", 10**9)
    plain = run()
    # Packed at the end (a batch of the other count type goes per slice, the next packs again).
    assert packed.slices._pack is not None
    assert plain.slices._pack is None
    assert packed.to_bytes() == plain.to_bytes()
    assert _same(packed.compute(), plain.compute())
    assert packed.keys() == plain.keys()
    for key in packed.keys()[::500]:
        assert packed[key].to_bytes() == plain[key].to_bytes()
    with pytest.raises(KeyError):
        packed[-1]
    assert _same(packed.intervals(), plain.intervals())
    assert (packed + plain).to_bytes() == (plain + plain).to_bytes()
    monkeypatch.undo()
    assert (plain.copy().update(*stream[0][0], **stream[0][1])).to_bytes() == (
        packed.copy().update(*stream[0][0], **stream[0][1])
    ).to_bytes()


def test_packed_table_compute_is_the_per_slice_compute():
    """ROCAUC scores every packed slice at once: equal to the bit to each slice's compute(),
    and a slice holding only rows of weight zero scores nan as its own state does."""
    s = sm.Sliced(sm.ROCAUC())
    for args, kwargs in _stream("never", 5_000, seed=3):
        s.update(*args, **kwargs)
    assert s.slices._pack is not None
    values = s.compute()
    assert s.slices._dict is None  # scored from the table: no state per slice made
    alone = {key: s[key] for key in s.keys()[::97]}  # one slice at a time, from the table
    assert s.slices._dict is None
    for key, state in alone.items():
        assert np.array_equal(values[key], state.compute(), equal_nan=True)
        assert state.to_bytes() == s.slices.view()[key].to_bytes()


def test_packed_table_refuses_past_max_slices_and_bad_rows():
    s = sm.Sliced(sm.ROCAUC(), max_slices=5_000)
    rng = np.random.default_rng(5)
    y, p = rng.integers(0, 2, 40_000), rng.random(40_000)
    s.update(y, p, by=rng.integers(0, 4_500, 40_000))
    assert s.slices._pack is not None
    before = s.to_bytes()
    with pytest.raises(sm.InputError, match="max_slices"):
        s.update(y, p, by=rng.integers(0, 6_000, 40_000))
    bad = p.copy()
    bad[7] = np.nan
    with pytest.raises(sm.InputError, match="y_score"):
        s.update(y, bad, by=rng.integers(0, 4_500, 40_000))
    assert s.to_bytes() == before
    assert len(s) == len(s.keys()) <= 4_500


@pytest.mark.parametrize("wrap", ["decayed", "tumbling"])
def test_decayed_and_windowed_packed_slices(wrap, monkeypatch):
    """A packed table under Decayed (scaled: weights become floats) and in tumbling windows
    (merged) gives the bytes of one state per slice."""
    stream = _stream("never", 5_000, seed=8)

    def run() -> sm.Metric:
        m = (
            sm.Decayed(sm.Sliced(sm.ROCAUC()), half_life=2.0)
            if wrap == "decayed"
            else sm.TumblingWindows(sm.Sliced(sm.ROCAUC()), width=2.0)
        )
        for i, (args, kwargs) in enumerate(stream):
            m.update(*args, timestamps=np.full(len(args[0]), float(i)), **kwargs)
        return m

    packed = run()
    monkeypatch.setattr(sliced_module, "PACK_MIN_SLICES", 10**9)
    assert packed.to_bytes() == run().to_bytes()


def _interval_slices() -> sm.Sliced:
    """Slices of every kind DeLong's sums meet: a few rows (one class, classes apart, reversed),
    ties inside buckets, a slice past the exact-sum bound (2**17 rows of each class: its own
    state answers), an AUC within 1e-7 of 1, and thousands of ordinary ones."""
    rng = np.random.default_rng(12)
    n = 400_000
    y = rng.integers(0, 2, n)
    s = np.clip(0.2 * y + 0.8 * rng.random(n), 0, 1)
    by = rng.integers(0, 8_000, n)
    sliced = sm.Sliced(sm.ROCAUC()).update(y, s, by=by)
    big = 2**17
    y_big = np.repeat([0, 1], big)
    s_big = np.concatenate([rng.random(big) * 0.6, 0.4 + rng.random(big) * 0.6])
    sliced.update(y_big, s_big, by=np.full(2 * big, -1))
    near = np.concatenate([np.linspace(0.0, 0.5, 3_000), [0.49], np.linspace(0.5, 1.0, 4_000)])
    y_near = np.concatenate([np.zeros(3_000, int), [1], np.ones(4_000, int)])
    sliced.update(y_near, near, by=np.full(len(near), -2))
    few = [
        ([0, 1], [0.1, 0.9]),
        ([1, 0, 1], [0.1, 0.9, 0.2]),
        ([1, 1], [0.3, 0.4]),
        ([0, 1, 0, 1], [0.5, 0.5, 0.5, 0.5]),
        ([0, 0, 1, 1, 1], [0.1, 0.2, 0.7, 0.8, 0.8]),  # classes apart: AUC 1
        ([1, 1, 0, 0], [0.1, 0.2, 0.2, 0.9]),  # reversed, a tie in a bucket
        ([1, 1, 0, 0], [0.1, 0.15, 0.8, 0.9]),  # reversed: AUC 0
    ]
    for j, (yy, ss) in enumerate(few):
        sliced.update(yy, ss, by=[-10 - j] * len(yy))
    return sliced


@pytest.mark.parametrize("level", [0.95, 0.5])
def test_packed_table_intervals_are_the_per_slice_intervals(level):
    """ROCAUC's DeLong intervals of every packed slice at once: equal to the bit (their reprs
    too, so no -0.0 for 0.0) to each made state's ``interval()``, for large slices (sums past
    2**50), an AUC within 1e-10 of 1 (the spread's second pass) and classes apart."""
    s = _interval_slices()
    assert s.slices._pack is not None
    got = s.intervals(level)
    assert s.slices._dict is None  # from the table: no state per slice made
    view = s.slices.view()
    want = {key: view[key].interval(level) for key in view}
    assert got.keys() == want.keys()
    assert all(repr(got[k]) == repr(want[k]) for k in want)
    assert all(np.isfinite(got[k]).all() for k in (-1, -2, -13, -14, -15, -16))


def test_weighted_packed_slices_give_their_own_intervals():
    s = sm.Sliced(sm.ROCAUC())
    for args, kwargs in _stream("always", 2_000, seed=4):
        s.update(*args, **kwargs)
    assert s.slices._pack is not None and s.slices._pack.pos.dtype.kind == "f"
    got = s.intervals()
    view = s.slices.view()
    assert all(repr(got[k]) == repr(view[k].interval()) for k in view)
