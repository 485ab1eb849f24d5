"""A single score table's reads equal the row functions' floats, to the bit.

``auc_from_table``, ``ap_from_table`` and ``uncertainty.delong`` (what a ``ROCAUC`` or
``AveragePrecision`` state reads) take a one-row path on 1-D arrays and scalars, and
``AveragePrecision.interval`` takes ``ap_interval`` on floats; ``Sliced`` reads many tables as
the rows of one array (``auc_of_rows``, ``ap_of_rows``, ``delong_rows``, ``ap_intervals``).
These tests hold the one-row paths to the row functions on arrays of two or more rows
(``repr``), over seeded random tables: counts and weights, ties, exact stores (``lo is hi``),
one class only, one or two entries, AUCs near 1, tiny, huge and empty weights, and rows longer
than einsum's buffer (``row_dots``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import streammetrics as sm
from streammetrics import uncertainty
from streammetrics._intervals import ap_interval, ap_intervals
from streammetrics.states import score_tables
from streammetrics.states._delong_rows import delong_row, delong_rows
from streammetrics.states._row_sums import EINSUM_BUFFER, row_dots
from streammetrics.wrappers import _slice_table


def _table(rng: np.random.Generator, size: int, kind: str) -> tuple[np.ndarray, ...]:
    """``(lo, hi, pos, neg)`` of ``size`` entries ascending by score, of one ``kind``."""
    lo = np.sort(rng.random(size))
    spread = rng.random() < 0.7
    hi = np.where(rng.random(size) < rng.uniform(0.2, 1.0), lo + 1e-4, lo) if spread else lo
    if kind == "exact":
        hi = lo  # (an exact store's lo and hi are one array)
    top = int(rng.choice([2, 5, 50, 3_000_000]))  # (past 2**20: the harmonic steps' logs)
    pos = rng.integers(0, top, size)
    neg = rng.integers(0, top, size)
    if rng.random() < 0.3:  # an AUC near 1: the positives above the negatives
        cut = int(rng.integers(0, size + 1))
        pos[:cut], neg[cut:] = 0, 0
    if rng.random() < 0.1:  # one class only, or (rarely) none
        (pos if rng.random() < 0.5 else neg)[:] = 0
    if rng.random() < 0.1:  # empty entries first (the ties' denominators are 0 there)
        pos[: size // 3], neg[: size // 3] = 0, 0
    if kind in ("float", "tiny", "huge"):
        scale = {"float": 1.0, "tiny": 1e-250, "huge": 1e300}[kind]
        pos = pos * rng.random(size) * scale
        neg = neg * rng.random(size) * (scale if rng.random() < 0.7 else 1.0)
    return lo, hi, pos, neg


def _rows(rng: np.random.Generator, table: tuple[np.ndarray, ...], kind: str) -> tuple:  # type: ignore[type-arg]
    """The table as one row of a two- or three-row array beside other tables of its length,
    and that row's index."""
    size = len(table[0])
    others = [_table(rng, size, kind) for _ in range(int(rng.integers(1, 3)))]
    at = int(rng.integers(0, len(others) + 1))
    every = [*others[:at], table, *others[at:]]
    return tuple(np.stack([t[i] for t in every]) for i in range(4)), at


def _sizes(rng: np.random.Generator, i: int) -> int:
    if i < 2:  # (longer than einsum's buffer)
        return int(rng.integers(8000, 12_000))
    return int(rng.choice([1, 2, 3, 5, 10, int(rng.integers(4, 60)), int(rng.integers(60, 2000))]))


@pytest.mark.parametrize("kind", ["int", "float", "exact", "tiny", "huge"])
@pytest.mark.parametrize("seed", range(3))
def test_one_table_reads_are_the_rows_floats(kind: str, seed: int) -> None:
    rng = np.random.default_rng([seed, len(kind)])
    for i in range(150):
        table = _table(rng, _sizes(rng, i), kind)
        (lo, hi, pos, neg), at = _rows(rng, table, kind)
        with np.errstate(all="raise"):  # (the one-row paths keep their own errstate)
            one = (
                score_tables.auc_from_table(*table),
                score_tables.ap_from_table(*table),
                uncertainty.delong(table[2], table[3]),
            )
        rows = (
            score_tables.auc_of_rows(lo, hi, pos, neg),
            score_tables.ap_of_rows(lo, hi, pos, neg),
            delong_rows(pos, neg),
        )
        for got, (values, extras) in zip(one, rows, strict=True):
            assert repr(got) == repr((float(values[at]), float(extras[at])))
        # and a one-row array, as a pack holding one table of a length reads it
        single = score_tables.auc_of_rows(*(x[at : at + 1] for x in (lo, hi, pos, neg)))
        assert repr(one[0]) == repr((float(single[0][0]), float(single[1][0])))


def test_one_table_edges() -> None:
    empty = np.zeros(0)
    nan_pair = repr((math.nan, math.nan))
    assert repr(score_tables.auc_from_table(empty, empty, empty, empty)) == nan_pair
    assert repr(score_tables.ap_from_table(empty, empty, empty, empty)) == nan_pair
    assert repr(uncertainty.delong(empty, empty)) == nan_pair
    # other dtypes than a store's (int64, float64) take the rows' path
    assert delong_row(np.array([1, 2], dtype=np.int32), np.array([2, 1], dtype=np.int32)) is None
    small = uncertainty.delong(np.array([1, 2], dtype=np.int32), np.array([2, 1], dtype=np.int32))
    assert repr(small) == repr(uncertainty.delong(np.array([1, 2]), np.array([2, 1])))
    lo = np.array([0.1, 0.2])
    tiny = np.array([1e-300, 3e-300])
    assert score_tables._auc_row(lo, lo, tiny, tiny) is None  # (scaled by the rows' path)
    assert score_tables.auc_from_table(lo, lo, tiny, tiny) == (0.5, 0.0)


