"""The checks of one ``MulticlassROCAUC`` sample, for its per-request buffer.

A server scoring a multiclass model updates the metric once per request with the true class
and the row of class probabilities. The ordinary ``update`` of one such row builds one score
table per class (about a hundred microseconds for five classes); buffering the row and folding
the buffer with one ordinary update costs a few. A row is buffered only when ``update`` would
certainly accept it, judged from the configuration and the width the state already has:

* the label: a column index ``0 .. k-1`` (an integer, not a bool), or one of ``labels=``;
* the row: ``k`` real numbers (Python or numpy scalars, not bools; or a float array of one
  row), each in [0, 1];
* ``sample_weight``, if given: one real number in ``[0, 2**82]``.

The first rows (no width yet), other score types (their checks depend on the magnitudes) and
anything else take the ordinary ``update``, which raises the ordinary ``InputError``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._row_checks import _INT_TYPES, _REAL_TYPES, _SCALAR_TYPES, BOOL_TYPES, weight_keyword

__all__ = ["trusted_row"]


def _label_ok(y: Any, k: int, labels: Any) -> bool:
    t = type(y)
    if labels is None:
        return t in _INT_TYPES and t not in BOOL_TYPES and 0 <= y < k
    if t not in _SCALAR_TYPES or t in BOOL_TYPES:
        return False
    try:
        return y in labels  # (a short sorted list; labels of the other kind never match)
    except TypeError:
        return False


def trusted_row(
    args: tuple[Any, ...], kwargs: dict[str, Any], config: dict[str, Any], k: int
) -> tuple[Any, ...] | None:
    """``(label, scores[, weight])`` to buffer for ``update(*args, **kwargs)``, or None when
    the call is not one sample that certainly passes (see the module's docstring)."""
    if len(args) != 2 or not k or config["score_type"] != "probability":
        return None
    ok, weight = weight_keyword(kwargs)
    if not ok:
        return None
    y, row = args
    labels = config["labels"]
    if labels is not None and len(labels) != k:
        return None
    if not _label_ok(y, k, labels):
        return None
    t = type(row)
    if t is list or t is tuple:
        values = tuple(row)
    elif t is np.ndarray and row.dtype.kind == "f" and (row.ndim == 1 or row.shape[0] == 1):
        values = tuple(row.reshape(-1).tolist())  # (a row, or a batch of one row)
    else:
        return None
    if len(values) != k:
        return None
    for v in values:
        tv = type(v)
        if tv is not float and (tv not in _REAL_TYPES or tv in BOOL_TYPES):
            return None
        if not 0 <= v <= 1:  # (False for nan)
            return None
    return (y, values) if weight is None else (y, values, weight)
