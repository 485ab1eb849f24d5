"""Cohen's kappa from the confusion matrix of label-pair counts (unweighted, linear, quadratic).

Its state is the label metrics' :class:`~streammetrics.states.ContingencyCounts` (see
:mod:`.confusion`); the disagreement weights are never built as an L x L matrix for a sparse
table (:func:`kappa_weight_at`, :func:`kappa_weight_dot`).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .._intervals import kishes, normal_intervals, pairs
from ..errors import InputError
from ..uncertainty import NAN_INTERVAL, check_level, counts_delta_se, normal_interval
from ._confusion_base import _ConfusionMetric, unit_scale
from ._table_stack import counts_delta_ses, summaries

__all__ = ["CohenKappa"]


class CohenKappa(_ConfusionMetric):
    """Cohen's kappa between ``y_true`` and ``y_pred``, as ``cohen_kappa_score``.

    ``weights``: ``None``, ``"linear"`` or ``"quadratic"`` (distance between the positions of
    two labels in sorted order). ``nan`` where kappa is undefined. Exact.

    Examples
    --------
    >>> import streammetrics as sm
    >>> round(sm.CohenKappa().update([0, 1, 1, 2], [0, 1, 2, 2]).compute(), 6)
    0.636364
    """

    higher_is_better: ClassVar[bool | None] = True

    def __init__(self, weights: str | None = None) -> None:
        super().__init__()
        if weights not in (None, "linear", "quadratic"):
            raise InputError(f"weights: must be None, 'linear' or 'quadratic'; got {weights!r}")
        self._add_config(weights=weights)

    def _compute(self) -> float:
        if self.counts.sparse:
            return self._sparse_kappa(unit=True)[0]
        _, table = self._table()
        conf = table.astype(np.float64)
        total = conf.sum()
        if total == 0:
            return math.nan
        # Counts scaled by the power of two bringing the total to [0.5, 1), as
        # MatthewsCorrCoef scales them: exact, the same value to the bit, but the products of
        # margins no longer underflow (weights of 1e-160 lost digits, of 1e-170 gave nan).
        conf *= float(unit_scale(np.array([total], dtype=np.float64))[0])
        sum0, sum1 = conf.sum(axis=0), conf.sum(axis=1)
        with np.errstate(over="ignore", invalid="ignore"):  # absurd weights give nan
            return self._kappa(conf, np.outer(sum0, sum1) / sum0.sum())

    def _compute_tables(self, stack: np.ndarray) -> list[Any] | None:
        """:meth:`_compute` of many dense tables at once (``_ConfusionMetric``), the same
        operations on a ``(g, L, L)`` stack."""
        g, size = stack.shape[0], stack.shape[1]
        total = summaries(stack)[3]
        conf = stack * unit_scale(total)[:, None, None]
        sum0, sum1 = conf.sum(axis=1), conf.sum(axis=2)
        w = self._disagreement(size)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            expected = sum0[:, :, None] * sum1[:, None, :] / sum0.sum(axis=1)[:, None, None]
            den = (w * expected).reshape(g, -1).sum(axis=1)
            value = 1 - (w * conf).reshape(g, -1).sum(axis=1) / den
        out: list[Any] = np.where((total == 0) | (den == 0), math.nan, value).tolist()
        return out

    def _interval_tables(
        self,
        stack: np.ndarray,
        count: np.ndarray,
        weight_sq: np.ndarray,
        level: float,
    ) -> list[Any] | None:
        """:meth:`interval` of many dense tables at once, the same operations on a ``(g, L,
        L)`` stack."""
        g, size = stack.shape[0], stack.shape[1]
        _, rows, cols, n = summaries(stack)
        w = self._disagreement(size)
        with np.errstate(all="ignore"):
            a = (w * stack).reshape(g, -1).sum(axis=1)
            cw = (cols[:, :, None] * w).sum(axis=1)  # each table's cols @ w
            wr = (w * rows[:, None, :]).sum(axis=2)  # and w @ rows
            b = (cw * rows).sum(axis=1) / n
            db = (wr[:, None, :] + cw[:, :, None] - b[:, None, None]) / n[:, None, None]
            b3 = b[:, None, None]
            grad = -(w * b3 - a[:, None, None] * db) / (b3 * b3)
            value = 1.0 - a / b
        se = counts_delta_ses(stack, grad, kishes(n, weight_sq))
        low, high = normal_intervals(value, se, level, (-1.0, 1.0))
        return pairs(low, high, (count == 0) | ~(n > 0) | (b == 0))

    def _sparse_kappa(
        self, unit: bool = False
    ) -> tuple[float, float, float, np.ndarray, np.ndarray]:
        """``(kappa, A, B, rows, cols)`` from the filled cells, without the L x L weights:
        ``A = sum w_ij C_ij`` over the filled cells, ``B = cols @ w @ rows / n`` in O(L).
        ``unit``: the counts scaled to a total in [0.5, 1) first (for the value: see
        ``_compute``)."""
        r, c, v = self.counts.filled()
        _, rows, cols = self._margins()
        n = float(rows.sum())
        if n == 0:
            return math.nan, math.nan, math.nan, rows, cols
        if unit:
            scale = float(unit_scale(np.array([n], dtype=np.float64))[0])
            v = v.astype(np.float64) * scale
            rows, cols = rows * scale, cols * scale
            n = float(rows.sum())
        weights = self._config["weights"]
        with np.errstate(over="ignore", invalid="ignore"):
            a = float(kappa_weight_at(weights, r, c) @ v.astype(np.float64))
            b = float(cols @ kappa_weight_dot(weights, rows)) / n
            kappa = math.nan if b == 0 else 1.0 - a / b
        return kappa, a, b, rows, cols

    def _kappa(self, conf: np.ndarray, expected: np.ndarray) -> float:
        k = conf.shape[0]
        if self._config["weights"] is None:
            w = np.ones((k, k))
            np.fill_diagonal(w, 0)
        else:
            pos = np.arange(k, dtype=np.float64)
            diff = pos[None, :] - pos[:, None]
            w = np.abs(diff) if self._config["weights"] == "linear" else diff**2
        den = float((w * expected).sum())
        if den == 0:
            return math.nan
        return float(1 - (w * conf).sum() / den)

    def _disagreement(self, k: int) -> np.ndarray:
        if self._config["weights"] is None:
            w = np.ones((k, k))
            np.fill_diagonal(w, 0)
            return w
        pos = np.arange(k, dtype=np.float64)
        diff = pos[None, :] - pos[:, None]
        out: np.ndarray = np.abs(diff) if self._config["weights"] == "linear" else diff**2
        return out

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Delta-method interval of kappa (unweighted, linear or quadratic) over the
        multinomial confusion counts, with the analytic gradient of ``1 - A / B``
        (``A = sum w_ij C_ij``, ``B = sum w_ij c_i r_j / n``; Fleiss, Cohen and Everitt 1969,
        "Large sample standard errors of kappa and weighted kappa", Psychological Bulletin 72,
        323-327), normal, on Kish's effective sample size, clipped to [-1, 1] (where every
        weighting of kappa lies). O(L**2).
        """
        level = check_level(level)
        if self.count == 0:
            return NAN_INTERVAL
        if self.counts.sparse:
            return self._sparse_interval(level)
        _, table = self._table()
        conf = table.astype(np.float64)
        n = float(conf.sum())
        if n <= 0:
            return NAN_INTERVAL
        w = self._disagreement(conf.shape[0])
        cols, rows = conf.sum(axis=0), conf.sum(axis=1)
        a = float((w * conf).sum())
        # Sums of products, not ``@`` (BLAS's order): ``_interval_tables`` takes these sums.
        cw, wr = (cols[:, None] * w).sum(axis=0), (w * rows[None, :]).sum(axis=1)
        b = float((cw * rows).sum()) / n
        if b == 0:
            return NAN_INTERVAL
        # dB/dC_kl = ((w @ r)_l + (c @ w)_k - B) / n, for the cell (k true, l predicted).
        db = (wr[None, :] + cw[:, None] - b) / n
        grad = -(w * b - a * db) / (b * b)
        se = counts_delta_se(conf, grad, self._n_eff())
        return normal_interval(1.0 - a / b, se, level, (-1.0, 1.0))

    def _sparse_interval(self, level: float) -> tuple[float, float]:
        """:meth:`interval` from the filled cells (empty cells add nothing to the variance)."""
        kappa, a, b, rows, cols = self._sparse_kappa()
        n = float(rows.sum())
        if not n > 0 or b == 0 or math.isnan(b):
            return NAN_INTERVAL
        weights = self._config["weights"]
        r, c, v = self.counts.filled()
        db = (kappa_weight_dot(weights, rows)[c] + kappa_weight_dot(weights, cols)[r] - b) / n
        grad = -(kappa_weight_at(weights, r, c) * b - a * db) / (b * b)
        se = counts_delta_se(v.astype(np.float64), grad, self._n_eff())
        return normal_interval(kappa, se, level, (-1.0, 1.0))


