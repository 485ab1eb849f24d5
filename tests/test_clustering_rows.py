"""The internal clustering indices fed one sample per call (its row and a scalar label): the
row waits in the buffer (0.8.11 built a moments and a sample block per call, 70-290 µs), and
the state is what ordinary one-row updates make: the same clusters, counts and sample, the
moments to rounding."""

from __future__ import annotations

import numpy as np
import pytest

import streammetrics as sm
from streammetrics import clustering as C
from tests.harness import feed_in_threads


def _ordinary(metric: sm.Metric) -> sm.Metric:
    metric._take_row = None  # type: ignore[attr-defined]
    return metric


def _same(a: sm.Metric, b: sm.Metric) -> None:
    assert a.count == b.count
    ma, mb = a.moments, b.moments
    assert np.array_equal(ma.keys, mb.keys) and np.array_equal(ma.counts, mb.counts)
    np.testing.assert_allclose(ma.means + ma.means_lo, mb.means + mb.means_lo, rtol=1e-12)
    np.testing.assert_allclose(ma.m2, mb.m2, rtol=1e-9, atol=1e-12)
    if "sample" in a._fields:
        for part in ("keys", "seen", "hashes", "rows"):
            assert np.array_equal(getattr(a.sample, part), getattr(b.sample, part)), part
    va, vb = a.compute(), b.compute()
    if isinstance(va, dict):
        for key in ("calinski_harabasz", "davies_bouldin", "silhouette", "dunn", "ssw"):
            assert va[key] == pytest.approx(vb[key], rel=1e-9)
    else:
        assert va == pytest.approx(vb, rel=1e-9)


CASES = {
    "geometry": lambda: sm.ClusterGeometry(),
    "calinski": lambda: C.CalinskiHarabasz(),
    "silhouette-cosine": lambda: C.Silhouette(distance="cosine"),
    "centers": lambda: sm.ClusterGeometry(centers=np.eye(3, 4), center_labels=["a", "b", "c"]),
}


def _calls(name: str, n: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    labels: list = ["a", "b", "c"] if name == "centers" else [0, 1, 2, np.int32(3)]
    out: list = []
    for i in range(n):
        row = rng.normal(size=4) * 10.0 ** rng.integers(-3, 4)
        label = labels[int(rng.integers(0, len(labels)))]
        form = i % 4
        x: object = row if form == 0 else (row.tolist() if form == 1 else tuple(row))
        if form == 3:
            x = np.round(row * 100).astype(np.int64)
        out.append(((x, label), {}))
    bad = [
        ((np.zeros(4), labels[0]), {}) if name == "silhouette-cosine" else None,
        ((np.ones(5), labels[0]), {}),  # another width
        ((np.ones(4), "z" if name != "centers" else 0), {}),  # another kind, or no centre
        ((np.full(4, 2.0**201), labels[0]), {}),  # past the sampled rows' bound
        (([1.0, float("nan"), 0.0, 1.0], labels[0]), {}),
        (([1.0, True, 0.0, 1.0], labels[0]), {}),
        ((np.ones(4), labels[0]), {"sample_weight": 1.0}),
    ]
    for pos, call in zip(range(40, n, 60), [b for b in bad if b is not None], strict=False):
        out.insert(pos, call)
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_one_row_calls_give_the_state_of_ordinary_updates(name: str) -> None:
    calls = _calls(name, 600, 1)
    fast, slow = CASES[name](), _ordinary(CASES[name]())
    waited = False
    for args, kwargs in calls:
        outcomes = []
        for metric in (fast, slow):
            before = metric.to_bytes() if metric is slow else None
            try:
                metric.update(*args, **kwargs)
                outcomes.append(None)
            except (sm.StreamMetricsError, TypeError) as exc:
                outcomes.append(type(exc))
                if before is not None:
                    assert metric.to_bytes() == before
        waited = waited or fast._pending is not None
        assert outcomes[0] == outcomes[1], (args, kwargs)
    assert waited
    _same(fast, slow)


def test_a_failing_row_leaves_rows_waiting_and_state_as_they_were() -> None:
    m = sm.ClusterGeometry()
    m.update(np.ones((2, 3)), [0, 1])
    m.update([1.0, 2.0, 3.0], 0)
    assert m._pending is not None
    with pytest.raises(sm.InputError):
        m.update([1.0, 2.0], 0)  # another width: the ordinary update folds, then refuses
    assert m.count == 3
    m.update(np.array([4.0, 5.0, 6.0]), 1)
    whole = sm.ClusterGeometry().update(
        np.vstack([np.ones((2, 3)), [[1, 2, 3], [4, 5, 6]]]), [0, 1, 0, 1]
    )
    _same(m, whole)


def test_a_state_near_its_bounds_takes_the_ordinary_update() -> None:
    m = C.CalinskiHarabasz().update([[0.0], [1.0]], [0, 0])
    m.moments.m2[:] = 2.0**899.5  # (as a decoded state may hold)
    m.update([2.0], 0)
    assert m._pending is None  # checked by the ordinary update, which names the bound


def test_threads_feeding_one_row_each() -> None:
    rng = np.random.default_rng(5)
    X, labels = rng.integers(-50, 50, size=(4_000, 3)).astype(float), rng.integers(0, 4, 4_000)
    m = sm.ClusterGeometry()
    m.update(X[:4], labels[:4])

    feed_in_threads(m, [((X[i], int(labels[i])), {}) for i in range(4, 4_000)])
    _same(m, sm.ClusterGeometry().update(X, labels))
