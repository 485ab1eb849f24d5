"""``Sliced(CalibrationError())`` keeps its slices as one table of bin sums
(``streammetrics.wrappers._bins_pack``): the per-slice path's state to the bit (bytes, values),
every refused batch refused alike with nothing changed."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
import streammetrics.wrappers._slice_table as table_module
from streammetrics import _codec
from streammetrics.errors import InputError, NoIntervalError
from streammetrics.wrappers._bins_pack import BinsPack
from tests.test_sliced_moments_wire import Edit, _drop, _edit, _envelope, _key, _put
from tests.test_sliced_sum_pack import REFUSED
from tests.test_sliced_wire import _decoders_agree, _slow_loads


def _batches(seed: int, slices: int, multiclass: bool, weighted: bool) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for n in (3_000, 1, 500, 4_000):
        if multiclass:
            y, p = rng.integers(0, 3, n), rng.dirichlet(np.ones(3), n)
        else:
            y = rng.integers(0, 2, n)
            p = np.clip(0.3 * y + 0.7 * rng.random(n), 0.0, 1.0)
        kwargs = {"by": rng.integers(0, slices, n)}
        if weighted:
            kwargs["sample_weight"] = rng.random(n) * 2 * (rng.random(n) > 0.1)
        out.append(((y, p), kwargs))
    return out


def _fed(metric: sm.Metric, batches: list) -> sm.Sliced:
    s = sm.Sliced(metric)
    for args, kwargs in batches:
        s.update(*args, **kwargs)
    return s


def _per_slice(make, batches, monkeypatch) -> sm.Sliced:  # type: ignore[no-untyped-def]
    with monkeypatch.context() as m:
        m.setattr(table_module, "library_state", lambda template: False)
        out = _fed(make(), batches)
    assert out.slices._pack is None
    return out


CONFIGS = [
    pytest.param(lambda: sm.CalibrationError(), False, False, id="ece"),
    pytest.param(lambda: sm.CalibrationError(norm="l2", bins=7), False, True, id="l2-weighted"),
    pytest.param(lambda: sm.CalibrationError(norm="max", bins=40), True, False, id="mce-multi"),
    pytest.param(lambda: sm.CalibrationError(bins=1), True, True, id="one-bin-weighted"),
]


@pytest.mark.parametrize(("make", "multiclass", "weighted"), CONFIGS)
@pytest.mark.parametrize("slices", [1, 30, 700])
def test_the_table_is_the_per_slice_state(make, multiclass, weighted, slices, monkeypatch):
    batches = _batches(slices, slices, multiclass, weighted)
    packed = _fed(make(), batches)
    assert isinstance(packed.slices._pack, BinsPack)
    plain = _per_slice(make, batches, monkeypatch)
    values = packed.compute()
    assert packed.slices._dict is None  # from the table
    assert repr(values) == repr(plain.compute())
    assert packed.to_bytes() == plain.to_bytes()
    for key in packed.keys()[::13]:
        assert packed[key].to_bytes() == plain[key].to_bytes()
    back = sm.loads(packed.to_bytes())
    assert back.to_bytes() == packed.to_bytes()
    more = _fed(make(), _batches(slices + 1, slices, multiclass, weighted))
    assert (packed + more).to_bytes() == (plain + more).to_bytes()
    # Decoded one state per slice, packed again by the next batch: the same table.
    args, kwargs = batches[0]
    assert back.update(*args, **kwargs).to_bytes() == packed.update(*args, **kwargs).to_bytes()
    with pytest.raises(NoIntervalError):
        packed.intervals()


def test_the_values_agree_with_a_metric_alone():
    """To rounding: a one-row batch waits in ``Sliced``'s buffer and is added with the next
    batch's rows, where the metric alone adds it at once."""
    batches = _batches(3, 20, False, True)
    s = _fed(sm.CalibrationError(), batches)
    for key in (0, 7, 19):
        alone = sm.CalibrationError()
        for (y, p), kw in batches:
            rows = kw["by"] == key
            alone.update(y[rows], p[rows], sample_weight=kw["sample_weight"][rows])
        assert s.compute()[key] == pytest.approx(alone.compute(), rel=1e-12)


