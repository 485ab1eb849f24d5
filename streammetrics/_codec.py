"""The wire format: a versioned msgpack envelope around a tree of plain values and numpy arrays.

This module knows nothing about metrics. It turns a tree made of ``None``, ``bool``, ``int``,
``float``, ``str``, ``bytes``, ``list``/``tuple``, ``dict`` and :class:`numpy.ndarray` into
canonical bytes and back, and wraps such a tree in the envelope described in ``docs/format.md``.

Canonical means that the same logical tree always gives the same bytes: dict entries are written
in sorted key order, integers in msgpack's smallest form, floats always as float64, arrays as
little-endian bytes in C order. Decoding never imports anything by name, never unpickles, and
never allocates more than the blob justifies: every length is checked against the bytes present.
Every failure becomes :class:`~streammetrics.errors.StateDecodeError`.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import msgpack
import numpy as np

from .errors import IncompatibleStateError, InputError, StateDecodeError

__all__ = [
    "COUNT_LIMIT",
    "SMALL_CHECK",
    "CountOverflowError",
    "WEIGHT_LIMIT",
    "FORMAT_MAGIC",
    "all_finite",
    "FORMAT_VERSION",
    "check_counts",
    "check_envelope",
    "check_sum",
    "count_total",
    "decode",
    "encode",
    "envelope_tree",
    "least",
    "pack_envelope",
    "tree_bytes",
    "unpack_envelope",
]

FORMAT_MAGIC = "streammetrics"
#: Version of the envelope layout. Bump only with a reader for every older version.
FORMAT_VERSION = 1

#: The largest count or weight total a state may hold: 2**53, where float64 stops representing
#: every integer (and far below 2**63, where int64 counts would wrap negative).
COUNT_LIMIT = 2**53
#: The largest total of float64 weights a state may hold: 2**100 (about 1.3e30), far beyond any
#: real stream yet leaving room for the sums and products of totals that compute forms
#: (an F-beta denominator, a Matthews product) to stay finite.
WEIGHT_LIMIT = 2.0**100

_EXT_NDARRAY = 1
# Only plain numeric dtypes travel; never object, void or datetime arrays. Keys are numpy's
# ``dtype.str`` for the little-endian form, which is what the wire carries.
_ALLOWED_DTYPES = frozenset(
    ["|b1", "|i1", "|u1", "<i2", "<u2", "<i4", "<u4", "<i8", "<u8", "<f4", "<f8"]
)
_MAX_NDIM = 8
_MAX_DEPTH = 64
#: Each allowed dtype string: its dtype, and whether arrays of it are read as stored (native
#: byte order) or byte-swapped. Looked up once per array instead of parsed (a ``Sliced`` state
#: of 100,000 slices holds 400,000 small arrays).
_READ_AS = {s: (np.dtype(s), np.dtype(s).newbyteorder("=") == np.dtype(s)) for s in _ALLOWED_DTYPES}


def _sort_key(key: Any) -> tuple[int, Any]:
    # Keys of one dict may mix ints and strings (group ids); order by kind first, then value.
    if isinstance(key, (bool, int, np.integer)):
        return (0, int(key))
    if isinstance(key, (float, np.floating)):
        return (1, float(key))
    if isinstance(key, str):
        return (2, key)
    if isinstance(key, bytes):
        return (3, key)
    raise TypeError(f"dict key of type {type(key).__name__} cannot be serialised")


class _Packers(threading.local):
    """One msgpack packer per thread for array headers: ``msgpack.packb`` builds a packer on
    every call, most of the cost of packing the small arrays a ``Sliced`` holds by the
    hundred thousand. Same bytes."""

    def __init__(self) -> None:
        self.packer = msgpack.Packer(use_bin_type=True)


_PACKERS = _Packers()


def _pack_array(arr: np.ndarray) -> msgpack.ExtType:
    dtype_str = arr.dtype.str
    if dtype_str in _ALLOWED_DTYPES:  # little-endian already (the usual case): no conversion
        wire = arr
    else:
        if arr.dtype.kind == "b":
            wire = arr.astype("|b1", copy=False)
        else:
            wire = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
        dtype_str = wire.dtype.str
        if dtype_str not in _ALLOWED_DTYPES:
            raise TypeError(f"arrays of dtype {arr.dtype} cannot be serialised")
    data = wire.tobytes()  # C order whatever the array's layout
    payload = _PACKERS.packer.pack([dtype_str, list(arr.shape), data])
    return msgpack.ExtType(_EXT_NDARRAY, payload)


#: Exact types that encode as they are (subclasses, numpy scalars among them, take the checks
#: below): most of a state's tree, looked up once instead of walking the isinstance checks.
_AS_IS = frozenset([type(None), bool, str, bytes, int, float])


class Canonical:
    """A subtree already in the form :func:`encode` packs (see :func:`canonical_envelope`):
    passed through as it is, without a second walk."""

    __slots__ = ("tree",)

    def __init__(self, tree: Any) -> None:
        self.tree = tree


def canonical(obj: Any) -> Any:
    """``obj`` in the form :func:`encode` packs (maps' keys sorted, arrays as extension
    values), to build a larger tree of from many pieces (:func:`canonical_envelope`)."""
    return _canonical(obj)


def canonical_array(arr: np.ndarray) -> Any:
    """:func:`canonical` of one array."""
    return _pack_array(arr)


def canonical_singles(values: np.ndarray, shape: tuple[int, ...]) -> list[Any]:
    """:func:`canonical_array` of each element of ``values`` (1-D) as an array of ``shape``
    (one element: ``(1,)``, ``(1, 1)``, ...), for a wire form holding many one-element arrays
    (a ``Sliced`` state of 100,000 slices of one-value moments): the payloads differ only in
    their last bytes, the element's, so one is packed and the others copy its head. Same
    bytes as packing each."""
    assert math.prod(shape) == 1 and values.ndim == 1
    return canonical_rows(values.reshape(-1, 1), shape)


def canonical_rows(values: np.ndarray, shape: tuple[int, ...] | None = None) -> list[Any]:
    """:func:`canonical_array` of each row of ``values`` (2-D, C-ordered rows) as an array of
    ``shape`` (default: one column, ``(row length, 1)``), as :func:`canonical_singles` makes
    them: one row packed, the others copying its head. Same bytes as packing each."""
    assert values.ndim == 2
    if shape is None:
        shape = (values.shape[1], 1)
    assert math.prod(shape) == values.shape[1]
    if not len(values):
        return []
    values = np.ascontiguousarray(values)
    first = _pack_array(values[0].reshape(shape)).data
    width = values.dtype.itemsize * values.shape[1]
    if values.dtype.str not in _ALLOWED_DTYPES or first[-width:] != values[0].tobytes():
        return [_pack_array(v.reshape(shape)) for v in values]  # (a layout this does not know)
    head = first[:-width]
    data = values.tobytes()
    # ExtType is a namedtuple whose __new__ checks its fields (1.7 us each, half the cost of
    # 100,000 slices' bytes): these are checked above, so the tuple is made directly.
    make, ext = tuple.__new__, msgpack.ExtType
    return [
        make(ext, (_EXT_NDARRAY, head + data[i : i + width])) for i in range(0, len(data), width)
    ]


def canonical_envelope(class_name: str, schema: int, config: Any, state: Any) -> Canonical:
    """:func:`envelope_tree` of a ``config`` and ``state`` already made :func:`canonical`,
    itself canonical: a wire form holding thousands of envelopes (a ``Sliced`` state of many
    slices) builds them without walking each one again. Same bytes."""
    return Canonical(
        {
            "class": class_name,
            "config": config,
            "format": FORMAT_MAGIC,
            "schema": schema,
            "state": state,
            "version": FORMAT_VERSION,
        }
    )


def _canonical(obj: Any, depth: int = 0) -> Any:
    if depth > _MAX_DEPTH:
        raise TypeError("value nested too deeply to serialise")
    kind = type(obj)
    if kind in _AS_IS:
        return obj
    if kind is Canonical:
        return obj.tree
    if kind is dict and all(type(k) is str for k in obj):
        # String keys only (every envelope and state field map): their order by _sort_key is
        # their plain order, and a dict's keys never tie.
        return {k: _canonical(obj[k], depth + 1) for k in sorted(obj)}
    if kind is list:
        return [_canonical(v, depth + 1) for v in obj]
    if obj is None or isinstance(obj, (bool, str, bytes)):
        return obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return _pack_array(obj)
    if isinstance(obj, (list, tuple)):
        return [_canonical(v, depth + 1) for v in obj]
    if isinstance(obj, dict):
        items = sorted(obj.items(), key=lambda kv: _sort_key(kv[0]))
        return {_canonical(k, depth + 1): _canonical(v, depth + 1) for k, v in items}
    raise TypeError(f"values of type {type(obj).__name__} cannot be serialised")


def tree_bytes(tree: Any) -> bytes:
    """msgpack bytes of a decoded tree as it is (not canonical: maps keep their order), equal
    for two trees only if they hold the same types and values in the same order (floats by
    their bits). ``TypeError`` for an array."""
    out: bytes = _PACKERS.packer.pack(tree)
    return out


def encode(obj: Any) -> bytes:
    """Canonical msgpack bytes of a tree of plain values and numpy arrays."""
    out: bytes = msgpack.packb(_canonical(obj), use_bin_type=True, use_single_float=False)
    return out


_unpackb, _ndarray = msgpack.unpackb, np.ndarray


def _unpack_array(payload: bytes) -> np.ndarray:
    # (About 1 µs per small array: a ``Sliced`` state of 100,000 slices holds 500,000 of them.)
    head = _unpackb(payload, raw=False, use_list=True, strict_map_key=True)
    if not (type(head) is list and len(head) == 3):
        raise StateDecodeError("array header is not [dtype, shape, data]")
    dtype_str, shape, data = head
    found = _READ_AS.get(dtype_str) if type(dtype_str) is str else None
    if found is None:
        raise StateDecodeError(f"array dtype {dtype_str!r} is not allowed")
    if type(shape) is not list or len(shape) > _MAX_NDIM:
        raise StateDecodeError("array shape is not a list of at most 8 sizes")
    size = 1
    for s in shape:
        if type(s) is not int or s < 0:
            raise StateDecodeError("array shape holds a negative or non-integer size")
        size *= s
    if type(data) is not bytes:
        raise StateDecodeError("array data is not bytes")
    dtype, native = found
    # Python ints cannot overflow, so a forged huge shape fails here before any allocation.
    if size * dtype.itemsize != len(data):
        raise StateDecodeError(
            f"array of shape {tuple(shape)} and dtype {dtype_str} needs "
            f"{size * dtype.itemsize} bytes, the blob has {len(data)}"
        )
    # A writable copy in native byte order: the bytes copied into a bytearray that the array
    # wraps (a third of ``frombuffer(...).reshape(...).copy()``'s time for small arrays).
    arr: np.ndarray = _ndarray(shape, dtype, bytearray(data))
    return arr if native else arr.astype(dtype.newbyteorder("="))


def _ext_hook(code: int, payload: bytes) -> Any:
    if code != _EXT_NDARRAY:
        raise StateDecodeError(f"unknown msgpack extension type {code}")
    return _unpack_array(payload)


def decode(blob: bytes) -> Any:
    """Inverse of :func:`encode`; raises :class:`StateDecodeError` on anything malformed."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise StateDecodeError(f"expected bytes, got {type(blob).__name__}")
    try:
        return msgpack.unpackb(
            bytes(blob),
            raw=False,
            use_list=True,
            strict_map_key=False,
            ext_hook=_ext_hook,
        )
    except StateDecodeError:
        raise
    except Exception as exc:  # msgpack raises several unrelated types; the contract wants one
        raise StateDecodeError(f"not a valid msgpack state: {type(exc).__name__}: {exc}") from exc


