"""Sparse contingency tables (issue 11 item 9): large label sets keep only the cells seen.

Reference agreement (scikit-learn) with thousands of labels, split over shards and through bytes;
the sparse computations of intervals, kappa and the clustering indices equal the dense ones on
the same counts; the form is canonical (a function of the table's size and filled cells);
decoding refuses malformed sparse forms.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as skm

import streammetrics as sm
from streammetrics import _codec
from streammetrics import clustering as C
from streammetrics.states import _cells
from tests.test_clustering_external import _reference


def _labels(seed: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    noise = rng.random(n) < 0.4
    p = np.where(noise, rng.integers(0, k, n), y)
    return y, p


def _fed(make, y: np.ndarray, p: np.ndarray, w: np.ndarray | None = None, parts: int = 1):
    """Shards of ``parts`` contiguous pieces, each fed in uneven batches, merged, through bytes."""
    shards = []
    for idx in np.array_split(np.arange(len(y)), parts):
        m = make()
        for chunk in np.array_split(idx, 5):
            m.update(y[chunk], p[chunk], **({} if w is None else {"sample_weight": w[chunk]}))
        shards.append(sm.loads(m.to_bytes()))
    out = shards[0]
    if parts > 1:
        out.merge(*shards[1:])
    return out


@pytest.mark.parametrize("weighted", [False, True])
def test_thousands_of_labels_agree_with_sklearn(weighted: bool) -> None:
    y, p = _labels(1, 30_000, 2_000)
    w = np.random.default_rng(2).integers(0, 4, len(y)).astype(float) if weighted else None
    kw = {} if w is None else {"sample_weight": w}
    for average in ("macro", "weighted", "micro"):
        whole = _fed(lambda a=average: sm.F1(average=a), y, p, w)
        assert whole.counts.sparse
        split = _fed(lambda a=average: sm.F1(average=a), y, p, w, parts=7)
        assert split.to_bytes() == whole.to_bytes()
        ref = skm.f1_score(y, p, average=average, zero_division=0, **kw)
        assert whole.compute() == pytest.approx(ref, rel=1e-12, abs=1e-15)
        prec = _fed(lambda a=average: sm.Precision(average=a), y, p, w, parts=3)
        ref = skm.precision_score(y, p, average=average, zero_division=0, **kw)
        assert prec.compute() == pytest.approx(ref, rel=1e-12, abs=1e-15)
    acc = _fed(sm.Accuracy, y, p, w, parts=4)
    assert acc.compute() == pytest.approx(skm.accuracy_score(y, p, **kw), rel=1e-12)
    mcc = _fed(sm.MatthewsCorrCoef, y, p, w, parts=4)
    assert mcc.compute() == pytest.approx(skm.matthews_corrcoef(y, p, **kw), rel=1e-10)
    for weights in (None, "linear", "quadratic"):
        kappa = _fed(lambda wt=weights: sm.CohenKappa(weights=wt), y, p, w, parts=4)
        assert kappa.counts.sparse
        ref = skm.cohen_kappa_score(y, p, weights=weights, **kw)
        assert kappa.compute() == pytest.approx(ref, rel=1e-9)
    cm = _fed(sm.ConfusionMatrix, y, p, w, parts=3)
    labels = np.union1d(y, p)
    assert np.array_equal(cm.compute(), skm.confusion_matrix(y, p, labels=labels, **kw))


def test_string_labels_sparse() -> None:
    y, p = _labels(3, 5_000, 800)
    names = np.array([f"class-{i:04d}" for i in range(800)])
    ys, ps = names[y], names[p]
    m = _fed(lambda: sm.F1(average="macro"), ys, ps, parts=3)
    assert m.counts.sparse
    assert m.compute() == pytest.approx(skm.f1_score(ys, ps, average="macro"), rel=1e-12)


def test_state_grows_with_the_cells_seen() -> None:
    y, p = _labels(4, 300_000, 10_000)
    m = sm.F1(average="macro")
    for chunk in np.array_split(np.arange(len(y)), 30):
        m.update(y[chunk], p[chunk])
    assert m.counts.sparse
    filled = m.counts.filled_count()
    assert filled == len(np.unique(y * 10_000 + p))
    assert m.counts.nbytes == 16 * filled  # against 800 MB for the dense table
    assert len(m.to_bytes()) < 20 * filled + 200_000
    assert m.compute() == pytest.approx(skm.f1_score(y, p, average="macro"), rel=1e-12)


@pytest.mark.parametrize(
    "make",
    [
        lambda: sm.F1(average="macro"),
        lambda: sm.F1(average="weighted"),
        lambda: sm.FBeta(beta=2.0, average="macro"),
        lambda: sm.Precision(average="weighted"),
        sm.MatthewsCorrCoef,
        sm.CohenKappa,
        lambda: sm.CohenKappa(weights="linear"),
        lambda: sm.CohenKappa(weights="quadratic"),
    ],
)
def test_sparse_values_and_intervals_equal_the_dense_ones(
    make, monkeypatch: pytest.MonkeyPatch
) -> None:
    y, p = _labels(5, 4_000, 400)
    w = np.random.default_rng(6).integers(1, 4, len(y)).astype(float)
    sparse = _fed(make, y, p, w, parts=2)
    assert sparse.counts.sparse
    monkeypatch.setattr(_cells, "SPARSE_MIN_CELLS", 1 << 62)  # every table stays dense
    dense = _fed(make, y, p, w, parts=2)
    assert not dense.counts.sparse
    assert np.array_equal(sparse.counts.table, dense.counts.table)
    assert sparse.compute() == pytest.approx(dense.compute(), rel=1e-12)
    lo, hi = sparse.interval()
    ref_lo, ref_hi = dense.interval()
    assert np.isfinite([lo, hi]).all()
    assert (lo, hi) == pytest.approx((ref_lo, ref_hi), rel=1e-7)


def test_clustering_sparse_agrees_with_sklearn() -> None:
    rng = np.random.default_rng(7)
    a = rng.integers(0, 500, 20_000)
    b = (a * 7 + (rng.random(20_000) < 0.3) * rng.integers(0, 600, 20_000)) % 600
    whole = _fed(C.ClusterAgreement, a, b, parts=1)
    assert whole.counts.sparse
    split = _fed(C.ClusterAgreement, a, b, parts=5)
    assert split.to_bytes() == whole.to_bytes()
    got, ref = whole.compute(), _reference(a, b)
    for key, value in ref.items():
        assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
    purity = _fed(C.Purity, a, b, parts=2)
    assert purity.counts.sparse
    table = skm.cluster.contingency_matrix(a, b)
    assert purity.compute() == pytest.approx(table.max(axis=0).sum() / len(a), rel=1e-15)


def test_the_form_follows_the_fill() -> None:
    """2**16 cells (256 x 256 labels) are sparse below 8,192 filled cells, dense from there;
    smaller tables are always dense."""
    size = 1 << 16
    assert not _cells.wants_sparse(size - 1, 1)
    assert _cells.wants_sparse(size, size // 8 - 1)
    assert not _cells.wants_sparse(size, size // 8)


def test_form_transitions_are_canonical() -> None:
    k = 256  # 2**16 cells once every label is seen
    rng = np.random.default_rng(8)
    cells = rng.permutation(k * k)[: k * k // 8 + 1_500]
    y, p = cells // k, cells % k
    y[:k], p[:k] = np.arange(k), np.arange(k)  # every label seen from the first batch
    m = sm.ConfusionMatrix()
    seen = []
    for stop in range(1_000, len(y) + 1, 1_000):
        m.update(y[stop - 1_000 : stop], p[stop - 1_000 : stop])
        seen.append(m.counts.sparse)
    assert seen[0] and not seen[-1]  # sparse while below 1/8 filled, then dense
    assert seen == sorted(seen, reverse=True)
    whole = sm.ConfusionMatrix().update(y[: len(seen) * 1_000], p[: len(seen) * 1_000])
    assert whole.to_bytes() == m.to_bytes()
    # Shards that are each sparse merge into the dense whole, byte for byte.
    n = len(seen) * 1_000
    shards = [sm.ConfusionMatrix().update(y[:n][i::4], p[:n][i::4]) for i in range(4)]
    assert all(s.counts.sparse for s in shards)
    assert sum(shards[1:], shards[0]).to_bytes() == whole.to_bytes()
    first = shards[0].copy()
    for s in shards[1:]:
        first.merge(s)
    assert first.to_bytes() == whole.to_bytes()


def test_decoded_tables_take_updates_in_place() -> None:
    """A decoded table is a read-only view of the blob: an update with no new label must not
    write into it."""
    for k in (5, 600):
        y, p = _labels(9, 3_000, k)
        m = sm.F1(average="macro").update(y[:2_000], p[:2_000])
        back = sm.loads(m.to_bytes())
        back.update(y[2_000:], p[2_000:])
        m.update(y[2_000:], p[2_000:])
        assert back.to_bytes() == m.to_bytes()
        back.merge(sm.loads(m.to_bytes()))
        assert back.compute() == pytest.approx(m.compute())


def _sparse_tree() -> dict:
    y, p = _labels(10, 500, 600)
    m = sm.F1(average="macro").update(y, p)
    assert m.counts.sparse
    return _codec.decode(m.to_bytes())


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda c: c.update(cells=c["cells"][::-1].copy()), "sorted and distinct"),
        (lambda c: c.update(cells=c["cells"] + 10**9), r"cell codes must lie"),
        (lambda c: c.update(counts=c["counts"][:-1].copy()), "cells but counts"),
        (lambda c: c["counts"].__setitem__(0, 0), "a count is zero"),
        (lambda c: c["counts"].__setitem__(0, -2), "non-negative|negative"),
        (lambda c: c.update(cells=c["cells"].astype(np.float64)), "1-D int64"),
        (lambda c: c.update(table=np.zeros((2, 2), dtype=np.int64)), "exactly the fields"),
    ],
)
def test_malformed_sparse_forms_are_refused(change, message: str) -> None:
    tree = _sparse_tree()
    counts = tree["state"]["counts"]
    counts["cells"], counts["counts"] = counts["cells"].copy(), counts["counts"].copy()
    change(counts)
    with pytest.raises(sm.StateDecodeError, match=message):
        sm.loads(_codec.encode(tree))


def test_a_dense_blob_of_a_sparse_table_converts() -> None:
    """A blob holding the dense table of a large, nearly empty table (an older writer's form)
    loads into the sparse form, with the same counts."""
    y, p = _labels(11, 500, 600)
    m = sm.F1(average="macro").update(y, p)
    tree = _codec.decode(m.to_bytes())
    counts = tree["state"]["counts"]
    counts["table"] = m.counts.table
    del counts["cells"], counts["counts"]
    back = sm.loads(_codec.encode(tree))
    assert back.counts.sparse
    assert back.to_bytes() == m.to_bytes()


def test_wrapped_large_label_sets_fold_state_by_state() -> None:
    """Sliced and Bootstrap stack small confusion tables; large ones (kept sparse) are folded
    one state at a time, with the same result as the states fed alone."""
    y, p = _labels(12, 6_000, 700)
    keys = np.random.default_rng(13).integers(0, 5, len(y))
    sliced = sm.Sliced(sm.F1(average="macro"))
    for chunk in np.array_split(np.arange(len(y)), 3):
        sliced.update(y[chunk], p[chunk], by=keys[chunk])
    got = sliced.compute()
    for key in range(5):
        alone = sm.F1(average="macro").update(y[keys == key], p[keys == key])
        assert alone.counts.sparse
        assert got[key] == pytest.approx(alone.compute(), rel=1e-12)
    ids = np.arange(len(y))
    boot = sm.Bootstrap(sm.Accuracy(), replicates=20, seed=1)
    whole = boot.copy().update(y, p, ids=ids)
    parts = [boot.copy().update(y[c], p[c], ids=ids[c]) for c in np.array_split(ids, 3)]
    assert sum(parts[1:], parts[0]).to_bytes() == whole.to_bytes()
    assert whole.compute() == pytest.approx(skm.accuracy_score(y, p))


def test_a_small_dense_table_grows_into_a_sparse_one() -> None:
    """A dense table whose label set grows past 2**16 cells, few filled, keeps every count as
    it turns sparse (in place, pure and many-at-once merges alike)."""
    rng = np.random.default_rng(14)
    first = (rng.integers(0, 15, 8), rng.integers(0, 15, 8))
    second = (rng.integers(0, 2_000, 300), rng.integers(0, 2_000, 300))
    m = sm.ConfusionMatrix().update(*first)
    assert not m.counts.sparse
    m.update(*second)
    assert m.counts.sparse
    y, p = np.concatenate([first[0], second[0]]), np.concatenate([first[1], second[1]])
    labels = np.union1d(y, p)
    assert np.array_equal(m.compute(), skm.confusion_matrix(y, p, labels=labels))
    a, b = sm.ConfusionMatrix().update(*first), sm.ConfusionMatrix().update(*second)
    assert (a + b).to_bytes() == m.to_bytes()
    assert a.copy().merge(b, sm.ConfusionMatrix()).to_bytes() == m.to_bytes()
