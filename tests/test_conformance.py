"""Every public metric through the same conformance checks (see ``tests/harness.py``)."""

from __future__ import annotations

import random
import re
import sys
import threading

import numpy as np
import pytest

import streammetrics as sm
from streammetrics import _codec
from tests.harness import (
    Case,
    all_cases,
    assert_same_result,
    feed,
    is_all_nan,
    public_metric_classes,
    row_calls,
    run_together,
    sample_calls,
    sample_groups,
)

CASES = all_cases()


def test_every_public_metric_has_a_case() -> None:
    covered = {type(case.make()) for case in CASES}
    missing = sorted(cls.__name__ for cls in public_metric_classes() - covered)
    assert not missing, f"metrics without a conformance case in tests/cases/: {missing}"


def test_every_registered_metric_of_the_library_has_a_case() -> None:
    # (The other way round from the public list: a class registered but not exported, or
    # exported without a place in __all__, would escape the test above.)
    covered = {type(case.make()) for case in CASES}
    library = [
        cls
        for cls in sm.registered_metrics().values()
        if cls.__module__.split(".")[0] == "streammetrics"
    ]
    missing = sorted(cls.__name__ for cls in library if cls not in covered)
    assert not missing, f"registered metrics without a conformance case: {missing}"


def test_every_public_metric_is_registered() -> None:
    registry = sm.registered_metrics()
    for cls in public_metric_classes():
        assert registry.get(cls.__name__) is cls


parametrize = pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])


def _batches(case: Case, seed: int, count: int = 12) -> list:
    rng = np.random.default_rng(seed)
    sizes = [0, 1] + [int(s) for s in rng.integers(2, 60, count - 2)]
    rng.shuffle(sizes)
    return [case.batch(rng, n) for n in sizes]


def _check_equal(case: Case, got: sm.Metric, want: sm.Metric, what: str) -> None:
    if case.exact:
        assert got.to_bytes() == want.to_bytes(), f"{what}: states differ"
        assert got == want
    assert got.count == want.count, f"{what}: counts differ"
    assert_same_result(got.compute(), want.compute(), case.rtol, case.atol, what)


@parametrize
def test_empty_metric(case: Case) -> None:
    m = case.make()
    assert m.count == 0
    assert is_all_nan(m.compute()), f"empty {case.id} should compute to nan"
    again = sm.loads(m.to_bytes())
    assert again == m and type(again) is type(m)
    repr(m)


@parametrize
def test_roundtrip_every_field(case: Case) -> None:
    m = feed(case.make(), _batches(case, 1))
    blob = m.to_bytes()
    back = sm.loads(blob)
    assert type(back) is type(m) and back.count == m.count
    assert _codec.encode(back.config) == _codec.encode(m.config)
    assert back.to_bytes() == blob
    assert back == m
    assert_same_result(back.compute(), m.compute(), 0.0, 0.0, "round trip")
    assert type(m).from_bytes(blob) == m
    foreign = sm.Accuracy() if not isinstance(m, sm.Accuracy) else sm.ConfusionMatrix()
    with pytest.raises(sm.StateDecodeError):
        type(m).from_bytes(foreign.to_bytes())


@parametrize
def test_compute_is_idempotent_and_pure(case: Case) -> None:
    m = feed(case.make(), _batches(case, 2))
    before = m.to_bytes()
    first = m.compute()
    assert_same_result(m.compute(), first, 0.0, 0.0, "second compute")
    assert m.to_bytes() == before, "compute changed the state"


@parametrize
def test_merge_with_empty_is_identity(case: Case) -> None:
    m = feed(case.make(), _batches(case, 3))
    _check_equal(case, m.copy().merge(case.make()), m, "m.merge(empty)")
    _check_equal(case, case.make().merge(m), m, "empty.merge(m)")


