"""Time windows and exponential decay around any metric.

Three wrappers, each itself a :class:`~streammetrics.base.Metric` (it merges, serialises and
compares like any other), each holding sub-states of the metric it wraps:

* :class:`TumblingWindows`: one sub-state per fixed-width time window, ``{window_start: value}``;
* :class:`SlidingWindow`: a ring of ``slots`` sub-states; the value over the last ``width``;
* :class:`Decayed`: one sub-state whose weights fade with a half-life (forward decay).

Their ``update`` takes ``timestamps=`` beside the wrapped metric's own columns. Timestamps are
numbers (any unit; ``width`` and ``half_life`` are in the same unit) or ``datetime64`` values
(read as seconds since the Unix epoch; then ``width`` and ``half_life`` are seconds, and a
:class:`datetime.timedelta` is accepted for them). Rows are routed to windows with numpy: one
sort of the batch's window keys, then one update of the wrapped metric per window touched, never
one per row.

The wrapped metric's class and configuration are part of the wrapper's configuration (two
wrappers merge only when they wrap the same configuration); its sub-states travel as nested
envelopes and are decoded, and checked, by the registry like any top-level state.
"""

from __future__ import annotations

import datetime as _dt
import math
from operator import itemgetter
from typing import Any

import numpy as np

from . import _codec
from ._inputs import as_array, as_weights, config_int
from ._loading import _from_tree
from .base import (
    _MERGES,
    Metric,
    StateBlock,
    metric_from_spec,
    metric_spec,
    registered_metrics,
)
from .errors import InputError

__all__ = ["Decayed", "SlidingWindow", "TumblingWindows"]

# Forward decay renormalises on a fixed grid of epochs of this many half-lives, so that the scale
# reference depends only on the latest timestamp (not on arrival order) and every rescaling is
# an exact power of two. Fresh rows weigh at most 2**64, far from float64 overflow.
_EPOCH_HALVINGS = 64
_MAX_KEY = 2**62


# -- shared helpers ----------------------------------------------------------------------------


def _template(metric: Any) -> Metric:
    if not isinstance(metric, Metric):
        raise InputError(f"metric: expected a streammetrics metric, got {metric!r}")
    if registered_metrics().get(type(metric)._wire_name) is not type(metric):
        raise InputError(
            f"metric: {type(metric).__name__} is not a registered metric class, so its "
            "windows could not be read back"
        )
    return metric.copy().reset()


def _positive(value: Any, name: str) -> int | float:
    if isinstance(value, _dt.timedelta):
        value = value.total_seconds()
    elif isinstance(value, np.timedelta64):
        value = value / np.timedelta64(1, "s")
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{name}: expected a positive number or a timedelta, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"{name}: must be positive and finite, got {value!r}")
    return value


def _number(value: Any, name: str) -> int | float:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{name}: expected a finite number, got {value!r}")
    return value


def _times(timestamps: Any) -> np.ndarray:
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
        return arr.astype("datetime64[ns]").astype(np.int64) / 1e9
    if kind in "iu":
        if kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
            raise InputError("timestamps: values above 2**63 - 1 are not supported")
        return arr.astype(np.int64, copy=False)
    if kind != "f":
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise InputError(
                f"timestamps: expected numbers or datetime64, got {arr.dtype}"
            ) from exc
    arr = arr.astype(np.float64, copy=False)
    if arr.size and not np.isfinite(arr).all():
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise InputError(f"timestamps: must be finite; found {arr[bad]} at {bad}")
    return arr


_SCALAR_TIMES = (int, float, np.integer, np.floating)


