"""Inputs a review of ``update`` found mishandled: each now an ``InputError`` naming the
argument, with the state unchanged, or accepted as the one sample it is."""

from __future__ import annotations

import datetime
import re
from typing import Any

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.errors import InputError
from streammetrics.ranking import MRR
from streammetrics.text import BLEU, CHRF
from streammetrics.windows import Decayed, SlidingWindow, TumblingWindows


def refused(metric: sm.Metric, *args: Any, match: str, **kwargs: Any) -> None:
    before = metric.to_bytes()
    with pytest.raises(sm.InputError, match=match):
        metric.update(*args, **kwargs)
    assert metric.to_bytes() == before


@pytest.mark.parametrize(
    "make, row",
    [
        (sm.Accuracy, (1, 0)),
        (sm.ROCAUC, (1, 0.3)),
        (sm.MeanSquaredError, (1.0, 0.5)),
        (sm.Accuracy, ("cat", "dog")),
    ],
)
def test_zero_d_arrays_are_one_sample(make: Any, row: tuple[Any, Any]) -> None:
    # 0.8.2 raised TypeError (len() of an unsized object) after the row was counted.
    arrays, scalars = make(), make()
    for _ in range(3):
        arrays.update(*(np.array(v) for v in row))
        scalars.update(*row)
    assert arrays.to_bytes() == scalars.to_bytes() and arrays.count == 3


def test_a_ragged_small_batch_is_an_input_error_after_a_good_one() -> None:
    m = sm.Accuracy().update([0, 1], [0, 1])  # the small-batch path now trusts these columns
    refused(m, [[1], [0, 1]], [0, 1], match="y_true")


@pytest.mark.parametrize(
    "make, args, kwargs, name",
    [
        (sm.MeanSquaredError, ([1.0, 10**400], [1.0, 2.0]), {}, "y_true"),
        (lambda: sm.ROCAUC(score_type="real"), ([0, 1], [0.5, 10**400]), {}, "y_score"),
        (sm.Accuracy, ([0, 1], [0, 1]), {"sample_weight": [1, 10**400]}, "sample_weight"),
        (
            lambda: TumblingWindows(sm.Accuracy(), width=10),
            ([0, 1], [0, 1]),
            {"timestamps": [1, 10**400]},
            "timestamps",
        ),
    ],
)
def test_python_ints_beyond_float64_are_input_errors(make, args, kwargs, name) -> None:  # type: ignore[no-untyped-def]
    # 0.8.2: OverflowError from numpy's conversion.
    refused(make(), *args, match=name, **kwargs)


@pytest.mark.parametrize(
    "stamps", [["5", "70"], [b"5", b"70"], np.array([5 + 9j, 70 + 1j]), [True, False]]
)
@pytest.mark.parametrize(
    "make",
    [
        lambda: TumblingWindows(sm.Accuracy(), width=10),
        lambda: SlidingWindow(sm.Accuracy(), width=10),
        lambda: Decayed(sm.Accuracy(), half_life=10),
    ],
)
def test_timestamps_that_are_not_numbers_are_refused(make: Any, stamps: Any) -> None:
    # 0.8.2 read "5" as 5.0 and dropped the imaginary part, as scores never did.
    m = make().update([1], [1], timestamps=[1])
    refused(m, [1, 0], [1, 1], timestamps=stamps, match="timestamps")


def test_decayed_refuses_a_time_whose_epoch_would_not_encode() -> None:
    # 0.8.2 accepted 1e22 (epoch past 2**64); to_bytes then raised OverflowError forever.
    m = Decayed(sm.Accuracy(), half_life=1.0).update([1, 0], [1, 1], timestamps=[0.0, 1.0])
    refused(m, [1], [1], timestamps=[1e22], match="timestamps")
    assert sm.loads(m.to_bytes()) == m


@pytest.mark.parametrize("metric", [BLEU, CHRF])
def test_text_columns_must_be_ordered_sequences(metric: Any) -> None:
    # A set paired hypotheses with references in hash-seed order (BLEU 4.83 or 100 by seed).
    m = metric().update(["a b c"], [["a b c"]])
    refused(m, {"a b c", "d e f"}, ["a b c", "d e f"], match="hypotheses")
    refused(m, {"a b c": 1}, ["a b c"], match="hypotheses")
    refused(m, (h for h in ["a b c"]), ["a b c"], match="hypotheses")
    refused(m, ["a b c", "d e"], {"x", "y"}, match="references")
    m.update(("d e f",), (["d e f"],))  # tuples are ordered: fine


