"""How the internal clustering indices are computed from the state of
:class:`~streammetrics.clustering._geometry._Geometry`, which reads them through
:class:`_Indices`.

From the per-cluster moments: the Calinski-Harabasz index (``ssb``, ``ssw``), the separation of
the centres, and the compactness and Davies-Bouldin index (exact from the moments for given
centres and for the cosine distance; otherwise from the sample, exact while it holds every
distinct row of a cluster, a regression estimate beyond). From the per-cluster sample: the
silhouette and the Dunn index (every pairwise distance of the sampled rows, in blocks). A ratio
past float64's range (a Calinski-Harabasz, Davies-Bouldin or Dunn index over a subnormal
spread) is reported as the largest float, never as inf; Dunn's documented ``inf`` (every
cluster a single repeated point) stays."""

from __future__ import annotations

import math
from collections.abc import Set
from typing import Any

import numpy as np

from ..states.centroids import ClusterMoments
from ..states.samples import BottomKSample
from ._distances import _EPS, _cosine_centres, _pairwise, _to_centres

_FMAX = float(np.finfo(np.float64).max)
_BLOCK = 1 << 22  # distance-matrix entries per chunk of the sample computations
_FLOAT_KEYS = (
    "compactness",
    "separation",
    "davies_bouldin",
    "calinski_harabasz",
    "ssb",
    "ssw",
    "dunn",
    "silhouette",
)


def _ceil(value: float) -> float:
    """+inf (a ratio past float64's range) as the largest float; nan stays nan."""
    return min(value, _FMAX) if value == value else value


