"""The shared fold kernel (``states._fold``): sorting entries by key columns and folding runs of
equal keys, against a plain Python dictionary; and the queue policy."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from streammetrics.states._fold import QUEUE_MIN, fold_equal, queue_full


@pytest.mark.parametrize("n_keys", [1, 2, 3])
@pytest.mark.parametrize("n", [0, 1, 7, 5_000])
def test_fold_equal_matches_a_dictionary(n_keys: int, n: int) -> None:
    rng = np.random.default_rng([n_keys, n])
    keys = [rng.integers(-3, 4, n) for _ in range(n_keys)]
    counts = rng.integers(0, 10, n)
    weights = rng.random(n)
    values = rng.normal(size=n)
    got_keys, (got_counts, got_weights), (got_lo,), (got_hi,) = fold_equal(
        keys, [counts, weights], [values], [values]
    )
    want: dict[tuple[int, ...], list[float]] = defaultdict(lambda: [0, 0.0, np.inf, -np.inf])
    for i in range(n):
        entry = want[tuple(int(k[i]) for k in keys)]
        entry[0] += counts[i]
        entry[1] += weights[i]
        entry[2] = min(entry[2], values[i])
        entry[3] = max(entry[3], values[i])
    assert list(zip(*(k.tolist() for k in got_keys), strict=True)) == sorted(want)
    for j, key in enumerate(sorted(want)):
        c, w, lo, hi = want[key]
        assert got_counts[j] == c and got_lo[j] == lo and got_hi[j] == hi
        assert got_weights[j] == pytest.approx(w, rel=1e-12)
    assert got_counts.dtype == counts.dtype


def test_fold_equal_takes_a_given_order_and_keeps_the_stable_sort() -> None:
    keys = np.array([2, 1, 2, 1])
    w = np.array([0.1, 0.2, 0.3, 0.4])
    order = np.array([1, 3, 0, 2])  # already the sorted permutation
    (k,), (s,), _, _ = fold_equal([keys], [w], order=order)
    assert k.tolist() == [1, 2] and s.tolist() == [0.2 + 0.4, 0.1 + 0.3]  # in arrival order


def test_queue_policy() -> None:
    assert not queue_full(QUEUE_MIN, 0)
    assert queue_full(QUEUE_MIN + 1, 0)
    assert not queue_full(10 * QUEUE_MIN, 10 * QUEUE_MIN)
    assert queue_full(10 * QUEUE_MIN + 1, 10 * QUEUE_MIN)
    assert not queue_full(3 * QUEUE_MIN, QUEUE_MIN, factor=4)


def _fold_by_reduceat(keys: list[np.ndarray], sums: list[np.ndarray], extremes: np.ndarray) -> list:
    """fold_equal as 0.8.25 wrote it: a ``reduceat`` over every run."""
    order = np.lexsort(tuple(reversed(keys)))
    sk = [k[order] for k in keys]
    edge = np.ones(len(order), dtype=bool)
    edge[1:] = np.any([k[1:] != k[:-1] for k in sk], axis=0)
    starts = np.flatnonzero(edge)
    return [
        *(k[starts] for k in sk),
        *(np.add.reduceat(c[order], starts) for c in sums),
        np.minimum.reduceat(extremes[order], starts),
        np.maximum.reduceat(extremes[order], starts),
    ]


@pytest.mark.parametrize("seed", range(40))
def test_fold_of_few_runs_gives_reduceats_bits(seed: int) -> None:
    """Tables with a few repeated keys take the runs of several apart from the rest; every sum
    (floats of any magnitude, runs longer than numpy's pairwise block) and every min and max
    (nan kept) is the bit of a ``reduceat`` over all runs."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 4000))
    base = np.arange(n) * 3
    repeated = np.repeat(rng.choice(base, int(rng.integers(1, 1 + n // 10))), rng.integers(1, 300))
    k = np.concatenate([base, repeated])
    rng.shuffle(k)
    keys = [k % 5, k] if seed % 2 else [k]
    w = rng.random(len(k)) * 10.0 ** rng.integers(-30, 30, len(k))
    counts = rng.integers(0, 9, len(k))
    v = rng.random(len(k))
    v[rng.random(len(k)) < 0.05] = np.nan
    got_keys, got_sums, (lo,), (hi,) = fold_equal(keys, [w, counts], [v], [v])
    want = _fold_by_reduceat(keys, [w, counts], v)
    for a, b in zip([*got_keys, *got_sums, lo, hi], want, strict=True):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.float32])
def test_fold_of_few_runs_widens_as_reduceat_does(dtype: type) -> None:
    """Small integer and bool sums widen (``reduceat`` adds them as int64 or uint64): a run of
    two int8 100s folds to 200, not -56."""
    keys = np.array([0, 0, 1, 2, 3, 4, 5, 6])
    column = np.array([100, 100, 1, 1, 0, 1, 1, 1]).astype(dtype)
    got = fold_equal([keys], [column])[1][0]
    order = np.argsort(keys, kind="stable")
    want = np.add.reduceat(column[order], np.array([0, 2, 3, 4, 5, 6, 7]))
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
