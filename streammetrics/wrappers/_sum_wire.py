"""Reading a ``Sliced`` wire form of many log-loss, Brier or calibration-error slices straight
into one table.

As the other packed decoders (``_slice_wire``, ``_moments_wire``): every check the per-slice
decoder makes (``_load_field`` of each field, ``_SumMetric._validate_state`` with
``check_weight_sq`` and ``check_linearised_sums``, ``_validate_columns``), once over all the
slices' sums as array operations, in the same float operations, then the :class:`SumPack` that
``SumPack.of_slices`` builds from the decoded states. It answers None for anything unusual (an
older schema, an integer where a float is written, a sum left unknown (nan) by an older version,
a class other than the library's own); the per-slice decoder then accepts it or names the fault.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._codec import WEIGHT_LIMIT
from ._bins_pack import BinsPack
from ._bins_pack import qualifies as bins_qualify
from ._packing import library_state, weight_sq_valid
from ._slice_wire import _envelopes
from ._sum_pack import FIELDS, SumPack, qualifies

__all__ = ["SUM_DECODE_MIN", "decoded_bins_pack", "decoded_sum_pack"]

#: Read into one table from this many slices (as the regression slices).
SUM_DECODE_MIN = 4

Key = Any

_TINY = 2.0**-1074
_F64 = np.dtype(np.float64)


def _slices(
    template: Any, pairs: list[Any], least: int, qualified: bool
) -> tuple[list[Key], np.ndarray, list[Any], np.ndarray] | None:
    """``(keys, counts, states, columns)`` of the pairs of a metric of the library's state
    (``qualified``: a class this module packs) whose envelopes ``_envelopes`` takes and whose
    columns ``_validate_columns`` accepts, or None."""
    from ..classification.calibration import MAX_COLUMNS

    if len(pairs) < max(least, 1) or not qualified or not library_state(template):
        return None  # (a user's subclass may check more: its per-slice decoder decides)
    found = _envelopes(template, pairs, None)
    if found is None:
        return None
    keys, count_list, _ = found
    states = [env["state"] for _, env in pairs]
    column_list = [s["columns"] for s in states]
    if not all(type(c) is int for c in column_list):
        return None
    columns = np.array(column_list, dtype=np.int64)
    labels = template._config["labels"]
    if not ((columns >= 0).all() and (columns <= MAX_COLUMNS).all()):
        return None
    if labels is not None and ((columns > 0) & (columns != len(labels))).any():
        return None
    return keys, np.array(count_list, dtype=np.int64), states, columns


def decoded_sum_pack(template: Any, pairs: list[Any], least: int) -> SumPack | None:
    """The :class:`SumPack` of the pairs of a ``LogLoss`` or ``BrierScore``, or None (see the
    module): fewer than ``least`` slices, or anything unusual."""
    from ..classification.calibration import _SLACK

    found = _slices(template, pairs, least, qualifies(template))
    if found is None:
        return None
    keys, counts, states, columns = found
    values = []
    for name in FIELDS:
        column = [s[name] for s in states]
        if not all(type(v) is float for v in column):
            return None
        values.append(np.array(column, dtype=np.float64) + 0.0)  # -0.0 -> 0.0, as _load_field
    weight, loss, squares, sq, wsq_total, wsq_squares = values
    if not all(np.isfinite(v).all() for v in values):
        return None  # (nan: a sum an older version did not keep; the per-slice decoder reads it)
    top = _tops(template, columns) * _SLACK
    with np.errstate(all="ignore"):
        tiny = counts * _TINY * top * top
        ok = (weight >= 0) & (weight <= WEIGHT_LIMIT)
        ok &= np.abs(loss) <= top * weight + tiny
        ok &= np.abs(squares) <= top * top * weight + tiny
        ok &= (loss >= 0) & (squares >= 0)
        held = weight > 0
        spread = squares - loss / weight * loss
        floor = -1e-9 * squares - counts * _TINY * top * top
        ok &= ~held | (spread >= floor)
        ok &= (wsq_total >= 0) & (wsq_total <= top * sq)
        ok &= (wsq_squares >= 0) & (wsq_squares <= top * top * sq)
        ok &= squares <= top * loss * _SLACK + tiny
        ok &= wsq_squares <= top * wsq_total * _SLACK + tiny
        ok &= ~held | _linearised(values, counts, top)
    if not ok.all() or not weight_sq_valid(sq, weight, counts):
        return None
    index = {k: i for i, k in enumerate(keys)}
    return SumPack(template, keys, index, counts, columns, tuple(values))


def _tops(template: Any, columns: np.ndarray) -> np.ndarray:
    """Each slice's largest per-row loss (``_max_loss``: the Brier score's depends on the
    slice's number of columns)."""
    from ..classification.calibration import BrierScore

    if isinstance(template, BrierScore):
        return np.where(columns == 0, 1.0, np.maximum(2.0, columns.astype(np.float64)))
    return np.full(len(columns), template._max_loss())


def _linearised(values: list[np.ndarray], counts: np.ndarray, top: np.ndarray) -> np.ndarray:
    """``uncertainty.check_linearised_sums`` of every slice, operation for operation: whether
    it passes (meaningful where the weight is positive)."""
    w, total, squares, sq, wsq_total, wsq_squares = values
    m = total / w
    dev = wsq_squares - 2.0 * m * wsq_total + m * m * sq
    spread = squares - m * total
    top_w = np.where((counts == w) & (w == sq), 1.0, np.sqrt(sq))
    slack = 1e-9 * (wsq_squares + m * m * sq + top_w * squares)
    slack += 4.0 * counts * _TINY * (top * top + m * m + 1.0)
    within = dev <= top_w * np.maximum(spread, 0.0) * (1 + 1e-6) + slack
    result: np.ndarray = within & (dev >= -slack) & (spread >= -1e-9 * squares - slack)
    return result


def decoded_bins_pack(template: Any, pairs: list[Any], least: int) -> BinsPack | None:
    """The :class:`BinsPack` of the pairs of a ``CalibrationError``, or None (see the module):
    each slice's three bin-sum arrays of ``bins`` finite values, weights in ``[0, 2**100]``
    (their total far below it: else the per-slice decoder's own sum decides), confidence and
    hit sums in ``[0, weight * (1 + 1e-6)]`` bin by bin, its columns valid
    (``CalibrationError._validate_state``, array-wide)."""
    from ..classification.calibration import _SLACK

    found = _slices(template, pairs, least, bins_qualify(template))
    if found is None:
        return None
    keys, counts, states, columns = found
    bins = template._config["bins"]
    sums = []
    for name in ("weight", "confidence", "outcome"):
        column = [s[name] for s in states]
        shape = (bins,)
        if not all(type(a) is np.ndarray and a.dtype == _F64 and a.shape == shape for a in column):
            return None
        table = np.stack(column)
        if not np.isfinite(table).all():
            return None
        sums.append(table)
    weight, confidence, outcome = sums
    if not ((weight >= 0).all() and (weight <= WEIGHT_LIMIT).all()):
        return None
    if not (weight.sum(axis=1) <= WEIGHT_LIMIT / 4).all():
        return None  # (near the bound: the per-slice decoder's own sum decides)
    top = weight * _SLACK
    for table in (confidence, outcome):
        if not ((table >= 0).all() and (table <= top).all()):
            return None
    index = {k: i for i, k in enumerate(keys)}
    return BinsPack(template, keys, index, counts, columns, (weight, confidence, outcome))