@pytest.mark.parametrize(
    "make, args",
    [
        (lambda: sm.ROCAUC(exact=True), ([0, 1], [0.2, 0.8])),
        (lambda: sm.ROCAUC(score_type="real"), ([0, 1], [0.2, 0.8])),
        (lambda: sm.AveragePrecision(exact=True), ([0, 1], [0.2, 0.8])),
        (lambda: sm.GAUC(), ([0, 1], [0.2, 0.8], [7, 7])),
        (lambda: sm.GAUC(exact=True), ([0, 1], [0.2, 0.8], [7, 7])),
    ],
)
def test_weights_past_the_bound_are_refused_by_the_sparse_stores(make: Any, args: Any) -> None:
    # 0.8.2 took them, and then refused its own bytes at loads (the grids checked already).
    m = make()
    for _ in range(2):
        m.update(*args, sample_weight=[2.0**99, 1.0])
    before = m.to_bytes()
    with pytest.raises(sm.CountOverflowError):
        m.update(*args, sample_weight=[2.0**99, 1.0])
    assert m.to_bytes() == before
    assert sm.loads(before) == m


@pytest.mark.parametrize(
    "make",
    [
        lambda v: BLEU(lowercase=v),
        lambda v: BLEU(effective_order=v),
        lambda v: CHRF(whitespace=v),
        lambda v: CHRF(eps_smoothing=v),
        lambda v: sm.R2Score(force_finite=v),
    ],
)
def test_yes_no_options_take_booleans_only(make: Any) -> None:
    # bool("no") is True: 0.8.2 took lowercase="no" as lowercase=True, and a map from a blob.
    for bad in ("no", {}, 2, None):
        with pytest.raises(sm.InputError, match="must be True or False"):
            make(bad)
    assert make(np.bool_(True)) == make(1) and make(False) == make(0)


def test_whole_float_labels_beyond_int64_are_named_as_such() -> None:
    # 1e20 is whole: 0.8.3 called it "fractional" (astype wrapped it to -2**63).
    for bad in ([1e20, 3e20], [-(2.0**63), 1.0]):
        with pytest.raises(InputError, match=r"y_true: labels must lie within int64"):
            sm.Accuracy().update(bad, [0, 1])
    assert sm.Accuracy().update([2.0**62, 1.0], [2.0**62, 0.0]).compute() == 0.5


@pytest.mark.parametrize("unit", ["datetime64[D]", "datetime64[ns]", "timedelta64[s]"])
def test_dates_and_durations_are_not_scores(unit: str) -> None:
    # Their float value is a count of their unit (0.8.3 read a day as 18263.0 and scored it).
    values = np.array([1, 2, 3], dtype="int64").astype(unit)
    for metric, call in (
        (sm.ROCAUC(score_type="real"), lambda m, x: m.update([0, 1, 1], x)),
        (sm.MeanSquaredError(), lambda m, x: m.update([1.0, 2.0, 3.0], x)),
        (sm.MeanSquaredError(), lambda m, x: m.update(x[0], 1.0)),  # the one-row path
        (sm.Silhouette(), lambda m, x: m.update(x.reshape(-1, 1), [0, 1, 1])),
    ):
        before = metric.to_bytes()
        with pytest.raises(InputError, match="dates or durations"):
            call(metric, values)
        assert metric.to_bytes() == before


def test_one_sample_beside_several_wrapper_keys_is_refused() -> None:
    # One sample as values with two timestamps or slice keys: 0.8.3 counted two rows for one
    # sample fed to each group, and the windows then wrote bytes their loads refused.
    calls = (
        (TumblingWindows(sm.Accuracy(), width=60), {"timestamps": [1, 2]}),
        (SlidingWindow(sm.Accuracy(), width=60, slots=6), {"timestamps": [5, 10]}),
        (sm.Sliced(sm.Accuracy()), {"by": ["a", "b"]}),
        (Decayed(sm.Accuracy(), half_life=10), {"timestamps": [1, 2]}),
    )
    for metric, keys in calls:
        before = metric.to_bytes()
        with pytest.raises(InputError, match="y_true: one sample"):
            metric.update(1, 0, **keys)
        assert metric.to_bytes() == before
        metric.update(1, 0, **{k: v[0] for k, v in keys.items()})  # one key: one sample
        assert sm.loads(metric.to_bytes()) == metric and metric.count == 1


