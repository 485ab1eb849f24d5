"""Forged blobs that ``loads`` accepted, whose states then failed with errors of other types
(``OverflowError``, ``ZeroDivisionError``) or used unbounded memory; found by a review of the
decoder. Each is now a ``StateDecodeError`` at ``loads``."""

from __future__ import annotations

import math
from typing import Any

import msgpack
import numpy as np
import pytest

import streammetrics as sm
from streammetrics import _codec
from streammetrics.windows import SlidingWindow, TumblingWindows


def forge(metric: sm.Metric, config: dict[str, Any] | None = None, **state: Any) -> bytes:
    tree = msgpack.unpackb(metric.to_bytes(), strict_map_key=False)
    tree["state"].update(state)
    tree["config"].update(config or {})
    return msgpack.packb(tree, use_bin_type=True)


def test_a_huge_replicate_count_is_refused_without_allocating() -> None:
    # 0.8.2 built set(range(replicates)) first: 2**53 + 1 in a 916-byte blob ran the host out
    # of memory, 10**7 took 0.85 s and 671 MB. (No larger value here: a regression would do
    # the same to the machine running the tests.)
    b = sm.Bootstrap(sm.Accuracy(), replicates=3, seed=1).update([0, 1], [0, 1])
    for replicates in (10**7, sm.wrappers.bootstrap.MAX_REPLICATES + 1):
        with pytest.raises(sm.StateDecodeError, match="replicates"):
            sm.loads(forge(b, {"replicates": replicates}))
    # Within the bound, a blob holding fewer replicates than its config is refused before any
    # set of that many keys is built.
    with pytest.raises(sm.StateDecodeError, match=r"keyed 0\.\.99999"):
        sm.loads(forge(b, {"replicates": 100_000}))
    with pytest.raises(sm.InputError, match="replicates"):
        sm.Bootstrap(sm.Accuracy(), replicates=100_001)


@pytest.mark.parametrize(
    "make, state",
    [
        (
            lambda: sm.Bootstrap(sm.Accuracy(), replicates=3).update([0, 1], [0, 1]),
            {"drawn": 2**63},
        ),
        (
            lambda: SlidingWindow(sm.Accuracy(), width=30, slots=6).update(
                [0, 1], [0, 1], timestamps=[0, 6]
            ),
            {"dropped": 2**64 - 3, "count": 2**64 - 1},
        ),
        (
            lambda: sm.MulticlassROCAUC().update([0, 1, 2], np.eye(3) * 0.8 + 0.1),
            {"count": 2**53 + 7},
        ),
    ],
    ids=["bootstrap-drawn", "sliding-count", "multiclass-count"],
)
def test_counters_past_two_to_the_53_are_refused(make: Any, state: dict[str, Any]) -> None:
    # These classes load their own state; the count bound is now checked for every class
    # (MulticlassROCAUC's count is also tied to its columns now, which refuses it first).
    with pytest.raises(sm.StateDecodeError, match=r"2\*\*53|add up|rows counted"):
        sm.loads(forge(make(), **state))


def test_tumbling_windows_whose_counts_pass_the_bound_together_are_refused() -> None:
    w = TumblingWindows(sm.Accuracy(), width=10).update([0, 1], [0, 1], timestamps=[0, 15])
    tree = msgpack.unpackb(w.to_bytes(), strict_map_key=False)
    assert tree["state"]["count"] == 2
    tree["state"]["count"] = 2**54  # beyond the bound, whatever its windows hold
    with pytest.raises(sm.StateDecodeError):
        sm.loads(msgpack.packb(tree, use_bin_type=True))


@pytest.mark.parametrize("weight_sq", [1e200, -1.0, math.inf, 3.0, 17.0])
def test_a_sum_of_squared_weights_no_stream_gives_is_refused(weight_sq: float) -> None:
    # 4 unweighted rows: sum w = 4, so sum w**2 lies in [4**2 / 4, 4**2] = [4, 16].
    acc = sm.Accuracy().update([0, 1, 1, 0], [0, 1, 0, 0])
    with pytest.raises(sm.StateDecodeError, match="weight_sq"):
        sm.loads(forge(acc, weight_sq=weight_sq))
    assert sm.loads(forge(acc, weight_sq=4.0)) == acc
    # Integer counts are unweighted rows: sum w**2 is the row count, never unknown (0.8.17).
    with pytest.raises(sm.StateDecodeError, match="weight_sq"):
        sm.loads(forge(acc, weight_sq=math.nan))
    weighted = sm.Accuracy().update([0, 1], [0, 1], sample_weight=[0.5, 3.0])
    assert sm.loads(weighted.to_bytes()) == weighted
    unknown = sm.loads(forge(weighted, weight_sq=math.nan))  # (a schema 1 state's)
    assert all(math.isnan(v) for v in unknown.interval())


