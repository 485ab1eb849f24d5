"""``streammetrics report`` and the pictures: cases a review found mishandled (0.8.6)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.cli import main
from streammetrics.uncertainty import wilson

pytest.importorskip("matplotlib")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

DATA = Path(__file__).resolve().parents[1] / "examples" / "data" / "predictions.csv"
BINARY = ["--y-true", "y_true", "--y-score", "y_score", "--y-pred", "y_pred"]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out = capsys.readouterr()
    return status, out.out, out.err


def page_of(capsys: pytest.CaptureFixture[str], out: Path, *args: str) -> str:
    """The page ``streammetrics report *args -o out`` writes (the command must succeed)."""
    status, _, err = run(capsys, "report", *args, "-o", str(out))
    assert status == 0, err
    return out.read_text()


def captions(page: str) -> list[str]:
    return re.findall(r"<figcaption>(.*?)</figcaption>", page)


@pytest.mark.parametrize("by", [False, True])
def test_labels_with_dollar_signs_are_drawn_as_written(capsys, tmp_path, by) -> None:
    # 0.8.6: matplotlib read "$\nope$" as mathematical text and failed when the page was
    # saved, with a traceback and no page; "$5 to $10" was drawn as "5to10".
    data = tmp_path / "math.csv"
    rows = ["y,p,seg"] + [
        f"{y},{p},{s}"
        for y, p, s in zip(
            ["$\\nope$", "$5 to $10", "a"] * 4,
            ["$\\nope$", "a", "a"] * 4,
            ["$x$", "b"] * 6,
            strict=True,
        )
    ]
    data.write_text("\n".join(rows) + "\n")
    extra = ["--by", "seg"] if by else []
    cols = ["--metric", "accuracy", "--y-true", "y", "--y-pred", "p", *extra]
    page = page_of(capsys, tmp_path / "math.html", str(data), *cols)
    assert "No picture" not in page
    assert ("accuracy" if by else "Confusion matrix") in captions(page)


def test_a_slice_right_on_every_row_draws_its_bar(capsys, tmp_path) -> None:
    # Wilson's upper end for 10 of 10 was 0.9999999999999999 < 1.0: a negative error bar,
    # "No picture of accuracy: ValueError: 'xerr' must not contain negative values".
    assert wilson(10, 10, 0.95)[1] == 1.0
    assert wilson(0, 10, 0.95)[0] == 0.0
    data = tmp_path / "perfect.csv"
    data.write_text("y,p,seg\n" + "1,1,a\n" * 10 + "1,0,b\n0,0,b\n1,1,b\n")
    cols = ["--metric", "accuracy", "--y-true", "y", "--y-pred", "p", "--by", "seg"]
    assert "No picture" not in page_of(capsys, tmp_path / "perfect.html", str(data), *cols)


def test_the_page_shows_the_level_asked_for_and_each_slice_s_interval(capsys, tmp_path) -> None:
    # 0.8.6 wrote "95% interval" whatever --ci said, and no interval for a sliced metric.
    cols = ["--metric", "accuracy", *BINARY]
    page = page_of(capsys, tmp_path / "ci.html", str(DATA), *cols, "--ci", "0.5")
    import pandas as pd

    frame = pd.read_csv(DATA)
    low, high = sm.Accuracy().update(frame["y_true"], frame["y_pred"]).interval(0.5)
    assert f"50% interval [{low:.6g}, {high:.6g}]" in page
    assert "95% interval" not in page
    page = page_of(capsys, tmp_path / "by.html", str(DATA), *cols, "--by", "user_id", "--ci")
    user = frame["user_id"].iloc[0]
    rows = frame[frame["user_id"] == user]
    low, high = sm.Accuracy().update(rows["y_true"], rows["y_pred"]).interval(0.95)
    assert re.search(
        rf"accuracy\.{user}</td><td>[^<]*</td><td>95% interval \[{low:.6g}, {high:.6g}\]", page
    )


def test_under_by_the_whole_log_curve_of_the_metric_asked_for_is_drawn(capsys, tmp_path) -> None:
    # 0.8.6 drew roc_auc by slice and left out the ROC curve of the whole log (it was "drawn").
    cols = ["--metric", "roc_auc", *BINARY, "--by", "user_id"]
    page = page_of(capsys, tmp_path / "by.html", str(DATA), *cols)
    assert {"roc_auc", "ROC curve", "Precision-recall curve"} <= set(captions(page))


def test_report_without_matplotlib_names_the_extra_before_reading(capsys, tmp_path, monkeypatch):
    # 0.8.6 exited 0 with every picture replaced by "No picture ...: ImportError".
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    out = tmp_path / "r.html"
    status, _, err = run(
        capsys, "report", str(DATA), "--metric", "accuracy", *BINARY, "-o", str(out)
    )
    assert status == 1
    assert "pip install 'streammetrics[plot]'" in err
    assert not out.exists()


def test_an_unwritable_report_path_fails_before_the_log_is_read(capsys, tmp_path) -> None:
    out = tmp_path / "missing" / "r.html"
    status, _, err = run(
        capsys, "report", str(DATA), "--metric", "accuracy", *BINARY, "-o", str(out)
    )
    assert status == 1
    assert "cannot write the report there" in err
    # A folder as the output: refused before the log is read, no table printed (0.8.8 read
    # the whole log first; found by a review, 0.8.9).
    status, printed, err = run(
        capsys, "report", str(DATA), "--metric", "accuracy", *BINARY, "-o", str(tmp_path)
    )
    assert status == 1 and "is a folder" in err and not printed


def test_a_list_column_in_parquet_is_a_one_line_error(capsys, tmp_path) -> None:
    # Parquet's list cells reach the reader as numpy arrays: 0.8.6 failed with a traceback.
    path = tmp_path / "lists.parquet"
    table = pa.table({"q": [[1, 2], [3]], "r": [1.0, 0.0], "s": [0.5, 0.2]})
    pq.write_table(table, path)
    cols = ["--metric", "ndcg", "--query", "q", "--y-true", "r", "--y-score", "s"]
    status, _, err = run(capsys, "eval", str(path), *cols)
    assert status == 1
    assert "column 'q': a list is not a label" in err


def test_plot_of_an_empty_confusion_matrix_with_fixed_labels() -> None:
    from streammetrics.plot import plot

    ax = plot(sm.ConfusionMatrix(labels=[0, 1, 2]))
    assert "no rows yet" in ax.get_title()
    ax = plot(sm.loads(sm.ConfusionMatrix(labels=[0, 1, 2]).update([0, 1], [0, 2]).to_bytes()))
    assert ax.get_title() == "Confusion matrix"
    assert np.isfinite(np.asarray(ax.images[0].get_array())).all()


def test_every_unwritable_state_path_fails_before_the_log_is_read(capsys, tmp_path) -> None:
    # 0.8.16's `eval --save missing/x.state` read the whole log, then failed to write; `merge`
    # and `report --save` the same. The destination is now checked first: with a log that
    # does not exist either, the error names the destination, not the log.
    state = tmp_path / "s.state"
    run(capsys, "eval", str(DATA), "--metric", "accuracy", *BINARY, "--save", str(state))
    gone = str(tmp_path / "no-log.csv")
    missing = str(tmp_path / "missing" / "x.state")
    calls = [
        ("eval", gone, "--metric", "accuracy", *BINARY, "--save", missing),
        (
            "report",
            gone,
            "--metric",
            "accuracy",
            *BINARY,
            "-o",
            str(tmp_path / "r.html"),
            "--save",
            missing,
        ),
        ("merge", str(state), gone, "-o", missing),
        ("eval", gone, "--metric", "accuracy", *BINARY, "--save", str(tmp_path)),
        ("merge", str(state), gone, "-o", str(tmp_path)),
    ]
    for call in calls:
        status, printed, err = run(capsys, *call)
        assert status == 1 and not printed, call
        assert "no such writable folder" in err or "is a folder" in err, err
        assert "no-log" not in err, err
    assert not (tmp_path / "r.html").exists()
