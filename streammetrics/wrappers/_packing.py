"""Shared steps of ``Sliced``'s packed tables (label counts, score buckets, moments): each batch
key's slot in the table, arrays grown to the table's new size, and the per-slice sums of the
moment tables."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "LONG_RUN",
    "ROOM",
    "ArrayPack",
    "Sums",
    "alike",
    "grown",
    "library_state",
    "slots",
    "weight_sq_valid",
]

Key = Any


#: A table folds a batch only while every slice's new totals stay this far within their bounds
#: (``WEIGHT_LIMIT``, the moments' mean and co-moment limits): its per-slice sums (``bincount``,
#: in row order) round otherwise than the metric's own (pairwise), so nearer a bound the
#: per-slice path runs and its own sums decide. (A review of 0.8.22 found a weighted batch
#: within 2**47 of 2**100 accepted by the table, refused by the metric.)
ROOM = 1.0 - 2.0**-20

#: The methods that update, write, read or check a state (its labels too): a user's subclass
#: overriding any keeps one state per slice, on update and on ``loads`` (:func:`library_state`).
#: A list of what to refuse: a hook added to the per-slice path later belongs here too (a
#: review of 0.8.22 found ``_check_labels`` missing).
_STATE_METHODS = (
    "__init__",
    "update",
    "_stacked",
    "_commit",
    "_state_wire",
    "_envelope",
    "_load_state",
    "_validate_state",
    "_upgrade_state",
    "_check_labels",
    "_any_labels",
    "_label_rule",
)


def library_state(template: Any) -> bool:
    """Whether ``template``'s state is its library class's: a class of the library, or a
    user's subclass that overrides none of :data:`_STATE_METHODS` (so it declares no other state
    field: those are added in ``__init__``). A table writes, reads and checks the library's
    state only: it would drop a subclass's own field from the bytes, or skip its own checks
    (reviews of 0.8.22). A class of the library is answered at once (a ``Sliced`` asks at
    every update: the walk of the class dictionaries cost 10 us a request); a subclass is
    walked every time, so a method added to it later still counts."""
    kind = type(template)
    if kind.__module__.startswith("streammetrics."):
        return True
    lib = next((c for c in kind.__mro__ if c.__module__.startswith("streammetrics.")), None)
    if lib is None:
        return False
    return all(_defined(kind, name) is _defined(lib, name) for name in _STATE_METHODS)


def _defined(kind: type, name: str) -> Any:
    """The object ``name`` resolves to in ``kind``'s class dictionaries (a classmethod itself,
    not a new bound method per lookup, so that ``is`` compares definitions)."""
    return next((c.__dict__[name] for c in kind.__mro__ if name in c.__dict__), None)


class ArrayPack:
    """What the tables of float states (moments, fit moments, sums) share: one array element or
    row per slice, never changed in place (an update makes a new table), nothing queued."""

    queue: tuple[Any, ...] = ()

    def __init__(
        self,
        template: Any,
        keys: list[Key],
        index: dict[Key, int],
        counts: np.ndarray,
        fields: tuple[np.ndarray, ...],
    ) -> None:
        """``keys[i]`` names slice ``i`` (arrival order), ``index`` maps a key to it,
        ``counts[i]`` are its rows and ``fields`` the table's arrays (an element or a row per
        slice; what each holds is the subclass's)."""
        self.template = template
        self.keys, self.index, self.counts = keys, index, counts
        self.fields = fields

    def settled(self) -> Any:
        return self

    def __len__(self) -> int:
        return len(self.keys)

    def _weights(self) -> np.ndarray:
        """Each slice's total weight."""
        raise NotImplementedError

    def held_bound(self) -> float:
        """The largest row count or weight of any slice."""
        return float(max(self.counts.max(initial=0), self._weights().max(initial=0.0)))

    def materialize(self) -> dict[Key, Any]:
        """One state per slice, in arrival order (``_commit``'s fields, set directly)."""
        return dict(zip(self.keys, self._states(range(len(self.keys))), strict=True))

    def state(self, key: Key) -> Any:
        """The state of one slice (``KeyError`` if there is none), made alone."""
        return self._states([self.index[key]])[0]

    def _states(self, rows: Any) -> list[Any]:
        """The made states of the slices at ``rows``, holding copies of the table's values
        (a state may be changed in place; the table never is)."""
        raise NotImplementedError


def alike(template: Any, metrics: list[Any]) -> bool:
    """Whether every state is of ``template``'s class and configuration with nothing buffered
    (what a table can take in: ``of_slices``)."""
    kind, config = type(template), template._config
    return all(type(m) is kind and m._pending is None and m._config == config for m in metrics)


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
    """``values`` (1-D, or 2-D: rows) padded with zeros to ``size`` rows (itself when already
    that long)."""
    if len(values) == size:
        return values
    out = np.zeros((size, *values.shape[1:]), dtype=values.dtype)
    out[: len(values)] = values
    return out


#: A slice with more rows than this in one batch has its sums taken by numpy's pairwise
#: reduction, as the metric's own update takes them: ``np.bincount`` adds in row order, an error
#: growing with the rows (1e-10 of the mean at 10M rows of one slice, a review found, against
#: 4e-15 for the metric), amplified up to 17-fold in the co-moment by the shifted sums.
LONG_RUN = 4096


class Sums:
    """Per-code sums of a batch's columns: ``np.bincount`` for every code (few rows each:
    accurate), then numpy's pairwise sum for the codes of more than :data:`LONG_RUN` rows, over
    their rows gathered once (one stable 16-bit sort of those rows' codes). That costs: 2
    slices in 100k-row batches run at 22-23 M rows/s, 36 M with ``bincount`` alone."""

    def __init__(self, codes: np.ndarray, rows: np.ndarray) -> None:
        self.codes, self.k = codes, len(rows)
        self.big = np.flatnonzero(rows > LONG_RUN)
        if len(self.big):  # at most len(codes) / LONG_RUN of them: < 65536
            slot = np.full(self.k, -1, dtype=np.int64)
            slot[self.big] = np.arange(len(self.big))
            mine = slot[codes]
            take = np.flatnonzero(mine >= 0)
            order = np.argsort(mine[take].astype(np.uint16), kind="stable")
            self.order = take[order]
            ends = np.cumsum(rows[self.big])
            self.edges = list(zip((ends - rows[self.big]).tolist(), ends.tolist(), strict=True))

    def __call__(self, values: np.ndarray) -> np.ndarray:
        out = np.bincount(self.codes, weights=values, minlength=self.k)
        if len(self.big):
            v = values[self.order]
            out[self.big] = [np.add.reduce(v[a:b]) for a, b in self.edges]
        return out


def weight_sq_valid(sq: np.ndarray, weight: np.ndarray, counts: np.ndarray) -> bool:
    """``uncertainty.check_weight_sq`` of every slice, operation for operation: nan (unknown),
    or finite, non-negative and within ``[total**2 / count, total**2]`` with its slack."""
    known = ~np.isnan(sq)
    with np.errstate(over="ignore", invalid="ignore"):
        if not (np.isfinite(sq[known]).all() and (sq[known] >= 0).all()):
            return False
        square = weight * weight
        slack = 1e-6 * square + counts * 1e-300
        checked = known & np.isfinite(square)
        low = square / counts - slack
        high = square + slack
        ok = (low <= sq) & (sq <= high)
    return bool(ok[checked].all())
