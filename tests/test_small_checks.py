"""The decoders' checks of small arrays, read as Python values rather than by numpy reductions
whose fixed cost was most of a small state's ``loads`` (``_codec.check_counts``,
``states._bucket_wire``, ``states._group_wire``, ...): held against 0.8.24's numpy checks
(``tests/reference_decoders.py``) on valid states and their forgeries, the same entries or the
same refusal with the same message."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import streammetrics as sm
from streammetrics import _codec
from streammetrics.states._bucket_wire import checked_entries
from streammetrics.states._group_wire import checked_table
from streammetrics.states._narrow import stepped_from_wire
from streammetrics.states.labels import labels_from_wire
from streammetrics.states.mappings import REAL_FINE_BITS
from tests import reference_decoders as reference
from tests.test_gauc_wire import _legacy_tree


def _forged(metric: sm.Metric, **state: Any) -> bytes:
    tree = _codec.decode(metric.to_bytes())
    tree["state"].update(state)
    return _codec.encode(tree)


def _verdict(fn: Any, *args: Any) -> Any:
    try:
        return ("ok", fn(*args))
    except (ValueError, TypeError) as exc:
        return (type(exc).__name__, str(exc))


_EDGE_INTS = [0, 1, 2, 2**52, 2**53 - 1, 2**53, 2**53 + 1, 2**62, 2**63 - 1, -1, -(2**63)]
_EDGE_FLOATS = [
    0.0,
    -0.0,
    5e-324,
    1.0,
    2.0**99,
    2.0**100,
    2.0**100 * (1 + 1e-9),
    2.0**100 * (1 + 2e-9),
    2.0**1023,
    math.inf,
    -math.inf,
    math.nan,
    -1e-300,
]


def _count_arrays(rng: np.random.Generator) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    for size in (0, 1, 2, 3, 7, 8, 9, 33, 64, 65, 200):
        for _ in range(6):
            ints = rng.choice([*_EDGE_INTS, 3, 5, 1000], size)
            out.append(np.array(ints, dtype=np.int64))
            out.append(np.array(np.abs(ints) % 2**32, dtype=np.uint64))
            floats = rng.choice([*_EDGE_FLOATS, 0.5, 3.25], size)
            out.append(np.array(floats, dtype=np.float64))
            out.append(np.abs(np.array(floats, dtype=np.float64)))
            out.append(rng.random(size) * 2.0**100 / max(size, 1) * 1.0000000006)
            out.append(
                np.full(size, 2**53 // max(size, 1), dtype=np.int64) + (rng.random(size) < 0.5)
            )
    out.append(np.array([[1, 2], [3, -4]], dtype=np.int64))
    out.append(np.array([[1.0, 2.0], [math.nan, 4.0]]))
    out.append(np.array([1, 2, 3], dtype=np.int8))
    out.append(np.array([2.0**100, 2.0**100 * 1e-9], dtype=np.float64))
    return out


def _counts_verdict(*arrays: np.ndarray) -> Any:
    """``check_counts``'s refusal, or the totals it returns, each checked to be
    ``count_total``'s (what its callers used to compute again)."""
    verdict = _verdict(_codec.check_counts, "x", *arrays)
    if verdict[0] == "ok":
        assert verdict[1] == [_codec.count_total(a) for a in arrays]
        return ("ok", None)
    return verdict


def test_small_counts_are_refused_as_numpy_refused_them() -> None:
    rng = np.random.default_rng(0)
    arrays = _count_arrays(rng)
    refused = 0
    for arr in arrays:
        want = _verdict(reference.check_counts, "x", arr)
        assert _counts_verdict(arr) == want, arr
        refused += want[0] != "ok"
    for a, b in zip(arrays[::2], arrays[1::2], strict=False):
        assert _counts_verdict(a, b) == _verdict(reference.check_counts, "x", a, b)
    assert 100 < refused < len(arrays) - 100