def test_wilson_answers_nan_for_an_effective_size_that_underflows() -> None:
    from streammetrics.uncertainty import wilson

    assert all(math.isnan(v) for v in wilson(1e-201, 1e-200, 0.95))


@pytest.mark.parametrize("cls", [sm.BrierScore, sm.LogLoss])
def test_negative_loss_sums_are_refused(cls: Any) -> None:
    m = cls().update([0, 1, 1], [0.2, 0.7, 0.9])
    tree = msgpack.unpackb(m.to_bytes(), strict_map_key=False)
    for field in ("loss_sum", "loss_sq_sum"):
        with pytest.raises(sm.StateDecodeError, match="non-negative"):
            sm.loads(forge(m, **{field: -tree["state"][field]}))


def test_the_sliding_head_must_be_the_newest_slot() -> None:
    w = SlidingWindow(sm.Accuracy(), width=30, slots=6)
    w.update([0, 1, 1, 0], [0, 1, 0, 0], timestamps=[0, 6, 12, 18])
    with pytest.raises(sm.StateDecodeError, match="newest slot"):
        sm.loads(forge(w, head=0))


def test_configurations_that_would_not_read_back_are_refused() -> None:
    with pytest.raises(sm.InputError, match="beta"):
        sm.FBeta(beta=None)
    with pytest.raises(sm.InputError, match="scheme"):
        sm.Bootstrap(sm.Accuracy(), scheme=2.0)  # type: ignore[arg-type]
    b = sm.Bootstrap(sm.Accuracy(), replicates=3).update([0, 1], [0, 1])
    with pytest.raises(sm.StateDecodeError, match="scheme"):
        sm.loads(forge(b, {"scheme": 2.0}))
    f = sm.FBeta(beta=2.0).update([0, 1], [0, 1])
    with pytest.raises(sm.StateDecodeError):
        sm.loads(forge(f, {"beta": None}))


def test_a_sliced_count_must_be_its_slices_rows() -> None:
    # 0.8.2 checked only that both were empty or not: a count of 1 over 4 rows loaded, and so
    # did a blob with a slice dropped.
    from streammetrics import _codec

    s = sm.Sliced(sm.Accuracy()).update([1, 0, 1, 1], [1, 1, 1, 0], by=["a", "a", "b", "b"])
    tree = _codec.decode(s.to_bytes())
    tree["state"]["count"] = 1
    with pytest.raises(sm.StateDecodeError, match="slices hold 4 rows"):
        sm.loads(_codec.encode(tree))
    tree = _codec.decode(s.to_bytes())
    tree["state"]["slices"] = tree["state"]["slices"][:1]
    with pytest.raises(sm.StateDecodeError, match="slices hold 2 rows"):
        sm.loads(_codec.encode(tree))


@pytest.mark.parametrize("exact", [False, True])
def test_multiclass_auc_columns_must_count_the_rows(exact: bool) -> None:
    from streammetrics import _codec

    m = sm.MulticlassROCAUC(exact=exact).update([0, 1, 2, 1], np.eye(4, 3) * 0.7 + 0.1)
    tree = _codec.decode(m.to_bytes())
    tree["state"]["count"] = 7  # 0.8.2 loaded it: count is not tied to the columns
    with pytest.raises(sm.StateDecodeError, match="do not add up to count 7"):
        sm.loads(_codec.encode(tree))
    assert sm.loads(m.to_bytes()) == m


