"""Ranking metrics against scikit-learn (and brute-force expectations over tie orders), with
queries split randomly over updates and shards, complete and open, through bytes."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import average_precision_score, dcg_score, ndcg_score

import streammetrics as sm
from streammetrics import ranking as K
from streammetrics.states.queries import QueryBuffers


def _queries(seed, n_queries=400, max_len=12, levels=4):
    """Queries of 2..max_len items with graded relevance, coarse scores (many ties), some
    queries all-zero."""
    rng = np.random.default_rng(seed)
    out = []
    for q in range(n_queries):
        n = int(rng.integers(2, max_len + 1))
        rel = rng.integers(0, levels, n).astype(float) * (rng.random() < 0.85)
        out.append((q * 7919 + 11, rel, rng.integers(0, 5, n) / 4.0))
    return out


def _rows(queries):
    ids = np.concatenate([np.full(len(r), q) for q, r, _ in queries])
    rel = np.concatenate([r for _, r, _ in queries])
    score = np.concatenate([s for _, _, s in queries])
    return ids, rel, score


def _split_feed(make, queries, seed, n_shards=5, complete_share=0.5):
    """Each query's rows are scattered: most queries over random shards and batches (open);
    some go whole, in complete=True batches. Shards merge through bytes in random order."""
    rng = np.random.default_rng(seed)
    shards = [make() for _ in range(n_shards)]
    whole = [q for q in queries if rng.random() < complete_share]
    opened = [q for q in queries if all(q is not w for w in whole)]
    ids, rel, score = _rows(opened)
    perm = rng.permutation(len(ids))
    for idx in np.array_split(perm, 37):
        shards[int(rng.integers(n_shards))].update(ids[idx], rel[idx], score[idx])
    for start in range(0, len(whole), 9):
        ids, rel, score = _rows(whole[start : start + 9])
        p = rng.permutation(len(ids))
        shards[int(rng.integers(n_shards))].update(ids[p], rel[p], score[p], complete=True)
    blobs = [s.to_bytes() for s in shards]
    rng.shuffle(blobs)
    return sm.loads(blobs[0]).merge(*[sm.loads(b) for b in blobs[1:]])


@pytest.fixture(scope="module")
def queries():
    return _queries(0)


@pytest.mark.parametrize("k", [None, 1, 3, 10])
@pytest.mark.parametrize("seed", [1, 2])
def test_ndcg_and_dcg_match_sklearn(queries, k, seed):
    lin = np.mean([ndcg_score([r], [s], k=k) for _, r, s in queries])
    exp = np.mean([ndcg_score([2**r - 1], [s], k=k) for _, r, s in queries])
    dcg_lin = np.mean([dcg_score([r], [s], k=k) for _, r, s in queries])
    dcg_exp = np.mean([dcg_score([2**r - 1], [s], k=k) for _, r, s in queries])
    for make, want in (
        (lambda: K.NDCG(k=k, gain="linear"), lin),
        (lambda: K.NDCG(k=k), exp),
        (lambda: K.DCG(k=k, gain="linear"), dcg_lin),
        (lambda: K.DCG(k=k), dcg_exp),
    ):
        got = _split_feed(make, queries, seed).compute()
        assert got == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("seed", [3, 4])
def test_map_matches_per_query_average_precision(queries, seed):
    aps = [average_precision_score(r > 0, s) for _, r, s in queries if (r > 0).any()]
    m = _split_feed(K.MAP, queries, seed)
    assert m.compute() == pytest.approx(np.mean(aps), rel=1e-12)
    skipped = sum(not (r > 0).any() for _, r, _ in queries)
    assert m.query_counts() == {"scored": len(aps), "skipped": skipped}
    # k at least every query's length is the same AP
    assert _split_feed(lambda: K.MAP(k=50), queries, seed).compute() == pytest.approx(
        np.mean(aps), rel=1e-12
    )


def _apk(ranked_rel, k):
    """Textbook AP@k for a ranking without ties (denominator min(k, n_relevant))."""
    hits, total = 0, 0.0
    for i, r in enumerate(ranked_rel[:k]):
        if r > 0:
            hits += 1
            total += hits / (i + 1)
    return total / min(k, sum(r > 0 for r in ranked_rel))


def test_map_at_k_without_ties_is_textbook_apk():
    rng = np.random.default_rng(5)
    qs = [(q, rng.integers(0, 2, 15).astype(float), rng.permutation(15) / 15.0) for q in range(60)]
    for k in (1, 3, 7):
        want = np.mean([_apk(list(r[np.argsort(-s)]), k) for _, r, s in qs if (r > 0).any()])
        assert _split_feed(lambda k=k: K.MAP(k=k), qs, k).compute() == pytest.approx(want, 1e-12)


def _expect(rel, score, f):
    """f averaged over every order of the items consistent with the scores (ties random)."""
    vals = []
    for perm in itertools.permutations(range(len(rel))):
        s = score[list(perm)]
        if np.all(s[:-1] >= s[1:]):
            vals.append(f(rel[list(perm)]))
    return float(np.mean(vals))


def test_tie_expectations_brute_force():
    rng = np.random.default_rng(6)
    small = [
        (q, rng.integers(0, 3, n).astype(float) * (rng.random() < 0.8), rng.integers(0, 3, n) / 2.0)
        for q, n in enumerate(rng.integers(1, 7, 60))
    ]
    has = [(q, r, s) for q, r, s in small if (r > 0).any()]
    for k in (1, 2, 3, 5):
        checks = [
            (K.HitRate(k), small, lambda x, k=k: float((x[:k] > 0).any())),
            (K.PrecisionAtK(k), small, lambda x, k=k: (x[:k] > 0).sum() / k),
            (K.RecallAtK(k), has, lambda x, k=k: (x[:k] > 0).sum() / (x > 0).sum()),
            (K.CumulativeGain(k=k), small, lambda x, k=k: x[:k].sum()),
        ]
        for metric, qs, f in checks:
            want = np.mean([_expect(r, s, f) for _, r, s in qs])
            got = _split_feed(lambda m=metric: m.copy(), small, k).compute()
            assert got == pytest.approx(want, rel=1e-12), type(metric).__name__
    mrr = np.mean([_expect(r, s, lambda x: 1 / (1 + np.flatnonzero(x > 0)[0])) for _, r, s in has])
    m = _split_feed(K.MRR, small, 9)
    assert m.compute() == pytest.approx(mrr, rel=1e-12)
    assert m.query_counts()["skipped"] == len(small) - len(has)


def test_seed_dcg_definition():
    # Seed 004: DCG = sum (2**rel - 1) / log2(i + 1); NDCG divides by the ideal order's DCG.
    rel, score = [3, 2, 3, 0, 1, 2], [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    dcg = sum((2**r - 1) / math.log2(i + 2) for i, r in enumerate(rel))
    ideal = sum((2**r - 1) / math.log2(i + 2) for i, r in enumerate(sorted(rel, reverse=True)))
    assert K.DCG().update([1] * 6, rel, score).compute() == pytest.approx(dcg, rel=1e-14)
    assert K.NDCG().update([1] * 6, rel, score).compute() == pytest.approx(dcg / ideal, 1e-14)
    assert K.CumulativeGain().update([1] * 6, rel, score).compute() == 11.0


def test_all_zero_and_single_item_queries():
    m = K.NDCG().update([1, 1, 2], [0, 0, 1], [0.5, 0.1, 0.3])
    assert m.compute() == 0.5  # the all-zero query scores 0 and counts, as scikit-learn
    assert ndcg_score([[0, 0]], [[0.5, 0.1]]) == 0.0
    assert math.isnan(K.MAP().update([1, 1], [0, 0], [0.1, 0.2]).compute())
    assert K.MAP().update([1, 1], [0, 0], [0.1, 0.2]).query_counts() == {"scored": 0, "skipped": 1}
    assert K.HitRate(3).update([1, 1], [0, 0], [0.1, 0.2]).compute() == 0.0


def test_complete_batches_fold_and_bound_memory():
    qs = _queries(7, n_queries=300)
    ref = K.NDCG(k=5)
    streamed = K.NDCG(k=5)
    for start in range(0, 300, 25):
        ids, rel, score = _rows(qs[start : start + 25])
        ref.update(ids, rel, score)
        streamed.update(ids, rel, score, complete=True)
        assert streamed.open_queries() == 0
    assert streamed.compute() == pytest.approx(ref.compute(), rel=1e-12)
    assert len(streamed.to_bytes()) < 400 < len(ref.to_bytes())


def test_complete_takes_buffered_rows_of_the_same_query():
    m = K.MAP().update([1, 1], [1, 0], [0.9, 0.8])  # open
    m.update([1, 2, 2], [1, 1, 0], [0.1, 0.5, 0.6], complete=True)
    assert m.open_queries() == 0
    want = np.mean(
        [
            average_precision_score([1, 0, 1], [0.9, 0.8, 0.1]),
            average_precision_score([1, 0], [0.5, 0.6]),
        ]
    )
    assert m.compute() == pytest.approx(want, rel=1e-14)
    # A completed query that reappears is scored as a second query (documented).
    m.update([2], [1], [0.3])
    assert m.query_counts()["scored"] == 3


def test_open_buffers_are_split_invariant_byte_for_byte(queries):
    ids, rel, score = _rows(queries[:100])
    whole = K.NDCG().update(ids, rel, score)
    rng = np.random.default_rng(8)
    shards = [K.NDCG() for _ in range(4)]
    for idx in np.array_split(rng.permutation(len(ids)), 23):
        shards[int(rng.integers(4))].update(ids[idx], rel[idx], score[idx])
    merged = shards[2] + shards[0] + shards[3] + shards[1]
    assert merged.to_bytes() == whole.to_bytes()


def test_large_open_buffers_match_sklearn_and_split_byte_for_byte():
    """Past ``SMALL`` rows a buffer is sorted by one composite key (graded relevance) and read
    without a sort: the values are scikit-learn's, and any split merges to the same bytes."""
    queries = _queries(21, n_queries=4000, max_len=14)  # about 30,000 rows
    ids, rel, score = _rows(queries)
    lin = np.mean([ndcg_score([r], [s], k=5) for _, r, s in queries])
    aps = [average_precision_score(r > 0, s) for _, r, s in queries if (r > 0).any()]
    rng = np.random.default_rng(2)
    perm = rng.permutation(len(ids))
    whole = K.NDCG(k=5, gain="linear").update(ids[perm], rel[perm], score[perm])
    assert len(ids) > 20_000 and whole.compute() == pytest.approx(lin, rel=1e-12)
    assert K.MAP().update(ids, rel, score).compute() == pytest.approx(np.mean(aps), rel=1e-12)
    shards = [K.NDCG(k=5, gain="linear") for _ in range(3)]
    for idx in np.array_split(rng.permutation(len(ids)), 5):
        shards[int(rng.integers(3))].update(ids[idx], rel[idx], score[idx])
    merged = sm.loads((shards[1] + shards[2] + shards[0]).to_bytes())
    assert merged.to_bytes() == whole.to_bytes()
    assert merged.compute() == whole.compute()


