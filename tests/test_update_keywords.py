"""The keyword check of ``update`` (``UnknownArgumentError``) reads each update's own signature.

The conformance harness checks the refusal for every case; these are the calls it must let
through: a subclass whose ``update`` takes a keyword of its own, or ``**kwargs``, and one whose
``update`` is decorated by a wrapper that takes a keyword the function it wraps does not (a
review found 0.8.24's first cut followed ``__wrapped__`` and refused it).
"""

from __future__ import annotations

import functools
import re
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


@pytest.mark.parametrize(
    ("make", "given", "typo", "listed"),
    [
        (
            lambda: sm.SlidingWindow(sm.ROCAUC(), width=60),
            {"timestamp": 3.0},
            "timestamp",
            "y_true, y_score, sample_weight, timestamps",
        ),
        (lambda: sm.TumblingWindows(sm.ROCAUC(), 60), {"timestamp": 3.0}, "timestamp", None),
        (
            lambda: sm.Sliced(sm.Accuracy()),
            {"key": "a"},
            "key",
            "y_true, y_pred, sample_weight, by",
        ),
        (
            lambda: sm.Decayed(sm.Accuracy(), half_life=5),
            {"timestamps": 1.0, "foo": 2},
            "foo",
            None,
        ),
        (
            lambda: sm.Sliced(sm.SlidingWindow(sm.ROCAUC(), width=60)),
            {"by": "a", "timestamp": 1.0},
            "timestamp",
            "y_true, y_score, sample_weight, timestamps, by",
        ),
        (lambda: sm.Bootstrap(sm.Accuracy(), replicates=10), {"id": [1]}, "id", None),
    ],
)
def test_a_wrappers_misspelt_keyword_is_named(make, given, typo, listed) -> None:
    """A wrapper passes the keywords it does not take to its metric: a misspelt one is refused
    naming it and the wrapper, before the wrapper's own "timestamps: required" (0.8.24 said
    that for ``timestamp=``: a review found it), and nothing changes."""
    m = make()
    before = m.to_bytes()
    with pytest.raises(
        sm.UnknownArgumentError, match=rf"^{typo}: {type(m).__name__}\.update takes"
    ):
        m.update(1, 1 if isinstance(m, (sm.Sliced, sm.Decayed, sm.Bootstrap)) else 0.5, **given)
    assert m.to_bytes() == before
    if listed is not None:
        with pytest.raises(sm.UnknownArgumentError, match=re.escape(f"(its arguments: {listed})")):
            m.update(1, 0.5, **given)


@pytest.mark.parametrize(
    ("call", "said"),
    [
        (lambda m: m.update(1), "Accuracy.update() missing 1 required positional argument"),
        (lambda m: m.update(1, 1, y_pred=1), "Accuracy.update() got multiple values"),
        (lambda m: m.update(1, 1, 1, 1), "Accuracy.update() takes from 3 to 4 positional"),
    ],
)
def test_arguments_that_do_not_bind_name_the_public_class(call, said) -> None:
    """Python's own binding errors named ``_ConfusionMetric.update()``, a private base."""
    m = sm.Accuracy().update([1, 0], [1, 1])
    before = m.to_bytes()
    with pytest.raises(TypeError, match=re.escape(said)):
        call(m)
    assert m.to_bytes() == before


def test_a_type_error_inside_update_is_left_as_it_is() -> None:
    class _Broken(sm.ROCAUC, register=False):
        def update(self, y_true: Any, y_score: Any, sample_weight: Any = None) -> Any:
            raise TypeError("_Broken.update() inner failure")

    with pytest.raises(TypeError, match=r"^_Broken\.update\(\) inner failure$"):
        _Broken().update([1, 0], [0.5, 0.2])
