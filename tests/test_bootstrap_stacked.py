"""Bootstrap weight schemes and the stacked fold of replicates.

* 0.2.0 blobs (weight scheme 1, kept in ``tests/golden/legacy/``) still load, write the same
  bytes, equal a scheme-1 state rebuilt today from the same rows, keep updating with scheme 1,
  and refuse, with a message naming the schemes, to merge with a scheme-2 state.
* The stacked fold (one pass over rows x replicates, ``streammetrics.states.stacked``) gives the
  state the per-replicate path gives, byte for byte for whole-number weights, to rounding for
  fractional ones, for every confusion and score-bucket metric.
* Scheme 2's weights are Poisson(1), independent across replicates and rows, and pure.
"""

from __future__ import annotations

import itertools
import math
import zlib
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import streammetrics as sm
from streammetrics.errors import IncompatibleStateError, InputError, StateDecodeError
from streammetrics.wrappers import bootstrap as bootstrap_module
from streammetrics.wrappers._bootstrap_ids import id_hashes
from streammetrics.wrappers._poisson import poisson_rows
from streammetrics.wrappers.bootstrap import poisson_weights
from tests.harness import all_cases, feed

LEGACY = Path(__file__).parent / "golden" / "legacy"
SIZES = (5, 40, 1, 13)  # as tests/test_golden.py
BOOTSTRAP_CASES = ["Bootstrap-ids", "Bootstrap-ids-weighted", "Bootstrap-auc-string-ids"]
BOOTSTRAP_CASES.append("Bootstrap-no-ids")


def _case(case_id: str):
    return next(c for c in all_cases() if c.id == case_id)


def _scheme1(metric: sm.Bootstrap) -> sm.Bootstrap:
    cfg = metric.config
    inner = sm.loads(metric.metric.copy().reset().to_bytes())
    return sm.Bootstrap(inner, replicates=cfg["replicates"], seed=cfg["seed"], scheme=1)


@pytest.mark.parametrize("case_id", BOOTSTRAP_CASES)
def test_0_2_0_blobs_load_round_trip_and_keep_their_scheme(case_id):
    case = _case(case_id)
    blob = (LEGACY / f"{case_id}-0.2.0.bin").read_bytes()
    old = sm.loads(blob)
    assert old.to_bytes() == blob
    assert "scheme" not in old.config and "scheme=1" in repr(old)
    # The same rows fed today to a scheme-1 state give the 0.2.0 bytes.
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    batches = [case.batch(rng, n) for n in SIZES]
    rebuilt = feed(_scheme1(case.make()), batches)
    assert rebuilt.to_bytes() == blob
    # A loaded state keeps drawing scheme 1: it goes on like a scheme-1 state.
    more = case.batch(np.random.default_rng(7), 30)
    assert old.update(*more[0], **more[1]).to_bytes() == (
        rebuilt.update(*more[0], **more[1]).to_bytes()
    )
    # ... and refuses to merge with scheme 2, saying why.
    new = feed(case.make(), batches)
    assert new.config["scheme"] == 2
    with pytest.raises(IncompatibleStateError, match="schemes"):
        new.copy().merge(old)
    with pytest.raises(IncompatibleStateError, match=r"scheme=1"):
        old.copy().merge(new)


def test_scheme_is_validated_and_canonical():
    with pytest.raises(InputError, match="scheme"):
        sm.Bootstrap(sm.Accuracy(), scheme=3)
    with pytest.raises(InputError, match="scheme"):
        sm.Bootstrap(sm.Accuracy(), scheme=True)
    b = sm.Bootstrap(sm.Accuracy(), replicates=10, scheme=2).update([0, 1], [0, 1], ids=[1, 2])
    assert sm.loads(b.to_bytes()).to_bytes() == b.to_bytes()
    blob = b.to_bytes().replace(b"\xa6scheme\x02", b"\xa6scheme\x01")
    assert blob != b.to_bytes()
    with pytest.raises(StateDecodeError):
        sm.loads(blob)


