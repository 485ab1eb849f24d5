"""``a.merge(b, c, ...)`` of the time wrappers: all or nothing, and the same whatever the order
of the operands. (0.8.14 merged the operands one after another into the target: a conflict
between two operands, or a weight bound that only the last passed, raised half way and left a
target whose own bytes ``loads`` refused; a ``SlidingWindow`` merged slots that a later
operand aged out, so one order raised where another did not.)"""

from __future__ import annotations

import itertools

import pytest

import streammetrics as sm
from streammetrics import CountOverflowError, IncompatibleStateError

W = 2.0**99


def _check_unchanged(target: sm.Metric, before: bytes) -> None:
    assert target.to_bytes() == before
    assert sm.loads(target.to_bytes()) == target


@pytest.mark.parametrize(
    "make",
    [
        lambda: sm.Decayed(sm.F1(), half_life=10),
        lambda: sm.SlidingWindow(sm.F1(), 10, 2),
        lambda: sm.TumblingWindows(sm.F1(), 10),
        lambda: sm.Decayed(sm.Sliced(sm.F1()), half_life=10),
    ],
    ids=["Decayed", "SlidingWindow", "TumblingWindows", "Decayed(Sliced)"],
)
@pytest.mark.parametrize("target_rows", [0, 1])
def test_operands_that_cannot_merge_with_each_other_are_refused_first(make, target_rows):
    sliced = "Sliced" in repr(make())
    by = {"by": ["a", "a"]} if sliced else {}
    b = make().update([0, 1], [0, 1], timestamps=[0, 1], **by)  # binary labels {0, 1}
    c = make().update([1, 2], [1, 2], timestamps=[2, 3], **by)  # {1, 2}: not with b's
    target = make()
    if target_rows:
        target.update([1], [1], timestamps=[0], **({"by": ["a"]} if sliced else {}))
    before = target.to_bytes()
    with pytest.raises(IncompatibleStateError):
        target.merge(b, c)
    _check_unchanged(target, before)


@pytest.mark.parametrize(
    "make",
    [
        lambda w: sm.Decayed(sm.Accuracy(), 1).update(
            [1], [1], timestamps=[63.999], sample_weight=[w]
        ),
        lambda w: sm.SlidingWindow(sm.Accuracy(), 10, 2).update(
            [1], [1], timestamps=[0], sample_weight=[w]
        ),
        lambda w: sm.TumblingWindows(sm.Accuracy(), 10).update(
            [1], [1], timestamps=[0], sample_weight=[w]
        ),
    ],
    ids=["Decayed", "SlidingWindow", "TumblingWindows"],
)
def test_a_weight_bound_passed_by_the_last_operand_changes_nothing(make):
    target, b, c = make(W), make(0.6 * W), make(0.6 * W)
    before = target.to_bytes()
    with pytest.raises(CountOverflowError):
        target.merge(b, c)
    _check_unchanged(target, before)
    assert target.merge(b).count == 2  # (a pair within the bound merges)


def test_sliding_window_merge_is_the_same_in_every_order():
    def make():
        return sm.SlidingWindow(sm.F1(), 10, 2)

    b = make().update([0, 1], [0, 1], timestamps=[0, 0])
    c = make().update([1, 2], [1, 2], timestamps=[0, 0])  # slot 0: not with b's, but ...
    d = make().update([1, 1], [1, 1], timestamps=[1000, 1000])  # ... d's head ages it out
    results = {make().merge(*order).to_bytes() for order in itertools.permutations([b, c, d])}
    assert len(results) == 1
    merged = sm.loads(results.pop())
    assert (merged.count, merged.dropped, merged.compute()) == (6, 4, 1.0)
    # One operand at a time gives the same window where no step meets the conflict (b and
    # c merged alone are refused: at that point their slot 0 is in the window).
    for order in ([d, b, c], [b, d, c], [c, d, b]):
        one_by_one = make()
        for part in order:
            one_by_one.merge(part)
        assert one_by_one == merged


def test_decayed_slices_may_weigh_more_than_one_slice_may():
    # Decayed's weight adds every slice's: past 2**100 while each slice is within it. A first
    # version of 0.8.15 bounded it by 2**100, and refused such a state's bytes and merges.
    w = 0.7 * 2.0**100
    whole = sm.Decayed(sm.Sliced(sm.Accuracy()), half_life=10)
    whole.update([1, 1], [1, 1], by=["a", "b"], sample_weight=[w, w], timestamps=[639.99] * 2)
    assert whole.weight > 2.0**100
    assert sm.loads(whole.to_bytes()) == whole
    a = sm.Decayed(sm.Sliced(sm.Accuracy()), half_life=10)
    b = sm.Decayed(sm.Sliced(sm.Accuracy()), half_life=10)
    a.update([1], [1], by=["a"], sample_weight=[w], timestamps=[639.99])
    b.update([1], [1], by=["b"], sample_weight=[w], timestamps=[639.99])
    merged = a.copy().merge(b)
    assert merged.count == 2 and sm.loads(merged.to_bytes()) == merged
    assert sm.Decayed(sm.Sliced(sm.Accuracy()), half_life=10).merge(a, b) == merged
