"""The per-request path (``streammetrics._pending``): what it trusts, and when it stops trusting.

The conformance harness checks every case fed one sample at a time; these tests pin the edges of
the trust rules: state-dependent checks learnt from the ordinary ``update``, trust that must not
outlive a change of state, buffers the caller reuses, weights, folding thresholds, pickling.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import streammetrics as sm
from streammetrics._pending_buffer import FOLD_ROWS


def test_a_copy_does_not_share_what_the_original_learnt() -> None:
    m = sm.MeanSquaredError()
    c = m.copy()
    m.update(1.0, 2.0)  # m now trusts one-sample calls
    c.update([[1.0, 2.0]], [[1.5, 2.5]])  # c holds two outputs: one value per row is refused
    with pytest.raises(sm.InputError, match="outputs"):
        c.update(1.0, 2.0)
    assert c.count == 1


def test_state_dependent_checks_are_raised_at_the_call() -> None:
    f1 = sm.F1()  # average="binary": a third label is refused
    for i in range(10):
        f1.update(i % 2, 1)
    with pytest.raises(sm.InputError, match="binary"):
        f1.update(2, 1)
    names = sm.Accuracy()
    names.update("cat", "dog")
    with pytest.raises(sm.InputError, match="labels"):
        names.update(1, 1)
    assert f1.count == 10 and names.count == 1
    assert f1 == sm.F1().update(np.arange(10) % 2, np.ones(10, dtype=int))


def test_trust_ends_when_an_update_beyond_the_columns_changes_the_state() -> None:
    # Ranking: folding complete queries empties the buffer, after which ids of the other kind are
    # accepted; int ids trusted before must then be checked again.
    m = sm.ranking.NDCG()
    m.update(1, 1.0, 0.5)
    m.update(1, 0.0, 0.2)
    m.update([1], [0.0], [0.1], complete=True)
    m.update("q", 1.0, 0.3)
    with pytest.raises(sm.InputError, match="query_ids"):
        m.update(2, 1.0, 0.3)
    assert m.count == 4


def test_merge_and_reset_end_trust() -> None:
    m = sm.LogLoss().update(1, 0.9)
    two_columns = sm.LogLoss().update([0, 1], [[0.8, 0.2], [0.3, 0.7]])
    m.reset()
    m.merge(two_columns)
    with pytest.raises(sm.InputError, match="y_prob"):
        m.update(1, 0.9)
    assert m == two_columns


@pytest.mark.parametrize(
    "make, extra",
    [
        (lambda: sm.ROCAUC(), ()),
        (lambda: sm.ROCAUC(exact=True), ()),
        (lambda: sm.AveragePrecision(), ()),
        (lambda: sm.ROCAUC(score_type="logit"), ()),
        (lambda: sm.GAUC(), (7,)),
    ],
)
def test_binary_labels_are_trusted_from_the_first_call(make, extra) -> None:  # type: ignore[no-untyped-def]
    """A binary metric's labels are 0 and 1 and nothing else, and no state refuses either:
    a fresh state buffers its first one-sample call of either class (0.8.28 took the
    ordinary update for the first sample of each class, in every new slot of a window), and
    so does a reset one. The state is the same as the same rows in one batch; a bad label
    is still refused at its call, and a merge or a load still ends the trust."""
    rng = np.random.default_rng(12)
    y = rng.integers(0, 2, 50)
    p = rng.random(50).round(3)
    m = make()
    for i in range(50):
        m.update(bool(y[i]) if i % 3 == 0 else int(y[i]), float(p[i]), *extra)
        # (GAUC's first call teaches it its keys' kind, int or str: an ordinary update)
        assert m._pending is not None or (extra and i == 0)
    assert m == make().update(y, p, *(np.full(50, e) for e in extra))
    with pytest.raises(sm.InputError, match="y_true"):
        m.update(2, 0.5, *extra)
    with pytest.raises(sm.InputError, match="y_true"):
        m.update(0.5, 0.5, *extra)
    assert m.count == 50
    m.reset()
    m.update(1, 0.25, *extra)
    assert m._rows is not None and m._rows.scalars
    m.merge(make().update([0, 1], [0.1, 0.9], *([e, e] for e in extra)))
    assert m._rows is not None and not m._rows.scalars
    loaded = sm.loads(m.to_bytes())
    assert loaded._rows is not None and not loaded._rows.scalars


class _MyAUC(sm.ROCAUC):
    """A subclass outside the package: ``loads`` builds it by ``__init__``."""


def test_a_loaded_state_trusts_nothing_yet() -> None:
    """A review of 0.8.29's first cut: a ``ROCAUC`` subclass (built by ``__init__`` when
    loaded, trusting binary labels from the start) loaded near its weight bound buffered
    rows whose fold then failed, losing them. A loaded state now trusts nothing until a call
    passes: the call that would pass the bound raises."""
    from streammetrics import CountOverflowError

    m = _MyAUC().update([1, 0], [0.9, 0.1], sample_weight=[2.0**100 - 2.0**90, 1.0])
    loaded = sm.loads(m.to_bytes())
    assert type(loaded) is _MyAUC and loaded._rows is not None and not loaded._rows.scalars
    accepted = 0
    with pytest.raises(CountOverflowError):
        for _ in range(400):
            loaded.update(1, 0.5, sample_weight=2.0**82)
            accepted += 1
    assert loaded.count == 2 + accepted and 0 < accepted < 400
    loaded.compute()


def test_labels_that_a_state_may_refuse_are_still_learnt() -> None:
    """``LogLoss`` and ``CalibrationError`` take 0/1 labels with one probability, or a
    row of class probabilities: a state holding the latter refuses the former, so their
    one-sample calls are trusted only once one has passed, as any label's."""
    for metric in (sm.LogLoss(), sm.CalibrationError()):
        assert metric._rows is not None and not metric._rows.scalars