def _one_row_key(
    args: tuple[Any, ...], kwargs: dict[str, Any], timestamps: Any, unit: Any, origin: Any
) -> int | None:
    """The period key of a one-sample update given as scalars (a request), or None.

    The same key as ``_keys(_times([timestamps]), unit, origin)``, computed without arrays; None
    sends the call down the batch path (which also reports what is wrong with it).
    """
    if isinstance(timestamps, bool) or not isinstance(timestamps, _SCALAR_TIMES):
        return None
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
        if isinstance(unit, int) and isinstance(origin, int):
            return (t - origin) // unit
        # As numpy reads an int64 column: int64 minus an int origin stays int64, minus a float
        # origin becomes float64 first.
        diff = float(t - origin) if isinstance(origin, int) else float(t) - origin
    elif math.isfinite(t):
        diff = t - origin
    else:
        return None
    q = math.floor(diff / unit)
    return q if abs(q) < _MAX_KEY else None


def _settle(metrics: Any) -> None:
    """Fold the rows still pending in ``metrics`` (windows that stopped receiving rows), so
    that each window holds its state alone, not up to a buffer of rows besides."""
    for metric in metrics:
        if metric._pending is not None:
            metric._fold_locked()


def _keys(t: np.ndarray, unit: int | float, origin: int | float) -> np.ndarray:
    """The index of the period of length ``unit`` (from ``origin``) each time falls in."""
    if t.dtype.kind == "i" and isinstance(unit, int) and isinstance(origin, int):
        return (t - origin) // unit
    q = np.floor((t - origin) / unit)
    if q.size and np.abs(q).max() >= _MAX_KEY:
        raise InputError("timestamps: too far from origin for this width")
    return q.astype(np.int64)


class _Rows:
    """The update arguments of one batch, split into row columns and values passed unchanged.

    A value with a length (array, list, Series, tensor) is a row column and must have one entry
    per timestamp; anything else (``None``, a scalar) goes unchanged to every sub-update.
    """

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any], n: int) -> None:
        self.args = [self._column(a, n, f"argument {i + 1}") for i, a in enumerate(args)]
        self.kwargs = {k: self._column(v, n, k) for k, v in kwargs.items()}

    @staticmethod
    def _column(x: Any, n: int, name: str) -> tuple[bool, Any]:
        if x is None or isinstance(x, (str, bytes, dict)) or not hasattr(x, "__len__"):
            return False, x
        if isinstance(x, (list, tuple)):
            try:
                arr = np.asarray(x)
            except (TypeError, ValueError):
                arr = None  # ragged: kept as a list (e.g. lists of references)
            # Ragged or nested text (lists of references) stays a list of rows: numpy would
            # make a 2-D string array of equal-length reference lists.
            nested_text = arr is not None and arr.ndim > 1 and arr.dtype.kind in "US"
            if arr is None or arr.dtype == object or arr.ndim == 0 or nested_text:
                if len(x) != n:
                    raise InputError(f"{name}: has {len(x)} rows, timestamps has {n}")
                return True, list(x)
        else:
            arr = as_array(x, name)
        if len(arr) != n:
            raise InputError(f"{name}: has {len(arr)} rows, timestamps has {n}")
        return True, arr

    @staticmethod
    def _take(col: tuple[bool, Any], idx: np.ndarray | None) -> Any:
        is_row, value = col
        if not is_row or idx is None:
            return value
        if isinstance(value, list):
            return [value[int(idx[0])]] if len(idx) == 1 else list(itemgetter(*idx)(value))
        return value[idx]

    def feed(self, metric: Metric, idx: np.ndarray | None, **extra: Any) -> Metric:
        """Update ``metric`` with the rows ``idx`` (all rows when ``None``)."""
        args = [self._take(c, idx) for c in self.args]
        kwargs = {k: self._take(c, idx) for k, c in self.kwargs.items()}
        kwargs.update(extra)
        out: Metric = metric.update(*args, **kwargs)  # type: ignore[attr-defined]
        return out


def _groups(keys: np.ndarray) -> list[tuple[int, np.ndarray | None]]:
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


