"""Keyed metrics (GAUC, ranking): split by key, join states of disjoint keys.

``join`` must give exactly what ``merge`` gives (byte for byte) while concatenating instead of
merging key by key; ``split`` must cut a state into parts of disjoint keys that join back into
it, with each key in the same part in every process.
"""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
from streammetrics import ranking as K
from streammetrics.states.labels import key_hash


def _gauc_rows(rng: np.random.Generator, n: int, kind: str, groups: int = 400):
    g = rng.integers(0, groups, n)
    keys = g if kind == "int" else np.char.add("user-", g.astype(str))
    y = rng.integers(0, 2, n)
    p = np.clip(0.25 * y + 0.75 * rng.random(n), 0, 1)
    return y, p, keys


def _by_key(keys: np.ndarray, parts: int) -> list[np.ndarray]:
    """Row indices of each part when rows are partitioned by a hash of their key."""
    part = key_hash(keys) % np.uint64(parts)
    return [np.flatnonzero(part == i) for i in range(parts)]


@pytest.mark.parametrize("kind", ["int", "str"])
@pytest.mark.parametrize(
    "make",
    [
        lambda: sm.GAUC(exact=True),
        lambda: sm.GAUC(max_exact=8),
        lambda: sm.GAUC(score_type="logit", weighting="clicks"),
    ],
    ids=["exact", "sketched", "logit-clicks"],
)
def test_gauc_join_of_disjoint_keys_equals_merge_and_one_process(make, kind: str) -> None:
    rng = np.random.default_rng(1)
    y, p, g = _gauc_rows(rng, 30_000, kind)
    w = rng.integers(1, 4, len(y)).astype(float)
    whole = make().update(y, p, g, sample_weight=w)
    shards = [make().update(y[i], p[i], g[i], sample_weight=w[i]) for i in _by_key(g, 5)]
    merged = shards[0].copy().merge(*shards[1:])
    joined = shards[0].copy().join(*shards[1:])
    assert joined.to_bytes() == merged.to_bytes() == whole.to_bytes()
    chained = make()
    for shard in shards:  # one at a time, as a driver receiving partitions would
        chained.join(shard)
    assert chained.to_bytes() == whole.to_bytes()


def test_join_of_overlapping_keys_is_a_merge() -> None:
    rng = np.random.default_rng(2)
    y, p, g = _gauc_rows(rng, 10_000, "int")
    halves = [sm.GAUC().update(y[s], p[s], g[s]) for s in (slice(0, 5000), slice(5000, None))]
    assert halves[0].copy().join(halves[1]) == sm.GAUC().update(y, p, g)


def test_join_leaves_its_arguments_and_refuses_other_configs() -> None:
    rng = np.random.default_rng(3)
    y, p, g = _gauc_rows(rng, 4000, "str")
    a, b = (sm.GAUC().update(y[i], p[i], g[i]) for i in _by_key(g, 2))
    before = b.to_bytes()
    a.join(b)
    assert b.to_bytes() == before
    with pytest.raises(sm.IncompatibleStateError):
        a.join(sm.GAUC(exact=True))
    with pytest.raises(sm.IncompatibleStateError):
        a.join(sm.GAUC().update([1, 0], [0.3, 0.2], [7, 7]))  # int groups into str groups


@pytest.mark.parametrize("parts", [1, 2, 7])
@pytest.mark.parametrize("kind", ["int", "str"])
def test_gauc_split_joins_back(parts: int, kind: str) -> None:
    rng = np.random.default_rng(4)
    y, p, g = _gauc_rows(rng, 20_000, kind)
    m = sm.GAUC(max_exact=16).update(y, p, g)
    before = m.to_bytes()
    pieces = m.split(parts)
    assert m.to_bytes() == before and len(pieces) == parts
    assert sum(x.count for x in pieces) == m.count
    seen = [set(x.scores.groups.tolist()) for x in pieces]
    assert sum(len(s) for s in seen) == len(set().union(*seen))  # disjoint
    # A key's part is its hash: the same as rows partitioned by key give.
    for i, rows in enumerate(_by_key(g, parts)):
        assert pieces[i] == sm.GAUC(max_exact=16).update(y[rows], p[rows], g[rows])
    assert pieces[0].copy().join(*pieces[1:]).to_bytes() == before


def test_ranking_split_and_join() -> None:
    rng = np.random.default_rng(5)
    n = 6000
    q = np.char.add("q", rng.integers(0, 500, n).astype(str))
    rel, score = rng.integers(0, 4, n).astype(float), rng.random(n)
    m = K.NDCG(k=5).update(q, rel, score)
    done = np.char.add("done", (np.arange(50) // 5).astype(str))
    m.update(done, np.ones(50), rng.random(50), complete=True)
    pieces = m.split(3)
    assert sum(x.count for x in pieces) == m.count
    assert pieces[0].copy().join(*pieces[1:]) == m
    # Queries already folded into sums stay with part 0.
    assert pieces[0].query_counts()["scored"] >= m.queries
    shards = [K.NDCG(k=5).update(q[i], rel[i], score[i]) for i in _by_key(q, 4)]
    assert shards[0].copy().join(*shards[1:]) == K.NDCG(k=5).update(q, rel, score)


def test_split_refuses_a_bad_count() -> None:
    with pytest.raises(sm.InputError, match="parts"):
        sm.GAUC().split(0)


def test_key_hash_is_pinned() -> None:
    # Parts must not move between versions or platforms: states split in one process must line
    # up with rows partitioned in another.
    ints = key_hash(np.array([0, 1, -1, 2**62], dtype=np.int64))
    strs = key_hash(np.array(["", "a", "user-17", "naïve"]))
    assert ints.tolist() == [
        16294208416658607535,
        10451216379200822465,
        16490336266968443936,
        int(ints[3]),
    ]
    assert strs[0] == 14695981039346656037  # FNV-1a offset basis: the empty string
    assert strs.tolist() == key_hash(np.array(["", "a", "user-17", "naïve"], dtype="<U40")).tolist()
    assert key_hash(np.array(["a"]))[0] == 12638187200555641996


def test_empty_pieces_of_a_weighted_gauc_load() -> None:
    """A weighted GAUC's empty split piece held float64 blocks under a count of 0, so its
    bytes were refused ("state of count 0 holds data"), and Dask/Spark's key_parts
    aggregation of weighted GAUC failed. Empty pieces are the fresh state."""
    m = sm.GAUC().update([1, 0, 1], [0.9, 0.2, 0.4], [7, 7, 8], sample_weight=[1.0, 2.0, 0.5])
    pieces = m.split(5)
    assert sum(p.count for p in pieces) == m.count
    for piece in pieces:
        assert sm.loads(piece.to_bytes()) == piece
    assert sm.GAUC().join(*pieces) == m
