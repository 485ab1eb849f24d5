"""States no update can make are refused by ``loads`` (found by review: each decoded, and broke
later, in ``compute``, a merge, or the state's own bytes), and a ``Sliced`` merge refused by
one slice changes nothing."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
from streammetrics import _codec
from streammetrics._codec import COUNT_LIMIT, CountOverflowError
from streammetrics.errors import StateDecodeError


def _forged(metric: sm.Metric, change) -> bytes:  # type: ignore[no-untyped-def]
    tree = _codec.decode(metric.to_bytes())
    change(tree["state"])
    return _codec.encode(tree)


@pytest.mark.parametrize("cls", [sm.ROCAUC, sm.AveragePrecision, sm.ROCCurve, sm.PRCurve])
@pytest.mark.parametrize("score", [5.0, -0.5, 1.0 + 2**-52])
def test_grid_buckets_outside_the_scores_are_refused(cls, score) -> None:  # type: ignore[no-untyped-def]
    """A probability grid's key for a score outside [0, 1] lies outside the grid: the curves
    indexed their bucket edges with it (``IndexError``), the AUCs ranked it silently."""
    m = cls().update([0, 1, 0, 1], [0.1, 0.2, 0.6, 0.9])

    def change(state: dict) -> None:
        for end in ("lo", "hi"):
            state["hist"][end] = np.array([0.1, 0.2, 0.6, score])

    with pytest.raises(StateDecodeError, match="outside the grid"):
        sm.loads(_forged(m, change))
    assert sm.loads(m.to_bytes()) == m  # the edges themselves load: 0.0 and 1.0
    edges = cls().update([0, 1], [0.0, 1.0])
    assert sm.loads(edges.to_bytes()) == edges


@pytest.mark.parametrize("bad", [5.0, -3.0, 1e300])
def test_gauc_exact_scores_outside_zero_one_are_refused(bad: float) -> None:
    """An exact entry's key is its score: outside [0, 1] (probability scores) it loaded, and
    once its group passed ``max_exact`` it was bucketed outside the grid, so the merged
    state's own bytes were refused."""
    a = sm.GAUC(max_exact=4).update([0, 1], [0.2, 0.7], groups=[7, 7])

    def change(state: dict) -> None:
        state["scores"]["key"] = np.sort(np.array([0.7, bad]))

    with pytest.raises(StateDecodeError, match=r"outside \[0, 1\]"):
        sm.loads(_forged(a, change))
    logit = sm.GAUC(score_type="logit").update([0, 1], [-3.0, 5.0], groups=[1, 1])
    assert sm.loads(logit.to_bytes()) == logit  # any finite score, for logits


@pytest.mark.parametrize("count", [0, 1, 1000])
def test_gauc_count_is_the_rows_its_groups_hold(count: int) -> None:
    """``count=0`` over held groups made ``compute`` nan and a merge drop the state."""
    a = sm.GAUC().update([0, 1, 0, 1], [0.2, 0.7, 0.4, 0.9], groups=[1, 1, 2, 2])

    def change(state: dict) -> None:
        state["count"] = count

    with pytest.raises(StateDecodeError, match="rows the groups hold"):
        sm.loads(_forged(a, change))
    weighted = sm.GAUC().update([0, 1], [0.2, 0.7], groups=[1, 1], sample_weight=[0.0, 2.0])
    assert sm.loads(weighted.to_bytes()) == weighted  # zero-weight rows are rows too


@pytest.mark.parametrize("others", [1, 2])
def test_a_sliced_merge_refused_by_one_slice_changes_nothing(others: int) -> None:
    """Slice ``b`` near the count bound: its merge was refused after slice ``a``'s went
    through, which stayed merged (the state half-changed). Now refused before any slice
    changes (the slices' rows add up to the state's count, checked on decode)."""
    s = sm.Sliced(sm.Accuracy()).update([1, 0, 1, 1], [1, 1, 1, 0], by=["a", "a", "b", "b"])

    def change(state: dict) -> None:  # slice b as if it had counted 2**53 - 2 rows
        inner = state["slices"][1][1]["state"]
        inner["count"] = COUNT_LIMIT - 2
        inner["counts"]["table"][1, 1] = COUNT_LIMIT - 3
        inner["weight_sq"] = float(COUNT_LIMIT - 2)
        state["count"] = COUNT_LIMIT  # slice a's 2 rows and b's

    m = sm.loads(_forged(s, change))
    before = m.to_bytes()
    with pytest.raises(CountOverflowError):
        m.merge(*[sm.loads(_forged(s, change)) for _ in range(others)])
    assert m.to_bytes() == before
    assert m["a"].count == 2
    small = sm.Sliced(sm.Accuracy()).update([1, 1], [1, 0], by=["a", "c"])
    with pytest.raises(CountOverflowError):
        m.merge(small)  # the whole is at the bound too
    assert m.to_bytes() == before
    assert (small + sm.loads(_forged(s, lambda state: None))).keys() == ["a", "b", "c"]


def test_a_cut_off_past_the_count_bound_is_refused() -> None:
    """``k = 2**63`` loaded, and ``compute`` raised ``OverflowError``."""
    m = sm.ranking.PrecisionAtK(k=3).update([1, 1], [1.0, 0.0], [0.3, 0.2])
    tree = _codec.decode(m.to_bytes())
    tree["config"]["k"] = 2**63
    with pytest.raises(StateDecodeError, match="k: must be from 1"):
        sm.loads(_codec.encode(tree))
    with pytest.raises(sm.InputError, match="k: must be from 1"):
        sm.ranking.NDCG(k=2**53 + 1)


@pytest.mark.parametrize(
    "make",
    [
        lambda: sm.ROCAUC().update([0, 1], [0.2, 0.7]),
        lambda: sm.Accuracy().update([0, 1], [0, 0]),
        lambda: sm.MeanSquaredError().update([1.0, 2.0], [1.5, 2.5]),
        lambda: sm.ranking.NDCG().update([1, 1], [1.0, 0.0], [0.3, 0.2]),
        lambda: sm.Sliced(sm.Accuracy()).update([1, 0], [1, 1], by=["a", "b"]),
    ],
)
def test_a_count_of_zero_over_data_is_refused(make) -> None:  # type: ignore[no-untyped-def]
    """``count == 0`` means the freshly constructed state (merges skip such operands): data
    under it would be lost silently (``ROCAUC`` loaded it, ``compute`` gave nan)."""
    m = make()

    def change(state: dict) -> None:
        state["count"] = 0

    with pytest.raises(StateDecodeError):
        sm.loads(_forged(m, change))
    blank = m.copy().reset()
    assert sm.loads(blank.to_bytes()) == blank
