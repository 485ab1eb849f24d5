"""Reading a ``Sliced`` wire form of many slices straight into one packed table.

The wire form lists ``[key, envelope]`` pairs, each envelope a whole metric. Decoding them one
by one costs tens of microseconds of Python per slice (an envelope, a config check, each array
checked as untrusted bytes, a state built): seconds at 100,000 slices. The decoders here make
every check the per-slice decoder makes, once over all the slices' arrays, and build the pack
(:class:`~streammetrics.wrappers._slice_pack.SlicePack` for score buckets,
:class:`~streammetrics.wrappers._confusion_pack.ConfusionPack` for label counts) that the
slices' next update would build. They accept only what that decoder accepts: anything unusual
(another schema or config, another layout, mixed dtypes, a count near its bound, a fault) makes
them answer None, and the per-slice decoder then accepts it or names the fault as it always
did. Holding the same contents, the pack writes the same bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _codec
from .._configs import same_config
from ..base import Metric
from ..states._cells import may_be_sparse
from ._confusion_pack import _CODE_LIMIT, ConfusionPack, qualifies
from ._packing import library_state
from ._slice_pack import SlicePack

__all__ = ["decoded_confusion_pack", "decoded_pack", "key_from_wire", "key_to_wire"]

Key = Any

_ENVELOPE = frozenset({"format", "version", "class", "schema", "config", "state"})
_STORE = frozenset({"lo", "hi", "pos", "neg"})
_DENSE = frozenset({"rows", "table"})
_F64, _I64 = np.dtype(np.float64), np.dtype(np.int64)


def key_to_wire(key: Key) -> Any:
    """A slice key as the wire writes it: a composite key as a list of its parts."""
    return list(key) if isinstance(key, tuple) else key


def key_from_wire(raw: Any) -> Key | None:
    """Inverse of :func:`key_to_wire`: an integer, a string or a tuple of them; None for
    anything else (a bool, a float, an empty or nested list, a string ending in NUL: every
    path reads ``"a\x00"`` as the slice ``"a"``, so no stream holds it; 0.8.14 decoded it
    beside ``"a"``, a slice no update could reach)."""
    if type(raw) is list:
        key = tuple(raw)
        return key if key and all(_key_part(p) for p in key) else None
    return raw if _key_part(raw) else None


def _key_part(part: Any) -> bool:
    return type(part) is int or (type(part) is str and not part.endswith("\x00"))


def _envelopes(
    template: Any, pairs: list[Any], field: str | None, layout: frozenset[str] = frozenset()
) -> tuple[list[Key], list[int], list[Any]] | None:
    """``(keys, counts, blocks)`` of the pairs, each an envelope of ``template``'s class,
    schema and config holding exactly its state fields and a count from 1 to the bound, keys
    distinct and of one kind, and ``blocks`` each state's ``field``: a map of exactly the
    ``layout`` fields (no block when ``field`` is None); None otherwise."""
    klass = type(template)
    name, schema, config = template._wire_name, klass._schema, template._config
    magic, version = _codec.FORMAT_MAGIC, _codec.FORMAT_VERSION
    fields = {"count", *template._fields}
    keys: list[Key] = []
    counts: list[int] = []
    blocks: list[Any] = []
    kinds: set[Any] = set()
    for pair in pairs:
        if type(pair) is not list or len(pair) != 2:
            return None
        raw, env = pair
        key = key_from_wire(raw)
        if key is None:
            return None
        kinds.add(tuple(map(type, key)) if type(key) is tuple else type(key))
        if type(env) is not dict or env.keys() != _ENVELOPE:
            return None
        v, s, state = env["version"], env["schema"], env["state"]
        if env["format"] != magic or env["class"] != name or type(v) is not int or v != version:
            return None
        if type(s) is not int or s != schema or not same_config(config, env["config"]):
            return None
        if type(state) is not dict or state.keys() != fields:
            return None
        count = state["count"]
        if type(count) is not int or not 0 < count <= _codec.COUNT_LIMIT:
            return None
        if field is not None:
            block = state[field]
            if type(block) is not dict or block.keys() != layout:
                return None
            blocks.append(block)
        keys.append(key)
        counts.append(count)
    if len(kinds) != 1 or len(set(keys)) != len(keys):
        return None
    return keys, counts, blocks


def _arrays(column: list[Any], ndim: int) -> bool:
    return all(type(a) is np.ndarray and a.ndim == ndim for a in column)


def _lengths(column: list[np.ndarray]) -> np.ndarray:
    return np.fromiter(map(len, column), np.int64, count=len(column))


def decoded_pack(template: Any, pairs: list[Any], least: int) -> SlicePack | None:
    """The :class:`SlicePack` of the pairs of a score-bucket metric on a grid (stores of
    ``lo``, ``hi``, ``pos``, ``neg``), or None (see the module): fewer than ``least`` slices
    (the table packs from ``PACK_MIN_SLICES``), or anything unusual.

    ``Sliced(ROCAUC())`` over 100,000 slices: ~130 µs of Python per slice through the
    per-slice decoder, a few here.
    """
    mapping = getattr(getattr(template, "hist", None), "mapping", None)
    if (
        len(pairs) < max(least, 1)
        or not library_state(template)  # (a subclass's own checks: the per-slice decoder)
        or mapping is None
        or mapping.size is None
        or template.hist._bits is not None
        or set(template._fields) != {"hist"}
        or (
            type(template)._validate_state is not Metric._validate_state
            and not getattr(template, "_validates_exact_only", False)
        )
    ):
        return None
    found = _envelopes(template, pairs, "hist", _STORE)
    if found is None:
        return None
    keys, counts, stores = found
    columns = [[store[f] for store in stores] for f in ("lo", "hi", "pos", "neg")]
    if not all(_arrays(column, 1) for column in columns):
        return None
    lens = [_lengths(column) for column in columns]
    if not all(np.array_equal(lens[0], other) for other in lens[1:]):
        return None
    dtypes = [{a.dtype for a in column} for column in columns]
    counted = dtypes[2] | dtypes[3]
    if dtypes[0] != {_F64} or dtypes[1] != {_F64} or len(counted) != 1:
        return None  # (mixed count dtypes: the per-slice states keep each its own)
    wide = counted.pop()
    if wide not in (_I64, _F64):
        return None
    lo, hi, pos, neg = (np.concatenate(column) for column in columns)
    slot = np.repeat(np.arange(len(keys), dtype=np.int64), lens[0])
    if wide == _F64 and not (np.isfinite(pos).all() and np.isfinite(neg).all()):
        return None
    if len(pos) and (pos.min() < 0 or neg.min() < 0 or not ((pos + neg) > 0).all()):
        return None
    # Each slice's totals, which the per-slice decoder bounds: far below the bound here, or
    # that decoder decides (its float sums, rounded in its own order, are then the judge).
    totals = np.bincount(slot, weights=pos, minlength=len(keys))
    totals += np.bincount(slot, weights=neg, minlength=len(keys))
    if not totals.max() <= (_codec.COUNT_LIMIT if wide == _I64 else _codec.WEIGHT_LIMIT) / 4:
        return None
    if not (np.isfinite(lo).all() and np.isfinite(hi).all() and (lo <= hi).all()):
        return None
    lo, hi = lo + 0.0, hi + 0.0  # -0.0 -> +0.0, as each store's decoder writes them
    both = mapping.keys(np.concatenate([lo, hi])).astype(np.int64)
    bucket = both[: len(lo)]
    if not np.array_equal(bucket, both[len(lo) :]):
        return None
    if len(bucket) and not (bucket.min() >= 0 and bucket.max() < mapping.size):
        return None
    if len(lo) and not mapping.holds(lo.min(), hi.max()):
        return None  # (a probability a hair below 0: 0.8.18 took it here, not one slice alone)
    cells = slot * mapping.size + bucket
    if len(cells) > 1 and not (cells[1:] > cells[:-1]).all():
        return None  # a slice's buckets unsorted or repeated
    index = {k: i for i, k in enumerate(keys)}
    rows = np.array(counts, dtype=np.int64)
    if wide == _I64 and not np.array_equal(totals, rows):
        return None  # integer buckets are rows: the per-slice decoder names the mismatch
    return SlicePack(template, keys, index, rows, totals, (cells, pos, neg, lo, hi))


def decoded_confusion_pack(template: Any, pairs: list[Any], least: int) -> ConfusionPack | None:
    """The :class:`ConfusionPack` of the pairs of a confusion metric (``Accuracy``, ``F1``,
    ...) whose every label set is valid, each slice's counts a dense integer table over labels
    of one kind (the form tables of up to 65,536 cells take), or None (see the module).

    ``Sliced(Accuracy())`` over 100,000 slices: ~40 µs of Python per slice through the
    per-slice decoder, a few here.
    """
    from ..classification._confusion_base import _ConfusionMetric

    if len(pairs) < max(least, 1) or not qualifies(template) or not library_state(template):
        return None  # (a subclass's own checks: the per-slice decoder)
    if type(template)._validate_state is not _ConfusionMetric._validate_state:
        return None
    keeps_sq = template._keeps_weight_sq
    if set(template._fields) != ({"counts", "weight_sq"} if keeps_sq else {"counts"}):
        return None
    if not template.counts.shared:
        return None
    found = _envelopes(template, pairs, "counts", _DENSE)
    if found is None:
        return None
    keys, counts, blocks = found
    rows, tables = [b["rows"] for b in blocks], [b["table"] for b in blocks]
    if _arrays(rows, 1):
        if {r.dtype for r in rows} != {_I64}:
            return None
        labels_of = rows
    elif all(type(r) is list and r and all(type(v) is str for v in r) for r in rows):
        labels_of = [np.array(r, dtype=np.str_) for r in rows]
    else:
        return None  # (mixed kinds, or a slice without labels: the per-slice decoder reads it)
    widths = _lengths(labels_of)
    if not widths.min(initial=1) or not _arrays(tables, 2):
        return None
    dtypes = {t.dtype for t in tables}
    if dtypes not in ({_I64}, {_F64}):
        return None  # (mixed: the per-slice states keep each its own)
    weighted = dtypes == {_F64}
    if not all(t.shape == (w, w) for t, w in zip(tables, widths.tolist(), strict=True)):
        return None
    weight_sq = np.zeros(len(keys))
    if keeps_sq:
        sq = [env["state"]["weight_sq"] for _, env in pairs]  # (pairs checked above)
        if not all(type(w) is float or (type(w) is int and not weighted) for w in sq):
            return None
        weight_sq = np.array(sq, dtype=np.float64) + 0.0  # (-0.0 -> 0.0, as _load_field)
    every = np.concatenate(labels_of)
    starts = np.cumsum(widths) - widths
    inner = np.ones(len(every), dtype=bool)
    inner[starts] = False  # each slice's first label has no predecessor in its slice
    if (every[1:] <= every[:-1])[inner[1:]].any():
        return None  # a slice's labels unsorted or repeated
    flat = np.concatenate([t.ravel() for t in tables])
    if len(flat) and not flat.min() >= 0:
        return None  # (negative, or nan)
    if weighted and not (np.isfinite(flat).all() and not np.signbit(flat).any()):
        return None  # (-0.0 too: a dense table keeps it, the pack's cells would not)
    areas = widths * widths  # each slice's table, row-major in ``flat`` from ``cell_start``
    cell_start = np.cumsum(areas) - areas
    cell_slot = np.repeat(np.arange(len(keys), dtype=np.int64), areas)
    totals = np.bincount(cell_slot, weights=flat, minlength=len(keys))
    if totals.max() > (_codec.WEIGHT_LIMIT if weighted else _codec.COUNT_LIMIT) / 4:
        return None  # near the bound: the per-slice decoder's exact sums decide
    rows_held = np.array(counts, dtype=np.int64)
    if weighted:
        if keeps_sq and not _weight_sq_inside(weight_sq, totals, rows_held):
            return None
    # Integer tables are unweighted rows: each slice's table counts its rows once each, and
    # its sum of squared weights is that count. Otherwise the per-slice decoder says what
    # is wrong.
    elif not np.array_equal(totals, rows_held):
        return None
    elif keeps_sq and not np.array_equal(weight_sq, rows_held.astype(np.float64)):
        return None
    fixed = template.counts.fixed
    labels = template.counts.rows if fixed else np.unique(every)
    size = len(labels)
    if weighted and may_be_sparse(size * size):
        return None  # (weighted tables of many labels are not packed: ``of_slices``)
    if fixed and not ((widths == size).all() and np.array_equal(every, np.tile(labels, len(keys)))):
        return None  # (the per-slice decoder names the labels that differ)
    if len(keys) * size * size >= _CODE_LIMIT:
        return None
    at = np.searchsorted(labels, every)  # each slice's labels in the union
    filled = np.flatnonzero(flat)
    slot = cell_slot[filled]
    true, pred = np.divmod(filled - cell_start[slot], widths[slot])
    first = starts[slot]
    cells = (slot * size + at[first + true]) * size + at[first + pred]
    present = None
    if not fixed:
        present = np.repeat(np.arange(len(keys), dtype=np.int64), widths) * size + at
    index = {k: i for i, k in enumerate(keys)}
    table = (cells, flat[filled], present)
    floaty = np.ones(len(keys), dtype=bool) if weighted else None  # (every table holds weights)
    return ConfusionPack(template, keys, index, rows_held, weight_sq, labels, table, (), floaty)


def _weight_sq_inside(sq: np.ndarray, totals: np.ndarray, counts: np.ndarray) -> bool:
    """Whether each slice's ``weight_sq`` passes ``check_weight_sq`` against its table's total
    whatever order that total is summed in: the check's own bounds narrowed by 1e-9 of the
    squared total (a sum of up to 65,536 cells rounds by less than 1e-11 of itself)."""
    with np.errstate(over="ignore", invalid="ignore"):
        square = totals * totals
        slack = 1e-6 * square + counts * 1e-300 - 1e-9 * square
        ok = (square / counts - slack <= sq) & (sq <= square + slack)
    return bool(np.isfinite(sq).all() and (sq >= 0).all() and ok.all())
