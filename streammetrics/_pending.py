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

The same wrappers give every metric its lock: the base class wraps each subclass's ``update``,
``reset`` and public methods when the subclass is created (:func:`wrap_class`); while rows are
pending, a read of any declared state field goes through :class:`StateAttr`, which folds them
first.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ._codec import COUNT_LIMIT
from ._inputs import BFLOAT16_BITS, widen_bfloat16
from ._row_checks import KEY, LABEL
from ._rows import _SCALAR_TYPES, SMALL_BATCH, Rows

__all__ = ["FOLD_ROWS", "Pending", "PerRequest", "StateAttr", "wrap_class"]

#: When the buffer is folded into the state (one vectorised update): at ``FOLD_ROWS`` samples
#: given as scalars (Python objects, about 100 bytes a row), or when the small batches, kept as
#: arrays, hold ``FOLD_CHUNK_BYTES`` (16,384 rows of three 8-byte columns; 32,768 rows of an
#: int64 label and a float32 score) or ``FOLD_CHUNK_ROWS``: a buffer near 400 KB either way.
#: The fewer the folds, the less their fixed cost weighs on each call.
FOLD_ROWS = 4096
FOLD_CHUNK_BYTES = 16384 * 24
FOLD_CHUNK_ROWS = 65536
# Rows a buffer can hold at most (samples, small batches and the call that fills it). Each row
# adds at most 1 (or its weight) to any count total, so a state with this much room left under
# the count bound cannot pass it by folding its buffer.
_MARGIN = FOLD_ROWS + FOLD_CHUNK_ROWS + SMALL_BATCH
# Weighted states hold float64 sums bounded by WEIGHT_LIMIT (2**100): trusted while below this,
# for weights below MAX_WEIGHT (2**82: a full buffer, under 2**17 rows, adds less than 2**99).
_WEIGHT_ROOM = 2.0**99


_TEXT = frozenset({str, bytes})


def _big_int(value: Any) -> bool:
    """Whether ``value`` is an integer (not a bool) that float64 does not hold exactly."""
    return (
        isinstance(value, (int, np.integer))
        and not isinstance(value, (bool, np.bool_))
        and abs(int(value)) > _EXACT_INT
    )


