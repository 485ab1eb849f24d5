"""A ``Bootstrap`` inside ``Sliced`` or ``SlidingWindow``, fed one sample per call: the slice's
or slot's state takes the row in place, where it waits in that state's buffer (0.8.11 updated
and folded a copy of the slice per call, 2-3 ms), and the state is what ordinary one-row
updates make, errors and all."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.wrappers import sliced as sliced_module
from tests.harness import feed_in_threads

from .test_bootstrap_rows import _calls


def _one_row_calls(n: int, seed: int) -> list:
    """``_calls`` with an integer slice key per row, and a few bad rows (a label of the
    other kind, a negative weight)."""
    rng = np.random.default_rng(seed)
    out = []
    for i, (args, kwargs) in enumerate(_calls("acc", n, seed)):
        kwargs = dict(kwargs)
        if isinstance(kwargs.get("ids"), list):
            kwargs["ids"] = kwargs["ids"][0]  # a scalar: a list is a batch of one for Sliced
        key = int(rng.integers(0, 6))
        kwargs["by"] = key if i % 5 else np.int32(key)
        if i % 97 == 13:
            args = ("x", args[1])  # a string label beside integers: refused
        if i % 89 == 7:
            kwargs["sample_weight"] = -1.0  # refused
        out.append((args, kwargs))
    return out


def _feed(metric: sm.Metric, calls: list, batch: bool) -> list[str]:
    """Feed every call (each as a batch of one with ``batch``); the errors' types, in order."""
    errors = []
    for args, kwargs in calls:
        if batch:
            args = tuple([a] for a in args)
            kwargs = {k: [v] for k, v in kwargs.items()}
        try:
            metric.update(*args, **kwargs)
        except sm.StreamMetricsError as exc:
            errors.append(type(exc).__name__)
    return errors


@pytest.mark.parametrize("seed", [0, 1])
def test_sliced_bootstrap_one_row_calls_give_the_bytes_of_batches_of_one(seed: int) -> None:
    calls = _one_row_calls(1_500, seed)
    fast = sm.Sliced(sm.Bootstrap(sm.Accuracy(), replicates=30, seed=4))
    slow = sm.Sliced(sm.Bootstrap(sm.Accuracy(), replicates=30, seed=4))
    errors = _feed(fast, calls, batch=False)
    assert errors == _feed(slow, calls, batch=True)
    assert "InputError" in errors
    assert fast.to_bytes() == slow.to_bytes()
    assert fast.compute() == slow.compute()
    assert fast.intervals() == slow.intervals()


def test_a_one_row_call_waits_in_its_slices_buffer() -> None:
    s = sm.Sliced(sm.Bootstrap(sm.Accuracy(), replicates=50))
    s.update(1, 1, by="fr", ids=7)  # a new slice
    s.update(0, 1, by="fr", ids=8)
    s.update(1, 0, by="de")
    held = s.slices.view()
    assert sorted(held) == ["de", "fr"]
    assert held["fr"]._pending is not None and held["de"]._pending is not None
    assert s.count == 3 and s["fr"].count == 2
    # a bad row, in a new slice and in an old one, changes nothing
    before = s.to_bytes()
    for args, kwargs in [
        (("x", 1), {"by": "es"}),
        ((1, 1), {"by": "fr", "sample_weight": -1.0}),
        ((1, 1), {"by": 3}),  # an int key beside strings
        ((1, 1), {"by": "\ud800"}),  # no UTF-8 form
        ((1, 1), {"by": True}),
    ]:
        with pytest.raises(sm.InputError):
            s.update(*args, **kwargs)
        assert s.to_bytes() == before
    assert s.count == 3


def test_a_key_with_trailing_nuls_is_keyed_as_the_batch_path_keys_it() -> None:
    # numpy drops trailing NULs from strings: the batch path keys "a\x00" as "a", and so must
    # the one-sample path (its first version kept "a\x00" as a slice of its own)
    fast = sm.Sliced(sm.Bootstrap(sm.Accuracy(), replicates=10))
    slow = sm.Sliced(sm.Bootstrap(sm.Accuracy(), replicates=10))
    for key in ["a", "a\x00", "b\x00\x00", "b"]:
        fast.update(1, 1, by=key)
        slow.update([1], [1], by=[key])
    assert fast.keys() == slow.keys() == ["a", "b"]
    assert fast.to_bytes() == slow.to_bytes()