@parametrize
def test_merge_with_an_emptied_metric_is_identity(case: Case) -> None:
    # An empty metric reached another way than the constructor: decoded from an empty one's
    # bytes, reset after rows, fed only an empty batch. Each is the merge's identity too.
    m = feed(case.make(), _batches(case, 3))
    emptied = {
        "loaded from bytes": sm.loads(case.make().to_bytes()),
        "reset": feed(case.make(), _batches(case, 25, count=4)).reset(),
        "fed an empty batch": feed(case.make(), [case.batch(np.random.default_rng(26), 0)]),
    }
    emptied["reset, through bytes"] = sm.loads(emptied["reset"].to_bytes())
    for how, empty in emptied.items():
        assert empty.count == 0, how
        _check_equal(case, m.copy().merge(empty), m, f"m.merge(empty {how})")
        _check_equal(case, empty.copy().merge(m), m, f"(empty {how}).merge(m)")
        _check_equal(case, empty.copy().merge(empty), case.make(), f"empty {how} with itself")


@parametrize
def test_merge_leaves_argument_unchanged(case: Case) -> None:
    a = feed(case.make(), _batches(case, 4))
    b = feed(case.make(), _batches(case, 5))
    b_bytes = b.to_bytes()
    c = a + b
    assert b.to_bytes() == b_bytes
    a.merge(b)
    assert b.to_bytes() == b_bytes
    _check_equal(case, c, a, "a + b")
    args, kwargs = case.batch(np.random.default_rng(6), 10)
    b.update(*args, **kwargs)
    _check_equal(case, c, a, "merge keeps no reference to its argument")


@parametrize
@pytest.mark.parametrize("seed", [10, 11, 12])
def test_split_invariance(case: Case, seed: int) -> None:
    batches = _batches(case, seed, count=16)
    whole = feed(case.make(), batches)
    rnd = random.Random(seed)
    n_shards = rnd.randint(2, 5)
    shards = [case.make() for _ in range(n_shards)]
    for batch in batches:
        feed(shards[rnd.randrange(n_shards)], [batch])
    order = shards[:]
    rnd.shuffle(order)
    folded = order[0].copy().merge(*order[1:])
    _check_equal(case, folded, whole, "shards merged in random order")
    # Many at once into a fresh metric: its count grows only after the last operand, so a
    # merge that asks "am I empty?" per operand must not ask the count.
    _check_equal(case, case.make().merge(*order), whole, "shards merged at once into a fresh one")
    tree = [s.copy() for s in order]
    while len(tree) > 1:
        tree = [
            tree[i].merge(tree[i + 1]) if i + 1 < len(tree) else tree[i]
            for i in range(0, len(tree), 2)
        ]
    _check_equal(case, tree[0], whole, "shards merged as a tree")
    _check_equal(case, sum(shards), whole, "sum(shards)")
    merged_bytes = sm.loads(folded.to_bytes())
    _check_equal(case, merged_bytes, whole, "merged through bytes")


@parametrize
def test_failed_update_leaves_state_unchanged(case: Case) -> None:
    assert case.bad, f"{case.id} lists no bad input"
    m = feed(case.make(), _batches(case, 7))
    before = m.to_bytes()
    for args, kwargs in case.bad:
        with pytest.raises(sm.InputError):
            m.update(*args, **kwargs)
        assert m.to_bytes() == before, "a failing update changed the state"


_WRAPPERS = ("Sliced", "Bootstrap", "Decayed", "MetricCollection", "SlidingWindow", "Tumbling")


@parametrize
def test_unknown_keyword_refused_naming_it(case: Case) -> None:
    """A keyword the update does not take: an ``InputError`` (and a ``TypeError``, as Python's
    own) naming it and the metric's public class, not the private base that defines
    ``update`` (0.8.23: "_ConfusionMetric.update() got an unexpected keyword argument")."""
    m = feed(case.make(), _batches(case, 9))
    before = m.to_bytes()
    (args, kwargs), kind = case.batch(np.random.default_rng(1), 5), type(m).__name__
    for extra in ({"not_an_argument": 1}, {"sample_weights": None}):
        with pytest.raises(sm.UnknownArgumentError) as err:
            m.update(*args, **kwargs, **extra)
        assert isinstance(err.value, TypeError) and isinstance(err.value, sm.InputError)
        name = next(iter(extra))
        # The class named is public: the metric's, or for a wrapper the wrapped metric's
        # whose update the keyword reached.
        named = re.match(rf"{name}: (\w+)\.update takes no argument '{name}'", str(err.value))
        assert named is not None and named.group(1) in sm.registered_metrics(), err.value
        assert named.group(1) == kind or case.id.startswith(_WRAPPERS), err.value
        assert m.to_bytes() == before, "a refused update changed the state"


