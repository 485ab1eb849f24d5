"""The intervals of the packed float tables as array operations (``streammetrics._intervals``):
every slice's interval is, to the bit (``repr``), what its made state's ``interval()`` gives,
over random streams of unit, fractional, zero and far-apart weights, one-row slices, constant
losses and states whose weighted-interval sums an older version left unknown (nan)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import streammetrics as sm
from streammetrics import _codec

METRICS = [
    sm.LogLoss,
    sm.BrierScore,
    sm.MeanSquaredError,
    sm.RootMeanSquaredError,
    sm.MeanAbsoluteError,
    sm.MeanAbsolutePercentageError,
]


def _columns(make, rng: np.random.Generator, m: int, constant: bool):  # type: ignore[no-untyped-def]
    if make in (sm.LogLoss, sm.BrierScore):
        p = np.round(rng.random(m), 1) if constant else rng.random(m)
        return rng.integers(0, 2, m), p
    t = rng.normal(size=m) * 10.0 ** rng.integers(-3, 4)
    return t, (t.copy() if constant else t + rng.normal(size=m))


def _stream(make, seed: int) -> sm.Sliced:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    s = sm.Sliced(make())
    k = int(rng.integers(1, 60))
    for _ in range(3):
        m = int(rng.integers(1, 2_000))
        kwargs = {}
        mode = seed % 4
        if mode == 1:
            kwargs["sample_weight"] = rng.random(m) * (rng.random(m) > 0.3)
        elif mode == 2:
            kwargs["sample_weight"] = np.exp(rng.normal(0.0, 5.0, m))
        elif mode == 3:
            kwargs["sample_weight"] = np.ones(m)
        s.update(*_columns(make, rng, m, seed % 7 == 0), by=rng.integers(0, k, m), **kwargs)
    return s


def _unknown(s: sm.Sliced) -> sm.Sliced:
    """Every other slice's sums under the weights squared set unknown (nan), as an older
    version's weighted state holds them, then one more batch (the table packs them again)."""
    tree = _codec.decode(s.to_bytes())
    for _, env in tree["state"]["slices"][::2]:
        state = env["state"]
        for name in ("loss_wsq", "loss_sq_wsq"):
            if name in state:
                state[name] = math.nan
        if "wsq_mean" in state and state["wsq_mean"].size:
            state["wsq_mean"], state["wsq_spread"] = np.array([math.nan]), np.array([math.nan])
    out = sm.loads(_codec.encode(tree))
    loss = isinstance(out._template, (sm.LogLoss, sm.BrierScore))
    out.update([0, 1] if loss else [1.0, 2.0], [0.3, 0.6] if loss else [1.5, 2.0], by=[0, 0])
    return out


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("make", METRICS, ids=[m.__name__ for m in METRICS])
def test_the_tables_intervals_are_each_slices_own(make, seed):
    s = _stream(make, seed)
    if seed % 4 == 1:
        s = _unknown(s)
    assert s.slices._pack is not None
    for level in (0.95, 0.6):
        got = s.intervals(level)
        view = s.slices.view()
        assert all(repr(got[k]) == repr(view[k].interval(level)) for k in view)
        s.slices._dict = None  # (the next level reads the table again, not the made states)
