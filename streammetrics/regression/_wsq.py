"""The loss's moments under the weights squared, for the linearised variance of a weighted
mean loss (``sum w**2 (x - m)**2 = spread + weight_sq (a - m)**2`` about the ``w**2``-mean
``a``): one batch's, merged by Chan's formula, and the decoder's check of them."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

__all__ = ["check_wsq", "check_wsq_fields", "wsq_batch", "wsq_merged"]


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
        if not total > 0:
            a = a1
        elif s2 > s1:  # from the heavier side, as Moments steps its mean
            a = a2 - d * (s1 / total)
        else:
            a = a1 + d * (s2 / total)
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


def check_wsq_fields(
    a: np.ndarray,
    q: np.ndarray,
    width: int | None,
    totals: tuple[float, float, int],
    moments: Callable[[], tuple[np.ndarray, np.ndarray]],
) -> None:
    """The decoder's check of a state's ``wsq_mean`` (``a``) and ``wsq_spread`` (``q``), for a
    state of ``width`` outputs (None: nothing seen) whose moments hold ``totals`` (``sum w``,
    ``sum w**2``, rows) and, from ``moments()``, the loss's mean and co-moment per output:
    ``ValueError`` unless they are what a stream gives."""
    weight, weight_sq, count = totals
    if a.ndim != 1 or a.shape != q.shape or a.size not in (0, width or 0):
        raise ValueError("wsq_mean and wsq_spread hold one value per output, or none")
    if not a.size and width is not None:
        # Left out only while every row weighs 1 (or 0: such rows add nothing), as a weighted
        # update writes them otherwise: then sum w = sum w**2 <= count. A forged weighted
        # state without them gave intervals of zero or infinite width, and bytes its next
        # valid update made unloadable (0.8.11).
        if not (weight == weight_sq and weight <= count):
            raise ValueError(
                "wsq_mean and wsq_spread are left out only for rows of weight 1 "
                "(sum w = sum w**2 <= count)"
            )
    if not a.size:
        return  # (nothing below reads an empty pair: every check of it passes)
    known = ~np.isnan(a)
    if not (np.isfinite(a[known]).all() and (q[known] >= 0).all()):
        raise ValueError("wsq_mean must be finite and wsq_spread non-negative (or nan)")
    if not (np.isnan(q) == ~known).all() or not np.isfinite(q[known]).all():
        raise ValueError("wsq_mean and wsq_spread are known (finite) together")
    if a.size and known.any():
        mean, spread = moments()
        check_wsq(a[known], q[known], mean[known], spread[known], weight, weight_sq, count)
