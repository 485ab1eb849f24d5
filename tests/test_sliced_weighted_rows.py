"""Weighted rows, one per call, into ``Sliced`` (0.8.17): buffered like unweighted ones.

Until 0.8.16 a ``Sliced`` declared its per-request columns unweighted, so every call with a
``sample_weight`` took the ordinary update (120-200 us against 1.5 us unweighted): the buffer's
bound check needs a bound on every slice's totals, and the whole count bounds them only for
unweighted rows. The slice table now keeps such a bound (``SliceTable.row_bound``): grown by
each update by its rows and weights, added up by merges, scaled with ``Decayed``, and found by
one look at the slices (or a packed table's arrays) after a load."""

from __future__ import annotations

import random

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.wrappers import Decayed

TEMPLATES = {
    "accuracy": lambda: sm.Accuracy(),
    "auc": lambda: sm.ROCAUC(),
    "auc-exact": lambda: sm.ROCAUC(exact=True),
    "mse": lambda: sm.MeanSquaredError(),
    "f1-macro": lambda: sm.F1(average="macro"),
}


def _rows(seed: int, n: int, keys: int = 4) -> list[tuple]:
    rnd = random.Random(seed)
    return [
        (
            rnd.randint(0, 1),
            round(rnd.random(), 3),
            rnd.randrange(keys),
            rnd.choice([0.5, 1.0, 2.5]),
        )
        for _ in range(n)
    ]


def _call(m: sm.Metric, name: str, row: tuple) -> None:
    y, p, key, w = row
    second = int(p > 0.5) if name in ("accuracy", "f1-macro") else p
    m.update(y, second, by=key, sample_weight=w)


def _largest_total(s: sm.Sliced) -> float:
    """The largest count or weight total of any slice (the totals the bound check guards)."""
    return max((m._held_total() for m in s.slices.view().values()), default=0)


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_weighted_rows_are_buffered_and_give_the_batch_state(name: str) -> None:
    rows = _rows(1, 3000)
    one_by_one = sm.Sliced(TEMPLATES[name]())
    for row in rows:
        _call(one_by_one, name, row)
    assert one_by_one._pending is not None  # the rows wait in the buffer: no update per call
    y, p, key, w = (list(c) for c in zip(*rows, strict=True))
    second = [int(v > 0.5) for v in p] if name in ("accuracy", "f1-macro") else p
    batch = sm.Sliced(TEMPLATES[name]()).update(y, second, by=key, sample_weight=w)
    if name == "mse":  # a float state: the same to rounding
        got, want = one_by_one.compute(), batch.compute()
        assert got.keys() == want.keys()
        for k in got:
            assert got[k] == pytest.approx(want[k], rel=1e-12)
    else:
        assert one_by_one.to_bytes() == batch.to_bytes()


def test_the_bound_stays_above_every_slice_total() -> None:
    rng = np.random.default_rng(0)
    s = sm.Sliced(sm.ROCAUC())
    for step in range(40):
        op = step % 8
        if op in (0, 1):  # per-request rows, weighted
            for row in _rows(step, 50, keys=6):
                _call(s, "auc", row)
        elif op == 2:  # a batch of many slices: a packed table
            n = 5000
            s.update(
                rng.integers(0, 2, n),
                rng.random(n),
                by=rng.integers(0, 700, n),
                sample_weight=rng.random(n) * 3,
            )
        elif op == 3:  # unweighted rows
            for row in _rows(step, 50):
                s.update(row[0], row[1], by=row[2])
        elif op == 4:  # a merge with another weighted state
            other = sm.Sliced(sm.ROCAUC()).update(
                [1, 0, 1], [0.2, 0.4, 0.9], by=[1, 2, 900], sample_weight=[7.0, 8.0, 9.0]
            )
            s.merge(other)
        elif op == 5:  # a load: the bound is found again
            s = sm.loads(s.to_bytes())
        elif op == 6:  # a weight given by position
            s.update([1, 0], [0.3, 0.6], [4.0, 5.0], by=[3, 3])
        else:  # a copy
            s = s.copy()
        s.compute()  # (folds the buffer)
        assert s.slices.row_bound() >= _largest_total(s), step


