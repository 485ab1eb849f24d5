"""The fixed cost of ``loads`` for small states: a package metric is built once per config
and process, and later blobs of that config get a twin of it (``streammetrics._loading._built``).
Held here against building every metric by ``__init__``, as 0.8.24 did: the same metric, the
same bytes, the same refusals with the same messages."""

from __future__ import annotations

import math
from typing import Any

import msgpack
import numpy as np
import pytest

import streammetrics as sm
from streammetrics import _loading
from streammetrics._rows import Rows
from tests.harness import all_cases, assert_same_result, feed


def _forged(metric: sm.Metric, config: dict[str, Any]) -> bytes:
    """``metric``'s bytes with ``config`` written over its config, in the order given (plain
    msgpack: the arrays stay the extension values they were, the maps are not sorted)."""
    tree = msgpack.unpackb(metric.to_bytes(), strict_map_key=False)
    tree["config"].update(config)
    return msgpack.packb(tree, use_bin_type=True)


def _outcome(blob: bytes) -> tuple[str, str]:
    """What ``loads`` makes of ``blob``: the metric's bytes and its config with its types, or
    the error's type and message."""
    try:
        m = sm.loads(blob)
    except Exception as exc:  # (compared below, whatever it is)
        return type(exc).__name__, str(exc)
    return m.to_bytes().hex(), repr([(k, type(v), v) for k, v in m._config.items()])


