"""The per-request buffer folds rows as the calls gave them: a join that would change a value
(integers beyond 2**53 turned into floats) folds its parts one by one instead; and a read of a
state field never races another thread's one-row update."""

from __future__ import annotations

import threading

import numpy as np

import streammetrics as sm

BIG = 2**60 + 1


def test_uint64_and_int64_label_chunks_keep_large_labels() -> None:
    # 0.8.2 joined the buffered uint64 and int64 chunks as float64: BIG became 2**60, a third
    # label, silently.
    cm = sm.ConfusionMatrix()
    cm.update(np.array([0, BIG], dtype=np.uint64), np.array([0, BIG], dtype=np.uint64))
    cm.update(np.array([BIG], dtype=np.uint64), np.array([BIG], dtype=np.uint64))
    cm.update([0], [0])
    ref = sm.ConfusionMatrix().update([0, BIG, BIG, 0], [0, BIG, BIG, 0])
    assert cm.compute().tolist() == [[2, 0], [0, 2]]
    assert cm == ref


def test_a_float_row_among_large_int_rows_keeps_them() -> None:
    # 1.0 passes the one-row label check (1.0 == 1); the rows' joined column was float64.
    calls = [([1, BIG], [1, BIG]), (1, 1), (BIG, BIG), (1.0, 1)]
    buffered, ordinary = sm.ConfusionMatrix(), sm.ConfusionMatrix()
    for args in calls:
        buffered.update(*args)  # the later one-row calls are buffered
    for args in calls:
        ordinary.update(*args).compute()  # a read after each call: nothing stays buffered
    assert buffered.labels().tolist() == [1, BIG]
    assert buffered == ordinary


def test_reading_a_field_while_other_threads_update_one_row_at_a_time() -> None:
    # 0.8.2 folded under the lock, released it, then read the field: another thread's one-row
    # update could take the field out in between (AttributeError from len() or repr()).
    s = sm.Sliced(sm.Accuracy()).update([0, 1], [0, 1], by=[0, 1])
    errors: list[BaseException] = []
    stop = threading.Event()

    def write() -> None:
        try:
            for i in range(3000):
                s.update(i % 2, 1, by=i % 3)
        except BaseException as exc:
            errors.append(exc)

    def read() -> None:
        try:
            while not stop.is_set():
                len(s)
                repr(s)
        except BaseException as exc:
            errors.append(exc)

    writers = [threading.Thread(target=write) for _ in range(3)]
    readers = [threading.Thread(target=read) for _ in range(2)]
    for t in writers + readers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    assert not errors, errors[:1]
    assert s.count == 2 + 3 * 3000
