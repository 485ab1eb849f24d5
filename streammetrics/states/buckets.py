"""Score buckets: a mergeable store of positive and negative weight per bucket of a
:class:`~streammetrics.states.mappings.BucketMapping` (or per distinct score, in exact mode).

:class:`ScoreBuckets`, the store: sorted keys with per-key positive weight, negative weight, and
the smallest and largest score seen in the bucket. With ``mapping=None`` it is exact: one entry
per distinct score. Counts are int64 until a sample weight arrives, then float64 (whole-number
weights stay exact up to 2**53). The entries are always sorted, reduced and free of empty
buckets, so the state is canonical: any split of a stream merged in any order gives the same
bytes.

This module holds the store itself: its fields and reads, the queue of batches, the count-bound
checks, merging, the wire form and copies. Its kernels are pure functions over arrays, beside it:

- ``states._bucket_batch``: the rows of a batch as entries (dense counts on a grid, else a sort);
- ``states._bucket_merge``: the entries of several stores as one store's (the merges, and the
  fold of the queue), with the adaptive resolution of ``"real"`` stores;
- ``states._bucket_wire``: the wire form, written and, read from bytes, checked;
- ``states._bucket_stack``: one batch into many grid stores at once (``Bootstrap``, ``Sliced``).

The mappings live in :mod:`streammetrics.states.mappings`, the values of a table of entries in
:mod:`streammetrics.states.score_tables` and :mod:`streammetrics.states._exact_sums`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._codec import check_sum, held_total
from ..base import StateBlock
from ..errors import IncompatibleStateError
from ._bucket_batch import Fields, batch_entries, reduce_entries
from ._bucket_merge import fold_grid, fold_sparse, merge_subset
from ._bucket_wire import checked_entries, wire_form
from ._exact_sums import Sums
from ._fold import queue_full
from ._score_reads import SERVED_MEMOS, exact_sums
from .mappings import REAL_FINE_BITS, BucketMapping, RealBits, bfloat16_keys, real_at

__all__ = ["ScoreBuckets"]

_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)
_reduce = reduce_entries  # the name tests/test_sliced_stacked.py imports


class ScoreBuckets(StateBlock):
    """Positive and negative weight per score bucket (or per distinct score when exact).

    Parameters
    ----------
    mapping : BucketMapping or None
        How scores become keys; ``None`` keeps every distinct score (exact mode).

    Attributes (read-only views, ascending by score): ``keys`` (int64 bucket keys, or the
    distinct float64 scores), ``pos``, ``neg`` (int64 counts, or float64 weights once a sample
    weight arrives), ``lo``, ``hi`` (smallest and largest score seen in each bucket; equal to
    ``keys`` in exact mode).

    Memory: 40 bytes per non-empty bucket (24 per distinct score when exact); at most
    ``mapping.size`` buckets for a grid. Complexity: :meth:`add` is O(n) plus O(size) for a
    grid (chunked, no sort); for exact or ``"real"`` keys a batch is reduced (O(n log n), or
    O(n + key range) for ``"real"``) and queued, and the queue is folded in by a merge of sorted
    runs once it outgrows the m entries held (amortised O(log) passes per entry);
    :meth:`merge` is O(size) or O(m1 + m2).

    Examples
    --------
    >>> import numpy as np
    >>> from streammetrics.states.mappings import ProbabilityGrid
    >>> from streammetrics.states.score_tables import auc_from_table
    >>> scores, labels = np.array([0.1, 0.1, 0.9]), np.array([0, 1, 1])
    >>> store = ScoreBuckets(ProbabilityGrid()).add(scores, labels, None)
    >>> store.keys.tolist(), store.pos.tolist(), store.neg.tolist()  # floor(128 logit(p)) + 2049
    ([1767, 2330], [1, 1], [1, 0])
    >>> auc_from_table(store.lo, store.hi, store.pos, store.neg)
    (0.75, 0.0)
    """

    def __init__(self, mapping: BucketMapping | None) -> None:
        self.mapping = mapping
        self._pending: list[ScoreBuckets] = []  # sparse stores: batches not yet folded in
        # (pos, neg, their total): see _held
        self._total: tuple[np.ndarray, np.ndarray, float] | None = None
        self._keys: np.ndarray = np.empty(0, dtype=_F64 if mapping is None else _I64)
        self._pos: np.ndarray = np.empty(0, dtype=_I64)
        self._neg: np.ndarray = np.empty(0, dtype=_I64)
        self._lo: np.ndarray | None = None if mapping is None else np.empty(0, dtype=_F64)
        self._hi: np.ndarray | None = None if mapping is None else np.empty(0, dtype=_F64)
        #: ``"real"`` only: the mantissa bits the keys keep now (see ``REAL_FINE_BITS``).
        self._bits: int | None = REAL_FINE_BITS if isinstance(mapping, RealBits) else None

    @classmethod
    def of_entries(
        cls,
        mapping: BucketMapping,
        keys: np.ndarray,
        pos: np.ndarray,
        neg: np.ndarray,
        lo: np.ndarray,
        hi: np.ndarray,
    ) -> ScoreBuckets:
        """A grid store holding these entries (sorted, distinct keys; no empty bucket), taken
        as they are: for code that folded many stores at once (``states.stacked``)."""
        out = cls.__new__(cls)
        out.mapping, out._pending, out._total, out._bits = mapping, [], None, None
        out._keys, out._pos, out._neg, out._lo, out._hi = keys, pos, neg, lo, hi
        return out

    @property
    def exact(self) -> bool:
        return self.mapping is None

    @property
    def bits(self) -> int | None:
        """``"real"`` stores: the mantissa bits the bucket keys keep (relative width
        ``2**-bits``); None for the other mappings."""
        self._flush()
        return self._bits

    def _floor_bits(self) -> int:
        assert self.mapping is not None
        return int(self.mapping.resolution).bit_length() - 1

    def _keymap(self) -> BucketMapping:
        """The mapping of this store's keys now: the configured one, or for ``"real"`` the one
        at the store's current resolution."""
        assert self.mapping is not None
        return self.mapping if self._bits is None else real_at(self._bits)

    def lower_edges(self) -> np.ndarray:
        """Each bucket's lowest score on its grid, ascending (grid stores only)."""
        return self._keymap().lower_edges(self.keys)

    @property
    def keys(self) -> np.ndarray:
        self._flush()
        return self._keys

    @property
    def pos(self) -> np.ndarray:
        self._flush()
        return self._pos

    @property
    def neg(self) -> np.ndarray:
        self._flush()
        return self._neg

    @property
    def lo(self) -> np.ndarray:
        self._flush()
        return self._keys if self._lo is None else self._lo

    @property
    def hi(self) -> np.ndarray:
        self._flush()
        return self._keys if self._hi is None else self._hi

    @property
    def weighted(self) -> bool:
        return self.pos.dtype == _F64

    def __len__(self) -> int:
        return len(self.keys)

    def totals(self) -> tuple[float, float]:
        """Total positive and negative weight."""
        return float(self.pos.sum()), float(self.neg.sum())

    def _flush(self) -> None:
        """Fold queued batches into the main arrays (same logical contents)."""
        if not self._pending:
            return
        parts, self._pending = [self, *self._pending], []
        self._flush_from(parts)

    def _flush_from(self, parts: list[ScoreBuckets]) -> None:
        """Set this store to the fold of ``parts``, the total remembered if theirs all are."""
        known = [p._remembered() for p in parts]
        self._fold(parts, np.result_type(*(p._pos.dtype for p in parts)))
        if all(t is not None for t in known):  # the same rows: the same total
            self._total = (self._pos, self._neg, sum(known))  # type: ignore[arg-type]

    def exact_sums(self) -> Sums | None:
        """``(P, N, S1, S2, U2)`` of an exact store of counts, its queue included, as exact
        integers; None for weights, grids, an empty store, or past ``_exact_sums.wide_fits``. A
        served store reads them past a short queue (:func:`~streammetrics.states._score_reads.
        exact_sums`)."""
        return exact_sums(self)

    def _remembered(self) -> float | None:
        """The main arrays' total if remembered (see :meth:`_held`), else None."""
        cached = self._total
        if cached is not None and cached[0] is self._pos and cached[1] is self._neg:
            return cached[2]
        return None

    def _fields(self) -> Fields:
        """The main arrays and bits (the queue aside). No method writes into the arrays, so
        their identity is also the store's version (:meth:`derived`)."""
        return self._keys, self._pos, self._neg, self._lo, self._hi, self._bits

    def _empty_like(self) -> ScoreBuckets:
        return ScoreBuckets(self.mapping)

    scalable = True

    def scale(self, factor: float) -> None:
        """Multiply every weight by ``factor`` (counts become float64 weights): ``Decayed``.

        Entries whose weights underflow to 0 leave the store, as a zero-weight row never
        enters it (a store holds no empty bucket: 0.8.4 kept them, and its bytes did not load).
        """
        self._flush()
        pos = self._pos.astype(_F64) * factor
        neg = self._neg.astype(_F64) * factor
        kept = (pos > 0) | (neg > 0)
        if not kept.all():
            pos, neg, self._keys = pos[kept], neg[kept], self._keys[kept]
            if self._lo is not None and self._hi is not None:
                self._lo, self._hi = self._lo[kept], self._hi[kept]
        self._pos, self._neg = pos, neg
        self.forget(*SERVED_MEMOS)

    # -- building ------------------------------------------------------------------------------

    def batch(
        self,
        scores: np.ndarray,
        positive: np.ndarray,
        weights: np.ndarray | None,
        keys: np.ndarray | None = None,
        base: ScoreBuckets | None = None,
    ) -> ScoreBuckets:
        """A new store holding only this batch (validated float64 scores, 0/1 or bool labels).

        Rows of zero weight are left out, as scikit-learn leaves them out of its curves.
        ``keys`` may pass precomputed bucket keys of ``scores``. With ``base`` (a folded store
        of a grid mapping, like this one) the result is ``base`` merged with the batch, counted
        in one dense pass: the grid's arrays start from ``base`` instead of from zero. The
        counting is :func:`~streammetrics.states._bucket_batch.batch_entries`.
        """
        out = self._empty_like()
        out._bits = self._bits
        if weights is not None:
            keep = weights != 0
            if not keep.all():
                scores, positive, weights = scores[keep], positive[keep], weights[keep]
                keys = None if keys is None else keys[keep]
        if len(scores) == 0:
            if base is not None:
                out = base.copy()
            if weights is not None:
                out._pos, out._neg = out._pos.astype(_F64), out._neg.astype(_F64)
            return out
        keymap = None if self.mapping is None else self._keymap()
        entries = batch_entries(keymap, scores, positive, weights, keys, base)
        out._keys, out._pos, out._neg, out._lo, out._hi = entries
        return out

    def add(
        self,
        scores: np.ndarray,
        positive: np.ndarray,
        weights: np.ndarray | None,
        keys: np.ndarray | None = None,
    ) -> ScoreBuckets:
        """A new store: ``self`` plus a batch. Pure: ``self`` does not change.

        Sparse stores (exact, ``"real"``) queue the batch and fold the queue in once it outgrows
        the main arrays, so a stream of m distinct scores costs O(m log m) in all, not O(m) per
        update. ``keys`` may pass the grid keys of ``scores`` (grids only).
        """
        if self.mapping is not None and self.mapping.size is not None:
            # A grid: count the batch straight into a dense copy of this store's arrays.
            total = float(len(scores)) if weights is None else float(np.sum(weights))
            kind = "f" if weights is not None or self._pos.dtype == _F64 else "i"
            what = "score buckets" if weights is None else "sample_weight (score buckets)"
            check_sum(what, kind, self._held(), total)
            return self.batch(scores, positive, weights, keys=keys, base=self)
        total = float(len(scores)) if weights is None else float(np.sum(weights))
        if weights is not None:  # weights past 2**100 would make the bytes unreadable
            check_sum("sample_weight (score buckets)", "f", self._held(), total)
        batch = self.batch(scores, positive, weights)
        batch._total = (batch._pos, batch._neg, total)  # its rows' total, known: remembered
        out = self._empty_like()
        out._keys, out._pos, out._neg, out._lo, out._hi, out._bits = self._fields()
        out._total = self._total  # the same main arrays: their remembered total holds
        out._pending = [*self._pending, batch]
        self.pass_on(out, ("served", *SERVED_MEMOS))  # (kept with the main arrays, out's too)
        if queue_full(sum(len(p._keys) for p in out._pending), len(out._keys)):
            out._flush()
        return out

    def bfloat16_keys(self) -> np.ndarray | None:
        """The grid key of each of the 65,536 bfloat16 bit patterns (None off a grid), so a
        bfloat16 column is bucketed by lookup. Patterns outside the mapping's domain map to 0:
        they never pass the per-request checks that lead here."""
        if self.mapping is None or self.mapping.size is None:
            return None
        return bfloat16_keys(self.mapping)

    # -- merging -------------------------------------------------------------------------------

    def check_mergeable(self, other: Any) -> None:
        self._check_mapping(other)
        check_sum("score buckets", self._kind(other), self._held(), other._held())

    def _check_mapping(self, other: Any) -> None:
        if not isinstance(other, ScoreBuckets) or other.mapping != self.mapping:
            theirs = getattr(other, "mapping", type(other).__name__)
            raise IncompatibleStateError(
                f"cannot merge score buckets of {self.mapping!r} with {theirs!r}"
            )

    def held_total(self) -> float:
        return self._held()

    def _weighted(self) -> bool:
        """Whether the counts are weights (float64), the queued batches' included."""
        return self._pos.dtype == _F64 or any(p._pos.dtype == _F64 for p in self._pending)

    def _kind(self, other: ScoreBuckets) -> str:
        return "f" if self._weighted() or other._weighted() else "i"

    def _held(self) -> float:
        """Total weight, queue included, without folding it (reading never writes).

        The main arrays' total is remembered with the arrays it was taken from (they are
        replaced, never changed in place), so the count-bound checks of a merge of many
        operands cost one reduction per operand, not one per check."""
        cached = self._total
        if cached is not None and cached[0] is self._pos and cached[1] is self._neg:
            main = cached[2]
        else:
            main = held_total(self._pos) + held_total(self._neg)
            self._total = (self._pos, self._neg, main)
        # (Each queued batch remembers its own total too: an update pays once per batch.)
        return main + sum(p._held() for p in self._pending)

    def merged(self, other: ScoreBuckets) -> ScoreBuckets:
        """A new store with the entries of both; neither input changes."""
        self.check_mergeable(other)
        self._flush()
        other._flush()
        dtype = np.result_type(self._pos.dtype, other._pos.dtype)
        if len(other) == 0 or len(self) == 0:
            src = self if len(other) == 0 else other
            out = src.copy()
            out._pos, out._neg = out._pos.astype(dtype), out._neg.astype(dtype)
            return out
        out = self._empty_like()
        out._fold([self, other], dtype)
        return out

    def merge(self, other: Any) -> None:
        new = self.merged(other)
        self.forget(*SERVED_MEMOS)
        self._keys, self._pos, self._neg, self._lo, self._hi, self._bits = new._fields()

    def merge_many(self, others: list[Any]) -> None:
        """Fold many stores at once: one dense accumulation over a grid, one sorted reduction
        of every entry otherwise. Complexity O(grid size + entries), or O(E log k) for E
        entries in k sparse stores."""
        for other in others:
            self._check_mapping(other)  # the count bound: all operands together, below
        if len(others) > 1:  # one operand: check_mergeable, called first, checked the pair
            # Pairs within the bound may still pass it together.
            kind = "f" if any(p._weighted() for p in (self, *others)) else "i"
            check_sum("score buckets", kind, *(p._held() for p in (self, *others)))
        parts = [p for p in (self, *others) if len(p)]  # len() folds each part's queue
        # Every operand's count dtype, the empty ones' too (zero-weight rows make a store
        # weighted, float64, with no entry), as one stream of them all would have it.
        dtype = np.result_type(*(p._pos.dtype for p in (self, *others)))
        if len(parts) <= 1:
            if parts and parts[0] is not self:
                self.merge(parts[0])
            if self._pos.dtype != dtype:
                self._pos, self._neg = self._pos.astype(dtype), self._neg.astype(dtype)
            return
        self._fold(parts, dtype, subset=True)

    def _fold(self, parts: list[ScoreBuckets], dtype: Any, subset: bool = False) -> None:
        """Set this store to the entries of the folded stores ``parts`` (``self`` among them or
        not), counts in ``dtype``: on a grid, one dense accumulation in their order (with
        ``subset``, two stores where one's buckets all lie among the other's: the larger
        updated, as when a running total absorbs one more shard); otherwise one sorted
        reduction (``"real"``: at the coarsest resolution among them, then fitted to the bucket
        budget). The kernels are in :mod:`~streammetrics.states._bucket_merge`."""
        self.forget(*SERVED_MEMOS)  # (kept for the arrays replaced here: their memory goes)
        size = None if self.mapping is None else self.mapping.size
        if size is None:
            floor = None if self._bits is None else self._floor_bits()
            folded = fold_sparse([p._fields() for p in parts], dtype, floor)
            self._keys, self._pos, self._neg, self._lo, self._hi, self._bits = folded
            return
        grids = [(p._keys, p._neg, p._pos, p.lo, p.hi) for p in parts]
        entries = merge_subset(grids[0], grids[1], dtype) if subset and len(grids) == 2 else None
        if entries is None:
            entries = fold_grid(grids, dtype, size)
        self._keys, self._neg, self._pos, self._lo, self._hi = entries

    # -- wire ----------------------------------------------------------------------------------

    def to_wire(self) -> Any:
        self._flush()
        return wire_form(self._fields(), self.exact)

    def from_wire(self, wire: Any) -> ScoreBuckets:
        floor = None if self._bits is None else self._floor_bits()
        keys, pos, neg, lo, hi, bits = checked_entries(wire, self.mapping, floor)
        out = ScoreBuckets.__new__(ScoreBuckets)  # (not __init__: its empty arrays, replaced)
        out.mapping, out._pending, out._total, out._bits = self.mapping, [], None, bits
        out._keys, out._pos, out._neg, out._lo, out._hi = keys, pos, neg, lo, hi
        return out

    def copy(self) -> ScoreBuckets:
        self._flush()
        out = self._empty_like()
        out._keys, out._pos, out._neg = self._keys.copy(), self._pos.copy(), self._neg.copy()
        out._lo = None if self._lo is None else self._lo.copy()
        out._hi = None if self._hi is None else self._hi.copy()
        out._bits = self._bits
        cached = self._total
        if cached is not None and cached[0] is self._pos and cached[1] is self._neg:
            out._total = (out._pos, out._neg, cached[2])
        return out

    def derived(self, name: str, make: Callable[[], Any]) -> Any:
        """``make()`` (a value read off this store), once per state: no method writes into a
        store's arrays (updates and merges replace them), so their identity is its version
        (:meth:`~streammetrics.base.StateBlock.remembered`)."""
        self._flush()
        return self.remembered(name, self._fields(), make)

    def keep(self, name: str, value: Any) -> None:
        """Hold ``value`` as :meth:`derived` would hold ``name``'s for the store as it is: a
        read made for it elsewhere, to the bit (``Sliced`` reads many stores at once)."""
        self._flush()
        self.remembered(name, self._fields(), lambda: value)

    def kept(self, names: tuple[str, ...]) -> bool:
        """Whether :meth:`derived` has every one of ``names`` for the store as it is."""
        self._flush()
        return all(self.is_remembered(name, self._fields()) for name in names)

    def merge_target(self) -> ScoreBuckets:
        """A copy sharing this store's arrays: no method writes into a store's arrays (updates
        and merges replace them), so ``a + b`` need not copy ``a``'s before the merge does."""
        self._flush()
        out = self._empty_like()
        out._keys, out._pos, out._neg, out._lo, out._hi, out._bits = self._fields()
        out._total = self._total
        return out

    def __deepcopy__(self, memo: dict[int, Any]) -> ScoreBuckets:
        return self.copy()
