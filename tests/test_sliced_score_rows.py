"""``Sliced(AveragePrecision())`` and ``Sliced(ROCAUC())`` read from their packed table, the
tables of each length as the rows of one array.

Reading 100,000 slices made one state per slice for ``AveragePrecision`` (3.4 s for
``compute()``, 1.2 s for ``intervals()``) and for weighted ``ROCAUC`` (2.4 s and 2.2 s).
``ap_of_rows``, ``auc_of_rows`` and ``delong_rows`` run the same steps on the tables of one
length as the rows of one array, and a single state calls them on one row: every slice's value
and interval must be, to the bit (``repr``), what its made state gives, over integer and float
counts, weights far below 1 (scaled by a power of two), tied scores, slices without positives
or of one row, and coarse and fine sketches.
"""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
import streammetrics.wrappers._slice_table as sliced_module
from streammetrics.states._delong_rows import delong_rows
from streammetrics.states.score_tables import ap_from_table, ap_of_rows, auc_from_table, auc_of_rows
from streammetrics.uncertainty import delong
from streammetrics.wrappers import _slice_pack
from streammetrics.wrappers._slice_pack import SlicePack

MAKERS = [
    lambda: sm.AveragePrecision(),
    lambda: sm.AveragePrecision(resolution=64),
    lambda: sm.AveragePrecision(resolution=4096),
    lambda: sm.ROCAUC(),
    lambda: sm.ROCAUC(resolution=64),
]


def _stream(make, seed: int) -> sm.Sliced:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    s = sm.Sliced(make())
    k = int(rng.integers(1, 400))
    weighted = seed % 3 != 0
    for _ in range(int(rng.integers(1, 4))):
        m = int(rng.integers(1, 5_000))
        y = (rng.random(m) < rng.uniform(0.05, 0.9)).astype(int)
        p = np.clip(0.3 * y + 0.7 * rng.random(m), 0.0, 1.0)
        if seed % 4 == 1:
            p = np.round(p, 2)  # ties
        by = rng.integers(0, k, m)
        y[by % 11 == 5] = 0  # slices without positives: nan
        kwargs = {}
        if weighted:
            w = rng.uniform(0.0, 2.0, m) * (rng.random(m) > 0.1)
            if seed % 5 == 2:
                w = w * 1e-250  # scaled by a power of two before products are taken
            kwargs["sample_weight"] = w
        s.update(y, p, by=by, **kwargs)
    return s


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("maker", range(len(MAKERS)))
def test_every_slice_reads_as_its_own_state(maker: int, seed: int, monkeypatch) -> None:
    monkeypatch.setattr(sliced_module, "PACK_MIN_SLICES", 1)
    s = _stream(MAKERS[maker], seed)
    pack = s.slices.pack()
    assert isinstance(pack, SlicePack)
    made: list[str] = []
    for name in ("materialize", "state"):
        own = getattr(SlicePack, name)
        monkeypatch.setattr(
            SlicePack, name, lambda *a, _own=own, _name=name: made.append(_name) or _own(*a)
        )
    values = s.compute()
    intervals = {level: s.intervals(level) for level in (0.95, 0.6)}
    assert made == []  # every slice read from the table
    states = s.slices.view()
    assert all(repr(values[k]) == repr(states[k].compute()) for k in states)
    for level, got in intervals.items():
        assert all(repr(got[k]) == repr(states[k].interval(level)) for k in states)


def test_small_row_blocks_give_what_one_block_gives(monkeypatch) -> None:
    monkeypatch.setattr(sliced_module, "PACK_MIN_SLICES", 1)
    s = _stream(MAKERS[0], 4)
    whole = repr((s.compute(), s.intervals()))
    again = sm.loads(s.to_bytes())
    monkeypatch.setattr(_slice_pack, "_ROW_ENTRIES", 7)
    assert repr((again.compute(), again.intervals())) == whole


def test_the_row_functions_are_the_table_functions_row_by_row() -> None:
    rng = np.random.default_rng(9)
    for size in (1, 2, 7, 8, 9, 40, 130):
        lo = np.sort(rng.random((25, size)), axis=1)
        hi = lo + (rng.random((25, size)) < 0.6) * 1e-3  # some entries one distinct score
        for pos, neg in (
            (rng.integers(0, 4, (25, size)), rng.integers(0, 4, (25, size))),
            (rng.random((25, size)), rng.random((25, size)) * 1e-230),
        ):
            rows = (
                ap_of_rows(lo, hi, pos, neg),
                auc_of_rows(lo, hi, pos, neg),
                delong_rows(pos, neg),
            )
            for j in range(25):
                one = lo[j].copy(), hi[j].copy(), pos[j].copy(), neg[j].copy()
                tables = ap_from_table(*one), auc_from_table(*one), delong(one[2], one[3])
                for (values, bounds), table in zip(rows, tables, strict=True):
                    assert repr(table) == repr((float(values[j]), float(bounds[j])))