def envelope_tree(
    class_name: str, schema: int, config: dict[str, Any], state: Any
) -> dict[str, Any]:
    """The envelope of one serialised metric as a tree (``docs/format.md``)."""
    return {
        "format": FORMAT_MAGIC,
        "version": FORMAT_VERSION,
        "class": class_name,
        "schema": schema,
        "config": config,
        "state": state,
    }


def pack_envelope(class_name: str, schema: int, config: dict[str, Any], state: Any) -> bytes:
    """Bytes of one serialised metric: see ``docs/format.md``."""
    return encode(envelope_tree(class_name, schema, config, state))


def check_envelope(tree: Any) -> tuple[str, int, dict[str, Any], Any]:
    """Validate a decoded envelope tree and return ``(class, schema, config, state)``."""
    if not isinstance(tree, dict):
        raise StateDecodeError("a state blob must hold a map at its top level")
    if tree.get("format") != FORMAT_MAGIC:
        raise StateDecodeError("not a streammetrics state (the format marker is missing)")
    version = tree.get("version")
    if type(version) is not int or not 1 <= version <= FORMAT_VERSION:
        raise StateDecodeError(
            f"state format version {version!r} is not supported (this reader knows 1 to "
            f"{FORMAT_VERSION}); upgrade streammetrics to read it"
        )
    extra = set(tree) - {"format", "version", "class", "schema", "config", "state"}
    if extra:
        raise StateDecodeError(f"unexpected envelope fields {sorted(map(str, extra))}")
    name, schema, config = tree.get("class"), tree.get("schema"), tree.get("config")
    if not isinstance(name, str):
        raise StateDecodeError("the envelope's class name is missing")
    if type(schema) is not int or schema < 1:
        raise StateDecodeError("the envelope's schema number is missing or invalid")
    if not isinstance(config, dict) or not all(isinstance(k, str) for k in config):
        raise StateDecodeError("the envelope's config is not a map of names to values")
    if "state" not in tree:
        raise StateDecodeError("the envelope has no state")
    return name, schema, config, tree["state"]


