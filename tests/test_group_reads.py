"""GAUC reads after a change compute only the groups it touched (``states._group_reads``):
every read equals, bit for bit, the read of the same rows loaded fresh, and reading never
changes the bytes."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.states import _group_reads
from streammetrics.states._group_merge import merged_read_table
from streammetrics.states._group_reads import FAN, restricted, spliced
from streammetrics.states._group_table import _sort_reduce, _Table, fold_tables, group_starts


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _reads(m: sm.GAUC) -> tuple:
    per = m.per_group()
    return (
        repr(m.compute()),
        repr(m.interval()),
        repr(m.error_bound()),
        m.groups_used,
        m.groups_left_out,
        per.pop("groups").tolist(),  # (string labels: the width of their dtype may differ)
        {k: (v.dtype.str, v.tobytes()) for k, v in per.items()},
    )


def _batch(rng: np.random.Generator, n: int, groups: int, kind: str, weighted: bool) -> tuple:
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n), 2)  # ties within groups
    g = rng.integers(0, groups, n)
    if kind == "str":
        g = np.array([f"user-{v}" for v in g])
    w = None
    if weighted:
        w = rng.choice([0.0, 0.5, 1.5, 1e-170, 3.0], n, p=[0.1, 0.4, 0.3, 0.05, 0.15])
    return y, s, g, w


def _full_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that gains an item at every full read (``_group_reads._read_all``)."""
    found: list[int] = []
    read_all = _group_reads._read_all
    monkeypatch.setattr(_group_reads, "_read_all", lambda *a: found.append(1) or read_all(*a))
    return found


CONFIGS = [
    ({}, "int", False),
    ({"max_exact": 3}, "int", False),  # groups pass max_exact between reads
    ({"exact": True}, "str", False),
    ({"max_exact": 5, "weighting": "clicks"}, "int", True),
    ({"exact": True, "weighting": "uniform"}, "str", True),
    ({"score_type": "real", "max_exact": 4}, "int", False),
]