@pytest.mark.parametrize("make", [lambda: K.NDCG(k=5), K.MAP, K.MRR, lambda: K.HitRate(3)])
def test_large_complete_batches_equal_open_buffers(make):
    """A complete batch past ``SMALL`` rows is put in rank order by one composite sort (graded
    relevance): its queries' values are those of the same rows left open, to the bit."""
    queries = _queries(22, n_queries=3000, max_len=14)
    ids, rel, score = _rows(queries)
    perm = np.random.default_rng(4).permutation(len(ids))
    done = make().update(ids[perm], rel[perm], score[perm], complete=True)
    opened = make().update(ids[perm], rel[perm], score[perm])
    assert len(ids) > 20_000 and done.compute() == opened.compute()


def test_string_ids_and_errors():
    m = K.RecallAtK(2).update(["a", "a", "b"], [1, 1, 0], [0.3, 0.2, 0.1])
    assert m.compute() == 1.0
    with pytest.raises(sm.InputError, match="query_ids"):
        m.update([1], [1], [0.5])
    with pytest.raises(sm.IncompatibleStateError):
        m.merge(K.RecallAtK(2).update([1], [1], [0.5]))
    with pytest.raises(sm.InputError, match="k"):
        K.PrecisionAtK(0)
    with pytest.raises(sm.InputError, match="gain"):
        K.NDCG(gain="log")
    with pytest.raises(sm.InputError, match="relevance"):
        K.NDCG().update([1], [-1.0], [0.5])