def test_small_finite_and_least_read_as_numpy() -> None:
    rng = np.random.default_rng(1)
    for size in (1, 2, 5, 64, 65, 300):
        for _ in range(20):
            x = rng.choice([*_EDGE_FLOATS, 0.25, -7.0], size)
            arr = np.array(x).reshape((1, size)) if size % 5 == 0 else np.array(x)
            assert _codec.all_finite(arr) == bool(np.isfinite(arr).all())
            if not np.isnan(arr).any():
                assert _codec.least(arr) == arr.min()


def test_small_label_arrays_are_refused_unless_increasing() -> None:
    ok = [np.array([3], np.int64), np.array([-(2**63), 0, 2**63 - 1], np.int64)]
    bad = [np.array([1, 1], np.int64), np.array([2, 1], np.int64), np.arange(70)[::-1].copy()]
    for arr in ok:
        assert labels_from_wire(arr) is arr
    for arr in bad:
        with pytest.raises(ValueError, match="sorted and unique"):
            labels_from_wire(arr)
    # Strings compare as numpy compares them, trailing NULs dropped.
    with pytest.raises(ValueError, match="sorted and unique"):
        labels_from_wire(["a", "a\x00"])


def _entries_verdict(fn: Any, wire: Any, mapping: Any, floor: int | None) -> Any:
    try:
        out = fn(wire, mapping, floor)
    except ValueError as exc:
        return ("refused", str(exc))
    return tuple(
        None if a is None else a if isinstance(a, int) else (a.dtype.str, a.tobytes()) for a in out
    )


def _store_wires(rng: np.random.Generator) -> list[tuple[Any, Any, int | None, str]]:
    """Wire forms of small and larger stores of every mapping, and of forged variants."""
    out: list[tuple[Any, Any, int | None, str]] = []
    for score_type, exact in (
        ("probability", False),
        ("logit", False),
        ("real", False),
        ("probability", True),
    ):
        for n in (1, 3, 10, 60, 200):
            for weighted in (False, True):
                m = sm.ROCAUC(exact=exact, score_type=score_type)
                y = rng.integers(0, 2, n)
                x = rng.random(n) if score_type == "probability" else rng.normal(0, 3, n)
                w = rng.integers(1, 4, n).astype(float) if weighted else None
                m.update(y, x, sample_weight=w)
                wire = m.hist.to_wire()
                mapping = m.hist.mapping
                floor = None if m.hist._bits is None else m.hist._floor_bits()
                out.append((wire, mapping, floor, f"{score_type} {exact} {n} {weighted}"))
                out.extend(
                    (forged, mapping, floor, f"{score_type} {exact} {n} {weighted} {why}")
                    for why, forged in _forgeries(wire, rng)
                )
    return out


def _forgeries(wire: dict[str, Any], rng: np.random.Generator) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []

    def edit(why: str, name: str, change: Any) -> None:
        if name not in wire:
            return
        w = dict(wire)
        arr = w[name].copy()
        change(arr)
        w[name] = arr
        out.append((why, w))

    n = len(wire["pos"])
    i = int(rng.integers(0, n))
    for name in ("lo", "hi", "scores"):
        for v in (math.nan, math.inf, -math.inf, -0.0, -1e-300, 1.0 + 2**-52, 2.0, -5.0, 1e300):
            edit(f"{name}={v}", name, lambda a, v=v: a.__setitem__(i, v))
        if n > 1:
            edit(f"{name} swapped", name, lambda a: a.__setitem__(slice(None), a[::-1].copy()))
            edit(f"{name} tie", name, lambda a: a.__setitem__(1, a[0]))
    for name in ("pos", "neg"):
        for v in (-1, 0, 2**53, 2**53 + 1, 2**62, math.nan, math.inf, -0.0, 2.0**100):
            if isinstance(v, float) and wire[name].dtype.kind == "i" and not v == v // 1:
                continue
            if isinstance(v, float) and wire[name].dtype.kind == "i" and abs(v) > 2**62:
                continue
            edit(f"{name}={v}", name, lambda a, v=v: a.__setitem__(i, v))
    if wire["pos"].dtype.kind == "i":
        w = dict(wire)
        w["pos"], w["neg"] = wire["pos"].copy(), wire["neg"].copy()
        w["pos"][:] = 0
        w["neg"][:] = 0
        w["pos"][0], w["neg"][-1] = 2**52 + 1, 2**52
        out.append(("totals past 2**53 together", w))
        w = dict(w)
        w["neg"] = w["neg"].copy()
        w["neg"][-1] = 2**52 - 1
        out.append(("totals at 2**53 together", w))
    if "lo" in wire and n > 1:
        w = dict(wire)
        w["hi"] = wire["hi"].copy()
        w["hi"][0] = wire["hi"][-1]
        out.append(("a bucket spanning others", w))
    if "bits" in wire:
        for bits in (0, 7, REAL_FINE_BITS + 1, 1.5, None):
            w = dict(wire)
            w["bits"] = bits
            out.append((f"bits={bits}", w))
        w = dict(wire)
        del w["bits"]
        out.append(("no bits", w))
    w = dict(wire)
    w["pos"] = wire["pos"].astype(np.float32)
    out.append(("float32 counts", w))
    w = dict(wire)
    w["pos"] = wire["pos"][:-1]
    out.append(("a short array", w))
    return out


