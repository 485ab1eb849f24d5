"""Shared steps of ``Sliced``'s packed tables (label counts, score buckets, moments): each batch
key's slot in the table, and arrays grown to the table's new size."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["grown", "slots"]

Key = Any


def slots(
    keys: list[Key], index: dict[Key, int], batch: list[Key]
) -> tuple[list[Key], dict[Key, int], np.ndarray]:
    """``(keys, index, at)``: the slice keys and their index with the batch's new keys added
    (new objects; the same ones when there are none), and the slot of each batch key."""
    at = np.fromiter((index.get(k, -1) for k in batch), np.int64, count=len(batch))
    new = np.flatnonzero(at < 0)
    if len(new):
        added = [batch[j] for j in new.tolist()]
        at[new] = np.arange(len(keys), len(keys) + len(added))
        index = {**index, **dict(zip(added, at[new].tolist(), strict=True))}
        keys = [*keys, *added]
    return keys, index, at


def grown(values: np.ndarray, size: int) -> np.ndarray:
    """``values`` padded with zeros to ``size`` elements (itself when already that long)."""
    if len(values) == size:
        return values
    out = np.zeros(size, dtype=values.dtype)
    out[: len(values)] = values
    return out
