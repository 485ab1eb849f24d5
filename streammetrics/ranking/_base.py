"""The state and update shared by the ranking metrics: per-query buffers, folded sums of
complete queries, and the ranked view of a batch of queries."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from scipy.special import gammaln

from .._codec import COUNT_LIMIT, CountOverflowError, check_sum
from .._config_values import config_flag, config_int
from .._input_labels import as_labels
from .._inputs import as_scores, check_same_length
from .._keyed import Keyed
from ..base import Metric
from ..errors import InputError
from ..states._order import SMALL, grouped_order, lex_order, small_levels
from ..states.labels import key_hash, unique_codes
from ..states.queries import QueryBuffers
from ..uncertainty import NAN_INTERVAL, check_level, t_interval

_GAINS = ("exponential", "linear")
# Relevance bounds, so that gains summed over any rows a state can hold (2**53) stay finite:
# relevance itself (linear gain, cumulative gain) at most 2**200, 2**rel - 1 at most 2**200.
_MAX_RELEVANCE = 2.0**200
_MAX_EXP_RELEVANCE = 200.0


class _Ranked:
    """Rows of many queries sorted by (query, score descending), cut into tie groups.

    Per query (index 0..Q-1): ``length``, ``n_rel`` (items with relevance > 0). Per tie group
    (equal score within a query, in rank order): ``query``, ``start`` and ``end`` (0-based
    positions within the query, end exclusive), ``size``, ``n_rel`` and ``tp_end`` (relevant
    items ranked at or above the group's end). ``row_order`` sorts the input rows into rank
    order; ``g_first`` maps each group to its first sorted row.
    """

    def __init__(
        self,
        query: np.ndarray,
        relevance: np.ndarray,
        score: np.ndarray,
        canonical: bool = False,
    ) -> None:
        n = len(query)
        new_q = np.ones(n, dtype=bool)
        if canonical:
            # Rows sorted by (query, score, relevance), as a buffer holds them: within each
            # query, rank order is its runs of equal score in reverse, each run kept in
            # ascending relevance (no sort): ties in the order 0.8.24's stable sort gave them
            # below 16,384 rows (a tie's gains are summed in that order, and float sums
            # depend on it).
            new_q[1:] = query[1:] != query[:-1]
            codes = np.cumsum(new_q) - 1
            q_first = np.flatnonzero(new_q)
            q_end = np.append(q_first[1:], n)
            new_run = new_q.copy()
            new_run[1:] |= score[1:] != score[:-1]
            run = np.cumsum(new_run) - 1
            run_first = np.flatnonzero(new_run)
            run_end = np.append(run_first[1:], n)
            at = np.arange(n)
            # a row's place: its query's start, the runs after its own, its place in its run
            place = (q_first + q_end)[codes] - run_end[run] + (at - run_first[run])
            order = np.empty(n, dtype=np.int64)
            order[place] = at
            c, s = codes, score[order]
        else:
            uniq, codes = unique_codes(query)
            order = None
            graded = small_levels(relevance) if n >= SMALL else None
            if graded is not None:
                # One sort of (query, score descending, relevance): ties in ascending
                # relevance, as the open buffers' rows are read (0.8.24 left them in the
                # order of an unstable sort).
                grades, levels = graded
                order = grouped_order(codes, len(uniq), 0.0 - score, grades, levels)
            if order is None:
                order = lex_order([codes, -score])
            c, s = codes[order], score[order]
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
    k = config_int(k, "k", maximum=COUNT_LIMIT)  # (a larger cut-off than any count cuts nothing)
    return int(k)


def _check_moments(total: float, spread: float) -> None:
    """``CountOverflowError`` unless the folded total is finite and the spread finite (or nan,
    unknown): a state past them could not be read back."""
    if not (math.isfinite(total) and (math.isnan(spread) or math.isfinite(spread))):
        raise CountOverflowError(
            "ranking totals: the per-query values (or their spread) would pass the largest "
            "float; refused, the state is unchanged"
        )


def _chan(n_a: int, total_a: float, m2_a: float, n_b: int, total_b: float, m2_b: float) -> float:
    """The sum of squared deviations of two groups of values together, from each group's size,
    sum and own sum of squared deviations (Chan, Golub and LeVeque, 1979): every term is of the
    size of the spread, never of the mean."""
    if n_a == 0 or n_b == 0:
        return m2_b if n_a == 0 else m2_a
    delta = total_b / n_b - total_a / n_a
    return m2_a + m2_b + delta * delta * (n_a * n_b / (n_a + n_b))


class _RankingMetric(Keyed, Metric, register=False):
    """Per-query buffers, the folded sums, and the update/compute protocol of every ranking
    metric. Subclasses define ``_values(ranked) -> (per-query values, scored mask)``."""

    #: 2: the state gained ``total_sq``, the sum of squared per-query values (for ``interval``).
    #: 3: ``spread`` replaces it: the sum of squared deviations of the folded per-query values
    #: from their mean, merged with Chan's formula (a sum of squares minus the squared mean lost
    #: every digit of the spread when values are large and close, as DCGs of high grades are).
    _schema: ClassVar[int] = 3

    buffer: QueryBuffers
    total: float
    queries: int
    skipped: int
    spread: float
    key_argument = 0  # query_ids

    def __init__(self) -> None:
        super().__init__()
        self._add_state("buffer", QueryBuffers(), merge=None)
        self._add_state("total", 0.0)
        self._add_state("queries", 0)
        self._add_state("skipped", 0)
        self._add_state("spread", 0.0, merge=None)  # merged in _merge_many (Chan's formula)
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
        complete = config_flag(complete, "complete")  # "no" is not True
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
        spread, total = self._spread_with(kept), self.total + float(kept.sum())
        _check_moments(total, spread)
        return self._commit(
            n,
            buffer=rest,
            spread=spread,
            total=total,
            queries=self.queries + int(scored.sum()),
            skipped=self.skipped + int((~scored).sum()),
        )

    def _check_relevance(self, rel: np.ndarray) -> None:
        """Relevance within the bound that keeps sums of gains finite (also on decoding)."""
        if rel.size and not rel.max() <= _MAX_RELEVANCE:
            raise InputError(
                f"relevance: at most 2**200 (sums of gains must stay finite); found {rel.max()}"
            )

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
        return self._values(_Ranked(q, r, s, canonical=True))

    def _compute(self) -> float:
        values, scored = self._open()
        n = self.queries + int(scored.sum())
        if n == 0:
            return math.nan
        return (self.total + float(values[scored].sum())) / n

    def _spread_with(self, values: np.ndarray) -> float:
        """``spread`` after folding per-query ``values`` into this state."""
        if not len(values):
            return self.spread
        mean = float(values.mean())
        dev = values - mean
        m2 = float(dev @ dev) - float(dev.sum()) ** 2 / len(values)  # two-pass, corrected
        return _chan(self.queries, self.total, self.spread, len(values), float(values.sum()), m2)

    def _merged_spread(self, others: list[Any] | tuple[Any, ...]) -> float:
        """The spread of this state merged with ``others``; ``CountOverflowError`` if it or
        the total would pass the largest float (a state whose bytes ``loads`` refuses)."""
        spread, queries, total = self.spread, self.queries, self.total
        for o in others:
            spread = _chan(queries, total, spread, o.queries, o.total, o.spread)
            queries, total = queries + o.queries, total + o.total
        _check_moments(total, spread)
        return spread

    def _merge_many(self, others: list[Any], join: bool = False) -> None:
        spread = self._merged_spread(others)
        super()._merge_many(others, join)
        self.spread = spread

    @classmethod
    def _upgrade_state(cls, state: Any, schema: int) -> Any:
        """Schema 1 (0.1.0) kept no second moment: zero when no query was folded, else unknown
        (nan, so ``interval`` is nan). Schema 2 kept ``total_sq``, the sum of squares: the spread
        is ``total_sq - total**2 / queries`` (as 0.8 computed it, with its cancellation). Values
        and merges are unchanged."""
        if not isinstance(state, dict) or schema >= 3:
            return state
        state = dict(state)
        queries, total = state.get("queries"), state.get("total")
        square = state.pop("total_sq", None) if schema == 2 else None
        if queries == 0:
            state["spread"] = 0.0
        elif isinstance(square, float) and isinstance(total, float) and isinstance(queries, int):
            state["spread"] = max(square - total * total / queries, 0.0)
        else:
            state["spread"] = math.nan
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
        if q == 0:
            return NAN_INTERVAL
        mean = (self.total + float(kept.sum())) / q
        return t_interval(mean, self._spread_with(kept) / q, float(q), level, self._bounds)

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
        # Folded query counts stay within 2**53 and the folded total finite. (Not the 2**100
        # bound of weights: a per-query value may pass it with the relevance update allows.)
        check_sum("ranking rows", "i", self.count, other.count)
        self._merged_spread((other,))

    def _check_compatible_together(self, others: tuple[Any, ...]) -> None:
        super()._check_compatible_together(others)
        # Each operand was checked against this state alone: an empty one took both an int-id
        # and a str-id operand, whose ids the buffers' concatenation then made strings alike
        # (a review found query 1 and query "1" joined).
        self.buffer.check_mergeable_together([o.buffer for o in others])
        self._merged_spread(others)

    def _validate_state(self) -> None:
        if self.queries < 0 or self.skipped < 0:
            raise ValueError("query counts must be non-negative")
        if self.count > COUNT_LIMIT:
            raise ValueError("more than 2**53 rows counted")
        if not (math.isfinite(self.total) and self.total >= 0):
            raise ValueError("the folded total must be finite and non-negative")
        low, top = self._bounds
        if self.queries == 0 and self.total != 0:  # (DCG's is unbounded: no check below)
            raise ValueError("a folded total without folded queries")
        if math.isfinite(top) and self.total > top * self.queries * (1 + 1e-12):
            raise ValueError(f"the folded total passes {top:g} per scored query")
        if math.isfinite(top) and self.queries and not math.isnan(self.spread):
            # Popoviciu: q values within [low, top] spread at most (top - low)**2 times
            # floor(q / 2) ceil(q / 2) / q (half at each end); 0 for one query.
            q, width = self.queries, (top - low) ** 2
            most = width * (q // 2) * (q - q // 2) / q
            if self.spread > most * (1 + 1e-9) + 1e-12 * width:
                raise ValueError("the folded spread passes what values in range can spread")
        if not (math.isnan(self.spread) or (math.isfinite(self.spread) and self.spread >= 0)):
            raise ValueError("the folded spread must be finite and non-negative (or nan)")
        if self.queries == 0 and self.spread != 0 and not math.isnan(self.spread):
            raise ValueError("a spread without folded queries")
        if self.spread > self.total * self.total * (1 + 1e-9):
            # Non-negative values: sum (x - m)**2 <= sum x**2 <= (sum x)**2. (A forged spread
            # past it turned infinite in a merge, whose bytes loads then refused.)
            raise ValueError("the folded spread passes the squared total")
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
        super()._check_relevance(rel)
        if self._config["gain"] == "exponential" and rel.size and rel.max() > _MAX_EXP_RELEVANCE:
            raise InputError(
                f"relevance: at most {_MAX_EXP_RELEVANCE:g} with exponential gain "
                f"(2**rel - 1 must stay within 2**200); found {rel.max()}"
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
        codes, queries = ranked.codes, ranked.n_queries
        graded = small_levels(relevance)
        if graded is not None and queries * graded[1] <= 4 * len(codes) + 1024:
            # Graded relevance: each query's relevances in descending order, from a count per
            # (query, grade): no sort. The same sequence as the sort gives (equal grades are
            # alike), so the same sums.
            grades, levels = graded
            counts = np.bincount(codes * levels + (levels - 1 - grades), minlength=queries * levels)
            top_down = np.arange(levels - 1, -1, -1, dtype=np.float64)
            rel = np.repeat(np.tile(top_down, queries), counts)
            c = np.repeat(np.arange(queries), ranked.length)
        else:
            order = lex_order([codes, -relevance])
            c, rel = codes[order], relevance[order]
        first = np.r_[0, np.cumsum(ranked.length)[:-1]]
        pos = np.arange(len(c)) - first[c]
        discount = np.diff(_discount_cumsum(int(ranked.length.max()), k))
        return np.bincount(c, weights=self._gain(rel) * discount[pos], minlength=queries)
