"""``MetricCollection``: several metrics updated, merged and serialised as one."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from .._codec import COUNT_LIMIT
from .._metric_copy import GUARDED_METHODS
from ..base import Metric, metric_from_spec, metric_spec, not_a_metric
from ..errors import InputError
from ._rows import row_keywords

__all__ = ["MetricCollection"]


def _rows_held(metric: Metric) -> int:
    """The rows ``metric`` has counted or holds in its pending buffer (``count`` once folded)."""
    with metric._lock:
        pending = metric._pending
        return metric._count + (0 if pending is None else pending.size)


#: Below this count no per-request call (one sample, or a small batch) can pass 2**53: the
#: count bound is checked only above it (a comparison per call, not a function call).
_NEAR_LIMIT = COUNT_LIMIT - (1 << 20)


class _MemberGuard:
    """A state-changing method of a collection's member, looked up on the member the
    collection handed out: refused. The collection counts its members' rows, so a member
    updated, merged or reset alone would leave it behind (0.8.13 then wrote bytes that
    ``loads`` and ``torch.sync`` refused, far from the call that caused it)."""

    __slots__ = ("method", "name")

    def __init__(self, name: str, method: str) -> None:
        self.name, self.method = name, method

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise InputError(
            f"{self.method}: {self.name!r} is a member of a MetricCollection, which counts the "
            "rows of its members: change it through the collection (update, or update_each "
            f"for columns of its own), or take collection[{self.name!r}].copy() to change a "
            "copy alone"
        )

    def __deepcopy__(self, memo: dict[int, Any]) -> _MemberGuard:
        return self


def _guard(name: str, member: Metric) -> None:
    """Shadow ``member``'s state-changing methods by :class:`_MemberGuard` (once)."""
    attrs = member.__dict__
    if "update" not in attrs:
        for method in GUARDED_METHODS:
            if hasattr(member, method):
                attrs[method] = _MemberGuard(name, method)


def _plan_rows(plan: Any) -> int:
    """The rows a member's per-request plan (``Metric._plan``) adds: one sample, or a small
    batch of columns."""
    values = plan[0]
    return len(values[0]) if isinstance(values[0], np.ndarray) else 1


