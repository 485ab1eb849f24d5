"""The fuzz target of ``tests/fuzz/fuzz_loads.py`` under hypothesis, briefly (a few seconds),
so that CI runs it on every change; the coverage-guided atheris run is the long version.

Two mutators, both seeded with the golden blobs: raw byte flips and truncations (the decoder's
own robustness), and structured mutations of the decoded state tree (one number or one array
element set to an extreme: 2**53 + 1, 2**62, -1, inf, nan, ...) re-encoded as a well-formed
blob, which reach the states' invariant checks and compute.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streammetrics import _codec
from tests.fuzz.fuzz_loads import check_one, golden_blobs

BLOBS = golden_blobs()

_INTS = [0, 1, -1, 2, 2**31, 2**53, 2**53 + 1, 2**62, 2**63 - 1, -(2**63)]
_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-308, 1e308, -1e308, np.inf, -np.inf, np.nan, 2.0**53]


def _leaves(tree: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths to every number and array in a decoded tree."""
    if isinstance(tree, dict):
        return [p for k, v in tree.items() for p in _leaves(v, (*path, k))]
    if isinstance(tree, list):
        return [p for i, v in enumerate(tree) for p in _leaves(v, (*path, i))]
    if isinstance(tree, (bool, str, bytes)) or tree is None:
        return []
    return [path]


def _mutated(tree: Any, path: tuple[Any, ...], data: st.DataObject) -> None:
    parent = tree
    for key in path[:-1]:
        parent = parent[key]
    value = parent[path[-1]]
    if isinstance(value, np.ndarray):
        value = value.copy()
        if value.size:
            flat = value.reshape(-1)
            i = data.draw(st.integers(0, flat.size - 1))
            if value.dtype.kind == "f":
                flat[i] = data.draw(st.sampled_from(_FLOATS))
            elif value.dtype.kind in "iu":
                info = np.iinfo(value.dtype)
                choices = [v for v in _INTS if info.min <= v <= info.max]
                flat[i] = data.draw(st.sampled_from(choices))
            elif value.dtype.kind == "b":
                flat[i] = not flat[i]
    elif isinstance(value, float):
        value = data.draw(st.sampled_from(_FLOATS))
    elif isinstance(value, int):
        value = data.draw(st.sampled_from([v for v in _INTS if -(2**63) <= v < 2**64]))
    parent[path[-1]] = value


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.data())
def test_structured_mutations_keep_the_invariant(data: st.DataObject) -> None:
    blob = data.draw(st.sampled_from(BLOBS))
    name, schema, config, state = _codec.unpack_envelope(blob)
    tree = {"config": config, "state": state}
    leaves = _leaves(tree)
    for _ in range(data.draw(st.integers(1, 2))):
        _mutated(tree, data.draw(st.sampled_from(leaves)), data)
    check_one(_codec.pack_envelope(name, schema, tree["config"], tree["state"]))


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.data())
def test_byte_mutations_keep_the_invariant(data: st.DataObject) -> None:
    blob = bytearray(data.draw(st.sampled_from(BLOBS)))
    for _ in range(data.draw(st.integers(1, 3))):
        blob[data.draw(st.integers(0, len(blob) - 1))] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        blob = blob[: data.draw(st.integers(0, len(blob)))]
    check_one(bytes(blob))


def test_every_golden_blob_keeps_the_invariant() -> None:
    for blob in BLOBS:
        check_one(blob)  # unmutated: every class, strictly
