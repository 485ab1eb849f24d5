"""Label-based classification metrics against scikit-learn: a reference table run on real data
(classifiers fitted on datasets scikit-learn ships) and on random data (hypothesis), fed in many
updates, split over shards and passed through bytes."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.linear_model import LogisticRegression

import streammetrics as sm
from streammetrics import _codec
from tests.harness import assert_same_result

AVERAGES = ["micro", "macro", "weighted", None]

# (our metric factory, scikit-learn function of (y_true, y_pred, sample_weight)), per averaging.
Ref = tuple[Callable[[], sm.Metric], Callable[..., Any]]


def reference_table(labels: Any = None, zero_division: Any = 0.0) -> dict[str, Ref]:
    table: dict[str, Ref] = {
        "accuracy": (sm.Accuracy, skm.accuracy_score),
        "mcc": (sm.MatthewsCorrCoef, skm.matthews_corrcoef),
        "confusion": (sm.ConfusionMatrix, skm.confusion_matrix),
    }
    for w in (None, "linear", "quadratic"):
        table[f"kappa-{w}"] = (
            lambda w=w: sm.CohenKappa(weights=w),
            lambda a, b, sample_weight=None, w=w: skm.cohen_kappa_score(
                a, b, weights=w, sample_weight=sample_weight
            ),
        )
    for avg in AVERAGES:
        kw = {"average": avg, "labels": labels, "zero_division": zero_division}
        for name, ours, theirs in (
            ("precision", sm.Precision, skm.precision_score),
            ("recall", sm.Recall, skm.recall_score),
            ("f1", sm.F1, skm.f1_score),
        ):
            table[f"{name}-{avg}"] = (
                lambda ours=ours, kw=kw: ours(**kw),
                lambda a, b, sample_weight=None, theirs=theirs, kw=kw: theirs(
                    a, b, sample_weight=sample_weight, **kw
                ),
            )
        for beta in (0.5, 2.0):
            table[f"fbeta{beta}-{avg}"] = (
                lambda kw=kw, beta=beta: sm.FBeta(beta=beta, **kw),
                lambda a, b, sample_weight=None, kw=kw, beta=beta: skm.fbeta_score(
                    a, b, beta=beta, sample_weight=sample_weight, **kw
                ),
            )
    return table


def streamed(
    make: Callable[[], sm.Metric],
    y_true: np.ndarray,
    y_pred: np.ndarray,
    weight: np.ndarray | None,
    rng: np.random.Generator,
    shards: int = 3,
) -> sm.Metric:
    """Feed the data in many random-size updates spread over shards; merge through bytes."""
    parts = [make() for _ in range(shards)]
    cuts = np.sort(
        rng.choice(np.arange(1, len(y_true)), size=min(40, len(y_true) - 1), replace=False)
    )
    for idx in np.split(np.arange(len(y_true)), cuts):
        w = None if weight is None else weight[idx]
        parts[rng.integers(shards)].update(y_true[idx], y_pred[idx], sample_weight=w)
    return sum(sm.loads(p.to_bytes()) for p in parts)  # type: ignore[return-value]


def check_table(
    y_true: np.ndarray,
    y_pred: np.ndarray,
    weight: np.ndarray | None,
    table: dict[str, Ref],
    seed: int = 0,
) -> None:
    rng = np.random.default_rng(seed)
    for key, (make, ref) in table.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            warnings.simplefilter("ignore", UserWarning)
            want = ref(y_true, y_pred, sample_weight=weight)
        got = streamed(make, y_true, y_pred, weight, rng).compute()
        assert_same_result(got, want, rtol=1e-12, atol=1e-15, path=key)


@pytest.fixture(scope="module")
def digits_predictions() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_digits(return_X_y=True)
    model = LogisticRegression(max_iter=3000).fit(X[::2], y[::2])
    return y[1::2], model.predict(X[1::2])


@pytest.fixture(scope="module")
def cancer_predictions() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    model = LogisticRegression(max_iter=3000).fit(X[::2], y[::2])
    return y[1::2], model.predict(X[1::2])


def test_real_multiclass_every_averaging(digits_predictions) -> None:
    y_true, y_pred = digits_predictions
    weight = np.random.default_rng(1).integers(0, 5, len(y_true)).astype(float)
    check_table(y_true, y_pred, None, reference_table())
    check_table(y_true, y_pred, weight, reference_table(), seed=1)
    check_table(y_true, y_pred, None, reference_table(labels=[9, 3, 4]), seed=2)


def test_real_binary(cancer_predictions) -> None:
    y_true, y_pred = cancer_predictions
    table = reference_table()
    for name, ours, theirs in (
        ("precision", sm.Precision, skm.precision_score),
        ("recall", sm.Recall, skm.recall_score),
        ("f1", sm.F1, skm.f1_score),
    ):
        for pos in (0, 1):
            table[f"{name}-binary-{pos}"] = (
                lambda ours=ours, pos=pos: ours(pos_label=pos),
                lambda a, b, sample_weight=None, theirs=theirs, pos=pos: theirs(
                    a, b, pos_label=pos, sample_weight=sample_weight
                ),
            )
    check_table(y_true, y_pred, None, table)
    weight = np.random.default_rng(3).random(len(y_true))
    check_table(y_true, y_pred, weight, table, seed=3)


def test_string_labels_and_string_pos_label(cancer_predictions) -> None:
    names = np.array(["benign", "malignant"])
    y_true, y_pred = (names[v] for v in cancer_predictions)
    table: dict[str, Ref] = {
        "f1-binary-str": (
            lambda: sm.F1(pos_label="malignant"),
            lambda a, b, sample_weight=None: skm.f1_score(a, b, pos_label="malignant"),
        ),
        "confusion-str": (sm.ConfusionMatrix, skm.confusion_matrix),
        **reference_table(),
    }
    check_table(y_true, y_pred, None, table)


@pytest.mark.parametrize("zero_division", [0.0, 1.0, float("nan")])
def test_zero_division_and_absent_labels(zero_division: float) -> None:
    # Label 3 is never predicted and label 4 never occurs: 0/0 ratios everywhere.
    rng = np.random.default_rng(4)
    y_true = rng.integers(0, 4, 300)
    y_pred = rng.integers(0, 3, 300)
    check_table(y_true, y_pred, None, reference_table(zero_division=zero_division))
    check_table(
        y_true, y_pred, None, reference_table(labels=[4, 3, 0], zero_division=zero_division), seed=5
    )


label_columns = st.integers(1, 80).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(-2, 5), min_size=n, max_size=n),
        st.lists(st.integers(-2, 5), min_size=n, max_size=n),
        st.one_of(st.none(), st.lists(st.integers(0, 3), min_size=n, max_size=n)),
    )
)


@settings(max_examples=60, deadline=None)
@given(label_columns, st.integers(0, 2**32 - 1))
def test_random_data_matches_scikit_learn(data, seed: int) -> None:
    y_true, y_pred, weight = (None if v is None else np.asarray(v) for v in data)
    if weight is not None:
        weight = weight.astype(float)
        if weight.sum() == 0:
            weight[0] = 1.0
    table = {k: v for k, v in reference_table().items() if not k.startswith("kappa")}
    check_table(y_true, y_pred, weight, table, seed=seed)


def test_top_k_accuracy_matches_scikit_learn_with_ties() -> None:
    rng = np.random.default_rng(6)
    y_true = rng.integers(0, 6, 2000)
    scores = rng.integers(0, 5, (2000, 6)) / 4.0
    weight = rng.random(2000)
    for k in (1, 2, 3, 5):
        want = skm.top_k_accuracy_score(y_true, scores, k=k, labels=range(6), sample_weight=weight)
        m = sm.TopKAccuracy(k=k)
        for idx in np.array_split(np.arange(2000), 17):
            m.update(y_true[idx], scores[idx], sample_weight=weight[idx])
        assert math.isclose(m.compute(), want, rel_tol=1e-12)


def test_classification_report_matches_scikit_learn(digits_predictions) -> None:
    y_true, y_pred = digits_predictions
    report = sm.ClassificationReport().update(y_true, y_pred).compute()
    want = skm.classification_report(y_true, y_pred, output_dict=True)
    for label, row in report["per_class"].items():
        ref = want[str(label)]
        for key, ref_key in (
            ("precision", "precision"),
            ("recall", "recall"),
            ("f1", "f1-score"),
            ("support", "support"),
        ):
            assert math.isclose(row[key], ref[ref_key], rel_tol=1e-12)
    for avg, ref_key in (("macro", "macro avg"), ("weighted", "weighted avg")):
        assert math.isclose(report[f"f1_{avg}"], want[ref_key]["f1-score"], rel_tol=1e-12)
    assert math.isclose(report["accuracy"], want["accuracy"], rel_tol=1e-12)
    assert math.isclose(report["mcc"], skm.matthews_corrcoef(y_true, y_pred), rel_tol=1e-12)


def test_confusion_matrix_fixed_labels_order_and_normalize() -> None:
    rng = np.random.default_rng(7)
    y_true, y_pred = rng.integers(0, 4, 500), rng.integers(0, 4, 500)
    for normalize in (None, "true", "pred", "all"):
        m = sm.ConfusionMatrix(labels=[3, 1, 0, 2], normalize=normalize)
        m.update(y_true, y_pred)
        want = skm.confusion_matrix(y_true, y_pred, labels=[3, 1, 0, 2], normalize=normalize)
        assert_same_result(m.compute(), want, rtol=1e-12)


def test_binary_average_refuses_a_third_label_at_update_time() -> None:
    m = sm.F1().update([0, 1], [1, 1])
    with pytest.raises(sm.InputError, match="average='binary'"):
        m.update([2], [0])
    with pytest.raises(sm.InputError, match="pos_label"):
        sm.F1(pos_label="yes").update(["a", "b"], ["a", "b"])
    assert m.count == 2


def test_inputs_in_every_container() -> None:
    import pandas as pd
    import pyarrow as pa

    y_true, y_pred = [0, 1, 2, 2, 1], [0, 2, 2, 2, 1]
    want = sm.ConfusionMatrix().update(y_true, y_pred)

    class FakeTensor:  # quacks like a CUDA torch tensor: detach().cpu().numpy()
        def __init__(self, values: list[int]) -> None:
            self.values = values

        def detach(self) -> FakeTensor:
            return self

        def cpu(self) -> FakeTensor:
            return self

        def numpy(self) -> np.ndarray:
            return np.asarray(self.values)

    for wrap in (
        np.asarray,
        pd.Series,
        pa.array,
        FakeTensor,
        tuple,
        lambda v: np.asarray(v, dtype=float),
    ):
        got = sm.ConfusionMatrix().update(wrap(y_true), wrap(y_pred))
        assert got == want, wrap
    one = sm.ConfusionMatrix().update(2, 2).update(np.int64(1), 1)
    assert one.count == 2 and one.compute().tolist() == [[1, 0], [0, 1]]
    assert sm.Accuracy().update([], []).count == 0


def test_error_messages_name_the_argument() -> None:
    m = sm.Accuracy()
    with pytest.raises(sm.InputError, match="y_true has 3, y_pred has 2"):
        m.update([0, 1, 1], [0, 1])
    with pytest.raises(sm.InputError, match="sample_weight"):
        m.update([0, 1], [0, 1], sample_weight=[1, -1])
    with pytest.raises(sm.InputError, match="y_pred: mixes strings and numbers"):
        m.update(["a", "b"], np.array(["a", 1], dtype=object))
    with pytest.raises(sm.InputError, match="y_true: str labels, but this state holds int labels"):
        sm.Accuracy().update([0], [0]).update(["a"], ["a"])
    with pytest.raises(sm.InputError, match="average"):
        sm.Precision(average="samples")


def test_binary_merge_refuses_what_an_update_would() -> None:
    a = sm.Precision().update([0, 1, 1], [0, 1, 0])
    b = sm.Precision().update([2, 1], [2, 1])
    before = a.to_bytes()
    with pytest.raises(sm.IncompatibleStateError, match="average='binary'"):
        a.merge(b)
    assert a.to_bytes() == before
    with pytest.raises(sm.IncompatibleStateError):
        sm.F1(pos_label=1).update([0], [0]) + sm.F1(pos_label=1).update([2], [2])
    # Fixed labels are ConfusionMatrix's configuration alone, never a hidden argument.
    with pytest.raises(TypeError):
        sm.Accuracy(fixed_labels=[0, 1])  # type: ignore[call-arg]


def test_top_k_accepts_one_sample_as_a_scalar_and_a_row() -> None:
    one = sm.TopKAccuracy(k=1).update(2, [0.1, 0.2, 0.7])
    assert one == sm.TopKAccuracy(k=1).update([2], [[0.1, 0.2, 0.7]])
    assert one.compute() == 1.0


def test_a_merge_of_several_checks_the_label_set_of_them_all() -> None:
    """Binary states of labels {0}, {1} and {2} merge pair by pair, not all three: the merged
    state (three labels) could not be scored. Refused, whatever the operands' order."""
    a, b, c = (sm.F1().update([k], [k]) for k in (0, 1, 2))
    for target in (sm.F1(), a.copy()):
        before = target.to_bytes()
        with pytest.raises(sm.IncompatibleStateError, match="could not be scored"):
            target.merge(*(x for x in (a, b, c) if x is not target))
        assert target.to_bytes() == before
    with pytest.raises(sm.IncompatibleStateError, match="could not be scored"):
        sum([a, b, c])


