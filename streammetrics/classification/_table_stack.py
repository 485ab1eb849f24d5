"""Many dense confusion tables of one width, scored at once as each table's state scores itself.

``Sliced(F1(average="macro")).intervals()`` over 100,000 slices made one state per slice and
ran its delta method (central differences of ``compute()`` over the table's 3L + 1 summaries),
about 100 µs a slice: 10 s. Here a stack ``(g, L, L)`` of tables goes through the same IEEE
operations as one table, on every table at once:

- each reduction runs along the axis the state's runs along, and a row of a contiguous stack is
  summed as the same row alone is (numpy sums the innermost axis pairwise, row by row, and an
  outer axis element by element in order);
- every elementwise step is the state's step, in its order, with Python's ``max`` written as
  the ``np.where`` that picks the same operand.

So every table gets its own state's floats to the bit; the tests compare ``repr``. A function
here answers None for a table it cannot score this way, and the caller asks that table's state.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..uncertainty import _GRAD_BUDGET

__all__ = ["Summaries", "counts_delta_ses", "delta_ses", "summaries"]

#: ``(diagonal, row sums, column sums, total)`` of every table of a stack, float64.
Summaries = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
Confusion = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def summaries(stack: np.ndarray) -> Summaries:
    """The diagonal, row sums, column sums and total of every table of a float64 ``(g, L, L)``
    stack, as ``confusion_delta_se`` and the state's margins take them from one table."""
    g = len(stack)
    diagonal = np.ascontiguousarray(np.diagonal(stack, 0, 1, 2))
    return diagonal, stack.sum(axis=2), stack.sum(axis=1), stack.reshape(g, -1).sum(axis=1)


def delta_ses(
    stack: np.ndarray, f: Confusion, n_eff: np.ndarray, samples: np.ndarray
) -> np.ndarray:
    """``confusion_delta_se(table, f, n_eff, samples)`` of every table of a float64 ``(g, L, L)``
    stack, with ``f`` (vectorised over a leading axis, as there) evaluated a bounded number of
    tables at a time; ``n_eff`` and ``samples`` (the rows counted) per table."""
    g, size = stack.shape[0], stack.shape[1]
    m = 3 * size + 1
    out = np.empty(g)
    chunk = max(1, _GRAD_BUDGET // (2 * m * m))
    for lo in range(0, g, chunk):
        hi = min(lo + chunk, g)
        out[lo:hi] = _delta_ses(stack[lo:hi], f, n_eff[lo:hi], samples[lo:hi])
    return out


def _delta_ses(c: np.ndarray, f: Confusion, n_eff: np.ndarray, samples: np.ndarray) -> np.ndarray:
    g, size = c.shape[0], c.shape[1]
    m = 3 * size + 1
    diagonal, rows, cols, n = summaries(c)
    with np.errstate(all="ignore"):
        unit = np.where(samples != 0, n / np.where(samples != 0, samples, 1), 1.0)
        # summary_gradient: every summary moved by its step up, then down, one at a time.
        base = np.concatenate([diagonal, rows, cols, n[:, None]], axis=1)
        step = 1e-6 * np.maximum(np.abs(base), unit[:, None])
        points = np.repeat(base[:, None, :], 2 * m, axis=1)
        at = np.arange(m)
        points[:, at, at] += step
        points[:, m + at, at] -= step
        flat = points.reshape(g * 2 * m, m)
        values = f(
            flat[:, :size], flat[:, size : 2 * size], flat[:, 2 * size : 3 * size], flat[:, -1]
        ).reshape(g, 2 * m)
        grad = (values[:, :m] - values[:, m:]) / (2 * step)
        finite = np.isfinite(grad).all(axis=1)  # summary_gradient gives None otherwise
        e, a, b, z = grad[:, :size], grad[:, size : 2 * size], grad[:, 2 * size : -1], grad[:, -1]
        # confusion_delta_se: h_ij = a_i + b_j + z, and e_i on the diagonal
        h = a[:, :, None] + b[:, None, :] + z[:, None, None]
        h[:, np.arange(size), np.arange(size)] += e
    return np.where(finite, counts_delta_ses(c, h, n_eff), np.nan)


def counts_delta_ses(c: np.ndarray, h: np.ndarray, n_eff: np.ndarray) -> np.ndarray:
    """``counts_delta_se(table, grad, n_eff)`` of every table of a float64 ``(g, L, L)`` stack
    ``c``, with the gradients ``h`` stacked alike."""
    g = len(c)
    n = c.reshape(g, -1).sum(axis=1)
    with np.errstate(all="ignore"):
        finite = np.isfinite(h).reshape(g, -1).all(axis=1)
        mean = (c * h).reshape(g, -1).sum(axis=1)
        var = (c * h * h).reshape(g, -1).sum(axis=1) - mean * mean / n
        var = var * (n / n_eff)
        se = np.sqrt(np.where(0.0 > var, 0.0, var))
    return np.where((n > 0) & finite & (n_eff > 0), se, np.nan)