def test_the_callers_buffer_may_be_reused() -> None:
    m = sm.ROCAUC()
    m.update(np.array([0, 1]), np.array([0.1, 0.9]))  # learn small batches
    y, p = np.array([1, 0, 1]), np.array([0.8, 0.3, 0.6])
    m.update(y, p)
    y[:] = 0  # a server reusing its arrays for the next request
    p[:] = 0.5
    want = sm.ROCAUC().update([0, 1, 1, 0, 1], [0.1, 0.9, 0.8, 0.3, 0.6])
    assert m == want


def test_weighted_and_unweighted_calls_fold_as_separate_updates() -> None:
    one, whole = sm.Accuracy(), sm.Accuracy()
    for i in range(50):
        one.update(i % 2, 1)
    one.update(1, 1, sample_weight=2.5)
    one.update(0, 1)
    whole.update(np.arange(50) % 2, np.ones(50, dtype=int))
    whole.update([1], [1], sample_weight=[2.5])
    whole.update([0], [1])
    assert one.to_bytes() == whole.to_bytes()


def test_the_buffer_folds_when_full_and_counts_stay_exact() -> None:
    m = sm.ROCAUC()
    n = FOLD_ROWS * 2 + 7
    rng = np.random.default_rng(3)
    y, p = rng.integers(0, 2, n), rng.random(n)
    for a, b in zip(y.tolist(), p.tolist(), strict=True):
        m.update(a, b)
        assert m._pending is None or m._pending.size < FOLD_ROWS
    assert m.count == n
    assert m.to_bytes() == sm.ROCAUC().update(y, p).to_bytes()


def test_pickle_folds_pending_rows_and_gives_a_new_lock() -> None:
    m = sm.GAUC()
    for i in range(30):
        m.update(i % 2, (i % 7) / 7, i % 3)
    back = pickle.loads(pickle.dumps(m))
    assert back == m and back._lock is not m._lock
    back.update(1, 0.5, 1)
    assert back.count == 31 and m.count == 30


@pytest.mark.parametrize(
    "bad",
    [
        (float("nan"), 0.5),
        (1, float("inf")),
        (1, 1j),
        (1, 1.5),
        (1, -0.1),
        (2, 0.5),
        (True, None),
    ],
)
def test_bad_samples_after_trust_is_learnt(bad: tuple) -> None:
    m = sm.ROCAUC()
    for i in range(20):
        m.update(i % 2, i / 20)
    before = m.copy()
    with pytest.raises(sm.InputError):
        m.update(*bad)
    with pytest.raises(sm.InputError):
        m.update(1, 0.5, sample_weight=-1.0)
    assert m == before


