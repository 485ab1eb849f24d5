"""Bootstrap: coverage by seeded simulation, agreement with the analytic standard error,
split invariance byte for byte with ids, and the Poisson(1) weights themselves."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import accuracy_score, mean_squared_error

import streammetrics as sm
from streammetrics.errors import IncompatibleStateError, InputError
from streammetrics.wrappers._bootstrap_ids import id_hashes
from streammetrics.wrappers._poisson import position_hashes
from streammetrics.wrappers.bootstrap import poisson_weights

STREAMS = 300


def test_poisson_weights_are_poisson_one_and_pure():
    h = id_hashes(np.arange(50_000), 50_000)
    w = poisson_weights(h, seed=5, replicates=40)
    freq = np.bincount(w.ravel(), minlength=8)[:8]
    expected = w.size * np.array([math.exp(-1) / math.factorial(k) for k in range(8)])
    chi2 = ((freq[:6] - expected[:6]) ** 2 / expected[:6]).sum()
    assert chi2 < stats.chi2.ppf(0.999, 5)
    assert abs(w.mean() - 1) < 0.01 and abs(w.var() - 1) < 0.02
    # Independent across replicates and rows: near-zero correlation.
    assert abs(np.corrcoef(w[0], w[1])[0, 1]) < 0.03
    # A pure function of (seed, replicate, id): any subset of rows gets the same weights.
    sub = np.array([17, 3, 49_999])
    assert (poisson_weights(id_hashes(sub, 3), 5, 40) == w[:, sub]).all()
    assert not (poisson_weights(h[:100], 6, 40) == w[:, :100]).all()
    strings = id_hashes(np.array(["a", "b", "ab", "ba", "a"]), 5)
    assert strings[0] == strings[4] and len(set(strings[:4].tolist())) == 4


@pytest.mark.parametrize("scheme", [1, 2])
def test_poisson_weights_do_not_depend_on_the_block_size(monkeypatch, scheme) -> None:
    """Weights are drawn in cache-sized blocks of rows (0.8.9): any block size gives the
    inverse distribution function of each row's own mix, computed here in one piece."""
    from streammetrics.states.labels import splitmix64
    from streammetrics.wrappers import _poisson

    h = id_hashes(np.arange(2_000), 2_000)
    R, seed = 199, 11  # odd: scheme 2 drops the last pair's high half
    golden, step = np.uint64(0x9E3779B97F4A7C15), np.arange(1, R + 2, dtype=np.uint64)
    with np.errstate(over="ignore"):
        if scheme == 1:
            keys = splitmix64(
                splitmix64(np.uint64(seed) * golden + np.uint64(1)) + step[:R] * golden
            )
            z = splitmix64(h[:, None] ^ keys[None, :])
            want = np.searchsorted(_poisson._T64, z, side="right")
        else:
            tag = np.uint64(0x452821E638D01377)
            pairs = step[: (R + 1) // 2]
            keys = splitmix64(splitmix64(np.uint64(seed) * golden + tag) + pairs * golden)
            z = splitmix64(h[:, None] ^ keys[None, :])
            u = np.stack([z & np.uint64(0xFFFFFFFF), z >> np.uint64(32)], axis=2)
            want = np.searchsorted(_poisson._T32.astype(np.uint64), u.reshape(len(h), -1), "right")
            want = want[:, :R]
    for chunk in (1, 7, 1 << 15, 1 << 22):
        monkeypatch.setattr(_poisson, "_CHUNK", chunk)
        got = _poisson.poisson_rows(h, seed, R, scheme)
        assert got.dtype == np.uint8 and got.shape == (len(h), R)
        np.testing.assert_array_equal(got, want)


def _accuracy_stream(seed: int, n: int, p: float):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    pred = np.where(rng.random(n) < p, y, 1 - y)
    return y, pred


def test_accuracy_interval_covers_and_spread_matches_the_binomial_standard_error():
    p, n = 0.85, 400
    covered, ratios = 0, []
    for seed in range(STREAMS):
        y, pred = _accuracy_stream(seed, n, p)
        b = sm.Bootstrap(sm.Accuracy(), replicates=200, seed=seed)
        b.update(y, pred, ids=np.arange(n))
        low, high = b.interval(0.95)
        covered += low <= p <= high
        acc = b.compute()
        ratios.append(b.std_error() / math.sqrt(acc * (1 - acc) / n))
    assert 0.92 <= covered / STREAMS <= 0.98
    # The bootstrap standard error estimates sqrt(p(1-p)/n): on average within 5%, and each
    # stream's within 25% (200 replicates give a standard error good to about 5%).
    assert np.mean(ratios) == pytest.approx(1.0, abs=0.05)
    assert np.all(np.abs(np.array(ratios) - 1) < 0.25)


def test_auc_interval_covers_the_binormal_auc():
    d, n = 1.0, 500
    true_auc = stats.norm.cdf(d / math.sqrt(2))
    covered = 0
    for seed in range(STREAMS):
        rng = np.random.default_rng(10_000 + seed)
        y = rng.integers(0, 2, n)
        score = rng.normal(size=n) + d * y
        # 100 replicates keep the test fast; the percentile ends are then good to about 15%.
        b = sm.Bootstrap(sm.ROCAUC(score_type="real"), replicates=100, seed=seed)
        b.update(y, score, ids=np.arange(n))
        low, high = b.interval(0.95)
        covered += low <= true_auc <= high
    assert 0.92 <= covered / STREAMS <= 0.98


@pytest.mark.parametrize("seed", [0, 1])
def test_split_invariant_byte_for_byte_with_ids(seed):
    rng = np.random.default_rng(seed)
    n = 3000
    y = rng.integers(0, 3, n)
    pred = np.where(rng.random(n) < 0.7, y, rng.integers(0, 3, n))
    ids = np.array([f"user-{i}" for i in rng.permutation(10 * n)[:n]])
    sw = rng.integers(1, 4, n).astype(float)
    whole = sm.Bootstrap(sm.F1(average="macro"), replicates=50, seed=9)
    whole.update(y, pred, ids=ids, sample_weight=sw)
    order = rng.permutation(n)
    parts = []
    for idx in np.array_split(order, 4):
        part = sm.Bootstrap(sm.F1(average="macro"), replicates=50, seed=9)
        for chunk in np.array_split(idx, 3):
            part.update(y[chunk], pred[chunk], ids=ids[chunk], sample_weight=sw[chunk])
        parts.append(part.to_bytes())
    rng.shuffle(parts)
    merged = sm.loads(parts[0]).merge(*[sm.loads(b) for b in parts[1:]])
    assert merged.to_bytes() == whole.to_bytes()
    assert merged.interval() == whole.interval()
    assert merged.compute() == pytest.approx(
        sm.F1(average="macro").update(y, pred, sample_weight=sw).compute(), rel=1e-12
    )


def test_each_replicate_is_the_metric_on_poisson_weighted_rows():
    rng = np.random.default_rng(3)
    n = 700
    y = rng.normal(size=n)
    pred = y + rng.normal(size=n)
    ids = rng.integers(0, 2**50, n)
    b = sm.Bootstrap(sm.MeanSquaredError(), replicates=30, seed=2)  # the per-replicate path
    b.update(y[:300], pred[:300], ids=ids[:300]).update(y[300:], pred[300:], ids=ids[300:])
    w = poisson_weights(id_hashes(ids, n), 2, 30)
    want = [mean_squared_error(y, pred, sample_weight=w[r]) for r in range(30)]
    assert b.replicates() == pytest.approx(want, rel=1e-10)
    acc = sm.Bootstrap(sm.Accuracy(), replicates=30, seed=2)  # the folded path
    labels = (y > 0).astype(int), (pred > 0).astype(int)
    acc.update(*labels, ids=ids)
    want = [accuracy_score(*labels, sample_weight=w[r]) for r in range(30)]
    assert acc.replicates() == pytest.approx(want, rel=1e-12)
    assert acc.compute() == accuracy_score(*labels)


def test_without_ids_the_stream_position_travels_through_bytes():
    y, pred = _accuracy_stream(1, 1000, 0.8)
    one = sm.Bootstrap(sm.Accuracy(), replicates=25).update(y, pred)
    first = sm.Bootstrap(sm.Accuracy(), replicates=25).update(y[:400], pred[:400])
    resumed = sm.loads(first.to_bytes()).update(y[400:], pred[400:])
    assert resumed.to_bytes() == one.to_bytes()
    assert resumed.drawn == 1000
    low, high = one.interval()
    assert low < one.compute() < high
    with pytest.raises(IncompatibleStateError):
        one.copy().merge(sm.Bootstrap(sm.Accuracy(), replicates=25, seed=1))


def test_refuses_metrics_without_sample_weight_and_bad_input():
    with pytest.raises(InputError, match=r"NDCG.*sample_weight"):
        sm.Bootstrap(sm.NDCG() if hasattr(sm, "NDCG") else sm.ranking.NDCG())
    with pytest.raises(InputError, match="replicates"):
        sm.Bootstrap(sm.Accuracy(), replicates=1)
    with pytest.raises(InputError, match="seed"):
        sm.Bootstrap(sm.Accuracy(), seed=-1)
    b = sm.Bootstrap(sm.Accuracy(), replicates=10).update([1, 0], [1, 1], ids=[1, 2])
    before = b.to_bytes()
    for args, kwargs in [
        (([1, 0], [1, 1]), {"ids": [1]}),
        (([1, 0], [1, 1]), {"ids": [0.5, 1.5]}),
        (([1, 0], [1, 1, 0]), {"ids": [1, 2]}),
        (([1, 0], [1, 1]), {"ids": [1, 2], "sample_weight": [1.0, -2.0]}),
    ]:
        with pytest.raises(InputError):
            b.update(*args, **kwargs)
        assert b.to_bytes() == before
    with pytest.raises(InputError, match="level"):
        b.interval(1.5)


def test_empty_and_degenerate_replicates():
    b = sm.Bootstrap(sm.ROCAUC(), replicates=20)
    assert math.isnan(b.compute())
    assert all(math.isnan(v) for v in b.interval())
    assert np.isnan(b.replicates()).all() and b.replicates().shape == (20,)
    b.update([1, 1], [0.2, 0.4], ids=[1, 2])  # one class only: every replicate is nan
    assert all(math.isnan(v) for v in b.interval())


def test_sliced_bootstrap_gives_bootstrap_intervals_per_slice():
    y, pred = _accuracy_stream(5, 2000, 0.8)
    g = np.arange(2000) % 3
    s = sm.Sliced(sm.Bootstrap(sm.Accuracy(), replicates=50))
    s.update(y, pred, by=g, ids=np.arange(2000))
    for key, (low, high) in s.intervals().items():
        assert low < s.compute()[key] < high
    assert len(s.worst(k=2)) == 2


def test_a_batch_of_zero_weight_rows_counts_and_merges_in_the_sketch() -> None:
    """Bootstrap of a score sketch raised IndexError on a batch whose every row weighs 0
    (one-row feeding with a zero weight hit it constantly). Such rows are counted and add
    nothing, as in the plain metric, and shards merge to the one stream."""
    for metric in (sm.ROCAUC(), sm.AveragePrecision()):
        one = sm.Bootstrap(metric, replicates=8).update(
            [1, 1, 0], [0.3, 0.4, 0.2], ids=[5, 1, 2], sample_weight=[0.0, 1, 1]
        )
        zero = sm.Bootstrap(metric, replicates=8).update([1], [0.3], ids=[5], sample_weight=[0.0])
        rest = sm.Bootstrap(metric, replicates=8).update([1, 0], [0.4, 0.2], ids=[1, 2])
        assert zero.count == 1
        assert zero + rest == one and rest + zero == one
        assert sm.loads(zero.to_bytes()) == zero


def test_the_no_interval_advice_names_a_nesting_that_works() -> None:
    """``Sliced(...).interval()`` advised ``Bootstrap(Sliced(...))``, which Bootstrap refuses
    (a wrapper); wrappers now advise wrapping the metric inside instead, which works."""
    with pytest.raises(sm.NoIntervalError, match=r"wrap it in streammetrics.Bootstrap\(Conf"):
        sm.ConfusionMatrix().interval()
    sm.Bootstrap(sm.ConfusionMatrix(), replicates=4)  # the advice holds
    for wrapper in (sm.Sliced(sm.Accuracy()), sm.TumblingWindows(sm.Accuracy(), width=10)):
        name = type(wrapper).__name__
        with pytest.raises(sm.NoIntervalError, match=rf"{name}\(streammetrics.Bootstrap"):
            wrapper.interval()
        with pytest.raises(InputError, match="Bootstrap does not wrap a"):
            sm.Bootstrap(wrapper, replicates=4)
    inner = sm.Bootstrap(sm.Accuracy(), replicates=4)
    s = sm.Sliced(inner).update([1, 0], [1, 1], by=["a", "b"], ids=[1, 2])
    assert set(s.intervals()) == {"a", "b"}


def _agreement_stream(seed: int, n: int):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 4, n)
    noise = rng.random(n) < 0.35
    return truth, np.where(noise, rng.integers(0, 4, n), truth)


