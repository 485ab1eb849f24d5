"""Reading logs: a file and the same bytes on standard input read alike, malformed input is a
one-line error at the right line, text is read verbatim, Parquet timestamps are seconds."""

from __future__ import annotations

import gc
import gzip
import io
import json
import sys
import warnings
from pathlib import Path

import pytest

from streammetrics.cli import main

AUC = ["--metric", "roc_auc", "--y-true", "y", "--y-score", "s"]
LABELS = ["--metric", "accuracy", "--y-true", "y", "--y-pred", "p"]


def _run(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    *args: str,
    stdin: bytes | None = None,
) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def _both(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    data: bytes,
    *args: str,
) -> list[tuple[int, str, str]]:
    """The command on ``data`` as a file, then on standard input."""
    path = tmp_path / "log.csv"
    path.write_bytes(data)
    return [
        _run(capsys, monkeypatch, "eval", str(path), *args),
        _run(capsys, monkeypatch, "eval", "-", *args, stdin=data),
    ]


def _one_line(err: str) -> str:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(
    ("data", "line"),
    [
        (b"y,s\n1,0.5\n\n0,bad\n", 4),
        (b"y,s\n\n1,0.5\n\n\n0,bad\n", 6),
        (b'y,h,s\n1,"a\nb",0.5\n\n0,c,bad\n', 5),  # a quoted field over two lines
    ],
)
def test_errors_name_the_line_of_the_file_after_blank_lines(
    capsys, monkeypatch, tmp_path, data, line
) -> None:
    for status, _, err in _both(capsys, monkeypatch, tmp_path, data, *AUC, "--batch-size", "1"):
        assert status == 1
        assert _one_line(err).split(": ")[2].endswith(f":{line}"), err
    jsonl = tmp_path / "log.jsonl"
    jsonl.write_text('{"y":1,"s":0.5}\n\n{"y":0,"s":"bad"}\n')
    status, _, err = _run(capsys, monkeypatch, "eval", str(jsonl), *AUC)
    assert status == 1 and "log.jsonl:3: column 's'" in _one_line(err)


def test_a_chunk_error_names_the_lines_of_the_chunk(capsys, monkeypatch, tmp_path) -> None:
    for status, _, err in _both(
        capsys, monkeypatch, tmp_path, b"y,p\n1,1\n\n0,1\n1,x\n\n0,y\n", "--metric", "accuracy",
        "--y-true", "y", "--y-pred", "p", "--batch-size", "2",
    ):  # fmt: skip
        assert status == 1 and "rows at lines 5-7:" in _one_line(err), err


@pytest.mark.parametrize(
    ("data", "where", "says"),
    [
        (b"y,s\xe9\n1,0.5\n", 1, "not UTF-8 text (byte 0xe9"),
        (b"y,s\n1,0.5\n0,0.\xe92\n", 3, "not UTF-8 text (byte 0xe9"),
        (b'"y,s\n1,0.5\n', 1, "quoted field is never closed"),
        (b'y,s\n1,0.5\n0,"0.2\n1,0.3\n', 3, "quoted field is never closed"),
        (b"y,s\n1,0.5\n0,0.2,x\n", 3, "3 fields, the header has 2"),
        (b"y,s\n1,0.5,x\n0,0.2\n", 2, "3 fields, the header has 2"),  # pandas: an index
    ],
)
def test_malformed_csv_is_one_line_at_its_line_from_a_file_and_stdin(
    capsys, monkeypatch, tmp_path, data, where, says
) -> None:
    for (status, _, err), name in zip(
        _both(capsys, monkeypatch, tmp_path, data, *AUC), ("log.csv", "<stdin>"), strict=True
    ):
        assert status == 1
        line = _one_line(err)
        assert f"{name}:{where}: " in line and says in line, err


def test_a_bom_and_a_short_row_read_alike_from_a_file_and_stdin(
    capsys, monkeypatch, tmp_path
) -> None:
    bom = b"\xef\xbb\xbfy,s,z\n1,0.9,a\n0,0.2\n"  # the last row lacks z, which is not read
    results = _both(capsys, monkeypatch, tmp_path, bom, *AUC, "--json")
    assert [r[0] for r in results] == [0, 0], results
    assert [json.loads(r[1])["metrics"]["roc_auc"] for r in results] == [1.0, 1.0]


