"""External clustering indices: agreement between true classes and predicted clusters.

Every metric here keeps one :class:`~streammetrics.states.ContingencyCounts` with its own label
set per axis (rows: the classes of ``labels_true``; columns: the clusters of ``labels_pred``).
Labels are any hashable values of one kind per axis (integers or strings); the state is made of
int64 counts, so merging is exact and split-invariant byte for byte.

Pair counts (Rand, adjusted Rand, Jaccard, Fowlkes-Mallows) are exact integers: per-cell
``n (n - 1) / 2`` is taken in uint64 while the stream has at most 2**32 rows (every partial sum
is then below ``n (n - 1) / 2 < 2**63``) and in Python integers beyond that; the final ratios are
formed from Python integers, so nothing overflows at any stream length.

Memory: O(R * C) counts for R classes and C clusters. ``update``: O(n) for integer labels of
small range, O(n log n) otherwise, plus O(R * C) to fold the batch in. ``merge``: O(R * C).
``compute``: O(R * C), except AMI (the expected mutual information: see
:func:`expected_mutual_info`) and accuracy (the Hungarian algorithm: O(min(R, C)**2 * max(R, C))).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.special import gammaln

from .._inputs import as_labels, check_same_length, config_number
from ..base import Metric
from ..errors import InputError
from ..states.contingency import ContingencyCounts

__all__ = [
    "AdjustedMutualInfo",
    "AdjustedRandIndex",
    "ClusterAccuracy",
    "ClusterAgreement",
    "ClusterJaccard",
    "Completeness",
    "FowlkesMallows",
    "Homogeneity",
    "MutualInfo",
    "NormalizedMutualInfo",
    "Purity",
    "RandIndex",
    "VMeasure",
]

_AVERAGE_METHODS = ("arithmetic", "geometric", "min", "max")
_EPS = float(np.finfo(np.float64).eps)
# The expected-MI window keeps the cells where the hypergeometric mass can exceed exp(-90)
# (~1e-39): see ``_half_window``.
_TAIL_LOG = 90.0
_GRID_BUDGET = 1 << 21


# -- pure functions of a contingency table ------------------------------------------------------


def _comb2_sum(values: np.ndarray, n_total: int) -> int:
    """Exact sum of ``v (v - 1) / 2`` over ``values`` (non-negative counts summing to at most
    ``n_total``), as a Python int."""
    v = values[values > 1]
    if n_total <= 1 << 32:
        u = v.astype(np.uint64)
        return int((u * (u - np.uint64(1)) // np.uint64(2)).sum(dtype=np.uint64))
    obj = v.astype(object)
    return int((obj * (obj - 1) // 2).sum())


def _entropy(counts: np.ndarray) -> float:
    # scikit-learn's _entropy, from counts: natural log, 0.0 for a single label.
    pi = counts[counts > 0].astype(np.float64)
    if pi.size <= 1:
        return 0.0
    total = float(pi.sum())
    return float(-np.sum((pi / total) * (np.log(pi) - math.log(total))))


def _mutual_info(table: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> float:
    # scikit-learn's mutual_info_score(contingency=...), with log(a * b) as log a + log b so that
    # no int64 product can overflow.
    if rows.size == 1 or cols.size == 1:
        return 0.0
    nzx, nzy = np.nonzero(table)
    nz = table[nzx, nzy].astype(np.float64)
    total = float(nz.sum())
    log_outer = -(
        np.log(rows[nzx].astype(np.float64)) + np.log(cols[nzy].astype(np.float64))
    ) + 2.0 * math.log(total)
    p = nz / total
    mi = p * (np.log(nz) - math.log(total)) + p * log_outer
    mi = np.where(np.abs(mi) < _EPS, 0.0, mi)
    return float(max(float(mi.sum()), 0.0))


def _average(u: float, v: float, method: str) -> float:
    if method == "min":
        return min(u, v)
    if method == "geometric":
        return math.sqrt(u * v)
    if method == "arithmetic":
        return (u + v) / 2.0
    return max(u, v)


def _half_window(draws: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Distance from the mean beyond which the hypergeometric mass is below exp(-_TAIL_LOG).

    A hypergeometric count is at least as concentrated as the binomial(draws, p) count with the
    same mean (Hoeffding 1963, section 6), so Bernstein's inequality
    ``P(|X - mu| >= t) <= 2 exp(-t**2 / (2 (var + t / 3)))`` bounds its tails; solving
    ``t**2 / (2 var + 2 t / 3) = L`` for t gives the half-width (plus one cell for rounding).
    """
    var = draws * p * (1.0 - p)
    third = _TAIL_LOG / 3.0
    return np.asarray(third + np.sqrt(third * third + 2.0 * _TAIL_LOG * var) + 1.0)