def test_scheme_2_weights_are_poisson_one_independent_and_pure():
    h = id_hashes(np.arange(200_000), 200_000)
    w = poisson_weights(h, seed=5, replicates=41)  # odd: the last pair gives one replicate
    assert w.shape == (41, 200_000) and w.dtype == np.uint8
    freq = np.bincount(w.ravel(), minlength=8)[:8]
    expected = w.size * np.array([math.exp(-1) / math.factorial(k) for k in range(8)])
    chi2 = ((freq[:7] - expected[:7]) ** 2 / expected[:7]).sum()
    assert chi2 < stats.chi2.ppf(0.999, 6)
    corr = np.corrcoef(w[:, :50_000].astype(float))
    off = corr[~np.eye(41, dtype=bool)]
    assert np.abs(off).max() < 5 * 50_000**-0.5  # both halves of one mix included
    sub = np.array([17, 3, 199_999])
    assert (poisson_weights(h[sub], 5, 41) == w[:, sub]).all()
    assert (poisson_rows(h[sub], 5, 41, 2) == w[:, sub].T).all()
    assert not (poisson_weights(h[:100], 6, 41) == w[:, :100]).all()
    assert not (poisson_weights(h[:100], 5, 41, scheme=1) == w[:, :100]).all()


def _labels(rng, n):
    y = rng.integers(0, 4, n)
    return y, np.where(rng.random(n) < 0.7, y, rng.integers(0, 4, n))


def _scores(rng, n):
    y = rng.integers(0, 2, n)
    s = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1)
    s[: n // 10] = np.round(s[: n // 10], 1)  # ties inside buckets
    return y, s


STACKED = [
    (lambda: sm.Accuracy(), _labels),
    (lambda: sm.F1(average="macro"), _labels),
    (lambda: sm.CohenKappa(), _labels),
    (lambda: sm.ConfusionMatrix(labels=[0, 1, 2, 3]), _labels),
    (lambda: sm.ROCAUC(), _scores),
    (lambda: sm.ROCAUC(score_type="logit", resolution=16), _scores),
    (lambda: sm.AveragePrecision(), _scores),
    (lambda: sm.PRCurve(), _scores),
]


def _no_stack(*args):
    calls.append(args)
    return None


calls: list = []


@pytest.mark.parametrize("weights", ["none", "whole", "fractional"])
@pytest.mark.parametrize(("make", "draw"), STACKED)
def test_stacked_fold_equals_the_per_replicate_path(make, draw, weights, monkeypatch):
    rng = np.random.default_rng(11)
    n = 2_500
    cols = draw(rng, n)
    sw = {
        "none": None,
        "whole": rng.integers(0, 4, n).astype(float),
        "fractional": rng.random(n),
    }[weights]
    ids = rng.integers(0, 2**40, n)
    cuts = [0, 1, 700, 701, n]
    stacked = sm.Bootstrap(make(), replicates=37, seed=4)
    plain = sm.Bootstrap(make(), replicates=37, seed=4)
    for a, b in itertools.pairwise(cuts):
        kw = {} if sw is None else {"sample_weight": sw[a:b]}
        stacked.update(*(c[a:b] for c in cols), ids=ids[a:b], **kw)
        with monkeypatch.context() as patch:
            # The per-replicate path, as for metrics without a stacked fold. (Until 0.8.15 this
            # test set an attribute no code read, and compared the stacked fold with itself.)
            patch.setattr(bootstrap_module, "stacked_batch", _no_stack)
            plain.update(*(c[a:b] for c in cols), ids=ids[a:b], **kw)
    assert calls, "the per-replicate path was not taken"
    calls.clear()
    if weights == "fractional":
        for r in range(37):
            x, y = stacked.reps.slices[r].compute(), plain.reps.slices[r].compute()
            np.testing.assert_allclose(
                np.concatenate([np.ravel(v) for v in (x if isinstance(x, tuple) else (x,))]),
                np.concatenate([np.ravel(v) for v in (y if isinstance(y, tuple) else (y,))]),
                rtol=1e-12,
                equal_nan=True,
            )
    else:
        assert stacked.to_bytes() == plain.to_bytes()


def test_stacked_fold_is_split_invariant_and_atomic():
    rng = np.random.default_rng(2)
    y, s = _scores(rng, 4_000)
    ids = np.arange(4_000)
    whole = sm.Bootstrap(sm.ROCAUC(), replicates=50, seed=3).update(y, s, ids=ids)
    parts = [sm.Bootstrap(sm.ROCAUC(), replicates=50, seed=3) for _ in range(3)]
    for i, p in enumerate(parts):
        p.update(y[i::3], s[i::3], ids=ids[i::3])
    assert sum(parts[1:], parts[0]).to_bytes() == whole.to_bytes()
    before = whole.to_bytes()
    with pytest.raises(InputError):
        whole.update(y[:10], np.r_[s[:9], 1.5], ids=ids[:10])
    with pytest.raises(InputError):
        whole.update(y[:10], s[:10], ids=ids[:10], sample_weight=-np.ones(10))
    assert whole.to_bytes() == before
