"""Metrics over a Dask DataFrame: one state per partition, merged in a tree.

Needs the ``dask`` extra (``pip install 'streammetrics[dask]'``). Runs on whatever scheduler is
active: the threaded default, or a ``distributed.Client`` (a ``LocalCluster`` or a real cluster).
"""

from __future__ import annotations

from typing import Any

from . import _engines
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


def _partition(
    frame: Any, template: bytes, positional: list[str], keywords: dict[str, str], by: str | None
) -> dict[Any, bytes]:
    return _engines.partition_states([frame], template, positional, keywords, by)


def _merge(parts: list[dict[Any, bytes]]) -> dict[Any, bytes]:
    return _engines.merge_keyed(parts)


def _join(parts: list[dict[Any, bytes]]) -> dict[Any, bytes]:
    return {None: _engines.join_blobs([p[None] for p in parts])}


def aggregate(ddf: Any, metric: Metric, columns: Any, by: str | None = None) -> Any:
    """``metric`` over every row of ``ddf``; with ``by``, one metric per value of that column.

    Each partition builds its state in a worker (one update per partition, or per key present in
    it); states travel as bytes and are merged in a tree of fan-in 8, so the driver receives one
    state (or one per key). The result equals feeding all rows to ``metric`` in one process:
    byte for byte for counting states, to rounding for float sums.

    A keyed metric (``GAUC``, the ranking metrics) is first shuffled by its key column (its
    groups, its query ids), so that each partition's state holds its own keys and the states are
    joined, not merged key by key: the states together are the size of the result, wherever a
    key's rows started (``docs/streams.md``).

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
    positional, keywords = _engines.check_columns(metric, columns, by)
    needed = list(dict.fromkeys([*positional, *keywords.values(), *([by] if by else [])]))
    missing = [c for c in needed if c not in ddf.columns]
    if missing:
        from .errors import InputError

        raise InputError(f"columns: {missing} not in the DataFrame (it has {list(ddf.columns)})")
    template = metric.copy().reset().to_bytes()
    frame = ddf[needed]
    key = None if by is not None else _engines.key_column(metric, positional, keywords)
    if key is not None and frame.npartitions > 1:
        frame = frame.shuffle(on=key, npartitions=frame.npartitions)
    parts = [
        dask.delayed(_partition)(part, template, positional, keywords, by)
        for part in frame.to_delayed()
    ]
    combine = _join if key is not None else _merge
    merged = _engines.tree_merge(parts, dask.delayed(combine)) if parts else None
    states: dict[Any, bytes] = dask.compute(merged)[0] if merged is not None else {}
    if by is None:
        return loads(states.get(None, template))
    return {key: loads(blob) for key, blob in sorted(states.items(), key=_order)}


def _order(item: tuple[Any, bytes]) -> tuple[str, Any]:
    key = item[0]
    return (type(key).__name__, key)
