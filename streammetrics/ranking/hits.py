"""Relevance-hit ranking metrics: precision and recall at k, hit rate, MRR and MAP."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ._base import _check_k, _log_comb, _Ranked, _RankingMetric

__all__ = ["MAP", "MRR", "HitRate", "PrecisionAtK", "RecallAtK"]


def _expected_hits(ranked: _Ranked, k: int | None) -> np.ndarray:
    """Expected relevant items in the top k per query, ties in random order."""
    return ranked.per_query(ranked.g_rel / ranked.g_size * ranked.slots_in_top(k))


class PrecisionAtK(_RankingMetric):
    """Precision at ``k``: relevant items (relevance > 0) among the top ``k``, divided by ``k``
    (also for queries of fewer than ``k`` items), averaged over all queries (those with no
    relevant item score 0). Tied scores straddling position ``k`` count their expected number of
    relevant items. Memory and costs as :class:`DCG`.

    Examples
    --------
    >>> from streammetrics.ranking import PrecisionAtK
    >>> PrecisionAtK(k=2).update([1, 1, 1], [1, 0, 1], [0.9, 0.8, 0.1]).compute()
    0.5
    """

    higher_is_better: ClassVar[bool | None] = True

    def __init__(self, k: int) -> None:
        super().__init__()
        self._add_config(k=_check_k(k, False))

    def _values(self, ranked: _Ranked) -> tuple[np.ndarray, np.ndarray]:
        k = self._config["k"]
        return _expected_hits(ranked, k) / k, np.ones(ranked.n_queries, dtype=bool)


class RecallAtK(_RankingMetric):
    """Recall at ``k``: relevant items (relevance > 0) in the top ``k`` over all relevant items of
    the query, averaged over queries. Queries with no relevant item are left out of the mean and
    counted (:meth:`query_counts`). Ties as :class:`PrecisionAtK`. Memory and costs as
    :class:`DCG`.

    Examples
    --------
    >>> from streammetrics.ranking import RecallAtK
    >>> RecallAtK(k=2).update([1, 1, 1, 2], [1, 0, 1, 0], [0.9, 0.8, 0.1, 0.3]).compute()
    0.5
    """

    higher_is_better: ClassVar[bool | None] = True

    def __init__(self, k: int) -> None:
        super().__init__()
        self._add_config(k=_check_k(k, False))

    def _values(self, ranked: _Ranked) -> tuple[np.ndarray, np.ndarray]:
        scored = ranked.n_rel > 0
        out = np.zeros(ranked.n_queries)
        out[scored] = _expected_hits(ranked, self._config["k"])[scored] / ranked.n_rel[scored]
        return out, scored


class HitRate(_RankingMetric):
    """Hit rate at ``k``: the fraction of queries with at least one relevant item (relevance > 0)
    in the top ``k``; every query counts. When tied scores straddle position ``k`` a query
    scores the probability that a random order of the tie puts a relevant item in the slots left
    (``1 - C(g - r, m) / C(g, m)`` for m slots, g tied items, r of them relevant). Memory and
    costs as :class:`DCG`.

    Examples
    --------
    >>> from streammetrics.ranking import HitRate
    >>> HitRate(k=1).update([1, 1, 2, 2], [1, 0, 0, 1], [0.9, 0.8, 0.7, 0.1]).compute()
    0.5
    """

    higher_is_better: ClassVar[bool | None] = True

    def __init__(self, k: int) -> None:
        super().__init__()
        self._add_config(k=_check_k(k, False))

    def _values(self, ranked: _Ranked) -> tuple[np.ndarray, np.ndarray]:
        k = self._config["k"]
        full = ranked.g_end <= k
        hits_full = ranked.per_query(np.where(full, ranked.g_rel, 0.0))
        cut = (ranked.g_start < k) & ~full
        g, r = ranked.g_size[cut].astype(np.float64), ranked.g_rel[cut]
        m = (k - ranked.g_start[cut]).astype(np.float64)
        hit = np.ones(len(g))
        possible = g - r >= m
        hit[possible] = _hit_chance(g[possible], r[possible], m[possible])
        hit[r == 0] = 0.0
        prob = np.zeros(ranked.n_queries)
        prob[ranked.g_query[cut]] = hit
        return np.where(hits_full > 0, 1.0, prob), np.ones(ranked.n_queries, dtype=bool)


#: The miss probability is taken as a product of this many factors in all (over the groups cut
#: at k, largest last), the rest from log-gamma differences (see _hit_chance).
_PRODUCT_TERMS = 1 << 20


def _hit_chance(g: np.ndarray, r: np.ndarray, m: np.ndarray) -> np.ndarray:
    """P(at least one of ``r`` relevant items among ``g`` tied ones lands in the ``m`` places
    left in the top k): ``1 - C(g - r, m) / C(g, m)``.

    The miss probability is ``prod_{i < a} (1 - b / (g - i))`` with ``a, b`` the smaller and
    larger of ``r, m``: summed as ``log1p`` terms (all groups' terms in one vectorised pass) and
    turned into the hit by ``-expm1``, it keeps full precision when the hit is tiny (one
    relevant item in a tie of ten million: 1e-7, where ``1 - exp`` of log-gamma differences of
    size 1e8 kept one digit; 65 of them: 4.2e-4, which 0.8.4's log-gamma form beyond 64 factors
    had 8e-5 off). Groups past ``_PRODUCT_TERMS`` factors in all take the log-gamma form: a
    group of more than ``_PRODUCT_TERMS / groups`` factors has a hit far from 0."""
    a, b = np.minimum(r, m), np.maximum(r, m)
    hit = np.empty(len(g))
    terms = a.astype(np.int64)
    order = np.argsort(terms, kind="stable")
    exact = np.zeros(len(g), dtype=bool)
    exact[order[np.cumsum(terms[order]) <= _PRODUCT_TERMS]] = True
    if exact.any():
        at = np.flatnonzero(exact)
        counts = terms[at]
        group = np.repeat(np.arange(len(at)), counts)
        step = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        logs = np.log1p(-b[at][group] / (g[at][group] - step))
        hit[at] = -np.expm1(np.bincount(group, weights=logs, minlength=len(at)))
    many = ~exact
    if many.any():
        gm, rm, mm = g[many], r[many], m[many]
        hit[many] = -np.expm1(_log_comb(gm - rm, mm) - _log_comb(gm, mm))
    return hit


class MRR(_RankingMetric):
    """Mean reciprocal rank: ``1 / rank`` of the first relevant item (relevance > 0), averaged
    over queries. Queries with no relevant item are left out and counted (:meth:`query_counts`).
    When the first relevant item is tied with others, the query scores the expected reciprocal
    rank over random orders of the tie: for g tied items, r of them relevant, after s items,
    ``sum_j P(j) / (s + j)`` with ``P(j) = C(g - j, r - 1) / C(g, r)``. Memory and costs as
    :class:`DCG` (compute adds O(size of those ties)).

    Examples
    --------
    >>> from streammetrics.ranking import MRR
    >>> MRR().update([1, 1, 1, 2, 2], [0, 1, 1, 1, 0], [0.9, 0.8, 0.1, 0.7, 0.1]).compute()
    0.75
    """

    higher_is_better: ClassVar[bool | None] = True

    def __init__(self) -> None:
        super().__init__()

    def _values(self, ranked: _Ranked) -> tuple[np.ndarray, np.ndarray]:
        has = np.flatnonzero(ranked.g_rel > 0)
        out = np.zeros(ranked.n_queries)
        scored = ranked.n_rel > 0
        if not len(has):
            return out, scored
        gq = ranked.g_query[has]
        first = has[np.r_[True, gq[1:] != gq[:-1]]]
        s = ranked.g_start[first].astype(np.float64)
        g = ranked.g_size[first].astype(np.float64)
        r = ranked.g_rel[first]
        spots = (g - r + 1).astype(np.int64)
        which = np.repeat(np.arange(len(first)), spots)
        j = np.arange(len(which)) - np.repeat(np.cumsum(spots) - spots, spots) + 1.0
        logp = _log_comb(g[which] - j, r[which] - 1) - _log_comb(g[which], r[which])
        p = np.exp(logp)
        norm = np.bincount(which, weights=p, minlength=len(first))
        rr = np.bincount(which, weights=p / (s[which] + j), minlength=len(first)) / norm
        out[ranked.g_query[first]] = rr
        return out, scored


class MAP(_RankingMetric):
    """Mean average precision at ``k``, over queries with at least one relevant item.

    Without ``k``, a query's AP is ``sklearn.metrics.average_precision_score(relevance > 0,
    scores)``: ``sum_t (R_t - R_{t-1}) P_t`` over the distinct scores t in descending order (a
    tie is one threshold). With ``k``, only the top ``k`` positions count and the sum is divided
    by ``min(k, n_relevant)`` instead of ``n_relevant`` (the usual AP@k); a tie straddling
    position ``k`` contributes its expected relevant items in the slots left, at the precision
    at position ``k``. With ``k`` at least the query's length this is the same as without.
    Queries with no relevant item are left out and counted (:meth:`query_counts`). Memory and
    costs as :class:`DCG`.

    Examples
    --------
    >>> from streammetrics.ranking import MAP
    >>> round(MAP().update([1, 1, 1, 1], [1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1]).compute(), 6)
    0.833333
    """

    higher_is_better: ClassVar[bool | None] = True

    def __init__(self, k: Any = None) -> None:
        super().__init__()
        self._add_config(k=_check_k(k, True))

    def _values(self, ranked: _Ranked) -> tuple[np.ndarray, np.ndarray]:
        k = self._config["k"]
        scored = ranked.n_rel > 0
        r, tp = ranked.g_rel, ranked.tp_end
        if k is None:
            terms = r * tp / ranked.g_end
            denominator = ranked.n_rel
        else:
            full = ranked.g_end <= k
            cut = (ranked.g_start < k) & ~full
            terms = np.where(full, r * tp / ranked.g_end, 0.0)
            expected = r * (k - ranked.g_start) / ranked.g_size
            terms = np.where(cut, expected * (tp - r + expected) / k, terms)
            denominator = np.minimum(ranked.n_rel, k)
        out = np.zeros(ranked.n_queries)
        out[scored] = ranked.per_query(terms)[scored] / denominator[scored]
        return out, scored
