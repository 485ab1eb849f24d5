"""Exact score stores fold a few new scores into many by insertion (``insert_entries``), not a
sort of every entry: the entries, and so the bytes, are the sort's."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.states._bucket_batch import reduce_entries
from streammetrics.states._bucket_merge import insert_entries


@pytest.mark.parametrize("seed", range(30))
def test_insertion_gives_the_sorts_entries(seed: int) -> None:
    rng = np.random.default_rng(seed)
    keys = np.unique(rng.integers(0, 400, int(rng.integers(0, 300))).astype(np.float64))
    new = np.unique(rng.integers(-20, 420, int(rng.integers(0, 60))).astype(np.float64))
    cols = [rng.integers(0, 5, len(keys)), rng.integers(0, 5, len(keys))]
    new_cols = [rng.integers(0, 5, len(new)), rng.integers(0, 5, len(new))]
    got_keys, got = insert_entries(keys, cols, new, new_cols)
    want_keys, want, _, _ = reduce_entries(
        np.concatenate([keys, new]),
        [np.concatenate([c, n]) for c, n in zip(cols, new_cols, strict=True)],
        None,
        None,
    )
    assert got_keys.tobytes() == want_keys.tobytes()
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert cols[0].tolist() == cols[0].tolist()  # (inputs: not written)


@pytest.mark.parametrize("make", [sm.ROCAUC, sm.AveragePrecision])
def test_served_exact_states_keep_the_one_batch_bytes(make: type) -> None:
    rng = np.random.default_rng(3)
    y, s = rng.integers(0, 2, 20_000), np.round(rng.random(20_000), 4)
    served = make(exact=True).update(y[:15_000], s[:15_000])
    served.interval()
    for a in range(15_000, 20_000, 250):
        served.update(y[a : a + 250], s[a : a + 250])
        served.interval()
    whole = make(exact=True).update(y, s)
    assert served.to_bytes() == whole.to_bytes()
    assert repr(served.interval()) == repr(whole.interval())
    small = make(exact=True).update(y[:40], s[:40] * 0.5 + 0.1234)
    merged = make(exact=True).update(y, s).merge(small)
    assert (
        merged.to_bytes()
        == make(exact=True)
        .update(np.concatenate([y, y[:40]]), np.concatenate([s, s[:40] * 0.5 + 0.1234]))
        .to_bytes()
    )
