"""Internal clustering indices: the geometry of the clusters of points ``X`` given their labels.

The model is Alink's cluster evaluator (count, k, sizes, CP, SP, DB, SSB, SSW, CH), plus Dunn and
silhouette; the values agree with scikit-learn's ``calinski_harabasz_score``,
``davies_bouldin_score`` and ``silhouette_score`` where those exist. Two mergeable states:

* :class:`~streammetrics.states.centroids.ClusterMoments`: per cluster the count, the mean row
  and the sum of squared deviations from it (merged Chan-style). SSB, SSW, Calinski-Harabasz and
  SP come from it exactly (to floating-point rounding: a float state, split-invariant to about
  1e-15 relative).
* :class:`~streammetrics.states.samples.BottomKSample`: per cluster the ``sample_size`` distinct
  rows of smallest hash, each with its count, chosen deterministically (split-invariant byte for
  byte). CP and Davies-Bouldin need each row's distance to the *final* centre, which no running
  sum gives: they are exact when ``centers=`` are given (the deployed model's centres: a
  running sum of distances), exact while every cluster still fits in its sample (has at most
  ``sample_size`` distinct rows), and estimated from the sample beyond that. Dunn and
  silhouette come from the sample (exact while every cluster fits). The result's ``exact``
  dict says which regime each value is in.

Distances (``distance=``), as Alink has them: ``"euclidean"`` (centres are means of the rows),
``"cosine"`` (``1 - cos``; rows are scaled to unit length before the centres are averaged, as
Alink does, so SSB/SSW/CH are the squared Euclidean dispersions of the unit rows) and
``"cityblock"`` (L1 distance to the mean row). SSB, SSW and CH are always squared *Euclidean*
dispersions (the Calinski-Harabasz definition, and scikit-learn's): a running sum cannot give
squared L1 or squared cosine distances.

Memory: O(k * d) for the moments plus O(k * sample_size * d) for the samples.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from ._geometry import _Geometry
from ._indices import _FLOAT_KEYS

__all__ = [
    "CalinskiHarabasz",
    "ClusterGeometry",
    "Compactness",
    "DaviesBouldin",
    "DunnIndex",
    "Separation",
    "Silhouette",
]

_ALL = frozenset(_FLOAT_KEYS)  # every value ClusterGeometry computes


class ClusterGeometry(_Geometry):
    """Every internal clustering index at once (Alink's cluster evaluator, plus Dunn and
    silhouette).

    Parameters
    ----------
    distance : {"euclidean", "cosine", "cityblock"}
        The distance of CP, SP, DB, Dunn and silhouette (see the module docstring).
    centers : array-like of shape (k, d), optional
        The model's centres: row i is the centre of cluster label i (or of ``center_labels[i]``).
        CP and DB are then exact at any stream length (mean distance to these centres), SP is
        measured between them, and a label without a centre is an ``InputError``.
    center_labels : list, optional
        The cluster label of each row of ``centers``.
    sample_size : int
        Distinct rows kept per cluster, each with its count, for CP/DB (without ``centers``),
        Dunn and silhouette.

    compute -> dict: ``count``, ``k``, ``labels`` (sorted cluster labels), ``sizes``,
    ``compactness`` (CP: mean over clusters of the mean distance to the centre), ``separation``
    (SP: mean distance between centres), ``davies_bouldin`` (as ``davies_bouldin_score``),
    ``calinski_harabasz`` (as ``calinski_harabasz_score``; Alink's VRC), ``ssb``, ``ssw`` (sums
    of squared Euclidean distances), ``dunn`` (min distance between points of different clusters
    over the max cluster diameter), ``silhouette`` (as ``silhouette_score(metric=distance)``) and
    ``exact`` (name -> bool: False where a value is an estimate from the samples). ``nan`` where
    an index needs 2 to n - 1 clusters and there are not.

    Exactness: SSB, SSW, CH, SP exact (float running sums: to rounding); CP, DB exact for the
    cosine distance (from the moments: ``1 - |c|``, ``c`` the mean unit row), and for the
    others with ``centers`` or while every cluster has at most ``sample_size`` distinct rows,
    else estimated from a deterministic sample, each kept row weighted by its count, by a
    regression on the squared distance, whose exact mean the moments hold (about 1-2%
    root-mean-square error per cluster at a sample of 64 for Gaussian clusters, a quarter of
    that at the default 1024; docs/clustering.md); Dunn and silhouette exact while every cluster
    fits, else estimated (silhouette: each kept row's value weighted by its count and its
    cluster's size).

    Memory O(k * d + k * sample_size * d). Update O(n d + n log n); merge O(k d + S log S) for
    S distinct sampled rows; compute O(S**2 d) (Dunn and silhouette; the rest O(S d + k**2 d)).

    Examples
    --------
    >>> from streammetrics.clustering import ClusterGeometry
    >>> X = [[0, 0, 0], [0.1, 0.1, 0.1], [0.2, 0.2, 0.2], [9, 9, 9], [9.1, 9.1, 9.1],
    ...      [9.2, 9.2, 9.2]]
    >>> r = ClusterGeometry().update(X, [0, 0, 0, 1, 1, 1]).compute()
    >>> round(r["calinski_harabasz"], 6), round(r["davies_bouldin"], 6), r["exact"]["dunn"]
    (12150.0, 0.014815, True)
    """

    higher_is_better: ClassVar[bool | None] = None

    def _compute(self) -> dict[str, Any]:
        m = self.moments
        out: dict[str, Any] = {
            "count": self._count,
            "k": len(m.keys),
            "labels": m.keys.copy(),
            "sizes": m.counts.copy(),
        }
        parts = self._all(_ALL)
        out.update({key: parts[key] for key in _FLOAT_KEYS})
        out["exact"] = {key: parts["exact"][key] for key in _FLOAT_KEYS}
        return out

    def _empty_result(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "count": 0,
            "k": 0,
            "labels": np.zeros(0, dtype=np.int64),
            "sizes": np.zeros(0, dtype=np.int64),
        }
        out.update(dict.fromkeys(_FLOAT_KEYS, math.nan))
        out["exact"] = dict.fromkeys(_FLOAT_KEYS, True)
        return out


class _Single(_Geometry, register=False):
    _key = ""

    def _compute(self) -> float:
        return float(self._all({self._key})[self._key])

    def is_exact(self) -> bool:
        """True when :meth:`compute` is exact (not an estimate from the per-cluster samples)."""
        if self._count == 0:
            return True
        return bool(self._all({self._key})["exact"][self._key])


class CalinskiHarabasz(_Single):
    """Calinski-Harabasz index (variance ratio criterion), as ``calinski_harabasz_score``.

    ``SSB / SSW * (n - k) / (k - 1)`` from per-cluster counts, means and squared deviations
    (``distance="cosine"``: of the unit-length rows). Exact to floating-point rounding (a float
    state). Memory O(k * d); update O(n d); merge O(k d); compute O(k d).

    Examples
    --------
    >>> from streammetrics.clustering import CalinskiHarabasz
    >>> CalinskiHarabasz().update([[0.0], [1.0], [10.0], [11.0]], [0, 0, 1, 1]).compute()
    200.0
    """

    higher_is_better: ClassVar[bool | None] = True

    _key = "calinski_harabasz"
    _uses_sample = False

    _config_options = ("distance",)

    def __init__(self, distance: str = "euclidean") -> None:
        super().__init__(distance)


class Separation(_Single):
    """Separation (SP): mean distance between the cluster centres (Alink's SP).

    ``2 / (k^2 - k) * sum over i < j of d(u_i, u_j)``, with the data's means or the given
    ``centers``. Exact to rounding. Memory O(k * d); compute O(k**2 d).

    Examples
    --------
    >>> from streammetrics.clustering import Separation
    >>> Separation().update([[0.0, 0.0], [0.0, 2.0], [3.0, 1.0]], [0, 0, 1]).compute()
    3.0
    """

    higher_is_better: ClassVar[bool | None] = True

    _key = "separation"
    _uses_sample = False

    _config_options = ("distance", "centers", "center_labels")

    def __init__(
        self, distance: str = "euclidean", centers: Any = None, center_labels: Any = None
    ) -> None:
        super().__init__(distance, centers, center_labels)


class Compactness(_Single):
    """Compactness (CP): mean over clusters of the mean distance of a row to its centre (Alink).

    Exact for the cosine distance (from the moments), with ``centers``, or while every cluster
    has at most ``sample_size`` distinct rows; otherwise estimated from the deterministic
    per-cluster sample (:meth:`is_exact` says which). Arguments as :class:`ClusterGeometry`.
    Memory O(k * sample_size * d); compute O(S d).

    Examples
    --------
    >>> from streammetrics.clustering import Compactness
    >>> Compactness().update([[0.0], [2.0], [10.0], [10.0]], [0, 0, 1, 1]).compute()
    0.5
    """

    higher_is_better: ClassVar[bool | None] = False

    _key = "compactness"


class DaviesBouldin(_Single):
    """Davies-Bouldin index, as ``davies_bouldin_score`` (Euclidean) and Alink's DB.

    Mean over clusters of ``max over j != i of (CP_i + CP_j) / d(u_i, u_j)``. Exact for the
    cosine distance, with ``centers``, or while every cluster fits in its sample, else an
    estimate (within 1% at 1M rows in the tests). Arguments as :class:`ClusterGeometry`.

    Examples
    --------
    >>> from streammetrics.clustering import DaviesBouldin
    >>> DaviesBouldin().update([[0.0], [2.0], [10.0], [10.0]], [0, 0, 1, 1]).compute()
    0.1111111111111111
    """

    higher_is_better: ClassVar[bool | None] = False

    _key = "davies_bouldin"


class DunnIndex(_Single):
    """Dunn index: smallest distance between rows of different clusters over the largest
    cluster diameter (``inf`` when every cluster is a single point repeated, ``nan`` when two
    such clusters are the same point).

    From the per-cluster samples: exact while every cluster fits, else an estimate (the sample
    sees fewer pairs: the numerator can only be over-, the denominator only under-estimated).
    Compute O(S**2 d) for S sampled rows.

    Examples
    --------
    >>> from streammetrics.clustering import DunnIndex
    >>> DunnIndex().update([[0.0], [2.0], [10.0], [11.0]], [0, 0, 1, 1]).compute()
    4.0
    """

    higher_is_better: ClassVar[bool | None] = True

    _key = "dunn"


class Silhouette(_Single):
    """Mean silhouette coefficient, as ``silhouette_score(X, labels, metric=distance)``.

    From the per-cluster samples: exact while every cluster fits, else an estimate (each
    cluster's sampled coefficients weighted by its size). Compute O(S**2 d).

    Examples
    --------
    >>> from streammetrics.clustering import Silhouette
    >>> round(Silhouette().update([[0.0], [1.0], [10.0], [11.0]], [0, 0, 1, 1]).compute(), 6)
    0.899749
    """

    higher_is_better: ClassVar[bool | None] = True

    _key = "silhouette"
