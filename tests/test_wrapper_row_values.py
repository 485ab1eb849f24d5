"""A point's row beside one cluster label is one sample, through every wrapper as bare.

0.8.13's wrappers counted rows from the first column: ``Sliced(ClusterGeometry())`` read
``update(row, label, by=[k1, k2, k3])`` as three rows sharing the label, while each slice read
its piece of the row as one point, and wrote a state that ``loads`` refused.
"""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.errors import InputError

POINT = np.array([1.0, 2.0, 3.0])


@pytest.mark.parametrize(
    "make",
    [
        lambda: sm.Sliced(sm.ClusterGeometry()),
        lambda: sm.Sliced(sm.CalinskiHarabasz()),
        lambda: sm.Sliced(sm.DaviesBouldin()),
    ],
)
def test_sliced_reads_a_row_beside_its_label_as_one_point(make) -> None:
    bare = sm.ClusterGeometry().update(POINT, 0).update(POINT + 1, 1)
    s = make().update(POINT, 0, by="a").update(POINT + 1, 1, by="a")
    batch = make().update(np.stack([POINT, POINT + 1]), [0, 1], by=["a", "a"])
    assert s.count == batch.count == bare.count == 2
    assert s.to_bytes() == batch.to_bytes()
    assert sm.loads(s.to_bytes()) == s
    before = s.to_bytes()
    with pytest.raises(
        InputError, match=r"^labels: one value .* beside X of 3 entries .* by has 3"
    ):
        s.update(POINT, 0, by=["a", "a", "b"])
    assert s.to_bytes() == before


@pytest.mark.parametrize(
    "make",
    [
        lambda: sm.TumblingWindows(sm.ClusterGeometry(), width=10),
        lambda: sm.SlidingWindow(sm.ClusterGeometry(), width=10),
    ],
)
def test_windows_read_a_row_beside_its_label_as_one_point(make) -> None:
    w = make().update(POINT, 0, timestamps=1.0).update(POINT + 1, 1, timestamps=2.0)
    batch = make().update(np.stack([POINT, POINT + 1]), [0, 1], timestamps=[1.0, 2.0])
    assert w.count == 2
    assert w.to_bytes() == batch.to_bytes()
    assert sm.loads(w.to_bytes()) == w
    before = w.to_bytes()
    with pytest.raises(InputError, match=r"^labels: .* timestamps has 3 rows"):
        w.update(POINT, 0, timestamps=[1.0, 2.0, 15.0])
    assert w.to_bytes() == before


def test_a_column_beside_one_value_is_refused_through_a_wrapper_as_bare() -> None:
    # Bare Accuracy refuses a column of labels beside one prediction; Sliced fed the value to
    # every slice, which took it as that slice's one prediction.
    with pytest.raises(InputError, match="columns differ in length"):
        sm.Accuracy().update([0, 1, 1], 1)
    s = sm.Sliced(sm.Accuracy())
    with pytest.raises(InputError, match=r"^y_pred: one value .* by has 3 rows"):
        s.update([0, 1, 1], 1, by=["a", "b", "c"])
    with pytest.raises(InputError, match="columns differ in length"):
        s.update([0, 1, 1], 1, by="a")
    with pytest.raises(InputError, match="columns differ in length"):
        sm.Bootstrap(sm.Accuracy(), replicates=4).update([0, 1, 1], 1)
    assert s.count == 0
