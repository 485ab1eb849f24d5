"""Conformance cases fed torch tensors, one dtype per case (no cases when torch is missing).

Scores come as float16, bfloat16, float32 or float64 tensors (bfloat16 is read through float32,
exactly); labels as int8, int16, int32, int64, uint8 or bool tensors. The metrics are ordinary
ones: the harness checks that tensor input gives the same split-invariant, serialisable states
as any other column.
"""

from __future__ import annotations

import numpy as np

import streammetrics as sm
from tests.harness import Case

try:
    import torch
except ImportError:  # the harness must work without torch: then there is nothing to check
    torch = None

FLOATS = ["float16", "bfloat16", "float32", "float64"]
LABELS = ["int8", "int16", "int32", "int64", "uint8", "bool"]


def _scores(dtype: str):
    def batch(rng: np.random.Generator, n: int):
        y = rng.integers(0, 2, n)
        s = np.clip(0.3 * y + rng.normal(0.35, 0.2, n), 0, 1)
        return (torch.tensor(y), torch.tensor(s, dtype=getattr(torch, dtype))), {}

    return batch


def _labels(dtype: str):
    def batch(rng: np.random.Generator, n: int):
        y, p = rng.integers(0, 2, n), rng.integers(0, 2, n)
        if dtype == "bool":
            y, p = y.astype(bool), p.astype(bool)
        t = getattr(torch, dtype)
        return (torch.tensor(y, dtype=t), torch.tensor(p, dtype=t)), {}

    return batch


def _regression(dtype: str):
    def batch(rng: np.random.Generator, n: int):
        t = rng.normal(size=n)
        p = t + rng.normal(scale=0.5, size=n)
        d = getattr(torch, dtype)
        return (torch.tensor(t, dtype=d), torch.tensor(p, dtype=d)), {}

    return batch


def _bad_scores(dtype: str):
    d = getattr(torch, dtype)
    return [
        ((torch.tensor([0, 1, 1]), torch.tensor([0.1, 0.2], dtype=d)), {}),
        ((torch.tensor([0, 1]), torch.tensor([0.1, float("nan")], dtype=d)), {}),
        ((torch.tensor([0, 1]), torch.tensor([0.1, 1.5], dtype=d)), {}),
        ((torch.tensor([0, 1]), torch.tensor([[0.1, 0.2]], dtype=d)), {}),
    ]


def _bad_labels(dtype: str):
    t = getattr(torch, dtype)
    bad = [((torch.tensor([0, 1], dtype=t), torch.tensor([1, 0, 1], dtype=t)), {})]
    if dtype != "bool":
        bad.append(((torch.tensor([0, 2], dtype=t), torch.tensor([1, 0], dtype=t)), {}))
    return bad


def _bad_regression(dtype: str):
    d = getattr(torch, dtype)
    return [
        ((torch.tensor([1.0, 2.0], dtype=d), torch.tensor([1.0], dtype=d)), {}),
        ((torch.tensor([1.0, float("inf")], dtype=d), torch.tensor([1.0, 2.0], dtype=d)), {}),
        ((torch.tensor([1.0, 2.0]), torch.tensor([1.0 + 1j, 2.0])), {}),
    ]


def _cases() -> list[Case]:
    if torch is None:
        return []
    cases = [
        Case(
            f"ROCAUC-tensor-{f}",
            sm.ROCAUC,
            _scores(f),
            _bad_scores(f),
            other=lambda: sm.ROCAUC(exact=True),
        )
        for f in FLOATS
    ]
    cases.append(
        Case(
            "ROCAUC-exact-tensor-bfloat16",
            lambda: sm.ROCAUC(exact=True),
            _scores("bfloat16"),
            _bad_scores("bfloat16"),
            other=sm.ROCAUC,
        )
    )
    cases += [
        Case(
            f"F1-tensor-{lab}",
            sm.F1,
            _labels(lab),
            _bad_labels(lab),
            other=lambda: sm.F1(average="macro"),
        )
        for lab in LABELS
    ]
    cases += [
        Case(
            f"MeanSquaredError-tensor-{f}",
            sm.MeanSquaredError,
            _regression(f),
            _bad_regression(f),
            exact=False,
            rtol=1e-10,
        )
        for f in FLOATS
    ]
    return cases


CASES = _cases()