def _load_windows(wire: Any, template: Metric, what: str) -> dict[int, Metric]:
    if not isinstance(wire, dict):
        raise ValueError(f"{what} must be a map of window keys to states")
    out: dict[int, Metric] = {}
    for key, env in wire.items():
        if type(key) is not int or abs(key) >= _MAX_KEY:
            raise ValueError(f"{what}: window key {key!r} is not an integer in range")
        metric = _from_tree(_codec.check_envelope(env), expect=template)
        if metric.count <= 0:
            raise ValueError(f"{what}: window {key} is empty (empty windows are not stored)")
        out[key] = metric
    return out


def _merged(template: Metric, metrics: list[Metric]) -> Metric:
    return template.copy().merge(*metrics)


class _Wrapper(Metric, register=False):
    """What the three wrappers share: the wrapped metric as config, rebuilt on decode."""

    _template: Metric

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
        inner = f"{type(self._template).__name__}({_config_args(self._template)})"
        return f"{type(self).__name__}({inner}, {rest}, count={self._count})"


def _config_args(metric: Metric) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in metric._config.items())


# -- tumbling windows --------------------------------------------------------------------------


class TumblingWindows(_Wrapper):
    """One copy of a metric per fixed-width time window: ``{window_start: value}``.

    A row with time ``t`` belongs to the window starting at ``origin + k * width`` with
    ``k = floor((t - origin) / width)``. Late and out-of-order rows go to their own window,
    whenever they arrive. With ``retention=N`` at most the ``N`` newest windows stay open; older
    ones are closed and kept aside until :meth:`pop_closed` hands them out (for persisting);
    rows arriving for a closed window go to a closed piece of that window, so nothing is ever
    lost. ``compute()`` covers the open windows.

    Exact whenever the wrapped metric is: each window's state is the state the wrapped metric
    would have over that window's rows, and the split of open and closed windows depends only on
    the set of windows seen, so any split of a stream, merged in any order, gives the same
    state (windows merge by start time).

    Memory: the wrapped metric's state per open and per unpopped closed window.
    ``update``: O(n log n) to group a batch by window (O(n) when it falls in one window), plus
    one update of the wrapped metric per window touched. ``merge``: one merge per window.
    ``compute``: one compute per open window.

    Parameters
    ----------
    metric : Metric
        The metric to window (its configuration is kept; any data it holds is not).
    width : number or timedelta
        The window length, in the unit of the timestamps.
    retention : int, optional
        How many of the newest windows stay open (``None``: all).
    origin : number
        Where window boundaries start (``0``: aligned to the epoch).

    Examples
    --------
    >>> import streammetrics as sm
    >>> from streammetrics.windows import TumblingWindows
    >>> w = TumblingWindows(sm.Accuracy(), width=60)
    >>> w.update([1, 0, 1, 1], [1, 1, 1, 0], timestamps=[5, 70, 30, 65]).compute()
    {0: 1.0, 60: 0.0}
    """

    def __init__(
        self,
        metric: Metric,
        width: Any,
        retention: int | None = None,
        origin: int | float = 0,
    ) -> None:
        super().__init__()
        self._template = _template(metric)
        width = _positive(width, "width")
        origin = _number(origin, "origin")
        if retention is not None:
            retention = config_int(retention, "retention")
        self._add_config(
            metric=metric_spec(self._template), width=width, retention=retention, origin=origin
        )
        self._open: dict[int, Metric] = {}
        self._closed: dict[int, Metric] = {}

    # -- views ---------------------------------------------------------------------------------

    def _start(self, key: int) -> int | float:
        start: int | float = self._config["origin"] + key * self._config["width"]
        return start

    @property
    def windows(self) -> dict[int | float, Metric]:
        """Copies of the open windows' metrics, by window start."""
        return {self._start(k): m.copy() for k, m in sorted(self._open.items())}

    @property
    def closed(self) -> list[int | float]:
        """Starts of the closed windows waiting for :meth:`pop_closed`."""
        return [self._start(k) for k in sorted(self._closed)]

    def pop_closed(self) -> dict[int | float, Metric]:
        """Take out the closed windows (``{window_start: metric}``), e.g. to persist them.

        They leave the state, and ``count`` drops by their rows.
        """
        out = {self._start(k): m for k, m in sorted(self._closed.items())}
        self._count -= sum(m.count for m in self._closed.values())
        self._closed = {}
        return out

    # -- update, merge, compute ----------------------------------------------------------------

    def update(self, *args: Any, timestamps: Any = None, **kwargs: Any) -> TumblingWindows:
        """Route each row to its window; the wrapped metric's columns go in ``args``/``kwargs``.

        All or nothing: every window's update is done on a copy before any is committed (one
        sample given as scalars goes straight to its window's metric, whose update is atomic).
        """
        key = _one_row_key(args, kwargs, timestamps, self._config["width"], self._config["origin"])
        if key is not None:
            metric = self._open.get(key)
            if metric is not None:
                metric.update(*args, **kwargs)  # type: ignore[attr-defined]
            else:
                opened = self._template.copy().update(*args, **kwargs)  # type: ignore[attr-defined]
                _settle(self._open.values())
                self._open[key] = opened
                self._evict()
            return self._commit(1)
        t = _times(timestamps)
        n = len(t)
        rows = _Rows(args, kwargs, n)
        if n == 0:
            rows.feed(self._template.copy(), None)  # validates the (empty) columns
            return self
        fresh: dict[int, Metric] = {}
        for key, idx in _groups(_keys(t, self._config["width"], self._config["origin"])):
            base = self._open.get(key)
            fresh[key] = rows.feed(base.copy() if base is not None else self._template.copy(), idx)
        self._open.update(fresh)
        self._evict()
        return self._commit(n)

    def _evict(self) -> None:
        limit = self._config["retention"]
        if limit is None or len(self._open) <= limit:
            return
        for key in sorted(self._open)[: len(self._open) - limit]:
            metric = self._open.pop(key)
            if key in self._closed:
                self._closed[key].merge(metric)
            else:
                self._closed[key] = metric

    def _merge_from(self, other: Any) -> None:
        for mine, theirs in ((self._open, other._open), (self._closed, other._closed)):
            for key, metric in theirs.items():
                if key in mine:
                    mine[key].merge(metric)
                else:
                    mine[key] = metric.copy()
        # A key closed on one side is older than that side's `retention` open windows, so it can
        # only be open on the other side to be evicted again here: keys never sit in both.
        for key in [k for k in self._open if k in self._closed]:
            self._closed[key].merge(self._open.pop(key))
        self._evict()

    def _compute(self) -> dict[int | float, Any]:
        return {self._start(k): m.compute() for k, m in sorted(self._open.items())}

    def _empty_result(self) -> dict[int | float, Any]:
        return {}

    def reset(self) -> TumblingWindows:
        self._open, self._closed, self._count = {}, {}, 0
        return self

    # -- wire ----------------------------------------------------------------------------------

    def _state_wire(self) -> dict[str, Any]:
        return {
            "count": self._count,
            "open": {k: m._envelope() for k, m in self._open.items()},
            "closed": {k: m._envelope() for k, m in self._closed.items()},
        }

    def _load_state(self, state: Any) -> None:
        if not isinstance(state, dict) or set(state) != {"count", "open", "closed"}:
            raise _decode_error(self, "the state must hold exactly count, open and closed")
        try:
            opened = _load_windows(state["open"], self._template, "open windows")
            closed = _load_windows(state["closed"], self._template, "closed windows")
            count = state["count"]
            if type(count) is not int or count != sum(
                m.count for m in [*opened.values(), *closed.values()]
            ):
                raise ValueError("count is not the sum of the windows' counts")
            limit = self._config["retention"]
            if limit is not None and len(opened) > limit:
                raise ValueError(f"{len(opened)} open windows, more than retention={limit}")
            if closed and (len(opened) != limit or max(closed) >= min(opened)):
                raise ValueError("closed windows must be older than a full set of open ones")
        except ValueError as exc:
            raise _decode_error(self, str(exc)) from exc
        self._open, self._closed, self._count = opened, closed, count


