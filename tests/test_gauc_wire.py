"""GAUC's compact wire form (schema 2, 0.8.0): narrow unsigned counts, values of sketched
entries only; 0.7.0's form (schema 1, kept in ``tests/golden/legacy/``) still loads."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import streammetrics as sm
from streammetrics import _codec
from streammetrics.states.labels import labels_to_wire

GOLDEN = Path(__file__).parent / "golden"
LEGACY_IDS = ["GAUC", "GAUC-exact-str-weighted", "GAUC-logit-uniform", "golden-GAUC-sketch-str"]


def _legacy_tree(m: sm.GAUC) -> dict:
    """The 0.7.0 (schema 1) form of ``m``: every entry's value, every count as int64."""
    tree = _codec.decode(m.to_bytes())
    wire = tree["state"]["scores"]
    t = m.scores.table()
    tree["schema"] = 1
    for name in ("rows", "sizes"):
        wire[name] = wire[name].astype(np.int64)
    if wire["pos"].dtype.kind == "u":
        wire["pos"], wire["neg"] = wire["pos"].astype(np.int64), wire["neg"].astype(np.int64)
    del wire["sketch_value"]
    wire["key"], wire["value"] = t.key, t.value
    wire["groups"] = labels_to_wire(m.scores.groups)
    return tree


@pytest.mark.parametrize("case_id", LEGACY_IDS)
def test_blobs_of_0_7_0_still_load(case_id: str) -> None:
    old = (GOLDEN / "legacy" / f"{case_id}-0.7.0.bin").read_bytes()
    assert _codec.decode(old)["schema"] == 1
    m = sm.GAUC.from_bytes(old)
    pinned = json.loads((GOLDEN / "index.json").read_text())[case_id]["compute"]
    assert m.compute() == float(pinned["f"])
    # the same state re-serialises in the new form: the committed schema-2 bytes
    assert m.to_bytes() == (GOLDEN / f"{case_id}.bin").read_bytes()
    assert len(m.to_bytes()) < len(old)


@pytest.mark.parametrize("exact", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_legacy_form_of_any_state_loads_to_the_same_state(exact: bool, weighted: bool) -> None:
    rng = np.random.default_rng(3)
    n = 20_000
    groups = rng.integers(0, 300, n)
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n), 3)  # ties within groups
    w = rng.random(n) + 0.5 if weighted else None
    m = sm.GAUC(exact=exact, max_exact=40).update(y, s, groups=groups, sample_weight=w)
    old = _codec.encode(_legacy_tree(m))
    back = sm.loads(old)
    assert back.to_bytes() == m.to_bytes()
    assert back.compute() == m.compute()


def test_counts_take_the_narrowest_width_and_round_trip() -> None:
    rng = np.random.default_rng(4)
    # one group with 300 rows at one score (its positives and rows need uint16), many small
    groups = np.concatenate([np.zeros(300, np.int64), rng.integers(1, 1_000, 5_000)])
    y = np.concatenate([np.arange(300) > 0, rng.integers(0, 2, 5_000)]).astype(np.int64)
    s = np.concatenate([np.full(300, 0.5), rng.random(5_000)])
    m = sm.GAUC(exact=True).update(y, s, groups=groups)
    wire = _codec.decode(m.to_bytes())["state"]["scores"]
    assert wire["rows"].dtype == np.uint16 and wire["pos"].dtype == np.uint16
    assert wire["neg"].dtype == np.uint8 and wire["sizes"].dtype == np.uint8  # <= ~20 entries
    assert len(wire["sketch_value"]) == 0
    small = sm.GAUC(exact=True).update(y[300:], s[300:], groups=groups[300:])
    small_wire = _codec.decode(small.to_bytes())["state"]["scores"]
    assert small_wire["rows"].dtype == np.uint8 and small_wire["sizes"].dtype == np.uint8
    back = sm.loads(m.to_bytes())
    assert back.to_bytes() == m.to_bytes()
    aucs, weights = [], []
    for g in np.unique(groups):
        yg, sg = y[groups == g], s[groups == g]
        if 0 < yg.sum() < len(yg):
            aucs.append(roc_auc_score(yg, sg))
            weights.append(len(yg))
    assert back.groups_used == len(aucs)
    assert back.compute() == pytest.approx(np.average(aucs, weights=weights), abs=1e-12)
    one = sm.GAUC(exact=True).update(y[:300], s[:300], groups=groups[:300])
    assert sm.loads(one.to_bytes()).compute() == 0.5


