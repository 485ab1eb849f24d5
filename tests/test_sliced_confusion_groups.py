"""``Sliced`` of a confusion metric whose slices are not one packed table (a binary ``F1``, whose
every slice judges its own label set): the grouped fold of ``ConfusionStack`` counts each
slice's rows on a new count block, where 0.8.29 updated a copy of each slice.

The fold must give the state the per-slice path gives, byte for byte (labels of both kinds,
weights, new and held slices, one-sample requests), decline where a slice's own update would
refuse its rows (the per-slice path then says why, and nothing changes), and never write into
the template or another slice's state.
"""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.errors import InputError
from streammetrics.states.stacked import ConfusionStack
from streammetrics.wrappers import sliced as sliced_module

BINARY = {
    "f1": lambda: sm.F1(),
    "precision": lambda: sm.Precision(),
    "recall": lambda: sm.Recall(),
    "fbeta": lambda: sm.FBeta(beta=2.0),
    "f1 pos_label 'b'": lambda: sm.F1(pos_label="b"),
}


class _Spy:
    """Counts the grouped folds that took a batch (True) and that declined it (False)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.took = self.declined = 0
        original = ConfusionStack.fold_groups

        def fold_groups(stack, metrics, codes, size):
            done = original(stack, metrics, codes, size)
            if done:
                self.took += 1
            else:
                self.declined += 1
            return done

        monkeypatch.setattr(ConfusionStack, "fold_groups", fold_groups)


def _per_slice(make, monkeypatch):
    """A ``Sliced`` whose every update takes the per-slice path (no stacked batch)."""
    sliced = sm.Sliced(make())

    def update(*args, **kwargs):
        with monkeypatch.context() as patch:
            patch.setattr(sliced_module, "stacked_batch", lambda *a: None)
            sliced.update(*args, **kwargs)

    return sliced, update


def _labels(name: str, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    if "'b'" in name:
        pool = np.array(["a", "b"])
        return rng.choice(pool, n), rng.choice(pool, n)
    return rng.integers(0, 2, n), rng.integers(0, 2, n)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("name", list(BINARY))
def test_grouped_fold_equals_the_per_slice_path(name, weighted, monkeypatch):
    make = BINARY[name]
    rng = np.random.default_rng(len(name) + weighted)
    spy = _Spy(monkeypatch)
    folded = sm.Sliced(make())
    plain, plain_update = _per_slice(make, monkeypatch)
    for size, slices in [(1, 5), (40, 5), (500, 60), (3, 60), (1, 200), (2_000, 7)]:
        yt, yp = _labels(name, rng, size)
        by = [f"s{k}" for k in rng.integers(0, slices, size)]
        kw = {"sample_weight": rng.integers(1, 4, size) * 0.5} if weighted else {}
        folded.update(yt, yp, by=by, **kw)
        plain_update(yt, yp, by=by, **kw)
        assert folded.to_bytes() == plain.to_bytes()
    assert spy.took >= 5 and spy.declined == 0
    assert folded.compute() == plain.compute()


@pytest.mark.parametrize("name", ["f1", "f1 pos_label 'b'"])
def test_one_sample_requests_fold_as_the_per_slice_path(name, monkeypatch):
    make = BINARY[name]
    rng = np.random.default_rng(3)
    spy = _Spy(monkeypatch)
    folded = sm.Sliced(make())
    plain, plain_update = _per_slice(make, monkeypatch)
    yt, yp = _labels(name, rng, 3_000)
    keys = rng.integers(0, 300, 3_000).tolist()
    for i in range(3_000):  # held and new slices, through the per-request buffer
        folded.update(yt[i].item(), yp[i].item(), by=keys[i])
        plain_update(yt[i].item(), yp[i].item(), by=keys[i])
    assert folded.to_bytes() == plain.to_bytes()
    assert spy.took > 0


def test_a_slice_refusing_its_rows_declines_the_fold_and_changes_nothing(monkeypatch):
    spy = _Spy(monkeypatch)
    m = sm.Sliced(sm.F1())
    m.update([0, 1, 1, 0], [0, 1, 0, 0], by=["a", "a", "b", "c"])
    before = m.to_bytes()
    plain, plain_update = _per_slice(sm.F1, monkeypatch)
    plain_update([0, 1, 1, 0], [0, 1, 0, 0], by=["a", "a", "b", "c"])
    # Slice "b" would hold the labels 0, 1 and 2: binary F1 refuses them; "a" and "d" would not.
    batch = ([1, 2, 0, 1], [1, 1, 0, 0]), {"by": ["a", "b", "d", "b"]}
    with pytest.raises(InputError) as folded_error:
        m.update(*batch[0], **batch[1])
    with pytest.raises(InputError) as plain_error:
        plain_update(*batch[0], **batch[1])
    assert str(folded_error.value) == str(plain_error.value)
    assert "two classes" in str(folded_error.value)
    assert spy.declined == 1
    assert m.to_bytes() == before == plain.to_bytes()
    # A new slice with two labels, neither of them pos_label: refused as the slice refuses it.
    with pytest.raises(InputError, match=r"pos_label: 1 is not a valid label"):
        m.update([0, 2], [2, 0], by=["e", "e"])
    assert m.to_bytes() == before
    m.update([1, 0], [1, 1], by=["e", "a"])  # still takes rows afterwards
    assert m["e"].compute() == 1.0


def test_the_template_and_other_states_are_never_written(monkeypatch):
    _Spy(monkeypatch)
    m = sm.Sliced(sm.Precision())
    m.update([1, 0, 1], [1, 1, 1], by=[1, 2, 3])  # three new slices: blanks of the template
    m.update([1, 1, 0, 0], [1, 0, 0, 1], by=[1, 2, 4, 4])
    assert m._template.count == 0 and not m._template.counts.table.any()
    copy = m.copy()
    snapshot = copy.to_bytes()
    m.update([0, 1, 1], [1, 1, 0], by=[1, 2, 3])
    assert copy.to_bytes() == snapshot
    fresh = sm.Sliced(sm.Precision())
    fresh.update(
        [1, 0, 1, 1, 1, 0, 0, 0, 1, 1],
        [1, 1, 1, 1, 0, 0, 1, 1, 1, 0],
        by=[1, 2, 3, 1, 2, 4, 4, 1, 2, 3],
    )
    assert m.to_bytes() == fresh.to_bytes()


class _AnyLabels(sm.ConfusionMatrix):
    """A user's subclass: not one packed table (its label check is its own)."""

    _wire_name = "TestGroupsAnyLabels"

    def _check_labels(self, labels):
        pass


