"""Internal clustering indices: Alink's published example, scikit-learn, samples and scale."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from sklearn import metrics as skm
from sklearn.cluster import KMeans
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine

import streammetrics as sm
from streammetrics import clustering as C
from streammetrics.states.centroids import ClusterMoments
from streammetrics.states.samples import BottomKSample, row_hash

DISTANCES = ["euclidean", "cosine", "cityblock"]


def _feed(make, X, labels, rng, shards: int = 3, batches: int = 15):
    parts = [make() for _ in range(shards)]
    cuts = np.sort(rng.choice(np.arange(1, len(X)), size=batches - 1, replace=False))
    for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(X)], strict=True):
        parts[int(rng.integers(shards))].update(X[lo:hi], labels[lo:hi])
    order = list(range(shards))
    random.Random(int(rng.integers(1 << 30))).shuffle(order)
    return sum(sm.loads(parts[i].to_bytes()) for i in order)


def _alink(X, labels, distance):
    """Alink's evaluator, written out directly (its ClusterEvaluationUtil / MetricsSummary)."""
    keys = np.unique(labels)
    pts = X / np.linalg.norm(X, axis=1, keepdims=True) if distance == "cosine" else X
    cents = np.array([pts[labels == k].mean(axis=0) for k in keys])
    cp = np.array(
        [
            cdist(X[labels == k], cents[i : i + 1], metric=distance).mean()
            for i, k in enumerate(keys)
        ]
    )
    cd = cdist(cents, cents, metric=distance)
    k = len(keys)
    db = np.mean([max((cp[i] + cp[j]) / cd[i, j] for j in range(k) if j != i) for i in range(k)])
    return {
        "compactness": cp.mean(),
        "separation": cd[np.triu_indices(k, 1)].mean(),
        "davies_bouldin": db,
    }


def _dunn(X, labels, distance):
    d = cdist(X, X, metric=distance)
    same = labels[:, None] == labels[None, :]
    return d[~same].min() / d[same].max()


# -- the seed's published example (Alink's EvalClusterBatchOp) -----------------------------------

SIX = np.array(
    [[0, 0, 0], [0.1, 0.1, 0.1], [0.2, 0.2, 0.2], [9, 9, 9], [9.1, 9.1, 9.1], [9.2, 9.2, 9.2]]
)


def test_seed_001_alink_example() -> None:
    r = C.ClusterGeometry().update(SIX, [0, 0, 0, 1, 1, 1]).compute()
    assert r["count"] == 6 and r["k"] == 2
    assert r["labels"].tolist() == [0, 1] and r["sizes"].tolist() == [3, 3]
    published = {
        "compactness": 0.11547005383792497,
        "davies_bouldin": 0.014814814814814791,
        "separation": 15.588457268119896,
        "ssb": 364.5,
        "ssw": 0.12,
        "calinski_harabasz": 12150.000000000042,
    }
    for key, value in published.items():
        assert r[key] == pytest.approx(value, rel=1e-9), key
    assert all(r["exact"].values())
    # The same through the single-metric classes, fed one row at a time, string labels.
    lab = ["a", "a", "a", "b", "b", "b"]
    for cls, key in (
        (C.Compactness, "compactness"),
        (C.DaviesBouldin, "davies_bouldin"),
        (C.Separation, "separation"),
        (C.CalinskiHarabasz, "calinski_harabasz"),
    ):
        m = cls()
        for x, y in zip(SIX, lab, strict=True):
            m.update(x[None, :], [y])
        assert m.compute() == pytest.approx(published[key], rel=1e-9), key


def test_result_keys_follow_the_contract() -> None:
    r = C.ClusterGeometry().update(SIX, [0, 0, 0, 1, 1, 1]).compute()
    assert set(r) == {
        "count",
        "k",
        "labels",
        "sizes",
        "compactness",
        "separation",
        "davies_bouldin",
        "calinski_harabasz",
        "ssb",
        "ssw",
        "dunn",
        "silhouette",
        "exact",
    }
    assert set(r["exact"]) == set(r) - {"count", "k", "labels", "sizes", "exact"}
    empty = C.ClusterGeometry().compute()
    assert set(empty) == set(r) and empty["count"] == 0 and math.isnan(empty["silhouette"])


# -- scikit-learn on real data --------------------------------------------------------------------


@pytest.mark.parametrize("loader", [load_iris, load_wine, load_breast_cancer, load_digits])
def test_kmeans_on_real_data_matches_sklearn(loader) -> None:
    X = loader().data
    k = {load_iris: 3, load_wine: 3, load_breast_cancer: 2, load_digits: 10}[loader]
    labels = KMeans(k, n_init=4, random_state=0).fit_predict(X)
    rng = np.random.default_rng(0)
    r = _feed(lambda: C.ClusterGeometry(sample_size=2000), X, labels, rng).compute()
    assert all(r["exact"].values())
    assert r["calinski_harabasz"] == pytest.approx(skm.calinski_harabasz_score(X, labels), rel=1e-9)
    assert r["davies_bouldin"] == pytest.approx(skm.davies_bouldin_score(X, labels), rel=1e-9)
    assert r["silhouette"] == pytest.approx(skm.silhouette_score(X, labels), rel=1e-9)
    assert r["sizes"].tolist() == np.bincount(labels).tolist()


