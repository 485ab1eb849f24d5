"""Row splitting shared by the wrappers: one batch's columns, taken apart by groups of rows.

A wrapper's ``update`` receives the wrapped metric's columns beside its own (``by=``, ``ids=``,
``timestamps=``). :class:`Rows` tells row columns (one entry per row) from values passed through
unchanged, and feeds a sub-metric the rows of one group; :func:`groups` sorts a batch's group
codes once and hands out each group's row indices, so a wrapper does one update of the wrapped
metric per group touched, never one per row.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from functools import cache
from operator import itemgetter
from typing import Any

import numpy as np

from .._input_labels import check_text
from .._inputs import as_array
from .._locking import check_keywords
from ..base import Metric, not_a_metric
from ..errors import InputError

__all__ = ["Rows", "batch_length", "column_names", "groups", "joint_codes", "one_kind"]


class Rows:
    """The update arguments of one batch, split into row columns and values passed unchanged.

    A value with a length (array, list, Series, tensor) is a row column and must have ``n``
    entries; anything else (``None``, a scalar, a string) goes unchanged to every sub-update.
    ``names``: the wrapped metric's positional column names, for messages (see
    :func:`column_names`); columns past them are called "argument i".
    """

    def __init__(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        n: int,
        what: str,
        names: tuple[str, ...] = (),
    ) -> None:
        self.n = n
        self.what = what
        if (n == 1 and args and _one_value(args[0])) or _row_beside_value(args):
            # One sample given as values (one hypothesis beside the list of its references, a
            # label beside a row of class probabilities, a point's row beside its cluster
            # label): every argument belongs to it, and the wrapped metric reads them as its
            # own one-sample call does (or refuses them as it does).
            if n != 1:
                # (0.8.13 fed the value to every group beside its share of the row: a
                # clustering point read as one point per group, counted as n rows.)
                second = names[1] if len(names) > 1 else "argument 2"
                first = names[0] if names else "argument 1"
                raise InputError(
                    f"{second}: one value (no length) beside {first} of {len(args[0])} "
                    f"entries is one sample, but {self.what} has {n} rows"
                )
            self.args = [(False, a) for a in args]
            self.kwargs = {k: (False, v) for k, v in kwargs.items()}
            return
        self.args = [
            self._column(a, names[i] if i < len(names) else f"argument {i + 1}")
            for i, a in enumerate(args)
        ]
        self.kwargs = {k: self._column(v, k) for k, v in kwargs.items()}
        given = [col for col in self.args if col[1] is not None]
        if n != 1 and given and not any(is_row for is_row, _ in given):
            # One sample given as values, beside n != 1 wrapper keys: it would be fed to every
            # group while n rows are counted.
            first = names[0] if names else "argument 1"
            raise InputError(
                f"{first}: one sample (values without a length), but {self.what} has {n} rows"
            )

    def _column(self, x: Any, name: str) -> tuple[bool, Any]:
        if x is None or isinstance(x, (str, bytes, dict)) or not hasattr(x, "__len__"):
            return False, x
        if name == "by" and isinstance(x, tuple):
            # Sliced's composite keys: a tuple of key columns (not rows), each n long, taken
            # part by part (as a list of rows it was transposed when it had n parts).
            return True, _KeyColumns(self._column(part, "by") for part in x)
        if isinstance(x, (list, tuple)):
            try:
                arr = np.asarray(x)
            except (TypeError, ValueError):
                arr = None  # ragged: kept as a list (e.g. lists of references)
            except RuntimeError:
                # Tensors numpy cannot read (0-d, requiring grad): each read as the wrapped
                # metric reads them (0.8.13 let torch's RuntimeError out).
                arr = as_array(x, name)
            text = arr is not None and arr.dtype.kind in "US"
            nested_text = text and arr is not None and arr.ndim > 1
            # Kept as the list it is: no rows (numpy would make them floats, which a metric
            # taking lists, detection's, refuses), or strings mixed with numbers (numpy would
            # make them all strings, which the wrapped metric would then take).
            as_given = not len(x) or (text and not _one_type(x))
            if arr is None or arr.dtype == object or arr.ndim == 0 or nested_text or as_given:
                if len(x) != self.n:
                    raise InputError(f"{name}: has {len(x)} rows, {self.what} has {self.n}")
                return True, list(x)
        else:
            arr = as_array(x, name)
        if len(arr) != self.n:
            raise InputError(f"{name}: has {len(arr)} rows, {self.what} has {self.n}")
        return True, arr

    @staticmethod
    def _take(col: tuple[bool, Any], idx: np.ndarray | None) -> Any:
        is_row, value = col
        if isinstance(value, _KeyColumns):
            return tuple(Rows._take(part, idx) for part in value)
        if not is_row or idx is None:
            return value
        if isinstance(value, list):
            if len(idx) < 2:
                return [value[int(i)] for i in idx]
            return list(itemgetter(*idx)(value))
        return value[idx]

    def columns(self) -> list[Any]:
        """Every row column as an array (``None`` for a list column), in argument order."""
        cols = [v for is_row, v in self.args if is_row]
        cols += [v for is_row, v in self.kwargs.values() if is_row]
        return [v if isinstance(v, np.ndarray) else None for v in cols]

    def feed(
        self, metric: Metric, idx: np.ndarray | None, direct: bool = False, **extra: Any
    ) -> Metric:
        """Update ``metric`` with the rows ``idx`` (all rows when ``None``). ``direct``: by
        its update itself, past its lock and per-request buffer (a wrapper's private copy, to
        be folded at once anyway: the buffer and the fold cost a second update)."""
        args = [self._take(c, idx) for c in self.args]
        kwargs = {k: self._take(c, idx) for k, c in self.kwargs.items()}
        kwargs.update(extra)
        if direct:
            check_keywords(metric, kwargs)  # (as the lock's door would: the raw update's
            # TypeError names the class defining it, often a private base)
            type(metric).update.__sm_raw__(metric, *args, **kwargs)  # type: ignore[attr-defined]
            return metric
        out: Metric = metric.update(*args, **kwargs)  # type: ignore[attr-defined]
        return out


def _one_type(values: list[Any] | tuple[Any, ...]) -> bool:
    """Whether every value of a list numpy read as text is of one type (all ``str``, or all
    ``bytes``): ``np.asarray(["a", 1])`` is ``["a", "1"]``."""
    first = type(values[0])
    return all(type(v) is first for v in values)


def _row_beside_value(args: tuple[Any, ...]) -> bool:
    """Whether ``args`` open with a column of more than one entry beside one value: a metric
    reads that as one sample (a clustering point's row and its label) or refuses it, never
    as rows sharing the value, so a wrapper does not split it into rows either."""
    if len(args) < 2 or not _one_value(args[1]):
        return False
    first = args[0]
    if first is None or isinstance(first, (dict, str, bytes)) or not hasattr(first, "__len__"):
        return False
    return getattr(first, "ndim", 1) != 0 and len(first) > 1


def _one_value(x: Any) -> bool:
    """Whether ``x``, a first column, is one sample's value rather than a column of rows (as
    :func:`batch_length` counts it)."""
    if x is None or isinstance(x, dict):
        return False
    if isinstance(x, (str, bytes)) or not hasattr(x, "__len__"):
        return True
    return getattr(x, "ndim", None) == 0


def one_kind(arr: np.ndarray, refusal: str, raw: Any = None) -> np.ndarray:
    """An object array of keys or ids as int64 or unicode (one kind only; ``refusal`` is the
    ``InputError`` message otherwise); any other array unchanged. ``raw``: the value ``arr``
    was made from, when numpy may have turned a list of strings and integers into strings."""
    name = refusal.split(":")[0]
    if arr.dtype.kind == "U" and isinstance(raw, (list, tuple)):
        if not all(isinstance(v, str) for v in raw):
            raise InputError(refusal)
        return check_text(arr, name)
    if arr.dtype.kind == "U":
        return check_text(arr, name)
    if arr.dtype.kind != "O":
        return arr
    values = arr.tolist()
    if all(isinstance(v, str) for v in values):
        return check_text(np.asarray(values, dtype=str), name) if values else np.zeros(0, "U1")
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
        try:
            return np.asarray(values, dtype=np.int64)
        except OverflowError:
            raise InputError(
                f"{refusal.split(':')[0]}: integers must lie within int64 (-2**63 to 2**63 - 1)"
                "; give values from 2**63 to 2**64 - 1 as a uint64 array"
            ) from None
    raise InputError(refusal)


class _KeyColumns(tuple):  # type: ignore[type-arg]
    """The parts of a composite ``by=`` key: ``(is_row, value)`` each, as ``Rows._column``."""

    __slots__ = ()


def column_names(metric: Metric) -> tuple[str, ...]:
    """The positional column names of the metric a wrapper feeds (``("y_true", "y_pred",
    "sample_weight")``), looked through nested wrappers; ``()`` when its ``update`` takes
    ``*args`` (a collection)."""
    inner = getattr(metric, "_template", None)
    if inner is None:
        inner = getattr(metric, "metric", None)  # Bootstrap
    if isinstance(inner, Metric) and inner is not metric:
        return column_names(inner)
    cls: Any = type(metric)
    return _update_parameters(cls)


def weight_by_keyword(
    metric: Metric, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``(args, kwargs)`` with a ``sample_weight`` given by position (``update(y, p, w)``, as
    the wrapped metric takes it) moved to its keyword, for the wrappers that weigh rows
    themselves (``Bootstrap``, ``Decayed``). Given both ways, Python's own ``TypeError``."""
    at = _weight_position(metric)
    if at is None or len(args) != at + 1:
        return args, kwargs  # (fewer: none given so; more: the wrapped metric refuses them)
    if "sample_weight" in kwargs:
        raise TypeError("update() got multiple values for argument 'sample_weight'")
    return args[:at], {**kwargs, "sample_weight": args[at]}