def test_bytes_per_entry_at_scale() -> None:
    """About a third of 0.7.0's bytes on a stream of mostly distinct scores: 10 bytes per exact
    entry and the labels plus 2 bytes per group, against 32 and 24."""
    rng = np.random.default_rng(5)
    n, users = 200_000, 60_000
    m = sm.GAUC().update(rng.integers(0, 2, n), rng.random(n), groups=rng.integers(0, users, n))
    entries, groups = len(m.scores.table().key), len(m.scores.groups)
    blob = m.to_bytes()
    assert len(blob) <= 10 * entries + 10 * groups + 2_048
    old = _codec.encode(_legacy_tree(m))
    assert len(old) >= 32 * entries + 24 * groups
    assert len(blob) < 0.4 * len(old)


def _tree() -> dict:
    rng = np.random.default_rng(6)
    n = 3_000
    m = sm.GAUC(max_exact=8).update(
        rng.integers(0, 2, n), rng.random(n), groups=rng.integers(0, 100, n)
    )
    assert len(_codec.decode(m.to_bytes())["state"]["scores"]["sketch_value"])
    return _codec.decode(m.to_bytes())


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda w: w.update(rows=w["rows"].astype(np.int32)), "rows must be an unsigned"),
        (lambda w: w.update(sizes=w["sizes"].astype(np.float64)), "sizes must be an unsigned"),
        (lambda w: w.update(pos=w["pos"].astype(np.int64)), "unsigned or float64"),
        (lambda w: w.update(neg=w["neg"].astype(np.float64)), "unsigned or float64"),
        (lambda w: w.update(sketch_value=w["sketch_value"][1:]), "one sketch_value per"),
        (lambda w: w.update(pos=w["pos"].astype(np.uint64) + np.uint64(2**60)), r"above 2\*\*53"),
        (lambda w: w.update(value=w["sketch_value"]), "exactly the fields"),
        (lambda w: w.update(key=w["key"].astype(np.int64)), "key must be float32 or"),
        (lambda w: w.update(sketch_value=np.zeros(len(w["sketch_value"]), np.int64)), "float32 or"),
        (lambda w: w.pop("sketch_value"), "exactly the fields"),
        (lambda w: w["groups"]["steps"].__setitem__(3, 0), "steps must be positive"),
        (lambda w: w["groups"].update(steps=w["groups"]["steps"].astype(np.int64)), "unsigned"),
        (lambda w: w["groups"].update(first=2**63), "first must be an int64"),
        (lambda w: w["groups"].update(first=1.5), "first must be an int64"),
        (lambda w: w["groups"].pop("first"), "'first' and 'steps'"),
        (
            lambda w: w["groups"].update(
                first=2**63 - 10, steps=np.full(len(w["groups"]["steps"]), 1, np.uint8)
            ),
            "stay within int64",
        ),
    ],
)
def test_malformed_compact_forms_are_refused(change, message: str) -> None:
    tree = _tree()
    groups = tree["state"]["scores"]["groups"]
    groups["steps"] = groups["steps"].copy()
    change(tree["state"]["scores"])
    with pytest.raises(sm.StateDecodeError, match=message):
        sm.loads(_codec.encode(tree))


def test_a_bucket_value_outside_its_bucket_is_refused() -> None:
    tree = _tree()
    wire = tree["state"]["scores"]
    values = wire["sketch_value"].copy()
    known = np.flatnonzero(~np.isnan(values))
    values[known[0]] = 2.0  # a probability outside [0, 1]: in no bucket of the grid
    wire["sketch_value"] = values
    with pytest.raises(sm.StateDecodeError):
        sm.loads(_codec.encode(tree))


def test_float32_scores_travel_as_float32() -> None:
    """Scores a float32 model wrote travel as float32 (6 bytes per exact entry), exactly; one
    score that is not a float32 keeps the keys float64; bucket keys and one-score values of
    sketched groups are float32 when they can be."""
    rng = np.random.default_rng(7)
    n = 50_000
    y, g = rng.integers(0, 2, n), rng.integers(0, 20_000, n)
    s32 = rng.random(n).astype(np.float32).astype(np.float64)
    m = sm.GAUC().update(y, s32, groups=g)
    wire = _codec.decode(m.to_bytes())["state"]["scores"]
    assert wire["key"].dtype == np.float32
    back = sm.loads(m.to_bytes())
    assert back.to_bytes() == m.to_bytes() and back.compute() == m.compute()
    np.testing.assert_array_equal(back.scores.table().key, m.scores.table().key)
    entries = len(m.scores.table().key)
    assert len(m.to_bytes()) <= 6 * entries + 10 * len(m.scores.groups) + 2_048
    s_mixed = s32.copy()
    s_mixed[123] = 0.1  # not a float32
    wide = _codec.decode(sm.GAUC().update(y, s_mixed, groups=g).to_bytes())["state"]["scores"]
    assert wide["key"].dtype == np.float64
    sketched = sm.GAUC(max_exact=4).update(y, rng.random(n), groups=g % 500)
    sw = _codec.decode(sketched.to_bytes())["state"]["scores"]
    assert sw["key"].dtype == np.float32  # bucket keys
    assert np.isnan(sw["sketch_value"]).any()
    assert sm.loads(sketched.to_bytes()).to_bytes() == sketched.to_bytes()