def test_undecodable_jsonl_gzip_and_a_parquet_file_read_as_csv(
    capsys, monkeypatch, tmp_path
) -> None:
    (tmp_path / "a.jsonl").write_bytes(b'{"y":1,"s":0.5}\n{"y":0,"s":"\xe9"}\n')
    status, _, err = _run(capsys, monkeypatch, "eval", str(tmp_path / "a.jsonl"), *AUC)
    assert status == 1 and "a.jsonl:2: not UTF-8 text" in _one_line(err)
    status, _, err = _run(
        capsys, monkeypatch, "eval", "-", "--format", "jsonl", *AUC,
        stdin=b'{"y":1,"s":0.5}\n{"y":0,"s":"\xe9"}\n',
    )  # fmt: skip
    assert status == 1 and "<stdin>:2: not UTF-8 text" in _one_line(err)
    rows = [{"y": i % 2, "s": (i % 7) / 7} for i in range(20)]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    (tmp_path / "b.jsonl").write_text(text)
    (tmp_path / "b.jsonl.gz").write_bytes(gzip.compress(text.encode()))
    plain = _run(capsys, monkeypatch, "eval", str(tmp_path / "b.jsonl"), *AUC, "--json")
    packed = _run(capsys, monkeypatch, "eval", str(tmp_path / "b.jsonl.gz"), *AUC, "--json")
    assert packed[0] == 0 and packed[1] == plain[1], packed
    (tmp_path / "bad.jsonl.gz").write_bytes(b"not gzip at all")
    status, _, err = _run(capsys, monkeypatch, "eval", str(tmp_path / "bad.jsonl.gz"), *AUC)
    assert status == 1 and "bad.jsonl.gz:1: cannot read" in _one_line(err)
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    pd.DataFrame(rows).to_parquet(tmp_path / "c.parquet")
    status, _, err = _run(
        capsys, monkeypatch, "eval", str(tmp_path / "c.parquet"), "--format", "csv", *AUC
    )
    assert status == 1 and "c.parquet:1: a Parquet file" in _one_line(err)


def test_text_columns_are_read_verbatim_as_on_stdin(capsys, monkeypatch, tmp_path) -> None:
    sacrebleu = pytest.importorskip("sacrebleu")
    args = ("--metric", "chrf", "--hypothesis", "h", "--reference", "r", "--json")
    results = _both(capsys, monkeypatch, tmp_path, b"h,r\n007,007\n12,12\n,x\nNA,NA\n", *args)
    want = sacrebleu.corpus_chrf(["007", "12", "", "NA"], [["007", "12", "x", "NA"]]).score
    for status, out, err in results:
        assert status == 0, err
        assert json.loads(out)["metrics"]["chrf"] == pytest.approx(want, abs=1e-9)
    # an empty reference cell is dropped on both paths: with none left, the row is refused
    for (status, _, err), name in zip(
        _both(capsys, monkeypatch, tmp_path, b"h,r\na b,a b\nc,\n", *args),
        ("log.csv", "<stdin>"),
        strict=True,
    ):
        assert status == 1 and f"{name}:3: no reference" in _one_line(err), err


def test_parquet_timestamps_are_seconds_since_the_epoch(capsys, tmp_path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    pytest.importorskip("matplotlib")
    from streammetrics.cli.arguments import parser
    from streammetrics.cli.page import Report
    from streammetrics.cli.plan import build, stream

    stamps = pd.to_datetime(["2024-01-01T00:00:00", "2024-01-01T00:30:00", "2024-01-01T01:10:00"])
    frames = {
        "us": stamps.as_unit("us"),
        "ns": stamps.as_unit("ns"),
        "s": stamps.as_unit("s"),
        "tz": stamps.tz_localize("UTC").tz_convert("Europe/Paris"),
    }
    for name, t in frames.items():
        path = tmp_path / f"{name}.parquet"
        pd.DataFrame({"y": [1, 0, 1], "s": [0.9, 0.2, 0.4], "t": t}).to_parquet(path)
        args = parser().parse_args(
            ["report", str(path), *AUC, "--window", "1h", "--time", "t", "-o", "x.html"]
        )
        args.data = args.inputs[0]
        plan = build(args.metric, args)
        report = Report.for_data(plan, args)
        stream(args, plan, sinks=report.sinks())
        windows = report.windows["roc_auc"][0].windows
        assert {k: w.count for k, w in windows.items()} == {1704067200: 2, 1704070800: 1}, name
    path = tmp_path / "nat.parquet"
    pd.DataFrame({"y": [1, 0], "s": [0.9, 0.2], "t": [stamps[0], pd.NaT]}).to_parquet(path)
    status = main(["report", str(path), *AUC, "--window", "1h", "--time", "t", "-o", "x.html"])
    assert status == 1
    assert "nat.parquet:2: column 't': missing time" in _one_line(capsys.readouterr().err)


def test_a_failed_run_closes_the_file(capsys, tmp_path) -> None:
    path = tmp_path / "mix.csv"
    path.write_text("y,p\n1,1\n0,1\n1,x\n0,0\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        status = main(["eval", str(path), "--metric", "accuracy", "--y-true", "y", "--y-pred", "p",
                       "--batch-size", "2"])  # fmt: skip
        gc.collect()
    assert status == 1
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], caught


