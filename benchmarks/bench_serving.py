"""The serving path: per-request updates, small batches, threads and StateDirectory.collect.

Run: ``python benchmarks/bench_serving.py`` (a few minutes) or ``--quick`` (a smoke run of a few
seconds). Everything runs side by side in one process and prints markdown tables:

1. One sample per call, given as Python scalars as a server passes them (``m.update(1, 0.83)``),
   against river (the peer built for per-sample updates) and ``prometheus_client``'s
   ``Histogram.observe`` (the monitoring baseline a server already pays per request). The floor
   is the same loop calling a function that does nothing. river's ``ROCAUC`` runs at its default
   ``n_thresholds=10``, its fastest useful setting (an approximation; more thresholds cost more);
   its ``F1`` and ``ROCAUC`` get ``pos_val=1`` to take the same integer labels.
2. Batches of 1, 32 and 1,024 rows (numpy arrays) against torchmetrics (tensors, CPU,
   ``validate_args=False``: its fastest setting) and a bare numpy floor; ``GAUC`` with 32 rows.
3. ``Sliced(Accuracy())`` and ``Sliced(ROCAUC())`` fed one sample and a slice key per call,
   against a dict of river metrics, one per key.
4. A ``MetricCollection`` of ROCAUC, AveragePrecision, LogLoss and BrierScore fed one sample.
5. 1 and 4 threads updating one shared metric: rows per second in total, and a check that no
   row was lost (count, and the state against one thread fed the same rows).
6. ``StateDirectory.collect()`` over 8 and 64 published states, against reading the files alone.

Timing: ``time.perf_counter_ns`` around a loop of many calls (20,000 one-sample calls by
default), best of several rounds; each timed loop ends with a read of ``count``, so rows still
pending are folded inside the timed section. Nothing else runs inside it. The issue's goals are
printed beside the figures; ratios are peer time / streammetrics time (above 1: we are faster).
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import streammetrics as sm
from streammetrics.serving import StateDirectory

perf_ns = time.perf_counter_ns


# -- timing --------------------------------------------------------------------------------------


def per_call_ns(
    update: Callable[..., Any],
    calls: Sequence[tuple[Any, ...]],
    rounds: int,
    finish: Callable[[], Any] = lambda: None,
) -> float:
    """Best over ``rounds`` of the time of one ``update(*args)``, over every ``args`` of ``calls``.

    ``finish`` runs inside the timed section after the loop (a read that folds pending rows).
    """
    best = float("inf")
    for _ in range(rounds):
        start = perf_ns()
        for args in calls:
            update(*args)
        finish()
        best = min(best, (perf_ns() - start) / len(calls))
    return best


def nothing(*args: Any) -> None:
    return None


def us(ns: float) -> str:
    return f"{ns / 1000:.2f}"


def ratio(peer: float | None, ours: float) -> str:
    return "" if peer is None else f"{peer / ours:.2f}x"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    print("| " + " | ".join(header) + " |")
    print("| " + " | ".join("---" for _ in header) + " |")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()


def optional(module: str) -> Any:
    try:
        return __import__(module, fromlist=["_"])
    except ImportError:
        print(f"({module} is not installed: its columns are left empty)\n")
        return None


# -- data ----------------------------------------------------------------------------------------


def samples(n: int, seed: int = 0) -> dict[str, list[Any]]:
    """Python scalars, one per request: labels, predicted labels, probabilities, targets."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    prob = np.round(np.clip(0.3 * y + 0.7 * rng.random(n), 0.0, 1.0), 4)
    pred = (prob > 0.5).astype(np.int64)
    target = rng.normal(size=n)
    estimate = target + 0.3 * rng.normal(size=n)
    return {
        "y": y.tolist(),
        "pred": pred.tolist(),
        "prob": prob.tolist(),
        "target": target.tolist(),
        "estimate": estimate.tolist(),
    }


# -- 1. one sample per call ----------------------------------------------------------------------


