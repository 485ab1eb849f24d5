"""``streammetrics report``, ranking and text logs, and name suggestions, in process."""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.cli import main

DATA = Path(__file__).resolve().parents[1] / "examples" / "data" / "predictions.csv"
CHROMIUM = Path("/usr/bin/chromium")

pytest.importorskip("matplotlib")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out = capsys.readouterr()
    return status, out.out, out.err


BINARY = ["--y-true", "y_true", "--y-score", "y_score", "--y-pred", "y_pred"]
METRICS = ["--metric", "roc_auc", "--metric", "accuracy", "--metric", "average_precision"]


def _self_contained(page: str) -> None:
    assert "<script" not in page.lower()
    assert "<link" not in page.lower() and "@import" not in page
    assert not re.search(r"\ssrc=", page)
    # the only addresses are XML namespace names; every href points inside the page (a
    # fragment, or an image inlined as a data: URI, as the heat map is)
    assert set(re.findall(r"https?://[^\"' )]+", page)) <= {
        "http://www.w3.org/2000/svg",
        "http://www.w3.org/1999/xlink",
    }
    hrefs = re.findall(r'href="([^"]*)"', page)
    assert all(h.startswith(("#", "data:image/png;base64,")) for h in hrefs)


def test_report_prints_what_eval_prints_and_writes_a_page(capsys, tmp_path) -> None:
    out = tmp_path / "report.html"
    status, evaluated, _ = run(capsys, "eval", str(DATA), *METRICS, *BINARY, "--json")
    assert status == 0
    status, reported, err = run(
        capsys, "report", str(DATA), *METRICS, *BINARY, "--json", "-o", str(out)
    )
    assert status == 0, err
    assert json.loads(reported) == json.loads(evaluated)
    page = out.read_text()
    _self_contained(page)
    values = json.loads(evaluated)["metrics"]
    for name in ("roc_auc", "accuracy", "average_precision"):
        assert f"<td>{name}</td><td>{values[name]:.6g}</td>" in page
    # the asked-for curves, and the pictures the columns allow: reliability, confusion matrix
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", page)
    assert captions == ["roc_auc", "average_precision", "Reliability diagram", "Confusion matrix"]
    assert page.count("<svg") == 4
    assert "certified sketch bound" in page


def test_an_exact_gauc_shows_no_sketch_bound(capsys, tmp_path) -> None:
    # Every group within max_exact: GAUC's bound is 0, and 0.8.16's page showed "± 0
    # (certified sketch bound)" beside a value no sketch touched (a new user's review).
    out = tmp_path / "gauc.html"
    status, _, err = run(
        capsys,
        "report",
        str(DATA),
        "--metric",
        "gauc",
        "--y-true",
        "y_true",
        "--y-score",
        "y_score",
        "--group",
        "user_id",
        "-o",
        str(out),
    )
    assert status == 0, err
    page = out.read_text()
    assert "<td>gauc</td>" in page and "± 0 " not in page and "sketch bound" not in page


def test_report_table_matches_eval_table(capsys, tmp_path) -> None:
    _, table, _ = run(capsys, "eval", str(DATA), "--metric", "f1", *BINARY)
    _, report, _ = run(
        capsys, "report", str(DATA), "--metric", "f1", *BINARY, "-o", str(tmp_path / "r.html")
    )
    assert report == table


def test_report_over_time(capsys, tmp_path) -> None:
    out = tmp_path / "time.html"
    status, _, err = run(
        capsys, "report", str(DATA), "--metric", "accuracy", "--metric", "confusion_matrix",
        "--y-true", "y_true", "--y-pred", "y_pred", "--window", "10000", "--time", "ts",
        "-o", str(out),
    )  # fmt: skip
    assert status == 0, err
    page = out.read_text()
    assert "<figcaption>accuracy over time</figcaption>" in page
    assert "confusion_matrix over time" not in page  # a matrix is not a number per window
    status, _, err = run(
        capsys, "report", str(DATA), "--metric", "accuracy", *BINARY, "--window", "10",
        "-o", str(out),
    )  # fmt: skip
    assert status == 1 and "--time" in err


