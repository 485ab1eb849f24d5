"""``labels=`` with 1-D (binary) probabilities in ``LogLoss``, ``BrierScore`` and
``CalibrationError``.

Up to 0.8.11 ``labels`` was ignored for 1-D probabilities: ``y_true`` had to hold 0/1 whatever
``labels`` said, labels of three classes were accepted beside one probability, and
``LogLoss(labels=[5, 7]).update([5, 7], [0.2, 0.8])`` was refused although scikit-learn's
``log_loss`` takes it. Now, as scikit-learn reads one probability column beside two labels, the
1-D probability is that of ``labels[1]`` (labels sorted, as the 2-D form sorts them and as
scikit-learn sorts them), ``y_true`` must hold those labels, and labels of any other number of
classes are refused; 1-D and two-column probabilities agree.
"""

from __future__ import annotations

import math
from typing import Any

import msgpack
import numpy as np
import pytest
from sklearn.metrics import brier_score_loss, log_loss

import streammetrics as sm

LABEL_SETS: list[list[Any]] = [[5, 7], ["no", "yes"], [7, 5], ["yes", "no"], [-1, 1]]
MAKERS = {
    "LogLoss": lambda labels=None: sm.LogLoss(labels=labels),
    "BrierScore": lambda labels=None: sm.BrierScore(labels=labels),
    "CalibrationError": lambda labels=None: sm.CalibrationError(bins=10, labels=labels),
}