def test_decayed_names_the_short_column_and_now() -> None:
    d = Decayed(sm.Accuracy(), half_life=10)
    with pytest.raises(InputError, match="timestamps has 1"):  # 0.8.3 blamed sample_weight
        d.update([1, 0], [1, 1], timestamps=[5])
    d.update([1], [1], timestamps=[1])
    for bad in (float("nan"), "x"):
        with pytest.raises(InputError, match=r"^now: "):
            d.at(bad)


def test_ragged_columns_after_weighted_rows_are_input_errors() -> None:
    # With weights already seen, the one-row buffer's check read a ragged weight list with
    # numpy and leaked its ValueError; probability metrics did the same with a ragged y_true.
    m = sm.Accuracy().update([0, 0], [0, 0], sample_weight=[1.0, 1.0])
    with pytest.raises(InputError, match="sample_weight"):
        m.update([0, 0, 0], [0, 0, 0], sample_weight=[[1], [1, 2], [1]])
    for cls in (sm.LogLoss, sm.BrierScore, sm.CalibrationError, sm.MulticlassROCAUC):
        with pytest.raises(InputError, match="y_true"):
            cls().update([[1], [1, 2], [1]], [0.2, 0.5, 0.7])


def test_brier_rows_that_do_not_sum_to_one_round_trip() -> None:
    # Rows need not sum to 1 (as in scikit-learn): a row's loss reaches the number of columns,
    # which the decoder's bound (2 in 0.8.3) refused.
    from sklearn.metrics import brier_score_loss

    rows = np.ones((4, 4))
    b = sm.BrierScore().update([0, 1, 2, 3], rows)
    assert b.compute() == pytest.approx(brier_score_loss([0, 1, 2, 3], rows, labels=[0, 1, 2, 3]))
    assert sm.loads(b.to_bytes()) == b
    assert sm.loads(sm.BrierScore().update([0, 1, 2], np.ones((3, 3), bool)).to_bytes()).count == 3


def test_split_refuses_more_parts_than_it_can_make() -> None:
    m = sm.GAUC().update([0, 1], [0.1, 0.2], [1, 1])
    for bad in (2**40, 2**64 + 1):
        with pytest.raises(InputError, match="parts"):
            m.split(bad)


@pytest.mark.parametrize(
    "metric, keys",
    [
        (lambda: sm.Sliced(sm.ROCAUC()), {"by": [1, 2, 3]}),
        (lambda: SlidingWindow(sm.ROCAUC(), width=10), {"timestamps": [1, 2, 3]}),
        (lambda: TumblingWindows(sm.ROCAUC(), width=10), {"timestamps": [1, 2, 3]}),
        (lambda: Decayed(sm.ROCAUC(), half_life=10), {"timestamps": [1, 2, 3]}),
        (
            lambda: sm.Sliced(SlidingWindow(sm.ROCAUC(), width=10)),
            {"by": [1, 2, 3], "timestamps": [1, 2, 3]},
        ),
    ],
)
def test_wrappers_name_the_wrapped_metrics_columns(metric: Any, keys: dict[str, Any]) -> None:
    # 0.8.4 said "argument 2" for the wrapped metric's y_score.
    m = metric()
    refused(m, [0, 1, 1], [0.1, 0.2], match=r"^y_score: has 2 rows", **keys)
    refused(m, [0, 1, 1], [0.1, 0.2, 0.3], [1.0, 1.0], match=r"^sample_weight: has 2", **keys)


def test_buffered_rows_of_slices_holding_different_label_kinds() -> None:
    # One-sample calls for slice "a" (int labels) and slice "b" (str labels) joined into one
    # string column: 0.8.4 then raised at the next read and dropped the buffered rows.
    calls = [("a", 0, 0), ("b", "x", "x"), ("a", 1, 0), ("b", "y", "x"), ("a", 1, 1)]
    calls.append(("b", "y", "y"))
    scalars, lists, whole = sm.Sliced(sm.Accuracy()), sm.Sliced(sm.Accuracy()), {}
    for key, t, p in calls:
        scalars.update(t, p, by=key)
        lists.update([t], [p], by=[key])
        whole.setdefault(key, sm.Accuracy()).update([t], [p])
    want = {k: m.compute() for k, m in whole.items()}
    for m in (scalars, lists):
        assert m.compute() == want and m.count == 6
        assert sm.loads(m.to_bytes()) == m