def test_report_from_saved_states_is_the_merge(capsys, tmp_path) -> None:
    lines = DATA.read_text().splitlines(keepends=True)
    (tmp_path / "a.csv").write_text(lines[0] + "".join(lines[1:2001]))
    (tmp_path / "b.csv").write_text(lines[0] + "".join(lines[2001:]))
    for part in "ab":
        status, _, err = run(
            capsys, "eval", str(tmp_path / f"{part}.csv"), *METRICS, *BINARY,
            "--save", str(tmp_path / f"{part}.state"),
        )  # fmt: skip
        assert status == 0, err
    out = tmp_path / "merged.html"
    status, printed, err = run(
        capsys, "report", str(tmp_path / "a.state"), str(tmp_path / "b.state"), "--json",
        "-o", str(out),
    )  # fmt: skip
    assert status == 0, err
    _, whole, _ = run(capsys, "eval", str(DATA), *METRICS, *BINARY, "--json")
    assert json.loads(printed) == json.loads(whole)
    page = out.read_text()
    _self_contained(page)
    captions = sorted(re.findall(r"<figcaption>(.*?)</figcaption>", page))
    assert captions == ["average_precision", "roc_auc"]
    status, _, err = run(capsys, "report", str(DATA), "-o", str(out))
    assert status == 1 and "not a streammetrics state" in err
    # --save writes the merge the page shows (0.8.9 ignored it); the options that read a log
    # are refused without --metric (0.8.9 ignored them: `--by` drew the whole log silently)
    states = [str(tmp_path / "a.state"), str(tmp_path / "b.state")]
    saved = tmp_path / "total.state"
    status, _, err = run(capsys, "report", *states, "-o", str(out), "--save", str(saved))
    assert status == 0, err
    both = sm.loads((tmp_path / "a.state").read_bytes()) + sm.loads(
        (tmp_path / "b.state").read_bytes()
    )
    assert saved.read_bytes() == both.to_bytes()
    out.unlink()
    # (0.8.11 ignored --batch-size there, whatever its value)
    for extra in (
        ["--by", "y_true"],
        ["--y-true", "y_true"],
        ["--labels-as-text"],
        ["--batch-size", "10"],
        ["--batch-size", "0"],
    ):
        status, _, err = run(capsys, "report", *states, "-o", str(out), *extra)
        assert status == 1 and f"{extra[0]}: read a DATA file with --metric" in err
        assert not out.exists()


def test_report_of_thousands_of_slices_draws_a_readable_chart(capsys, tmp_path) -> None:
    """5,000 slices: every slice in the table, 40 bars in the chart (0.8.9 drew 5,000 bars
    and names, 28 of the report's 48 s)."""
    rng = np.random.default_rng(5)
    n = 20_000
    y = rng.integers(0, 2, n)
    s, seg = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1), rng.integers(0, 5000, n)
    rows = ["y,s,seg"] + [f"{a},{b:.4f},{c}" for a, b, c in zip(y, s, seg, strict=True)]
    data = tmp_path / "many.csv"
    data.write_text("\n".join(rows) + "\n")
    out = tmp_path / "many.html"
    status, printed, err = run(
        capsys, "report", str(data), "--metric", "roc_auc", "--y-true", "y", "--y-score", "s",
        "--by", "seg", "--json", "-o", str(out),
    )  # fmt: skip
    assert status == 0, err
    slices = len(json.loads(printed)["metrics"]["roc_auc"])
    page = out.read_text()
    assert page.count("<tr><td>roc_auc.") == slices > 4000
    assert f"20 lowest, 20 highest of {slices:,} slices" in page


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")
def test_report_renders_in_headless_chromium(capsys, tmp_path) -> None:
    from matplotlib.image import imread

    out = tmp_path / "report.html"
    status, _, err = run(capsys, "report", str(DATA), *METRICS, *BINARY, "-o", str(out))
    assert status == 0, err
    shot = tmp_path / "shot.png"
    subprocess.run(
        [
            str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}", "--window-size=1200,1600", out.as_uri(),
        ],
        capture_output=True, timeout=120, check=True,
    )  # fmt: skip
    image = imread(shot)[..., :3]
    ink = (image < 0.9).any(axis=-1)
    assert ink.mean() > 0.02, "the screenshot is (nearly) blank"
    # the pictures drew: blue curve and bar pixels, not only black text
    blue = (image[..., 2] > 0.5) & (image[..., 0] < 0.3)
    assert blue.sum() > 2000
    shutil.rmtree(tmp_path / "profile", ignore_errors=True)