def test_metrics_without_sample_weight_are_bootstrapped_by_repeating_rows() -> None:
    """A replicate of ``AdjustedRandIndex`` (no sample_weight) is scikit-learn's ARI of the
    rows each repeated by its Poisson count: the classic resampling bootstrap."""
    from sklearn.metrics import adjusted_rand_score

    truth, found = _agreement_stream(0, 600)
    ids = np.arange(600)
    b = sm.Bootstrap(sm.AdjustedRandIndex(), replicates=12, seed=4)
    b.update(truth[:250], found[:250], ids=ids[:250])
    b.update(truth[250:], found[250:], ids=ids[250:])
    w = poisson_weights(id_hashes(ids, 600), 4, 12)
    want = [adjusted_rand_score(np.repeat(truth, w[r]), np.repeat(found, w[r])) for r in range(12)]
    assert b.replicates() == pytest.approx(want, rel=1e-12)
    assert b.compute() == pytest.approx(adjusted_rand_score(truth, found), rel=1e-12)
    # A replicate counts each row as often as it was drawn, and the state says so through bytes.
    assert [b.reps.slices[r].count for r in range(12)] == w.sum(axis=1).tolist()
    assert sm.loads(b.to_bytes()) == b


def test_the_repeated_rows_bootstrap_spread_matches_the_sampling_spread() -> None:
    """Seeded simulation: over many streams of one process, the ARI's standard deviation is
    its true sampling spread; the bootstrap's ``std_error()`` of a single stream estimates it
    (on average within 10%), and the 95% percentile interval covers the process's ARI (that of
    two million rows) about 95% of the time (112 of 120 streams here)."""
    n, streams = 400, 120
    values, errors, intervals = [], [], []
    for seed in range(streams):
        truth, found = _agreement_stream(seed, n)
        b = sm.Bootstrap(sm.AdjustedRandIndex(), replicates=100, seed=seed)
        b.update(truth, found, ids=np.arange(n))
        values.append(b.compute())
        errors.append(b.std_error())
        intervals.append(b.interval(0.95))
    spread = float(np.std(values, ddof=1))
    assert np.mean(errors) == pytest.approx(spread, rel=0.10)
    true = sm.AdjustedRandIndex().update(*_agreement_stream(10**6, 2_000_000)).compute()
    covered = np.mean([low <= true <= high for low, high in intervals])
    assert 0.88 <= covered <= 0.99


