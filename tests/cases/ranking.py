"""Conformance cases for the ranking metrics.

Buffered rows are kept in canonical order, so metrics fed open queries are exact (same bytes for
any split); batches of complete queries fold into float sums (exact=False, equal to rounding).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from streammetrics import ranking as K
from tests.harness import Batch, Case, row_calls

QUERIES = np.array(["u1", "u2", "u3", "u4", "u5", "u6"])


def _open(strings: bool = False):
    """Rows of a few queries, each query spread over many batches (never complete)."""

    def batch(rng: np.random.Generator, n: int):
        q = rng.integers(0, 6, n)
        ids = QUERIES[q] if strings else q * 1000 + 7
        rel = rng.integers(0, 4, n).astype(float) * (q % 3 != 0)  # some queries all zero
        return (ids, rel, rng.integers(0, 5, n) / 4.0), {}

    return batch


def _complete(rng: np.random.Generator, n: int):
    """A batch of whole queries with ids unique to the batch."""
    n_q = max(1, n // 6)
    base = int(rng.integers(0, 2**40)) * 64
    ids = base + rng.integers(0, n_q, n)
    rel = rng.integers(0, 3, n).astype(float) * (rng.random(n) < 0.7)
    return (ids, rel, rng.integers(0, 5, n) / 4.0), {"complete": True}


BAD = [
    (([1, 1, 2], [1.0, 0.0], [0.5, 0.2, 0.1]), {}),
    (([1, 1], [1.0, -1.0], [0.5, 0.2]), {}),
    (([1, 1], [1.0, 0.0], [0.5, float("nan")]), {}),
    (([1, 1], [1.0, float("inf")], [0.5, 0.2]), {}),
    (([1.5, 1], [1.0, 0.0], [0.5, 0.2]), {}),
    ((["a", "b"], [1.0, 0.0], [0.5, 0.2]), {}),
    (([[1, 1]], [[1.0, 0.0]], [[0.5, 0.2]]), {}),
]
# Once queries are folded their ids are forgotten, so a complete-only state accepts either kind.
BAD_FOLDED = [b for b in BAD if not isinstance(b[0][0][0], str)]
BAD_STR = [(([1, 2], [1.0, 0.0], [0.5, 0.2]), {}), ((["a"], [-1.0], [0.5]), {})]
TOL = {"exact": False, "rtol": 1e-12, "atol": 1e-15}

CASES = [
    Case("NDCG", K.NDCG, _open(), BAD, other=lambda: K.NDCG(gain="linear")),
    Case(
        "NDCG-linear-k-complete",
        lambda: K.NDCG(k=3, gain="linear"),
        _complete,
        [*BAD_FOLDED, (([1, 1], [1.0, -2.0], [0.5, 0.2]), {"complete": True})],
        **TOL,
        other=lambda: K.NDCG(k=4, gain="linear"),
    ),
    Case(
        "NDCG-exp-overflow",
        lambda: K.NDCG(k=2),
        _open(True),
        [*BAD_STR, ((["a"], [2000.0], [0.5]), {})],
        other=K.NDCG,
    ),
    Case("DCG", lambda: K.DCG(k=5), _open(), BAD, other=K.DCG),
    Case("DCG-complete", lambda: K.DCG(gain="linear"), _complete, BAD_FOLDED, **TOL, other=K.DCG),
    Case(
        "CumulativeGain",
        lambda: K.CumulativeGain(k=2),
        _open(True),
        BAD_STR,
        other=K.CumulativeGain,
    ),
    Case(
        "CumulativeGain-complete",
        K.CumulativeGain,
        _complete,
        BAD_FOLDED,
        **TOL,
        other=lambda: K.CumulativeGain(k=1),
    ),
    Case("MAP", K.MAP, _open(), BAD, other=lambda: K.MAP(k=3)),
    Case("MAP-k-complete", lambda: K.MAP(k=3), _complete, BAD_FOLDED, **TOL, other=K.MAP),
    Case("MRR", K.MRR, _open(True), BAD_STR),
    Case("MRR-complete", K.MRR, _complete, BAD_FOLDED, **TOL),
    Case(
        "PrecisionAtK", lambda: K.PrecisionAtK(k=3), _open(), BAD, other=lambda: K.PrecisionAtK(k=2)
    ),
    Case("PrecisionAtK-complete", lambda: K.PrecisionAtK(k=2), _complete, BAD_FOLDED, **TOL),
    Case("RecallAtK", lambda: K.RecallAtK(k=3), _open(), BAD, other=lambda: K.RecallAtK(k=1)),
    Case("RecallAtK-complete", lambda: K.RecallAtK(k=2), _complete, BAD_FOLDED, **TOL),
    Case("HitRate", lambda: K.HitRate(k=2), _open(True), BAD_STR, other=lambda: K.HitRate(k=1)),
    Case("HitRate-complete", lambda: K.HitRate(k=1), _complete, BAD_FOLDED, **TOL),
]


def _query_rows(batch: Batch, scalars: bool) -> list[list[Batch]]:
    """A complete batch one row at a time, query by query: each query's rows open
    (``complete=False``) but its last, which closes the query with the rows buffered before it
    (as a server sees a query's results one by one, the last one known to be the last)."""
    (ids, rel, scores), _ = batch
    if not len(ids):
        return [[batch]]
    queries: dict[int, list[tuple[Any, ...]]] = {}
    for i, (args, _) in enumerate(row_calls(((ids, rel, scores), {}), scalars)):
        queries.setdefault(int(ids[i]), []).append(args)
    return [
        [(args, {"complete": j == len(rows) - 1}) for j, args in enumerate(rows)]
        for rows in queries.values()
    ]


# A complete batch means "these are the last rows of their queries": cut into single rows it
# would close each query after its first row, and rows of one query spread over shards would
# be scored as separate queries. Those cases are fed whole batches, or one query at a time.
for _case in CASES:
    if _case.batch is _complete:
        _case.rows = False
        _case.samples = _query_rows
