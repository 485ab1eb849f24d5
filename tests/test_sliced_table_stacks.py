"""Values and intervals of ``Sliced`` confusion metrics from stacks of their dense tables.

``Sliced(F1(average="macro")).intervals()`` made one state per slice and ran its delta method
(10 s at 100,000 slices), and weighted tables made one state per slice for ``compute()`` too.
``streammetrics.classification._table_stack`` scores every table of one width at once with the
state's own operations: each slice's value and interval must be, to the bit (``repr``), what its
made state gives, over whole and weighted counts (zero, fractional and far-apart weights, a mix
of weighted and unweighted slices), 2 to 9 labels (past 8 numpy sums pairwise), slices of one
class, string labels and every ``zero_division``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.classification._table_stack import delta_ses, summaries
from streammetrics.uncertainty import confusion_delta_se
from streammetrics.wrappers import _confusion_reads
from streammetrics.wrappers._confusion_pack import ConfusionPack

MAKERS = {
    "accuracy": lambda: sm.Accuracy(),
    "mcc": lambda: sm.MatthewsCorrCoef(),
    "kappa": lambda: sm.CohenKappa(),
    "kappa-linear": lambda: sm.CohenKappa(weights="linear"),
    "kappa-quadratic": lambda: sm.CohenKappa(weights="quadratic"),
    "f1-macro": lambda: sm.F1(average="macro"),
    "f1-weighted": lambda: sm.F1(average="weighted"),
    "f1-micro": lambda: sm.F1(average="micro"),
    "precision-macro-nan": lambda: sm.Precision(average="macro", zero_division=math.nan),
    "precision-micro": lambda: sm.Precision(average="micro"),
    "recall-weighted-one": lambda: sm.Recall(average="weighted", zero_division=1.0),
    "recall-micro": lambda: sm.Recall(average="micro"),
    "fbeta-half-macro": lambda: sm.FBeta(beta=0.5, average="macro"),
    "fbeta-zero-weighted": lambda: sm.FBeta(beta=0.0, average="weighted"),
    "fbeta-huge-macro": lambda: sm.FBeta(beta=1e200, average="macro"),
    "f1-none": lambda: sm.F1(average=None),
    "f1-fixed": lambda: sm.F1(average="macro", labels=[0, 1, 2]),
}


def _stream(make, seed: int) -> sm.Sliced:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    s = sm.Sliced(make())
    labels, slices = int(rng.integers(2, 10)), int(rng.integers(1, 300))
    text = seed % 5 == 4
    for _ in range(int(rng.integers(1, 4))):
        n = int(rng.integers(1, 4000))
        y = rng.integers(0, labels, n)
        right = rng.random(n) < rng.uniform(0.3, 1.0)
        p = np.where(right, y, rng.integers(0, labels, n))
        by = rng.integers(0, slices, n)
        y[by % 7 == 3] = 0  # slices of one true class (no MCC interval)
        kwargs = {"by": by}
        mode = (seed + int(rng.integers(0, 2))) % 4
        if mode == 1:
            kwargs["sample_weight"] = rng.random(n) * (rng.random(n) > 0.2)
        elif mode == 2:
            kwargs["sample_weight"] = np.exp(rng.normal(0.0, 5.0, n))
        elif mode == 3:
            kwargs["sample_weight"] = rng.integers(0, 4, n).astype(float)
        if text:
            y, p = y.astype(str), p.astype(str)
        s.update(y, p, **kwargs)
    return s


def _same(a, b) -> bool:  # type: ignore[no-untyped-def]
    if isinstance(b, np.ndarray):
        return repr(np.asarray(a).tolist()) == repr(b.tolist())
    return repr(a) == repr(b)


#: Scored from their tables whatever the counts (the others ask their states for some).
STACKED = {name for name in MAKERS if name.split("-")[0] in ("accuracy", "f1", "recall")}
STACKED |= {"fbeta-half-macro", "fbeta-zero-weighted", "fbeta-huge-macro", "precision-micro"}
STACKED |= {"mcc", "kappa", "kappa-linear", "kappa-quadratic"}
STACKED -= {"f1-fixed"}


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("name", sorted(MAKERS))
def test_every_slice_scores_as_its_own_state(name: str, seed: int, monkeypatch) -> None:
    s = _stream(MAKERS[name], seed)
    assert isinstance(s.slices.pack(), ConfusionPack)
    made_alone: list[int] = []  # the slices whose own state was made to answer
    own = ConfusionPack._slice_states

    def spy(pack: ConfusionPack, which: np.ndarray) -> list:
        made_alone.append(len(which))
        return own(pack, which)

    monkeypatch.setattr(ConfusionPack, "_slice_states", spy)
    values = s.compute()
    assert sum(made_alone) == 0 or name not in STACKED
    made = s.slices.view()
    assert all(_same(values[k], made[k].compute()) for k in made)
    if name == "f1-none":
        with pytest.raises(sm.NoIntervalError):
            s.intervals()
        return
    for level in (0.95, 0.6):
        s.slices._dict = None  # read the table again, not the made states
        made_alone.clear()
        got = s.intervals(level)
        assert sum(made_alone) == 0 or name not in STACKED
        made = s.slices.view()
        assert all(repr(got[k]) == repr(made[k].interval(level)) for k in made)


def test_small_stacks_give_what_one_stack_gives(monkeypatch) -> None:
    # Stacks are cut to a bounded number of cells; every cut scores alike.
    s = _stream(MAKERS["f1-weighted"], 3)
    whole = s.intervals(), s.compute()
    s.slices._dict = None
    monkeypatch.setattr(_confusion_reads, "_STACK_CELLS", 20)
    assert repr((s.intervals(), s.compute())) == repr(whole)


def test_the_stacked_delta_method_is_confusion_delta_se() -> None:
    rng = np.random.default_rng(5)
    stack = rng.integers(0, 50, (40, 4, 4)).astype(float) * rng.choice([1.0, 0.37], (40, 1, 1))
    stack[3] = 0.0  # empty: nan
    stack[4, :, 1:] = 0.0  # one predicted class
    f = sm.F1(average="macro")._vectorised()
    samples = rng.integers(1, 400, 40)
    n_eff = rng.uniform(0.5, 300.0, 40)
    n_eff[5] = 0.0  # no effective size: nan
    got = delta_ses(stack, f, n_eff, samples)
    want = [
        confusion_delta_se(t, f, e, int(k)) for t, e, k in zip(stack, n_eff, samples, strict=True)
    ]
    assert repr(got.tolist()) == repr(want)
    diagonal, rows, cols, total = summaries(stack)
    assert np.array_equal(rows[7], stack[7].sum(axis=1))
    assert np.array_equal(cols[7], stack[7].sum(axis=0))
    assert total[7] == stack[7].sum() and np.array_equal(diagonal[7], np.diagonal(stack[7]))