def unpack_envelope(blob: bytes) -> tuple[str, int, dict[str, Any], Any]:
    """Decode and validate an envelope: ``(class, schema, config, state)``."""
    return check_envelope(decode(blob))


# -- the count bound ---------------------------------------------------------------------------


class CountOverflowError(InputError, IncompatibleStateError):
    """An update or merge would take a count total past :data:`COUNT_LIMIT`.

    It is both an :class:`InputError` (what ``update`` raises for input it refuses) and an
    :class:`IncompatibleStateError` (what ``merge`` raises for states it refuses), so a caller
    catching either sees it; the state is left exactly as it was.
    """


def typed_array(wire: Any, what: str, dtype: Any, ndim: int) -> np.ndarray:
    """Decoding: ``wire[what]`` if it is an ``ndim``-D array of ``dtype``, else ``ValueError``
    naming it."""
    arr = wire[what]
    if not isinstance(arr, np.ndarray) or arr.dtype != dtype or arr.ndim != ndim:
        raise ValueError(f"{what} must be a {ndim}-D {np.dtype(dtype).name} array")
    return arr


def count_total(arr: np.ndarray) -> float:
    """The sum of a count or weight array in float64 (no int64 wrap; exact below 2**53)."""
    # ``np.add.reduce`` rather than ``np.sum``: the same sum without the Python wrapper, which
    # is most of the cost for the small arrays a slice or a window decodes by the thousand.
    return float(np.add.reduce(arr, axis=None, dtype=np.float64)) if arr.size else 0.0


