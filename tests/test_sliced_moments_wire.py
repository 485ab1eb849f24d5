"""The packed decoder of regression slices (``streammetrics.wrappers._moments_wire``): a valid
wire form of many slices decodes straight into the table its next update would build, writing
the same bytes, and every forged form is refused or read exactly as the per-slice decoder does."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import streammetrics as sm
from streammetrics import _codec
from streammetrics.errors import StateDecodeError
from streammetrics.wrappers._fit_pack import FitPack
from streammetrics.wrappers._moments_pack import MomentsPack
from streammetrics.wrappers._moments_wire import MOMENTS_DECODE_MIN
from tests.test_sliced_wire import _decoders_agree, _slow_loads, same

SLICES = 40  # past MOMENTS_DECODE_MIN (4)


def _sliced(metric: sm.Metric, keys: str, weighted: bool, seed: int = 0) -> sm.Sliced:
    """Slices of an unweighted batch, then (``weighted``) a weighted batch over half of them:
    some slices keep the loss's moments under the weights squared, some do not."""
    rng = np.random.default_rng(seed)
    n = 3_000
    t = rng.normal(size=n) * 3 + 10
    p = t + rng.normal(size=n)
    codes = rng.integers(0, SLICES, n)
    by: Any
    if keys == "int":
        by = codes * 7 - 100
    elif keys == "str":
        by = np.array([f"k{c}" for c in range(SLICES)])[codes]
    else:
        by = (codes % 5, np.array([f"d{c // 5}" for c in range(SLICES)])[codes])
    out = sm.Sliced(metric)
    half = n // 2
    first = tuple(c[:half] for c in by) if isinstance(by, tuple) else by[:half]
    out.update(t[:half], p[:half], by=first)
    rest = (codes[half:] % 2 == 0) if weighted else np.ones(n - half, dtype=bool)
    second = tuple(c[half:][rest] for c in by) if isinstance(by, tuple) else by[half:][rest]
    kwargs = {"sample_weight": rng.random(rest.sum()) * 2} if weighted else {}
    out.update(t[half:][rest], p[half:][rest], by=second, **kwargs)
    return out


CONFIGS = [
    pytest.param(lambda: sm.MeanSquaredError(), "int", False, id="mse-int"),
    pytest.param(lambda: sm.MeanSquaredError(), "str", True, id="mse-str-weighted"),
    pytest.param(lambda: sm.RootMeanSquaredError(), "composite", True, id="rmse-composite"),
    pytest.param(lambda: sm.MeanAbsoluteError(), "int", True, id="mae-weighted"),
    pytest.param(lambda: sm.MeanAbsolutePercentageError(), "int", False, id="mape"),
    pytest.param(lambda: sm.R2Score(), "int", True, id="r2-weighted"),
    pytest.param(lambda: sm.R2Score(multioutput=[2.0]), "str", False, id="r2-listed"),
    pytest.param(lambda: sm.ExplainedVariance(), "composite", False, id="ev"),
    pytest.param(lambda: sm.PearsonCorrCoef(), "int", True, id="pearson-weighted"),
    pytest.param(lambda: sm.RegressionReport(), "str", True, id="report-weighted"),
]


@pytest.mark.parametrize(("make", "keys", "weighted"), CONFIGS)
def test_regression_slices_decode_into_one_table(make, keys, weighted, monkeypatch):
    sliced = _sliced(make(), keys, weighted)
    blob = sliced.to_bytes()
    loaded = sm.loads(blob)
    pack = loaded.slices._pack
    assert isinstance(pack, (MomentsPack, FitPack)) and loaded.slices._dict is None
    slow = _slow_loads(blob, monkeypatch)
    assert slow.slices._pack is None
    assert loaded.to_bytes() == slow.to_bytes() == blob
    assert same(loaded.compute(), slow.compute())
    if not isinstance(sliced._template, sm.RegressionReport):
        assert same(loaded.intervals(), slow.intervals())
    # The table is the one the next update of the decoded states packs (``of_slices``).
    again = type(pack).of_slices(sliced._template, slow.slices.view())
    assert again is not None and again.keys == pack.keys
    for mine, theirs in zip(_arrays(pack), _arrays(again), strict=True):
        assert mine.dtype == theirs.dtype and mine.tobytes() == theirs.tobytes()
    for key in loaded.keys()[::7]:
        assert loaded[key].to_bytes() == slow[key].to_bytes()
    more = _sliced(make(), keys, weighted, seed=1)
    assert (loaded + more).to_bytes() == (slow + more).to_bytes()
    if keys == "int":
        t, p, by = [1.0, 2.0, 4.0], [1.5, 2.5, 3.0], [-100, -93, 5_000]
        assert loaded.update(t, p, by=by).to_bytes() == slow.update(t, p, by=by).to_bytes()


