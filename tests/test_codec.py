"""The wire format: golden bytes, canonical encoding, and decoding that fails only with
StateDecodeError (``docs/format.md``)."""

from __future__ import annotations

import math

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import streammetrics as sm
from streammetrics import _codec

# Pinned so that any change to the wire format is a visible, deliberate act: a blob written by
# this version must be read by every later one (add a new golden pair, never edit these).
GOLDEN_CONFUSION = bytes.fromhex(
    "86a5636c617373af436f6e667573696f6e4d6174726978a6636f6e66696782a66c6162656c73c0a96e6f726d"
    "616c697a65c0a6666f726d6174ad73747265616d6d657472696373a6736368656d6101a5737461746582a563"
    "6f756e7403a6636f756e747382a4726f7773c7190193a33c69389102c4100000000000000000010000000000"
    "0000a57461626c65c72a0193a33c6938920202c420010000000000000000000000000000000100000000000"
    "0000100000000000000a776657273696f6e01"
)
GOLDEN_F1 = bytes.fromhex(
    "86a5636c617373a24631a6636f6e66696784a761766572616765a56d6163726fa66c6162656c73c0a9706f73"
    "5f6c6162656c01ad7a65726f5f6469766973696f6ecb0000000000000000a6666f726d6174ad73747265616d"
    "6d657472696373a6736368656d6101a5737461746582a5636f756e7402a6636f756e747382a4726f777392a1"
    "61a162a57461626c65c72a0193a33c6638920202c420000000000000f03f0000000000000000000000000000"
    "00400000000000000000a776657273696f6e01"
)
# F1 at schema 2 (0.2: the confusion state keeps the sum of squared weights for interval()).
GOLDEN_F1_V2 = bytes.fromhex(
    "86a5636c617373a24631a6636f6e66696784a761766572616765a56d6163726fa66c6162656c73c0a9706f73"
    "5f6c6162656c01ad7a65726f5f6469766973696f6ecb0000000000000000a6666f726d6174ad73747265616d"
    "6d657472696373a6736368656d6102a5737461746583a5636f756e7402a6636f756e747382a4726f777392a1"
    "61a162a57461626c65c72a0193a33c6638920202c420000000000000f03f0000000000000000000000000000"
    "00400000000000000000a97765696768745f7371cb4014000000000000a776657273696f6e01"
)


def test_golden_bytes_are_written_and_read() -> None:
    m = sm.ConfusionMatrix().update([0, 1, 1], [0, 1, 0])
    assert m.to_bytes() == GOLDEN_CONFUSION
    back = sm.loads(GOLDEN_CONFUSION)
    assert back == m and back.compute().tolist() == [[1, 0], [1, 1]]
    f1 = sm.F1(average="macro").update(["b", "a"], ["a", "a"], sample_weight=[2, 1])
    assert f1.to_bytes() == GOLDEN_F1_V2
    assert sm.loads(GOLDEN_F1_V2) == f1
    # The schema-1 blob (0.1.0) still reads, with the same value.
    assert sm.loads(GOLDEN_F1).compute() == f1.compute()


def test_envelope_is_plain_msgpack() -> None:
    tree = msgpack.unpackb(GOLDEN_CONFUSION, raw=False)
    assert tree["format"] == "streammetrics" and tree["version"] == 1
    assert tree["class"] == "ConfusionMatrix" and tree["schema"] == 1
    assert tree["config"] == {"labels": None, "normalize": None}
    assert tree["state"]["count"] == 3
    ext = tree["state"]["counts"]["table"]
    dtype, shape, data = msgpack.unpackb(ext.data, raw=False)
    assert (dtype, shape) == ("<i8", [2, 2])
    assert np.frombuffer(data, "<i8").tolist() == [1, 0, 1, 1]


def test_canonical_whatever_the_arrival_order() -> None:
    a = sm.ConfusionMatrix().update(["z", "a"], ["a", "m"]).update(["m"], ["z"])
    b = sm.ConfusionMatrix().update(["m"], ["z"]).update(["a", "z"], ["m", "a"])
    assert a.to_bytes() == b.to_bytes()
    assert _codec.encode({"b": 1, "a": 2, 3: 0}) == _codec.encode({3: 0, "a": 2, "b": 1})


def _tamper(blob: bytes, **changes: object) -> bytes:
    tree = msgpack.unpackb(blob, raw=False)
    tree.update(changes)
    return msgpack.packb(tree, use_bin_type=True)


@pytest.mark.parametrize(
    "blob, message",
    [
        (_tamper(GOLDEN_CONFUSION, version=2), "version 2 is not supported"),
        (_tamper(GOLDEN_CONFUSION, format="other"), "not a streammetrics state"),
        (_tamper(GOLDEN_CONFUSION, **{"class": "os.system"}), "unknown metric class"),
        (_tamper(GOLDEN_CONFUSION, schema=99), "newer than this version"),
        (
            _tamper(GOLDEN_CONFUSION, config={"labels": None, "normalize": "rows"}),
            "invalid ConfusionMatrix config",
        ),
        (_tamper(GOLDEN_CONFUSION, config={"bogus": 1}), "invalid ConfusionMatrix config"),
        (_tamper(GOLDEN_CONFUSION, extra=1), "unexpected envelope fields"),
        (_tamper(GOLDEN_CONFUSION, state={"count": 3}), "state fields differ"),
        (_tamper(GOLDEN_CONFUSION, state={"count": -1, "counts": {}}), "non-negative"),
        (b"\x92\x01\x02", "top level"),
        (b"", "not a valid msgpack"),
        (GOLDEN_CONFUSION[:-3], "not a valid msgpack"),
    ],
)
def test_invalid_envelopes_name_the_problem(blob: bytes, message: str) -> None:
    with pytest.raises(sm.StateDecodeError, match=message):
        sm.loads(blob)