def _ranking_log(path: Path) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    q = np.repeat(np.arange(40), rng.integers(2, 12, 40))
    rel = rng.integers(0, 4, len(q))
    score = rng.normal(size=len(q)) + 0.5 * rel
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["qid", "rel", "score"])
        w.writerows(zip(q.tolist(), rel.tolist(), score.round(6).tolist(), strict=True))
    return {"qid": q, "rel": rel, "score": score.round(6)}


def test_ranking_log(capsys, tmp_path) -> None:
    log = tmp_path / "rank.csv"
    cols = _ranking_log(log)
    names = ["ndcg", "ndcg@5", "map", "mrr", "precision@3", "recall@3", "hit_rate@3"]
    args = [a for n in names for a in ("--metric", n)]
    status, out, err = run(
        capsys, "eval", str(log), *args, "--query", "qid", "--y-true", "rel",
        "--y-score", "score", "--batch-size", "37", "--json",
    )  # fmt: skip
    assert status == 0, err
    got = json.loads(out)["metrics"]
    q, rel, score = cols["qid"], cols["rel"], cols["score"]
    want = {
        "ndcg": sm.ranking.NDCG(),
        "ndcg@5": sm.ranking.NDCG(k=5),
        "map": sm.ranking.MAP(),
        "mrr": sm.ranking.MRR(),
        "precision@3": sm.ranking.PrecisionAtK(3),
        "recall@3": sm.ranking.RecallAtK(3),
        "hit_rate@3": sm.ranking.HitRate(3),
    }
    # the same values as the metrics fed the whole log at once (chunks of 37 rows cut queries)
    for name, metric in want.items():
        assert got[name] == pytest.approx(metric.update(q, rel, score).compute(), abs=1e-12)
    status, _, err = run(capsys, "eval", str(log), "--metric", "ndcg", "--y-true", "rel",
                         "--y-score", "score")  # fmt: skip
    assert status == 1 and "--query" in err


