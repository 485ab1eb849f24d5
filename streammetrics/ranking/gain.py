"""Gain-based ranking metrics: DCG, NDCG and cumulative gain over queries."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from ._base import _check_k, _GainMetric, _Ranked, _RankingMetric

__all__ = ["DCG", "NDCG", "CumulativeGain"]


class DCG(_GainMetric):
    """Discounted cumulative gain at ``k``, averaged over queries.

    ``DCG@k = sum_{i=1..k} gain(rel_i) / log2(i + 1)`` over the items ranked by descending score,
    with ``gain="exponential"``: ``2**rel - 1`` (the seed document's definition) or
    ``"linear"``: ``rel``, which is ``sklearn.metrics.dcg_score(y_true, y_score, k=k)`` (one
    query per row there; ``dcg_score(2**rel - 1, ...)`` for the exponential gain). Tied scores
    share their mean gain (scikit-learn's tie averaging). Every query counts. Exact up to float
    rounding; folded sums merge to rounding. Memory: buffered rows + O(1). Update O(b) (O(b log
    b) when complete), merge O(B), compute O(B log B).

    Examples
    --------
    >>> from streammetrics.ranking import DCG
    >>> m = DCG(gain="linear").update([7, 7, 7], [3, 0, 1], [0.9, 0.8, 0.1])
    >>> round(m.compute(), 6)
    3.5
    """

    higher_is_better: ClassVar[bool | None] = True
    _bounds = (0.0, math.inf)  # an unnormalised gain has no upper limit

    def __init__(self, k: Any = None, gain: str = "exponential") -> None:
        super().__init__(k, gain)

    def _values(self, ranked: _Ranked) -> tuple[np.ndarray, np.ndarray]:
        return self._dcg(ranked), np.ones(ranked.n_queries, dtype=bool)


class NDCG(_GainMetric):
    """Normalised discounted cumulative gain at ``k``, averaged over queries.

    ``DCG@k / IDCG@k`` per query, IDCG being the DCG of the items sorted by relevance; gains and
    discounts as :class:`DCG`. ``gain="linear"`` is ``sklearn.metrics.ndcg_score(y_true,
    y_score, k=k)``; ``"exponential"`` (the default, ``2**rel - 1``) is ``ndcg_score`` of
    ``2**rel - 1``. Ties averaged as scikit-learn. A query whose relevances are all zero scores
    0 and counts in the mean, as in scikit-learn; a one-item query is scored too (scikit-learn
    refuses those). Exactness, memory and costs as :class:`DCG`.

    Examples
    --------
    >>> from streammetrics.ranking import NDCG
    >>> m = NDCG().update(["a", "a", "a", "b", "b"], [3, 2, 0, 0, 1], [0.3, 0.9, 0.1, 0.5, 0.5])
    >>> round(m.compute(), 6)
    0.824728
    """

    higher_is_better: ClassVar[bool | None] = True

    def __init__(self, k: Any = None, gain: str = "exponential") -> None:
        super().__init__(k, gain)

    def _values(self, ranked: _Ranked) -> tuple[np.ndarray, np.ndarray]:
        dcg = self._dcg(ranked)
        ideal = self._ideal_dcg(ranked, ranked.relevance)
        out = np.zeros(ranked.n_queries)
        ok = ideal != 0
        out[ok] = dcg[ok] / ideal[ok]
        return out, np.ones(ranked.n_queries, dtype=bool)


class CumulativeGain(_RankingMetric):
    """Cumulative gain at ``k``: the sum of the relevances of the top ``k`` items, averaged over
    queries (no discount, so only which items reach the top ``k`` matters; without ``k`` it is
    the query's total relevance). Ties straddling position ``k`` contribute their mean relevance
    per slot (scikit-learn's tie averaging). Every query counts. Memory and costs as
    :class:`DCG`.

    Examples
    --------
    >>> from streammetrics.ranking import CumulativeGain
    >>> CumulativeGain(k=2).update([1, 1, 1], [3, 0, 1], [0.9, 0.8, 0.1]).compute()
    3.0
    """

    higher_is_better: ClassVar[bool | None] = True
    _bounds = (0.0, math.inf)  # an unnormalised gain has no upper limit

    def __init__(self, k: Any = None) -> None:
        super().__init__()
        self._add_config(k=_check_k(k, True))

    def _values(self, ranked: _Ranked) -> tuple[np.ndarray, np.ndarray]:
        mean_rel = ranked.group_sum(ranked.rel_sorted) / ranked.g_size
        slots = ranked.slots_in_top(self._config["k"])
        return ranked.per_query(mean_rel * slots), np.ones(ranked.n_queries, dtype=bool)