def one_sample(calls: int, rounds: int) -> None:
    river = optional("river.metrics")
    prom = optional("prometheus_client")
    s = samples(calls)
    labels = list(zip(s["y"], s["pred"], strict=True))
    scores = list(zip(s["y"], s["prob"], strict=True))
    values = list(zip(s["target"], s["estimate"], strict=True))
    cases: list[tuple[str, Callable[[], Any], Callable[[], Any] | None, list[Any], float]] = [
        ("Accuracy", sm.Accuracy, river and river.Accuracy, labels, 1500),
        ("F1", sm.F1, river and (lambda: river.F1(pos_val=1)), labels, 1500),
        ("LogLoss", sm.LogLoss, river and river.LogLoss, scores, 1500),
        ("MeanSquaredError", sm.MeanSquaredError, river and river.MSE, values, 1500),
        ("ROCAUC", sm.ROCAUC, river and (lambda: river.ROCAUC(pos_val=1)), scores, 2000),
    ]
    floor = per_call_ns(nothing, scores, rounds)
    histogram = None
    if prom is not None:
        registry = prom.CollectorRegistry()
        h = prom.Histogram("request_score", "score per request", registry=registry)
        histogram = per_call_ns(h.observe, [(p,) for p in s["prob"]], rounds)
    print(f"## One sample per call (Python scalars), best of {rounds} rounds of {calls:,} calls\n")
    print(f"Floor, the same loop calling a function that does nothing: {us(floor)} µs per call.")
    if histogram is not None:
        print(f"prometheus_client `Histogram.observe`: {us(histogram)} µs per call.")
    print()
    rows = []
    for name, ours_cls, peer_cls, data, goal_ns in cases:
        m = ours_cls()
        ours = per_call_ns(m.update, data, rounds, lambda m=m: m.count)
        peer = None
        if peer_cls is not None:
            p = peer_cls()
            peer = per_call_ns(p.update, data, rounds)
        # ROCAUC: at or below river's; elsewhere within 1.5x of river.
        peer_goal = 1.0 if name == "ROCAUC" else 1.5
        met = ours <= goal_ns and (peer is None or ours <= peer_goal * peer)
        rows.append(
            [
                name,
                us(ours),
                "" if peer is None else us(peer),
                ratio(peer, ours),
                "" if histogram is None else f"{ours / histogram:.2f}x",
                f"<= {goal_ns / 1000:g} µs, <= {peer_goal:g}x river",
                "yes" if met else "**no**",
            ]
        )
    table(
        [
            "metric",
            "streammetrics µs",
            "river µs",
            "river / ours",
            "ours / Histogram.observe",
            "goal",
            "met",
        ],
        rows,
    )


def fresh_per_call_ns(
    make: Callable[[], Any],
    update: Callable[..., Any],
    calls: Sequence[tuple[Any, ...]],
    rounds: int,
    finish: Callable[[Any], Any] = lambda m: None,
) -> float:
    """As :func:`per_call_ns`, each round on a new state ``make()`` (made before the timed
    section): the cost of first contacts (new slices, labels new to a slice), not of a warm
    state. ``update(state, *args)``; ``finish(state)`` runs inside the timed section."""
    best = float("inf")
    for _ in range(rounds):
        state = make()
        start = perf_ns()
        for args in calls:
            update(state, *args)
        finish(state)
        best = min(best, (perf_ns() - start) / len(calls))
    return best


