"""Golden bytes: one pinned blob for every state layout, so that no refactor changes the wire
format by accident.

Every conformance case (``tests/cases/``: every public metric class in at least one
configuration, and the windows and collections) plus the extra layouts in :data:`EXTRA` is built
from a fixed seed and a fixed sequence of updates (:data:`SIZES`). For each, the test asserts

* the rebuilt ``to_bytes()`` equals the committed ``tests/golden/<id>.bin`` byte for byte, or
  (states of float sums, whose last bits follow numpy's summation order) decodes to the same
  tree, floats to 1e-9 (:func:`same_wire`),
* ``loads(committed).to_bytes()`` gives the committed bytes back,
* ``compute()`` of both the rebuilt and the decoded metric equals the value pinned in
  ``tests/golden/index.json``.

A blob written by this version must be read by every later one. When a layout changes on
purpose (a new schema version, with a reader for the old one), regenerating is a deliberate act,
reviewed like any other change to the format::

    PYTHONPATH=. /work/venv/bin/python tests/test_golden.py --regen

It rewrites every ``.bin`` and the index; ``git diff --stat tests/golden`` then shows exactly
which layouts moved. Never regenerate to make a failing test pass without knowing why the bytes
changed. A new case in ``tests/cases/`` has no golden blob until someone regenerates; a public
class without any golden blob fails :func:`test_every_public_class_is_pinned`.
"""

from __future__ import annotations

import json
import math
import re
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import streammetrics as sm
from streammetrics._codec import unpack_envelope
from tests.harness import Case, all_cases, feed, public_metric_classes

GOLDEN = Path(__file__).parent / "golden"
INDEX = GOLDEN / "index.json"
SIZES = (5, 40, 1, 13)


def _by_id() -> dict[str, Case]:
    return {c.id: c for c in all_cases()}


def _extra() -> list[Case]:
    """Layouts the conformance cases do not reach on their own: exact score tables for every
    ``score_type`` (the sketched ones are cases), unweighted exact scores and grouped sketches
    with string groups."""
    cases = _by_id()

    def like(new_id: str, base: str, make: Any) -> Case:
        return Case(new_id, make, cases[base].batch)

    return [
        like(
            "golden-ROCAUC-exact-logit",
            "ROCAUC-logit",
            lambda: sm.ROCAUC(exact=True, score_type="logit"),
        ),
        like(
            "golden-ROCAUC-exact-real",
            "ROCAUC-real-weighted",
            lambda: sm.ROCAUC(exact=True, score_type="real"),
        ),
        like("golden-ROCAUC-exact", "ROCAUC", lambda: sm.ROCAUC(exact=True)),
        like("golden-GAUC-sketch-str", "GAUC-exact-str-weighted", lambda: sm.GAUC(max_exact=4)),
        like(
            "golden-AveragePrecision-real",
            "ROCAUC-real-weighted",
            lambda: sm.AveragePrecision(score_type="real"),
        ),
    ]


def golden_cases() -> list[Case]:
    return all_cases() + _extra()


def _file(case_id: str) -> Path:
    return GOLDEN / (re.sub(r"[^A-Za-z0-9_.+-]", "_", case_id) + ".bin")


def build(case: Case) -> sm.Metric:
    """The case's metric after a fixed sequence of updates from a seed fixed by its id."""
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    return feed(case.make(), [case.batch(rng, n) for n in SIZES])


def plain(x: Any) -> Any:
    """A compute() result as a JSON tree that keeps arrays, tuples and non-string keys apart."""
    if isinstance(x, dict):
        items = [[plain(k), plain(v)] for k, v in x.items()]
        return {"dict": sorted(items, key=lambda kv: json.dumps(kv[0]))}  # order is not state
    if isinstance(x, (list, tuple)):
        return {"seq": [plain(v) for v in x]}
    if isinstance(x, np.ndarray):
        return {"nd": plain(x.tolist()), "dtype": x.dtype.str, "shape": list(x.shape)}
    if isinstance(x, np.generic):
        return plain(x.item())
    if isinstance(x, float):
        return {"f": repr(x)}
    if x is None or isinstance(x, (bool, int, str)):
        return x
    raise TypeError(f"cannot pin a result of type {type(x).__name__}")


