"""The grid counting kernel (``count_grid``) and its inputs.

The score metrics' update counts a numpy bool label column as it is (uint8 added to the keys, no
int64 copy): the state must be byte for byte the one of the same labels as 0/1 integers, in
every mode, weighted or not, over several chunks and onto a state already held. A batch's short
last piece joins the chunk before it, except for weighted counts (float sums keep their breaks).
"""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.states._bucket_batch import _pieces
from streammetrics.states.mappings import CHUNK, SCRATCH_ROWS


def _batches(seed: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for n in (CHUNK + 1234, 3 * CHUNK + 7, 9):
        y = rng.random(n) < 0.3
        p = 1.0 / (1.0 + np.exp(-rng.normal(0.9 * y - 1.0, 1.0)))
        p[:8] = [-0.0, 0.0, 1.0, 0.5, 5e-324, 1e-300, 1.0 - 2.0**-53, np.nextafter(0.5, 1.0)]
        w = rng.integers(0, 4, n).astype(np.float64) * 0.37
        out.append((y, p, w))
    return out


@pytest.mark.parametrize(
    "make",
    [
        lambda: sm.ROCAUC(),
        lambda: sm.ROCAUC(score_type="logit"),
        lambda: sm.ROCAUC(score_type="real"),
        lambda: sm.ROCAUC(exact=True),
        lambda: sm.AveragePrecision(),
    ],
    ids=["probability", "logit", "real", "exact", "ap"],
)
@pytest.mark.parametrize("weighted", [False, True])
def test_bool_labels_give_the_bytes_of_integer_labels(make, weighted):
    as_bool, as_int = make(), make()
    for y, p, w in _batches(3):
        extra = (w,) if weighted else ()
        as_bool.update(y, p, *extra)
        as_int.update(y.astype(np.int64), p, *extra)
    assert as_bool.to_bytes() == as_int.to_bytes()
    assert as_bool.compute() == as_int.compute()


def test_labels_are_not_modified_nor_kept():
    """The bool column is read, never written, and the state holds no view of it."""
    y = np.array([True, False, True, True])
    m = sm.ROCAUC().update(y, np.array([0.9, 0.1, 0.6, 0.4]))
    before = m.to_bytes()
    y[:] = False
    assert m.to_bytes() == before
    np.testing.assert_array_equal(y, False)


def test_unweighted_pieces_are_the_fewest_even_ones_weighted_break_at_chunks():
    assert _pieces(100_000, whole_chunks=False) == [(0, 50_000), (50_000, 100_000)]
    assert _pieces(SCRATCH_ROWS, whole_chunks=False) == [(0, SCRATCH_ROWS)]
    assert len(_pieces(SCRATCH_ROWS + 1, whole_chunks=False)) == 2
    assert _pieces(CHUNK + 1, whole_chunks=True) == [(0, CHUNK), (CHUNK, CHUNK + 1)]
    assert _pieces(100, whole_chunks=False) == [(0, 100)]
    assert _pieces(0, whole_chunks=False) == []
    for n in (1, CHUNK, CHUNK + 1, SCRATCH_ROWS - 1, SCRATCH_ROWS + 1, 5 * CHUNK + 3):
        for whole in (False, True):
            pieces = _pieces(n, whole_chunks=whole)
            assert [a for a, _ in pieces] == [0, *(b for _, b in pieces[:-1])]
            assert pieces[-1][1] == n
            assert max(b - a for a, b in pieces) <= SCRATCH_ROWS
            if whole:
                assert all(a % CHUNK == 0 for a, _ in pieces)
            else:
                sizes = [b - a for a, b in pieces]
                assert max(sizes) - min(sizes) <= 1
                assert len(pieces) == -(-n // SCRATCH_ROWS)


@pytest.mark.parametrize("score_type", ["probability", "logit"])
def test_a_joined_last_piece_counts_as_separate_batches_do(score_type):
    """Integer counts and per-bucket extremes do not depend on where the pieces break: one
    batch cut into even pieces equals the same rows in batches of ``CHUNK`` (every piece its
    own)."""
    rng = np.random.default_rng(11)
    n = 2 * CHUNK + 999
    y = rng.random(n) < 0.4
    p = rng.random(n) ** 3
    x = p if score_type == "probability" else np.log(p / (1.0 - p))
    whole = sm.ROCAUC(score_type=score_type).update(y, x)
    pieces = sm.ROCAUC(score_type=score_type)
    for a in range(0, n, CHUNK):
        pieces.update(y[a : a + CHUNK], x[a : a + CHUNK])
    assert whole.to_bytes() == pieces.to_bytes()
