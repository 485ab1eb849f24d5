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
