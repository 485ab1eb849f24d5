"""The conformance harness every public metric goes through.

Each metric family lists, in ``tests/cases/<family>.py``, a ``CASES`` list of :class:`Case`: how
to build the metric, how to draw a random valid batch, and which batches must be refused.
``tests/test_conformance.py`` discovers every public metric class and fails if one has no case,
then runs each case through the same checks: codec round trip of every field, compute is
idempotent, merge with empty is identity (an empty one built, decoded, reset or fed an empty
batch), merge leaves its argument unchanged, any split merged
in any order equals the single stream (byte for byte where ``exact``; shards cut between
batches, and through them row by row), a failing update leaves
the state unchanged, incompatible merges are refused, and corrupt bytes give only
``StateDecodeError``. The serving checks feed the same stream one sample at a time (as scalars,
and as one-row batches) and from several threads at once while another thread reads (or
merges shards in), and require the same state and interval as the single stream; two metrics
merged into each other from two threads at once end as one of the two sequential orders; a bad
sample is refused at its call and changes nothing, not even the rows still waiting to be folded.
"""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import streammetrics as sm

Batch = tuple[tuple[Any, ...], dict[str, Any]]


@dataclass
class Case:
    """One configuration of one metric, and how to feed it.

    make:   a fresh metric of this configuration.
    batch:  ``(rng, n) -> (args, kwargs)``: a random valid update of about ``n`` rows.
    bad:    ``(args, kwargs)`` updates that must raise ``InputError`` (after valid data).
    exact:  the state is made of counts: any split gives the same bytes. Otherwise compute()
            must agree to ``rtol``.
    other:  a metric of the same class but another configuration (merging it must be refused),
            or None when the class has no configuration.
    rows:   the batches may be fed one row at a time (False only where a batch carries a
            meaning of its own, such as ranking's ``complete=True``: "these are the last rows
            of their queries").
    split_interval: merged shards give the whole stream's ``interval()`` (False only where the
            state is documented as not split-invariant: a bootstrap drawn without ids).
    samples: where ``rows`` is False, how a batch is still fed one sample at a time: ``(batch,
            scalars) -> groups of calls``, each group fed in order and by one thread (ranking's
            complete batches: one group per query, its rows open but the last, which closes
            it). None: such a case is fed whole batches only.
    """

    id: str
    make: Callable[[], sm.Metric]
    batch: Callable[[np.random.Generator, int], Batch]
    bad: list[Batch] = field(default_factory=list)
    exact: bool = True
    rtol: float = 1e-12
    atol: float = 0.0
    other: Callable[[], sm.Metric] | None = None
    rows: bool = True
    split_interval: bool = True
    samples: Callable[[Batch, bool], list[list[Batch]]] | None = None


def family_modules() -> list[Any]:
    """Every public module of streammetrics that can be imported (optional extras may be
    missing)."""
    names = ["streammetrics"] + [
        f"streammetrics.{m.name}"
        for m in pkgutil.iter_modules(sm.__path__)
        if not m.name.startswith("_")
        and m.name not in {"cli", "dask", "spark", "prometheus", "torch"}
    ]
    return [importlib.import_module(n) for n in names]


def public_metric_classes() -> set[type[sm.Metric]]:
    """Every concrete Metric subclass named in a public ``__all__``."""
    found: set[type[sm.Metric]] = set()
    for module in family_modules():
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name, None)
            if inspect.isclass(obj) and issubclass(obj, sm.Metric) and obj is not sm.Metric:
                found.add(obj)
    return found


def all_cases() -> list[Case]:
    from tests import cases

    out: list[Case] = []
    for info in pkgutil.iter_modules(cases.__path__):
        module = importlib.import_module(f"tests.cases.{info.name}")
        out.extend(module.CASES)
    return out


def _length(x: Any) -> int | None:
    if x is None or isinstance(x, (str, bytes, dict)) or not hasattr(x, "__len__"):
        return None
    if getattr(x, "ndim", 1) == 0:
        return None
    return len(x)


def _row(x: Any, i: int, n: int, scalars: bool) -> Any:
    """Row ``i`` of column ``x``: a scalar where one can stand for the row, else a 1-row batch."""
    if _length(x) != n:
        return x  # not a column: a flag, a setting, None
    if isinstance(x, tuple) and all(_length(e) == n for e in x):
        return tuple(_row(e, i, n, scalars) for e in x)  # composite keys: a tuple of columns
    if scalars:
        if isinstance(x, np.ndarray) and x.ndim == 1 and x.dtype.kind in "biufU":
            return x[i] if i % 2 else x[i].item()  # numpy and Python scalars, alternately
        if isinstance(x, list) and isinstance(x[i], (bool, int, float, str, np.generic)):
            return x[i]
        if isinstance(x, list) and isinstance(x[i], list):
            return x[i]  # one hypothesis's references, beside the hypothesis as a string
    return x[i : i + 1]


