"""Property tests of the contingency-count state: merge laws hold byte for byte."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streammetrics import _codec
from streammetrics.states import _cells
from streammetrics.states.contingency import ContingencyCounts

int_labels = st.integers(-3, 1000)
str_labels = st.sampled_from(["", "a", "b", "Zeta", "ü", "long label"])


def columns(labels: st.SearchStrategy) -> st.SearchStrategy:
    return st.lists(st.tuples(labels, labels, st.integers(0, 3)), max_size=40)


def build(rows: list, shared: bool, weighted: bool) -> ContingencyCounts:
    block = ContingencyCounts(shared=shared)
    if rows:
        a = np.asarray([r[0] for r in rows])
        b = np.asarray([r[1] for r in rows])
        w = np.asarray([float(r[2]) for r in rows]) if weighted else None
        a = a.astype(np.int64) if a.dtype.kind == "i" else a
        b = b.astype(np.int64) if b.dtype.kind == "i" else b
        block = block.merged(block.batch(a, b, w, ("a", "b")))
    return block


def wire(block: ContingencyCounts) -> bytes:
    return _codec.encode(block.to_wire())


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(columns(int_labels), columns(str_labels)),
    st.lists(st.integers(0, 40), max_size=4),
    st.booleans(),
    st.booleans(),
)
def test_any_split_merged_in_any_order_is_byte_identical(rows, cuts, shared, weighted) -> None:
    whole = build(rows, shared, weighted)
    bounds = [0, *sorted(c for c in cuts if c <= len(rows)), len(rows)]
    parts = [build(rows[i:j], shared, weighted) for i, j in itertools.pairwise(bounds)]
    forward = ContingencyCounts(shared=shared)
    for p in parts:
        forward = forward.merged(p)
    backward = ContingencyCounts(shared=shared)
    for p in reversed(parts):
        backward = p.merged(backward)
    assert wire(forward) == wire(whole)
    assert wire(backward) == wire(whole)
    assert wire(whole.from_wire(whole.to_wire())) == wire(whole)


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(columns(int_labels), columns(str_labels)),
    st.lists(st.integers(0, 40), max_size=4),
    st.booleans(),
    st.booleans(),
    st.sampled_from([1, 4, 16, 64]),
)
def test_sparse_form_split_merge_laws(rows, cuts, shared, weighted, min_cells) -> None:
    """The same laws with tables this small allowed the sparse form: every merge path (pairwise
    in place, pairwise pure, many at once, through the wire) gives the bytes of the whole,
    across the dense/sparse boundary."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_cells, "SPARSE_MIN_CELLS", min_cells)
        whole = build(rows, shared, weighted)
        bounds = [0, *sorted(c for c in cuts if c <= len(rows)), len(rows)]
        parts = [build(rows[i:j], shared, weighted) for i, j in itertools.pairwise(bounds)]
        pure = ContingencyCounts(shared=shared)
        in_place = ContingencyCounts(shared=shared)
        for p in parts:
            pure = pure.merged(p)
            in_place.merge(p.from_wire(p.to_wire()))  # decoded: read-only arrays
        many = ContingencyCounts(shared=shared)
        many.merge_many([p.copy() for p in parts])
        assert wire(pure) == wire(whole)
        assert wire(in_place) == wire(whole)
        assert wire(many) == wire(whole)
        assert wire(whole.from_wire(whole.to_wire())) == wire(whole)
        size = len(whole.rows) * len(whole.cols)
        assert whole.sparse == _cells.wants_sparse(size, whole.filled_count())
        np.testing.assert_array_equal(whole.row_sums(), whole.table.sum(axis=1))
        np.testing.assert_array_equal(whole.col_sums(), whole.table.sum(axis=0))
        if shared:
            np.testing.assert_array_equal(whole.diagonal(), np.diagonal(whole.table))


def test_label_union_is_numpys_union_of_sorted_sets() -> None:
    """``labels.union`` inserts the few missing labels into the larger sorted set (0.8.11 hashed
    both with ``np.union1d``: 10 ms per one-sample call bringing a new label to a table of
    50,000): the same values and dtype as ``np.union1d``, strings of other widths and integer
    types included."""
    from streammetrics.states.labels import union

    rng = np.random.default_rng(0)
    for t in range(3_000):
        if t % 2:
            a = np.unique(rng.integers(-50, 50, int(rng.integers(1, 30))))
            dtype = [np.int64, np.int32, np.int8, np.uint16][t % 4]
            low = 0 if dtype is np.uint16 else -50
            b = np.unique(rng.integers(low, 50, int(rng.integers(1, 30))).astype(dtype))
        else:
            a = np.unique(
                np.array([f"x{v}" for v in rng.integers(0, 40, int(rng.integers(1, 20)))])
            )
            b = np.unique(
                np.array(
                    [f"y{v}" * (1 + t % 3) for v in rng.integers(0, 40, int(rng.integers(1, 20)))]
                )
            )
        for x, y in ((a, b), (b, a), (a, a[: len(a) // 2])):
            got, want = union(x, y), np.union1d(x, y)
            assert got.dtype == want.dtype and np.array_equal(got, want)
