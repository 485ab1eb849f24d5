"""Metrics in ``torch.distributed`` training loops: :func:`sync` merges every rank's state.

Needs the ``torch`` extra (``pip install 'streammetrics[torch]'``); torch is imported only here.
Every metric, wrapper and collection already accepts tensors of any dtype and device as
columns (see :mod:`streammetrics._inputs`); this module adds the one collective a data-parallel
job needs at the end of an epoch.

How :func:`sync` works, on every rank of the group:

1. an all-gather of a fixed 104-byte header: the size of the rank's :meth:`~Metric.to_bytes`
   blob, a SHA-256 digest of its class and configuration, and its class name. If any rank's
   digest differs from rank 0's, every rank raises :class:`IncompatibleStateError` naming those
   ranks, before anything else is sent (so no rank is left waiting in a collective);
2. an all-gather of the blobs, each padded to the longest, as one ``uint8`` tensor on the
   backend's device (the current CUDA device for NCCL, the CPU otherwise), then one copy to the
   host;
3. every blob is decoded with :func:`~streammetrics.loads` and merged in rank order. Every rank
   runs the same merges on the same bytes, so the results are equal on every rank, byte for byte
   (floating-point sums included).

Cost: two all-gathers; ``world_size * max_blob`` bytes received per rank and memory for them.
A sketch :class:`~streammetrics.ROCAUC` is a few kilobytes whatever the number of samples.
"""

from __future__ import annotations

import hashlib
import importlib
from typing import Any, TypeVar

import numpy as np

from streammetrics import _codec
from streammetrics.base import Metric, loads, metric_spec
from streammetrics.errors import IncompatibleStateError

__all__ = ["sync"]

_M = TypeVar("_M", bound=Metric)

_NAME_BYTES = 64
_HEADER = 8 + 32 + _NAME_BYTES  # blob size (uint64 little endian), config digest, class name


def _import_torch() -> Any:
    try:
        # absolute import by name: this module is ``streammetrics.torch``, never ``torch``
        return importlib.import_module("torch")
    except ImportError:
        raise ImportError(
            "streammetrics.torch needs torch: pip install 'streammetrics[torch]'"
        ) from None


_torch = _import_torch()


def _header(metric: Metric, size: int) -> np.ndarray:
    digest = hashlib.sha256(_codec.encode(metric_spec(metric))).digest()
    name = type(metric).__name__.encode()[:_NAME_BYTES].ljust(_NAME_BYTES, b"\0")
    raw = size.to_bytes(8, "little") + digest + name
    row: np.ndarray = np.frombuffer(raw, dtype=np.uint8).copy()
    return row


def _device(dist: Any, group: Any) -> Any:
    backend = str(dist.get_backend(group)).lower()
    if backend == "nccl":
        return _torch.device("cuda", _torch.cuda.current_device())
    return _torch.device("cpu")


def _all_gather(dist: Any, row: np.ndarray, world: int, device: Any, group: Any) -> np.ndarray:
    """Every rank's ``row`` (equal lengths) as a (world, len) uint8 array on the host."""
    mine = _torch.from_numpy(row).to(device)
    rows = [_torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(rows, mine, group=group)
    out: np.ndarray = _torch.stack(rows).cpu().numpy()  # one device-to-host copy
    return out


def sync(metric: _M, group: Any = None) -> _M:
    """The merge of ``metric`` over every rank of a ``torch.distributed`` process group.

    Call it on every rank of ``group`` (the default group when ``None``), as any collective. The
    argument is not changed; the result is a new metric equal to one metric fed every rank's
    rows, identical on every rank. Outside an initialised process group (or on a process that is
    not a member of ``group``) it returns ``metric.copy()``.

    Works for every metric, wrapper (windows, ...) and :class:`~streammetrics.MetricCollection`.
    Ranks are merged in rank order (ranks of ``group``), so a counting state is byte-identical to
    the single stream and a floating-point state agrees to rounding.

    Raises :class:`IncompatibleStateError` on every rank, naming the ranks, when a rank's metric
    has another class or configuration than rank 0's (checked on a small header first, then by
    the merge itself).

    Cost: two all-gathers (a 104-byte header, then the padded states); memory ``world_size`` times
    the largest state.

    Examples
    --------
    Outside a process group, ``sync`` is a copy:

    >>> import streammetrics as sm
    >>> from streammetrics.torch import sync
    >>> m = sm.MeanSquaredError().update([1.0, 2.0], [1.5, 2.0])
    >>> merged = sync(m)
    >>> merged == m, merged is m
    (True, False)
    """
    dist = _torch.distributed
    if not (dist.is_available() and dist.is_initialized()):
        return metric.copy()
    rank = dist.get_rank(group)
    if rank < 0:  # not a member of ``group``
        return metric.copy()
    world = dist.get_world_size(group)
    device = _device(dist, group)
    blob = metric.to_bytes()

    headers = _all_gather(dist, _header(metric, len(blob)), world, device, group)
    digests = [bytes(h[8:40]) for h in headers]
    odd = [r for r in range(world) if digests[r] != digests[0]]
    if odd:
        names = [bytes(h[40:]).rstrip(b"\0").decode(errors="replace") for h in headers]
        desc = ", ".join(f"rank {r} has a {names[r]}" for r in odd)
        raise IncompatibleStateError(
            f"sync: ranks hold metrics of another class or configuration than rank 0's "
            f"{names[0]}: {desc} (this is rank {rank})"
        )
    sizes = [int.from_bytes(bytes(h[:8]), "little") for h in headers]

    padded = np.zeros(max(sizes), dtype=np.uint8)
    padded[: len(blob)] = np.frombuffer(blob, dtype=np.uint8)
    blobs = _all_gather(dist, padded, world, device, group)

    merged = loads(bytes(blobs[0, : sizes[0]]))
    for r in range(1, world):
        try:
            merged.merge(loads(bytes(blobs[r, : sizes[r]])))
        except IncompatibleStateError as exc:
            raise IncompatibleStateError(
                f"sync: rank {r}'s state cannot merge with rank 0's ({exc}) (this is rank {rank})"
            ) from exc
    result: _M = merged  # type: ignore[assignment]  # same class: every digest matched
    return result