def _arrays(pack: Any) -> list[np.ndarray]:
    fields = pack._fields() if isinstance(pack, MomentsPack) else list(pack.fields)
    extra = [pack.has_wsq] if isinstance(pack, MomentsPack) else []
    return [pack.counts, *fields, *extra]


def test_few_slices_decode_one_by_one():
    blob = _sliced(sm.MeanSquaredError(), "int", False).to_bytes()
    tree = _codec.decode(blob)
    tree["state"]["slices"] = tree["state"]["slices"][: MOMENTS_DECODE_MIN - 1]
    tree["state"]["count"] = sum(p[1]["state"]["count"] for p in tree["state"]["slices"])
    loaded = sm.loads(_codec.encode(tree))
    assert loaded.slices._pack is None and len(loaded) == MOMENTS_DECODE_MIN - 1


# -- forged forms ---------------------------------------------------------------------------------

Edit = Callable[[list[Any]], None]


def _edit(tree: dict, change: Edit) -> bytes:
    tree = copy.deepcopy(tree)
    change(tree["state"]["slices"])
    return _codec.encode(tree)


def _weighted_slice(pairs: list[Any]) -> int:
    """The first slice keeping the loss's moments under the weights squared."""
    return next(j for j, (_, env) in enumerate(pairs) if env["state"]["wsq_mean"].size)


def _plain_slice(pairs: list[Any]) -> int:
    return next(j for j, (_, env) in enumerate(pairs) if not env["state"]["wsq_mean"].size)


def _put(path: str, value: Any, pick: Callable[[list[Any]], int] = lambda p: 3) -> Edit:
    """Set ``path`` (fields joined by "/") of one slice's state to ``value`` (called on the
    old value when callable)."""

    def change(pairs: list[Any]) -> None:
        *parents, last = path.split("/")
        node = pairs[pick(pairs)][1]["state"]
        for name in parents:
            node = node[name]
        node[last] = value(node[last]) if callable(value) else value

    return change


def _cell(value: float, at: tuple[int, int] = (0, 0)) -> Callable[[np.ndarray], np.ndarray]:
    def change(arr: np.ndarray) -> np.ndarray:
        out = arr.copy()
        out[at] = value
        return out

    return change


def _drop(path: str, pick: Callable[[list[Any]], int] = lambda p: 3) -> Edit:
    def change(pairs: list[Any]) -> None:
        *parents, last = path.split("/")
        node = pairs[pick(pairs)][1]["state"]
        for name in parents:
            node = node[name]
        del node[last]

    return change


def _envelope(field: str, value: Any) -> Edit:
    def change(pairs: list[Any]) -> None:
        pairs[3][1][field] = value

    return change


def _key(value: Any) -> Edit:
    def change(pairs: list[Any]) -> None:
        pairs[3][0] = value

    return change


W, P = _weighted_slice, _plain_slice