@pytest.mark.parametrize(
    "metric",
    [
        sm.ROCAUC(exact=True).update([0, 1, 1], [0.2, 0.5, 0.9]),
        sm.AveragePrecision(exact=True).update([0, 1, 1], [0.2, 0.5, 0.9]),
        sm.MulticlassROCAUC(exact=True).update([0, 1, 1], [[0.8, 0.2], [0.5, 0.5], [0.1, 0.9]]),
    ],
)
@pytest.mark.parametrize("held, bad", [(0.9, 5.0), (0.2, -0.5)])
def test_exact_probability_scores_outside_zero_one_are_refused(
    metric: Any, held: float, bad: float
) -> None:
    # 0.8.4 loaded a probability of 5.0 into an exact store that no update could have made.
    # The held score's 8 bytes (little-endian float64, the wire form of the scores) are swapped
    # for the bad value; the scores stay sorted.
    blob = metric.to_bytes()
    assert np.float64(held).tobytes() in blob
    forged = blob.replace(np.float64(held).tobytes(), np.float64(bad).tobytes(), 1)
    with pytest.raises(sm.StateDecodeError, match=r"outside \[0, 1\]"):
        sm.loads(forged)
    # Logit scores are any finite values.
    sm.loads(sm.ROCAUC(exact=True, score_type="logit").update([0, 1], [-7.0, 5.0]).to_bytes())


def test_a_calibration_config_cannot_ask_for_gigabytes() -> None:
    # 0.8.4 built np.zeros(bins) three times before checking the state: a 541-byte blob with
    # bins=10**8 took 5.4 GB and 13 s.
    m = sm.CalibrationError(bins=4).update([0, 1], [0.2, 0.9])
    with pytest.raises(sm.StateDecodeError, match="bins"):
        sm.loads(forge(m, {"bins": 10**8}))
    with pytest.raises(sm.InputError, match="bins"):
        sm.CalibrationError(bins=1_000_001)
    assert sm.CalibrationError(bins=200_000).update([1], [0.5]).count == 1


def test_ap_interval_of_a_tiny_ap_does_not_overflow() -> None:
    # Two positives below two million negatives: 0.8.4 raised OverflowError in math.exp.
    y = np.zeros(2_000_002, dtype=bool)
    y[-2:] = True
    s = np.ones(2_000_002)
    s[-2:] = 0.0
    for exact in (True, False):
        low, high = sm.AveragePrecision(exact=exact).update(y, s).interval()
        assert 0.0 <= low <= high <= 1.0


def test_forged_fields_that_a_merge_would_turn_unloadable_are_refused() -> None:
    # 0.8.4 loaded them; a merge with itself then wrote bytes loads refused.
    mrr = sm.ranking.MRR().update([1, 1, 2, 2], [1, 0, 0, 1], [0.9, 0.1, 0.8, 0.2], complete=True)
    with pytest.raises(sm.StateDecodeError, match="spread"):
        sm.loads(forge(mrr, spread=1e308))
    boot = sm.Bootstrap(sm.Accuracy(), replicates=3).update([0, 1], [0, 1])
    with pytest.raises(sm.StateDecodeError, match="drawn"):
        sm.loads(forge(boot, drawn=2**53))
    # -0.0 in a float field reads as 0.0, as every update writes it: merges keep the bytes.
    # (A row of weight 0: weight_sq 0 is what a stream gives; 0.8.12 refuses a weight_sq
    # that does not go with the weights, as the classification states already did.)
    mse = sm.MeanSquaredError().update([1.0], [1.0], sample_weight=[0.0])
    loaded = sm.loads(forge(mse, weight_sq=-0.0))
    assert loaded.to_bytes() == (sm.MeanSquaredError() + loaded).to_bytes()


def _bumped(ext: msgpack.ExtType, add: int) -> msgpack.ExtType:
    """The wire array ``ext`` (code 1: dtype, shape, bytes) with ``add`` added to its first
    value."""
    dtype, shape, data = msgpack.unpackb(ext.data)
    values = np.frombuffer(data, dtype=dtype).copy()
    values[0] += add
    return msgpack.ExtType(ext.code, msgpack.packb([dtype, shape, values.tobytes()]))