# -- sliding window ----------------------------------------------------------------------------


class SlidingWindow(_Wrapper):
    """A metric over the last ``width`` of time, kept as a ring of ``slots`` sub-states.

    Time is cut into slots of ``width / slots``; the window is the ``slots`` slots ending with
    the slot of the latest timestamp seen (the head), so it covers between
    ``width - width / slots`` and ``width`` of history: more slots, finer edges. ``compute()``
    merges the slots and computes the wrapped metric over them.

    Rows older than the ring (late on arrival, or aged out as the head moves on) are counted in
    :attr:`dropped`: ``count == window rows + dropped``, nothing is lost unnoticed. Which rows are
    in the window depends only on the latest timestamp, not on arrival order, so merges (which
    align slots by time, then age out what falls behind the newer head) are exact whenever the
    wrapped metric is, byte for byte for counting states.

    Memory: at most ``slots`` states of the wrapped metric. ``update``: O(n log n) to group a
    batch by slot, plus one update of the wrapped metric per slot touched (and one on a scratch
    copy to validate rows that arrive too late). ``merge``: one merge per slot. ``compute``: a
    merge of the slots and one compute.

    Examples
    --------
    >>> import streammetrics as sm
    >>> from streammetrics.windows import SlidingWindow
    >>> w = SlidingWindow(sm.Accuracy(), width=60, slots=6)
    >>> w.update([1, 1, 0], [1, 0, 0], timestamps=[0, 50, 65]).compute()
    0.5
    >>> w.dropped
    1
    """

    def __init__(
        self, metric: Metric, width: Any, slots: int = 10, origin: int | float = 0
    ) -> None:
        super().__init__()
        self._template = _template(metric)
        width = _positive(width, "width")
        origin = _number(origin, "origin")
        slots = config_int(slots, "slots", maximum=1_000_000)
        self._add_config(
            metric=metric_spec(self._template), width=width, slots=slots, origin=origin
        )
        self._unit: int | float = (
            width // slots if isinstance(width, int) and width % slots == 0 else width / slots
        )
        self._slots: dict[int, Metric] = {}
        self._head: int | None = None
        self._dropped = 0

    @property
    def dropped(self) -> int:
        """Rows seen that are older than the window (arrived late, or aged out)."""
        return self._dropped

    @property
    def span(self) -> tuple[float, float]:
        """``(start, end)`` of the time the window covers; ``(nan, nan)`` when empty."""
        if self._head is None:
            return (math.nan, math.nan)
        origin, slots = self._config["origin"], self._config["slots"]
        return (
            origin + (self._head - slots + 1) * self._unit,
            origin + (self._head + 1) * self._unit,
        )

    def window(self) -> Metric:
        """The wrapped metric over the rows in the window (a new metric)."""
        return _merged(self._template, [self._slots[k] for k in sorted(self._slots)])

    def update(self, *args: Any, timestamps: Any = None, **kwargs: Any) -> SlidingWindow:
        """Put each row in its slot; rows older than the ring are validated, then dropped."""
        key = _one_row_key(args, kwargs, timestamps, self._unit, self._config["origin"])
        if key is not None:
            head = key if self._head is None else max(self._head, key)
            metric = self._slots.get(key)
            if key <= head - self._config["slots"]:
                self._template.copy().update(*args, **kwargs)  # type: ignore[attr-defined]
                self._dropped += 1
            elif metric is not None:
                metric.update(*args, **kwargs)  # type: ignore[attr-defined]
            else:
                self._slots[key] = self._template.copy().update(*args, **kwargs)  # type: ignore[attr-defined]
            if head != self._head:
                self._head = head
                self._dropped += self._age_out()
                _settle(self._slots.values())
            return self._commit(1)
        t = _times(timestamps)
        n = len(t)
        rows = _Rows(args, kwargs, n)
        if n == 0:
            rows.feed(self._template.copy(), None)
            return self
        keys = _keys(t, self._unit, self._config["origin"])
        head = int(keys.max()) if self._head is None else max(self._head, int(keys.max()))
        floor = head - self._config["slots"]
        late = keys <= floor
        n_late = int(late.sum())
        if n_late:
            rows.feed(self._template.copy(), np.flatnonzero(late))  # refuse bad rows all the same
            idx_in = np.flatnonzero(~late)
            groups = [(k, idx_in if g is None else idx_in[g]) for k, g in _groups(keys[idx_in])]
        else:
            groups = _groups(keys)
        fresh = {}
        for key, idx in groups:
            base = self._slots.get(key)
            fresh[key] = rows.feed(base.copy() if base is not None else self._template.copy(), idx)
        self._slots.update(fresh)
        self._head = head
        self._dropped += n_late + self._age_out()
        return self._commit(n)

    def _age_out(self) -> int:
        assert self._head is not None
        floor = self._head - self._config["slots"]
        old = [k for k in self._slots if k <= floor]
        return sum(self._slots.pop(k).count for k in old)

    def _merge_from(self, other: Any) -> None:
        for key, metric in other._slots.items():
            if key in self._slots:
                self._slots[key].merge(metric)
            else:
                self._slots[key] = metric.copy()
        self._head = other._head if self._head is None else max(self._head, other._head)
        self._dropped += other._dropped + self._age_out()

    def _compute(self) -> Any:
        return self.window().compute()

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """The wrapped metric's interval over the rows in the window."""
        interval: tuple[float, float] = self.window().interval(level)
        return interval

    def _empty_result(self) -> Any:
        return self._template.compute()

    def reset(self) -> SlidingWindow:
        self._slots, self._head, self._dropped, self._count = {}, None, 0, 0
        return self

    def _state_wire(self) -> dict[str, Any]:
        return {
            "count": self._count,
            "head": self._head,
            "dropped": self._dropped,
            "slots": {k: m._envelope() for k, m in self._slots.items()},
        }

    def _load_state(self, state: Any) -> None:
        if not isinstance(state, dict) or set(state) != {"count", "head", "dropped", "slots"}:
            raise _decode_error(self, "the state must hold exactly count, head, dropped, slots")
        try:
            slots = _load_windows(state["slots"], self._template, "slots")
            count, head, dropped = state["count"], state["head"], state["dropped"]
            if type(dropped) is not int or dropped < 0:
                raise ValueError("dropped must be a non-negative integer")
            if type(count) is not int or count != dropped + sum(m.count for m in slots.values()):
                raise ValueError("count is not the window's rows plus the dropped rows")
            if count == 0:
                if head is not None:
                    raise ValueError("an empty window has no head")
            elif type(head) is not int or head not in slots:
                raise ValueError("the head must be the key of the newest slot")
            elif min(slots) <= head - self._config["slots"]:
                raise ValueError("a slot lies outside the ring")
        except ValueError as exc:
            raise _decode_error(self, str(exc)) from exc
        self._slots, self._head, self._dropped, self._count = slots, head, dropped, count


