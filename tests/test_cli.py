"""The ``streammetrics`` command end to end, through a subprocess."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

import streammetrics as sm

DATA = Path(__file__).resolve().parents[1] / "examples" / "data" / "predictions.csv"
ROOT = DATA.parents[2]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streammetrics.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def _columns() -> dict[str, np.ndarray]:
    with DATA.open() as fh:
        rows = list(csv.DictReader(fh))
    return {k: np.array([r[k] for r in rows]) for k in rows[0]}


def _error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_eval_matches_scikit_learn_on_the_bundled_log() -> None:
    proc = run(
        "eval",
        str(DATA),
        "--metric",
        "accuracy",
        "--metric",
        "f1_macro",
        "--metric",
        "mcc",
        "--y-true",
        "y_true",
        "--y-pred",
        "y_pred",
        "--json",
        "--batch-size",
        "777",
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    cols = _columns()
    yt, yp = cols["y_true"].astype(int), cols["y_pred"].astype(int)
    assert out["rows"] == len(yt) == 5000
    assert out["metrics"]["accuracy"] == pytest.approx(accuracy_score(yt, yp), abs=1e-15)
    assert out["metrics"]["f1_macro"] == pytest.approx(f1_score(yt, yp, average="macro"))
    assert out["metrics"]["mcc"] == pytest.approx(matthews_corrcoef(yt, yp), abs=1e-12)
    table = run(
        "eval", str(DATA), "--metric", "accuracy", "--y-true", "y_true", "--y-pred", "y_pred"
    )
    assert table.returncode == 0 and "accuracy" in table.stdout and "5000" in table.stdout


def test_saved_halves_merge_to_the_bytes_of_the_whole(tmp_path: Path) -> None:
    lines = DATA.read_text().splitlines(keepends=True)
    head, body = lines[0], lines[1:]
    (tmp_path / "a.csv").write_text(head + "".join(body[:1234]))
    (tmp_path / "b.csv").write_text(head + "".join(body[1234:]))
    common = [
        "--metric",
        "accuracy",
        "--metric",
        "f1_macro",
        "--metric",
        "classification_report",
        "--y-true",
        "y_true",
        "--y-pred",
        "y_pred",
    ]
    for name, batch in (("a", "100"), ("b", "333"), ("whole", "100000")):
        src = str(DATA) if name == "whole" else str(tmp_path / f"{name}.csv")
        proc = run(
            "eval", src, *common, "--batch-size", batch, "--save", str(tmp_path / f"{name}.state")
        )
        assert proc.returncode == 0, proc.stderr
    proc = run(
        "merge",
        str(tmp_path / "b.state"),
        str(tmp_path / "a.state"),
        "-o",
        str(tmp_path / "merged.state"),
    )
    assert proc.returncode == 0, proc.stderr
    merged = (tmp_path / "merged.state").read_bytes()
    assert merged == (tmp_path / "whole.state").read_bytes()
    shown = run("show", str(tmp_path / "merged.state"), "--json")
    info = json.loads(shown.stdout)
    assert info["class"] == "MetricCollection" and info["count"] == 5000
    assert info["values"]["accuracy"] == sm.loads(merged).compute()["accuracy"]
    text = run("show", str(tmp_path / "merged.state"))
    assert text.returncode == 0 and "MetricCollection" in text.stdout


def test_stdin_with_rolling_values_and_other_formats(tmp_path: Path) -> None:
    text = DATA.read_text()
    proc = run(
        "eval",
        "-",
        "--metric",
        "accuracy",
        "--y-true",
        "y_true",
        "--y-pred",
        "y_pred",
        "--every",
        "1000",
        "--json",
        stdin=text,
    )
    assert proc.returncode == 0, proc.stderr
    reports = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["rows"] for r in reports] == [1000, 2000, 3000, 4000, 5000, 5000]
    cols = _columns()
    yt, yp = cols["y_true"].astype(int), cols["y_pred"].astype(int)
    assert reports[0]["metrics"]["accuracy"] == pytest.approx(accuracy_score(yt[:1000], yp[:1000]))
    # the same log as JSON Lines and as Parquet gives the same values
    with (tmp_path / "p.jsonl").open("w") as fh:
        for t, p, u in zip(yt.tolist(), yp.tolist(), cols["user_id"].tolist(), strict=True):
            fh.write(json.dumps({"y_true": t, "y_pred": p, "user_id": u}) + "\n")
    import pandas as pd

    pd.DataFrame({"y_true": yt, "y_pred": yp}).to_parquet(tmp_path / "p.parquet")
    want = reports[-1]["metrics"]
    for name in ("p.jsonl", "p.parquet"):
        got = run(
            "eval",
            str(tmp_path / name),
            "--metric",
            "accuracy",
            "--y-true",
            "y_true",
            "--y-pred",
            "y_pred",
            "--json",
            "--batch-size",
            "999",
        )
        assert got.returncode == 0, got.stderr
        assert json.loads(got.stdout)["metrics"] == want


def test_regression_metric_reads_numbers(tmp_path: Path) -> None:
    cols = _columns()
    proc = run(
        "eval", str(DATA), "--metric", "mse", "--y-true", "y_true", "--y-pred", "y_score", "--json"
    )
    assert proc.returncode == 0, proc.stderr
    want = np.mean((cols["y_true"].astype(float) - cols["y_score"].astype(float)) ** 2)
    assert json.loads(proc.stdout)["metrics"]["mse"] == pytest.approx(want, rel=1e-9)


def test_scores_and_groups() -> None:
    from sklearn.metrics import roc_auc_score

    cols = _columns()
    proc = run(
        "eval",
        str(DATA),
        "--metric",
        "roc_auc",
        "--y-true",
        "y_true",
        "--y-score",
        "y_score",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)["metrics"]["roc_auc"]
    want = roc_auc_score(cols["y_true"].astype(int), cols["y_score"].astype(float))
    assert got == pytest.approx(want, abs=1e-3)


def test_bad_data_gives_one_line_errors(tmp_path: Path) -> None:
    lines = DATA.read_text().splitlines()
    fields = lines[41].split(",")
    fields[3] = "oops"  # y_score on line 42
    lines[41] = ",".join(fields)
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines) + "\n")
    err = _error_line(
        run(
            "eval",
            str(bad),
            "--metric",
            "mse",
            "--y-true",
            "y_true",
            "--y-pred",
            "y_score",
            "--batch-size",
            "10",
        )
    )
    if "needs streammetrics" not in err:
        assert f"{bad}:42" in err and "'y_score'" in err and "'oops'" in err
    err = _error_line(
        run(
            "eval",
            "-",
            "--metric",
            "accuracy",
            "--y-true",
            "y_true",
            "--y-pred",
            "nope",
            stdin="\n".join(lines[:5]),
        )
    )
    assert "<stdin>:1" in err and "no column 'nope'" in err
    err = _error_line(
        run(
            "eval",
            "-",
            "--metric",
            "accuracy",
            "--y-true",
            "y_true",
            "--y-pred",
            "y_score",
            stdin="\n".join(lines[:5]),
        )
    )
    assert "y_pred" in err or "y_true" in err
    err = _error_line(
        run("eval", str(DATA), "--metric", "nosuch", "--y-true", "y_true", "--y-pred", "y_pred")
    )
    assert "unknown metric 'nosuch'" in err
    err = _error_line(
        run(
            "eval",
            str(tmp_path / "missing.csv"),
            "--metric",
            "accuracy",
            "--y-true",
            "y_true",
            "--y-pred",
            "y_pred",
        )
    )
    assert "no such file" in err
    junk = tmp_path / "junk.state"
    junk.write_bytes(b"not a state at all")
    err = _error_line(run("show", str(junk)))
    assert str(junk) in err and "not a streammetrics state" in err
    state = tmp_path / "ok.state"
    state.write_bytes(sm.Accuracy().update([1], [1]).to_bytes())
    other = tmp_path / "other.state"
    other.write_bytes(sm.ConfusionMatrix().update([1], [1]).to_bytes())
    err = _error_line(run("merge", str(state), str(other), "-o", str(tmp_path / "x.state")))
    assert str(other) in err and "cannot be merged" in err
    usage = run("eval", str(DATA))
    assert usage.returncode == 2 and "Traceback" not in usage.stderr


def test_show_prints_windows_and_slices_of_any_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A window state (int keys) and a slice state (int and tuple keys) raised TypeError."""
    from streammetrics.cli import main

    states = {
        "w": sm.TumblingWindows(sm.Accuracy(), width=10).update([1, 0], [1, 1], timestamps=[0, 15]),
        "s": sm.Sliced(sm.Accuracy()).update([1, 0, 1], [1, 1, 1], by=[3, 4, 3]),
        "t": sm.Sliced(sm.Accuracy()).update([1, 0], [1, 1], by=([1, 2], ["a", "b/c"])),
    }
    rows = {"w": [["0", "1"], ["10", "0"]], "s": [["3", "1"], ["4", "0"]],
            "t": [["1/a", "1"], ["2/b\\/c", "0"]]}  # fmt: skip
    for name, metric in states.items():
        path = tmp_path / f"{name}.state"
        path.write_bytes(metric.to_bytes())
        assert main(["show", str(path)]) == 0
        out = capsys.readouterr().out.splitlines()
        assert [ln.split() for ln in out[out.index("metric  value") + 1 : -1]] == rows[name]
        assert main(["show", str(path), "--json"]) == 0
        values = json.loads(capsys.readouterr().out)["values"]
        assert list(values) == [k for k, _ in rows[name]]
