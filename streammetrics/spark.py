"""Metrics over a Spark DataFrame: one state per partition, merged by key.

Needs the ``spark`` extra (``pip install 'streammetrics[spark]'``: pyspark, pandas, pyarrow).
Uses the DataFrame API only (``mapInPandas`` and ``groupBy().applyInPandas``), so it runs on a
classic session and under Spark Connect alike. The Python workers must be able to import
streammetrics (set ``PYSPARK_PYTHON`` to the environment's python).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

from . import _codec, _engine_columns, _engines, errors
from ._config_values import config_int
from ._keyed import MAX_PARTS
from .base import Metric, loads
from .errors import InputError

__all__ = ["aggregate"]


def aggregate(
    df: Any, metric: Metric, columns: Any, by: str | None = None, key_parts: int = 8
) -> Any:
    """``metric`` over every row of ``df``; with ``by``, one metric per value of that column.

    Each partition turns its rows into a state in a Python worker (``mapInPandas``, one update
    per Arrow batch, or per key present in it); the states, as bytes, are then merged per key
    by Spark (``groupBy(key).applyInPandas``), and the driver receives one state per key. The
    result equals feeding all rows to ``metric`` in one process: byte for byte for counting
    states, to rounding for float sums.

    A keyed metric (``GAUC``, the ranking metrics) reduces in parallel by key: each partition's
    state is split by a hash of its key (groups, query ids) into ``key_parts`` pieces, Spark
    merges the pieces of each share of the keys in its own task, and the driver joins the
    shares' states, of disjoint keys, all at once as they arrive (``docs/streams.md``).

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    metric : Metric
        Gives the class and configuration; the data it holds is not used (nor changed).
    columns : list of str or dict
        Columns passed positionally to ``update``, or a dict of update keyword -> column.
    by : str, optional
        A column whose values key the result: ``{key: metric}``.
    key_parts : int, default 8
        For keyed metrics: reduce in this many shares of the keys (0: one reducer merges all).

    Returns
    -------
    Metric, or dict of key -> Metric when ``by`` is given.
    """
    try:
        import pandas as pd
    except ImportError:
        raise ImportError(
            "streammetrics.spark needs pandas and pyarrow: pip install 'streammetrics[spark]'"
        ) from None
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    if not isinstance(df, DataFrame):
        hint = " (spark.createDataFrame(df) makes one)" if isinstance(df, pd.DataFrame) else ""
        raise InputError(
            f"df: expected a pyspark.sql.DataFrame, got {_engine_columns.type_name(df)}{hint}"
        )
    key_parts = config_int(key_parts, "key_parts", minimum=0, maximum=MAX_PARTS)
    # Spark names columns with strings: an integer name is read as its string ("0"), as
    # 0.8.7 read every name, or else reported missing just below.
    names = _engine_columns.present_names(
        df.columns, *_engine_columns.check_columns(metric, columns, by), by
    )
    positional, keywords, by = cast("tuple[list[str], dict[str, str], str | None]", names)
    needed = list(dict.fromkeys([*positional, *keywords.values(), *([] if by is None else [by])]))
    if by is not None and by not in df.columns:  # (0.8.18 reported it under columns:)
        raise InputError(f"by: {by!r} not in the DataFrame (it has {list(df.columns)})")
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise InputError(f"columns: {missing} not in the DataFrame (it has {df.columns})")
    template = metric.copy().reset().to_bytes()
    key_type = df.schema[by].dataType.simpleString() if by is not None else "int"
    # A key column of instants travels as microseconds since the epoch too (the workers group
    # by them; the driver turns them into UTC datetimes): read as wall-clock times, two hours
    # of an autumn clock change were one key.
    instant_key = by is not None and df.schema[by].dataType.typeName() == "timestamp"
    if instant_key:
        key_type = "bigint"
    # Instants (TimestampType) reach pandas as wall-clock times of the session's time zone,
    # without the zone: read as UTC they would shift every window. They travel as microseconds
    # since the epoch and become UTC datetime64 again in the worker.
    instants = {
        c
        for c in {*positional, *keywords.values()}
        if df.schema[c].dataType.typeName() == "timestamp"
    }
    # Columns travel under plain names (c0, c1, ...): mapInPandas cannot resolve some names
    # (a backtick), and a dot in one would name a struct's field. The worker restores them.
    plain = {c: f"c{i}" for i, c in enumerate(needed)}
    named = {v: c for c, v in plain.items()}
    selected = [
        (
            F.expr(f"unix_micros({_quoted(c)})")
            if c in instants or (instant_key and c == by)
            else F.col(_quoted(c))
        ).alias(plain[c])
        for c in needed
    ]
    key_name = by
    if instant_key and by in instants:
        # The key column of instants is also a metric column: the metric reads it as UTC
        # datetimes, the key stays microseconds, under a name of its own (0.8.10 gave the
        # metric the microseconds, read as seconds: windows 10**6 times too late).
        key_name = "\x00by"
        plain_key = f"c{len(needed)}"
        selected.append(F.expr(f"unix_micros({_quoted(by)})").alias(plain_key))
        named[plain_key] = key_name
    schema = f"key {key_type}, state binary"

    key = None if by is not None else _engine_columns.key_column(metric, positional, keywords)
    shares = key_parts if key is not None else 0

    def states(frames: Iterator[Any]) -> Iterator[Any]:
        frames = (_restored(frame, named, instants) for frame in frames)
        if shares:  # a keyed metric: one piece per share of the keys
            pieces = _engines.partition_pieces(frames, template, positional, keywords, shares)
            yield pd.DataFrame({"key": range(shares), "state": pieces})
            return
        parts = _engines.partition_states(frames, template, positional, keywords, key_name)
        if by is not None and not parts:
            # A partition without rows (after a filter, or more partitions than rows) has no
            # slice: its key column would be empty and untyped (float64 in pandas 3), which
            # Arrow refused as the declared key type, and the whole job failed (0.8.8).
            return
        keys = [0 if k is None else k for k in parts]
        yield pd.DataFrame({"key": keys, "state": list(parts.values())})

    def merge(frame: Any) -> Any:
        blobs = frame["state"].tolist()
        merged = _engines.tree_merge(blobs, _engines.merge_blobs)
        return pd.DataFrame({"key": frame["key"].iloc[:1], "state": [merged]})

    per_partition = df.select(*selected).mapInPandas(states, schema)
    if shares:
        reduced = per_partition.groupBy("key").applyInPandas(merge, schema)
        # Shares arrive partition by partition, each decoded as it arrives, while Spark already
        # fetches the next partition (one job per partition: without the prefetch the driver
        # waits for each in turn, 0.4-0.5 s of a 5 s GAUC over 1M users); then one join of
        # them all (disjoint keys: one pass over the entries, where joining each into the
        # result re-sorted it each time).
        with _worker_errors():
            rows_in = reduced.toLocalIterator(prefetchPartitions=True)
            received = [loads(bytes(row["state"])) for row in rows_in]
        if len(received) != shares:
            _check_lost(df, f"{len(received)} of the {shares} shares of the keys")
        result: Metric = loads(template).join(*received)  # type: ignore[attr-defined]
        return result
    with _worker_errors():
        rows = per_partition.groupBy("key").applyInPandas(merge, schema).collect()
    found = {row["key"]: bytes(row["state"]) for row in rows}
    if by is None:
        if 0 not in found:  # every partition sends a state, even an empty one
            _check_lost(df, "no state")
        return loads(found.get(0, template))
    keys = sorted(found, key=lambda k: (type(k).__name__, k))
    if instant_key:
        epoch = datetime.datetime(1970, 1, 1)
        return {epoch + datetime.timedelta(microseconds=k): loads(found[k]) for k in keys}
    return {key: loads(found[key]) for key in keys}


def _quoted(name: str) -> str:
    """A column name as Spark SQL reads it literally (a dot would name a struct's field)."""
    return "`" + name.replace("`", "``") + "`"


def _restored(frame: Any, named: dict[str, str], instants: set[str]) -> Any:
    """``frame`` with its columns' own names back, and the instants (sent as microseconds
    since the epoch) as UTC datetime64, as one process reads a column of instants."""
    import pandas as pd

    frame = frame.rename(columns=named)
    for c in instants:
        frame[c] = pd.to_datetime(frame[c], unit="us")
    return frame


@contextmanager
def _worker_errors() -> Iterator[None]:
    """Re-raise a streammetrics error from a Spark worker (an ``InputError`` naming a column,
    say) as that error on the driver: PySpark reports it as a ``PythonException`` holding the
    worker's traceback as text."""
    try:
        yield
    except Exception as exc:
        # (CountOverflowError, an InputError too, lives in streammetrics._codec.)
        found = re.findall(r"streammetrics\.(?:errors|_codec)\.(\w+): ([^\n]*)", str(exc))
        name = found[-1][0] if found else ""
        kind = getattr(errors, name, None) or getattr(_codec, name, None)
        if not (isinstance(kind, type) and issubclass(kind, errors.StreamMetricsError)):
            raise
        raise kind(found[-1][1]) from exc


def _check_lost(df: Any, what: str) -> None:
    """Every partition sends its state(s): receiving fewer means the transfer to the driver
    failed (PySpark may then return fewer rows without raising, e.g. when the JVM serving them
    ran out of memory). Raise rather than answer from part of the data; an empty DataFrame
    (no partition at all) is the one case where nothing arrives legitimately."""
    if not df.isEmpty():
        raise RuntimeError(
            f"spark.aggregate: the driver received {what}, so part of the data would be "
            "missing from the result; the transfer from Spark failed (the driver's JVM may "
            "have run out of memory: raise spark.driver.memory, or use key_parts > 0 so that "
            "no single reducer holds every partition's state)"
        )
