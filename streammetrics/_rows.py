"""The declared columns of a metric's ``update``, and the checks of the per-request path.

A metric declares, once, the kind of each column of its ``update`` (:class:`Rows`). A call whose
columns are scalars (one sample) or small 1-D arrays is then checked here, in plain Python or one
numpy reduction per column (the checks of each kind of column: ``streammetrics._row_checks``),
before ``streammetrics._pending`` buffers it.

The checks here never raise. They only decide that a call is *certainly* one the metric's own
``update`` accepts; anything else (a value never seen, a NaN, an unknown argument, another
shape) takes the ordinary path, which raises the ordinary ``InputError`` with the state
unchanged. Checks that depend on the state (the kind of labels held, a third label under
``average="binary"``, a state of two output columns fed one) are covered by learning: a label
value, a key kind or a call shape is trusted only after the metric's own ``update`` has accepted
it (since the last ``reset`` or ``merge``). A label set only grows between those events, so a
value accepted once stays acceptable. Where the last column is a slice key (``Sliced``'s
``by=``), each slice is a state of its own: label values and key kinds are trusted per slice
key, as ``(value, slice key)`` pairs.
"""

from __future__ import annotations

from itertools import repeat
from typing import Any

import numpy as np

from ._row_checks import (
    _KINDS,
    _SCALAR_TYPES,
    KEY,
    LABEL,
    Seen,
    _all_str,
    _bfloat16_column,
    _column_trusted,
    _is_scalar,
    _key_kind,
    _never,
    _paired_scalar_check,
    _row_check,
    _scalar_check,
    _weight_column,
    _with_pairs,
    scalar_weight_ok,
)
from ._small_columns import _TENSOR, SMALL_BATCH, _small_column, _small_tensor

__all__ = ["SMALL_BATCH", "_SCALAR_TYPES", "Rows"]


def _label_kind(value: Any) -> str:
    """The kind of a label as the label states tell them apart (``states.labels``)."""
    return "str" if isinstance(value, str) else "int"


#: The labels of a binary score metric (``ROCAUC``, ``AveragePrecision``, ``GAUC``): every
#: value its ``update`` takes (``True`` and ``False`` are equal to them), which no state of it
#: refuses, for ``Rows.trust_labels``.
BINARY_LABELS = (0, 1)