def row_calls(batch: Batch, scalars: bool = True) -> list[Batch]:
    """The ``update`` calls that feed ``batch`` one sample at a time.

    Every argument with one entry per row is cut into rows: a scalar where the column is 1-D
    (numbers, labels or strings; ``scalars=True``), else a batch of one row. Other arguments
    (flags, settings) go unchanged to every call.
    """
    args, kwargs = batch
    n = _length(args[0]) if args else None
    if not n:
        return [batch]
    return [
        (
            tuple(_row(a, i, n, scalars) for a in args),
            {k: _row(v, i, n, scalars) for k, v in kwargs.items()},
        )
        for i in range(n)
    ]


def sample_groups(case: Case, batch: Batch, scalars: bool = True) -> list[list[Batch]] | None:
    """The calls that feed ``batch`` one sample at a time, in groups whose calls must keep their
    order (one call a group where rows may be cut freely; ``Case.samples`` otherwise), or None
    where the case is fed whole batches only."""
    if case.rows:
        return [[call] for call in row_calls(batch, scalars)]
    if case.samples is not None:
        return case.samples(batch, scalars)
    return None


def sample_calls(case: Case, batch: Batch, scalars: bool = True) -> list[Batch]:
    """``sample_groups`` in order, as one list of calls (``[batch]`` where it has none)."""
    groups = sample_groups(case, batch, scalars)
    return [batch] if groups is None else [call for group in groups for call in group]


def feed(metric: sm.Metric, batches: list[Batch]) -> sm.Metric:
    for args, kwargs in batches:
        metric.update(*args, **kwargs)
    return metric


def feed_in_threads(
    metric: sm.Metric,
    calls: list[Batch],
    threads: int = 4,
    read: Callable[[sm.Metric], Any] | None = None,
    every: int = 100,
) -> sm.Metric:
    """Feed ``calls`` (``(args, kwargs)`` pairs) to one ``metric`` from ``threads`` threads that
    start together, thread ``j`` taking every ``threads``-th call from ``j``; with ``read``, each
    thread also calls ``read(metric)`` every ``every`` of its calls (reads racing the updates)."""
    start = threading.Barrier(threads)

    def run(part: list[Batch]) -> None:
        start.wait()
        for i, (args, kwargs) in enumerate(part):
            metric.update(*args, **kwargs)
            if read is not None and i % every == 0:
                read(metric)

    workers = [threading.Thread(target=run, args=(calls[j::threads],)) for j in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    return metric


def run_together(workers: list[Callable[[], None]], timeout: float = 120.0) -> None:
    """Start every worker at once (with a short switch interval, so that they interleave);
    fail on any worker's exception, or if one is still running after ``timeout`` seconds (a
    deadlock)."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(workers))

    def run(fn: Callable[[], None]) -> None:
        try:
            start.wait()
            fn()
        except BaseException as exc:  # reported below: a thread's exception is otherwise lost
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        threads = [threading.Thread(target=run, args=(fn,), daemon=True) for fn in workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout)
        stuck = sum(t.is_alive() for t in threads)
    finally:
        sys.setswitchinterval(interval)
    assert not stuck, f"{stuck} threads still running after {timeout} s: a deadlock"
    assert not errors, repr(errors[0])


def assert_same_result(
    a: Any, b: Any, rtol: float = 1e-12, atol: float = 0.0, path: str = "result"
) -> None:
    """Equal results: nan equals nan; floats to ``rtol``; arrays, tuples and dicts recursively."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{path}: keys {set(a)} != {set(b)}"
        for k in a:
            assert_same_result(a[k], b[k], rtol, atol, f"{path}[{k!r}]")
    elif isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b), f"{path}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_result(x, y, rtol, atol, f"{path}[{i}]")
    elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, f"{path}: shapes {a.shape} != {b.shape}"
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=path)
        else:
            np.testing.assert_array_equal(a, b, err_msg=path)
    elif isinstance(a, float) or isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            assert math.isnan(a) and math.isnan(b), f"{path}: {a} != {b}"
        else:
            assert math.isclose(a, b, rel_tol=rtol, abs_tol=atol), f"{path}: {a} != {b}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def is_all_nan(result: Any) -> bool:
    """True when every float in an empty metric's result is nan (containers may be empty)."""
    if isinstance(result, dict):
        return all(is_all_nan(v) for v in result.values())
    if isinstance(result, (tuple, list)):
        return all(is_all_nan(v) for v in result)
    if isinstance(result, np.ndarray):
        return result.size == 0 or (result.dtype.kind in "fc" and bool(np.isnan(result).all()))
    if isinstance(result, float):
        return math.isnan(result)
    return True  # counts and labels of an empty metric (0, [], None)