LOSS_EDITS: dict[str, Edit] = {
    "count zero": _put("count", 0),
    "count a float": _put("count", 3.0),
    "count past the bound": _put("count", 2**53 + 1),
    "count below the weight": _put("count", 1, P),
    "weight negative": _put("moments/weight", -1.0),
    "weight negative zero": _put("moments/weight", -0.0),
    "weight an int": _put("moments/weight", lambda w: round(w)),
    "weight a bool": _put("moments/weight", True),
    "weight nan": _put("moments/weight", math.nan),
    "weight past the bound": _put("moments/weight", 2.0**101),
    "weight zero": _put("moments/weight", 0.0),
    "mean nan": _put("moments/mean", _cell(math.nan)),
    "mean negative": _put("moments/mean", _cell(-1.0)),
    "mean huge": _put("moments/mean", _cell(1e140)),
    "mean negative zero": _put("moments/mean", _cell(-0.0)),
    "mean_low huge": _put("moments/mean_low", _cell(1e140)),
    "mean_low below zero": _put("moments/mean_low", lambda a: a - 1e-17),
    "mean 2 outputs": _put("moments/mean", lambda a: np.repeat(a, 2, axis=1)),
    "mean 2 rows": _put("moments/mean", lambda a: np.repeat(a, 2, axis=0)),
    "mean empty": _put("moments/mean", lambda a: a[:, :0].copy()),
    "mean int64": _put("moments/mean", lambda a: a.astype(np.int64)),
    "mean 1-d": _put("moments/mean", lambda a: a.ravel()),
    "mean a list": _put("moments/mean", lambda a: a.tolist()),
    "comoment negative": _put("moments/comoment", _cell(-1.0)),
    "comoment huge": _put("moments/comoment", _cell(1e305)),
    "comoment inf": _put("moments/comoment", _cell(math.inf)),
    "moments field extra": _put("moments/extra", 1.0),
    "weight_sq an int": _put("weight_sq", lambda v: round(v), P),
    "weight_sq a bool": _put("weight_sq", True),
    "weight_sq nan": _put("weight_sq", math.nan),
    "weight_sq negative zero": _put("weight_sq", -0.0),
    "a slice of zero weight, weight_sq -0.0": lambda p: (
        _put("moments", lambda m: {**m, "weight": 0.0, "mean": m["mean"] * 0.0}, P)(p),
        _put("moments", lambda m: {**m, "mean_low": m["mean_low"] * 0.0}, P)(p),
        _put("moments", lambda m: {**m, "comoment": m["comoment"] * 0.0}, P)(p),
        _put("weight_sq", -0.0, P)(p),
    ),
    "weight_sq negative": _put("weight_sq", -1.0),
    "weight_sq too small": _put("weight_sq", lambda v: v * 1e-3, W),
    "weight_sq too large": _put("weight_sq", lambda v: v * 1e9, W),
    "weight_sq a string": _put("weight_sq", "x"),
    "weight_sq missing": _drop("weight_sq"),
    "wsq_mean of a plain slice": _put("wsq_mean", np.array([0.5]), P),
    "wsq dropped from a weighted slice": lambda p: (
        _put("wsq_mean", np.zeros(0), W)(p),
        _put("wsq_spread", np.zeros(0), W)(p),
    ),
    "wsq of two outputs": lambda p: (
        _put("wsq_mean", lambda a: np.repeat(a, 2), W)(p),
        _put("wsq_spread", lambda a: np.repeat(a, 2), W)(p),
    ),
    "wsq_mean negative": _put("wsq_mean", np.array([-1.0]), W),
    "wsq_mean far": _put("wsq_mean", lambda a: a + 1e3, W),
    "wsq_mean nan": _put("wsq_mean", np.array([math.nan]), W),
    "wsq both nan": lambda p: (
        _put("wsq_mean", np.array([math.nan]), W)(p),
        _put("wsq_spread", np.array([math.nan]), W)(p),
    ),
    "wsq_spread negative": _put("wsq_spread", np.array([-1.0]), W),
    "wsq_spread huge": _put("wsq_spread", lambda a: a * 1e6, W),
    "wsq_spread inf": _put("wsq_spread", np.array([math.inf]), W),
    "wsq_spread int64": _put("wsq_spread", lambda a: a.astype(np.int64), W),
    "wsq_spread 2-d": _put("wsq_spread", lambda a: a.reshape(1, 1), W),
    "state field extra": _put("extra", 1),
    "config differs": _envelope("config", {"multioutput": "raw_values"}),
    "schema older": _envelope("schema", 2),
    "schema newer": _envelope("schema", 9),
    "class differs": _envelope("class", "MeanAbsoluteError"),
    "key repeated": lambda p: _key(p[4][0])(p),
    "key of another kind": _key("x"),
    "key a float": _key(1.5),
    "slices out of order": lambda p: p.reverse(),
}


@pytest.mark.parametrize("edit", list(LOSS_EDITS), ids=list(LOSS_EDITS))
def test_the_loss_decoder_accepts_what_the_per_slice_decoder_accepts(edit, monkeypatch):
    """Each edit to one slice of 40 weighted ``Sliced(MeanSquaredError())`` slices: both
    decoders refuse it, or both give the same state."""
    blob = _sliced(sm.MeanSquaredError(), "int", True).to_bytes()
    bad = _edit(_codec.decode(blob), LOSS_EDITS[edit])
    _decoders_agree(bad, monkeypatch)


FIT_EDITS: dict[str, Edit] = {
    "squared error mean negative": _put("moments/mean", _cell(-1.0, (1, 0))),
    "y_true mean negative": _put("moments/mean", _cell(-1.0, (0, 0))),
    "comoment negative": _put("moments/comoment", _cell(-1.0, (0, 0))),
    "moments 3 rows": _put("moments/mean", lambda a: np.vstack([a, a[:1]])),
    "shape weight negative": _put("shape/weight", -1.0),
    "shape weight an int": _put("shape/weight", lambda w: round(w)),
    "shape weight differs": _put("shape/weight", lambda w: w * 2),
    "shape mean huge": _put("shape/mean", _cell(1e70)),
    "shape mean_low huge": _put("shape/mean_low", _cell(2.0**211)),
    "shape even moment negative": _put("shape/moments", _cell(-1.0, (0, 0))),
    "shape odd moment negative": _put("shape/moments", _cell(-1.0, (1, 0))),
    "shape moment past its bound": _put("shape/moments", _cell(2.0**600, (0, 0))),
    "shape moment nan": _put("shape/moments", _cell(math.nan, (3, 0))),
    "shape moments 2 outputs": _put("shape/moments", lambda a: np.repeat(a, 2, axis=1)),
    "shape empty": _put("shape", lambda s: {**s, "mean": s["mean"][:, :0].copy()}),
    "shape field missing": _put("shape", lambda s: {k: v for k, v in s.items() if k != "mean"}),
    "shape missing": _drop("shape"),
    "weight_sq too small": _put("weight_sq", lambda v: v * 1e-3),
    "weight_sq nan": _put("weight_sq", math.nan),
    "config differs": _envelope("config", {"multioutput": "raw_values", "force_finite": True}),
    "schema older": _envelope("schema", 2),
    "count zero": _put("count", 0),
}


