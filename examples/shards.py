"""A prediction stream split over shards: each shard keeps a state, ships it as bytes, and the
merged state gives exactly the answer scikit-learn computes on the whole data in one batch.

Run: ``python examples/shards.py`` (needs the ``examples`` extra for scikit-learn).
"""

from __future__ import annotations

import numpy as np

import streammetrics as sm


def main() -> None:
    try:
        from sklearn import metrics as skm
        from sklearn.datasets import load_digits
        from sklearn.linear_model import LogisticRegression
    except ImportError as exc:  # pragma: no cover - the message is the point
        raise SystemExit(
            "this example needs scikit-learn: pip install 'streammetrics[examples]'"
        ) from exc

    # Real data: a classifier fitted on half of scikit-learn's digits scores the other half.
    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(y))
    train, test = order[: len(y) // 2], order[len(y) // 2 :]
    model = LogisticRegression(max_iter=2000).fit(X[train], y[train])
    y_true, y_pred = y[test], model.predict(X[test])

    def fresh() -> sm.MetricCollection:
        return sm.MetricCollection(report=sm.ClassificationReport(), confusion=sm.ConfusionMatrix())

    # The stream: small request batches, each routed to one of four replicas at random.
    replicas = [fresh() for _ in range(4)]
    cuts = np.sort(rng.choice(np.arange(1, len(test)), size=60, replace=False))
    for yt, yp in zip(np.split(y_true, cuts), np.split(y_pred, cuts), strict=True):
        replicas[rng.integers(len(replicas))].update(yt, yp)

    # Each replica ships its state as bytes; a reducer merges them in any order.
    blobs = [r.to_bytes() for r in replicas]
    merged = sum(sm.MetricCollection.from_bytes(b) for b in reversed(blobs))
    assert isinstance(merged, sm.MetricCollection)
    report = merged.compute()["report"]

    batch = {
        "accuracy": skm.accuracy_score(y_true, y_pred),
        "precision_macro": skm.precision_score(y_true, y_pred, average="macro"),
        "recall_macro": skm.recall_score(y_true, y_pred, average="macro"),
        "f1_macro": skm.f1_score(y_true, y_pred, average="macro"),
        "f1_micro": skm.f1_score(y_true, y_pred, average="micro"),
        "f1_weighted": skm.f1_score(y_true, y_pred, average="weighted"),
        "mcc": skm.matthews_corrcoef(y_true, y_pred),
        "kappa": skm.cohen_kappa_score(y_true, y_pred),
    }
    print(
        f"{len(y_true)} predictions, {len(cuts) + 1} batches, {len(replicas)} replicas, "
        f"state sizes {[len(b) for b in blobs]} bytes"
    )
    print(f"{'metric':<18}{'merged stream':>16}{'scikit-learn':>16}")
    for key, want in batch.items():
        print(f"{key:<18}{report[key]:>16.12f}{want:>16.12f}")
        assert abs(report[key] - want) <= 1e-12, key
    cm = merged.compute()["confusion"]
    assert (cm == skm.confusion_matrix(y_true, y_pred)).all()
    print("confusion matrix: identical to sklearn.metrics.confusion_matrix")


if __name__ == "__main__":
    main()
