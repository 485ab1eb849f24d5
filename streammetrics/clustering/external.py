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
:func:`~streammetrics.clustering._table.expected_mutual_info`) and accuracy (the Hungarian
algorithm: O(min(R, C)**2 * max(R, C))).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .._config_values import config_number
from .._input_labels import as_labels
from .._inputs import check_same_length
from ..base import Metric
from ..errors import InputError
from ..states.contingency import ContingencyCounts
from ._table import _AVERAGE_METHODS, _Table

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


class _External(Metric, register=False):
    """Shared state and update of every external index: a (class, cluster) contingency table."""

    counts: ContingencyCounts
    #: No ``sample_weight``, but its rows are independent units: ``Bootstrap`` resamples them
    #: (each row repeated by its Poisson count in each replicate).
    bootstrap_by_rows: ClassVar[bool] = True

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
        self.counts.check_mergeable(batch)
        self.counts.merge(batch)  # in place when no new class or cluster arrives
        return self._commit(n)

    def _validate_state(self) -> None:
        counts = self.counts
        if counts.dtype != np.int64:
            raise ValueError("clustering counts must be int64")
        if int(counts.total()) != self._count:
            raise ValueError("the counts do not add up to count")
        if min(counts.shape) and (counts.row_sums().min() == 0 or counts.col_sums().min() == 0):
            raise ValueError("every class and cluster must have been seen")

    def _stats(self) -> _Table:
        return _Table(self.counts)

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
    bootstrap_by_rows: ClassVar[bool] = False  # a dict of values: no percentile interval

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
