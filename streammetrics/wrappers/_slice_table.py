"""The state of ``Sliced``: a map of slice keys to states of one metric, held per slice or
packed into one table (:class:`~streammetrics.wrappers._slice_pack.SlicePack` for score
buckets, :class:`~streammetrics.wrappers._confusion_pack.ConfusionPack` for label counts,
``MomentsPack`` and ``FitPack`` for the regression moments, ``SumPack`` for log loss and the
Brier score, ``BinsPack`` for the calibration error), read from the wire into that table by
the packed decoders (``_slice_wire``, ``_moments_wire``, ``_sum_wire``)."""

from __future__ import annotations

import copy as _copy
import importlib
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from .. import _codec
from ..base import Metric, StateBlock
from ..classification._loss_stack import BinStack, SumStack
from ..errors import IncompatibleStateError, InputError
from ..regression._stack import FitStack, LossStack
from ..states._bucket_stack import BucketStack
from ..states.buckets import ScoreBuckets
from ..states.stacked import ConfusionStack, Stacked, blanks
from ._bins_pack import BINS_PACK_MIN_SLICES, BinsPack
from ._confusion_pack import CONFUSION_PACK_MIN_SLICES, ConfusionPack
from ._fit_pack import FIT_PACK_MIN_SLICES, FitPack
from ._moments_pack import MOMENTS_PACK_MIN_SLICES, MomentsPack
from ._moments_wire import MOMENTS_DECODE_MIN, decoded_moments_pack
from ._packing import library_state
from ._slice_pack import PACK_MIN_SLICES, READ_PACK_FROM, SlicePack
from ._slice_wire import decoded_confusion_pack, decoded_pack, key_from_wire, key_to_wire
from ._sum_pack import SUM_PACK_MIN_SLICES, SumPack
from ._sum_wire import SUM_DECODE_MIN, decoded_bins_pack, decoded_sum_pack

__all__ = ["CONFUSION_PACK_MIN_SLICES", "PACK_MIN_SLICES", "SliceTable", "slice_kind"]

Key = Any  # int, str, or a tuple of them
#: A packed table of slices, one kind per wrapped metric.
Pack = SlicePack | ConfusionPack | MomentsPack | FitPack | SumPack | BinsPack


def packs() -> tuple[tuple[type, Any, int], ...]:
    """Each batch description (``metric._stacked``) and the table it folds into, packed from that
    many slices (read when asked: tests lower the thresholds)."""
    return (
        (BucketStack, SlicePack, PACK_MIN_SLICES),
        (ConfusionStack, ConfusionPack, CONFUSION_PACK_MIN_SLICES),
        (LossStack, MomentsPack, MOMENTS_PACK_MIN_SLICES),
        (FitStack, FitPack, FIT_PACK_MIN_SLICES),
        (SumStack, SumPack, SUM_PACK_MIN_SLICES),
        (BinStack, BinsPack, BINS_PACK_MIN_SLICES),
    )


#: Confusion slices are read into one table from this many (fewer decode as fast one by one,
#: and a table of a few slices is packed at their next update anyway).
CONFUSION_PACK_DECODE_MIN = 64


def slice_kind(key: Key) -> Any:
    """The kind of a slice key: ``int``, ``str`` or a tuple of those, for one-kind checks."""
    if isinstance(key, tuple):
        return tuple(type(k).__name__ for k in key)
    return type(key).__name__


def _decode_metric(env: Any, expect: Metric) -> Metric:
    """A nested metric from its envelope, checked against ``expect`` by the registry."""
    try:  # the decoder lives in ``_loading`` once base.py is split, in ``base`` before
        loader = importlib.import_module("streammetrics._loading")
    except ModuleNotFoundError:
        loader = importlib.import_module("streammetrics.base")
    metric: Metric = loader._from_tree(_codec.check_envelope(env), expect=expect)
    return metric