class _Indices:
    """The computations of the internal indices, mixed into
    :class:`~streammetrics.clustering._geometry._Geometry`: they read its state and its
    configuration, and change neither."""

    moments: ClusterMoments
    sample: BottomKSample
    _uses_sample: bool
    _distance: str
    _centers: np.ndarray | None
    _center_keys: np.ndarray | None

    def _reference_centres(self) -> np.ndarray:
        """The centres the distances between centres are taken between: for the translation
        invariant distances, the centroids relative to the first (both parts of each mean)."""
        m = self.moments
        if self._centers is None:
            return _cosine_centres(m.means) if self._distance == "cosine" else m.centred()
        assert self._center_keys is not None
        return self._centers[np.searchsorted(self._center_keys, m.keys)]

    def _dispersion(self) -> dict[str, float]:
        m = self.moments
        counts = m.counts.astype(np.float64)
        total, k = float(counts.sum()), len(m.keys)
        # About the first centroid: far from the origin, ``sum n_k mean_k`` would lose the
        # digits that tell the centroids apart.
        centred = m.centred() if len(m.keys) else m.means
        diff = centred - (counts[:, None] * centred).sum(axis=0) / total
        ssb = float((counts * np.einsum("ij,ij->i", diff, diff)).sum())
        ssw = float(m.m2.sum())
        if k < 2 or k > total - 1:
            ch = math.nan  # scikit-learn refuses fewer than 2 or more than n - 1 clusters
        elif ssw == 0.0:
            ch = 1.0
        else:
            ch = _ceil(ssb * (total - k) / (ssw * (k - 1.0)))
        return {"ssb": ssb, "ssw": ssw, "calinski_harabasz": ch}

    def _coincident_below(self) -> Any:
        """Centroid distances at or below this (per pair) are rounding, not distance: two
        clusters whose means are equal get two-part means (``means``, ``means_lo``) that
        differ in their last bits with the order of the rows, so their distance came out
        1e-16 instead of 0, and Davies-Bouldin ~1e16 where scikit-learn (which skips pairs at
        distance 0) gives a small value. The two-part means are exact to about ``eps**2``
        of their size, and their rounding comes from the rows' deviations: the bound is 16
        rounding steps of the rows' spread (``sqrt(d m2 / n)`` over the ``d`` columns) plus
        64 of ``eps**2`` times the means' L1 norm (so data far from the origin keeps its real
        distances: at 1.7e15, 0.8.9's first bound, ``16 eps`` times the mean, was 6, and
        zeroed a distance of 4), or 16 of ``eps**2`` for cosine (``|an - bn|**2 / 2``, a
        squared angle). User-given centres are exact: no tolerance."""
        if self._centers is not None:
            return 0.0
        if self._distance == "cosine":
            return 16 * _EPS**2
        m = self.moments
        width = m.means.shape[1] if m.means.ndim == 2 else 1
        rows = np.sqrt(width * np.maximum(m.m2, 0.0) / np.maximum(m.counts, 1))
        size = 16 * _EPS * rows + 64 * _EPS**2 * np.abs(m.means).sum(axis=1)
        return np.maximum(size[:, None], size[None, :])

    def _separation(self) -> float:
        k = len(self.moments.keys)
        if k < 2:
            return math.nan
        d = _pairwise(self._reference_centres(), self._reference_centres(), self._distance)
        return float(d[np.triu_indices(k, 1)].mean())

    def _fits(self) -> bool:
        return bool(self.sample.complete().all()) if self._uses_sample else False

    def _cp_per_cluster(self) -> tuple[np.ndarray, bool]:
        """Mean distance of each cluster's rows to its centre, and whether it is exact."""
        m = self.moments
        if self._centers is not None:
            return m.extra[:, 0] / m.counts, True
        if self._distance == "cosine":
            # The unit rows u of a cluster have mean c, so the mean of 1 - cos(x, c) = 1 - u.c/|c|
            # is 1 - c.c/|c| = 1 - |c|, and 1 - |c|**2 is their mean squared deviation m2 / n:
            # 1 - |c| = (m2 / n) / (1 + |c|), from the moments at any stream length, without
            # the cancellation of 1 - |c| (0.8.16 estimated it from the sample). A centre zero
            # to rounding (:func:`_cosine_centres`) is at distance 1 from every row.
            centres = _cosine_centres(m.means)
            norm = np.sqrt(np.einsum("ij,ij->i", centres, centres))
            return np.where(norm > 0, m.m2 / m.counts / (1.0 + norm), 1.0), True
        s = self.sample
        # Each row less its centroid's two parts: the deviation, exact far from 0.
        dev = (s.rows - m.means[s.codes]) - m.means_lo[s.codes]
        dist = _to_centres(dev, np.zeros_like(dev), self._distance)
        # Each kept row counts as often as it occurred: the exact mean while the sample holds
        # every distinct row, an estimate beyond.
        k, codes, weight = len(m.keys), s.codes, s.mult.astype(np.float64)
        held = s.held().astype(np.float64)
        mean_d = np.bincount(codes, weights=dist * weight, minlength=k) / held
        complete = s.complete()
        if complete.all():
            return mean_d, True
        # Beyond the sample, a regression estimate (Cochran, *Sampling Techniques*, 3rd ed.
        # 1977, ch. 7) on the squared Euclidean distance to the centroid, whose mean over
        # all the cluster's rows the moments hold exactly (m2 / n): the sample's mean
        # distance, corrected by the slope of distance on squared distance times the gap
        # between the sample's mean squared distance and the exact one. Against the plain
        # (count-weighted) mean it cut the error of 4-D Gaussian clusters' CP at a sample of
        # 64 from 4.6% to 1.0% (root mean square over seeds). The line is only trusted where
        # the sample agrees with the exact moment (the gap within three standard errors of
        # the sample's mean squared distance, and the exact mean within the sample's range):
        # where the sample missed a cluster's far rows (heavy tails, a few outliers) the
        # straight line overshoots the square root it stands for, by 1000x and more for 0.1%
        # of rows 1e4 away (a review of this change), and the plain mean is kept there.
        sq = np.einsum("ij,ij->i", dev, dev)
        mean_q = np.bincount(codes, weights=sq * weight, minlength=k) / held
        dd, dq = dist - mean_d[codes], sq - mean_q[codes]
        cov = np.bincount(codes, weights=weight * dd * dq, minlength=k)
        var = np.bincount(codes, weights=weight * dq * dq, minlength=k)
        slope = np.where(var > 0, cov / np.where(var > 0, var, 1.0), 0.0)
        known = m.m2 / m.counts
        top = s.per_key(sq, np.maximum)
        spread = 3.0 * np.sqrt(var / held) / np.sqrt(held)  # (three standard errors)
        trusted = (known <= top) & (np.abs(known - mean_q) <= spread)
        corrected = np.maximum(mean_d + slope * (known - mean_q), 0.0)
        estimate = np.where(trusted, corrected, mean_d)
        return np.where(complete, mean_d, estimate), False

    def _compactness_db(self) -> dict[str, Any]:
        cp, exact = self._cp_per_cluster()
        k = len(cp)
        out: dict[str, Any] = {"compactness": float(cp.mean()), "exact": exact}
        if k < 2 or k > float(self.moments.counts.sum()) - 1:
            # scikit-learn refuses a single cluster, and as many clusters as rows
            out["davies_bouldin"] = math.nan
            return out
        centres = self._reference_centres()
        cd = _pairwise(centres, centres, self._distance)
        cd[cd <= self._coincident_below()] = 0.0
        # scikit-learn's davies_bouldin_score, with the chosen distance.
        if np.allclose(cp, 0) or np.allclose(cd, 0):
            out["davies_bouldin"] = 0.0
            return out
        cd[cd == 0] = np.inf
        np.fill_diagonal(cd, np.inf)  # max over j != i (a cosine self-distance can be 1e-16)
        combined = (cp[:, None] + cp[None, :]) / cd
        out["davies_bouldin"] = _ceil(float(combined.max(axis=1).mean()))
        return out

    def _sample_pairs(self, silhouette: bool, dunn: bool) -> dict[str, float]:
        """Silhouette and Dunn index from the per-cluster samples (all pairwise distances)."""
        m, s = self.moments, self.sample
        k = len(m.keys)
        out: dict[str, float] = {}
        total = float(m.counts.sum())
        if k < 2:
            return {"silhouette": math.nan, "dunn": math.nan}
        if silhouette and k > total - 1:  # silhouette needs k <= n - 1; Dunn does not
            out["silhouette"] = math.nan
            silhouette = False
            if not dunn:
                return out
        starts = s.segments()
        # The rows each cluster's sample stands for (every copy of a kept row counts), and the
        # weight of each kept row in the mean over all rows: its copies, scaled up to the size
        # of its cluster when the sample holds only some of the cluster's distinct rows.
        kept = s.held().astype(np.float64)
        rows, codes, size = s.rows, s.codes, len(s.rows)
        copies = s.mult.astype(np.float64)
        repeated = bool((s.mult > 1).any())
        step = max(1, _BLOCK // max(size, 1))
        sil_total, inter_min, diameter = 0.0, math.inf, 0.0
        weight = copies * (m.counts / kept)[codes]
        for r0 in range(0, size, step):
            d = _pairwise(rows[r0 : r0 + step], rows, self._distance)
            own = codes[r0 : r0 + step]
            at = np.arange(len(own))
            if silhouette:
                # A row's own copies are at distance 0: they count in a(i)'s n - 1 only.
                sums = np.add.reduceat(d * copies if repeated else d, starts, axis=1)
                a = sums[at, own] / (kept[own] - 1.0)
                means = sums / kept[None, :]
                means[at, own] = np.inf
                b = means.min(axis=1)
                sil = np.nan_to_num((b - a) / np.maximum(a, b))
                sil[m.counts[own] == 1] = 0.0  # scikit-learn: 0 for a singleton cluster
                sil_total += float((sil * weight[r0 : r0 + step]).sum())
            if dunn:
                mins = np.minimum.reduceat(d, starts, axis=1)
                maxs = np.maximum.reduceat(d, starts, axis=1)
                diameter = max(diameter, float(maxs[at, own].max()))
                mins[at, own] = np.inf
                inter_min = min(inter_min, float(mins.min()))
        if silhouette:
            out["silhouette"] = sil_total / total
        if dunn:
            if diameter > 0:
                out["dunn"] = _ceil(inter_min / diameter)
            else:  # every cluster one repeated point: apart, inf; two on one point, 0 / 0
                out["dunn"] = math.inf if inter_min > 0 else math.nan
        return out

    def _all(self, want: Set[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        exact: dict[str, bool] = {}
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if want & {"ssb", "ssw", "calinski_harabasz"}:
                out.update(self._dispersion())
                exact.update(ssb=True, ssw=True, calinski_harabasz=True)
            if "separation" in want:
                out["separation"] = self._separation()
                exact["separation"] = True
            if want & {"compactness", "davies_bouldin"}:
                cd = self._compactness_db()
                is_exact = cd.pop("exact")
                out.update(cd)
                exact.update(compactness=is_exact, davies_bouldin=is_exact)
            if want & {"silhouette", "dunn"}:
                out.update(self._sample_pairs("silhouette" in want, "dunn" in want))
                exact.update(silhouette=self._fits(), dunn=self._fits())
        out["exact"] = exact
        return out