def test_integer_score_buckets_must_hold_the_rows_counted() -> None:
    """One flipped byte gave a ROCAUC whose integer buckets held 4.5e15 rows under a count of
    120: it loaded and computed 0.5 instead of 0.5445 (review of 0.8.9). Integer buckets are
    rows, one per row counted, as the confusion metrics already checked; ``Sliced``'s packed
    decoder leaves such a slice to the per-slice decoder, which refuses it."""
    rng = np.random.default_rng(0)
    y, s = rng.integers(0, 2, 120), rng.random(120)
    for make in (sm.ROCAUC, sm.AveragePrecision, lambda: sm.ROCAUC(score_type="logit")):
        tree = msgpack.unpackb(make().update(y, s).to_bytes(), strict_map_key=False)
        tree["state"]["hist"]["pos"] = _bumped(tree["state"]["hist"]["pos"], 2**52)
        with pytest.raises(sm.StateDecodeError, match="buckets hold"):
            sm.loads(msgpack.packb(tree, use_bin_type=True))
    sliced = sm.Sliced(sm.ROCAUC()).update(y, s, by=rng.integers(0, 40, 120))
    assert sm.loads(sliced.to_bytes()).to_bytes() == sliced.to_bytes()
    tree = msgpack.unpackb(sliced.to_bytes(), strict_map_key=False)
    hist = tree["state"]["slices"][3][1]["state"]["hist"]
    hist["neg"] = _bumped(hist["neg"], 1)
    with pytest.raises(sm.StateDecodeError, match="buckets hold"):
        sm.loads(msgpack.packb(tree, use_bin_type=True))


def _replaced(ext: msgpack.ExtType, values: np.ndarray) -> msgpack.ExtType:
    """The wire array ``ext`` with ``values`` in place of its own (same dtype)."""
    dtype = msgpack.unpackb(ext.data)[0]
    values = np.ascontiguousarray(values, dtype=dtype)
    return msgpack.ExtType(ext.code, msgpack.packb([dtype, list(values.shape), values.tobytes()]))


def test_ranking_totals_and_spreads_no_stream_gives_are_refused() -> None:
    # A review of 0.8.10: a DCG with a folded total and no folded query computed 1e300; an MRR
    # spread of 3.9 over two queries in [0, 1] (at most 0.5) widened its interval to (0, 1).
    from streammetrics.ranking import DCG, MRR

    dcg = DCG().update([1, 1], [1, 0], [0.9, 0.1])
    with pytest.raises(sm.StateDecodeError, match="without folded queries"):
        sm.loads(forge(dcg, total=1e300))
    mrr = MRR().update([1, 1], [1, 0], [0.9, 0.1], complete=True)
    mrr.update([2, 2], [1, 0], [0.1, 0.9], complete=True)  # values 1 and 0.5
    sm.loads(forge(mrr, spread=0.5))  # the most two values in [0, 1] spread
    for spread in (0.51, 3.9):
        with pytest.raises(sm.StateDecodeError, match="spread"):
            sm.loads(forge(mrr, spread=spread))
    one = MRR().update([1, 1], [1, 0], [0.9, 0.1], complete=True)
    with pytest.raises(sm.StateDecodeError, match="spread"):
        sm.loads(forge(one, spread=0.01))  # one query has no spread


@pytest.mark.parametrize("exact", [True, False])
def test_detection_area_counts_past_the_whole_are_refused(exact: bool) -> None:
    # 1,000 small boxes under 1 box in all areas loaded and gave map_small 0.0099 for a
    # perfect detection (review of 0.8.10).
    from streammetrics.detection import MeanAveragePrecision

    m = MeanAveragePrecision(exact=exact).update(
        [{"boxes": [[0, 0, 10, 10], [1, 1, 9, 9]], "scores": [0.9, 0.8], "labels": [1, 1]}],
        [{"boxes": [[0, 0, 10, 10]], "labels": [1]}],
    )
    tree = msgpack.unpackb(m.to_bytes(), strict_map_key=False)
    records = tree["state"]["records"]
    records["gt_counts"] = _replaced(records["gt_counts"], np.array([[1, 1000, 0, 0]]))
    with pytest.raises(sm.StateDecodeError, match="area range"):
        sm.loads(msgpack.packb(tree, use_bin_type=True))


def forge_arrays(metric: sm.Metric, **state: Any) -> bytes:
    """:func:`forge` for state values that are numpy arrays (through the codec's own form)."""
    from streammetrics import _codec

    name, schema, config, tree = _codec.unpack_envelope(metric.to_bytes())
    tree.update(state)
    return _codec.pack_envelope(name, schema, config, tree)


