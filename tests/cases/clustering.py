"""Conformance cases for the clustering metrics.

External indices keep int64 contingency counts (exact=True: any split gives the same bytes).
Internal indices keep float running moments beside a deterministic sample (exact=False: results
agree to rounding; the sample itself is split-invariant byte for byte, checked in
``tests/test_clustering_internal.py``).
"""

from __future__ import annotations

import numpy as np

from streammetrics import clustering as C
from tests.harness import Case

NAMES = np.array(["ant", "bee", "cow", "dog", "elk"])


def _labels(k_true: int, k_pred: int, strings: bool = False, rows: int = 1):
    def batch(rng: np.random.Generator, n: int):
        n *= rows
        a = rng.integers(0, k_true, n)
        b = (a + rng.integers(0, 2, n) * rng.integers(0, k_pred, n)) % k_pred
        if strings:
            return (NAMES[a % len(NAMES)].tolist(), b), {}
        return (a, b), {}

    return batch


BAD_EXTERNAL = [
    (([0, 1, 1], [0, 1]), {}),
    (([0.5, 1.0], [0, 1]), {}),
    (([[0, 1]], [[0, 1]]), {}),
    ((["a", 1], [0, 1]), {}),
    (([0, float("nan")], [0, 1]), {}),
    (([0, 1], None), {}),
]
# ["a", 1] reads as the strings "a", "1" (numpy's coercion): only an error after integers.
BAD_STRINGS = [*(b for b in BAD_EXTERNAL if b[0][0] != ["a", 1]), (([0, 1], [0, 1]), {})]

CASES = [
    Case(
        "ClusterAgreement",
        C.ClusterAgreement,
        _labels(4, 5),
        BAD_EXTERNAL,
        other=lambda: C.ClusterAgreement(average_method="max"),
    ),
    Case(
        "ClusterAgreement-str",
        C.ClusterAgreement,
        _labels(5, 3, strings=True),
        BAD_STRINGS,
        other=lambda: C.ClusterAgreement(beta=2.0),
    ),
    # Up to 2,000 classes and clusters, eight rows per row asked: past 2**16 cells, few of them
    # filled, the counts take the sparse form.
    Case(
        "ClusterAgreement-sparse",
        C.ClusterAgreement,
        _labels(2_000, 2_000, rows=8),
        BAD_EXTERNAL,
        other=lambda: C.ClusterAgreement(average_method="max"),
    ),
    Case("Purity", C.Purity, _labels(3, 6), BAD_EXTERNAL),
    Case("MutualInfo", C.MutualInfo, _labels(4, 4), BAD_EXTERNAL),
    Case(
        "NormalizedMutualInfo",
        C.NormalizedMutualInfo,
        _labels(4, 3),
        BAD_EXTERNAL,
        other=lambda: C.NormalizedMutualInfo(average_method="geometric"),
    ),
    Case(
        "AdjustedMutualInfo-min",
        lambda: C.AdjustedMutualInfo(average_method="min"),
        _labels(5, 4, strings=True),
        BAD_STRINGS,
        other=C.AdjustedMutualInfo,
    ),
    Case("RandIndex", C.RandIndex, _labels(3, 3), BAD_EXTERNAL),
    Case("AdjustedRandIndex", C.AdjustedRandIndex, _labels(4, 6), BAD_EXTERNAL),
    Case("ClusterJaccard", C.ClusterJaccard, _labels(3, 4), BAD_EXTERNAL),
    Case("FowlkesMallows", C.FowlkesMallows, _labels(4, 2), BAD_EXTERNAL),
    Case("ClusterAccuracy", C.ClusterAccuracy, _labels(3, 5, strings=True), BAD_STRINGS),
    Case("Homogeneity", C.Homogeneity, _labels(4, 4), BAD_EXTERNAL),
    Case("Completeness", C.Completeness, _labels(2, 5), BAD_EXTERNAL),
    Case(
        "VMeasure-beta", lambda: C.VMeasure(beta=0.5), _labels(4, 4), BAD_EXTERNAL, other=C.VMeasure
    ),
]


