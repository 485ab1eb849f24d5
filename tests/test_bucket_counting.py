"""The score metrics' update counts a numpy bool label column as it is (uint8 added to the
keys, no int64 copy): the state must be byte for byte the one of the same labels as 0/1
integers, in every mode, weighted or not, over several chunks and onto a state already held."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.states.mappings import CHUNK


def _batches(seed: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for n in (CHUNK + 1234, 3 * CHUNK + 7, 9):
        y = rng.random(n) < 0.3
        p = 1.0 / (1.0 + np.exp(-rng.normal(0.9 * y - 1.0, 1.0)))
        p[:8] = [-0.0, 0.0, 1.0, 0.5, 5e-324, 1e-300, 1.0 - 2.0**-53, np.nextafter(0.5, 1.0)]
        w = rng.integers(0, 4, n).astype(np.float64) * 0.37
        out.append((y, p, w))
    return out


@pytest.mark.parametrize(
    "make",
    [
        lambda: sm.ROCAUC(),
        lambda: sm.ROCAUC(score_type="logit"),
        lambda: sm.ROCAUC(score_type="real"),
        lambda: sm.ROCAUC(exact=True),
        lambda: sm.AveragePrecision(),
    ],
    ids=["probability", "logit", "real", "exact", "ap"],
)
@pytest.mark.parametrize("weighted", [False, True])
def test_bool_labels_give_the_bytes_of_integer_labels(make, weighted):
    as_bool, as_int = make(), make()
    for y, p, w in _batches(3):
        extra = (w,) if weighted else ()
        as_bool.update(y, p, *extra)
        as_int.update(y.astype(np.int64), p, *extra)
    assert as_bool.to_bytes() == as_int.to_bytes()
    assert as_bool.compute() == as_int.compute()


def test_labels_are_not_modified_nor_kept():
    """The bool column is read, never written, and the state holds no view of it."""
    y = np.array([True, False, True, True])
    m = sm.ROCAUC().update(y, np.array([0.9, 0.1, 0.6, 0.4]))
    before = m.to_bytes()
    y[:] = False
    assert m.to_bytes() == before
    np.testing.assert_array_equal(y, False)
