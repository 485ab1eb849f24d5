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
