"""GAUC against a pandas groupby + scikit-learn reference, across batches and shards."""

from __future__ import annotations

import math
import pickle
import random
from itertools import pairwise

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import streammetrics as sm


def _reference(y, x, g, w=None, weighting="impressions"):
    """Per-group roc_auc_score, weighted, groups with one class left out."""
    df = pd.DataFrame({"y": y, "x": x, "g": g, "w": np.ones(len(y)) if w is None else w})
    num = den = 0.0
    used = left = 0
    for _, part in df.groupby("g"):
        pos = float(part.loc[part.y == 1, "w"].sum())
        neg = float(part.loc[part.y == 0, "w"].sum())
        if pos == 0 or neg == 0:
            left += 1
            continue
        sw = None if w is None else part.w.to_numpy()
        auc = roc_auc_score(part.y, part.x, sample_weight=sw)
        weight = {"impressions": pos + neg, "clicks": pos, "uniform": 1.0}[weighting]
        num += weight * auc
        den += weight
        used += 1
    return num / den, used, left


def _data(seed, n=6000, groups=150, grid=40, strings=False):
    rng = np.random.default_rng(seed)
    g = rng.zipf(1.6, n) % groups  # skewed: a few large groups, many small ones
    quality = rng.normal(0.1, 0.1, groups)
    y = rng.integers(0, 2, n)
    x = np.clip(rng.normal(0.4 + quality[g] * y, 0.2, n), 0, 1)
    if grid:
        x = np.round(x * grid) / grid
    if strings:
        g = np.array([f"user{v:04d}" for v in g])
    return y, x, g


def _shards(make, y, x, g, w=None, seed=0, n_shards=4):
    """Rows shuffled, cut into batches, sent to random shards, merged in random order."""
    rnd = random.Random(seed)
    order = np.random.default_rng(seed).permutation(len(y))
    cuts = sorted(rnd.sample(range(1, len(y)), 25))
    shards = [make() for _ in range(n_shards)]
    for a, b in zip([0, *cuts], [*cuts, len(y)], strict=True):
        idx = order[a:b]
        kw = {} if w is None else {"sample_weight": w[idx]}
        shards[rnd.randrange(n_shards)].update(y[idx], x[idx], g[idx], **kw)
    rnd.shuffle(shards)
    return sm.loads(shards[0].merge(*shards[1:]).to_bytes())


@pytest.mark.parametrize("weighting", ["impressions", "clicks", "uniform"])
@pytest.mark.parametrize("strings", [False, True])
def test_exact_gauc_equals_pandas_reference(weighting, strings):
    y, x, g = _data(1, strings=strings)
    want, used, left = _reference(y, x, g, weighting=weighting)
    m = _shards(lambda: sm.GAUC(weighting=weighting, exact=True), y, x, g, seed=2)
    assert m.compute() == pytest.approx(want, abs=1e-12)
    assert (m.groups_used, m.groups_left_out) == (used, left)
    assert m.error_bound() == 0.0


def test_exact_gauc_weighted_rows():
    y, x, g = _data(3, grid=0)
    w = np.random.default_rng(3).random(len(y)) * 2
    want, _, _ = _reference(y, x, g, w)
    m = _shards(lambda: sm.GAUC(exact=True), y, x, g, w, seed=4)
    assert m.compute() == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("max_exact", [0, 10, 40, 10_000])
def test_sketch_gauc_bound_and_split_invariance(max_exact):
    y, x, g = _data(5, n=8000, grid=0)
    want, used, left = _reference(y, x, g)
    make = lambda: sm.GAUC(max_exact=max_exact)  # noqa: E731
    a = _shards(make, y, x, g, seed=6)
    b = _shards(make, y, x, g, seed=7, n_shards=2)
    whole = make().update(y, x, g)
    assert a.to_bytes() == b.to_bytes() == whole.to_bytes()  # the K switch ignores order
    assert abs(a.compute() - want) <= a.error_bound() + 1e-12
    assert (a.groups_used, a.groups_left_out) == (used, left)
    if max_exact >= 10_000:
        assert a.error_bound() == 0.0 and a.compute() == pytest.approx(want, abs=1e-12)
    else:
        assert a.error_bound() > 0.0


