"""What keeps ``streammetrics report`` cheap beside ``eval``, and that it changes no picture:

* a picture whose metric keeps the state of a metric asked for is read off that metric's final
  state (no second pass over the chunks), and that state is byte for byte the one a metric fed
  the rows itself would hold;
* pictures whose texts are known are drawn on fixed margins (one drawing pass), with the same
  data as :func:`streammetrics.plot.plot` draws on its own figure.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import streammetrics as sm
from streammetrics.cli import main
from streammetrics.cli.arguments import parser
from streammetrics.cli.page import Report, _axes, _shared_fields, _with_state_of
from streammetrics.cli.plan import build, stream

pytest.importorskip("matplotlib")

DATA = Path(__file__).resolve().parents[1] / "examples" / "data" / "predictions.csv"
BINARY = ["--y-true", "y_true", "--y-score", "y_score", "--y-pred", "y_pred"]


def _fed(metrics: list[str], *extra: str) -> tuple[Report, object, int]:
    """A report on the bundled log, streamed in chunks of 1,000 rows, finished."""
    names = [a for m in metrics for a in ("--metric", m)]
    args = parser().parse_args(
        ["report", str(DATA), *names, *BINARY, "--batch-size", "1000", "-o", "x.html", *extra]
    )
    args.data = args.inputs[0]
    plan = build(args.metric, args)
    report = Report.for_data(plan, args)
    rows = stream(args, plan, sinks=report.sinks())
    report.finish(plan.collection, rows, source=str(DATA))
    return report, plan.collection, rows


def test_extras_read_off_the_metrics_asked_for_equal_metrics_fed_the_rows() -> None:
    log = pd.read_csv(DATA)
    y, s, p = log["y_true"].to_numpy(), log["y_score"].to_numpy(), log["y_pred"].to_numpy()
    report, coll, rows = _fed(["accuracy", "average_precision"])
    sources = {title: source for title, (_m, _member, source) in report.extras.items()}
    assert sources == {
        "ROC curve": "average_precision",
        "Reliability diagram": None,  # no metric asked for keeps its bins: fed every chunk
        "Confusion matrix": "accuracy",
    }
    # the read-off ones were never fed (no second pass), the fed one saw every row
    assert report.extras["ROC curve"][0].count == 0
    assert report.extras["Confusion matrix"][0].count == 0
    assert report.extras["Reliability diagram"][0].count == rows == len(log)
    roc = _with_state_of(report.extras["ROC curve"][0], coll["average_precision"])
    assert roc.to_bytes() == sm.ROCAUC().update(y, s).to_bytes()
    cm = _with_state_of(report.extras["Confusion matrix"][0], coll["accuracy"])
    assert cm.to_bytes() == sm.ConfusionMatrix().update(y, p).to_bytes()
    np.testing.assert_array_equal(cm.compute(), sm.ConfusionMatrix().update(y, p).compute())
    # the source keeps its own state: the copy shares no array with it
    assert cm.counts.table is not coll["accuracy"].counts.table
    captions = [t for t, _svg in report.sections]
    assert captions == [
        "average_precision", "ROC curve", "Reliability diagram", "Confusion matrix"
    ]  # fmt: skip


def test_only_the_same_update_in_the_same_mode_shares_a_state() -> None:
    assert _shared_fields(sm.ConfusionMatrix(), sm.Accuracy()) == ["counts"]
    assert _shared_fields(sm.ConfusionMatrix(), sm.F1(average="macro")) == ["counts"]
    assert _shared_fields(sm.ROCAUC(), sm.AveragePrecision()) == ["hist"]
    assert _shared_fields(sm.AveragePrecision(), sm.ROCCurve()) == ["hist"]
    # another mode, another grid, fixed labels, another update: no sharing
    assert _shared_fields(sm.ROCAUC(), sm.AveragePrecision(exact=True)) == []
    assert _shared_fields(sm.ROCAUC(), sm.AveragePrecision(resolution=64)) == []
    assert _shared_fields(sm.ROCAUC(), sm.AveragePrecision(score_type="logit")) == []
    assert _shared_fields(sm.ConfusionMatrix(labels=[0, 1]), sm.Accuracy()) == []
    assert _shared_fields(sm.CalibrationError(), sm.ROCAUC()) == []
    assert _shared_fields(sm.ConfusionMatrix(), sm.ROCAUC()) == []
    assert _shared_fields(sm.ROCAUC(), sm.LogLoss()) == []


def test_sliced_reports_feed_the_extras_every_chunk(capsys, tmp_path) -> None:
    # under --by the metrics asked for hold one state per slice: the extras read the chunks
    report, _coll, rows = _fed(["accuracy"], "--by", "user_id")
    assert report.extras["Confusion matrix"][2] is None
    assert report.extras["Confusion matrix"][0].count == rows
    out = tmp_path / "by.html"
    status = main(["report", str(DATA), "--metric", "accuracy", *BINARY, "--by", "user_id",
                   "-o", str(out)])  # fmt: skip
    assert status == 0
    assert "<figcaption>Confusion matrix</figcaption>" in out.read_text()


def test_the_page_draws_the_same_confusion_matrix_as_eval_computes(capsys, tmp_path) -> None:
    out = tmp_path / "r.html"
    assert main(["report", str(DATA), "--metric", "accuracy", *BINARY, "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["eval", str(DATA), "--metric", "confusion_matrix", *BINARY, "--json"]) == 0
    matrix = json.loads(capsys.readouterr().out)["metrics"]["confusion_matrix"]
    page = out.read_text()
    heat_map = page[page.index("<figcaption>Confusion matrix</figcaption>") :]
    # the counts are written in the cells of the heat map; with glyphs as paths matplotlib
    # leaves each string drawn in a comment before its glyphs
    drawn = [int(c) for c in re.findall(r"<!-- ([0-9]+) -->", heat_map)]
    cells = [v for row in matrix for v in row]
    assert sum(cells) == 5000
    i = drawn.index(cells[0])  # after the tick labels, the cells row by row
    assert drawn[i : i + len(cells)] == cells


def test_fixed_margin_axes_draw_what_plot_draws_on_its_own_figure() -> None:
    from streammetrics.plot import plot

    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 5_000)
    s = np.clip(0.3 * y + 0.7 * rng.random(5_000), 0, 1)
    for m in (sm.ROCAUC().update(y, s), sm.AveragePrecision().update(y, s),
              sm.CalibrationError().update(y, s)):  # fmt: skip
        ax = _axes(m)
        assert ax is not None and ax.figure.get_layout_engine() is None
        mine, theirs = plot(m, ax), plot(m)
        assert theirs.figure.get_layout_engine() is not None
        for a, b in zip(mine.get_lines(), theirs.get_lines(), strict=True):
            np.testing.assert_array_equal(a.get_xydata(), b.get_xydata())
        assert mine.get_title() == theirs.get_title()
        assert mine.get_legend_handles_labels()[1] == theirs.get_legend_handles_labels()[1]
    short = sm.ConfusionMatrix().update([0, 1, 1], [0, 1, 0])
    assert _axes(short) is not None
    long = sm.ConfusionMatrix().update(["a very long class name", "b"], ["b", "b"])
    assert _axes(long) is None  # long class names: the constrained layout makes room
    sliced = sm.Sliced(sm.Accuracy()).update([1, 0], [1, 1], by=["a", "b"])
    assert _axes(sliced) is None
