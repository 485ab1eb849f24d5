"""``Sliced`` score slices held one state each are read through a pack of their states.

Fewer than ``PACK_MIN_SLICES`` (512) score slices are held one state per slice, since updating
them so is as fast; reading them asked each state in turn (some 30 numpy calls each: 41 ms for
``ROCAUC`` intervals of 500 slices). From ``READ_PACK_FROM[reads]`` slices (per read) they are
read through ``SlicePack.of_slices`` of the states, whose row reads give each slice its own
state's floats. These tests hold every read to the bit (``repr``) against each slice's own
state, check that the states are not asked, and that the pack made for reading is dropped when
the slices change (updates, merges, rows fed one at a time, ``Decayed``'s scaling).
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.classification import scores
from streammetrics.wrappers import _slice_table
from streammetrics.wrappers._slice_pack import (
    PACK_MIN_SLICES,
    READ_PACK_FROM,
    READ_PACK_MIN_SLICES,
    SlicePack,
)

#: Every read of AveragePrecision is packed from this many slices; ROCAUC's intervals too.
AP_PACKED = max(READ_PACK_FROM[("ap",)], READ_PACK_FROM[("ap", "totals")])
ROC_INTERVALS_PACKED = READ_PACK_FROM[("delong", "auc")]

MAKERS = [
    lambda: sm.ROCAUC(),
    lambda: sm.ROCAUC(score_type="logit", resolution=64),
    lambda: sm.AveragePrecision(),
    lambda: sm.AveragePrecision(resolution=4096),
]


def _batch(rng: np.random.Generator, m: int, slices: int, weighted: bool, ties: bool):  # type: ignore[no-untyped-def]
    y = (rng.random(m) < rng.uniform(0.1, 0.8)).astype(int)
    p = np.clip(0.3 * y + 0.7 * rng.random(m), 0.0, 1.0)
    if ties:
        p = np.round(p, 2)
    by = rng.integers(0, slices, m)
    y[by % 13 == 4] = 0  # slices without positives: nan
    kwargs = {}
    if weighted:
        kwargs["sample_weight"] = rng.uniform(0.0, 2.0, m) * (rng.random(m) > 0.1)
    return y, p, by, kwargs


def _own_reads(s: sm.Sliced, level: float = 0.95) -> tuple[dict, dict]:  # type: ignore[type-arg]
    """Each slice's value and interval from a copy of its own state."""
    values = {k: s[k].compute() for k in s.keys()}
    intervals = {k: s[k].interval(level) for k in s.keys()}
    return values, intervals


def _table_reads(monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    """Record every read a slice state makes of its own table (the pack reads them all at
    once and gives each state its values; a state asked again answers from them)."""
    read: list[str] = []
    for name in ("auc_from_table", "ap_from_table", "delong"):
        own = getattr(scores, name)
        monkeypatch.setattr(scores, name, lambda *a, _own=own, _n=name: read.append(_n) or _own(*a))
    return read


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("maker", range(len(MAKERS)))
def test_reads_are_each_slices_own(maker: int, seed: int, monkeypatch) -> None:
    rng = np.random.default_rng(seed)
    slices = int(rng.integers(max(AP_PACKED, ROC_INTERVALS_PACKED), PACK_MIN_SLICES))
    weighted, ties = seed % 2 == 1, seed % 3 == 2
    s = sm.Sliced(MAKERS[maker]())
    for _ in range(3):
        y, p, by, kwargs = _batch(rng, 20_000, slices, weighted, ties)
        s.update(y, p, by=by, **kwargs)
    s = sm.loads(s.to_bytes())
    assert s.slices.pack() is None and len(s) >= AP_PACKED  # one state per slice
    values, intervals = _own_reads(s)
    low = _own_reads(s, 0.6)[1]
    read = _table_reads(monkeypatch)
    got = s.compute(), s.intervals(), s.intervals(0.6), s.compute()
    # Every read came from the pack, but ROCAUC's values: weighted, from each state (faster at
    # every size below PACK_MIN_SLICES); unweighted, from ROCAUC._compute_many.
    assert [r for r in read if r != "auc_from_table"] == []
    assert read == [] or (isinstance(s._template, sm.ROCAUC) and weighted)
    assert repr(got[0]) == repr(values) == repr(got[3])
    assert repr(got[1]) == repr(intervals)
    assert repr(got[2]) == repr(low)


def test_few_slices_read_their_states(monkeypatch) -> None:
    rng = np.random.default_rng(7)
    s = sm.Sliced(sm.AveragePrecision())
    y, p, by, _ = _batch(rng, 5_000, READ_PACK_MIN_SLICES - 1, False, False)
    s.update(y, p, by=by)
    s = sm.loads(s.to_bytes())
    made: list[int] = []
    own = SlicePack.of_slices.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        SlicePack, "of_slices", classmethod(lambda cls, *a: made.append(1) or own(cls, *a))
    )
    values, _ = _own_reads(s)
    assert repr(s.compute()) == repr(values)
    assert made == []