class MetricCollection(Metric):
    """Several named metrics fed the same columns, merged and serialised as one state.

    ``update(*args, **kwargs)`` forwards the same arguments to every member; ``compute()`` gives
    ``{name: value}``. A wrapper's own keyword column (``by`` of a ``Sliced`` member,
    ``timestamps`` of a window or ``Decayed``) goes only to the members that take it: beside
    ``s=Sliced(MeanSquaredError())``, a plain ``all=MeanSquaredError()`` counts every row.
    So does ``Bootstrap``'s ``ids``: only its ``Bootstrap`` members receive it.
    The collection starts empty: it keeps each member's configuration, not
    the data a member may already hold. An update is all or nothing: if any member refuses the
    batch, no member changes. One sample or a small batch that every member certainly accepts
    is buffered in each (the per-request path, ``docs/serving.md``); members that cannot
    buffer it (windows) are updated in place when at most one of them may refuse it (a
    window whose slot has seen the row's values certainly takes it, and a sliding window or
    a ``Sliced`` checks a row new to it without taking it first), that one first;
    otherwise each member updates a copy, committed only when all have succeeded (one copy
    of every member's state besides the members' own work). Two collections merge when they hold the
    same names with the same configurations, in any order. Their bytes do not depend on the
    order the members were given in, so a collection read back with ``loads`` lists its
    members (``keys()``, ``compute()``) by name.

    Examples
    --------
    >>> import streammetrics as sm
    >>> c = sm.MetricCollection(acc=sm.Accuracy(), f1=sm.F1(average="macro"))
    >>> c.update([0, 1, 1, 2], [0, 1, 2, 2]).compute()
    {'acc': 0.75, 'f1': 0.7777777777777777}
    """

    #: A wrapper's values are its wrapped metric's (or a dict of them): no direction of its own.
    higher_is_better = None
    #: Set in ``__init__`` and never changed (an update replaces members, not these): copies,
    #: and the metrics ``loads`` builds, share them (``Metric._constant``).
    _constant: ClassVar[frozenset[str]] = frozenset({"_names", "_needs"})

    def __init__(self, **metrics: Metric) -> None:
        super().__init__()
        if not metrics:
            raise InputError("MetricCollection: give at least one metric, as name=metric")
        for name, metric in metrics.items():
            if not isinstance(metric, Metric):
                raise not_a_metric(name, metric)
            if name.startswith("_") or hasattr(MetricCollection, name):
                raise InputError(f"{name}: this name is taken by the collection itself; rename it")
        self._names = list(metrics)
        self._add_config(members={name: metric_spec(m) for name, m in metrics.items()})
        for name, metric in metrics.items():
            self._add_state(name, metric.copy().reset(), merge=None)
        # Members made of many states (Sliced) are checked across a window's slots at once only.
        self._joins_pairwise = all(m._joins_pairwise for m in metrics.values())
        #: The keyword columns some member's wrapper keeps for itself, and who takes each.
        needs = {name: row_keywords(m) for name, m in metrics.items()}
        self._routed = frozenset().union(*needs.values())
        self._needs = needs
        #: Every member plans rows of its own columns alone (no window, no ``by=`` key): the
        #: per-request path's short loop.
        self._plain = all(m._rows is not None and m._rows.keyword is None for m in metrics.values())

    def _member_kwargs(self, name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The keyword columns of ``kwargs`` for member ``name``: a wrapper's own keyword
        column only to the members that take it, every other keyword to every member."""
        if not self._routed or not (self._routed & kwargs.keys()):
            return kwargs
        mine = self._needs[name]
        return {k: v for k, v in kwargs.items() if k not in self._routed or k in mine}

    @classmethod
    def _from_config(cls, config: dict[str, Any]) -> MetricCollection:
        if set(config) != {"members"} or not isinstance(config["members"], dict):
            raise ValueError("a MetricCollection config holds exactly 'members'")
        members: dict[str, Metric] = {}
        for name, spec in config["members"].items():
            try:
                members[str(name)] = metric_from_spec(spec)
            except ValueError as exc:
                raise ValueError(f"member {name!r}: {exc}") from exc
        return cls(**members)

    def __getitem__(self, name: str) -> Metric:
        """The member called ``name`` as it is now, to read (``collection.name`` too). Its
        ``update``, ``merge``, ``join`` and ``reset`` raise ``InputError``: the collection
        counts its members' rows, so change them through it (``update``, ``update_each``), or
        change ``.copy()`` of the member. An update of the collection may replace the member
        by an updated copy, so look it up again after updating rather than keeping the
        object."""
        if name not in self._names:
            raise KeyError(name)
        member: Metric = getattr(self, name)
        return member

    # -- every member the collection holds is guarded ------------------------------------------
    # (``collection.auc`` as well as ``collection["auc"]``: until 0.8.24 only the members looked
    # up by ``[]`` were, and ``collection.auc.update(...)`` wrote bytes ``loads`` refused.)
    # Members are set by ``setattr`` (construction, updates, loading, reset) or by a copy's or
    # a pickle's ``__dict__``: both ways end here.

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if isinstance(value, Metric) and name in self.__dict__.get("_names", ()):
            _guard(name, value)

    def _guard_members(self) -> None:
        for name in self._names:
            _guard(name, self.__dict__[name])

    def _twin(self, field_copy: Any, blank_rows: bool) -> MetricCollection:
        new = super()._twin(field_copy, blank_rows)
        new._guard_members()
        return new

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._guard_members()

    def __deepcopy__(self, memo: dict[int, Any]) -> MetricCollection:
        new = super().__deepcopy__(memo)
        new._guard_members()
        return new

    def keys(self) -> list[str]:
        return list(self._names)

    def _try_buffer(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        # One sample or a small batch that every member certainly accepts is buffered in every
        # member; anything else takes the copy-and-commit path of ``update``.
        members = [getattr(self, name) for name in self._names]
        if not kwargs:  # the hot path: one unweighted sample as scalars
            for member in members:
                rows = member._rows
                if rows is None or not rows.row_ok(args):
                    break
            else:
                if self._count >= _NEAR_LIMIT:  # (a decoded count may be near 2**53)
                    self._check_room(1)
                for member in members:
                    with member._lock:
                        member._append_row(args)
                self.__dict__["_count"] += 1  # (not through __setattr__: the hot path)
                return True
        if self._plain and not self._routed:  # (the common case: one loop, as in 0.8.8)
            plain = []
            for member in members:
                plan = member._plan(args, kwargs)
                if plan is None:
                    break
                plain.append(plan)
            else:
                if self._count >= _NEAR_LIMIT and plain:
                    self._check_room(_plan_rows(plain[0]))
                added = 0
                for member, plan in zip(members, plain, strict=True):
                    with member._lock:
                        added = member._push(plan)
                self.__dict__["_count"] += added
                return True
        plans = []
        unplanned: list[tuple[Metric, dict[str, Any]]] = []
        routed = bool(self._routed) and not self._routed.isdisjoint(kwargs)
        for name, member in zip(self._names, members, strict=True):
            given = mine = self._member_kwargs(name, kwargs) if routed else kwargs
            rows, member_args = member._rows, args
            keyword = None if rows is None else rows.keyword
            if keyword is not None and keyword in mine:
                # A column the member takes by keyword (``Sliced``'s ``by=``) is its rows'
                # last column, as the member's own per-request path reads it (0.8.8 planned
                # with it left among the keywords: a collection of Sliced never buffered).
                mine = dict(mine)
                member_args = (*args, mine.pop(keyword))
            plan = None if rows is None else member._plan(member_args, mine)
            if plan is None:
                unplanned.append((member, given))
            else:
                plans.append((member, plan))
        # Members that cannot buffer the call (a window; a slice or label its rows have not
        # seen) are updated for real, in place. The first may refuse the row: its update is all
        # or nothing. Every other one must certainly pass (a window whose slot for this time
        # has seen the row's values: ``_row_certain``; or one that checked the row without
        # taking it: ``_checked``), as must the others' buffering, so the collection still
        # changes wholly or not at all without copying every member's state (0.8.8 copied
        # them all on every such call: 3-12 ms per request with a window or 500 slices
        # inside; 0.8.27 with two windows, 1.1 ms; 0.8.28 with two windows meeting a slice
        # new to them, 1.5 ms).
        if len(unplanned) > 1:
            sure = [m._row_certain(args, given) for m, given in unplanned]
            if sure.count(False) > 1:
                checked = self._checked(args, unplanned, sure)
                if checked is None:
                    return False  # two members may refuse the row: copy and commit
                sure = checked
            # (the one that may refuse first: sorted is stable, False before True)
            unplanned = [
                pair for pair, _ in sorted(zip(unplanned, sure, strict=True), key=lambda t: t[1])
            ]
        if self._count >= _NEAR_LIMIT:
            if not plans:
                return False  # (the rows unknown until one is updated: the ordinary update)
            self._check_room(_plan_rows(plans[0][1]))
        added = 0
        for member, given in unplanned:
            # (Rows counted or waiting: reading ``count`` would fold the member's buffer, a
            # Bootstrap's one-sample split included, on every call.)
            before = _rows_held(member)
            type(member).update(member, *args, **given)  # type: ignore[attr-defined]
            added = max(added, _rows_held(member) - before)
        for member, plan in plans:
            with member._lock:
                added = max(added, member._push(plan))
        self.__dict__["_count"] += added
        return True

    @staticmethod
    def _checked(
        args: tuple[Any, ...], unplanned: list[tuple[Metric, dict[str, Any]]], sure: list[bool]
    ) -> list[bool] | None:
        """``sure`` once each unsure member, in name order, has checked the row where it can
        (``_row_check``); None when two or more still cannot tell, or when a check refuses
        the row after a member before it could not tell: the copy-and-commit path then
        updates the members in name order, and the first to refuse says why, as before such
        checks (a review: a later member's message won). The last unsure member is left
        unchecked when every one before it could tell: it is the one updated first, whose
        own update refuses the row as its check would (one check fewer per request: two
        ``Sliced`` members meeting a new slice checked it twice and updated it twice)."""
        unsure = [i for i, certain in enumerate(sure) if not certain]
        out, untold = list(sure), False
        for i in unsure[:-1]:
            member, given = unplanned[i]
            try:
                out[i] = member._row_check(args, given)
            except InputError:
                if untold:
                    return None
                raise
            untold = untold or not out[i]
        if untold:  # (the last must tell, or two members are left that may refuse)
            member, given = unplanned[unsure[-1]]
            try:
                out[unsure[-1]] = member._row_check(args, given)
            except InputError:
                return None
        return None if out.count(False) > 1 else out

    def _row_trusted(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Every member takes this one-row update without learning anything new (a window
        holding the collection then skips checking the row against its other slots)."""
        return self._every_member("_row_trusted", args, kwargs)

    def _row_certain(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        return self._every_member("_row_certain", args, kwargs)

    def _every_member(self, test: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        return all(
            getattr(getattr(self, name), test)(args, self._member_kwargs(name, kwargs))
            for name in self._names
        )

    def _learn_row(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        for name in self._names:
            getattr(self, name)._learn_row(args, self._member_kwargs(name, kwargs))

    def update(self, *args: Any, **kwargs: Any) -> MetricCollection:
        """Forward one batch to every member; all members change or none does."""
        updated = {
            # (a copy: without the guard the member may carry, see ``__getitem__``)
            name: getattr(self, name).copy().update(*args, **self._member_kwargs(name, kwargs))
            for name in self._names
        }
        n = max((m.count - getattr(self, k).count for k, m in updated.items()), default=0)
        return self._commit(n, **updated)

    def update_each(
        self, batches: dict[str, tuple[tuple[Any, ...], dict[str, Any]]]
    ) -> MetricCollection:
        """Update each member with its own columns: ``{name: (args, kwargs)}``, one batch of
        ``n`` rows for every member (a CLI feeding ``roc_auc`` scores and ``accuracy`` labels
        from one table). All or nothing, as :meth:`update`; members not named get nothing."""
        if not isinstance(batches, dict):
            raise InputError(f"batches: expected {{name: (args, kwargs)}}, got {batches!r:.80}")
        unknown = set(batches) - set(self._names)
        if unknown:
            raise InputError(f"batches: no members called {sorted(unknown, key=repr)}")
        for name, batch in batches.items():
            if not (
                isinstance(batch, tuple | list)
                and len(batch) == 2
                and isinstance(batch[0], tuple | list)
                and isinstance(batch[1], dict)
            ):
                raise InputError(
                    f"batches[{name!r}]: expected a pair (args, kwargs), a tuple of columns and "
                    f"a dict of keyword columns, got {batch!r:.80}"
                )
        updated = {
            name: getattr(self, name).copy().update(*args, **kwargs)
            for name, (args, kwargs) in batches.items()
        }
        # One batch of n rows for every member: the collection counts n. Members given different
        # numbers of samples would make the count depend on how calls pair the batches.
        added = {k: m.count - getattr(self, k).count for k, m in updated.items()}
        if len(set(added.values())) > 1:
            raise InputError(
                f"batches: every member takes the same number of samples, got {added}; "
                "give the members one batch of rows each"
            )
        return self._commit(next(iter(added.values()), 0), **updated)

    def _check_slices_join(self, others: list[Any], limit: int) -> None:
        """A window's per-slot check of a collection holding a ``Sliced`` member (which joins
        slice by slice, ``Sliced._check_slices_join``): each member against its namesakes."""
        for name in self._names:
            mine, theirs = getattr(self, name), [getattr(o, name) for o in others]
            if mine._joins_pairwise:
                mine._check_compatible(theirs[-1])
            elif (per_slice := getattr(mine, "_check_slices_join", None)) is not None:
                per_slice(theirs, limit)

    def _check_compatible_together(self, others: tuple[Any, ...]) -> None:
        for name in self._fields:
            getattr(self, name)._check_compatible_together(tuple(getattr(o, name) for o in others))

    def _compute(self) -> dict[str, Any]:
        return {name: getattr(self, name).compute() for name in self._names}

    def _empty_result(self) -> dict[str, Any]:
        return self._compute()

    def _validate_state(self) -> None:
        counts = {getattr(self, name)._count for name in self._names}  # (loaded: none pending)
        if counts and max(counts) > self._count:
            raise ValueError("a member has seen more samples than the collection")