class Pending:
    """Rows accepted but not yet folded into the state: scalar rows and small batches.

    Rows of one call shape only (weighted or not): a call of the other kind folds first, so a
    fold never mixes rows with and without weights (the state's dtype stays what a sequence of
    ordinary updates would make it).
    """

    __slots__ = ("chunk_bytes", "chunk_rows", "chunks", "rows", "stash", "weighted")

    def __init__(self, weighted: bool) -> None:
        self.stash: dict[str, Any] = {}  # the metric's declared fields, out of it meanwhile
        self.rows: list[tuple[Any, ...]] = []  # one tuple per scalar row (weight last)
        self.chunks: list[tuple[np.ndarray, ...]] = []
        self.chunk_rows = 0
        self.chunk_bytes = 0
        self.weighted = weighted

    @property
    def size(self) -> int:
        return len(self.rows) + self.chunk_rows

    def add_chunk(self, cols: tuple[np.ndarray, ...]) -> None:
        self.chunks.append(cols)
        self.chunk_rows += len(cols[0])
        for c in cols:
            self.chunk_bytes += c.nbytes

    def batches(
        self, bfloat16: bool = False, exact: tuple[bool, ...] | None = None
    ) -> list[list[np.ndarray]]:
        """The buffered rows as update batches: one (:meth:`arrays`) when every column joins
        without changing a value; else each small batch, then each row, on its own, as the
        calls gave them. A join changes values when it turns integers beyond 2**53 into floats
        (labels of uint64 with int64 chunks, or a row's ``1.0`` among large Python ints).
        ``exact``: which columns must join exactly (labels and keys; a number column becomes
        float64 in any update anyway); all when None."""
        values = list(zip(*self.rows, strict=True)) if self.rows else []
        row_cols = [np.asarray(c) for c in values]
        if self._exact(row_cols, values, exact):
            return [self.arrays(bfloat16, row_cols)]
        out = [_part(chunk, bfloat16) for chunk in self.chunks]
        out += [[np.asarray([v]) for v in row] for row in self.rows]
        return out

    def _exact(
        self,
        row_cols: list[np.ndarray],
        values: list[tuple[Any, ...]],
        exact: tuple[bool, ...] | None,
    ) -> bool:
        for j, arr in enumerate(row_cols):
            if exact is not None and not exact[j]:
                continue
            if arr.dtype.kind in "US":
                # Strings beside numbers (rows of slices holding int labels and of slices
                # holding str labels): the join would turn the numbers into strings. (The set
                # of types first: one C-level pass, where most columns hold str alone.)
                kinds = set(map(type, values[j]))
                if not (kinds <= _TEXT or all(issubclass(t, (str, bytes)) for t in kinds)):
                    return False
                continue
            if arr.dtype.kind not in "fO":
                continue  # (integer columns hold their values exactly)
            if any(_big_int(v) for v in values[j]):
                return False  # an integer (Python's or numpy's) that the float join rounds
        parts = [*self.chunks, tuple(row_cols)] if self.rows else list(self.chunks)
        if len(parts) < 2:
            return True
        for j, col in enumerate(zip(*parts, strict=True)):
            if exact is not None and not exact[j]:
                continue
            kinds = {c.dtype.kind for c in col}
            if len({c.dtype for c in col}) == 1 or not kinds & {"i", "u"}:
                continue
            try:
                joined = np.result_type(*col)
            except TypeError:
                return False
            if joined.kind in "iu":
                continue
            if joined.kind in "USO":
                return False  # integer chunks beside string ones: they would become strings
            for c in col:
                if (
                    c.dtype.kind in "iu"
                    and c.size
                    and not (-_EXACT_INT <= int(c.min()) and int(c.max()) <= _EXACT_INT)
                ):
                    return False
        return True

    def arrays(
        self, bfloat16: bool = False, row_cols: list[np.ndarray] | None = None
    ) -> list[np.ndarray]:
        """Every buffered row, one array per column (weights last when weighted).

        A column of bfloat16 tensors is buffered as raw bits (``BFLOAT16_BITS``); it is widened
        to float32 here, once for the whole buffer, unless ``bfloat16`` says the fold reads the
        bits itself and every part of the column is bits.
        """
        parts = list(self.chunks)
        if self.rows:
            if row_cols is None:
                row_cols = [np.asarray(c) for c in zip(*self.rows, strict=True)]
            parts.append(tuple(row_cols))
        out = []
        for col in zip(*parts, strict=True):
            bits = [c.dtype is BFLOAT16_BITS for c in col]
            if not any(bits):
                out.append(col[0] if len(col) == 1 else np.concatenate(col))
            elif all(bits):
                # numpy concatenates record arrays field by field: join the plain bits instead,
                # then widen them (unless the fold reads bits) in one pass
                joined = np.concatenate([c.view(np.uint16) for c in col]).view(BFLOAT16_BITS)
                out.append(joined if bfloat16 else widen_bfloat16(joined))
            else:
                col = tuple(widen_bfloat16(c) if b else c for c, b in zip(col, bits, strict=True))
                out.append(col[0] if len(col) == 1 else np.concatenate(col))
        return out


#: Integers up to this magnitude survive a float64 join exactly.
_EXACT_INT = 2**53


def _part(chunk: tuple[np.ndarray, ...], bfloat16: bool) -> list[np.ndarray]:
    """One buffered small batch as update columns (bfloat16 bits widened unless read)."""
    return [c if c.dtype is not BFLOAT16_BITS or bfloat16 else widen_bfloat16(c) for c in chunk]