class Rows:
    """The declared columns of a metric's ``update`` and what has been learnt about them.

    Parameters
    ----------
    kinds : sequence of str
        The kind of each positional column: ``"label"``, ``"key"``, ``"number"`` or
        ``"probability"``.
    weights : bool
        Whether ``update`` takes ``sample_weight=`` (non-negative finite numbers).
    """

    __slots__ = (
        "_check",
        "anywhere",
        "checks",
        "fixed",
        "free",
        "keyword",
        "kinds",
        "kinds_known",
        "label_kinds",
        "labels",
        "n",
        "paired",
        "row_ok",
        "scalars",
        "shapes",
        "weights",
    )

    def __init__(
        self,
        kinds: tuple[str, ...],
        weights: bool,
        keyword: str | None = None,
        free: bool = False,
    ) -> None:
        for kind in kinds:
            if kind not in _KINDS:
                raise ValueError(f"unknown column kind {kind!r}")
        self.kinds = kinds
        self.n = len(kinds)
        self.weights = weights
        #: The last column is passed as this keyword argument of ``update`` (``Sliced``'s
        #: ``by=``), not positionally; None: every column is positional.
        self.keyword = keyword
        # Per column, the trusted values (LABEL) or kinds "int"/"str" (KEY); unused otherwise.
        self.labels: list[Seen] = [Seen() for _ in kinds]
        #: With a slice key (``keyword``): the label and key columns before it, whose trusted
        #: values are ``(value, slice key)`` pairs (each slice's label set is its own).
        self.paired: tuple[int, ...] = tuple(
            j for j, kind in enumerate(kinds[:-1]) if keyword is not None and kind in (LABEL, KEY)
        )
        #: ``free``: the keyed metric's slices accept any label another slice accepted, as long
        #: as every label accepted so far is of one kind (integers or strings): a label value is
        #: then trusted in every slice, new ones included, not only in the slices it came with.
        #: ``Sliced`` says so for wrapped metrics whose updates check labels by kind alone
        #: (``Metric._slice_free_labels``). Only for paired columns that are all labels.
        self.free = free and bool(self.paired) and all(kinds[j] == LABEL for j in self.paired)
        #: With ``free``: per column, every label value accepted in any slice; and the kinds
        #: ("int", "str") of the labels the state holds (one kind: the values are trusted
        #: anywhere), known only once read off the state (``know_kinds``) since the last
        #: forget, load or large batch.
        self.anywhere: list[Seen] = [Seen() for _ in kinds] if self.free else []
        self.label_kinds: set[str] = set()
        self.kinds_known = False
        # One predicate per column for scalars (a bound ``set.__contains__`` for labels), and
        # one for the whole row: built at the first scalar call (most copies never see one).
        self.checks: tuple[Any, ...] | None = None
        self._check: Any = None
        #: ``row_ok(args)``: ``args`` is one sample as scalars that certainly passes ``update``
        #: (always False until one-sample calls are trusted).
        self.row_ok: Any = _never
        # Trusted call shapes: (scalars?, weighted?); ``scalars``: (True, False) is trusted.
        self.shapes: set[tuple[bool, bool]] = set()
        self.scalars = False
        #: The values of the label columns trusted from the start and after a reset
        #: (:meth:`trust_labels`), or none.
        self.fixed: tuple[Any, ...] = ()

    def trust_labels(self, values: tuple[Any, ...]) -> None:
        """Trust one sample of scalars whose label columns hold ``values`` from the first call
        (a binary metric's 0 and 1, the only labels its ``update`` takes, which no state
        refuses): as if calls had brought each, so a fresh state buffers its first request,
        and a window's new slot trusts a row of either class (0.8.28 took the ordinary update
        for the first row of each class in every new slot: about 80 µs each for ``ROCAUC``).
        At construction and after a reset (:meth:`restart`): a state that forgets its trust
        otherwise (a load, a merge, a count near its bound) learns it again from the calls it
        takes, as for any label."""
        self.fixed = tuple(values)
        for j, kind in enumerate(self.kinds):
            if kind == LABEL and j not in self.paired:
                self.labels[j].update(values)
        self.shapes.add((True, False))
        if self.weights:
            self.shapes.add((True, True))
        self.checks = self._check = None
        self._trust_scalars(True)

    def restart(self) -> None:
        """Trust what a fresh state trusts (a metric's ``reset``): nothing, or the fixed
        labels of :meth:`trust_labels`."""
        self.forget()
        if self.fixed:
            self.trust_labels(self.fixed)

    def blank(self) -> Rows:
        """The same declaration with nothing learnt (what :meth:`forget` leaves): what
        ``Rows(kinds, weights, keyword, free)`` sets, the declaration taken from this one, which
        ``__init__`` checked (every metric ``loads`` builds makes one)."""
        out = Rows.__new__(Rows)
        out.kinds, out.n, out.weights, out.keyword = self.kinds, self.n, self.weights, self.keyword
        out.paired, out.free, out.fixed = self.paired, self.free, self.fixed
        out.labels = [Seen() for _ in self.kinds]
        out.anywhere = [Seen() for _ in self.kinds] if self.free else []
        out.label_kinds, out.kinds_known = set(), False
        out.checks = out._check = None
        out.row_ok, out.shapes, out.scalars = _never, set(), False
        return out

    def copy(self) -> Rows:
        """A copy with its own learnt sets (and checks bound to them)."""
        out = Rows(self.kinds, self.weights, self.keyword, self.free)
        out.fixed = self.fixed
        out._take(self.labels, self.anywhere, self.label_kinds, self.kinds_known, self.shapes)
        return out

    def _take(
        self,
        labels: list[Any],
        anywhere: list[Any],
        kinds: set[str],
        known: bool,
        shapes: set[Any],
    ) -> None:
        for mine, theirs in zip(self.labels, labels, strict=True):
            mine.update(theirs)
        for mine, theirs in zip(self.anywhere, anywhere, strict=True):
            mine.update(theirs)
        self.label_kinds.update(kinds)
        self.kinds_known = known
        self.shapes.update(shapes)
        self._trust_scalars((True, False) in self.shapes)

    def __deepcopy__(self, memo: dict[int, Any]) -> Rows:
        # (a copy of the learnt sets, whose members are immutable: deepcopy walked every
        # ``(label, slice key)`` pair of a ``Sliced`` state's sets, 0.1 ms at 20 slices)
        return self.copy()

    def __getstate__(self) -> tuple[Any, ...]:
        # Copies rebuild ``checks``: a bound ``set.__contains__`` would still read the original.
        return (
            self.kinds,
            self.weights,
            self.labels,
            self.shapes,
            self.keyword,
            self.free,
            self.anywhere,
            self.label_kinds,
            self.kinds_known,
            self.fixed,
        )

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        kinds, weights, labels, shapes, keyword, free, anywhere, label_kinds, known = state[:9]
        self.__init__(kinds, weights, keyword, free)  # type: ignore[misc]
        self.fixed = state[9] if len(state) > 9 else ()  # (pickled before 0.8.29: none)
        self._take(labels, anywhere, label_kinds, known, shapes)

    @property
    def learnt(self) -> bool:
        """Whether anything is trusted."""
        return bool(self.shapes) or any(self.labels) or bool(self.label_kinds) or self.kinds_known

    def forget(self) -> None:
        """Trust nothing again (after ``reset``, ``merge`` or a load)."""
        if not self.learnt:
            return  # nothing learnt (a fresh copy, as ``a + b`` makes)
        for seen in (*self.labels, *self.anywhere):
            seen.clear()
        self.label_kinds.clear()
        self.kinds_known = False
        self.shapes.clear()
        self._check = None  # (built for the kinds of labels seen: rebuilt when trusted again)
        self._trust_scalars(False)

    def _trust_scalars(self, trusted: bool) -> None:
        self.scalars = trusted
        self.row_ok = self._row_check() if trusted else _never

    def _scalar_checks(self) -> tuple[Any, ...]:
        checks = self.checks
        if checks is None:
            checks = self.checks = tuple(
                _paired_scalar_check(kind) if j in self.paired else _scalar_check(kind, seen)
                for j, (kind, seen) in enumerate(zip(self.kinds, self.labels, strict=True))
            )
        return checks

    def _row_check(self) -> Any:
        if self._check is None:
            check = _row_check(self._scalar_checks())
            if self.paired:
                anywhere = self.anywhere if self._anywhere() else None
                check = _with_pairs(
                    check, self._pairs_ok, self.kinds, self._scalar_checks(), self.labels, anywhere
                )
            self._check = check
        return self._check

    def _anywhere(self) -> bool:
        """Whether a label accepted in one slice is trusted in every slice (``free``, and the
        state known to hold labels of one kind at most)."""
        return self.free and self.kinds_known and len(self.label_kinds) <= 1

    def row_known(self, args: tuple[Any, ...]) -> bool:
        """``row_ok``, with each paired value accepted before in this row's own slice (never
        merely in another): the row adds no label to its slice (a window's test)."""
        if not self.row_ok(args):
            return False
        return not self._anywhere() or self._pairs_seen(args)

    def _pairs_ok(self, args: tuple[Any, ...]) -> bool:
        """Whether each paired value of one row of scalars was accepted in its row's slice
        (or, see :meth:`_anywhere`, in any slice)."""
        if self._anywhere():
            return all(args[j] in self.anywhere[j] for j in self.paired)
        return self._pairs_seen(args)

    def _pairs_seen(self, args: tuple[Any, ...]) -> bool:
        key = args[-1]
        for j in self.paired:
            v = args[j]
            if (v if self.kinds[j] == LABEL else _key_kind(v), key) not in self.labels[j]:
                return False
        return True

    def scalar_args(self, args: tuple[Any, ...]) -> bool:
        """True when ``args``, one unweighted sample as scalars, certainly passes ``update``."""
        return bool(self.row_ok(args))

    # -- the checks --------------------------------------------------------------------------

    def weight_by_keyword(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
        """``(args, kwargs)`` with ``sample_weight`` given by position (``update(y, p, w)``)
        moved to its keyword, for a call with one positional value more than the declared
        columns and nothing by keyword; None for any other call. A declared ``update`` takes
        ``sample_weight`` right after its columns (``tests/test_wrapper_positional_weight.py``
        checks every metric); a keyword column (``Sliced``'s ``by=``) is already the last of
        ``args`` here. (0.8.14 took the ordinary update for every such call: 24-63 us a
        sample, against about 2 us by keyword.)"""
        if kwargs or not self.weights or len(args) != self.n + 1:
            return None
        if self.keyword is None:
            return args[:-1], {"sample_weight": args[-1]}
        return (*args[:-2], args[-1]), {"sample_weight": args[-2]}

    def scalar_row(self, args: tuple[Any, ...], weight: Any) -> bool:
        """True when ``args`` (one sample, as scalars) certainly passes the metric's update."""
        if len(args) != self.n or (True, weight is not None) not in self.shapes:
            return False
        try:
            for check, v in zip(self._scalar_checks(), args, strict=False):  # lengths checked
                # Only plain scalars are looked up: a tensor or a Decimal may hash like a label.
                if type(v) not in _SCALAR_TYPES or not check(v):
                    return False
            if self.paired and not self._pairs_ok(args):
                return False
        except Exception:  # not comparable: the ordinary path says what is wrong
            return False
        return weight is None or scalar_weight_ok(weight)

    def small_batch(self, args: tuple[Any, ...], weight: Any) -> tuple[np.ndarray, ...] | None:
        """Copies of the columns of a small batch that certainly passes the metric's update."""
        if (False, weight is not None) not in self.shapes:
            return None
        cols = []
        n = -1
        tensor = _TENSOR[0]
        for j, (kind, seen, x) in enumerate(zip(self.kinds, self.labels, args, strict=True)):
            # A copy: the caller may reuse its buffer (or tensor) once update returns.
            if type(x) is tensor:
                if x.dtype is _TENSOR[1]:
                    arr = _bfloat16_column(kind, x)  # checked already
                    if arr is None or (n >= 0 and len(arr) != n):
                        return None
                    n = len(arr)
                    cols.append(arr)
                    continue
                arr = _small_tensor(x)
                if arr is None:
                    return None
            else:
                arr = _small_column(x)
                if arr is None or arr.ndim != 1:
                    return None
                if type(x) is list and arr.dtype.kind == "U" and not _all_str(x):
                    return None  # numpy reads ["a", 1] as strings; update refuses such a column
            if n != len(arr):
                if n >= 0:
                    return None
                n = len(arr)
                if n == 0:
                    return None
            if j in self.paired:  # checked below, against the slice keys
                if arr.dtype.kind not in ("biuU" if kind == LABEL else "iuU"):
                    return None
            elif not _column_trusted(kind, seen, arr):
                return None
            cols.append(arr)
        if self.paired and not self._pairs_trusted(cols):
            return None
        if weight is not None:
            w = _weight_column(weight, n)
            if w is None:
                return None
            cols.append(w)
        return tuple(cols)

    def _pairs_trusted(self, cols: list[np.ndarray]) -> bool:
        """Whether every paired value of a small batch was accepted in its row's slice (or,
        see :meth:`_anywhere`, in any slice)."""
        if self._anywhere():
            return all(self.anywhere[j].issuperset(cols[j].tolist()) for j in self.paired)
        keys = cols[self.n - 1].tolist()
        for j in self.paired:
            values: Any = cols[j].tolist()
            if self.kinds[j] == KEY:  # one kind for the whole column, read off its dtype
                dtype = cols[j].dtype
                if dtype.kind == "U":
                    values = repeat("str", len(keys))
                elif dtype.kind == "i" or (dtype.kind == "u" and dtype.itemsize < 8):
                    values = repeat("int", len(keys))
                else:
                    return False
            if not self.labels[j].issuperset(zip(values, keys, strict=True)):
                return False
        return True

    # -- learning from accepted calls -----------------------------------------------------------

    def kinds_unknown(self) -> None:
        """The state took labels this object did not learn (a large batch): their kinds are
        read off the state before labels are trusted in every slice again."""
        if self.free and self.kinds_known:
            self.kinds_known = False
            self.label_kinds.clear()
            self._check = None
            self._trust_scalars((True, False) in self.shapes)

    def know_kinds(self, kinds: set[str]) -> None:
        """The kinds of labels the state holds (``free`` only), read off it."""
        self.label_kinds.update(kinds)
        self.kinds_known = True
        self._check = None
        self._trust_scalars((True, False) in self.shapes)

    def learn(self, args: tuple[Any, ...], weight: Any) -> None:
        """Trust what an ``update`` of the metric just accepted (small calls only)."""
        scalars = all(_is_scalar(v) for v in args)
        if scalars:
            values: list[list[Any]] = [[v] for v in args]
        else:
            values = []
            for kind, x in zip(self.kinds, args, strict=True):
                arr = _small_column(x)
                if arr is None or arr.ndim != 1:
                    self.kinds_unknown()  # (nothing learnt from it)
                    return
                if kind in (LABEL, KEY):
                    if arr.dtype.kind not in "biufU":
                        self.kinds_unknown()
                        return
                    values.append(arr.tolist())
                else:
                    values.append([])  # only label and key values are remembered
        keys = values[-1]
        uniform = self._anywhere()
        for j, (kind, seen, column) in enumerate(zip(self.kinds, self.labels, values, strict=True)):
            if kind == KEY:
                column = [_key_kind(v) for v in column]
            if j in self.paired:
                seen.update(pair for pair in zip(column, keys, strict=True) if pair[0] is not None)
                if self.free:
                    self.anywhere[j].update(column)
                    self.label_kinds.update(_label_kind(v) for v in column)
            elif kind == LABEL:
                seen.update(column)
            elif kind == KEY:
                seen.update(column)
                seen.discard(None)
        if self.free and uniform != self._anywhere():
            self._check = None  # a second kind of label: back to the pairs, slice by slice
        self.shapes.add((scalars, weight is not None))
        self._trust_scalars((True, False) in self.shapes)