def held_total(arr: np.ndarray) -> float:
    """:func:`count_total` of a state already checked (decoded, updated or merged within the
    bounds): integer counts then total at most 2**53, so their own int64 sum is exact and
    several times cheaper than a float64 one."""
    return float(arr.sum()) if arr.size else 0.0


def _limit(kind: str) -> float:
    # Integer counts stop at 2**53, float64 weights at 2**100.
    return COUNT_LIMIT if kind in "iub" else WEIGHT_LIMIT


def check_sum(what: str, kind: str, *totals: float) -> None:
    """Raise :class:`CountOverflowError` if the totals together pass the bound for arrays of
    dtype kind ``kind`` (:data:`COUNT_LIMIT` for integer counts, :data:`WEIGHT_LIMIT` for
    float64 weights). One float addition per part: callers pass totals they already hold or
    that cost one vectorised reduction. Integer totals are added as integers: in float64,
    ``2**53 + 1`` rounds back to ``2**53``, and one-row updates would pass the bound one by one."""
    together: float = 0
    if kind in "iub":
        for total in totals:
            if not total <= COUNT_LIMIT:  # (nan and infinities too)
                together = math.inf
                break
            together += int(total)  # exact: each total is an integer within the bound
    else:
        together = sum(totals)
    if not together <= _limit(kind):
        raise CountOverflowError(
            f"{what}: the counts would total {together:.6g}, past the bound of "
            f"{'2**53' if kind in 'iub' else '2**100 for weights'}; refused, the state is unchanged"
        )


