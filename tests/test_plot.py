"""streammetrics.plot: the data drawn equals the metric's data (curves, bins, matrix, series)."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import streammetrics as sm
from streammetrics.errors import InputError
from streammetrics.plot import band_boxes, plot
from streammetrics.windows import SlidingWindow, TumblingWindows


def _data(n=5000, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = 1 / (1 + np.exp(-(rng.normal(size=n) + 1.2 * y)))
    return y, s


def _line(ax, gid):
    (line,) = [ln for ln in ax.get_lines() if ln.get_gid() == gid]
    return line


def _band(ax):
    return band_boxes(ax)


@pytest.mark.parametrize("exact", [True, False])
def test_roc_curve_points_equal_the_metric_curve(exact):
    y, s = _data()
    m = sm.ROCCurve(exact=exact).update(y, s)
    ax = plot(m)
    fpr, tpr, _ = m.compute()
    line = _line(ax, "curve")
    np.testing.assert_array_equal(line.get_xdata(), fpr)
    np.testing.assert_array_equal(line.get_ydata(), tpr)
    assert bool(len(_band(ax))) is not exact


def test_roc_auc_curve_is_the_full_curve_and_legend_holds_the_value():
    y, s = _data()
    parts = [sm.ROCAUC().update(y[i::3], s[i::3]) for i in range(3)]
    m = parts[0].merge(parts[1]).merge(parts[2])
    ax = plot(sm.loads(m.to_bytes()))
    fpr, tpr, _ = sm.ROCCurve(drop_intermediate=False).update(y, s).compute()
    line = _line(ax, "curve")
    np.testing.assert_allclose(line.get_xdata(), fpr)
    np.testing.assert_allclose(line.get_ydata(), tpr)
    label = line.get_label()
    assert f"{m.compute():.4f}" in label and "±" in label
    # one rectangle per bucket holding more than one distinct score; each spans its two points
    band = _band(ax)
    uncertain = int((m.hist.hi > m.hist.lo).sum())
    assert len(band) == uncertain > 0
    for x0, x1, y0, y1 in band:
        i = np.flatnonzero(np.isclose(fpr, x0) & np.isclose(tpr, y0))
        assert len(i) and np.isclose(fpr[i[-1] + 1], x1) and np.isclose(tpr[i[-1] + 1], y1)


def test_sketched_roc_band_contains_the_exact_curve():
    y, s = _data(3000, seed=4)
    ax = plot(sm.ROCAUC(resolution=8).update(y, s))
    band = _band(ax)
    fpr, tpr, _ = sm.ROCCurve(exact=True, drop_intermediate=False).update(y, s).compute()
    sketch = _line(ax, "curve")
    inside = np.zeros(len(fpr), dtype=bool)
    for x0, x1, y0, y1 in band:
        inside |= (
            (fpr >= x0 - 1e-12) & (fpr <= x1 + 1e-12) & (tpr >= y0 - 1e-12) & (tpr <= y1 + 1e-12)
        )
    # every exact point lies in a rectangle, or on the sketch's points (single-score buckets)
    points = set(
        zip(np.round(sketch.get_xdata(), 12), np.round(sketch.get_ydata(), 12), strict=True)
    )
    on_line = np.array(
        [(a, b) in points for a, b in zip(np.round(fpr, 12), np.round(tpr, 12), strict=True)]
    )
    assert (inside | on_line).all()


@pytest.mark.parametrize("exact", [True, False])
def test_pr_curve_points_equal_the_metric_curve(exact):
    y, s = _data()
    m = sm.PRCurve(exact=exact).update(y, s)
    ax = plot(m)
    p, r, _ = m.compute()
    line = _line(ax, "curve")
    np.testing.assert_array_equal(line.get_xdata(), r)
    np.testing.assert_array_equal(line.get_ydata(), p)


def test_average_precision_curve_and_band():
    y, s = _data()
    m = sm.AveragePrecision().update(y, s)
    ax = plot(m)
    p, r, _ = sm.PRCurve().update(y, s).compute()
    line = _line(ax, "curve")
    # same points as the curve metric, in the other direction, from (recall 0, precision 1)
    np.testing.assert_allclose(line.get_xdata()[1:], r[::-1][1:])
    np.testing.assert_allclose(line.get_ydata()[1:], p[::-1][1:])
    assert f"{m.compute():.4f}" in line.get_label()
    band = _band(ax)
    assert len(band) == int((m.hist.hi > m.hist.lo).sum()) > 0
    for x0, x1, y0, y1 in band:
        assert 0 <= y0 <= y1 <= 1 and 0 <= x0 <= x1 <= 1


def test_multiclass_one_curve_per_class():
    rng = np.random.default_rng(1)
    x = rng.dirichlet(np.ones(3), size=600)
    y = rng.integers(0, 3, 600)
    m = sm.MulticlassROCAUC(exact=True, labels=["a", "b", "c"]).update(np.array(list("abc"))[y], x)
    ax = plot(m)
    for j, name in enumerate("abc"):
        fpr, tpr, _ = (
            sm.ROCCurve(exact=True, drop_intermediate=False)
            .update((y == j).astype(int), x[:, j])
            .compute()
        )
        line = _line(ax, f"curve-{j}")
        np.testing.assert_allclose(line.get_xdata(), fpr)
        np.testing.assert_allclose(line.get_ydata(), tpr)
        assert line.get_label().startswith(f"class {name}")


def test_reliability_diagram_bins_and_counts():
    y, s = _data(2000)
    m = sm.CalibrationError(bins=10).update(y, s)
    ax = plot(m)
    edges = np.linspace(0, 1, 11)
    b = np.clip(np.searchsorted(edges[1:-1], s), 0, 9)
    counts = np.bincount(b, minlength=10)
    acc = np.bincount(b, weights=y, minlength=10)
    keep = counts > 0
    heights = [p.get_height() for p in ax.patches]
    np.testing.assert_allclose(heights, acc[keep] / counts[keep])
    texts = [t.get_text() for t in ax.texts]
    assert texts == [str(c) for c in counts[keep]]
    conf = _line(ax, "confidence")
    conf_mean = np.bincount(b, weights=s, minlength=10)[keep] / counts[keep]
    np.testing.assert_allclose(conf.get_xdata(), conf_mean)


@pytest.mark.parametrize("normalize", [False, True])
def test_confusion_heat_map_array_equals_the_matrix(normalize):
    y = ["cat", "dog", "dog", "bird", "cat", "dog"]
    p = ["cat", "cat", "dog", "bird", "dog", "dog"]
    m = sm.ConfusionMatrix().update(y, p)
    ax = plot(m, normalize=normalize)
    (image,) = ax.get_images()
    expected = m.compute().astype(float)
    if normalize:
        expected = expected / expected.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(np.asarray(image.get_array()), expected)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["bird", "cat", "dog"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["bird", "cat", "dog"]


@pytest.mark.parametrize("own", [None, "true", "pred", "all"])
def test_normalised_heat_map_is_scikit_learns_whatever_the_metrics_own_normalize(own):
    # normalize=True divides the counts' rows; 0.8.18 divided compute()'s, which under
    # ConfusionMatrix(normalize="pred") were already columns divided by their totals.
    skm = pytest.importorskip("sklearn.metrics")
    yt = ["cat"] * 3 + ["dog"] * 5
    yp = ["cat", "cat", "dog", "cat", "dog", "dog", "dog", "dog"]
    m = sm.ConfusionMatrix(normalize=own).update(yt, yp)
    (image,) = plot(m, normalize=True).get_images()
    want = skm.confusion_matrix(yt, yp, normalize="true")
    np.testing.assert_allclose(np.asarray(image.get_array()), want, rtol=1e-15)
    (image,) = plot(m).get_images()  # without it, the metric's own value
    np.testing.assert_allclose(np.asarray(image.get_array()), m.compute(), rtol=1e-15)


def test_tumbling_windows_series_equals_compute():
    w = TumblingWindows(sm.Accuracy(), width=10)
    rng = np.random.default_rng(2)
    t = rng.uniform(0, 100, 500)
    y, p = rng.integers(0, 2, 500), rng.integers(0, 2, 500)
    w.update(y, p, timestamps=t)
    ax = plot(w)
    line = _line(ax, "series")
    values = w.compute()
    assert line.get_xdata().tolist() == list(values)
    np.testing.assert_allclose(line.get_ydata(), list(values.values()))


def test_sliding_window_series_per_slot():
    w = SlidingWindow(sm.MeanAbsoluteError(), width=60, slots=6)
    w.update([1.0, 2.0, 3.0, 4.0], [1.5, 2.0, 2.0, 5.0], timestamps=[0, 15, 25, 55])
    ax = plot(w)
    line = _line(ax, "series")
    assert line.get_xdata().tolist() == [0, 10, 20, 50]
    np.testing.assert_allclose(line.get_ydata(), [0.5, 0.0, 1.0, 1.0])


def test_draws_on_a_given_axes_and_refuses_unknown_metrics():
    from matplotlib.figure import Figure

    ax = Figure().add_subplot()
    y, s = _data(100)
    assert plot(sm.ROCAUC().update(y, s), ax=ax) is ax
    with pytest.raises(InputError, match="metric"):
        plot(sm.MeanAbsoluteError().update([1.0], [2.0]))


def test_missing_matplotlib_names_the_extra(monkeypatch):
    import builtins

    real = builtins.__import__

    def fake(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(ImportError, match=r"streammetrics\[plot\]"):
        plot(sm.ROCAUC())


def test_example_script_writes_two_pictures(tmp_path):
    import importlib.util
    from pathlib import Path

    from matplotlib.image import imread

    path = Path(__file__).resolve().parents[1] / "examples" / "make_plots.py"
    spec = importlib.util.spec_from_file_location("make_plots", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    written = module.main(tmp_path)
    assert [p.name for p in written] == ["curves.png", "over_time.png"]
    for p in written:
        image = imread(p)
        assert image.shape[0] > 200 and (image[..., :3] < 0.5).any()


def test_sketched_pr_band_contains_the_exact_curve():
    y, s = _data(3000, seed=5)
    ax = plot(sm.AveragePrecision(resolution=8).update(y, s))
    band = _band(ax)
    p, r, _ = sm.PRCurve(exact=True).update(y, s).compute()
    sketch = _line(ax, "curve")
    inside = np.zeros(len(p), dtype=bool)
    for x0, x1, y0, y1 in band:
        inside |= (r >= x0 - 1e-12) & (r <= x1 + 1e-12) & (p >= y0 - 1e-12) & (p <= y1 + 1e-12)
    pts = set(zip(np.round(sketch.get_xdata(), 12), np.round(sketch.get_ydata(), 12), strict=True))
    on_line = np.array(
        [(a, b) in pts for a, b in zip(np.round(r, 12), np.round(p, 12), strict=True)]
    )
    assert (inside | on_line).mean() == 1.0


def test_empty_metrics_draw_without_warnings():
    import warnings

    empty = [
        sm.ROCAUC(),
        sm.ROCCurve(),
        sm.PRCurve(),
        sm.AveragePrecision(),
        sm.MulticlassROCAUC(),
        sm.CalibrationError(),
        sm.ConfusionMatrix(),
        TumblingWindows(sm.Accuracy(), width=5),
        SlidingWindow(sm.Accuracy(), width=5),
        sm.ROCAUC().update([1, 1], [0.2, 0.3]),  # one class only: nan rates
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for m in empty:
            assert plot(m) is not None


@pytest.mark.parametrize(
    "make",
    [
        lambda: TumblingWindows(sm.CalibrationError(), width=50),
        lambda: sm.Sliced(sm.CalibrationError()),
        lambda: sm.Sliced(sm.NormalizedMutualInfo()),
    ],
)
def test_windows_and_slices_of_metrics_without_intervals_draw_their_values(make):
    """A metric with no closed-form interval (``NoIntervalError``) is drawn without its band
    or error bars, as docs/plots.md says (only where a metric has ``interval``)."""
    rng = np.random.default_rng(0)
    y, p = rng.integers(0, 2, 100), rng.random(100)
    metric = make()
    if isinstance(metric, TumblingWindows):
        metric.update(y, p, timestamps=np.arange(100))
        values = list(metric.compute().values())
        ax = plot(metric)
        np.testing.assert_allclose(_line(ax, "series").get_ydata(), values)
        assert ax.get_legend() is None  # no interval band
    else:
        second = p if isinstance(metric._template, sm.CalibrationError) else p > 0.5
        metric.update(y, second, by=rng.choice(["a", "b"], 100))
        ax = plot(metric)
        (bars,) = ax.containers
        widths = sorted(b.get_width() for b in bars)
        assert widths == pytest.approx(sorted(metric.compute().values()))
        assert ax.get_xlabel() == "value"


def _bar_container(ax):
    from matplotlib.container import BarContainer

    (bars,) = [c for c in ax.containers if isinstance(c, BarContainer)]
    return bars


def test_many_slices_draw_the_lowest_and_highest_values_within_max_bars():
    """5,000 slices drew 5,000 bars and names: 28 s of text layout in a report, unreadable
    (review of 0.8.9). Past ``max_bars`` the chart keeps the lowest and highest half; the
    figure grows a fifth of an inch per bar; ``None`` draws all; bad values are refused."""
    rng = np.random.default_rng(3)
    n = 20_000
    y, s = rng.integers(0, 2, n), rng.random(n)
    keys = rng.integers(0, 500, n)
    m = sm.Sliced(sm.ROCAUC()).update(y, np.clip(s + 0.2 * y, 0, 1), by=keys)
    values = m.compute()
    finite = sorted(v for v in values.values() if np.isfinite(v))
    ax = plot(m)
    widths = [b.get_width() for b in _bar_container(ax)]
    assert len(widths) == 40
    assert widths[:20] == pytest.approx(finite[:20]) and widths[20:] == pytest.approx(finite[-20:])
    assert "20 lowest, 20 highest of 500 slices" in ax.get_title()
    assert ax.figure.get_size_inches()[1] == pytest.approx(1.2 + 0.2 * 40)
    assert len(_bar_container(plot(m, max_bars=7))) == 7
    assert len(_bar_container(plot(m, max_bars=None))) == len(values)
    few = sm.Sliced(sm.Accuracy()).update([1, 0, 1], [1, 1, 1], by=["a", "b", "c"])
    assert len(_bar_container(plot(few))) == 3 and plot(few).get_title() == "Accuracy by slice"
    for bad in (1, 0, 2.5, True, "40"):
        with pytest.raises(sm.InputError, match="max_bars"):
            plot(m, max_bars=bad)


def test_large_label_sets_draw_readable_axes():
    """A confusion matrix of 300 labels names about 20 of them on each axis (not 300), and a
    multiclass ROC of 50 classes draws the 5 lowest AUCs in colour, the others in grey."""
    rng = np.random.default_rng(4)
    n, k = 30_000, 300
    yt = rng.integers(0, k, n)
    cm = sm.ConfusionMatrix().update(yt, np.where(rng.random(n) < 0.7, yt, rng.integers(0, k, n)))
    ax = plot(cm)
    assert 10 <= len(ax.get_xticks()) <= 20 and len(ax.get_yticks()) == len(ax.get_xticks())
    k = 50
    scores = rng.random((n, k))
    scores /= scores.sum(axis=1, keepdims=True)
    labels = rng.integers(0, k, n)
    ax = plot(sm.MulticlassROCAUC().update(labels, scores))
    legend = [t.get_text() for t in ax.get_legend().get_texts() if t.get_text().startswith("class")]
    one_vs_rest = [sm.ROCAUC().update(labels == j, scores[:, j]).compute() for j in range(k)]
    lowest = sorted(range(k), key=lambda j: one_vs_rest[j])[:5]
    assert legend == [f"class {j}: AUC = {one_vs_rest[j]:.4f}" for j in lowest]
    assert "5 lowest of 50" in ax.get_title()
    assert len([ln for ln in ax.get_lines() if (ln.get_gid() or "").startswith("curve-")]) == 50


def test_sliding_window_of_slots_that_do_not_divide_the_width_draws_its_band():
    # width 10 over 3 slots: slot starts are Fractions, which matplotlib's band refused
    # (TypeError in 0.8.14, for every metric with an interval)
    w = SlidingWindow(sm.Accuracy(), width=10, slots=3)
    w.update([1, 0, 1, 1], [1, 1, 1, 0], timestamps=[0, 4, 7, 8])
    ax = plot(w)
    line = _line(ax, "series")
    np.testing.assert_allclose(line.get_xdata(), [0, 10 / 3, 20 / 3])
    np.testing.assert_allclose(line.get_ydata(), [1.0, 0.0, 0.5])
    assert len(ax.collections) == 1  # the interval band


def test_reliability_diagram_names_what_its_bars_are():
    binary = plot(sm.CalibrationError(bins=10).update([0] * 10, [0.05] * 10))
    assert binary.get_ylabel() == "fraction of positives"
    assert binary.get_xlabel() == "predicted probability"
    multi = plot(sm.CalibrationError(bins=10).update([0, 1], [[0.9, 0.1], [0.3, 0.7]]))
    assert (multi.get_ylabel(), multi.get_xlabel()) == ("accuracy", "confidence")


def _step_area(line):
    """The area under a line drawn as steps (matplotlib's drawstyle)."""
    x, y = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
    held = y[1:] if line.get_drawstyle() == "steps-pre" else y[:-1]
    assert line.get_drawstyle() in ("steps-pre", "steps-post")
    return float(np.sum(np.abs(np.diff(x)) * held))


@pytest.mark.parametrize("exact", [True, False])
def test_precision_recall_steps_enclose_the_average_precision(exact):
    from sklearn.metrics import average_precision_score

    y, s = _data(3000, seed=4)
    ap = sm.AveragePrecision(exact=exact).update(y, s)
    # (the sketch's value reads its buckets finer than their edges: within its bound)
    tolerance = 1e-12 if exact else ap.error_bound()
    assert _step_area(_line(plot(ap), "curve")) == pytest.approx(ap.compute(), abs=tolerance)
    if exact:
        assert ap.compute() == pytest.approx(average_precision_score(y, s), abs=1e-12)
    curve = sm.PRCurve(exact=exact).update(y, s)
    assert _step_area(_line(plot(curve), "curve")) == pytest.approx(
        _step_area(_line(plot(ap), "curve")), abs=1e-9
    )
    small = sm.AveragePrecision(exact=True).update([1, 0, 0, 0, 1], [0.9, 0.8, 0.7, 0.6, 0.5])
    assert _step_area(_line(plot(small), "curve")) == pytest.approx(0.7)
