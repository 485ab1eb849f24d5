"""Repeated rows in the internal clustering indices: the sample keeps each distinct row once
with its count (schema 3, 0.8.17).

Up to 0.8.16 it kept rows, and identical rows (which share a hash) were kept or dropped
together: a cluster made of few distinct rows was sampled as clumps of copies, and CP,
Davies-Bouldin and silhouette came out biased (integer features: 25% too high) though the
sample could have held every distinct row. Now a cluster with at most ``sample_size`` distinct
rows is exact at any size, the sample stays split-invariant byte for byte (counts add), and
0.8.16's bytes load with the values they gave."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from sklearn import metrics as skm

import streammetrics as sm

SCHEMA2 = Path(__file__).parent / "golden" / "schema2"


def _compactness(x: np.ndarray, labels: np.ndarray, distance: str = "euclidean") -> float:
    """CP written out: the mean over clusters of the mean distance of its rows to its centre
    (the mean row; for the cosine distance, Alink's mean of the unit rows)."""
    if distance == "cosine":
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
    per = []
    for k in np.unique(labels):
        rows = x[labels == k]
        per.append(cdist(rows, rows.mean(axis=0)[None, :], metric=distance).mean())
    return float(np.mean(per))


def _integer_rows(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Rounded Gaussians in three clusters: a few hundred distinct rows, each many times."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    centres = np.array([[0.0, 0.0], [6.0, 1.0], [2.0, 7.0]])
    return np.round(centres[labels] + 1.7 * rng.normal(size=(n, 2))), labels


def _all_exact(m: sm.Metric) -> bool:
    return all(m.compute()["exact"].values())


def _shards(make, x, labels, pieces: int, seed: int) -> sm.Metric:
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.choice(np.arange(1, len(x)), size=pieces - 1, replace=False))
    parts = [
        make().update(x[lo:hi], labels[lo:hi])
        for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, len(x)], strict=True)
    ]
    rng.shuffle(parts)
    return make().merge(*(sm.loads(p.to_bytes()) for p in parts))


def test_two_valued_cluster_is_exact() -> None:
    # 0.8.16 sampled the second cluster as 1,024 copies of one of its two rows: CP 3.3x.
    x = np.vstack([np.zeros((1800, 2)), np.tile([10.0, 0.0], (200, 1)), 40 + np.eye(2)])
    labels = np.r_[np.zeros(2000, dtype=int), [1, 1]]
    m = sm.ClusterGeometry(sample_size=16)
    for lo in range(0, len(x), 97):
        m.update(x[lo : lo + 97], labels[lo : lo + 97])
    got = m.compute()
    assert all(got["exact"].values())
    assert got["compactness"] == pytest.approx(_compactness(x, labels), rel=1e-12)
    assert got["davies_bouldin"] == pytest.approx(skm.davies_bouldin_score(x, labels), rel=1e-12)
    assert got["silhouette"] == pytest.approx(skm.silhouette_score(x, labels), rel=1e-12)


@pytest.mark.parametrize("distance", ["euclidean", "cityblock", "cosine"])
def test_integer_features_are_exact_while_distinct_rows_fit(distance: str) -> None:
    x, labels = _integer_rows(0, 6000)
    x = x + 20.0 if distance == "cosine" else x  # no all-zero rows
    distinct = max(len(np.unique(x[labels == k], axis=0)) for k in range(3))
    assert distinct < 200 < 2000  # far more rows than distinct rows per cluster
    m = _shards(lambda: sm.ClusterGeometry(distance=distance, sample_size=200), x, labels, 7, 1)
    got = m.compute()
    assert _all_exact(m)
    assert got["compactness"] == pytest.approx(_compactness(x, labels, distance), rel=1e-10)
    want_sil = skm.silhouette_score(x, labels, metric=distance)
    assert got["silhouette"] == pytest.approx(want_sil, rel=1e-10)
    if distance == "euclidean":
        want_db = skm.davies_bouldin_score(x, labels)
        assert got["davies_bouldin"] == pytest.approx(want_db, rel=1e-10)


def test_sample_of_repeated_rows_is_split_invariant_byte_for_byte() -> None:
    x, labels = _integer_rows(2, 4000)
    make = lambda: sm.ClusterGeometry(sample_size=24)  # noqa: E731  (fewer than the distinct)
    whole = make().update(x, labels)
    assert not _all_exact(whole) and (whole.sample.mult > 1).any()
    for pieces, seed in ((2, 0), (9, 1), (40, 2)):
        merged = _shards(make, x, labels, pieces, seed)
        assert merged.sample == whole.sample
        assert merged.sample.to_wire()["mult"].tolist() == whole.sample.mult.tolist()
    one_at_a_time = make()
    for row, label in zip(x[:500], labels[:500], strict=True):
        one_at_a_time.update(row, int(label))
    assert one_at_a_time.sample == make().update(x[:500], labels[:500]).sample


