"""What the Dask and Spark adapters share: per-partition states as bytes, and their merge.

A partition's rows become one state (or one state per key), serialised with
:meth:`~streammetrics.base.Metric.to_bytes`; states travel between processes as those bytes (no
pickled metric objects) and are merged in a tree. Only numpy and the core are used here, so the
functions run unchanged in Dask workers and in Spark's Python workers.

Keyed metrics (:class:`~streammetrics._keyed.Keyed`: GAUC's groups, ranking's queries) are
built in parallel by key, and the states of disjoint keys joined
(:meth:`~streammetrics._keyed.Keyed.join`) rather than merged key by key. The Dask adapter moves
rows: each partition cuts its rows by a hash of their key (:func:`row_shares`), and one task
per share builds the state of its keys from its rows in one update (:func:`share_state`), so
every row is sorted once, where its key lives. The Spark adapter moves states: each partition
cuts its rows by the same hash and builds one piece per share from them
(:func:`partition_pieces`), and one reducer per share merges its pieces (Spark's shuffle of
rows through the JVM cost more than it saved: ``docs/benchmarks/streams.md``).

Which columns feed which argument of ``update``, and how a frame's rows reach it, is
:mod:`streammetrics._engine_columns`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ._engine_columns import _BATCH_ROWS, _SHARE_ROWS, Column, _update, key_column, key_name
from ._keyed import Keyed
from .base import Metric, loads
from .errors import IncompatibleStateError, InputError

__all__ = [
    "merge_blobs",
    "merge_keyed",
    "partition_pieces",
    "partition_states",
    "row_shares",
    "share_state",
    "tree_merge",
]


def _key(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def partition_states(
    frames: Iterable[Any],
    template: bytes,
    positional: Sequence[Column],
    keywords: Mapping[str, Column],
    by: Column | None,
) -> dict[Any, bytes]:
    """The state of the rows of ``frames`` (pandas DataFrames of one partition) as bytes.

    Without ``by``: ``{None: state}``. With ``by``: ``{key: state}`` per key present, the rows
    of each key found with one sort per frame (one update per key, not per row).
    """
    states = _partition_metrics(frames, template, positional, keywords, by)
    return {k: m.to_bytes() for k, m in states.items()}


def partition_pieces(
    frames: Iterable[Any],
    template: bytes,
    positional: Sequence[Column],
    keywords: Mapping[str, Column],
    parts: int,
    hold: int = 1 << 21,
) -> list[bytes]:
    """The state of a keyed metric over one partition's rows, in ``parts`` pieces of disjoint
    keys: piece ``j`` of every partition holds the keys of share ``j`` (the share
    ``metric.split(parts)`` gives them), and equals ``metric.split(parts)[j]`` of the whole
    partition's state (byte for byte for counts; sums of float weights to rounding, as any
    other grouping of the rows into updates).

    The rows are cut by the hash of their key first (:func:`row_shares`, O(n)), and each piece
    is built from its share's rows in one update per ``hold`` rows held, so every row is
    sorted once, among its share's rows: building the whole partition's state from Spark's
    10,000-row batches and then splitting it sorted each row several times, at twice the cost
    (0.43 against 0.25 s for 2M rows, 0.8.18). At most ``hold`` rows wait (in the narrowest
    integer types), whatever the partition's size.
    """
    metric = loads(template)
    if not isinstance(metric, Keyed):
        raise TypeError(f"{type(metric).__name__} is not keyed: its state cannot be split")
    key = key_column(metric, positional, keywords)
    if key is None:
        raise TypeError(f"{type(metric).__name__}'s key column is not among the columns")
    name = key_name(metric)
    needed = list(dict.fromkeys([*positional, *keywords.values()]))
    pieces = [loads(template) for _ in range(parts)]
    waiting: list[list[dict[Column, np.ndarray]]] = [[] for _ in range(parts)]
    count = 0

    def feed() -> None:
        for piece, shares in zip(pieces, waiting, strict=True):
            # Batches whose columns concatenate without a change of kind go in one update; an
            # int64 batch beside a float64 one would round ids past 2**53 (Spark's batches of
            # a column share one type, but nothing else promises it).
            run: list[dict[Column, np.ndarray]] = []
            for share in shares:
                if run and _kinds(run[0]) != _kinds(share):
                    _feed_run(piece, run)
                    run = []
                run.append(share)
            if run:
                _feed_run(piece, run)
            shares.clear()

    def _feed_run(piece: Metric, run: list[dict[Column, np.ndarray]]) -> None:
        columns = {c: np.concatenate([s[c] for s in run]) for c in needed}
        _update(piece, columns, positional, keywords, rows_are=_SHARE_ROWS)

    for frame in frames:
        if not len(frame):
            continue
        for shares, share in zip(waiting, row_shares(frame, needed, key, name, parts), strict=True):
            if len(share[key]):
                shares.append(share)
        count += len(frame)
        if count >= hold:
            feed()
            count = 0
    feed()
    return [piece.to_bytes() for piece in pieces]


def _kinds(share: Mapping[Column, np.ndarray]) -> tuple[str, ...]:
    """What each column of a share concatenates as: signed integers of any width as one kind
    (``row_shares`` narrows them batch by batch), floats of any width as one, others by dtype."""
    return tuple(v.dtype.kind if v.dtype.kind in "if" else v.dtype.str for v in share.values())


def row_shares(
    frame: Any, needed: list[Column], key: Column, name: str, parts: int
) -> list[dict[Column, np.ndarray]]:
    """The rows of one partition (a pandas DataFrame) cut into ``parts`` shares by a hash of
    their key: share ``j`` holds, as ``{column: values}``, the rows whose key ``k`` has
    ``key_hash(k) % parts == j`` (:func:`~streammetrics.states.labels.key_hash`, the hash
    ``Keyed.split`` uses), in their order. ``key`` is the key column, ``name`` the ``update``
    argument it feeds (the key is read as that argument reads it, so equal keys of any
    partition land in the same share, and a bad key is refused under its name). O(n)."""
    from ._input_labels import as_labels
    from .states.labels import key_hash

    columns = {c: np.asarray(frame[c].to_numpy()) for c in needed}
    try:
        labels = as_labels(columns[key], name)
    except InputError as exc:  # (named as the unkeyed path names a column's faults)
        message = f"column {key!r}, {exc}"
        if re.search(r"\b(at|row|rows) \d+", str(exc)):
            # (a Dask partition, or one of Spark's batches of a partition: 0.8.18's first cut
            # said "within one partition" of Spark's batch rows)
            message += f" ({_BATCH_ROWS})"
        raise InputError(message) from None
    share = (key_hash(labels) % np.uint64(parts)).astype(np.uint8 if parts <= 256 else np.intp)
    order = np.argsort(share, kind="stable")  # a radix sort for uint8: linear
    edges = np.searchsorted(share[order], np.arange(parts + 1)).tolist()
    taken = {c: _narrowed(v)[order] for c, v in columns.items()}
    return [{c: v[edges[j] : edges[j + 1]] for c, v in taken.items()} for j in range(parts)]


def _narrowed(values: np.ndarray) -> np.ndarray:
    """Integers in the narrowest signed type holding them (labels 0/1 in one byte, not eight):
    the shares travel between processes, and ``update`` reads any integer type alike. Not
    ``uint64``: joined with a signed piece of another partition, numpy would promote both to
    float64 and round ids above 2**53 (every partition of a column has its dtype, so no
    ``uint64`` piece meets a narrowed one)."""
    kind, size = values.dtype.kind, values.dtype.itemsize
    if kind not in "iu" or (kind == "u" and size == 8) or size == 1 or not len(values):
        return values
    low, high = int(values.min()), int(values.max())
    for narrow in (np.int8, np.int16, np.int32):
        info = np.iinfo(narrow)
        if info.min <= low and high <= info.max:
            return values.astype(narrow)
    return values


def share_state(
    pieces: Sequence[dict[Column, np.ndarray]],
    template: bytes,
    positional: Sequence[Column],
    keywords: Mapping[str, Column],
) -> bytes:
    """The state, as bytes, of the rows of ``pieces`` (one share of every partition, from
    :func:`row_shares`), built by one update of their concatenation."""
    metric = loads(template)
    present = [p for p in pieces if any(len(v) for v in p.values())]
    if present:
        columns = {c: np.concatenate([p[c] for p in present]) for c in present[0]}
        _update(metric, columns, positional, keywords, rows_are=_SHARE_ROWS)
    return metric.to_bytes()


def _partition_metrics(
    frames: Iterable[Any],
    template: bytes,
    positional: Sequence[Column],
    keywords: Mapping[str, Column],
    by: Column | None,
) -> dict[Any, Metric]:
    states: dict[Any, Metric] = {}
    empty = loads(template)
    for frame in frames:
        if len(frame) == 0:
            continue
        if by is None:
            _update(states.setdefault(None, empty.copy()), frame, positional, keywords)
            continue
        uniq, codes = _unique_keys(_key_column(frame, by), by)
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(uniq) + 1))
        # Dates and durations as pandas Timestamps and Timedeltas (tolist() gives nanosecond
        # integers), as pandas' groupby keys them.
        values = uniq.tolist() if uniq.dtype.kind not in "mM" else _pandas_values(uniq)
        for i, key in enumerate(values):
            rows = order[bounds[i] : bounds[i + 1]]
            key = _key(key)
            if key not in states:
                states[key] = empty.copy()
            _update(states[key], frame, positional, keywords, rows)
    if by is None and None not in states:
        states[None] = empty
    return states


def _unique_keys(keys: np.ndarray, by: Column) -> tuple[np.ndarray, np.ndarray]:
    """The distinct keys and each row's index among them. Keys of several kinds (``1``
    beside ``"a"`` in an object column) have no order: they are told apart by their hashes, as
    pandas' groupby does, so that a partition holding both gives what partitions holding one
    kind each give."""
    try:
        uniq, codes = np.unique(keys, return_inverse=True)
    except TypeError:
        import pandas as pd

        try:
            codes, found = pd.factorize(keys)
        except TypeError:
            found = keys  # unhashable values: named below
        uniq = np.asarray(found, dtype=object)
    if uniq.dtype == object:  # lists (Spark arrays) order, dicts (structs) may: neither hashes
        bad = next((k for k in uniq.tolist() if not _hashable(k)), None)
        if bad is not None:
            raise InputError(
                f"by: the column {by!r} holds {type(bad).__name__} values; a key is a number, "
                "a string, a date or a bool"
            )
    return uniq, codes


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _key_column(frame: Any, by: Column) -> np.ndarray:
    """The ``by`` column of a pandas frame as a numpy array; a missing key (None, nan, NaT,
    NA) is refused with an ``InputError``: it names no key (nan is not even equal to itself,
    so each partition would hold its own)."""
    column = frame[by]
    missing = np.flatnonzero(column.isna().to_numpy())
    if len(missing):
        raise InputError(
            f"by: the column {by!r} has a missing value (at row {missing[0]} of a partition); "
            "drop or fill those rows first"
        )
    numpy_dtype = getattr(column.dtype, "numpy_dtype", None)  # nullable Int64, boolean, ...
    if numpy_dtype is not None and numpy_dtype.kind in "biuf":
        return np.asarray(column.to_numpy(dtype=numpy_dtype))
    return np.asarray(column.to_numpy())


def _pandas_values(keys: np.ndarray) -> list[Any]:
    import pandas as pd

    return list(pd.Index(keys).tolist())


def merge_blobs(blobs: Sequence[bytes]) -> bytes:
    """One state's bytes from several (all of one class and configuration)."""
    if len(blobs) == 1:
        return blobs[0]
    first = loads(blobs[0])
    try:
        return first.merge(*[loads(b) for b in blobs[1:]]).to_bytes()
    except IncompatibleStateError as exc:
        if isinstance(exc, InputError):  # (CountOverflowError says what it is already)
            raise
        # Rows each partition took alone that one process refuses together (arrays of 2 and
        # of 3 columns, a third label for binary F1, integer and string labels): 0.8.18 let
        # the merge's IncompatibleStateError out, naming no argument.
        raise InputError(
            f"columns: the partitions' rows are valid apart but not together ({exc}); "
            "one process refuses them as a whole"
        ) from None


def merge_keyed(parts: Sequence[dict[Any, bytes]]) -> dict[Any, bytes]:
    """Key-wise :func:`merge_blobs` of several ``{key: state}`` maps."""
    grouped: dict[Any, list[bytes]] = {}
    for part in parts:
        for key, blob in part.items():
            grouped.setdefault(key, []).append(blob)
    return {k: merge_blobs(v) for k, v in grouped.items()}


def tree_merge(items: list[Any], merge: Any, fan_in: int = 8) -> Any:
    """Fold ``items`` with ``merge`` (a function of a list) in a tree of the given fan-in."""
    if not items:
        raise ValueError("nothing to merge")
    while len(items) > 1:
        items = [merge(items[i : i + fan_in]) for i in range(0, len(items), fan_in)]
    return items[0]