#: Arrays of at most this many counts are checked as Python values (:func:`check_counts`): a
#: numpy reduction's fixed cost is a microsecond, a small state's whole check a few.
SMALL_CHECK = 64
#: The bound of float64 weights as :func:`check_counts` applies it (see there).
_WEIGHT_CHECK_LIMIT = WEIGHT_LIMIT * (1.0 + 1e-9)


def check_counts(what: str, *arrays: np.ndarray) -> list[float]:
    """Decoding: raise ``ValueError`` unless the arrays hold finite, non-negative counts whose
    total stays within the bound (one min and one sum per array). Returns each array's
    :func:`count_total`, which the check computed (integer counts: their exact total)."""
    totals = []
    for arr in arrays:
        size = arr.size
        if not size:
            totals.append(0.0)
            continue
        kind = arr.dtype.kind
        if size <= SMALL_CHECK and kind in "iuf":
            totals.append(_check_small_counts(what, arr, kind))
            continue
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            raise ValueError(f"{what}: counts must be finite")
        if arr.min() < 0:
            raise ValueError(f"{what}: counts must be non-negative")
        # (Float weights: the update checked its sum of the parts' totals; summed cell by
        # cell here they may round a few ulps higher, and 0.8.14 refused such a stream's bytes.)
        limit = _limit(arr.dtype.kind) * (1.0 + 1e-9 * (arr.dtype.kind == "f"))
        total = count_total(arr)
        # Integer counts: their float total rounds 2**53 + 1 down to the bound; within twice
        # the bound the int64 sum cannot wrap, and is exact.
        if arr.dtype.kind in "iub" and total <= 2 * limit:
            total = int(arr.sum(dtype=np.int64))
        if not total <= limit:
            raise ValueError(f"{what}: counts total more than 2**53 (weights: 2**100)")
        # (Within the bound an integer total is exactly the float64 sum count_total gives.)
        totals.append(float(total))
    return totals


def all_finite(arr: np.ndarray) -> bool:
    """Decoding: whether every value of a numeric array is finite (``np.isfinite(arr).all()``),
    read as Python numbers when the array is small."""
    if arr.size <= SMALL_CHECK:
        return all(map(math.isfinite, arr.ravel().tolist()))
    return bool(np.isfinite(arr).all())


def least(arr: np.ndarray) -> Any:
    """Decoding: the smallest value of a non-empty array holding no nan (``arr.min()``), read
    as Python numbers when the array is small."""
    return min(arr.ravel().tolist()) if arr.size <= SMALL_CHECK else arr.min()


def _check_small_counts(what: str, arr: np.ndarray, kind: str) -> float:
    """:func:`check_counts` of one small integer or float array, its values as Python numbers:
    the same checks in the same order, so the same arrays refused with the same messages.
    Integers: the exact sum is compared with the bound (what the float total, then the int64
    sum within twice the bound, decide there). Floats: finite and non-negative read off the
    values, the total numpy's own float64 sum, as there (its rounding is the bound's)."""
    values = arr.ravel().tolist()
    if kind == "f":
        if not all(map(math.isfinite, values)):
            raise ValueError(f"{what}: counts must be finite")
        if min(values) < 0:
            raise ValueError(f"{what}: counts must be non-negative")
        total = count_total(arr)
        if not total <= _WEIGHT_CHECK_LIMIT:
            raise ValueError(f"{what}: counts total more than 2**53 (weights: 2**100)")
        return total
    if min(values) < 0:
        raise ValueError(f"{what}: counts must be non-negative")
    exact = sum(values)
    if not exact <= COUNT_LIMIT:
        raise ValueError(f"{what}: counts total more than 2**53 (weights: 2**100)")
    return float(exact)
