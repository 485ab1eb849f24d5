"""``states._order.lex_order``: the order of ``np.lexsort`` (most significant key first), up
to rows equal in every key, on the paths it takes: integer ranges, floats, strings, the
fallback when packed ranks would overflow."""

from __future__ import annotations

import numpy as np
import pytest

from streammetrics.states import _order
from streammetrics.states._order import lex_order


def _same_rows(keys, order):
    expected = np.lexsort(tuple(reversed(keys)))
    for k in keys:
        assert np.array_equal(k[order], k[expected])


@pytest.mark.parametrize("n", [10, 20_000, 100_000])
def test_matches_lexsort(n):
    rng = np.random.default_rng(n)
    q = rng.integers(0, n // 3 + 1, n)
    s = np.round(rng.normal(size=n), 2)  # many ties
    s[: n // 10] = -0.0
    s[n // 10 : n // 5] = 0.0  # -0.0 and 0.0 rank together, as lexsort compares them
    r = rng.integers(0, 4, n)
    order = lex_order([q, s, r])
    assert sorted(order.tolist()) == list(range(n))
    _same_rows([q, s, r], order)
    _same_rows([q, -s], lex_order([q, -s]))


def test_wide_integers_strings_and_overflow(monkeypatch):
    monkeypatch.setattr(_order, "SMALL", 4)
    rng = np.random.default_rng(1)
    n = 5_000
    wide = rng.integers(-(2**62), 2**62, n)  # a range too large to shift: ranked by a sort
    names = np.array([f"q{v}" for v in rng.integers(0, 300, n)])
    s = rng.random(n)
    _same_rows([wide, s], lex_order([wide, s]))
    _same_rows([names, s], lex_order([names, s]))
    # packed ranks past the limit: the lexsort fallback
    monkeypatch.setattr(_order, "_LIMIT", 1000)
    _same_rows([wide, s, -s], lex_order([wide, s, -s]))
