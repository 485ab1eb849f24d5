"""Every metric and wrapper refuses a bad ``level`` with an ``InputError`` naming it, before
anything else: 0.8.16's metrics without a closed form (``CalibrationError``), ``Decayed(Sliced)``
and ``SlidingWindow(Sliced)`` raised ``NoIntervalError`` first (docs/uncertainty.md says a
level outside (0, 1) is an ``InputError``)."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
from tests.harness import all_cases, feed

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_bad_level_is_an_input_error_naming_it(case) -> None:
    empty = case.make()
    fed = feed(case.make(), [case.batch(np.random.default_rng(0), 20)])
    for metric in (empty, fed):
        for level in (2.0, 0.0, 1.0, True, float("nan"), "0.9", None):
            with pytest.raises(sm.InputError, match="level"):
                metric.interval(level)
