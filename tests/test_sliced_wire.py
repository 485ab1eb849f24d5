"""The packed wire paths of ``Sliced`` over many slices (``SlicePack.wire``, and the decoders
of ``streammetrics.wrappers._slice_wire``): the bytes each slice's own state writes, and, on
decoding, exactly what the per-slice decoder accepts, as a pack."""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np
import pytest

import streammetrics as sm
import streammetrics.wrappers._slice_table as table_module
from streammetrics import _codec
from streammetrics.errors import InputError, StateDecodeError

SLICES = 700  # past PACK_MIN_SLICES (512): the table packs, and decodes packed


def _sliced(metric: sm.Metric, keys: str, weighted: bool, seed: int = 0) -> sm.Sliced:
    rng = np.random.default_rng(seed)
    n = 20_000
    y = rng.integers(0, 2, n)
    s = np.clip(0.2 * y + 0.8 * rng.random(n), 0, 1)
    codes = rng.integers(0, SLICES, n)
    by: object
    if keys == "int":
        by = codes * 7 - 1_000
    elif keys == "str":
        by = np.array([f"k{c}" for c in range(SLICES)])[codes]
    else:  # composite
        by = (codes % 30, np.array([f"d{c // 30}" for c in range(SLICES)])[codes])
    weights = rng.random(n) * (rng.random(n) > 0.2) if weighted else None
    out = sm.Sliced(metric)
    for a, b in ((0, 500), (500, n)):  # two batches: the table packs, then folds into it
        part = tuple(c[a:b] for c in by) if isinstance(by, tuple) else by[a:b]  # type: ignore[index]
        kwargs = {} if weights is None else {"sample_weight": weights[a:b]}
        out.update(y[a:b], s[a:b], by=part, **kwargs)
    return out


def _per_slice_bytes(sliced: sm.Sliced) -> bytes:
    """The bytes the per-slice wire form writes: each slice's own envelope, sorted by key."""
    view = sliced.slices.view()
    pairs = [[list(k) if isinstance(k, tuple) else k, view[k]._envelope()] for k in sorted(view)]
    state = {"count": sliced.count, "slices": pairs}
    return _codec.encode(
        _codec.envelope_tree(sliced._wire_name, sliced._schema, sliced._config, state)
    )


#: Every packed decoder ``SliceTable.from_wire`` tries (``_slice_wire``, ``_moments_wire``,
#: ``_sum_wire``); the tests of each use these helpers.
DECODERS = (
    "decoded_pack",
    "decoded_confusion_pack",
    "decoded_moments_pack",
    "decoded_sum_pack",
    "decoded_bins_pack",
)


def _slow_loads(blob: bytes, monkeypatch: pytest.MonkeyPatch) -> sm.Metric:
    """``loads`` through the per-slice decoder alone."""
    with monkeypatch.context() as m:
        for name in DECODERS:
            m.setattr(table_module, name, lambda *args: None)
        return sm.loads(blob)