def test_estimates_beyond_the_sample_are_unbiased_on_repeated_rows() -> None:
    # Rounded Gaussians with more distinct rows per cluster (about 85) than the sample keeps
    # (64): 0.8.16's CP and Davies-Bouldin were 25% too high on such data; the count-weighted
    # estimate is centred on the true value. The sample is a function of the rows, so data on
    # one integer grid would draw the same subset in every seed: each seed shifts the grid.
    errors: dict[str, list[float]] = {"compactness": [], "davies_bouldin": [], "silhouette": []}
    for seed in range(24):
        x, labels = _integer_rows(100 + seed, 3000)
        x = np.round(x * 3.0) + np.array([1000.0, -700.0]) * seed
        got = sm.ClusterGeometry(sample_size=64).update(x, labels).compute()
        assert not got["exact"]["compactness"]
        want = {
            "compactness": _compactness(x, labels),
            "davies_bouldin": skm.davies_bouldin_score(x, labels),
            "silhouette": skm.silhouette_score(x, labels),
        }
        for key, value in want.items():
            errors[key].append(got[key] / value - 1.0)
    for key, errs in errors.items():
        assert abs(np.mean(errs)) < 0.03, key
        assert np.max(np.abs(errs)) < 0.12, key


#: The golden layouts of the internal indices as 0.8.16 wrote them (schema 2), bare and wrapped.
GEOMETRY_0_8_16 = [
    "CalinskiHarabasz",
    "ClusterGeometry",
    "ClusterGeometry-centers",
    "ClusterGeometry-cosine-str",
    "ClusterGeometry-small-sample",
    "Compactness-cityblock",
    "DaviesBouldin-small-sample",
    "DunnIndex",
    "MetricCollection_CalinskiHarabasz_",
    "Separation-centers",
    "Silhouette-small-sample",
    "Sliced_CalinskiHarabasz_",
    "SlidingWindow_CalinskiHarabasz_",
    "TumblingWindows_CalinskiHarabasz_",
]


@pytest.mark.parametrize("name", GEOMETRY_0_8_16)
def test_schema_2_blobs_of_0_8_16_load_to_this_versions_bytes(name: str) -> None:
    # Their rows do not repeat within a cluster: every count is 1, and the state is the one
    # this version builds from the same updates, byte for byte (tests/test_golden.py).
    old = sm.loads((SCHEMA2 / f"{name}.bin").read_bytes())
    assert old.to_bytes() == (SCHEMA2.parent / f"{name}.bin").read_bytes()


def test_a_0_8_16_sample_of_copies_collapses_to_counts() -> None:
    # 300 rows of rounded Gaussians, sample_size 16, written by 0.8.16: each cluster's sample
    # was 16 rows, some of them copies. Loaded, each run of copies is one row with its count.
    # The exact values and the sample's silhouette and Dunn are what 0.8.16 computed; CP and
    # Davies-Bouldin, estimated by this version's regression estimate, come closer to the
    # data's true values, and a state this version builds from the same rows closer still.
    old = sm.loads((SCHEMA2 / "ClusterGeometry-copies.bin").read_bytes())
    s = old.sample
    assert s.held().tolist() == [16, 16] and s.seen.tolist() == [199, 101]
    assert (s.mult > 1).any() and len(np.unique(s.rows, axis=0)) == len(s.rows)
    assert not _all_exact(old)
    got = old.compute()
    pinned_0_8_16 = {
        "calinski_harabasz": 116.01151119825282,
        "dunn": 0.2857142857142857,
        "silhouette": 0.526086568686588,
    }
    for key, value in pinned_0_8_16.items():
        assert got[key] == pytest.approx(value, rel=1e-12), key
    rng = np.random.default_rng(5)  # the rows the blob was built from
    x = np.round(rng.normal(size=(300, 2)) * 1.5)
    labels = (x[:, 0] > 0).astype(int)
    true = {
        "compactness": _compactness(x, labels),
        "davies_bouldin": skm.davies_bouldin_score(x, labels),
    }
    estimated_0_8_16 = {"compactness": 2.1130130689406146, "davies_bouldin": 1.7686429329356725}
    fresh = sm.ClusterGeometry(sample_size=16).update(x, labels).compute()
    for key, value in true.items():
        assert abs(got[key] - value) < abs(estimated_0_8_16[key] - value), key
        assert fresh[key] == pytest.approx(value, rel=0.02), key
    assert fresh["silhouette"] == pytest.approx(skm.silhouette_score(x, labels), abs=0.02)
    back = sm.loads(old.to_bytes())
    assert back == old and back.to_bytes() == old.to_bytes()
    # It merges with this version's states, and stays a valid state.
    x, labels = _integer_rows(3, 500)
    both = old.merge(sm.ClusterGeometry(sample_size=16).update(x, (labels > 0).astype(int)))
    assert both.count == 800 and sm.loads(both.to_bytes()) == both
    assert (both.sample.held() <= both.sample.seen).all()