# -- exponential decay -------------------------------------------------------------------------


def _scale_plan(metric: Metric, path: str = "metric") -> None:
    """Raise ``InputError`` unless every state field of ``metric`` is a sum of weights."""
    cls = type(metric)
    name = cls.__name__
    for hook in ("_merge_from", "_state_wire", "_load_state"):
        if getattr(cls, hook) is not getattr(Metric, hook):
            raise InputError(
                f"{path}: {name} manages its own state ({hook}), so Decayed cannot scale it"
            )
    if not metric._fields:
        raise InputError(f"{path}: {name} declares no state that Decayed could scale")
    for field_name, field in metric._fields.items():
        default, where = field.default, f"{path}: {name}.{field_name}"
        if isinstance(default, Metric):
            _scale_plan(default, f"{path}.{field_name}")
        elif isinstance(default, StateBlock):
            if not default.scalable:
                raise InputError(
                    f"{where} is a {type(default).__name__}, which is not scalable; Decayed "
                    "works only on states made of counts or weights"
                )
        elif field.merge is not _MERGES["sum"]:
            raise InputError(
                f"{where} is not merged by adding (it is a maximum, minimum or custom merge), "
                "so it cannot be decayed; Decayed works only on states made of counts or weights"
            )
        elif isinstance(default, np.ndarray):
            if default.dtype != np.float64 and np.dtype(np.float64) not in field.dtypes:
                raise InputError(f"{where} holds {default.dtype} values that cannot become weights")
        elif not isinstance(default, float):
            raise InputError(
                f"{where} is a {type(default).__name__} sum, not a sum of weights; Decayed "
                "cannot scale it"
            )


