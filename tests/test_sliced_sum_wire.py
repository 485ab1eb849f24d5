"""The packed decoder of log-loss and Brier slices (``streammetrics.wrappers._sum_wire``): a
valid wire form of many slices decodes into the table its next update would build, writing the
same bytes; every forged form is refused or read exactly as the per-slice decoder does."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import streammetrics as sm
from streammetrics import _codec
from streammetrics.errors import StateDecodeError
from streammetrics.wrappers._sum_pack import SumPack
from tests.test_sliced_moments_wire import Edit, _drop, _edit, _envelope, _key, _put
from tests.test_sliced_wire import _decoders_agree, _slow_loads, same

SLICES = 40


def _sliced(
    metric: sm.Metric, weighted: bool, seed: int = 0, multiclass: bool = False
) -> sm.Sliced:
    """An unweighted batch over every slice, then (``weighted``) a weighted one over half."""
    rng = np.random.default_rng(seed)
    n = 3_000
    if multiclass:
        y, p = rng.integers(0, 3, n), rng.dirichlet(np.ones(3), n)
    else:
        y = rng.integers(0, 2, n)
        p = np.clip(0.3 * y + 0.7 * rng.random(n), 0.0, 1.0)
    by = rng.integers(0, SLICES, n) * 3 - 50
    out = sm.Sliced(metric)
    half = n // 2
    out.update(y[:half], p[:half], by=by[:half])
    rest = (by[half:] % 2 == 0) if weighted else np.ones(n - half, dtype=bool)
    kwargs = {"sample_weight": rng.random(rest.sum()) * 2} if weighted else {}
    out.update(y[half:][rest], p[half:][rest], by=by[half:][rest], **kwargs)
    return out


CONFIGS = [
    pytest.param(lambda: sm.LogLoss(), False, False, id="logloss"),
    pytest.param(lambda: sm.LogLoss(eps=1e-7), True, False, id="logloss-weighted"),
    pytest.param(lambda: sm.LogLoss(), True, True, id="logloss-multiclass"),
    pytest.param(lambda: sm.BrierScore(), True, False, id="brier-weighted"),
    pytest.param(lambda: sm.BrierScore(labels=[0, 1, 2]), False, True, id="brier-multiclass"),
]


@pytest.mark.parametrize(("make", "weighted", "multiclass"), CONFIGS)
def test_sum_slices_decode_into_one_table(make, weighted, multiclass, monkeypatch):
    sliced = _sliced(make(), weighted, multiclass=multiclass)
    blob = sliced.to_bytes()
    loaded = sm.loads(blob)
    pack = loaded.slices._pack
    assert isinstance(pack, SumPack) and loaded.slices._dict is None
    slow = _slow_loads(blob, monkeypatch)
    assert slow.slices._pack is None
    assert loaded.to_bytes() == slow.to_bytes() == blob
    assert same(loaded.compute(), slow.compute())
    assert same(loaded.intervals(), slow.intervals())
    again = SumPack.of_slices(sliced._template, slow.slices.view())
    assert again is not None and again.keys == pack.keys
    for mine, theirs in zip(
        (pack.counts, pack.columns, *pack.fields),
        (again.counts, again.columns, *again.fields),
        strict=True,
    ):
        assert mine.dtype == theirs.dtype and mine.tobytes() == theirs.tobytes()
    more = _sliced(make(), weighted, seed=1, multiclass=multiclass)
    assert (loaded + more).to_bytes() == (slow + more).to_bytes()


def _scaled(field: str, factor: float) -> Edit:
    return _put(field, lambda v: v * factor)


def _weighted(pairs: list[Any]) -> int:
    return next(
        j
        for j, (_, env) in enumerate(pairs)
        if env["state"]["weight_sq"] != env["state"]["weight_sum"]
    )


W = _weighted

EDITS: dict[str, Edit] = {
    "count zero": _put("count", 0),
    "count a float": _put("count", 3.0),
    "count one": _put("count", 1),
    "count huge": _put("count", 2**52),
    "columns -1": _put("columns", -1),
    "columns 2": _put("columns", 2),
    "columns a bool": _put("columns", False),
    "columns a float": _put("columns", 0.0),
    "columns past the bound": _put("columns", 2**31 + 1),
    "weight_sum negative": _put("weight_sum", -1.0),
    "weight_sum an int": _put("weight_sum", lambda v: round(v)),
    "weight_sum zero": _put("weight_sum", 0.0),
    "weight_sum past the bound": _put("weight_sum", 2.0**101),
    "weight_sum halved": _scaled("weight_sum", 0.5),
    "weight_sum doubled": _scaled("weight_sum", 2.0),
    "loss_sum negative": _put("loss_sum", -1.0),
    "loss_sum negative zero": _put("loss_sum", -0.0),
    "loss_sum zero": _put("loss_sum", 0.0),
    "loss_sum huge": _scaled("loss_sum", 1e3),
    "loss_sum nan": _put("loss_sum", math.nan),
    "loss_sum inf": _put("loss_sum", math.inf),
    "loss_sum an int": _put("loss_sum", 3),
    "loss_sq_sum nan": _put("loss_sq_sum", math.nan),
    "loss_sq_sum tiny": _scaled("loss_sq_sum", 1e-3),
    "loss_sq_sum huge": _scaled("loss_sq_sum", 1e3),
    "loss_sq_sum negative": _put("loss_sq_sum", -1.0),
    "weight_sq nan": _put("weight_sq", math.nan),
    "weight_sq tiny": _scaled("weight_sq", 1e-3),
    "weight_sq huge": _scaled("weight_sq", 1e9),
    "weight_sq of a weighted slice halved": _put("weight_sq", lambda v: v * 0.5, W),
    "loss_wsq nan": _put("loss_wsq", math.nan),
    "both wsq nan": lambda p: (_put("loss_wsq", math.nan)(p), _put("loss_sq_wsq", math.nan)(p)),
    "loss_wsq negative": _put("loss_wsq", -1.0),
    "loss_wsq doubled": _put("loss_wsq", lambda v: v * 2, W),
    "loss_wsq tiny": _put("loss_wsq", lambda v: v * 1e-6, W),
    "loss_sq_wsq huge": _put("loss_sq_wsq", lambda v: v * 1e3, W),
    "loss_sq_wsq zero": _put("loss_sq_wsq", 0.0, W),
    "loss_sq_wsq negative zero": _put("loss_sq_wsq", -0.0),
    "a slice of zero weight": lambda p: [
        _put(f, 0.0)(p)
        for f in ("weight_sum", "loss_sum", "loss_sq_sum", "weight_sq", "loss_wsq", "loss_sq_wsq")
    ],
    "a slice of zero weight, negative zeros": lambda p: [
        _put(f, -0.0)(p)
        for f in ("weight_sum", "loss_sum", "loss_sq_sum", "weight_sq", "loss_wsq", "loss_sq_wsq")
    ],
    "a slice of zero weight and a loss": lambda p: [
        _put(f, 1.0 if f == "loss_sum" else 0.0)(p)
        for f in ("weight_sum", "loss_sum", "loss_sq_sum", "weight_sq", "loss_wsq", "loss_sq_wsq")
    ],
    "state field extra": _put("extra", 1.0),
    "state field missing": _drop("loss_wsq"),
    "config differs": _envelope("config", {"labels": None, "eps": 1e-7}),
    "schema older": _envelope("schema", 2),
    "key repeated": lambda p: _key(p[4][0])(p),
    "key of another kind": _key("x"),
    "slices out of order": lambda p: p.reverse(),
}


@pytest.mark.parametrize("edit", list(EDITS), ids=list(EDITS))
def test_the_sum_decoder_accepts_what_the_per_slice_decoder_accepts(edit, monkeypatch):
    """Each edit to one slice of 40 weighted ``Sliced(LogLoss())`` slices: both decoders
    refuse it, or both give the same state."""
    blob = _sliced(sm.LogLoss(), True).to_bytes()
    bad = _edit(_codec.decode(blob), EDITS[edit])
    _decoders_agree(bad, monkeypatch)


BRIER_EDITS: dict[str, Edit] = {
    "columns 0 beside sums of three": _put("columns", 0),
    "columns 2": _put("columns", 2),
    "columns 4": _put("columns", 4),
    "loss_sum past two per row": _put("loss_sum", lambda v: v * 2.5),
}


@pytest.mark.parametrize("edit", list(BRIER_EDITS), ids=list(BRIER_EDITS))
def test_the_brier_decoder_reads_each_slices_bound(edit, monkeypatch):
    blob = _sliced(sm.BrierScore(labels=[0, 1, 2]), False, multiclass=True).to_bytes()
    bad = _edit(_codec.decode(blob), BRIER_EDITS[edit])
    _decoders_agree(bad, monkeypatch)


def test_slice_counts_past_int64_are_refused():
    """2,048 slices of 2**53 rows each beside a state of 5: their counts add past int64, which
    a sum in int64 wrapped to 5 (a review's forged blob); the table counts in Python ints."""
    s = sm.Sliced(sm.LogLoss()).update([0] * 5, [0.5] * 5, by=[0, 0, 0, 1, 1])
    tree = _codec.decode(s.to_bytes())
    env = tree["state"]["slices"][0][1]
    sums = ("weight_sum", "weight_sq", "loss_sum", "loss_sq_sum", "loss_wsq", "loss_sq_wsq")
    big = {**env["state"], **dict.fromkeys(sums, 0.0), "count": 2**53}
    big.update(weight_sum=2.0**53, weight_sq=2.0**53)
    small = {**big, "count": 5, "weight_sum": 5.0, "weight_sq": 5.0}
    pairs = [[i, {**env, "state": big}] for i in range(2_048)]
    tree["state"]["slices"] = [*pairs, [2_048, {**env, "state": small}]]
    with pytest.raises(StateDecodeError, match="the slices hold"):
        sm.loads(_codec.encode(tree))
