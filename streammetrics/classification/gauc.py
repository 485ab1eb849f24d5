"""GAUC: the per-group ROC AUC, averaged over groups (users, queries, sessions, ...).

A group's rows may arrive in any number of updates and shards. Each group keeps its distinct
scores exactly while it has at most ``max_exact`` rows, then a bucket sketch (the grid of
``score_type``, see :mod:`streammetrics.states.buckets`). The switch depends on the group's
*total* row count only, so the state is a function of the multiset of rows: any split merged in
any order gives the same bytes.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .._config_values import config_int
from .._input_labels import as_labels
from .._inputs import as_weights, check_same_length
from .._keyed import Keyed
from .._rows import BINARY_LABELS
from ..base import Metric
from ..errors import InputError
from ..states._group_table import _group_sums, _scatter, tiny_groups_scaled
from ..states.grouped import GroupedScores
from ..states.labels import (
    key_hash,
)
from ..states.mappings import DEFAULT_RESOLUTION, mapping_for
from ..uncertainty import NAN_INTERVAL, check_level, normal_interval
from ._checks import binary_labels, check_exact_probabilities, check_mode, checked_scores

__all__ = ["GAUC", "GroupedScores"]

_WEIGHTINGS = ("impressions", "clicks", "uniform")


class GAUC(Keyed, Metric):
    """Group AUC: the ROC AUC of each group, averaged with group weights.

    ``GAUC = sum_g w_g AUC_g / sum_g w_g`` over the groups that hold both classes, with ``w_g``
    the group's weighted row count (``weighting="impressions"``), its positive weight
    (``"clicks"``) or 1 (``"uniform"``); groups with one class only are left out
    (:attr:`groups_used`, :attr:`groups_left_out`). With ``exact=True`` it equals a pandas
    groupby applying scikit-learn's ``roc_auc_score`` to each group.

    Parameters
    ----------
    weighting : {"impressions", "clicks", "uniform"}
    exact : bool, default False
        Keep every distinct score of every group.
    score_type, resolution
        The bucket grid of sketched groups, as :class:`ROCAUC`.
    max_exact : int, default 64
        A group stays exact while it has at most this many rows (in total, over every update
        and shard), then becomes a bucket sketch.

    Notes
    -----
    ``error_bound()`` is ``sum_g w_g bound_g / sum_g w_g`` with ``bound_g`` the certified
    :class:`ROCAUC` bound of the group (0 for exact groups). Memory: 32 bytes per (group,
    distinct score) or (group, bucket) entry plus 24 bytes per group; on the wire 10 bytes per
    exact entry while the state's counts stay below 256 (18 per sketched entry), and 3 bytes
    per group for integer ids less than 256 apart. ``update`` O(n log n); ``merge``
    O(m log m) for m entries; ``compute`` O(m).

    Examples
    --------
    >>> import streammetrics as sm
    >>> m = sm.GAUC(exact=True)
    >>> _ = m.update([0, 1, 1, 0, 1, 0], [0.1, 0.8, 0.3, 0.4, 0.6, 0.7], groups=[1, 1, 1, 2, 2, 2])
    >>> round(m.compute(), 6), m.groups_used, m.groups_left_out
    (0.75, 2, 0)
    """

    higher_is_better: ClassVar[bool | None] = True
    #: Schema 2 (0.8.0): the grouped scores' compact wire form; 0.7.0's (schema 1) still loads.
    _schema: ClassVar[int] = 2

    def __init__(
        self,
        weighting: str = "impressions",
        exact: bool = False,
        score_type: str = "probability",
        resolution: int = DEFAULT_RESOLUTION,
        max_exact: int = 64,
    ) -> None:
        super().__init__()
        if weighting not in _WEIGHTINGS:
            raise InputError(f"weighting: must be one of {_WEIGHTINGS}; got {weighting!r}")
        exact, score_type, resolution = check_mode(exact, score_type, resolution)
        max_exact = config_int(max_exact, "max_exact", minimum=0)
        self._add_config(
            weighting=weighting,
            exact=exact,
            score_type=score_type,
            resolution=resolution,
            max_exact=max_exact,
        )
        mapping = None if exact else mapping_for(score_type, resolution)
        self._add_state("scores", GroupedScores(mapping, max_exact), merge=None)
        kind = "probability" if score_type == "probability" else "number"
        self._declare_rows("label", kind, "key", labels=BINARY_LABELS)

    scores: GroupedScores
    key_argument = 2  # groups

    def update(self, y_true: Any, y_score: Any, groups: Any, sample_weight: Any = None) -> Any:
        """Add a batch of (label, score, group) rows, optionally weighted. O(n log n)."""
        y = binary_labels(y_true)
        x = checked_scores(y_score, self._config["score_type"])
        g = as_labels(groups, "groups")
        n = check_same_length(y_true=y, y_score=x, groups=g)
        w = as_weights(sample_weight, n)
        if n == 0:
            return self
        return self._commit(n, scores=self.scores.add(g, x, y, w))

    def _split(self, parts: int) -> list[GAUC]:
        blocks = self.scores.split_groups(key_hash(self.scores.groups) % np.uint64(parts), parts)
        out = []
        for block in blocks:
            metric = GAUC(**self._config)
            rows = int(block.rows.sum())
            if rows:  # an empty piece is the fresh state (a weighted block's is not blank)
                metric._commit(rows, scores=block)
            out.append(metric)
        return out

    def _per_group(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per group: AUC (nan when one class is missing), bound, P, N. Read only:
        :meth:`per_group` hands out copies."""
        auc, bound, big_p, big_n = self._read_groups()[1]
        return auc, bound, big_p, big_n

    def _read_groups(self) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """The groups and :meth:`_per_group`'s arrays, kept with the state: ``compute()``,
        ``interval()`` and ``error_bound()`` of an unchanged state share one read, and after
        an update only the groups it touched are computed again
        (:meth:`GroupedScores.per_group`)."""
        return self.scores.per_group("per_group", self._per_group_of)

    def _per_group_of(self, t: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        with np.errstate(all="ignore"):  # a forged state may hold huge weights
            return self._per_group_unchecked(t)

    def _per_group_unchecked(self, t: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        size = len(t.labels)
        if len(t.g) == 0:
            return np.full(size, np.nan), np.full(size, np.nan), np.zeros(size), np.zeros(size)
        # Entries ascend by (group, score), so each group is one run of entries: every sum is
        # segmented over the runs, and within a group the negative weight below an entry is
        # the running total minus the total of the earlier groups.
        starts = np.flatnonzero(np.concatenate(([True], t.g[1:] != t.g[:-1])))
        ends = np.append(starts[1:], len(t.g)) - 1
        pos, neg, shift_p, shift_n = t.pos, t.neg, None, None
        if pos.dtype.kind == "f":
            pos, neg, shift_p, shift_n = tiny_groups_scaled(pos, neg, starts)
        big_p, big_n, num = _group_sums(pos, neg, starts, ends)
        spread = np.flatnonzero(np.isnan(t.value))  # buckets holding several scores
        slack: np.ndarray = np.zeros(len(starts))
        if len(spread):
            run = np.searchsorted(starts, spread, side="right") - 1
            slack = np.bincount(run, weights=0.5 * pos[spread] * neg[spread], minlength=len(starts))
        scale = big_p * big_n
        ok = scale > 0  # (after the rescaling, only for weights 2**500 apart within a class)
        safe = np.where(ok, scale, 1.0)
        auc = np.where(ok, np.clip(num / safe, 0.0, 1.0), np.nan)
        bound = np.where(ok, slack / safe, np.nan)
        if shift_p is not None:  # the groups' weights as the state holds them
            big_p = np.ldexp(big_p, -shift_p)
        if shift_n is not None:
            big_n = np.ldexp(big_n, -shift_n)
        if len(starts) != size:  # groups without entries (not in a canonical table)
            at = t.g[starts]
            auc, bound = _scatter(auc, at, size, np.nan), _scatter(bound, at, size, np.nan)
            big_p, big_n = _scatter(big_p, at, size), _scatter(big_n, at, size)
        return auc, bound, big_p, big_n

    def _weights(self, big_p: np.ndarray, big_n: np.ndarray) -> np.ndarray:
        """Each group's weight in the average: impressions, clicks (positives) or 1."""
        weighting = self._config["weighting"]
        if weighting == "impressions":
            weights: np.ndarray = big_p + big_n
        elif weighting == "clicks":
            weights = big_p
        else:
            weights = np.ones(len(big_p))
        return _away_from_underflow(weights)

    def _summary(self) -> tuple[float, float, int, int]:
        """``(GAUC, bound, groups used, groups left out)``, once per read of the groups."""
        arrays = self._per_group()
        found: tuple[float, float, int, int] = self.scores.remembered(
            "summary", arrays, lambda: self._summary_of(*arrays)
        )
        return found

    def _summary_of(
        self, auc: np.ndarray, bound: np.ndarray, big_p: np.ndarray, big_n: np.ndarray
    ) -> tuple[float, float, int, int]:
        used = ~np.isnan(auc)
        w = self._weights(big_p, big_n)[used]
        total = float(w.sum())
        n_used = int(used.sum())
        if n_used == 0 or total <= 0:
            return math.nan, math.nan, n_used, len(auc) - n_used
        return (
            float(np.dot(w, auc[used]) / total),
            float(np.dot(w, bound[used]) / total),
            n_used,
            len(auc) - n_used,
        )

    def _interval_parts(self) -> tuple[float, float, float] | None:
        """The interval's ``(centre, variance, widening)``, None with fewer than two groups
        averaged; once per read of the groups, for every level."""
        arrays = self._per_group()
        found: tuple[float, float, float] | None = self.scores.remembered(
            "interval", arrays, lambda: self._interval_parts_of(*arrays)
        )
        return found

    def _interval_parts_of(
        self, auc: np.ndarray, bound: np.ndarray, big_p: np.ndarray, big_n: np.ndarray
    ) -> tuple[float, float, float] | None:
        w, a, bound = _used(self._weights(big_p, big_n), auc, bound)
        total, groups = float(w.sum()), len(a)
        if groups < 2 or not total > 0:
            return None
        # einsum rather than BLAS dot products, which OpenBLAS threads for long vectors (costly
        # to synchronise on a busy machine).
        value = float(np.einsum("i,i->", w, a) / total)
        # The variance is the same for weights scaled by any constant: scaled to a largest of
        # 1, so that neither w**2 nor total**2 underflows (sample weights of 1e-170 raised
        # ZeroDivisionError in 0.8.11) or overflows.
        top = float(w.max())
        scaled = w / top
        spread = float(np.einsum("i,i->", scaled * scaled, (a - value) ** 2))
        var = groups / (groups - 1.0) * spread / (total / top) ** 2
        widen = float(np.einsum("i,i->", w, bound) / total)
        return value, var, widen

    def _compute(self) -> float:
        return self._summary()[0]

    def _validate_state(self) -> None:
        """Decoding: every row is held by a group, and exact scores are valid scores."""
        scores = self.scores
        if self._count != scores._total:
            raise ValueError(
                f"count {self._count} differs from the {scores._total} rows the groups hold"
            )
        table = scores._main
        if self._config["score_type"] == "probability" and len(table.key):
            # (A bucket key is checked against its grid.)
            check_exact_probabilities(table.key[~table.bucketed])

    def error_bound(self) -> float:
        """A certified bound on ``abs(compute() - exact GAUC)``; 0.0 when every group is exact."""
        if self.count == 0:
            return math.nan
        return self._summary()[1]

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Normal interval of the GAUC with the ratio-estimator (cluster) variance over groups.

        Groups (users, queries) are the sampled units: ``GAUC = sum w_g A_g / sum w_g`` is a
        ratio estimator, whose linearised variance is ``G / (G - 1) * sum w_g**2 (A_g -
        GAUC)**2 / (sum w_g)**2`` over the ``G`` groups averaged (Cochran, *Sampling
        Techniques*, 3rd ed. 1977, sec. 6.4 and 9A.3). The spread of the group AUCs carries
        their within-group DeLong noise as well as the real differences between groups, so
        no per-group variance is needed, and groups with one positive count like any other.
        Widened by ``error_bound()`` on each side (sketched groups); clipped to [0, 1]. ``nan,
        nan`` with fewer than two groups averaged. O(entries) at the first read of a state
        (shared with ``compute()``); after an update, O(entries of the groups it touched +
        groups); O(1) for a state read since its last change.
        """
        level = check_level(level)
        if self.count == 0:
            return NAN_INTERVAL
        parts = self._interval_parts()
        if parts is None:
            return NAN_INTERVAL
        value, var, widen = parts
        return normal_interval(value, math.sqrt(var), level, (0.0, 1.0), widen)

    @property
    def groups_used(self) -> int:
        """Groups holding both classes (the ones averaged)."""
        return self._summary()[2] if self.count else 0

    @property
    def groups_left_out(self) -> int:
        """Groups left out because they hold one class only (or only zero weights)."""
        return self._summary()[3] if self.count else 0

    def per_group(self) -> dict[str, np.ndarray]:
        """Per group: ``groups``, ``auc`` (nan when left out), ``bound``, ``pos``, ``neg``."""
        groups, (auc, bound, big_p, big_n) = self._read_groups()
        return {
            "groups": groups.copy(),
            "auc": auc.copy(),
            "bound": bound.copy(),
            "pos": big_p.copy(),
            "neg": big_n.copy(),
        }


def _used(w: np.ndarray, auc: np.ndarray, bound: np.ndarray) -> tuple[np.ndarray, ...]:
    """``w``, ``auc`` and ``bound`` of the groups averaged (an AUC, not nan): the arrays
    themselves when every group is (no copies: the same values, so the same sums)."""
    used = ~np.isnan(auc)
    if used.all():
        return w, auc, bound
    return w[used], auc[used], bound[used]


def _away_from_underflow(weights: np.ndarray) -> np.ndarray:
    """``weights`` times a power of two that brings the largest to about 1, when they are all
    tiny (below 2**-500): exact, and the weighted averages are the same, but products of
    subnormal weights and the groups' AUCs rounded to multiples of 2**-1074 (a one-group GAUC
    of weights near 2**-1074 was 4.6e-4 off its own AUC: 0.8.18). Other weights unchanged."""
    top = float(weights.max()) if len(weights) else 0.0
    if not 0.0 < top < 2.0**-500:
        return weights
    scaled: np.ndarray = np.ldexp(weights, -math.frexp(top)[1])
    return scaled