def test_older_and_newer_forms_are_held_to_their_own_rules() -> None:
    from streammetrics import _codec

    blob = (SCHEMA2 / "ClusterGeometry-copies.bin").read_bytes()
    tree = _codec.decode(blob)
    assert tree["schema"] == 2 and "mult" not in tree["state"]["sample"]

    def forged(schema: int, **sample: object) -> bytes:
        return _codec.encode(
            {
                **tree,
                "schema": schema,
                "state": {**tree["state"], "sample": {**tree["state"]["sample"], **sample}},
            }
        )

    s = tree["state"]["sample"]
    # 0.8.16 kept min(seen, capacity) rows per key: one row fewer was refused then, and now.
    with pytest.raises(sm.StateDecodeError, match="min"):
        sm.loads(forged(2, codes=s["codes"][1:], hashes=s["hashes"][1:], rows=s["rows"][1:]))
    # The older form passed off as the current schema (no counts): refused.
    with pytest.raises(sm.StateDecodeError, match="mult"):
        sm.loads(forged(3))
    # The current form under the older schema: refused (it is read as the older form).
    current = _codec.decode(sm.loads(blob).to_bytes())["state"]["sample"]
    with pytest.raises(sm.StateDecodeError):
        sm.loads(forged(2, **current))


@pytest.mark.parametrize("scale", [1.0, 1e-3, 1e6])
def test_cosine_compactness_and_davies_bouldin_are_exact_beyond_the_sample(scale: float) -> None:
    # Rows to their centre (the mean of the unit rows c): the mean cosine distance is
    # 1 - |c|, which the moments give as (m2 / n) / (1 + |c|); 0.8.16 estimated it from the
    # sample once a cluster outgrew it.
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 4, 6000)
    axes = np.array([[1.0, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]])
    x = (axes[labels] * 5 + rng.normal(size=(6000, 3))) * scale
    small = sm.ClusterGeometry(distance="cosine", sample_size=8)
    for lo in range(0, 6000, 700):
        small.update(x[lo : lo + 700], labels[lo : lo + 700])
    got = small.compute()
    assert got["exact"]["compactness"] and got["exact"]["davies_bouldin"]
    assert not got["exact"]["silhouette"]  # (the pairs still come from the sample)
    assert got["compactness"] == pytest.approx(_compactness(x, labels, "cosine"), rel=1e-12)
    whole = sm.ClusterGeometry(distance="cosine", sample_size=10_000).update(x, labels).compute()
    assert whole["exact"]["davies_bouldin"]
    assert got["davies_bouldin"] == pytest.approx(whole["davies_bouldin"], rel=1e-12)


@pytest.mark.parametrize("distance", ["euclidean", "cityblock"])
def test_compactness_beyond_the_sample_is_a_regression_estimate(distance: str) -> None:
    # The mean distance to the centroid, corrected by the exact mean squared distance the
    # moments hold (a regression estimate): over 30 seeds of 4-D Gaussian clusters at a
    # sample of 64, the root-mean-square error of CP against the true value is under 2.5%
    # (the plain count-weighted mean: 4.6-4.8%), and centred.
    errors = []
    for seed in range(30):
        rng = np.random.default_rng(seed)
        labels = rng.integers(0, 4, 20_000)
        x = rng.normal(size=(20_000, 4)) + labels[:, None] * 3.0
        m = sm.ClusterGeometry(distance=distance, sample_size=64).update(x, labels)
        per = np.array(
            [
                cdist(x[labels == k], x[labels == k].mean(axis=0)[None, :], distance).mean()
                for k in range(4)
            ]
        )
        got, _ = m._cp_per_cluster()
        errors.extend(got / per - 1.0)
    errors = np.array(errors)
    assert np.sqrt((errors**2).mean()) < 0.025
    assert abs(errors.mean()) < 0.006


@pytest.mark.parametrize("kind", ["far_outliers", "shifted_few", "student_t2"])
def test_the_regression_estimate_is_not_trusted_where_the_sample_missed_the_tail(kind) -> None:
    # A review of the regression estimate: with 0.1% of rows 1e4 away, the straight line of
    # distance on squared distance, extrapolated to the exact mean squared distance, gave CP
    # 53,760 for a true 11.7 (above sqrt(SSW / n), which no mean distance can pass). Where the
    # sample disagrees with the exact moment the plain count-weighted mean is kept.
    worst_plain, worst = 0.0, 0.0
    for seed in range(6):
        rng = np.random.default_rng(seed)
        x = rng.normal(size=(20_000, 2))
        if kind == "far_outliers":
            x[:20] *= 1e4
        elif kind == "shifted_few":
            x[:40] += 100.0
        else:
            x = rng.standard_t(2, size=(20_000, 2))
        labels = np.zeros(len(x), dtype=int)
        m = sm.ClusterGeometry(sample_size=64).update(x, labels)
        true = _compactness(x, labels)
        got = m.compute()["compactness"]
        assert got <= math.sqrt(m.moments.m2[0] / m.moments.counts[0]) * (1 + 1e-12)
        s, mo = m.sample, m.moments
        dev = (s.rows - mo.means[s.codes]) - mo.means_lo[s.codes]
        plain = float((np.sqrt(np.einsum("ij,ij->i", dev, dev)) * s.mult).sum() / s.mult.sum())
        worst_plain = max(worst_plain, abs(plain / true - 1))
        worst = max(worst, abs(got / true - 1))
    assert worst <= worst_plain * 1.5 + 0.02, (worst, worst_plain)
