"""The sums of one contingency table that the external clustering indices draw on.

Pure functions of a table (pair counts, entropies, mutual information, the expected mutual
information of adjusted MI) and :class:`_Table`, which derives and caches them for one table.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from ..states.contingency import ContingencyCounts

__all__ = ["expected_mutual_info"]

_AVERAGE_METHODS = ("arithmetic", "geometric", "min", "max")
_EPS = float(np.finfo(np.float64).eps)
#: ``|MI - EMI|`` below this share of the entropies is rounding: the labellings agree at chance.
_AMI_CHANCE = 1e-12
# The expected-MI window keeps the cells where the hypergeometric mass can exceed exp(-90)
# (~1e-39): see ``_half_window``.
_TAIL_LOG = 90.0
_GRID_BUDGET = 1 << 21


# -- pure functions of a contingency table ------------------------------------------------------


def _comb2_sum(values: np.ndarray, n_total: int) -> int:
    """Exact sum of ``v (v - 1) / 2`` over ``values`` (non-negative counts summing to at most
    ``n_total``), as a Python int."""
    v = values[values > 1]
    if n_total <= 1 << 32:
        u = v.astype(np.uint64)
        return int((u * (u - np.uint64(1)) // np.uint64(2)).sum(dtype=np.uint64))
    obj = v.astype(object)
    return int((obj * (obj - 1) // 2).sum())


def _entropy(counts: np.ndarray) -> float:
    # scikit-learn's _entropy, from counts: natural log, 0.0 for a single label.
    pi = counts[counts > 0].astype(np.float64)
    if pi.size <= 1:
        return 0.0
    total = float(pi.sum())
    return float(-np.sum((pi / total) * (np.log(pi) - math.log(total))))


def _mutual_info(
    nzx: np.ndarray, nzy: np.ndarray, counts: np.ndarray, rows: np.ndarray, cols: np.ndarray
) -> float:
    # scikit-learn's mutual_info_score(contingency=...) from the filled cells (row nzx, column
    # nzy, in row-major order), with log(a * b) as log a + log b so that no int64 product can
    # overflow.
    if rows.size == 1 or cols.size == 1:
        return 0.0
    nz = counts.astype(np.float64)
    total = float(nz.sum())
    log_outer = -(
        np.log(rows[nzx].astype(np.float64)) + np.log(cols[nzy].astype(np.float64))
    ) + 2.0 * math.log(total)
    p = nz / total
    mi = p * (np.log(nz) - math.log(total)) + p * log_outer
    mi = np.where(np.abs(mi) < _EPS, 0.0, mi)
    return float(max(float(mi.sum()), 0.0))


def _average(u: float, v: float, method: str) -> float:
    if method == "min":
        return min(u, v)
    if method == "geometric":
        return math.sqrt(u * v)
    if method == "arithmetic":
        return (u + v) / 2.0
    return max(u, v)


def _half_window(draws: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Distance from the mean beyond which the hypergeometric mass is below exp(-_TAIL_LOG).

    A hypergeometric count is at least as concentrated as the binomial(draws, p) count with the
    same mean (Hoeffding 1963, section 6), so Bernstein's inequality
    ``P(|X - mu| >= t) <= 2 exp(-t**2 / (2 (var + t / 3)))`` bounds its tails; solving
    ``t**2 / (2 var + 2 t / 3) = L`` for t gives the half-width (plus one cell for rounding).
    """
    var = draws * p * (1.0 - p)
    third = _TAIL_LOG / 3.0
    return np.asarray(third + np.sqrt(third * third + 2.0 * _TAIL_LOG * var) + 1.0)


