"""The loss's moments under the weights squared, for the linearised variance of a weighted
mean loss (``sum w**2 (x - m)**2 = spread + weight_sq (a - m)**2`` about the ``w**2``-mean
``a``): one batch's, merged by Chan's formula, and the decoder's check of them."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["check_wsq", "wsq_batch", "wsq_merged"]


def wsq_batch(
    x: np.ndarray, weights: np.ndarray | None
) -> tuple[float, np.ndarray, np.ndarray] | None:
    """``(sum w**2, a, spread)`` of the losses ``x`` (``(n, outputs)``) under ``weights**2``
    (all 1 when None); None when every weight is 0."""
    with np.errstate(over="ignore", invalid="ignore"):
        w2 = np.ones(len(x)) if weights is None else weights * weights
        s2 = float(w2.sum())
        if s2 == 0.0:
            return None
        a = (w2 @ x) / s2
        return s2, a, w2 @ np.square(x - a)


def wsq_merged(
    first: tuple[float, np.ndarray, np.ndarray], second: tuple[float, np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Chan's merge of two (weight, mean, spread) triples, per output; an empty side (nothing
    seen) gives the other. Non-finite results (past float64, or unknown) become nan."""
    s1, a1, q1 = first
    s2, a2, q2 = second
    if not a1.size:
        return a2, q2
    if not a2.size:
        return a1, q1
    total = s1 + s2
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        d = a2 - a1
        a = a1 + d * (s2 / total) if total > 0 else a1
        q = q1 + q2 + d * d * (s1 * s2 / total) if total > 0 else q1 + q2
    bad = ~(np.isfinite(a) & np.isfinite(q))
    if bad.any():
        a, q = np.where(bad, math.nan, a), np.where(bad, math.nan, q)
    return np.asarray(a, dtype=np.float64), np.asarray(q, dtype=np.float64)


def check_wsq(
    a: np.ndarray,
    q: np.ndarray,
    mean: np.ndarray,
    spread: np.ndarray,
    weight: float,
    weight_sq: float,
    count: int,
) -> None:
    """``ValueError`` unless ``a`` and ``q`` (known outputs) are what a stream gives: a
    non-negative loss's mean under ``w**2`` is non-negative, and ``sum w**2 (x - m)**2 <=
    max(w) sum w (x - m)**2`` (``spread``), ``max(w)`` at most ``sqrt(weight_sq)``, and 1 when
    every weight is 1 (``count = sum w = sum w**2``); with slack for rounding."""
    if (a < 0).any():
        raise ValueError("wsq_mean is the mean of a non-negative loss: it must be >= 0")
    if not (weight > 0 and weight_sq > 0):
        return
    top = 1.0 if count == weight == weight_sq else math.sqrt(weight_sq)
    with np.errstate(all="ignore"):  # (forged values overflow: refused below, not warned)
        dev = q + weight_sq * np.square(a - mean)
        # The mean under w**2 is one plain sum (its rounding grows with the rows: 66 steps
        # were seen at 5,000 rows), against the moments' compensated mean: 1e-8 of the
        # loss's size as slack, far above that and far below a forged mean's effect.
        slack = weight_sq * np.square(1e-8 * (np.abs(mean) + np.sqrt(spread / weight)))
        within = dev <= top * spread * (1 + 1e-6) + slack
    if not within.all():
        raise ValueError(
            "wsq_spread and wsq_mean give sum w**2 (x - m)**2 above what the moments allow"
        )
