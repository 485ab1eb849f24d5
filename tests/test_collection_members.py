"""A collection's member, handed out by ``collection[name]``, is read, not changed alone.

0.8.13 let ``c["auc"].update(...)`` through: the member counted rows the collection did not,
and the collection's bytes were refused by ``loads`` and ``torch.sync`` (a checkpoint lost, far
from the call that caused it).
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.errors import InputError

Y = [0, 1, 1, 0, 1]
S = [0.2, 0.8, 0.6, 0.4, 0.9]


def _collection() -> sm.MetricCollection:
    return sm.MetricCollection(auc=sm.ROCAUC(), ap=sm.AveragePrecision())


@pytest.mark.parametrize(
    "change",
    [
        lambda m: m.update(Y, S),
        lambda m: m.update(1, 0.7),
        lambda m: m.merge(sm.ROCAUC().update(Y, S)),
        lambda m: m.reset(),
    ],
    ids=["batch", "one-sample", "merge", "reset"],
)
def test_changing_a_member_alone_is_refused_and_changes_nothing(change) -> None:
    c = _collection().update(Y, S)
    before = c.to_bytes()
    with pytest.raises(InputError, match=r"'auc' is a member of a MetricCollection"):
        change(c["auc"])
    assert c.to_bytes() == before
    assert sm.loads(c.to_bytes()) == c


def test_a_keyed_members_join_is_refused_too() -> None:
    c = sm.MetricCollection(g=sm.GAUC())
    with pytest.raises(InputError, match=r"^join: 'g' is a member"):
        c["g"].join(sm.GAUC().update(Y, S, groups=[1, 1, 2, 2, 2]))


def test_the_collection_still_changes_its_members_after_handing_them_out() -> None:
    c, plain = _collection(), _collection()
    c["auc"], c["ap"]  # handed out before every kind of update
    for m in (c, plain):
        m.update(Y, S)  # a batch
        for y, s in zip(Y, S, strict=True):
            m.update(y, s)  # the per-request path
        m.update_each({"auc": ((Y, S), {}), "ap": ((Y, S), {})})
    assert c.to_bytes() == plain.to_bytes()
    c["auc"]
    c.merge(plain)
    assert c.count == 2 * plain.count
    assert sm.loads(c.to_bytes()) == c
    window = sm.TumblingWindows(_collection(), width=10)
    window.update(Y, S, timestamps=np.arange(5.0))
    assert window.count == 5
    assert c.reset().count == 0 and c["auc"].count == 0


def test_copies_and_pickles_of_a_member_change_freely() -> None:
    c = _collection().update(Y, S)
    member = c["auc"]
    for twin in (member.copy(), copy.deepcopy(member), pickle.loads(pickle.dumps(member))):
        twin.update(Y, S).merge(sm.ROCAUC().update(Y, S))
        assert twin.count == 15
    assert member.count == 5
    back = pickle.loads(pickle.dumps(c))
    back.update(Y, S)
    assert back.count == 10 and back["auc"].count == 10


def test_lists_of_one_sample_tensors_read_as_their_values() -> None:
    torch = pytest.importorskip("torch")
    want = sm.MeanSquaredError().update([1.0, 2.0], np.float32([0.2, 0.7]))
    grads = [torch.tensor(0.2, requires_grad=True), torch.tensor(0.7, requires_grad=True)]
    got = sm.MeanSquaredError().update([1.0, 2.0], grads)
    assert got == want
    got.update([1.0, 2.0], grads)  # (once the per-request path has learnt the columns)
    assert got.count == 4
    halves = [torch.tensor(0.25, dtype=torch.bfloat16), torch.tensor(0.5, dtype=torch.bfloat16)]
    assert sm.MeanSquaredError().update([1.0, 2.0], halves) == sm.MeanSquaredError().update(
        [1.0, 2.0], [0.25, 0.5]
    )


def test_a_meta_tensor_is_named_as_having_no_values() -> None:
    torch = pytest.importorskip("torch")
    m = sm.MeanSquaredError()
    with pytest.raises(InputError, match=r"^y_true: a tensor on the meta device holds no values"):
        m.update(torch.zeros(3, device="meta"), torch.zeros(3, device="meta"))
    assert m.count == 0


def test_lists_of_one_sample_tensors_read_through_every_wrapper() -> None:
    # The bare metrics read them (above); the wrappers' row splitting let torch's RuntimeError
    # out (Bootstrap and a collection holding a Sliced raised InputError in 0.8.13).
    torch = pytest.importorskip("torch")

    def grads(*values: float) -> list:
        return [torch.tensor(v, requires_grad=True) for v in values]

    plain = [1.0, 2.0]
    for make, kwargs in [
        (lambda: sm.Bootstrap(sm.MeanSquaredError(), replicates=3), {"ids": [1, 2]}),
        (lambda: sm.Sliced(sm.MeanSquaredError()), {"by": ["a", "b"]}),
        (lambda: sm.TumblingWindows(sm.MeanSquaredError(), width=10), {"timestamps": [1.0, 2.0]}),
        (
            lambda: sm.MetricCollection(
                m=sm.MeanSquaredError(), s=sm.Sliced(sm.MeanSquaredError())
            ),
            {"by": ["a", "b"]},
        ),
    ]:
        got = make().update(grads(1.0, 2.0), [1.0, 2.5], **kwargs)
        assert got == make().update(plain, [1.0, 2.5], **kwargs)
    scores = sm.Sliced(sm.ROCAUC()).update([0, 1], grads(0.25, 0.75), by=["a", "a"])
    assert scores == sm.Sliced(sm.ROCAUC()).update([0, 1], [0.25, 0.75], by=["a", "a"])


@pytest.mark.parametrize(
    "made",
    [
        lambda: _collection(),
        lambda: _collection().update(Y, S),  # members replaced by updated copies
        lambda: _collection().update(1, 0.7),  # the per-request path
        lambda: sm.loads(_collection().update(Y, S).to_bytes()),
        lambda: _collection().update(Y, S).copy(),
        lambda: copy.deepcopy(_collection().update(Y, S)),
        lambda: pickle.loads(pickle.dumps(_collection().update(Y, S))),
        lambda: _collection().update(Y, S).reset(),
        lambda: _collection().update(Y, S).merge(_collection().update(Y, S)),
        lambda: _collection().update(Y, S) + _collection().update(Y, S),
    ],
    ids=[
        "fresh",
        "updated",
        "one-row",
        "loaded",
        "copy",
        "deepcopy",
        "pickle",
        "reset",
        "merged",
        "added",
    ],
)
def test_a_member_read_as_an_attribute_is_guarded_too(made) -> None:
    """``collection.auc`` is the member ``collection["auc"]`` is: 0.8.24 guarded only members
    looked up by ``[]``, and ``collection.auc.update(...)`` then wrote bytes ``loads`` refused
    (a review found it)."""
    c = made()
    before = c.to_bytes()
    assert c.auc is c["auc"]
    for change in (lambda m: m.update(1, 0.5), lambda m: m.reset()):
        with pytest.raises(InputError, match=r"'auc' is a member of a MetricCollection"):
            change(c.auc)
    assert c.to_bytes() == before
    assert sm.loads(c.update(Y, S).to_bytes()) == c