def _scale(metric: Metric, factor: float) -> None:
    """Multiply every weight in ``metric``'s state by ``factor`` (in place)."""
    for field_name, field in metric._fields.items():
        value = getattr(metric, field_name)
        f = factor**field.power  # sums of squared weights scale by the square
        if isinstance(value, Metric):
            _scale(value, factor)
        elif isinstance(value, StateBlock):
            value.scale(factor)
        elif isinstance(value, np.ndarray):
            setattr(metric, field_name, value.astype(np.float64) * f)
        else:
            setattr(metric, field_name, float(value) * f)


class Decayed(_Wrapper):
    """A metric whose rows fade with age: a row ``half_life`` older than the newest weighs half.

    Each row is weighted ``w * 2**(-(T - t) / half_life)`` where ``t`` is its timestamp, ``T``
    the latest timestamp seen and ``w`` its ``sample_weight`` (1 by default). The wrapped metric
    must take ``sample_weight`` and keep a state made of sums of weights (counts, weighted counts
    or weighted sums; e.g. the confusion-matrix metrics, ``TopKAccuracy``, score histograms);
    others (maxima, samples, custom merges) are refused with an ``InputError``.

    Implementation: forward decay (Cormode, Shkapenyuk, Srivastava and Xu, "Forward decay: a
    practical time decay model for streaming systems", ICDE 2009). Rows are added with the
    growing weight ``2**((t - ref) / half_life)`` instead of shrinking every stored weight at
    each step; the reference ``ref`` moves forward on a fixed grid of 64 half-lives, and then the
    whole state is multiplied by an exact power of two, so weights never overflow and merges of
    states at different references are exact rescalings. Rows more than about 1,000 half-lives
    older than the newest underflow to weight 0 (they still count in ``count``).

    Agrees with the closed form to float rounding (about 1e-15 relative); splits agree to
    rounding, not byte for byte (the state holds float sums). Memory: one state of the wrapped
    metric. ``update``: the wrapped metric's update plus O(n) for the weights (and a copy of the
    state when the reference moves). ``merge``: the wrapped metric's merge. ``compute``: a
    rescaled copy and the wrapped metric's compute.

    Examples
    --------
    >>> import streammetrics as sm
    >>> from streammetrics.windows import Decayed
    >>> d = Decayed(sm.Accuracy(), half_life=10)
    >>> d.update([1, 1], [1, 0], timestamps=[0, 10]).compute()  # the miss weighs twice the hit
    0.3333333333333333
    """

    def __init__(self, metric: Metric, half_life: Any) -> None:
        super().__init__()
        self._template = _template(metric)
        _scale_plan(self._template)
        import inspect

        params = inspect.signature(type(self._template).update).parameters  # type: ignore[attr-defined]
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        if "sample_weight" not in params and not takes_any:
            raise InputError(
                f"metric: {type(self._template).__name__}.update takes no sample_weight, so "
                "Decayed cannot weight its rows"
            )
        half_life = _positive(half_life, "half_life")
        self._add_config(metric=metric_spec(self._template), half_life=half_life)
        self._add_state("inner", self._template.copy(), merge=None)
        self._add_state("epoch", 0, merge=None)
        self._add_state("latest", -math.inf, merge=None)

    inner: Metric
    epoch: int
    latest: float

    def _ref(self, epoch: int) -> float:
        return float(epoch * _EPOCH_HALVINGS * self._config["half_life"])

    def _epoch_of(self, t: float) -> int:
        epoch: int = math.floor(t / (_EPOCH_HALVINGS * self._config["half_life"]))
        return epoch

    def update(
        self, *args: Any, timestamps: Any = None, sample_weight: Any = None, **kwargs: Any
    ) -> Decayed:
        """Add a batch, each row weighted by its age relative to the reference."""
        t = _times(timestamps).astype(np.float64)
        n = len(t)
        weights = as_weights(sample_weight, n)
        if n == 0:
            _Rows(args, kwargs, 0).feed(self._template.copy(), None)
            return self
        latest = max(self.latest, float(t.max()))
        epoch = self._epoch_of(latest)
        inner = self.inner
        if self._count and epoch != self.epoch:
            inner = inner.copy()
            _scale(inner, math.ldexp(1.0, -_EPOCH_HALVINGS * (epoch - self.epoch)))
        factor = np.exp2((t - self._ref(epoch)) / self._config["half_life"])
        if weights is not None:
            factor = factor * weights
        inner.update(*args, sample_weight=factor, **kwargs)  # type: ignore[attr-defined]
        return self._commit(n, inner=inner, epoch=epoch, latest=latest)

    def _merge_from(self, other: Any) -> None:
        theirs = other.inner.copy()
        if self._count == 0:
            self.inner, self.epoch, self.latest = theirs, other.epoch, other.latest
            return
        if other.epoch < self.epoch:
            _scale(theirs, math.ldexp(1.0, -_EPOCH_HALVINGS * (self.epoch - other.epoch)))
        elif other.epoch > self.epoch:
            _scale(self.inner, math.ldexp(1.0, -_EPOCH_HALVINGS * (other.epoch - self.epoch)))
            self.epoch = other.epoch
        self.inner.merge(theirs)
        self.latest = max(self.latest, other.latest)

    def at(self, now: Any = None) -> Metric:
        """The wrapped metric with every weight decayed to time ``now`` (default: the latest).

        Ratios (accuracy, AUC, ...) do not depend on ``now``; counts (a confusion matrix) do.
        """
        if now is None or self._count == 0:
            now_t = self.latest
        else:
            now_t = float(_times(np.asarray([now]))[0])
            if now_t < self.latest:
                raise InputError(f"now: {now!r} is before the latest timestamp {self.latest}")
        out = self.inner.copy()
        if self._count:
            _scale(
                out, float(np.exp2(-(now_t - self._ref(self.epoch)) / self._config["half_life"]))
            )
        return out

    def _compute(self) -> Any:
        return self.at().compute()

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """The wrapped metric's interval on the decayed weights (Kish's effective size of the
        weights is what shrinks as old rows fade)."""
        interval: tuple[float, float] = self.at().interval(level)
        return interval

    def _empty_result(self) -> Any:
        return self._template.compute()

    def _validate_state(self) -> None:
        if self.inner.count != self._count:
            raise ValueError("the wrapped state's count differs from the wrapper's")
        if self._count == 0:
            if self.epoch != 0 or self.latest != -math.inf:
                raise ValueError("an empty state has epoch 0 and no latest time")
        elif not math.isfinite(self.latest) or self._epoch_of(self.latest) != self.epoch:
            raise ValueError("the epoch does not match the latest timestamp")


def _decode_error(metric: Metric, message: str) -> Exception:
    from .errors import StateDecodeError

    return StateDecodeError(f"invalid {type(metric).__name__} state: {message}")