@parametrize
def test_incompatible_merges_refused(case: Case) -> None:
    m = feed(case.make(), _batches(case, 8))
    before = m.to_bytes()
    foreign = sm.Accuracy() if not isinstance(m, sm.Accuracy) else sm.ConfusionMatrix()
    with pytest.raises(sm.IncompatibleStateError):
        m.merge(foreign)
    if case.other is not None:
        other = case.other()
        assert type(other) is type(m) and other.config != m.config
        with pytest.raises(sm.IncompatibleStateError):
            m.merge(other)
    assert m.to_bytes() == before


@parametrize
def test_reset_and_copy(case: Case) -> None:
    m = feed(case.make(), _batches(case, 9))
    c = m.copy()
    assert c == m and c is not m
    before = c.to_bytes()
    feed(m, _batches(case, 19, count=4))  # the copy shares nothing the original changes
    assert c.to_bytes() == before
    feed(c, _batches(case, 20, count=4))
    c = sm.loads(before)
    m.reset()
    assert m == case.make() and m.count == 0
    assert c.count > 0


@parametrize
def test_corrupt_bytes_raise_only_state_decode_error(case: Case) -> None:
    m = feed(case.make(), _batches(case, 13))
    blob = m.to_bytes()
    rng = np.random.default_rng(14)
    candidates = [blob[:i] for i in sorted(set(rng.integers(0, len(blob), 40).tolist()))]
    for _ in range(150):
        flipped = bytearray(blob)
        pos = int(rng.integers(0, len(blob)))
        flipped[pos] ^= 1 << int(rng.integers(0, 8))
        candidates.append(bytes(flipped))
    candidates += [bytes(rng.integers(0, 256, int(n), dtype=np.uint8)) for n in (0, 1, 7, 64)]
    for bad in candidates:
        try:
            back = sm.loads(bad)
        except sm.StateDecodeError:
            continue
        # A flip can land on a value that is still valid: then the state must be usable.
        back.compute()
        back.to_bytes()


# -- the serving path: one sample at a time, many threads, bad samples -------------------------

ROW_CASES = [c for c in CASES if c.rows]
parametrize_rows = pytest.mark.parametrize("case", ROW_CASES, ids=[c.id for c in ROW_CASES])
# The cases fed one sample at a time: row by row, or in ordered groups (``Case.samples``).
SAMPLE_CASES = [c for c in CASES if c.rows or c.samples is not None]
parametrize_samples = pytest.mark.parametrize(
    "case", SAMPLE_CASES, ids=[c.id for c in SAMPLE_CASES]
)


def _one_sample_at_a_time(case: Case, batches: list, scalars: bool = True) -> sm.Metric:
    m = case.make()
    for batch in batches:
        feed(m, sample_calls(case, batch, scalars))
    return m


def _units(case: Case, batches: list) -> list[list]:
    """Half the batches whole, half one sample at a time: groups of calls, each to be fed in
    order by one thread."""
    units: list[list] = []
    for i, batch in enumerate(batches):
        groups = sample_groups(case, batch) if i % 2 else None
        units.extend(groups if groups is not None else [[batch]])
    return units


@parametrize_samples
@pytest.mark.parametrize("scalars", [True, False], ids=["scalars", "one-row-batches"])
def test_one_sample_at_a_time(case: Case, scalars: bool) -> None:
    batches = _batches(case, 15)
    whole = feed(case.make(), batches)
    _check_equal(case, _one_sample_at_a_time(case, batches, scalars), whole, "one sample at a time")
    # Pending rows are folded before every read, and a read changes nothing.
    again = case.make()
    for batch in batches:
        for args, kwargs in sample_calls(case, batch, scalars):
            again.update(*args, **kwargs)
            assert again.count > 0
    _check_equal(case, again, whole, "one sample at a time, read after each")