def test_query_buffers_block():
    b = QueryBuffers()
    b2 = b.appended(np.array([3, 1, 3]), np.array([1.0, 0.0, 2.0]), np.array([0.5, 0.1, 0.2]))
    assert len(b) == 0 and len(b2) == 3
    (tq, _, _), rest = b2.take(np.array([3]))
    assert tq.tolist() == [3, 3] and rest.rows()[0].tolist() == [1]
    assert b2.from_wire(b2.to_wire()) == b2
    with pytest.raises(ValueError):
        b2.from_wire(
            {"query": np.array([1]), "relevance": np.array([-1.0]), "score": np.array([0.0])}
        )


def test_hit_rate_keeps_its_precision_on_a_huge_tie() -> None:
    # One relevant item among g tied ones, k = 1: the hit chance is exactly 1 / g. 0.8.2 took
    # it as 1 - exp(a difference of log-gammas near 1e8): 10.6% off at g = 1e7.
    from streammetrics.ranking import HitRate

    for g in (10**5, 10**6, 10**7):
        rel = np.zeros(g)
        rel[0] = 1
        v = HitRate(k=1).update(np.zeros(g, dtype=int), rel, np.zeros(g)).compute()
        assert v == pytest.approx(1 / g, rel=1e-12)
    # A tie with 3 relevant among 1,000 and 5 places left: 1 - C(997, 5) / C(1000, 5).
    from math import comb

    rel = np.zeros(1000)
    rel[:3] = 1
    v = HitRate(k=5).update(np.zeros(1000, dtype=int), rel, np.zeros(1000)).compute()
    assert v == pytest.approx(1 - comb(997, 5) / comb(1000, 5), rel=1e-13)


