"""Fuzz target: ``loads`` -> ``compute`` -> ``merge`` (with itself and with a fresh metric).

The invariant, for any bytes:

* ``sm.loads`` raises nothing but :class:`~streammetrics.StateDecodeError`;
* after a successful ``loads``, ``compute`` raises nothing and returns only nan or finite
  floats (no inf), and ``interval`` raises nothing but ``NoIntervalError``;
* ``merge`` with a copy of itself, with a fresh metric of the same configuration and into one,
  raises nothing but :class:`~streammetrics.IncompatibleStateError` (which includes
  ``CountOverflowError``, the count bound of ``docs/format.md``); a merged state computes under
  the same rule and its bytes load again.

Coverage-guided, with atheris (``pip install atheris``), seeded with the golden blobs; for a
5-minute run from the repository root::

    mkdir -p /tmp/sm-fuzz-corpus
    PYTHONPATH=. /work/venv/bin/python tests/fuzz/fuzz_loads.py \\
        /tmp/sm-fuzz-corpus tests/golden -max_total_time=300 -rss_limit_mb=4096 -timeout=20

Every class is held to the whole invariant: the float states are bounded (``docs/format.md``,
"Float bounds").

A crash leaves ``crash-<sha1>`` in the working directory; replay it with the same command and
the file name instead of the corpus directories. Without atheris, ``tests/fuzz/test_fuzz.py``
runs the same invariant under hypothesis for a few seconds (byte mutations and structured
mutations of the golden blobs' decoded trees), as part of the normal test suite.
"""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

if __name__ == "__main__":
    # Coverage feedback from streammetrics' own code only (instrumenting numpy and scipy too
    # takes minutes and slows every run).
    import atheris

    with atheris.instrument_imports(include=["streammetrics"]):
        import streammetrics  # noqa: F401

import streammetrics as sm
from streammetrics import _codec

GOLDEN = Path(__file__).resolve().parent.parent / "golden"


def golden_blobs() -> list[bytes]:
    """The seed corpus: every pinned state layout."""
    return [p.read_bytes() for p in sorted(GOLDEN.glob("*.bin"))]


def check_result(result: Any, where: str) -> None:
    """Every float in a compute() result is nan or finite."""
    if isinstance(result, dict):
        for key, value in result.items():
            check_result(value, f"{where}[{key!r}]")
    elif isinstance(result, (list, tuple)):
        for i, value in enumerate(result):
            check_result(value, f"{where}[{i}]")
    elif isinstance(result, np.ndarray):
        if result.dtype.kind in "fc" and np.isinf(result).any():
            raise AssertionError(f"{where}: inf in {result!r}")
    elif isinstance(result, (float, np.floating)):
        if math.isinf(result):
            raise AssertionError(f"{where}: {result!r}")


# Results where an infinity is the documented value (scikit-learn's first ROC threshold).
_INF_ALLOWED = {"ROCCurve": (2,), "PRCurve": (2,)}
# Dunn's index is +inf when every cluster is one repeated point (a zero diameter).


def class_names(blob: bytes) -> set[str]:
    """Every metric class named in a blob, nested ones (windows, collections) included."""
    names: set[str] = set()

    def walk(tree: Any) -> None:
        if isinstance(tree, dict):
            if isinstance(tree.get("class"), str):
                names.add(tree["class"])
            for value in tree.values():
                walk(value)
        elif isinstance(tree, list):
            for value in tree:
                walk(value)

    try:
        walk(_codec.decode(blob))
    except sm.StateDecodeError:
        pass
    return names


def _check(result: Any, name: str, where: str, metric: Any = None) -> None:
    if name in _INF_ALLOWED and isinstance(result, tuple):
        result = [r for i, r in enumerate(result) if i not in _INF_ALLOWED[name]]
    if name == "DunnIndex" and result == math.inf:
        return
    if name == "ClusterGeometry" and isinstance(result, dict) and result.get("dunn") == math.inf:
        result = {**result, "dunn": math.nan}
    if metric is not None and metric._config.get("force_finite") is False:
        # R2 and explained variance over a zero variance: -inf, as scikit-learn says.
        result = _without_neginf(result)
    check_result(result, where)


def _without_neginf(result: Any) -> Any:
    if isinstance(result, dict):
        return {k: _without_neginf(v) for k, v in result.items()}
    if isinstance(result, np.ndarray) and result.dtype.kind == "f":
        return np.where(np.isneginf(result), np.nan, result)
    if isinstance(result, (float, np.floating)) and result == -math.inf:
        return math.nan
    return result


def check_interval(metric: Any, name: str) -> None:
    """``interval()`` raises nothing but ``NoIntervalError`` (no closed form, or a shape it does
    not cover) and gives ``low <= high`` or ``nan, nan`` (0.8.12: a forged ``R2Score`` raised
    ``OverflowError`` there)."""
    try:
        bounds = metric.interval()
    except sm.NoIntervalError:
        return
    # (one pair of floats, or of arrays: MulticlassROCAUC(average=None) bounds every class)
    low, high = (np.asarray(b, dtype=np.float64) for b in bounds)
    with np.errstate(invalid="ignore"):
        ok = (np.isnan(low) & np.isnan(high)) | (low <= high)
    if not ok.all():
        raise AssertionError(f"{name}.interval(): {low!r} > {high!r} or one nan")


def check_one(blob: bytes, lenient: frozenset[str] = frozenset()) -> None:
    """Raise AssertionError (or the unexpected exception) when ``blob`` breaks the invariant.

    For blobs naming a class in ``lenient``, only the exception contract is checked (no
    RuntimeWarning, inf or round-trip check)."""
    try:
        metric = sm.loads(blob)
    except sm.StateDecodeError:
        return
    strict = not (class_names(blob) & lenient)
    with warnings.catch_warnings():
        # A RuntimeWarning from numpy inside compute is an overflow or invalid value that the
        # state should not have allowed: the test suite turns them into errors too.
        warnings.simplefilter("error" if strict else "ignore", RuntimeWarning)
        name = type(metric).__name__
        result = metric.compute()
        if strict:
            _check(result, name, f"{name}.compute()", metric)
        check_interval(metric, name)
        fresh = metric.copy().reset()
        pairs = [
            ("itself", metric.copy(), metric),
            ("into fresh", fresh.copy(), metric),
            ("fresh into", metric.copy(), fresh),
        ]
        for how, into, other in pairs:
            try:
                into.merge(other)
            except sm.IncompatibleStateError:
                continue
            result = into.compute()
            if not strict:
                continue
            _check(result, name, f"{name} merged {how}", metric)
            again = sm.loads(into.to_bytes())
            if again.to_bytes() != into.to_bytes():
                raise AssertionError(f"{name} merged {how}: the bytes do not round-trip")


def main() -> None:
    import atheris

    def one_input(data: bytes) -> None:
        check_one(data)

    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
