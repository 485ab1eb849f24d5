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

from .gain import DCG, NDCG, CumulativeGain
from .hits import MAP, MRR, HitRate, PrecisionAtK, RecallAtK

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
