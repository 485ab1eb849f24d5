"""The speed paths of the grid counting kernel, pinned against their slower equivalents.

* ``ProbabilityGrid.checked_keys_into`` (what ``count_grid`` calls: scores checked to lie in
  [0, 1]) mirrors the side ``p > 1/2`` with the float mask ``rint(x) * F``: on [0, 1], ``-0.0``
  included, its keys must be ``keys_into``'s at every resolution. ``keys_into`` itself keeps the
  sign-of-``0.5 - x`` mask, whose keys for scores outside [0, 1] the decoder relies on.
* ``_extremes`` returns early when no row lies outside its bucket's range: the table must be
  what ``ufunc.at`` over every row gives.
"""

from __future__ import annotations

import numpy as np
import pytest

from streammetrics.states._bucket_batch import _extremes
from streammetrics.states._grid_edges import _flip_float, _probability_table, _sigmoid_edges
from streammetrics.states.mappings import CHUNK, RESOLUTIONS, LogitGrid, ProbabilityGrid


@pytest.mark.parametrize("r", RESOLUTIONS)
def test_checked_keys_equal_keys_into_on_zero_one(r):
    _, flip, _ = _probability_table(r)
    assert np.float64(_flip_float(flip)).view(np.uint64) == flip
    assert 0 < (flip >> 52) & 0x7FF < 0x7FF  # a normal float: 1.0 * F keeps every bit
    edges = _sigmoid_edges(r)[1:-1]
    rng = np.random.default_rng(r)
    special = [-0.0, 0.0, 0.5, 1.0, np.nextafter(0.5, 0.0), np.nextafter(0.5, 1.0), 5e-324]
    tiny = np.array([2.0**-25, 2.0**-26, 2.0**-24, 1e-7, 1.2e-7, 2.2e-308])
    x = np.concatenate(
        [
            special,
            edges,
            np.nextafter(edges, 0.0),
            np.nextafter(edges, 1.0),
            tiny,
            1.0 - tiny,
            np.nextafter(1.0, 0.0) - np.arange(64) * 2.0**-53,
            rng.random(10_000),
            rng.random(10_000) ** 30,
            1.0 - rng.random(10_000) ** 30,
        ]
    )
    x = x[(x >= 0.0) & (x <= 1.0)]
    x[rng.integers(0, len(x), 50)] = -0.0  # -0.0 anywhere in a chunk
    g = ProbabilityGrid(r)
    want = np.empty(len(x), dtype=np.intp)
    got = np.empty(len(x), dtype=np.intp)
    narrow = np.empty(len(x), dtype=g.key_dtype)  # through the scratch copy
    for a in range(0, len(x), CHUNK):
        g.keys_into(x[a : a + CHUNK], want[a : a + CHUNK])
        g.checked_keys_into(x[a : a + CHUNK], got[a : a + CHUNK])
        g.checked_keys_into(x[a : a + CHUNK], narrow[a : a + CHUNK])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(narrow, want)
    assert want[x == 0.0].max() == 0 and want[x == 1.0].min() == 32 * r + 1


def test_keys_outside_zero_one_are_still_outside_the_grid():
    """The decoder refuses a forged bucket by its key: ``keys`` (not the checked path) must
    keep putting such scores outside the grid."""
    g = ProbabilityGrid()
    keys = g.keys(np.array([-0.5, 5.0, 1.0 + 2.0**-52]))
    assert ((keys < 0) | (keys >= g.size)).all()


def test_other_mappings_count_through_keys_into():
    g = LogitGrid()
    x = np.linspace(-20.0, 20.0, 1001)
    a, b = np.empty(len(x), dtype=np.intp), np.empty(len(x), dtype=np.intp)
    np.testing.assert_array_equal(g.checked_keys_into(x, a), g.keys_into(x, b))


@pytest.mark.parametrize("inside", [True, False])
def test_extremes_early_return_matches_ufunc_at(inside):
    rng = np.random.default_rng(3)
    size = 50
    k = rng.integers(0, size, 5000).astype(np.intp)
    xs = (k + rng.random(5000)) / size
    lo, hi = np.full(size, np.inf), np.full(size, -np.inf)
    np.minimum.at(lo, k, xs)
    np.maximum.at(hi, k, xs)
    rows = rng.integers(0, 5000, 3000)
    k2, x2 = k[rows], xs[rows].copy()  # inside every bucket's range: nothing to do
    if not inside:
        x2[:2] = [-1.0, 2.0]  # two rows beyond their bucket's range
    want_lo, want_hi = lo.copy(), hi.copy()
    np.minimum.at(want_lo, k2, x2)
    np.maximum.at(want_hi, k2, x2)
    _extremes(lo, hi, k2.copy(), x2, fresh=False)
    np.testing.assert_array_equal(lo, want_lo)
    np.testing.assert_array_equal(hi, want_hi)