@pytest.mark.parametrize(("args", "kwargs", "word"), REFUSED)
def test_a_refused_batch_changes_nothing(args, kwargs, word):
    s = _fed(sm.CalibrationError(), _batches(4, 5, False, True))
    before = s.to_bytes()
    with pytest.raises(InputError, match=word):
        s.update(*args, **kwargs)
    assert s.to_bytes() == before and isinstance(s.slices._pack, BinsPack)


def test_one_row_per_call_folds_into_the_table(monkeypatch):
    rng = np.random.default_rng(5)
    n = 3_000
    y, p, by = rng.integers(0, 2, n), rng.random(n), rng.integers(0, 50, n)
    s = sm.Sliced(sm.CalibrationError())
    for i in range(n):
        s.update(int(y[i]), float(p[i]), by=int(by[i]))
    plain = _per_slice(sm.CalibrationError, [((y, p), {"by": by})], monkeypatch)
    assert isinstance(s.slices._pack, BinsPack)
    got, want = s.compute(), plain.compute()  # (the calls fold in other groups: rounding)
    assert got.keys() == want.keys()
    assert all(got[k] == pytest.approx(want[k], rel=1e-12) for k in want)


# -- decoding ------------------------------------------------------------------------------------


def test_many_slices_decode_into_one_table(monkeypatch):
    blob = _fed(sm.CalibrationError(bins=6), _batches(6, 40, True, True)).to_bytes()
    fast, slow = sm.loads(blob), _slow_loads(blob, monkeypatch)
    assert isinstance(fast.slices._pack, BinsPack) and slow.slices._pack is None
    assert fast.to_bytes() == slow.to_bytes() == blob
    assert repr(fast.compute()) == repr(slow.compute())


def _cell(field: str, value: float):  # type: ignore[no-untyped-def]
    def change(arr: np.ndarray) -> np.ndarray:
        out = arr.copy()
        out[2] = value
        return out

    return _put(field, change)


BIN_EDITS: dict[str, Edit] = {
    "weight negative": _cell("weight", -1.0),
    "weight negative zero": _cell("weight", -0.0),
    "weight nan": _cell("weight", float("nan")),
    "weight past the bound": _cell("weight", 2.0**101),
    "weight near the bound": _cell("weight", 2.0**100),
    "confidence above the weight": _put("confidence", lambda a: a * 1.01 + 1.0),
    "outcome negative": _cell("outcome", -1e-9),
    "confidence int64": _put("confidence", lambda a: a.astype(np.int64)),
    "confidence short": _put("confidence", lambda a: a[:-1].copy()),
    "confidence 2-d": _put("confidence", lambda a: a.reshape(1, -1)),
    "columns -1": _put("columns", -1),
    "columns 0": _put("columns", 0),
    "columns 2 beside 3 labels": _put("columns", 2),
    "columns a bool": _put("columns", True),
    "count zero": _put("count", 0),
    "field missing": _drop("outcome"),
    "config differs": _envelope("config", {"bins": 7, "norm": "l1", "labels": None}),
    "key repeated": lambda p: _key(p[4][0])(p),
}


def _outcome_at_weight(pairs: list) -> None:
    state = pairs[3][1]["state"]
    state["outcome"] = state["weight"] * (1 + 1e-6)


BIN_EDITS["outcome at the slack"] = _outcome_at_weight


@pytest.mark.parametrize("edit", list(BIN_EDITS), ids=list(BIN_EDITS))
def test_the_bins_decoder_accepts_what_the_per_slice_decoder_accepts(edit, monkeypatch):
    blob = _fed(sm.CalibrationError(bins=6), _batches(6, 40, True, True)).to_bytes()
    bad = _edit(_codec.decode(blob), BIN_EDITS[edit])
    _decoders_agree(bad, monkeypatch)