def test_buffered_large_numpy_ints_beside_float_labels_stay_exact() -> None:
    # 0.8.4 joined np.int64(2**60 + 1) with a later 1.0 in float64: a label 2**60 appeared.
    big = np.int64(2**60 + 1)
    m = sm.ConfusionMatrix()
    m.update([1, big], [1, big])  # both labels learnt
    m.update(big, big)
    m.update(1.0, 1.0)
    assert (
        m.to_bytes() == sm.ConfusionMatrix().update([1, big, big, 1], [1, big, big, 1]).to_bytes()
    )


@pytest.mark.parametrize(
    "make, good, bad, name",
    [
        (sm.ROCAUC, [0.1, 0.4, 0.5], [0.1, np.datetime64("2020-01-01"), 0.5], "y_score"),
        (
            sm.MeanSquaredError,
            [0.1, 0.4, 0.5],
            [0.1, datetime.timedelta(1), 0.5],
            "y_pred",
        ),
    ],
)
def test_dates_inside_lists_of_numbers_are_refused(
    make: Any, good: Any, bad: Any, name: str
) -> None:
    refused(make(), [0, 1, 1], bad, match=name)
    refused(make(), [0, 1, 1], good, [1.0, np.timedelta64(1, "s"), 1.0], match="sample_weight")


def test_masked_entries_are_refused_not_counted() -> None:
    scores = np.ma.array([0.1, 0.9, 0.8, 0.7], mask=[0, 0, 0, 1])
    refused(sm.ROCAUC(), [0, 1, 1, 0], scores, match="y_score: a masked array")
    unmasked = np.ma.array([0.1, 0.9, 0.8, 0.7])
    assert sm.ROCAUC().update([0, 1, 1, 0], unmasked) == sm.ROCAUC().update(
        [0, 1, 1, 0], unmasked.data
    )


def test_bytes_labels_are_utf8_text() -> None:
    assert sm.Accuracy().update(np.array([b"caf\xc3\xa9"]), ["café"]).compute() == 1.0
    refused(sm.Accuracy(), np.array([b"\xff"]), np.array([b"a"]), match="y_true: bytes labels")


def test_a_zero_d_tensor_label_beside_a_row_is_one_sample() -> None:
    torch = pytest.importorskip("torch")
    row = [0.2, 0.5, 0.3]
    for make in (sm.LogLoss, sm.BrierScore, sm.MulticlassROCAUC):
        assert make().update(torch.tensor(1), row) == make().update(1, row)


def test_float16_labels_and_longdouble_values_raise_no_numpy_warnings() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sm.Accuracy().update(np.array([1, 0], np.float16), [1, 0]).compute() == 1.0
        with pytest.raises(sm.InputError, match="y_true"):
            sm.MeanSquaredError().update(np.array([np.longdouble("1e400"), 1]), [1.0, 1.0])


def test_object_columns_of_labels_read_as_their_arrays_do() -> None:
    pd = pytest.importorskip("pandas")
    # Bytes in an object Series were "mixed strings and numbers"; numpy bools in an object
    # array were refused; a missing value in a string Series was called a number.
    want = sm.Accuracy().update(np.array([b"a", b"b"]), ["a", "b"])
    assert sm.Accuracy().update(pd.Series([b"a", b"b"], dtype=object), ["a", "b"]) == want
    flags = np.array([np.True_, np.False_], dtype=object)
    assert sm.Accuracy().update(flags, [1, 0]) == sm.Accuracy().update([True, False], [1, 0])
    refused(sm.Accuracy(), pd.Series(["a", pd.NA], dtype=object), ["a", "b"], match="missing")
    refused(sm.Accuracy(), np.array(["a", None], dtype=object), ["a", "b"], match="missing")


def test_masked_entries_are_refused_on_the_small_batch_path_too() -> None:
    # After a first small batch the per-request path took a masked array as it was: its masked
    # entries were counted, or the next read raised and dropped the buffered rows.
    m = sm.Accuracy().update([0, 1], [0, 1])
    m.update([1, 1], [1, 0])
    before = m.to_bytes()
    masked = np.ma.array([0, 1, 1], mask=[0, 1, 0])
    with pytest.raises(sm.InputError, match="y_true: a masked array"):
        m.update(masked, [0, 1, 1])
    assert m.to_bytes() == before and m.count == 4


@pytest.mark.parametrize(
    "make, args",
    [
        (sm.ROCAUC, ([0, 1], [0.2, 0.4])),
        (lambda: sm.ROCAUC(exact=True), ([0, 1], [0.2, 0.4])),
        (sm.GAUC, ([0, 1], [0.2, 0.4], [1, 1])),
        (sm.Accuracy, ([0, 1], [0, 1])),
        (sm.MulticlassROCAUC, ([0, 1], [[0.6, 0.4], [0.3, 0.7]])),
    ],
)
def test_weights_past_the_bound_name_sample_weight(make: Any, args: Any) -> None:
    # 0.8.4 named the state block ("score buckets: the counts would total ...").
    refused(make(), *args, sample_weight=[2.0**101, 1.0], match=r"^sample_weight")


