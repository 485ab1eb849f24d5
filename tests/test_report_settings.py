"""The report's page under any matplotlibrc, its ids, and the reliability diagram's weights."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.cli import main

mpl = pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "predictions.csv"
BINARY = ["--y-true", "y_true", "--y-score", "y_score", "--y-pred", "y_pred"]
METRICS = ["--metric", "accuracy", "--metric", "roc_auc"]
#: What a matplotlibrc may say that broke the page: the heat map written to ".image0.png" in the
#: working folder, texts as <text> in a font the reader may lack, TeX needed to draw a label.
HOSTILE = {
    "svg.image_inline": False,
    "svg.fonttype": "none",
    "text.usetex": True,
    "savefig.bbox": "tight",
}


def report(capsys: pytest.CaptureFixture[str], out: Path, *args: str) -> str:
    status = main(["report", *args, "-o", str(out)])
    err = capsys.readouterr().err
    assert status == 0, err
    return out.read_text()


def _assert_self_contained(page: str) -> None:
    assert "No picture" not in page
    assert page.count("<figure>") == 4  # accuracy's matrix, ROC, PR, reliability diagram
    assert "<text" not in page  # glyphs as paths
    hrefs = re.findall(r'href="([^"]*)"', page)
    assert hrefs and all(h.startswith(("#", "data:image/png;base64,")) for h in hrefs)


def test_the_page_is_self_contained_whatever_the_matplotlibrc_in_the_working_folder(
    tmp_path,
) -> None:
    # A matplotlibrc in the working folder (read when matplotlib is imported: a new process)
    # made the heat map an <image> of ".image0.png", written beside it, and texts <text>.
    (tmp_path / "matplotlibrc").write_text(
        "".join(f"{k}: {v}\n" for k, v in HOSTILE.items() if k != "text.usetex")
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MATPLOTLIBRC", None)
    done = subprocess.run(
        [sys.executable, "-m", "streammetrics", "report", str(DATA), *METRICS, *BINARY,
         "-o", "page.html"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["matplotlibrc", "page.html"]
    _assert_self_contained((tmp_path / "page.html").read_text())


def test_the_page_pins_its_settings_and_leaves_the_user_s_alone(
    capsys, tmp_path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with mpl.rc_context(HOSTILE):
        before = dict(mpl.rcParams)
        page = report(capsys, tmp_path / "page.html", str(DATA), *METRICS, *BINARY)
        assert dict(mpl.rcParams) == before  # the report changed no setting of the process
        # plot() returns the user's figure: the user's settings apply there
        from streammetrics.plot import plot

        with mpl.rc_context({"text.usetex": False}):
            m = sm.ConfusionMatrix().update([0, 1, 1], [0, 1, 0])
            ax = plot(m)
            ax.figure.savefig(tmp_path / "mine.svg")
    assert "<text" in (tmp_path / "mine.svg").read_text()
    _assert_self_contained(page)
    names = {p.name for p in tmp_path.iterdir()} - {"page.html"}
    assert "mine.svg.image0.png" in names  # the user's svg.image_inline: False
    assert all(n.startswith("mine.svg") for n in names), names  # none of the page's


def test_the_same_log_writes_the_same_page(capsys, tmp_path) -> None:
    # The clip paths' ids were hashed with a random salt: every report differed.
    args = [str(DATA), *METRICS, *BINARY]
    pages = [report(capsys, tmp_path / f"{i}.html", *args) for i in range(2)]
    written = re.compile(r"rows, written [^<]*")
    assert written.sub("", pages[0]) == written.sub("", pages[1])


def _ids_and_references(svg: str) -> tuple[list[str], set[str]]:
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.S)  # the texts as written: no markup
    ids = re.findall(r'\sid="([^"]*)"', svg)
    refs = set(re.findall(r'href="#([^"]*)"', svg)) | set(re.findall(r"url\(#([^)]*)\)", svg))
    return ids, refs


def _assert_unique_and_resolved(svg: str) -> None:
    ids, refs = _ids_and_references(svg)
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    assert not repeated, repeated[:10]
    assert refs and refs <= set(ids), sorted(refs - set(ids))[:10]


def test_every_id_on_the_page_is_unique_and_every_reference_finds_it(capsys, tmp_path) -> None:
    # Every figure numbered xtick_1, text_1, the glyph DejaVuSans-30...; every bar of the
    # reliability diagram was id="accuracy", every slice's bar id="slices".
    page = report(
        capsys, tmp_path / "page.html", str(DATA), *METRICS, *BINARY, "--window", "20000",
        "--time", "ts",
    )  # fmt: skip
    assert "No picture" not in page and page.count("<figure>") == 6  # 2 over time
    _assert_unique_and_resolved(page)
    sliced = report(
        capsys, tmp_path / "sliced.html", str(DATA), *METRICS, *BINARY, "--by", "y_pred"
    )
    assert "No picture" not in sliced and sliced.count("<figure>") >= 4
    _assert_unique_and_resolved(sliced)


def _svg_of(ax) -> str:
    import io

    buf = io.StringIO()
    ax.figure.savefig(buf, format="svg")
    return buf.getvalue()


@pytest.mark.parametrize("which", ["calibration", "multiclass", "sliced"])
def test_every_id_of_one_picture_is_unique(which) -> None:
    from streammetrics.plot import plot

    rng = np.random.default_rng(0)
    if which == "calibration":
        p = rng.random(500)
        m = sm.CalibrationError(bins=10).update((rng.random(500) < p).astype(int), p)
    elif which == "multiclass":
        x = rng.dirichlet(np.ones(3), size=600)
        m = sm.MulticlassROCAUC(resolution=8).update(rng.integers(0, 3, 600), x)
    else:
        m = sm.Sliced(sm.Accuracy()).update(
            rng.integers(0, 2, 300), rng.integers(0, 2, 300), by=rng.choice(list("abcd"), 300)
        )
    _assert_unique_and_resolved(_svg_of(plot(m)))


def test_reliability_diagram_writes_weights_when_rows_were_weighted() -> None:
    from streammetrics.plot import plot

    y, p = [0, 1, 1, 0], [0.2, 0.9, 0.7, 0.6]
    weighted = sm.CalibrationError(bins=2).update(y, p, sample_weight=[0.25] * 4)
    ax = plot(weighted)
    assert ax.get_title() == "Reliability diagram (weight per bin above bars)"
    assert [t.get_text() for t in ax.texts] == ["0.25", "0.75"]
    # whole weights that do not total the rows: weights too
    ax = plot(sm.CalibrationError(bins=2).update(y, p, sample_weight=[2, 1, 1, 1]))
    assert "weight per bin" in ax.get_title()
    # rows of weight 0 count but weigh nothing
    ax = plot(sm.CalibrationError(bins=2).update(y, p, sample_weight=[1, 1, 1, 0]))
    assert "weight per bin" in ax.get_title()
    # unweighted rows (or weights of 1), merged or not: rows, written in full
    for m in (
        sm.CalibrationError(bins=2).update(y, p),
        sm.CalibrationError(bins=2).update(y, p, sample_weight=[1.0] * 4),
        sm.CalibrationError(bins=2).update(y, p).merge(sm.CalibrationError(bins=2).update(y, p)),
    ):
        ax = plot(m)
        assert ax.get_title() == "Reliability diagram (rows per bin above bars)"
        assert [t.get_text() for t in ax.texts] == [str(c * m.count // 4) for c in (1, 3)]
    many = sm.CalibrationError(bins=1).update(np.ones(1_234_567, np.int8), np.full(1_234_567, 0.9))
    assert [t.get_text() for t in plot(many).texts] == ["1234567"]  # not 1.23457e+06


def test_labels_under_parse_math_false_are_drawn_as_written() -> None:
    from streammetrics.plot import plot

    m = sm.ConfusionMatrix().update(["$5", "a"], ["$5", "a"])
    with mpl.rc_context({"text.parse_math": False}):
        ax = plot(m)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["$5", "a"]