class _CountsCommits(sm.F1):
    """A user's subclass whose ``_commit`` changes a field of its own in place."""

    _wire_name = "TestGroupsCountsCommits"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._add_state("hits", np.zeros(1))

    def _commit(self, n, /, **values):
        out = super()._commit(n, **values)
        self.hits += n
        return out


def test_a_subclass_keeps_its_slices_per_request_checks():
    """Found by a review of 0.8.30's first cut: a subclass's slices, folded in groups, had no
    per-request buffer and never vouched for a row (3 certain rows of 300, against 291)."""
    rng = np.random.default_rng(4)
    m = sm.Sliced(_AnyLabels(), max_slices=50)
    certain = 0
    for _ in range(300):
        row, kw = (int(rng.integers(0, 2)), int(rng.integers(0, 2))), {"by": int(rng.integers(3))}
        certain += bool(m._row_check(row, kw))
        m.update(*row, **kw)
    assert certain > 250
    assert all(s._rows is not None for s in m.slices.view().values())


def test_a_subclass_changing_a_field_in_place_keeps_one_state_per_slice():
    """Blanks share the template's field values: a subclass that changes one in place takes
    the per-slice path (a review of 0.8.30's first cut: every slice counted all three rows)."""
    s = sm.Sliced(_CountsCommits())
    s.update([1, 0, 1], [1, 1, 0], by=[0, 1, 2])
    assert [m.hits.tolist() for m in s.slices.view().values()] == [[1.0]] * 3
    assert s._template.hits.tolist() == [0.0]


def test_a_refused_batch_leaves_a_packed_table_packed():
    s = sm.Sliced(sm.ConfusionMatrix())
    s.update([0, 1] * 50, [1, 1] * 50, by=list(range(100)))
    bound, before = s.slices.bound, s.to_bytes()
    with pytest.raises(InputError, match=r"str labels, but this state holds int labels"):
        s.update(["a", "b"], ["a", "b"], by=[0, 1])
    assert s.slices._pack is not None and s.slices.bound == bound
    assert s.to_bytes() == before