@pytest.mark.parametrize(
    "make", [sm.MulticlassROCAUC, sm.LogLoss, sm.BrierScore, sm.CalibrationError]
)
@pytest.mark.parametrize("label", ["b", np.str_("b"), np.array("b")])
def test_one_sample_with_a_string_label_and_its_row(make: Any, label: Any) -> None:
    # 0.8.6 read the row beside a string label as three samples: "columns differ in length"
    # or "binary labels must be 0/1". An int label and a 0-d array worked.
    one = make(labels=["a", "b", "c"]).update(label, [0.2, 0.5, 0.3])
    batch = make(labels=["a", "b", "c"]).update(["b"], [[0.2, 0.5, 0.3]])
    assert one.count == 1
    assert one.to_bytes() == batch.to_bytes()


def test_a_whole_float_pos_label_is_the_int() -> None:
    # scikit-learn takes pos_label=1.0; 0.8.6 refused it though it reads labels 1.0 as 1.
    y, p = [0, 1, 1, 0, 1], [0, 1, 0, 0, 1]
    assert sm.F1(pos_label=1.0) == sm.F1(pos_label=1)
    assert sm.F1(pos_label=1.0).update(y, p).compute() == pytest.approx(0.8)
    assert sm.Precision(pos_label=0.0).config["pos_label"] == 0
    with pytest.raises(sm.InputError, match="pos_label: must be an int, a whole float"):
        sm.F1(pos_label=1.5)


def test_masked_weights_are_refused_on_the_small_batch_path_too() -> None:
    # 0.8.7 copied a masked sample_weight as a plain array once the metric was warm: its
    # masked entries were counted, or the next read raised and the buffered rows were lost.
    y, p = np.array([0, 1, 1, 0]), np.array([0, 1, 0, 0])
    w = np.ma.masked_array([1.0, 1.0, 100.0, 1.0], mask=[0, 0, 1, 0])
    for make in (sm.Accuracy, sm.ROCAUC, sm.MeanSquaredError, sm.LogLoss):
        m = make()
        s = p if make is sm.Accuracy else np.array([0.1, 0.8, 0.3, 0.2])
        m.update(y, s, sample_weight=np.ones(4)).update(y, s, sample_weight=np.ones(4))
        refused(m, y, s, sample_weight=w, match="sample_weight: a masked array")
        assert m.count == 8


def test_structured_arrays_are_refused_not_cut_to_their_first_field() -> None:
    # numpy casts a one-field record to the field's first value: a field of shape (2,) was read
    # as one column, and CalinskiHarabasz gave 50.0 instead of 9.14.
    points = np.array([[0.0, 10.0], [1.0, 20.0], [5.0, 0.0], [6.0, 1.0]])
    rec = np.zeros(4, dtype=[("xy", "f8", (2,))])
    rec["xy"] = points
    refused(sm.CalinskiHarabasz(), rec, [0, 0, 1, 1], match=r"X: a structured array")
    two = np.zeros(4, dtype=[("x", "f8"), ("y", "f8")])
    refused(sm.MeanSquaredError(), two, np.zeros(4), match=r"y_true: a structured array")
    refused(sm.Accuracy().update([0, 0], [0, 0]), two[:2], [0, 0], match="y_true: a structured")
    one = np.zeros(4, dtype=[("x", "f8")])  # one scalar field reads as its values, as before
    assert sm.MeanSquaredError().update(one, np.ones(4)).compute() == 1.0


def test_iterators_are_named_under_their_own_argument() -> None:
    # A generator as the first column was read as one sample, and the error named another
    # argument (y_prob's columns, Bootstrap's ids).
    y, p = [0, 1, 1, 0], [0.2, 0.7, 0.6, 0.1]
    refused(sm.LogLoss().update(y, p), iter(y), p, match="y_true: got a list_iterator")
    refused(sm.Bootstrap(sm.Accuracy()), iter(y), y, ids=[1, 2, 3, 4], match="y_true: got a")


