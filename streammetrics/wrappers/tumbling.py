"""``TumblingWindows``: one copy of a metric per fixed-width time window."""

from __future__ import annotations

from typing import Any, ClassVar

from .._config_values import config_int
from ..base import Metric, metric_spec
from ..errors import IncompatibleStateError, InputError
from ._rows import Rows, column_names, template
from ._windowing import (
    Wrapper,
    check_mergeable,
    decode_error,
    keyed_row,
    keys_of,
    load_windows,
    number,
    one_row_key,
    positive,
    row_certain,
    settle,
    times,
    window_groups,
)

__all__ = ["TumblingWindows"]


class TumblingWindows(Wrapper):
    """One copy of a metric per fixed-width time window: ``{window_start: value}``.

    A row with time ``t`` belongs to the window starting at ``origin + k * width`` with
    ``k = floor((t - origin) / width)``. Late and out-of-order rows go to their own window,
    whenever they arrive. With ``retention=N`` at most the ``N`` newest windows stay open; older
    ones are closed and kept aside until :meth:`pop_closed` hands them out (for persisting);
    rows arriving for a closed window join it, and rows for a window already popped start a
    closed piece of that window, so nothing is ever lost. ``compute()`` covers the open
    windows.

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

    #: The leading options passed by position, as the API shows them
    #: (``TumblingWindows(metric, width)``; ``streammetrics._configs.keyword_config``).
    _positional_config: ClassVar[int] = 2

    #: A wrapper's values are its wrapped metric's (or a dict of them): no direction of its own.
    higher_is_better = None

    def __init__(
        self,
        metric: Metric,
        width: Any,
        retention: int | None = None,
        origin: int | float = 0,
    ) -> None:
        super().__init__()
        self._template = template(metric, "its windows", takes="timestamps")
        width = positive(width, "width")
        origin = number(origin, "origin")
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
        key = one_row_key(args, kwargs, timestamps, self._config["width"], self._config["origin"])
        if key is not None:
            self._check_room(1)  # (before the window's metric takes the row in place)
            metric = self._open.get(key)
            if metric is not None:
                metric.update(*args, **kwargs)  # type: ignore[attr-defined]
            elif key in self._closed:  # a late row joins its closed window (on a copy)
                joined = self._closed[key].copy().update(*args, **kwargs)  # type: ignore[attr-defined]
                self._closed = {**self._closed, key: joined}
            else:
                opened = self._template.copy().update(*args, **kwargs)  # type: ignore[attr-defined]
                self._open, self._closed = self._evicted({**self._open, key: opened})
                settle(self._open.values())
            return self._commit(1)
        t = times(timestamps)
        n = len(t)
        rows = Rows(args, kwargs, n, "timestamps", column_names(self))
        if n == 0:
            rows.feed(self._template.copy(), None)  # validates the (empty) columns
            return self
        self._check_room(n)
        fresh: dict[int, Metric] = {}
        late: dict[int, Metric] = {}
        for key, idx in window_groups(keys_of(t, self._config["width"], self._config["origin"])):
            base = self._open.get(key)
            if base is None and key in self._closed:  # late rows join their closed window
                late[key] = rows.feed(self._closed[key].copy(), idx)
                continue
            fresh[key] = rows.feed(base.copy() if base is not None else self._template.copy(), idx)
        self._open, self._closed = self._evicted(
            {**self._open, **fresh}, {**self._closed, **late} if late else None
        )
        return self._commit(n)

    def _row_certain(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether ``update(*args, **kwargs)`` (``timestamps`` among ``kwargs``), one row as
        scalars, certainly passes: its window is open and has seen each of its values."""
        return row_certain(self, self._open, self._config["width"], args, kwargs)

    def _row_check(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Check one row of scalars (``timestamps`` among ``kwargs``) as :meth:`update`
        does, without taking it, where that can be told: a row for an open or closed window,
        by that window's own check (its update takes the row alone: in place, or on a copy),
        or one opening a new window (the row alone, and the eviction it causes). False where
        the window's state cannot tell without updating."""
        key, rest = keyed_row(self, self._config["width"], args, kwargs)
        if key is None:
            return False
        self._check_room(1)
        metric = self._open.get(key)
        if metric is None:
            metric = self._closed.get(key)
        if metric is not None:
            return metric._row_check(args, rest)
        opened = self._template.copy().update(*args, **rest)  # type: ignore[attr-defined]
        self._evicted({**self._open, key: opened})
        return True

    def _evicted(
        self, opened: dict[int, Metric], closed: dict[int, Metric] | None = None
    ) -> tuple[dict[int, Metric], dict[int, Metric]]:
        """The open and closed windows (``closed``: this state's, unless given) once
        ``opened`` is cut to ``retention``, built without changing this state: a window
        evicted into one already closed joins it on a copy, so a merge that fails leaves
        everything as it was (an ``InputError``). (Rows for a closed window join it directly,
        in ``update``: a piece of it opened anew would number a ``Bootstrap``'s rows from 0
        again, drawing the weights of the closed window's first rows, 0.8.11.)"""
        limit = self._config["retention"]
        closed = self._closed if closed is None else closed
        if limit is None or len(opened) <= limit:
            return opened, closed
        opened, closed = dict(opened), dict(closed)
        for key in sorted(opened)[: len(opened) - limit]:
            metric = opened.pop(key)
            if key not in closed:
                closed[key] = metric
                continue
            try:
                closed[key] = closed[key]._copy(for_merge=True).merge(metric)
            except IncompatibleStateError as exc:
                raise InputError(
                    f"update: the rows for the closed window at {self._start(key)} cannot join "
                    f"it ({exc}); refused, the state is unchanged"
                ) from None
        return opened, closed

    def _check_compatible(self, other: Any) -> None:
        super()._check_compatible(other)
        self._check_compatible_together((other,))

    def _check_compatible_together(self, others: tuple[Any, ...]) -> None:
        # Every window of one key, across the operands: windows merge in place, one operand
        # after another, so each must be known to merge before the first one does.
        windows: dict[int, list[Metric]] = {}
        for state in (self, *others):
            for part in (state._open, state._closed):
                for key, metric in part.items():
                    windows.setdefault(key, []).append(metric)
        check_mergeable([m for m in windows.values() if len(m) > 1])

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
        self._open, self._closed = self._evicted(self._open)

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
            raise decode_error(self, "the state must hold exactly count, open and closed")
        try:
            opened = load_windows(state["open"], self._template, "open windows")
            closed = load_windows(state["closed"], self._template, "closed windows")
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
            raise decode_error(self, str(exc)) from exc
        self._open, self._closed, self._count = opened, closed, count