class SliceTable(StateBlock):
    """A map of slice keys to sub-states of one metric; merges by key union, canonical on the wire.

    The wire form lists ``[key, state]`` pairs sorted by key, so it does not depend on the order
    keys arrived in. Scalable (for ``Decayed``) when the wrapped metric's state is. Many slices
    of a score-bucket metric are held as one :class:`SlicePack` instead, and many slices of a
    confusion metric as one :class:`ConfusionPack`; one state per slice is made from it only
    when something reads them (:meth:`view`) or changes them (:attr:`slices`, which then drops
    the pack).
    """

    #: For :meth:`read_pack`: per read, how many slices changed since every slice last made it
    #: (missing: not known); a hint that spares it a look at every slice. Always replaced,
    #: never changed in place (the class's empty default serves tables pickled before 0.8.24).
    changed: Mapping[tuple[str, ...], int] = MappingProxyType({})

    def __init__(self, metric: Metric) -> None:
        self.template = metric
        self._dict: dict[Key, Metric] | None = {}
        #: The slices as one table (many slices of a score-bucket metric), or None. When set it
        #: is the truth, and ``_dict`` (if not None) a read-only materialisation of it.
        self._pack: Pack | None = None
        #: A bound above every slice's count or weight totals (None: not known), for the
        #: per-request path (:meth:`row_bound`); never on the wire.
        self.bound: float | None = 0.0
        self.changed = {}
        try:
            from .decayed import scale_plan as _scale_plan

            _scale_plan(metric)
            self.scalable = True  # type: ignore[misc]
        except InputError:
            self.scalable = False  # type: ignore[misc]

    @property
    def slices(self) -> dict[Key, Metric]:
        """The slice states, for a caller that may change them: the table stops being packed
        (:meth:`view` reads them without that)."""
        out = self.view()
        # (the caller may change them: bound unknown, and which have changed)
        self._pack, self.bound, self.changed = None, None, {}
        return out

    @slices.setter
    def slices(self, value: dict[Key, Metric]) -> None:
        self._dict, self._pack, self.changed = value, None, {}

    def view(self) -> dict[Key, Metric]:
        """The slice states, to read only (made once from the pack, if packed)."""
        if self._dict is None:
            pack = self.pack()
            assert pack is not None
            self._dict = pack.materialize()
        return self._dict

    def pack(self) -> Pack | None:
        """The packed table with its queue folded in (the same contents), or None."""
        if self._pack is not None and self._pack.queue:
            self._pack = self._pack.settled()
        return self._pack

    def read_pack(self, reads: tuple[str, ...]) -> tuple[SlicePack, list[Metric]] | None:
        """For score slices held one state each: a :class:`SlicePack` of the slices whose
        stores have not kept ``reads`` (``ScoreBuckets.kept``: a value read since their last
        change), and their states in its order, when there are ``READ_PACK_FROM[reads]`` of
        them; None otherwise (each state answers: the kept reads at once, the others one by
        one). Its reads take the tables of one length at once, with the functions each state
        calls on its own table, and :meth:`SlicePack.keep_reads` gives them to the states, so
        a second read finds them kept. None too where the states make no one pack (rows
        waiting in a state, weighted beside unweighted slices)."""
        if self._pack is not None or not library_state(self.template):
            return None
        slices, enough = self.view(), READ_PACK_FROM[reads]
        if len(slices) < enough:
            return None
        hist = getattr(self.template, "hist", None)
        if not isinstance(hist, ScoreBuckets) or hist.mapping is None or hist.mapping.size is None:
            return None  # (exact and "real" stores: no pack)
        changed = self.changed.get(reads)
        # (the caller reads every slice next: all of them then hold ``reads``)
        self.changed = {**self.changed, reads: 0}
        if changed is not None and changed < enough:
            return None  # (a stream of small batches: the few changed slices read alone)
        stale = {
            k: m
            for k, m in slices.items()
            if m._count and (m._pending is not None or not m.hist.kept(reads))  # type: ignore[attr-defined]
        }
        if len(stale) < enough:
            return None
        made = SlicePack.of_slices(self.template, stale)
        return None if made is None else (made, list(stale.values()))

    def state(self, key: Key) -> Metric:
        """The state of one slice, to read only (``KeyError`` if none): from the pack alone
        when the slices were not made yet, without making every other."""
        pack = self.pack()
        if pack is not None and self._dict is None:
            alone: Metric = pack.state(key)
            return alone
        return self.view()[key]

    def key_list(self) -> list[Key]:
        """The slice keys, in arrival order."""
        return list(self._pack.keys) if self._pack is not None else list(self.view())

    def has(self, key: Key) -> bool:
        return key in (self._pack.index if self._pack is not None else self.view())

    def __len__(self) -> int:
        return len(self._pack) if self._pack is not None else len(self.view())

    def rows(self) -> int:
        """The rows every slice counted, together (a packed table's from its counts)."""
        if self._pack is not None:  # (Python ints: forged counts near 2**53 each wrap int64)
            return sum(self._pack.counts.tolist())
        return sum(m.count for m in self.view().values())

    def row_bound(self) -> float:
        """A bound above every slice's count or weight totals (its ``_held_total``; the rows
        of all slices together are the wrapper's count). Kept by ``Sliced.update``, merges
        and scaling; else found by one look at every slice, or at a packed table's arrays."""
        if self.bound is None:
            if self._pack is not None:  # (its sums may round otherwise than each slice's)
                self.bound = self._pack.held_bound() * (1.0 + 2.0**-40)
            else:
                totals = (m._held_total() for m in self.view().values())
                self.bound = max(totals, default=0.0)
        return self.bound

    def label_kinds(self) -> set[str]:
        """The kinds ("int", "str") of the labels the slices hold (the wrapped metric's
        ``_label_kinds``): one look at a packed table's label set (a pack holds one kind),
        else one per slice."""
        pack = self._pack
        if pack is not None:
            labels = getattr(pack, "labels", None)
            if labels is None:  # score buckets: labels 0/1, no kind to mix
                return set()
            return {"str" if labels.dtype.kind == "U" else "int"} if len(labels) else set()
        out: set[str] = set()
        for metric in self.view().values():
            out |= metric._label_kinds()
        return out

    def kind(self) -> Any:
        if self._pack is not None:
            return slice_kind(self._pack.keys[0]) if len(self._pack) else None
        slices = self.view()
        return slice_kind(next(iter(slices))) if slices else None

    def updated(self, fresh: dict[Key, Metric]) -> SliceTable:
        """A new table holding this one's slices with ``fresh`` ones replacing or added."""
        out = self._like()
        out.slices = {**self.view(), **fresh}
        out.changed = {reads: n + len(fresh) for reads, n in self.changed.items()}
        return out

    def copy(self) -> SliceTable:
        """An independent copy: each slice's state copied, the template shared (templates are
        only ever copied, never updated), a pack's arrays deep-copied. ``StateBlock``'s
        generic deep copy also copied the template, through ``copy.deepcopy`` of every
        attribute: 0.6 ms for an empty table."""
        out = self._like()
        if self._pack is not None:
            out._pack = _copy.deepcopy(self._pack)  # its materialisation is rebuilt on demand
        else:
            assert self._dict is not None
            out._dict = {key: metric.copy() for key, metric in self._dict.items()}
        out.bound = self.bound
        return out

    def _like(self) -> SliceTable:
        out = SliceTable.__new__(SliceTable)
        out.template = self.template
        out.scalable = self.scalable  # type: ignore[misc]
        out._dict, out._pack, out.bound, out.changed = None, None, None, {}
        return out

    def packed_fold(self, stack: Stacked, codes: np.ndarray, keys: list[Key]) -> SliceTable | None:
        """A new table with the batch folded in as one table (the pack of the stack's kind,
        :func:`packs`), or None where the per-slice fold applies (few slices, another metric,
        mixed count dtypes)."""
        found = next(((k, n) for s, k, n in packs() if isinstance(stack, s)), None)
        if found is None:
            return None
        kind, least = found
        if not library_state(self.template):
            return None  # (a user's subclass with a state of its own: one state per slice)
        pack: Any = self._pack  # of the stack's kind: one template makes one kind of stack
        if pack is None:
            slices = self.view()
            if max(len(slices), len(keys)) < least:
                return None
            pack = kind.of_slices(self.template, slices)
            if pack is None:
                return None
        folded = pack.folded(stack, codes, keys)
        if folded is None:
            return None
        out = self._like()
        out._pack = folded
        return out

    def check_mergeable(self, other: Any) -> None:
        if not isinstance(other, SliceTable):
            raise IncompatibleStateError("cannot merge slices with another kind of state")
        self.template._check_compatible(other.template)
        mine, theirs = self.kind(), other.kind()
        if mine is not None and theirs is not None and mine != theirs:
            raise IncompatibleStateError(f"slice keys of kind {mine} cannot meet keys of {theirs}")
        held = self.view()
        for key, metric in other.view().items():
            if key in held:
                held[key]._check_compatible(metric)

    def merge(self, other: Any) -> None:
        self.merge_many([other])

    def merge_many(self, others: list[Any]) -> None:
        """All or nothing: each slice's merge makes a new state (one merge of all its operands),
        and the table changes only once every one has succeeded (a slice's merge may still be
        refused, a count bound, after the tables were checked mergeable)."""
        bounds = [t.bound for t in (self, *others)]
        held = self.view()
        theirs: dict[Key, list[Metric]] = {}
        for other in others:
            for key, metric in other.view().items():
                theirs.setdefault(key, []).append(metric)
        merged: dict[Key, Metric] = {}
        for key, metrics in theirs.items():
            mine = held.get(key)
            if mine is None:
                mine, metrics = metrics[0], metrics[1:]
            merged[key] = mine._copy(for_merge=True).merge(*metrics) if metrics else mine.copy()
        self.slices = {**held, **merged}
        # A slice's merged totals are at most the sum of its parts' (rounded up).
        known = None if None in bounds else math.fsum(bounds)
        self.bound = None if known is None else math.nextafter(known, math.inf)

    def scale(self, factor: float) -> None:
        if not self.scalable:
            super().scale(factor)
        from .decayed import scale as _scale

        bound = self.bound
        for metric in self.slices.values():
            _scale(metric, factor)
        # (each total scales by ``factor``; one more for its rounding)
        known = bound is not None and 0.0 <= factor < math.inf
        self.bound = bound * factor * (1.0 + 2.0**-50) + 1.0 if known else None  # type: ignore[operator]

    def to_wire(self) -> Any:
        pack = self.pack()
        states = None if pack is None else pack.wire_states()
        if states is not None:  # the same bytes, without a state per slice
            t = self.template
            name, schema, config = t._wire_name, type(t)._schema, _codec.canonical(t._config)
            return [
                [key_to_wire(k), _codec.canonical_envelope(name, schema, config, state)]
                for k, state in states
            ]
        slices = self.view()
        return [[key_to_wire(k), slices[k]._envelope()] for k in sorted(slices)]

    def from_wire(self, wire: Any) -> SliceTable:
        if not isinstance(wire, list):
            raise ValueError("slices must be a list of [key, state] pairs")
        out = self._like()
        # Many slices of a score-bucket or confusion metric: straight into one table.
        pack: Pack | None = decoded_pack(self.template, wire, PACK_MIN_SLICES)
        if pack is None:
            pack = decoded_confusion_pack(self.template, wire, CONFUSION_PACK_DECODE_MIN)
        if pack is None:
            pack = decoded_moments_pack(self.template, wire, MOMENTS_DECODE_MIN)
        if pack is None:
            pack = decoded_sum_pack(self.template, wire, SUM_DECODE_MIN)
        if pack is None:
            pack = decoded_bins_pack(self.template, wire, SUM_DECODE_MIN)
        if pack is not None:
            out._pack = pack
            return out
        out.slices = {}
        kinds = set()
        # Each slice is decoded into a twin of a blank without a per-request buffer, as the
        # packed tables' states are (``blanks``): slices are fed by ``Sliced``, never by
        # one-sample calls of their own (making a buffer per slice was a fifth of ``loads``).
        # A metric taking samples its own way (``Bootstrap``) keeps its buffer.
        if type(self.template)._take_row is None:
            expect = blanks(self.template, 1)[0]
        else:
            expect = self.template
        for pair in wire:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise ValueError("each slice must be a [key, state] pair")
            raw, env = pair
            key = key_from_wire(raw)
            if key is None:
                raise ValueError(
                    f"slice key {raw!r} is not an integer, a string (not ending in NUL) or "
                    "a tuple of them"
                )
            if key in out.slices:
                raise ValueError(f"slice key {key!r} appears twice")
            metric = _decode_metric(env, expect)
            if metric.count <= 0:
                raise ValueError(f"slice {key!r} is empty (empty slices are not stored)")
            kinds.add(slice_kind(key))
            out.slices[key] = metric
        if len(kinds) > 1:
            raise ValueError(f"slice keys of several kinds: {sorted(map(str, kinds))}")
        return out
