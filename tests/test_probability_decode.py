"""A sketch of ``score_type="probability"`` holds scores in [0, 1] only: forged bytes placing
a score a hair outside (which the grid's end buckets would take) are refused at ``loads``, as
exact stores already refused theirs. (0.8.15 decoded a bucket holding -1e-10.)"""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
from streammetrics import _codec

Y = [0, 1, 1, 0, 1]
S = [0.0, 0.3, 0.6, 1.0, 0.5]


@pytest.mark.parametrize("make", [sm.ROCAUC, sm.AveragePrecision, sm.PRCurve, sm.ROCCurve])
@pytest.mark.parametrize(("at", "value"), [(0, -1e-10), (0, -0.0), (-1, 1.0 + 2**-52)])
def test_a_bucket_score_outside_the_unit_interval_is_refused(make, at: int, value: float) -> None:
    m = make().update(Y, S)
    tree = _codec.decode(m.to_bytes())
    hist = tree["state"]["hist"]
    lo, hi = hist["lo"].copy(), hist["hi"].copy()
    lo[at] = hi[at] = value
    hist["lo"], hist["hi"] = lo, hi
    blob = _codec.encode(tree)
    if value == 0.0:  # -0.0 is 0: it loads, as the state holding 0.0
        assert sm.loads(blob).to_bytes() == m.to_bytes()
        return
    with pytest.raises(sm.StateDecodeError):
        sm.loads(blob)


@pytest.mark.parametrize(("at", "value"), [(0, -1e-10), (-1, 1.0 + 2**-52)])
def test_a_grouped_sketch_value_outside_the_unit_interval_is_refused(at: int, value: float) -> None:
    m = sm.GAUC(max_exact=2).update(Y, S, [1] * len(Y))
    tree = _codec.decode(m.to_bytes())
    wire = tree["state"]["scores"]
    assert len(wire["sketch_value"]) == len(Y)
    values = wire["sketch_value"].copy()
    values[at] = value
    wire["sketch_value"] = values
    with pytest.raises(sm.StateDecodeError):
        sm.loads(_codec.encode(tree))


def test_scores_at_the_ends_of_the_unit_interval_still_load() -> None:
    for m in (
        sm.ROCAUC().update(Y, S),
        sm.GAUC(max_exact=2).update(Y, S, [1] * len(Y)),
        sm.AveragePrecision().update([0, 1], np.array([0.0, 1.0])),
    ):
        assert sm.loads(m.to_bytes()).to_bytes() == m.to_bytes()