def sliced_one_sample(calls: int, rounds: int, slices: int = 1_000, fresh: bool = False) -> None:
    """``Sliced`` fed one sample per call with a scalar key (``by=``), against what a river user
    writes for per-slice metrics: a dict of river metrics, one per key, created on first use.
    ``fresh``: each round starts from an empty state (with many slices, most calls then bring
    a slice or a label the slice has not seen)."""
    river = optional("river.metrics")
    s = samples(calls)
    keys = np.random.default_rng(1).integers(0, slices, calls).tolist()
    weights = np.random.default_rng(2).choice([0.5, 1.0, 2.0], calls).tolist()
    labels = list(zip(s["y"], s["pred"], keys, strict=True))
    scores = list(zip(s["y"], s["prob"], keys, strict=True))
    weighted_labels = [(*row, w) for row, w in zip(labels, weights, strict=True)]
    weighted_scores = [(*row, w) for row, w in zip(scores, weights, strict=True)]
    cases: list[tuple[str, Callable[[], Any], Callable[[], Any] | None, list[Any]]] = [
        ("Sliced(Accuracy())", lambda: sm.Sliced(sm.Accuracy()), river and river.Accuracy, labels),
        (
            # binary: every slice judges its own label set (not one packed table)
            "Sliced(F1())",
            lambda: sm.Sliced(sm.F1()),
            river and (lambda: river.F1(pos_val=1)),
            labels,
        ),
        (
            "Sliced(ROCAUC())",
            lambda: sm.Sliced(sm.ROCAUC()),
            river and (lambda: river.ROCAUC(pos_val=1)),
            scores,
        ),
        (
            "Sliced(Accuracy()), weighted",
            lambda: sm.Sliced(sm.Accuracy()),
            river and river.Accuracy,
            weighted_labels,
        ),
        (
            "Sliced(ROCAUC()), weighted",
            lambda: sm.Sliced(sm.ROCAUC()),
            river and (lambda: river.ROCAUC(pos_val=1)),
            weighted_scores,
        ),
    ]
    state = "each round from an empty state" if fresh else "warm state"
    print(
        f"## One sample per call with a slice key ({slices:,} slices, {state}), best of "
        f"{rounds} rounds\n"
    )
    rows = []
    for name, ours_cls, peer_cls, data in cases:

        def ours_call(m: Any, y: Any, x: Any, key: Any, *w: Any) -> None:
            if w:
                m.update(y, x, by=key, sample_weight=w[0])
            else:
                m.update(y, x, by=key)

        def peer_call(
            t: dict[Any, Any], y: Any, x: Any, key: Any, *w: Any, make: Any = peer_cls
        ) -> None:
            metric = t.get(key)
            if metric is None:
                metric = t[key] = make()
            if w:
                metric.update(y, x, w[0])
            else:
                metric.update(y, x)

        if fresh:
            ours = fresh_per_call_ns(ours_cls, ours_call, data, rounds, lambda m: m.count)
        else:
            m = ours_cls()
            ours = per_call_ns(lambda *a, m=m: ours_call(m, *a), data, rounds, lambda m=m: m.count)
        peer = None
        if peer_cls is not None:
            if fresh:
                peer = fresh_per_call_ns(dict, peer_call, data, rounds)
            else:
                table_of: dict[Any, Any] = {}
                peer = per_call_ns(lambda *a, t=table_of: peer_call(t, *a), data, rounds)
        rows.append([name, us(ours), "" if peer is None else us(peer), ratio(peer, ours)])
    table(["metric", "streammetrics µs", "river dict of metrics µs", "river / ours"], rows)


# -- 2. batches ------------------------------------------------------------------------------------


