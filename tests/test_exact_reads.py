"""A served exact ``ROCAUC`` reads its value and interval from exact integer sums moved past its
queue (``states._exact_sums``, ``states._score_reads``): the same floats as a fresh read of the
same rows, whatever the path, and no change to the bytes."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.states import _score_reads
from streammetrics.states._delong_rows import delong_of_sums, delong_row, delong_rows
from streammetrics.states._exact_sums import (
    fits,
    moved_sums,
    placed,
    ranked_sum,
    table_prefix,
    table_sums,
    wide_fits,
)
from streammetrics.states.buckets import ScoreBuckets
from streammetrics.states.score_tables import auc_from_table, auc_of_rows, auc_of_sums


def _brute(pos: list[int], neg: list[int]) -> tuple[int, int, int, int, int]:
    """``(P, N, S1, S2, U2)`` by Python ints, one entry at a time."""
    cum_p = cum_n = s1 = s2 = u2 = 0
    for p, n in zip(pos, neg, strict=True):
        cum_p, cum_n = cum_p + p, cum_n + n
        b, a = 2 * cum_n - n, 2 * cum_p - p
        s1, s2, u2 = s1 + p * b, s2 + p * b * b, u2 + n * a * a
    return cum_p, cum_n, s1, s2, u2


def _folded(*tables: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray, ...]:
    keys = np.concatenate([t[0] for t in tables])
    uniq, at = np.unique(keys, return_inverse=True)
    pos = np.bincount(at, np.concatenate([t[1] for t in tables]), len(uniq))
    neg = np.bincount(at, np.concatenate([t[2] for t in tables]), len(uniq))
    return uniq, pos.astype(np.int64), neg.astype(np.int64)


def _table(rng: np.random.Generator, size: int, span: int, low: int = 0, most: int = 4) -> tuple:
    keys = np.unique(rng.integers(low, span, size)).astype(np.float64)
    pos = rng.integers(0, most, len(keys)).astype(np.int64)
    neg = rng.integers(0, most, len(keys)).astype(np.int64)
    neg[(pos + neg) == 0] = 1  # (a store holds no empty entry)
    return keys, pos, neg


@pytest.mark.parametrize("seed", range(40))
def test_moved_sums_are_the_folded_tables(seed: int) -> None:
    rng = np.random.default_rng(seed)
    big = seed % 5 == 0
    keys, pos, neg = _table(rng, int(rng.integers(1, 80)), 100)
    if big:  # counts past 2**53 in the sums, within fits
        pos, neg = pos * 5_000, neg * 5_000
    new = _table(rng, int(rng.integers(1, 30)), 110, low=-10)
    held = table_prefix(pos, neg)
    assert held is not None and held.sums == table_sums(pos, neg)
    assert held.sums == _brute(pos.tolist(), neg.tolist())
    known = placed(held, keys, new[0][::2].copy(), None) if seed % 2 else None
    where = placed(held, keys, new[0], known)
    assert where.info.tolist() == placed(held, keys, new[0], None).info.tolist()
    want = _folded((keys, pos, neg), new)
    assert moved_sums(held, where, new[1], new[2]) == _brute(want[1].tolist(), want[2].tolist())


@pytest.mark.parametrize("seed", range(12))
def test_sums_past_int64_are_put_together_from_their_remainders(seed: int) -> None:
    # Past fits the int64 arithmetic wraps; the float estimates pick the integer.
    rng = np.random.default_rng(seed)
    keys, pos, neg = _table(rng, int(rng.integers(1, 200)), 300, most=2**26)
    new = _table(rng, int(rng.integers(1, 40)), 320, low=-10, most=2**24)
    held = table_prefix(pos, neg)
    assert not fits(int(pos.sum()), int(neg.sum()))
    assert held is not None and held.est_pb is not None
    assert held.sums == table_sums(pos, neg) == _brute(pos.tolist(), neg.tolist())
    assert ranked_sum(pos, neg) == held.sums[2]
    known = placed(held, keys, new[0][1::2].copy(), None) if seed % 2 else None
    where = placed(held, keys, new[0], known)
    want = _folded((keys, pos, neg), new)
    assert moved_sums(held, where, new[1], new[2]) == _brute(want[1].tolist(), want[2].tolist())
    # A table summed within fits is not moved past it (no estimates kept): read again.
    small = table_prefix(pos // 2**20, neg // 2**20 + 1)
    assert small is not None and small.est_pb is None
    where = placed(small, keys, new[0], None)
    assert moved_sums(small, where, new[1] * 2**8, new[2] * 2**8) is None


def test_sums_refuse_what_estimates_cannot_place() -> None:
    assert fits(2**20, 2**20) and not fits(2**21, 2**21)
    assert wide_fits(2**28, 2**28, 2**20) and not wide_fits(2**33, 2**33, 2**20)
    pos, neg = np.array([2**9, 0], np.int64), np.array([0, 2**52], np.int64)
    assert table_sums(pos, neg) is None and table_prefix(pos, neg) is None
    assert ranked_sum(pos, neg) == 0  # (S1 alone: 2 P N below 2**63 still)
    assert ranked_sum(pos * 2**20, neg) is None
    assert table_sums(pos.astype(np.float64), neg.astype(np.float64)) is None
    held = table_prefix(np.array([2**30, 0], np.int64), np.array([0, 2**30], np.int64))
    assert held is not None
    where = placed(held, np.array([0.0, 1.0]), np.array([0.5]), None)
    big = np.array([2**36], np.int64)
    assert moved_sums(held, where, big, big) is None


def _delong_fraction(pos: list[int], neg: list[int]) -> tuple[Fraction, Fraction]:
    """DeLong's AUC and variance from the placements, in exact rationals."""
    big_p, big_n = sum(pos), sum(neg)
    cum_p = cum_n = 0
    v10: list[tuple[int, Fraction]] = []
    v01: list[tuple[int, Fraction]] = []
    for p, n in zip(pos, neg, strict=True):
        v10.append((p, (cum_n + Fraction(n, 2)) / big_n))
        v01.append((n, 1 - (cum_p + Fraction(p, 2)) / big_p))
        cum_p, cum_n = cum_p + p, cum_n + n
    auc = sum(w * v for w, v in v10) / big_p
    s10 = sum(w * (v - auc) ** 2 for w, v in v10) / (big_p - 1)
    s01 = sum(w * (v - auc) ** 2 for w, v in v01) / (big_n - 1)
    return auc, s10 / big_p + s01 / big_n