def test_one_probability_column_is_the_positive_class() -> None:
    # torch.sigmoid(logits) of shape (n, 1), read as scikit-learn's log_loss reads it (0.8.7
    # refused it, naming y_true).
    from sklearn.metrics import log_loss

    y, p = [0, 1, 1, 0], np.array([0.2, 0.7, 0.6, 0.1])
    for make in (sm.LogLoss, sm.BrierScore, sm.CalibrationError):
        assert make().update(y, p[:, None]) == make().update(y, p)
    # Beside labels of three classes one column is no binary probability: refused, as before.
    refused(sm.BrierScore(labels=[0, 1, 2]), y, p[:, None], match="labels names 3 classes")
    assert sm.LogLoss().update(y, p[:, None]).compute() == pytest.approx(log_loss(y, p[:, None]))


def test_a_missing_category_is_called_missing() -> None:
    pd = pytest.importorskip("pandas")
    labels = pd.Series(["a", np.nan, "b"], dtype="category")
    refused(sm.Accuracy(), labels, ["a", "b", "b"], match=r"y_true: missing values \(nan\)")


def test_time_zone_aware_times_say_how_to_pass_them() -> None:
    pd = pytest.importorskip("pandas")
    t = pd.Series(pd.to_datetime(["2026-01-01", "2026-01-02"], utc=True))
    w = sm.TumblingWindows(sm.Accuracy(), 3600)
    refused(w, [0, 1], [0, 1], timestamps=t, match=r"datetime objects: give them as datetime64")
    fixed = pd.to_datetime(t, utc=True).to_numpy("datetime64[ns]")
    assert w.update([0, 1], [0, 1], timestamps=fixed).count == 2


def test_a_float16_inf_weight_is_refused_at_the_call_on_the_fast_paths():
    """In float16 the bound on weights (2**82) is inf, so ``inf <= bound`` held: a metric that
    had learnt weighted calls buffered an inf weight, the next read raised and the rows
    buffered with it were lost (review of 0.8.9)."""
    for make, row in (
        (sm.Accuracy, (1, 1)),
        (sm.ROCAUC, (1, 0.6)),
        (sm.AveragePrecision, (0, 0.2)),
    ):
        m = make()
        for w in (1.0, 2.0, 1.0):
            m.update(*row, sample_weight=w)  # teaches the one-row, weighted call
        refused(m, *row, sample_weight=np.float16("inf"), match="sample_weight")
        cols = [np.array([v, v]) for v in row]
        m.update(*cols, sample_weight=[1.0, 2.0])  # teaches the small weighted batch
        refused(
            m, *cols, sample_weight=np.array([1, np.inf], dtype=np.float16), match="sample_weight"
        )
        assert m.count == 5


def test_text_metrics_take_a_0d_string_array_as_one_string():
    """Other metrics read a 0-d array as one sample; BLEU and CHRF refused it ("expected a 1-D
    column") and, as a reference, with a message contradicting itself."""
    for make in (BLEU, CHRF):
        want = make().update("the cat sat on the mat", "the cat sat on a mat").to_bytes()
        hyp, ref = np.array("the cat sat on the mat"), np.array("the cat sat on a mat")
        assert make().update(hyp, ref).to_bytes() == want
        assert make().update("the cat sat on the mat", ref).to_bytes() == want
        assert make().update(["the cat sat on the mat"], [ref]).to_bytes() == want


def _lone_surrogate() -> str:
    import os

    return os.fsdecode(b"user\xff")  # 'user\udcff': undecodable bytes, as Python reads them


@pytest.mark.parametrize(
    "call",
    [
        lambda q: sm.ConfusionMatrix().update([q, "y"], ["y", "y"]),
        lambda q: sm.ConfusionMatrix().update(np.array(["y", q]), ["y", "y"]),
        lambda q: sm.GAUC().update([1, 0], [0.9, 0.1], [q, q]),
        lambda q: MRR().update([q, q], [1, 0], [0.9, 0.1]),
        lambda q: sm.Sliced(sm.Accuracy()).update([1, 0], [1, 1], by=["x", q]),
        lambda q: sm.Sliced(sm.Accuracy()).update([1, 0], [1, 1], by=([q, "x"], [1, 2])),
        lambda q: sm.Bootstrap(sm.Accuracy(), replicates=4).update([1], [1], ids=[q]),
    ],
)
def test_a_string_without_utf8_form_is_refused_at_update(call: Any) -> None:
    # 0.8.10 took it, computed, and then could never write the state (UnicodeEncodeError).
    with pytest.raises(sm.InputError, match="lone surrogate"):
        call(_lone_surrogate())