def expected_mutual_info(a: np.ndarray, b: np.ndarray) -> float:
    """Expected mutual information (nats) of two random labellings with marginals ``a``, ``b``.

    The expectation under the permutation (hypergeometric) model of Vinh, Epps and Bailey (2010),
    as scikit-learn's ``expected_mutual_information``. Vectorised: the sum depends on a pair of
    marginals only through their values, so it runs over distinct row sums x distinct column sums
    (weighted by multiplicity), with the cell counts of each pair as one numpy axis, restricted to
    the window where the hypergeometric mass is not negligible (Bernstein: what is left out is
    below 1e-38 of it). Time: O(U_a * U_b * (sd + 60)) for U distinct marginal values and sd the
    standard deviation of a cell count,
    against scikit-learn's O(R * C * min(a, b)) Python-level loop iterations.
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    a, b = a[a > 0], b[b > 0]
    if a.size <= 1 or b.size <= 1:
        return 0.0
    n = int(a.sum())
    ua, ca = np.unique(a, return_counts=True)
    ub, cb = np.unique(b, return_counts=True)
    log_n, gln_n = math.log(n), float(gammaln(n + 1))
    fa, fb = ua.astype(np.float64), ub.astype(np.float64)
    gln_a = gammaln(fa + 1) + gammaln(n - fa + 1) - gln_n
    gln_b = gammaln(fb + 1) + gammaln(n - fb + 1)
    log_a, log_b = np.log(fa), np.log(fb)

    # Window of cell counts per (a, b) pair: [lo, hi] within the support [max(1, a+b-n), min(a, b)].
    draws = np.minimum(fa[:, None], fb[None, :])
    mean = fa[:, None] * fb[None, :] / n
    half = _half_window(draws, np.maximum(fa[:, None], fb[None, :]) / n)
    lo = np.maximum(np.maximum(1.0, fa[:, None] + fb[None, :] - n), np.floor(mean - half))
    hi = np.minimum(draws, np.ceil(mean + half))
    width = np.maximum(hi - lo + 1.0, 0.0)
    row_width = width.max(axis=1)

    emi = 0.0
    i, n_rows = 0, len(ua)
    while i < n_rows:
        # Grow a chunk of rows while the (rows, columns, cells) grid stays within budget.
        j = i + 1
        w = row_width[i]
        while j < n_rows and (j - i + 1) * len(ub) * max(w, row_width[j]) <= _GRID_BUDGET:
            w = max(w, row_width[j])
            j += 1
        w_int = int(w)
        if w_int > 0:
            emi += _emi_rows(
                fa[i:j, None],
                fb[None, :],
                lo[i:j],
                np.maximum(hi, lo)[i:j],
                n,
                w_int,
                gln_a[i:j, None] + gln_b[None, :],
                log_n - log_a[i:j, None, None] - log_b[None, :, None],
                ca[i:j].astype(np.float64),
                cb.astype(np.float64),
            )
        i = j
    return emi


def _emi_rows(
    A: np.ndarray,
    B: np.ndarray,
    lo_c: np.ndarray,
    hi_c: np.ndarray,
    n: int,
    width: int,
    gln_ab: np.ndarray,
    log_scale: np.ndarray,
    wa: np.ndarray,
    wb: np.ndarray,
) -> float:
    """The EMI terms of a block of (a, b) pairs over their cell windows, ``width`` cells at
    most, walked in slices of at most ``_GRID_BUDGET`` grid cells, so that memory stays bounded
    however large ``n`` (the window grows as sqrt(n))."""
    # log P(n_ij = lo) from log-gamma once per pair; the rest of the window by the ratio
    # P(m + 1) / P(m) = (a - m)(b - m) / ((m + 1)(n - a - b + m + 1)), summed in log space:
    # one log per cell instead of four log-gamma calls.
    carry = (
        gln_ab
        - gammaln(lo_c + 1)
        - gammaln(A - lo_c + 1)
        - gammaln(B - lo_c + 1)
        - gammaln(n - A - B + lo_c + 1)
    )
    A3, B3, hi3 = A[:, :, None], B[:, :, None], hi_c[:, :, None]

    def log_ratio(m: np.ndarray) -> np.ndarray:
        stepping = m < (hi3 if m.ndim == 3 else hi_c)
        a, b = (A3, B3) if m.ndim == 3 else (A, B)
        num = np.where(stepping, (a - m) * (b - m), 1.0)
        den = np.where(stepping, (m + 1) * (n - a - b + m + 1), 1.0)
        out: np.ndarray = np.log(num / den)
        return out

    per_pair = np.zeros(np.broadcast_shapes(A.shape, B.shape))
    step = max(2, _GRID_BUDGET // max(per_pair.size, 1))
    for t0 in range(0, width, step):
        t = np.arange(t0, min(t0 + step, width), dtype=np.float64)[None, None, :]
        nij = lo_c[:, :, None] + t
        valid = nij <= hi3
        log_p = np.empty_like(nij)
        log_p[:, :, 0] = carry
        np.cumsum(log_ratio(nij[:, :, :-1]), axis=2, out=log_p[:, :, 1:])
        log_p[:, :, 1:] += carry[:, :, None]
        carry = log_p[:, :, -1] + log_ratio(nij[:, :, -1])
        safe = np.where(valid, nij, 1.0)
        term2 = log_scale + np.log(safe)
        terms = np.where(valid, (safe / n) * term2 * np.exp(np.where(valid, log_p, -np.inf)), 0.0)
        per_pair += terms.sum(axis=2)
    return float(wa @ per_pair @ wb)


class _Table:
    """The derived sums of one contingency table that every index draws on, from its filled
    cells (either form of :class:`~streammetrics.states.ContingencyCounts`): O(R + C + cells),
    except the Hungarian matching of ``accuracy`` (on the dense table)."""

    def __init__(self, counts: ContingencyCounts) -> None:
        self.counts = counts
        self.nzx, self.nzy, self.values = counts.filled()
        self.rows = counts.row_sums()  # class sizes
        self.cols = counts.col_sums()  # cluster sizes
        self.n = int(self.rows.sum())
        self.n_classes = int(np.count_nonzero(self.rows))
        self.n_clusters = int(np.count_nonzero(self.cols))
        self._mi: float | None = None
        self._pairs: tuple[int, int, int, int] | None = None

    # -- information-theoretic -------------------------------------------------------------------

    def mutual_info(self) -> float:
        if self._mi is None:
            self._mi = _mutual_info(self.nzx, self.nzy, self.values, self.rows, self.cols)
        return self._mi

    def h_true(self) -> float:
        return _entropy(self.rows)

    def h_pred(self) -> float:
        return _entropy(self.cols)

    def _trivial(self) -> bool:
        # Both labellings put everything in one group: scikit-learn's perfect-match special case.
        return self.n_classes == self.n_clusters == 1

    def nmi(self, method: str) -> float:
        if self._trivial():
            return 1.0
        mi = self.mutual_info()
        if mi == 0:
            return 0.0
        return mi / _average(self.h_true(), self.h_pred(), method)

    def ami(self, method: str) -> float:
        if self._trivial():
            return 1.0
        if self.n_classes == 1 or self.n_clusters == 1:
            return 0.0
        mi = self.mutual_info()
        emi = expected_mutual_info(self.rows, self.cols)
        normaliser = _average(self.h_true(), self.h_pred(), method)
        num = mi - emi
        tolerance = _AMI_CHANCE * max(mi, emi, normaliser)
        if abs(num) <= tolerance:
            # The observed information is the expected one, to rounding: AMI is 0, unless the
            # normaliser equals them too (0/0, whose rounding noise made scikit-learn's value,
            # and 0.8.3's, anything in [-1, 2]). That happens when one labelling splits the
            # other into singletons with average_method="min" (or both are singletons): every
            # other refinement scores exactly 1 there (MI = the normaliser), so 1 is the limit.
            return 1.0 if abs(normaliser - emi) <= tolerance else 0.0
        den = normaliser - emi  # clamped away from 0 as scikit-learn clamps it
        den = min(den, -_EPS) if den < 0 else max(den, _EPS)
        return num / den

    def homogeneity_completeness(self) -> tuple[float, float]:
        mi = self.mutual_info()
        h_c, h_k = self.h_true(), self.h_pred()
        return (mi / h_c if h_c else 1.0), (mi / h_k if h_k else 1.0)

    def v_measure(self, beta: float) -> float:
        h, c = self.homogeneity_completeness()
        if beta * h + c == 0.0:
            # h = c = 0; or beta = 0 and c = 0, where the limit as beta -> 0 is 0 too
            # (scikit-learn divides by zero there).
            return 0.0
        return (1 + beta) * h * c / (beta * h + c)

    # -- pair counting (exact integers) ------------------------------------------------------------

    def pairs(self) -> tuple[int, int, int, int]:
        """``(tp, fp, fn, tn)`` over unordered pairs of samples, as Python ints.

        tp: same class and same cluster; fp: same cluster, different class; fn: same class,
        different cluster; tn: different in both.
        """
        if self._pairs is None:
            n = self.n
            tp = _comb2_sum(self.values, n)
            same_class = _comb2_sum(self.rows, n)
            same_cluster = _comb2_sum(self.cols, n)
            total = n * (n - 1) // 2
            fp, fn = same_cluster - tp, same_class - tp
            self._pairs = (tp, fp, fn, total - tp - fp - fn)
        return self._pairs

    def rand_index(self) -> float:
        tp, fp, fn, tn = self.pairs()
        total = tp + fp + fn + tn
        if total == 0 or tp + tn == total:
            return 1.0
        return (tp + tn) / total

    def adjusted_rand_index(self) -> float:
        tp, fp, fn, tn = self.pairs()
        if fn == 0 and fp == 0:
            return 1.0
        # scikit-learn's 2 (tp tn - fn fp) / ((tp + fn)(fn + tn) + (tp + fp)(fp + tn)), in
        # exact integers; Python's int / int rounds the exact quotient once.
        return 2 * (tp * tn - fn * fp) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn))

    def jaccard(self) -> float:
        tp, fp, fn, _ = self.pairs()
        if tp + fp + fn == 0:
            return 1.0  # no pair is together in either labelling: they agree
        return tp / (tp + fp + fn)

    def fowlkes_mallows(self) -> float:
        tp, fp, fn, _ = self.pairs()
        if tp == 0:
            return 0.0
        return math.sqrt(tp / (tp + fp)) * math.sqrt(tp / (tp + fn))

    # -- matching ----------------------------------------------------------------------------------

    def purity(self) -> float:
        # The largest cell of each cluster (column): every column holds a filled cell.
        if self.n == 0:
            return math.nan  # an empty state is reported before this; kept for direct use
        order = np.lexsort((self.values, self.nzy))
        col = self.nzy[order]
        last = np.flatnonzero(np.concatenate((col[1:] != col[:-1], [True])))
        return int(self.values[order][last].sum()) / self.n

    def accuracy(self) -> float:
        table = self.counts.table  # the Hungarian algorithm needs every cell
        from scipy.optimize import linear_sum_assignment  # (136 ms to import: when used)

        r, c = linear_sum_assignment(table, maximize=True)
        return int(table[r, c].sum()) / self.n


# -- the metrics --------------------------------------------------------------------------------