def _weight_position(metric: Metric) -> int | None:
    """Where ``metric.update`` takes ``sample_weight`` by position; for a collection (whose
    ``update`` takes ``*args``), where every member takes it, or None if they disagree.
    (0.8.15 looked at the collection's own signature only: ``Decayed(MetricCollection(...))``
    passed a positional weight on as a column, and the members raised ``TypeError``.)"""
    names = column_names(metric)
    if "sample_weight" in names:
        return names.index("sample_weight")
    members = getattr(metric, "_names", None) if not names else None
    if not members:
        return None
    found = {_weight_position(getattr(metric, name)) for name in members}
    return found.pop() if len(found) == 1 else None


@cache
def _update_parameters(cls: Any) -> tuple[str, ...]:
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    params = list(inspect.signature(cls.update).parameters.values())[1:]  # without self
    return tuple(p.name for p in params if p.kind in kinds)


def batch_length(
    args: tuple[Any, ...], kwargs: dict[str, Any], what: str, names: tuple[str, ...] = ()
) -> int:
    """Rows in a batch: the length of its first column, given by position or else by keyword
    (``InputError`` if it has none). A first value without a length (a scalar, a 0-d array, a
    string such as one hypothesis beside its references) is one sample; ``None``, dicts and
    yes/no flags given by keyword (``complete=True``) are no columns."""
    named = [(names[i] if i < len(names) else f"argument {i + 1}", x) for i, x in enumerate(args)]
    named += [(k, x) for k, x in kwargs.items() if not isinstance(x, (bool, np.bool_))]
    for name, x in named:
        if x is None or isinstance(x, dict):
            continue
        if isinstance(x, (str, bytes)) or not (hasattr(x, "__len__") or isinstance(x, Iterator)):
            return 1  # (an iterator is no value: ``as_array`` refuses it under its name)
        if _row_beside_value(args):
            return 1  # (one sample: see Rows)
        if isinstance(x, (list, tuple)):
            return len(x)
        arr = as_array(x, name)
        return 1 if arr.ndim == 0 else len(arr)
    raise InputError(f"{what}: give the wrapped metric's columns")


