"""``score_type="real"``: a sketch that starts fine and halves its resolution (UDDSketch's
uniform collapse) while it holds more than ``REAL_MAX_BUCKETS`` buckets, canonically."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

import streammetrics as sm
from streammetrics import _codec
from streammetrics.errors import StateDecodeError
from streammetrics.states.mappings import REAL_FINE_BITS, REAL_MAX_BUCKETS

GOLDEN = Path(__file__).parent / "golden"


def _far_from_zero(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores around 1e4 with spread 250: 0.2.0's fixed relative buckets were 78 units wide."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return y, 1e4 + 250 * rng.normal(0.6 * y, 1.0)


def test_far_from_zero_the_error_is_small_within_the_bound_and_the_state_small():
    y, s = _far_from_zero(1_000_000, 0)
    m = sm.ROCAUC(score_type="real")
    for i in range(0, len(y), 100_000):
        m.update(y[i : i + 100_000], s[i : i + 100_000])
    exact = roc_auc_score(y, s)
    err = abs(m.compute() - exact)
    assert err < 1e-4
    assert err <= m.error_bound()
    assert len(m.to_bytes()) <= 64 * 1024
    assert len(m.hist.keys) <= REAL_MAX_BUCKETS
    assert 7 < m.hist.bits < REAL_FINE_BITS  # finer than 0.2.0's 7 bits, coarser than the start
    ap = sm.AveragePrecision(score_type="real").update(y, s)
    assert abs(ap.compute() - average_precision_score(y, s)) <= ap.error_bound()


def test_a_few_scores_keep_the_finest_resolution():
    m = sm.ROCAUC(score_type="real").update([0, 1, 0, 1], [1e4, 1e4 + 1.0, -3.5, 7e-9])
    assert m.hist.bits == REAL_FINE_BITS
    assert m.compute() == roc_auc_score([0, 1, 0, 1], [1e4, 1e4 + 1.0, -3.5, 7e-9])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_any_split_merged_in_any_order_gives_the_same_bytes(seed):
    """The resolution reached depends only on the buckets held: shards that collapsed to
    different resolutions (or not at all) merge to the one stream's bytes."""
    rng = np.random.default_rng(seed)
    y, s = _far_from_zero(60_000, seed)
    s[rng.random(len(s)) < 0.01] *= -1e-6  # a few small negative scores: keys of both signs
    whole = sm.ROCAUC(score_type="real").update(y, s)
    cuts = np.sort(rng.choice(np.arange(1, len(y)), size=6, replace=False))
    # uneven shards: small ones stay fine, large ones collapse
    shards = [
        sm.ROCAUC(score_type="real").update(a, b)
        for a, b in zip(np.split(y, cuts), np.split(s, cuts), strict=True)
    ]
    assert len({sh.hist.bits for sh in shards}) > 1
    order = rng.permutation(len(shards))
    merged = shards[order[0]].copy()
    merged.merge(*[shards[i] for i in order[1:]])
    assert merged.to_bytes() == whole.to_bytes()
    pairwise = shards[order[-1]].copy()
    for i in order[-2::-1]:
        pairwise.merge(shards[i])
    assert pairwise.to_bytes() == whole.to_bytes()
    assert sum(shards[::-1]).to_bytes() == whole.to_bytes()
    streamed = sm.ROCAUC(score_type="real")
    for a, b in zip(np.array_split(y, 37), np.array_split(s, 37), strict=True):
        streamed.update(a, b)
    assert streamed.to_bytes() == whole.to_bytes()


def test_the_configured_resolution_is_a_floor():
    y, s = _far_from_zero(200_000, 4)
    m = sm.ROCAUC(score_type="real", resolution=4096).update(y, s * 1e3)  # a wide spread
    assert m.hist.bits >= 12  # 4096 = 2**12: never coarser, even past the bucket budget
    fine = sm.ROCAUC(score_type="real", resolution=8).update(y, s)
    assert fine.hist.bits > 3


@pytest.mark.parametrize(
    ("case_id", "cls"),
    [("ROCAUC-real-weighted", sm.ROCAUC), ("golden-AveragePrecision-real", sm.AveragePrecision)],
)
def test_blobs_of_0_2_0_still_load_at_their_resolution(case_id, cls):
    """0.2.0 wrote no resolution: its buckets were at the configured one, the floor."""
    old = (GOLDEN / "legacy" / f"{case_id}-0.2.0.bin").read_bytes()
    m = cls.from_bytes(old)
    assert m.hist.bits == 7  # resolution 128
    pinned = {
        "ROCAUC-real-weighted": 0.4074074074074074,
        # (0.8.4: 0.5227676620864931, before weighted buckets took the continuous form)
        "golden-AveragePrecision-real": 0.5223560673638011,
    }
    assert m.compute() == pinned[case_id]
    assert sm.loads(m.to_bytes()).to_bytes() == m.to_bytes()
    # merging a finer state collapses it to the older state's resolution first
    y, s = _far_from_zero(1_000, 5)
    fresh = cls(score_type="real").update(y, s, sample_weight=np.ones(len(y)))
    assert fresh.hist.bits > 7
    both = m.copy().merge(fresh)
    assert both.hist.bits == 7
    assert both.count == m.count + fresh.count
    assert json.loads((GOLDEN / "index.json").read_text())[case_id]["class"] == cls.__name__


def _tampered(m: sm.ROCAUC, **changes: object) -> bytes:
    name, schema, config, state = _codec.unpack_envelope(m.to_bytes())
    state = {**state, "hist": {**state["hist"], **changes}}
    return _codec.pack_envelope(name, schema, config, state)


def test_forged_resolutions_are_refused():
    y, s = _far_from_zero(5_000, 6)
    m = sm.ROCAUC(score_type="real").update(y, s)
    assert sm.loads(_tampered(m)).to_bytes() == m.to_bytes()
    for bits in (6, REAL_FINE_BITS + 1, 12.0, "12", True):
        with pytest.raises(StateDecodeError):
            sm.loads(_tampered(m, bits=bits))
    big = sm.ROCAUC(score_type="real").update(*_far_from_zero(200_000, 7))
    assert len(big.hist.keys) > REAL_MAX_BUCKETS // 2
    # the same buckets claimed at a finer resolution would be more than the budget allows
    # there, or fall apart: refused either way
    with pytest.raises(StateDecodeError):
        sm.loads(_tampered(big, bits=big.hist.bits + 3))
