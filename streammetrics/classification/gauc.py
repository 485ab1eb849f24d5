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

from .._codec import check_counts, check_sum, held_total
from .._inputs import as_labels, as_weights, check_same_length, config_int
from .._keyed import Keyed
from ..base import Metric, StateBlock
from ..errors import IncompatibleStateError, InputError
from ..states.buckets import DEFAULT_RESOLUTION, BucketMapping, mapping_for
from ..states.labels import (
    EMPTY_LABELS,
    check_kinds,
    key_hash,
    labels_from_wire,
    labels_to_wire,
    unique_codes,
)
from ..uncertainty import NAN_INTERVAL, check_level, normal_interval
from ._checks import binary_labels, check_mode, checked_scores

__all__ = ["GAUC", "GroupedScores"]

_WEIGHTINGS = ("impressions", "clicks", "uniform")
_NAN = float("nan")
_SLICE = 1 << 17  # entries per consolidation slice: small enough to stay in cache


class _Table:
    """Entries of some groups, sorted by (group, key) once canonical.

    ``g``: index into ``labels``; ``key``: the score (exact) or the bucket key (sketched) as
    float64; ``pos``/``neg``: weights; ``value``: the one distinct score of the entry, nan when
    a bucket holds several; ``bucketed``: whether ``key`` is a bucket key.
    """

    __slots__ = ("bucketed", "g", "key", "labels", "neg", "pos", "value")

    def __init__(
        self,
        labels: np.ndarray,
        g: np.ndarray,
        key: np.ndarray,
        pos: np.ndarray,
        neg: np.ndarray,
        value: np.ndarray,
        bucketed: np.ndarray,
    ) -> None:
        self.labels, self.g, self.key, self.pos, self.neg = labels, g, key, pos, neg
        self.value, self.bucketed = value, bucketed


def _order(g: np.ndarray, key: np.ndarray, presorted_runs: bool) -> np.ndarray:
    """The permutation sorting entries by (g, key).

    One argsort of a single uint64 composite, ``g`` in the high bits and the top bits of the
    key's order-preserving integer image below (20x faster than ``np.lexsort``). Keys that
    share their top bits in one group (closer than about 2**-40 relative) are then put in
    order by an exact ``lexsort`` of just those entries.
    """
    g_bits = max(int(g.max()).bit_length(), 1)
    k_bits = 64 - g_bits
    bits = key.view(np.uint64)
    negative = key < 0  # keys are finite and never -0.0
    image = np.where(negative, ~bits, bits | np.uint64(1 << 63))
    comp = (g.astype(np.uint64) << np.uint64(k_bits)) | (image >> np.uint64(g_bits))
    # Timsort merges the sorted runs a consolidation concatenates in linear time.
    order = np.argsort(comp, kind="stable" if presorted_runs else "quicksort")
    cs = comp[order]
    clash = np.flatnonzero(cs[1:] == cs[:-1])
    if len(clash):
        ks = key[order]
        clash = clash[ks[clash + 1] != ks[clash]]
    if len(clash):
        # Positions of every entry in a run of equal composites holding distinct keys.
        same = np.concatenate(([False], cs[1:] == cs[:-1]))
        run_id = np.cumsum(~same)
        bad_runs = np.unique(run_id[clash])
        where = np.flatnonzero(np.isin(run_id, bad_runs))
        sub = order[where]
        order[where] = sub[np.lexsort((key[sub], run_id[where]))]
    return order


def _sort_reduce(
    g: np.ndarray,
    key: np.ndarray,
    cols: list[np.ndarray],
    value: np.ndarray,
    presorted_runs: bool = False,
) -> tuple[np.ndarray, ...]:
    """Sort entries by (g, key) and fold equal pairs (sum ``cols``; one value or nan)."""
    if len(g) == 0:
        return (g, key, *cols, value)
    order = _order(g, key, presorted_runs)
    g, key, value = g[order], key[order], value[order]
    new = np.concatenate(([True], (g[1:] != g[:-1]) | (key[1:] != key[:-1])))
    starts = np.flatnonzero(new)
    out_cols = [np.add.reduceat(c[order], starts) for c in cols]
    vmin = np.minimum.reduceat(value, starts)
    vmax = np.maximum.reduceat(value, starts)
    return (g[starts], key[starts], *out_cols, np.where(vmin == vmax, vmin, _NAN))


_INT_LIMIT = 2**62  # integer sums below this cannot overflow int64


