"""The fold every sparse state shares: sort entries by their key columns and fold runs of equal
keys (sum some columns, take the smallest or largest of others), and the one policy for when a
store folds the batches it queued.

Used by the score store (``states.buckets``: exact and ``"real"`` keys), the sparse contingency
cells (``states._cells``, ``states.contingency``), the per-group score
tables (``states._group_table``) and the detection sketch (``detection._sketch``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["QUEUE_MIN", "SMALL_RUN", "fold_equal", "pushed", "queue_full"]

#: A store folds its queue of reduced batches into its main table once the queue holds more than
#: ``max(QUEUE_FACTOR * held, QUEUE_MIN)`` entries: a stream of ``m`` entries is then folded
#: O(log m) times in all (amortised), and small stores do not fold on every update.
QUEUE_FACTOR = 1
QUEUE_MIN = 1 << 16


def queue_full(
    queued: int, held: int, factor: int = QUEUE_FACTOR, minimum: int = QUEUE_MIN
) -> bool:
    """Whether a queue of ``queued`` entries should now be folded into ``held`` ones. Stores
    whose fold costs more per entry than a sort (``GroupedScores``) pass a larger ``factor``
    and ``minimum``."""
    return queued > max(factor * held, minimum)


#: Queued runs shorter than this are folded among themselves as they arrive (:func:`pushed`).
SMALL_RUN = 1 << 13

Run = tuple[Any, ...]


def pushed(queue: tuple[Run, ...], run: Run, fold: Callable[[list[Run]], Run]) -> tuple[Run, ...]:
    """``queue`` with ``run`` appended, for stores that queue sorted runs (``run[0]`` the keys)
    and fold them into their table once :func:`queue_full`.

    Updates of one row each would otherwise make the queue a long tuple of one-entry runs, each
    update paying for every run (counting the queue, copying the tuple). So while the last run
    is no longer than half the one before it, and that one is short (below :data:`SMALL_RUN`),
    the two are folded (``fold``, which keeps their order): the short runs then form a binary
    counter, O(log) of them, each entry folded O(log) times, and long runs (batches) are never
    folded here."""
    runs = [*queue, run]
    while (
        len(runs) >= 2 and len(runs[-2][0]) < SMALL_RUN and len(runs[-2][0]) <= 2 * len(runs[-1][0])
    ):
        last = runs.pop()
        runs[-1] = fold([runs[-1], last])
    return tuple(runs)


def fold_equal(
    keys: Sequence[np.ndarray],
    sums: Sequence[np.ndarray] = (),
    mins: Sequence[np.ndarray] = (),
    maxs: Sequence[np.ndarray] = (),
    order: np.ndarray | None = None,
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Sort entries by ``keys`` (lexicographically, the first the slowest) and fold each run of
    equal keys into one entry: ``sums`` added, ``mins`` and ``maxs`` reduced.

    ``order`` may give the sorting permutation (a caller with a faster sort for its keys). With
    one key the sort is a stable one (timsort: linear on concatenated sorted runs, the common
    case of a store folding its queue). Returns ``(keys, sums, mins, maxs)`` as lists, in the
    order given; empty inputs come back as they are.

    >>> k, s, lo, hi = fold_equal([np.array([3, 1, 3])], [np.array([1, 2, 3])],
    ...                           [np.array([0.5, 0.1, 0.2])], [np.array([0.5, 0.1, 0.2])])
    >>> k[0].tolist(), s[0].tolist(), lo[0].tolist(), hi[0].tolist()
    ([1, 3], [2, 4], [0.1, 0.2], [0.1, 0.5])
    """
    if len(keys[0]) == 0:
        return list(keys), list(sums), list(mins), list(maxs)
    if order is None:
        if len(keys) == 1:
            order = np.argsort(keys[0], kind="stable")
        else:
            order = np.lexsort(tuple(reversed(keys)))
    sorted_keys = [k[order] for k in keys]
    edge = np.ones(len(order), dtype=bool)
    if len(order) > 1:
        edge[1:] = sorted_keys[0][1:] != sorted_keys[0][:-1]
        for k in sorted_keys[1:]:
            edge[1:] |= k[1:] != k[:-1]
    starts = np.flatnonzero(edge)
    if len(starts) == len(order):  # every key distinct (a batch of exact scores): no folding
        return (
            list(sorted_keys),
            [c[order] for c in sums],
            [c[order] for c in mins],
            [c[order] for c in maxs],
        )
    lengths = np.diff(np.append(starts, len(order)))
    several = np.flatnonzero(lengths > 1)
    if 4 * len(several) < len(starts):
        # Few runs fold (a table with a few new entries): each column is gathered at the runs'
        # first entries, and only the runs of several entries are reduced (``reduceat`` costs
        # per run, about 10 ns, however short). The same runs in the same order: the same sums.
        first = order[starts]
        size = lengths[several]
        at = np.cumsum(size) - size
        folded = order[np.repeat(starts[several] - at, size) + np.arange(int(size.sum()))]

        def reduced(c: np.ndarray, ufunc: np.ufunc) -> np.ndarray:
            part = ufunc.reduceat(c[folded], at)
            out: np.ndarray = c[first].astype(part.dtype)  # (reduceat widens small integers)
            out[several] = part
            return out

        return (
            [k[starts] for k in sorted_keys],
            [reduced(c, np.add) for c in sums],
            [reduced(c, np.minimum) for c in mins],
            [reduced(c, np.maximum) for c in maxs],
        )
    return (
        [k[starts] for k in sorted_keys],
        [np.add.reduceat(c[order], starts) for c in sums],
        [np.minimum.reduceat(c[order], starts) for c in mins],
        [np.maximum.reduceat(c[order], starts) for c in maxs],
    )