def test_group_crossing_the_threshold_in_pieces():
    # One group of 30 rows arrives as ten pieces of 3 on different shards: exact in every shard,
    # sketched once merged (30 > 20), the same bytes as the single stream.
    rng = np.random.default_rng(9)
    y, x = rng.integers(0, 2, 30), rng.random(30)
    g = np.zeros(30, dtype=int)
    whole = sm.GAUC(max_exact=20).update(y, x, g)
    parts = [
        sm.GAUC(max_exact=20).update(y[i : i + 3], x[i : i + 3], g[i : i + 3])
        for i in range(0, 30, 3)
    ]
    assert sum(parts).to_bytes() == whole.to_bytes()
    assert abs(whole.compute() - roc_auc_score(y, x)) <= whole.error_bound() + 1e-12


def test_single_class_groups_left_out_and_empty():
    m = sm.GAUC().update([1, 1, 0, 1], [0.2, 0.4, 0.3, 0.9], ["a", "a", "b", "b"])
    assert m.groups_used == 1 and m.groups_left_out == 1
    assert m.compute() == 1.0
    assert math.isnan(sm.GAUC().update([1, 1], [0.1, 0.2], [1, 2]).compute())
    empty = sm.GAUC()
    assert math.isnan(empty.compute()) and empty.groups_used == 0


def test_mixed_group_kinds_refused():
    m = sm.GAUC().update([0, 1], [0.1, 0.2], [1, 2])
    with pytest.raises(sm.InputError):
        m.update([0, 1], [0.1, 0.2], ["a", "b"])
    other = sm.GAUC().update([0, 1], [0.1, 0.2], ["a", "b"])
    with pytest.raises(sm.IncompatibleStateError):
        m.merge(other)


def test_gauc_many_groups_at_scale():
    rng = np.random.default_rng(12)
    n, groups = 400_000, 20_000
    g = rng.integers(0, groups, n)
    y = rng.random(n) < 0.05
    x = np.clip(rng.lognormal(np.log(0.03), 0.4, n) * (1 + 0.3 * y), 0, 1)
    m = sm.GAUC()
    for i in range(0, n, 100_000):
        m.update(y[i : i + 100_000], x[i : i + 100_000], g[i : i + 100_000])
    exact = sm.GAUC(exact=True).update(y, x, g)
    assert abs(m.compute() - exact.compute()) <= m.error_bound() + 1e-12
    assert len(m.to_bytes()) / groups < 2048


@pytest.mark.parametrize("weighted", [False, True])
def test_a_batch_sorted_whole_gives_the_bytes_of_pieces_folded(weighted: bool) -> None:
    """A batch of up to BATCH_SLICE rows is one table, adopted by an empty state without a
    fold (0.8.28); past it, and over many updates, pieces are folded. Every way gives the
    same bytes, sketched groups (more than max_exact rows) and ids spread wide included."""
    from streammetrics.states._group_table import BATCH_SLICE, SLICE

    rng = np.random.default_rng(31)
    n = BATCH_SLICE + SLICE // 2
    g = np.where(rng.random(n) < 0.3, rng.integers(0, 50, n), rng.integers(0, 3_000_000, n))
    y = rng.integers(0, 2, n)
    x = np.round(rng.random(n), 3)  # ties within groups
    # (dyadic weights: their sums are exact in any order, so the bytes must match too)
    w = rng.integers(1, 8, n) / 8 if weighted else None

    def fed(*cuts: int) -> bytes:
        m = sm.GAUC()
        edges = [0, *cuts, n]
        for a, b in pairwise(edges):
            m.update(y[a:b], x[a:b], g[a:b], sample_weight=None if w is None else w[a:b])
        return m.to_bytes()

    whole = fed()  # past BATCH_SLICE: pieces of SLICE rows, folded
    assert fed(BATCH_SLICE) == whole  # one table adopted, then a fold with the rest
    assert fed(SLICE, 2 * SLICE, BATCH_SLICE - 7) == whole
    assert fed(n - 1000) == whole


