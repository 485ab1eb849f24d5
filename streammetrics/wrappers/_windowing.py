"""What the time wrappers share: timestamps, window keys, the wrapped metric as config.

``TumblingWindows``, ``SlidingWindow`` and ``Decayed`` take ``timestamps=`` beside the wrapped
metric's own columns. Timestamps are numbers (any unit; ``width`` and ``half_life`` are in the
same unit) or ``datetime64`` values (read as seconds since the Unix epoch; then ``width`` and
``half_life`` are seconds, and a :class:`datetime.timedelta` is accepted for them). Rows are
routed to windows with numpy: one sort of the batch's window keys, then one update of the wrapped
metric per window touched, never one per row. The wrapped metric's class and configuration are
part of the wrapper's configuration (two wrappers merge only when they wrap the same
configuration); its sub-states travel as nested envelopes and are decoded, and checked, by the
registry like any top-level state.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from .. import _codec
from .._config_values import whole_if_integral
from .._inputs import as_array, not_real
from .._loading import _from_tree
from ..base import Metric, metric_from_spec
from ..errors import IncompatibleStateError, InputError, StateDecodeError
from ._rows import column_names

# Forward decay renormalises on a fixed grid of epochs of this many half-lives, so that the scale
# reference depends only on the latest timestamp (not on arrival order) and every rescaling is
# an exact power of two. The reference is the end of the latest row's epoch, so a stored row
# weighs at most its own weight (2**-64 to 1 times it while fresh): the wrapped metric's bounds on
# weights hold for the rows' own weights, whatever the time (0.8.9 took the epoch's start, and
# fresh rows weighed up to 2**64 times theirs: weights of 2**40 were refused near an epoch's end).
EPOCH_HALVINGS = 64
MAX_KEY = 2**62
#: The longest window width or half-life (seconds, or the timestamps' own unit: int64
#: nanoseconds give about 146 years).
MAX_SPAN = 2**62


def positive(value: Any, name: str) -> int | float:
    if isinstance(value, _dt.timedelta):
        value = value.total_seconds()
    elif isinstance(value, np.timedelta64):
        try:
            value = value / np.timedelta64(1, "s")
        except TypeError:  # months and years have no fixed length in seconds
            raise InputError(
                f"{name}: {value!r} has no fixed length (months, years); give it in days or "
                "smaller units"
            ) from None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{name}: expected a positive number or a timedelta, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"{name}: must be positive and finite, got {value!r}")
    if value > MAX_SPAN:  # (2**63 and over did not fit the int64 arithmetic on timestamps)
        raise InputError(f"{name}: at most 2**62 (in the timestamps' unit), got {value!r}")
    return whole_if_integral(value)


def number(value: Any, name: str) -> int | float:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{name}: expected a finite number, got {value!r}")
    if abs(value) > MAX_KEY:
        raise InputError(f"{name}: at most 2**62 in size, got {value!r}")
    return whole_if_integral(value)


def times(timestamps: Any) -> np.ndarray:
    """Timestamps as int64 or finite float64; ``datetime64`` becomes seconds since the epoch."""
    if timestamps is None:
        raise InputError("timestamps: required (one time per row, beside the metric's columns)")
    arr = as_array(timestamps, "timestamps")
    if arr.ndim != 1:
        raise InputError(f"timestamps: expected a 1-D array, got shape {arr.shape}")
    kind = arr.dtype.kind
    if kind == "M":
        if np.isnat(arr).any():
            raise InputError("timestamps: NaT is not a time")
        return _seconds(arr)
    if kind in "iu":
        if kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
            raise InputError("timestamps: values above 2**63 - 1 are not supported")
        return arr.astype(np.int64, copy=False)
    if not_real(arr, booleans=True):
        # Strings, even "5", are not times, nor is a complex number or a boolean.
        raise InputError(f"timestamps: expected numbers or datetime64, got {_what(arr)}")
    if kind != "f":
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError, OverflowError) as exc:
            raise InputError(
                f"timestamps: expected numbers or datetime64, got {_what(arr)}"
            ) from exc
    arr = arr.astype(np.float64, copy=False)
    if arr.size and not np.isfinite(arr).all():
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise InputError(f"timestamps: must be finite; found {arr[bad]} at {bad}")
    return arr


#: Seconds per datetime64 unit coarser than a second, and units per second of the finer ones.
_UNIT_SECONDS = {"W": 604_800, "D": 86_400, "h": 3_600, "m": 60, "s": 1}
_PER_SECOND = {"ms": 1e3, "us": 1e6, "ns": 1e9, "ps": 1e12, "fs": 1e15, "as": 1e18}


def _seconds(arr: np.ndarray) -> np.ndarray:
    """datetime64 times (no NaT) as float64 seconds since the epoch.

    Through nanoseconds where every time fits them (1678 to 2262: the result 0.8.7 gave);
    otherwise in the array's own unit. (0.8.7 always went through nanoseconds, which numpy
    wraps around silently: 9999-12-31 became a time in 1816.)"""
    ns = arr.astype("datetime64[ns]")
    if np.array_equal(ns.astype(arr.dtype), arr):
        out: np.ndarray = ns.astype(np.int64) / 1e9
        return out
    unit, step = np.datetime_data(arr.dtype)
    if unit in ("Y", "M"):  # calendar units: their days (numpy counts them exactly)
        arr, unit, step = arr.astype("datetime64[D]"), "D", 1
    counts = arr.astype(np.int64).astype(np.float64) * step
    if unit in _UNIT_SECONDS:
        return counts * _UNIT_SECONDS[unit]
    return counts / _PER_SECOND[unit]


def _what(arr: np.ndarray) -> str:
    """The dtype of refused timestamps, with a way out for datetime objects (time-zone aware
    pandas times arrive as such)."""
    if arr.dtype.kind == "O" and any(isinstance(v, _dt.datetime) for v in arr.tolist()):
        return (
            "datetime objects: give them as datetime64 in UTC, e.g. "
            "pd.to_datetime(t, utc=True).to_numpy('datetime64[ns]')"
        )
    return str(arr.dtype)


SCALAR_TIMES = (int, float, np.integer, np.floating)


def one_row_key(
    args: tuple[Any, ...], kwargs: dict[str, Any], timestamps: Any, unit: Any, origin: Any
) -> int | None:
    """The period key of a one-sample update given as scalars (a request), or None.

    The same key as ``keys_of(times([timestamps]), unit, origin)``, computed without arrays; None
    sends the call down the batch path (which also reports what is wrong with it).
    """
    if isinstance(timestamps, (bool, np.timedelta64)) or not isinstance(timestamps, SCALAR_TIMES):
        return None  # (a timedelta64 is an np.integer: the batch path refuses it by name)
    for v in args:
        if hasattr(v, "__len__") and not isinstance(v, str):
            return None
    for v in kwargs.values():
        if hasattr(v, "__len__") and not isinstance(v, str):
            return None
    t = timestamps.item() if isinstance(timestamps, np.generic) else timestamps
    if isinstance(t, int):
        if not -(2**63) <= t < 2**63 or not -(2**62) <= t - origin < 2**62:
            return None
        if isinstance(unit, (int, Fraction)) and isinstance(origin, int):
            return (t - origin) * unit.denominator // unit.numerator
        # As numpy reads an int64 column: int64 minus an int origin stays int64, minus a float
        # origin becomes float64 first.
        diff = float(t - origin) if isinstance(origin, int) else float(t) - origin
    elif math.isfinite(t):
        diff = t - origin
    else:
        return None
    num, den = _ratio(unit)  # (a fraction: scale, then divide, as keys_of)
    q = diff / num if den == 1 else diff * den / num
    # (past MAX_KEY, or infinite for a huge time over a tiny width: the batch path's refusal)
    return math.floor(q) if abs(q) < MAX_KEY else None


def keyed_row(
    window: Metric, unit: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[int | None, dict[str, Any]]:
    """``(key, rest)`` of a window's one-row call, ``timestamps`` among ``kwargs``: the
    period key of its time (:func:`one_row_key`; None when it is not one row of scalars)
    and the keywords the wrapped metric takes."""
    rest = dict(kwargs)
    timestamps = rest.pop("timestamps", None)
    return one_row_key(args, rest, timestamps, unit, window._config["origin"]), rest


def row_certain(
    window: Metric, periods: dict[int, Metric], unit: Any, args: tuple[Any, ...], kwargs: Any
) -> bool:
    """Whether a window's one-row ``update(*args, **kwargs)`` (``timestamps`` among
    ``kwargs``) certainly passes: the period of its time is held in ``periods`` (a sliding
    window's slots, the open tumbling windows), whose state certainly takes the row
    (``_row_certain``), and one more row stays within the count bound."""
    key, rest = keyed_row(window, unit, args, kwargs)
    metric = None if key is None else periods.get(key)
    if metric is None or window._count + 1 > _codec.COUNT_LIMIT:
        return False
    certain: bool = metric._row_certain(args, rest)
    return certain


def settle(metrics: Any) -> None:
    """Fold the rows still pending in ``metrics`` (windows that stopped receiving rows), so
    that each window holds its state alone, not up to a buffer of rows besides."""
    for metric in metrics:
        if metric._pending is not None:
            metric._fold_locked()


def _ratio(unit: int | float | Fraction) -> tuple[int | float, int]:
    """``(numerator, denominator)`` of a period: exact for an int or a Fraction (an integer
    width over slots that do not divide it), ``(unit, 1)`` for a float."""
    if isinstance(unit, (int, Fraction)):
        return unit.numerator, unit.denominator
    return unit, 1


def keys_of(t: np.ndarray, unit: int | float | Fraction, origin: int | float) -> np.ndarray:
    """The index of the period of length ``unit`` (from ``origin``) each time falls in.

    An integer or :class:`~fractions.Fraction` unit keys integer times exactly, and a fraction
    keys others by ``t * slots / width``: a time on a slot boundary falls in the slot it begins
    (``35 / (7 / 3)`` is 14.999999999999998)."""
    num, den = _ratio(unit)
    if t.dtype.kind == "i" and isinstance(num, int) and isinstance(origin, int):
        # As one_row_key: within 2**62 of the origin (the key is within the bound loads
        # checks); beyond, refused as the float path refuses.
        lo, hi = (int(t.min()) - origin, int(t.max()) - origin) if t.size else (0, 0)
        if not (-MAX_KEY <= lo and hi < MAX_KEY):
            raise InputError("timestamps: too far from origin for this width")
        if max(-lo, hi) * den < 2**62 and -(2**62) <= origin < 2**62:  # int64 cannot wrap
            return (t - origin) // num if den == 1 else (t - origin) * den // num
        return np.asarray((t.astype(object) - origin) * den // num, dtype=np.int64)
    diff = t - origin
    if t.dtype.kind == "i" and isinstance(origin, int) and t.size:
        # int64 minus an int origin wraps silently past 2**63 (a time near 2**63 before an
        # origin of -20 became a time near -2**63 in 0.8.11): the difference exactly, in
        # Python integers where it could wrap, then float64, as one_row_key takes it.
        safe = -(2**62) <= origin < 2**62 and -(2**62) <= int(t.min()) and int(t.max()) < 2**62
        diff = (diff if safe else t.astype(object) - origin).astype(np.float64)
    with np.errstate(over="ignore"):  # (inf for a huge time over a tiny width: refused below)
        q = np.floor(diff / num) if den == 1 else np.floor(diff * den / num)
    if q.size and not np.abs(q).max() < MAX_KEY:  # (nan too: never cast to int64)
        raise InputError("timestamps: too far from origin for this width")
    return q.astype(np.int64)


def window_groups(keys: np.ndarray) -> list[tuple[int, np.ndarray | None]]:
    """``[(key, row indices)]`` per distinct key, in key order; ``None`` means every row."""
    if len(keys) == 0:
        return []
    first = int(keys[0])
    if (keys == first).all():
        return [(first, None)]
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    uniq, starts = np.unique(sorted_keys, return_index=True)
    bounds = [*starts.tolist(), len(keys)]
    return [(int(k), order[bounds[i] : bounds[i + 1]]) for i, k in enumerate(uniq.tolist())]


def load_windows(wire: Any, template: Metric, what: str) -> dict[int, Metric]:
    if not isinstance(wire, dict):
        raise ValueError(f"{what} must be a map of window keys to states")
    out: dict[int, Metric] = {}
    for key, env in wire.items():
        if type(key) is not int or abs(key) >= MAX_KEY:
            raise ValueError(f"{what}: window key {key!r} is not an integer in range")
        metric = _from_tree(_codec.check_envelope(env), expect=template)
        if metric.count <= 0:
            raise ValueError(f"{what}: window {key} is empty (empty windows are not stored)")
        out[key] = metric
    return out


def merged(template: Metric, metrics: list[Metric]) -> Metric:
    return template.copy().merge(*metrics)


#: A changed slot state (``Sliced``) is checked slice by slice against its namesakes in the
#: other slots when that reads at most this many slice states of theirs (a packed table builds
#: each it is asked for); else only across slots (key kinds, ``max_slices``). A row given alone
#: is checked alone: one slice, read from each other slot that holds it.
PER_SLICE_CHECKS = 64


def check_joins(changed: list[Metric], others: list[Metric]) -> None:
    """``InputError`` unless the ``changed`` slot states merge with the window's ``others``.

    A sliding window's value is the merge of its slots, so rows one slot accepts may still be
    refused by the window: a third label of a binary metric, a str slice key where another
    slot holds int keys, more slices than ``max_slices`` between them. A plain metric refuses
    such rows at their call; so does the window, with the checks of a merge (nothing merged):
    pair by pair where a state is small, and across all slots at once
    (``_check_compatible_together``: label sets, slice key kinds and counts). A state made of
    one state per key (``Sliced``) is checked slice by slice against its namesakes when that
    reads at most ``PER_SLICE_CHECKS`` of their states, else across all slots only
    (``docs/streams.md``).
    """
    try:
        joins(changed, others)
    except IncompatibleStateError as exc:
        raise InputError(
            f"{_argument_of(str(exc), changed[0])}: the rows cannot join the window's other "
            f"slots ({exc}); refused, the state is unchanged"
        ) from None


def _argument_of(message: str, slot: Metric) -> str:
    """The argument a refused join is about, as the slot's own update would name it: the slice
    keys (``by``) for a key kind or ``max_slices``, else an argument the merge's message names
    (``y_true/y_pred: average='binary' needs two classes``), else the labels (the innermost
    metric's first two arguments) for a label kind; ``update`` when none can be told (0.8.12
    said ``update`` always, where the same row refused within one slot named its argument)."""
    keyword = getattr(type(slot), "own_keyword", None)
    if keyword is not None and ("slice key" in message or "max_slices" in message):
        return str(keyword)
    if message.startswith("sample_weight: "):  # (the slots' weights together, :func:`joins`)
        return "sample_weight"
    names = [n for n in column_names(slot) if n != "sample_weight"]
    for found in re.findall(r"([A-Za-z_]+(?:/[A-Za-z_]+)*): ", message):
        if all(part in names for part in found.split("/")):
            return str(found)
    if "labels" in message and len(names) >= 2:
        return f"{names[0]}/{names[1]}"
    return "update"


def joins(changed: list[Metric], others: list[Metric]) -> None:
    """:func:`check_joins` raising ``IncompatibleStateError`` (for merges of windows).

    ``others`` already join each other. Each changed slot is checked pair-wise against one
    slot before it (the kinds a pair check compares, labels' and keys', are equal or not, so a
    chain of pairs covers every pair), then every slot at once (what only the set tells: a
    binary metric's three labels, ``max_slices``): linear in the slots, not quadratic."""
    pool = list(others)
    for slot in changed:
        if pool:
            if slot._joins_pairwise:
                slot._check_compatible(pool[-1])
            elif (per_slice := getattr(slot, "_check_slices_join", None)) is not None:
                per_slice(pool, PER_SLICE_CHECKS)
        pool.append(slot)
    if len(pool) > 1:
        pool[0]._check_compatible_together(tuple(pool[1:]))
        # The window's value merges every slot: their weights together within the bound, as
        # a merge of many checks them (the chain of pairs compares neighbours only: a review
        # found two slots of 2**99.5 apart accepted, and the window's value and bytes refused).
        _codec.check_sum("sample_weight", "f", *(m._held_total() for m in pool))


def check_mergeable(groups: list[list[Metric]]) -> None:
    """``IncompatibleStateError`` unless the states of each group merge into one: the checks
    of a merge (pair by pair, and across the group at once), before a wrapper that merges
    its windows in place, one operand after another, changes any of them."""
    for group in groups:
        for i, metric in enumerate(group):
            for other in group[i + 1 :]:
                metric._check_compatible(other)
        group[0]._check_compatible_together(tuple(group[1:]))


class Wrapper(Metric, register=False):
    """What the three wrappers share: the wrapped metric as config, rebuilt on decode."""

    _template: Metric
    #: The keyword column ``update`` keeps for itself (see ``_rows.row_keywords``).
    own_keyword: ClassVar[str | None] = "timestamps"

    @classmethod
    def _from_config(cls, config: dict[str, Any]) -> Any:
        if not isinstance(config, dict) or "metric" not in config:
            raise ValueError(f"a {cls.__name__} config must name the wrapped metric")
        rest = {k: v for k, v in config.items() if k != "metric"}
        klass: Any = cls  # the subclasses take the wrapped metric first
        return klass(metric_from_spec(config["metric"]), **rest)

    @property
    def metric(self) -> Metric:
        """An empty copy of the wrapped metric (its class and configuration)."""
        return self._template.copy()

    def __repr__(self) -> str:
        rest = ", ".join(f"{k}={v!r}" for k, v in self._config.items() if k != "metric")
        inner = f"{type(self._template).__name__}({config_args(self._template)})"
        return f"{type(self).__name__}({inner}, {rest}, count={self._count})"


def config_args(metric: Metric) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in metric._config.items())


def decode_error(metric: Metric, message: str) -> Exception:
    return StateDecodeError(f"invalid {type(metric).__name__} state: {message}")