@pytest.mark.parametrize(
    "make, good, bad",
    [
        (lambda: sm.ConfusionMatrix(), ("a", "a"), lambda q: (q, "a")),
        (lambda: sm.GAUC(), (1, 0.9, "g"), lambda q: (1, 0.3, q)),
        (lambda: MRR(), ("a", 1, 0.5), lambda q: (q, 1, 0.3)),
        (lambda: sm.Sliced(sm.Accuracy()), (1, 1), lambda q: (1, 1)),
    ],
)
def test_a_string_without_utf8_form_is_refused_one_sample_at_a_time(
    make: Any, good: tuple, bad: Any
) -> None:
    # One sample per call: a key of a kind already seen is trusted without a look at the
    # state, so the checks of one sample refuse it at its call, not at the fold.
    q = _lone_surrogate()
    sliced = isinstance(make(), sm.Sliced)
    m, ref = make(), make()
    for metric in (m, ref):
        for k in range(3):
            if sliced:
                metric.update(*good, by=f"s{k}")
            else:
                metric.update(*good)
    for args in (bad(q), tuple(np.array([v]) for v in bad(q))):  # a sample, a batch of one
        with pytest.raises(sm.InputError, match="lone surrogate"):
            if sliced:
                m.update(*args, by=q if args[0] == 1 else np.array([q]))
            else:
                m.update(*args)
    assert m.to_bytes() == ref.to_bytes()


def test_big_endian_text_and_one_element_ids_of_none() -> None:
    # Review of 0.8.11's first version: a big-endian unicode array read its code points
    # byte-swapped, so a lone surrogate passed the check (and Bootstrap hashed such ids
    # apart from the same ids in native order); ids=[None] beside one sample was read as
    # "no ids"; a lone surrogate in pos_label raised UnicodeEncodeError at construction.
    q = _lone_surrogate()
    with pytest.raises(sm.InputError, match="lone surrogate"):
        sm.Accuracy().update(np.array([q, "a"], dtype=">U5"), np.array(["a", "a"]))
    with pytest.raises(sm.InputError, match="lone surrogate"):
        sm.Sliced(sm.Accuracy()).update([1, 1], [1, 0], by=np.array([q, "b"], dtype=">U5"))
    ids = np.array(["req-1", "é"], dtype=">U5")
    little = sm.Bootstrap(sm.Accuracy(), replicates=8).update([1, 0], [1, 1], ids=ids.astype("<U5"))
    big = sm.Bootstrap(sm.Accuracy(), replicates=8).update([1, 0], [1, 1], ids=ids)
    assert big.to_bytes() == little.to_bytes()
    for bad in ([None], (None,)):
        b = sm.Bootstrap(sm.Accuracy(), replicates=8)
        with pytest.raises(sm.InputError, match="ids"):
            b.update(1, 1, ids=bad)
        assert b.count == 0
    with pytest.raises(sm.InputError, match="pos_label"):
        sm.F1(pos_label=q)


@pytest.mark.parametrize(
    ("build", "name"),
    [
        (lambda v: sm.GAUC(max_exact=v), "max_exact"),
        (lambda v: sm.TopKAccuracy(k=v), "k"),
        (lambda v: sm.Sliced(sm.Accuracy(), max_slices=v), "max_slices"),
        (lambda v: sm.TumblingWindows(sm.Accuracy(), width=10, retention=v), "retention"),
    ],
)
def test_configuration_integers_past_64_bits_are_input_errors(build, name) -> None:
    # 0.8.12 took them and raised OverflowError writing the configuration (GAUC(max_exact=2**64)).
    for value in (2**63, 2**64, 2**70):
        with pytest.raises(sm.InputError, match=name):
            build(value)
    m = build(2**63 - 1)
    assert sm.loads(m.to_bytes()).config == m.config