def _array_ext(dtype: str, shape: list[int], data: bytes) -> msgpack.ExtType:
    return msgpack.ExtType(1, msgpack.packb([dtype, shape, data], use_bin_type=True))


def _with_table(ext: object) -> bytes:
    tree = msgpack.unpackb(GOLDEN_CONFUSION, raw=False)
    tree["state"]["counts"]["table"] = ext
    return msgpack.packb(tree, use_bin_type=True)


@pytest.mark.parametrize(
    "ext, message",
    [
        (_array_ext("|O", [1], b"\0" * 8), "dtype '|O' is not allowed"),
        (_array_ext(">i8", [1], b"\0" * 8), "not allowed"),
        # A forged shape must fail on its size, before anything is allocated for it.
        (_array_ext("<i8", [2**40, 2**40], b"\0" * 8), "needs"),
        (_array_ext("<i8", [2, 2], b"\0" * 8), "needs 32 bytes"),
        (_array_ext("<i8", [-1], b""), "negative"),
        (_array_ext("<i8", [1] * 9, b"\0" * 8), "at most 8"),
        (msgpack.ExtType(7, b"\0"), "unknown msgpack extension"),
        (_array_ext("<i8", [3, 3], b"\0" * 72), "shape"),
        (_array_ext("<f8", [2, 2], np.array([1, -1, 0, 0], "<f8").tobytes()), "non-negative"),
        (_array_ext("<f8", [2, 2], np.array([1, np.nan, 0, 0], "<f8").tobytes()), "finite"),
    ],
)
def test_invalid_arrays_are_refused(ext: object, message: str) -> None:
    with pytest.raises(sm.StateDecodeError, match=message):
        sm.loads(_with_table(ext))


def test_from_bytes_refuses_another_class() -> None:
    with pytest.raises(sm.StateDecodeError, match="holds a ConfusionMatrix, not a F1"):
        sm.F1.from_bytes(GOLDEN_CONFUSION)
    with pytest.raises(sm.StateDecodeError):
        sm.loads("not bytes")  # type: ignore[arg-type]


leaves = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.binary(max_size=8)
)
arrays = st.sampled_from(["<i8", "<f8", "<u4", "|b1", "<f4"]).flatmap(
    lambda dt: st.lists(st.integers(0, 1), min_size=0, max_size=6).map(
        lambda v: np.asarray(v, dtype=dt)
    )
)
trees = st.recursive(
    leaves | arrays,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=5) | st.integers(-5, 5), children, max_size=4)
    ),
    max_leaves=20,
)


def _same_tree(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and set(a) == set(b) and all(_same_tree(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same_tree, a, b))
    if isinstance(a, float):
        return isinstance(b, float) and (a == b or (math.isnan(a) and math.isnan(b)))
    return type(a) is type(b) and a == b


@settings(max_examples=300, deadline=None)
@given(trees)
def test_codec_round_trips_any_tree(tree: object) -> None:
    blob = _codec.encode(tree)
    assert _same_tree(tree, _codec.decode(blob))
    assert _codec.encode(_codec.decode(blob)) == blob


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_only_raise_state_decode_error(blob: bytes) -> None:
    try:
        m = sm.loads(blob)
    except sm.StateDecodeError:
        return
    # Bytes that decode must give a usable state, as a mutated golden blob must.
    m.compute()
    assert sm.loads(m.to_bytes()) == m


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_golden_blobs_only_raise_state_decode_error(data: st.DataObject) -> None:
    blob = bytearray(data.draw(st.sampled_from([GOLDEN_CONFUSION, GOLDEN_F1])))
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(blob) - 1))
        blob[pos] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(blob)))
    try:
        m = sm.loads(bytes(blob[:cut]) if data.draw(st.booleans()) else bytes(blob))
    except sm.StateDecodeError:
        return
    m.compute()
    assert sm.loads(m.to_bytes()) == m


@pytest.mark.parametrize("shape", [(1,), (1, 1)])
def test_canonical_singles_are_the_arrays_packed_one_by_one(shape) -> None:
    # Sliced's moments table writes 100,000 one-value arrays this way (0.8.20): the bytes must
    # be those of packing each array.
    from streammetrics import _codec

    values = np.array([0.0, -0.0, 1.5, -(2.0**-1074), 1e308, np.pi, 2.0**-1022, 7.0])
    got = _codec.canonical_singles(values, shape)
    want = [_codec.canonical_array(np.array([v]).reshape(shape)) for v in values]
    assert got == want
    assert msgpack.packb(got, use_bin_type=True) == msgpack.packb(want, use_bin_type=True)
    assert _codec.canonical_singles(np.zeros(0), shape) == []
    big = values.astype(">f8")  # another byte order: packed one by one, as little-endian
    assert _codec.canonical_singles(big, shape) == want
