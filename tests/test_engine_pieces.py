"""Spark's map side of a keyed metric: rows cut by key hash first, then one piece per share.

``partition_pieces`` must give, byte for byte, what splitting the whole partition's state gives
(the path of 0.8.17 and before), however the partition arrives in batches and however many
rows it holds back before feeding its pieces.
"""

from __future__ import annotations

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

import streammetrics as sm  # noqa: E402
from streammetrics import _engine_columns, _engines  # noqa: E402


def _batches(frame, size: int) -> list:
    return [frame.iloc[i : i + size].reset_index(drop=True) for i in range(0, len(frame), size)]


def _frame(n: int, users: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return pd.DataFrame(
        {
            "y": y,
            "s": np.round(0.7 * rng.random(n) + 0.3 * y, 2),  # ties within users
            "w": rng.integers(1, 4, n).astype(float),
            "user": rng.integers(-(10**12), 10**12, users)[rng.integers(0, users, n)],
            "name": np.char.add("u", rng.integers(0, users, n).astype(str)),
            "rel": rng.integers(0, 4, n).astype(float),
        }
    )


@pytest.mark.parametrize("hold", [1, 700, 1 << 21])
@pytest.mark.parametrize(
    ("metric", "positional", "keywords"),
    [
        (sm.GAUC(), ["y", "s", "user"], {}),
        (sm.GAUC(max_exact=6), ["y", "s", "name"], {}),
        (sm.GAUC(), [], {"y_true": "y", "y_score": "s", "groups": "user", "sample_weight": "w"}),
        (sm.ranking.NDCG(k=3), [], {"query_ids": "name", "relevance": "rel", "scores": "s"}),
    ],
)
def test_pieces_equal_the_split_of_the_whole_partition(metric, positional, keywords, hold):
    frame = _frame(3_000, 150)
    template = metric.to_bytes()
    whole = metric.copy()
    for batch in _batches(frame, 500):
        _engine_columns._update(whole, batch, positional, keywords)
    for parts in (1, 3, 8):
        got = _engines.partition_pieces(
            iter(_batches(frame, 500)), template, positional, keywords, parts, hold=hold
        )
        assert got == [piece.to_bytes() for piece in whole.split(parts)]
    # An empty partition (or one of empty batches) gives empty pieces.
    empty = _engines.partition_pieces(iter([frame.head(0)]), template, positional, keywords, 4)
    assert empty == [template] * 4


def test_a_bad_value_names_its_column_and_what_its_row_number_counts():
    frame = _frame(400, 20)
    frame.loc[250, "s"] = np.nan
    template = sm.GAUC().to_bytes()
    with pytest.raises(sm.InputError, match="column 's', y_score: values must be finite") as e:
        _engines.partition_pieces(iter(_batches(frame, 100)), template, ["y", "s", "user"], {}, 4)
    assert "one share of the keys" in str(e.value)
    with pytest.raises(TypeError, match="not keyed"):
        _engines.partition_pieces(iter([frame]), sm.ROCAUC().to_bytes(), ["y", "s"], {}, 2)


def test_batches_of_other_dtypes_and_a_bad_key():
    """Batches of one partition whose columns differ in kind (int64 ids beside float64 ones, a
    uint64 batch beside an int64 one) are fed apart: concatenated, numpy made them float64 and
    rounded ids past 2**53 (a review of the first cut). A bad key's row number counts within
    its batch, and the error says so only when it gives one."""
    big = 2**60
    a = pd.DataFrame({"y": [0, 1, 1], "s": [0.1, 0.2, 0.3], "g": np.array([big + 1, big + 3, 5])})
    b = pd.DataFrame({"y": [1, 0], "s": [0.4, 0.5], "g": np.array([1.0, 2.0])})
    c = pd.DataFrame({"y": [1, 0], "s": [0.6, 0.7], "g": np.array([big + 1, 7], dtype=np.uint64)})
    template = sm.GAUC().to_bytes()
    for frames in ([a, b], [b, a], [a, c]):
        whole = sm.GAUC()
        for f in frames:
            _engine_columns._update(whole, f, ["y", "s", "g"], {})
        got = _engines.partition_pieces(iter(frames), template, ["y", "s", "g"], {}, 3)
        assert got == [p.to_bytes() for p in whole.split(3)]
    bad = [a, pd.DataFrame({"y": [0, 1], "s": [0.1, 0.2], "g": [1.0, np.nan]})]
    with pytest.raises(sm.InputError, match="found nan at 1") as e:
        _engines.partition_pieces(iter(bad), template, ["y", "s", "g"], {}, 3)
    assert "within one batch of one partition" in str(e.value)
    missing = [pd.DataFrame({"y": [0, 1], "s": [0.1, 0.2], "g": [None, "a"]})]
    with pytest.raises(sm.InputError, match="column 'g'") as e:
        _engines.partition_pieces(iter(missing), template, ["y", "s", "g"], {}, 3)
    assert "row numbers" not in str(e.value)