def test_configuration_by_position_warns_where_the_api_shows_keywords() -> None:
    # API.md: "configuration: keyword arguments only". 0.8.12 took sm.F1("macro") silently;
    # it now warns (and 0.9 will refuse it). What the API shows by position stays silent.
    import warnings

    from streammetrics import ranking

    for make, says in [
        (lambda: sm.F1("macro"), "F1(average='macro')"),
        (lambda: sm.FBeta(0.5, "macro"), "FBeta(0.5, average='macro')"),
        (lambda: sm.MeanSquaredError("raw_values"), "MeanSquaredError(multioutput='raw_values')"),
        (lambda: ranking.NDCG(10), "NDCG(k=10)"),
        # (0.8.13 suggested Bootstrap(Accuracy(count=0), ...), which no constructor takes.)
        (lambda: sm.Bootstrap(sm.Accuracy(), 10), "Bootstrap(Accuracy(), replicates=10)"),
        (lambda: sm.Sliced(sm.Accuracy(), 5), "Sliced(Accuracy(), max_slices=5)"),
        (
            lambda: sm.TumblingWindows(sm.Accuracy(), 60, 3),
            "TumblingWindows(Accuracy(), 60, retention=3)",
        ),
        (
            lambda: sm.TumblingWindows(sm.Sliced(sm.F1(average="macro")), 60, 3),
            "TumblingWindows(Sliced(metric=F1(average='macro', pos_label=1, labels=None, "
            "zero_division=0.0), max_slices=None), 60, retention=3)",
        ),
        (
            lambda: sm.SlidingWindow(sm.MetricCollection(a=sm.Accuracy()), 60, 4, 0.5),
            "SlidingWindow(MetricCollection(a=Accuracy()), 60, 4, origin=0.5)",
        ),
    ]:
        with pytest.warns(FutureWarning, match=re.escape(says)) as record:
            metric = make()
        assert record[0].filename == __file__  # (pointing at the caller's line)
        assert sm.loads(metric.to_bytes()).config == metric.config
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the suggestion runs, silently, to the same metric
            suggested = eval(says, {**vars(sm), **vars(ranking)})
        assert suggested.config == metric.config
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sm.FBeta(0.5, average="macro")
        sm.TopKAccuracy(3)
        ranking.PrecisionAtK(5), ranking.RecallAtK(5), ranking.HitRate(5)
        sm.Bootstrap(sm.Accuracy(), replicates=10)
        sm.SlidingWindow(sm.Accuracy(), 60, 4), sm.TumblingWindows(sm.Accuracy(), 60)
        sm.Decayed(sm.Accuracy(), 10.0), sm.Sliced(sm.Accuracy())
        sm.RootMeanSquaredError(multioutput="raw_values")  # (its base's __init__ is silent)

        class Own(sm.Accuracy):  # a user's subclass keeps its own signature
            def __init__(self, threshold: float = 0.5) -> None:
                super().__init__()

        Own(0.7)


def test_numpy_scalars_configure_as_python_numbers_do() -> None:
    """numpy's integers and floats configure a metric as the Python numbers they hold (the
    same bytes); 0.8.17 refused some (``BLEU(smooth_value=np.int64(1))``, ``CHRF(char_order=
    np.int64(6))``, ``resolution=np.int64(64)``) as "must be a number", and took a
    ``smooth_value`` of 2**64, which then raised msgpack's OverflowError. A review found them."""
    from streammetrics.detection import MeanAveragePrecision
    from streammetrics.text import BLEU, CHRF

    pairs = [
        (BLEU(smooth_value=np.int64(1)), BLEU(smooth_value=1)),
        (BLEU(smooth_value=np.float64(0.5)), BLEU(smooth_value=0.5)),
        (CHRF(char_order=np.int64(5), word_order=np.int32(2)), CHRF(char_order=5, word_order=2)),
        (CHRF(beta=np.int64(3)), CHRF(beta=3)),
        (sm.ROCAUC(resolution=np.int64(64), exact=np.bool_(False)), sm.ROCAUC(resolution=64)),
        (sm.GAUC(resolution=np.int16(256)), sm.GAUC(resolution=256)),
        (
            MeanAveragePrecision(exact=False, resolution=np.int64(64)),
            MeanAveragePrecision(exact=False, resolution=64),
        ),
    ]
    for got, want in pairs:
        assert got.to_bytes() == want.to_bytes()
    for huge in (2**64, 2**70):
        m = BLEU(smooth_value=huge)
        assert sm.loads(m.to_bytes()) == m
    with pytest.raises(sm.InputError, match="smooth_value"):
        BLEU(smooth_value=np.bool_(True))
    with pytest.raises(sm.InputError, match="smooth_value"):
        BLEU(smooth_value=10**400)  # (past float64: math's OverflowError in the first cut)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (1e150 cast to float32 overflowed, with a warning)
        assert CHRF(beta=np.float32(2.5)).to_bytes() == CHRF(beta=2.5).to_bytes()
        for bad in (np.float32(np.inf), np.float16(np.inf), 10**400):
            with pytest.raises(sm.InputError, match="beta"):
                CHRF(beta=bad)
    with pytest.raises(sm.InputError, match="resolution"):
        sm.ROCAUC(resolution=np.float64(64))