CENTRES = np.array([[0.0, 0.0, 0.0], [4.0, 0.0, 1.0], [0.0, 5.0, -1.0], [3.0, 3.0, 3.0]])


def _points(k: int = 4, strings: bool = False, offset: float = 0.0):
    def batch(rng: np.random.Generator, n: int):
        lab = rng.integers(0, k, n)
        x = CENTRES[lab % len(CENTRES)] + rng.normal(size=(n, 3)) + offset
        # A few repeated rows, so that equal hashes and duplicate rows are exercised.
        if n > 4:
            x[-2:] = np.round(x[:2], 0)
            lab[-2:] = lab[:2]
        return (x, NAMES[lab].tolist() if strings else lab), {}

    return batch


BAD_INTERNAL = [
    ((np.zeros((3, 3)), [0, 1]), {}),
    ((np.array([[0.0, 1.0, float("nan")]]), [0]), {}),
    ((np.array([[0.0, float("inf"), 1.0]]), [0]), {}),
    ((np.zeros((2, 2)), [0, 1]), {}),  # other width than the earlier batches
    ((np.zeros((2, 3, 1)), [0, 1]), {}),
    ((np.ones((2, 3)), [0.5, 1.0]), {}),
    ((np.ones((2, 3)), ["a", "b"]), {}),  # strings after integer labels
    ((np.ones((2, 3)), None), {}),
]
BAD_INTERNAL_STR = [
    *BAD_INTERNAL[:-2],
    ((np.ones((2, 3)), [0, 1]), {}),
    ((np.ones((2, 3)), None), {}),
]
RTOL = 1e-9

CASES += [
    Case(
        "ClusterGeometry",
        C.ClusterGeometry,
        _points(),
        BAD_INTERNAL,
        exact=False,
        rtol=RTOL,
        other=lambda: C.ClusterGeometry(distance="cityblock"),
    ),
    Case(
        "ClusterGeometry-small-sample",
        lambda: C.ClusterGeometry(sample_size=8),
        _points(),
        BAD_INTERNAL,
        exact=False,
        rtol=RTOL,
        other=C.ClusterGeometry,
    ),
    Case(
        "ClusterGeometry-cosine-str",
        lambda: C.ClusterGeometry(distance="cosine"),
        _points(strings=True, offset=10.0),  # no all-zero rows
        [*BAD_INTERNAL_STR, ((np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]), ["ant", "bee"]), {})],
        exact=False,
        rtol=RTOL,
        other=C.ClusterGeometry,
    ),
    Case(
        "ClusterGeometry-centers",
        lambda: C.ClusterGeometry(centers=CENTRES, sample_size=16),
        _points(),
        [*BAD_INTERNAL, ((np.ones((2, 3)), [0, 7]), {})],
        exact=False,
        rtol=RTOL,
        other=lambda: C.ClusterGeometry(centers=CENTRES + 1.0, sample_size=16),
    ),
    Case(
        "CalinskiHarabasz",
        C.CalinskiHarabasz,
        _points(),
        BAD_INTERNAL,
        exact=False,
        rtol=RTOL,
        other=lambda: C.CalinskiHarabasz(distance="cosine"),
    ),
    Case(
        "DaviesBouldin-small-sample",
        lambda: C.DaviesBouldin(sample_size=6),
        _points(),
        BAD_INTERNAL,
        exact=False,
        rtol=RTOL,
        other=C.DaviesBouldin,
    ),
    Case(
        "Compactness-cityblock",
        lambda: C.Compactness(distance="cityblock"),
        _points(3),
        BAD_INTERNAL,
        exact=False,
        rtol=RTOL,
        other=C.Compactness,
    ),
    Case(
        "Separation-centers",
        lambda: C.Separation(centers=CENTRES),
        _points(),
        BAD_INTERNAL,
        exact=False,
        rtol=RTOL,
        other=C.Separation,
    ),
    Case(
        "DunnIndex",
        C.DunnIndex,
        _points(),
        BAD_INTERNAL,
        exact=False,
        rtol=RTOL,
        other=lambda: C.DunnIndex(sample_size=5),
    ),
    Case(
        "Silhouette-small-sample",
        lambda: C.Silhouette(sample_size=10),
        _points(),
        BAD_INTERNAL,
        exact=False,
        rtol=RTOL,
        other=lambda: C.Silhouette(distance="cosine"),
    ),
]