def test_states_a_fuzzer_found_loadable_but_impossible_are_refused() -> None:
    """A coverage-guided review of 0.8.11's decoders (atheris, 26 minutes, 690k runs) found
    states that loaded, then broke on a valid call: each is refused now, or made sound."""
    # a sliding window whose width over its slots underflows: every time keyed nan
    with pytest.raises(sm.InputError, match="below the smallest normal float"):
        SlidingWindow(sm.Accuracy(), width=5e-324, slots=8)
    with pytest.raises(sm.StateDecodeError, match="smallest normal float"):
        sm.loads(forge(SlidingWindow(sm.Accuracy(), width=1.0, slots=8), {"width": 5e-324}))
    # a collection near the count bound: its per-request paths now check it too
    c = sm.MetricCollection(acc=sm.Accuracy()).update([1, 0], [1, 1])
    near = sm.loads(forge(c, count=2**53))
    before = near.to_bytes()
    for args, kwargs in [((1, 1), {}), (([1], [1]), {}), ((1, 1), {"sample_weight": 1.0})]:
        with pytest.raises(sm.CountOverflowError):
            near.update(*args, **kwargs)
        assert near.to_bytes() == before
    # a weighted regression state without its sums under the weights squared, or with a sum of
    # squared weights no weights give
    mse = sm.MeanSquaredError().update([0.0, 1, 2, 3], [1.0, 1, 0, 3], sample_weight=[0.25] * 4)
    empty = np.zeros(0)
    for forged in (
        dict(wsq_mean=empty, wsq_spread=empty, weight_sq=1e-308),
        dict(wsq_mean=empty, wsq_spread=empty, weight_sq=1e300),
        dict(weight_sq=1e-308),
    ):
        with pytest.raises(sm.StateDecodeError, match="weight"):
            sm.loads(forge_arrays(mse, **forged))
    # rows of weight 0 beside rows of weight 1 keep no such sums, and load
    zeros = sm.MeanSquaredError().update([1.0], [1.0], sample_weight=[0.0]).update([2.0], [1.0])
    assert sm.loads(zeros.to_bytes()).to_bytes() == zeros.to_bytes()
    # a loss whose sums give a negative spread (sum w x**2 < (sum w x)**2 / sum w)
    for make in (sm.BrierScore, sm.LogLoss):
        state = dict(count=45, weight_sum=45.0, weight_sq=93.0, loss_sum=30.0, loss_sq_sum=14.0)
        state.update(loss_wsq=45.0, loss_sq_wsq=18.0)
        with pytest.raises(sm.StateDecodeError, match=r"spread|loss_sq_sum"):
            sm.loads(forge(make().update([0, 1], [0.5, 0.5]), columns=0, **state))
    # a sum of squared weights beside weights of 0: it now loads only if a merge keeps it
    # loadable (the slack grows with the rows, as the sums do)
    acc = sm.loads(
        forge(sm.Accuracy().update([1, 0], [1, 0], sample_weight=[0.0, 0.0]), weight_sq=1e-300)
    )
    twice = acc.copy().merge(acc)
    assert sm.loads(twice.to_bytes()).to_bytes() == twice.to_bytes()