def test_interval_keeps_the_spread_of_large_close_values() -> None:
    # DCGs of high grades are large and close: ~2**40, a few tens apart. A sum of squares minus
    # the squared mean (0.8.3) lost every digit of the spread; the folded spread, merged with
    # Chan's formula, keeps it, folded or buffered, split and merged in any order.
    rng = np.random.default_rng(5)
    n = 400
    grade = 40.0 + rng.integers(0, 2, n) * 1e-7  # one item per query: DCG@1 = 2**grade - 1
    values = np.exp2(grade) - 1.0
    half = stats.t.ppf(0.975, n - 1) * values.std(ddof=1) / np.sqrt(n)  # about 3.7
    q, ones = np.arange(n), np.ones(n)

    def check(metric: K.DCG) -> None:
        low, high = metric.interval()
        assert (high - low) / 2 == pytest.approx(half, rel=1e-3)
        assert (high + low) / 2 == pytest.approx(values.mean(), abs=1e-3 * half)

    check(K.DCG(k=1).update(q, grade, ones, complete=True))
    check(K.DCG(k=1).update(q, grade, ones))  # buffered
    parts = [K.DCG(k=1).update(q[i::7], grade[i::7], ones[i::7], complete=True) for i in range(7)]
    merged = parts[3].copy().merge(*parts[:3], *parts[4:])
    check(merged)
    check(sm.loads(merged.to_bytes()))
    check(sum(parts[1:], parts[0]))


def test_complete_takes_yes_or_no_only() -> None:
    # 0.8.4 read complete="no" as True: the query closed early and its last row, arriving
    # later, was scored as a query of its own.
    m = K.MRR().update([1, 1], [0, 0], [0.9, 0.8])
    before = m.to_bytes()
    for flag in ("no", "False", 2, None):
        with pytest.raises(sm.InputError, match="complete"):
            m.update([1], [1], [0.1], complete=flag)
        assert m.to_bytes() == before
    assert m.update([1], [1], [0.1], complete=np.bool_(True)).compute() == pytest.approx(1 / 3)


def test_totals_past_two_to_the_100_still_merge_and_join() -> None:
    # Relevance up to 2**200 (linear gain) is accepted, so a query's value may pass 2**100:
    # 0.8.4 then refused every merge (the weights' bound), even with an empty metric.
    m = K.DCG(gain="linear").update([1, 2], [2.0**101, 3.0], [0.5, 0.5], complete=True)
    want = m.compute()
    assert K.DCG(gain="linear").merge(m).compute() == want
    assert (m + K.DCG(gain="linear")).compute() == want
    parts = m.split(2)
    assert parts[0].join(*parts[1:]).to_bytes() == m.to_bytes()
    assert (K.DCG().update([1], [150.0], [0.5], complete=True) + K.DCG()).compute() > 2.0**100


