"""``a + b`` writes into a copy that may share ``a``'s arrays (``StateBlock.merge_target``):
neither operand nor the result may see a later change of another."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm

METRICS = [
    (sm.ROCAUC, False),
    (lambda: sm.ROCAUC(exact=True), False),
    (lambda: sm.ROCAUC(score_type="real"), False),
    (sm.AveragePrecision, False),
    (sm.CalibrationError, False),
    (sm.MeanSquaredError, False),
    (sm.F1, True),
]


def _rows(seed: int, labels: bool, n: int = 500):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = np.clip(0.3 * y + rng.normal(0.35, 0.2, n), 0.0, 1.0)
    return y, (s > 0.5).astype(int) if labels else s


@pytest.mark.parametrize("make, labels", METRICS)
@pytest.mark.parametrize("empty_right", [False, True])
def test_sum_result_and_operands_stay_independent(make, labels, empty_right):
    def fed(seed: int):
        return make().update(*_rows(seed, labels))

    a = fed(1)
    b = make() if empty_right else fed(2)
    a_bytes, b_bytes = a.to_bytes(), b.to_bytes()
    c = a + b
    c_bytes = c.to_bytes()
    assert c_bytes == a.copy().merge(b).to_bytes()
    c.update(*_rows(3, labels))
    c.merge(fed(4))
    assert a.to_bytes() == a_bytes and b.to_bytes() == b_bytes
    a.update(*_rows(5, labels))
    a.merge(fed(6))
    b.update(*_rows(7, labels))
    expected = fed(1) if empty_right else fed(1).merge(fed(2))
    expected.update(*_rows(3, labels)).merge(fed(4))
    assert c.to_bytes() == expected.to_bytes()
    assert c_bytes != c.to_bytes()


def test_sum_keeps_the_per_request_path():
    y, s = _rows(8, False)
    total = sum([sm.ROCAUC().update(y, s), sm.ROCAUC().update(y, s)])
    assert total._rows is not None
    for yi, si in zip(y[:50].tolist(), s[:50].tolist(), strict=True):
        total.update(yi, si)
    assert total._pending is not None  # the samples took the per-request path
    whole = sm.ROCAUC().update(np.concatenate([y, y, y[:50]]), np.concatenate([s, s, s[:50]]))
    assert total.to_bytes() == whole.to_bytes()