def test_decayed_slices_keep_a_bound_above_their_scaled_totals() -> None:
    d = Decayed(sm.Sliced(sm.Accuracy()), half_life=3.0)
    rnd = random.Random(2)
    for t in range(300):
        d.update(
            rnd.randint(0, 1),
            rnd.randint(0, 1),
            by=rnd.randrange(5),
            sample_weight=rnd.choice([1.0, 4.0]),
            timestamps=float(t),
        )
        if t % 50 == 49:
            inner = d.inner
            inner.compute()
            assert inner.slices.row_bound() >= _largest_total(inner)
            # Decayed keeps its weights small: the bound follows them down, so the buffer
            # stays open (a bound that only grew would close it at the count bound).
            assert inner.slices.row_bound() < 1e4


def test_near_the_weight_bound_every_call_is_checked_when_made() -> None:
    # One slice's weight total just under 2**100: per-request rows of the largest weight
    # (2**82) are no longer buffered, and the call that would pass the bound is refused when
    # it is made (a buffered row must never fail later, in the fold), exactly as the
    # ordinary update refuses it.
    big = 2.0**82
    n = 2**18 - 3
    start = sm.Sliced(sm.Accuracy()).update(
        np.ones(n, dtype=int),
        np.ones(n, dtype=int),
        by=np.zeros(n, dtype=int),
        sample_weight=np.full(n, big),
    )
    fast, plain = start.copy(), start.copy()
    plain._rows = None  # the ordinary update for every call
    outcomes = []
    for m in (fast, plain):
        seen = []
        for _ in range(6):
            try:
                m.update(1, 1, by=0, sample_weight=big)
                seen.append("ok")
            except sm.InputError as exc:
                assert "sample_weight" in str(exc) or "bound" in str(exc)
                seen.append("refused")
        outcomes.append(seen)
    assert outcomes[0] == outcomes[1] and "refused" in outcomes[0]
    assert fast.to_bytes() == plain.to_bytes()
    assert sm.loads(fast.to_bytes()).compute() == fast.compute()


@pytest.mark.parametrize("sliced", [True, False])
def test_a_state_scaled_up_checks_the_next_call_against_its_bounds(sliced: bool) -> None:
    # Decayed.at() scales a copy of the wrapped state up by as much as 2**64; the copy kept
    # what the per-request path had learnt, buffered rows past the weight bound, and failed
    # at the next read, losing them (found by review, 0.8.16 for a plain metric too).
    d = Decayed(sm.Sliced(sm.Accuracy()) if sliced else sm.Accuracy(), half_life=1.0)
    by = {"by": 0} if sliced else {}
    for _ in range(3):
        d.update(1, 1, sample_weight=1.0, timestamps=0.0, **by)
    d.update(1, 1, sample_weight=2.0**100 - 2.0**92, timestamps=0.0, **by)
    x = d.at()
    accepted = 0
    with pytest.raises(sm.CountOverflowError, match="sample_weight"):
        for _ in range(4000):
            x.update(1, 1, sample_weight=2.0**82, **by)
            accepted += 1
    assert x.count == 4 + accepted
    x.compute()  # every accepted row is in, and the read does not fail


def test_weights_past_float64_are_named_by_the_wrapped_metric() -> None:
    # 0.8.17's first cut raised a bare OverflowError summing them for the bound (review).
    s = sm.Sliced(sm.Accuracy())
    for weight in (10**400, [1, 10**400]):
        n = 1 if isinstance(weight, int) else 2
        with pytest.raises(sm.InputError, match="sample_weight"):
            s.update(
                *([1] * n, [1] * n) if n > 1 else (1, 1),
                by=[0] * n if n > 1 else 0,
                sample_weight=weight,
            )
    assert s.count == 0


def test_the_bound_grows_by_rows_worth_less_than_its_last_place() -> None:
    # Rounded to nearest, a bound of 2**80 took no notice of 2**27 added 64 times, while the
    # slice's total grew (review).
    s = sm.Sliced(sm.ROCAUC())
    s.update([1], [0.9], by=[0], sample_weight=[2.0**80])
    for _ in range(64):
        s.update([0], [0.1], by=[0], sample_weight=[2.0**27])
    assert s.slices.row_bound() >= _largest_total(s)