def test_bleu_is_bootstrapped_by_resampling_sentences() -> None:
    from streammetrics.text import BLEU

    rng = np.random.default_rng(7)
    words = np.array("the a cat dog sat on mat ran fast away".split())
    refs = [" ".join(words[rng.integers(0, 10, 8)]) for _ in range(200)]
    hyps = [" ".join(w if rng.random() < 0.7 else "x" for w in r.split()) for r in refs]
    b = sm.Bootstrap(BLEU(), replicates=40, seed=1).update(hyps, [[r] for r in refs])
    low, high = b.interval(0.95)
    assert low < b.compute() < high
    one = BLEU().update(hyps, [[r] for r in refs]).compute()
    assert b.compute() == one
    # The sentences are the units: a replicate is BLEU over repeated sentences (no ids: the
    # weights come from each sentence's position in the stream).
    import sacrebleu

    counts = poisson_weights(position_hashes(0, 200), 1, 40)
    r0 = [i for i in range(200) for _ in range(int(counts[0, i]))]
    want = sacrebleu.corpus_bleu([hyps[i] for i in r0], [[refs[i] for i in r0]]).score
    assert b.replicates()[0] == pytest.approx(want, rel=1e-12)


def test_a_replicate_that_drew_no_row_round_trips() -> None:
    # Resampled by rows, a replicate can draw no row at all (one sentence: e**-1 of them). It
    # is not stored, so the bytes load (0.8.3 wrote an empty slice, which loads refused) and it
    # reads as the empty metric's value, left out of the interval.
    from streammetrics.text import BLEU

    b = sm.Bootstrap(BLEU(), replicates=200).update(["the cat sat on the mat"], ["the cat sat"])
    values = b.replicates()
    assert 40 < np.isnan(values).sum() < 110  # about 200 / e
    back = sm.loads(b.to_bytes())
    assert back == b and np.array_equal(back.replicates(), values, equal_nan=True)
    more = back + sm.Bootstrap(BLEU(), replicates=200).update(["a dog ran"], ["a dog ran off"])
    assert sm.loads(more.to_bytes()) == more
    ari = sm.Bootstrap(sm.AdjustedRandIndex(), replicates=50).update([0], [1])
    assert sm.loads(ari.to_bytes()) == ari