def expected_mutual_info(a: np.ndarray, b: np.ndarray) -> float:
    """Expected mutual information (nats) of two random labellings with marginals ``a``, ``b``.

    The expectation under the permutation (hypergeometric) model of Vinh, Epps and Bailey (2010),
    as scikit-learn's ``expected_mutual_information``. Vectorised: the sum depends on a pair of
    marginals only through their values, so it runs over distinct row sums x distinct column sums
    (weighted by multiplicity), with the cell counts of each pair as one numpy axis, restricted to
    the window where the hypergeometric mass is not negligible (Bernstein: what is left out is
    below 1e-38 of it). Time: O(U_a * U_b * (sd + 60)) for U distinct marginal values and sd the
    standard deviation of a cell count,
    against scikit-learn's O(R * C * min(a, b)) Python-level loop iterations.
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    a, b = a[a > 0], b[b > 0]
    if a.size <= 1 or b.size <= 1:
        return 0.0
    n = int(a.sum())
    ua, ca = np.unique(a, return_counts=True)
    ub, cb = np.unique(b, return_counts=True)
    log_n, gln_n = math.log(n), float(gammaln(n + 1))
    fa, fb = ua.astype(np.float64), ub.astype(np.float64)
    gln_a = gammaln(fa + 1) + gammaln(n - fa + 1) - gln_n
    gln_b = gammaln(fb + 1) + gammaln(n - fb + 1)
    log_a, log_b = np.log(fa), np.log(fb)

    # Window of cell counts per (a, b) pair: [lo, hi] within the support [max(1, a+b-n), min(a, b)].
    draws = np.minimum(fa[:, None], fb[None, :])
    mean = fa[:, None] * fb[None, :] / n
    half = _half_window(draws, np.maximum(fa[:, None], fb[None, :]) / n)
    lo = np.maximum(np.maximum(1.0, fa[:, None] + fb[None, :] - n), np.floor(mean - half))
    hi = np.minimum(draws, np.ceil(mean + half))
    width = np.maximum(hi - lo + 1.0, 0.0)
    row_width = width.max(axis=1)

    emi = 0.0
    i, n_rows = 0, len(ua)
    while i < n_rows:
        # Grow a chunk of rows while the (rows, columns, cells) grid stays within budget.
        j = i + 1
        w = row_width[i]
        while j < n_rows and (j - i + 1) * len(ub) * max(w, row_width[j]) <= _GRID_BUDGET:
            w = max(w, row_width[j])
            j += 1
        w_int = int(w)
        if w_int > 0:
            emi += _emi_rows(
                fa[i:j, None],
                fb[None, :],
                lo[i:j],
                np.maximum(hi, lo)[i:j],
                n,
                w_int,
                gln_a[i:j, None] + gln_b[None, :],
                log_n - log_a[i:j, None, None] - log_b[None, :, None],
                ca[i:j].astype(np.float64),
                cb.astype(np.float64),
            )
        i = j
    return emi


def _emi_rows(
    A: np.ndarray,
    B: np.ndarray,
    lo_c: np.ndarray,
    hi_c: np.ndarray,
    n: int,
    width: int,
    gln_ab: np.ndarray,
    log_scale: np.ndarray,
    wa: np.ndarray,
    wb: np.ndarray,
) -> float:
    """The EMI terms of a block of (a, b) pairs over their cell windows, ``width`` cells at
    most, walked in slices of at most ``_GRID_BUDGET`` grid cells, so that memory stays bounded
    however large ``n`` (the window grows as sqrt(n))."""
    # log P(n_ij = lo) from log-gamma once per pair; the rest of the window by the ratio
    # P(m + 1) / P(m) = (a - m)(b - m) / ((m + 1)(n - a - b + m + 1)), summed in log space:
    # one log per cell instead of four log-gamma calls.
    carry = (
        gln_ab
        - gammaln(lo_c + 1)
        - gammaln(A - lo_c + 1)
        - gammaln(B - lo_c + 1)
        - gammaln(n - A - B + lo_c + 1)
    )
    A3, B3, hi3 = A[:, :, None], B[:, :, None], hi_c[:, :, None]

    def log_ratio(m: np.ndarray) -> np.ndarray:
        stepping = m < (hi3 if m.ndim == 3 else hi_c)
        a, b = (A3, B3) if m.ndim == 3 else (A, B)
        num = np.where(stepping, (a - m) * (b - m), 1.0)
        den = np.where(stepping, (m + 1) * (n - a - b + m + 1), 1.0)
        out: np.ndarray = np.log(num / den)
        return out

    per_pair = np.zeros(np.broadcast_shapes(A.shape, B.shape))
    step = max(2, _GRID_BUDGET // max(per_pair.size, 1))
    for t0 in range(0, width, step):
        t = np.arange(t0, min(t0 + step, width), dtype=np.float64)[None, None, :]
        nij = lo_c[:, :, None] + t
        valid = nij <= hi3
        log_p = np.empty_like(nij)
        log_p[:, :, 0] = carry
        np.cumsum(log_ratio(nij[:, :, :-1]), axis=2, out=log_p[:, :, 1:])
        log_p[:, :, 1:] += carry[:, :, None]
        carry = log_p[:, :, -1] + log_ratio(nij[:, :, -1])
        safe = np.where(valid, nij, 1.0)
        term2 = log_scale + np.log(safe)
        terms = np.where(valid, (safe / n) * term2 * np.exp(np.where(valid, log_p, -np.inf)), 0.0)
        per_pair += terms.sum(axis=2)
    return float(wa @ per_pair @ wb)


class _Table:
    """The derived sums of one contingency table that every index draws on."""

    def __init__(self, table: np.ndarray) -> None:
        self.table = table
        self.rows = table.sum(axis=1)  # class sizes
        self.cols = table.sum(axis=0)  # cluster sizes
        self.n = int(self.rows.sum())
        self.n_classes = int(np.count_nonzero(self.rows))
        self.n_clusters = int(np.count_nonzero(self.cols))
        self._mi: float | None = None
        self._pairs: tuple[int, int, int, int] | None = None

    # -- information-theoretic -------------------------------------------------------------------

    def mutual_info(self) -> float:
        if self._mi is None:
            self._mi = _mutual_info(self.table, self.rows, self.cols)
        return self._mi

    def h_true(self) -> float:
        return _entropy(self.rows)

    def h_pred(self) -> float:
        return _entropy(self.cols)

    def _trivial(self) -> bool:
        # Both labellings put everything in one group: scikit-learn's perfect-match special case.
        return self.n_classes == self.n_clusters == 1

    def nmi(self, method: str) -> float:
        if self._trivial():
            return 1.0
        mi = self.mutual_info()
        if mi == 0:
            return 0.0
        return mi / _average(self.h_true(), self.h_pred(), method)

    def ami(self, method: str) -> float:
        if self._trivial():
            return 1.0
        if self.n_classes == 1 or self.n_clusters == 1:
            return 0.0
        mi = self.mutual_info()
        emi = expected_mutual_info(self.rows, self.cols)
        den = _average(self.h_true(), self.h_pred(), method) - emi
        den = min(den, -_EPS) if den < 0 else max(den, _EPS)
        num = mi - emi
        num = min(num, -_EPS) if num < 0 else max(num, _EPS)
        return num / den

    def homogeneity_completeness(self) -> tuple[float, float]:
        mi = self.mutual_info()
        h_c, h_k = self.h_true(), self.h_pred()
        return (mi / h_c if h_c else 1.0), (mi / h_k if h_k else 1.0)

    def v_measure(self, beta: float) -> float:
        h, c = self.homogeneity_completeness()
        if h + c == 0.0:
            return 0.0
        return (1 + beta) * h * c / (beta * h + c)

    # -- pair counting (exact integers) ------------------------------------------------------------

    def pairs(self) -> tuple[int, int, int, int]:
        """``(tp, fp, fn, tn)`` over unordered pairs of samples, as Python ints.

        tp: same class and same cluster; fp: same cluster, different class; fn: same class,
        different cluster; tn: different in both.
        """
        if self._pairs is None:
            n = self.n
            tp = _comb2_sum(self.table.ravel(), n)
            same_class = _comb2_sum(self.rows, n)
            same_cluster = _comb2_sum(self.cols, n)
            total = n * (n - 1) // 2
            fp, fn = same_cluster - tp, same_class - tp
            self._pairs = (tp, fp, fn, total - tp - fp - fn)
        return self._pairs

    def rand_index(self) -> float:
        tp, fp, fn, tn = self.pairs()
        total = tp + fp + fn + tn
        if total == 0 or tp + tn == total:
            return 1.0
        return (tp + tn) / total

    def adjusted_rand_index(self) -> float:
        tp, fp, fn, tn = self.pairs()
        if fn == 0 and fp == 0:
            return 1.0
        # scikit-learn's 2 (tp tn - fn fp) / ((tp + fn)(fn + tn) + (tp + fp)(fp + tn)), in
        # exact integers; Python's int / int rounds the exact quotient once.
        return 2 * (tp * tn - fn * fp) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn))

    def jaccard(self) -> float:
        tp, fp, fn, _ = self.pairs()
        if tp + fp + fn == 0:
            return 1.0  # no pair is together in either labelling: they agree
        return tp / (tp + fp + fn)

    def fowlkes_mallows(self) -> float:
        tp, fp, fn, _ = self.pairs()
        if tp == 0:
            return 0.0
        return math.sqrt(tp / (tp + fp)) * math.sqrt(tp / (tp + fn))

    # -- matching ----------------------------------------------------------------------------------

    def purity(self) -> float:
        return int(self.table.max(axis=0).sum()) / self.n

    def accuracy(self) -> float:
        r, c = linear_sum_assignment(self.table, maximize=True)
        return int(self.table[r, c].sum()) / self.n


# -- the metrics --------------------------------------------------------------------------------


class _External(Metric, register=False):
    """Shared state and update of every external index: a (class, cluster) contingency table."""

    counts: ContingencyCounts

    def __init__(self) -> None:
        super().__init__()
        self._add_state("counts", ContingencyCounts(shared=False), merge=None)
        self._declare_rows("label", "label", weights=False)

    def update(self, labels_true: Any, labels_pred: Any) -> Any:
        """Count a batch of (true class, predicted cluster) pairs.

        Complexity: O(n) for integer labels of small range, O(n log n) otherwise, plus
        O(R * C) to fold the batch's table into the state.
        """
        yt, yp = as_labels(labels_true, "labels_true"), as_labels(labels_pred, "labels_pred")
        n = check_same_length(labels_true=yt, labels_pred=yp)
        if n == 0:
            return self
        batch = self.counts.batch(yt, yp, None, ("labels_true", "labels_pred"))
        return self._commit(n, counts=self.counts.merged(batch))

    def _validate_state(self) -> None:
        table = self.counts.table
        if table.dtype != np.int64:
            raise ValueError("clustering counts must be int64")
        if int(table.sum()) != self._count:
            raise ValueError("the counts do not add up to count")
        if table.size and (table.sum(axis=1).min() == 0 or table.sum(axis=0).min() == 0):
            raise ValueError("every class and cluster must have been seen")

    def _stats(self) -> _Table:
        return _Table(self.counts.table)

    def _compute(self) -> Any:
        return self._value(self._stats())

    def _value(self, t: _Table) -> Any:
        raise NotImplementedError


def _check_average(average_method: Any) -> str:
    if average_method not in _AVERAGE_METHODS:
        raise InputError(
            f"average_method: must be one of {_AVERAGE_METHODS}; got {average_method!r}"
        )
    return str(average_method)


class ClusterAgreement(_External):
    """Every external clustering index at once, from one contingency table.

    compute -> dict: ``purity``, ``mutual_info`` (nats), ``nmi``, ``ami``, ``rand_index``,
    ``adjusted_rand_index``, ``jaccard`` (pair counting), ``fowlkes_mallows``, ``accuracy``
    (best one-to-one mapping of clusters to classes), ``homogeneity``, ``completeness``,
    ``v_measure``, ``count``, ``n_clusters``, ``n_classes``. Each value equals the metric class
    of that name (and the scikit-learn function it follows); ``nmi``/``ami`` use
    ``average_method``, ``v_measure`` uses ``beta``. Exact (AMI to floating-point rounding).

    Memory O(R * C); update O(n) (O(n log n) for strings); merge O(R * C); compute O(R * C)
    plus the Hungarian algorithm and the expected mutual information.

    Examples
    --------
    >>> from streammetrics.clustering import ClusterAgreement
    >>> r = ClusterAgreement().update([0, 0, 1, 2], [0, 0, 1, 1]).compute()
    >>> round(r["rand_index"], 4), round(r["adjusted_rand_index"], 4), r["n_clusters"]
    (0.8333, 0.5714, 2)
    """

    higher_is_better: ClassVar[bool | None] = None

    _KEYS = (
        "purity",
        "mutual_info",
        "nmi",
        "ami",
        "rand_index",
        "adjusted_rand_index",
        "jaccard",
        "fowlkes_mallows",
        "accuracy",
        "homogeneity",
        "completeness",
        "v_measure",
    )

    def __init__(self, average_method: str = "arithmetic", beta: float = 1.0) -> None:
        super().__init__()
        self._add_config(average_method=_check_average(average_method), beta=_check_beta(beta))

    def _value(self, t: _Table) -> dict[str, Any]:
        method, beta = self._config["average_method"], self._config["beta"]
        h, c = t.homogeneity_completeness()
        return {
            "purity": t.purity(),
            "mutual_info": t.mutual_info(),
            "nmi": t.nmi(method),
            "ami": t.ami(method),
            "rand_index": t.rand_index(),
            "adjusted_rand_index": t.adjusted_rand_index(),
            "jaccard": t.jaccard(),
            "fowlkes_mallows": t.fowlkes_mallows(),
            "accuracy": t.accuracy(),
            "homogeneity": h,
            "completeness": c,
            "v_measure": t.v_measure(beta),
            "count": t.n,
            "n_clusters": t.n_clusters,
            "n_classes": t.n_classes,
        }

    def _empty_result(self) -> dict[str, Any]:
        out: dict[str, Any] = dict.fromkeys(self._KEYS, math.nan)
        out.update(count=0, n_clusters=0, n_classes=0)
        return out


def _check_beta(beta: Any) -> float:
    beta = config_number(beta, "beta")
    return float(beta)


class Purity(_External):
    """Purity: the share of samples in their cluster's majority class.

    ``sum over clusters of max over classes |cluster & class| / n`` (Manning et al., Introduction
    to Information Retrieval, 16.3). Exact. Memory O(R * C); update O(n); compute O(R * C).

    Examples
    --------
    >>> from streammetrics.clustering import Purity
    >>> Purity().update(["a", "a", "b", "b"], [0, 0, 0, 1]).compute()
    0.75
    """

    higher_is_better: ClassVar[bool | None] = True

    def _value(self, t: _Table) -> float:
        return t.purity()


class MutualInfo(_External):
    """Mutual information between classes and clusters, in nats, as ``mutual_info_score``.

    Exact to floating-point rounding. Memory O(R * C); update O(n); compute O(R * C).

    Examples
    --------
    >>> from streammetrics.clustering import MutualInfo
    >>> round(MutualInfo().update([0, 0, 1, 1], [1, 1, 0, 0]).compute(), 6)
    0.693147
    """

    higher_is_better: ClassVar[bool | None] = True

    def _value(self, t: _Table) -> float:
        return t.mutual_info()


class NormalizedMutualInfo(_External):
    """Normalised mutual information, as ``normalized_mutual_info_score``.

    ``MI / mean(H(true), H(pred))`` with the mean chosen by ``average_method``
    (``"arithmetic"``, ``"geometric"``, ``"min"``, ``"max"``); 1.0 when both labellings are a
    single group. Exact to rounding. Memory O(R * C); compute O(R * C).

    Examples
    --------
    >>> from streammetrics.clustering import NormalizedMutualInfo
    >>> NormalizedMutualInfo().update([0, 0, 1, 1], [1, 1, 0, 0]).compute()
    1.0
    """

    higher_is_better: ClassVar[bool | None] = True

    def __init__(self, average_method: str = "arithmetic") -> None:
        super().__init__()
        self._add_config(average_method=_check_average(average_method))

    def _value(self, t: _Table) -> float:
        return t.nmi(self._config["average_method"])


class AdjustedMutualInfo(_External):
    """Adjusted mutual information, as ``adjusted_mutual_info_score``.

    ``(MI - E[MI]) / (mean(H(true), H(pred)) - E[MI])``, with E[MI] under the permutation model
    (:func:`expected_mutual_info`, vectorised: at 1,000 x 1,000 labels it is hundreds of times
    faster than scikit-learn's loop; see ``docs/benchmarks/clustering.md``). Agrees with
    scikit-learn to about 1e-12. Memory O(R * C); compute O(U_a * U_b * sqrt(n / R)) for U
    distinct class and cluster sizes.

    Examples
    --------
    >>> from streammetrics.clustering import AdjustedMutualInfo
    >>> AdjustedMutualInfo().update([0, 0, 0, 0], [0, 1, 2, 3]).compute()
    0.0
    """

    higher_is_better: ClassVar[bool | None] = True

    def __init__(self, average_method: str = "arithmetic") -> None:
        super().__init__()
        self._add_config(average_method=_check_average(average_method))

    def _value(self, t: _Table) -> float:
        return t.ami(self._config["average_method"])


class RandIndex(_External):
    """Rand index, the share of sample pairs on which both labellings agree (``rand_score``).

    Pair counts are exact integers. Memory O(R * C); compute O(R * C).

    Examples
    --------
    >>> from streammetrics.clustering import RandIndex
    >>> round(RandIndex().update([0, 0, 1, 2], [0, 0, 1, 1]).compute(), 4)
    0.8333
    """

    higher_is_better: ClassVar[bool | None] = True

    def _value(self, t: _Table) -> float:
        return t.rand_index()


class AdjustedRandIndex(_External):
    """Adjusted Rand index (Hubert and Arabie 1985), as ``adjusted_rand_score``.

    Computed from exact integer pair counts (no overflow at any stream length), then one
    correctly rounded division. Memory O(R * C); compute O(R * C).

    Examples
    --------
    >>> from streammetrics.clustering import AdjustedRandIndex
    >>> round(AdjustedRandIndex().update([0, 0, 1, 2], [0, 0, 1, 1]).compute(), 4)
    0.5714
    """

    higher_is_better: ClassVar[bool | None] = True

    def _value(self, t: _Table) -> float:
        return t.adjusted_rand_index()


class ClusterJaccard(_External):
    """Pair-counting Jaccard index: ``tp / (tp + fp + fn)`` over sample pairs.

    tp: pairs together in both labellings; fp, fn: together in only one. 1.0 when no pair is
    together in either (the labellings agree). Exact integers. Memory O(R * C).

    Examples
    --------
    >>> from streammetrics.clustering import ClusterJaccard
    >>> round(ClusterJaccard().update([0, 0, 1, 2], [0, 0, 1, 1]).compute(), 4)
    0.5
    """

    higher_is_better: ClassVar[bool | None] = True

    def _value(self, t: _Table) -> float:
        return t.jaccard()


class FowlkesMallows(_External):
    """Fowlkes-Mallows index ``tp / sqrt((tp + fp)(tp + fn))``, as ``fowlkes_mallows_score``.

    Exact integer pair counts. Memory O(R * C); compute O(R * C).

    Examples
    --------
    >>> from streammetrics.clustering import FowlkesMallows
    >>> round(FowlkesMallows().update([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 2, 2]).compute(), 6)
    0.471405
    """

    higher_is_better: ClassVar[bool | None] = True

    def _value(self, t: _Table) -> float:
        return t.fowlkes_mallows()


class ClusterAccuracy(_External):
    """Clustering accuracy under the best one-to-one mapping of clusters to classes.

    The mapping maximises the matched samples (Hungarian algorithm,
    ``scipy.optimize.linear_sum_assignment``); rectangular tables (more clusters than classes or
    the reverse) leave the surplus unmatched, and their samples count as errors. Exact.
    Memory O(R * C); compute O(min(R, C)**2 * max(R, C)).

    Examples
    --------
    >>> from streammetrics.clustering import ClusterAccuracy
    >>> ClusterAccuracy().update([0, 0, 1, 1, 2], ["b", "b", "a", "a", "a"]).compute()
    0.8
    """

    higher_is_better: ClassVar[bool | None] = True

    def _value(self, t: _Table) -> float:
        return t.accuracy()


class Homogeneity(_External):
    """Homogeneity, ``MI / H(true)`` (1.0 when H(true) = 0), as ``homogeneity_score``.

    Memory O(R * C); compute O(R * C).

    Examples
    --------
    >>> from streammetrics.clustering import Homogeneity
    >>> Homogeneity().update([0, 0, 1, 1], [0, 0, 1, 2]).compute()
    1.0
    """

    higher_is_better: ClassVar[bool | None] = True

    def _value(self, t: _Table) -> float:
        return t.homogeneity_completeness()[0]


class Completeness(_External):
    """Completeness, ``MI / H(pred)`` (1.0 when H(pred) = 0), as ``completeness_score``.

    Memory O(R * C); compute O(R * C).

    Examples
    --------
    >>> from streammetrics.clustering import Completeness
    >>> Completeness().update([0, 0, 1, 1], [0, 0, 0, 0]).compute()
    1.0
    """

    higher_is_better: ClassVar[bool | None] = True

    def _value(self, t: _Table) -> float:
        return t.homogeneity_completeness()[1]


class VMeasure(_External):
    """V-measure, ``(1 + beta) h c / (beta h + c)``, as ``v_measure_score(beta=...)``.

    Memory O(R * C); compute O(R * C).

    Examples
    --------
    >>> from streammetrics.clustering import VMeasure
    >>> round(VMeasure().update([0, 0, 1, 1], [0, 0, 1, 2]).compute(), 6)
    0.8
    """

    higher_is_better: ClassVar[bool | None] = True

    def __init__(self, beta: float = 1.0) -> None:
        super().__init__()
        self._add_config(beta=_check_beta(beta))

    def _value(self, t: _Table) -> float:
        return t.v_measure(self._config["beta"])
