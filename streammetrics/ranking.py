"""Ranking metrics over queries whose rows may arrive in many updates and on many shards.

Each metric is updated with ``(query_ids, relevance, scores)``: one row per (query, item), the
item's graded relevance (non-negative; "relevant" means ``relevance > 0`` for the binary
metrics) and the model's score. ``compute`` returns the mean over queries of a per-query value.

Rows of one query may be spread over updates and shards (an impression log is not sorted by
user), so rows are kept in per-query buffers
(:class:`~streammetrics.states.queries.QueryBuffers`) until the query is complete; merging joins
the buffers, so the merged answer equals the single-stream one. The caller may say that a batch
holds complete queries (``update(..., complete=True)``): those queries are scored at once and
folded into three running sums (sum of per-query values, queries scored, queries skipped), so
memory stays bounded by the open queries.

``complete=True`` promises that every row of each query id in the batch is in this batch or
already buffered in *this* metric; the buffered rows are taken out and scored with the batch. A
query marked complete must not reappear: its later rows (or rows of it buffered on another
shard and merged in later) would be scored as a separate query, so it would be counted twice.
This is not detected, because detecting it would mean remembering every completed query id, the
memory ``complete=True`` exists to save.

Ties in scores are averaged as scikit-learn's ``ndcg_score`` averages them (McSherry & Najork,
2008): a metric that is a sum over ranks (DCG, NDCG, CG, precision, recall, AP's precision
terms) gives each item of a tied group the group's mean gain, which is the expected value over
every order of the tied items; :class:`HitRate` and :class:`MRR` take that expectation
exactly (hypergeometric). :class:`MAP` without ``k`` is scikit-learn's
``average_precision_score`` of each query, whose thresholds are the distinct scores.

Exactness: a state of buffered rows only is split-invariant byte for byte (the rows are kept in
canonical order). The folded sums are float sums: split-invariant to rounding (1e-12 relative).

Memory: three values per buffered row, O(1) per completed query. ``update``: O(b) for b rows
(O(b log b + B log B) with ``complete=True``, B rows buffered). ``merge``: O(B).
``compute``: O(B log B).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from scipy.special import gammaln

from ._codec import COUNT_LIMIT, check_sum
from ._inputs import as_labels, as_scores, check_same_length, config_int
from ._keyed import Keyed
from .base import Metric
from .errors import InputError
from .states.labels import key_hash, unique_codes
from .states.queries import QueryBuffers
from .uncertainty import NAN_INTERVAL, check_level, mean_interval

__all__ = [
    "DCG",
    "MAP",
    "MRR",
    "NDCG",
    "CumulativeGain",
    "HitRate",
    "PrecisionAtK",
    "RecallAtK",
]

_GAINS = ("exponential", "linear")
# 2**rel - 1 overflows float64 beyond this relevance.
_MAX_EXP_RELEVANCE = 1023.0


class _Ranked:
    """Rows of many queries sorted by (query, score descending), cut into tie groups.

    Per query (index 0..Q-1): ``length``, ``n_rel`` (items with relevance > 0). Per tie group
    (equal score within a query, in rank order): ``query``, ``start`` and ``end`` (0-based
    positions within the query, end exclusive), ``size``, ``n_rel`` and ``tp_end`` (relevant
    items ranked at or above the group's end). ``row_order`` sorts the input rows into rank
    order; ``g_first`` maps each group to its first sorted row.
    """

    def __init__(self, query: np.ndarray, relevance: np.ndarray, score: np.ndarray) -> None:
        _, codes = unique_codes(query)
        order = np.lexsort((-score, codes))
        c, s = codes[order], score[order]
        n = len(c)
        new_q = np.ones(n, dtype=bool)
        new_q[1:] = c[1:] != c[:-1]
        q_first = np.flatnonzero(new_q)
        self.n_queries = len(q_first)
        self.length = np.diff(np.append(q_first, n))
        self.codes = codes
        self.row_order = order
        pos = np.arange(n) - q_first[c]
        new_g = new_q.copy()
        new_g[1:] |= s[1:] != s[:-1]
        g_first = np.flatnonzero(new_g)
        self.g_first = g_first
        self.relevance = relevance
        self.g_query = c[g_first]
        self.g_start = pos[g_first]
        self.g_size = np.diff(np.append(g_first, n))
        self.g_end = self.g_start + self.g_size
        rel_sorted = relevance[order]
        self.rel_sorted = rel_sorted
        hit = (rel_sorted > 0).astype(np.float64)
        self.g_rel = np.add.reduceat(hit, g_first) if n else hit
        self.n_rel = np.bincount(self.g_query, weights=self.g_rel, minlength=self.n_queries)
        # Relevant items at or above each group's end, within its query.
        run = np.cumsum(self.g_rel)
        q_first_group = np.flatnonzero(np.r_[True, self.g_query[1:] != self.g_query[:-1]])
        before = (run - self.g_rel)[q_first_group]
        self.tp_end = run - before[self.g_query]

    def group_sum(self, values: np.ndarray) -> np.ndarray:
        """Sum of a per-sorted-row quantity over each tie group."""
        return np.asarray(np.add.reduceat(values, self.g_first))

    def per_query(self, group_values: np.ndarray) -> np.ndarray:
        return np.bincount(self.g_query, weights=group_values, minlength=self.n_queries)

    def slots_in_top(self, k: int | None) -> np.ndarray:
        """How many of each group's positions lie in the top ``k`` (all of them without k)."""
        if k is None:
            return self.g_size.astype(np.float64)
        slots = np.minimum(self.g_end, k) - np.minimum(self.g_start, k)
        return np.asarray(slots, dtype=np.float64)


def _log_comb(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(gammaln(a + 1.0) - gammaln(b + 1.0) - gammaln(a - b + 1.0))


def _discount_cumsum(length: int, k: int | None) -> np.ndarray:
    """``D[i]`` = sum of the first i discounts 1 / log2(pos + 1), zero past ``k`` (as sklearn)."""
    discount = 1 / (np.log(np.arange(length) + 2) / np.log(2))
    if k is not None:
        discount[k:] = 0
    return np.concatenate([[0.0], np.cumsum(discount)])


def _check_k(k: Any, optional: bool) -> int | None:
    if k is None and optional:
        return None
    k = config_int(k, "k")
    return int(k)


class _RankingMetric(Keyed, Metric, register=False):
    """Per-query buffers, the folded sums, and the update/compute protocol of every ranking
    metric. Subclasses define ``_values(ranked) -> (per-query values, scored mask)``."""

    #: 2: the state gained ``total_sq``, the sum of squared per-query values (for ``interval``).
    _schema: ClassVar[int] = 2

    buffer: QueryBuffers
    total: float
    queries: int
    skipped: int
    total_sq: float
    key_argument = 0  # query_ids

    def __init__(self) -> None:
        super().__init__()
        self._add_state("buffer", QueryBuffers(), merge=None)
        self._add_state("total", 0.0)
        self._add_state("queries", 0)
        self._add_state("skipped", 0)
        self._add_state("total_sq", 0.0)
        # Relevance grades are few: each is trusted once accepted, like a label.
        self._declare_rows("key", "label", "number", weights=False)

    # -- update --------------------------------------------------------------------------------

    def update(self, query_ids: Any, relevance: Any, scores: Any, complete: bool = False) -> Any:
        """Add rows ``(query id, relevance, score)``.

        With ``complete=True`` the batch holds the last rows of each of its queries (their other
        rows, if any, are buffered in this metric): they are scored now and folded into O(1)
        sums. Otherwise the rows are buffered until ``compute`` (or a later complete batch).

        Complexity: O(b) buffered; O(b log b + B log B) with ``complete=True``.
        """
        q = as_labels(query_ids, "query_ids")
        rel = as_scores(relevance, "relevance")
        score = as_scores(scores, "scores")
        n = check_same_length(query_ids=q, relevance=rel, scores=score)
        if n and rel.min() < 0:
            raise InputError(f"relevance: must be non-negative; found {rel.min()}")
        self._check_relevance(rel)
        self.buffer.check_query_ids(q, "query_ids")
        if n == 0:
            return self
        rel, score = rel + 0.0, score + 0.0  # -0.0 -> 0.0, so the canonical order is unique
        if not complete:
            return self._commit(n, buffer=self.buffer.appended(q, rel, score))
        (bq, br, bs), rest = self.buffer.take(np.unique(q))
        if len(bq):
            q, rel, score = (
                np.concatenate([q, bq]),
                np.concatenate([rel, br]),
                np.concatenate([score, bs]),
            )
        values, scored = self._values(_Ranked(q, rel, score))
        kept = values[scored]
        return self._commit(
            n,
            buffer=rest,
            total_sq=self.total_sq + float(kept @ kept),
            total=self.total + float(values[scored].sum()),
            queries=self.queries + int(scored.sum()),
            skipped=self.skipped + int((~scored).sum()),
        )

    def _check_relevance(self, rel: np.ndarray) -> None:
        """Further checks on relevance (exponential gain: overflow)."""

    def _split(self, parts: int) -> list[Any]:
        # Buffered rows go with their query; queries already folded into sums stay in part 0.
        q, r, s = self.buffer.rows()
        part_of = key_hash(q) % np.uint64(parts)
        out = []
        for i in range(parts):
            keep = part_of == i
            metric = type(self)._from_config(self._config)
            rows = int(keep.sum())
            if i == 0:
                rows += self._count - len(q)
                folded = {k: getattr(self, k) for k in self._fields if k != "buffer"}
                metric._commit(0, **folded)
            metric._commit(rows, buffer=QueryBuffers().appended(q[keep], r[keep], s[keep]))
            out.append(metric)
        return out

    # -- compute -------------------------------------------------------------------------------

    def _open(self) -> tuple[np.ndarray, np.ndarray]:
        q, r, s = self.buffer.rows()
        if not len(q):
            return np.empty(0), np.empty(0, dtype=bool)
        return self._values(_Ranked(q, r, s))

    def _compute(self) -> float:
        values, scored = self._open()
        n = self.queries + int(scored.sum())
        if n == 0:
            return math.nan
        return (self.total + float(values[scored].sum())) / n

    @classmethod
    def _upgrade_state(cls, state: Any, schema: int) -> Any:
        """Schema 1 (0.1.0) kept no ``total_sq``: zero when no query was folded, else unknown
        (nan, so ``interval`` is nan); values and merges are unchanged."""
        if schema < 2 and isinstance(state, dict) and "total_sq" not in state:
            state = {**state, "total_sq": 0.0 if state.get("queries") == 0 else math.nan}
        return state

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Student-t interval over the per-query values: ``mean -/+ t s / sqrt(Q)`` with ``s``
        the sample standard deviation of the ``Q`` scored queries' values (folded and buffered),
        ``Q - 1`` degrees of freedom: queries are the sampled units (the central limit theorem
        for a mean of independent per-query values). ``nan, nan`` below two queries.
        O(buffered rows).
        """
        level = check_level(level)
        if self.count == 0:
            return NAN_INTERVAL
        values, scored = self._open()
        kept = values[scored]
        q = self.queries + len(kept)
        total = self.total + float(kept.sum())
        square = self.total_sq + float(kept @ kept)
        return mean_interval(float(q), total, square, float(q), level, self._bounds)

    #: The range of a per-query value, to clip intervals to.
    _bounds: ClassVar[tuple[float, float]] = (0.0, 1.0)

    def query_counts(self) -> dict[str, int]:
        """Queries seen: ``scored`` (in the mean) and ``skipped`` (no relevant item, for the
        metrics that leave those out), counting buffered queries as if complete."""
        _, scored = self._open()
        return {
            "scored": self.queries + int(scored.sum()),
            "skipped": self.skipped + int((~scored).sum()),
        }

    def open_queries(self) -> int:
        """Rows currently buffered (of queries not yet declared complete)."""
        return len(self.buffer)

    def _values(self, ranked: _Ranked) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _check_compatible(self, other: Any) -> None:
        super()._check_compatible(other)
        # Folded query counts stay within 2**53 and the folded total finite.
        check_sum("ranking rows", "i", self.count, other.count)
        check_sum("ranking totals", "f", self.total, other.total)

    def _validate_state(self) -> None:
        if self.queries < 0 or self.skipped < 0:
            raise ValueError("query counts must be non-negative")
        if self.count > COUNT_LIMIT:
            raise ValueError("more than 2**53 rows counted")
        if not (math.isfinite(self.total) and self.total >= 0):
            raise ValueError("the folded total must be finite and non-negative")
        if self.count < len(self.buffer) + self.queries + self.skipped:
            raise ValueError("fewer rows counted than buffered rows and folded queries")
        self._check_relevance(self.buffer.rows()[1])


class _GainMetric(_RankingMetric, register=False):
    def __init__(self, k: Any, gain: str, optional_k: bool = True) -> None:
        super().__init__()
        if gain not in _GAINS:
            raise InputError(f"gain: must be one of {_GAINS}; got {gain!r}")
        self._add_config(k=_check_k(k, optional_k), gain=gain)

    def _check_relevance(self, rel: np.ndarray) -> None:
        if self._config["gain"] == "exponential" and rel.size and rel.max() > _MAX_EXP_RELEVANCE:
            raise InputError(
                f"relevance: at most {_MAX_EXP_RELEVANCE:g} with exponential gain "
                f"(2**rel - 1 overflows); found {rel.max()}"
            )

    def _gain(self, rel: np.ndarray) -> np.ndarray:
        if self._config["gain"] == "exponential":
            return np.asarray(np.exp2(rel) - 1.0)
        return rel

    def _dcg(self, ranked: _Ranked) -> np.ndarray:
        k = self._config["k"]
        cum = _discount_cumsum(int(ranked.length.max()), k)
        mean_gain = ranked.group_sum(self._gain(ranked.rel_sorted)) / ranked.g_size
        return ranked.per_query(mean_gain * (cum[ranked.g_end] - cum[ranked.g_start]))

    def _ideal_dcg(self, ranked: _Ranked, relevance: np.ndarray) -> np.ndarray:
        k = self._config["k"]
        codes = ranked.codes
        order = np.lexsort((-relevance, codes))
        c = codes[order]
        first = np.r_[0, np.cumsum(ranked.length)[:-1]]
        pos = np.arange(len(c)) - first[c]
        discount = np.diff(_discount_cumsum(int(ranked.length.max()), k))
        return np.bincount(
            c, weights=self._gain(relevance[order]) * discount[pos], minlength=ranked.n_queries
        )


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
        miss = np.zeros(len(g))
        possible = g - r >= m
        miss[possible] = np.exp(
            _log_comb(g[possible] - r[possible], m[possible]) - _log_comb(g[possible], m[possible])
        )
        miss[r == 0] = 1.0
        prob = np.zeros(ranked.n_queries)
        prob[ranked.g_query[cut]] = 1.0 - miss
        return np.where(hits_full > 0, 1.0, prob), np.ones(ranked.n_queries, dtype=bool)


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