@pytest.mark.parametrize(("config", "kind", "weighted"), CONFIGS)
def test_reads_after_updates_equal_fresh_reads(
    config: dict, kind: str, weighted: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    full_reads = _full_reads(monkeypatch)
    rng = np.random.default_rng(len(repr(config)) + weighted)
    served, twin = sm.GAUC(**config), sm.GAUC(**config)
    for y, s, g, w in [_batch(rng, 4000, 600, kind, weighted)]:
        served.update(y, s, g, sample_weight=w)
        twin.update(y, s, g, sample_weight=w)
    served.interval()
    partial = 0
    for step in range(60):
        n = int(rng.choice([1, 2, 7, 40, 150]))
        groups = 700 if step % 7 == 0 else 600  # now and then a new group
        y, s, g, w = _batch(rng, n, groups, kind, weighted)
        served.update(y, s, g, sample_weight=w)
        twin.update(y, s, g, sample_weight=w)
        if step % 3:
            continue
        before = len(full_reads)
        assert _reads(served) == _reads(sm.loads(served.to_bytes()))
        partial += len(full_reads) == before + 1  # (the loaded state's read is a full one)
    assert partial >= 10  # half the reads at least were partial
    if not weighted:
        # Reading changed neither the bytes nor the values of the twin that never read. (A
        # full read folds the queue, and float sums folded at another time may differ in the
        # last bits: reads of weighted states did so before partial reads too.)
        assert served.to_bytes() == twin.to_bytes()
        assert _reads(served) == _reads(twin)


def _served(seed: int, held: int, groups: int, rows: int, rounds: int) -> Iterator[sm.GAUC]:
    """A ``GAUC`` of ``held`` integer rows read once, then ``rounds`` times updated with
    ``rows`` rows and read (``compute()``), yielded after each read."""
    rng = np.random.default_rng(seed)
    m = sm.GAUC()
    m.update(*_batch(rng, held, groups, "int", False)[:3])
    m.compute()
    for _ in range(rounds):
        m.update(*_batch(rng, rows, groups, "int", False)[:3])
        m.compute()
        yield m


def test_reads_stay_partial_and_tables_few() -> None:
    """A read after a small update folds queued integer tables by size, so a served state
    keeps a few of them however many batches arrive between reads."""
    for m in _served(5, 20_000, 500, 20, 200):
        pending = m.scores._pending
        classes = max(len(t.g) for t in pending).bit_length() // 2 + 1 if pending else 0
        assert len(pending) <= (FAN - 1) * classes  # (at most FAN - 1 per size class)
    assert _reads(m) == _reads(sm.loads(m.to_bytes()))


def test_merges_and_copies_keep_reads_right() -> None:
    rng = np.random.default_rng(9)
    a, b = sm.GAUC(), sm.GAUC()
    for m in (a, b):
        y, s, g, _ = _batch(rng, 2000, 50, "int", False)
        m.update(y, s, g)
        m.compute()
    c = a.copy()
    y, s, g, _ = _batch(rng, 30, 80, "int", False)
    c.update(y, s, g)
    a.merge(b)
    for m in (a, c):
        assert _reads(m) == _reads(sm.loads(m.to_bytes()))
    a.update(y, s, g)
    assert _reads(a) == _reads(sm.loads(a.to_bytes()))


def _table(rng: np.random.Generator, groups: int, n: int) -> _Table:
    labels = np.unique(rng.integers(0, 3 * groups, groups))
    code = rng.integers(0, len(labels), n)
    key = np.round(rng.random(n), 1)
    g, key, pos, neg, value = _sort_reduce(code, key, [np.ones(n, np.int64), code % 2], key)
    rows = np.bincount(code, minlength=len(labels)).astype(np.int64)
    return _Table(labels, rows, g, key, pos, neg, value, np.zeros(len(g), bool))


def test_restricted_is_a_selection() -> None:
    rng = np.random.default_rng(2)
    t = _table(rng, 40, 500)
    wanted = np.unique(rng.integers(0, 130, 25))
    sub = restricted(t, wanted)
    inside = np.isin(t.labels, wanted)
    assert _same(sub.labels, t.labels[inside])
    assert _same(sub.rows, t.rows[inside])
    mask = inside[t.g]
    for name in ("key", "pos", "neg", "value", "bucketed"):
        assert _same(getattr(sub, name), getattr(t, name)[mask])
    assert _same(sub.labels[sub.g], t.labels[t.g][mask])
    assert len(restricted(t, np.array([-5, 10_000])).g) == 0


def test_spliced_takes_new_values_and_new_labels() -> None:
    labels = np.array([2, 5, 9])
    values = (np.array([0.2, 0.5, 0.9]),)
    new_labels = np.array([1, 5, 12])
    out_labels, (out,) = spliced(labels, values, new_labels, (np.array([10.0, 50.0, 120.0]),))
    assert out_labels.tolist() == [1, 2, 5, 9, 12]
    assert out.tolist() == [10.0, 0.2, 50.0, 0.9, 120.0]
    assert values[0].tolist() == [0.2, 0.5, 0.9]  # the last read is not written


def test_the_first_weights_read_in_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """Weights make every group's sums float ones, which past 2**53 pairs in a group differ
    from the integer sums a kept read took: the first weighted update forgets it."""
    full_reads = _full_reads(monkeypatch)
    rng = np.random.default_rng(4)
    m = sm.GAUC()
    y, s, g, _ = _batch(rng, 5000, 400, "int", False)
    m.update(y, s, g)
    m.compute()
    m.update([1], [0.5], [3])
    m.compute()
    assert len(full_reads) == 1  # (the second read was partial)
    m.update([1], [0.5], [3], sample_weight=[2.0])
    m.compute()
    assert len(full_reads) == 2
    assert _reads(m) == _reads(sm.loads(m.to_bytes()))


def test_blocks_pickled_without_a_kept_read_still_read() -> None:
    """0.8.25's pickles have no ``_read``/``_fresh`` attributes: the class gives them."""
    m = sm.GAUC().update([0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4], [1, 1, 2, 2])
    for name in ("_read", "_fresh", "_fresh_size"):
        m.scores.__dict__.pop(name, None)
    assert m.compute() == 1.0
    m.update([1], [0.5], [1])
    assert _reads(m) == _reads(sm.loads(m.to_bytes()))


def test_spliced_labels_are_as_wide_as_a_full_folds() -> None:
    labels = np.array(["a", "bb"])
    new_labels = np.array(["bb"], dtype="<U30")
    out_labels, _ = spliced(labels, (np.zeros(2),), new_labels, (np.ones(1),))
    assert out_labels.dtype == np.dtype("<U30") and out_labels.tolist() == ["a", "bb"]


def test_a_long_served_stream_stays_partial(monkeypatch: pytest.MonkeyPatch) -> None:
    """The count of groups changed since the last read starts again at every read: 0.8.26's
    first cut kept adding to it, and every read whose running count passed the number of
    groups was a full one (one read in ten at 1,000-row updates over 10,000 groups)."""
    full_reads = _full_reads(monkeypatch)
    for _ in _served(6, 20_000, 1000, 50, 60):
        pass
    assert len(full_reads) == 1


def test_a_growing_queue_is_folded_in_at_a_partial_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past READ_FOLD_SHARE of the main table's entries, a partial read folds the queue into
    it first (each read gathered the changed groups from every queued table: reads grew with
    the queue), and stays partial: the values do not change, the kept read holds."""
    full_reads = _full_reads(monkeypatch)
    mains = set()
    for m in _served(7, 4_000, 2_000, 60, 40):
        block = m.scores
        queued = sum(len(t.g) for t in block._pending)
        assert queued <= _group_reads.READ_FOLD_SHARE * len(block._main.g) + 60
        mains.add(id(block._main))
    assert len(full_reads) == 1 and len(mains) > 1
    assert _reads(m) == _reads(sm.loads(m.to_bytes()))


def _folded_the_old_way(block: object, changed: np.ndarray, queued: list[_Table]) -> _Table:
    parts = [restricted(block._main, changed), *queued]  # type: ignore[attr-defined]
    return fold_tables(parts, block.mapping, block._sketched)  # type: ignore[attr-defined]


COARSE = ({"max_exact": 3, "resolution": 8}, "int", False)  # (buckets of several scores)


@pytest.mark.parametrize(
    ("config", "kind", "weighted"), [c for c in CONFIGS if not c[2]] + [COARSE]
)
def test_merged_read_table_is_the_fold_of_the_same_entries(
    config: dict, kind: str, weighted: bool
) -> None:
    """The partial read's merge of queued entries into the main table's run gives the table
    ``fold_tables`` gives, column for column: groups passing ``max_exact`` since the main
    table was folded, new groups, groups the main table alone holds."""
    rng = np.random.default_rng(11)
    m = sm.GAUC(**config)
    for n, groups in ((3000, 300), (60, 330)):  # (groups 300 to 329: a few rows each)
        y, s, g, _ = _batch(rng, n, groups, kind, False)
        m.update(y, s, g)
    m = sm.loads(m.to_bytes())  # (every entry in the main table)
    m.compute()
    moved = 0
    for step in range(12):
        y, s, g, _ = _batch(rng, int(rng.choice([1, 5, 60, 400])), 340, kind, False)
        m.update(y, s, g)
        assert m.count  # (folds the rows buffered for the state)
        block = m.scores
        changed = np.unique(np.concatenate([*block._fresh, block._main.labels[::7]]))
        queued = [restricted(t, changed) for t in block._pending]
        merged = merged_read_table(block, changed, queued)
        held = np.isin(block._main.labels, changed)
        rows = merged.rows[np.searchsorted(merged.labels, block._main.labels[held])]
        moved += int((block._sketched(rows) & ~block._sketched(block._main.rows[held])).sum())
        expected = _folded_the_old_way(block, changed, queued)
        for name in ("labels", "rows", "g", "key", "pos", "neg", "value", "bucketed"):
            assert _same(getattr(merged, name), getattr(expected, name)), (step, name)
        m.compute()
    if config.get("max_exact", 64) < 64:
        assert moved  # (some groups were sketched since the main table was folded)


def test_keys_an_ulp_apart_are_merged_in_order() -> None:
    """Scores of one group one ulp apart (the sort's composite of group and key cannot tell
    them apart: the merge compares the keys themselves)."""
    m = sm.GAUC(exact=True)
    m.update([0, 1, 0, 1], [0.25, 0.5, 0.75, 0.125], [1, 1, 1, 1])
    m.compute()
    m.update([0, 1], [np.nextafter(0.5, 1.0), np.nextafter(0.5, 0.0)], [1, 1])
    assert m.count == 6  # (folds the rows buffered)
    block = m.scores
    changed = np.unique(np.concatenate(block._fresh))
    queued = [restricted(t, changed) for t in block._pending]
    merged = merged_read_table(block, changed, queued)
    expected = _folded_the_old_way(block, changed, queued)
    for name in ("labels", "rows", "g", "key", "pos", "neg", "value", "bucketed"):
        assert _same(getattr(merged, name), getattr(expected, name)), name
    assert _reads(m) == _reads(sm.loads(m.to_bytes()))


def test_group_starts_count_groups_without_entries() -> None:
    g = np.array([0, 0, 2, 2, 2, 4])
    e = np.zeros(len(g))
    t = _Table(np.arange(6), np.ones(6, np.int64), g, e, e, e, e, np.zeros(len(g), bool))
    assert group_starts(t).tolist() == [0, 2, 2, 5, 5, 6, 6]
    assert group_starts(t) is t.starts  # (kept with the table)