def test_a_reader_that_leaves_ends_the_run_quietly(capsys, monkeypatch, tmp_path) -> None:
    # `streammetrics eval log.csv | head -1`: printing to a closed pipe raised BrokenPipeError,
    # reported as "error: [Errno 32] Broken pipe". It now ends quietly (status 1, no message).
    data = tmp_path / "log.csv"
    data.write_text("y,p\n1,1\n0,1\n")

    class Closed(io.StringIO):
        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Closed())
    status = main(["eval", str(data), "--metric", "accuracy", "--y-true", "y", "--y-pred", "p"])
    assert status == 1
    assert capsys.readouterr().err == ""


ACC = ["--metric", "accuracy", "--y-true", "y", "--y-pred", "p", "--json"]


@pytest.mark.parametrize("batch", ["1", "2", "1000"])
def test_json_numbers_read_as_text_keep_their_own_text_in_any_chunk(
    capsys, monkeypatch, tmp_path, batch
) -> None:
    # numpy made the 7 beside a 7.5 the label "7.0": accuracy 0.0 in one chunk, 0.5 row by row.
    path = tmp_path / "log.jsonl"
    path.write_text('{"y":7,"p":7}\n{"y":7.5,"p":7}\n{"y":true,"p":"True"}\n')
    status, out, err = _run(
        capsys, monkeypatch, "eval", str(path), *ACC, "--labels-as-text", "--batch-size", batch
    )
    assert status == 0, err
    assert json.loads(out)["metrics"]["accuracy"] == pytest.approx(2 / 3)


@pytest.mark.parametrize("batch", ["1", "1000"])
def test_json_true_beside_1_reads_alike_in_any_chunk(capsys, monkeypatch, tmp_path, batch) -> None:
    # A label true is the label 1 to the metrics, one row at a time or beside a 1 in a chunk.
    path = tmp_path / "log.jsonl"
    path.write_text('{"y":true,"p":1}\n{"y":1,"p":1}\n{"y":false,"p":1}\n')
    status, out, err = _run(capsys, monkeypatch, "eval", str(path), *ACC, "--batch-size", batch)
    assert status == 0, err
    assert json.loads(out)["metrics"]["accuracy"] == pytest.approx(2 / 3)


def test_boolean_columns_read_alike_from_a_file_and_stdin(capsys, monkeypatch, tmp_path) -> None:
    # From a file pandas gave booleans, which --by refused as slice keys, while standard input
    # read the text True/False. Booleans are labels (for AUC, F1) and text as keys, everywhere.
    from sklearn.metrics import f1_score, roc_auc_score

    data = (
        b"y,s,p,g\nTrue,0.9,True,a\nFalse,0.2,False,b\nTrue,0.4,False,True\nFalse,0.6,True,False\n"
    )
    y, s, p = [True, False, True, False], [0.9, 0.2, 0.4, 0.6], [True, False, False, True]
    scores = ["--metric", "roc_auc", "--metric", "f1", "--y-true", "y", "--y-score", "s",
              "--y-pred", "p", "--json"]  # fmt: skip
    results = _both(capsys, monkeypatch, tmp_path, data, *scores)
    assert results[0] == results[1] and results[0][0] == 0, results[0][2]
    got = json.loads(results[0][1])["metrics"]
    assert got == {"roc_auc": roc_auc_score(y, s), "f1": f1_score(y, p)}
    by = ["--metric", "accuracy", "--y-true", "y", "--y-pred", "p", "--by", "g", "--json"]
    results = _both(capsys, monkeypatch, tmp_path, data, *by)
    assert results[0] == results[1] and results[0][0] == 0, results[0][2]
    assert set(json.loads(results[0][1])["metrics"]["accuracy"]) == {"a", "b", "True", "False"}
    for path in ("log.parquet", "log.jsonl"):
        frame = {"y": y, "s": s, "p": p}
        if path.endswith("parquet"):
            import pandas as pd

            pd.DataFrame(frame).to_parquet(tmp_path / path)
        else:
            rows = [dict(zip(frame, r, strict=True)) for r in zip(*frame.values(), strict=True)]
            (tmp_path / path).write_text("".join(json.dumps(r) + "\n" for r in rows))
        status, out, err = _run(capsys, monkeypatch, "eval", str(tmp_path / path), *scores)
        assert status == 0, err
        assert json.loads(out)["metrics"] == got