@parametrize_samples
def test_concurrent_feeding(case: Case) -> None:
    batches = _batches(case, 16, count=16)
    whole = feed(case.make(), batches)
    units = _units(case, batches)
    m = case.make()
    writers = 4
    start = threading.Barrier(writers + 1)
    done = threading.Event()
    errors: list[BaseException] = []

    def write(part: list) -> None:
        try:
            start.wait()
            for unit in part:
                feed(m, unit)
        except BaseException as exc:  # reported below: a thread's exception is otherwise lost
            errors.append(exc)

    def read() -> None:
        # Every update is applied whole: the count a reader sees never falls, and never passes
        # the rows fed; a copy merged with the metric holds two such counts.
        try:
            start.wait()
            seen = 0
            while not done.is_set():
                m.compute()
                sm.loads(m.to_bytes())
                count = m.count
                assert seen <= count <= whole.count, f"count {count} after {seen}"
                seen = count
                doubled = (m.copy() + m).count
                assert 2 * seen <= doubled <= 2 * whole.count, f"copy + m: {doubled}"
        except BaseException as exc:
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        threads = [threading.Thread(target=write, args=(units[k::writers],)) for k in range(4)]
        reader = threading.Thread(target=read)
        for t in [*threads, reader]:
            t.start()
        for t in threads:
            t.join(timeout=120)
        done.set()
        reader.join(timeout=120)
    finally:
        sys.setswitchinterval(interval)
    assert not errors, f"{case.id}: {errors[0]!r}"
    _check_equal(case, m, whole, "fed from four threads while a fifth read")


def _nan_rows(calls: list) -> list:
    """Copies of scalar rows with one scalar replaced by nan: never a valid sample."""
    bad = []
    for args, kwargs in calls[:3]:
        for j, value in enumerate(args):
            if isinstance(value, (int, float, str, np.generic)) and not isinstance(value, bool):
                bad.append(((*args[:j], float("nan"), *args[j + 1 :]), kwargs))
    return bad


@parametrize_samples
def test_bad_sample_refused_at_its_call(case: Case) -> None:
    # Two metrics fed the same rows one at a time; one is also given bad calls between them,
    # while rows are still pending: each bad call raises InputError and changes nothing.
    batches = _batches(case, 17)
    calls = [c for b in batches for c in sample_calls(case, b)]
    bad = case.bad + _nan_rows(calls)
    good, tried = case.make(), case.make()
    for i, (args, kwargs) in enumerate(calls):
        good.update(*args, **kwargs)
        tried.update(*args, **kwargs)
        if i % 7 == 3:
            for b_args, b_kwargs in bad:
                with pytest.raises(sm.InputError):
                    tried.update(*b_args, **b_kwargs)
    _check_equal(case, tried, good, "after refused samples")


@parametrize
def test_interval_is_mergeable_or_refused(case: Case) -> None:
    # A float value has an interval that merges like the value (the merged shards' interval is
    # the whole stream's) and survives bytes; any other metric says it has none.
    batches = _batches(case, 21)
    whole = feed(case.make(), batches)
    try:
        want = whole.interval()
    except sm.NoIntervalError:
        # The metric says it has no closed form (and points to Bootstrap): a float value may
        # say so only where docs/uncertainty.md ("What raises") lists it.
        value = whole.compute()
        assert not isinstance(value, float) or _no_closed_form(whole), "undocumented refusal"
        return
    value = whole.compute()
    if isinstance(value, np.ndarray):  # a per-class value: (low, high) arrays of its shape
        assert all(isinstance(b, np.ndarray) and b.shape == value.shape for b in want)
    else:
        assert isinstance(value, float)
    if case.split_interval:
        halves = [feed(case.make(), batches[::2]), feed(case.make(), batches[1::2])]
        merged = halves[0].merge(halves[1])
        assert_same_result(merged.interval(), want, max(case.rtol, 1e-12), case.atol, "interval")
    assert_same_result(sm.loads(whole.to_bytes()).interval(), want, 0.0, 0.0, "through bytes")
    assert all(np.all(np.isnan(v)) for v in case.make().interval())


