"""A score table's reads are the same floats read alone or as a row among others, to the bit.

``Sliced`` reads many tables as the rows of one array (``auc_of_rows``, ``delong_rows``); a
state reads its own as one row. Rows longer than einsum's buffer are summed whole by
``row_dots``, as a row alone is.
"""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.states._row_sums import EINSUM_BUFFER, row_dots
from streammetrics.wrappers import _slice_table


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
    monkeypatch.setattr(_slice_table, "READ_PACK_MIN_SLICES", 2)
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