@pytest.mark.parametrize("edit", list(FIT_EDITS), ids=list(FIT_EDITS))
def test_the_fit_decoder_accepts_what_the_per_slice_decoder_accepts(edit, monkeypatch):
    """Each edit to one slice of 40 weighted ``Sliced(R2Score())`` slices."""
    blob = _sliced(sm.R2Score(), "int", True).to_bytes()
    bad = _edit(_codec.decode(blob), FIT_EDITS[edit])
    _decoders_agree(bad, monkeypatch)


PEARSON_EDITS: dict[str, Edit] = {
    "comoment of a square negative": _put("moments/comoment", _cell(-1.0, (1, 0))),
    "comoment of the pair negative": _put("moments/comoment", _cell(-1e-3, (2, 0))),
    "comoment of the pair huge": _put("moments/comoment", _cell(1e305, (2, 0))),
    "comoment 2 rows": _put("moments/comoment", lambda a: a[:2].copy()),
}


@pytest.mark.parametrize("edit", list(PEARSON_EDITS), ids=list(PEARSON_EDITS))
def test_the_pearson_decoder_accepts_what_the_per_slice_decoder_accepts(edit, monkeypatch):
    blob = _sliced(sm.PearsonCorrCoef(), "int", False).to_bytes()
    bad = _edit(_codec.decode(blob), PEARSON_EDITS[edit])
    _decoders_agree(bad, monkeypatch)


def test_listed_weights_of_another_length_go_to_the_per_slice_decoder(monkeypatch):
    """A ``multioutput`` list of two weights over one-output slices: the per-slice decoder
    names the mismatch."""
    blob = _sliced(sm.R2Score(multioutput=[2.0]), "int", False).to_bytes()
    tree = _codec.decode(blob)
    for _, env in tree["state"]["slices"]:
        env["config"] = {**env["config"], "multioutput": [1.0, 2.0]}
    tree["config"]["metric"]["config"]["multioutput"] = [1.0, 2.0]
    with pytest.raises(StateDecodeError, match="outputs"):
        sm.loads(_codec.encode(tree))


class _Strict(sm.MeanSquaredError):
    """A user's subclass whose own decoder checks more: its slices decode one by one."""

    def _validate_state(self) -> None:
        super()._validate_state()
        if self.count > 10**6:
            raise ValueError("too many rows for this deployment")


def test_a_subclass_decodes_one_by_one():
    sliced = _sliced(_Strict(), "int", False)
    loaded = sm.loads(sliced.to_bytes())
    assert loaded.slices._pack is None and loaded.to_bytes() == sliced.to_bytes()


def test_a_mean_of_negative_zero_computes_as_each_slice_does(monkeypatch):
    """A forged slice whose mean is -0.0 (with -0.0 low part): the table's value is 0.0, as
    the slice's own compute() averages it, not -0.0 (a review of 0.8.22)."""
    blob = _sliced(sm.MeanSquaredError(), "int", False).to_bytes()

    def zero(pairs: list[Any]) -> None:
        moments = pairs[3][1]["state"]["moments"]
        moments["mean"] = np.array([[-0.0]])
        moments["mean_low"] = np.array([[-0.0]])
        moments["comoment"] = np.array([[0.0]])

    bad = _edit(_codec.decode(blob), zero)
    fast, slow = sm.loads(bad), _slow_loads(bad, monkeypatch)
    key = fast.keys()[3]
    assert repr(fast.compute()[key]) == repr(slow.compute()[key]) == "0.0"


def test_a_huge_central_moment_gives_no_interval_and_no_warning(monkeypatch):
    """A forged R2 slice whose central moments are near their bounds: its interval is
    (nan, nan) from the table as from the slice itself, without an overflow warning
    (which the test settings make an error)."""
    blob = _sliced(sm.R2Score(), "int", False).to_bytes()

    def huge(pairs: list[Any]) -> None:
        shape = pairs[3][1]["state"]["shape"]
        moments = shape["moments"].copy()
        moments[3, 0], moments[5, 0] = 2.0**534, 2.0**746
        shape["moments"] = moments

    bad = _edit(_codec.decode(blob), huge)
    fast, slow = sm.loads(bad), _slow_loads(bad, monkeypatch)
    assert same(fast.intervals(), slow.intervals())