def joint_codes(columns: list[np.ndarray]) -> np.ndarray:
    """One int64 code per row, equal for rows that are equal in every column (dense, sorted)."""
    n = len(columns[0])
    code = np.zeros(n, dtype=np.int64)
    for col in columns:
        flat = col.reshape(n, -1) if col.ndim > 1 else col[:, None]
        for j in range(flat.shape[1]):
            uniq, inv = np.unique(flat[:, j], return_inverse=True)
            code = code * len(uniq) + inv.reshape(n)
            if len(uniq) > 1 and code.max() > 2**40:
                code = np.unique(code, return_inverse=True)[1].reshape(n)
    return np.unique(code, return_inverse=True)[1].reshape(n).astype(np.int64)


def groups(codes: np.ndarray, size: int) -> list[tuple[int, np.ndarray | None]]:
    """``[(code, row indices)]`` for each code present, in code order (one stable sort).

    ``codes`` are dense in ``range(size)``; ``None`` stands for every row of the batch.
    """
    if len(codes) == 0:
        return []
    counts = np.bincount(codes, minlength=size)
    present = np.flatnonzero(counts)
    if len(present) == 1:
        return [(int(present[0]), None)]
    order = np.argsort(codes, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(counts[present])))
    return [(int(c), order[bounds[i] : bounds[i + 1]]) for i, c in enumerate(present.tolist())]