class StateAttr:
    """A declared state field, read through the class only while rows are pending.

    While a metric has pending rows its declared fields are taken out of the instance (kept in
    the buffer), so that a read of one falls through to this descriptor, which folds the rows
    and puts the fields back. With nothing pending a read is a plain instance attribute: the
    metric's own update code pays nothing for it.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        # Fold and read under one hold of the lock: between the two, another thread's one-row
        # update could start a new buffer and take the field out again (AttributeError).
        with obj._lock:
            obj._fold()
            try:
                return obj.__dict__[self.name]
            except KeyError:
                raise AttributeError(self.name) from None


def _reading(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` run under the metric's lock, after folding its pending rows."""

    @functools.wraps(fn)
    def locked(self: Any, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            if self._pending is not None:
                self._fold()
            return fn(self, *args, **kwargs)

    locked.__sm_locked__ = True  # type: ignore[attr-defined]
    return locked


def _resetting(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A subclass's ``reset``, run under the lock, dropping pending rows and learnt trust."""

    @functools.wraps(fn)
    def reset(self: Any, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            self._drop_pending()
            if self._rows is not None:
                self._rows.forget()
            return fn(self, *args, **kwargs)

    reset.__sm_locked__ = True  # type: ignore[attr-defined]
    return reset


def _updating(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A subclass's ``update`` behind the per-request path: check, buffer, or fold and update."""

    @functools.wraps(fn)
    def update(self: Any, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            rows = self._rows
            if rows is None and self._take_row is not None and self._take_row(args, kwargs):
                return self  # (a wrapper's own split of one sample: ``Bootstrap``)
            keyword = None if rows is None else rows.keyword
            if keyword is not None:
                # A column passed by keyword (``Sliced``'s ``by=``) is the declaration's last:
                # the checks below read it as one more positional column.
                if keyword not in kwargs:  # ``update`` says what is missing
                    if self._pending is not None:
                        self._fold()
                    fn(self, *args, **kwargs)
                    return self
                kwargs = dict(kwargs)
                args = (*args, kwargs.pop(keyword))
            if not kwargs and rows is not None and rows.row_ok(args):
                # The hot path: one unweighted sample as scalars, appended as it came.
                buffer = self._buffer
                if buffer is None:
                    self._append_row(args)
                else:
                    buffer.append(args)
                    if len(buffer) >= FOLD_ROWS:
                        self._fold()
                return self
            if not kwargs and rows is not None and (scalars := _zero_d_as_scalars(args)):
                # One sample given as 0-d arrays or tensors (a model's single output): the same
                # values as numpy scalars, which ``update`` reads alike, on the hot path too.
                args = scalars
                if rows.row_ok(args):
                    self._append_row(args)
                    return self
            if not kwargs and rows is not None and args and type(args[0]) not in _SCALAR_TYPES:
                # An unweighted batch of arrays or tensors: what ``_plan`` would do, inlined.
                cols = rows.small_batch(args, None) if len(args) == rows.n else None
                if cols is not None:
                    self._push((cols, False))
                    return self
            elif self._try_buffer(args, kwargs):
                return self
            if self._pending is not None:
                self._fold()
            if keyword is None:
                fn(self, *args, **kwargs)
            else:
                fn(self, *args[:-1], **{keyword: args[-1]}, **kwargs)
            if self._rows is not None:
                self._learn(args, kwargs)
            return self

    update.__sm_locked__ = True  # type: ignore[attr-defined]
    update.__sm_raw__ = fn  # type: ignore[attr-defined]
    return update


def _keyword_last(rows: Rows, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``args`` with the declared keyword column (``Sliced``'s ``by=``) as the last, when the
    call passes nothing else by keyword; None otherwise."""
    keyword = rows.keyword
    if keyword is None:
        return None if kwargs else args
    if len(kwargs) != 1 or keyword not in kwargs:
        return None
    return (*args, kwargs[keyword])


def _zero_d_as_scalars(args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """``args`` with each 0-d numpy array or torch tensor as the numpy scalar of its dtype
    (bfloat16 as the Python float it holds exactly), when at least one is and every other
    value is a scalar; None otherwise (nothing to convert, or something ``update`` must read:
    an object or datetime array, a float8 tensor, a tensor numpy cannot hold)."""
    out: list[Any] | None = None
    for i, a in enumerate(args):
        t = type(a)
        if t in _SCALAR_TYPES:
            continue
        if t is np.ndarray and a.ndim == 0 and a.dtype.kind in "biufU":
            value = a[()]
        elif t.__name__ == "Tensor" and t.__module__.startswith("torch"):
            try:
                if a.ndim != 0:
                    return None
                if a.dtype is _TENSOR_BFLOAT16[0] or str(a.dtype) == "torch.bfloat16":
                    _TENSOR_BFLOAT16[0] = a.dtype
                    value = float(a.item())
                else:
                    value = a.numpy(force=True)[()]
            except (RuntimeError, TypeError, ValueError):
                return None
        else:
            return None
        if type(value) not in _SCALAR_TYPES:  # (uint64, longdouble: update reads the original)
            return None
        if out is None:
            out = list(args)
        out[i] = value
    return None if out is None else tuple(out)


#: torch.bfloat16 once seen (torch is never imported here).
_TENSOR_BFLOAT16: list[Any] = [None]


def wrap_class(cls: type) -> None:
    """Give a metric subclass's own ``update`` and public methods the lock and the fold."""
    for name, value in list(cls.__dict__.items()):
        if getattr(value, "__sm_locked__", False):
            continue
        if name == "update" and callable(value):
            setattr(cls, name, _updating(value))
        elif name == "reset" and callable(value):
            setattr(cls, name, _resetting(value))
        elif name.startswith("_") or isinstance(value, (staticmethod, classmethod)):
            continue
        elif isinstance(value, property) and value.fget is not None:
            if not getattr(value.fget, "__sm_locked__", False):
                setattr(cls, name, property(_reading(value.fget), value.fset, value.fdel))
        elif callable(value) and not isinstance(value, type):
            setattr(cls, name, _reading(value))


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
        self, *kinds: str, weights: bool = True, keyword: str | None = None, free: bool = False
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
        """
        self._rows = Rows(tuple(kinds), weights, keyword, free)

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
        if rows is None or len(args) != rows.n:
            return None
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
        total = max(float(self._count), self._held_total())  # type: ignore[attr-defined]
        return bool(total > COUNT_LIMIT - _MARGIN or total > _WEIGHT_ROOM)

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
