"""CalibrationError bins rows by arithmetic: the same bin as a binary search over the edges,
for every bin count, on the edges, one ulp either side and anywhere in between."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.classification.reliability import _bin_of


@pytest.mark.parametrize("bins", [1, 2, 3, 7, 10, 15, 49, 100, 1000, 4096])
def test_arithmetic_bins_equal_the_binary_search(bins: int) -> None:
    rng = np.random.default_rng(bins)
    edges = np.linspace(0.0, 1.0, bins + 1)[1:-1]
    i = np.arange(bins + 1, dtype=np.float64)
    grid = np.concatenate([i / bins, i * (1.0 / bins), np.linspace(0.0, 1.0, bins + 1)])
    values = np.concatenate(
        [
            edges,
            np.nextafter(edges, 0.0),
            np.nextafter(edges, 1.0),
            grid,
            np.nextafter(grid, 0.0),
            np.nextafter(grid, 1.0),
            [0.0, 5e-324, np.nextafter(1.0, 0.0), 1.0],
            rng.random(20_000),
            rng.random(20_000).round(3),
        ]
    )
    values = np.clip(values, 0.0, 1.0)
    np.testing.assert_array_equal(_bin_of(values, bins, edges), np.searchsorted(edges, values))


def test_a_value_on_an_inner_edge_goes_to_the_lower_bin() -> None:
    # as scikit-learn's calibration_curve(strategy="uniform") bins it
    m = sm.CalibrationError(bins=4).update([1, 0, 1, 0, 1], [0.25, 0.5, 0.75, 0.0, 1.0])
    np.testing.assert_array_equal(m.weight, [2.0, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(m.confidence, [0.25, 0.5, 0.75, 1.0])
