"""bfloat16 tensors on the per-request path: buffered as raw bits, widened (or bucketed by
lookup) at the fold, with the same state as the ordinary update of the same values in float32."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
from streammetrics._inputs import BFLOAT16_BITS, bfloat16_values, widen_bfloat16
from streammetrics.errors import InputError
from streammetrics.states.mappings import bfloat16_keys, mapping_for

torch = pytest.importorskip("torch")


def _stream(n: int, seed: int, spread: float = 1.0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = np.clip(0.3 * y + rng.normal(0.35, 0.2, n), 0.0, 1.0) * spread
    return torch.tensor(y), torch.tensor(s, dtype=torch.bfloat16)


def _per_step(metric, y, s, step):
    for a in range(0, len(y), step):
        metric.update(y[a : a + step], s[a : a + step])
    return metric


def test_widening_matches_torch_for_every_pattern():
    bits = np.arange(1 << 16, dtype=np.uint16)
    as_torch = torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16).float().numpy()
    ours = widen_bfloat16(bits.view(BFLOAT16_BITS))
    assert np.array_equal(ours.view(np.uint32), as_torch.view(np.uint32))
    values = bfloat16_values()
    finite = np.isfinite(as_torch)
    assert np.array_equal(values[finite], as_torch[finite].astype(np.float64))
    assert np.isnan(values[~np.isfinite(as_torch) & np.isnan(as_torch)]).all()


@pytest.mark.parametrize("score_type", ["probability", "logit"])
def test_lookup_keys_equal_the_mapping(score_type):
    mapping = mapping_for(score_type)
    values = bfloat16_values()
    valid = np.isfinite(values)
    if score_type == "probability":
        valid &= (values >= 0) & (values <= 1)
    table = bfloat16_keys(mapping)
    assert np.array_equal(table[valid], mapping.keys(values[valid]))
    assert not table.flags.writeable


@pytest.mark.parametrize(
    "make",
    [
        sm.ROCAUC,
        lambda: sm.ROCAUC(exact=True),
        lambda: sm.ROCAUC(score_type="logit"),
        lambda: sm.ROCAUC(score_type="real"),
        sm.AveragePrecision,
        sm.CalibrationError,
        sm.BrierScore,
    ],
)
@pytest.mark.parametrize("step", [1, 7, 256])
def test_small_bfloat16_batches_equal_one_float32_update(make, step):
    y, s = _stream(3000, step)
    ours = _per_step(make(), y, s, step)
    whole = make().update(y.numpy(), s.float().numpy())
    assert ours.to_bytes() == whole.to_bytes()
    assert ours.compute() == whole.compute()


def test_regression_columns_of_bfloat16():
    rng = np.random.default_rng(3)
    t = torch.tensor(rng.normal(0, 3, 2000), dtype=torch.bfloat16)
    p = torch.tensor(rng.normal(0, 3, 2000), dtype=torch.bfloat16)
    ours = sm.MeanSquaredError()
    for a in range(0, 2000, 100):
        ours.update(t[a : a + 100], p[a : a + 100])
    whole = sm.MeanSquaredError().update(t.float().numpy(), p.float().numpy())
    assert ours.compute() == pytest.approx(whole.compute(), rel=1e-12)
    assert ours.count == whole.count == 2000


def test_bits_mixed_with_other_columns_in_one_buffer():
    y, s = _stream(1200, 5)
    m = sm.ROCAUC()
    m.update(y[:100], s[:100])  # learnt on the ordinary path
    m.update(y[100:300], s[100:300])  # buffered as bits
    m.update(y[300:500], s[300:500].float())  # float32 in the same buffer
    m.update(y[500:700].numpy(), s[500:700].float().numpy().astype(np.float64))
    for i in range(700, 720):
        m.update(int(y[i]), float(s[i]))  # scalar rows
    m.update(y[720:], s[720:])
    assert m._pending is not None  # the buffer holds all of these kinds at once
    whole = sm.ROCAUC().update(y.numpy(), s.float().numpy())
    assert m.to_bytes() == whole.to_bytes()


def test_strided_and_grad_tensors():
    y, s = _stream(2000, 6)
    leaf = s.float().requires_grad_(True)
    scores = (leaf * 1).to(torch.bfloat16)
    assert scores.requires_grad
    m = sm.ROCAUC()
    for a in range(0, 1000, 100):
        m.update(y[a : a + 100], scores[a : a + 100])
    doubled = torch.stack([s, s], dim=1).reshape(-1)[::2]  # not contiguous
    assert not doubled.is_contiguous()
    for a in range(1000, 2000, 100):
        m.update(y[a : a + 100], doubled[a : a + 100])
    assert m.to_bytes() == sm.ROCAUC().update(y.numpy(), s.float().numpy()).to_bytes()


@pytest.mark.parametrize(
    "bad, message",
    [(float("nan"), "y_score"), (1.5, "y_score"), (-0.25, "y_score")],
)
def test_values_outside_the_domain_fail_on_the_ordinary_path(bad, message):
    y, s = _stream(512, 7)
    m = sm.ROCAUC()
    m.update(y[:256], s[:256])
    m.update(y[:256], s[:256])
    before = m.to_bytes()
    broken = s[256:].clone()
    broken[17] = bad
    with pytest.raises(InputError, match=message):
        m.update(y[256:], broken)
    assert m.to_bytes() == before


def test_negative_zero_takes_the_ordinary_path_and_counts_as_zero():
    m = sm.ROCAUC()
    y = torch.tensor([0, 1, 1, 0])
    m.update(y, torch.tensor([0.0, 0.5, 0.75, 0.25], dtype=torch.bfloat16))
    m.update(y, torch.tensor([-0.0, 0.5, 0.75, 0.25], dtype=torch.bfloat16))
    whole = sm.ROCAUC().update([0, 1, 1, 0] * 2, [0.0, 0.5, 0.75, 0.25] * 2)
    assert m.to_bytes() == whole.to_bytes()


def test_bits_read_as_int16_where_torch_has_no_uint16():
    # torch before 2.3 has no uint16: the bits come as int16 and must be read unsigned, or a
    # negative score (sign bit set) would pass the [0, 1] check.
    from streammetrics import _small_columns

    y, s = _stream(600, 9)
    m = sm.ROCAUC()
    m.update(y[:100], s[:100])  # learns the columns; the tensor dtypes are looked up
    saved = _small_columns._TENSOR[2]
    _small_columns._TENSOR[2] = torch.int16
    try:
        m.update(y[100:300], s[100:300])
        broken = s[300:].clone()
        broken[5] = -0.5
        before = m.to_bytes()
        with pytest.raises(InputError, match="y_score"):
            m.update(y[300:], broken)
        assert m.to_bytes() == before
        m.update(y[300:], s[300:])
    finally:
        _small_columns._TENSOR[2] = saved
    assert m.to_bytes() == sm.ROCAUC().update(y.numpy(), s.float().numpy()).to_bytes()