def _group_sums(
    pos: np.ndarray, neg: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per run of entries (one group each, ascending by score): positive weight ``P``,
    negative weight ``N`` and ``sum pos * (negatives below + neg / 2)``, the AUC numerator.

    Integer counts take exact integer prefix sums: the numerator is ``(sum pos (2 cum - neg)
    - 2 before P) / 2`` with ``cum`` the running negative count and ``before`` the negatives
    of the earlier groups (a few integer passes, no gather). Weights, or counts whose products
    could overflow, take float sums of the within-group ranks (segmented by ``reduceat``).
    """
    cum_n = np.cumsum(neg)
    before = cum_n[starts] - neg[starts]
    if pos.dtype.kind == "i" and neg.dtype.kind == "i":
        cum_p = np.cumsum(pos)
        big_p = cum_p[ends] - cum_p[starts] + pos[starts]
        big_n = cum_n[ends] - before
        total_p, total_n = int(cum_p[-1]), int(cum_n[-1])
        if 2 * total_p * total_n + total_p < _INT_LIMIT:
            twice = cum_n + cum_n
            twice -= neg
            twice *= pos
            acc = np.cumsum(twice)
            inner = acc[ends] - acc[starts] + twice[starts] - 2 * before * big_p
            return big_p.astype(np.float64), big_n.astype(np.float64), inner * 0.5
        big_p, big_n = big_p.astype(np.float64), big_n.astype(np.float64)
    else:
        big_p = np.add.reduceat(pos.astype(np.float64), starts)
        big_n = np.add.reduceat(neg.astype(np.float64), starts)
    # Within-group ranks entry by entry (subtracting the earlier groups' total from the running
    # total before the products keeps the error at the running total's rounding).
    below = np.subtract(cum_n, np.repeat(before, ends - starts + 1), dtype=np.float64)
    below -= 0.5 * neg
    below *= pos
    return big_p, big_n, np.add.reduceat(below, starts)


def _scatter(values: np.ndarray, at: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(size)
    out[at] = values
    return out


class GroupedScores(StateBlock):
    """Per-group positive and negative weight per distinct score or score bucket.

    Parameters
    ----------
    mapping : BucketMapping or None
        The bucket grid of sketched groups; ``None`` keeps every group exact.
    max_exact : int
        A group stays exact while it has at most this many rows (ignored without a mapping).

    Memory: 32 bytes per (group, distinct score) or (group, bucket) entry plus 24 per group.
    ``add``: O(n log n) for n rows; ``merge``: O(1) (queued), canonicalised lazily in O(m log m)
    for m entries, at most doubling work over a stream.
    """

    def __init__(self, mapping: BucketMapping | None, max_exact: int) -> None:
        self.mapping = mapping
        self.max_exact = max_exact if mapping is not None else -1
        self.groups: np.ndarray = EMPTY_LABELS
        self.rows: np.ndarray = np.zeros(0, dtype=np.int64)
        self._main = self._empty_table(np.dtype(np.int64))
        self._pending: list[_Table] = []

    def _empty_table(self, dtype: np.dtype[Any]) -> _Table:
        e = np.empty(0)
        return _Table(
            self.groups,
            np.zeros(0, np.int64),
            e,
            np.zeros(0, dtype),
            np.zeros(0, dtype),
            e.copy(),
            np.zeros(0, bool),
        )

    def _sketched(self, rows: np.ndarray) -> np.ndarray:
        if self.mapping is None:
            return np.zeros(len(rows), dtype=bool)
        result: np.ndarray = rows > self.max_exact
        return result

    @property
    def weighted(self) -> bool:
        return self._main.pos.dtype == np.float64 or any(
            t.pos.dtype == np.float64 for t in self._pending
        )

    # -- building ------------------------------------------------------------------------------

    def add(
        self,
        groups: np.ndarray,
        scores: np.ndarray,
        positive: np.ndarray,
        weights: np.ndarray | None,
    ) -> GroupedScores:
        """A new block: ``self`` plus a batch (validated columns). ``self`` does not change."""
        check_kinds(self.groups, groups, "groups")
        check_sum("grouped scores", "i", held_total(self.rows), len(groups))
        labels, code = unique_codes(groups)
        batch_rows = np.bincount(code, minlength=len(labels)).astype(np.int64)
        out = self._shallow()
        out.groups, out.rows, where = _union_rows(self.groups, self.rows, labels, batch_rows)
        if weights is not None:
            keep = weights != 0
            if not keep.all():
                code, scores, positive, weights = (
                    code[keep],
                    scores[keep],
                    positive[keep],
                    weights[keep],
                )
        group_sketched = self._sketched(out.rows[where])
        sketched = group_sketched[code]
        scores = scores + 0.0
        key = scores.copy()
        if sketched.any():
            assert self.mapping is not None
            key[sketched] = self.mapping.keys(scores[sketched])
        if weights is None:
            pos = positive.astype(np.int64)
            neg = 1 - pos
        else:
            pos = np.where(positive, weights, 0.0)
            neg = np.where(positive, 0.0, weights)
        g, key, pos, neg, value = _sort_reduce(code, key, [pos, neg], scores)
        table = _Table(labels, g, key, pos, neg, value, group_sketched[g])
        out._pending = [*self._pending, table]
        out._consolidate_if_large()
        return out

    def _consolidate_if_large(self) -> None:
        # Queued tables are folded in once they outgrow the main one, so a stream (or a chain
        # of merges) of m entries costs O(m log m) in all, not a full re-sort per step.
        if sum(len(t.g) for t in self._pending) > max(4 * len(self._main.g), 1 << 20):
            self._consolidate()

    def _shallow(self) -> GroupedScores:
        out = GroupedScores.__new__(GroupedScores)
        out.mapping, out.max_exact = self.mapping, self.max_exact
        out.groups, out.rows, out._main, out._pending = (
            self.groups,
            self.rows,
            self._main,
            list(self._pending),
        )
        return out

    # -- canonical form ------------------------------------------------------------------------

    def _consolidate(self) -> None:
        """Fold the queued tables into the main one (same logical contents, canonical form).

        Every table is sorted by group, so the work is cut into ranges of groups of about
        ``_SLICE`` entries, each sorted and reduced while it fits in cache.
        """
        if not self._pending:
            return
        parts = [self._main, *self._pending]
        dtype = np.result_type(*(t.pos.dtype for t in parts))
        codes = [
            (t.g if t.labels is self.groups else np.searchsorted(self.groups, t.labels)[t.g])
            if len(t.g)
            else t.g
            for t in parts
        ]
        total = sum(len(c) for c in codes)
        pieces = max(1, total // _SLICE)
        bounds = np.linspace(0, len(self.groups), pieces + 1).astype(np.int64)
        cuts = [np.searchsorted(c, bounds) for c in codes]
        sketched_groups = self._sketched(self.rows)
        out: list[tuple[np.ndarray, ...]] = []
        for i in range(pieces):
            sl = [slice(int(cut[i]), int(cut[i + 1])) for cut in cuts]
            g = np.concatenate([c[s] for c, s in zip(codes, sl, strict=True)]).astype(np.int64)
            if len(g) == 0:
                continue
            key = np.concatenate([t.key[s] for t, s in zip(parts, sl, strict=True)])
            value = np.concatenate([t.value[s] for t, s in zip(parts, sl, strict=True)])
            bucketed = np.concatenate([t.bucketed[s] for t, s in zip(parts, sl, strict=True)])
            pos = np.concatenate([t.pos[s] for t, s in zip(parts, sl, strict=True)])
            neg = np.concatenate([t.neg[s] for t, s in zip(parts, sl, strict=True)])
            convert = sketched_groups[g] & ~bucketed
            if convert.any():
                assert self.mapping is not None
                key[convert] = self.mapping.keys(key[convert])
            out.append(
                _sort_reduce(
                    g, key, [pos.astype(dtype), neg.astype(dtype)], value, presorted_runs=True
                )
            )
        if out:
            g, key, pos, neg, value = (np.concatenate(cols) for cols in zip(*out, strict=True))
        else:
            g, key = np.zeros(0, dtype=np.int64), np.empty(0)
            pos, neg, value = np.zeros(0, dtype), np.zeros(0, dtype), np.empty(0)
        self._main = _Table(self.groups, g, key, pos, neg, value, sketched_groups[g])
        self._pending = []

    def table(self) -> _Table:
        """The canonical entries (sorted by group, then key)."""
        self._consolidate()
        return self._main

    # -- merging -------------------------------------------------------------------------------

    def check_mergeable(self, other: Any) -> None:
        if not isinstance(other, GroupedScores) or (other.mapping, other.max_exact) != (
            self.mapping,
            self.max_exact,
        ):
            raise IncompatibleStateError("cannot merge grouped scores of different configs")
        if (
            len(self.groups)
            and len(other.groups)
            and ((self.groups.dtype.kind == "U") != (other.groups.dtype.kind == "U"))
        ):
            raise IncompatibleStateError(
                "cannot merge a state of integer groups with one of string groups"
            )
        # Rows bound every count; weights must stay finite.
        check_sum("grouped scores", "i", held_total(self.rows), held_total(other.rows))
        if self.weighted or other.weighted:
            check_sum("grouped scores", "f", self._held(), other._held())

    def held_total(self) -> float:
        return max(held_total(self.rows), self._held())

    def _check_total(self, others: list[Any]) -> None:
        # Pairs within the bound may still pass it together.
        parts = [self, *others]
        check_sum("grouped scores", "i", *(held_total(p.rows) for p in parts))
        if any(p.weighted for p in parts):
            check_sum("grouped scores", "f", *(p._held() for p in parts))

    def _held(self) -> float:
        """Total weight, queue included, without folding it (reading never writes)."""
        parts = [self._main, *self._pending]
        return sum(held_total(t.pos) + held_total(t.neg) for t in parts)

    def merge(self, other: Any) -> None:
        self.check_mergeable(other)
        theirs = other.table()
        self.groups, self.rows, _ = _union_rows(self.groups, self.rows, other.groups, other.rows)
        self._pending.append(theirs)
        self._consolidate_if_large()

    def merge_many(self, others: list[Any]) -> None:
        """Fold many blocks at once: their tables are queued and canonicalised together (one
        k-way merge of sorted runs, when they outgrow the main table or at the next read)
        instead of one full re-sort per operand."""
        for other in others:
            self.check_mergeable(other)
        self._check_total(others)
        for other in others:
            theirs = other.table()
            self.groups, self.rows, _ = _union_rows(
                self.groups, self.rows, other.groups, other.rows
            )
            self._pending.append(theirs)
        self._consolidate_if_large()

    def join_many(self, others: list[Any]) -> None:
        """Fold blocks of groups disjoint from this block's and from each other's.

        The groups' entries are concatenated and put in group order by one stable sort of the
        group codes (each block's entries are already sorted within their groups): no entry is
        merged with another. Blocks sharing a group are merged as :meth:`merge_many` merges.
        """
        for other in others:
            self.check_mergeable(other)
        self._check_total(others)
        parts = [p for p in (self, *others) if len(p.groups)]
        if len(parts) < 2:
            self.merge_many(others)
            return
        labels = np.concatenate([p.groups for p in parts])
        order = np.argsort(labels, kind="stable")  # sorted runs: a linear merge (timsort)
        groups = labels[order]
        if (groups[1:] == groups[:-1]).any():
            self.merge_many(others)  # shared groups: their entries must be merged
            return
        where = np.empty(len(order), dtype=np.int64)
        where[order] = np.arange(len(order))
        tables = [p.table() for p in parts]
        starts = np.cumsum([0] + [len(p.groups) for p in parts])
        g = np.concatenate(
            [
                where[s : s + len(p.groups)][t.g]
                for p, s, t in zip(parts, starts, tables, strict=False)
            ]
        )
        by_group = np.argsort(g, kind="stable")
        dtype = np.result_type(*(t.pos.dtype for t in tables))

        def column(name: str) -> np.ndarray:
            out: np.ndarray = np.concatenate([getattr(t, name) for t in tables])[by_group]
            return out

        rows = np.concatenate([p.rows for p in parts])[order]
        self.groups, self.rows = groups, rows
        self._main = _Table(
            groups,
            g[by_group],
            column("key"),
            column("pos").astype(dtype, copy=False),
            column("neg").astype(dtype, copy=False),
            column("value"),
            column("bucketed"),
        )
        self._pending = []

    def split_groups(self, part_of: np.ndarray, parts: int) -> list[GroupedScores]:
        """Blocks holding the groups ``part_of`` assigns to each part (one index per group)."""
        t = self.table()
        out = []
        for i in range(parts):
            keep = part_of == i
            index = np.cumsum(keep) - 1
            sel = keep[t.g]
            block = GroupedScores(self.mapping, self.max_exact)
            block.groups, block.rows = self.groups[keep], self.rows[keep]
            block._main = _Table(
                block.groups,
                index[t.g[sel]],
                t.key[sel],
                t.pos[sel],
                t.neg[sel],
                t.value[sel],
                t.bucketed[sel],
            )
            out.append(block)
        return out

    def copy(self) -> GroupedScores:
        return self._shallow()  # tables are never written in place: sharing them is safe

    def __deepcopy__(self, memo: dict[int, Any]) -> GroupedScores:
        return self.copy()  # arrays are never written in place, so sharing them is safe

    # -- wire ----------------------------------------------------------------------------------

    def to_wire(self) -> Any:
        t = self.table()
        sizes = np.bincount(t.g, minlength=len(self.groups)).astype(np.int64)
        return {
            "groups": labels_to_wire(self.groups),
            "rows": self.rows,
            "sizes": sizes,
            "key": t.key,
            "pos": t.pos,
            "neg": t.neg,
            "value": t.value,
        }

    def from_wire(self, wire: Any) -> GroupedScores:
        names = {"groups", "rows", "sizes", "key", "pos", "neg", "value"}
        if not isinstance(wire, dict) or set(wire) != names:
            raise ValueError(f"grouped scores need exactly the fields {sorted(names)}")
        groups = labels_from_wire(wire["groups"])
        rows, sizes = wire["rows"], wire["sizes"]
        key, pos, neg, value = wire["key"], wire["pos"], wire["neg"], wire["value"]
        for name, a in (
            ("rows", rows),
            ("sizes", sizes),
            ("key", key),
            ("pos", pos),
            ("neg", neg),
            ("value", value),
        ):
            if not isinstance(a, np.ndarray) or a.ndim != 1:
                raise ValueError(f"grouped scores: {name} must be a 1-D array")
        if rows.dtype != np.int64 or sizes.dtype != np.int64:
            raise ValueError("grouped scores: rows and sizes must be int64")
        if len(rows) != len(groups) or len(sizes) != len(groups):
            raise ValueError("grouped scores: one row count and one size per group")
        if len(rows) and (rows.min() < 1 or sizes.min() < 0):
            raise ValueError("grouped scores: rows must be positive and sizes non-negative")
        if int(sizes.sum()) != len(key) or not len(key) == len(pos) == len(neg) == len(value):
            raise ValueError("grouped scores: entry arrays do not match the sizes")
        if key.dtype != np.float64 or value.dtype != np.float64:
            raise ValueError("grouped scores: key and value must be float64")
        if pos.dtype != neg.dtype or pos.dtype not in (np.int64, np.float64):
            raise ValueError("grouped scores: pos and neg must both be int64 or float64")
        check_counts("grouped scores", rows, pos, neg)
        if len(pos) and not ((pos + neg) > 0).all():
            raise ValueError("grouped scores: an entry is empty")
        if sizes.max(initial=0) > rows.max(initial=0) or (sizes > rows).any():
            raise ValueError("grouped scores: a group has more entries than rows")
        g = np.repeat(np.arange(len(groups), dtype=np.int64), sizes)
        if pos.dtype == np.int64 and not np.array_equal(
            np.bincount(g, weights=pos + neg, minlength=len(groups)), rows
        ):
            raise ValueError("grouped scores: the counts of a group do not add up to its rows")
        if not np.isfinite(key).all():
            raise ValueError("grouped scores: keys must be finite")
        same_group = g[1:] == g[:-1]
        if (same_group & (key[1:] <= key[:-1])).any():
            raise ValueError("grouped scores: keys must increase within a group")
        sketched = self._sketched(rows)[g]
        exact = ~sketched
        if not np.array_equal(value[exact], key[exact]):
            raise ValueError("grouped scores: an exact entry's value must equal its score")
        if sketched.any():
            assert self.mapping is not None
            sk, sv = key[sketched], value[sketched]
            known = ~np.isnan(sv)
            if not np.isfinite(sv[known]).all():
                raise ValueError("grouped scores: values must be finite or nan")
            if not np.array_equal(self.mapping.keys(sv[known] + 0.0).astype(np.float64), sk[known]):
                raise ValueError("grouped scores: a bucket's value lies outside the bucket")
            if self.mapping.size is not None and (
                (sk < 0).any() or (sk >= self.mapping.size).any() or (sk % 1 != 0).any()
            ):
                raise ValueError("grouped scores: bucket keys out of range")
        out = GroupedScores(self.mapping, self.max_exact)
        out.groups, out.rows = groups, rows
        out._main = _Table(groups, g, key + 0.0, pos, neg, value, sketched)
        return out


def _sorted_union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Union of two sorted label sets: a stable sort of two runs is a linear merge (timsort),
    several times faster than ``np.union1d``'s hash-and-sort at 100k groups."""
    both = np.concatenate([a, b])
    both.sort(kind="stable")
    keep = np.concatenate(([True], both[1:] != both[:-1]))
    return both[keep]


def _union_rows(
    a: np.ndarray, ra: np.ndarray, b: np.ndarray, rb: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted union of two group sets with their row counts summed, and where ``b`` went."""
    if len(b) == 0:
        return a, ra, np.zeros(0, dtype=np.intp)
    if len(a) == 0:
        return b, rb, np.arange(len(b))
    idx = np.searchsorted(a, b)
    found = idx < len(a)
    found[found] = a[idx[found]] == b[found]
    if found.all():
        rows = ra.copy()
        rows[idx] += rb
        return a, rows, idx
    groups = _sorted_union(a, b)
    rows = np.zeros(len(groups), dtype=np.int64)
    rows[np.searchsorted(groups, a)] += ra
    where = np.searchsorted(groups, b)
    rows[where] += rb
    return groups, rows, where


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
    distinct score) or (group, bucket) entry plus 24 bytes per group. ``update``
    O(n log n); ``merge`` O(m log m) for m entries; ``compute`` O(m).

    Examples
    --------
    >>> import streammetrics as sm
    >>> m = sm.GAUC(exact=True)
    >>> _ = m.update([0, 1, 1, 0, 1, 0], [0.1, 0.8, 0.3, 0.4, 0.6, 0.7], groups=[1, 1, 1, 2, 2, 2])
    >>> round(m.compute(), 6), m.groups_used, m.groups_left_out
    (0.75, 2, 0)
    """

    higher_is_better: ClassVar[bool | None] = True

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
        check_mode(exact, score_type, resolution)
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
        self._declare_rows("label", kind, "key")

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
            metric._commit(int(block.rows.sum()), scores=block)
            out.append(metric)
        return out

    def _per_group(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per group: AUC (nan when one class is missing), bound, P, N."""
        with np.errstate(all="ignore"):  # a forged state may hold huge weights
            return self._per_group_unchecked()

    def _per_group_unchecked(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        t = self.scores.table()
        size = len(self.scores.groups)
        if len(t.g) == 0:
            return np.full(size, np.nan), np.full(size, np.nan), np.zeros(size), np.zeros(size)
        # Entries ascend by (group, score), so each group is one run of entries: every sum is
        # segmented over the runs, and within a group the negative weight below an entry is
        # the running total minus the total of the earlier groups.
        starts = np.flatnonzero(np.concatenate(([True], t.g[1:] != t.g[:-1])))
        ends = np.append(starts[1:], len(t.g)) - 1
        big_p, big_n, num = _group_sums(t.pos, t.neg, starts, ends)
        spread = np.flatnonzero(np.isnan(t.value))  # buckets holding several scores
        slack: np.ndarray = np.zeros(len(starts))
        if len(spread):
            run = np.searchsorted(starts, spread, side="right") - 1
            slack = np.bincount(
                run, weights=0.5 * t.pos[spread] * t.neg[spread], minlength=len(starts)
            )
        if len(starts) != size:  # groups without entries (not in a canonical table)
            at = t.g[starts]
            big_p, big_n, num, slack = (_scatter(x, at, size) for x in (big_p, big_n, num, slack))
        scale = big_p * big_n
        ok = scale > 0
        safe = np.where(ok, scale, 1.0)
        auc = np.where(ok, np.clip(num / safe, 0.0, 1.0), np.nan)
        bound = np.where(ok, slack / safe, np.nan)
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
        return weights

    def _summary(self) -> tuple[float, float, int, int]:
        auc, bound, big_p, big_n = self._per_group()
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

    def _compute(self) -> float:
        return self._summary()[0]

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
        nan`` with fewer than two groups averaged. O(entries).
        """
        level = check_level(level)
        if self.count == 0:
            return NAN_INTERVAL
        auc, bound, big_p, big_n = self._per_group()
        used = ~np.isnan(auc)
        w, a = self._weights(big_p, big_n)[used], auc[used]
        total, groups = float(w.sum()), len(a)
        if groups < 2 or not total > 0:
            return NAN_INTERVAL
        # einsum rather than BLAS dot products, which OpenBLAS threads for long vectors (costly
        # to synchronise on a busy machine).
        value = float(np.einsum("i,i->", w, a) / total)
        spread = float(np.einsum("i,i->", w * w, (a - value) ** 2))
        var = groups / (groups - 1.0) * spread / (total * total)
        widen = float(np.einsum("i,i->", w, bound[used]) / total)
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
        auc, bound, big_p, big_n = self._per_group()
        return {
            "groups": self.scores.groups.copy(),
            "auc": auc,
            "bound": bound,
            "pos": big_p,
            "neg": big_n,
        }
