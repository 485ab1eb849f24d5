"""The keyword check of ``update`` (``UnknownArgumentError``) reads each update's own signature.

The conformance harness checks the refusal for every case; these are the calls it must let
through: a subclass whose ``update`` takes a keyword of its own, or ``**kwargs``, and one whose
``update`` is decorated by a wrapper that takes a keyword the function it wraps does not (a
review found 0.8.24's first cut followed ``__wrapped__`` and refused it).
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

import streammetrics as sm


def _tolerant(fn: Any) -> Any:
    @functools.wraps(fn)
    def inner(self: Any, *args: Any, verbose: bool = False, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)

    return inner


class _Logged(sm.ROCAUC, register=False):
    @_tolerant
    def update(self, y_true: Any, y_score: Any, sample_weight: Any = None) -> Any:
        return super().update(y_true, y_score, sample_weight)


class _Tagged(sm.ROCAUC, register=False):
    def update(self, y_true: Any, y_score: Any, sample_weight: Any = None, tag: str = "") -> Any:
        return super().update(y_true, y_score, sample_weight)


def test_a_decorated_update_takes_its_wrappers_keywords() -> None:
    got = _Logged().update([1, 0], [0.7, 0.2], verbose=True)
    assert got.compute() == sm.ROCAUC().update([1, 0], [0.7, 0.2]).compute()


def test_a_subclass_keyword_is_taken_and_others_refused() -> None:
    m = _Tagged().update([1, 0], [0.7, 0.2], tag="a")
    assert m.count == 2
    with pytest.raises(sm.UnknownArgumentError, match=r"^tags: _Tagged.update takes no argument"):
        m.update([1], [0.5], tags="b")
    assert m.count == 2


def test_the_error_is_an_input_error_and_a_type_error() -> None:
    with pytest.raises(TypeError):
        sm.Accuracy().update([1], [1], ids=[1])
    with pytest.raises(sm.InputError, match=r"^ids: Accuracy.update takes no argument 'ids'"):
        sm.Accuracy().update([1], [1], ids=[1])