def _data(labels: list[Any], n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = np.asarray(labels)[rng.integers(0, 2, n)]
    p = rng.uniform(0.0, 1.0, n)
    p[: n // 10] = rng.choice([0.0, 1.0], n // 10)  # clipped by log_loss
    w = rng.uniform(0.0, 3.0, n)
    return y, p, w


def _positive(labels: list[Any]) -> Any:
    return sorted(labels)[1]


def _sklearn(name: str, y: np.ndarray, p: np.ndarray, labels: list[Any], w: Any) -> float:
    if name == "LogLoss":
        with pytest.warns(UserWarning) if labels != sorted(labels) else _nothing():
            return float(log_loss(y, p, labels=labels, sample_weight=w))
    # brier_score_loss reads labels= only for 2-D probabilities; for 1-D the class of the
    # probability is pos_label: labels[1] here.
    return float(brier_score_loss(y, p, pos_label=_positive(labels), sample_weight=w))


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def _fields(m: sm.Metric) -> dict[str, Any]:
    return {name: getattr(m, name) for name in m._fields}


def _same_state(a: sm.Metric, b: sm.Metric) -> None:
    assert a.count == b.count
    for name, value in _fields(a).items():
        np.testing.assert_allclose(value, getattr(b, name), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("labels", LABEL_SETS, ids=str)
@pytest.mark.parametrize("name", ["LogLoss", "BrierScore"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_matches_sklearn_batch_rows_shards_and_bytes(
    name: str, labels: list[Any], weighted: bool
) -> None:
    y, p, w = _data(labels, 400, seed=len(name) + len(str(labels)))
    weights = w if weighted else None
    want = _sklearn(name, y, p, labels, weights)
    make = MAKERS[name]

    batch = make(labels).update(y, p, sample_weight=weights)
    assert batch.compute() == pytest.approx(want, rel=1e-12)

    # One row per call (the per-request path buffers them once trusted).
    rows = make(labels)
    for i in range(len(y)):
        if weighted:
            rows.update(y[i].item(), float(p[i]), sample_weight=float(w[i]))
        else:
            rows.update(y[i].item(), float(p[i]))
    assert rows.compute() == pytest.approx(want, rel=1e-12)
    _same_state(rows, batch)

    # An (n, 1) column is the same probability.
    column = make(labels).update(y, p[:, None], sample_weight=weights)
    assert column.to_bytes() == batch.to_bytes()

    # Shards merged, through their bytes.
    parts = []
    for idx in np.array_split(np.arange(len(y)), 4):
        shard = make(labels).update(
            y[idx], p[idx], sample_weight=None if weights is None else weights[idx]
        )
        parts.append(sm.loads(shard.to_bytes()))
    merged = sum(parts[1:], parts[0])
    assert merged.compute() == pytest.approx(want, rel=1e-12)
    back = sm.loads(merged.to_bytes())
    assert back.compute() == pytest.approx(want, rel=1e-12)
    assert back.to_bytes() == merged.to_bytes()
    # and the loaded state keeps taking the labels
    back.update(y[:3], p[:3])
    assert back.count == len(y) + 3


@pytest.mark.parametrize("labels", LABEL_SETS, ids=str)
@pytest.mark.parametrize("name", ["LogLoss", "BrierScore", "CalibrationError"])
def test_one_d_agrees_with_two_columns_and_with_0_1_labels(name: str, labels: list[Any]) -> None:
    y, p, w = _data(labels, 300, seed=3)
    make = MAKERS[name]
    one_d = make(labels).update(y, p, sample_weight=w)
    # The same rows as 0/1 outcomes of labels[1], without labels: the same state.
    binary = make().update((y == _positive(labels)).astype(int), p, sample_weight=w)
    _same_state(one_d, binary)
    assert one_d.compute() == pytest.approx(binary.compute(), rel=1e-12)
    if name != "CalibrationError":  # (its 2-D form scores the top class, not labels[1])
        two = make(labels).update(y, np.c_[1.0 - p, p], sample_weight=w)
        assert one_d.compute() == pytest.approx(two.compute(), rel=1e-12)
        assert one_d.interval() == pytest.approx(two.interval(), rel=1e-9)


def test_sklearn_two_column_forms_agree() -> None:
    y, p, _ = _data(["no", "yes"], 200, seed=11)
    two = np.c_[1.0 - p, p]
    assert sm.LogLoss(labels=["yes", "no"]).update(y, p).compute() == pytest.approx(
        log_loss(y, two, labels=["no", "yes"]), rel=1e-12
    )
    assert sm.BrierScore(labels=["yes", "no"]).update(y, p).compute() == pytest.approx(
        brier_score_loss(y, two, labels=["no", "yes"]), rel=1e-12
    )


def test_calibration_error_reads_labels() -> None:
    y, p, w = _data(["no", "yes"], 500, seed=5)
    got = sm.CalibrationError(bins=10, labels=["no", "yes"]).update(y, p, sample_weight=w)
    hit = (y == "yes").astype(float)
    bins = np.clip(np.ceil(p * 10).astype(int) - 1, 0, 9)
    wt = np.bincount(bins, weights=w, minlength=10)
    acc = np.bincount(bins, weights=w * hit, minlength=10)
    conf = np.bincount(bins, weights=w * p, minlength=10)
    keep = wt > 0
    want = float(np.sum(wt[keep] / wt.sum() * np.abs(acc[keep] / wt[keep] - conf[keep] / wt[keep])))
    assert got.compute() == pytest.approx(want, rel=1e-9)
    rows = sm.CalibrationError(bins=10, labels=["no", "yes"])
    for i in range(len(y)):
        rows.update(str(y[i]), float(p[i]), sample_weight=float(w[i]))
    _same_state(rows, got)


def _refused(metric: sm.Metric, *args: Any, match: str, **kwargs: Any) -> None:
    before = metric.to_bytes()
    with pytest.raises(sm.InputError, match=match):
        metric.update(*args, **kwargs)
    assert metric.to_bytes() == before


@pytest.mark.parametrize("name", ["LogLoss", "BrierScore", "CalibrationError"])
def test_labels_outside_are_refused_naming_y_true(name: str) -> None:
    make = MAKERS[name]
    for m in (make([5, 7]), make([5, 7]).update([5, 7, 7], [0.1, 0.8, 0.6])):
        _refused(m, [0, 1], [0.2, 0.8], match="y_true: labels .*not among")
        _refused(m, [5, 6], [0.2, 0.8], match=r"y_true: labels \[6\] are not among")
        _refused(m, ["no", "yes"], [0.2, 0.8], match="y_true: str labels")
        _refused(m, 0, 0.3, match="y_true: labels")
    m = make(["no", "yes"])
    _refused(m, [0, 1], [0.2, 0.8], match="y_true: int labels")
    _refused(m, ["no", "maybe"], [0.2, 0.8], match=r"y_true: labels \['maybe'\]")


@pytest.mark.parametrize("name", ["LogLoss", "BrierScore", "CalibrationError"])
@pytest.mark.parametrize("labels", [[0, 1, 2], [5], ["a", "b", "c"]], ids=str)
def test_one_d_beside_other_than_two_labels_is_refused(name: str, labels: list[Any]) -> None:
    # scikit-learn's log_loss: "The number of classes in labels is different from that in
    # y_prob" (and "needs to contain at least two labels").
    m = MAKERS[name](labels)
    y = [labels[0], labels[-1]]
    for p in ([0.2, 0.8], [[0.2], [0.8]]):
        _refused(m, y, p, match=r"labels: 1-D \(binary\) y_prob.*needs two classes")
    _refused(m, labels[0], 0.2, match="labels: 1-D")
    # A state of as many columns as labels still takes its rows.
    k = len(labels)
    if k > 1:
        rows = np.full((2, k), 1.0 / k)
        assert m.update(y, rows).count == 2
        _refused(m, y, [0.2, 0.8], match="labels: 1-D|y_prob: has 1-D")


def test_with_sklearn_the_two_refusals() -> None:
    with pytest.raises(ValueError, match="not belonging to the passed labels"):
        log_loss([0, 1], [0.2, 0.8], labels=[5, 7])
    with pytest.raises(ValueError, match="number of classes in labels"):
        log_loss([0, 1], [0.2, 0.8], labels=[0, 1, 2])
    assert log_loss([5, 7], [[0.2], [0.8]], labels=[5, 7]) == pytest.approx(
        sm.LogLoss(labels=[5, 7]).update([5, 7], [[0.2], [0.8]]).compute(), rel=1e-12
    )


@pytest.mark.parametrize("name", ["LogLoss", "BrierScore", "CalibrationError"])
def test_per_request_path_refuses_what_the_batch_path_refuses(name: str) -> None:
    make = MAKERS[name]
    m = make([5, 7])
    for _ in range(3):  # trusted after the first accepted calls: buffered from then on
        m.update(5, 0.2)
        m.update(7, 0.9)
        m.update([5, 7], [0.3, 0.6])
        m.update(7, 0.4, sample_weight=2.0)
    _refused(m, 1, 0.3, match="y_true: labels")
    _refused(m, 0, 0.3, match="y_true: labels")
    _refused(m, [0, 1], [0.3, 0.4], match="y_true: labels")
    _refused(m, 1, 0.3, sample_weight=1.0, match="y_true: labels")
    _refused(m, True, 0.3, match="y_true: labels")
    want = make([5, 7]).update(
        [5, 7, 5, 7, 7] * 3, [0.2, 0.9, 0.3, 0.6, 0.4] * 3, sample_weight=[1, 1, 1, 1, 2] * 3
    )
    _same_state(m, want)
    # Labels of three classes: no one-sample call of 1-D probabilities is ever accepted.
    three = make([0, 1, 2])
    for _ in range(3):
        _refused(three, 1, 0.3, match="labels: 1-D")
        _refused(three, [0, 1], [0.3, 0.4], match="labels: 1-D")
    assert three.count == 0


def test_sliced_one_row_per_call() -> None:
    y, p, _ = _data(["no", "yes"], 120, seed=8)
    by = np.arange(len(y)) % 3
    whole = sm.Sliced(sm.LogLoss(labels=["no", "yes"])).update(y, p, by=by)
    rows = sm.Sliced(sm.LogLoss(labels=["no", "yes"]))
    for i in range(len(y)):
        rows.update(str(y[i]), float(p[i]), by=int(by[i]))
    with pytest.raises(sm.InputError, match="y_true"):
        rows.update(1, 0.5, by=0)
    got, want = rows.compute(), whole.compute()
    assert set(got) == set(want)
    for key in want:
        assert got[key] == pytest.approx(want[key], rel=1e-12)
        keep = by == key
        assert want[key] == pytest.approx(log_loss(y[keep], p[keep], labels=["no", "yes"]))


def test_without_labels_nothing_changes() -> None:
    y, p = [0, 1, 1, 0, True], [0.1, 0.9, 0.8, 0.35, 0.5]
    assert sm.LogLoss().update(y, p).compute() == pytest.approx(log_loss(y, p), rel=1e-12)
    assert sm.BrierScore().update(y, p).compute() == pytest.approx(
        brier_score_loss(y, p), rel=1e-12
    )
    with pytest.raises(sm.InputError, match="binary labels must be 0/1"):
        sm.LogLoss().update([5, 7], [0.2, 0.8])
    # labels=[0, 1] reads 0/1 (and False/True, 0.0/1.0) as before
    for make in MAKERS.values():
        assert make([0, 1]).update([False, True, 1.0], [0.2, 0.8, 0.4]).compute() == (
            make().update([0, 1, 1], [0.2, 0.8, 0.4]).compute()
        )


def _forge(metric: sm.Metric, config: dict[str, Any]) -> bytes:
    tree = msgpack.unpackb(metric.to_bytes(), strict_map_key=False)
    tree["config"].update(config)
    return msgpack.packb(tree, use_bin_type=True)


@pytest.mark.parametrize("name", ["LogLoss", "BrierScore", "CalibrationError"])
def test_a_one_d_state_under_other_than_two_labels_loads_and_refuses_more_rows(name: str) -> None:
    # 0.8.11 and earlier wrote such states (labels= ignored for 1-D probabilities): they still
    # load, with their value, and refuse further 1-D rows as a new state does.
    state = MAKERS[name]().update([0, 1, 1], [0.2, 0.7, 0.9])
    for labels in ([0, 1, 2], [1], ["a", "b", "c"]):
        back = sm.loads(_forge(state, {"labels": labels}))
        assert back.compute() == pytest.approx(state.compute(), rel=1e-12)
        before = back.to_bytes()
        with pytest.raises(sm.InputError, match=r"labels: 1-D \(binary\) y_prob"):
            back.update([0], [0.5])
        assert back.to_bytes() == before
    # Two labels: the state of 0/1 outcomes of labels[1], as built.
    back = sm.loads(_forge(state, {"labels": [5, 7]}))
    assert back.compute() == pytest.approx(state.compute(), rel=1e-12)
    assert back.to_bytes() == MAKERS[name]([5, 7]).update([5, 7, 7], [0.2, 0.7, 0.9]).to_bytes()
    # An empty state under labels of three classes loads (it holds no rows of either shape).
    empty = MAKERS[name]([0, 1, 2])
    assert sm.loads(empty.to_bytes()).count == 0
    assert math.isnan(sm.loads(empty.to_bytes()).compute())


def test_calibration_error_is_still_found_where_it_was_defined() -> None:
    # 0.8.13 moved it to classification/reliability.py; imports of the old path, and pickles
    # written by 0.8.12 (which name that module), must still find the class.
    import pickle

    from streammetrics.classification import calibration, reliability

    assert calibration.CalibrationError is reliability.CalibrationError
    m = reliability.CalibrationError().update([0, 1], [0.2, 0.7])
    legacy = pickle.dumps(m).replace(
        b"streammetrics.classification.reliability", b"streammetrics.classification.calibration"
    )
    assert b"classification.calibration" in legacy
    assert pickle.loads(legacy) == m
