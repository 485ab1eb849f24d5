"""A frame's columns as the arguments of a metric's ``update``, for the Dask and Spark engines.

On the driver, before any worker runs, the names a caller gives are checked against ``update``'s
signature (:func:`check_columns`) and spelled as the frame spells them (:func:`present_names`);
a keyed metric's key column is the one that feeds its ``key_argument`` (:func:`key_column`,
:func:`key_name`). In the workers, ``_update`` hands a frame's columns to ``update`` (a column
of arrays as one matrix) and puts in each ``InputError`` of ``update`` the column its argument
came from and what its row numbers count. Only numpy and the core are used here, as in
:mod:`streammetrics._engines`.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ._keyed import Keyed
from .base import Metric, not_a_metric
from .errors import InputError

#: A column name: pandas and Dask allow integers beside strings.
Column = str | int

__all__ = [
    "check_columns",
    "key_column",
    "key_name",
    "present_names",
]


def type_name(value: Any) -> str:
    """``pandas.DataFrame`` for a pandas frame: the package and the class, for messages."""
    return f"{type(value).__module__.split('.')[0]}.{type(value).__name__}"


def check_columns(metric: Any, columns: Any, by: Any) -> tuple[list[Column], dict[str, Column]]:
    """``columns`` as (positional names, keyword name -> column); ``InputError`` if malformed.

    ``columns`` is a list of column names passed positionally to ``metric.update`` (e.g.
    ``["y_true", "y_score"]``) or a dict of update keyword -> column (e.g.
    ``{"y_true": "label", "y_score": "p", "sample_weight": "w"}``). A column name is a string,
    or an integer (pandas and Dask frames may name their columns ``0, 1, ...``), kept as given.
    """
    if not isinstance(metric, Metric):
        raise not_a_metric("metric", metric)
    if isinstance(columns, str):
        raise InputError("columns: give a list of column names (or a dict), not one string")
    if isinstance(columns, dict):
        positional: list[Column] = []
        keywords = {str(k): _column_name(v, "columns") for k, v in columns.items()}
    else:
        try:
            positional, keywords = [_column_name(c, "columns") for c in columns], {}
        except TypeError:
            raise InputError(
                f"columns: expected a list or dict of names, got {columns!r}"
            ) from None
    if not positional and not keywords:
        raise InputError("columns: name at least one column")
    _fits_update(metric, positional, keywords)
    if by is not None:
        _column_name(by, "by")
    return positional, keywords


def _fits_update(metric: Metric, positional: list[Column], keywords: dict[str, Column]) -> None:
    """``InputError`` naming ``columns`` when they cannot be ``metric.update``'s arguments (too
    many, an unknown keyword, a required argument missing), on the driver: 0.8.16 let the
    workers fail with a ``TypeError`` (Dask) or a Java stack (Spark)."""
    update = type(metric).update  # type: ignore[attr-defined]
    params = list(inspect.signature(getattr(update, "__sm_raw__", update)).parameters.values())
    params = params[1:]  # (self)
    kinds = inspect.Parameter
    if any(p.kind in (kinds.VAR_POSITIONAL, kinds.VAR_KEYWORD) for p in params):
        return  # (a wrapper passes its arguments on: the wrapped metric judges them)
    takes = [p for p in params if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)]
    name = type(metric).__name__
    if len(positional) > len(takes):
        raise InputError(
            f"columns: {len(positional)} columns, but {name}.update takes at most {len(takes)} "
            f"by position ({', '.join(p.name for p in takes)})"
        )
    known = {p.name for p in params}
    unknown = sorted(k for k in keywords if k not in known)
    if unknown:
        raise InputError(f"columns: {name}.update takes no argument {unknown[0]!r}")
    given = {p.name for p in takes[: len(positional)]} | set(keywords)
    missing = [
        p.name
        for p in params
        if p.default is inspect.Parameter.empty
        and p.kind is not kinds.KEYWORD_ONLY
        and p.name not in given
    ]
    if missing:
        raise InputError(f"columns: {name}.update needs {missing[0]!r}; name its column too")


def present_names(
    present: Sequence[Any],
    positional: list[Column],
    keywords: dict[str, Column],
    by: Column | None,
) -> tuple[list[Column], dict[str, Column], Column | None]:
    """The names as the frame spells them: an integer name missing from the frame whose
    string is present (``"0"`` from a CSV header or from Spark's ``createDataFrame`` of a
    pandas frame with integer columns) becomes that string, as 0.8.7 read every name."""
    have = set(present)

    def spelled(name: Column) -> Column:
        if isinstance(name, int) and name not in have and str(name) in have:
            return str(name)
        return name

    return (
        [spelled(c) for c in positional],
        {k: spelled(c) for k, c in keywords.items()},
        None if by is None else spelled(by),
    )


def _column_name(name: Any, arg: str) -> Column:
    """A column name as given: a string or an integer (not a bool)."""
    if isinstance(name, str):
        return name
    if isinstance(name, int | np.integer) and not isinstance(name, bool | np.bool_):
        return int(name)
    what = "one column name" if arg == "by" else "column names (strings or integers)"
    raise InputError(f"{arg}: expected {what}, got {name!r}")


def key_column(
    metric: Any, positional: Sequence[Column], keywords: Mapping[str, Column]
) -> Column | None:
    """The column holding a keyed metric's key (None for other metrics, or when not given)."""
    if not isinstance(metric, Keyed):
        return None
    arg = type(metric).key_argument
    if isinstance(arg, int):
        if arg < len(positional):
            return positional[arg]
        names = [p for p in inspect.signature(metric.update).parameters]  # type: ignore[attr-defined]
        arg = names[arg] if arg < len(names) else ""
    return keywords.get(arg)


