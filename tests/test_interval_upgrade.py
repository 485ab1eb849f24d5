"""0.1.0 states (schema 1) of the metrics whose state ``interval`` extended still load.

The blobs below were written by streammetrics 0.1.0 (main at bacb021, before intervals): they
must load with the same value; where the new second moments cannot be known the interval is
``nan, nan``, where they can (unweighted confusion counts) it is the full interval.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import streammetrics as sm

GOLDEN_V010 = {
    "Accuracy": (
        0.55,
        bytes.fromhex(
            "86a5636c617373a84163637572616379a6636f6e66696780a6666f726d6174ad73747265616d6d657472"
            "696373a6736368656d6101a5737461746582a5636f756e7428a6636f756e747382a4726f7773c7190193"
            "a33c69389102c41000000000000000000100000000000000a57461626c65c72a0193a33c6938920202c4"
            "200a0000000000000006000000000000000c000000000000000c00000000000000a776657273696f6e01"
        ),
    ),
    "Accuracy_weighted": (
        0.5371796264029945,
        bytes.fromhex(
            "86a5636c617373a84163637572616379a6636f6e66696780a6666f726d6174ad73747265616d6d657472"
            "696373a6736368656d6101a5737461746582a5636f756e7428a6636f756e747382a4726f7773c7190193"
            "a33c69389102c41000000000000000000100000000000000a57461626c65c72a0193a33c6638920202c4"
            "200d04d697ea83244080b416f9d77a174096cea0c7cea32a40e2bea167e3072840a776657273696f6e01"
        ),
    ),
    "F1_macro": (
        0.5488721804511278,
        bytes.fromhex(
            "86a5636c617373a24631a6636f6e66696784a761766572616765a56d6163726fa66c6162656c73c0a970"
            "6f735f6c6162656c01ad7a65726f5f6469766973696f6ecb0000000000000000a6666f726d6174ad7374"
            "7265616d6d657472696373a6736368656d6101a5737461746582a5636f756e7428a6636f756e747382a4"
            "726f7773c7190193a33c69389102c41000000000000000000100000000000000a57461626c65c72a0193"
            "a33c6938920202c4200a0000000000000006000000000000000c000000000000000c00000000000000a7"
            "76657273696f6e01"
        ),
    ),
    "TopKAccuracy": (
        0.55,
        bytes.fromhex(
            "86a5636c617373ac546f704b4163637572616379a6636f6e66696781a16b01a6666f726d6174ad737472"
            "65616d6d657472696373a6736368656d6101a5737461746583a5636f756e7428a468697473cb40360000"
            "00000000a5746f74616ccb4044000000000000a776657273696f6e01"
        ),
    ),
    "MeanSquaredError": (
        0.2398490425085528,
        bytes.fromhex(
            "86a5636c617373b04d65616e537175617265644572726f72a6636f6e66696781ab6d756c74696f757470"
            "7574af756e69666f726d5f61766572616765a6666f726d6174ad73747265616d6d657472696373a67363"
            "68656d6101a5737461746582a5636f756e7428a76d6f6d656e747384a8636f6d6f6d656e74c70a0193a3"
            "3c6638920001c400a46d65616ec7120193a33c6638920101c408058cc6985fb3ce3fa86d65616e5f6c6f"
            "77c7120193a33c6638920101c4080000000000000000a6776569676874cb4044000000000000a7766572"
            "73696f6e01"
        ),
    ),
    "MeanAbsoluteError": (
        0.37680297183316885,
        bytes.fromhex(
            "86a5636c617373b14d65616e4162736f6c7574654572726f72a6636f6e66696781ab6d756c74696f7574"
            "707574af756e69666f726d5f61766572616765a6666f726d6174ad73747265616d6d657472696373a673"
            "6368656d6101a5737461746582a5636f756e7428a76d6f6d656e747384a8636f6d6f6d656e74c70a0193"
            "a33c6638920001c400a46d65616ec7120193a33c6638920101c408cbc743368a1dd83fa86d65616e5f6c"
            "6f77c7120193a33c6638920101c4080000000000000000a6776569676874cb4044000000000000a77665"
            "7273696f6e01"
        ),
    ),
    "MeanAbsolutePercentageError": (
        6.4446417574250905,
        bytes.fromhex(
            "86a5636c617373bb4d65616e4162736f6c75746550657263656e746167654572726f72a6636f6e666967"
            "81ab6d756c74696f7574707574af756e69666f726d5f61766572616765a6666f726d6174ad7374726561"
            "6d6d657472696373a6736368656d6101a5737461746582a5636f756e7428a76d6f6d656e747384a8636f"
            "6d6f6d656e74c70a0193a33c6638920001c400a46d65616ec7120193a33c6638920101c408924e3a2b50"
            "c71940a86d65616e5f6c6f77c7120193a33c6638920101c4080000000000000000a6776569676874cb40"
            "44000000000000a776657273696f6e01"
        ),
    ),
    "RootMeanSquaredError": (
        0.4897438539773141,
        bytes.fromhex(
            "86a5636c617373b4526f6f744d65616e537175617265644572726f72a6636f6e66696781ab6d756c7469"
            "6f7574707574af756e69666f726d5f61766572616765a6666f726d6174ad73747265616d6d6574726963"
            "73a6736368656d6101a5737461746582a5636f756e7428a76d6f6d656e747384a8636f6d6f6d656e74c7"
            "0a0193a33c6638920001c400a46d65616ec7120193a33c6638920101c408058cc6985fb3ce3fa86d6561"
            "6e5f6c6f77c7120193a33c6638920101c4080000000000000000a6776569676874cb4044000000000000"
            "a776657273696f6e01"
        ),
    ),
    "R2Score": (
        0.6358888181201958,
        bytes.fromhex(
            "86a5636c617373a7523253636f7265a6636f6e66696782ac666f7263655f66696e697465c3ab6d756c74"
            "696f7574707574af756e69666f726d5f61766572616765a6666f726d6174ad73747265616d6d65747269"
            "6373a6736368656d6101a5737461746582a5636f756e7428a76d6f6d656e747384a8636f6d6f6d656e74"
            "c7120193a33c6638920101c408d6a6dc5f57593a40a46d65616ec71a0193a33c6638920201c41016ebc9"
            "b68695b5bf058cc6985fb3ce3fa86d65616e5f6c6f77c71a0193a33c6638920201c41098999999999949"
            "3c0000000000000000a6776569676874cb4044000000000000a776657273696f6e01"
        ),
    ),
    "LogLoss": (
        0.6497375312381266,
        bytes.fromhex(
            "86a5636c617373a74c6f674c6f7373a6636f6e66696782a3657073a46175746fa66c6162656c73c0a666"
            "6f726d6174ad73747265616d6d657472696373a6736368656d6101a5737461746584a7636f6c756d6e73"
            "00a5636f756e7428a86c6f73735f73756dcb4039fd4ff4320fb0aa7765696768745f73756dcb40440000"
            "00000000a776657273696f6e01"
        ),
    ),
    "BrierScore": (
        0.2332360062557693,
        bytes.fromhex(
            "86a5636c617373aa427269657253636f7265a6636f6e66696781a66c6162656c73c0a6666f726d6174ad"
            "73747265616d6d657472696373a6736368656d6101a5737461746584a7636f6c756d6e7300a5636f756e"
            "7428a86c6f73735f73756dcb4022a8ac64797456aa7765696768745f73756dcb4044000000000000a776"
            "657273696f6e01"
        ),
    ),
    "LogLoss_weighted": (
        0.6544503431133702,
        bytes.fromhex(
            "86a5636c617373a74c6f674c6f7373a6636f6e66696782a3657073a46175746fa66c6162656c73c0a666"
            "6f726d6174ad73747265616d6d657472696373a6736368656d6101a5737461746584a7636f6c756d6e73"
            "00a5636f756e7428a86c6f73735f73756dcb403b22aca37c90bdaa7765696768745f73756dcb4044bb42"
            "30e8faf2a776657273696f6e01"
        ),
    ),
    "NDCG_folded": (
        0.7322061552916752,
        bytes.fromhex(
            "86a5636c617373a44e444347a6636f6e66696782a46761696eab6578706f6e656e7469616ca16b05a666"
            "6f726d6174ad73747265616d6d657472696373a6736368656d6101a5737461746585a662756666657283"
            "a57175657279c7090193a33c69389100c400a972656c6576616e6365c7090193a33c66389100c400a573"
            "636f7265c7090193a33c66389100c400a5636f756e7428a77175657269657308a7736b697070656400a5"
            "746f74616ccb40176e3b9a5d0b68a776657273696f6e01"
        ),
    ),
    "NDCG_buffered": (
        0.7114497260046202,
        bytes.fromhex(
            "86a5636c617373a44e444347a6636f6e66696782a46761696eab6578706f6e656e7469616ca16b05a666"
            "6f726d6174ad73747265616d6d657472696373a6736368656d6101a5737461746585a662756666657283"
            "a57175657279c8014a0193a33c69389128c5014000000000000000000000000000000000000000000000"
            "000000000000000000000000000000000000010000000000000001000000000000000100000000000000"
            "010000000000000001000000000000000200000000000000020000000000000002000000000000000200"
            "000000000000020000000000000003000000000000000300000000000000030000000000000003000000"
            "000000000300000000000000040000000000000004000000000000000400000000000000040000000000"
            "000004000000000000000500000000000000050000000000000005000000000000000500000000000000"
            "050000000000000006000000000000000600000000000000060000000000000006000000000000000600"
            "000000000000070000000000000007000000000000000700000000000000070000000000000007000000"
            "00000000a972656c6576616e6365c8014a0193a33c66389128c501400000000000000040000000000000"
            "004000000000000000000000000000000000000000000000f03f000000000000f03f000000000000f03f"
            "000000000000f03f00000000000000000000000000000040000000000000f03f00000000000000000000"
            "000000000040000000000000f03f00000000000000000000000000000040000000000000f03f00000000"
            "00000040000000000000f03f000000000000f03f000000000000f03f000000000000f03f000000000000"
            "f03f00000000000000000000000000000000000000000000000000000000000000400000000000000000"
            "000000000000000000000000000000000000000000000040000000000000f03f00000000000000000000"
            "00000000f03f000000000000f03f00000000000000000000000000000040000000000000f03f00000000"
            "000000400000000000000040a573636f7265c8014a0193a33c66389128c50140b8192a9817dab33f6c1e"
            "ece842bac03fecb5f33f32c7c03f303c404eea0cc13f87626675fa6be83f80fba3589bcdb43f1ed36e71"
            "4c3bd13f66e1351e3b9cd33fda1eb84040a6ea3f389fd78f2a01ed3f10736d8250f4c73fbc78b7bd2006"
            "d83f4e4181a2fbd3db3f13882fb969d6e33f7ccdc5c31749ec3fd00c74d763c8b83fa9e1c9ab8abfe63f"
            "9733359c3e46e73f483e0201dfd8e83f24153175ae6cea3fa862b9983270b03ff656550b16bad73f6b64"
            "e79dd099e03f89339bf40d93e53f402bbe8e1c3de83f286468e1626dc83ffcf051dd070ad13f36fc1738"
            "e527e13f94c1a60855f2e73f686cd4a7d6b0ec3f6882c74c4c18c03f60bcf1942a96c73fd86b8ecfeb9f"
            "e43f412644883512e73f3ec2018fce95e93f5c9ba6acfe47d93fe0d022f921dee83fd65e79b40ffaea3f"
            "d459f420c30dee3f4ff86ca48ce5ef3fa5636f756e7428a77175657269657300a7736b697070656400a5"
            "746f74616ccb0000000000000000a776657273696f6e01"
        ),
    ),
}

KNOWN = {"Accuracy", "F1_macro", "NDCG_buffered"}


@pytest.mark.parametrize("name", sorted(GOLDEN_V010))
def test_old_blob_loads_with_its_value(name: str) -> None:
    value, blob = GOLDEN_V010[name]
    metric = sm.loads(blob)
    # (3: R2Score's shape, 0.8.1; ranking's spread, 0.8.4; the loss means' sums under the
    # weights squared, 0.8.9)
    two = ("Accuracy", "Accuracy_weighted", "F1_macro", "TopKAccuracy")
    assert metric._schema == (2 if name in two else 3)
    assert metric.compute() == pytest.approx(value, rel=1e-12)
    again = sm.loads(metric.to_bytes())
    assert again == metric
    low, high = metric.interval()
    if name in KNOWN:
        assert low <= value <= high and high > low
    else:
        assert math.isnan(low) and math.isnan(high)


def test_old_blob_merges_with_a_new_state() -> None:
    _, blob = GOLDEN_V010["Accuracy"]
    old = sm.loads(blob)
    new = sm.Accuracy().update([0, 1, 1], [0, 1, 0])
    merged = old + new
    assert merged.count == old.count + 3
    low, high = merged.interval()
    assert low < merged.compute() < high


# Ranking states of schema 2 (0.2.0 to 0.8.3) kept ``total_sq``, the sum of squared per-query
# values; schema 3 keeps the spread around the mean. Blobs written by 0.8.3 (d9d8187), with the
# value and the interval that version gave.
GOLDEN_RANKING_V2 = {
    "DCG": (
        1.847609706682976,
        (1.3295263833614333, 2.3656930300045187),
        "86a5636c617373a3444347a6636f6e66696782a46761696ea66c696e656172a16bc0a6666f726d6174ad7374"
        "7265616d6d657472696373a6736368656d6102a5737461746586a662756666657283a57175657279c7090193"
        "a33c69389100c400a972656c6576616e6365c7090193a33c66389100c400a573636f7265c7090193a33c6638"
        "9100c400a5636f756e743ba7717565726965730aa7736b697070656400a5746f74616ccb403279e17f53c15e"
        "a8746f74616c5f7371cb40436db8e6cff48ea776657273696f6e01",
    ),
    "MRR": (
        0.6458333333333334,
        (0.49513562764553976, 0.796531039021127),
        "86a5636c617373a34d5252a6636f6e66696780a6666f726d6174ad73747265616d6d657472696373a6736368"
        "656d6102a5737461746586a662756666657283a57175657279c7090193a33c69389100c400a972656c657661"
        "6e6365c7090193a33c66389100c400a573636f7265c7090193a33c66389100c400a5636f756e743ba7717565"
        "726965730aa7736b697070656400a5746f74616ccb4019d55555555556a8746f74616c5f7371cb4012481948"
        "b0fcd7a776657273696f6e01",
    ),
}


@pytest.mark.parametrize("name", sorted(GOLDEN_RANKING_V2))
def test_ranking_schema_2_loads_with_its_value_and_interval(name: str) -> None:
    value, interval, blob = GOLDEN_RANKING_V2[name]
    metric = sm.loads(bytes.fromhex(blob))
    assert metric._schema == 3 and metric.queries == 10
    assert metric.compute() == pytest.approx(value, rel=1e-12)
    assert metric.interval() == pytest.approx(interval, rel=1e-9)
    again = sm.loads(metric.to_bytes())
    assert again == metric and again.interval() == metric.interval()
    merged = metric + metric
    assert merged.compute() == pytest.approx(value, rel=1e-12)
    low, high = merged.interval()
    assert interval[0] < low < value < high < interval[1]


# Loss means of schema 2 (0.2.0 to 0.8.8) kept no sums under the weights squared; 0.8.9's
# schema 3 does (the linearised variance). The golden blobs of 0.8.8 (26dcc0a), with the
# interval 0.8.8 gave (Kish's rule; None: no interval, more than one output).
SCHEMA2_LOSSES = {
    "BrierScore": (0.25807854586587636, 0.4362478085341526),
    "BrierScore-multiclass": (0.7096790681181928, 0.930998897983502),
    "LogLoss": (0.7800024768239304, 1.2501180808092769),
    "LogLoss-multiclass": (0.7735332281636107, 3.1612394453896675),
    "MeanAbsoluteError": (0.225499252031859, 0.37913252994390795),
    "MeanAbsolutePercentageError": (0.38786107423662175, 1.9600084605866899),
    "MeanSquaredError": (0.13213111553381174, 0.33311379516298295),
    "MeanSquaredError-tensor-float64": (0.1250615511076093, 0.2632202825841913),
    "MeanSquaredError-2d-raw": None,
    "RootMeanSquaredError": None,
}


@pytest.mark.parametrize("case_id", sorted(SCHEMA2_LOSSES))
def test_schema2_loss_blobs_load_with_the_interval_they_gave(case_id: str) -> None:
    """Weighted: the new sums are unknown (nan) and the interval is 0.8.8's (Kish's rule),
    also after merging fresh weighted rows in; unit weights: the sums are the plain ones and
    the interval is the same. The value is this version's golden value."""
    golden = Path(__file__).parent / "golden"
    old = sm.loads((golden / "schema2" / f"{case_id}.bin").read_bytes())
    new = sm.loads((golden / f"{case_id}.bin").read_bytes())
    assert type(old)._schema == 3 and old.count == new.count
    np.testing.assert_allclose(old.compute(), new.compute(), rtol=1e-12)
    assert sm.loads(old.to_bytes()).to_bytes() == old.to_bytes()
    want = SCHEMA2_LOSSES[case_id]
    if want is None:
        with pytest.raises(sm.NoIntervalError):
            old.interval()
        return
    assert old.interval() == pytest.approx(want, rel=1e-9)
    unit = old.weight_sq == old.count
    sums = (old.loss_wsq,) if hasattr(old, "loss_wsq") else tuple(old.wsq_mean)
    assert any(math.isnan(v) for v in sums) != unit  # (regression, unit weights: none kept)
    merged = old + new
    assert merged.count == 2 * old.count
    assert all(math.isnan(v) for v in merged.interval()) is False


