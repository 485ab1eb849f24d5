"""Thread safety beyond the conformance harness: nested wrappers, crossed merges, self-merges.

The harness (``test_concurrent_feeding``) feeds every case from four threads with a reader
running. These tests cover the shapes where locks could deadlock or a fold could be missed: a
window of a collection, a collection of windows, two metrics merged into each other from two
threads, a metric merged into itself, and reads of a member that another thread is feeding.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import streammetrics as sm

TIMEOUT = 60


def _run(workers: list[Callable[[], None]]) -> None:
    """Start every worker together; fail on any exception, or if one is still running."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(workers))

    def wrap(fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                start.wait()
                fn()
            except BaseException as exc:
                errors.append(exc)

        return run

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        threads = [threading.Thread(target=wrap(fn), daemon=True) for fn in workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(TIMEOUT)
        stuck = [t for t in threads if t.is_alive()]
    finally:
        sys.setswitchinterval(interval)
    assert not stuck, f"{len(stuck)} threads still running after {TIMEOUT} s: a deadlock"
    assert not errors, repr(errors[0])


def _stream(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    p = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1)
    t = np.sort(rng.uniform(0, 600, n))
    return y, p, t


def test_crossed_merges_do_not_deadlock() -> None:
    a = sm.ROCAUC().update([0, 1], [0.2, 0.8])
    b = sm.ROCAUC().update([1, 0], [0.6, 0.4])

    # Counts grow like Fibonacci numbers under crossed merges: 25 rounds each stays far below
    # the 2**53 count bound.
    def a_into_b() -> None:
        for _ in range(25):
            b.merge(a)

    def b_into_a() -> None:
        for _ in range(25):
            a.merge(b)

    _run([a_into_b, b_into_a])
    assert a.count > 2 and b.count > 2


def test_merging_a_member_into_its_collection_is_refused_without_a_deadlock() -> None:
    # 0.8.6 took both locks (in id order) before seeing the classes differ: with the member's
    # id first, against an update (collection's lock, then the member's), both threads waited
    # for good. The class check now comes first, without the locks.
    for _ in range(100):
        c = sm.MetricCollection(auc=sm.ROCAUC(), ap=sm.AveragePrecision())
        if id(c["auc"]) < id(c):
            break
    member = c["auc"]
    refused: list[int] = []

    def feed() -> None:
        for i in range(20_000):
            c.update(i % 2, 0.5)

    def wrong() -> None:
        for _ in range(2_000):
            try:
                c.merge(member)
            except sm.IncompatibleStateError:
                refused.append(1)

    _run([feed, wrong])
    assert len(refused) == 2_000 and c.count == 20_000


def test_merge_into_itself_from_many_threads() -> None:
    m = sm.Accuracy().update([0, 1, 1], [0, 1, 0])

    def double() -> None:
        for _ in range(5):
            m.merge(m)

    def feed() -> None:
        for i in range(2000):
            m.update(i % 2, 1)

    _run([double, double, feed])
    assert m.count > 3


def test_window_of_a_collection_and_collection_of_windows() -> None:
    y, p, t = _stream(6000, 1)
    make_inner = lambda: sm.MetricCollection(auc=sm.ROCAUC(), ll=sm.LogLoss())  # noqa: E731
    window = sm.SlidingWindow(make_inner(), width=300, slots=10)
    both = sm.MetricCollection(
        tumbling=sm.TumblingWindows(sm.ROCAUC(), width=60),
        sliding=sm.SlidingWindow(sm.Accuracy(), width=300, slots=10),
    )
    want_window = sm.SlidingWindow(make_inner(), width=300, slots=10).update(y, p, timestamps=t)
    # ``both`` feeds ROCAUC scores and Accuracy labels from the same columns: labels 0/1 only.
    labels = (p > 0.5).astype(int)
    want_both = both.copy().update(y, labels, timestamps=t)

    def writer(k: int) -> Callable[[], None]:
        def run() -> None:
            for i in range(k, len(y), 3):  # rows in order within a thread, as a server's clock
                window.update(int(y[i]), float(p[i]), timestamps=float(t[i]))
                both.update(int(y[i]), int(labels[i]), timestamps=float(t[i]))

        return run

    def reader() -> None:
        # Every update is applied whole: the counts a reader sees never fall and never pass the
        # rows fed; a copy merged with the metric holds two such counts.
        seen = {"window": 0, "both": 0}
        for _ in range(200):
            window.compute()
            both.compute()
            sm.loads(window.to_bytes())
            for name, m in (("window", window), ("both", both)):
                count = m.count
                assert seen[name] <= count <= len(y), f"{name}: count {count} after {seen[name]}"
                seen[name] = count
                doubled = (m.copy() + m).count
                assert 2 * count <= doubled <= 2 * len(y), f"{name}: copy + itself {doubled}"

    _run([writer(0), writer(1), writer(2), reader])
    assert window.count == want_window.count == len(y)
    got, want = window.compute(), want_window.compute()
    assert got["auc"] == pytest.approx(want["auc"], rel=1e-12)
    assert got["ll"] == pytest.approx(want["ll"], rel=1e-9)
    assert both.to_bytes() == want_both.to_bytes()


def test_reading_a_member_while_the_collection_is_fed() -> None:
    c = sm.MetricCollection(acc=sm.Accuracy(), f1=sm.F1())
    member = c["acc"]

    def feed() -> None:
        for i in range(5000):
            c.update(i % 2, (i // 2) % 2)

    def read() -> None:
        for _ in range(500):
            member.compute()
            assert member.count <= 5000

    _run([feed, read])
    assert c["acc"].count == 5000 and c.count == 5000
    assert c.compute()["acc"] == pytest.approx(0.5)


def test_decayed_scales_rows_still_pending() -> None:
    # Rows buffered in the wrapped metric must be folded before the state is rescaled when the
    # decay reference moves on, or they would escape the rescaling.
    one = sm.Decayed(sm.Accuracy(), half_life=1.0)
    whole = sm.Decayed(sm.Accuracy(), half_life=1.0)
    t = np.arange(200) * 1.0  # 200 half-lives: the reference moves every 64
    y = np.arange(200) % 2
    for i in range(200):
        one.update(int(y[i]), 1, timestamps=float(t[i]))
    whole.update(y, np.ones(200, dtype=int), timestamps=t)
    assert one.compute() == pytest.approx(whole.compute(), rel=1e-12)


def test_deepcopy_and_pickle_while_other_threads_update() -> None:
    # 0.8.4 let deepcopy and pickle walk the live containers after the lock was released: a
    # SlidingWindow raised "dictionary changed size during iteration", and the flush inside a
    # deep-copied MulticlassROCAUC store lost rows that other threads were queueing.
    import copy
    import pickle

    from streammetrics.windows import SlidingWindow

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        rng = np.random.default_rng(3)
        y = rng.integers(0, 3, (200, 20))
        p = rng.dirichlet(np.ones(3), (200, 20))
        w = rng.random((200, 20))
        cases = [
            (
                lambda: sm.MulticlassROCAUC(exact=True),
                lambda m, i: m.update(y[i], p[i], w[i]),
                copy.deepcopy,
            ),
            (
                lambda: SlidingWindow(sm.ROCAUC(), width=5, slots=10),
                lambda m, i: m.update(i % 2, (i % 10) / 10, timestamps=i / 10),
                pickle.dumps,
            ),
        ]
        for make, feed, read in cases:
            m, errors, done = make(), [], threading.Event()

            def writer(k: int, m: sm.Metric = m, feed: Any = feed) -> None:
                for i in range(k, 200, 4):
                    feed(m, i)

            def reader(
                m: sm.Metric = m, read: Any = read, done: Any = done, errors: list = errors
            ) -> None:
                while not done.is_set():
                    try:
                        read(m)
                    except Exception as exc:  # any escape is the failure
                        errors.append(exc)

            threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
            watcher = threading.Thread(target=reader)
            watcher.start()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            done.set()
            watcher.join()
            assert not errors
            alone = make()
            for i in range(200):
                feed(alone, i)
            assert m.count == alone.count
            assert m.compute() == pytest.approx(alone.compute(), rel=1e-12)
    finally:
        sys.setswitchinterval(old)


def test_reading_special_methods_hold_the_lock():
    # 0.8.14 ran sliced[key], len(sliced) and collection[name] unlocked: they read (and may
    # settle) the slice table a concurrent update can unpack in place.
    for cls, names in [
        (sm.Sliced, ("__getitem__", "__len__", "__contains__", "__iter__")),
        (sm.MetricCollection, ("__getitem__",)),
    ]:
        for name in names:
            assert getattr(getattr(cls, name), "__sm_locked__", False), (cls.__name__, name)
    s = sm.Sliced(sm.Accuracy()).update([1, 0], [1, 1], by=["a", "b"])
    s.update(1, 1, by="a")  # a row waiting in the buffer: reads fold it first
    assert len(s) == 2 and "a" in s and s["a"].count == 2 and list(s) == ["a", "b"]