def test_text_log_with_two_references(capsys, tmp_path) -> None:
    sacrebleu = pytest.importorskip("sacrebleu")
    hyps = ["the cat sat on the mat", "a dog barks", "hello world", "it is raining today"]
    ref1 = ["the cat is on the mat", "the dog barks", "hello there world", "it rains today"]
    ref2 = ["a cat sat on a mat", "", "hi world", "today it is raining"]
    log = tmp_path / "text.jsonl"
    with log.open("w") as fh:
        for h, a, b in zip(hyps, ref1, ref2, strict=True):
            fh.write(json.dumps({"hyp": h, "ref1": a, "ref2": b or None}) + "\n")
    status, out, err = run(
        capsys, "eval", str(log), "--metric", "bleu", "--metric", "chrf", "--hypothesis", "hyp",
        "--reference", "ref1", "--reference", "ref2", "--json", "--batch-size", "3",
    )  # fmt: skip
    assert status == 0, err
    got = json.loads(out)["metrics"]
    streams = [ref1, [r or None for r in ref2]]
    assert got["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hyps, streams).score, abs=1e-9)
    assert got["chrf"] == pytest.approx(sacrebleu.corpus_chrf(hyps, streams).score, abs=1e-9)
    status, _, err = run(capsys, "eval", str(log), "--metric", "bleu", "--hypothesis", "hyp")
    assert status == 1 and "--reference" in err


@pytest.mark.parametrize(
    ("typo", "hint"),
    [("acuracy", "accuracy"), ("ndgc@5", "ndcg@5"), ("roc_aux", "roc_auc"), ("blue", "bleu")],
)
def test_misspelt_metric_names_suggest_the_closest(capsys, typo, hint) -> None:
    status, _, err = run(capsys, "eval", str(DATA), "--metric", typo, *BINARY)
    assert status == 1
    assert f"unknown metric {typo!r}; did you mean {hint!r}?" in err


def test_report_of_a_saved_window_state_draws_it_over_time(capsys, tmp_path) -> None:
    from streammetrics.windows import TumblingWindows

    rng = np.random.default_rng(7)
    t = rng.uniform(0, 600, 400)
    y, p = rng.integers(0, 2, 400), rng.integers(0, 2, 400)
    halves = [TumblingWindows(sm.Accuracy(), width=60) for _ in range(2)]
    halves[0].update(y[:150], p[:150], timestamps=t[:150])
    halves[1].update(y[150:], p[150:], timestamps=t[150:])
    for i, w in enumerate(halves):
        (tmp_path / f"{i}.state").write_bytes(w.to_bytes())
    out = tmp_path / "windows.html"
    status, _, err = run(
        capsys, "report", str(tmp_path / "0.state"), str(tmp_path / "1.state"), "-o", str(out)
    )
    assert status == 0, err
    page = out.read_text()
    assert re.findall(r"<figcaption>(.*?)</figcaption>", page) == ["TumblingWindows"]
    whole = TumblingWindows(sm.Accuracy(), width=60).update(y, p, timestamps=t).compute()
    for start, value in whole.items():
        assert f"<td>TumblingWindows.{start}</td><td>{value:.6g}</td>" in page


@pytest.mark.parametrize("command", ["eval", "report"])
def test_eval_and_report_show_the_same_progress_bar_on_a_terminal(
    capsys, monkeypatch, tmp_path, command
) -> None:
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    extra = ["-o", str(tmp_path / "r.html")] if command == "report" else []
    status = main(
        [command, str(DATA), "--metric", "accuracy", *BINARY, "--batch-size", "500", *extra]
    )
    err = capsys.readouterr().err
    assert status == 0
    # tqdm's bar (the cli extra) or the plain counter, drawn with carriage returns, then cleared
    assert re.match(r"\r[\d.,k]+ rows", err), err
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    capsys.readouterr()
    main([command, str(DATA), "--metric", "accuracy", *BINARY, *extra])
    assert "rows" not in capsys.readouterr().err  # not on a pipe or a file


def test_report_of_a_metric_without_an_interval_writes_the_page(capsys, tmp_path) -> None:
    """``calibration_error`` and the clustering indices have no closed-form interval: the page
    shows their value alone (docs/cli.md: the interval of metrics that have one)."""
    out = tmp_path / "report.html"
    status, _, err = run(
        capsys,
        "report",
        str(DATA),
        "--metric",
        "calibration_error",
        "--metric",
        "accuracy",
        *BINARY,
        "-o",
        str(out),
    )
    assert status == 0, err
    page = out.read_text()
    assert re.search(r"<td>calibration_error</td><td>[0-9.e-]+</td><td></td>", page)
    assert "95% interval" in page  # accuracy's


@pytest.mark.parametrize(
    "metric", ["confusion_matrix", "classification_report", "regression_report"]
)
def test_report_by_slice_of_a_metric_whose_value_is_no_number(capsys, tmp_path, metric) -> None:
    """The chart by slice needs a number per slice: for the others the page says so (it did
    not stop the report with a TypeError), from a log and from a saved state."""
    log = tmp_path / "s.csv"
    log.write_text("y,p,c\n1,1,a\n0,1,a\n1,0,b\n0,0,b\n")
    out, state = tmp_path / "s.html", tmp_path / "s.state"
    status, _, err = run(
        capsys, "report", str(log), "--metric", metric, "--metric", "accuracy", "--y-true", "y",
        "--y-pred", "p", "--by", "c", "-o", str(out), "--save", str(state),
    )  # fmt: skip
    assert status == 0, err
    page = out.read_text()
    assert f"No picture of {metric}: metric: a chart by slice needs a number per slice" in page
    assert "<figcaption>accuracy</figcaption>" in page  # the number's chart is still drawn
    status, _, err = run(capsys, "report", str(state), "-o", str(out))
    assert status == 0, err
    assert f"No picture of {metric}" in out.read_text()


def test_a_picture_that_fails_to_draw_is_a_note(capsys, tmp_path, monkeypatch) -> None:
    import streammetrics.plot as plot

    def broken(*_args: object, **_kwargs: object) -> None:
        raise ValueError("cannot draw this")

    monkeypatch.setattr(plot, "plot", broken)
    out = tmp_path / "r.html"
    status, _, err = run(capsys, "report", str(DATA), *METRICS, *BINARY, "-o", str(out))
    assert status == 0, err
    assert "No picture of roc_auc: ValueError: cannot draw this" in out.read_text()


def test_score_type_reaches_the_pictures_the_report_adds(capsys, tmp_path) -> None:
    # The precision-recall curve the page adds beside roc_auc was built without --score-type:
    # "No precision-recall curve: y_score: score_type='probability' needs values in [0, 1]".
    data = tmp_path / "logit.csv"
    data.write_text("y,logit\n1,2.5\n0,-1\n1,0.3\n0,0.4\n1,-3\n")
    out = tmp_path / "report.html"
    cols = ["--metric", "roc_auc", "--y-true", "y", "--y-score", "logit", "--score-type", "logit"]
    status, _, err = run(capsys, "report", str(data), *cols, "-o", str(out))
    assert status == 0, err
    page = out.read_text()
    assert "No precision-recall curve" not in page
    assert "Precision-recall curve" in re.findall(r"<figcaption>(.*?)</figcaption>", page)


def test_report_of_a_saved_sliced_state_prints_its_slices_with_intervals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 0.8.10 printed the plain table for a Sliced state read alone, which leaves out values
    # that are dicts: no slice, no interval.
    s = sm.Sliced(sm.Accuracy()).update([1, 0, 1, 1, 0, 1], [1, 0, 0, 1, 1, 1], by=list("aaabbb"))
    state = tmp_path / "sliced.state"
    state.write_bytes(s.to_bytes())
    assert main(["report", str(state), "--ci", "-o", str(tmp_path / "r.html")]) == 0
    out = capsys.readouterr().out
    low, high = s.intervals(0.95)["a"]
    for key in "ab":
        line = next(x for x in out.splitlines() if x.startswith(key + " "))
        assert f"{low:.6g}"[:6] in line and f"{high:.6g}"[:6] in line


def test_no_command_writes_over_a_file_it_reads_or_writes(tmp_path, capsys):
    # 0.8.14 replaced the log of `report data.csv -o data.csv` (or the state of
    # `-o x --save x`) with the page, and said it had written the report.
    data = tmp_path / "log.csv"
    shutil.copy(DATA, data)
    original = data.read_bytes()
    state = tmp_path / "s.state"
    run(capsys, "eval", str(data), "--metric", "accuracy", *BINARY, "--save", str(state))
    saved = state.read_bytes()
    calls = [
        ("report", str(data), "--metric", "accuracy", *BINARY, "-o", str(data)),
        (
            "report",
            str(data),
            "--metric",
            "accuracy",
            *BINARY,
            "-o",
            str(tmp_path / "r.html"),
            "--save",
            str(data),
        ),
        (
            "report",
            str(data),
            "--metric",
            "accuracy",
            *BINARY,
            "-o",
            str(state),
            "--save",
            str(state),
        ),
        ("report", str(state), "-o", str(state)),
        ("report", str(state), "-o", str(tmp_path / "x"), "--save", str(tmp_path / "x")),
        ("eval", str(data), "--metric", "accuracy", *BINARY, "--save", str(data)),
    ]
    for call in calls:
        status, _, err = run(capsys, *call)
        assert status != 0, call
        assert "give another file name" in err or "give two file names" in err, err
        assert data.read_bytes() == original and state.read_bytes() == saved
        assert not (tmp_path / "r.html").exists() and not (tmp_path / "x").exists()
    # A merged state may replace an input state (as `merge -o` does): it holds it.
    other = tmp_path / "t.state"
    run(capsys, "eval", str(data), "--metric", "accuracy", *BINARY, "--save", str(other))
    status, _, _ = run(
        capsys,
        "report",
        str(state),
        str(other),
        "-o",
        str(tmp_path / "m.html"),
        "--save",
        str(state),
    )
    assert status == 0
    assert sm.loads(state.read_bytes()).count == 2 * sm.loads(saved).count


def test_a_data_file_without_metric_is_told_to_give_one(tmp_path, capsys):
    status, _, err = run(capsys, "report", str(DATA), "-o", str(tmp_path / "r.html"))
    assert status != 0 and "not a streammetrics state" in err and "give --metric NAME" in err


@pytest.mark.parametrize(
    "metric, says",
    [
        ("roc_auc", "metric 'roc_auc' ranks scores: give --y-score COL"),
        ("accuracy", "metric 'accuracy' compares predicted labels or values: give --y-pred COL"),
        ("bleu", "metric 'bleu' scores hypotheses against references: give --hypothesis COL"),
    ],
)
def test_a_missing_column_is_named_with_the_metric_that_reads_it(tmp_path, capsys, metric, says):
    # 0.8.14 answered every metric with one sentence listing all three kinds of column
    for command in ("eval", "report"):
        out = ["-o", str(tmp_path / "r.html")] if command == "report" else []
        status, _, err = run(capsys, command, str(DATA), "--metric", metric,
                             "--y-true", "y_true", *out)  # fmt: skip
        assert status == 1 and err.strip().endswith(says), err
