"""Binary F-beta's interval at the edges of its range, where the delta method's is a point."""

from __future__ import annotations

import math

from ..uncertainty import wilson

__all__ = ["RECALL_BETA2", "f_edge"]

#: Past this ``beta**2`` F-beta is scored as recall: its precision term weighs at most
#: ``2**100 / beta**2`` (weights total at most 2**100), below 2**-600, while ``(1 + beta**2) *
#: tp`` may overflow (``beta=1e154`` gave nan, 0.8.11; an overflowing ``beta**2`` already
#: scored as recall).
RECALL_BETA2 = 2.0**700


def f_edge(
    tp: float, pred: float, true: float, beta: float, design: float, level: float
) -> tuple[float, float] | None:
    """Binary F-beta's interval at an edge of its range (and always for ``beta`` 0 or past
    2**350), or None off the edges.

    With no true positive (F = 0) or no miss (F = 1), every filled cell has a zero gradient, so
    the delta method's variance is 0 and its interval a point, which covered the truth in 75%
    of a review's streams (0.8.13). There: given the rows that are positive or predicted so
    (``u = tp + fp + fn``), ``tp`` is binomial with ``theta = P(tp | u)``, and
    ``F = (1 + b2) theta / ((1 + b2) theta + b2 phi + (1 - theta - phi))`` for the unknown
    share ``phi`` of misses that are false negatives. The Wilson interval of ``theta`` is
    mapped through the bounds over ``phi``: exact for F1 (``2 theta / (1 + theta)``),
    conservative for other betas. ``beta`` 0 and past 2**350 are precision and recall: their
    Wilson intervals. ``design``: Kish's ratio of effective to counted rows.
    """
    b2 = beta * beta
    if b2 > RECALL_BETA2 or beta == 0:
        # On and off the edges (0.8.16 took only a set without any miss as an edge, and gave
        # precision without a false positive the point (1, 1)).
        den = true if beta else pred
        return wilson(tp * design, den * design, level) if den > 0 else (math.nan, math.nan)
    union = pred + true - tp
    if not (tp == 0 or tp == union) or union <= 0:
        return None

    def bound(theta: float, cost: float) -> float:
        return (1 + b2) * theta / ((1 + b2) * theta + cost * (1 - theta)) if theta else 0.0

    low, high = wilson(tp * design, union * design, level)
    return (bound(low, max(b2, 1.0)), bound(high, min(b2, 1.0)))
