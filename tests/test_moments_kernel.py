"""The shifted moments kernel (batches of ``SHIFTED_MIN_ROWS`` rows or more) against the two-pass
kernel and against references where nothing cancels; finiteness checked on the result."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import pearsonr
from sklearn import metrics as skm

import streammetrics as sm
from streammetrics import regression as R
from streammetrics.states._shifted import SHIFTED_MIN_ROWS, ShiftedSums
from streammetrics.states.moments import Moments

PAIRS = [(0, 0), (1, 1), (0, 1), (2, 2)]


def _both(columns: list[np.ndarray], weights: np.ndarray | None) -> tuple[Moments, Moments]:
    """The shifted sums over uneven chunks, and the two-pass kernel over the whole batch."""
    block = Moments(3, PAIRS)
    sums = ShiftedSums(block, columns[0].shape[1])
    assert sums.usable
    for idx in np.array_split(np.arange(len(columns[0])), 3):
        sums.add([c[idx] for c in columns], None if weights is None else weights[idx], False)
    shifted = sums.result()
    assert shifted is not None
    return shifted, block.batch(columns, weights)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("width", [1, 3])
def test_shifted_kernel_agrees_with_two_pass(weighted: bool, width: int) -> None:
    rng = np.random.default_rng(0)
    n = 3 * SHIFTED_MIN_ROWS
    t = 1e6 + rng.normal(0, 1e-3, (n, width))
    p = t + rng.normal(0, 5e-4, (n, width))
    se = (t - p) ** 2
    w = rng.integers(0, 5, n).astype(float) if weighted else None
    shifted, two_pass = _both([t, p, se], w)
    np.testing.assert_allclose(shifted.mean, two_pass.mean, rtol=1e-13, atol=0)
    np.testing.assert_allclose(shifted.comoment, two_pass.comoment, rtol=1e-10, atol=0)
    assert shifted.weight == two_pass.weight


def test_constant_columns_stay_exact() -> None:
    n = 2 * SHIFTED_MIN_ROWS
    c = np.full((n, 1), 0.1 + 2.0**-40)
    shifted, _ = _both([c, c * 3, c * c], None)
    assert np.array_equal(shifted.hi, [[c[0, 0]], [c[0, 0] * 3], [c[0, 0] ** 2]])
    assert not shifted.lo.any()
    assert not shifted.comoment.any()


def test_a_far_first_value_takes_the_two_pass_kernel() -> None:
    """A first row 1e6 deviations from the mean would lose about 40 bits in the shifted sums:
    they refuse, and the update takes the two-pass kernel, which loses none."""
    rng = np.random.default_rng(1)
    n = 2 * SHIFTED_MIN_ROWS
    off = rng.normal(0, 1e-3, n)
    off[0] = 1e3
    t = (5e5 + off).reshape(-1, 1)
    sums = ShiftedSums(Moments(3, PAIRS), 1)
    sums.add([t, t, t], None, False)
    assert sums.result() is None
    m = R.R2Score().update(t[:, 0], t[:, 0] + 0.5)
    var = np.var(off)  # the offsets: nothing cancels
    np.testing.assert_allclose(m.moments.comoment_of(0, 0)[0] / n, var, rtol=1e-12)


def test_unpaired_groups_and_a_missing_variance() -> None:
    block = Moments(2, [(0, 1)])
    assert not ShiftedSums(block, 1).usable
    block = Moments(2, [(0, 0)])
    sums = ShiftedSums(block, 1)
    x = np.arange(10_000, dtype=float).reshape(-1, 1)
    sums.add([x, 2 * x], None, False)
    out = sums.result()
    assert out is not None
    np.testing.assert_allclose(out.mean[:, 0], [4999.5, 9999.0], rtol=1e-15)
    np.testing.assert_allclose(out.comoment[0, 0], np.var(x) * 10_000, rtol=1e-13)


def test_billion_values_in_large_batches() -> None:
    # The cancellation data of test_regression in batches large enough for the shifted kernel.
    rng = np.random.default_rng(7)
    off = rng.normal(0, 1e-3, 400_000)
    noise = rng.normal(0, 3e-4, 400_000)
    t0, p0 = off, off + noise + 0.2 * off
    t, p = 1e6 + t0, 1e6 + p0
    report = R.RegressionReport()
    r2 = R.R2Score()
    for idx in np.array_split(np.arange(len(t)), 4):
        report.update(t[idx], p[idx])
        r2.update(t[idx], p[idx])
    got = report.compute()
    np.testing.assert_allclose(got["r2"], skm.r2_score(t0, p0), rtol=1e-6)
    np.testing.assert_allclose(got["pearson"], pearsonr(t0, p0)[0], rtol=1e-6)
    np.testing.assert_allclose(got["mse"], skm.mean_squared_error(t0, p0), rtol=1e-6)
    np.testing.assert_allclose(r2.compute(), skm.r2_score(t0, p0), rtol=1e-6)


@pytest.mark.parametrize("make", [R.MeanSquaredError, R.MeanAbsoluteError, R.R2Score])
@pytest.mark.parametrize(
    "where, bad, name",
    [("t", np.nan, "y_true"), ("p", np.inf, "y_pred"), ("p", -np.inf, "y_pred")],
)
def test_non_finite_values_in_a_large_batch_are_refused(make, where, bad, name) -> None:
    """Unweighted batches are checked for finiteness on the moments they produce: a bad value
    anywhere still raises InputError naming its column, and the state does not change."""
    rng = np.random.default_rng(2)
    n = 100_000
    t, p = rng.normal(size=n), rng.normal(size=n)
    m = make().update(t, p)
    before = m.to_bytes()
    for at in (0, 5, n - 1):
        bad_t, bad_p = t.copy(), p.copy()
        (bad_t if where == "t" else bad_p)[at] = bad
        with pytest.raises(sm.InputError, match=f"{name}: values must be finite"):
            m.update(bad_t, bad_p)
        assert m.to_bytes() == before
    both = t.copy()
    both[3] = np.inf
    other = p.copy()
    other[3] = np.inf  # inf - inf: nan, still refused, naming the first column
    with pytest.raises(sm.InputError, match="y_true: values must be finite"):
        m.update(both, other)
    assert m.to_bytes() == before


def test_zero_weight_rows_with_nan_are_refused() -> None:
    m = R.MeanSquaredError().update([1.0, 2.0], [1.0, 2.5])
    before = m.to_bytes()
    with pytest.raises(sm.InputError, match="y_pred: values must be finite"):
        m.update(np.ones(10_000), np.full(10_000, np.nan), sample_weight=np.zeros(10_000))
    assert m.to_bytes() == before


def test_losses_are_summed_about_zero() -> None:
    """Non-negative losses skip the deviation pass (K = 0): same result as the two-pass kernel
    when their spread is of the order of their mean, and a refusal (then the two-pass kernel,
    exact zero variance) when they are constant."""
    rng = np.random.default_rng(4)
    n = 3 * SHIFTED_MIN_ROWS
    se = rng.normal(size=(n, 1)) ** 2
    block = Moments(1, [(0, 0)])
    sums = ShiftedSums(block, 1, frozenset({0}))
    sums.add([se], None, False)
    out = sums.result()
    assert out is not None
    ref = block.batch([se], None)
    np.testing.assert_allclose(out.mean, ref.mean, rtol=1e-14)
    np.testing.assert_allclose(out.comoment, ref.comoment, rtol=1e-12)
    constant = ShiftedSums(block, 1, frozenset({0}))
    constant.add([np.full((n, 1), 0.3)], None, False)
    assert constant.result() is None
    m = R.MeanSquaredError().update(np.full(n, 2.0), np.full(n, 2.3))
    assert m.moments.comoment_of(0, 0)[0] == 0.0
    np.testing.assert_allclose(m.compute(), (2.3 - 2.0) ** 2, rtol=1e-14)


@pytest.mark.parametrize(
    "make",
    [
        R.MeanSquaredError,
        R.RootMeanSquaredError,
        R.MeanAbsoluteError,
        R.MeanAbsolutePercentageError,
    ],
)
def test_one_loss_path_equals_the_general_path(make, monkeypatch) -> None:
    """The one-loss metrics' common batch (one column, no weights) takes a lean loop: the same
    pieces, values and sums as the general path, so the same bytes; constant losses still fall
    back to the two-pass kernel."""
    rng = np.random.default_rng(11)
    cases = []
    for n in (SHIFTED_MIN_ROWS, 100_003, 250_000):
        t = rng.normal(size=n) * 30 + 5
        cases.append((t, t + rng.normal(size=n)))
    t = rng.normal(size=50_000)
    t[::4] = 0.0  # MAPE's floor on |y_true|
    cases += [(t, t + rng.normal(size=50_000)), (t, t + 0.25)]

    def run() -> list[bytes]:
        out = []
        for t, p in cases:
            m = make().update(t, p).update(t[:5000], p[:5000])
            out.append(m.to_bytes())
        return out

    lean = run()
    original = ShiftedSums.__init__

    def general(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.one_loss = False

    monkeypatch.setattr(ShiftedSums, "__init__", general)
    original_init = make.__init__

    def no_lean(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self._one_loss = False

    monkeypatch.setattr(make, "__init__", no_lean)
    assert make()._one_loss is False
    assert run() == lean


def test_scalar_combine_equals_the_array_combine() -> None:
    """Blocks of one variable and one column combine on Python floats: bit for bit what the
    array arithmetic gives (checked against the same blocks widened to two equal columns)."""
    rng = np.random.default_rng(12)
    for _ in range(3000):
        wide, one = [], []
        for _ in range(2):
            w = float(rng.choice([1.0, rng.random() * 1e6, float(rng.integers(1, 10**9))]))
            mean = rng.normal() * 10 ** rng.uniform(-5, 8)
            low = mean * 1e-17 * rng.normal()
            co = abs(rng.normal()) * 10 ** rng.uniform(-3, 12)
            for width, out in ((2, wide), (1, one)):
                m = Moments(1, [(0, 0)])
                m.weight = w
                m.hi, m.lo = np.full((1, width), mean), np.full((1, width), low)
                m.comoment = np.full((1, width), co)
                out.append(m)
        a, b = wide[0].combined(wide[1]), one[0].combined(one[1])
        assert a.weight == b.weight
        for field in ("hi", "lo", "comoment"):
            assert getattr(a, field)[0, 0].tobytes() == getattr(b, field)[0, 0].tobytes()


def test_plus_values_equals_combining_a_block_of_them() -> None:
    """The one-loss update adds its batch's values without building a block: bit for bit what
    the array arithmetic gives when the same values are combined as two-column blocks, from an
    empty block, a block of weight zero and a full one."""
    rng = np.random.default_rng(5)

    def block(width: int, weight: float, mean: float, low: float, co: float) -> Moments:
        m = Moments(1, [(0, 0)])
        m.weight = weight
        m.hi, m.lo = np.full((1, width), mean), np.full((1, width), low)
        m.comoment = np.full((1, width), co)
        return m

    for _ in range(500):
        held = (
            float(rng.integers(1, 10**6)),
            rng.normal() * 1e3,
            rng.normal() * 1e-14,
            rng.random(),
        )
        values = (float(rng.integers(1, 10**6)), rng.normal() * 1e3, 0.0, rng.random() * 1e4)
        for start in (None, (0.0, 0.0, 0.0, 0.0), held):
            one = Moments(1, [(0, 0)]) if start is None else block(1, *start)
            wide = Moments(1, [(0, 0)]) if start is None else block(2, *start)
            got = one.plus_values(*values)
            want = wide.combined(block(2, *values))
            assert got.weight == want.weight
            for field in ("hi", "lo", "comoment"):
                assert getattr(got, field)[0, 0].tobytes() == getattr(want, field)[0, 0].tobytes()


def test_central_moments_of_one_column_merge_as_the_array_path() -> None:
    """Blocks one column wide (``R2Score`` of one output) shift their sums on Python floats:
    bit for bit what the array arithmetic gives, checked against the same data widened to two
    equal columns, over scales, offsets and weights far apart."""
    from streammetrics.regression._base import _SHAPE
    from streammetrics.states.central import CentralMoments

    rng = np.random.default_rng(3)
    for trial in range(1500):
        scale, off = 10.0 ** rng.uniform(-50, 30), 10.0 ** rng.uniform(-5, 25)
        parts = []
        for _ in range(2):
            n = int(rng.integers(1, 30))
            x = off + scale * rng.normal(size=(n, 1)) * rng.uniform(0.1, 10)
            y = x + scale * rng.normal(size=(n, 1))
            w = rng.random(n) * 10.0 ** rng.uniform(-20, 20) if trial % 3 else None
            parts.append(([x, y], w))
        one = [CentralMoments(2, _SHAPE).batch(cols, w) for cols, w in parts]
        two = []
        for block in one:  # the same sums, twice (a batch of two columns sums in its own order)
            wide = block.copy()
            wide.hi, wide.lo = np.hstack([block.hi] * 2), np.hstack([block.lo] * 2)
            wide.moments = np.hstack([block.moments] * 2)
            two.append(wide)
        a, b = one[0].merged(one[1]), two[0].merged(two[1])
        assert a.weight == b.weight
        for field in ("hi", "lo", "moments"):
            got, want = getattr(a, field)[:, 0], getattr(b, field)[:, 0]
            assert got.tobytes() == want.tobytes(), (trial, field)