# -- Cohen's kappa disagreement weights without the L x L matrix -------------------------------


def kappa_weight_at(weights: str | None, r: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The disagreement weight ``w_rc`` of cells (row r, column c): 1 off the diagonal
    (``None``), ``|r - c|`` (``"linear"``) or ``(r - c)**2`` (``"quadratic"``), positions in
    sorted label order."""
    diff = (r - c).astype(np.float64)
    out: np.ndarray = (
        (diff != 0).astype(np.float64)
        if weights is None
        else (np.abs(diff) if weights == "linear" else diff * diff)
    )
    return out


def kappa_weight_dot(weights: str | None, x: np.ndarray) -> np.ndarray:
    """``w @ x`` for the (symmetric) disagreement weights of :func:`kappa_weight_at`, in O(L):
    ``sum(x) - x`` unweighted; prefix sums for linear; three moments for quadratic."""
    x = np.asarray(x, dtype=np.float64)
    if weights is None:
        out: np.ndarray = float(x.sum()) - x
        return out
    pos = np.arange(len(x), dtype=np.float64)
    if weights == "quadratic":
        s0, s1, s2 = float(x.sum()), float(pos @ x), float((pos * pos) @ x)
        return pos * pos * s0 - 2.0 * pos * s1 + s2
    # sum_j |i - j| x_j = i X_<i - S_<i + S_>i - i X_>i with X, S the sums of x_j and j x_j.
    below = np.concatenate(([0.0], np.cumsum(x)[:-1]))
    below_moment = np.concatenate(([0.0], np.cumsum(pos * x)[:-1]))
    above = float(x.sum()) - below - x
    above_moment = float(pos @ x) - below_moment - pos * x
    linear: np.ndarray = pos * below - below_moment + above_moment - pos * above
    return linear
