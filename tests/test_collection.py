"""MetricCollection.update_each: one batch of rows per member, malformed batches named."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.errors import InputError


def collection() -> sm.MetricCollection:
    return sm.MetricCollection(acc=sm.Accuracy(), mse=sm.MeanSquaredError())


@pytest.mark.parametrize(
    "batches",
    [
        [("acc", (([0, 1], [0, 1]), {}))],  # not a dict
        {"acc": ([0, 1],)},  # no kwargs
        {"acc": ([0, 1], [0, 1])},  # columns not wrapped in (args, kwargs)
        {"acc": (([0, 1], [0, 1]), [])},  # kwargs not a dict
        {"nope": (([0, 1], [0, 1]), {})},  # unknown member
    ],
)
def test_malformed_batches_are_input_errors_naming_batches(batches: object) -> None:
    c = collection().update([0, 1, 1], [0, 1, 0])
    before = c.to_bytes()
    with pytest.raises(InputError, match=r"^batches"):
        c.update_each(batches)  # type: ignore[arg-type]
    assert c.to_bytes() == before


def test_members_given_different_numbers_of_rows_are_refused() -> None:
    # 0.8.4 counted the larger batch, so the count (and the bytes) depended on how calls
    # paired the members' batches.
    c = collection().update([0, 1], [0, 1])
    before = c.to_bytes()
    with pytest.raises(InputError, match="same number of samples"):
        c.update_each({"acc": (([0, 1], [0, 1]), {}), "mse": (([0.0, 1, 2], [0.0, 1, 2]), {})})
    assert c.to_bytes() == before


def test_update_each_counts_the_batch_once_and_matches_update() -> None:
    rng = np.random.default_rng(0)
    y, p = rng.integers(0, 2, 50), rng.integers(0, 2, 50)
    each, whole = collection(), collection()
    for lo in range(0, 50, 7):
        s = slice(lo, lo + 7)
        each.update_each({"acc": ((y[s], p[s]), {}), "mse": ((y[s] * 1.0, p[s] * 1.0), {})})
        whole.update(y[s], p[s])
    assert each.count == whole.count == 50
    assert each["acc"].to_bytes() == whole["acc"].to_bytes()
    assert each.compute() == pytest.approx(whole.compute(), rel=1e-12)
    # Only some members named: the others get nothing, the collection still counts the rows.
    part = collection().update_each({"acc": ((y, p), {})})
    assert part.count == 50 and part["mse"].count == 0


def test_member_order_is_not_part_of_the_bytes() -> None:
    # Documented: collections given their members in different orders write the same bytes and
    # merge; one read back lists its members by name.
    y, p = [0, 1, 1, 0], [0, 1, 0, 0]
    ba = sm.MetricCollection(b=sm.Accuracy(), a=sm.MeanSquaredError()).update(y, p)
    ab = sm.MetricCollection(a=sm.MeanSquaredError(), b=sm.Accuracy()).update(y, p)
    assert list(ba.compute()) == ["b", "a"]
    assert ba.to_bytes() == ab.to_bytes()
    back = sm.loads(ba.to_bytes())
    assert back.keys() == ["a", "b"] and list(back.compute()) == ["a", "b"]
    assert ba.copy().merge(ab).compute() == {"b": 0.75, "a": 0.25}


def test_one_row_updates_of_a_collection_with_a_window_or_slices_stay_per_request() -> None:
    """0.8.8 planned a ``Sliced`` member with ``by=`` left among the keywords, and a window
    has no row plan: every request copied every member's whole state (3-12 ms). Now the
    ``Sliced`` member buffers, and one member that cannot (a window) is updated in place
    first; the result and all-or-nothing are as before (found by a review, 0.8.9)."""
    from streammetrics.windows import SlidingWindow

    rng = np.random.default_rng(5)
    n = 600
    y, p, by = rng.integers(0, 2, n), rng.random(n), rng.integers(0, 5, n)
    t = np.sort(rng.random(n) * 100)
    coll = sm.MetricCollection(
        auc=sm.ROCAUC(),
        s=sm.Sliced(sm.ROCAUC()),
        w=SlidingWindow(sm.Accuracy(), width=50, slots=5),
    )
    auc, sliced = sm.ROCAUC(), sm.Sliced(sm.ROCAUC())
    window = SlidingWindow(sm.Accuracy(), width=50, slots=5)
    for i in range(n):
        row = int(y[i]), float(p[i])
        pred = int(p[i] > 0.5)
        coll.update_each(
            {
                "auc": (row, {}),
                "s": (row, {"by": int(by[i])}),
                "w": ((int(y[i]), pred), {"timestamps": float(t[i])}),
            }
        )
        auc.update(*row)
        sliced.update(*row, by=int(by[i]))
        window.update(int(y[i]), pred, timestamps=float(t[i]))
    assert coll["auc"].to_bytes() == auc.to_bytes()
    assert coll["s"].to_bytes() == sliced.to_bytes()
    assert coll["w"].to_bytes() == window.to_bytes()
    assert coll.count == n

    both = sm.MetricCollection(a=sm.Sliced(sm.ROCAUC()), w=SlidingWindow(sm.ROCAUC(), width=50))
    alone = sm.Sliced(sm.ROCAUC())
    for i in range(n):
        both.update(int(y[i]), float(p[i]), by=int(by[i]), timestamps=float(t[i]))
        alone.update(int(y[i]), float(p[i]), by=int(by[i]))
    assert both["a"]._pending is not None  # the slices' rows are buffered
    assert both["a"].to_bytes() == alone.to_bytes() and both.count == n
    before = both.to_bytes()
    with pytest.raises(InputError):  # the window refuses it (a probability above 1)
        both.update(1, 1.5, by=1, timestamps=99.0)
    with pytest.raises(InputError):  # the slices refuse it (a str key among int keys)
        both.update(1, 0.5, by="x", timestamps=99.0)
    assert both.to_bytes() == before


def test_one_row_updates_of_several_windows_stay_in_place_and_all_or_nothing() -> None:
    """0.8.27 copied every member's state (every slot of every window) on each request to a
    collection holding two windows, or to a window holding a collection: 0.4-1.1 ms a row,
    growing with the windows. A window whose slot has seen the row's values certainly takes
    it (``_row_certain``), so such members are updated in place; at most one member that may
    refuse the row is updated, first. The bytes are those of separate metrics, and a refused
    row leaves every member as it was."""
    rng = np.random.default_rng(8)
    n = 900
    y, p = rng.integers(0, 2, n), rng.random(n)
    t = np.sort(rng.random(n) * 300)
    labels = (p > 0.5).astype(int)

    def members() -> dict[str, sm.Metric]:
        return {
            "tumbling": sm.TumblingWindows(sm.ROCAUC(), width=60),
            "sliding": sm.SlidingWindow(sm.Accuracy(), width=100, slots=5),
        }

    both, alone = sm.MetricCollection(**members()), members()
    window = sm.SlidingWindow(sm.MetricCollection(auc=sm.ROCAUC(), acc=sm.Accuracy()), width=100)
    window_alone = sm.SlidingWindow(
        sm.MetricCollection(auc=sm.ROCAUC(), acc=sm.Accuracy()), width=100
    )
    for i in range(n):
        both.update(int(y[i]), int(labels[i]), timestamps=float(t[i]))
        for m in alone.values():
            m.update(int(y[i]), int(labels[i]), timestamps=float(t[i]))
        window.update(int(y[i]), int(labels[i]), timestamps=float(t[i]))
    window_alone.update(y, labels, timestamps=t)
    for name, m in alone.items():
        assert both[name].to_bytes() == m.to_bytes()
    assert both.count == n
    assert window.to_bytes() == window_alone.to_bytes()

    # The sliding window has seen label 2 (so trusts the row), the tumbling ROCAUC refuses it:
    # the refusing member is updated first, and nothing changes.
    last = float(t[-1])
    both.update_each(
        {"sliding": ((np.array([2, 0]), np.array([2, 0])), {"timestamps": [last] * 2})}
    )
    assert both["sliding"]._row_certain((2, 0), {"timestamps": last})
    assert not both["tumbling"]._row_certain((2, 0), {"timestamps": last})
    before = both.to_bytes()
    with pytest.raises(InputError):
        both.update(2, 0, timestamps=last)
    assert both.to_bytes() == before
    # Two members that may refuse: the copy-and-commit path, all or nothing as before.
    with pytest.raises(InputError):
        both.update(1, 7, timestamps=last + 1000.0)
    assert both.to_bytes() == before
    both.update(1, 1, timestamps=last)
    assert both.count == n + 3


def test_a_bad_id_beside_a_window_changes_no_member() -> None:
    """A ``Bootstrap`` whose wrapped metric trusts the row may still refuse its ``ids``: it is
    not certain, so a window beside it that may refuse the row too sends the call down the
    copy path (0.8.28's first cut updated the window alone, and the bytes no longer loaded;
    found by a review)."""
    from streammetrics.windows import SlidingWindow, TumblingWindows

    boot = sm.Bootstrap(sm.Accuracy(), replicates=5)
    for members in (
        {"w": TumblingWindows(sm.Accuracy(), width=10), "b": boot},
        {"w": SlidingWindow(sm.Accuracy(), 30), "b": boot},
        {"w": TumblingWindows(sm.Accuracy(), width=10), "b": SlidingWindow(boot, 100, 2)},
    ):
        c = sm.MetricCollection(**members)
        for i in range(3):
            c.update(1, 1, timestamps=1, ids=i)
        before = c.to_bytes()
        for bad in (1.5, [1, 2], True, [None]):
            with pytest.raises(InputError):
                c.update(1, 1, timestamps=25, ids=bad)
            assert c.to_bytes() == before
        c.update(1, 1, timestamps=25, ids=7)
        assert sm.loads(c.to_bytes()).count == 4


def test_a_member_may_be_named_n():
    # 0.8.14: the copy-and-commit path passed the members beside _commit's row count, named
    # n, and a member named n raised TypeError on every update taking that path.
    c = sm.MetricCollection(n=sm.Accuracy(), s=sm.Sliced(sm.Accuracy()))
    c.update([1, 0], [1, 1], by=["x", "y"])
    c.update_each({"n": (([1], [1]), {}), "s": (([0], [0]), {"by": ["x"]})})
    assert c.compute() == {"n": 2 / 3, "s": {"x": 1.0, "y": 0.0}}
    assert sm.loads(c.to_bytes()) == c


def _windows_of_slices() -> dict[str, sm.Metric]:
    from streammetrics.windows import SlidingWindow, TumblingWindows

    return {
        "a": SlidingWindow(sm.Sliced(sm.F1(), max_slices=6), width=60, slots=6),
        "b": TumblingWindows(sm.Sliced(sm.F1(), max_slices=6), width=60, retention=2),
        "c": SlidingWindow(sm.Bootstrap(sm.Accuracy(), replicates=3), width=30, slots=3),
    }


def _binary_slices() -> dict[str, sm.Metric]:
    from streammetrics.windows import SlidingWindow

    return {
        "a": sm.Sliced(sm.F1(), max_slices=40),
        "b": sm.Sliced(sm.Precision()),
        "c": SlidingWindow(sm.Sliced(sm.Recall()), width=20, slots=4),
    }


_ROUTED = {
    _windows_of_slices: {
        "a": ("timestamps", "by"),
        "b": ("timestamps", "by"),
        "c": ("timestamps", "ids"),
    },
    _binary_slices: {"a": ("by",), "b": ("by",), "c": ("timestamps", "by")},
}


@pytest.mark.parametrize("members", list(_ROUTED), ids=lambda f: f.__name__)
def test_members_checking_a_row_first_keep_a_collection_all_or_nothing(members) -> None:
    """Members that may each refuse a request (a window's row new to its slot, a slice not
    held yet): 0.8.28 copied every member then (1.5 ms a request for two windows of 20
    slices; 2-78 ms for two ``Sliced`` of a binary metric at 250-2,000 slices, growing with
    them). A sliding window and a ``Sliced`` now check the row without taking it
    (``_row_check``), so only one member is left that may refuse it, updated first. Against
    the members fed alone, row by row, with rows each may refuse (a third label, a str slice
    key, a slice past ``max_slices``, a late row for a closed window, a bad id): every
    accepted row lands in every member, a refused one in none, and the bytes are the same."""
    rng = np.random.default_rng(30)
    coll, alone, wanted = sm.MetricCollection(**members()), members(), _ROUTED[members]
    t = 0.0
    refused = 0
    for i in range(1_500):
        t += float(rng.exponential(0.8))
        when = t - float(rng.uniform(0, 200)) if rng.random() < 0.05 else t
        y = int(rng.integers(0, 3)) if rng.random() < 0.02 else int(rng.integers(0, 2))
        spread = 7 + i // 30 if members is _binary_slices else 7  # (new slices keep coming)
        by: object = "x" if rng.random() < 0.01 else int(rng.integers(0, spread))
        ids: object = 1.5 if rng.random() < 0.01 else i
        p = int(rng.integers(0, 2))
        kw = {"timestamps": when, "by": by, "ids": ids}
        needed = set().union(*wanted.values())
        kw = {k: v for k, v in kw.items() if k in needed}
        updated = {}
        try:
            for name, m in alone.items():
                updated[name] = m.copy().update(y, p, **{k: kw[k] for k in wanted[name]})
        except InputError:
            updated = {}
        before = coll.to_bytes()
        if updated:
            coll.update(y, p, **kw)
            alone = updated
        else:
            refused += 1
            with pytest.raises(InputError):
                coll.update(y, p, **kw)
            assert coll.to_bytes() == before
    for name, m in alone.items():
        assert coll[name].to_bytes() == m.to_bytes(), name
    assert refused > 30
    assert coll.count == 1_500 - refused
    assert sm.loads(coll.to_bytes()).to_bytes() == coll.to_bytes()


def test_a_window_row_check_refuses_what_its_update_refuses() -> None:
    """``_row_check`` of a window raises when its update would refuse the row, changes
    nothing, and returns True only for rows its update then takes."""
    from streammetrics.windows import SlidingWindow

    rng = np.random.default_rng(31)
    w = SlidingWindow(sm.Sliced(sm.F1(), max_slices=5), width=40, slots=4)
    checked = 0
    for i in range(800):
        row = (int(rng.integers(0, 3 if rng.random() < 0.05 else 2)), int(rng.integers(0, 2)))
        kw = {"timestamps": i * 0.5 - float(rng.uniform(0, 60) if rng.random() < 0.1 else 0)}
        kw["by"] = "k" if rng.random() < 0.02 else int(rng.integers(0, 6))
        before = w.to_bytes()
        try:
            ok = w._row_check(row, kw)
        except InputError:
            assert w.to_bytes() == before
            with pytest.raises(InputError):
                w.copy().update(*row, **kw)
            continue
        assert w.to_bytes() == before
        if ok:
            checked += 1
            w.update(*row, **kw)
        else:
            try:
                w.update(*row, **kw)
            except InputError:
                pass
    assert checked > 250


def test_a_window_asks_its_slot_before_a_collection_updates_another_member() -> None:
    """Found by a review of 0.8.29's first cut: a sliding window's check of a row new to its
    slot checked the row alone and against the slots, but not the slot's own update, which
    may still refuse it (a weight total past 2**100; a packed ``Sliced`` table of int
    labels meeting a str label, which the per-slot join checks skip past 64 slots). The
    collection then updated the member before it and raised: counts 2, 1, 1."""
    from streammetrics.windows import SlidingWindow

    w = 2.0**99.6
    c = sm.MetricCollection(
        a=SlidingWindow(sm.MeanSquaredError(), width=6, slots=6),
        b=SlidingWindow(sm.MeanAbsoluteError(), width=60, slots=6),
    )
    c.update(1.0, 2.0, sample_weight=w, timestamps=1)
    before = c.to_bytes()
    with pytest.raises(InputError, match=r"2\*\*100"):  # (the weights of a's slots together)
        c.update(1.0, 2.0, sample_weight=w, timestamps=2)
    assert c.to_bytes() == before

    c = sm.MetricCollection(
        a=SlidingWindow(sm.Sliced(sm.Accuracy()), width=1, slots=1, origin=0.5),
        b=SlidingWindow(sm.Sliced(sm.Accuracy()), width=100, slots=100),
    )
    y = np.arange(100) % 2
    c.update(y, y, by=["x"] * 100, timestamps=np.arange(100))
    before = c.to_bytes()
    with pytest.raises(InputError, match="str labels"):
        c.update("a", "a", by="x", timestamps=99.7)
    assert c.to_bytes() == before
    assert [m.count for m in (c, c["a"], c["b"])] == [100, 100, 100]


def test_the_first_member_to_refuse_a_row_says_why() -> None:
    """Members check a row in name order, and a check that refuses it after a member that
    could not tell defers to the copy-and-commit path, whose first refusal (in name order)
    is raised, as before these checks (a review: the second member's join error won)."""
    from streammetrics.windows import SlidingWindow, TumblingWindows

    c = sm.MetricCollection(
        a=TumblingWindows(sm.F1(), width=100), b=SlidingWindow(sm.F1(), width=100, slots=5)
    )
    c.update(0, 1, timestamps=1)
    c.update(1, 0, timestamps=1)
    before = c.to_bytes()
    with pytest.raises(InputError, match=r"^y_true/y_pred: average='binary' needs two classes"):
        c.update(2, 2, timestamps=2)
    assert c.to_bytes() == before
