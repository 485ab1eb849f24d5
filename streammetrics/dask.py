"""Metrics over a Dask DataFrame: one state per partition, merged in a tree.

Needs the ``dask`` extra (``pip install 'streammetrics[dask]'``). Runs on whatever scheduler is
active: the threaded default, or a ``distributed.Client`` (a ``LocalCluster`` or a real cluster).
"""

from __future__ import annotations

from typing import Any

from . import _engines
from ._heap import with_roomy_heap
from ._inputs import config_int
from .base import Metric, loads

__all__ = ["aggregate"]


def _import_dask() -> Any:
    try:
        import dask
    except ImportError:
        raise ImportError(
            "streammetrics.dask needs dask: pip install 'streammetrics[dask]'"
        ) from None
    return dask


@with_roomy_heap
def _partition(
    frame: Any, template: bytes, positional: list[str], keywords: dict[str, str], by: str | None
) -> dict[Any, bytes]:
    return _engines.partition_states([frame], template, positional, keywords, by)


@with_roomy_heap
def _merge(parts: list[dict[Any, bytes]]) -> dict[Any, bytes]:
    return _engines.merge_keyed(parts)


@with_roomy_heap
def _pieces(
    frame: Any, template: bytes, positional: list[str], keywords: dict[str, str], parts: int
) -> list[bytes]:
    return _engines.partition_pieces([frame], template, positional, keywords, parts)


@with_roomy_heap
def _merge_pieces(pieces: list[bytes]) -> bytes:
    return _engines.merge_blobs(pieces)


@with_roomy_heap
def _join_pieces(pieces: list[bytes]) -> bytes:
    return _engines.join_blobs(pieces)


def aggregate(
    ddf: Any, metric: Metric, columns: Any, by: str | None = None, key_parts: int = 0
) -> Any:
    """``metric`` over every row of ``ddf``; with ``by``, one metric per value of that column.

    Each partition builds its state in a worker (one update per partition, or per key present in
    it); states travel as bytes and are merged in a tree of fan-in 8, so the driver receives one
    state (or one per key). The result equals feeding all rows to ``metric`` in one process:
    byte for byte for counting states, to rounding for float sums.

    With ``key_parts=n``, a keyed metric (``GAUC``, the ranking metrics) reduces in parallel by
    key: each partition's state is split by a hash of its key (groups, query ids) into ``n``
    pieces, ``n`` reducers each merge one share of the keys, and their states, of disjoint keys,
    are joined rather than merged key by key. It pays off with many workers and large states;
    on two workers the tree merge is faster, so it is not the default (``docs/streams.md``).

    Parameters
    ----------
    ddf : dask.dataframe.DataFrame
    metric : Metric
        Gives the class and configuration; the data it holds is not used (nor changed).
    columns : list of str or dict
        Columns passed positionally to ``update`` (``["y_true", "y_score"]``), or a dict of
        update keyword -> column (``{"y_true": "label", "sample_weight": "w"}``).
    by : str, optional
        A column whose values key the result: ``{key: metric}``.
    key_parts : int, default 0
        For keyed metrics: reduce in this many shares of the keys (0: one tree merge).

    Returns
    -------
    Metric, or dict of key -> Metric when ``by`` is given.

    Examples
    --------
    >>> import pandas as pd, dask.dataframe as dd
    >>> import streammetrics as sm
    >>> from streammetrics.dask import aggregate
    >>> df = pd.DataFrame({"y": [0, 1, 1, 0] * 25, "p": [0, 1, 0, 0] * 25, "g": [1, 1, 2, 2] * 25})
    >>> aggregate(dd.from_pandas(df, npartitions=4), sm.Accuracy(), ["y", "p"]).compute()
    0.75
    >>> {k: m.compute() for k, m in aggregate(dd.from_pandas(df, npartitions=3),
    ...                                       sm.Accuracy(), ["y", "p"], by="g").items()}
    {1: 1.0, 2: 0.5}
    """
    dask = _import_dask()
    key_parts = config_int(key_parts, "key_parts", minimum=0)
    positional, keywords = _engines.check_columns(metric, columns, by)
    needed = list(dict.fromkeys([*positional, *keywords.values(), *([by] if by else [])]))
    missing = [c for c in needed if c not in ddf.columns]
    if missing:
        from .errors import InputError

        raise InputError(f"columns: {missing} not in the DataFrame (it has {list(ddf.columns)})")
    template = metric.copy().reset().to_bytes()
    frames = ddf[needed].to_delayed()
    key = None if by is not None else _engines.key_column(metric, positional, keywords)
    if key is not None and key_parts and len(frames) > 1:
        n = key_parts
        # Each partition's state is cut into the shares of the keys where it is built.
        pieces = [
            dask.delayed(_pieces, nout=n)(f, template, positional, keywords, n) for f in frames
        ]
        shares = [
            _engines.tree_merge([p[j] for p in pieces], dask.delayed(_merge_pieces))
            for j in range(n)
        ]
        joined = _engines.tree_merge(shares, dask.delayed(_join_pieces))
        return loads(dask.compute(joined)[0])
    parts = [dask.delayed(_partition)(f, template, positional, keywords, by) for f in frames]
    merged = _engines.tree_merge(parts, dask.delayed(_merge)) if parts else None
    states: dict[Any, bytes] = dask.compute(merged)[0] if merged is not None else {}
    if by is None:
        return loads(states.get(None, template))
    return {key: loads(blob) for key, blob in sorted(states.items(), key=_order)}


def _order(item: tuple[Any, bytes]) -> tuple[str, Any]:
    key = item[0]
    return (type(key).__name__, key)
