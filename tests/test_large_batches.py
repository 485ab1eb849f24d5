"""A raw batch longer than ``SORT_CHUNK`` is reduced in pieces: the same state as smaller
batches, byte for byte for counts, to rounding for weights."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.states import _bucket_batch


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(_bucket_batch, "SORT_CHUNK", 1000)


@pytest.mark.parametrize(
    "make",
    [
        lambda: sm.ROCAUC(exact=True, score_type="real"),
        lambda: sm.ROCAUC(score_type="real"),
        lambda: sm.AveragePrecision(exact=True, score_type="logit"),
    ],
)
def test_pieces_equal_small_batches(small_chunks, make):
    rng = np.random.default_rng(0)
    n = 7_500
    y = rng.integers(0, 2, n)
    s = np.round(rng.normal(0.3 * y, 1.0), 2)  # ties within and across pieces
    w = rng.integers(1, 4, n).astype(float)
    whole = make().update(y, s)
    pieces = make()
    for a in range(0, n, 700):
        pieces.update(y[a : a + 700], s[a : a + 700])
    assert whole.to_bytes() == pieces.to_bytes()
    weighted = make().update(y, s, w)
    reference = make().update(y, s, w.astype(np.int64))  # whole weights sum exactly
    assert weighted.compute() == pytest.approx(reference.compute(), abs=1e-12)
    assert weighted.count == n


@pytest.mark.parametrize("weighted", [False, True])
def test_wide_real_key_ranges_count_in_place(weighted):
    # Scores over many binades: the batch's key range passes the bincount table size, so the
    # chunks are added in place; the counts must be those of a direct count per bucket.
    from streammetrics.states.mappings import real_at

    rng = np.random.default_rng(3)
    n = 100_000
    y = rng.integers(0, 2, n)
    s = np.clip(0.3 * y + rng.normal(0.35, 0.2, n), 0.0, 1.0)
    w = rng.integers(1, 5, n).astype(float) if weighted else None
    half = n // 2
    m = sm.ROCAUC(score_type="real").update(y[:half], s[:half], None if w is None else w[:half])
    keys = real_at(m.hist.bits).keys(s[half:])
    # the second half is counted densely over its key range, wider than bincount's table
    assert 2 * (int(keys.max()) - int(keys.min()) + 1) > _bucket_batch._BINCOUNT_CELLS
    m.update(y[half:], s[half:], None if w is None else w[half:])
    h = m.hist
    keys = real_at(h.bits).keys(s)
    ones = np.ones(n) if w is None else w
    expected_keys, at = np.unique(keys, return_inverse=True)
    pos = np.bincount(at, weights=ones * y)
    neg = np.bincount(at, weights=ones * (1 - y))
    assert np.array_equal(h.keys, expected_keys)
    assert np.array_equal(h.pos, pos) and np.array_equal(h.neg, neg)
    starts = np.r_[0, np.cumsum(np.bincount(at))[:-1]]
    by_key = s[np.argsort(keys, kind="stable")]
    assert np.array_equal(h.lo, np.minimum.reduceat(by_key, starts))
    assert np.array_equal(h.hi, np.maximum.reduceat(by_key, starts))