def bootstrap_one_sample(calls: int, rounds: int, replicates: int = 200) -> None:
    """``Bootstrap`` fed one sample per call, with and without ids, each round on a new state
    and the final read (which draws the queued rows into the replicates) timed; against
    torchmetrics' ``BootStrapper(num_bootstraps=200)`` fed the same samples as 1-element
    tensors (its best per-sample use: no other peer keeps a bootstrap per request)."""
    s = samples(calls)
    ids = [f"req-{i:08d}" for i in range(calls)]
    cases = [
        ("Accuracy", sm.Accuracy, list(zip(s["y"], s["pred"], strict=True)), "BinaryAccuracy"),
        ("ROCAUC", sm.ROCAUC, list(zip(s["y"], s["prob"], strict=True)), "BinaryAUROC"),
        (
            "MeanSquaredError",
            sm.MeanSquaredError,
            list(zip(s["target"], s["estimate"], strict=True)),
            "MeanSquaredError",
        ),
    ]
    tm = optional("torchmetrics")
    print(
        f"## `Bootstrap(metric, {replicates})`, one sample per call, best of {rounds} rounds of "
        f"{calls:,} calls on a fresh state (the final read timed)\n"
    )
    rows = []
    for name, cls, data, peer_name in cases:
        plain = fresh_per_call_ns(
            lambda cls=cls: sm.Bootstrap(cls(), replicates=replicates),
            lambda m, y, x: m.update(y, x),
            data,
            rounds,
            lambda m: m.count,
        )
        with_ids = fresh_per_call_ns(
            lambda cls=cls: sm.Bootstrap(cls(), replicates=replicates),
            lambda m, y, x, i: m.update(y, x, ids=i),
            [(y, x, i) for (y, x), i in zip(data, ids, strict=True)],
            rounds,
            lambda m: m.count,
        )
        peer = ""
        if tm is not None:
            import torch
            from torchmetrics.wrappers import BootStrapper

            peer_cls = getattr(tm, peer_name, None) or getattr(tm.classification, peer_name)
            # Its cost per call is milliseconds: a tenth of the calls, one round.
            few = data[: max(calls // 10, 100)]
            tensors = [(torch.tensor([x], dtype=torch.float32), torch.tensor([y])) for y, x in few]
            if name == "MeanSquaredError":
                tensors = [(p, t.float()) for p, t in tensors]
            # validate_args=False where the metric takes it (its fastest documented mode; until
            # 0.8.14 the peer ran with its checks on, about 10% slower): BinaryAccuracy and
            # BinaryAUROC; MeanSquaredError has no such argument.
            kw = (
                {"validate_args": False}
                if "validate_args" in inspect.signature(peer_cls).parameters
                else {}
            )
            peer = us(
                fresh_per_call_ns(
                    lambda peer_cls=peer_cls, kw=kw: BootStrapper(
                        peer_cls(**kw), num_bootstraps=replicates
                    ),
                    lambda m, p, t: m.update(p, t),
                    tensors,
                    1,
                    lambda m: m.compute(),
                )
            )
        rows.append([name, us(plain), us(with_ids), peer])
    table(
        [
            "wrapped metric",
            "streammetrics µs",
            "with ids µs",
            f"torchmetrics BootStrapper({replicates}) µs",
        ],
        rows,
    )


def wrapped_bootstrap_one_sample(calls: int, rounds: int, replicates: int = 200) -> None:
    """``Bootstrap(Accuracy(), 200)`` inside ``Sliced`` (10 and 1,000 slices),
    ``SlidingWindow`` (an hour of 60 one-minute slots, 100 requests a second) and
    ``TumblingWindows``, fed one sample per call, each round on a new state, the final read
    timed. No peer keeps a bootstrap per slice or per window."""
    s = samples(calls)
    data = list(zip(s["y"], s["pred"], strict=True))
    inner = sm.Bootstrap(sm.Accuracy(), replicates=replicates)
    print(
        f"## `Bootstrap(Accuracy(), {replicates})` inside wrappers, one sample per call, best "
        f"of {rounds} rounds of {calls:,} calls on a fresh state (the final read timed)\n"
    )
    rows = []
    for slices in (10, 1_000):
        keyed = [(y, p, f"s{i % slices}") for i, (y, p) in enumerate(data)]
        ns = fresh_per_call_ns(
            lambda: sm.Sliced(inner),
            lambda m, y, p, k: m.update(y, p, by=k),
            keyed,
            rounds,
            lambda m: m.count,
        )
        rows.append([f"`Sliced`, {slices:,} slices", us(ns)])
    timed = [(y, p, i / 100) for i, (y, p) in enumerate(data)]
    for name, make in [
        ("`SlidingWindow(width=3600, slots=60)`", lambda: sm.SlidingWindow(inner, 3600, 60)),
        ("`TumblingWindows(width=60)`", lambda: sm.TumblingWindows(inner, 60)),
    ]:
        ns = fresh_per_call_ns(
            make, lambda m, y, p, t: m.update(y, p, timestamps=t), timed, rounds, lambda m: m.count
        )
        rows.append([name, us(ns)])
    table(["wrapper around the Bootstrap", "µs per call"], rows)


def batches(calls: int, rounds: int) -> None:
    torch = optional("torch")
    tm = optional("torchmetrics") if torch is not None else None
    if torch is not None:
        # One thread: batches of 1 to 1,024 rows, where torch's intra-op threads add dispatch
        # cost and no speed, and one core per library, as in a server worker.
        torch.set_num_threads(1)
    rng = np.random.default_rng(1)
    print(f"## Batches (numpy arrays; torchmetrics on CPU tensors), best of {rounds} rounds\n")
    rows = []
    goals = {("ROCAUC", 32): 10_000}
    for size in (1, 32, 1024):
        n_calls = max(50, min(calls, calls * 8 // size))
        y = rng.integers(0, 2, (n_calls, size))
        prob = np.clip(0.3 * y + 0.7 * rng.random((n_calls, size)), 0.0, 1.0)
        pred = (prob > 0.5).astype(np.int64)
        target = rng.normal(size=(n_calls, size))
        estimate = target + 0.3 * rng.normal(size=(n_calls, size))
        # The torchmetrics names are those of its modular API; each gets tensors made before.
        cases: list[tuple[str, Callable[[], Any], Any, Any, Callable[..., Any]]] = [
            (
                "ROCAUC",
                sm.ROCAUC,
                "BinaryAUROC",
                (prob, y),
                lambda a, b: np.bincount((a * 127).astype(np.int64) * 2 + b, minlength=256),
            ),
            ("Accuracy", sm.Accuracy, "BinaryAccuracy", (pred, y), lambda a, b: (a == b).sum()),
            (
                "MeanSquaredError",
                sm.MeanSquaredError,
                "MeanSquaredError",
                (estimate, target),
                lambda a, b: float(np.dot(d := a - b, d)),
            ),
        ]
        for name, ours_cls, peer_name, (first, second), floor_fn in cases:
            # streammetrics takes (y_true, y_pred); torchmetrics (preds, target).
            ours_calls = [(second[i], first[i]) for i in range(n_calls)]
            m = ours_cls()
            ours = per_call_ns(m.update, ours_calls, rounds, lambda m=m: m.count)
            floor = per_call_ns(floor_fn, [(first[i], second[i]) for i in range(n_calls)], rounds)
            peer = None
            if tm is not None:
                if peer_name == "MeanSquaredError":
                    p = tm.MeanSquaredError()
                else:
                    p = getattr(tm.classification, peer_name)(validate_args=False)
                t_calls = [
                    (torch.from_numpy(first[i]), torch.from_numpy(second[i]))
                    for i in range(n_calls)
                ]
                peer = per_call_ns(p.update, t_calls, rounds)
            goal = goals.get((name, size))
            rows.append(
                [
                    name,
                    f"{size:,}",
                    us(ours),
                    "" if peer is None else us(peer),
                    ratio(peer, ours),
                    us(floor),
                    "" if goal is None else f"<= {goal / 1000:g} µs",
                    "" if goal is None else ("yes" if ours <= goal else "**no**"),
                ]
            )
    # GAUC: no peer has one; 32 rows of about 8 users among 1,000.
    n_calls = max(50, calls // 4)
    y = rng.integers(0, 2, (n_calls, 32))
    prob = np.clip(0.3 * y + 0.7 * rng.random((n_calls, 32)), 0.0, 1.0)
    users = rng.integers(0, 1000, (n_calls, 8)).repeat(4, axis=1)
    g = sm.GAUC()
    gauc = per_call_ns(
        g.update, [(y[i], prob[i], users[i]) for i in range(n_calls)], rounds, lambda: g.count
    )
    rows.append(
        ["GAUC", "32", us(gauc), "", "", "", "<= 25 µs", "yes" if gauc <= 25_000 else "**no**"]
    )
    table(
        [
            "metric",
            "rows per call",
            "streammetrics µs",
            "torchmetrics µs",
            "torchmetrics / ours",
            "numpy floor µs",
            "goal",
            "met",
        ],
        rows,
    )


# -- 3. a collection -----------------------------------------------------------------------------


def collection(calls: int, rounds: int) -> None:
    river = optional("river.metrics")
    s = samples(calls, seed=2)
    scores = list(zip(s["y"], s["prob"], strict=True))
    m = sm.MetricCollection(
        auc=sm.ROCAUC(),
        ap=sm.AveragePrecision(),
        logloss=sm.LogLoss(),
        brier=sm.BrierScore(),
    )
    ours = per_call_ns(m.update, scores, rounds, lambda: m.count)
    rows = [
        [
            "MetricCollection(ROCAUC, AveragePrecision, LogLoss, BrierScore)",
            us(ours),
            "<= 6 µs",
            "yes" if ours <= 6000 else "**no**",
        ]
    ]
    if river is not None:  # river has no average precision: its ROCAUC and LogLoss, one by one
        auc, loss = river.ROCAUC(pos_val=1), river.LogLoss()

        def both(y: int, p: float) -> None:
            auc.update(y, p)
            loss.update(y, p)

        rows.append(
            ["river ROCAUC + LogLoss (for scale)", us(per_call_ns(both, scores, rounds)), "", ""]
        )
    # Windows and collections inside each other, one sample and its time per call (100
    # requests a second), each round on new states: 0.8.27 copied every slot of every window
    # per request here (0.4-1.1 ms), 0.8.28 updates them in place.
    times = np.arange(calls) / 100.0
    timed_rows = [(y, pred, t) for (y, _), pred, t in zip(scores, s["pred"], times, strict=True)]

    def windows() -> sm.MetricCollection:
        return sm.MetricCollection(
            tumbling=sm.TumblingWindows(sm.ROCAUC(), width=60),
            sliding=sm.SlidingWindow(sm.Accuracy(), width=300, slots=10),
        )

    def window_of_collection() -> sm.SlidingWindow:
        return sm.SlidingWindow(
            sm.MetricCollection(auc=sm.ROCAUC(), acc=sm.Accuracy()), width=300, slots=10
        )

    for name, make in (
        ("MetricCollection(TumblingWindows(ROCAUC), SlidingWindow(Accuracy))", windows),
        ("SlidingWindow(MetricCollection(ROCAUC, Accuracy))", window_of_collection),
    ):
        ns = fresh_per_call_ns(
            make,
            lambda m, y, pred, t: m.update(y, pred, timestamps=t),
            timed_rows,
            rounds,
            lambda m: m.count,
        )
        rows.append([name, us(ns), "", ""])
    print(f"## A collection fed one sample, best of {rounds} rounds of {calls:,} calls\n")
    table(["metric", "µs per sample", "goal", "met"], rows)


def nested(calls: int, rounds: int) -> None:
    """Wrappers inside wrappers, one sample and its time per call (10 requests a second,
    20 slices where a ``Sliced`` is inside, slots of 10 s), each round on new states warmed
    by 200 requests: the paths where a request may reach a copy or a check of every slot.
    No peer nests windows, slices and bootstraps."""
    n = calls + 200
    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, n).tolist()
    p = np.round(rng.random(n), 4).tolist()
    lab = [int(v > 0.5) for v in p]
    t = (np.arange(n) / 10.0).tolist()
    by = rng.integers(0, 20, n).tolist()
    score = [(y[i], p[i], {"timestamps": t[i]}) for i in range(n)]
    label = [(y[i], lab[i], {"timestamps": t[i]}) for i in range(n)]
    sliced = [(y[i], p[i], {"timestamps": t[i], "by": by[i]}) for i in range(n)]
    sliced_labels = [(y[i], lab[i], {"timestamps": t[i], "by": by[i]}) for i in range(n)]
    keyed_labels = [(y[i], lab[i], {"by": by[i]}) for i in range(n)]

    def sliding(m: Any) -> Any:
        return sm.SlidingWindow(m, width=60, slots=6)

    cases = [
        # (the wrappers alone, for scale)
        ("Decayed(ROCAUC)", lambda: sm.Decayed(sm.ROCAUC(), half_life=60), score),
        ("SlidingWindow(ROCAUC)", lambda: sliding(sm.ROCAUC()), score),
        ("SlidingWindow(Sliced(ROCAUC))", lambda: sliding(sm.Sliced(sm.ROCAUC())), sliced),
        ("Sliced(SlidingWindow(ROCAUC))", lambda: sm.Sliced(sliding(sm.ROCAUC())), sliced),
        (
            "Sliced(MetricCollection(Accuracy, F1))",
            lambda: sm.Sliced(sm.MetricCollection(a=sm.Accuracy(), f=sm.F1())),
            keyed_labels,
        ),
        (
            "SlidingWindow(MetricCollection(Accuracy, F1))",
            lambda: sliding(sm.MetricCollection(a=sm.Accuracy(), f=sm.F1())),
            label,
        ),
        (
            "SlidingWindow(Bootstrap(Accuracy, 50))",
            lambda: sliding(sm.Bootstrap(sm.Accuracy(), replicates=50)),
            label,
        ),
        (
            "MetricCollection(Decayed(ROCAUC), SlidingWindow(ROCAUC))",
            lambda: sm.MetricCollection(
                d=sm.Decayed(sm.ROCAUC(), half_life=60), s=sliding(sm.ROCAUC())
            ),
            score,
        ),
        (
            "MetricCollection(Bootstrap(Accuracy, 50), SlidingWindow(Accuracy))",
            lambda: sm.MetricCollection(
                b=sm.Bootstrap(sm.Accuracy(), replicates=50), w=sliding(sm.Accuracy())
            ),
            label,
        ),
        (
            "MetricCollection(SlidingWindow, TumblingWindows, Decayed) of Accuracy",
            lambda: sm.MetricCollection(
                a=sliding(sm.Accuracy()),
                b=sm.TumblingWindows(sm.Accuracy(), width=60),
                c=sm.Decayed(sm.Accuracy(), half_life=60),
            ),
            label,
        ),
        (
            "MetricCollection(SlidingWindow(Sliced(Accuracy)), TumblingWindows(Sliced(Accuracy)))",
            lambda: sm.MetricCollection(
                a=sliding(sm.Sliced(sm.Accuracy())),
                b=sm.TumblingWindows(sm.Sliced(sm.Accuracy()), width=60),
            ),
            sliced_labels,
        ),
    ]
    rows = []
    for name, make, feed in cases:
        best = float("inf")
        for _ in range(rounds):
            m = make()
            for a, b, kw in feed[:200]:
                m.update(a, b, **kw)
            start = perf_ns()
            for a, b, kw in feed[200:]:
                m.update(a, b, **kw)
            best = min(best, (perf_ns() - start) / calls)
        rows.append([f"`{name}`", us(best)])
    print(
        f"## Wrappers inside wrappers, one sample per call, best of {rounds} rounds of "
        f"{calls:,} calls\n"
    )
    table(["metric", "µs per sample"], rows)


def new_slices(slices: int) -> None:
    """Collections whose members may each refuse a request to a slice they have not held yet
    (``Sliced`` of a binary metric, which checks each slice's own two classes): one sample
    per call, every call to a new slice, the mean cost per call up to each number of slices.
    Until 0.8.28 every such call copied every member whole, so the cost grew with the slices
    held (and a stream of new users was quadratic); single runs, the copy path is slow."""
    rng = np.random.default_rng(9)
    cases = [
        (
            "MetricCollection(Sliced(F1), Sliced(Precision))",
            lambda: sm.MetricCollection(a=sm.Sliced(sm.F1()), b=sm.Sliced(sm.Precision())),
            False,
        ),
        (
            "MetricCollection(Sliced(F1), SlidingWindow(Sliced(F1)))",
            lambda: sm.MetricCollection(
                a=sm.Sliced(sm.F1()), b=sm.SlidingWindow(sm.Sliced(sm.F1()), width=60, slots=6)
            ),
            True,
        ),
    ]
    marks = [m for m in (250, 1_000, 2_000, 5_000) if m <= slices]
    rows = []
    for name, make, timed in cases:
        metric, held, cells = make(), 0, []
        for mark in marks:
            start = perf_ns()
            calls = mark - held
            for key in range(held, mark):
                extra = {"timestamps": key / 100.0} if timed else {}
                metric.update(int(rng.integers(0, 2)), int(rng.integers(0, 2)), by=key, **extra)
            cells.append(us((perf_ns() - start) / calls))
            held = mark
        rows.append([f"`{name}`", *cells])
    print("## A new slice every request, mean µs per call up to each number of slices\n")
    table(["metric", *(f"{m:,} slices" for m in marks)], rows)


# -- 4. threads ----------------------------------------------------------------------------------


def threads(calls: int, rounds: int) -> None:
    s = samples(calls, seed=3)
    scores = list(zip(s["y"], s["prob"], strict=True))
    values = list(zip(s["target"], s["estimate"], strict=True))
    rows = []
    for name, make, data in (
        ("ROCAUC", sm.ROCAUC, scores),
        ("MeanSquaredError", sm.MeanSquaredError, values),
        (
            "MetricCollection(ROCAUC, LogLoss)",
            lambda: sm.MetricCollection(auc=sm.ROCAUC(), logloss=sm.LogLoss()),
            scores,
        ),
    ):
        reference = make()
        for args in data:
            reference.update(*args)
        for n_threads in (1, 4):
            best = float("inf")
            lossless = True
            for _ in range(rounds):
                m = make()
                parts = [data[k::n_threads] for k in range(n_threads)]
                barrier = threading.Barrier(n_threads + 1)

                def work(part: list[tuple[Any, ...]], m: Any = m, b: Any = barrier) -> None:
                    b.wait()
                    for args in part:
                        m.update(*args)

                pool = [threading.Thread(target=work, args=(p,)) for p in parts]
                for t in pool:
                    t.start()
                barrier.wait()
                start = perf_ns()
                for t in pool:
                    t.join()
                count = m.count
                best = min(best, perf_ns() - start)
                # Nothing lost: every row counted, and the same state as one thread fed them
                # (equal bytes for counts, equal values to rounding for float sums).
                if count != len(data):
                    lossless = False
                elif name == "ROCAUC":
                    lossless &= m == reference
                else:
                    got, want = m.compute(), reference.compute()
                    if isinstance(want, dict):
                        lossless &= all(np.isclose(got[k], want[k], rtol=1e-12) for k in want)
                    else:
                        lossless &= bool(np.isclose(got, want, rtol=1e-12))
            rows.append(
                [
                    name,
                    str(n_threads),
                    f"{len(data) * 1e6 / best:,.0f}",
                    "yes" if lossless else "**no: rows lost**",
                ]
            )
    print(f"## Threads updating one shared metric, one sample per call, {calls:,} rows\n")
    table(["metric", "threads", "k rows/s in total", "lossless"], rows)


# -- 5. StateDirectory.collect ---------------------------------------------------------------------


def read_files(paths: list[str]) -> None:
    for path in paths:
        with open(path, "rb") as f:
            f.read()


def collect(rounds: int, rows_per_state: int) -> None:
    rng = np.random.default_rng(4)
    out = []
    for n_states in (8, 64):
        with tempfile.TemporaryDirectory() as folder:
            d = StateDirectory(folder)
            for i in range(n_states):
                m = sm.MetricCollection(
                    auc=sm.ROCAUC(),
                    ap=sm.AveragePrecision(),
                    logloss=sm.LogLoss(),
                    brier=sm.BrierScore(),
                )
                y = rng.integers(0, 2, rows_per_state)
                m.update(y, np.clip(0.3 * y + 0.7 * rng.random(rows_per_state), 0, 1))
                # One file per worker process, named as that process would name it.
                name = f"metrics.bench.{10_000 + i}.{i:012x}.state"
                with open(os.path.join(folder, name), "wb") as f:
                    f.write(m.to_bytes())
            t_collect = per_call_ns(d.collect, [()], rounds)
            merged = d.collect()
            assert merged is not None and merged.count == n_states * rows_per_state

            t_read = per_call_ns(read_files, [(d.files(),)], rounds)
            t_publish = per_call_ns(d.publish, [(m,)], rounds)
            size = os.path.getsize(d.files()[0])
            out.append(
                [
                    str(n_states),
                    f"{size:,}",
                    f"{t_collect / 1e6:.2f}",
                    f"{t_read / 1e6:.2f}",
                    f"{t_collect / t_read:.1f}x",
                    f"{t_publish / 1e6:.2f}",
                ]
            )
    print(
        f"## StateDirectory: collect() over published states of a four-metric collection "
        f"({rows_per_state:,} rows each), best of {rounds} rounds\n"
    )
    print("publish() includes two fsync calls, so it depends on the file system.\n")
    table(
        [
            "states",
            "bytes per state",
            "collect() ms",
            "reading the files ms",
            "collect / read",
            "one publish() ms",
        ],
        out,
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--calls", type=int, default=20_000, help="calls per timed loop")
    parser.add_argument("--rounds", type=int, default=5, help="timed loops; the best is kept")
    parser.add_argument(
        "--only", metavar="NAME", help="run the sections whose function name holds NAME"
    )
    args = parser.parse_args(argv)
    calls, rounds = (2_000, 2) if args.quick else (args.calls, args.rounds)
    print(
        f"streammetrics {sm.__version__}, Python {sys.version.split()[0]}, "
        f"numpy {np.__version__}, {os.cpu_count()} CPUs\n"
    )
    sections = [
        (one_sample, lambda: one_sample(calls, rounds)),
        (sliced_one_sample, lambda: sliced_one_sample(calls, rounds)),
        (
            sliced_one_sample,
            lambda: sliced_one_sample(calls, rounds, slices=100_000, fresh=True),
        ),
        (bootstrap_one_sample, lambda: bootstrap_one_sample(calls, rounds)),
        (wrapped_bootstrap_one_sample, lambda: wrapped_bootstrap_one_sample(calls, rounds)),
        (batches, lambda: batches(calls, rounds)),
        (collection, lambda: collection(calls, rounds)),
        (nested, lambda: nested(min(calls, 5_000), rounds)),
        (new_slices, lambda: new_slices(250 if args.quick else 2_000)),
        (threads, lambda: threads(calls, rounds)),
        (collect, lambda: collect(rounds=rounds, rows_per_state=2_000 if args.quick else 20_000)),
    ]
    for fn, run in sections:
        if args.only is None or args.only in fn.__name__:
            run()


if __name__ == "__main__":
    main()
