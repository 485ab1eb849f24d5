"""Columns that numpy reads in surprising ways: iterators, mixed labels, strings, complex.

numpy turns a generator into a 0-d object array, ``["a", 1]`` into two strings and ``"0.5"``
into a number on request. Each of these is read or refused here as a scikit-learn user
expects, at the call that passed it, with the state unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm


def test_iterators_and_generators_are_read_once() -> None:
    want = sm.Accuracy().update([0, 1, 1, 0], [0, 1, 0, 0])
    got = sm.Accuracy().update((v for v in [0, 1, 1, 0]), iter([0, 1, 0, 0]))
    assert got == want
    mse = sm.MeanSquaredError().update(map(float, [1, 2, 3]), (x for x in [1.0, 2.5, 3.0]))
    assert mse == sm.MeanSquaredError().update([1.0, 2.0, 3.0], [1.0, 2.5, 3.0])
    g = sm.GAUC().update(iter([0, 1, 1]), iter([0.2, 0.9, 0.4]), iter(["a", "a", "b"]))
    assert g == sm.GAUC().update([0, 1, 1], [0.2, 0.9, 0.4], ["a", "a", "b"])


@pytest.mark.parametrize(
    "make, args",
    [
        (sm.Accuracy, (["a", 1], ["a", "b"])),
        (sm.F1, ([0, 1], ["1", 0])),
        (sm.ClusterAgreement, ([1, 2], ["x", 2])),
        (sm.GAUC, ([0, 1], [0.5, 0.5], ["u", 3])),
    ],
)
def test_a_column_mixing_strings_and_numbers_is_refused(make, args) -> None:
    m = make()
    before = m.to_bytes()
    with pytest.raises(sm.InputError, match="mixes strings and numbers"):
        m.update(*args)
    assert m.to_bytes() == before


def test_mixed_small_batches_are_refused_after_string_labels_are_trusted() -> None:
    m = sm.Accuracy()
    for _ in range(3):
        m.update(["a", "1"], ["a", "1"])  # "1" is a string label here
    with pytest.raises(sm.InputError, match="mixes strings and numbers"):
        m.update(["a", 1], ["a", "1"])
    assert m.count == 6


@pytest.mark.parametrize("bad", [["0.5", "0.25"], np.array(["0.5", "0.1"]), [0.5 + 1j, 0.1]])
def test_scores_must_be_real_numbers(bad) -> None:
    for m in (sm.ROCAUC(), sm.MeanSquaredError(), sm.LogLoss()):
        with pytest.raises(sm.InputError, match="real numbers"):
            m.update([0, 1], bad)
    with pytest.raises(sm.InputError, match="real numbers"):
        sm.ROCAUC().update(1, "0.5")
    objects = np.array([0.25, 0.75], dtype=object)  # a pandas object column of floats is fine
    assert sm.ROCAUC().update([0, 1], objects) == sm.ROCAUC().update([0, 1], [0.25, 0.75])
