"""Limits a review of decoding found missing (0.8.7): a few bytes may not ask for gigabytes,
and no state may grow past what its own bytes can say."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.detection import MeanAveragePrecision
from streammetrics.ranking import DCG


def _images() -> tuple[list[dict], list[dict]]:  # type: ignore[type-arg]
    preds = [{"boxes": [[0, 0, 10, 10], [5, 5, 20, 20]], "scores": [0.9, 0.4], "labels": [1, 1]}]
    return preds, [{"boxes": [[0, 0, 10, 10]], "labels": [1]}]


def test_a_detection_bucket_key_past_the_grid_is_refused() -> None:
    # 0.8.6 checked key >= 0 only: a 1.5 KB blob with key 2e8 allocated 1.7 GB, then failed.
    m = MeanAveragePrecision(exact=False).update(*_images())
    wire = m.records.to_wire()
    wire["key"] = wire["key"].copy()
    wire["key"][0] = m.records.mapping.size
    with pytest.raises(ValueError, match="key out of range"):
        m.records.from_wire(wire)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"iou_thresholds": np.linspace(0, 1, 101)}, "iou_thresholds: at most 100 values"),
        ({"rec_thresholds": np.linspace(0, 1, 1002)}, "rec_thresholds: at most 1001 values"),
    ],
)
def test_detection_threshold_lists_are_bounded(kwargs: dict, message: str) -> None:  # type: ignore[type-arg]
    # A 6.4 KB blob of 2,000 repeated thresholds took 2.2 s and 800 MB to compute. (Repeated
    # values within the bounds still load, as 0.8.6 wrote them.)
    with pytest.raises(sm.InputError, match=message):
        MeanAveragePrecision(**kwargs)
    assert MeanAveragePrecision(rec_thresholds=np.linspace(0, 1, 1001)).count == 0
    assert MeanAveragePrecision(iou_thresholds=[0.5, 0.5]).count == 0


def test_ranking_totals_past_the_largest_float_are_refused() -> None:
    # 0.8.6 took an update (or a merge) that made the spread infinite: its bytes then failed to
    # load ("the folded spread must be finite").
    m = DCG(k=3).update([1, 1, 2], [3.0, 1.0, 2.0], [0.9, 0.1, 0.5], complete=True)
    m._commit(0, total=1e308)
    before = m.to_bytes()
    with pytest.raises(sm.CountOverflowError, match="ranking totals"):
        m.update([3, 3], [3.0, 2.0], [0.2, 0.1], complete=True)
    with pytest.raises(sm.CountOverflowError, match="ranking totals"):
        m.merge(sm.loads(before))
    assert m.to_bytes() == before
    assert sm.loads(before).to_bytes() == before


def test_update_holds_the_row_count_bound() -> None:
    # merge refused past 2**53 rows, update did not: its bytes then failed to load.
    m = sm.MeanSquaredError().update([0.0, 1.0], [0.5, 1.0])
    # as a decoded state may hold (rows buffered near it fold at once); unit weights, so the
    # weight totals go with the count (0.8.12 refuses a state of unit weights that they don't)
    m._count = 2**53 - 1
    m.moments.weight = m.weight_sq = float(2**53 - 1)
    m = sm.loads(m.to_bytes())
    before = m.to_bytes()
    with pytest.raises(sm.CountOverflowError, match="past 2"):
        m.update([1.0, 0.0], [1.0, 0.0])
    assert m.to_bytes() == before


@pytest.mark.parametrize("width", [2**63, 2**64 - 1, 1e30])
def test_window_widths_beyond_int64_are_input_errors(width: float) -> None:
    # 0.8.6 built them, then every update with a list of timestamps raised OverflowError.
    for make in (sm.TumblingWindows, sm.SlidingWindow):
        with pytest.raises(sm.InputError, match="width: at most 2\\*\\*62"):
            make(sm.Accuracy(), width=width)
    with pytest.raises(sm.InputError, match="half_life: at most"):
        sm.Decayed(sm.Accuracy(), half_life=2**63)


def test_intervals_of_subnormal_weights_do_not_warn() -> None:
    w = np.full(4, 5e-324)
    y, p = np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.5, 2.0, 2.5, 4.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r2 = sm.R2Score().update(y, p, sample_weight=w)
        f1 = sm.F1(average="macro").update([0, 1, 1, 2], [0, 1, 2, 2], sample_weight=w)
        for m in (r2, f1):
            low, high = m.interval()
            assert np.isnan(low) == np.isnan(high)


def test_sliced_near_the_row_bound_refuses_before_its_slices_change() -> None:
    # The grouped fold changes the slices in place: 0.8.7's first cut checked the bound after
    # it, so the slices took the rows and the state's bytes no longer loaded.
    from streammetrics import _codec

    half = 2**52
    s = sm.Sliced(sm.ROCAUC()).update([1, 0, 1, 0], [0.9, 0.1, 0.8, 0.3], by=["a", "a", "b", "b"])
    tree = _codec.decode(s.to_bytes())
    for _key, sub in tree["state"]["slices"]:
        hist = sub["state"]["hist"]
        hist["neg"], hist["pos"] = hist["neg"] * (half // 2), hist["pos"] * (half // 2)
        sub["state"]["count"] = half
    tree["state"]["count"] = 2 * half
    s = sm.loads(_codec.encode(tree))
    before = s.to_bytes()
    for y, p, by in (([1, 0], [0.5, 0.6], ["a", "b"]), ([1], [0.5], ["a"])):
        with pytest.raises(sm.CountOverflowError, match="past 2"):
            s.update(y, p, by=by)
        assert s.to_bytes() == before


@pytest.mark.parametrize("make", [sm.BrierScore, sm.LogLoss, sm.CalibrationError])
def test_a_claimed_number_of_probability_columns_is_bounded(make: Any) -> None:
    # A blob claiming 2**53 columns loaded, and then refused every update and merge.
    from streammetrics import _codec

    tree = _codec.decode(make().update([0, 1], [0.2, 0.7]).to_bytes())
    tree["state"]["columns"] = 2**53
    with pytest.raises(sm.StateDecodeError, match="columns must be at most 2"):
        sm.loads(_codec.encode(tree))


def test_states_of_legitimate_streams_at_the_edges_load():
    """Two streams whose bytes 0.8.14 refused (found by a review's fuzzer)."""
    # Weights totalling 2**100 to the last bits: the update checks its sum of the parts'
    # totals, the decoder summed the cells, a few ulps higher.
    parts = [6.951590010045175e29, 6.790157022697406e28, 1.7722406292249675e30]
    d = sm.Decayed(sm.Accuracy(), half_life=10)
    d.update([1, 0], [1, 1], timestamps=[1270, 1270], sample_weight=parts[:2])
    d.update([1], [1], timestamps=[1270], sample_weight=parts[2:])
    assert sm.loads(d.to_bytes()) == d
    # A LogLoss of subnormal weights (eps 1e-7): its w * loss**2 rounds above top**2 * w.
    blob = (
        b"\x86\xa5class\xa7LogLoss\xa6config\x82\xa3eps\xcb>z\xd7\xf2\x9a\xbc\xafH\xa6labels"
        b"\xc0\xa6format\xadstreammetrics\xa6schema\x03\xa5state\x88\xa7columns\x07\xa5count"
        b"\x08\xabloss_sq_sum\xcb\x00\x00\x00\x00\x00\x00\x08 \xabloss_sq_wsq\xcb\x00\x00\x00"
        b"\x00\x00\x00\x00\x00\xa8loss_sum\xcb\x00\x00\x00\x00\x00\x00\x00\x80\xa8loss_wsq"
        b"\xcb\x00\x00\x00\x00\x00\x00\x00\x00\xa9weight_sq\xcb\x00\x00\x00\x00\x00\x00\x00"
        b"\x00\xaaweight_sum\xcb\x00\x00\x00\x00\x00\x00\x00\x08\xa7version\x01"
    )
    loaded = sm.loads(blob)
    assert loaded.count == 8 and sm.loads(loaded.to_bytes()) == loaded
