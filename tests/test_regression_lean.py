"""The one-loss update of two float64 columns (MSE, RMSE, MAE, MAPE) skips the general path's
conversions: it must make the general path's state byte for byte, and leave every case it does
not cover (and every bad batch) to the general path."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.errors import InputError

ONE_LOSS = [
    sm.MeanSquaredError,
    sm.MeanAbsoluteError,
    sm.MeanAbsolutePercentageError,
    sm.RootMeanSquaredError,
]
# Below, at and past the shifted sums' threshold (4,096) and the kernel's piece (32,768).
SIZES = [1, 4095, 4096, 10_000, 32_768, 32_769, 100_000]


def _general(metric, t, p):
    """The same update through the general path: columns as lists are converted there."""
    return metric.update(t.tolist(), p.tolist())


@pytest.mark.parametrize("make", ONE_LOSS)
def test_same_bytes_as_the_general_path(make, monkeypatch):
    taken = []
    lean_batch = type(make())._one_loss_batch

    def spy(self, t, p):
        taken.append(lean_batch(self, t, p))
        return taken[-1]

    monkeypatch.setattr(type(make()), "_one_loss_batch", spy)
    rng = np.random.default_rng(7)
    lean, general = make(), make()
    for n in SIZES:
        t = rng.normal(3.0, 2.0, size=n)
        p = t + rng.normal(0.0, 0.5, size=n)
        lean.update(t, p)
        _general(general, t, p)
        assert lean.to_bytes() == general.to_bytes()
    assert lean.compute() == general.compute()
    assert lean.interval() == general.interval()
    # the lean path ran for every batch of 4,096 rows or more (and the general path for lists)
    assert taken == [n >= 4096 for n in SIZES]


@pytest.mark.parametrize("make", ONE_LOSS)
def test_bad_batches_are_named_and_change_nothing(make):
    rng = np.random.default_rng(8)
    m = make()
    t = rng.normal(size=10_000)
    m.update(t, t + 0.1)
    before = m.to_bytes()
    for column in ("y_true", "y_pred"):
        for bad in (np.nan, np.inf):
            t2, p2 = t.copy(), t + 0.2
            (t2 if column == "y_true" else p2)[5_000] = bad
            with pytest.raises(InputError, match=column):
                m.update(t2, p2)
            assert m.to_bytes() == before
    with pytest.raises(InputError, match="length"):
        m.update(t, t[:-1])
    with pytest.raises(InputError, match="y_pred"):  # past the moments' bounds
        m.update(np.zeros(10_000), np.full(10_000, 2.0**600))
    assert m.to_bytes() == before


def test_cases_it_leaves_to_the_general_path():
    rng = np.random.default_rng(9)
    t = rng.normal(size=10_000)
    # a state of two outputs: a 1-D batch is refused, as before
    two = sm.MeanSquaredError().update(np.c_[t, t], np.c_[t, t + 1])
    with pytest.raises(InputError, match="outputs"):
        two.update(t, t)
    # weighted rows seen: the loss's moments under the weights squared must follow
    lean, general = sm.MeanSquaredError(), sm.MeanSquaredError()
    for m in (lean, general):
        m.update(t[:10], t[:10] + 1, sample_weight=np.full(10, 2.0))
    lean.update(t, t + 0.5)
    _general(general, t, t + 0.5)
    assert lean.to_bytes() == general.to_bytes()
    # float32, byte-swapped and strided columns: the same state as float64 lists
    for cols in (
        (t.astype(np.float32), (t + 0.5).astype(np.float32)),
        (t.astype(">f8"), (t + 0.5).astype(">f8")),
        (np.repeat(t, 2)[::2], np.repeat(t + 0.5, 2)[::2]),
    ):
        a, b = sm.MeanSquaredError().update(*cols), sm.MeanSquaredError()
        _general(b, np.asarray(cols[0], np.float64), np.asarray(cols[1], np.float64))
        assert a.to_bytes() == b.to_bytes()
    # multioutput weights of the wrong length: refused
    with pytest.raises(InputError, match="multioutput"):
        sm.MeanSquaredError(multioutput=[0.5, 0.5]).update(t, t)