def test_a_large_batch_beyond_the_declared_columns_still_ends_trust() -> None:
    # complete=True given positionally, on a batch too large to learn from: the buffer of open
    # queries is emptied, so int query ids trusted before must be checked again.
    m = sm.ranking.MRR()
    m.update(1, 1.0, 0.5)
    m.update(1, 0.0, 0.2)
    ids = np.concatenate([[1], np.arange(4999) // 10 + 100])  # query 1 completes here
    m.update(ids, np.ones(5000), np.linspace(0, 1, 5000), True)
    m.update("q", 1.0, 0.3)
    with pytest.raises(sm.InputError, match="query_ids"):
        m.update(2, 1.0, 0.3)


def test_a_slices_labels_are_trusted_in_that_slice_alone() -> None:
    """``Sliced``: each slice is a state of its own, with its own label set. A label accepted
    in one slice is not trusted in another (it was, and the other slice's fold then failed,
    dropping every buffered row): the bad row is refused at its call, the rest kept."""
    s = sm.Sliced(sm.Accuracy())
    s.update("cat", "cat", by="A")  # slice A holds str labels
    s.update(1, 1, by="B")  # slice B int labels; one-row calls now trusted
    for _ in range(5):
        s.update(1, 0, by="B")
    with pytest.raises(sm.InputError, match="labels"):
        s.update("cat", "cat", by="B")
    with pytest.raises(sm.InputError, match="labels"):
        s.update(["cat"], ["cat"], by=["B"])  # a small batch likewise
    for _ in range(5):
        s.update(1, 1, by="B")
    assert s.count == 12
    assert s.compute() == {"A": 1.0, "B": 6 / 11}
    f1 = sm.Sliced(sm.F1())  # binary: each slice may hold two labels
    f1.update([0, 1], [0, 1], by=["A", "A"])
    f1.update([1, 2], [1, 2], by=["B", "B"])
    for _ in range(3):
        f1.update(1, 1, by="B")
    with pytest.raises(sm.InputError, match="binary"):
        f1.update(0, 2, by="B")  # 0 is a label of slice A, a third one for slice B
    assert f1.count == 7


def test_grouped_keys_are_trusted_per_slice() -> None:
    """``Sliced(GAUC())``: a slice's group ids keep one kind, whatever other slices hold."""
    s = sm.Sliced(sm.GAUC())
    s.update([0, 1], [0.2, 0.8], ["u", "u"], by=[1, 1])
    s.update([0, 1], [0.2, 0.8], [7, 7], by=[2, 2])
    s.update(1, 0.4, "v", by=1)
    s.update(1, 0.4, "v", by=1)
    with pytest.raises(sm.InputError):
        s.update(0, 0.3, "w", by=2)  # str groups trusted in slice 1 only
    assert s.count == 6
    expected = sm.Sliced(sm.GAUC())
    expected.update([0, 1, 1, 1], [0.2, 0.8, 0.4, 0.4], ["u", "u", "v", "v"], by=[1, 1, 1, 1])
    expected.update([0, 1], [0.2, 0.8], [7, 7], by=[2, 2])
    assert s.to_bytes() == expected.to_bytes()


@pytest.mark.parametrize("key", [True, np.True_, [True], np.array([True, False])])
def test_bool_keys_take_the_ordinary_path(key) -> None:  # type: ignore[no-untyped-def]
    """A bool slice key is refused on every path (it was counted under 1 once int keys were
    trusted); a bool group id is what the ordinary update makes of it, never an error after
    the row was counted."""
    s = sm.Sliced(sm.Accuracy())
    for _ in range(3):
        s.update(1, 1, by=5)
    n = len(key) if isinstance(key, (list, np.ndarray)) else 1
    with pytest.raises(sm.InputError, match="bool"):
        s.update(*([1] * n, [0] * n) if n > 1 or isinstance(key, list) else (1, 0), by=key)
    assert s.count == 3 and s.keys() == [5]
    for metric, args in ((sm.GAUC(), (1, 0.5)), (sm.ranking.NDCG(), (1.0, 0.5))):
        a, b = metric.copy(), metric.copy()
        for _ in range(2):
            a.update(*args, np.True_) if isinstance(a, sm.GAUC) else a.update(np.True_, *args)
        batch = [np.array([1, 1]), np.array([0.5, 0.5]), np.array([True, True])]
        if isinstance(b, sm.GAUC):
            b.update(*batch)
        else:
            b.update(batch[2], np.array([1.0, 1.0]), batch[1])
        assert a.count == 2 and a.to_bytes() == b.to_bytes()


# -- Sliced: a label trusted in one slice is trusted in every slice (0.8.10) ---------------------


@pytest.mark.parametrize(
    "make, row",
    [
        (lambda: sm.Sliced(sm.Accuracy()), lambda r: (int(r.integers(3)), int(r.integers(3)))),
        (
            lambda: sm.Sliced(sm.F1(average="macro")),
            lambda r: (int(r.integers(3)), int(r.integers(3))),
        ),
        (lambda: sm.Sliced(sm.ConfusionMatrix()), lambda r: (str(r.integers(2)), "1")),
        (lambda: sm.Sliced(sm.ROCAUC()), lambda r: (int(r.integers(2)), float(r.random()))),
    ],
)
def test_sliced_trusts_a_label_seen_in_any_slice(make, row) -> None:
    """Each (label, slice) pair had to be seen before a row was buffered, so with thousands of
    slices most requests took the checked path (100-180 us against about 2). A label accepted
    in one slice is now trusted in every slice, new ones included, while every label is of one
    kind and the wrapped metric checks labels by kind alone; the state is the batch's."""
    rng = np.random.default_rng(7)
    m = make()
    rows = [(*row(rng), int(rng.integers(2000))) for _ in range(3000)]
    buffered = 0
    for i, (a, b, k) in enumerate(rows):
        m.update(a, b, by=k)
        if i >= 50 and m._pending is not None:
            buffered += 1
    assert buffered > 0.9 * (len(rows) - 50)
    cols = [np.array(c) for c in zip(*rows, strict=True)]
    assert m.to_bytes() == make().update(cols[0], cols[1], by=cols[2]).to_bytes()


def test_sliced_labels_of_a_second_kind_end_the_trust_in_every_slice() -> None:
    """Once a slice holds string labels (given one row at a time, as a small list, as a large
    array or as a large list), an integer label it never saw is checked at the call again:
    refused there, the state as it was, never buffered to fail at the next read."""
    import itertools

    def trusted() -> sm.Sliced:
        m = sm.Sliced(sm.Accuracy())
        for a, b, k in itertools.product((0, 1), (0, 1), ("a", "c")):
            m.update(a, b, by=k)
        return m

    n = 5000
    strings = [
        lambda m: m.update("x", "x", by="b"),
        lambda m: m.update(["x", "y"], ["x", "x"], by=["b", "b"]),
        lambda m: m.update(np.array(["x"] * n), np.array(["y"] * n), by=np.array(["b"] * n)),
        lambda m: m.update(["x"] * n, ["y"] * n, by=["b"] * n),
    ]
    for give in strings:
        m = trusted()
        m.update(1, 0, by="new")  # a new slice, trusted while every label is an integer
        assert m._pending is not None
        give(m)
        before = m.to_bytes()
        with pytest.raises(sm.InputError, match=r"str labels|int labels"):
            m.update(1, 1, by="b")
        assert m.to_bytes() == before
        m.update(1, 1, by="new")  # a pair seen: still trusted slice by slice
        assert m.compute()["new"] == 0.5


def test_sliced_binary_f1_keeps_checking_each_slice_s_labels() -> None:
    """``F1()`` (``average="binary"``) refuses a third label in a slice: a label seen in
    another slice is not trusted there, so the refusal comes at the call."""
    m = sm.Sliced(sm.F1())
    for a, k in ((0, "a"), (1, "a"), (1, "b"), (2, "b"), (0, "a"), (2, "b")):
        m.update(a, a, by=k)
    before = m.to_bytes()
    with pytest.raises(sm.InputError, match="two classes"):
        m.update(2, 2, by="a")
    assert m.to_bytes() == before


def test_one_sample_as_0d_arrays_and_tensors_takes_the_per_request_path() -> None:
    """A model's single output is a 0-d tensor (or a 0-d array): 0.8.9 sent such calls to the
    ordinary update, about 50 us each against 0.6 us for Python scalars. They are now read as
    the numpy scalars of their dtypes: buffered when trusted, the state the batch's, and a bad
    value still refused at the call."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    n = 300
    y, s = rng.integers(0, 2, n), rng.random(n).astype(np.float32)
    t = rng.normal(size=n)
    cases = [
        (sm.ROCAUC, (y, s), (lambda v: np.array(v), lambda v: torch.tensor(v))),
        (sm.Accuracy, (y, (s > 0.5).astype(np.int64)), (np.array, torch.tensor)),
        (sm.MeanSquaredError, (t, t + s), (np.array, torch.tensor)),
        (lambda: sm.Sliced(sm.Accuracy()), (y, y[::-1].copy()), (np.array, torch.tensor)),
    ]
    for make, cols, wraps in cases:
        sliced = isinstance(make(), sm.Sliced)
        keys = rng.integers(0, 5, n)
        whole = make()
        whole.update(*cols, **({"by": keys} if sliced else {}))
        for wrap in wraps:
            m = make()
            buffered = 0
            for i in range(n):
                row = [wrap(c[i]) for c in cols]
                m.update(*row, **({"by": wrap(keys[i])} if sliced else {}))
                buffered += m._pending is not None
            assert buffered > n // 2, (make, wrap)
            if isinstance(whole, sm.MeanSquaredError):
                assert m.compute() == pytest.approx(whole.compute(), rel=1e-12)
            else:
                assert m.to_bytes() == whole.to_bytes(), (make, wrap)
    m = sm.ROCAUC().update(1, 0.5).update(0, 0.25)
    before = m.to_bytes()
    for bad in (np.array(np.nan), torch.tensor(float("nan")), np.array(1.5), torch.tensor(2.0)):
        with pytest.raises(sm.InputError, match="y_score"):
            m.update(np.array(1), bad)
        assert m.to_bytes() == before
    bf16 = sm.ROCAUC().update(1, 0.5).update(0, 0.25)
    bf16.update(torch.tensor(1), torch.tensor(0.375, dtype=torch.bfloat16))
    assert bf16._pending is not None
    assert bf16.to_bytes() == sm.ROCAUC().update([1, 0, 1], [0.5, 0.25, 0.375]).to_bytes()


def test_sliced_trust_in_every_slice_reads_the_kinds_the_state_holds() -> None:
    """The first version of the trust above knew only the labels learnt since the last
    merge, load or reset (review of this release): after a merge or a load that brought
    string labels into slice ``a``, an integer label learnt in a new slice was trusted in
    ``a``, buffered, and the next read raised (the row then lost). The kinds are now read off
    the state first; a window still checks a row new to a slot against the other slots."""

    def with_strings() -> sm.Sliced:
        return sm.Sliced(sm.Accuracy()).update(["x", "y"], ["x", "x"], by=["a", "a"])

    def learnt(m: sm.Sliced) -> sm.Sliced:
        for k in ("b", "c"):
            m.update(0, 0, by=k)
            m.update(0, 1, by=k)
        return m

    merged = learnt(sm.Sliced(sm.Accuracy()))
    merged.merge(with_strings())
    loaded = sm.loads(with_strings().to_bytes())
    collection = sm.MetricCollection(
        acc=sm.Sliced(sm.Accuracy()), f1=sm.Sliced(sm.F1(average="macro"))
    )
    other = sm.MetricCollection(acc=sm.Sliced(sm.Accuracy()), f1=sm.Sliced(sm.F1(average="macro")))
    collection.merge(other.update(["x", "y"], ["x", "x"], by=["a", "a"]))
    reset = with_strings()
    for m in (merged, loaded, collection, reset):
        for k in ("b", "c", "d"):
            m.update(0, 0, by=k)  # a new slice of integer labels: learnt
            m.update(0, 1, by=k)
        before = m.to_bytes()
        with pytest.raises(sm.InputError, match="int labels, but this state holds str"):
            m.update(0, 0, by="a")
        assert m.to_bytes() == before
        m.compute()  # every read works: nothing was buffered
    reset.reset()
    learnt(reset).update(0, 0, by="a")  # after a reset, slice "a" is new: trusted
    assert reset._pending is not None and reset.compute()["a"] == 1.0
    window = sm.SlidingWindow(sm.Sliced(sm.Accuracy()), width=10, slots=2)
    window.update("x", "x", by="a", timestamps=0.0)
    window.update(0, 0, by="b", timestamps=6.0)
    before = window.to_bytes()
    with pytest.raises(sm.InputError, match="cannot join the window's other slots"):
        window.update(0, 0, by="a", timestamps=6.0)
    assert window.to_bytes() == before and window.compute() == {"a": 1.0, "b": 1.0}


def test_an_empty_schema_2_decayed_state_loads_as_an_empty_state() -> None:
    """Rescaling an empty 0.8.9 state made its empty table weighted: its bytes then failed to
    load ("state of count 0 holds data"; review of this release)."""
    from pathlib import Path

    from streammetrics.windows import Decayed

    old = sm.loads(
        (Path(__file__).parent / "golden" / "schema2" / "Decayed-empty.bin").read_bytes()
    )
    fresh = Decayed(sm.ConfusionMatrix(), half_life=1.5)
    assert old.to_bytes() == fresh.to_bytes()
    assert sm.loads(old.to_bytes()).count == 0


@pytest.mark.parametrize("batch", [False, True], ids=["one-sample", "small-batch"])
def test_an_integer_weight_no_float_holds_is_an_input_error(batch: bool) -> None:
    # Once weighted calls were trusted, float(10**400) in the checks of one sample or a small
    # batch raised OverflowError, where the ordinary update names sample_weight.
    m = sm.Accuracy()
    for _ in range(3):
        if batch:
            m.update([1], [1], sample_weight=[1.0])
        else:
            m.update(1, 1, sample_weight=1.0)
    before = m.to_bytes()
    with pytest.raises(sm.InputError, match="sample_weight"):
        if batch:
            m.update([1], [1], sample_weight=10**400)
        else:
            m.update(1, 1, sample_weight=10**400)
    assert m.to_bytes() == before