def test_a_list_in_a_label_column_is_a_one_line_error(capsys, monkeypatch, tmp_path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text('{"y":1,"p":1}\n{"y":0,"p":[1,2]}\n{"y":0,"p":[1]}\n')
    status, _, err = _run(capsys, monkeypatch, "eval", str(path), *ACC)
    assert status != 0
    assert _one_line(err).endswith("log.jsonl:2: column 'p': a list is not a label")


RANK = ["--metric", "ndcg@3", "--metric", "mrr", "--query", "q", "--y-true", "y", "--y-score", "s"]


@pytest.mark.parametrize("batch", ["1", "7", "1000"])
def test_queries_grouped_scores_each_query_as_it_ends(capsys, monkeypatch, tmp_path, batch) -> None:
    # Without the option every row stays buffered (the command cannot know a query ended):
    # 665 MB at 3M rows; with it only the chunk's last query waits for the next chunk.
    import numpy as np

    from streammetrics.ranking import NDCG

    rng = np.random.default_rng(3)
    q = np.sort(rng.integers(0, 40, 400))
    y, s = rng.integers(0, 3, 400), rng.random(400)
    path = tmp_path / "log.csv"
    path.write_text(
        "q,y,s\n"
        + "".join(
            f"{a},{b},{c!r}\n" for a, b, c in zip(q.tolist(), y.tolist(), s.tolist(), strict=True)
        )
    )
    state = tmp_path / "state.bin"
    args = ["eval", str(path), *RANK, "--json", "--batch-size", batch, "--save", str(state)]
    status, grouped, err = _run(capsys, monkeypatch, *args, "--queries-grouped")
    assert status == 0, err
    status, buffered, err = _run(capsys, monkeypatch, *args)
    assert status == 0, err
    got, want = json.loads(grouped)["metrics"], json.loads(buffered)["metrics"]
    assert got == pytest.approx(want, rel=1e-12)
    ndcg = NDCG(k=3).update(q, y, s, complete=True).compute()
    assert got["ndcg@3"] == pytest.approx(ndcg, rel=1e-12)
    # Ungrouped rows under the option: refused at the chunk that brings a query back.
    path.write_text("q,y,s\n1,1,0.5\n2,0,0.4\n1,0,0.3\n")
    for size in ("1", "1000"):
        status, _, err = _run(
            capsys, monkeypatch, "eval", str(path), *RANK, "--queries-grouped", "--batch-size", size
        )
        assert status == 1
        assert "the rows of query 1 are not together" in _one_line(err)
    # ... also with rolling reports: a query whose held-back rows went in before one, and
    # that came back after another, was taken without the error (0.8.10).
    path.write_text("q,y,s\n1,1,0.9\n1,0,0.8\n2,1,0.3\n2,0,0.2\n1,0,0.95\n")
    for every in ("1", "2", "3"):
        status, _, err = _run(
            capsys, monkeypatch, "eval", str(path), *RANK, "--queries-grouped", "--every", every
        )
        assert status == 1
        assert "the rows of query 1 are not together" in err.strip().splitlines()[-1]


def test_score_type_reaches_the_score_sketches(capsys, monkeypatch, tmp_path) -> None:
    # Logit scores were refused with 'pass score_type="logit"', an option the command lacked.
    from sklearn.metrics import roc_auc_score

    path = tmp_path / "log.csv"
    y, s = [1, 0, 1, 0, 1], [2.5, -1.0, 0.3, 0.2, -3.0]
    path.write_text("y,s\n" + "".join(f"{a},{b}\n" for a, b in zip(y, s, strict=True)))
    status, _, err = _run(capsys, monkeypatch, "eval", str(path), *AUC)
    assert status == 1 and "--score-type logit" in _one_line(err)
    for kind in ("logit", "real"):
        status, out, err = _run(
            capsys, monkeypatch, "eval", str(path), *AUC, "--score-type", kind, "--json"
        )
        assert status == 0, err
        assert json.loads(out)["metrics"]["roc_auc"] == pytest.approx(roc_auc_score(y, s))
    status, _, err = _run(
        capsys, monkeypatch, "eval", str(path), "--metric", "log_loss", "--y-true", "y",
        "--y-score", "s", "--score-type", "logit",
    )  # fmt: skip
    assert status == 1 and "none of the metrics takes a score type" in _one_line(err)


def test_times_with_utc_offsets_are_seconds_since_the_epoch_without_a_warning() -> None:
    # numpy converts ISO times with offsets to UTC but printed a UserWarning on stderr.
    import numpy as np

    from streammetrics.cli.columns import convert
    from streammetrics.cli.sources import Source

    times = np.array(["2026-01-01T00:00:00+02:00", "2026-01-01T00:30:00Z"], dtype=object)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = convert({"t": times}, {"t": "time"}, Source("log.csv", "csv"), 0)["t"]
    assert got.tolist() == [1767218400.0, 1767227400.0]  # 2025-12-31T22:00Z, 2026-01-01T00:30Z


@pytest.mark.parametrize("batch", ["3", "4", "6", "100"])
def test_an_error_in_rows_held_back_names_their_lines(capsys, monkeypatch, tmp_path, batch):
    # --queries-grouped holds a chunk's last query back; its bad row was reported at the lines
    # of the next chunk only ("rows at lines 6-9" for a row at line 5).
    import re

    path = tmp_path / "log.csv"
    path.write_text("q,y,s\n1,1,0.5\n1,0,0.4\n2,1,0.3\n2,-1,0.2\n3,1,0.1\n3,0,0.9\n4,1,0.3\n")
    args = ["--metric", "ndcg", "--query", "q", "--y-true", "y", "--y-score", "s"]
    status, _, err = _run(
        capsys, monkeypatch, "eval", str(path), *args, "--queries-grouped", "--batch-size", batch
    )
    assert status == 1
    first, last = map(int, re.search(r"rows at lines (\d+)-(\d+)", _one_line(err)).groups())
    assert first <= 5 <= last


BY_G = ["--metric", "accuracy", "--y-true", "y", "--y-pred", "p", "--by", "g", "--json"]


@pytest.mark.parametrize("other", ["1_2", "\u0661\u0662"])  # an underscore; Arabic-Indic 12
def test_digit_like_text_keys_are_not_read_as_integers(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, other: str
) -> None:
    # 0.8.10 read "1_2" and "١٢" as 12 (Python's int() rules), so two slices (or groups)
    # became one: accuracy 0.5 for the slices 1.0 and 0.0. Beside the integer 12 they are
    # text beside a number: refused, from a file and standard input alike; as text, two.
    data = f"g,y,p\n{other},1,1\n{other},0,0\n12,1,0\n12,0,1\n".encode()
    for status, _, err in _both(capsys, monkeypatch, tmp_path, data, *BY_G):
        assert status == 1 and "is text, but '12'" in _one_line(err)
    for status, out, _ in _both(capsys, monkeypatch, tmp_path, data, *BY_G, "--labels-as-text"):
        assert status == 0
        assert json.loads(out)["metrics"]["accuracy"] == {other: 1.0, "12": 0.0}


def test_booleans_are_not_scores(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # pandas' parser reads a chunk of TRUE/FALSE as booleans, which 0.8.10 took as 1 and 0
    # (roc_auc 0.75) where standard input refused the same bytes.
    data = b"y,s\n1,TRUE\n0,FALSE\n1,FALSE\n"
    for status, _, err in _both(capsys, monkeypatch, tmp_path, data, *AUC):
        assert status == 1 and "is not a number" in _one_line(err)
    path = tmp_path / "log.jsonl"
    path.write_text('{"y": 1, "s": true}\n{"y": 0, "s": 0.5}\n')
    status, _, err = _run(capsys, monkeypatch, "eval", str(path), *AUC)
    assert status == 1 and "True is not a number" in _one_line(err)


def test_boolean_keys_read_alike_from_a_file_and_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    data = b"k,y,p\ntrue,1,1\nfalse,0,1\nTRUE,1,0\n"
    args = ["--metric", "accuracy", "--y-true", "y", "--y-pred", "p", "--by", "k", "--json"]
    outs = [
        json.loads(out)["metrics"]
        for _, out, _ in _both(capsys, monkeypatch, tmp_path, data, *args)
    ]
    assert outs[0] == outs[1] == {"accuracy": {"False": 0.0, "True": 0.5}}


def test_long_fields_twice_named_columns_and_pipes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A field over 128 KiB (the csv module's default limit) failed standard input, and a file
    # whose first record held it; a column named twice was taken silently (the first from a
    # file, or pandas' "a.1"); a pipe given as a path was read three times.
    long = '"' + "w " * 100_000 + '"'
    data = f"blob,y,s\n{long},1,0.9\n0,0,0.1\n".encode()
    for status, out, _ in _both(capsys, monkeypatch, tmp_path, data, *AUC, "--json"):
        assert status == 0 and json.loads(out)["metrics"]["roc_auc"] == 1.0
    data = b"y,y,s\n1,0,0.9\n0,1,0.1\n"
    for status, _, err in _both(capsys, monkeypatch, tmp_path, data, *AUC):
        assert status == 1 and "named twice" in _one_line(err)
    status, _, err = _run(
        capsys,
        monkeypatch,
        "eval",
        str(tmp_path / "log.csv"),
        "--metric",
        "roc_auc",
        "--y-true",
        "y.1",
        "--y-score",
        "s",
    )
    assert status == 1 and "no column 'y.1'" in _one_line(err)
    if sys.platform != "win32":
        import os

        fifo = tmp_path / "pipe.csv"
        os.mkfifo(fifo)
        import threading

        def write() -> None:
            with open(fifo, "wb") as fh:
                fh.write(b"y,s\n1,0.9\n0,0.5\n1,0.2\n")

        writer = threading.Thread(target=write)
        writer.start()
        status, out, err = _run(capsys, monkeypatch, "eval", str(fifo), *AUC, "--json")
        writer.join(timeout=30)
        assert status == 0, err
        assert json.loads(out)["metrics"]["roc_auc"] == 0.5


def test_old_mac_line_endings_are_named(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The csv module's advice ("open the file in universal-newline mode") meant nothing to a
    # command-line user.
    for status, _, err in _both(capsys, monkeypatch, tmp_path, b"y,s\r1,0.5\r0,0.2\r", *AUC):
        assert status == 1 and "lone carriage return" in _one_line(err)


@pytest.mark.parametrize(
    ("record", "says"),
    [
        (b'{"y": 1, "p": [1]}', "column 'p': a list is not a label"),
        (b'{"y": 1, "p": {"a": 1}}', "column 'p': an object is not a label"),
        (b'{"y": 99999999999999999999999, "p": 1}', "column 'y': the integer 9999"),
    ],
)
def test_json_values_that_are_no_label_are_named_at_their_line(
    capsys, monkeypatch, tmp_path, record, says
) -> None:
    # 0.8.12 read a chunk of lists as a 2-D column ("y_pred: expected a 1-D array") and an
    # integer beyond int64 as the float 1e+23, blamed on the whole chunk.
    path = tmp_path / "log.jsonl"
    for batch in ("1", "10"):
        path.write_bytes(b'{"y": 1, "p": 1}\n' + record + b"\n")
        status, _, err = _run(capsys, monkeypatch, "eval", str(path), "--metric", "accuracy",
                              "--y-true", "y", "--y-pred", "p", "--batch-size", batch)  # fmt: skip
        assert status == 1
        assert _one_line(err).startswith(f"streammetrics: error: {path}:2: {says}")
    path.write_bytes(record + b"\n")  # the record alone in its chunk
    status, _, err = _run(capsys, monkeypatch, "eval", str(path), "--metric", "accuracy",
                          "--y-true", "y", "--y-pred", "p")  # fmt: skip
    assert status == 1 and f"{path}:1: {says}" in _one_line(err)


def test_integers_beyond_int64_read_alike_from_a_file_and_stdin(
    capsys, monkeypatch, tmp_path
) -> None:
    # Standard input read them as floats (0.8.12): a uint64 slice key was refused as a float
    # key, where the same file read by pandas kept it; a larger label was blamed on the chunk.
    data = b"y,p,g\n1,1,1\n1,1,10000000000000000000\n"
    outs = _both(capsys, monkeypatch, tmp_path, data, "--metric", "accuracy", "--y-true", "y",
                 "--y-pred", "p", "--by", "g", "--json")  # fmt: skip
    assert [json.loads(o)["metrics"]["accuracy"] for _, o, _ in outs] == [
        {"1": 1.0, "10000000000000000000": 1.0}
    ] * 2
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"y": 1, "p": 1, "g": 1}\n{"y": 1, "p": 1, "g": 10000000000000000000}\n')
    status, out, _ = _run(capsys, monkeypatch, "eval", str(path), "--metric", "accuracy",
                          "--y-true", "y", "--y-pred", "p", "--by", "g", "--json")  # fmt: skip
    assert json.loads(out)["metrics"]["accuracy"] == {"1": 1.0, "10000000000000000000": 1.0}
    data = b"y,p\n1,1\n99999999999999999999999,1\n"
    for (status, _, err), where in zip(
        _both(capsys, monkeypatch, tmp_path, data, *LABELS),
        ("log.csv", "<stdin>"),
        strict=True,
    ):
        assert status == 1
        assert f"{where}:3: column 'y': the integer 99999999999999999999999 lies beyond" in err


def test_a_json_integer_past_float64_in_a_number_column_is_named_at_its_line(
    capsys, monkeypatch, tmp_path
) -> None:
    # 0.8.12 ended in a traceback (OverflowError: int too large to convert to float).
    path = tmp_path / "log.jsonl"
    path.write_text('{"y": 1, "s": 0.5}\n{"y": 0, "s": 1' + "0" * 400 + "}\n")
    status, _, err = _run(capsys, monkeypatch, "eval", str(path), *AUC)
    assert status == 1
    assert _one_line(err) == (
        f"streammetrics: error: {path}:2: column 's': an integer of 401 digits lies beyond float64"
    )


@pytest.mark.parametrize("batch", ["1", "2", "100000"])
def test_a_csv_number_past_float64_or_inf_is_named_as_written_in_any_chunking(
    capsys, monkeypatch, tmp_path, batch
) -> None:
    # 0.8.13 worded a 401-digit score three ways by --batch-size: past float64 (a chunk of one
    # value), a non-finite '999...' (a chunk of text) or a non-finite inf (a chunk of floats).
    big = "9" * 401
    for written, told in ((big, "an integer of 401 digits lies beyond float64"),
                          ("-" + big, "an integer of 401 digits lies beyond float64"),
                          ("inf", "missing or non-finite value 'inf'"),
                          ("1e400", "missing or non-finite value '1e400'")):  # fmt: skip
        data = f"y,s\n1,0.5\n0,{written}\n1,0.25\n".encode()
        for (status, _, err), where in zip(
            _both(capsys, monkeypatch, tmp_path, data, *AUC, "--batch-size", batch),
            (tmp_path / "log.csv", "<stdin>"),
            strict=True,
        ):
            assert status == 1
            assert _one_line(err) == f"streammetrics: error: {where}:3: column 's': {told}"


@pytest.mark.parametrize("batch", ["1", "2", "100000"])
def test_an_archived_csv_number_past_float64_and_a_long_one_are_worded_alike_in_any_chunking(
    capsys, monkeypatch, tmp_path, batch
) -> None:
    # A zip is read by pandas alone: its field is read again through pandas (0.8.14's first
    # version said "non-finite value inf" there); a 401-digit decimal is shortened.
    import zipfile

    big = "9" * 401
    inner = tmp_path / "log.csv"
    inner.write_text(f"y,s\n1,0.5\n0,{big}\n1,0.25\n")
    archive = tmp_path / "log.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.write(inner, "log.csv")
    status, _, err = _run(capsys, monkeypatch, "eval", str(archive), *AUC, "--batch-size", batch)
    assert status == 1
    assert _one_line(err).endswith("column 's': an integer of 401 digits lies beyond float64")
    inner.write_text(f"y,s\n1,0.5\n0,{big}.0\n1,0.25\n")
    status, _, err = _run(capsys, monkeypatch, "eval", str(inner), *AUC, "--batch-size", batch)
    assert _one_line(err) == (
        f"streammetrics: error: {inner}:3: column 's': missing or non-finite value "
        f"'{'9' * 24}'...'999999.0' (403 characters)"
    )


@pytest.mark.parametrize("batch", ["1", "2", "100000"])
def test_negative_integers_beside_ones_past_int64_are_refused_in_any_chunking(
    capsys, monkeypatch, tmp_path, batch
) -> None:
    # The first version of the int64/uint64 rule decided per chunk: --batch-size 1 took a
    # column of -1 and 10**19 (one chunk int64, the next uint64), a larger batch refused it.
    keys = [5, -1, 7, 10**19, 3]
    csv = "y,p,g\n" + "".join(f"1,1,{k}\n" for k in keys)
    jsonl = "".join(json.dumps({"y": 1, "p": 1, "g": k}) + "\n" for k in keys)
    args = ["--metric", "accuracy", "--y-true", "y", "--y-pred", "p", "--by", "g",
            "--batch-size", batch]  # fmt: skip
    results = _both(capsys, monkeypatch, tmp_path, csv.encode(), *args)
    path = tmp_path / "log.jsonl"
    path.write_text(jsonl)
    results.append(_run(capsys, monkeypatch, "eval", str(path), *args))
    places = [(tmp_path / "log.csv", 5, 3), ("<stdin>", 5, 3), (path, 4, 2)]
    for (status, _, err), (where, line, before) in zip(results, places, strict=True):
        assert status == 1
        assert _one_line(err) == (
            f"streammetrics: error: {where}:{line}: column 'g': the integer "
            f"10000000000000000000 lies past int64 (2**63 - 1), and line {before} holds a "
            "negative one; no integer type holds both: read the column as text "
            "(--labels-as-text)"
        )


def test_an_integer_past_64_bits_is_refused_at_its_line(capsys, monkeypatch, tmp_path) -> None:
    data = b"y,p,g\n1,1,1\n1,1,-99999999999999999999\n"
    for (status, _, err), where in zip(
        _both(capsys, monkeypatch, tmp_path, data, *LABELS, "--by", "g"),
        ("log.csv", "<stdin>"),
        strict=True,
    ):
        assert status == 1
        assert (
            f"{where}:3: column 'g': the integer -99999999999999999999 lies beyond 64 bits" in err
        )


@pytest.mark.parametrize("batch", ["1", "2", "100"])
def test_the_later_of_a_negative_and_a_past_int64_integer_is_refused(
    capsys, monkeypatch, tmp_path, batch
) -> None:
    # The past-int64 integer first: within one chunk the first version blamed it (line 2),
    # across chunks the negative (line 4).
    data = b"y,p,k\n1,1,9223372036854775808\n1,1,5\n1,1,-1\n1,1,7\n"
    for (status, _, err), where in zip(
        _both(capsys, monkeypatch, tmp_path, data, *LABELS, "--by", "k", "--batch-size", batch),
        (tmp_path / "log.csv", "<stdin>"),
        strict=True,
    ):
        assert status == 1
        assert _one_line(err) == (
            f"streammetrics: error: {where}:4: column 'k': the integer -1 is negative, and line "
            "2 holds one past int64; no integer type holds both: read the column as text "
            "(--labels-as-text)"
        )


@pytest.mark.parametrize("suffix, mode", [(".tgz", "w:gz"), (".tar.gz", "w:gz"),
                                          (".tar.bz2", "w:bz2"), (".tar", "w")])  # fmt: skip
def test_a_csv_in_a_tar_archive_is_read_as_pandas_reads_it(
    capsys, monkeypatch, tmp_path, suffix, mode
) -> None:
    # 0.8.14 read a .tgz's gzip bytes as text (pandas infers tar from .tar.gz, not .tgz) and
    # a .tar.gz as gzip-compressed CSV (the tar header as the first line).
    import tarfile

    pytest.importorskip("pandas")
    inner = tmp_path / "log.csv"
    inner.write_text("y,s\n1,0.5\n0,0.25\n1,0.75\n0,0.5\n")
    archive = tmp_path / f"log{suffix}"
    with tarfile.open(archive, mode) as tar:
        tar.add(inner, "log.csv")
    status, plain, _ = _run(capsys, monkeypatch, "eval", str(inner), *AUC, "--json")
    assert status == 0
    status, packed, err = _run(capsys, monkeypatch, "eval", str(archive), *AUC, "--json")
    assert status == 0, err
    assert json.loads(packed) == json.loads(plain)


def test_booleans_in_any_case_and_pos_labels_read_alike_everywhere(
    capsys, monkeypatch, tmp_path
) -> None:
    """pandas 3 reads ``tRUE`` as a boolean: standard input knew three spellings, so a file and
    a pipe of the same bytes gave two labels or three, and ``--batch-size`` changed the answer
    beside integers. ``--pos-label True`` (any case) names the booleans, also where they sit
    beside integers (read as 1 and 0), and ``--pos-label 1.5`` a fractional label. Numbers
    refuse ``1_0`` (Python's float() reads 10) as labels do. A review found each."""
    import json

    data = b"y,p,k\ntRUE,tRUE,tRUE\nfalsE,tRUE,True\ntRUE,falsE,falsE\nFalse,False,False\n"
    outs = _both(capsys, monkeypatch, tmp_path, data, *LABELS, "--by", "k", "--json")
    for status, out, err in outs:
        assert status == 0, err
        assert json.loads(out)["metrics"]["accuracy"] == {"False": 0.5, "True": 0.5}
    mixed = b"y,s\nTrue,0.9\nFalse,0.2\n1,0.8\n0,0.3\ntrue,0.4\nFALSE,0.6\n"
    for batch in ("1", "3", "4", "100000"):
        for label, want in (("True", 8 / 9), ("TRUE", 8 / 9), ("1", 8 / 9), ("false", 1 / 9)):
            args = [*AUC, "--json", "--batch-size", batch, "--pos-label", label]
            for status, out, err in _both(capsys, monkeypatch, tmp_path, mixed, *args):
                assert status == 0, err
                assert json.loads(out)["metrics"]["roc_auc"] == pytest.approx(want)
    halves = b"y,s\n0.5,0.1\n1.5,0.9\n0.5,0.7\n1.5,0.6\n"
    args = [*AUC, "--json", "--pos-label", "1.5"]
    for status, out, err in _both(capsys, monkeypatch, tmp_path, halves, *args):
        assert status == 0, err
        assert json.loads(out)["metrics"]["roc_auc"] == pytest.approx(0.75)
    odd = "y,s\n1,0.9\n2,1_0\n3,\u0663\n".encode()
    mse = ["--metric", "mse", "--y-true", "y", "--y-pred", "s"]
    for status, _, err in _both(capsys, monkeypatch, tmp_path, odd, *mse):
        assert status == 1 and "'1_0' is not a number" in _one_line(err)
