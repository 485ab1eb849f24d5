"""Sliced's grouped fold (``streammetrics.states.stacked``): every slice updated in one pass.

The fold must give the state the per-slice path gives (one update of a copy per slice), byte for
byte, through both of its forms (a dense (slice, bucket) table and the sorted sparse one), for
weighted, unweighted and mixed streams, for new and known slices; it must leave the state
unchanged when the batch is refused, and never share a slice's state with another object.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import streammetrics as sm
import streammetrics.states._bucket_stack as _bucket_stack
from streammetrics.errors import InputError
from streammetrics.states.stacked import stable_order
from streammetrics.wrappers import sliced as sliced_module


def _scores(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    y = rng.integers(0, 2, n)
    s = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1)
    s[: n // 10] = np.round(s[: n // 10], 1)  # ties inside buckets
    s[n // 10] = -0.0
    return y, s


class _PerSlice:
    """A ``Sliced`` updated by the per-slice path, as for metrics without a stacked fold.
    (Until 0.8.15 these tests set an attribute no code read, and compared the fold with
    itself; the dense switch below patched a name ``_bucket_stack`` had copied.)"""

    def __init__(self, make, monkeypatch):
        self.sliced, self._patch = sm.Sliced(make()), monkeypatch
        self.taken = 0

    def update(self, *args, **kwargs):
        def no_stack(*a):
            self.taken += 1
            return None

        with self._patch.context() as patch:
            patch.setattr(sliced_module, "stacked_batch", no_stack)
            self.sliced.update(*args, **kwargs)
        return self

    def __getattr__(self, name):
        return getattr(self.sliced, name)


def _per_slice(make, monkeypatch):
    return _PerSlice(make, monkeypatch)


WEIGHTINGS = {
    "none": [False, False, False],
    "whole": [True, True, True],
    "weighted first": [True, False, False],
    "weighted later": [False, True, False],
}


@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize("slices", [3, 300])
@pytest.mark.parametrize("weighting", list(WEIGHTINGS))
@pytest.mark.parametrize(
    "make",
    [lambda: sm.ROCAUC(), lambda: sm.AveragePrecision(score_type="logit"), lambda: sm.ROCCurve()],
)
def test_grouped_fold_equals_the_per_slice_path(make, weighting, slices, dense, monkeypatch):
    if not dense:
        monkeypatch.setattr(_bucket_stack, "DENSE_CELLS", 0)
    rng = np.random.default_rng(slices)
    n = 6_000
    y, s = _scores(rng, n)
    by = rng.integers(0, slices, n)
    sw = rng.integers(0, 3, n).astype(float)  # zeros too: rows that leave no trace
    folded, plain = sm.Sliced(make()), _per_slice(make, monkeypatch)
    for (a, b), weighted in zip(
        itertools.pairwise([0, 1, 2_500, n]), WEIGHTINGS[weighting], strict=True
    ):
        kw = {"sample_weight": sw[a:b]} if weighted else {}
        folded.update(y[a:b], s[a:b], by=by[a:b], **kw)
        plain.update(y[a:b], s[a:b], by=by[a:b], **kw)
        assert folded.to_bytes() == plain.to_bytes()
    assert folded.keys() == plain.keys()
    assert plain.taken == 3


def test_string_and_composite_keys_and_merges_of_folded_states(monkeypatch):
    rng = np.random.default_rng(5)
    y, s = _scores(rng, 3_000)
    country = rng.choice(np.array(["de", "fr", "us"]), 3_000)
    device = rng.integers(0, 4, 3_000)
    whole = sm.Sliced(sm.ROCAUC()).update(y, s, by=(country, device))
    parts = [sm.Sliced(sm.ROCAUC()) for _ in range(3)]
    for i, p in enumerate(parts):
        p.update(y[i::3], s[i::3], by=(country[i::3], device[i::3]))
    assert sum(parts[1:], parts[0]).to_bytes() == whole.to_bytes()
    assert (
        whole.to_bytes()
        == _per_slice(sm.ROCAUC, monkeypatch).update(y, s, by=(country, device)).to_bytes()
    )


def test_refused_batches_leave_every_slice_unchanged():
    rng = np.random.default_rng(1)
    y, s = _scores(rng, 1_000)
    m = sm.Sliced(sm.ROCAUC(), max_slices=10).update(y, s, by=rng.integers(0, 5, 1_000))
    before = m.to_bytes()
    with pytest.raises(InputError):
        m.update(y[:4], [0.1, 0.2, 1.5, 0.3], by=[0, 1, 7, 2])  # a probability above 1
    with pytest.raises(InputError):
        m.update(y[:4], s[:4], by=[0, 1, 2, 3], sample_weight=[1.0, -1.0, 1.0, 1.0])
    with pytest.raises(InputError):
        m.update(y[:20], s[:20], by=np.arange(20))  # past max_slices
    assert m.to_bytes() == before


def test_folded_slices_are_owned_by_their_state():
    rng = np.random.default_rng(2)
    y, s = _scores(rng, 2_000)
    by = rng.integers(0, 4, 2_000)
    a = sm.Sliced(sm.ROCAUC()).update(y[:1_000], s[:1_000], by=by[:1_000])
    b = a.copy()
    view = a[0]
    snapshot = (b.to_bytes(), view.to_bytes())
    a.update(y[1_000:], s[1_000:], by=by[1_000:])
    assert (b.to_bytes(), view.to_bytes()) == snapshot
    merged = sm.Sliced(sm.ROCAUC()).merge(a)
    a.update(y, s, by=by)
    assert merged.to_bytes() != a.to_bytes()
    assert merged.count == 2_000


def test_stable_order_is_numpy_stable_argsort():
    rng = np.random.default_rng(3)
    for high in (5, 70_000, 2**31, 2**40):
        values = rng.integers(0, high, 50_000)
        assert (stable_order(values) == np.argsort(values, kind="stable")).all()
    assert len(stable_order(np.zeros(0, dtype=np.int64))) == 0


@pytest.mark.parametrize("case", ["mixed", "all held", "all new", "ends", "empty batch"])
def test_merge_sorted_equals_a_sort_and_reduce(case):
    from streammetrics.states.buckets import _reduce

    rng = np.random.default_rng(len(case))
    held = np.unique(rng.integers(10, 5_000, 800))
    if case == "all held":
        batch = np.sort(rng.choice(held, 300, replace=False))
    elif case == "all new":
        batch = np.setdiff1d(np.arange(0, 6_000, 7), held)
    elif case == "ends":
        batch = np.concatenate([np.arange(0, 5), held[[3, 9]], np.arange(6_000, 6_004)])
    elif case == "empty batch":
        batch = np.zeros(0, dtype=np.int64)
    else:
        batch = np.unique(rng.integers(0, 6_000, 500))

    def columns(n):
        lo = rng.random(n)
        return rng.random(n) * 3, rng.random(n) * 2, lo, lo + rng.random(n) / 10

    hc, bc = columns(len(held)), columns(len(batch))
    cells, cols = _bucket_stack.merge_sorted(
        held, (hc[0].copy(), hc[1].copy(), hc[2], hc[3]), batch, bc
    )
    both = np.concatenate([held, batch])
    sums = [np.concatenate([hc[0], bc[0]]), np.concatenate([hc[1], bc[1]])]
    keys, (pos, neg), lo, hi = _reduce(
        both, sums, np.concatenate([hc[2], bc[2]]), np.concatenate([hc[3], bc[3]])
    )
    assert np.array_equal(cells, keys)
    for got, want in zip(cols, (pos, neg, lo, hi), strict=True):
        assert got.tobytes() == want.tobytes()  # the same floats, not merely close ones


def test_slices_read_from_bytes_fold_as_fresh_ones(monkeypatch):
    # Decoded slices hold mapping objects of their own (equal, not the template's): the fold
    # takes them, and gives the bytes of the per-slice path.
    rng = np.random.default_rng(7)
    y, s = _scores(rng, 4_000)
    by = rng.integers(0, 50, 4_000)
    first = sm.Sliced(sm.ROCAUC()).update(y[:2_000], s[:2_000], by=by[:2_000])
    loaded = sm.Sliced.from_bytes(first.to_bytes())
    plain = _per_slice(sm.ROCAUC, monkeypatch)
    plain.merge(first)
    loaded.update(y[2_000:], s[2_000:], by=by[2_000:])
    plain.update(y[2_000:], s[2_000:], by=by[2_000:])
    assert loaded.to_bytes() == plain.to_bytes()
    assert loaded.compute() == plain.compute()


def test_bucket_stack_refuses_states_of_another_grid():
    y, s = np.array([0, 1, 1]), np.array([0.2, 0.7, 0.9])
    stack = sm.ROCAUC()._stacked(y, s)
    same = [sm.ROCAUC().update(y, s), sm.ROCAUC(), sm.ROCAUC.from_bytes(sm.ROCAUC().to_bytes())]
    assert stack.accepts(same)
    assert not stack.accepts([*same, sm.ROCAUC(resolution=64)])


@pytest.mark.parametrize("exact", [False, True])
def test_sliced_rocauc_compute_equals_each_slice_to_the_bit(exact):
    """Sliced(ROCAUC()) scores every slice at once (segmented integer sums): the same floats as
    each slice's own compute(), nan for one-class slices included; weighted slices take the
    per-slice path."""
    from streammetrics.classification.scores import ROCAUC

    rng = np.random.default_rng(11)
    y, s = _scores(rng, 30_000)
    by = rng.integers(0, 700, 30_000)
    y[by == 3] = 1  # a slice with positives only: nan
    sliced = sm.Sliced(sm.ROCAUC(exact=exact))
    for part in np.array_split(np.arange(30_000), 4):
        sliced.update(y[part], s[part], by=by[part])
    got = sliced.compute()
    states = [sliced.slices.slices[k] for k in sliced.keys()]
    assert ROCAUC._compute_many(states) is not None
    for key, metric in zip(sliced.keys(), states, strict=True):
        want = metric.compute()
        assert (math.isnan(want) and math.isnan(got[key])) or got[key] == want, key
    assert math.isnan(got[3])
    weighted = sm.Sliced(sm.ROCAUC()).update(y, s, by=by, sample_weight=np.full(30_000, 0.5))
    assert ROCAUC._compute_many(list(weighted.slices.slices.values())) is None
    wanted = {k: m.compute() for k, m in weighted.slices.slices.items()}
    for key, value in weighted.compute().items():
        assert (math.isnan(value) and math.isnan(wanted[key])) or value == wanted[key]


def test_auc_of_counts_refuses_tables_past_exact_floats():
    from streammetrics.states._group_table import auc_of_counts
    from streammetrics.states.score_tables import auc_from_table

    pos = [np.array([2**25, 1]), np.array([3, 0, 5])]
    neg = [np.array([1, 2**25]), np.array([1, 4, 0])]
    values = auc_of_counts(pos, neg)
    assert values is not None
    for v, p, n in zip(values, pos, neg, strict=True):
        lo = np.arange(len(p), dtype=float)
        assert v == auc_from_table(lo, lo, p, n)[0]
    assert auc_of_counts([np.array([2**27])], [np.array([2**26])]) is None


def test_auc_of_counts_declines_empty_tables():
    from streammetrics.states._group_table import auc_of_counts

    assert auc_of_counts([], []) is None
    assert (
        auc_of_counts(
            [np.array([1]), np.zeros(0, np.int64)], [np.array([1]), np.zeros(0, np.int64)]
        )
        is None
    )


def test_grouped_fold_checks_each_slice_against_the_weight_bound():
    # Each slice's weights within 2**100, together past it: the fold takes them; one slice
    # past it is refused, and nothing changes.
    big = 0.6 * 2.0**100
    m = sm.Sliced(sm.ROCAUC()).update([0, 1], [0.2, 0.7], by=["a", "b"], sample_weight=[big, 1.0])
    m.update([1, 0, 1], [0.9, 0.1, 0.4], by=["b", "b", "c"], sample_weight=[big, 1.0, big])
    before = m.to_bytes()
    with pytest.raises(sm.CountOverflowError):
        m.update([0, 1], [0.3, 0.5], by=["c", "a"], sample_weight=[1.0, big])
    assert m.to_bytes() == before
    assert sm.loads(before) == m
