"""``states._order.lex_order``: the order of ``np.lexsort`` (most significant key first), up
to rows equal in every key, on the paths it takes: integer ranges, floats, strings, the
fallback when packed ranks would overflow."""

from __future__ import annotations

import numpy as np
import pytest

from streammetrics.states import _order
from streammetrics.states._order import grouped_order, lex_order, small_levels
from streammetrics.states.queries import canonical


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


def _scores(rng, n, kind):
    if kind == "random":
        return rng.random(n)
    if kind == "ties":  # many ties, negatives and zeros
        return np.round(rng.normal(size=n), 2) + 0.0
    if kind == "close":  # equal in the composite's top bits, distinct: the exact fix-up
        return 0.5 + rng.integers(0, 3, n) * 1e-13
    return rng.choice([-1e300, -1.0, 0.0, 1e-300, 5e-324, 1.0, 3.5, 1e308], n)


@pytest.mark.parametrize("kind", ["random", "ties", "close", "extremes"])
@pytest.mark.parametrize("queries", [3, 5_000, 40_000])
def test_canonical_by_one_composite_equals_lex_order(kind, queries):
    """The rows ``canonical`` gives through ``grouped_order`` (graded relevance) are the rows
    of ``lex_order``'s three sorts, for integer and string ids, fresh or as two sorted runs."""
    rng = np.random.default_rng(queries)
    n = 30_000
    for q in (rng.integers(0, queries, n) * 7919, rng.integers(0, queries, n).astype(str)):
        s = _scores(rng, n, kind)
        r = rng.integers(0, 5, n).astype(float)
        want = lex_order([q, s, r])
        for got in (canonical(q, r, s), _joined(q, r, s)):
            for column, expected in zip(got, (q, r, s), strict=True):
                assert np.array_equal(column, expected[want])


def _joined(q, r, s):
    h = len(q) // 2
    a, b = canonical(q[:h], r[:h], s[:h]), canonical(q[h:], r[h:], s[h:])
    return canonical(*(np.concatenate([x, y]) for x, y in zip(a, b, strict=True)), runs=True)


def test_grouped_order_declines_what_it_cannot_order():
    rng = np.random.default_rng(0)
    n = 1_000
    codes, s, r = rng.integers(0, 10, n), rng.random(n), rng.integers(0, 3, n)
    order = grouped_order(codes, 10, s, r, 3)
    assert order is not None
    _same_rows([codes, s, r], order)
    s[5] = -0.0  # lex_order ties it with 0.0; the composite would not
    assert grouped_order(codes, 10, s, r, 3) is None
    assert grouped_order(codes, 2**40, rng.random(n), r, 3) is None  # too few score bits left
    assert small_levels(np.array([0.0, 1.5])) is None
    assert small_levels(np.array([0.0, 4096.0])) is None
    assert small_levels(np.array([0.0, np.nan])) is None
    levels, count = small_levels(np.array([0.0, 3.0, 1.0]))
    assert levels.tolist() == [0, 3, 1] and count == 4