def test_one_hypothesis_beside_its_references_is_one_sample() -> None:
    # A hypothesis string with a list of two references: 0.8.3 took the references for two
    # rows and resampled them, so replicates dropped or repeated references.
    from streammetrics.text import BLEU

    hyp = "the quick brown fox jumps over the lazy dog today"
    refs = [hyp, "a fast brown fox leaps over a sleepy dog now"]
    b = sm.Bootstrap(BLEU(), replicates=50, seed=3).update(hyp, refs)
    whole = BLEU().update(hyp, refs).compute()
    values = b.replicates()
    assert np.all(np.isnan(values) | np.isclose(values, whole, rtol=1e-12, atol=0))
    counts = poisson_weights(position_hashes(0, 1), 3, 50)[:, 0]
    assert [b.reps.slices[r].count for r in sorted(b.reps.slices)] == [c for c in counts if c]


def test_columns_given_by_keyword() -> None:
    # aggregate(df, Bootstrap(m), {"y_true": ..., "ids": ...}) passes every column by keyword;
    # 0.8.3 refused that ("give the wrapped metric's columns"), leaving the engines no way to
    # pass ids.
    rng = np.random.default_rng(2)
    y, s, ids = rng.integers(0, 2, 300), rng.random(300), np.arange(300)
    by_position = sm.Bootstrap(sm.ROCAUC(), replicates=30).update(y, s, ids=ids)
    by_name = sm.Bootstrap(sm.ROCAUC(), replicates=30).update(y_true=y, y_score=s, ids=ids)
    assert by_name.to_bytes() == by_position.to_bytes()
    one = sm.Bootstrap(sm.Accuracy(), replicates=5).update(y_true=1, y_pred=np.array(1), ids=[7])
    assert one.count == 1
    sliced = sm.Sliced(sm.Bootstrap(sm.ROCAUC(), replicates=30))
    sliced.update(y_true=y, y_score=s, by=ids % 3)
    want = sm.Bootstrap(sm.ROCAUC(), replicates=30).update(y[ids % 3 == 1], s[ids % 3 == 1])
    assert sliced[1].to_bytes() == want.to_bytes()