def same(a: Any, b: Any) -> bool:
    """Equal results (dicts of floats, arrays or tuples of them), nan equal to nan."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    try:
        return bool(np.array_equal(a, b, equal_nan=True))
    except TypeError:  # (not numbers: strings, objects)
        return bool(np.array_equal(a, b))


def _decoders_agree(bad: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    """The packed decoders and the per-slice one both refuse ``bad``, or read it alike."""
    try:
        slow = _slow_loads(bad, monkeypatch)
    except StateDecodeError:
        with pytest.raises(StateDecodeError):
            sm.loads(bad)
        return
    fast = sm.loads(bad)
    assert fast.to_bytes() == slow.to_bytes()
    assert same(fast.compute(), slow.compute())


CONFIGS = [
    pytest.param(lambda: sm.ROCAUC(), "int", False, id="auc-int"),
    pytest.param(lambda: sm.ROCAUC(), "str", True, id="auc-str-weighted"),
    pytest.param(lambda: sm.ROCAUC(resolution=64), "composite", False, id="auc-composite"),
    pytest.param(lambda: sm.AveragePrecision(), "int", True, id="ap-int-weighted"),
]


@pytest.mark.parametrize(("make", "keys", "weighted"), CONFIGS)
def test_packed_wire_is_the_per_slice_wire(make, keys, weighted, monkeypatch):
    sliced = _sliced(make(), keys, weighted)
    assert sliced.slices._pack is not None and sliced.slices._dict is None
    blob = sliced.to_bytes()
    assert blob == _per_slice_bytes(sliced)
    loaded = sm.loads(blob)
    assert loaded.slices._pack is not None  # decoded straight into one table
    slow = _slow_loads(blob, monkeypatch)
    assert slow.slices._pack is None
    assert loaded.to_bytes() == slow.to_bytes() == blob
    assert loaded.compute() == slow.compute()
    for key in loaded.keys()[::97]:
        assert loaded[key].to_bytes() == slow[key].to_bytes()
    more = _sliced(make(), keys, weighted, seed=1)
    assert (loaded + more).to_bytes() == (slow + more).to_bytes()
    rng = np.random.default_rng(5)
    y, s = rng.integers(0, 2, 300), rng.random(300)
    by = rng.integers(0, SLICES, 300) * 7 - 1_000 if keys == "int" else None
    if by is not None:
        kw = {"sample_weight": rng.random(300)} if weighted else {}
        after = loaded.update(y, s, by=by, **kw)
        assert after.to_bytes() == slow.update(y, s, by=by, **kw).to_bytes()


def _tree(blob: bytes) -> dict:
    return _codec.decode(blob)


def _edit(tree: dict, change) -> bytes:  # type: ignore[no-untyped-def]
    tree = copy.deepcopy(tree)
    change(tree["state"]["slices"])
    return _codec.encode(tree)


def _hist(pairs: list, j: int = 3) -> dict:
    return pairs[j][1]["state"]["hist"]


def _set(field: str, value, j: int = 3):  # type: ignore[no-untyped-def]
    def change(pairs: list) -> None:
        _hist(pairs, j)[field] = value

    return change


def _first(field: str, value):  # type: ignore[no-untyped-def]
    def change(pairs: list) -> None:
        arr = _hist(pairs)[field].copy()
        arr[0] = value
        _hist(pairs)[field] = arr

    return change


def _state(field: str, value):  # type: ignore[no-untyped-def]
    def change(pairs: list) -> None:
        pairs[3][1]["state"][field] = value

    return change


def _envelope(field: str, value):  # type: ignore[no-untyped-def]
    def change(pairs: list) -> None:
        pairs[3][1][field] = value

    return change


def _key(value):  # type: ignore[no-untyped-def]
    def change(pairs: list) -> None:
        pairs[3][0] = value

    return change


def _swap_buckets(pairs: list) -> None:
    h = _hist(pairs)
    for f in ("lo", "hi", "pos", "neg"):
        h[f] = h[f][::-1].copy()


def _repeat_bucket(pairs: list) -> None:
    h = _hist(pairs)
    for f in ("lo", "hi", "pos", "neg"):
        h[f] = np.concatenate([h[f][:1], h[f]])


def _empty_store(pairs: list) -> None:
    h = _hist(pairs)
    for f in ("lo", "hi", "pos", "neg"):
        h[f] = h[f][:0].copy()


def _float_counts(pairs: list) -> None:  # one slice weighted among integer ones
    h = _hist(pairs)
    h["pos"], h["neg"] = h["pos"].astype(float), h["neg"].astype(float)


def _wide_bucket(pairs: list) -> None:  # lo and hi in different buckets
    h = _hist(pairs)
    h["hi"] = h["hi"].copy()
    h["hi"][0] = min(1.0, h["lo"][0] + 0.5)


CONFIG = {"exact": False, "score_type": "probability", "resolution": 128}

EDITS = {
    "count zero": _state("count", 0),
    "count negative": _state("count", -1),
    "count past the bound": _state("count", 2**53 + 1),
    "count a float": _state("count", 3.0),
    "count a bool": _state("count", True),
    "extra state field": _state("extra", 1),
    "store missing": _state("hist", None),
    "bits in a grid store": _set("bits", 16),
    "pos negative": _first("pos", -1),
    "pos huge": _first("pos", 2**62),
    "bucket empty": lambda p: (_first("pos", 0)(p), _first("neg", 0)(p)),
    "lo above hi": _first("lo", 0.999),
    "lo not finite": _first("lo", np.inf),
    "lo below zero": lambda p: (_first("lo", -0.5)(p), _first("hi", -0.5)(p)),
    "lo above one": lambda p: (_first("lo", 1.5)(p), _first("hi", 1.5)(p)),
    "lo negative zero": lambda p: (_first("lo", -0.0)(p), _first("hi", 0.0)(p)),
    # (in the grid's first bucket, as 0.0 is: 0.8.18's packed decoder took it)
    "lo a hair below zero": lambda p: (_first("lo", -1e-10)(p), _first("hi", 0.0)(p)),
    "buckets unsorted": _swap_buckets,
    "bucket repeated": _repeat_bucket,
    "bucket ends apart": _wide_bucket,
    "no buckets": _empty_store,
    "one slice weighted": _float_counts,
    "pos int32": lambda p: _set("pos", _hist(p)["pos"].astype(np.int32))(p),
    "pos 2-d": lambda p: _set("pos", _hist(p)["pos"].reshape(1, -1))(p),
    "lengths differ": lambda p: _set("pos", _hist(p)["pos"][1:].copy())(p),
    "lo a list": lambda p: _set("lo", _hist(p)["lo"].tolist())(p),
    "config differs": _envelope("config", {**CONFIG, "resolution": 64}),
    "config int as float": _envelope("config", {**CONFIG, "resolution": 128.0}),
    "class differs": _envelope("class", "AveragePrecision"),
    "schema newer": _envelope("schema", 9),
    "version a bool": _envelope("version", True),
    "envelope field extra": _envelope("extra", 1),
    "key repeated": lambda p: _key(p[4][0])(p),
    "key a float": _key(1.5),
    "key a bool": _key(True),
    "key of another kind": _key("x"),
    "key an empty list": _key([]),
    "key composite": _key([1, "a"]),
    "pair of three": lambda p: p.__setitem__(3, [*p[3], 1]),
    "slices out of order": lambda p: p.reverse(),
    "negative zero key part": _key(-0),
}


@pytest.mark.parametrize("edit", list(EDITS), ids=list(EDITS))
def test_the_packed_decoder_accepts_what_the_per_slice_decoder_accepts(edit, monkeypatch):
    """Each edit, to one slice among 700: both decoders refuse it, or both give the same
    state (the packed one hands every unusual form to the per-slice decoder)."""
    blob = _sliced(sm.ROCAUC(), "int", False).to_bytes()
    bad = _edit(_tree(blob), EDITS[edit])
    _decoders_agree(bad, monkeypatch)


def test_the_packed_decoder_is_the_one_that_runs():
    """A valid wire form of many slices decodes without making one state per slice."""
    blob = _sliced(sm.ROCAUC(), "str", False).to_bytes()
    loaded = sm.loads(blob)
    assert loaded.slices._pack is not None and loaded.slices._dict is None
    assert len(loaded) == SLICES


# -- confusion metrics ---------------------------------------------------------------------------


def _labelled(metric: sm.Metric, kind: str, seed: int = 0, weighted: bool = False) -> sm.Sliced:
    """700 slices whose label sets differ (each slice sees some of 6 labels); ``weighted``:
    the second batch weighted (the table's counts become float64)."""
    rng = np.random.default_rng(seed)
    n = 20_000
    codes = rng.integers(0, SLICES, n)
    spread = 1 + codes % 6  # slice c draws its labels from the first 1 .. 6
    y = (rng.random(n) * spread).astype(int)
    p = np.where(rng.random(n) < 0.7, y, (rng.random(n) * spread).astype(int))
    if kind == "str":
        names = np.array(["ant", "bee", "cat", "dog", "eel", "fox"])
        y, p = names[y], names[p]
    by = (
        codes
        if kind != "composite"
        else (codes % 100, np.array([f"d{i}" for i in range(7)])[codes // 100])
    )
    out = sm.Sliced(metric)
    w = rng.random(n) * 2 * (rng.random(n) > 0.1)
    for a, b in ((0, 3_000), (3_000, n)):
        part = tuple(c[a:b] for c in by) if isinstance(by, tuple) else by[a:b]
        kwargs = {"sample_weight": w[a:b]} if weighted and a else {}
        out.update(y[a:b], p[a:b], by=part, **kwargs)
    return out


LABEL_CONFIGS = [
    pytest.param(lambda: sm.Accuracy(), "int", id="accuracy-int"),
    pytest.param(lambda: sm.Accuracy(), "str", id="accuracy-str"),
    pytest.param(lambda: sm.F1(average="macro"), "composite", id="f1-macro-composite"),
    pytest.param(lambda: sm.ConfusionMatrix(), "int", id="confusion-matrix"),
    pytest.param(lambda: sm.Precision(average="micro", labels=[0, 1, 2, 3, 4, 5]), "int"),
    pytest.param(lambda: sm.ConfusionMatrix(labels=[0, 1, 2, 3, 4, 5]), "int", id="fixed-labels"),
]


LABEL_CONFIGS += [
    pytest.param(lambda: sm.Accuracy(), "int-weighted", id="accuracy-weighted"),
    pytest.param(lambda: sm.F1(average="macro"), "str-weighted", id="f1-macro-str-weighted"),
    pytest.param(lambda: sm.ConfusionMatrix(), "composite-weighted", id="confusion-weighted"),
    pytest.param(lambda: sm.CohenKappa(), "int-weighted", id="kappa-weighted"),
]


@pytest.mark.parametrize(("make", "kind"), LABEL_CONFIGS)
def test_confusion_slices_decode_into_one_table(make, kind, monkeypatch):
    kind, _, weighted = kind.partition("-")
    sliced = _labelled(make(), kind, weighted=bool(weighted))
    blob = sliced.to_bytes()
    loaded = sm.loads(blob)
    assert loaded.slices._pack is not None and loaded.slices._dict is None
    slow = _slow_loads(blob, monkeypatch)
    assert slow.slices._pack is None
    assert loaded.to_bytes() == slow.to_bytes() == blob
    assert list(loaded.compute()) == list(slow.compute())
    assert same(loaded.compute(), slow.compute())
    for key in loaded.keys()[::97]:
        assert loaded[key].to_bytes() == slow[key].to_bytes()
    if weighted:
        assert loaded.slices._pack.values.dtype == np.float64  # type: ignore[union-attr]
        if not isinstance(sliced._template, sm.ConfusionMatrix):  # (no interval)
            assert same(loaded.intervals(), slow.intervals())
    more = _labelled(make(), kind, seed=1, weighted=bool(weighted))
    assert (loaded + more).to_bytes() == (slow + more).to_bytes()
    if kind == "int":
        y, p, by = [0, 1, 2], [0, 2, 2], [3, 3, 700]
        assert loaded.update(y, p, by=by).to_bytes() == slow.update(y, p, by=by).to_bytes()


def _block(pairs: list, j: int = 3) -> dict:
    return pairs[j][1]["state"]["counts"]


def _counts(change):  # type: ignore[no-untyped-def]
    def edit(pairs: list) -> None:
        change(_block(pairs))

    return edit


def _table_first(value):  # type: ignore[no-untyped-def]
    def change(block: dict) -> None:
        table = block["table"].copy()
        table.flat[0] = value
        block["table"] = table

    return _counts(change)


def _first_label(value):  # type: ignore[no-untyped-def]
    def change(block: dict) -> None:
        rows = block["rows"].copy()
        rows[0] = value
        block["rows"] = rows

    return _counts(change)


def _weight_sq(value):  # type: ignore[no-untyped-def]
    def edit(pairs: list) -> None:
        pairs[3][1]["state"]["weight_sq"] = value

    return edit


def _sparse(block: dict) -> None:
    table = block.pop("table")
    cells = np.flatnonzero(table)
    block["cells"], block["counts"] = cells.astype(np.int64), table.ravel()[cells]


LABEL_EDITS = {
    "count zero": _state("count", 0),
    "count past the bound": _state("count", 2**53 + 1),
    "table negative": _table_first(-1),
    "table huge": _table_first(2**62),
    "table float": _counts(lambda b: b.__setitem__("table", b["table"].astype(float))),
    "table int32": _counts(lambda b: b.__setitem__("table", b["table"].astype(np.int32))),
    "table flat": _counts(lambda b: b.__setitem__("table", b["table"].ravel())),
    "table too small": _counts(lambda b: b.__setitem__("table", b["table"][:-1, :-1].copy())),
    "labels repeated": _first_label(1),
    "labels unsorted": _counts(lambda b: b.__setitem__("rows", b["rows"][::-1].copy())),
    "labels int32": _counts(lambda b: b.__setitem__("rows", b["rows"].astype(np.int32))),
    "labels as strings": _counts(lambda b: b.__setitem__("rows", [str(v) for v in b["rows"]])),
    "labels none": _counts(
        lambda b: (
            b.__setitem__("rows", b["rows"][:0].copy()),
            b.__setitem__("table", b["table"][:0, :0].copy()),
        )
    ),
    "label negative": _first_label(-7),
    "sparse form": _counts(_sparse),
    "cols given": _counts(lambda b: b.__setitem__("cols", b["rows"])),
    "table all zero, weight_sq -0.0": lambda p: (  # (a review: the pack kept the -0.0)
        _counts(lambda b: b.__setitem__("table", b["table"] * 0.0))(p),
        _weight_sq(-0.0)(p),
    ),
    "weight_sq an int": _weight_sq(5),
    "weight_sq nan": _weight_sq(float("nan")),
    "weight_sq a bool": _weight_sq(True),
    "weight_sq a string": _weight_sq("x"),
    "weight_sq missing": lambda p: p[3][1]["state"].pop("weight_sq"),
    "config differs": _envelope("config", {"labels": [0, 1]}),
    "key repeated": lambda p: _key(p[4][0])(p),
    "key of another kind": _key("x"),
    "slices out of order": lambda p: p.reverse(),
}


@pytest.mark.parametrize("edit", list(LABEL_EDITS), ids=list(LABEL_EDITS))
def test_the_confusion_decoder_accepts_what_the_per_slice_decoder_accepts(edit, monkeypatch):
    """Each edit to one slice of 700 ``Sliced(Accuracy())`` slices: both decoders refuse
    it, or both give the same state."""
    blob = _labelled(sm.Accuracy(), "int").to_bytes()
    bad = _edit(_tree(blob), LABEL_EDITS[edit])
    _decoders_agree(bad, monkeypatch)


def _weight_sq_at(upper: bool, f: float):  # type: ignore[no-untyped-def]
    """Set one slice's ``weight_sq`` ``f`` slacks (1e-6 of the squared total) past its total
    squared (``upper``) or below its total squared over its rows: near ``check_weight_sq``'s
    bounds, where a sum of the cells in another order could decide otherwise."""

    def edit(pairs: list) -> None:
        state = pairs[3][1]["state"]
        total = float(state["counts"]["table"].sum())
        square = total * total
        bound = square if upper else square / state["count"]
        state["weight_sq"] = bound + (1 if upper else -1) * f * 1e-6 * square

    return edit


WEIGHTED_LABEL_EDITS = {
    "table negative zero": _table_first(-0.0),
    "table nan": _table_first(float("nan")),
    "table inf": _table_first(float("inf")),
    "table negative": _table_first(-0.5),
    "table huge": _table_first(2.0**99),
    "table int64": _counts(lambda b: b.__setitem__("table", b["table"].astype(np.int64))),
    "table all zero": lambda p: (
        _counts(lambda b: b.__setitem__("table", b["table"] * 0.0))(p),
        _weight_sq(0.0)(p),
    ),
    "table all zero, weight_sq -0.0": lambda p: (  # (a review: the pack kept the -0.0)
        _counts(lambda b: b.__setitem__("table", b["table"] * 0.0))(p),
        _weight_sq(-0.0)(p),
    ),
    "weight_sq an int": _weight_sq(5),
    "weight_sq nan": _weight_sq(float("nan")),
    "weight_sq zero": _weight_sq(0.0),
    "weight_sq negative": _weight_sq(-1.0),
    "weight_sq huge": _weight_sq(1e30),
    **{
        f"weight_sq {'above' if up else 'below'}, {f} slacks": _weight_sq_at(up, f)
        for up in (True, False)
        for f in (0.5, 0.9999999, 1.0, 1.0000001, 2.0)
    },
}


@pytest.mark.parametrize("edit", list(WEIGHTED_LABEL_EDITS), ids=list(WEIGHTED_LABEL_EDITS))
def test_the_weighted_confusion_decoder_accepts_what_the_per_slice_decoder_accepts(
    edit, monkeypatch
):
    """Each edit to one slice of 700 weighted ``Sliced(Accuracy())`` slices (float tables):
    both decoders refuse it, or both give the same state."""
    blob = _labelled(sm.Accuracy(), "int", weighted=True).to_bytes()
    bad = _edit(_tree(blob), WEIGHTED_LABEL_EDITS[edit])
    _decoders_agree(bad, monkeypatch)


def test_fixed_labels_that_differ_go_to_the_per_slice_decoder():
    blob = _labelled(sm.ConfusionMatrix(labels=[0, 1, 2, 3, 4, 5]), "int").to_bytes()
    bad = _edit(_tree(blob), _first_label(-7))
    with pytest.raises(StateDecodeError, match="configured labels"):
        sm.loads(bad)


class _StrictAUC(sm.ROCAUC):
    """A user's subclass whose own check refuses slices of fewer than 30 rows."""

    def _validate_state(self) -> None:
        super()._validate_state()
        if self.count < 30:
            raise ValueError("fewer than 30 rows")


class _SmallLabels(sm.Accuracy):
    """A user's subclass refusing labels above 9."""

    def _check_labels(self, labels: np.ndarray) -> None:
        super()._check_labels(labels)
        if len(labels) and labels.dtype.kind == "i" and labels.max() > 9:
            raise InputError("y_true: labels above 9")


def test_a_subclass_with_its_own_checks_decodes_one_by_one():
    """The packed decoders and tables skip a subclass's own checks, so its slices are read
    and updated one by one (a review of 0.8.22: both were packed)."""
    rng = np.random.default_rng(3)
    y, p, by = rng.integers(0, 2, 20_000), rng.random(20_000), rng.integers(0, 700, 20_000)
    blob = sm.Sliced(_StrictAUC()).update(y, p, by=by).to_bytes()
    with pytest.raises(StateDecodeError, match="fewer than 30 rows"):
        sm.loads(blob)
    small = sm.Sliced(_SmallLabels()).update(y, (p > 0.5).astype(int), by=by)
    assert small.slices._pack is None
    with pytest.raises(InputError, match="above 9"):
        small.update([50], [50], by=[1])