@parametrize_rows
def test_split_invariance_within_batches(case: Case) -> None:
    # Shards cut through batches: each row goes to a random shard (as one-row batches), so a
    # batch's rows meet again only in the merge.
    batches = _batches(case, 13, count=8)
    whole = feed(case.make(), batches)
    rnd = random.Random(13)
    shards = [case.make() for _ in range(3)]
    for batch in batches:
        for call in row_calls(batch, scalars=False):
            feed(shards[rnd.randrange(3)], [call])
    rnd.shuffle(shards)
    _check_equal(case, shards[0].copy().merge(*shards[1:]), whole, "rows split over shards")


@parametrize
def test_merge_while_other_threads_update(case: Case) -> None:
    # Shards merged into a metric that two other threads are feeding (whole batches and single
    # samples): every merge and update is applied whole, so the end state is the stream's.
    batches = _batches(case, 22, count=10)
    whole = feed(case.make(), batches)
    units = _units(case, batches[::2])
    shards = [feed(case.make(), [batch]) for batch in batches[1::2]]
    shard_bytes = [s.to_bytes() for s in shards]
    m = case.make()

    def writer(part: list) -> None:
        for unit in part:
            feed(m, unit)

    def merger() -> None:
        for shard in shards:
            m.merge(shard)

    run_together([lambda: writer(units[0::2]), lambda: writer(units[1::2]), merger])
    assert [s.to_bytes() for s in shards] == shard_bytes, "a merge changed its argument"
    _check_equal(case, m, whole, "merged into while fed")


@parametrize
def test_crossed_merges_at_once(case: Case) -> None:
    # a.merge(b) and b.merge(a) from two threads at once: no deadlock, and the pair ends as one
    # of the two sequential orders leaves it (each merge sees the other whole or not at all).
    a0 = feed(case.make(), _batches(case, 23, count=6))
    b0 = feed(case.make(), _batches(case, 24, count=4))
    a, b = a0.copy(), b0.copy()
    run_together([lambda: a.merge(b), lambda: b.merge(a)])
    a_first = a0.copy().merge(b0)
    b_first = b0.copy().merge(a0)
    orders = {
        "a.merge(b), then b.merge(a)": (a_first, b0.copy().merge(a_first)),
        "b.merge(a), then a.merge(b)": (a0.copy().merge(b_first), b_first),
    }
    failures = []
    for order, (want_a, want_b) in orders.items():
        try:
            _check_equal(case, a, want_a, f"a after {order}")
            _check_equal(case, b, want_b, f"b after {order}")
            return
        except AssertionError as exc:
            failures.append(str(exc))
    raise AssertionError("crossed merges match neither sequential order: " + "; ".join(failures))


@parametrize_samples
def test_interval_after_one_sample_feeding(case: Case) -> None:
    # The rows buffered by one-sample feeding are folded before interval() as before compute():
    # the interval is the batch-fed one.
    batches = _batches(case, 27)
    whole = feed(case.make(), batches)
    try:
        want = whole.interval()
    except sm.NoIntervalError:
        return  # (a refusal is checked in test_interval_is_mergeable_or_refused)
    one = _one_sample_at_a_time(case, batches)
    assert_same_result(one.interval(), want, max(case.rtol, 1e-12), case.atol, "interval")


def _no_closed_form(metric: sm.Metric) -> bool:
    """Whether docs/uncertainty.md lists ``metric`` (a float-valued one) as having no
    closed-form interval; a window or decay of such a metric has none either."""
    inner = getattr(metric, "_template", None)
    if isinstance(inner, sm.Metric) and not isinstance(metric, sm.Bootstrap):
        return _no_closed_form(inner)
    name, config = type(metric).__name__, metric.config
    if type(metric).__module__.startswith("streammetrics.clustering"):
        return True
    if name in {"BLEU", "CHRF", "CalibrationError"}:
        return True
    if name == "MulticlassROCAUC":
        return bool(config.get("average") == "micro")
    if type(metric).__module__.startswith("streammetrics.regression"):  # one value of outputs
        moments = getattr(metric, "moments", None)
        return moments is not None and (moments.width or 1) > 1
    return False
