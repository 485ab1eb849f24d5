"""Validate now, fold later: the per-request path every metric gets from the base class.

A model server updates a metric once per request, with one sample given as scalars or a small
batch. Folding each such call into the state costs a numpy round trip per column (tens of
microseconds); this path makes the call cost about a microsecond instead:

* a metric declares, once, the kind of each column of its ``update``
  (:meth:`PerRequest._declare_rows`, checks in ``streammetrics._rows``);
* a call whose columns are scalars (one sample) or small 1-D arrays, and which certainly passes
  the metric's ``update``, is appended to a :class:`Pending` buffer;
* the buffer is folded into the state by the metric's own ``update``, vectorised, when it fills
  (``FOLD_ROWS`` rows) and before anything reads the state.

The lock and the wrappers that route each call here are in ``streammetrics._locking``; the
buffer itself is ``streammetrics._pending_buffer``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ._codec import COUNT_LIMIT
from ._locking import StateAttr
from ._pending_buffer import FOLD_CHUNK_BYTES, FOLD_CHUNK_ROWS, FOLD_ROWS, Pending
from ._row_checks import KEY, LABEL
from ._rows import _SCALAR_TYPES, SMALL_BATCH, Rows

__all__ = ["PerRequest"]

# Rows a buffer can hold at most (samples, small batches and the call that fills it). Each row
# adds at most 1 (or its weight) to any count total, so a state with this much room left under
# the count bound cannot pass it by folding its buffer.
_MARGIN = FOLD_ROWS + FOLD_CHUNK_ROWS + SMALL_BATCH
# Weighted states hold float64 sums bounded by WEIGHT_LIMIT (2**100): trusted while below this,
# for weights below MAX_WEIGHT (2**82: a full buffer, under 2**17 rows, adds less than 2**99).
_WEIGHT_ROOM = 2.0**99


def _keyword_last(rows: Rows, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``args`` with the declared keyword column (``Sliced``'s ``by=``) as the last, when the
    call passes nothing else by keyword; None otherwise."""
    keyword = rows.keyword
    if keyword is None:
        return None if kwargs else args
    if len(kwargs) != 1 or keyword not in kwargs:
        return None
    return (*args, kwargs[keyword])


