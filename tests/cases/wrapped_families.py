"""Conformance cases for every wrapper around a representative of every metric family.

The wrappers' own cases (``windows.py``, ``wrappers_uq.py``, ``collection.py``) wrap
classification metrics; a review found that lists mixing strings and numbers, empty plain
lists and late rows went wrong only around the other families (0.8.8). Here each family's
representative case (ranking, clustering external and internal, text, detection, regression)
is wrapped in ``Sliced``, the windows and ``MetricCollection``, and in ``Bootstrap`` where it
takes them (``Decayed`` takes none of these families' states), and run through the same
laws: the batches are the family's own with the wrapper's key column added, and so are its
refused batches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import streammetrics as sm
from streammetrics.windows import SlidingWindow, TumblingWindows
from tests.cases import clustering, detection, ranking, regression, text
from tests.harness import Batch, Case


def _case(module: Any, case_id: str) -> Case:
    found: Case = next(c for c in module.CASES if c.id == case_id)
    return found


def _rows(args: tuple[Any, ...]) -> int:
    first = args[0]
    return 1 if isinstance(first, str) or not hasattr(first, "__len__") else len(first)


def _keyed(inner: Case, column: Callable[[np.random.Generator, int], dict[str, Any]]) -> Any:
    """The inner case's batches with the wrapper's key column(s) added."""

    def batch(rng: np.random.Generator, n: int) -> Batch:
        args, kwargs = inner.batch(rng, n)
        return args, {**kwargs, **column(rng, _rows(args))}

    return batch


def _bad(
    inner: Case, column: Callable[[np.random.Generator, int], dict[str, Any]], alone: bool
) -> list[Batch]:
    """The inner case's refused batches with the key column added. ``alone``: only those a
    fresh metric refuses (a tumbling window is a metric of its own: rows opening a new window
    are not checked against what other windows hold, such as 2-D rows after 1-D ones)."""
    rng = np.random.default_rng(0)
    bad = inner.bad if not alone else [b for b in inner.bad if _refused(inner, b)]
    return [(args, {**kwargs, **column(rng, _rows(args))}) for args, kwargs in bad]


def _refused(inner: Case, batch: Batch) -> bool:
    try:
        inner.make().update(*batch[0], **batch[1])  # type: ignore[attr-defined]
    except sm.InputError:
        return True
    return False


def _slices(rng: np.random.Generator, n: int) -> dict[str, Any]:
    return {"by": rng.integers(0, 4, n)}


def _times(rng: np.random.Generator, n: int) -> dict[str, Any]:
    return {"timestamps": rng.uniform(0, 100, n)}


def _ids(rng: np.random.Generator, n: int) -> dict[str, Any]:
    return {"ids": rng.integers(0, 2**40, n)}


def _wrapped(
    name: str,
    wrap: Callable[[sm.Metric], sm.Metric],
    other: Callable[[sm.Metric], sm.Metric],
    inner: Case,
    column: Callable[[np.random.Generator, int], dict[str, Any]] | None,
) -> Case:
    add = column if column is not None else (lambda rng, n: {})
    return Case(
        f"{name}({inner.id})",
        lambda: wrap(inner.make()),
        _keyed(inner, add),
        _bad(inner, add, alone=name == "TumblingWindows"),
        exact=inner.exact,
        rtol=max(inner.rtol, 1e-10),
        atol=inner.atol,
        other=lambda: other(inner.make()),
        rows=inner.rows,
    )


#: (name, wrap, another configuration, the wrapper's own key column): every family is run
#: through each; ``Bootstrap`` only around the families that take its weights or rows.
WRAPPERS: list[tuple[str, Any, Any, Any]] = [
    ("Sliced", sm.Sliced, lambda m: sm.Sliced(m, max_slices=100), _slices),
    (
        "TumblingWindows",
        lambda m: TumblingWindows(m, width=10),
        lambda m: TumblingWindows(m, width=20),
        _times,
    ),
    (
        "SlidingWindow",
        lambda m: SlidingWindow(m, width=40, slots=4),
        lambda m: SlidingWindow(m, width=40, slots=5),
        _times,
    ),
    (
        "MetricCollection",
        lambda m: sm.MetricCollection(m=m),
        lambda m: sm.MetricCollection(other=m),
        None,
    ),
]
BOOTSTRAP = (
    "Bootstrap",
    lambda m: sm.Bootstrap(m, replicates=8, seed=2),
    lambda m: sm.Bootstrap(m, replicates=8, seed=3),
    _ids,
)


def _around(inner: Case, bootstrap: bool = False) -> list[Case]:
    wrappers = [*WRAPPERS, BOOTSTRAP] if bootstrap else WRAPPERS
    return [_wrapped(name, wrap, other, inner, column) for name, wrap, other, column in wrappers]


CASES = [
    *_around(_case(ranking, "NDCG")),
    *_around(_case(clustering, "AdjustedRandIndex"), bootstrap=True),
    *_around(_case(clustering, "CalinskiHarabasz")),
    *_around(_case(text, "BLEU"), bootstrap=True),
    *_around(_case(detection, "MeanAveragePrecision")),
    *_around(_case(regression, "MeanSquaredError"), bootstrap=True),
]