def test_per_label_result_of_an_empty_metric_is_an_array() -> None:
    # average=None gives one value per label: before any row, an empty array without labels=
    # (as ConfusionMatrix's 0x0 table) and nan per declared label, never a scalar nan (0.8.3).
    for cls in (sm.Precision, sm.Recall, sm.F1):
        empty = cls(average=None).compute()
        assert isinstance(empty, np.ndarray) and empty.shape == (0,)
        declared = cls(average=None, labels=[2, 0]).compute()
        assert declared.shape == (2,) and np.isnan(declared).all()
        assert sm.loads(cls(average=None).to_bytes()).compute().shape == (0,)


def test_mcc_of_tiny_weights_is_the_mcc_of_their_ratios() -> None:
    # Products of two squared totals underflowed below a total weight of about 1e-77: MCC came
    # out 0.0 with interval (0, 0) (Decayed(MCC).at(...) 300 half-lives after the last row).
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 500)
    p = np.where(rng.random(500) < 0.8, y, 1 - y)
    unit = sm.MatthewsCorrCoef().update(y, p, sample_weight=np.ones(500))
    for scale in (1e-80, 1e-150, 1e25):
        tiny = sm.MatthewsCorrCoef().update(y, p, sample_weight=np.full(500, scale))
        assert tiny.compute() == pytest.approx(unit.compute(), rel=1e-14)
        np.testing.assert_allclose(tiny.interval(), unit.interval(), rtol=1e-9)


