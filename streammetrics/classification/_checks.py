"""Input checks shared by the score metrics (labels, scores; ``check_mode`` of the bucket
mapping lives in :mod:`streammetrics.states.mappings` and is re-exported here)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._codec import SMALL_CHECK
from .._input_labels import as_labels
from .._inputs import as_scores, check_finite
from ..errors import InputError
from ..states.labels import codes_in, config_labels
from ..states.mappings import check_mode

__all__ = [
    "binary_labels",
    "check_exact_probabilities",
    "check_mode",
    "checked_scores",
    "class_columns",
    "column_labels",
]


def binary_labels(y_true: Any, name: str = "y_true", keep_bool: bool = False) -> np.ndarray:
    """Labels {0, 1} or {False, True} (or 0.0 / 1.0) as an int64 0/1 array; ``InputError``
    else. ``keep_bool``: a 1-D numpy bool array comes back as it is (for callers that count
    bools directly, which saves an int64 copy eight times its size)."""
    boolean = getattr(y_true, "dtype", None) == np.bool_  # 0/1 by construction
    if keep_bool and boolean and isinstance(y_true, np.ndarray) and y_true.ndim == 1:
        return y_true
    y = as_labels(y_true, name)
    if y.dtype.kind == "U":
        raise InputError(f"{name}: binary labels must be 0/1 or False/True; got strings")
    if not boolean and y.size and y.view(np.uint64).max() > 1:
        bad = sorted(set(y[(y != 0) & (y != 1)].tolist()))[:5]
        raise InputError(f"{name}: binary labels must be 0/1 or False/True; found {bad}")
    return y


_ONE_BITS = int(np.float64(1.0).view(np.uint64))


def checked_scores(y_score: Any, score_type: str, name: str = "y_score") -> np.ndarray:
    """Finite float64 scores; probabilities must lie in [0, 1]."""
    if score_type != "probability":
        return as_scores(y_score, name)
    # In [0, 1] implies finite (a nan fails both comparisons): one check for both.
    x = as_scores(y_score, name, finite=False)
    # One pass for the common case: the float64s from +0.0 to 1.0 are exactly those whose bits,
    # read as unsigned integers, are at most 1.0's (a negative, -0.0 included, has the sign
    # bit; a nan or an infinity is above). Anything else takes the two-pass check below.
    if x.size and int(x.view(np.uint64).max()) > _ONE_BITS:
        lo, hi = float(x.min()), float(x.max())
        if not (lo >= 0.0 and hi <= 1.0):
            check_finite(x, name)  # a nan or an infinity is named as such
            bad = lo if lo < 0.0 else hi
            raise InputError(
                f"{name}: score_type='probability' needs values in [0, 1], found {bad}; pass "
                'score_type="logit" for raw model outputs (or "real" for any scale)'
            )
    return x


def check_exact_probabilities(scores: np.ndarray) -> None:
    """Decoding: the exact scores of a store of ``score_type="probability"`` lie in [0, 1], as
    every update checked (``ValueError`` otherwise)."""
    if scores.size <= SMALL_CHECK:  # (as Python floats: a nan anywhere is refused too)
        inside = all(0.0 <= s <= 1.0 for s in scores.ravel().tolist())
    else:
        inside = bool(scores.min() >= 0.0 and scores.max() <= 1.0)
    if not inside:
        raise ValueError("an exact score lies outside [0, 1] (score_type='probability')")


def column_labels(labels: Any, *, sort: bool = False) -> list[Any] | None:
    """Validate a ``labels=`` argument naming the columns of a probability matrix.

    ``None``, or distinct labels of one kind in sorted order (column ``j`` holds the ``j``-th
    smallest class, as scikit-learn's ``log_loss`` reads its ``labels``). Unsorted labels are an
    ``InputError``, or with ``sort=True`` are sorted.
    """
    fixed = config_labels(labels)
    if fixed is None or fixed == sorted(fixed):
        return fixed
    if sort:
        return sorted(fixed)
    raise InputError("labels: must be sorted (they name the columns in order)")


def class_columns(y: np.ndarray, k: int, labels: list[Any] | None) -> np.ndarray:
    """The column of each label of ``y`` (coerced ``y_true``) in a ``k``-column matrix.

    With ``labels`` (sorted, see :func:`column_labels`) the classes they name; without, ``y``
    must hold column indices ``0 .. k-1``. ``InputError`` naming the argument otherwise.
    """
    if labels is not None:
        if len(labels) != k:
            raise InputError(f"y_prob: has {k} columns, labels names {len(labels)} classes")
        return codes_in(np.asarray(labels), y, "y_true")
    if y.dtype.kind == "U":
        raise InputError("y_true: string labels need labels=[...] naming the columns")
    if y.size and (y.min() < 0 or y.max() >= k):
        raise InputError(f"y_true: labels must be column indices 0..{k - 1}; pass labels=")
    return y