def test_max_slices_still_refuses_a_new_key_at_its_call() -> None:
    s = sm.Sliced(sm.Bootstrap(sm.Accuracy(), replicates=10), max_slices=2)
    s.update(1, 1, by="a").update(1, 0, by="b").update(0, 0, by="a")
    before = s.to_bytes()
    with pytest.raises(sm.InputError, match="max_slices=2"):
        s.update(1, 1, by="c")
    assert s.to_bytes() == before and len(s) == 2


def test_rows_waiting_in_all_slices_stay_within_their_budget(monkeypatch) -> None:
    monkeypatch.setattr(sliced_module, "FOLD_ROWS", 40)
    monkeypatch.setattr(sliced_module, "WAITING_PER_SLICE", 2)
    s = sm.Sliced(sm.Bootstrap(sm.Accuracy(), replicates=10))
    rng = np.random.default_rng(3)
    for _ in range(2_000):
        s.update(int(rng.integers(0, 2)), int(rng.integers(0, 2)), by=int(rng.integers(0, 30)))
        waiting = sum(
            len(m._pending.rows) for m in s.slices.view().values() if m._pending is not None
        )
        assert waiting <= 40 + 2 * len(s) + 1
    batch = sm.Sliced(sm.Bootstrap(sm.Accuracy(), replicates=10))
    rng = np.random.default_rng(3)
    rows = [tuple(int(rng.integers(0, k)) for k in (2, 2, 30)) for _ in range(2_000)]
    for y, p, key in rows:
        batch.update([y], [p], by=[key])
    assert s.to_bytes() == batch.to_bytes()