def row_keywords(metric: Metric) -> frozenset[str]:
    """The keyword columns ``metric.update`` needs beside the metric's own columns: the
    ``own_keyword`` of each wrapper in it (``by``, ``timestamps``) and the optional keyword
    columns of each (``Bootstrap``'s ``ids``), nested ones included (a collection needs what
    any member needs, and passes a keyword only to the members that take it)."""
    own = getattr(type(metric), "own_keyword", None)
    found = {own} if own else set()
    found |= set(getattr(type(metric), "optional_keywords", ()))
    inner = getattr(metric, "_template", None)
    if isinstance(inner, Metric):
        found |= row_keywords(inner)
    for name in getattr(metric, "_names", ()):
        member = getattr(metric, name, None)
        if isinstance(member, Metric):
            found |= row_keywords(member)
    return frozenset(found)


def unweighted(metric: Metric) -> str | None:
    """The class name of the first metric inside ``metric`` (itself, a wrapper's inner metric,
    a collection's members, nested) whose ``update`` takes no ``sample_weight``; None when
    every one does. Wrappers pass ``sample_weight`` through to what they wrap."""
    import inspect

    inner = getattr(metric, "_template", None)
    if isinstance(inner, Metric):
        return unweighted(inner)
    names = getattr(metric, "_names", None)
    if names is not None:
        found = (unweighted(getattr(metric, n)) for n in names)
        return next((f for f in found if f is not None), None)
    try:
        params = inspect.signature(type(metric).update).parameters  # type: ignore[attr-defined]
    except (AttributeError, TypeError, ValueError):
        return type(metric).__name__
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    return None if "sample_weight" in params or takes_any else type(metric).__name__


#: What to do instead of a wrapper that can never be updated, by the keyword both need.
_INSTEAD = {
    "by": "give one Sliced composite keys (a tuple of key columns) instead",
    "timestamps": "use one time wrapper per metric (a window or Decayed, not both)",
}


def template(metric: Any, what: str, takes: str | None = None) -> Metric:
    """An empty copy of ``metric``; ``InputError`` unless it is a registered metric.

    ``takes``: the keyword column the wrapper's ``update`` keeps for itself. A metric that
    needs it too (a ``Sliced`` inside a ``Sliced``) would never get it, so could never be
    updated: refused here rather than at every ``update``."""
    from ..base import registered_metrics

    if not isinstance(metric, Metric):
        raise not_a_metric("metric", metric)
    if registered_metrics().get(type(metric)._wire_name) is not type(metric):
        raise InputError(
            f"metric: {type(metric).__name__} is not a registered metric class, so {what} "
            "could not be read back"
        )
    if takes is not None and takes in row_keywords(metric):
        raise InputError(
            f"metric: {type(metric).__name__} needs {takes}= at every update, but the wrapper "
            f"around it takes {takes}= for itself and passes on only the metric's columns, so "
            f"it could never be updated; {_INSTEAD.get(takes, 'nest them differently')}"
        )
    return metric.copy().reset()
