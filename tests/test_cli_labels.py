"""How the CLI reads label columns: the same answer for any ``--batch-size`` (a column's kind
never depends on the chunk it was read in), and ``--labels-as-text``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streammetrics.cli import main


def _eval(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["eval", *args])
    out = capsys.readouterr()
    return status, out.out, out.err


def _write(tmp_path: Path, text: str, name: str = "log.csv") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


COLS = ["--metric", "accuracy", "--y-true", "y_true", "--y-pred", "y_pred", "--json"]


@pytest.mark.parametrize("batch", ["1", "2", "3", "100"])
def test_a_column_of_numbers_and_text_is_refused_whatever_the_chunking(
    capsys, tmp_path, batch
) -> None:
    """1, 2, x, 1 was read as text in one chunk (accuracy 1) but as integers then text in
    chunks of two (refused: "str labels, but this state holds int labels"): the answer
    depended on --batch-size. Such a column is now refused in every chunking, naming it,
    unless --labels-as-text reads every label as text."""
    data = _write(tmp_path, "y_true,y_pred\n1,1\n2,2\nx,x\n1,1\n")
    status, _, err = _eval(capsys, data, *COLS, "--batch-size", batch)
    assert status == 1
    assert "--labels-as-text" in err
    status, out, err = _eval(capsys, data, *COLS, "--batch-size", batch, "--labels-as-text")
    assert status == 0, err
    assert json.loads(out)["metrics"]["accuracy"] == 1.0


def test_one_chunk_names_the_text_and_the_number(capsys, tmp_path) -> None:
    data = _write(tmp_path, "y_true,y_pred\n1,1\n2,unknown\n2,2\n")
    status, _, err = _eval(capsys, data, *COLS)
    assert status == 1
    assert "log.csv:3: column 'y_pred': 'unknown' is text, but '1' (at 2) is a number" in err
    assert "--labels-as-text" in err and "np.str_" not in err
    status, out, err = _eval(capsys, data, *COLS, "--labels-as-text")
    assert status == 0, err
    assert json.loads(out)["metrics"]["accuracy"] == pytest.approx(2 / 3)


def test_labels_as_text_keeps_the_text_of_every_format(capsys, tmp_path) -> None:
    """As text, '007' and '7' are two labels (read as numbers they are one), in CSV, JSON
    lines (numbers become their text) and Parquet; slice keys too."""
    csv_path = _write(tmp_path, "y_true,y_pred,g\n007,7,a\n7,7,b\n")
    rows = [{"y_true": "007", "y_pred": 7, "g": 1}, {"y_true": "7", "y_pred": 7, "g": 2}]
    jsonl = _write(tmp_path, "".join(json.dumps(r) + "\n" for r in rows), "log.jsonl")
    for data in (csv_path, jsonl):
        status, out, err = _eval(capsys, data, *COLS)
        assert status == 0, err
        assert json.loads(out)["metrics"]["accuracy"] == 1.0
        status, out, err = _eval(capsys, data, *COLS, "--labels-as-text", "--by", "g")
        assert status == 0, err
        assert json.loads(out)["metrics"]["accuracy"] in (
            {"a": 0.0, "b": 1.0},
            {"1": 0.0, "2": 1.0},
        )
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({"y_true": ["007", "7"], "y_pred": [7, 7]})
    parquet = str(tmp_path / "log.parquet")
    pq.write_table(table, parquet)
    status, out, err = _eval(capsys, parquet, *COLS, "--labels-as-text")
    assert status == 0, err
    assert json.loads(out)["metrics"]["accuracy"] == 0.5


def test_a_missing_label_as_text_is_refused(capsys, tmp_path) -> None:
    rows = [{"y_true": 1.0, "y_pred": 1}, {"y_true": float("nan"), "y_pred": 1}]
    jsonl = _write(tmp_path, "".join(json.dumps(r) + "\n" for r in rows), "log.jsonl")
    status, _, err = _eval(capsys, jsonl, *COLS, "--labels-as-text")
    assert status == 1
    assert "log.jsonl:2: column 'y_true': missing value" in err


def test_labels_as_text_leaves_regression_values_numbers(capsys, tmp_path) -> None:
    """A regression --y-true holds values: --labels-as-text reads the --by labels as text
    (007 and 7 two slices) and y_true, y_pred as numbers (it refused them as strings)."""
    path = _write(tmp_path, "y,p,zip\n1.5,1.2,007\n2,2.5,7\n3,2,007\n")
    status, out, err = _eval(capsys, path, "--metric", "mse", "--y-true", "y", "--y-pred", "p",
                             "--by", "zip", "--labels-as-text", "--json")  # fmt: skip
    assert status == 0, err
    assert json.loads(out)["metrics"]["mse"] == pytest.approx({"007": 0.545, "7": 0.25})
    # beside a label metric the shared columns are labels read as numbers, not as text
    path = _write(tmp_path, "y,p,zip\n1,1,007\n2,2,7\n3,2,007\n")
    both = ("--metric", "mse", "--metric", "accuracy", "--y-true", "y", "--y-pred", "p")
    status, out, err = _eval(capsys, path, *both, "--labels-as-text", "--json")
    assert status == 0, err
    assert json.loads(out)["metrics"] == pytest.approx({"mse": 1 / 3, "accuracy": 2 / 3})


@pytest.mark.parametrize("batch", ["1", "2", "100"])
def test_booleans_beside_integers_and_nan_beside_text_do_not_depend_on_the_chunking(
    capsys, tmp_path, batch
) -> None:
    """0.8.8 (found by a review): True, False, 1, 0 gave accuracy 1.0 in chunks of one row and
    was refused as text beside numbers in one chunk; x, nan was refused alone in a chunk
    and read as two text labels beside each other. Now booleans beside integers read as 1
    and 0 in every chunking, and nan or inf beside text are refused in every chunking."""
    mixed = _write(tmp_path, "y_true,y_pred\nTrue,1\nFalse,0\n1,1\n0,0\n", "bools.csv")
    status, out, _ = _eval(capsys, mixed, *COLS, "--batch-size", batch)
    assert status == 0 and json.loads(out)["metrics"]["accuracy"] == 1.0
    for bad in ("nan", "inf", "-Infinity"):
        text = _write(tmp_path, f"y_true,y_pred\nx,x\n{bad},{bad}\ny,y\n", "text.csv")
        status, _, err = _eval(capsys, text, *COLS, "--batch-size", batch)
        assert status == 1 and err, bad


def test_a_boolean_label_column_is_also_a_slice_key(capsys, tmp_path) -> None:
    """--by on the --y-pred column of booleans was refused (keys refuse booleans, and the
    column was read as a label only); a copy of it worked (found by a review, 0.8.9)."""
    data = _write(tmp_path, "y_true,y_pred,copy\n1,True,True\n0,False,False\n1,False,False\n")
    rows = []
    for by in ("y_pred", "copy"):
        status, out, err = _eval(capsys, data, *COLS, "--by", by)
        assert status == 0, err
        rows.append(json.loads(out)["metrics"]["accuracy"])
    assert rows[0] == rows[1] == {"False": 0.5, "True": 1.0}


def test_python_dash_m_streammetrics_runs_the_command(tmp_path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "streammetrics", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0 and "eval" in done.stdout


@pytest.mark.parametrize("batch", ["1", "2", "100"])
def test_booleans_beside_integers_in_a_column_that_is_also_a_key_are_refused(
    capsys, tmp_path, batch
) -> None:
    """As labels they would read as 1 and 0, as keys as text: a column that is both is refused
    in any chunking (as in 0.8.8), where a first version of 0.8.9 gave slices "0"/"1" in one
    chunk and refused them in chunks of one row (the second diff review)."""
    data = _write(tmp_path, "y,p\nTrue,True\nFalse,True\nTrue,False\nFalse,False\nTrue,1\n")
    cols = ["--metric", "accuracy", "--y-true", "y", "--y-pred", "p", "--by", "p", "--json"]
    status, _, err = _eval(capsys, data, *cols, "--batch-size", batch)
    assert status == 1 and err


@pytest.mark.parametrize("batch", ["1", "2", "100"])
@pytest.mark.parametrize("whole", ["1.0", "1.", "1e0", "10e-1"])
def test_booleans_beside_whole_floats_do_not_depend_on_the_chunking(
    capsys, tmp_path, batch, whole
) -> None:
    """True beside 1.0 read as labels 1 and 1 across chunks but was refused as text beside a
    number in one chunk (0.8.15, found by a review)."""
    data = _write(tmp_path, f"y_true,y_pred\n1,True\n1,{whole}\n0,0\n0,False\n")
    cols = [*COLS, "--metric", "confusion_matrix"]
    status, out, err = _eval(capsys, data, *cols, "--batch-size", batch)
    assert status == 0, err
    assert json.loads(out)["metrics"] == {"accuracy": 1.0, "confusion_matrix": [[2, 0], [0, 2]]}


@pytest.mark.parametrize("batch", ["1", "2", "100"])
@pytest.mark.parametrize("big", ["1e400", "-1e999", "9" * 400])
@pytest.mark.parametrize("role", ["label", "key"])
def test_numbers_past_float64_beside_text_are_refused_in_every_chunking(
    capsys, tmp_path, batch, big, role
) -> None:
    """1e400 (or an integer of 400 digits) read as a text label or slice beside text in one
    chunk, and was refused alone in a chunk (0.8.15, found by a review)."""
    if role == "key":
        data = _write(tmp_path, f"y_true,y_pred,k\n0,1,a\n1,1,{big}\n1,0,b\n")
        status, _, err = _eval(capsys, data, *COLS, "--by", "k", "--batch-size", batch)
    else:
        data = _write(tmp_path, f"y_true,y_pred\na,a\nb,{big}\nb,b\n")
        status, _, err = _eval(capsys, data, *COLS, "--batch-size", batch)
    assert status == 1 and err


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("ndcg@-1", "'ndcg@10'"),
        ("ndcg@1.5", "'ndcg@10'"),
        ("recall@k", "'recall@10'"),
        ("hit_rate", "did you mean 'hit_rate@10'"),
        ("ndgc@5", "did you mean 'ndcg@5'"),
    ],
)
def test_a_bad_cut_off_is_named_and_the_suggestion_is_valid(capsys, tmp_path, name, says) -> None:
    """0.8.15 answered ``ndcg@-1`` with "did you mean 'ndcg@-1'?" (found by a review)."""
    data = _write(tmp_path, "y_true,y_score,g\n1,0.5,1\n0,0.2,1\n")
    args = ["--metric", name, "--y-true", "y_true", "--y-score", "y_score", "--query", "g"]
    status, _, err = _eval(capsys, data, *args)
    assert status == 1
    assert says in err
    assert f"did you mean {name!r}" not in err


def test_pos_label_names_the_positive_class_of_the_binary_metrics(capsys, tmp_path) -> None:
    # 0.8.16 had no way to score binary f1 on text labels (yes/no), nor with --labels-as-text:
    # the error named pos_label, a Python argument the command line did not have (review).
    from sklearn.metrics import f1_score, precision_score

    text = _write(tmp_path, "y,p\nyes,yes\nno,yes\nyes,no\nno,no\nyes,yes\n")
    cols = ["--y-true", "y", "--y-pred", "p", "--json"]
    status, _, err = _eval(capsys, text, "--metric", "f1", *cols)
    assert status == 1 and "--pos-label" in err
    status, out, err = _eval(
        capsys, text, "--metric", "f1", "--metric", "precision", *cols, "--pos-label", "yes"
    )
    assert status == 0, err
    values = json.loads(out)["metrics"]
    y, p = ["yes", "no", "yes", "no", "yes"], ["yes", "yes", "no", "no", "yes"]
    assert values["f1"] == pytest.approx(f1_score(y, p, pos_label="yes"))
    assert values["precision"] == pytest.approx(precision_score(y, p, pos_label="yes"))
    numbers = _write(tmp_path, "y,p\n1,1\n0,1\n1,0\n0,0\n1,1\n", "n.csv")
    status, out, _ = _eval(capsys, numbers, "--metric", "f1", *cols, "--pos-label", "0")
    assert json.loads(out)["metrics"]["f1"] == pytest.approx(
        f1_score([1, 0, 1, 0, 1], [1, 1, 0, 0, 1], pos_label=0)
    )
    status, out, _ = _eval(
        capsys, numbers, "--metric", "f1", *cols, "--labels-as-text", "--pos-label", "1"
    )
    assert status == 0 and json.loads(out)["metrics"]["f1"] == pytest.approx(2 / 3)
    status, _, err = _eval(capsys, numbers, "--metric", "f1_macro", *cols, "--pos-label", "1")
    assert status == 1 and "--pos-label: none of the metrics" in err
    status, out, _ = _eval(capsys, numbers, "--metric", "f1", *cols, "--pos-label", "0.0")
    assert status == 0 and json.loads(out)["metrics"]["f1"] == pytest.approx(0.5)  # (as 0)
    status, _, err = _eval(capsys, numbers, "--metric", "f1", *cols, "--pos-label", "9" * 30)
    assert status == 1 and "past 64 bits" in err  # (a traceback in the first cut: review)


@pytest.mark.parametrize(
    ("given", "hint"),
    [
        ("auc", "did you mean 'roc_auc'"),
        ("ROC_AUC", "did you mean 'roc_auc'"),
        ("NDCG@5", "did you mean 'ndcg@5'"),
        (
            "roc_auc,accuracy",
            "give each metric its own --metric, as in --metric roc_auc --metric accuracy",
        ),
    ],
)
def test_common_misspellings_get_the_right_hint(capsys, tmp_path, given, hint) -> None:
    # 0.8.16: auc -> 'gauc', ROC_AUC -> nothing, a comma list -> one of its names (review).
    data = _write(tmp_path, "y_true,y_pred\n1,1\n0,0\n")
    status, _, err = _eval(
        capsys, data, "--metric", given, "--y-true", "y_true", "--y-pred", "y_pred"
    )
    assert status == 1 and hint in err, err


def test_pos_label_reaches_the_binary_score_metrics(capsys, tmp_path) -> None:
    """``--pos-label`` names the positive class of ``roc_auc``, ``average_precision``,
    ``log_loss``, ``brier_score`` and ``gauc`` too: their ``--y-true`` is read as
    ``label == LABEL``, as scikit-learn's ``roc_curve(pos_label=...)`` reads it. 0.8.17 said
    "none of the metrics takes a positive class", and text labels could not be scored at all.
    A label no row holds is an error (a typo would give no positives, nan)."""
    import numpy as np
    from sklearn.metrics import average_precision_score, brier_score_loss, log_loss, roc_auc_score

    import streammetrics as sm

    rng = np.random.default_rng(5)
    y = rng.random(300) < 0.4
    p = np.round(np.clip(0.3 * y + 0.7 * rng.random(300), 0.001, 0.999), 3)
    g = rng.integers(0, 6, 300)
    words = np.where(y, "spam", "ham")
    lines = "".join(f"{w},{s},{k},{int(t)}\n" for w, s, k, t in zip(words, p, g, y, strict=True))
    data = _write(tmp_path, "y,p,g,n\n" + lines)
    names = ["roc_auc", "average_precision", "log_loss", "brier_score", "gauc"]
    metrics = [a for n in names for a in ("--metric", n)]
    cols = ["--y-true", "y", "--y-score", "p", "--group", "g", "--json", "--batch-size", "70"]
    status, out, err = _eval(capsys, data, *metrics, *cols, "--pos-label", "spam")
    assert status == 0, err
    got = json.loads(out)["metrics"]
    assert got["roc_auc"] == pytest.approx(roc_auc_score(y, p), abs=1e-3)  # (the sketch)
    assert got["average_precision"] == pytest.approx(average_precision_score(y, p), abs=1e-3)
    assert got["log_loss"] == pytest.approx(log_loss(y, p))
    assert got["brier_score"] == pytest.approx(brier_score_loss(y, p))
    assert got["gauc"] == pytest.approx(sm.GAUC().update(y, p, g).compute())
    # On a column of numbers: --pos-label 0 makes the zeros the positives (scores of class 1
    # then rank them backwards), as roc_curve(pos_label=0) does.
    status, out, err = _eval(
        capsys, data, "--metric", "roc_auc", "--y-true", "n", "--y-score", "p", "--json",
        "--pos-label", "0",
    )  # fmt: skip
    assert status == 0, err
    assert json.loads(out)["metrics"]["roc_auc"] == pytest.approx(1 - roc_auc_score(y, p), abs=1e-3)
    # Per slice, and a label no row holds.
    status, out, err = _eval(
        capsys, data, "--metric", "roc_auc", "--y-true", "y", "--y-score", "p", "--by", "g",
        "--json", "--pos-label", "spam",
    )  # fmt: skip
    assert status == 0, err
    per = json.loads(out)["metrics"]["roc_auc"]
    assert per["0"] == pytest.approx(roc_auc_score(y[g == 0], p[g == 0]), abs=1e-3)
    status, _, err = _eval(
        capsys,
        data,
        "--metric",
        "roc_auc",
        "--y-true",
        "y",
        "--y-score",
        "p",
        "--pos-label",
        "Spam",
    )
    assert status == 1 and "--pos-label Spam: no row of --y-true 'y' holds it" in err
    # The report's curves read the labels the same way (no "No ROC curve" note).
    pytest.importorskip("matplotlib")
    page = tmp_path / "r.html"
    args = ["report", data, "--metric", "average_precision", "--y-true", "y", "--y-score", "p"]
    assert main([*args, "--pos-label", "spam", "-o", str(page)]) == 0
    html = page.read_text()
    assert html.count("<figure>") >= 2 and "No ROC" not in html and "No precision" not in html