def key_name(metric: Any) -> str:
    """The name of a keyed metric's key argument in ``update`` (as its errors name it)."""
    arg = type(metric).key_argument
    if isinstance(arg, str):
        return arg
    names = list(inspect.signature(metric.update).parameters)
    return names[arg] if arg < len(names) else str(arg)


#: What a row number in an ``update``'s error counts: the rows of one batch of one partition,
#: or of one share of the keys (:func:`~streammetrics._engines.row_shares`: rows of several
#: batches, or partitions, whose keys hash alike).
_BATCH_ROWS = "row numbers count within one batch of one partition, not the whole frame"
_SHARE_ROWS = (
    "row numbers count among the rows whose keys share a hash (one share of the keys, "
    "gathered from the batches of the partitions), not the whole frame"
)


def _update(
    metric: Metric,
    frame: Any,
    positional: Sequence[Column],
    keywords: Mapping[str, Column],
    rows: np.ndarray | None = None,
    rows_are: str = _BATCH_ROWS,
) -> None:
    def col(name: Column) -> np.ndarray:
        column = frame[name]  # a pandas column, or an array (``share_state``'s columns)
        values: np.ndarray = column.to_numpy() if hasattr(column, "to_numpy") else column
        return _rows_of_arrays(values if rows is None else values[rows], name)

    try:
        metric.update(  # type: ignore[attr-defined]
            *[col(c) for c in positional], **{k: col(c) for k, c in keywords.items()}
        )
    except InputError as exc:
        message = _in_columns(str(exc), metric, positional, keywords, rows_are)
        if "got values of types ['str']" in message:
            message += _TEXT_ARRAYS
        raise type(exc)(message) from None


#: Dask's ``dataframe.convert-string`` (on by default) turns an object column of a frame given
#: to ``dd.from_pandas`` into text, arrays included: ``"[0.1, 0.9]"``.
_TEXT_ARRAYS = (
    " (a column of arrays read as text? Dask's dataframe.convert-string option turns the "
    "object columns of dd.from_pandas into strings: create the frame under "
    'dask.config.set({"dataframe.convert-string": False}); dd.read_parquet keeps arrays)'
)


def _rows_of_arrays(values: np.ndarray, column: Column) -> np.ndarray:
    """A column whose every row holds an array of numbers (Spark's ``array<double>``, a pandas
    column of lists or numpy arrays) as one 2-D array, one row per row, for the arguments that
    take a matrix (``MulticlassROCAUC``'s probabilities, ``TopKAccuracy``'s scores,
    multi-output regression, ``ClusterGeometry``'s ``X``). Other columns are returned as given,
    rows of text too (BLEU's references per hypothesis). Rows of numbers of different lengths
    are an ``InputError`` naming the column (0.8.11 handed them all to ``update`` as an object
    column, refused as "expected numbers")."""
    if values.dtype != object or not len(values):
        return values
    first = values[0]
    if not isinstance(first, list | tuple | np.ndarray):
        return values
    try:
        stacked = (
            np.stack(list(values)) if isinstance(first, np.ndarray) else np.array(values.tolist())
        )
    except ValueError:
        if np.asarray(first).dtype.kind not in "biuf":
            return values
        arrays = [isinstance(v, list | tuple | np.ndarray) for v in values]
        if not all(arrays):
            row = arrays.index(False)
            raise InputError(
                f"column {column!r}: row {row} holds {values[row]!r}, not an array like the "
                "other rows"
            ) from None
        sizes = sorted({np.size(v) for v in values})
        raise InputError(
            f"column {column!r}: its rows hold arrays of different lengths ({sizes[0]} to "
            f"{sizes[-1]}); a matrix argument needs one length"
        ) from None
    return stacked if stacked.dtype.kind in "biuf" and stacked.ndim == 2 else values


def _in_columns(
    message: str,
    metric: Metric,
    positional: Sequence[Column],
    keywords: Mapping[str, Column],
    rows_are: str = _BATCH_ROWS,
) -> str:
    """``message`` (an ``InputError`` of ``update``, naming its argument) with the column that
    argument came from, and a word on its row numbers, which count within one batch of one
    partition (a review of 0.8.10 found "found nan at 50" for the frame's row 250)."""
    arg = message.split(":", 1)[0]
    column = keywords.get(arg)
    if column is None:
        names = _positional_names(metric)
        if arg in names and names.index(arg) < len(positional):
            column = positional[names.index(arg)]
    out = message if column is None else f"column {column!r}, {message}"
    if re.search(r"\b(at|row|rows) \d+", message):
        out += f" ({rows_are})"
    return out


def _positional_names(metric: Any) -> list[str]:
    """The names of ``metric.update``'s leading positional parameters; for a wrapper
    (``update(*columns, by=...)``: ``Bootstrap``, ``Sliced``, the windows, ``Decayed``), the
    wrapped metric's, which its columns feed (0.8.19 named no column for a bad value under
    ``Bootstrap(ROCAUC())``). Only the leading ones: a wrapper's keyword column comes second
    in its signature, and 0.8.12 named the second positional column for a missing ``by``."""
    for _ in range(8):  # (wrappers of wrappers; a cycle would be a bug, not a reason to hang)
        try:
            params = inspect.signature(metric.update).parameters
        except (TypeError, ValueError):
            return []
        names = []
        for p in params.values():
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                break
            names.append(p.name)
        inner = getattr(metric, "_template", None)
        if names or inner is None:
            return names
        metric = inner
    return []