@pytest.mark.parametrize("make", [K.NDCG, K.MRR, K.MAP, lambda: K.HitRate(k=2)])
def test_bounded_values_whose_total_passes_the_queries_are_refused(make) -> None:  # type: ignore[no-untyped-def]
    from streammetrics import _codec

    m = make().update([1], [1], [1.0], complete=True)
    name, schema, config, state = _codec.unpack_envelope(m.to_bytes())
    forged = _codec.pack_envelope(name, schema, config, dict(state, total=5.0))
    with pytest.raises(sm.StateDecodeError, match="per scored query"):
        sm.loads(forged)
    assert sm.loads(_codec.pack_envelope(name, schema, config, dict(state, total=1.0))) == m


def test_hit_rate_of_a_huge_tie_is_the_exact_hypergeometric_value() -> None:
    # 65 relevant items among ten million tied ones, k = 65: 0.8.4's log-gamma form past 64
    # factors was 8e-5 off (0.000422448 for 0.000422413).
    from fractions import Fraction

    g, r, k = 10_000_000, 65, 65
    miss = Fraction(1)
    for i in range(k):
        miss *= Fraction(g - r - i, g - i)
    want = float(1 - miss)
    rows = g + 1  # the tie, then one irrelevant item below it
    relevance = np.zeros(rows)
    relevance[:r] = 1.0
    scores = np.ones(rows)
    scores[-1] = 0.0
    m = K.HitRate(k=k).update(np.zeros(rows, dtype=np.int64), relevance, scores, complete=True)
    assert m.compute() == pytest.approx(want, rel=1e-13)


def test_one_row_appends_keep_few_chunks() -> None:
    # 0.8.4 re-sorted every buffered row every 64 appends: 30 ms per one-row update at 4M
    # buffered rows. Chunks now join while one is at least half the one before, so their
    # sizes fall geometrically: at most about log2(rows) + 1 chunks.
    buf = QueryBuffers()
    for i in range(5000):
        buf = buf.appended(np.array([i % 50]), np.array([1.0]), np.array([0.5]))
        assert len(buf._chunks) <= math.log2(i + 1) + 1
    whole = QueryBuffers().appended(np.arange(5000) % 50, np.ones(5000), np.full(5000, 0.5))
    assert buf == whole  # the same canonical rows


@pytest.mark.parametrize("how", ["merge", "join", "sum"])
def test_int_and_str_query_ids_never_merge_in_one_call(how):
    """Each operand of one merge was checked against the receiver alone: an empty receiver
    took an int-id and a str-id state together, and the buffers' concatenation made the ids
    strings alike (query 1 and query "1" joined; a review found it). Refused before anything
    changes."""
    a = K.NDCG().update([1, 1], [1.0, 0.0], [0.9, 0.1])
    b = K.NDCG().update(["1", "1"], [0.0, 1.0], [0.9, 0.1])
    receiver = K.NDCG()
    before = receiver.to_bytes()
    with pytest.raises(sm.IncompatibleStateError, match="int query ids"):
        if how == "merge":
            receiver.merge(a, b)
        elif how == "join":
            receiver.join(a, b)
        else:
            sum([receiver, a, b])
    assert receiver.to_bytes() == before


def test_ties_are_read_in_ascending_relevance_on_both_paths():
    """A tie's gains are summed in ascending relevance, open or complete, small or past
    ``SMALL`` rows: the open path's order as 0.8.24's stable sort gave it (fractional gains
    are not exact, so the order shows in the last bits)."""
    rel, score = [0.1, 0.3, 0.2], [0.0, 0.0, 0.0]
    opened = K.DCG(gain="linear").update([7, 7, 7], rel, score)
    done = K.DCG(gain="linear").update([7, 7, 7], rel, score, complete=True)
    assert repr(opened.compute()) == repr(done.compute())
    n = 20_000
    rng = np.random.default_rng(0)
    q, g = rng.integers(0, 50, n), rng.integers(0, 60, n).astype(float)
    s = rng.integers(0, 3, n) / 2.0
    big_open = K.DCG().update(q, g, s).compute()
    assert big_open == K.DCG().update(q, g, s, complete=True).compute()