def test_replicates_that_would_pass_the_weight_bound_are_refused_at_update() -> None:
    # A weight of 1e30 is within 2**100, but Poisson counts of 2 or more take a replicate
    # past it: 0.8.3 accepted the row and wrote bytes its loads refused.
    from streammetrics import CountOverflowError

    b = sm.Bootstrap(sm.Accuracy(), replicates=20).update([1], [1], ids=[3])
    before = b.to_bytes()
    for call in (
        lambda: b.update([1], [1], ids=[7], sample_weight=[10**30]),
        lambda: b.update(1, 1, ids=7, sample_weight=10**30),
    ):
        with pytest.raises(CountOverflowError, match="sample_weight"):
            call()
        assert b.to_bytes() == before
    b.update([1], [1], ids=[7], sample_weight=[1e20])
    assert sm.loads(b.to_bytes()) == b


def test_a_collection_passes_ids_to_its_bootstrap_members_only() -> None:
    """0.8.8 passed ``ids=`` to every member, and a plain member raised TypeError."""
    rng = np.random.default_rng(3)
    n = 400
    y, p, by = rng.integers(0, 2, n), rng.integers(0, 2, n), rng.integers(0, 3, n)
    ids = rng.permutation(10 * n)[:n]
    both = sm.MetricCollection(
        boot=sm.Bootstrap(sm.Accuracy(), replicates=20),
        plain=sm.Accuracy(),
        sliced=sm.Sliced(sm.Bootstrap(sm.Precision(), replicates=20)),
    )
    both.update(y, p, ids=ids, by=by)
    alone = sm.Bootstrap(sm.Accuracy(), replicates=20).update(y, p, ids=ids)
    assert both["boot"].to_bytes() == alone.to_bytes()
    assert both["plain"].to_bytes() == sm.Accuracy().update(y, p).to_bytes()
    sliced = sm.Sliced(sm.Bootstrap(sm.Precision(), replicates=20)).update(y, p, by=by, ids=ids)
    assert both["sliced"].to_bytes() == sliced.to_bytes()
    rows = sm.MetricCollection(boot=sm.Bootstrap(sm.Accuracy(), replicates=20), plain=sm.Accuracy())
    for i in range(n):  # the per-request path routes the same way
        rows.update(int(y[i]), int(p[i]), ids=int(ids[i]))
    assert rows["boot"].to_bytes() == alone.to_bytes()
    assert rows["plain"].compute() == both["plain"].compute()


def test_a_decayed_metric_keeps_its_direction_through_bootstrap() -> None:
    # Decayed sets its metric's direction on the instance; Bootstrap read the class's (None),
    # so Sliced(Bootstrap(Decayed(Accuracy()))).worst() refused to rank slices (0.8.18).
    boot = sm.Bootstrap(sm.Decayed(sm.Accuracy(), half_life=10), replicates=4)
    assert boot.higher_is_better is True
    assert sm.loads(boot.to_bytes()).higher_is_better is True
    sliced = sm.Sliced(sm.Bootstrap(sm.Decayed(sm.Accuracy(), half_life=10), replicates=4))
    sliced.update([1, 0, 1, 1], [1, 1, 1, 0], by=["fr", "de", "fr", "de"], timestamps=[1, 2, 3, 4])
    plain = sm.Sliced(sm.Decayed(sm.Accuracy(), half_life=10))
    plain.update([1, 0, 1, 1], [1, 1, 1, 0], by=["fr", "de", "fr", "de"], timestamps=[1, 2, 3, 4])
    assert sliced.worst(1) == plain.worst(1) == [("de", 0.0)]