def test_forged_sums_under_squared_weights_are_refused_without_warnings() -> None:
    import warnings

    mse = sm.MeanSquaredError().update([0.0, 1, 2, 3], [1.0, 1, 0, 3], sample_weight=[0.5] * 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(sm.StateDecodeError):
            sm.loads(forge_arrays(mse, wsq_mean=np.array([1e308]), wsq_spread=np.array([1e308])))


BRIER_ROWS = ([0, 1, 1, 0], [0.1, 0.9, 0.8, 0.3])


@pytest.mark.parametrize(
    "make, state, message",
    [
        # four 1-D rows of "loss 2": a binary Brier score is at most 1
        (
            lambda: sm.BrierScore().update(*BRIER_ROWS),
            {"loss_sum": 8.0, "loss_sq_sum": 16.0, "loss_wsq": 8.0, "loss_sq_wsq": 16.0},
            "loss_sum is more than 1 times",
        ),
        # squares of losses that sum to 0 (merged, bytes loads refused: a negative spread)
        (
            lambda: sm.LogLoss().update(*BRIER_ROWS),
            {"loss_sum": 0.0, "loss_sq_wsq": 0.0},
            "loss_sq_sum is more than",
        ),
        (
            lambda: sm.BrierScore().update([0, 1, 2], np.eye(3) * 0.8 + 0.1),
            {"loss_sum": 0.0, "loss_sq_wsq": 0.0},
            "loss_sq_sum is more than",
        ),
        # a decayed weight no stream gives (merged with itself: inf, which loads refused)
        (
            lambda: sm.Decayed(sm.Accuracy(), half_life=50).update(
                [0, 1, 1], [0, 1, 0], timestamps=[0, 1, 2]
            ),
            {"weight": 1e308},
            "decayed weights would total",
        ),
        # four unit weights cannot square to 1e-300 (an interval of width 0)
        (
            lambda: sm.TopKAccuracy(k=1).update(
                [0, 1, 1, 0], [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]]
            ),
            {"weight_sq": 1e-300},
            "weight_sq",
        ),
    ],
    ids=["brier-1d-loss-2", "logloss-squares", "brier-squares", "decayed-weight", "topk-wsq"],
)
def test_sums_no_stream_gives_are_refused(make, state, message) -> None:
    """Found by a fuzzer of the decoder (0.8.14): each decoded, and gave an impossible value
    or interval, or merged into bytes ``loads`` refused."""
    metric = make()
    assert sm.loads(metric.to_bytes()) == metric  # the legitimate state loads
    with pytest.raises(sm.StateDecodeError, match=message):
        sm.loads(forge(metric, **state))


def test_integer_tables_are_bounded_by_their_exact_total() -> None:
    # A table totalling 2**53 + 1 loaded: its float64 total rounds down to the bound
    # (found by review, 0.8.16), and the count beside it, 2**53, looked equal.
    from streammetrics import _codec

    n = 2**53
    tree = _codec.decode(sm.ConfusionMatrix().update([0, 1], [0, 1]).to_bytes())
    tree["state"]["count"] = n
    tree["state"]["counts"]["table"] = np.array([[n, 0], [0, 1]], dtype=np.int64)
    with pytest.raises(sm.StateDecodeError, match="2\\*\\*53"):
        sm.loads(_codec.encode(tree))
    tree["state"]["counts"]["table"] = np.array([[n - 1, 0], [0, 1]], dtype=np.int64)
    assert sm.loads(_codec.encode(tree)).count == n  # at the bound: still a state


@pytest.mark.parametrize("cls", [sm.Accuracy, sm.F1, sm.CohenKappa, sm.MatthewsCorrCoef])
def test_unweighted_tables_carry_the_row_count_as_weight_sq(cls) -> None:
    # Integer counts come from unweighted rows only, whose squared weights total the row
    # count; 0.8.16 accepted any weight_sq within Cauchy-Schwarz's range, and a forged one
    # widened the interval (0.307-0.602 to 0.045-0.935 in a review's example).
    from streammetrics import _codec

    m = cls().update([0, 1, 1, 0] * 10, [0, 1, 0, 0] * 10)
    tree = _codec.decode(m.to_bytes())
    assert tree["state"]["weight_sq"] == 40.0
    tree["state"]["weight_sq"] = 1600.0
    with pytest.raises(sm.StateDecodeError, match="weight_sq"):
        sm.loads(_codec.encode(tree))


@pytest.mark.parametrize("field", ["score", "relevance"])
def test_a_forged_negative_zero_in_a_query_buffer_loads_as_zero(field: str) -> None:
    # update writes -0.0 as 0.0, and the canonical order ties the two; 0.8.18 kept a forged
    # -0.0, so a.merge(b) and b.merge(a) gave different bytes.
    from streammetrics.ranking import NDCG

    a = NDCG().update([7], [0.0], [0.0])
    tree = _codec.decode(a.to_bytes())
    tree["state"]["buffer"][field][0] = -0.0
    forged = sm.loads(_codec.encode(tree))
    assert forged.to_bytes() == a.to_bytes()
    b = NDCG().update([7], [0.0], [0.0])
    assert forged.copy().merge(b).to_bytes() == b.copy().merge(forged).to_bytes()