def test_numpy_string_settings_merge_with_their_decoded_copies() -> None:
    # A setting given as a numpy string (read from a numpy or pandas config) was kept as
    # np.str_: the bytes were the same, but a merge compared the types and refused the state's
    # own decoded copy (0.8.11).
    given = np.array(["macro", "linear", "true", "warn"])
    states = [
        sm.F1(average=given[0]),
        sm.CohenKappa(weights=given[1]),
        sm.ConfusionMatrix(normalize=given[2]),
        sm.ClassificationReport(zero_division=given[3]),
    ]
    for m in states:
        m.update([0, 1, 1, 2], [0, 1, 0, 2])
        back = sm.loads(m.to_bytes())
        assert (m + back).count == 8
        assert all(type(v) is not np.str_ for v in m._config.values())
    both = sm.MetricCollection(f1=sm.F1(average=given[0])).update([0, 1], [0, 1])
    assert (both + sm.MetricCollection(f1=sm.F1(average="macro"))).count == 2


def test_a_negative_zero_setting_merges_to_the_same_bytes_in_either_order() -> None:
    # zero_division=-0.0 equals 0.0, so the two merge; 0.8.18 kept the sign, which the codec
    # writes, so a.merge(b) and b.merge(a) gave different bytes (also through a forged nested
    # config: a Decayed's metric inside a collection).
    a = sm.F1(zero_division=-0.0).update([0, 1, 1], [0, 1, 0])
    b = sm.F1(zero_division=0.0).update([1, 1, 0], [1, 0, 0])
    assert a.copy().merge(b).to_bytes() == b.copy().merge(a).to_bytes()
    assert math.copysign(1.0, a.config["zero_division"]) == 1.0
    blob = sm.MetricCollection(d=sm.Decayed(sm.F1(zero_division=0.0), half_life=10)).to_bytes()
    tree = _codec.decode(blob)
    tree["config"]["members"]["d"]["config"]["metric"]["config"]["zero_division"] = -0.0
    forged = sm.loads(_codec.encode(tree))
    assert forged.to_bytes() == blob


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_kappa_is_the_same_for_weights_scaled_by_any_factor(weights: Any) -> None:
    # The products of margins underflowed: weights of 1e-160 lost digits from the fifth on,
    # of 1e-170 gave nan (0.8.11); the counts are scaled first now, as MatthewsCorrCoef's are.
    yt, yp = [0, 1, 1, 2, 0], [0, 1, 0, 2, 2]
    want = sm.CohenKappa(weights=weights).update(yt, yp).compute()
    for scale in (1e-160, 1e-170, 1e-300, 1e20):
        got = sm.CohenKappa(weights=weights).update(yt, yp, sample_weight=[scale] * 5).compute()
        assert got == pytest.approx(want, rel=1e-12)
    rng = np.random.default_rng(0)  # the sparse table of many labels alike
    y = rng.integers(0, 5_000, 20_000)
    p = np.where(rng.random(20_000) < 0.6, y, rng.integers(0, 5_000, 20_000))
    sparse = sm.CohenKappa(weights=weights).update(y, p, sample_weight=np.full(20_000, 1e-170))
    assert sparse.counts.sparse
    assert sparse.compute() == pytest.approx(skm.cohen_kappa_score(y, p, weights=weights), rel=1e-9)


def test_fbeta_of_a_beta_whose_square_is_finite_but_huge_scores_as_recall() -> None:
    # beta=1e154: beta**2 finite, (1 + beta**2) * tp not: nan (0.8.11), where 1e155 (beta**2
    # overflowing) already scored as recall.
    want = sm.Recall().update([1, 1, 1, 0], [1, 1, 0, 1]).compute()
    for beta in (1e106, 1e153, 1e154, 1e155):
        m = sm.FBeta(beta=beta).update([1, 1, 1, 0], [1, 1, 0, 1])
        assert m.compute() == want
        assert not math.isnan(m.interval()[0])