@pytest.mark.parametrize(
    "ids",
    [
        np.arange(0, 3_000, 3),  # dense: steps of one byte
        np.array([-(2**63), -5, 0, 7, 2**63 - 1]),  # the whole int64 span
        np.array([10**18 + 1, 10**18 + 2**40]),  # hashed-looking ids: wide steps
    ],
)
def test_integer_groups_travel_as_steps(ids: np.ndarray) -> None:
    rng = np.random.default_rng(8)
    n = 4_000
    groups = ids[rng.integers(0, len(ids), n)]
    m = sm.GAUC(exact=True).update(rng.integers(0, 2, n), rng.random(n), groups=groups)
    wire = _codec.decode(m.to_bytes())["state"]["scores"]["groups"]
    assert set(wire) == {"first", "steps"}
    assert wire["first"] == int(np.unique(groups)[0])
    if ids[1] - ids[0] == 3:
        assert wire["steps"].dtype == np.uint8
    back = sm.loads(m.to_bytes())
    np.testing.assert_array_equal(back.scores.groups, np.unique(groups))
    assert back.to_bytes() == m.to_bytes()
    assert back.compute() == m.compute()


def test_scores_beyond_float32_stay_float64_without_a_warning() -> None:
    import warnings

    y = np.array([0, 1, 0, 1])
    s = np.array([1e300, -1e300, 3.0, 1e-300])
    m = sm.GAUC(exact=True, score_type="real").update(y, s, groups=np.array([1, 1, 2, 2]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        blob = m.to_bytes()
    assert _codec.decode(blob)["state"]["scores"]["key"].dtype == np.float64
    assert sm.loads(blob).to_bytes() == blob


def _nan_entry_with_room(wire: dict) -> int:
    """A sketched entry of unknown value (nan) whose next key in its group lies at least one
    bucket above it (or which ends its group), so a key moved by half a bucket keeps order."""
    ends = np.cumsum(wire["sizes"].astype(np.int64))
    key, values = wire["key"], wire["sketch_value"]
    for i in np.flatnonzero(np.isnan(values)):
        if i + 1 in ends or key[i + 1] - key[i] >= 1:
            return int(i)
    raise AssertionError("no such entry")


def _set(wire: dict, name: str, at: int, value: float) -> None:
    column = wire[name].copy()
    column[at] = value
    wire[name] = column


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda w: _set(w, "pos", 0, w["pos"][0] + 1), "do not add up to its rows"),
        (lambda w: _set(w, "key", 1, w["key"][0]), "keys must increase within a group"),
        (
            lambda w: _set(
                w, "sketch_value", int(np.flatnonzero(~np.isnan(w["sketch_value"]))[0]), np.inf
            ),
            "finite or nan",
        ),
        (
            lambda w: _set(
                w, "sketch_value", int(np.flatnonzero(~np.isnan(w["sketch_value"]))[0]), 2.0
            ),
            "lies outside the bucket",
        ),
        (
            lambda w: _set(w, "key", (i := _nan_entry_with_room(w)), float(w["key"][i]) + 0.5),
            "bucket keys out of range",
        ),
    ],
)
def test_inconsistent_entries_are_refused(change, message: str) -> None:
    """Each check of the decoder on the entries (0.8.16 reads them in fewer passes)."""
    tree = _tree()
    change(tree["state"]["scores"])
    with pytest.raises(sm.StateDecodeError, match=message):
        sm.loads(_codec.encode(tree))


def test_inconsistent_entries_of_exact_groups_are_refused() -> None:
    """The count and order checks on groups held exactly, some of them empty of entries."""
    rng = np.random.default_rng(8)
    n = 400
    m = sm.GAUC(exact=True).update(
        rng.integers(0, 2, n), rng.random(n), groups=rng.integers(0, 40, n) * 3
    )
    assert sm.loads(m.to_bytes()).to_bytes() == m.to_bytes()
    for name, at, message in (("neg", 5, "do not add up"), ("key", 3, "must increase")):
        tree = _codec.decode(m.to_bytes())
        wire = tree["state"]["scores"]
        _set(wire, name, at, wire[name][at] + 1 if name == "neg" else wire["key"][at - 1])
        with pytest.raises(sm.StateDecodeError, match=message):
            sm.loads(_codec.encode(tree))