def _uncached(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` with ``loads`` keeping no metric: every config built by ``__init__``, as
    0.8.24 built them."""
    keyed = _loading._config_key
    _loading._config_key = lambda klass, config: None
    try:
        return fn(*args)
    finally:
        _loading._config_key = keyed


def _built_outcome(blob: bytes) -> tuple[str, str]:
    return _uncached(_outcome, blob)


# -- the metrics kept per config ----------------------------------------------------------------


def test_a_later_blob_gets_a_twin_not_the_kept_metric() -> None:
    blob = sm.ROCAUC().update([0, 1, 1], [0.2, 0.7, 0.4]).to_bytes()
    _loading._PROTOTYPES.clear()
    a, b = sm.loads(blob), sm.loads(blob)
    kept = list(_loading._PROTOTYPES.values())
    assert len(kept) == 1 and kept[0] is not a and kept[0] is not b and a is not b
    assert a._lock is not b._lock and a._rows is not b._rows and a.hist is not b.hist
    assert kept[0].count == 0 and kept[0].to_bytes() == sm.ROCAUC().to_bytes()
    # Each is a metric of its own: changing one changes neither the other nor the next.
    a.update([1, 0], [0.9, 0.1])
    a.merge(b)
    assert b.to_bytes() == blob and sm.loads(blob).to_bytes() == blob
    assert kept[0].to_bytes() == sm.ROCAUC().to_bytes()


@pytest.mark.parametrize(
    "metric, variants",
    [
        (
            sm.ROCAUC().update([0, 1], [0.2, 0.7]),
            [{"exact": v} for v in (False, 0, 0.0, None)]
            + [{"resolution": v} for v in (128, 128.0, True, 64, 100, -128)],
        ),
        (
            sm.F1(average="macro").update([0, 1, 2], [0, 1, 1]),
            [{"zero_division": v} for v in (0.0, -0.0, 0, False, 1, 1.0, True, math.nan, "warn")],
        ),
        (
            sm.ConfusionMatrix(labels=[0, 1]).update([0, 1], [1, 1]),
            [{"labels": v} for v in ([0, 1], [False, True], [0.0, 1.0], [1, 0], [0, 0], None)],
        ),
        (
            sm.MetricCollection(a=sm.Accuracy(), m=sm.MeanSquaredError()).update([0, 1], [1, 1]),
            [
                {"members": {"a": {"class": "Accuracy", "config": {}}}},
                {  # (the members in the other order: a collection lists them in its config's)
                    "members": {
                        "m": {
                            "class": "MeanSquaredError",
                            "config": {"multioutput": "uniform_average"},
                        },
                        "a": {"class": "Accuracy", "config": {}},
                    }
                },
                {"members": {"a": {"class": "Nope", "config": {}}}},
                {"members": {"a": {"class": "Accuracy", "config": {"labels": [0.0]}}}},
            ],
        ),
    ],
    ids=["rocauc", "f1", "confusion", "collection"],
)
def test_configs_are_told_apart_exactly(metric: sm.Metric, variants: list[dict[str, Any]]) -> None:
    """A twin is handed out only for a config ``__init__`` cannot tell from the kept one's:
    whatever was loaded before (every order of these variants), each blob gives what building
    it gives: the same bytes and config types, or the same refusal with the same message."""
    blobs = [metric.to_bytes()] + [_forged(metric, v) for v in variants]
    want = [_built_outcome(b) for b in blobs]
    assert any(w[0] == "StateDecodeError" for w in want)  # (refusals among them)
    for order in (blobs, blobs[::-1], blobs[1:] + blobs[:1]):
        _loading._PROTOTYPES.clear()
        for _ in range(2):
            got = {b: _outcome(b) for b in order}
            assert [got[b] for b in blobs] == want


def test_a_refused_config_is_refused_after_its_class_loaded_fine() -> None:
    m = sm.ROCAUC().update([0, 1], [0.2, 0.7])
    bad = _forged(m, {"resolution": 100})
    message = _built_outcome(bad)
    sm.loads(m.to_bytes())
    for _ in range(3):
        with pytest.raises(sm.StateDecodeError) as info:
            sm.loads(bad)
        assert ("StateDecodeError", str(info.value)) == message
    assert "resolution" in message[1]


class _Counted(sm.Metric, register=False):
    built = 0

    def __init__(self) -> None:
        super().__init__()
        type(self).built += 1
        self._add_state("total", 0.0)

    def update(self, x: float) -> Any:
        return self._commit(1, total=self.total + float(x))

    def _compute(self) -> float:
        return self.total / self.count


class LoadCostCounted(_Counted):
    pass


def test_classes_outside_the_package_are_built_every_time() -> None:
    blob = LoadCostCounted().update(2.0).to_bytes()
    before = LoadCostCounted.built
    for _ in range(3):
        assert sm.loads(blob).compute() == 2.0
    assert LoadCostCounted.built == before + 3
    # A package wrapper around one is built every time too (the name may be defined again).
    wrapped = sm.MetricCollection(c=LoadCostCounted()).update(2.0).to_bytes()
    before = LoadCostCounted.built
    for _ in range(2):
        assert sm.loads(wrapped).compute() == {"c": 2.0}
    assert LoadCostCounted.built >= before + 2


def test_the_kept_metrics_are_bounded() -> None:
    _loading._PROTOTYPES.clear()
    for k in range(_loading._MAX_PROTOTYPES + 20):
        m = sm.ConfusionMatrix(labels=list(range(k + 2))).update([0], [1])
        assert sm.loads(m.to_bytes()) == m
        assert len(_loading._PROTOTYPES) <= _loading._MAX_PROTOTYPES
    _loading._PROTOTYPES.clear()


CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_twin_is_the_metric_init_builds(case: Any) -> None:
    """For every conformance case: the metric loaded from a kept one's twin holds the same
    attributes as the one ``__init__`` built, and behaves the same: the same value, the same
    bytes after the same further update."""
    rng = np.random.default_rng(5)
    first, then = case.batch(rng, 40), case.batch(rng, 40)
    blob = feed(case.make(), [first]).to_bytes()
    built = _uncached(sm.loads, blob)
    sm.loads(blob)
    twin = sm.loads(blob)
    assert type(twin) is type(built) and sorted(vars(twin)) == sorted(vars(built))
    for name, value in vars(built).items():
        assert type(vars(twin)[name]) is type(value), name
    assert twin.to_bytes() == built.to_bytes() == blob
    assert_same_result(twin.compute(), built.compute(), 0.0, 0.0)
    for m in (built, twin):
        feed(m, [then])
    assert twin.to_bytes() == built.to_bytes()


def test_a_blank_rows_declaration_is_a_new_one() -> None:
    for rows in (
        sm.Accuracy()._rows,
        sm.ROCAUC()._rows,
        sm.Sliced(sm.Accuracy())._rows,
        sm.GAUC()._rows,
    ):
        assert rows is not None
        fresh = Rows(rows.kinds, rows.weights, rows.keyword, rows.free)
        fresh.fixed = rows.fixed  # (part of the declaration: what a reset trusts again)
        blank = rows.blank()
        for slot in Rows.__slots__:
            assert getattr(blank, slot) == getattr(fresh, slot), slot
        assert blank.labels is not rows.labels and blank.shapes is not rows.shapes