def same(a: Any, b: Any, path: str = "result") -> None:
    """Equal plain trees, floats to 1e-12 relative (nan equals nan)."""
    if isinstance(a, dict) and set(a) == {"f"}:
        assert isinstance(b, dict) and set(b) == {"f"}, f"{path}: {a} != {b}"
        x, y = float(a["f"]), float(b["f"])
        if math.isnan(x) or math.isnan(y):
            assert math.isnan(x) and math.isnan(y), f"{path}: {x} != {y}"
        else:
            assert math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-300), f"{path}: {x} != {y}"
    elif isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{path}: {a} != {b}"
        for k in a:
            same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{path}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{path}[{i}]")
    else:
        assert type(a) is type(b) and a == b, f"{path}: {a!r} != {b!r}"


def same_wire(a: Any, b: Any, path: str) -> None:
    """The same wire tree (keys, types, array dtypes and shapes exact), floats equal to 1e-9
    relative or absolute. States of float sums (moments, losses) are rebuilt with numpy's
    reductions, whose rounding moves between numpy versions (2.4 changed 11 blobs in their last
    bits, and the compensation terms beside the means entirely, at about 1e-17); the layout is
    what this file pins, the values are pinned by ``compute()`` to 1e-12."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), f"{path}: keys {list(a)} != {list(b)}"
        for k in a:
            same_wire(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), f"{path}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same_wire(x, y, f"{path}[{i}]")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), f"{path}: {b!r} is not an array"
        assert (a.dtype, a.shape) == (b.dtype, b.shape), (
            f"{path}: {a.dtype}{a.shape} != {b.dtype}{b.shape}"
        )
        if a.dtype.kind == "f":
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9, err_msg=path)
        else:
            assert np.array_equal(a, b), f"{path}: {a!r} != {b!r}"
    elif isinstance(a, float):
        assert type(b) is float, f"{path}: {b!r} is not a float"
        ok = (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
        assert ok, f"{path}: {a!r} != {b!r}"
    else:
        assert type(a) is type(b) and a == b, f"{path}: {a!r} != {b!r}"


def _index() -> dict[str, Any]:
    return json.loads(INDEX.read_text()) if INDEX.exists() else {}


INDEXED = _index()
PINNED = [c for c in golden_cases() if c.id in INDEXED]


@pytest.mark.parametrize("case", PINNED, ids=lambda c: c.id)
def test_golden_bytes(case: Case) -> None:
    committed = _file(case.id).read_bytes()
    expected = INDEXED[case.id]
    metric = build(case)
    assert type(metric).__name__ == expected["class"]
    blob = metric.to_bytes()
    if blob != committed:  # the same layout, floats summed in another order (numpy's version)?
        same_wire(unpack_envelope(blob), unpack_envelope(committed), case.id)
    back = sm.loads(committed)
    assert type(back) is type(metric)
    assert back.to_bytes() == committed
    same(plain(metric.compute()), expected["compute"], case.id)
    same(plain(back.compute()), expected["compute"], case.id)


def test_every_public_class_is_pinned() -> None:
    pinned = {entry["class"] for entry in INDEXED.values()}
    missing = sorted(c.__name__ for c in public_metric_classes() if c.__name__ not in pinned)
    assert not missing, f"no golden blob for {missing}: regenerate (see docstring)"


def test_every_golden_file_is_indexed() -> None:
    files = {p.name for p in GOLDEN.glob("*.bin")}
    indexed = {_file(i).name for i in INDEXED}
    assert files == indexed
    assert len(PINNED) == len(INDEXED), "an indexed case no longer exists"


def regenerate() -> None:
    GOLDEN.mkdir(exist_ok=True)
    for old in GOLDEN.glob("*.bin"):
        old.unlink()
    index: dict[str, Any] = {}
    for case in golden_cases():
        metric = build(case)
        blob = metric.to_bytes()
        assert build(case).to_bytes() == blob, f"{case.id} is not deterministic"
        _file(case.id).write_bytes(blob)
        index[case.id] = {"class": type(metric).__name__, "compute": plain(metric.compute())}
    INDEX.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(index)} golden blobs to {GOLDEN}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--regen"]:
        sys.exit(__doc__)
    regenerate()