def test_the_read_pack_is_kept_until_the_slices_change(monkeypatch) -> None:
    rng = np.random.default_rng(3)
    slices = AP_PACKED + 20
    s = sm.Sliced(sm.AveragePrecision())
    y, p, by, _ = _batch(rng, 10_000, slices, False, False)
    s.update(y, p, by=by)
    made: list[int] = []
    own = SlicePack.of_slices.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        SlicePack, "of_slices", classmethod(lambda cls, *a: made.append(1) or own(cls, *a))
    )
    first = s.intervals()
    assert repr(s.intervals()) == repr(first) and repr(s.compute()) == repr(s.compute())
    assert len(made) == 1  # made once, kept

    def check() -> None:
        values, intervals = _own_reads(s)
        assert repr(s.compute()) == repr(values)
        assert repr(s.intervals()) == repr(intervals)

    y, p, by, _ = _batch(rng, 3_000, slices, False, False)
    s.update(y, p, by=by)  # an update
    check()
    other = sm.Sliced(sm.AveragePrecision()).update(y, 1.0 - p, by=by)
    s.merge(other)  # a merge
    check()
    for i in range(40):  # rows one at a time
        s.update(int(y[i]), float(p[i]), by=int(by[i]))
    check()
    before = len(made)
    check()
    assert len(made) == before  # nothing changed: every state kept its reads
    assert repr(s.intervals()) != repr(first)


def test_a_small_update_reads_only_the_slices_it_changed(monkeypatch) -> None:
    """A stream of small batches: each read after one recomputes only the slices it touched,
    one by one (0.8.24's first cut rebuilt a pack of every slice: 2 -> 16 ms a read at 300
    slices, a review found)."""
    rng = np.random.default_rng(8)
    slices = AP_PACKED + 60
    s = sm.Sliced(sm.AveragePrecision())
    y, p, by, _ = _batch(rng, 20_000, slices, False, False)
    s.update(y, p, by=by)
    s.compute(), s.intervals()
    made: list[int] = []
    own = SlicePack.of_slices.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        SlicePack, "of_slices", classmethod(lambda cls, *a: made.append(1) or own(cls, *a))
    )
    read = _table_reads(monkeypatch)
    for _ in range(3):
        y, p, by, _ = _batch(rng, 10, slices, False, False)
        s.update(y, p, by=by)
        read.clear()
        values, intervals = s.compute(), s.intervals()
        # (each touched slice reads its table once: the interval reuses the value it kept)
        assert len(read) <= len(set(by.tolist())) and made == []
        assert repr(values) == repr({k: s[k].compute() for k in s.keys()})
        assert repr(intervals) == repr({k: s[k].interval() for k in s.keys()})


def test_reads_do_not_grow_the_pickle() -> None:
    """What a read keeps is not shipped (``remembered``: copies and pickles start without it)."""
    rng = np.random.default_rng(9)
    s = sm.Sliced(sm.AveragePrecision())
    y, p, by, _ = _batch(rng, 20_000, AP_PACKED + 10, False, False)
    s.update(y, p, by=by)
    s.compute(), s.intervals()
    held = s.slices.view()
    assert all("_memo" in m.hist.__dict__ for m in held.values())  # the reads were kept
    for twin in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s), s.copy()):
        assert not any("_memo" in m.hist.__dict__ for m in twin.slices.view().values())
        assert repr(twin.intervals()) == repr(s.intervals())


def test_decayed_slices_read_as_their_states() -> None:
    """``Decayed(Sliced(...))`` reads a scaled copy of the slices (weights: a float pack)."""
    rng = np.random.default_rng(5)
    slices = ROC_INTERVALS_PACKED + 8
    d = sm.Decayed(sm.Sliced(sm.ROCAUC()), half_life=2.0)
    for step in range(3):
        y, p, by, _ = _batch(rng, 8_000, slices, False, False)
        d.update(y, p, by=by, timestamps=np.full(len(y), float(step)))
        now = d.at()
        assert now.slices.pack() is None  # one state per slice, read through a pack
        values = {k: now[k].compute() for k in now.keys()}
        assert repr(d.compute()) == repr(values)
        assert repr(now.intervals()) == repr({k: now[k].interval() for k in now.keys()})


def test_mixed_count_dtypes_read_each_state() -> None:
    """Weighted beside unweighted slices make no one pack: each state answers."""
    rng = np.random.default_rng(11)
    slices = READ_PACK_MIN_SLICES + 4
    s = sm.Sliced(sm.ROCAUC())
    y, p, by, _ = _batch(rng, 10_000, slices, False, False)
    s.update(y, p, by=by)
    s.update([1, 0], [0.9, 0.2], by=[slices + 1, slices + 1], sample_weight=[0.5, 2.0])
    assert _slice_table.SlicePack.of_slices(s._template, s.slices.view()) is None
    values, intervals = _own_reads(s)
    assert repr(s.compute()) == repr(values)
    assert repr(s.intervals()) == repr(intervals)


def test_a_table_without_the_change_hint_reads() -> None:
    """A table pickled by 0.8.23 has no ``changed`` hint: the class's empty one serves."""
    rng = np.random.default_rng(12)
    s = sm.Sliced(sm.ROCAUC())
    y, p, by, _ = _batch(rng, 20_000, READ_PACK_MIN_SLICES + 30, False, False)
    s.update(y, p, by=by)
    s = pickle.loads(pickle.dumps(s))
    s.slices.__dict__.pop("changed", None)
    assert repr(s.intervals()) == repr({k: s[k].interval() for k in s.keys()})
    s.update(y[:50], p[:50], by=by[:50])
    assert repr(s.intervals()) == repr({k: s[k].interval() for k in s.keys()})
