"""Reading a ``Sliced`` wire form of many regression slices straight into one packed table.

``loads`` of ``Sliced(MeanSquaredError())`` over 100,000 slices decoded each slice as a whole
metric (an envelope, a config check, each array checked, a state built and validated): 57 µs of
Python per slice, 5.7 s, and 85 µs per slice for ``R2Score``. The decoder here makes every check
the per-slice decoder makes (``Moments.from_wire``, ``CentralMoments.from_wire``,
``_RegressionMetric._validate_state`` with ``check_weight_sq`` and ``check_wsq_fields``), once
over all the slices' arrays, and builds the :class:`MomentsPack` or :class:`FitPack` that the
slices' next update would build from the decoded states (``of_slices``). As the decoders of
``_slice_wire``, it accepts only what the per-slice decoder accepts and answers None for
anything unusual (an older schema, another config or layout, several outputs, an integer where
the encoder writes a float, a field past a bound); the per-slice decoder then accepts it or
names the fault, as it always did. Holding the same contents, the pack writes the same bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._codec import WEIGHT_LIMIT
from ..states.central import CENTRAL_MEAN_LIMIT
from ..states.moments import COMOMENT_LIMIT, MEAN_LIMIT
from ._fit_pack import FitPack
from ._fit_pack import qualifies as fit_qualifies
from ._moments_pack import MomentsPack
from ._moments_pack import qualifies as loss_qualifies
from ._packing import library_state, weight_sq_valid
from ._slice_wire import _envelopes

__all__ = ["MOMENTS_DECODE_MIN", "decoded_moments_pack"]

Key = Any

#: Regression slices are read into one table from this many: 0.27 ms against 0.30 ms one by
#: one at 4 slices of ``MeanSquaredError``, 0.41 against 0.81 ms at 16 (0.49 against 1.28 ms
#: for ``R2Score``).
MOMENTS_DECODE_MIN = 4

_MOMENTS = frozenset({"weight", "mean", "mean_low", "comoment"})
_CENTRAL = frozenset({"weight", "mean", "mean_low", "moments"})
_F64 = np.dtype(np.float64)


def decoded_moments_pack(
    template: Any, pairs: list[Any], least: int
) -> MomentsPack | FitPack | None:
    """The pack of the pairs of a regression metric of one output whose slices the table
    packs (:class:`MomentsPack` for MSE, RMSE, MAE, MAPE; :class:`FitPack` for R2, explained
    variance, Pearson's r, the report), or None (see the module): fewer than ``least`` slices,
    a class other than the library's own, or anything unusual."""

    one_loss = loss_qualifies(template)
    if len(pairs) < max(least, 1) or not (one_loss or fit_qualifies(template)):
        return None
    if not library_state(template):
        return None  # (a user's subclass may check more: its per-slice decoder decides)
    mo = template._config["multioutput"]
    if isinstance(mo, list) and len(mo) != 1:
        return None
    found = _envelopes(template, pairs, "moments", _MOMENTS)
    if found is None:
        return None
    keys, count_list, blocks = found
    states = [env["state"] for _, env in pairs]  # (each checked by ``_envelopes``)
    counts = np.array(count_list, dtype=np.int64)
    block = template.moments
    moments = _block(blocks, "comoment", block.groups, len(block.pairs), MEAN_LIMIT)
    sq = _floats([s["weight_sq"] for s in states])
    if moments is None or sq is None:
        return None
    weight, hi, lo, co = moments
    if not (np.abs(co).max() <= COMOMENT_LIMIT):
        return None
    diagonal = [i for i, (g, h) in enumerate(block.pairs) if g == h]
    if (co[:, diagonal] < 0).any():
        return None
    losses = sorted(template._losses)
    if ((hi + lo)[:, losses] < 0).any():
        return None
    sq += 0.0  # -0.0 -> 0.0, as the decoder reads a float field
    if not weight_sq_valid(sq, weight, counts):
        return None
    index = {k: i for i, k in enumerate(keys)}
    if one_loss:
        wsq = _wsq(states, weight, sq, counts, hi[:, 0] + lo[:, 0], co[:, 0])
        if wsq is None:
            return None
        fields = (weight, hi[:, 0], lo[:, 0], co[:, 0], sq, wsq[0], wsq[1])
        return MomentsPack(template, keys, index, counts, fields, wsq[2])
    fit: list[np.ndarray] = [sq, weight, hi, lo, co]
    if template._shape:
        central = template.shape
        shape = _block(
            [s["shape"] for s in states],
            "moments",
            central.variables,
            len(central.indices),
            CENTRAL_MEAN_LIMIT,
            layout=_CENTRAL,
        )
        if shape is None:
            return None
        s_weight, s_hi, s_lo, s_mom = shape
        if not (np.abs(s_mom) <= central._limits).all():
            return None
        even = [i for i, k in enumerate(central.indices) if all(e % 2 == 0 for e in k)]
        if (s_mom[:, even] < 0).any():
            return None
        fit += [s_weight, s_hi, s_lo, s_mom]
    return FitPack(template, keys, index, counts, tuple(fit))


def _floats(values: list[Any]) -> np.ndarray | None:
    """``values`` as an array when every one is a Python float (the encoder writes floats;
    an int or a bool goes to the per-slice decoder)."""
    if not all(type(v) is float for v in values):
        return None
    return np.array(values, dtype=np.float64)


def _column(arrays: list[Any], rows: int) -> np.ndarray | None:
    """The ``(rows, 1)`` float64 arrays as one ``(k, rows)`` array of finite values, or None
    when any is of another type, dtype or shape, or not finite."""
    shape = (rows, 1)
    if not all(type(a) is np.ndarray and a.dtype == _F64 and a.shape == shape for a in arrays):
        return None
    out = np.concatenate(arrays, axis=1).T.copy() if arrays else np.zeros((0, rows))
    return out if np.isfinite(out).all() else None


def _block(
    blocks: list[Any],
    field: str,
    variables: int,
    sums: int,
    mean_limit: float,
    layout: frozenset[str] = _MOMENTS,
) -> tuple[np.ndarray, ...] | None:
    """``(weight, hi, lo, sums)`` of the ``Moments`` (``field`` "comoment") or
    ``CentralMoments`` (``field`` "moments") blocks of one column each: their weights floats in
    ``[0, WEIGHT_LIMIT]``, their means finite and within ``mean_limit`` (each part and their
    sum), their sums finite; None otherwise (the callers check the sums' bounds)."""
    if not all(type(b) is dict and b.keys() == layout for b in blocks):
        return None
    weight = _floats([b["weight"] for b in blocks])
    hi = _column([b["mean"] for b in blocks], variables)
    lo = _column([b["mean_low"] for b in blocks], variables)
    co = _column([b[field] for b in blocks], sums)
    if weight is None or hi is None or lo is None or co is None:
        return None
    if not ((weight >= 0).all() and (weight <= WEIGHT_LIMIT).all()):
        return None
    with np.errstate(over="ignore"):  # (forged means near float64's top: refused, not warned)
        if not (
            np.abs(hi + lo).max(initial=0.0) <= mean_limit
            and np.abs(hi).max(initial=0.0) <= mean_limit
            and np.abs(lo).max(initial=0.0) <= mean_limit
        ):
            return None
    return weight, hi, lo, co


def _wsq(
    states: list[Any],
    weight: np.ndarray,
    sq: np.ndarray,
    counts: np.ndarray,
    mean: np.ndarray,
    spread: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(wsq_mean, wsq_spread, has)`` of one-loss slices (zeros where a slice keeps none):
    ``regression._wsq.check_wsq_fields`` and ``check_wsq`` of every slice, operation for
    operation; None where either would refuse, or for a form other than what updates write."""
    a_list = [s["wsq_mean"] for s in states]
    q_list = [s["wsq_spread"] for s in states]
    for column in (a_list, q_list):
        if not all(type(a) is np.ndarray and a.dtype == _F64 and a.ndim == 1 for a in column):
            return None
    sizes = np.fromiter(map(len, a_list), np.int64, count=len(a_list))
    if not (np.fromiter(map(len, q_list), np.int64, count=len(q_list)) == sizes).all():
        return None
    if sizes.max(initial=0) > 1:
        return None
    has = sizes == 1
    # Left out only while every row weighs 1 (check_wsq_fields): sum w = sum w**2 <= count.
    bare = ~has
    if not ((weight[bare] == sq[bare]) & (weight[bare] <= counts[bare])).all():
        return None
    k = len(states)
    a, q = np.zeros(k), np.zeros(k)
    if has.any():
        a[has] = np.concatenate([x for x, h in zip(a_list, has.tolist(), strict=True) if h])
        q[has] = np.concatenate([x for x, h in zip(q_list, has.tolist(), strict=True) if h])
    known = ~np.isnan(a)
    if not (np.isfinite(a[known]).all() and (q[known] >= 0).all()):
        return None
    if not (np.isnan(q) == ~known).all() or not np.isfinite(q[known]).all():
        return None
    if (a[known] < 0).any():
        return None
    with np.errstate(all="ignore"):
        top = np.where((counts == weight) & (weight == sq), 1.0, np.sqrt(sq))
        dev = q + sq * np.square(a - mean)
        slack = sq * np.square(1e-8 * (np.abs(mean) + np.sqrt(spread / weight)))
        within = dev <= top * spread * (1 + 1e-6) + slack
    checked = has & known & (weight > 0) & (sq > 0)
    if not within[checked].all():
        return None
    return a, q, has