class PerRequest:
    """The per-request methods of :class:`~streammetrics.base.Metric` (a mixin of it)."""

    _lock: threading.RLock
    #: Rows accepted by the per-request path and not yet folded into the state (or None).
    _pending: Pending | None
    #: The declared columns of ``update`` (None: every call goes to ``update`` directly).
    _rows: Rows | None
    #: The pending rows list while the buffer holds unweighted samples (the hot path's target).
    _buffer: list[tuple[Any, ...]] | None = None
    #: A metric without declared columns may take one sample its own way: ``_take_row(args,
    #: kwargs)`` (lock held) buffers the call and returns True, or returns False and changes
    #: nothing (``Bootstrap``: the wrapped metric takes the row, the replicates wait).
    _take_row: Callable[[tuple[Any, ...], dict[str, Any]], bool] | None = None
    #: What ``_take_row``'s waiting rows may still add before a fold could pass 2**53.
    _room: float = 0.0

    def _declare_rows(
        self,
        *kinds: str,
        weights: bool = True,
        keyword: str | None = None,
        free: bool = False,
        labels: tuple[Any, ...] = (),
    ) -> None:
        """Declare the columns of ``update`` for the per-request path (``streammetrics._pending``).

        ``kinds`` gives each positional column's kind: ``"label"`` (class labels),
        ``"key"`` (group or query ids), ``"number"`` (finite reals) or ``"probability"``
        (reals in [0, 1]); ``weights`` says whether ``update`` takes ``sample_weight=``. Only a
        metric whose ``update`` takes exactly these 1-D columns, and whose state is what a
        sequence of its updates makes it, may declare them: one sample at a time must give the
        same state as one batch. A metric may also define ``_fold_rows``, taking the same
        columns as ``update``, to fold buffered rows without checking them again (they passed
        the checks of ``streammetrics._rows``, made for its ``update``). ``keyword``: the last
        column is passed to ``update`` as this keyword argument (``Sliced``'s ``by=``);
        ``free``: a label accepted with one key is trusted with every key (see ``Rows``).
        ``labels``: every value the label columns accept, when they are fixed (a binary
        metric's 0 and 1): one sample of them is trusted from the first call, not once a call
        has brought it (``Rows.trust_labels``).
        """
        self._rows = Rows(tuple(kinds), weights, keyword, free)
        if labels:
            self._rows.trust_labels(labels)

    def _room_for(self, weight: Any, factor: float, held: Callable[[], float]) -> bool:
        """For ``_take_row``: whether one more waiting row of ``weight`` (None: 1; at least 1)
        keeps every total its fold can reach within 2**53, the row counted ``factor`` times (a
        bootstrap replicate's Poisson draw, up to 255; ``"micro"``'s pooled columns); if so,
        it is spent. ``held()``, the largest total the state holds, is read when a buffer
        starts. Rows beyond take the ordinary update, which checks the bounds exactly: a
        fold must not fail. Lock held."""
        if self._pending is None:
            self._room = float(COUNT_LIMIT) - factor * held()
        cost = factor * (1.0 if weight is None else max(1.0, float(weight)))  # (nan: 1)
        if not cost <= self._room:
            return False
        self._room -= cost
        return True

    def _slice_free_labels(self) -> bool:
        """Whether ``update`` accepts a label on any state that accepted it on another, as long
        as both hold labels of its kind (no check that reads the labels already held, such as
        ``average="binary"``'s two classes): ``Sliced`` then trusts a label seen in one slice
        in every slice."""
        return False

    def _label_kinds(self) -> set[str]:
        """The kinds ("int", "str") of the labels this state holds, for a metric whose
        :meth:`_slice_free_labels` is True (the others: both, unknown)."""
        return {"int", "str"}

    def _held_label_kinds(self) -> set[str]:
        """The kinds of labels held anywhere in this state (``Sliced``: in any slice), read
        when :class:`Rows` must know them to trust a label in every slice."""
        return {"int", "str"}

    # -- the per-request path ----------------------------------------------------------------

    def _plan(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """What buffering this call would append, if it certainly passes ``update``; no change.

        ``(row, weighted)`` for one sample as scalars, ``(columns, weighted)`` for a small batch
        (arrays, copied), None otherwise.
        """
        rows = self._rows
        if rows is None:
            return None
        if len(args) != rows.n:
            moved = rows.weight_by_keyword(args, kwargs)
            if moved is None:
                return None
            args, kwargs = moved
        scalar = type(args[0]) in _SCALAR_TYPES if args else False
        if scalar and not kwargs and rows.scalar_args(args):
            return args, False
        weight = None
        if kwargs:
            if not rows.weights or len(kwargs) != 1 or "sample_weight" not in kwargs:
                return None
            weight = kwargs["sample_weight"]
        if scalar:
            if rows.scalar_row(args, weight):
                return (args if weight is None else (*args, weight)), weight is not None
            return None
        cols = rows.small_batch(args, weight)
        if cols is None:
            return None
        return cols, weight is not None

    def _append_row(self, args: tuple[Any, ...]) -> None:
        """Buffer one unweighted sample that :meth:`Rows.scalar_args` trusts (lock held)."""
        pending = self._pending
        if pending is None or pending.weighted:
            if pending is not None:
                self._fold()
            pending = self._start_pending(False)
        pending.rows.append(args)
        if len(pending.rows) >= FOLD_ROWS:
            self._fold()

    def _push(self, plan: Any) -> int:
        """Append a :meth:`_plan` to the pending rows (lock held); the number of rows added."""
        values, weighted = plan
        pending = self._pending
        if pending is not None and pending.weighted != weighted:
            self._fold()
            pending = None
        if pending is None:
            pending = self._start_pending(weighted)
        if isinstance(values[0], np.ndarray):
            pending.add_chunk(values)
            added = len(values[0])
        else:
            pending.rows.append(values)
            added = 1
        if (
            len(pending.rows) >= FOLD_ROWS
            or pending.chunk_bytes >= FOLD_CHUNK_BYTES
            or pending.chunk_rows >= FOLD_CHUNK_ROWS
        ):
            self._fold()
        return added

    def _start_pending(self, weighted: bool) -> Pending:
        """A new buffer, holding the declared fields until the fold (see :class:`StateAttr`)."""
        pending = self._pending = Pending(weighted)
        self._buffer = None if weighted else pending.rows
        attrs, cls = self.__dict__, type(self)
        for name in [n for n in attrs if isinstance(getattr(cls, n, None), StateAttr)]:
            pending.stash[name] = attrs.pop(name)
        return pending

    def _unfolded(self, name: str) -> Any:
        """The declared field ``name`` as it is, without folding the rows waiting (reading the
        field folds them): while rows wait, the buffer holds the fields aside. For a wrapper's
        per-request path, which judges a row by the state it already holds."""
        pending = self._pending
        return self.__dict__[name] if pending is None else pending.stash[name]

    def _drop_pending(self) -> None:
        """Forget the pending rows (``reset``), putting the declared fields back first."""
        pending = self._pending
        if pending is not None:
            self.__dict__.update(pending.stash)
            self._pending = self._buffer = None

    def _row_trusted(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether ``update(*args, **kwargs)``, one row as scalars, takes the hot path: its
        values are all ones this state has accepted before, so it adds nothing new (no label,
        no slice). The test of :func:`_updating`, without updating, and without the lock: for
        a wrapper asking about a state only it holds (a window's slot)."""
        rows = self._rows
        row = None if rows is None else _keyword_last(rows, args, kwargs)
        # (Each label seen in this row's own slice: the window checks a row new to a slot
        # against the other slots, which a label trusted in every slice has not passed.)
        return row is not None and rows is not None and rows.row_known(row)

    def _row_certain(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether ``update(*args, **kwargs)``, one row as scalars, certainly passes (a
        collection then updates this member in place beside another that may refuse it). A
        trusted row takes the hot path, which only the count bound can stop, and the
        collection checks that bound first; wrappers taking arguments of their own
        (``Bootstrap``'s ``ids``) say more."""
        return self._row_trusted(args, kwargs)

    def _row_check(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Check, changing nothing, that ``update(*args, **kwargs)`` of one row as scalars
        passes: ``InputError`` (the update's own) if it would refuse the row, True if it
        certainly passes, False when that cannot be told without updating. A collection
        updates in place several members that may refuse a row when all but one of them
        checked it first. Here: a row the per-request path would buffer (every value
        trusted, the state far from its bounds), or a certain row (:meth:`_row_certain`); the
        windows and ``Sliced`` check a row new to them as their update does, without taking
        it."""
        rows = self._rows
        row = None if rows is None else _keyword_last(rows, args, kwargs)
        if rows is not None and row is not None and rows.row_ok(row):
            return True
        return self._row_certain(args, kwargs)

    def _learn_row(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Trust each value of one row of scalars that ``update`` just accepted, with its own
        slice key (:meth:`_row_trusted`'s test): a window calls it after a checked update,
        which the per-request path may have buffered without learning anything."""
        with self._lock:
            rows = self._rows
            row = None if rows is None else _keyword_last(rows, args, kwargs)
            if rows is None or row is None:
                return
            if len(row) == rows.n and all(type(v) in _SCALAR_TYPES for v in row):
                rows.learn(row, None)

    def _try_buffer(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Buffer this ``update`` call if it certainly passes (lock held); False otherwise."""
        if self._rows is None:
            return False
        plan = self._plan(args, kwargs)
        if plan is None:
            return False
        self._push(plan)
        return True

    def _learn(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        rows = self._rows
        assert rows is not None
        if len(args) != rows.n or any(k != "sample_weight" for k in kwargs):
            # A call beyond the declared columns (ranking's ``complete=True``) may change the
            # state in ways the declaration does not describe: trust nothing learnt before it.
            rows.forget()
            return
        first = args[0]
        large = isinstance(first, np.ndarray) and first.ndim > 0 and len(first) > SMALL_BATCH
        # (The bound is read only when there is trust to lose or to grant: a stream of large
        # batches never pays for it.)
        if (rows.learnt or not large) and self._near_bound():
            rows.forget()  # near the count bound: every call checks it on the ordinary path
            return
        if large:
            # A large batch of the declared columns: nothing to learn from it, and the kinds
            # of labels it brought are read off the state when next needed.
            rows.kinds_unknown()
            return
        if rows.free and not rows.kinds_known:
            # Labels trusted in every slice need the kinds every slice holds: after a load,
            # a merge, a reset or a large batch, read them off the state (0.8.10's first
            # version counted only the labels learnt since, and trusted an integer label in
            # a slice that a merge had filled with strings).
            rows.know_kinds(self._held_label_kinds())
        rows.learn(args, kwargs.get("sample_weight"))

    def _near_bound(self) -> bool:
        """Whether a full buffer could take the state's counts past their bound (2**53 for
        counts, float64's range for weights): then nothing is buffered."""
        total = max(float(self._count), self._row_bound())  # type: ignore[attr-defined]
        return bool(total > COUNT_LIMIT - _MARGIN or total > _WEIGHT_ROOM)

    def _row_bound(self) -> float:
        """The largest count or weight total among the declared blocks, or a bound above it
        (``Sliced``: above every slice's), for :meth:`_near_bound`."""
        total: float = self._held_total()  # type: ignore[attr-defined]
        return total

    def _fold(self) -> None:
        """Fold the pending rows into the state with one ordinary ``update`` (lock held)."""
        pending = self._pending
        if pending is None:
            return
        self.__dict__.update(pending.stash)
        self._pending = self._buffer = None
        # A metric may fold rows the checks above passed without checking them again, and
        # read bfloat16 scores as raw bits (``_fold_bfloat16``).
        raw = getattr(type(self), "_fold_rows", None)
        if raw is None:
            raw = type(self).update.__sm_raw__  # type: ignore[attr-defined]
        keyword = None if self._rows is None else self._rows.keyword
        exact = None
        if self._rows is not None:  # labels and keys join exactly; numbers become float anyway
            exact = tuple(kind in (LABEL, KEY) for kind in self._rows.kinds)
            exact += (False,) * pending.weighted
        for cols in pending.batches(getattr(self, "_fold_bfloat16", False), exact):
            extra: dict[str, Any] = {}
            if pending.weighted:
                cols, extra["sample_weight"] = cols[:-1], cols[-1]
            if keyword is not None:
                cols, extra[keyword] = cols[:-1], cols[-1]
            raw(self, *cols, **extra)
        if self._rows is not None and self._near_bound():
            self._rows.forget()

    def _fold_locked(self) -> None:
        with self._lock:
            self._fold()
