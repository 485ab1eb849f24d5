"""``eval``/``report`` with ``--by`` (one row per slice) and ``--ci`` (intervals), end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, roc_auc_score

import streammetrics as sm
from tests.test_cli import DATA, _columns, _error_line, run

COLS = ["--y-true", "y_true", "--y-score", "y_score", "--y-pred", "y_pred"]


def test_by_gives_each_slice_scikit_learns_values() -> None:
    proc = run("eval", str(DATA), "--metric", "roc_auc", "--metric", "accuracy", *COLS,
               "--by", "y_pred", "--json", "--batch-size", "700")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    c = _columns()
    y, s, p = c["y_true"].astype(int), c["y_score"].astype(float), c["y_pred"].astype(int)
    assert out["rows"] == len(y)
    for key in (0, 1):
        rows = p == key
        assert out["metrics"]["roc_auc"][str(key)] == pytest.approx(
            roc_auc_score(y[rows], s[rows]), abs=1e-4
        )
        assert out["metrics"]["accuracy"][str(key)] == pytest.approx(
            accuracy_score(y[rows], p[rows]), rel=1e-12
        )


def test_composite_slices_and_the_per_slice_table() -> None:
    proc = run("eval", str(DATA), "--metric", "accuracy", *COLS, "--by", "y_true",
               "--by", "y_pred", "--ci")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[0].split() == ["slice", "accuracy"]
    assert [ln.split()[0] for ln in lines[1:-1]] == ["0/0", "0/1", "1/0", "1/1"]
    assert all("[" in ln for ln in lines[1:-1])  # an interval beside every value
    assert lines[-1].split() == ["rows", "5000"]
    # JSON names a composite slice as the table does (it wrote Python's "(0, 1)").
    proc = run("eval", str(DATA), "--metric", "accuracy", *COLS, "--by", "y_true",
               "--by", "y_pred", "--ci", "--json")  # fmt: skip
    out = json.loads(proc.stdout)
    assert list(out["metrics"]["accuracy"]) == ["0/0", "0/1", "1/0", "1/1"]
    assert list(out["intervals"]["accuracy"]) == ["0/0", "0/1", "1/0", "1/1"]


def test_ci_prints_the_metrics_intervals() -> None:
    proc = run("eval", str(DATA), "--metric", "accuracy", "--metric", "roc_auc", *COLS,
               "--ci", "0.9", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    c = _columns()
    y, s, p = c["y_true"].astype(int), c["y_score"].astype(float), c["y_pred"].astype(int)
    assert out["level"] == 0.9
    want = sm.Accuracy().update(y, p).interval(0.9)
    assert out["intervals"]["accuracy"] == pytest.approx(list(want), rel=1e-12)
    auc = sm.ROCAUC().update(y, s)
    assert out["intervals"]["roc_auc"] == pytest.approx(list(auc.interval(0.9)), rel=1e-9)
    table = run("eval", str(DATA), "--metric", "accuracy", *COLS, "--ci")
    assert "accuracy  0.7402 [" in table.stdout


def test_metrics_without_an_interval_say_none_and_bad_levels_fail_in_one_line() -> None:
    proc = run("eval", str(DATA), "--metric", "confusion_matrix", *COLS, "--ci", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["intervals"] == {"confusion_matrix": None}
    assert "--ci: the level must be between 0 and 1" in _error_line(
        run("eval", str(DATA), "--metric", "accuracy", *COLS, "--ci", "1.5")
    )


def test_report_by_slice(tmp_path) -> None:
    page = tmp_path / "r.html"
    proc = run("report", str(DATA), "--metric", "accuracy", *COLS, "--by", "y_pred",
               "-o", str(page))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].split() == ["slice", "accuracy"]
    html = page.read_text()
    assert "<svg" in html and "http://" not in html.replace("http://www.w3.org", "")
    assert np.isfinite(float(proc.stdout.splitlines()[1].split()[1]))


def test_composite_slices_with_a_slash_stay_distinct(tmp_path) -> None:
    """("x/y", "z") and ("x", "y/z") were both written "x/y/z": the JSON kept one of them."""
    path = tmp_path / "col.csv"
    path.write_text("y,p,a,b\n1,1,x/y,z\n1,0,x,y/z\n0,0,x,y/z\n1,1,c\\d,e\n")
    args = ("--metric", "accuracy", "--y-true", "y", "--y-pred", "p", "--by", "a", "--by", "b")
    proc = run("eval", str(path), *args, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["metrics"]["accuracy"] == {
        "x\\/y/z": 1.0,
        "x/y\\/z": 0.5,
        "c\\\\d/e": 1.0,
    }
    table = run("eval", str(path), *args)
    assert [ln.split() for ln in table.stdout.splitlines()[1:-1]] == [
        ["c\\\\d/e", "1"],
        ["x/y\\/z", "0.5"],
        ["x\\/y/z", "1"],
    ]


def test_a_dict_valued_metric_gets_one_column_per_number_under_by() -> None:
    # 0.8.12 printed a regression_report's whole dict in one cell of the per-slice table.
    proc = run("eval", str(DATA), "--metric", "regression_report", "--metric", "r2",
               "--y-true", "y_true", "--y-pred", "y_score", "--by", "y_pred")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = [ln.split() for ln in proc.stdout.strip().splitlines()]
    header = lines[0]
    assert header[0] == "slice" and header[-1] == "r2"
    assert "regression_report.mse" in header and "regression_report.count" in header
    c = _columns()
    y, s, p = c["y_true"].astype(float), c["y_score"].astype(float), c["y_pred"].astype(int)
    for row in lines[1:-1]:
        assert len(row) == len(header)
        rows = p == int(row[0])
        cell = dict(zip(header, row, strict=True))
        report = sm.RegressionReport().update(y[rows], s[rows]).compute()
        assert float(cell["regression_report.mse"]) == pytest.approx(report["mse"], rel=1e-5)
        assert int(cell["regression_report.count"]) == rows.sum()
        assert float(cell["r2"]) == pytest.approx(report["r2"], rel=1e-5)
