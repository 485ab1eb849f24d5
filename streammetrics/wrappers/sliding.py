"""``SlidingWindow``: a metric over the last ``width`` of time, as a ring of slot states."""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from .._config_values import config_int
from ..base import Metric, metric_spec
from ..errors import IncompatibleStateError, InputError, NoIntervalError
from ..uncertainty import check_level
from ._poisson import _NO_ID
from ._rows import Rows, column_names, row_keywords, template
from ._windowing import (
    Wrapper,
    check_joins,
    check_mergeable,
    decode_error,
    joins,
    keyed_row,
    keys_of,
    load_windows,
    merged,
    number,
    one_row_key,
    positive,
    row_certain,
    settle,
    times,
    window_groups,
)

__all__ = ["SlidingWindow"]


class SlidingWindow(Wrapper):
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

    #: The leading options passed by position, as the API shows them
    #: (``SlidingWindow(metric, width, slots)``; ``streammetrics._configs.keyword_config``).
    _positional_config: ClassVar[int] = 3

    #: None on the class; each instance takes the wrapped metric's direction (its value is the
    #: wrapped metric's over the window), as Decayed does.
    higher_is_better = None

    def __init__(
        self, metric: Metric, width: Any, slots: int = 10, origin: int | float = 0
    ) -> None:
        super().__init__()
        self._template = template(metric, "its windows", takes="timestamps")
        self._numbers_rows = "ids" in row_keywords(self._template)
        self.higher_is_better = getattr(self._template, "higher_is_better", None)
        width = positive(width, "width")
        origin = number(origin, "origin")
        slots = config_int(slots, "slots", maximum=1_000_000)
        self._add_config(
            metric=metric_spec(self._template), width=width, slots=slots, origin=origin
        )
        # An integer width that the slots do not divide: the exact fraction (keys_of).
        self._unit: int | float | Fraction = (
            (width // slots if width % slots == 0 else Fraction(width, slots))
            if isinstance(width, int)
            else width / slots
        )
        if isinstance(self._unit, float) and not self._unit >= sys.float_info.min:
            # (5e-324 / 8 is 0.0: every time then keyed nan, a state whose bytes never loaded)
            raise InputError(
                f"width: {width!r} over {slots} slots is below the smallest normal float"
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
            float(origin + (self._head - slots + 1) * self._unit),
            float(origin + (self._head + 1) * self._unit),
        )

    def window(self) -> Metric:
        """The wrapped metric over the rows in the window (a new metric)."""
        return merged(self._template, [self._slots[k] for k in sorted(self._slots)])

    def update(self, *args: Any, timestamps: Any = None, **kwargs: Any) -> SlidingWindow:
        """Put each row in its slot; rows older than the ring are validated, then dropped."""
        key = one_row_key(args, kwargs, timestamps, self._unit, self._config["origin"])
        if key is not None:
            self._check_room(1)  # (before a slot's metric takes the row in place)
            kwargs = self._numbered(kwargs, None)
            head = key if self._head is None else max(self._head, key)
            metric = self._slots.get(key)
            floor = head - self._config["slots"]
            if key <= floor:  # too late: checked as the window's rows are, then dropped
                row = self._template.copy().update(*args, **kwargs)  # type: ignore[attr-defined]
                if not self._known_elsewhere(args, kwargs, None, floor):
                    check_joins([row], [m for k, m in self._slots.items() if k > floor])
                self._dropped += 1
            elif metric is not None and metric._row_trusted(args, kwargs):
                metric.update(*args, **kwargs)  # type: ignore[attr-defined]  # nothing new
            else:
                # A new slot, or a row its slot has not seen the like of (a label, a slice):
                # the row alone is checked against every slot of the window (its own too),
                # unless another slot has seen each of its values (in its slice) and so holds
                # them in the window already: the values the checks compare (label and key
                # sets, their kinds) are then those the window holds and has checked.
                known = self._known_elsewhere(args, kwargs, metric, floor)
                if metric is None or not known:
                    row = self._template.copy().update(*args, **kwargs)  # type: ignore[attr-defined]
                    if not known:
                        check_joins([row], [m for k, m in self._slots.items() if k > floor])
                if metric is None:
                    self._slots[key] = row
                else:
                    metric.update(*args, **kwargs)  # type: ignore[attr-defined]
                    # (Buffered on a label trusted in every slice, the row taught its slot
                    # nothing: taught here, its like skips this check next time.)
                    metric._learn_row(args, kwargs)
            if head != self._head:
                self._head = head
                self._dropped += self._age_out()
                settle(self._slots.values())
            return self._commit(1)
        t = times(timestamps)
        n = len(t)
        kwargs = self._numbered(kwargs, n)
        rows = Rows(args, kwargs, n, "timestamps", column_names(self))
        if n == 0:
            rows.feed(self._template.copy(), None)
            return self
        self._check_room(n)
        keys = keys_of(t, self._unit, self._config["origin"])
        head = int(keys.max()) if self._head is None else max(self._head, int(keys.max()))
        floor = head - self._config["slots"]
        late = keys <= floor
        n_late = int(late.sum())
        late_rows = []
        if n_late:  # dropped, but bad rows refused all the same, as rows joining the window
            late_rows = [rows.feed(self._template.copy(), np.flatnonzero(late))]
            idx_in = np.flatnonzero(~late)
            groups = [
                (k, idx_in if g is None else idx_in[g]) for k, g in window_groups(keys[idx_in])
            ]
        else:
            groups = window_groups(keys)
        fresh = {}
        for key, idx in groups:
            base = self._slots.get(key)
            fresh[key] = rows.feed(base.copy() if base is not None else self._template.copy(), idx)
        check_joins(
            [*fresh.values(), *late_rows],
            [m for k, m in self._slots.items() if k > floor and k not in fresh],
        )
        self._slots.update(fresh)
        self._head = head
        self._dropped += n_late + self._age_out()
        return self._commit(n)

    def _known_elsewhere(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        mine: Metric | None,
        floor: int,
        certain: bool = False,
    ) -> bool:
        """Whether a slot of the window other than ``mine`` has seen each value of this one
        row (``_row_trusted``; ``certain``: would certainly take it, ``_row_certain``),
        newest slot first. (0.8.27 checked such a row against every slot, folding their
        waiting rows: 0.33 ms a request for ``SlidingWindow(Sliced(...))`` of 20 slices, whose
        rows are new to their slot's slice four times in ten.)"""
        for k in sorted(self._slots, reverse=True):
            if k <= floor:
                break
            slot = self._slots[k]
            if slot is not mine and (
                slot._row_certain(args, kwargs) if certain else slot._row_trusted(args, kwargs)
            ):
                return True
        return False

    def _row_certain(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether ``update(*args, **kwargs)`` (``timestamps`` among ``kwargs``), one row as
        scalars, certainly passes: its slot holds rows already and has seen each of its values
        (a collection holding this window and another then updates both in place)."""
        return row_certain(self, self._slots, self._unit, args, kwargs)

    def _row_check(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Check one row of scalars (``timestamps`` among ``kwargs``) as :meth:`update`
        does, without taking it: unless its slot certainly takes it, the row alone (its own
        values, a ``Bootstrap``'s ids), then against every slot of the window unless a slot
        has seen each of its values, then its slot's own check (``InputError`` if refused).
        False when the call is not one row of scalars, or its slot cannot tell without
        updating (a plain metric near a weight bound; a review of 0.8.29's first cut: the
        slot was not asked, and a collection updated another window alone)."""
        key, rest = keyed_row(self, self._unit, args, kwargs)
        if key is None:
            return False
        self._check_room(1)
        rest = self._numbered(rest, None)
        floor = (key if self._head is None else max(self._head, key)) - self._config["slots"]
        slot = self._slots.get(key) if key > floor else None
        if slot is not None and slot._row_certain(args, rest):
            return True
        # (A row another slot certainly takes is valid, and its values joined the window.)
        if not self._known_elsewhere(args, rest, slot, floor, certain=True):
            row = self._template.copy().update(*args, **rest)  # type: ignore[attr-defined]
            if not self._known_elsewhere(args, rest, None, floor):
                check_joins([row], [m for k, m in self._slots.items() if k > floor])
        return slot is None or slot._row_check(args, rest)

    def _numbered(self, kwargs: dict[str, Any], n: int | None) -> dict[str, Any]:
        """``kwargs`` with ``ids=`` standing for the rows' positions in this wrapper's stream
        (its count before them: one for one sample, ``n is None``, else ``n``) when the
        wrapped metric takes ids (a ``Bootstrap`` in it) and the call gives none. A
        ``Bootstrap`` without ids numbers rows by their position in its own stream, and every
        slot of a ``SlidingWindow`` starts a stream of its own at 0: merged into the window's
        value, the k-th row of every slot drew the same weights in every replicate (0.8.11; a
        window of one row per slot gave an interval of width 0). The ids are the positions
        with the tag ``Bootstrap`` gives positions (``_NO_ID``), so they draw exactly the
        weights of those positions in one ``Bootstrap`` fed without ids, and meet a caller's
        ids only where such a ``Bootstrap``'s positions would. The count only grows (dropped
        rows stay counted). Merged shards still number their rows alike, as shards of a
        ``Bootstrap`` do: pass ids."""
        if not self._numbers_rows or kwargs.get("ids") is not None:
            return kwargs
        start = self._count
        if n is None:
            return {**kwargs, "ids": start ^ int(_NO_ID)}  # (a count: below 2**53)
        return {**kwargs, "ids": np.arange(start, start + n, dtype=np.uint64) ^ _NO_ID}

    def _age_out(self) -> int:
        assert self._head is not None
        floor = self._head - self._config["slots"]
        old = [k for k in self._slots if k <= floor]
        return sum(self._slots.pop(k).count for k in old)

    def _check_compatible(self, other: Any) -> None:
        super()._check_compatible(other)
        self._check_compatible_together((other,))

    def _check_compatible_together(self, others: tuple[Any, ...]) -> None:
        # Slots merge in place, one operand after another, and the window's value merges all
        # the slots left: the slots of one key must merge, and every slot must join the rest.
        heads = [w._head for w in (self, *others) if w._head is not None]
        if not heads:
            return
        floor = max(heads) - self._config["slots"]
        slots: dict[int, list[Metric]] = {}
        for state in (self, *others):
            for key, metric in state._slots.items():
                if key > floor:
                    slots.setdefault(key, []).append(metric)
        check_mergeable([group for group in slots.values() if len(group) > 1])
        joins([m for group in slots.values() for m in group], [])

    def _merge_from(self, other: Any) -> None:
        self._merge_many([other])

    def _merge_many(self, others: list[Any], join: bool = False) -> None:
        """The slots of every operand inside the ring of the newest head, merged key by key;
        the others dropped unmerged, as one stream would have aged them out. (0.8.14 merged
        one operand after another: slots the last operand aged out merged first, so
        ``merge(b, c, d)`` could raise where ``merge(d, b, c)`` did not, and leave the window
        half merged.) With several operands each merged slot is a new state, so nothing here
        changes until all have merged; one operand, checked whole as a pair, merges in place."""
        heads = [w._head for w in (self, *others) if w._head is not None]
        head = max(heads)
        floor = head - self._config["slots"]
        groups: dict[int, list[Metric]] = {}
        dropped = self._dropped + sum(o._dropped for o in others)
        for state in (self, *others):
            for key, metric in state._slots.items():
                if key > floor:
                    groups.setdefault(key, []).append(metric)
                else:
                    dropped += metric.count
        slots = {}
        in_place = len(others) == 1
        for key, group in groups.items():
            mine = self._slots.get(key)
            if len(group) == 1 and mine is group[0]:
                slots[key] = mine
            elif in_place and mine is group[0]:
                slots[key] = mine.merge(*group[1:])
            else:
                slots[key] = group[0].copy().merge(*group[1:])
        self._slots, self._head, self._dropped = slots, head, dropped

    def _compute(self) -> Any:
        return self.window().compute()

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """The wrapped metric's interval over the rows in the window."""
        level = check_level(level)
        window = self.window()
        if callable(getattr(window, "intervals", None)):  # a Sliced: one value per slice
            raise NoIntervalError(
                f"SlidingWindow({type(window).__name__}(...)) has one value per slice: "
                "window().intervals(level) gives one interval per slice"
            )
        interval: tuple[float, float] = window.interval(level)
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
            raise decode_error(self, "the state must hold exactly count, head, dropped, slots")
        try:
            slots = load_windows(state["slots"], self._template, "slots")
            count, head, dropped = state["count"], state["head"], state["dropped"]
            if type(dropped) is not int or dropped < 0:
                raise ValueError("dropped must be a non-negative integer")
            if type(count) is not int or count != dropped + sum(m.count for m in slots.values()):
                raise ValueError("count is not the window's rows plus the dropped rows")
            if count == 0:
                if head is not None:
                    raise ValueError("an empty window has no head")
            elif type(head) is not int or not slots or head != max(slots):
                raise ValueError("the head must be the key of the newest slot")
            elif min(slots) <= head - self._config["slots"]:
                raise ValueError("a slot lies outside the ring")
            if len(slots) > 1:
                # The window is the slots merged (every compute merges them): slots whose
                # counts together pass the count bound would make compute raise.
                merged(self._template, [slots[k] for k in sorted(slots)])
        except IncompatibleStateError as exc:
            raise decode_error(self, f"the slots do not merge into one window: {exc}") from exc
        except ValueError as exc:
            raise decode_error(self, str(exc)) from exc
        self._slots, self._head, self._dropped, self._count = slots, head, dropped, count