def test_a_check_added_to_a_subclass_after_use_counts():
    class Later(sm.Accuracy):
        _wire_name = "TestGroupsLater"

    s = sm.Sliced(Later())
    s.update([0, 1] * 40, [0, 1] * 40, by=list(range(80)))

    def no_seven(self, labels):
        if 7 in labels.tolist():
            raise InputError("y_true: label 7 refused by the subclass")

    Later._check_labels = no_seven
    with pytest.raises(InputError, match="label 7"):
        s.update([7, 7], [7, 7], by=[0, 1])


# -- one-sample requests bringing a slice labels, buffered (0.8.30) ---------------------------


def test_rows_bringing_a_slice_labels_are_buffered_when_its_rule_passes(monkeypatch):
    """A binary metric's slice judges its own labels: a slice's first row, or one bringing its
    second label, waits in the buffer when the slice's labels, held and waiting, pass the rule
    with the row's; the same bytes, values and errors as each request updating for real."""
    rng = np.random.default_rng(21)
    buffered = sm.Sliced(sm.F1(pos_label=1), max_slices=60)
    plain = sm.Sliced(sm.F1(pos_label=1), max_slices=60)
    monkeypatch.setattr(plain, "_plan", lambda args, kwargs: None)  # every request for real
    outcomes = []
    for i in range(3_000):
        labels = [0, 1] if rng.random() > 0.02 else [2]
        row = int(rng.choice(labels)), int(rng.choice(labels))
        key = int(rng.integers(0, 70))
        results = []
        for m in (buffered, plain):
            try:
                m.update(*row, by=key)
                results.append(None)
            except InputError as exc:
                results.append(str(exc))
        assert results[0] == results[1], (i, row, key)
        outcomes.append(results[0])
        if i % 500 == 0:
            assert buffered.to_bytes() == plain.to_bytes()
    assert buffered.to_bytes() == plain.to_bytes()
    assert buffered.compute() == plain.compute()
    assert any(outcomes) and outcomes.count(None) > 2_000


def test_a_slice_opened_in_the_buffer_judges_its_later_labels(monkeypatch):
    m = sm.Sliced(sm.F1())
    m.update(0, 0, by="seed")  # a call taken for real: one-sample rows trusted from here
    m.update(0, 1, by="u")  # opens "u" in the buffer: {0, 1}
    assert m._pending is not None and m._new_keys == {"u"}
    before = m.copy().to_bytes()
    with pytest.raises(InputError, match="two classes"):
        m.update(2, 2, by="u")  # "u" would hold 0, 1 and 2
    assert m.to_bytes() == before
    m.update(1, 1, by="v")  # {1}: then 0 may come, 2 may not
    m.update(0, 1, by="v")
    with pytest.raises(InputError, match="two classes"):
        m.update(2, 0, by="v")
    m.update(3, 3, by="w")  # {3} alone passes; {3, 4} would hold two labels, not pos_label
    with pytest.raises(InputError, match="pos_label: 1 is not a valid label"):
        m.update(4, 3, by="w")
    # a collection asks a member about a row whose slice waits in the buffer: it cannot tell
    m.update(0, 1, by="x")
    assert m._row_check((2, 2), {"by": "x"}) is False


def test_a_weighted_buffer_folded_at_a_push_keeps_the_row_s_labels_noted():
    """Found by a review of 0.8.30's first cut: a row opening a slice behind weighted rows
    made the buffer fold at its push, which forgot the labels just noted; the slice's next
    row was then judged without them, buffered, and its fold failed (two rows lost)."""
    m = sm.Sliced(sm.F1())
    m.update(1, 1, by="a", sample_weight=1.0)
    m.update(1, 1, by="a")
    m.update(1, 1, by="a", sample_weight=1.0)  # a weighted row waits in the buffer
    m.update(0, 0, by="u")  # opens "u" with the label 0
    with pytest.raises(InputError, match="two classes"):
        m.update(1, 2, by="u")  # "u" would hold 0, 1 and 2
    assert m.count == 4
    assert m["u"].count == 1


def test_a_subclass_s_own_label_check_is_never_bypassed():
    """Found by a review of 0.8.30's first cut: the rule inherited by a subclass buffered a
    row that the subclass's own check refuses, and the fold then lost it."""

    class NoSeven(sm.F1):
        _wire_name = "TestGroupsNoSeven"

        def _check_labels(self, labels):
            super()._check_labels(labels)
            if 7 in labels.tolist():
                raise InputError("y_true: label 7 refused")

    s = sm.Sliced(NoSeven())
    s.update(1, 1, by=0)
    with pytest.raises(InputError, match="label 7 refused"):
        s.update(7, 7, by=1)
    assert s.count == 1