@pytest.mark.parametrize("seed", range(8))
def test_delong_of_large_counts_is_the_exact_value_rounded(seed: int) -> None:
    # Sums past 2**53, where float sums rounded (bits of 0.8.26 differ here): the AUC is the
    # exact one rounded, and the variance within a few ulps of the exact one.
    rng = np.random.default_rng(seed)
    size = int(rng.integers(100, 300))
    pos = rng.integers(0, 5_000, size).astype(np.int64)
    neg = rng.integers(0, 5_000, size).astype(np.int64)
    auc, var = delong_row(pos, neg)  # type: ignore[misc]
    want_auc, want_var = _delong_fraction(pos.tolist(), neg.tolist())
    assert abs(Fraction(auc) - want_auc) <= want_auc * Fraction(2, 2**53)
    assert abs(Fraction(var) - want_var) <= want_var * Fraction(1, 10**12)
    sums = table_sums(pos, neg)
    assert sums is not None and sums[3] >= 2**53  # (the case this covers)
    assert delong_of_sums(sums) == (auc, var)
    assert auc_of_sums(sums) == auc_from_table(pos * 0.0, pos * 0.0 + 1, pos, neg)[0]
    # Rows of one array read as each row alone (integer counts: exact sums there too).
    rows_p = np.stack([pos, pos[::-1], pos // 3])
    rows_n = np.stack([neg, neg[::-1], neg // 3])
    aucs, vars_ = delong_rows(rows_p, rows_n)
    zeros, ones = np.zeros(rows_p.shape), np.ones(rows_p.shape)
    values, _ = auc_of_rows(zeros, ones, rows_p, rows_n)
    for i in range(3):
        one = delong_row(rows_p[i], rows_n[i])
        assert one is not None and (aucs[i], vars_[i]) == one
        assert values[i] == auc_from_table(zeros[i], ones[i], rows_p[i], rows_n[i])[0]


def _reads(m: sm.ROCAUC) -> tuple:
    return m.compute(), m.interval(), m.interval(0.8), m.error_bound()


@pytest.mark.parametrize("seed", range(6))
def test_served_reads_are_a_fresh_reads(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Batches of every size against a held table: one-row updates (the per-request buffer),
    # batches within the read queue, and batches past it (folded in at the read).
    monkeypatch.setattr(_score_reads, "READ_QUEUE", 300)
    moves = []
    moved = _score_reads.moved_sums
    monkeypatch.setattr(_score_reads, "moved_sums", lambda *a: moves.append(1) or moved(*a))
    rng = np.random.default_rng(seed)

    def rows(k: int) -> tuple[np.ndarray, np.ndarray]:
        y = rng.random(k) < 0.3
        return y, np.round(rng.random(k) * 0.7 + 0.3 * y, int(rng.integers(2, 5)))

    every = [rows(5_000)]
    served = sm.ROCAUC(exact=True).update(*every[0])
    if seed % 2:
        served.interval()  # (served from the first read; else from the first queued read)
    for _ in range(60):
        batch = rows(int(rng.choice([1, 2, 40, 250, 900])))
        every.append(batch)
        if len(batch[0]) <= 2:
            for y, s in zip(*batch, strict=True):
                served.update([y], [s])
        else:
            served.update(*batch)
        if rng.random() < 0.6:
            got = _reads(served)  # (first: to_bytes() folds the queue in)
            before = served.to_bytes()
            assert repr(_reads(served)) == repr(got) and served.to_bytes() == before
            assert repr(got) == repr(_reads(sm.loads(before)))
    ys = np.concatenate([b[0] for b in every])
    ss = np.concatenate([b[1] for b in every])
    whole = sm.ROCAUC(exact=True).update(ys, ss)
    assert len(moves) > 10  # (the reads moved the sums past their queues)
    assert repr(_reads(served)) == repr(_reads(whole))
    assert served.to_bytes() == whole.to_bytes()


def test_a_read_past_a_long_queue_folds_it_in() -> None:
    # Not yet served, a queue past READ_QUEUE: the read folds it and sums the new table
    # (0.8.27's first cut summed the table as it was before the fold).
    rng = np.random.default_rng(1)
    y, s = rng.random(60_000) < 0.4, rng.random(60_000)
    m = sm.ROCAUC(exact=True).update(y[:20_000], s[:20_000])
    m.compute()
    m.update(y[20_000:], s[20_000:])
    assert repr(_reads(m)) == repr(_reads(sm.ROCAUC(exact=True).update(y, s)))


@pytest.mark.parametrize("flip", [False, True])
def test_a_cancelling_spread_is_taken_from_the_integers(flip: bool) -> None:
    # Near-perfect separation: ``sum w v**2 - W mean**2`` cancels, and the spread comes from
    # the integers, ``(P S2 - S1**2) / (4 N**2 P)``: no pass over the table (0.8.26's second
    # pass took three passes a read once served), and closer to the rationals.
    y = np.array([0] * 500 + [1] * 500)
    m = sm.ROCAUC(exact=True).update(1 - y if flip else y, np.linspace(0, 1, 1000))
    m.interval()
    m.update([0 if flip else 1], [0.99995])
    sums = m.hist.exact_sums()
    assert sums is not None and m.hist._pending  # (read past the queue)
    auc, var = delong_of_sums(sums)
    pos, neg = m.hist.pos, m.hist.neg  # (folds it)
    want_auc, want_var = _delong_fraction(pos.tolist(), neg.tolist())
    assert abs(Fraction(var) - want_var) <= want_var * Fraction(1, 10**13)
    assert abs(Fraction(auc) - want_auc) <= want_auc * Fraction(2, 2**53)
    assert repr(_reads(m)) == repr(_reads(sm.loads(m.to_bytes())))
    assert delong_row(pos, neg) == (auc, var)
    # Rows of one array: a cancelling integer row is read as the row alone.
    rows_p, rows_n = np.stack([pos, neg]), np.stack([neg, pos])
    aucs, vars_ = delong_rows(rows_p, rows_n)
    assert (aucs[0], vars_[0]) == (auc, var)
    assert (aucs[1], vars_[1]) == delong_row(neg, pos)


def test_a_fold_drops_what_the_served_table_kept() -> None:
    rng = np.random.default_rng(4)
    m = sm.ROCAUC(exact=True).update(rng.random(4_000) < 0.5, rng.random(4_000))
    m.interval()
    m.update([1], [0.25])
    m.interval()
    store = m.hist
    assert store.holds("prefix") and store.holds("served")
    m.to_bytes()  # (folds the queue in: the prefix sums of the old table go)
    assert not store.holds("prefix") and not store.holds("placed") and store.holds("served")
    m.update([0], [0.5])
    m.interval()
    assert m.hist.holds("prefix")
    m.merge(sm.ROCAUC(exact=True).update([1], [0.125]))  # (a merge replaces the table too)
    assert not m.hist.holds("prefix") and repr(_reads(m)) == repr(_reads(sm.loads(m.to_bytes())))


def test_served_store_keeps_prefix_and_places_only_new_keys() -> None:
    rng = np.random.default_rng(2)
    m = sm.ROCAUC(exact=True).update(rng.random(4_000) < 0.5, rng.random(4_000))
    m.interval()  # (a read of the first batch: folded in, not yet served)
    assert not m.hist.holds("prefix")
    m.update([1], [0.25])
    m.interval()
    store = m.hist
    prefix = store.remembered("prefix", store._fields(), lambda: None)
    assert prefix is not None and len(prefix.cum_p) == len(store._keys)
    m.update([0], [0.75])
    m.interval()
    assert m.hist is not store and m.hist.remembered("prefix", m.hist._fields(), list) is prefix
    where = m.hist.remembered("placed", m.hist._fields(), lambda: None)
    assert where is not None and len(where.keys) == 2  # (one folded batch of both rows)


@pytest.mark.parametrize("seed", range(4))
def test_a_served_store_past_int64_reads_exact_sums(seed: int) -> None:
    # Counts past fits (a store of 2**24-row entries): served reads equal a fresh table's.
    rng = np.random.default_rng(seed)
    keys, pos, neg = _table(rng, 20_000, 10**6, most=2**12)
    store = ScoreBuckets(None)
    store._keys, store._pos, store._neg = keys, pos, neg
    assert not fits(int(pos.sum()), int(neg.sum()))
    assert store.exact_sums() is not None
    everything = [(store._keys, store._pos, store._neg)]
    for _ in range(12):
        k = int(rng.integers(1, 60))
        scores, labels = rng.integers(0, 10**6, k).astype(np.float64), rng.random(k) < 0.5
        store = store.add(scores, labels, None)
        batch = ScoreBuckets(None).add(scores, labels, None)
        batch._flush()
        everything.append((batch._keys, batch._pos, batch._neg))
        want = _folded(*everything)
        found = store.exact_sums()
        assert found is not None and found == table_sums(want[1], want[2])
    assert store.holds("prefix") and store._pending  # (read past the queue: it is there)
    assert store.remembered("prefix", store._fields(), lambda: None).est_pb is not None


def test_weighted_and_grid_stores_have_no_exact_sums() -> None:
    weighted = sm.ROCAUC(exact=True).update([0, 1, 1], [0.1, 0.2, 0.3], sample_weight=[1, 2, 1])
    assert weighted.hist.exact_sums() is None
    assert sm.ROCAUC().update([0, 1], [0.1, 0.2]).hist.exact_sums() is None
    assert ScoreBuckets(None).exact_sums() is None  # (empty)


@pytest.mark.parametrize("seed", range(20))
def test_lockstep_search_is_searchsorted(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from streammetrics.states import _exact_sums

    monkeypatch.setattr(_exact_sums, "LOCKSTEP_KEYS", 1)
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 5_000))
    keys = np.unique(rng.integers(0, 4 * size + 10, size)).astype(np.float64)
    if seed % 3 == 0:
        keys = np.sort(-keys)  # (negative keys, -0.0 among them)
    coarse = keys[(1 << _exact_sums.BLOCK_BITS) - 1 :: 1 << _exact_sums.BLOCK_BITS].copy()
    new = np.unique(rng.integers(-20, 4 * size + 40, int(rng.integers(1, 3_000))))
    new = np.sort(-new.astype(np.float64)) if seed % 3 == 0 else new.astype(np.float64)
    got = _exact_sums._below(keys, coarse, new)
    assert got.tolist() == np.searchsorted(keys, new).tolist()
