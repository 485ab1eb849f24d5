"""The lock and the fold that every metric's public methods go through.

The base class wraps each subclass's ``update``, ``reset`` and public methods when the subclass is
created (:func:`wrap_class`): every call runs under the metric's lock; ``update`` goes through the
per-request path (check, buffer, or fold and update); a read first folds the pending rows. While
rows are pending, a read of any declared state field goes through :class:`StateAttr`, which folds
them first.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ._pending_buffer import FOLD_ROWS
from ._rows import _SCALAR_TYPES
from .errors import UnknownArgumentError

__all__ = ["StateAttr", "check_keywords", "wrap_class"]


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
                self._rows.restart()
            return fn(self, *args, **kwargs)

    reset.__sm_locked__ = True  # type: ignore[attr-defined]
    return reset


def _keywords(fn: Callable[..., Any]) -> tuple[frozenset[str], list[str]] | None:
    """The names ``fn`` (an ``update``) takes by keyword, and its parameters' names after
    ``self`` for messages; None when it takes any keyword (``**kwargs``: a wrapper passing them
    on, whose wrapped metric checks them)."""
    params = _parameters(fn)
    kind = inspect.Parameter
    if any(p.kind is kind.VAR_KEYWORD for p in params):
        return None
    named = (kind.POSITIONAL_OR_KEYWORD, kind.KEYWORD_ONLY)
    keywords = frozenset(p.name for p in params if p.kind in named)
    return keywords, [p.name for p in params if p.kind is not kind.VAR_POSITIONAL]


def _parameters(fn: Callable[..., Any]) -> list[inspect.Parameter]:
    """``fn``'s parameters after ``self``, from its own signature (a decorator's wrapper may
    take keywords the function it wraps does not, and passes them on itself)."""
    return list(inspect.signature(fn, follow_wrapped=False).parameters.values())[1:]


def _unknown_keyword(metric: Any, given: Any, known: tuple[frozenset[str], list[str]]) -> Exception:
    """The error for keywords an ``update`` does not take, naming the first and the metric's
    public class (the ``update`` may be a private base's: ``_ConfusionMetric.update``)."""
    name = sorted(set(given) - known[0])[0]
    return UnknownArgumentError(
        f"{name}: {type(metric).__name__}.update takes no argument {name!r} "
        f"(its arguments: {', '.join(known[1])})"
    )


def _own_keywords(fn: Callable[..., Any]) -> tuple[frozenset[str], list[str]]:
    """The names a wrapper's ``update`` taking ``**kwargs`` names itself (``timestamps``,
    ``by``, ``ids``)."""
    kind = inspect.Parameter
    named = (kind.POSITIONAL_OR_KEYWORD, kind.KEYWORD_ONLY)
    names = [p.name for p in _parameters(fn) if p.kind in named]
    return frozenset(names), names


_UNKNOWN = object()


def _accepted(metric: Any) -> tuple[frozenset[str], list[str]] | None:
    """The keywords ``metric.update`` takes: its own, or for a wrapper passing the others on
    to its ``_template`` (a window's, ``Sliced``'s), its own and the template's; None when
    they cannot be told (a collection: each member checks its own). Kept on the metric."""
    found = metric.__dict__.get("_sm_accepted", _UNKNOWN)
    if found is not _UNKNOWN:
        return found  # type: ignore[no-any-return]
    update = type(metric).update
    found = getattr(update, "__sm_keywords__", None)
    own = getattr(update, "__sm_own__", None)
    template = metric.__dict__.get("_template")
    if found is None and own is not None and template is not None:
        inner = _accepted(template)
        if inner is not None:
            found = (inner[0] | own[0], [*inner[1], *(n for n in own[1] if n not in inner[1])])
    metric.__dict__["_sm_accepted"] = found
    return found  # type: ignore[no-any-return]


def _call(fn: Callable[..., Any], self: Any, args: tuple[Any, ...], kwargs: Any) -> Any:
    """``fn(self, *args, **kwargs)``; Python's ``TypeError`` for arguments the call cannot
    bind (one missing, too many, one given twice) names the metric's public class, not the
    class defining ``update`` (often a private base: ``_ConfusionMetric.update()``)."""
    try:
        return fn(self, *args, **kwargs)
    except TypeError as exc:
        trace = exc.__traceback__
        if trace is None or trace.tb_next is not None:  # raised inside ``update``: as it is
            raise
        message = str(exc).replace(f"{fn.__qualname__}()", f"{type(self).__name__}.update()")
        raise TypeError(message) from None


def _updating(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A subclass's ``update`` behind the per-request path: check, buffer, or fold and update."""
    known = _keywords(fn)
    takes = None if known is None else known[0].issuperset
    own = _own_keywords(fn) if known is None else None

    @functools.wraps(fn)
    def update(self: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            # (before Python's TypeError, which names the class defining ``update``, often a
            # private base; and before a wrapper's "timestamps: required" for a misspelt
            # ``timestamp=``)
            if takes is not None:
                if not takes(kwargs):
                    raise _unknown_keyword(self, kwargs, known)  # type: ignore[arg-type]
            elif own is not None and not own[0].issuperset(kwargs):
                accepted = _accepted(self)
                if accepted is not None and not accepted[0].issuperset(kwargs):
                    raise _unknown_keyword(self, kwargs, accepted)
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
                    _call(fn, self, args, kwargs)
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
            if (
                rows is not None
                and len(args) > rows.n
                and (moved := rows.weight_by_keyword(args, kwargs))
            ):
                args, kwargs = moved  # (``update(y, p, w)``: the weight as by keyword)
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
                _call(fn, self, args, kwargs)
            else:
                _call(fn, self, args[:-1], {keyword: args[-1], **kwargs})
            if self._rows is not None:
                self._learn(args, kwargs)
            return self

    update.__sm_locked__ = True  # type: ignore[attr-defined]
    update.__sm_keywords__ = known  # type: ignore[attr-defined]
    update.__sm_own__ = own  # type: ignore[attr-defined]
    update.__sm_raw__ = fn  # type: ignore[attr-defined]
    return update


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


#: The reading special methods a subclass may define, locked as its public methods are.
_READ_DUNDERS = frozenset({"__getitem__", "__len__", "__contains__", "__iter__"})


def check_keywords(metric: Any, kwargs: dict[str, Any]) -> None:
    """``UnknownArgumentError`` for keywords ``metric``'s ``update`` does not take: for a
    wrapper that runs that update past the lock's door (``Rows.feed(direct=True)``: ``Sliced``'s
    per-slice copies), where Python's ``TypeError`` would name a private base."""
    known = getattr(type(metric).update, "__sm_keywords__", None)
    if kwargs and known is not None and not known[0].issuperset(kwargs):
        raise _unknown_keyword(metric, kwargs, known)


def wrap_class(cls: type) -> None:
    """Give a metric subclass's own ``update`` and public methods the lock and the fold."""
    for name, value in list(cls.__dict__.items()):
        if getattr(value, "__sm_locked__", False):
            continue
        if name == "update" and callable(value):
            setattr(cls, name, _updating(value))
        elif name == "reset" and callable(value):
            setattr(cls, name, _resetting(value))
        elif name in _READ_DUNDERS and callable(value):
            # (``sliced[key]``, ``len``, ``in``: 0.8.14 read the slice table unlocked, which
            # a concurrent update may unpack in place)
            setattr(cls, name, _reading(value))
        elif name.startswith("_") or isinstance(value, (staticmethod, classmethod)):
            continue
        elif isinstance(value, property) and value.fget is not None:
            if not getattr(value.fget, "__sm_locked__", False):
                setattr(cls, name, property(_reading(value.fget), value.fset, value.fdel))
        elif callable(value) and not isinstance(value, type):
            setattr(cls, name, _reading(value))