def test_threads_feeding_one_row_each_into_slices() -> None:
    s = sm.Sliced(sm.Bootstrap(sm.Accuracy(), replicates=20, seed=1))
    calls = [((i % 2, (i // 2) % 2), {"by": i % 7, "ids": i}) for i in range(4_000)]
    feed_in_threads(s, calls)
    whole = sm.Sliced(sm.Bootstrap(sm.Accuracy(), replicates=20, seed=1))
    cols = list(zip(*[(*a, k["by"], k["ids"]) for a, k in calls], strict=True))
    whole.update(np.array(cols[0]), np.array(cols[1]), by=np.array(cols[2]), ids=np.array(cols[3]))
    assert s.to_bytes() == whole.to_bytes()


def test_sliding_window_of_a_bootstrap_trusts_rows_its_slot_has_seen() -> None:
    """A row whose values the slot's wrapped metric has all seen is not checked against the
    other slots (0.8.11 folded and compared every replicate of every slot per row)."""
    calls = []
    rng = np.random.default_rng(8)
    for i in range(1_200):
        kwargs: dict = {"timestamps": float(i // 3), "ids": i}
        if i % 11 == 4:
            kwargs["sample_weight"] = 0.5
        calls.append(((int(rng.integers(0, 2)), int(rng.integers(0, 2))), kwargs))
    calls.insert(700, (("a", 1), {"timestamps": 233.0, "ids": -1}))  # refused: str beside ints

    def window() -> sm.SlidingWindow:
        return sm.SlidingWindow(sm.Bootstrap(sm.Accuracy(), replicates=16), width=60, slots=6)

    fast, slow = window(), window()
    errors = _feed(fast, calls, batch=False)
    assert errors == _feed(slow, calls, batch=True) == ["InputError"]
    # the slots hold rows waiting in their buffers: the trusted rows went straight in
    assert any(m._pending is not None for m in window_slots(fast))
    assert fast.to_bytes() == slow.to_bytes()
    trusted = window()
    trusted.update(1, 1, timestamps=0.0)
    slot = window_slots(trusted)[0]
    assert slot._row_trusted((1, 1), {"ids": 5}) and not slot._row_trusted((2, 1), {})
    assert not slot._row_trusted((1, 1), {"sample_weight": 2.0})


def window_slots(w: sm.SlidingWindow) -> list[sm.Metric]:
    return [w._slots[k] for k in sorted(w._slots)]


def test_rows_without_ids_are_numbered_by_their_place_in_the_windows_stream() -> None:
    """A sliding window's slots each start a stream: a ``Bootstrap`` numbering rows by its own
    position gave the k-th row of every slot the same weights, so a window of one row per slot
    had an interval of width 0 (0.8.11). Rows are now numbered by their place in the window's
    stream, as positions: the window's value is the ``Bootstrap`` of its rows fed without
    ids."""
    y = np.array([1, 0] * 30)
    p = np.ones(60, dtype=np.int64)
    ts = np.arange(0, 3600, 60)
    boot = sm.Bootstrap(sm.Accuracy(), replicates=200, seed=1)
    one, batch = (sm.SlidingWindow(boot, width=3600, slots=60) for _ in range(2))
    for a, b, t in zip(y.tolist(), p.tolist(), ts.tolist(), strict=True):
        one.update(a, b, timestamps=t)
    for lo in range(0, 60, 7):
        batch.update(y[lo : lo + 7], p[lo : lo + 7], timestamps=ts[lo : lo + 7])
    assert one.to_bytes() == batch.to_bytes()
    plain = boot.copy().update(y, p)  # (its bytes hold the positions reached: `drawn`)
    assert np.array_equal(one.window().replicates(), plain.replicates())
    low, high = one.interval()
    assert high - low > 0.2  # about (0.37, 0.63), as a plain Bootstrap of 60 rows gives
    # ids given by the caller are kept
    ids = np.arange(60) * 7 + 1
    given = sm.SlidingWindow(boot, width=3600, slots=60)
    given.update(y, p, timestamps=ts, ids=ids)
    assert given.window().to_bytes() == boot.copy().update(y, p, ids=ids).to_bytes()
    # a row without an id never shares the weights of a row whose id is its position (the
    # first version of this fix passed positions as ids: a review found id 1 and row 1 tied)
    mixed = sm.SlidingWindow(boot, width=10, slots=2)
    mixed.update(1, 1, ids=1, timestamps=0)
    mixed.update(1, 0, timestamps=0)
    plain = boot.copy().update(1, 1, ids=1).update(1, 0)
    assert mixed.interval() == plain.interval() == (0.0, 1.0)  # (width 0 when tied)


def test_late_rows_join_their_closed_tumbling_window_numbered_on() -> None:
    """A late row for a closed window opened a piece of it anew, whose ``Bootstrap`` numbered
    its rows from 0 again: the closed window's first rows' weights, drawn twice (0.8.11). Late
    rows now join the closed window, numbered on from its rows."""
    boot = sm.Bootstrap(sm.Accuracy(), replicates=200, seed=1)
    rows = np.arange(60) % 2
    for one_row in (True, False):
        tw = sm.TumblingWindows(boot, width=60, retention=1)
        tw.update(1, 1, timestamps=100)
        if one_row:
            for i in range(60):
                tw.update(i % 2, 1, timestamps=5)
        else:
            tw.update(rows[:1], [1], timestamps=[5])
            tw.update(rows[1:], np.ones(59, int), timestamps=np.full(59, 5))
        closed = tw.pop_closed()[0]
        assert closed.to_bytes() == boot.copy().update(rows, np.ones(60, int)).to_bytes()
        assert np.ptp(closed.replicates()) > 0
    # popping closed windows renumbers nothing still held: each window numbers its own rows
    tw = sm.TumblingWindows(boot, width=10, retention=2)
    held: dict[int, list[int]] = {}
    rng = np.random.default_rng(1)
    for t in [*range(25), 15, 16, 17]:  # three late rows for the window at 10
        label = int(rng.integers(0, 2))
        tw.update(label, 1, timestamps=t)
        held.setdefault(t // 10 * 10, []).append(label)
        tw.pop_closed()
    late = held[10]
    want = boot.copy().update(late, np.ones(len(late), int))
    assert tw.windows[10].to_bytes() == want.to_bytes()