def _grid_points():
    """Rows on an integer grid: few distinct rows, each many times (0.8.17's counted sample)."""

    def batch(rng: np.random.Generator, n: int):
        lab = rng.integers(0, 3, n)
        return (np.round(CENTRES[lab] + 0.6 * rng.normal(size=(n, 3))), lab), {}

    return batch


# Configurations beyond the ones above: the default AMI average, NMI's geometric mean, the
# other distances, and centres given (or not) where the cases above chose the other way.
CASES += [
    Case(
        "ClusterGeometry-grid-rows",
        lambda: C.ClusterGeometry(sample_size=6),
        _grid_points(),
        BAD_INTERNAL,
        exact=False,
        rtol=RTOL,
        other=lambda: C.ClusterGeometry(sample_size=7),
    ),
    Case(
        "AdjustedMutualInfo",
        C.AdjustedMutualInfo,
        _labels(4, 5),
        BAD_EXTERNAL,
        other=lambda: C.AdjustedMutualInfo(average_method="geometric"),
    ),
    Case(
        "NormalizedMutualInfo-geometric-str",
        lambda: C.NormalizedMutualInfo(average_method="geometric"),
        _labels(4, 3, strings=True),
        BAD_STRINGS,
        other=lambda: C.NormalizedMutualInfo(average_method="min"),
    ),
    Case(
        "Silhouette-cosine",
        lambda: C.Silhouette(distance="cosine", sample_size=24),
        _points(offset=10.0),  # no all-zero rows
        BAD_INTERNAL,
        exact=False,
        rtol=RTOL,
        other=lambda: C.Silhouette(sample_size=24),
    ),
    Case(
        "DunnIndex-cityblock",
        lambda: C.DunnIndex(distance="cityblock", sample_size=24),
        _points(),
        BAD_INTERNAL,
        exact=False,
        rtol=RTOL,
        other=lambda: C.DunnIndex(sample_size=24),
    ),
    Case(
        "Separation",
        C.Separation,
        _points(3),
        BAD_INTERNAL,
        exact=False,
        rtol=RTOL,
        other=lambda: C.Separation(distance="cityblock"),
    ),
    Case(
        "DaviesBouldin-centers",
        lambda: C.DaviesBouldin(centers=CENTRES, sample_size=16),
        _points(),
        [*BAD_INTERNAL, ((np.ones((2, 3)), [0, 7]), {})],
        exact=False,
        rtol=RTOL,
        other=lambda: C.DaviesBouldin(sample_size=16),
    ),
    Case(
        "DaviesBouldin-cosine-str",
        lambda: C.DaviesBouldin(distance="cosine", sample_size=16),
        _points(strings=True, offset=10.0),
        BAD_INTERNAL_STR,
        exact=False,
        rtol=RTOL,
        other=lambda: C.DaviesBouldin(sample_size=16),
    ),
    Case(
        "CalinskiHarabasz-cityblock",
        lambda: C.CalinskiHarabasz(distance="cityblock"),
        _points(),
        BAD_INTERNAL,
        exact=False,
        rtol=RTOL,
        other=C.CalinskiHarabasz,
    ),
]

# Default settings no case above ran (a review's audit, 0.8.19): each passed the harness then.
CASES += [
    Case(
        "Compactness-default",
        C.Compactness,
        _points(),
        BAD_INTERNAL,
        exact=False,
        rtol=RTOL,
        other=lambda: C.Compactness(distance="cityblock"),
    ),
    Case(
        "DaviesBouldin-default",
        C.DaviesBouldin,
        _points(),
        BAD_INTERNAL,
        exact=False,
        rtol=RTOL,
        other=lambda: C.DaviesBouldin(distance="cityblock"),
    ),
    Case(
        "Silhouette-default",
        C.Silhouette,
        _points(),
        BAD_INTERNAL,
        exact=False,
        rtol=RTOL,
        other=lambda: C.Silhouette(distance="cityblock"),
    ),
]