@pytest.mark.parametrize("exact", [True, False])
def test_a_light_group_beside_heavy_ones_keeps_its_own_auc(exact: bool) -> None:
    # 0.8.7 took each entry's negatives below as a running total over every group less the
    # earlier groups' part: its rounding swallowed a light group's weights (exact mode off by
    # 0.05 with a bound of 0 at a weight ratio of 1e13).
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    ya, sa = rng.integers(0, 2, 1000), rng.random(1000)
    yb, sb = rng.integers(0, 2, 200), rng.random(200)
    g = np.r_[np.zeros(1000, int), np.ones(200, int)]
    w = np.r_[np.full(1000, 1e6), np.full(200, 1e-7)]
    m = sm.GAUC(weighting="uniform", exact=exact)
    m.update(np.r_[ya, yb], np.r_[sa, sb], g, sample_weight=w)
    want = (roc_auc_score(ya, sa) + roc_auc_score(yb, sb)) / 2
    assert abs(m.compute() - want) <= m.error_bound() + 1e-12


def test_run_sums_equal_each_groups_own_running_sum() -> None:
    # Both ways of _run_cumsum: by exact size (few sizes) and by power of two (many), padded.
    from streammetrics.states._group_table import _run_cumsum

    rng = np.random.default_rng(5)
    for lengths in (
        rng.integers(1, 5, 3_000),
        np.maximum(1, (rng.pareto(1.1, 5_000) * 3).astype(np.int64)),
        np.array([7]),
    ):
        starts = np.r_[0, np.cumsum(lengths)[:-1]]
        x = rng.random(int(lengths.sum()))
        want = np.concatenate(
            [np.cumsum(x[a : a + n]) for a, n in zip(starts, lengths, strict=True)]
        )
        assert np.array_equal(_run_cumsum(x, starts, lengths), want)


@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("weighting", ["uniform", "impressions", "clicks"])
def test_a_group_of_tiny_weights_beside_heavy_ones_keeps_its_auc(exact, weighting):
    # 0.8.12 scaled every group by one power of two, set by the heaviest: a group of weights
    # 1e-162 of it got AUC 0 (bound 0), one of 1e-170 was left out.
    rng = np.random.default_rng(5)
    n = 60
    y = np.r_[rng.random(n) < 0.4, [1, 0]]
    s = np.r_[rng.random(n), [0.8, 0.2]]
    g = np.r_[np.zeros(n, int), [1, 1]]
    for tiny in (1e-150, 1e-162, 1e-170, 1e-300, 5e-324):
        w = np.r_[rng.uniform(0.5, 2, n) * tiny, [1.0, 1.0]]
        m = sm.GAUC(weighting=weighting, exact=exact).update(y, s, g, w)
        want = roc_auc_score(y[:n], s[:n], sample_weight=w[:n] / tiny)
        got = m.per_group()["auc"]
        assert m.groups_used == 2
        if exact:
            assert got[0] == pytest.approx(want, rel=1e-12)
        else:
            assert abs(got[0] - want) <= m.per_group()["bound"][0] + 1e-12
        assert got[1] == 1.0
        low, high = m.interval()
        assert low <= m.compute() <= high


