"""The grid mappings' fast keys against slow references.

The probability grid's one-lookup key (``ProbabilityGrid.keys_into``) against the key's
definition, ``#{j : p >= E[j]}`` over the correctly rounded grid edges, which
``np.searchsorted`` counts directly. The packed table decides the comparison with a cell's edge
by an integer carry and mirrors the side ``p > 1/2``: every place where that could be off by one
(the edges and their neighbours, both ends of every lookup cell on both sides, the subnormal
cells, -0.0, 0.5, 1.0) is checked at every resolution. The logit grid's key, whose product may
overflow to an infinity before the clip, against the clip-first definition."""

from __future__ import annotations

import numpy as np
import pytest

from streammetrics.states._grid_edges import _SUBNORMAL, _probability_cells, _sigmoid_edges
from streammetrics.states.mappings import CHUNK, RESOLUTIONS, LogitGrid, ProbabilityGrid


def _reference(x: np.ndarray, r: int) -> np.ndarray:
    return np.searchsorted(_sigmoid_edges(r)[1:-1], x, side="right")


def _cell_ends(r: int) -> np.ndarray:
    """The smallest and largest q of every lookup cell (and their neighbours), as p = q and as
    p = 1 - q (rounded: any p near a cell's end will do)."""
    shift, side, table_k, _ = _probability_cells(r)
    cells = np.arange(len(table_k) - 1 - side, dtype=np.uint64)
    first = (cells << np.uint64(shift)).view(np.float64) / _SUBNORMAL
    last = (((cells + np.uint64(1)) << np.uint64(shift)) - np.uint64(1)).view(np.float64)
    q = np.concatenate([first, last / _SUBNORMAL])
    q = np.concatenate([q, np.nextafter(q, 0.0), np.nextafter(q, 1.0)])
    q = q[(q >= 0.0) & (q <= 0.5)]
    return np.concatenate([q, 1.0 - q])


@pytest.mark.parametrize("r", RESOLUTIONS)
def test_one_lookup_keys_equal_the_definition(r):
    g = ProbabilityGrid(r)
    edges = _sigmoid_edges(r)[1:-1]
    tiny = np.array([2.0**-25, 2.0**-26, 2.0**-24, 1e-7, 1.2e-7, 5e-324, 2.2e-308, 2.0**-1022])
    special = [-0.0, 0.0, 1.0, 0.5, np.nextafter(0.5, 0.0), np.nextafter(0.5, 1.0)]
    rng = np.random.default_rng(r)
    x = np.concatenate(
        [
            edges,
            np.nextafter(edges, 0.0),
            np.nextafter(edges, 1.0),
            1.0 - edges,
            tiny,
            np.nextafter(tiny, 0.0),
            np.nextafter(tiny, 1.0),
            1.0 - tiny,
            special,
            np.nextafter(1.0, 0.0) - np.arange(64) * 2.0**-53,
            _cell_ends(r),
            rng.random(20_000),
            rng.random(20_000) ** 20,
            1.0 - rng.random(20_000) ** 20,
        ]
    )
    x = x[(x >= 0.0) & (x <= 1.0)]
    want = _reference(x, r)
    np.testing.assert_array_equal(g.keys(x), want)  # the grid's key dtype, through scratch
    got = np.empty(len(x), dtype=np.intp)  # in place, as the counting kernel asks for them
    for a in range(0, len(x), CHUNK):
        g.keys_into(x[a : a + CHUNK], got[a : a + CHUNK])
    np.testing.assert_array_equal(got, want)


def test_negative_zero_takes_the_key_of_zero_in_any_position():
    """-0.0 is the one score whose index is beyond the table (the sign bit): the clipped lookup
    must give it key 0 wherever it sits in a chunk, beside any other score."""
    g = ProbabilityGrid()
    x = np.where(np.arange(1000) % 3 == 0, -0.0, np.linspace(0.0, 1.0, 1000))
    np.testing.assert_array_equal(g.keys(x), _reference(x, 128))
    assert g.keys(np.array([-0.0]))[0] == 0


@pytest.mark.parametrize("r", RESOLUTIONS)
def test_logit_keys_equal_the_clip_first_definition(r):
    """``floor(r * x)`` is taken before the clip: a huge score's product overflows to an
    infinity, which must still land in the end bucket, as clipping ``x`` first puts it."""
    big = np.finfo(np.float64).max
    special = [big, -big, 1e308, -1e308, 2.0**1023 / r, -(2.0**1023) / r, 0.0, -0.0, 5e-324]
    edges = np.arange(-16 * r - 2, 16 * r + 3) / r
    rng = np.random.default_rng(r)
    x = np.concatenate(
        [
            special,
            edges,
            np.nextafter(edges, -np.inf),
            np.nextafter(edges, np.inf),
            rng.normal(0.0, 8.0, 20_000),
            rng.normal(0.0, 1e300, 100),
        ]
    )
    half = 16 * r
    want = np.clip(np.floor(np.clip(x, -17.0, 17.0) * r), -half - 1, half) + half + 1
    with np.errstate(over="raise"):  # the kernel's own overflow is silenced, not leaked
        np.testing.assert_array_equal(LogitGrid(r).keys(x), want)
        got = np.empty(len(x), dtype=np.intp)
        for a in range(0, len(x), CHUNK):
            LogitGrid(r).keys_into(x[a : a + CHUNK], got[a : a + CHUNK])
    np.testing.assert_array_equal(got, want)
