"""Prometheus exposition: scrape a live endpoint on loopback."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import textwrap
import threading
import urllib.request
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("prometheus_client")

import streammetrics as sm
from streammetrics.errors import InputError
from streammetrics.prometheus import DEFAULT_PORT, MetricsCollector, serve
from streammetrics.serving import StateDirectory
from streammetrics.windows import SlidingWindow, TumblingWindows


def _scrape(port: int) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
    out = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            out[f"{s.name}{{{labels}}}"] = s.value
    return out


def test_scrape_sees_every_update() -> None:
    lock = threading.Lock()
    coll = sm.MetricCollection(acc=sm.Accuracy(), cm=sm.ConfusionMatrix(labels=[0, 1]))
    server, thread, _ = serve(coll, port=0, labels={"model": "m1"}, lock=lock)
    try:
        port = server.server_port
        first = _scrape(port)
        assert first["streammetrics_rows{model=m1}"] == 0
        with lock:
            coll.update([0, 1, 1, 1], [0, 1, 0, 1])
        second = _scrape(port)
        assert second["streammetrics_value{metric=acc,model=m1}"] == 0.75
        assert second["streammetrics_value{metric=cm.1.0,model=m1}"] == 1.0
        assert second["streammetrics_rows{model=m1}"] == 4
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    # Stopped as documented, the port is free again (0.8.8's docstring left out server_close:
    # the socket stayed bound and new clients hung).
    again, again_thread, _ = serve(coll, port=port)
    again.shutdown()
    again.server_close()
    again_thread.join(5)


def test_scrape_windows() -> None:
    w = TumblingWindows(sm.Accuracy(), width=60)
    w.update([1, 0, 1], [1, 1, 1], timestamps=[0, 70, 80])
    s = SlidingWindow(sm.Accuracy(), width=60, slots=6)
    s.update([1, 0, 1], [1, 1, 1], timestamps=[0, 70, 80])
    servers = [serve(w, port=0), serve(s, port=0, namespace="live")]
    try:
        got = _scrape(servers[0][0].server_port)
        assert got["streammetrics_value{metric=value,window_start=0}"] == 1.0
        assert got["streammetrics_value{metric=value,window_start=60}"] == 0.5
        live = _scrape(servers[1][0].server_port)
        assert live["live_value{metric=value}"] == 0.5
        assert live["live_dropped{}"] == 1
    finally:
        for server, thread, _ in servers:
            server.shutdown()
            thread.join(5)


# One worker process of a server: feeds its rows, publishes its state, exits.
WORKER = textwrap.dedent(
    """
    import sys
    import numpy as np
    import streammetrics as sm
    from streammetrics.serving import StateDirectory

    folder, seed = sys.argv[1], int(sys.argv[2])
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 500)
    p = np.clip(0.3 * y + 0.7 * rng.random(500), 0, 1)
    m = sm.MetricCollection(auc=sm.ROCAUC(), logloss=sm.LogLoss(), brier=sm.BrierScore())
    for label, prob in zip(y.tolist(), p.tolist()):
        m.update(label, prob)
    StateDirectory(folder).publish(m)
    """
)


def worker_rows(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 500)
    return y, np.clip(0.3 * y + 0.7 * rng.random(500), 0, 1)


def test_default_port_is_an_exporter_port() -> None:
    assert inspect.signature(serve).parameters["port"].default == DEFAULT_PORT == 9464


def test_worker_processes_served_as_one_over_http(tmp_path: Path) -> None:
    d = StateDirectory(tmp_path)
    server, thread, _ = serve(d.collect, port=0, labels={"model": "m1"})
    # The server stops by itself even if an assertion fails before the finally clause runs.
    watchdog = threading.Timer(120, server.shutdown)
    watchdog.daemon = True
    watchdog.start()
    try:
        port = server.server_port
        assert not any(k.startswith("streammetrics_") for k in _scrape(port))  # nothing yet
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        for seed in (1, 2):
            done = subprocess.run(
                [sys.executable, "-c", WORKER, str(tmp_path), str(seed)],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert done.returncode == 0, done.stderr
        y = np.concatenate([worker_rows(1)[0], worker_rows(2)[0]])
        p = np.concatenate([worker_rows(1)[1], worker_rows(2)[1]])
        whole = sm.MetricCollection(auc=sm.ROCAUC(), logloss=sm.LogLoss(), brier=sm.BrierScore())
        whole.update(y, p)
        got = _scrape(port)
        assert got["streammetrics_rows{model=m1}"] == 1000
        expected = whole.compute()
        assert got["streammetrics_value{metric=auc,model=m1}"] == expected["auc"]  # counts
        for name in ("logloss", "brier"):  # float sums: equal to rounding
            value = got[f"streammetrics_value{{metric={name},model=m1}}"]
            assert value == pytest.approx(expected[name], rel=1e-12)
        # This process publishes too: the next scrape sees every worker's rows.
        mine = whole.copy().reset().update([1, 0, 1], [0.9, 0.2, 0.4])
        d.publish(mine)
        again = _scrape(port)
        assert again["streammetrics_rows{model=m1}"] == 1003
        whole.update([1, 0, 1], [0.9, 0.2, 0.4])
        assert again["streammetrics_value{metric=auc,model=m1}"] == whole.compute()["auc"]
    finally:
        watchdog.cancel()
        server.shutdown()
        thread.join(5)


def test_collector_refuses_a_source_that_is_not_a_metric() -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry()
    registry.register(MetricsCollector(lambda: None))
    assert generate_latest(registry) == b""
    bad = MetricsCollector(lambda: {"auc": 0.5})  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="dict"):
        list(bad.collect())


def test_series_names_of_a_lone_array_and_constant_labels_that_would_merge_series() -> None:
    """A lone metric's array is named from ``value`` as its number is (it had a leading dot:
    ``.0.1``); a constant label named ``metric`` or ``window_start`` would give every member
    the same series, which Prometheus refuses in one scrape: an ``InputError`` names it."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    registry = CollectorRegistry()
    registry.register(MetricsCollector(sm.ConfusionMatrix().update([0, 1, 1], [0, 1, 0])))
    names = [
        s.labels["metric"]
        for f in text_string_to_metric_families(generate_latest(registry).decode())
        if f.name == "streammetrics_value"
        for s in f.samples
    ]
    assert names == ["value.0.0", "value.0.1", "value.1.0", "value.1.1"]
    for name in ("metric", "window_start"):
        with pytest.raises(InputError, match=f"labels: '{name}'"):
            MetricsCollector(sm.Accuracy(), labels={name: "ranker"})


