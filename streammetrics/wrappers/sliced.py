"""``Sliced``: one copy of a metric per slice of the data (country, device, model version, ...).

The first question after "AUC fell" is "where?". ``Sliced(metric)`` keeps the wrapped metric's
state per slice key and answers it from mergeable state: ``compute()`` per slice, ``gap()``
between the best and the worst slice, ``worst(k)`` slices, ``intervals()`` per slice.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np

from .._config_values import config_int
from .._pending_buffer import FOLD_ROWS
from .._row_checks import _SCALAR_TYPES, _key_kind
from ..base import Metric, metric_from_spec, metric_spec
from ..errors import InputError
from ..states.stacked import blanks, stacked_batch
from ..uncertainty import check_level
from ._packing import library_state
from ._rows import Rows, column_names, groups, template, weight_by_keyword
from ._slice_joins import check_keys_join, check_slices_join
from ._slice_keys import slice_keys
from ._slice_pack import SlicePack
from ._slice_rows import slice_row_plan
from ._slice_table import Key, SliceTable, slice_kind

__all__ = ["Sliced", "SliceTable", "slice_keys"]

#: Rows that may wait per slice, on average, in the buffers of slice states that take one
#: sample their own way (``Sliced._take_row``): a few KiB, against some 170 KiB for the state
#: of a ``Bootstrap(Accuracy(), 200)``.
WAITING_PER_SLICE = 64


def _refusal(rows: Rows, template: Metric) -> InputError | None:
    """The ``InputError`` of the wrapped metric, empty, fed the whole batch (None if it takes
    it, or fails otherwise: the slice's own error is then the one to raise)."""
    try:
        rows.feed(template.copy(), None)
    except Exception as exc:  # (only read: raised only if an InputError)
        return exc if isinstance(exc, InputError) else None
    return None


def _argument(exc: Exception) -> str:
    """The argument an ``InputError`` names first (its message starts ``name: ...``)."""
    return str(exc).split(":", 1)[0]


class Sliced(Metric):
    """One copy of a metric per slice key: ``{key: value}``, the gap and the worst slices.

    ``update(*columns, by=keys, **kwargs)`` routes each row to the slice named by its key; the
    wrapped metric's own columns and keyword arguments (``sample_weight``, ``timestamps`` of a
    wrapped window, ...) are split along with it. Keys are integers or strings, or a tuple of
    such columns for composite keys (``by=(country, device)``, keys ``("fr", "ios")``), or a
    2-D array with one column per part; one stream keeps one kind of key.

    Exact whenever the wrapped metric is: each slice's state is the wrapped metric's state over
    that slice's rows, slices merge by key union, and the wire form lists slices sorted by key,
    so any split of a stream, merged in any order, gives the same bytes for counting metrics.
    With ``max_slices=N`` an update or merge that would hold more than ``N`` slices is refused
    (``InputError`` / ``IncompatibleStateError``) and the state is left unchanged: nothing is
    ever dropped silently.

    Memory: the wrapped metric's state per slice. ``update``: the keys coded once (a counting
    pass for integer keys of small range, a sort otherwise); then, for metrics with a grouped
    fold (score buckets on a grid: ``ROCAUC``, ``AveragePrecision``, the curves), one pass over
    the batch counts every (slice, bucket) and merges every slice in place
    (``streammetrics.states.stacked``); confusion metrics and the regression metrics (one
    output) keep every slice in one packed table, folded with a few ``bincount`` per batch;
    for other metrics, one update of a copy of the wrapped metric per slice touched.
    Never one per row.
    ``merge``: one merge per slice of the other side. ``compute``: one per slice.

    Parameters
    ----------
    metric : Metric
        The metric to compute per slice (its configuration is kept; any data it holds is not).
    max_slices : int, optional
        The most slices the state may hold (``None``: no limit).

    Examples
    --------
    >>> import streammetrics as sm
    >>> s = sm.Sliced(sm.Accuracy())
    >>> s.update([1, 0, 1, 1], [1, 1, 1, 0], by=["fr", "de", "fr", "de"]).compute()
    {'de': 0.0, 'fr': 1.0}
    >>> s.gap(), s.worst(k=1)
    (1.0, [('de', 0.0)])
    """

    #: The leading options passed by position, as the API shows them
    #: (``Sliced(metric)``; ``streammetrics._configs.keyword_config``).
    _positional_config: ClassVar[int] = 1

    slices: SliceTable
    #: A map of slice values has no direction; ``worst`` reads the wrapped metric's.
    higher_is_better: ClassVar[bool | None] = None
    _joins_pairwise = False  # one state per slice: windows check it across slots only
    #: The keyword column ``update`` keeps for itself (see ``_rows.row_keywords``).
    own_keyword: ClassVar[str | None] = "by"

    def __init__(self, metric: Metric, max_slices: int | None = None) -> None:
        super().__init__()
        self._template = template(metric, "its slices", takes="by")
        if max_slices is not None:
            max_slices = config_int(max_slices, "max_slices")
        self._add_config(metric=metric_spec(self._template), max_slices=max_slices)
        self._add_state("slices", SliceTable(self._template), merge=None)
        inner = self._template._rows
        if inner is not None and max_slices is None:
            # One row per call (a server's requests) is checked and buffered, then folded as
            # one batch, as the wrapped metric's own calls are: a valid row of the wrapped
            # metric with a key of the kind seen so far certainly passes. Weighted rows too
            # (0.8.17; before, about 120-200 us a call): the buffer's bound check reads a bound
            # above every slice's totals that the table keeps (:meth:`_row_bound`). (With
            # max_slices, a new key may be refused, so every call is checked when it is made.)
            self._declare_rows(
                *inner.kinds,
                "key",
                weights=inner.weights,
                keyword="by",
                free=self._template._slice_free_labels(),
            )

    def _row_bound(self) -> float:
        """A bound above every slice's count or weight totals (``SliceTable.row_bound``), for
        the per-request path's bound check (the rows of every slice: the whole count)."""
        return self.slices.row_bound()

    def _held_label_kinds(self) -> set[str]:
        return self.slices.label_kinds()

    @classmethod
    def _from_config(cls, config: dict[str, Any]) -> Sliced:
        if set(config) != {"metric", "max_slices"}:
            raise ValueError("a Sliced config holds exactly metric and max_slices")
        return cls(metric_from_spec(config["metric"]), max_slices=config["max_slices"])

    @property
    def metric(self) -> Metric:
        """An empty copy of the wrapped metric (its class and configuration)."""
        return self._template.copy()

    def keys(self) -> list[Key]:
        """The slice keys seen, sorted."""
        return sorted(self.slices.key_list())

    def __getitem__(self, key: Key) -> Metric:
        """A copy of the wrapped metric's state for slice ``key``."""
        return self.slices.state(key).copy()

    def __len__(self) -> int:
        return len(self.slices)

    def __contains__(self, key: Any) -> bool:
        """Whether slice ``key`` has been seen (0.8.14 had none: ``in`` probed ``self[0]``,
        ``self[1]``, ... and raised ``KeyError: 0``)."""
        try:
            return bool(self.slices.has(key))
        except TypeError:  # (an unhashable key is no slice)
            return False

    def __iter__(self) -> Iterator[Key]:
        """The slice keys, sorted (as a dict iterates its keys)."""
        return iter(self.keys())

    # -- update and merge ------------------------------------------------------------------------

    def update(self, *args: Any, by: Any = None, **kwargs: Any) -> Sliced:
        """Route each row to its slice; the wrapped metric's columns go in ``args``/``kwargs``.

        All or nothing: the batch is validated (and each slice's update run on a copy, or the
        grouped fold prepared for every slice) before any slice changes.
        """
        codes, keys = slice_keys(by)
        n = len(codes)
        rows = Rows(args, kwargs, n, "by", column_names(self))
        table = self.slices
        bound = _grown(table.bound, n, weight_by_keyword(self._template, args, kwargs)[1])
        if n == 0:
            rows.feed(self._template.copy(), None)  # validates the (empty) columns
            return self
        self._check_keys(keys, n)
        stack = stacked_batch(self._template, args, kwargs)
        if stack is not None:
            packed = table.packed_fold(stack, codes, keys)
            if packed is not None:  # many slices: one table, no work per slice
                packed.bound = bound
                return self._commit(n, slices=packed)
        if (
            stack is not None
            and stack.groups
            and library_state(self._template)  # (a subclass's fields may be changed in place)
            and not (
                stack.per_request and len(keys) == 1 and table._pack is None and table.has(keys[0])
            )
        ):
            # Every row validated, every slice's state ready: one fold of all slices, in place
            # (the slices belong to this state alone; the fold checks the count bound for
            # every slice before it commits any). The states are read from the table's view:
            # it stops being packed (and forgets its bound) only once the fold has changed
            # them, so a refused batch leaves it as it was (a review of 0.8.30's first cut).
            changed = table.changed
            view = table.view()
            states = [view.get(k) for k in keys]
            if stack.accepts_groups([m for m in states if m is not None]):
                missing = [j for j, m in enumerate(states) if m is None]
                made = blanks(self._template, len(missing), rows=stack.per_request)
                ready: list[Metric] = states  # type: ignore[assignment]
                for j, metric in zip(missing, made, strict=True):
                    ready[j] = metric
                if stack.fold_groups(ready, codes, len(keys)):
                    table.slices = view  # (changed in place: no longer the pack's)
                    added = {keys[j]: ready[j] for j in missing}
                    done = table.updated(added) if added else table
                    done.bound = bound
                    done.changed = {reads: c + len(keys) for reads, c in changed.items()}
                    return self._commit(n, slices=done)
        fresh: dict[Key, Metric] = {}
        held = table.view()  # read only: each slice is updated on a copy
        if len(keys) == 1 and table._pack is None and (base := held.get(keys[0])) is not None:
            # Every row in one slice held already (one sample, the per-request case): its
            # state's own update is all or nothing, so it is updated in place, through its
            # per-request path. A copy of it first cost 1 ms a request for a slice holding a
            # window (0.8.27), whose state holds every slot. (Not in a packed table, whose
            # states ``view`` only materialises: the pack stays the truth.)
            changed = table.changed  # (the ``slices`` property forgets it: kept below)
            self._fed(rows, base, None, direct=False)
            if base._pending is not None:  # (rows waiting in its buffer: bounded, as in
                # ``_take_row``, across all slices together; found by a review)
                self._note_waiting(keys[0], n, len(held))
            table.bound = bound
            table.changed = {reads: c + 1 for reads, c in changed.items()}
            return self._commit(n, slices=table)
        for code, idx in groups(codes, len(keys)):
            key = keys[code]
            base = held.get(key)
            metric = base.copy() if base is not None else self._template.copy()
            fresh[key] = self._fed(rows, metric, idx, direct=True)
        # (Each slice's copy takes its rows by its update itself, not its per-request path: a
        # small batch would wait in the copy's buffer, and with many slices those buffers
        # would outgrow the states. 0.8.16 buffered, then folded each at once: two updates.)
        done = table.updated(fresh)
        done.bound = bound
        return self._commit(n, slices=done)

    def _check_keys(self, keys: list[Key], n: int) -> None:
        """``InputError`` unless ``n`` more rows with these slice keys fit: the count bound,
        the kind of the keys this stream holds, ``max_slices``."""
        self._check_room(n)  # (the grouped fold of ``update`` changes the slices in place)
        table = self.slices
        kind = table.kind()
        if kind is not None and slice_kind(keys[0]) != kind:
            raise InputError(
                f"by: keys of kind {slice_kind(keys[0])}, this stream holds keys of {kind}"
            )
        limit = self._config["max_slices"]
        if limit is not None:
            new = sum(1 for k in keys if not table.has(k))
            if len(table) + new > limit:
                raise InputError(
                    f"by: {new} new slices would make {len(table) + new}, past "
                    f"max_slices={limit}; nothing was counted"
                )

    def _row_check(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Check one row of scalars (its key as ``by`` among ``kwargs``) as :meth:`update`
        does, without taking it, where that can be told: a row for a slice not held yet (its
        key, then the row alone, as the new slice takes it), or one its slice certainly
        takes. False for a row new to a held slice (a binary metric's third label: only the
        slice's update can tell), or not one row of scalars. (A collection of two ``Sliced``
        members of a binary metric copied both whole for each new slice until 0.8.29: 2 ms
        a request at 250 slices, growing with them.)"""
        if super()._row_check(args, kwargs):
            return True  # (what its per-request path would buffer)
        rest = dict(kwargs)
        by = rest.pop("by", None)
        if any(
            hasattr(v, "__len__") and not isinstance(v, str) for v in (by, *args, *rest.values())
        ):
            return False
        codes, keys = slice_keys(by)
        rows = Rows(args, rest, len(codes), "by", column_names(self))
        if len(keys) != 1:
            return False
        self._check_keys(keys, 1)
        table = self.slices
        if table.has(keys[0]):
            held = None if table._pack is not None else table.view().get(keys[0])
            return held is not None and held._row_certain(args, rest)
        self._fed(rows, self._template.copy(), None, direct=True)
        return True

    def _fed(self, rows: Rows, metric: Metric, idx: np.ndarray | None, direct: bool) -> Metric:
        """``metric`` given the rows ``idx`` of ``rows`` (one slice's). A slice is fed its rows
        alone, so its message counts rows within the slice ("found nan at 1" for the batch's
        fourth row, in 0.8.14): where the wrapped metric refuses the whole batch too, for the
        same argument, its message counts the batch's rows. (Another argument: a fault of the
        slice's state, such as a third label for a binary metric, which is the slice's to
        say.)"""
        try:
            return rows.feed(metric, idx, direct=direct)
        except InputError as exc:
            whole = _refusal(rows, self._template)
            if type(whole) is type(exc) and _argument(whole) == _argument(exc):
                raise whole from None
            raise

    # -- one sample per call, for a wrapped metric that takes it its own way -----------------

    #: Rows waiting in the buffers of slice states (``_take_row``), and those slices' keys: a
    #: hint, never the truth (every read of a slice folds its own rows), that bounds the rows
    #: waiting in all slices together to ``FOLD_ROWS`` plus ``WAITING_PER_SLICE`` per slice.
    _waiting_rows: int = 0
    _waiting: set[Key] | None = None
    #: Until the buffer folds: the keys of the slices that rows waiting in it open, and the
    #: labels such rows bring each slice (``_slice_rows.slice_row_plan``).
    _new_keys: set[Key] | None = None
    _waiting_labels: dict[Key, set[Any]] | None = None

    def _plan(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        plan = super()._plan(args, kwargs)
        return plan if plan is not None else slice_row_plan(self, args, kwargs)

    def _push(self, plan: Any) -> int:
        if len(plan) == 3:  # a row bringing its slice labels (``slice_row_plan``)
            values, weighted, key = plan
            if self._pending is not None and self._pending.weighted:
                # (the base's push would fold weighted rows first, and with them the labels
                # noted below: a review found a row then judged without them)
                self._fold()
            if self._waiting_labels is None:
                self._new_keys, self._waiting_labels = set(), {}
            assert self._new_keys is not None
            if not self._unfolded("slices").has(key):
                self._new_keys.add(key)
            self._waiting_labels.setdefault(key, set()).update(values[:2])
            assert self._rows is not None
            self._rows.learn(values, None)
            plan = values, weighted
        return super()._push(plan)

    def _fold(self) -> None:
        self._new_keys = self._waiting_labels = None
        super()._fold()

    def _drop_pending(self) -> None:
        self._new_keys = self._waiting_labels = None
        super()._drop_pending()

    def _take_row(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """One sample as scalars, for a wrapped metric that takes one sample its own way
        (``Bootstrap``; one with declared columns uses the buffer of ``_declare_rows``): the
        slice's state takes the row in place, where it waits in that state's buffer, instead
        of a copy of the slice updated and folded per call (2 ms a call for
        ``Sliced(Bootstrap(Accuracy(), 200))`` in 0.8.11). False, with nothing changed, for
        any other call (the ordinary ``update`` takes it, and words its errors). Lock held."""
        if type(self._template)._take_row is None:
            return False
        by = kwargs.get("by")
        kind = _key_kind(by)  # an int64 or a string with a UTF-8 form; not a bool
        if kind is None or not all(type(a) in _SCALAR_TYPES for a in args):
            return False
        if kind == "str" and by.endswith("\x00"):  # type: ignore[union-attr]
            return False  # (numpy drops trailing NULs: the ordinary update keys it as numpy does)
        rest = {}
        for name, value in kwargs.items():
            if name == "by":
                continue
            if name not in ("sample_weight", "ids"):
                return False
            if value is not None and type(value) not in _SCALAR_TYPES:
                return False
            rest[name] = value
        table = self.slices
        if table._pack is not None:
            return False
        held = table.view()
        key = int(by) if kind == "int" else str(by)  # type: ignore[arg-type]
        metric = held.get(key)
        if metric is None:
            if table.kind() not in (None, kind):
                return False
            limit = self._config["max_slices"]
            if limit is not None and len(held) >= limit:
                return False
        self._check_room(1)
        if metric is None:
            metric = self._template.copy().update(*args, **rest)  # type: ignore[attr-defined]
            held[key] = metric
        else:
            metric.update(*args, **rest)  # type: ignore[attr-defined]
        # (A wrapped metric taking rows its own way may count one many times, a Bootstrap
        # replicate up to 255: the bound is found again from the slices if ever asked.)
        table.bound = None
        self._count += 1
        if metric._pending is not None:
            self._note_waiting(key, 1, len(held))
        return True

    def _note_waiting(self, key: Key, rows: int, slices: int) -> None:
        """``rows`` more wait in slice ``key``'s buffer: fold every waiting slice once more
        than ``FOLD_ROWS`` plus ``WAITING_PER_SLICE`` per slice wait. Lock held."""
        if self._waiting is None:
            self._waiting = set()
        self._waiting.add(key)
        self._waiting_rows += rows
        if self._waiting_rows > FOLD_ROWS + WAITING_PER_SLICE * slices:
            self._fold_waiting()

    def _fold_waiting(self) -> None:
        """Fold the rows waiting in slice states (:meth:`_take_row`). Lock held."""
        table = self.slices
        held = table.view() if table._pack is None else {}
        for key in self._waiting or ():
            metric = held.get(key)
            if metric is not None:
                metric._fold_locked()
        self._waiting, self._waiting_rows = None, 0

    def _check_compatible(self, other: Any) -> None:
        super()._check_compatible(other)
        self._check_compatible_together((other,))

    def _check_slices_join(self, others: list[Any], limit: int) -> None:
        """``IncompatibleStateError`` unless each slice merges with its namesakes in
        ``others``, within a budget of slice states read (``_slice_joins.check_slices_join``)."""
        check_slices_join(self.slices, others, limit)

    def _check_compatible_together(self, others: tuple[Any, ...]) -> None:
        """Key kinds and ``max_slices`` across every operand of a merge of several."""
        tables = [self.slices, *(o.slices for o in others)]
        check_keys_join(tables, self._config["max_slices"])

    def _validate_state(self) -> None:
        limit = self._config["max_slices"]
        if limit is not None and len(self.slices) > limit:
            raise ValueError(f"{len(self.slices)} slices, past max_slices={limit}")
        if (self._count == 0) != (len(self.slices) == 0):
            raise ValueError("slices and count disagree about emptiness")
        if self.slices.rows() != self._count:  # each row goes to one slice
            raise ValueError(f"the slices hold {self.slices.rows()} rows, the state {self._count}")

    # -- results ---------------------------------------------------------------------------------

    def _compute(self) -> dict[Key, Any]:
        keys = self.keys()
        own = _library_class(self._template)
        pack = self.slices.pack()
        packed = None if pack is None or not own else pack.computed()
        if packed is not None:
            return {k: packed[k] for k in keys}
        view = self.slices.view()
        metrics = [view[k] for k in keys]
        # A wrapped metric may score many states at once (ROCAUC: segmented sums over every
        # slice's buckets), equal to the bit to one compute() per slice.
        many = getattr(type(self._template), "_compute_many", None) if own else None
        values = many(metrics) if many is not None and metrics else None
        if values is None:
            packed = self._read_stale("compute") if own else {}
            values = [
                packed[k] if k in packed else m.compute()
                for k, m in zip(keys, metrics, strict=True)
            ]
        return dict(zip(keys, values, strict=True))

    def _read_stale(self, read: str, level: float = 0.95) -> dict[Key, Any]:
        """``{key: compute()}`` or ``{key: interval(level)}`` (``read``) of the score slices
        held one state each whose states have not kept that read, from one table of their
        states (``SliceTable.read_pack``), when there are enough of them to pay for it; the
        reads are given to those states, so the next read finds them kept. Empty otherwise."""
        reads = SlicePack.reads(self._template, read)
        found = None if reads is None else self.slices.read_pack(reads)
        if found is None:
            return {}
        pack, states = found
        out = pack.computed() if read == "compute" else pack.intervals(level)
        pack.keep_reads(states)
        return {} if out is None else out

    def _empty_result(self) -> dict[Key, Any]:
        return {}

    def intervals(self, level: float = 0.95) -> dict[Key, tuple[float, float]]:
        """``{key: (low, high)}``: each slice's ``interval(level)``, sorted by key."""
        level = check_level(level)  # named even when there is no slice to ask
        if not hasattr(self._template, "interval"):
            raise TypeError(
                f"{type(self._template).__name__} has no interval(); wrap it in Bootstrap "
                "(Sliced(Bootstrap(metric))) for bootstrap intervals per slice"
            )
        keys = self.keys()
        pack = self.slices.pack()
        own = _library_class(self._template)
        packed = None if pack is None or not own else pack.intervals(level)
        if packed is not None:  # every slice from the packed table at once
            return {k: packed[k] for k in keys}
        stale = self._read_stale("interval", level) if own else {}
        view = self.slices.view()
        return {k: stale[k] if k in stale else view[k].interval(level) for k in keys}

    def _floats(self, what: str) -> list[tuple[Key, float]]:
        out = []
        for key, value in self.compute().items():
            if isinstance(value, (float, int, np.floating, np.integer)):
                out.append((key, float(value)))
            else:
                raise TypeError(
                    f"{what}: {type(self._template).__name__} gives a "
                    f"{type(value).__name__} per slice, not a number"
                )
        return out

    def gap(self) -> float:
        """The largest slice value minus the smallest (``nan`` slices left out; ``nan`` if none)."""
        values = [v for _, v in self._floats("gap") if not math.isnan(v)]
        return max(values) - min(values) if values else math.nan

    def worst(self, k: int = 5) -> list[tuple[Key, float]]:
        """The ``k`` worst slices as ``(key, value)``, worst first (``nan`` slices left out).

        The lowest values where the wrapped metric's ``higher_is_better`` is True, the highest
        where it is False (errors and losses); ties go to the smaller key.
        """
        k = config_int(k, "k")
        better = getattr(self._template, "higher_is_better", None)
        if better is None:
            raise InputError(
                f"worst: {type(self._template).__name__} declares no direction "
                "(higher_is_better is None), so no slice is worse than another"
            )
        values = [(key, v) for key, v in self._floats("worst") if not math.isnan(v)]
        values.sort(key=lambda kv: kv[1] if better else -kv[1])  # stable: key order on ties
        return values[:k]

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._template._config.items())
        return (
            f"Sliced({type(self._template).__name__}({inner}), "
            f"max_slices={self._config['max_slices']!r}, slices={len(self.slices)}, "
            f"count={self._count})"
        )


def _library_class(metric: Metric) -> bool:
    """Whether ``metric`` is of one of the library's own classes: the packed tables and
    ``_compute_many`` give their ``compute()`` and ``interval()`` for every slice at once; a
    user's subclass may override either, and its own states answer."""
    return type(metric).__module__.startswith("streammetrics.")


def _grown(bound: float | None, n: int, kwargs: dict[str, Any]) -> float | None:
    """A bound above every slice's count or weight totals once a batch of ``n`` rows, weighted
    by ``kwargs``' ``sample_weight`` (none: 1 each), is added to slices below ``bound``: the
    slice that took every row grows by at most ``n`` and their weights. None when ``bound``
    is not known or the weights cannot be summed here (a tensor on a GPU): the table then
    finds the bound by looking at its slices when it is next asked."""
    if bound is None:
        return None
    weight = kwargs.get("sample_weight")
    if weight is None:
        return math.nextafter(bound + n, math.inf)  # (rounded up, as below)
    try:
        column = np.asarray(weight, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):  # (the wrapped update names the fault)
        return None
    total = float(column.sum()) * (n if column.ndim == 0 else 1)
    if not 0.0 <= total < math.inf:
        return None
    # Rounded up: a batch worth less than the bound's last place must still raise it (the
    # slice's own total grows), and a sum rounded to nearest is within half of it.
    return math.nextafter(bound + n + total * (1.0 + 2.0**-50), math.inf)