def test_small_stores_are_checked_as_numpy_checked_them() -> None:
    """Every store of at most ``SMALL_CHECK`` entries now takes the Python checks, larger
    ones the numpy checks with fewer reductions: both give what 0.8.24's checks gave for
    stores of every mapping and their forgeries, the same entries or the same refusal."""
    rng = np.random.default_rng(2)
    refused = small = 0
    for wire, mapping, floor, what in _store_wires(rng):
        want = _entries_verdict(reference.checked_entries, wire, mapping, floor)
        got = _entries_verdict(checked_entries, wire, mapping, floor)
        assert got == want, what
        refused += want[0] == "refused"
        small += len(wire["pos"]) <= _codec.SMALL_CHECK
    assert refused > 300 and small > 300


def test_a_small_store_refused_at_loads_keeps_its_message() -> None:
    m = sm.ROCAUC().update([0, 1, 1], [0.2, 0.7, 0.4])
    h = m.hist.to_wire()
    cases = {
        "lo and hi must be finite": {**h, "lo": np.array([0.2, 0.4, math.nan])},
        "fall in different buckets": {**h, "hi": np.array([0.2, 0.7, 0.7])},
        "a bucket is empty": {**h, "pos": np.array([0, 1, 0]), "neg": np.array([0, 0, 1])},
        "non-negative": {**h, "pos": np.array([0, 1, -1])},
        "outside": {**h, "lo": np.array([0.2, 0.4, 1.5]), "hi": np.array([0.2, 0.4, 1.5])},
        "counts total more than 2\\*\\*53": {
            **h,
            "pos": np.array([0, 2**52 + 1, 0]),
            "neg": np.array([1, 0, 2**52]),
        },
    }
    for message, wire in cases.items():
        with pytest.raises(sm.StateDecodeError, match=message):
            sm.loads(_forged(m, hist=wire))


# -- GAUC's grouped tables ----------------------------------------------------------------------


def _table_verdict(fn: Any, wire: Any, block: Any) -> Any:
    try:
        t = fn(wire, block.mapping, block._sketched)
    except (ValueError, TypeError) as exc:
        return ("refused", type(exc).__name__, str(exc))
    arrays = (t.labels, t.rows, t.g, t.key, t.pos, t.neg, t.value, t.bucketed)
    return tuple((a.dtype.str, a.shape, a.tobytes()) for a in arrays)