def test_forged_sums_under_the_weights_squared_are_refused() -> None:
    """Schema-3 fields no stream can give (found by the diff review, 0.8.9): a negative mean of
    a loss, a spread past ``max(w) sum w (x - m)**2``, sums that differ from the plain ones
    under unit weights. Genuine states of any split and merge load (``tests/test_uncertainty``)."""
    from streammetrics._codec import decode, encode

    def forged(metric: sm.Metric, **fields: object) -> bytes:
        tree = decode(metric.to_bytes())
        tree["state"].update(fields)
        return encode(tree)

    rng = np.random.default_rng(0)
    t, p, w = rng.normal(size=50), rng.normal(size=50), rng.random(50) + 0.5
    weighted = sm.MeanSquaredError().update(t, p, sample_weight=w)
    unit = sm.MeanSquaredError().update(t, p, sample_weight=np.ones(50))
    y, q = rng.integers(0, 2, 50), rng.random(50)
    loss = sm.LogLoss().update(y, q)
    for metric, fields in (
        (weighted, {"wsq_mean": np.array([-5.0])}),
        (weighted, {"wsq_spread": np.array([1e300])}),
        (unit, {"wsq_mean": np.array([1e6])}),
        (weighted, {"wsq_mean": np.array([math.nan])}),  # one known without the other
        (loss, {"loss_sq_wsq": 3 * loss.loss_sq_sum}),
        (loss, {"loss_wsq": math.nan}),
    ):
        sm.loads(metric.to_bytes())  # the genuine state loads
        with pytest.raises(sm.StateDecodeError):
            sm.loads(forged(metric, **fields))


def test_near_constant_losses_over_several_outputs_round_trip() -> None:
    """A first decode check refused states the library writes: near-constant losses over two
    outputs, unit or constant weights (the second diff review), and squared weights below
    float64's normal range."""
    rng = np.random.default_rng(1)
    t = rng.normal(size=(5000, 2)) + 3.0
    for metric, p, w in (
        (sm.MeanAbsolutePercentageError(multioutput="raw_values"), 0.9 * t, np.ones(5000)),
        (sm.MeanSquaredError(multioutput="raw_values"), t + 0.1, np.ones(5000)),
        (sm.MeanAbsoluteError(multioutput="raw_values"), t + 0.1, np.full(5000, 2.0)),
    ):
        metric.update(t, p, sample_weight=w)
        assert sm.loads(metric.to_bytes()).to_bytes() == metric.to_bytes()
    for make in (sm.BrierScore, sm.LogLoss):
        tiny = make().update([0, 1] * 10, [0.3, 0.8] * 10, sample_weight=np.full(20, 1e-161))
        assert sm.loads(tiny.to_bytes()).to_bytes() == tiny.to_bytes()
