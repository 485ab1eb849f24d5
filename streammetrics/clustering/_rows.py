"""The checks of one sample of the internal clustering indices, for their per-request buffer.

A server assigning clusters online updates ``ClusterGeometry`` (or one of the single indices)
once per request with the row and its cluster. The ordinary ``update`` of one row builds a
moments block and a sample block (some 100-600 µs); buffering the row and folding the buffer
with one ordinary update costs a few. A row is buffered only when ``update`` would certainly
accept it, judged from the configuration and the state held:

* the label: an int (within int64, not a bool) or a string with a UTF-8 form, of the kind the
  state's clusters already have (and, with ``centers``, one of ``center_labels``);
* the row: as many real numbers (not bools) as the state's rows have columns, each finite and
  within 2**200 (the bound of sampled rows), not all zero for the cosine distance; a list, a
  tuple or a 1-D float or integer array;
* no keyword (the indices take no ``sample_weight``);

and the state held is far enough from its bounds (``CENTROID_LIMIT``, ``SPREAD_LIMIT``) that no
batch of such rows can reach them. The first rows (no width yet) and anything else take the
ordinary ``update``, which raises the ordinary ``InputError``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._row_checks import _key_kind, real_row
from ..states.centroids import SPREAD_LIMIT

__all__ = ["held_far_from_bounds", "trusted_row"]

#: The largest magnitude of a coordinate of a row or a centre (about 1.6e60): pairwise
#: distances of sampled rows stay finite (``_geometry`` checks rows against it too).
VALUE_LIMIT = 2.0**200


def held_far_from_bounds(moments: Any) -> bool:
    """Whether no fold of rows within ``VALUE_LIMIT`` can take ``moments`` past its bounds:
    means within ``2**300`` already hold (decoding checks them); a batch adds at most about
    ``2**660`` to a spread, so spreads and extra sums up to half their bound leave room."""
    half = SPREAD_LIMIT / 2
    m2, extra = moments.m2, moments.extra
    return bool(
        (not m2.size or np.abs(m2).max() <= half)
        and (not extra.size or np.abs(extra).max() <= half)
    )


def trusted_row(
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    dim: int,
    key_kind: str,
    centre_keys: frozenset[Any] | None,
    cosine: bool,
) -> tuple[Any, ...] | None:
    """``(values, label)`` to buffer for ``update(*args, **kwargs)``, or None when the call is
    not one sample that certainly passes (see the module's docstring). ``key_kind`` is the kind
    of the clusters held, ``"int"`` or ``"str"``."""
    if kwargs or len(args) != 2 or not dim:
        return None
    row, label = args
    if _key_kind(label) != key_kind:
        return None
    if centre_keys is not None and label not in centre_keys:
        return None
    values = real_row(row)
    if values is None or len(values) != dim:
        return None
    for v in values:
        if not (math.isfinite(v) and -VALUE_LIMIT <= v <= VALUE_LIMIT):
            return None
    if cosine and not any(values):
        return None
    return values, (int(label) if key_kind == "int" else str(label))