def _gauc_blocks(rng: np.random.Generator) -> list[Any]:
    out = []
    for make in (
        lambda: sm.GAUC(exact=True),
        lambda: sm.GAUC(max_exact=2),
        lambda: sm.GAUC(max_exact=3, score_type="logit"),
        lambda: sm.GAUC(),
    ):
        for n, groups, weighted, strings in (
            (5, 2, False, False),
            (12, 3, True, False),
            (40, 4, False, True),
            (60, 30, False, False),
            (300, 3, False, False),
            (400, 90, True, False),
        ):
            m = make()
            g = rng.integers(0, groups, n) * 7 - 5
            scores = (
                rng.random(n) if m.config["score_type"] == "probability" else rng.normal(size=n)
            )
            scores = np.round(scores, 1) if n > 100 else scores.astype(np.float32).astype(float)
            m.update(
                rng.integers(0, 2, n),
                scores,
                groups=g.astype(str) if strings else g,
                sample_weight=rng.integers(1, 3, n).astype(float) if weighted else None,
            )
            out.append(m)
    return out


def _gauc_forgeries(wire: dict[str, Any], rng: np.random.Generator) -> list[dict[str, Any]]:
    out = []
    for name, value in wire.items():
        if not isinstance(value, np.ndarray) or not len(value):
            continue
        i = int(rng.integers(0, len(value)))
        if value.dtype.kind == "f":
            changes: list[Any] = [math.nan, math.inf, -1.0, 2.0, 0.5, value[i - 1]]
        else:
            changes = [0, 1, int(value[i]) + 1, max(int(value[i]) - 1, 0)]
            changes += [2**53 + 1, 2**62] if value.dtype.itemsize == 8 else []
        for v in changes:
            w = dict(wire)
            w[name] = value.copy()
            w[name][i] = v
            out.append(w)
        w = dict(wire)
        w[name] = value[::-1].copy()
        out.append(w)
    if isinstance(wire["groups"], dict):
        for steps in (np.array([0], np.uint8), np.array([2**63, 2**63], np.uint64)):
            out.append({**wire, "groups": {**wire["groups"], "steps": steps}})
        out.append({**wire, "groups": {**wire["groups"], "first": 2**63 - 2}})
    if "value" in wire and wire["sizes"].dtype == np.int64 and len(wire["sizes"]) >= 4:
        big = wire["sizes"].copy()  # sizes whose int64 sum wraps to the number of entries
        big[:4] = 2**62
        big[0] += len(wire["key"]) - int(big[4:].sum())
        out.append({**wire, "sizes": big})
    return out


def test_small_grouped_tables_are_checked_as_numpy_checked_them() -> None:
    """The tables of GAUC states, in the compact form and 0.7.0's, and their forgeries: the
    Python checks of small tables and the numpy ones of larger give what 0.8.24 gave."""
    rng = np.random.default_rng(3)
    refused = small = 0
    for m in _gauc_blocks(rng):
        block = m.scores
        tree = _codec.decode(m.to_bytes())
        wires = [tree["state"]["scores"], _legacy_tree(m)["state"]["scores"]]
        for wire in wires:
            for forged in [wire, *_gauc_forgeries(wire, rng)]:
                want = _table_verdict(reference.checked_table, forged, block)
                assert _table_verdict(checked_table, forged, block) == want
                refused += want[0] == "refused"
                small += len(forged["key"]) <= _codec.SMALL_CHECK
    assert refused > 500 and small > 500


def test_small_steps_rebuild_the_labels_numpy_rebuilt() -> None:
    rng = np.random.default_rng(4)
    for n in (0, 1, 2, 10, 64, 65, 100):
        for dtype in (np.uint8, np.uint16, np.uint64):
            for first in (0, -5, 2**63 - 300, -(2**63)):
                steps = rng.integers(0, 200, n).astype(dtype)
                if n and dtype == np.uint64 and first < 0:
                    steps[n // 2] = 2**63 + 7  # a step past int64
                wire = {"first": first, "steps": steps}
                assert (
                    _verdict(stepped_from_wire, wire)[0]
                    == _verdict(reference.stepped_from_wire, wire)[0]
                )
                try:
                    want = reference.stepped_from_wire(wire)
                except ValueError:
                    continue
                got = stepped_from_wire(wire)
                assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
