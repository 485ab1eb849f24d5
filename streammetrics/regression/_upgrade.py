"""Regression states of older schemas, upgraded when decoded.

Their values and merges are unchanged; what an older schema did not keep is unknown for a
non-empty state, so ``interval`` is ``nan, nan`` (or keeps Kish's rule) until the state is reset:

* schema 1 (0.1.0) kept neither the loss's second moment nor ``weight_sq``: the co-moment row
  is zero and ``weight_sq`` nan;
* schema 2 kept no moments of the loss under the weights squared (``wsq_mean``,
  ``wsq_spread``): none are needed for a state of unit weights (``sum (w - 1)**2 = 0`` when
  ``n = sum w = sum w**2``), else they are nan;
* schema 2 of ``R2Score`` and ``ExplainedVariance`` kept no ``shape`` (fourth moments): it
  starts empty and ``weight_sq`` becomes nan.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["upgraded"]


def upgraded(state: Any, schema: int, loss: bool, shape: Any) -> Any:
    """``state`` (a decoded tree of ``schema``) in the current schema. ``loss``: the metric
    keeps a per-sample loss's moments; ``shape``: the wire form of an empty ``shape`` block,
    for metrics that keep one (None otherwise)."""
    if not isinstance(state, dict):
        return state  # (the decoder refuses it)
    if schema < 2 and "weight_sq" not in state:
        state = _with_weight_sq(state, loss)
    if loss and schema < 3:
        moments = state.get("moments")
        mean = moments.get("mean") if isinstance(moments, dict) else None
        weight = moments.get("weight") if isinstance(moments, dict) else None
        n, sq = state.get("count"), state.get("weight_sq")
        unit = isinstance(n, int) and n == weight == sq
        width = mean.shape[1] if isinstance(mean, np.ndarray) and mean.ndim == 2 else 0
        unknown = np.zeros(0) if unit else np.full(width, math.nan)
        state = {**state, "wsq_mean": unknown, "wsq_spread": unknown.copy()}
    if shape is not None and schema < 3 and "shape" not in state:
        known = state.get("count") == 0
        sq = state.get("weight_sq") if known else math.nan
        state = {**state, "shape": shape, "weight_sq": sq}
    return state


def _with_weight_sq(state: dict[str, Any], loss: bool) -> dict[str, Any]:
    """A schema-1 state with the loss's co-moment row (zero) and ``weight_sq``."""
    moments = state.get("moments")
    if loss and isinstance(moments, dict):
        co = moments.get("comoment")
        if isinstance(co, np.ndarray) and co.ndim == 2:
            extra = np.zeros((1, co.shape[1]))
            moments = {**moments, "comoment": np.concatenate([co, extra])}
    empty = state.get("count") == 0
    return {**state, "moments": moments, "weight_sq": 0.0 if empty else math.nan}