def _families(source: sm.Metric | MetricsCollector) -> dict[str, list[tuple[dict, float]]]:
    """Every sample of one scrape, parsed by prometheus_client's own parser (which refuses
    text that is not valid exposition format)."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    registry = CollectorRegistry()
    registry.register(source if isinstance(source, MetricsCollector) else MetricsCollector(source))
    text = generate_latest(registry).decode()
    return {
        f.name: [(s.labels, s.value) for s in f.samples]
        for f in text_string_to_metric_families(text)
    }


def test_a_tuple_of_arrays_of_different_lengths_is_served_item_by_item() -> None:
    # PRCurve's (precision, recall, thresholds): 0.8.3 made one array of them and every scrape
    # failed with ValueError, losing the other series too.
    y, s = [0, 1, 1, 0, 1], [0.2, 0.6, 0.9, 0.4, 0.6]
    quality = sm.MetricCollection(auc=sm.ROCAUC(exact=True), pr=sm.PRCurve(exact=True))
    quality.update(y, s)
    served = {labels["metric"]: v for labels, v in _families(quality)["streammetrics_value"]}
    precision, recall, thresholds = quality.pr.compute()
    assert served["auc"] == quality.auc.compute()
    for i, arrays in enumerate((precision, recall, thresholds)):
        assert [served[f"pr.{i}.{j}"] for j in range(len(arrays))] == list(arrays)
    assert len(served) == 1 + len(precision) + len(recall) + len(thresholds)


def test_names_prometheus_refuses_are_refused_at_construction() -> None:
    # A reserved ("__name__", "__x"), empty or malformed label name, or a namespace that is no
    # metric name, made every scrape's text invalid (0.8.3); they are now InputErrors.
    for bad in ("__name__", "__env", "", "1st", "a-b"):
        with pytest.raises(InputError, match="labels"):
            MetricsCollector(sm.Accuracy(), labels={bad: "x"})
    for bad in ("", "9lives", "my-app"):
        with pytest.raises(InputError, match="namespace"):
            MetricsCollector(sm.Accuracy(), namespace=bad)
    served = _families(MetricsCollector(sm.Accuracy().update([1], [1]), "app:x", {"_env": "a"}))
    assert served["app:x_value"] == [({"metric": "value", "_env": "a"}, 1.0)]


def test_windows_inside_a_collection_keep_their_labels_and_dropped_series() -> None:
    w = sm.MetricCollection(
        acc=TumblingWindows(sm.Accuracy(), width=10),
        last=SlidingWindow(sm.Accuracy(), width=10, slots=2),
    )
    w.update([1, 0, 1], [1, 1, 1], timestamps=[1, 15, 40])
    served = _families(w)
    values = {
        (lb["metric"], lb.get("window_start", "")): v for lb, v in served["streammetrics_value"]
    }
    assert values == {
        ("acc", "0"): 1.0,
        ("acc", "10"): 0.0,
        ("acc", "40"): 1.0,
        ("last", ""): 1.0,  # an empty window_start: no label, to Prometheus
    }
    assert served["streammetrics_dropped"] == [({"metric": "last"}, 2.0)]
    alone = _families(
        SlidingWindow(sm.Accuracy(), width=10, slots=2).update([1], [1], timestamps=[0])
    )
    assert alone["streammetrics_dropped"] == [({}, 0.0)]  # a lone window: no metric label


def test_dotted_member_names_are_series_of_their_own() -> None:
    # Member "x.a" and member "a" of member "x" were both the series metric="x.a".
    from prometheus_client import CollectorRegistry, generate_latest

    inner = sm.MetricCollection(a=sm.Accuracy())
    m = sm.MetricCollection(x=inner, **{"x.a": sm.F1(), "b\\c": sm.Accuracy()})
    m.update([1, 0], [1, 1])
    registry = CollectorRegistry()
    registry.register(MetricsCollector(m))
    lines = [
        line for line in generate_latest(registry).decode().splitlines()
        if line.startswith("streammetrics_value{")
    ]  # fmt: skip
    assert sorted(lines) == [
        'streammetrics_value{metric="b\\\\\\\\c"} 0.5',
        'streammetrics_value{metric="x.a"} 0.5',
        'streammetrics_value{metric="x\\\\.a"} 0.6666666666666666',
    ]


def test_without_prometheus_client_both_entry_points_name_the_extra(monkeypatch):
    # 0.8.14: serve() imported prometheus_client bare (ModuleNotFoundError, no extra named)
    import sys

    from streammetrics import prometheus as prom

    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    for call in (
        lambda: prom.serve(sm.Accuracy, port=0),
        lambda: prom.MetricsCollector(sm.Accuracy()),
    ):
        with pytest.raises(ImportError, match=r"pip install 'streammetrics\[prometheus\]'"):
            call()


def test_a_source_that_is_no_metric_is_refused_when_given() -> None:
    # 0.8.16 took any source and failed at every scrape; labels="ab" raised ValueError.
    with pytest.raises(sm.InputError, match="source:"):
        MetricsCollector("x")
    with pytest.raises(sm.InputError, match="labels:"):
        MetricsCollector(sm.Accuracy(), labels="ab")


def test_intervals_are_served_beside_their_values() -> None:
    """``interval=0.95``: every value with a confidence interval gets ``_value_lower`` and
    ``_value_upper`` series under its own labels, equal to ``interval()`` (a ``Sliced``'s
    ``intervals()``, per slice) of the state scraped; values without one (a table, a
    clustering index, tumbling windows) have none, and the scrape still succeeds."""
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 400)
    p = np.clip(0.3 * y + 0.7 * rng.random(400), 0, 1)
    group = rng.choice(["a", "b.c"], 400)
    hard = (p > 0.5).astype(int)
    coll = sm.MetricCollection(
        acc=sm.Accuracy(),
        auc=sm.ROCAUC(),
        cm=sm.ConfusionMatrix(labels=[0, 1]),
        by=sm.Sliced(sm.Accuracy()),
        ari=sm.AdjustedRandIndex(),
    )
    rows = ((y, hard), {})
    coll.update_each(
        {
            "acc": rows,
            "cm": rows,
            "ari": rows,
            "auc": ((y, p), {}),
            "by": ((y, hard), {"by": group}),
        }
    )
    server, thread, _ = serve(coll, port=0, labels={"model": "m1"}, interval=0.9)
    try:
        got = _scrape(server.server_port)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    for key, (low, high) in [
        ("acc", coll["acc"].interval(0.9)),
        ("auc", coll["auc"].interval(0.9)),
        ("by.a", coll["by"].intervals(0.9)["a"]),
        ("by.b\\.c", coll["by"].intervals(0.9)["b.c"]),
    ]:
        value = got[f"streammetrics_value{{metric={key},model=m1}}"]
        assert got[f"streammetrics_value_lower{{metric={key},model=m1}}"] == low < value
        assert got[f"streammetrics_value_upper{{metric={key},model=m1}}"] == high > value
    bounded = {k.split("metric=")[1].split(",")[0] for k in got if "_value_lower" in k}
    assert bounded == {"acc", "auc", "by.a", "by.b\\.c"}  # no table, no ARI
    assert not any("_value_upper" in k and "cm." in k for k in got)
    # Without ``interval`` there are no bounds series; a bad level is refused by name.
    assert "streammetrics_value_lower" not in _families(coll)
    windows = TumblingWindows(sm.Accuracy(), width=10.0)
    windows.update([0, 1], [0, 1], timestamps=[1.0, 12.0])
    served = _families(MetricsCollector(windows, interval=0.95))
    assert served["streammetrics_value_lower"] == [] and len(served["streammetrics_value"]) == 2
    for bad in (1.0, 0, "0.9", True):
        with pytest.raises(InputError, match="interval: "):
            MetricsCollector(sm.Accuracy(), interval=bad)


def test_bounds_are_served_only_beside_a_value() -> None:
    """A ``Bootstrap`` of per-class values gives one ``(nan, nan)`` when every replicate is
    nan (no rows, or one): the first cut served it as ``_value_lower{metric="value"}`` beside
    ``value.0``, ``value.1``, ... (a review found it); bounds now go only beside a value."""
    rng = np.random.default_rng(0)
    for rows in (0, 1, 60):
        m = sm.Bootstrap(sm.MulticlassROCAUC(average=None), replicates=5)
        if rows:
            m.update(rng.integers(0, 3, rows), rng.dirichlet([1, 1, 1], rows))
        served = _families(MetricsCollector(m, interval=0.95))
        values = {labels["metric"] for labels, _ in served["streammetrics_value"]}
        for family in ("streammetrics_value_lower", "streammetrics_value_upper"):
            assert {labels["metric"] for labels, _ in served[family]} <= values
        if rows == 60:
            assert len(served["streammetrics_value_lower"]) == 3
