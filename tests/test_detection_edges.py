"""Detection inputs and states a review found mishandled (0.8.4)."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest

import streammetrics as sm
from streammetrics import _codec
from streammetrics.detection import MeanAveragePrecision


def image(boxes: list[list[float]], pred: list[float] | None = None) -> tuple[dict, dict]:  # type: ignore[type-arg]
    target = {"boxes": np.array(boxes), "labels": np.zeros(len(boxes), dtype=int)}
    p = np.array([pred if pred is not None else boxes[0]])
    return {"boxes": p, "scores": np.array([0.9]), "labels": np.array([0])}, target


def test_a_ground_truth_box_with_flipped_corners_is_an_input_error() -> None:
    # 0.8.4 took [60, 50, 50, 60] (x2 < x1): its negative area lay outside every range, the box
    # was dropped, and map was 1.0 instead of 0.505.
    m = MeanAveragePrecision()
    before = m.to_bytes()
    pred, target = image([[10, 10, 50, 50], [60, 50, 50, 60]])
    with pytest.raises(sm.InputError, match=r"targets\[0\]\['boxes'\]: box 1 .* x2 < x1"):
        m.update([pred], [target])
    assert m.to_bytes() == before
    with pytest.raises(sm.InputError, match=r"shape \(n, 4\)"):
        m.update([pred], [{"boxes": np.zeros((0, 5)), "labels": np.zeros(0, dtype=int)}])
    # A flipped prediction is scored as COCOeval scores it: never counted.
    pred, target = image([[10, 10, 50, 50]], pred=[50, 50, 10, 10])
    assert m.update([pred], [target]).compute()["map"] == 0.0


@pytest.mark.parametrize("exact", [True, False])
def test_more_true_positives_than_ground_truth_boxes_is_refused(exact: bool) -> None:
    pred, target = image([[10, 10, 50, 50]])
    m = MeanAveragePrecision(exact=exact).update([pred], [target])
    tree = msgpack.unpackb(m.to_bytes(), strict_map_key=False)
    sm.loads(msgpack.packb(tree, use_bin_type=True))  # untouched: loads
    # Claim no ground-truth box at all: the one true positive has nothing to match.
    counts = tree["state"]["records"]["gt_counts"]
    zero = bytes(counts.data[: len(counts.data) - 8 * 4]) + bytes(8 * 4)
    tree["state"]["records"]["gt_counts"] = msgpack.ExtType(counts.code, zero)
    with pytest.raises(sm.StateDecodeError, match="more true positives"):
        sm.loads(msgpack.packb(tree, use_bin_type=True))


def test_minus_zero_scores_sort_as_zero_whatever_the_merge_order() -> None:
    # 0.8.6 kept -0.0 as given: it ties with 0.0 on every sort key, so the exact records' order
    # (and the sign bit on the wire) followed the order of arrival: a + b != b + a.
    def one(score: float) -> tuple[list[dict], list[dict]]:  # type: ignore[type-arg]
        pred = {"boxes": [[0, 0, 10, 10]], "scores": [score], "labels": [1]}
        return [pred], [{"boxes": [[50, 50, 60, 60]], "labels": [1]}]

    a = MeanAveragePrecision().update(*one(0.0))
    b = MeanAveragePrecision().update(*one(-0.0))
    assert (a + b).to_bytes() == (b + a).to_bytes()
    assert a.to_bytes() == b.to_bytes()
    # A 0.8.6 state's records holding -0.0 decode it as 0.0.
    wire = b.records.to_wire()
    wire["score"] = -wire["score"]
    assert np.signbit(wire["score"]).all()
    decoded = b.records.from_wire(wire)
    assert not np.signbit(decoded.records()["score"]).any()


def test_real_sketch_states_of_negative_scores_round_trip() -> None:
    # 0.8.12 refused every "real" sketch holding a negative score when decoding it (its keys
    # are signed), so such states could not travel as bytes (StateDirectory skipped them).
    rng = np.random.default_rng(3)
    gts = [{"boxes": [[0, 0, 10, 10], [20, 20, 30, 30]], "labels": [1, 2]} for _ in range(6)]
    preds = [
        {
            "boxes": [[0, 0, 10, 10], [21, 20, 30, 31], [50, 50, 60, 60]],
            "scores": rng.normal(0, 1e3, 3).tolist(),
            "labels": [1, 2, 1],
        }
        for _ in range(6)
    ]
    preds[0]["scores"] = [-1e300, -0.5, 1e300]
    make = lambda: MeanAveragePrecision(exact=False, score_type="real")  # noqa: E731
    whole = make().update(preds, gts)
    back = sm.loads(whole.to_bytes())
    assert back.to_bytes() == whole.to_bytes() and back.compute() == whole.compute()
    a, b = make().update(preds[:3], gts[:3]), make().update(preds[3:], gts[3:])
    merged = sm.loads(a.to_bytes()).merge(sm.loads(b.to_bytes()))
    assert merged.to_bytes() == whole.to_bytes()
    # Keys past those of the largest finite scores are still refused.
    low, high = whole.records.mapping.key_range()
    assert whole.records.mapping.keys(np.array([-1.7976931348623157e308]))[0] == low
    assert whole.records.mapping.keys(np.array([1.7976931348623157e308]))[0] == high
    for key in (low - 1, high + 1):
        tree = _codec.decode(whole.to_bytes())
        table = tree["state"]["records"]
        table["key"] = table["key"].copy()
        table["key"][0] = key
        with pytest.raises(sm.StateDecodeError, match="key out of range"):
            sm.loads(_codec.encode(tree))


@pytest.mark.parametrize("dets", [[10, 10, 10], [1, 1, 100], [1, 100, 100]])
def test_repeated_detection_limits_are_refused(dets: list[int]) -> None:
    # 0.8.6 took [10, 10, 10] and its result had one mar_10 key instead of three.
    with pytest.raises(sm.InputError, match="max_detection_thresholds: must be 3 increasing"):
        MeanAveragePrecision(max_detection_thresholds=dets)
