"""Input coercion: torch tensors of every dtype and device, iterators, mixed label types."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from sklearn.metrics import f1_score, mean_squared_error, roc_auc_score

import streammetrics as sm
from streammetrics._input_labels import as_labels
from streammetrics._inputs import as_scores
from streammetrics.classification._checks import checked_scores
from streammetrics.errors import InputError

FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "bool"]


def _torch():
    return pytest.importorskip("torch")


def _data(n: int = 500, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = np.clip(0.3 * y + rng.normal(0.35, 0.2, n), 0, 1)
    return y, s


# -- tensors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_float_tensor_scores_read_exactly(dtype):
    torch = _torch()
    y, s = _data()
    t = torch.tensor(s, dtype=getattr(torch, dtype))
    # what the tensor holds, widened exactly (float32 holds every bfloat16/float16 value)
    held = t.float().numpy().astype(np.float64) if dtype != "float64" else t.numpy()
    np.testing.assert_array_equal(as_scores(t, "y_score"), held)
    m = sm.ROCAUC(exact=True)
    m.update(torch.tensor(y), t)
    assert m.compute() == pytest.approx(roc_auc_score(y, held), abs=1e-12)
    r = sm.MeanSquaredError()
    r.update(torch.tensor(s, dtype=getattr(torch, dtype)), t)
    assert r.compute() == 0.0


@pytest.mark.parametrize("dtype", INTS)
def test_integer_and_bool_tensor_labels(dtype):
    torch = _torch()
    y, _ = _data()
    t = torch.tensor(y.astype(bool) if dtype == "bool" else y, dtype=getattr(torch, dtype))
    labels = as_labels(t, "y_true")
    assert labels.dtype == np.int64
    np.testing.assert_array_equal(labels, y)
    p = np.roll(y, 1)
    m = sm.F1()
    m.update(t, torch.tensor(p, dtype=getattr(torch, dtype)))
    assert m.compute() == pytest.approx(f1_score(y, p), abs=1e-12)


def test_grad_noncontiguous_and_zero_dim_tensors():
    torch = _torch()
    y, s = _data(300)
    base = torch.tensor(np.stack([s, s + 1]), dtype=torch.float32, requires_grad=True)
    column = base[0] * 1.0  # requires grad, part of a graph
    strided = torch.tensor(np.stack([s, s + 1], axis=1), dtype=torch.float32)[:, 0]  # stride 2
    assert column.requires_grad and not strided.is_contiguous()
    a, b = sm.MeanSquaredError(), sm.MeanSquaredError()
    a.update(torch.tensor(y, dtype=torch.float32), column)
    b.update(y.astype(np.float32), s.astype(np.float32))
    assert a == b
    c = sm.MeanSquaredError()
    c.update(torch.tensor(y, dtype=torch.float32), strided)
    assert c == b
    one = sm.MeanSquaredError()
    one.update(torch.tensor(1.0), torch.tensor(0.5, dtype=torch.bfloat16))
    assert one.count == 1 and one.compute() == 0.25


def test_tensor_metric_equals_numpy_metric_across_many_updates():
    torch = _torch()
    y, s = _data(2000, seed=3)
    a, b = sm.ROCAUC(), sm.ROCAUC()
    for lo in range(0, 2000, 256):
        a.update(torch.tensor(y[lo : lo + 256]), torch.tensor(s[lo : lo + 256]))
        b.update(y[lo : lo + 256], s[lo : lo + 256])
    assert a.to_bytes() == b.to_bytes()


def test_complex_tensor_refused_with_state_unchanged():
    torch = _torch()
    m = sm.MeanSquaredError()
    m.update([1.0], [2.0])
    before = m.to_bytes()
    with pytest.raises(InputError, match="y_pred"):
        m.update(torch.tensor([1.0]), torch.tensor([1 + 1j]))
    assert m.to_bytes() == before


def test_cuda_tensors_if_available():
    torch = _torch()
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    y, s = _data()
    a, b = sm.ROCAUC(), sm.ROCAUC()
    a.update(torch.tensor(y, device="cuda"), torch.tensor(s, device="cuda", dtype=torch.bfloat16))
    b.update(y, torch.tensor(s, dtype=torch.bfloat16))
    assert a == b


def test_torch_not_imported_without_tensors():
    code = (
        "import sys, numpy as np, streammetrics as sm\n"
        "m = sm.ROCAUC(); m.update([0, 1, 1], np.array([0.1, 0.8, 0.7]))\n"
        "f = sm.F1(average='macro'); f.update(['a', 'b'], ['a', 'a'])\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# -- iterators and unordered containers -------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: (v for v in [0, 1, 1]),
        lambda: iter([0, 1, 1]),
        lambda: map(int, "011"),
        lambda: {0, 1},
        lambda: {0: 1, 1: 0},
    ],
    ids=["generator", "iter", "map", "set", "dict"],
)
def test_iterators_and_sets_refused_naming_the_argument(make):
    m = sm.F1()
    m.update([0, 1, 1], [0, 1, 0])
    before = m.to_bytes()
    with pytest.raises(InputError, match="y_true"):
        m.update(make(), [0, 1, 1])
    with pytest.raises(InputError, match="y_score"):
        sm.ROCAUC().update([0, 1, 1], make())
    assert m.to_bytes() == before


def test_range_is_still_a_column():
    m = sm.MeanSquaredError()
    m.update(range(3), [0.0, 1.0, 2.0])
    assert m.compute() == 0.0


# -- mixed label types ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "labels",
    [["a", 1], ("a", 1.0), [1, "b", 2], [True, "x"], np.array(["a", 1], dtype=object)],
    ids=["list", "tuple", "middle", "bool", "object-array"],
)
def test_mixed_string_and_number_labels_refused(labels):
    with pytest.raises(
        InputError,
        match=r"y_true: mixes strings and numbers.*Mix of label input types \(string and number\)",
    ):
        as_labels(labels, "y_true")
    m = sm.F1(average="macro")
    m.update(["a", "b"], ["a", "a"])
    before = m.to_bytes()
    with pytest.raises(InputError, match="Mix of label input types"):
        m.update(labels, ["a"] * len(labels))
    assert m.to_bytes() == before


def test_pure_labels_still_read():
    np.testing.assert_array_equal(as_labels(["a", "b"], "y"), np.array(["a", "b"]))
    np.testing.assert_array_equal(as_labels(("1", "2"), "y"), np.array(["1", "2"]))
    np.testing.assert_array_equal(as_labels([1, 2.0], "y"), np.array([1, 2]))
    np.testing.assert_array_equal(as_labels(np.array([1, 2], dtype=object), "y"), [1, 2])
    np.testing.assert_array_equal(as_labels(np.array(["a"], dtype=object), "y"), ["a"])


def test_numbers_as_strings_are_not_a_mix_when_numpy_gets_a_string_array():
    # an explicit numpy string array is taken as it is (the check is for Python sequences only)
    np.testing.assert_array_equal(as_labels(np.array(["a", "1"]), "y"), ["a", "1"])


def test_mse_reference_on_tensors():
    torch = _torch()
    rng = np.random.default_rng(5)
    t, p = rng.normal(size=400), rng.normal(size=400)
    m = sm.MeanSquaredError()
    m.update(torch.tensor(t), torch.tensor(p))
    assert m.compute() == pytest.approx(mean_squared_error(t, p), rel=1e-12)


def test_probability_scores_check_in_one_pass_accepts_and_refuses_as_two_passes_do():
    """``checked_scores`` reads the float bits once (at most 1.0's bits: exactly +0.0 .. 1.0);
    anything else falls back to the min/max check, which accepts -0.0 and names the bad value.
    """
    one_below = np.nextafter(1.0, 0.0)
    accepted = [[0.0, 1.0], [-0.0, 0.5], [5e-324, one_below], [0.25, -0.0, 1.0], [1.0]]
    for column in accepted:
        x = checked_scores(np.array(column), "probability")
        np.testing.assert_array_equal(x, column)
    refused = {
        "-1e-300": [0.5, -1e-300],
        "1.0000000000000002": [0.5, np.nextafter(1.0, 2.0)],
        "-0.5": [-0.5, -0.0],
        "found nan": [0.1, np.nan],
        "found inf": [np.inf, 0.1],
        "found -inf": [0.2, -np.inf],
    }
    for message, column in refused.items():
        with pytest.raises(InputError, match=message):
            checked_scores(np.array(column), "probability")
    strided = np.array([0.5, 7.0, 0.25, -3.0])[::2]  # a view: its bits are read in place
    np.testing.assert_array_equal(checked_scores(strided, "probability"), [0.5, 0.25])
