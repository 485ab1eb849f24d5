"""Prometheus exposition: scrape a live endpoint on loopback."""

from __future__ import annotations

import threading
import urllib.request

import pytest

pytest.importorskip("prometheus_client")

import streammetrics as sm
from streammetrics.prometheus import serve
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
        thread.join(5)


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
