"""``GroupedScores.add`` queues a batch with its own groups; the fold of the queue joins them
to the held ones and buckets every group whose total passed ``max_exact``. The state must be
the one a single update makes, byte for byte, however the rows arrive."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm


def _rows(seed: int, n: int, groups: int):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, groups, n)
    y = rng.integers(0, 2, n)
    s = np.round(np.clip(0.3 * y + rng.normal(0.35, 0.2, n), 0.0, 1.0), 3)
    return y, s, g


@pytest.mark.parametrize("exact", [False, True])
@pytest.mark.parametrize("step", [7, 50, 333])
def test_small_batches_give_the_bytes_of_one_update(exact, step):
    # 40 groups of about 100 rows: no batch holds more than max_exact rows of a group, but
    # most groups pass it in total, so bucketing happens only when the queue is folded.
    y, s, g = _rows(1, 4_000, 40)
    whole = sm.GAUC(exact=exact).update(y, s, g)
    fed = sm.GAUC(exact=exact)
    for a in range(0, len(y), step):
        fed.update(y[a : a + step], s[a : a + step], g[a : a + step])
    assert fed.to_bytes() == whole.to_bytes()
    assert fed.compute() == whole.compute()


def test_merges_and_string_groups_join_at_the_fold():
    y, s, g = _rows(2, 3_000, 25)
    names = np.array([f"user-{v:03d}" for v in g])
    whole = sm.GAUC().update(y, s, names)
    parts = [
        sm.GAUC().update(y[a : a + 500], s[a : a + 500], names[a : a + 500])
        for a in range(0, 3_000, 500)
    ]
    merged = parts[0].copy().merge(*parts[1:])
    assert merged.to_bytes() == whole.to_bytes()
    pairwise = parts[0].copy()
    for p in parts[1:]:
        pairwise.merge(p)
    assert pairwise.to_bytes() == whole.to_bytes()
    assert sorted(merged.scores.groups.tolist()) == sorted(set(names.tolist()))
    with pytest.raises(sm.InputError, match="groups"):
        merged.update([1], [0.5], [7])  # an integer group in a state of string groups
    assert merged.to_bytes() == whole.to_bytes()


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
@pytest.mark.parametrize("spread", [50, 10**12])
def test_union_labels_presence_table_equals_the_sort(dtype, spread) -> None:
    """Integer groups of a compact range take a presence table instead of a sort: the same
    union, summed rows and positions as the sort of strings would give, dtype kept."""
    from streammetrics.states._group_table import union_labels

    rng = np.random.default_rng(3)
    spread = min(spread, np.iinfo(dtype).max // 4)
    sets = [np.unique(rng.integers(-spread, spread, size)).astype(dtype) for size in (0, 7, 40, 1)]
    rows = [rng.integers(1, 5, len(s)) for s in sets]
    union, summed, positions = union_labels(sets, rows)
    assert union.dtype == dtype
    want = np.unique(np.concatenate(sets))
    assert np.array_equal(union, want)
    total = {int(v): 0 for v in want}
    for s, r in zip(sets, rows, strict=True):
        for v, c in zip(s.tolist(), r.tolist(), strict=True):
            total[v] += c
    assert summed.tolist() == [total[int(v)] for v in want]
    for s, at in zip(sets, positions, strict=True):
        assert np.array_equal(union[at], s)