def test_a_group_whose_classes_weigh_far_apart_keeps_its_auc():
    # Per group and per class: positives of 1e-300 beside negatives of 1e-60 in one group (the
    # group's largest weight not tiny) gave P * N = 0 and left the group out.
    rng = np.random.default_rng(6)
    n = 80
    y = rng.random(n) < 0.4
    s = rng.random(n)
    g = np.repeat([0, 1], n // 2)
    w = np.where(y, 1e-300, 1e-60) * rng.uniform(0.5, 2.0, n)
    m = sm.GAUC(exact=True, weighting="uniform").update(y, s, g, w)
    assert m.groups_used == 2
    for k in (0, 1):
        rows = g == k
        want = roc_auc_score(
            y[rows], s[rows], sample_weight=np.where(y[rows], 1e240, 1.0) * w[rows] * 1e60
        )
        assert m.per_group()["auc"][k] == pytest.approx(want, rel=1e-12)
    assert m.per_group()["pos"] == pytest.approx([w[(g == k) & y].sum() for k in (0, 1)], rel=1e-12)


def test_reads_of_an_unchanged_state_share_one_pass_over_its_groups() -> None:
    # compute(), interval() and error_bound() of an unchanged state read the same per-group
    # sums, made once per table (tables are replaced, never written in place); 0.8.16 made
    # them again at every call (6 ms at a million entries).
    rng = np.random.default_rng(3)
    y, s, g = rng.integers(0, 2, 5000), rng.random(5000), rng.integers(0, 300, 5000)
    m = sm.GAUC().update(y, s, g)
    fresh = lambda: sm.loads(m.to_bytes())  # noqa: E731  (no memory of earlier reads)
    calls = 0
    original = type(m)._per_group_of

    def counted(self, t):
        nonlocal calls
        calls += 1
        return original(self, t)

    type(m)._per_group_of = counted
    try:
        first = (m.compute(), m.interval(), m.error_bound())
        assert calls == 1
        assert (m.compute(), m.interval(), m.error_bound()) == first and calls == 1
        table = m.per_group()
        table["auc"][:] = 0.0  # a copy: the state's reads do not change
        assert m.compute() == first[0] and calls == 1
        other = fresh()
        assert (other.compute(), other.interval(), other.error_bound()) == first
        assert calls == 2
        m.update(y[:10], s[:10], g[:10])  # a change: read again, and right
        again = m.compute()
        assert calls == 3
        assert (
            again
            == sm.GAUC().update(np.r_[y, y[:10]], np.r_[s, s[:10]], np.r_[g, g[:10]]).compute()
        )
        assert m.copy().compute() == again and pickle.loads(pickle.dumps(m)).compute() == again
    finally:
        type(m)._per_group_of = original


@pytest.mark.parametrize("weighting", ["impressions", "clicks"])
def test_subnormal_weights_average_the_groups_as_any_scale_does(weighting: str) -> None:
    # Each group's AUC was right, but its weight in the average was the stored subnormal
    # total, and weight * AUC rounded to a multiple of 2**-1074: a one-group GAUC of weights
    # near 2**-1074 was 4.6e-4 off its own AUC, and the interval's centre moved (0.8.18).
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(1)
    n = 200
    y, s = rng.integers(0, 2, n), rng.integers(0, 20, n) / 20
    base = rng.integers(1, 5, n).astype(float)
    want = roc_auc_score(y, s, sample_weight=base)
    groups = rng.integers(0, 3, n)
    whole = sm.GAUC(weighting=weighting, exact=True).update(y, s, groups, sample_weight=base)
    for unit in (2.0**-1060, 2.0**-1074):
        one = sm.GAUC(weighting=weighting, exact=True)
        one.update(y, s, np.zeros(n, int), sample_weight=base * unit)
        assert one.compute() == pytest.approx(want, rel=1e-12, abs=0)
        tiny = sm.GAUC(weighting=weighting, exact=True)
        tiny.update(y, s, groups, sample_weight=base * unit)
        assert tiny.compute() == pytest.approx(whole.compute(), rel=1e-12, abs=0)
        assert tiny.interval() == pytest.approx(whole.interval(), rel=1e-9, abs=0)
