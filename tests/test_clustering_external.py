"""External clustering indices against scikit-learn, the seed documents' examples, and scale."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from sklearn import metrics as skm
from sklearn.cluster import KMeans
from sklearn.datasets import load_digits, load_iris, load_wine
from sklearn.metrics.cluster._expected_mutual_info_fast import expected_mutual_information

import streammetrics as sm
from streammetrics import clustering as C
from streammetrics.clustering._table import _Table, expected_mutual_info
from streammetrics.errors import InputError
from streammetrics.states.contingency import ContingencyCounts

TOL = 1e-9


def _reference(a, b, average_method="arithmetic", beta=1.0) -> dict:
    """Every ClusterAgreement key from scikit-learn (or a direct formula where it has none)."""
    table = skm.cluster.contingency_matrix(a, b)
    r, c = linear_sum_assignment(table, maximize=True)
    (_, fp), (fn, tp) = skm.cluster.pair_confusion_matrix(a, b) // 2
    h, comp, v = skm.homogeneity_completeness_v_measure(a, b, beta=beta)
    return {
        "purity": table.max(axis=0).sum() / table.sum(),
        "mutual_info": skm.mutual_info_score(a, b),
        "nmi": skm.normalized_mutual_info_score(a, b, average_method=average_method),
        "ami": skm.adjusted_mutual_info_score(a, b, average_method=average_method),
        "rand_index": skm.rand_score(a, b),
        "adjusted_rand_index": skm.adjusted_rand_score(a, b),
        "jaccard": tp / (tp + fp + fn) if tp + fp + fn else 1.0,
        "fowlkes_mallows": skm.fowlkes_mallows_score(a, b),
        "accuracy": table[r, c].sum() / table.sum(),
        "homogeneity": h,
        "completeness": comp,
        "v_measure": v,
        "count": len(a),
        "n_clusters": len(np.unique(b)),
        "n_classes": len(np.unique(a)),
    }


def _assert_matches(got: dict, want: dict, tol: float = TOL) -> None:
    assert set(got) == set(want)
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=tol, abs=tol), key


def _streamed(make, a, b, rng, shards: int = 3):
    """Feed (a, b) in random batches to several shards, merge through bytes."""
    parts = [make() for _ in range(shards)]
    cuts = np.sort(rng.choice(np.arange(1, len(a)), size=min(20, len(a) - 1), replace=False))
    for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(a)], strict=True):
        parts[int(rng.integers(shards))].update(a[lo:hi], b[lo:hi])
    blobs = [p.to_bytes() for p in parts]
    return sum(sm.loads(blob) for blob in reversed(blobs))


SINGLE = {
    "purity": C.Purity,
    "mutual_info": C.MutualInfo,
    "nmi": C.NormalizedMutualInfo,
    "ami": C.AdjustedMutualInfo,
    "rand_index": C.RandIndex,
    "adjusted_rand_index": C.AdjustedRandIndex,
    "jaccard": C.ClusterJaccard,
    "fowlkes_mallows": C.FowlkesMallows,
    "accuracy": C.ClusterAccuracy,
    "homogeneity": C.Homogeneity,
    "completeness": C.Completeness,
    "v_measure": C.VMeasure,
}


# -- the seed documents' worked examples ----------------------------------------------------------

SEED_A = [1, 2, 1, 1, 1, 1, 1, 2, 2, 2, 2, 3, 1, 1, 3, 3, 3]
SEED_B = [1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3]
SEED_D = [1, 3, 1, 1, 1, 1, 1, 3, 3, 3, 3, 2, 1, 1, 2, 2, 2]


def test_seed_000_mutual_information_and_nmi() -> None:
    r = C.ClusterAgreement().update(SEED_A, SEED_B).compute()
    assert r["mutual_info"] / math.log(2) == pytest.approx(0.565445018842856, abs=1e-12)
    assert r["nmi"] == pytest.approx(0.3645617718571898, abs=1e-12)
    assert C.MutualInfo().update(SEED_A, SEED_B).compute() == r["mutual_info"]


def test_seed_000_ami_ri_ari_examples() -> None:
    assert C.AdjustedMutualInfo().update([0, 0, 1, 1], [0, 0, 1, 1]).compute() == 1.0
    assert C.AdjustedMutualInfo().update([0, 0, 1, 1], [1, 1, 0, 0]).compute() == 1.0
    assert C.AdjustedMutualInfo().update([0, 0, 0, 0], [0, 1, 2, 3]).compute() == 0.0
    assert C.RandIndex().update([0, 0, 1, 1], [1, 1, 0, 0]).compute() == 1.0
    assert round(C.RandIndex().update([0, 0, 1, 2], [0, 0, 1, 1]).compute(), 4) == 0.8333
    assert round(C.AdjustedRandIndex().update([0, 0, 1, 2], [0, 0, 1, 1]).compute(), 4) == 0.5714
    assert C.AdjustedRandIndex().update([0, 0, 0, 0], [0, 1, 2, 3]).compute() == 0.0


def test_seed_002_accuracy_under_best_mapping() -> None:
    assert C.ClusterAccuracy().update(SEED_B, SEED_A).compute() == pytest.approx(12 / 17)
    assert C.ClusterAccuracy().update(SEED_B, SEED_A).compute() == 0.7058823529411765
    assert C.ClusterAccuracy().update(SEED_A, SEED_D).compute() == 1.0


# -- scikit-learn on real and random data ---------------------------------------------------------


@pytest.mark.parametrize("loader", [load_iris, load_wine, load_digits])
def test_kmeans_on_real_data_matches_sklearn(loader) -> None:
    data = loader()
    k = len(np.unique(data.target)) + 1  # one cluster more than classes: a rectangular table
    pred = KMeans(k, n_init=4, random_state=0).fit_predict(data.data)
    rng = np.random.default_rng(1)
    got = _streamed(C.ClusterAgreement, data.target, pred, rng).compute()
    _assert_matches(got, _reference(data.target, pred))
    for key, cls in SINGLE.items():
        assert _streamed(cls, data.target, pred, rng).compute() == pytest.approx(
            got[key], rel=1e-12, abs=1e-12
        ), key


@pytest.mark.parametrize("seed", range(6))
def test_random_labels_after_many_updates(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 3000))
    a = rng.integers(0, int(rng.integers(1, 12)), n)
    b = (a * int(rng.integers(0, 3)) + rng.integers(0, int(rng.integers(1, 15)), n)) % 17
    _assert_matches(_streamed(C.ClusterAgreement, a, b, rng).compute(), _reference(a, b))


@pytest.mark.parametrize("method", ["arithmetic", "geometric", "min", "max"])
def test_average_methods(method: str) -> None:
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 6, 800), rng.integers(0, 4, 800)
    b[:400] = a[:400] % 4
    got = C.ClusterAgreement(average_method=method).update(a, b).compute()
    _assert_matches(got, _reference(a, b, average_method=method))
    assert C.NormalizedMutualInfo(average_method=method).update(a, b).compute() == got["nmi"]
    assert C.AdjustedMutualInfo(average_method=method).update(a, b).compute() == got["ami"]


@pytest.mark.parametrize("beta", [0.0, 0.5, 2.0])
def test_v_measure_beta(beta: float) -> None:
    rng = np.random.default_rng(4)
    a, b = rng.integers(0, 5, 500), rng.integers(0, 3, 500)
    want = skm.v_measure_score(a, b, beta=beta)
    assert C.VMeasure(beta=beta).update(a, b).compute() == pytest.approx(want, rel=1e-12)


def test_string_and_mixed_labels() -> None:
    rng = np.random.default_rng(5)
    names = np.array(["setosa", "versicolor", "virginica", "x"])
    a = names[rng.integers(0, 4, 600)]
    b = rng.integers(10, 15, 600)
    got = _streamed(C.ClusterAgreement, a, b, rng).compute()
    _assert_matches(got, _reference(a, b))
    # Object columns of Python strings, and predicted clusters as strings too.
    got2 = C.ClusterAgreement().update(a.tolist(), b.astype(str).astype(object)).compute()
    _assert_matches(got2, _reference(a, b.astype(str)))


def test_degenerate_tables_follow_sklearn() -> None:
    cases = [
        ([0], [0]),
        ([0, 0, 0], [1, 1, 1]),
        ([0, 1, 2], [0, 1, 2]),
        ([0, 1, 2, 3], [0, 0, 0, 0]),
        ([0, 0, 0, 0], [0, 1, 2, 3]),
        ([0, 0, 1, 1], [0, 1, 0, 1]),
        ([5, 5], [1, 2]),
    ]
    for a, b in cases:
        _assert_matches(C.ClusterAgreement().update(a, b).compute(), _reference(a, b))


def test_empty_metric_is_nan() -> None:
    r = C.ClusterAgreement().compute()
    assert r["count"] == 0 and r["n_clusters"] == 0
    assert all(math.isnan(r[k]) for k in ("purity", "ami", "accuracy", "adjusted_rand_index"))
    for cls in SINGLE.values():
        assert math.isnan(cls().compute())


# -- accuracy on rectangular tables ---------------------------------------------------------------


def _brute_accuracy(table: np.ndarray) -> float:
    r, c = table.shape
    best = 0
    if r <= c:
        for perm in itertools.permutations(range(c), r):
            best = max(best, sum(table[i, perm[i]] for i in range(r)))
    else:
        for perm in itertools.permutations(range(r), c):
            best = max(best, sum(table[perm[j], j] for j in range(c)))
    return best / table.sum()


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (2, 6)])
def test_accuracy_rectangular_matches_brute_force(shape) -> None:
    rng = np.random.default_rng(sum(shape))
    a = rng.integers(0, shape[0], 300)
    b = rng.integers(0, shape[1], 300)
    table = skm.cluster.contingency_matrix(a, b)
    assert C.ClusterAccuracy().update(a, b).compute() == pytest.approx(_brute_accuracy(table))


# -- exact pair counts and scale -------------------------------------------------------------------


def _exact_pairs(table: np.ndarray) -> tuple[Fraction, Fraction]:
    cells = [int(v) for v in table.ravel()]
    rows = [int(v) for v in table.sum(axis=1)]
    cols = [int(v) for v in table.sum(axis=0)]
    n = sum(cells)

    def c2(v: int) -> int:
        return v * (v - 1) // 2

    tp, sr, sc, total = sum(map(c2, cells)), sum(map(c2, rows)), sum(map(c2, cols)), c2(n)
    expected = Fraction(sr * sc, total)
    ari = (tp - expected) / (Fraction(sr + sc, 2) - expected)
    ri = Fraction(total - sr - sc + 2 * tp, total)
    return ari, ri


@pytest.mark.parametrize(
    "table",
    [
        np.array([[2**31 - 7, 2**30 + 3], [2**29 + 11, 2**30 - 5]]),  # 2**32 rows minus a few
        np.array([[2**31, 2**30], [2**29, 2**31 + 12345]]),  # beyond 2**32: Python ints
        np.array([[3_000_000_000, 17], [5, 1_000_000_000], [123_456_789, 2]]),
    ],
)
def test_pair_counts_do_not_overflow(table: np.ndarray) -> None:
    counts = ContingencyCounts(shared=False)
    counts.rows, counts.cols = np.arange(table.shape[0]), np.arange(table.shape[1])
    counts.table = table.astype(np.int64)
    t = _Table(counts)
    ari, ri = _exact_pairs(table)
    assert t.adjusted_rand_index() == pytest.approx(float(ari), rel=1e-15)
    assert t.rand_index() == pytest.approx(float(ri), rel=1e-15)
    tp, fp, fn, tn = t.pairs()
    n = int(table.sum())
    assert tp + fp + fn + tn == n * (n - 1) // 2


def test_ari_at_one_million_samples() -> None:
    # torchmetrics once returned 17.9 here (true value about 0.36): overflowing pair counts.
    rng = np.random.default_rng(7)
    n = 1_000_000
    a = rng.integers(0, 50, n)
    b = np.where(rng.random(n) < 0.6, a, rng.integers(0, 50, n))
    m = C.AdjustedRandIndex()
    for lo in range(0, n, 250_000):
        m.update(a[lo : lo + 250_000], b[lo : lo + 250_000])
    want = skm.adjusted_rand_score(a, b)
    assert 0.3 < want < 0.4
    assert m.compute() == pytest.approx(want, rel=1e-12)
    assert C.RandIndex().update(a, b).compute() == pytest.approx(skm.rand_score(a, b), rel=1e-12)


# -- expected mutual information -------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_expected_mutual_info_matches_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    # Skewed (Zipf-like) and flat marginals, some sizes repeated, some huge.
    a = np.maximum(1, (rng.pareto(1.2, int(rng.integers(2, 40))) * 20).astype(np.int64))
    n = int(a.sum())
    b = np.bincount(rng.integers(0, int(rng.integers(2, 50)), n))
    b = b[b > 0]
    table = np.zeros((len(a), len(b)), dtype=np.int64)
    # Any table with these marginals: the EMI depends only on the marginals.
    rows = np.repeat(np.arange(len(a)), a)
    cols = np.repeat(np.arange(len(b)), b)
    np.add.at(table, (rows, rng.permutation(cols)), 1)
    want = expected_mutual_information(table, n)
    assert expected_mutual_info(a, b) == pytest.approx(want, rel=1e-10, abs=1e-13)


def test_ami_many_labels_matches_sklearn() -> None:
    rng = np.random.default_rng(8)
    n = 30_000
    a = rng.integers(0, 300, n)
    b = np.where(rng.random(n) < 0.3, a, rng.integers(0, 300, n))
    got = _streamed(C.AdjustedMutualInfo, a, b, rng).compute()
    # AMI is a small difference of two O(1) quantities: compare absolutely, at 1e-9.
    assert got == pytest.approx(skm.adjusted_mutual_info_score(a, b), abs=1e-9)


def test_bad_configuration() -> None:
    with pytest.raises(sm.InputError, match="average_method"):
        C.NormalizedMutualInfo(average_method="harmonic")
    with pytest.raises(sm.InputError, match="beta"):
        C.VMeasure(beta=-1.0)
    with pytest.raises(sm.InputError, match="labels_pred"):
        C.Purity().update([0, 1], [0, 1, 2])


def test_ami_when_one_labelling_splits_the_other_into_singletons() -> None:
    # MI, EMI and the "min" normaliser are then equal: 0/0, which left rounding noise anywhere
    # in [-1, 2] (scikit-learn: -1.0 for the first case below; 0.8.3: 1.5). Now 1 with "min"
    # (the limit: every other refinement scores exactly 1 under it) and 0 with the others.
    rng = np.random.default_rng(11)
    cases = [[0, 0, 1, 1, 2, 2], [0, 0, 0, 1, 1, 1, 1], [0, 0, 1, 1]]
    cases += [rng.integers(0, rng.integers(2, 8), rng.integers(4, 60)) for _ in range(40)]
    for truth in cases:
        singletons = np.arange(len(truth))
        for method in ("min", "arithmetic", "geometric", "max"):
            for a, b in ((truth, singletons), (singletons, truth)):
                got = C.AdjustedMutualInfo(average_method=method).update(a, b).compute()
                if method == "min" and len(set(truth)) > 1:
                    assert got == 1.0
                else:
                    want = skm.adjusted_mutual_info_score(a, b, average_method=method)
                    assert got == pytest.approx(want, abs=1e-9)
    refined = C.AdjustedMutualInfo(average_method="min").update(
        [0, 0, 0, 1, 1, 1], [0, 0, 1, 2, 2, 3]
    )
    assert refined.compute() == pytest.approx(1.0, abs=1e-12)  # scikit-learn: 1.0 too


def test_labels_past_int64_are_refused_with_the_way_out() -> None:
    big = np.array([2**63, 2**63 + 1, 5], dtype=np.uint64)
    m = C.ClusterAgreement()
    with pytest.raises(InputError, match="as strings"):
        m.update(big, big)
    assert m.count == 0
    m.update(big.astype(str), big.astype(str))  # the way out the message gives
    assert m.compute()["adjusted_rand_index"] == 1.0


def test_v_measure_with_beta_zero_and_no_completeness_is_zero() -> None:
    # One class over two clusters: homogeneity 1, completeness 0, and beta = 0 left
    # (1 + beta) h c / (beta h + c) at 0 / 0 (ZeroDivisionError in 0.8.10, also after loads);
    # its limit as beta -> 0 is 0.
    m = C.VMeasure(beta=0.0).update([0, 0, 0, 0], [0, 1, 0, 1])
    assert m.compute() == 0.0
    assert sm.loads(m.to_bytes()).compute() == 0.0
    assert C.VMeasure(beta=1e-300).update([0, 0, 0, 0], [0, 1, 0, 1]).compute() == 0.0
    assert (
        C.ClusterAgreement(beta=0.0).update([0, 0, 0, 0], [0, 1, 0, 1]).compute()["v_measure"]
        == 0.0
    )
    # Elsewhere beta = 0 is the homogeneity, as the formula gives.
    y, c = [0, 0, 1, 1, 2], [0, 1, 1, 1, 2]
    assert C.VMeasure(beta=0.0).update(y, c).compute() == pytest.approx(
        skm.homogeneity_score(y, c), rel=1e-12
    )