@pytest.mark.parametrize("distance", DISTANCES)
def test_distances_on_iris(distance: str) -> None:
    X = load_iris().data
    labels = KMeans(3, n_init=4, random_state=1).fit_predict(X)
    rng = np.random.default_rng(1)
    r = _feed(lambda: C.ClusterGeometry(distance=distance), X, labels, rng).compute()
    want = skm.silhouette_score(X, labels, metric=distance)
    assert r["silhouette"] == pytest.approx(want, rel=1e-9)
    for key, value in _alink(X, labels, distance).items():
        assert r[key] == pytest.approx(value, rel=1e-9), key
    assert r["dunn"] == pytest.approx(_dunn(X, labels, distance), rel=1e-9)
    pts = X / np.linalg.norm(X, axis=1, keepdims=True) if distance == "cosine" else X
    assert r["calinski_harabasz"] == pytest.approx(
        skm.calinski_harabasz_score(pts, labels), rel=1e-9
    )


@pytest.mark.parametrize("seed", range(4))
def test_random_data_after_many_updates(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k, d, n = int(rng.integers(2, 7)), int(rng.integers(1, 6)), int(rng.integers(100, 1500))
    centres = rng.normal(0, 3, (k, d))
    labels = rng.integers(0, k, n)
    X = centres[labels] + rng.normal(size=(n, d)) + 1e4  # far from the origin on purpose
    names = np.array([f"c{i}" for i in range(k)])[labels]
    r = _feed(C.ClusterGeometry, X, names, rng, shards=4, batches=30).compute()
    # scikit-learn's Euclidean distances use |x|^2 - 2 x.y + |y|^2, which loses digits this far
    # from the origin; the indices are translation invariant, so give it centred data.
    Xc = X - X.mean(axis=0)
    assert r["calinski_harabasz"] == pytest.approx(
        skm.calinski_harabasz_score(Xc, labels), rel=1e-8
    )
    assert r["davies_bouldin"] == pytest.approx(skm.davies_bouldin_score(Xc, labels), rel=1e-9)
    assert r["silhouette"] == pytest.approx(skm.silhouette_score(Xc, labels), rel=1e-9)
    for key, value in _alink(X, labels, "euclidean").items():
        assert r[key] == pytest.approx(value, rel=1e-9), key


def test_single_metric_classes_agree_with_the_dict() -> None:
    rng = np.random.default_rng(9)
    X = rng.normal(size=(400, 3))
    labels = rng.integers(0, 4, 400)
    X[labels == 1] += 3
    full = C.ClusterGeometry(distance="cityblock").update(X, labels).compute()
    for cls, key in (
        (C.Compactness, "compactness"),
        (C.DaviesBouldin, "davies_bouldin"),
        (C.DunnIndex, "dunn"),
        (C.Silhouette, "silhouette"),
    ):
        m = cls(distance="cityblock").update(X, labels)
        assert m.compute() == full[key], key
        assert m.is_exact()
    assert C.Separation(distance="cityblock").update(X, labels).compute() == full["separation"]
    assert C.CalinskiHarabasz().update(X, labels).compute() == full["calinski_harabasz"]


# -- centers= (the monitoring case) ---------------------------------------------------------------


def test_centers_give_exact_compactness_and_db_beyond_the_sample() -> None:
    X = load_digits().data
    km = KMeans(10, n_init=2, random_state=0).fit(X)
    labels = km.predict(X)
    rng = np.random.default_rng(2)
    make = lambda: C.ClusterGeometry(centers=km.cluster_centers_, sample_size=20)  # noqa: E731
    r = _feed(make, X, labels, rng).compute()
    centres = km.cluster_centers_
    cp = np.array([np.linalg.norm(X[labels == i] - centres[i], axis=1).mean() for i in range(10)])
    cd = cdist(centres, centres)
    np.fill_diagonal(cd, np.inf)
    db = ((cp[:, None] + cp[None, :]) / cd).max(axis=1).mean()
    assert r["exact"]["compactness"] and r["exact"]["davies_bouldin"]
    assert not r["exact"]["silhouette"] and not r["exact"]["dunn"]
    assert r["compactness"] == pytest.approx(cp.mean(), rel=1e-12)
    assert r["davies_bouldin"] == pytest.approx(db, rel=1e-12)
    assert r["separation"] == pytest.approx(cd[np.isfinite(cd)].mean(), rel=1e-12)


def test_center_labels_and_bad_centers() -> None:
    centres = np.array([[0.0, 0.0], [5.0, 5.0]])
    m = C.ClusterGeometry(centers=centres, center_labels=["far", "near"])
    m.update([[0.0, 1.0], [5.0, 4.0]], ["far", "near"])
    assert m.compute()["compactness"] == pytest.approx(1.0)
    with pytest.raises(sm.InputError, match="labels"):
        m.update([[0.0, 1.0]], ["other"])
    with pytest.raises(sm.InputError, match="X"):
        m.update([[0.0, 1.0, 2.0]], ["far"])
    with pytest.raises(sm.InputError, match="center_labels"):
        C.ClusterGeometry(centers=centres, center_labels=["a"])
    with pytest.raises(sm.InputError, match="center_labels"):
        C.ClusterGeometry(center_labels=["a"])
    with pytest.raises(sm.InputError, match="distance"):
        C.ClusterGeometry(distance="chebyshev")
    with pytest.raises(sm.InputError, match="sample_size"):
        C.ClusterGeometry(sample_size=1)
    with pytest.raises(sm.InputError, match="centers"):
        C.ClusterGeometry(distance="cosine", centers=[[0.0, 0.0]])


def test_one_million_rows_db_exact_with_centers_and_estimated_within_one_percent() -> None:
    rng = np.random.default_rng(11)
    n, d, k = 1_000_000, 4, 8
    centres = rng.normal(0, 4, (k, d))
    labels = rng.integers(0, k, n)
    X = centres[labels] + rng.normal(size=(n, d)) * rng.uniform(0.5, 2.0, k)[labels, None]
    means = np.array([X[labels == i].mean(axis=0) for i in range(k)])
    want = skm.davies_bouldin_score(X, labels)
    with_centres, estimate = C.DaviesBouldin(centers=means), C.DaviesBouldin()
    for lo in range(0, n, 250_000):
        with_centres.update(X[lo : lo + 250_000], labels[lo : lo + 250_000])
        estimate.update(X[lo : lo + 250_000], labels[lo : lo + 250_000])
    assert with_centres.is_exact() and not estimate.is_exact()
    assert with_centres.compute() == pytest.approx(want, rel=1e-9)
    assert estimate.compute() == pytest.approx(want, rel=0.01)


# -- the deterministic sample ---------------------------------------------------------------------


def test_sample_is_split_invariant_and_flags_estimates() -> None:
    rng = np.random.default_rng(12)
    X = rng.normal(size=(3000, 2))
    labels = rng.integers(0, 3, 3000)
    X[labels == 2] += 4
    whole = C.ClusterGeometry(sample_size=64).update(X, labels)
    for seed in range(3):
        merged = _feed(
            lambda: C.ClusterGeometry(sample_size=64),
            X,
            labels,
            np.random.default_rng(seed),
            shards=5,
            batches=40,
        )
        assert merged.sample == whole.sample  # the sample: byte for byte
        assert merged.moments.counts.tolist() == whole.moments.counts.tolist()
    r = whole.compute()
    assert r["exact"]["ssb"] and r["exact"]["separation"]
    assert not r["exact"]["compactness"] and not r["exact"]["silhouette"]
    assert r["silhouette"] == pytest.approx(skm.silhouette_score(X, labels), abs=0.03)
    assert r["davies_bouldin"] == pytest.approx(skm.davies_bouldin_score(X, labels), rel=0.05)
    assert r["calinski_harabasz"] == pytest.approx(skm.calinski_harabasz_score(X, labels), rel=1e-9)


def test_bottom_k_keeps_the_smallest_distinct_hashes_with_their_counts() -> None:
    rng = np.random.default_rng(13)
    rows = np.round(rng.normal(size=(500, 3)), 1) + 0.0  # no -0.0: the block stores 0.0
    rows[100:150] = rows[0]  # 51 copies of one row
    keys = rng.integers(0, 4, 500)
    block = BottomKSample(40).batch(keys, rows)
    hashes = row_hash(rows)
    for code, key in enumerate(block.keys):
        distinct, counts = np.unique(hashes[keys == key], return_counts=True)
        assert np.array_equal(block.hashes[block.codes == code], distinct[:40])
        assert np.array_equal(block.mult[block.codes == code], counts[:40])
    assert block.seen.tolist() == np.bincount(keys).tolist()
    assert not block.complete().any()
    full = BottomKSample(1000).batch(keys, rows)
    assert full.complete().all() and full.held().tolist() == np.bincount(keys).tolist()
    # Complete as long as a key has at most ``capacity`` distinct rows, however many rows.
    few = np.repeat(np.eye(3), 400, axis=0)
    assert BottomKSample(3).batch(np.zeros(1200, dtype=np.int64), few).complete().all()
    assert not BottomKSample(2).batch(np.zeros(1200, dtype=np.int64), few).complete().any()
    # -0.0 and 0.0 are the same value: the same hash.
    assert row_hash(np.array([[0.0, 1.0]]) + 0.0)[0] == row_hash(np.array([[-0.0, 1.0]]) + 0.0)[0]


def test_sample_wire_is_validated() -> None:
    block = BottomKSample(5).batch(np.array([0, 0, 1]), np.array([[1.0], [2.0], [3.0]]))
    wire = block.to_wire()
    assert block.from_wire(wire) == block
    tampered = dict(wire, rows=wire["rows"] + 1.0)
    with pytest.raises(ValueError, match="hashes"):
        block.from_wire(tampered)
    with pytest.raises(ValueError, match="fewer rows than it must keep"):  # a row missing
        block.from_wire(dict(wire, seen=wire["seen"] + 1))
    small = BottomKSample(2).batch(np.array([0, 0, 0]), np.array([[1.0], [2.0], [3.0]]))
    assert not small.from_wire(small.to_wire()).complete().any()
    with pytest.raises(ValueError, match="more than its rows"):
        block.from_wire(dict(wire, seen=wire["seen"] - 1 + np.array([0, 1])))
    with pytest.raises(ValueError, match="count from 1"):
        block.from_wire(dict(wire, mult=wire["mult"] - 1))
    with pytest.raises(ValueError, match="twice"):  # one row kept twice, not once with count 2
        block.from_wire(
            dict(
                wire,
                codes=np.array([0, 0, 0, 1]),
                hashes=np.append(wire["hashes"][:1], wire["hashes"]),
                rows=np.vstack([wire["rows"][:1], wire["rows"]]),
                mult=np.ones(4, dtype=np.int64),
                seen=np.array([3, 1]),
            )
        )
    with pytest.raises(ValueError, match="capacity"):
        BottomKSample(1).from_wire(wire)
    # -0.0 hashes as 0.0, but no update writes it: bytes holding it are not canonical.
    zero = BottomKSample(5).batch(np.array([0]), np.array([[0.0, 1.0]])).to_wire()
    with pytest.raises(ValueError, match=r"-0\.0"):
        block.from_wire(dict(zero, rows=np.array([[-0.0, 1.0]])))


def test_moments_merge_is_numerically_careful() -> None:
    rng = np.random.default_rng(14)
    x = 1e8 + rng.normal(size=(20_000, 2))  # the naive sum-of-squares form loses every digit
    keys = np.zeros(20_000, dtype=np.int64)
    m = ClusterMoments()
    for lo in range(0, 20_000, 1000):
        m = m.merged(m.batch(keys[lo : lo + 1000], x[lo : lo + 1000]))
    want = ((x - x.mean(axis=0)) ** 2).sum()
    assert m.m2[0] == pytest.approx(want, rel=1e-6)
    assert m.counts.tolist() == [20_000]


def _ssb_reference(x: np.ndarray, labels: np.ndarray) -> float:
    """SSB from correctly rounded sums (``math.fsum``), one column."""
    keys = np.unique(labels)
    means = {c: math.fsum(x[labels == c, 0]) / np.sum(labels == c) for c in keys}
    grand = math.fsum(x[:, 0]) / len(x)
    return sum(np.sum(labels == c) * (means[c] - grand) ** 2 for c in keys)


def test_a_far_first_row_does_not_skew_a_batch() -> None:
    # A cluster's deviations were taken from its first row and added one by one: a first row
    # at 1e15 among 1e5 rows near 0 made their rounding one-sided (0.8.18: SSB off by 3e-6,
    # the same rows in reverse order right to 1e-16). A second, blocked pass corrects it.
    rng = np.random.default_rng(0)
    n = 100_000
    x = np.r_[[[1e15]], rng.normal(0, 1, (n, 1)), rng.normal(5, 1, (n, 1))]
    labels = np.r_[0, np.zeros(n, int), np.ones(n, int)]
    ref = _ssb_reference(x, labels)
    for order in (slice(None), slice(None, None, -1)):
        got = sm.ClusterGeometry().update(x[order], labels[order]).compute()["ssb"]
        assert got == pytest.approx(ref, rel=1e-12)
    ch = [
        sm.CalinskiHarabasz().update(x[o], labels[o]).compute()
        for o in (slice(None), slice(None, None, -1))
    ]
    assert ch[0] == pytest.approx(skm.calinski_harabasz_score(x, labels), rel=1e-12)
    assert ch[0] == pytest.approx(ch[1], rel=1e-12)


def test_a_light_far_shard_merges_from_the_heavy_mean() -> None:
    # One row at 1e12 merged with 2e5 rows near 0 of the same cluster: the merged mean stepped
    # from the left operand's, so with the light shard on the left the step's rounding (of
    # nearly all of delta) went into it (0.8.18: SSB off by 4.6e-12 one way, 4e-16 the other).
    rng = np.random.default_rng(0)
    n = 200_000
    light_x, light_l = np.array([[1e12]]), np.array([0])
    heavy_x = np.r_[rng.normal(0, 1, (n, 1)), rng.normal(5, 1, (n, 1))]
    heavy_l = np.r_[np.zeros(n, int), np.ones(n, int)]
    ref = _ssb_reference(np.r_[heavy_x, light_x], np.r_[heavy_l, light_l])
    light = sm.ClusterGeometry().update(light_x, light_l)
    heavy = sm.ClusterGeometry().update(heavy_x, heavy_l)
    for merged in (light + heavy, heavy + light, sum([light, heavy])):
        assert merged.compute()["ssb"] == pytest.approx(ref, rel=1e-14)


def test_bad_inputs_leave_state_and_name_the_argument() -> None:
    m = C.ClusterGeometry(distance="cosine").update([[1.0, 2.0]], [0])
    before = m.to_bytes()
    with pytest.raises(sm.InputError, match="X"):
        m.update([[0.0, 0.0]], [1])
    with pytest.raises(sm.InputError, match="X"):
        m.update([[1.0, 2.0, 3.0]], [1])
    with pytest.raises(sm.InputError, match="labels"):
        m.update([[1.0, 2.0]], ["a"])
    assert m.to_bytes() == before
    with pytest.raises(sm.IncompatibleStateError):
        C.ClusterGeometry().update([[1.0]], [0]).merge(
            C.ClusterGeometry().update([[1.0, 2.0]], [0])
        )


def test_fewer_than_two_clusters_is_nan() -> None:
    r = C.ClusterGeometry().update([[0.0], [1.0], [2.0]], [0, 0, 0]).compute()
    for key in ("separation", "davies_bouldin", "calinski_harabasz", "dunn", "silhouette"):
        assert math.isnan(r[key]), key
    assert r["compactness"] == pytest.approx(2 / 3)


@pytest.mark.parametrize("distance", ["euclidean", "cityblock", "cosine"])
def test_dunn_is_inf_for_clusters_of_one_repeated_point(distance) -> None:
    """docs/clustering.md: Dunn is inf when every cluster is a single repeated point. The
    cosine distance of equal rows came out as 2e-16 (``1 - cos`` in floating point), which
    made it about 1e15; small cosine distances are now recomputed from the unit rows."""
    x = np.array([[0.3, 0.7, 0.1]] * 3 + [[0.9, 0.2, 0.4]] * 3)
    labels = np.array([0, 0, 0, 1, 1, 1])
    m = C.DunnIndex(distance=distance).update(x, labels)
    assert m.compute() == math.inf
    assert sm.loads(m.to_bytes()).compute() == math.inf
    assert C.ClusterGeometry(distance=distance).update(x, labels).compute()["dunn"] == math.inf
    # Two clusters on one point: 0 / 0, not perfect separation (0.8.16 said inf; review).
    same = np.array([[0.3, 0.7, 0.1]] * 4)
    assert math.isnan(C.DunnIndex(distance=distance).update(same, [0, 0, 1, 1]).compute())


def test_cosine_distances_agree_with_scikit_learn_and_are_zero_for_equal_rows() -> None:
    from sklearn.metrics.pairwise import cosine_distances

    from streammetrics.clustering._distances import _pairwise

    rng = np.random.default_rng(3)
    a = rng.normal(size=(50, 8))
    b = np.vstack([a[:10], a[:5] * (1 + 1e-9 * rng.normal(size=(5, 1))), rng.normal(size=(20, 8))])
    b[-1] = 0.0  # a zero row: distance 1, as scikit-learn
    got = _pairwise(a, b, "cosine")
    np.testing.assert_allclose(got, cosine_distances(a, b), rtol=0, atol=1e-12)
    assert (got[np.arange(10), np.arange(10)] == 0.0).all()


def test_davies_bouldin_is_nan_with_as_many_clusters_as_rows() -> None:
    """docs/clustering.md: nan where an index needs 2 to n - 1 clusters (scikit-learn raises
    there); Davies-Bouldin gave 0.0 with every row its own cluster."""
    x = np.array([[0.0, 1.0], [2.0, 0.5], [1.0, 3.0]])
    labels = np.array([0, 1, 2])
    with pytest.raises(ValueError):
        skm.davies_bouldin_score(x, labels)
    assert math.isnan(C.DaviesBouldin().update(x, labels).compute())
    assert math.isnan(C.ClusterGeometry().update(x, labels).compute()["davies_bouldin"])
    assert C.DaviesBouldin().update(x, np.array([0, 1, 1])).compute() == pytest.approx(
        skm.davies_bouldin_score(x, [0, 1, 1])
    )


def test_dunn_of_singleton_clusters_agrees_between_the_index_and_the_geometry() -> None:
    # k == n: silhouette is undefined (it needs k <= n - 1), Dunn is not; ClusterGeometry
    # dropped Dunn with the silhouette (nan where DunnIndex gives inf, 0.8.3).
    from streammetrics.clustering import ClusterGeometry, DunnIndex

    for X, labels in (([[0.0], [1.0], [5.0]], [0, 1, 2]), ([[0.0], [0.0], [3.0]], [0, 0, 1])):
        alone = DunnIndex().update(X, labels).compute()
        both = ClusterGeometry().update(X, labels).compute()
        assert both["dunn"] == alone
    geometry = ClusterGeometry().update([[0.0], [1.0], [5.0]], [0, 1, 2]).compute()
    assert geometry["dunn"] == math.inf and math.isnan(geometry["silhouette"])


def test_clusters_of_one_repeated_point_have_no_spread_in_any_split() -> None:
    # A batch's mean was sum / count, not exactly the repeated value: an SSW of 4e-32, and a
    # Calinski-Harabasz index of 5.8e31 in one batch against 1.0 row by row.
    x = np.repeat([[0.1], [0.7]], 3, axis=0)
    labels = [0, 0, 0, 1, 1, 1]
    whole = C.CalinskiHarabasz().update(x, labels)
    rows = C.CalinskiHarabasz()
    for i in range(6):
        rows.update(x[i : i + 1], labels[i : i + 1])
    assert whole.compute() == rows.compute() == 1.0
    assert C.ClusterGeometry().update(x, labels).compute()["ssw"] == 0.0


@pytest.mark.parametrize("offset,tol", [(1e4, 1e-14), (1e8, 1e-14)])
def test_moments_far_from_the_origin_agree_across_splits(offset: float, tol: float) -> None:
    # A batch summed its rows as they are and kept each mean in one float64: at 1e8, splits
    # disagreed by 3e-8 in SSB (1.9e-4 at 1e12). Rows are now shifted by their cluster's first
    # row before they are summed, and each mean keeps a low part.
    rng = np.random.default_rng(0)
    n = 2000
    labels = rng.integers(0, 4, n)
    x = offset + labels[:, None] * 3.0 + rng.normal(size=(n, 3))
    whole = C.ClusterGeometry().update(x, labels).compute()
    merged = sum(
        (C.ClusterGeometry().update(x[i : i + 10], labels[i : i + 10]) for i in range(0, n, 10)),
        C.ClusterGeometry(),
    ).compute()
    centred = x - offset  # exact here: the reference without the offset's rounding
    ref = skm.calinski_harabasz_score(centred, labels)
    for key in ("ssb", "ssw", "calinski_harabasz", "davies_bouldin"):
        assert merged[key] == pytest.approx(whole[key], rel=tol)
    assert whole["calinski_harabasz"] == pytest.approx(ref, rel=tol)


@pytest.mark.parametrize("metric", [C.Silhouette, C.CalinskiHarabasz, C.DaviesBouldin, C.DunnIndex])
def test_cosine_distance_does_not_depend_on_the_rows_scale(metric) -> None:
    # Rows of 1e-200 were refused as "all zeros": their squared norms underflowed.
    x = np.array([[1.0, 0.1], [1.0, 0.2], [0.1, 1.0], [0.2, 1.0], [0.7, 0.6]])
    labels = [0, 0, 1, 1, 1]
    ref = metric(distance="cosine").update(x, labels).compute()
    for scale in (1e-200, 1e-300, 1e50):
        assert metric(distance="cosine").update(x * scale, labels).compute() == pytest.approx(
            ref, rel=1e-12
        )
    with pytest.raises(sm.InputError, match="row 1 is all zeros"):
        metric(distance="cosine").update(np.array([[1e-300, 0.0], [0.0, 0.0]]), [0, 1])


SCHEMA1 = Path(__file__).parent / "golden" / "schema1"


@pytest.mark.parametrize(
    "path",
    sorted(p for p in SCHEMA1.glob("*.bin") if not p.name.startswith("Decayed")),
    ids=lambda p: p.stem,
)
def test_schema_1_blobs_of_0_8_5_load_with_their_values(path: Path) -> None:
    # Schema 2 keeps each mean in two float64 parts; a 0.8.5 blob's low parts are 0.
    old = sm.loads(path.read_bytes())
    new = sm.loads((path.parent.parent / path.name).read_bytes())  # this version's golden
    assert type(old)._schema == 3 and old.count == new.count
    assert not old.moments.means_lo.any()
    assert sm.loads(old.to_bytes()) == old
    a, b = old.compute(), new.compute()
    values = a if isinstance(a, dict) else {"value": a}
    pinned = b if isinstance(b, dict) else {"value": b}
    for key, value in values.items():
        if isinstance(value, float):
            assert value == pytest.approx(pinned[key], rel=1e-12, nan_ok=True), key
    old.merge(new)  # old and new states merge
    assert old.count == 2 * new.count


def test_means_far_from_the_origin_keep_their_digits_in_two_parts() -> None:
    # One float64 per mean rounds it to 1.2e-4 at 1e12: 200 shards gave a Calinski-Harabasz
    # index 1.6e-4 from one batch's, and one batch 5e-5 from the exact value of these rows.
    from fractions import Fraction

    rng = np.random.default_rng(0)
    n = 2000
    labels = rng.integers(0, 2, n)
    x = (1e12 + labels * 3.0 + rng.normal(size=n))[:, None]
    whole = C.ClusterGeometry().update(x, labels).compute()
    merged = sum(
        (C.ClusterGeometry().update(x[i : i + 10], labels[i : i + 10]) for i in range(0, n, 10)),
        C.ClusterGeometry(),
    ).compute()
    rows = [Fraction(v) for v in x[:, 0]]
    grand = sum(rows) / n
    ssw = ssb = Fraction(0)
    for k in (0, 1):
        xs = [v for v, lab in zip(rows, labels, strict=True) if lab == k]
        mean = sum(xs) / len(xs)
        ssw += sum((v - mean) ** 2 for v in xs)
        ssb += len(xs) * (mean - grand) ** 2
    for got in (whole, merged):
        assert got["ssb"] == pytest.approx(float(ssb), rel=1e-9)
        assert got["ssw"] == pytest.approx(float(ssw), rel=1e-9)
        assert got["calinski_harabasz"] == pytest.approx(float(ssb * (n - 2) / ssw), rel=1e-9)


def test_clusters_seen_on_one_side_of_a_merge_keep_their_low_parts() -> None:
    # A cluster absent from one operand took mean_a + delta, which rounded its low part away:
    # shards of one cluster each, merged, were 9e-6 off at an offset of 1e12.
    rng = np.random.default_rng(0)
    n = 400
    labels = rng.integers(0, 4, n)
    x = 1e12 + labels[:, None] * 3.0 + rng.normal(size=(n, 2))
    whole = C.ClusterGeometry().update(x, labels)
    apart = [C.ClusterGeometry().update(x[labels == k], labels[labels == k]) for k in range(4)]
    merged = C.ClusterGeometry().merge(*apart)
    halves = C.ClusterGeometry().update(x[labels < 2], labels[labels < 2])
    halves.update(x[labels >= 2], labels[labels >= 2])
    for other in (merged, halves):
        assert np.array_equal(other.moments.means, whole.moments.means)
        assert np.array_equal(other.moments.means_lo, whole.moments.means_lo)
        got, want = other.compute(), whole.compute()
        for key in ("ssb", "ssw", "calinski_harabasz", "davies_bouldin"):
            assert got[key] == pytest.approx(want[key], rel=1e-13)


def test_davies_bouldin_skips_clusters_whose_centroids_coincide() -> None:
    """Clusters with equal means (small integer data meets them often) are at distance 0, a
    pair scikit-learn skips. 0.8.8's two-part means put them 1e-16 apart, depending on the
    order of the rows: Davies-Bouldin came out ~1e16 (found by a review, 0.8.9)."""
    X = np.array([[2.0], [1.0], [0.0], [1.0], [3.0], [1.0], [0.0]])  # {0, 3, 1}, {2, 1, 1}: 4/3
    labels = np.array([2, 2, 0, 2, 0, 0, 1])
    assert C.DaviesBouldin().update(X, labels).compute() == pytest.approx(
        skm.davies_bouldin_score(X, labels), rel=1e-12
    )
    rng = np.random.default_rng(7)
    seen = 0
    for _ in range(300):
        n = int(rng.integers(6, 12))
        X = rng.integers(0, 4, (n, int(rng.integers(1, 3)))).astype(np.float64)
        labels = rng.integers(0, 3, n)
        if len(np.unique(labels)) < 2 or len(np.unique(labels)) > n - 1:
            continue
        means = np.array([X[labels == k].mean(axis=0) for k in np.unique(labels)])
        seen += len(np.unique(means, axis=0)) < len(means)
        want = skm.davies_bouldin_score(X, labels)
        a, b = C.DaviesBouldin(), C.DaviesBouldin()
        for i in range(n):  # rows alternated over two shards, merged through bytes
            (a if i % 2 else b).update(X[i : i + 1], labels[i : i + 1])
        for got in (C.DaviesBouldin().update(X, labels), sm.loads((a + b).to_bytes())):
            assert got.compute() == pytest.approx(want, rel=1e-9, abs=1e-12)
    assert seen >= 5  # the case under test did occur
    # Equal means at zero: the rounding follows the rows summed (+-0.1), not the means (0).
    X = np.array([[-0.1], [0.1]] * 5 + [[0.0], [0.1]])
    labels = np.array([0, 0] + [1] * 8 + [2, 2])
    want = skm.davies_bouldin_score(X, labels)
    for _ in range(50):
        parts = np.array_split(rng.permutation(len(X)), int(rng.integers(1, 5)))
        m = C.DaviesBouldin()
        for part in parts:
            m.update(X[part], labels[part])
        assert m.compute() == pytest.approx(want, rel=1e-9)
    A = rng.normal(size=(6, 8))
    A -= A.mean(axis=0)  # two clusters of the same centred rows, a third elsewhere
    X = np.r_[A, A[::-1], rng.normal(size=(6, 8)) + 3]
    labels = np.repeat([0, 1, 2], 6)
    m = C.DaviesBouldin()
    for part in np.array_split(rng.permutation(len(X)), 3):
        m.update(X[part], labels[part])
    # (scikit-learn's own float means of the two clusters differ in their last bits here,
    # and it gives ~1e16: the exact value skips the pair at distance 0.)
    centres = [A.mean(axis=0), A.mean(axis=0), X[12:].mean(axis=0)]
    cp = [np.linalg.norm(X[6 * i : 6 * i + 6] - c, axis=1).mean() for i, c in enumerate(centres)]
    d = np.linalg.norm(centres[0] - centres[2])
    ratios = [(cp[0] + cp[2]) / d, (cp[1] + cp[2]) / d]
    assert m.compute() == pytest.approx((ratios[0] + ratios[1] + max(ratios)) / 3, rel=1e-9)
    # Far from the origin (microsecond timestamps) real distances stay: a first tolerance of
    # 16 eps times the means' size zeroed a distance of 4 at 1.7e15 (the second diff review).
    X = (1.7e15 + np.array([0.0, 2.0, 4.0, 6.0, 100.0, 102.0]))[:, None]
    labels = np.array([0, 0, 1, 1, 2, 2])  # means +1, +5, +101; each cluster's cp is 1
    want = (0.5 + 0.5 + 2 / 96) / 3
    assert C.DaviesBouldin().update(X, labels).compute() == pytest.approx(want, rel=1e-12)


def test_no_public_class_shows_a_private_parameter() -> None:
    """A review of 0.8.9 found ``_options`` in the signatures of five clustering classes (an
    acceptance check comparing signatures flagged it); no public class has one now."""
    import inspect

    from tests.harness import public_metric_classes

    shown = {
        cls.__name__: [p for p in inspect.signature(cls).parameters if p.startswith("_")]
        for cls in public_metric_classes()
    }
    assert not {name: ps for name, ps in shown.items() if ps}


def test_cosine_centre_that_cancels_is_zero_in_every_order_and_split() -> None:
    # Three unit rows at 120 degrees cancel: their mean is rounding residue, whose direction
    # depended on the order of the rows (separation 1.0 in one order, 1.71 in another, 1.32
    # when split and merged, in 0.8.10). It is read as a zero row: distance 1 to everything.
    ang = np.deg2rad([0, 120, 240])
    X = np.r_[np.c_[np.cos(ang), np.sin(ang)], [[1.0, 0.1], [1.0, -0.1], [0.9, 0.0]]]
    lab = np.array([0, 0, 0, 1, 1, 1])
    results = []
    for order in ([0, 1, 2, 3, 4, 5], [2, 1, 0, 3, 4, 5], [1, 2, 0, 5, 4, 3]):
        results.append(C.ClusterGeometry(distance="cosine").update(X[order], lab[order]))
    a = C.ClusterGeometry(distance="cosine").update(X[:2], lab[:2])
    b = C.ClusterGeometry(distance="cosine").update(X[2:], lab[2:])
    results += [a + b, b + a]
    first = results[0].compute()
    assert first["separation"] == 1.0
    for m in results[1:]:
        got = m.compute()
        for key in ("separation", "davies_bouldin", "compactness"):
            assert got[key] == pytest.approx(first[key], rel=1e-12), key


def test_one_sample_as_its_row_beside_a_scalar_label() -> None:
    # 0.8.11 read a 1-D row beside one label as d rows of one column: "columns differ in
    # length: X has 8, labels has 1". One sample is its row, as MulticlassROCAUC reads it.
    rng = np.random.default_rng(7)
    X, labels = rng.normal(size=(60, 8)), rng.integers(0, 3, 60)
    for make in (sm.ClusterGeometry, C.CalinskiHarabasz):
        one, batch = make(), make()
        for row, label in zip(X, labels.tolist(), strict=True):
            one.update(row, label)
            batch.update(row[None, :], [label])
        # (one sample per call waits in the buffer: the moments agree to rounding)
        assert one.count == batch.count
        got, want = one.compute(), batch.compute()
        if isinstance(want, dict):
            got, want = got["calinski_harabasz"], want["calinski_harabasz"]
        assert got == pytest.approx(want, rel=1e-12)
        named = make().update(list(X[0]), "a").update(X[1], np.str_("b"))
        assert named.count == 2
    with pytest.raises(sm.InputError, match="columns differ in length"):
        sm.ClusterGeometry().update(X[0], [1, 2])