@pytest.mark.parametrize("seed", range(3))
def test_ap_interval_is_the_arrays(seed: int) -> None:
    rng = np.random.default_rng(seed)
    many = 4000
    ap = rng.choice([0.0, 1.0, math.nan, 1e-300, 1.0 - 1e-16], many)
    ap = np.where(rng.random(many) < 0.8, rng.random(many) ** rng.uniform(0.1, 8, many), ap)
    widen = np.where(rng.random(many) < 0.5, 0.0, rng.random(many) * 0.1)
    big_p = np.where(rng.random(many) < 0.9, rng.integers(0, 10**6, many), rng.random(many) * 2)
    big_n = rng.choice([0.5, 1.0, 2.0, 1e300, math.inf], many)
    for level in (0.95, 0.6, 1e-9):
        low, high = ap_intervals(ap, widen, big_p, big_n, level)
        for i in range(many):
            one = ap_interval(
                float(ap[i]), float(widen[i]), float(big_p[i]), float(big_n[i]), level
            )
            assert repr(one) == repr((float(low[i]), float(high[i])))


@pytest.mark.parametrize("size", [8000, EINSUM_BUFFER, EINSUM_BUFFER + 1, 20_000])
def test_row_dots_sum_rows_whole(size: int) -> None:
    rng = np.random.default_rng(size)
    for rows in (2, 3, 7):
        a = rng.random((rows, size)) * rng.integers(1, 100, (rows, size))
        b = rng.random((rows, size))
        got = row_dots(a, b)
        alone = [np.einsum("i,i->", x, y) for x, y in zip(a, b, strict=True)]
        assert repr(got.tolist()) == repr([float(x) for x in alone])
        assert repr(got[1]) == repr(row_dots(a[1:2], b[1:2])[0])
    if size <= EINSUM_BUFFER:  # (there, einsum itself sums each row whole)
        assert np.array_equal(np.einsum("ij,ij->i", a, b), got)


def test_packed_slices_of_long_tables_read_as_their_states(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Weighted ``ROCAUC`` slices whose tables hold more than 8,192 entries, packed as the rows
    of one array: up to 0.8.24 their values and intervals were off their states' in the last
    bits (einsum summed each row a buffer at a time)."""
    monkeypatch.setattr(
        _slice_table, "READ_PACK_FROM", dict.fromkeys(_slice_table.READ_PACK_FROM, 2)
    )
    rng = np.random.default_rng(0)
    slices, entries = 3, 9000
    scores = np.tile(1.0 / (1.0 + np.exp(-np.linspace(-2.0, 2.0, entries))), slices)
    y = (rng.random(len(scores)) < scores).astype(int)
    by = np.repeat(np.arange(slices), entries)
    weights = rng.uniform(0.1, 2.0, len(scores))
    s = sm.Sliced(sm.ROCAUC(resolution=4096)).update(y, scores, by=by, sample_weight=weights)
    s = sm.loads(s.to_bytes())
    assert {len(s[k].hist.pos) for k in s.keys()} == {entries}  # (one length: one array)
    values = {k: s[k].compute() for k in s.keys()}
    intervals = {k: s[k].interval() for k in s.keys()}
    assert repr(s.compute()) == repr(values)
    assert repr(s.intervals()) == repr(intervals)


def test_integer_running_sums_only_where_exact() -> None:
    """Counts summed as integers give the float sums' floats only while every partial sum is
    an exact float: a total that rounds to 2**53 takes the float sums, as 0.8.25 did, for AP;
    the AUC of counts takes exact integer sums there (0.8.27): its numerator rounded once."""
    from fractions import Fraction

    from streammetrics.states.score_tables import ap_from_table, auc_from_table

    lo = hi = np.array([0.1, 0.2, 0.3, 0.4])
    pos = np.array([1, 2, 3, 4])
    neg = np.array([2**53, 1, 1, 0])
    counts = ap_from_table(lo, hi, pos, neg)
    assert repr(counts) == repr(ap_from_table(lo, hi, pos * 1.0, neg * 1.0))
    value, bound = auc_from_table(lo, hi, pos, neg)
    below = [Fraction(2**53, 2), 2**53 + Fraction(1, 2), 2**53 + 1 + Fraction(1, 2), 2**53 + 2]
    ranked = sum(p * b for p, b in zip([1, 2, 3, 4], below, strict=True))  # (exact, rounded once)
    assert (value, bound) == (float(ranked) / (10.0 * float(2**53 + 2)), 0.0)


@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.float32, np.float16])
def test_placements_are_cum_less_half_of_every_dtype(dtype: type) -> None:
    """DeLong's placements ``cum - w / 2``: the floats of numpy's mixed subtract for every
    dtype ``delong`` takes, subnormal halves included (narrow floats halve in their dtype)."""
    from streammetrics.states._delong_rows import _less_half

    rng = np.random.default_rng(1)
    if np.dtype(dtype).kind == "i":
        w = rng.integers(0, 9, (3, 200)).astype(dtype)
    else:
        tiny = np.finfo(dtype).smallest_subnormal
        w = (rng.integers(0, 9, (3, 200)) * tiny).astype(dtype)
        w[:, ::7] = rng.random((3, 29)).astype(dtype)
    cum = np.cumsum(w, axis=1)
    want = np.subtract(cum, 0.5 * w, dtype=np.float64)
    assert _less_half(cum, w).tobytes() == want.tobytes()
    assert _less_half(cum[0], w[0]).tobytes() == want[0].tobytes()
