"""Columns that numpy reads in surprising ways: iterators, mixed labels, strings, complex.

numpy turns a generator into a 0-d object array, ``["a", 1]`` into two strings and ``"0.5"``
into a number on request. Each of these is refused as a scikit-learn user expects, at the call
that passed it, with the state unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm


def test_iterators_and_generators_are_refused_with_the_argument_named() -> None:
    m = sm.GAUC().update([0, 1], [0.2, 0.9], ["a", "a"])
    before = m.to_bytes()
    with pytest.raises(sm.InputError, match="groups"):
        m.update([0, 1], [0.2, 0.9], iter(["a", "b"]))
    with pytest.raises(sm.InputError, match="y_true"):
        sm.Accuracy().update((v for v in [0, 1]), [0, 1])
    assert m.to_bytes() == before


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
