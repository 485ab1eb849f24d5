"""``Decayed``: a metric whose rows fade with age (forward decay), and the scaling it relies on."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .._codec import CountOverflowError
from .._inputs import as_weights
from .._rows import _SCALAR_TYPES
from ..base import _MERGES, Metric, StateBlock, metric_spec
from ..errors import InputError, NoIntervalError
from ..uncertainty import NAN_INTERVAL, check_level, check_weight_sq
from ._rows import Rows, column_names, template, unweighted, weight_by_keyword
from ._windowing import (
    EPOCH_HALVINGS,
    Wrapper,
    positive,
    times,
)

__all__ = ["Decayed", "scale", "scale_plan"]


def scale_plan(metric: Metric, path: str = "metric") -> None:
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
            scale_plan(default, f"{path}.{field_name}")
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
                f"{where} is a sum of {type(default).__name__} values, not of weights; Decayed "
                "cannot scale it"
            )


def scale(metric: Metric, factor: float) -> None:
    """Multiply every weight in ``metric``'s state by ``factor`` (in place). Scaled up, the
    state may now sit near its bounds: what its per-request path learnt to trust is forgotten,
    so the next call is checked against them (``at()`` scales a copy up by as much as 2**64,
    and 0.8.16's copy then buffered rows whose fold failed at the next read)."""
    if factor > 1.0 and metric._rows is not None:
        metric._rows.forget()
    for field_name, field in metric._fields.items():
        value = getattr(metric, field_name)
        f = factor**field.power  # sums of squared weights scale by the square
        if isinstance(value, Metric):
            scale(value, factor)
        elif isinstance(value, StateBlock):
            value.scale(factor)
        elif isinstance(value, np.ndarray):
            setattr(metric, field_name, value.astype(np.float64) * f)
        else:
            setattr(metric, field_name, float(value) * f)


#: The largest epoch (in steps of ``EPOCH_HALVINGS`` half-lives from time 0) a state holds:
#: well inside int64, so its bytes always encode.
MAX_EPOCH = 2**62

#: Marks a state of schema 2 or older for rescaling once loaded (its reference was the epoch's
#: start); never on the wire.
_START_REFERENCE = "\0start-reference"


#: The bound of ``weight`` (``weight_sq``: its square). The rows' decayed weights: the wrapped
#: state holds them within its own bound, 2**100, in each of its parts (a ``Sliced``'s slices,
#: of at most 2**53 rows each), so a stream stays below 2**153; far below, float64's range.
WEIGHT_BOUND = 2.0**160


def _check_weights(
    weight: float, weight_sq: float, error: type[Exception] = CountOverflowError
) -> None:
    """``error`` unless ``weight`` and ``weight_sq`` lie within their bounds (nan: unknown)."""
    if weight > WEIGHT_BOUND or weight_sq > WEIGHT_BOUND * WEIGHT_BOUND:
        raise error(
            f"weight: the decayed weights would total {weight:.6g} (squares {weight_sq:.6g}), "
            "past the bound of 2**160; refused, the state is unchanged"
        )


def _later(a: float | int, b: float | int) -> float | int:
    """The later of two times, compared exactly (an int against a float too); of two equal
    ones the float, so that the result does not depend on the order of merges."""
    if a != b:
        return a if a > b else b
    return a if isinstance(a, float) else b


class Decayed(Wrapper):
    """A metric whose rows fade with age: a row ``half_life`` older than the newest weighs half.

    Each row is weighted ``w * 2**(-(T - t) / half_life)`` where ``t`` is its timestamp, ``T``
    the latest timestamp seen and ``w`` its ``sample_weight`` (1 by default). The wrapped metric
    must take ``sample_weight`` and keep a state made of sums of weights (counts, weighted counts
    or weighted sums; e.g. the confusion-matrix metrics, ``TopKAccuracy``, score histograms);
    others (maxima, samples, custom merges) are refused with an ``InputError``.

    Implementation: forward decay (Cormode, Shkapenyuk, Srivastava and Xu, "Forward decay: a
    practical time decay model for streaming systems", ICDE 2009). Rows are added with the
    growing weight ``2**((t - ref) / half_life)`` instead of shrinking every stored weight at
    each step; the reference ``ref`` is the end of the latest row's epoch on a fixed grid of 64
    half-lives, so a stored weight never exceeds the row's own (the wrapped metric accepts the
    weights it accepts unwrapped, at any time); when the reference moves the whole state is
    multiplied by an exact power of two, so merges of states at different references are exact
    rescalings. Rows more than about 1,000 half-lives older than the newest underflow to weight
    0 (they still count in ``count``).

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

    #: The leading options passed by position, as the API shows them
    #: (``Decayed(metric, half_life)``; ``streammetrics._configs.keyword_config``).
    _positional_config: ClassVar[int] = 2

    #: Its value is the wrapped metric's, so is its direction (set per instance).
    higher_is_better = None

    def __init__(self, metric: Metric, half_life: Any) -> None:
        super().__init__()
        self._template = template(metric, "its windows", takes="timestamps")
        scale_plan(self._template)
        leaf = unweighted(self._template)  # (looking into a Sliced or a collection's members)
        if leaf is not None:
            inside = "" if leaf == type(self._template).__name__ else " (inside the metric)"
            raise InputError(
                f"metric: {leaf}.update{inside} takes no sample_weight, so Decayed cannot "
                "weight its rows"
            )
        half_life = positive(half_life, "half_life")
        self.higher_is_better = getattr(self._template, "higher_is_better", None)
        self._add_config(metric=metric_spec(self._template), half_life=half_life)
        self._add_state("inner", self._template.copy(), merge=None)
        self._add_state("epoch", 0, merge=None)
        self._add_state("latest", -math.inf, merge=None, dtypes=(np.int64,))
        # The decayed weights' sum and sum of squares at the reference time (schema 2): for
        # the metrics that read weights as counts, the interval takes Kish's effective size.
        self._add_state("weight", 0.0, merge=None)
        self._add_state("weight_sq", 0.0, merge=None)

    inner: Metric
    epoch: int
    #: The latest timestamp: an int when it came as an integer (int64 nanoseconds lie past
    #: float64's integers), else a float.
    latest: float | int
    weight: float
    weight_sq: float

    #: 2 (0.8.6): ``weight`` and ``weight_sq``, the decayed weights' sum and sum of squares.
    #: 3 (0.8.10): the reference time is the end of the epoch, not its start (the stored
    #: weights are 2**-64 times schema 2's).
    _schema: ClassVar[int] = 3

    @classmethod
    def _upgrade_state(cls, state: Any, schema: int) -> Any:
        """Schema 1 kept no sums of the weights: unknown (nan) for a state with rows, so the
        interval of a metric reading weights as counts is nan until the state is reset."""
        if schema < 2 and isinstance(state, dict) and "weight" not in state:
            unknown = 0.0 if state.get("count") == 0 else math.nan
            state = {**state, "weight": unknown, "weight_sq": unknown}
        if schema < 3 and isinstance(state, dict):
            state = {**state, _START_REFERENCE: True}  # rescaled once loaded
        return state

    def _load_state(self, state: Any) -> None:
        if isinstance(state, dict) and _START_REFERENCE in state:
            state = {k: v for k, v in state.items() if k != _START_REFERENCE}
            super()._load_state(state)
            if not self._count:
                return  # nothing to rescale (and scaling would make an empty table weighted)
            # Schema 2 weighed rows from the start of the epoch: one epoch's halvings, exactly.
            shift = math.ldexp(1.0, -EPOCH_HALVINGS)
            scale(self.inner, shift)
            self.weight, self.weight_sq = self.weight * shift, self.weight_sq * shift * shift
            return
        super()._load_state(state)

    def _ref(self, epoch: int) -> float:
        """The reference time of ``epoch``: its end (where the next epoch starts)."""
        return float((epoch + 1) * EPOCH_HALVINGS * self._config["half_life"])

    def _since_ref(self, t: np.ndarray, epoch: int) -> np.ndarray:
        """Each time minus the reference of ``epoch``, as float64. Integer times and half-life
        are subtracted as integers first: int64 nanoseconds (about 1.7e18 now) lie far past
        float64's integers, whose spacing there (256 ns) shifted each row's decay (0.8.7:
        weights off by 1e-4 relative at a 1 ms half-life)."""
        half_life = self._config["half_life"]
        if isinstance(half_life, int) and len(t):
            ref = (epoch + 1) * EPOCH_HALVINGS * half_life
            if t.dtype.kind == "i" and abs(ref) < 2**63:
                with np.errstate(over="ignore"):
                    diff = t - np.int64(ref)  # (wraps where the difference passes int64)
                since: np.ndarray = diff.astype(np.float64)
                wrapped = np.where(t >= 0, (ref < 0) & (diff < 0), (ref >= 0) & (diff >= 0))
                if wrapped.any():
                    # Rows about 2**63 from the reference weigh 0 whatever the rounding; the
                    # others keep their exact difference (0.8.18's first cut took the float
                    # path for a whole batch holding one such row, up to 128 ns off).
                    since[wrapped] = t[wrapped].astype(np.float64) - float(ref)
                return since
            if t.dtype.kind != "i":
                # Float times against the exact integer reference, as int times are: ``ref``
                # as a float pair (its rounding past 2**53, up to 128 ns at today's times,
                # made float and int rows of one state disagree by 2**(128 ns / half-life)).
                head = float(ref)
                tail = float(ref - int(head)) if math.isfinite(head) else 0.0
                out: np.ndarray = (t.astype(np.float64) - head) - tail
                return out
        return t.astype(np.float64) - self._ref(epoch)

    def _epoch_of(self, t: float | int) -> float:
        """``floor(t / (64 half-lives))``; inf for a time whose epoch is past any int (a huge
        time over a tiny half-life), which ``update`` refuses by its range check. Exact for an
        integer time and half-life."""
        half_life = self._config["half_life"]
        if isinstance(t, int) and isinstance(half_life, int):
            return t // (EPOCH_HALVINGS * half_life)
        q: float = t / (EPOCH_HALVINGS * half_life)
        return math.floor(q) if math.isfinite(q) else q

    def _since_latest_ref(self) -> float:
        """The latest timestamp minus the reference of the state's epoch, as float64, exact
        as :meth:`_since_ref` makes each row's (0.8.17 subtracted a float64 copy of an int64
        latest time, up to 128 ns off: ``compute()`` of one fresh row weighed 1.0147 at a
        1 us half-life, where ``at(now=latest)`` gave 1)."""
        kind = np.int64 if isinstance(self.latest, int) else np.float64
        return float(self._since_ref(np.asarray([self.latest], dtype=kind), self.epoch)[0])

    def update(
        self, *args: Any, timestamps: Any = None, sample_weight: Any = None, **kwargs: Any
    ) -> Decayed:
        """Add a batch, each row weighted by its age relative to the reference."""
        if sample_weight is None and not kwargs and type(timestamps) in (int, float):
            one = self._one_time(args, timestamps)
            if one is not None:
                return self._add(args, {}, *one, None, check_columns=False)
        if sample_weight is None:
            args, kw = weight_by_keyword(self._template, args, {})
            sample_weight = kw.get("sample_weight")
        raw = times(timestamps)  # int64 or float64
        t = raw.astype(np.float64)
        n = len(t)
        weights = as_weights(sample_weight, n)
        if n == 0:
            names = column_names(self)
            Rows(args, kwargs, 0, "timestamps", names).feed(self._template.copy(), None)
            return self
        top = int(raw.max()) if raw.dtype.kind == "i" else float(t.max()) + 0.0  # -0.0 -> 0.0
        return self._add(args, kwargs, raw, top, weights, check_columns=True)

    def _one_time(self, args: tuple[Any, ...], t: int | float) -> tuple[np.ndarray, Any] | None:
        """``(raw, top)`` of one unweighted sample given as scalars at time ``t`` (a Python int
        or float), as :func:`times` and ``update`` read them, without building and checking
        the batch's columns (13 us a request for ``Decayed(ROCAUC())`` before 0.8.29, most of
        it there); None for a call the batch path takes instead (more columns than the
        wrapped metric's, a time it refuses), which says what is wrong with it."""
        rows = self._template._rows
        if rows is None or len(args) != rows.n or not all(type(a) in _SCALAR_TYPES for a in args):
            return None
        if type(t) is int:
            if not -(2**63) <= t < 2**63:
                return None
            return np.array([t], dtype=np.int64), t
        if not math.isfinite(t):
            return None
        return np.array([t], dtype=np.float64), t + 0.0  # -0.0 -> 0.0

    def _add(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        raw: np.ndarray,
        top: int | float,
        weights: np.ndarray | None,
        check_columns: bool,
    ) -> Decayed:
        """The rows at times ``raw`` (the latest ``top``), weighted by their age (and by
        ``weights``), into the wrapped metric; ``check_columns``: check the columns' lengths
        first (one row of scalars has none to check)."""
        n = len(raw)
        latest = _later(self.latest, top)
        found = self._epoch_of(latest)
        if not -MAX_EPOCH <= found <= MAX_EPOCH:  # its bytes would not encode (int64)
            raise InputError(
                f"timestamps: {latest!r} lies more than 2**62 x 64 half-lives from time 0"
            )
        epoch = int(found)
        if check_columns:  # (the columns' lengths, named, before the weights')
            Rows(args, kwargs, n, "timestamps", column_names(self))
        inner = self.inner
        weight, weight_sq = self.weight, self.weight_sq
        if self._count and epoch != self.epoch:
            inner = inner.copy()
            shift = math.ldexp(1.0, -EPOCH_HALVINGS * (epoch - self.epoch))
            scale(inner, shift)
            weight, weight_sq = weight * shift, weight_sq * shift * shift
        factor = np.exp2(self._since_ref(raw, epoch) / self._config["half_life"])
        if weights is not None:
            factor = factor * weights
        if n == 1 and not kwargs and all(type(a) in _SCALAR_TYPES for a in args):
            # One sample as scalars (a request): its weight as a scalar too, so that the
            # wrapped metric's per-request path may buffer it (a 1-row weight array took its
            # ordinary update, about 50 us per request in 0.8.9).
            inner.update(*args, sample_weight=float(factor[0]))  # type: ignore[attr-defined]
        else:
            inner.update(*args, sample_weight=factor, **kwargs)  # type: ignore[attr-defined]
        weight += float(factor.sum())
        weight_sq += float(factor @ factor)
        return self._commit(
            n, inner=inner, epoch=epoch, latest=latest, weight=weight, weight_sq=weight_sq
        )

    def _check_compatible(self, other: Any) -> None:
        super()._check_compatible(other)
        _check_weights(self.weight + other.weight, self.weight_sq + other.weight_sq)

    def _held_total(self) -> float:
        # (the wrapped state's: its weights, rescaled to a common epoch, only shrink)
        total: float = self.inner._held_total()
        return total

    def _check_compatible_together(self, others: tuple[Any, ...]) -> None:
        # The wrapped states, across the operands (0.8.14 checked each with this one only,
        # and merged two that could not merge with each other until the second raised).
        self.inner._check_compatible_together(tuple(o.inner for o in others))

    def _merge_from(self, other: Any) -> None:
        theirs = other.inner.copy()
        # (Not ``self._count``: a merge of several adds the counts after the last of them.)
        if self.inner._count == 0:
            self.inner, self.epoch, self.latest = theirs, other.epoch, other.latest
            self.weight, self.weight_sq = other.weight, other.weight_sq
            return
        weight, weight_sq = other.weight, other.weight_sq
        if other.epoch < self.epoch:
            shift = math.ldexp(1.0, -EPOCH_HALVINGS * (self.epoch - other.epoch))
            scale(theirs, shift)
            weight, weight_sq = weight * shift, weight_sq * shift * shift
        elif other.epoch > self.epoch:
            shift = math.ldexp(1.0, -EPOCH_HALVINGS * (other.epoch - self.epoch))
            scale(self.inner, shift)
            self.weight, self.weight_sq = self.weight * shift, self.weight_sq * shift * shift
            self.epoch = other.epoch
        self.inner.merge(theirs)
        self.latest = _later(self.latest, other.latest)
        self.weight += weight
        self.weight_sq += weight_sq
        # The epoch of the later time, as update finds it: an int time's is exact, a float's
        # floor(t / D) may round up to the next epoch near 2**53 and above, so two operands
        # a few nanoseconds apart may hold different epochs (0.8.18's first cut kept the
        # larger, beside the other's time: bytes loads refused).
        found = int(self._epoch_of(self.latest))
        if found != self.epoch:
            shift = math.ldexp(1.0, EPOCH_HALVINGS * (self.epoch - found))
            scale(self.inner, shift)
            self.weight, self.weight_sq = self.weight * shift, self.weight_sq * shift * shift
            self.epoch = found

    def at(self, now: Any = None) -> Metric:
        """The wrapped metric with every weight decayed to time ``now`` (default: the latest).

        Ratios (accuracy, AUC, ...) do not depend on ``now``; counts (a confusion matrix) do.
        Its own ``interval()`` reads the decayed weights as they are (as counts, for
        ``ROCAUC`` and ``AveragePrecision``: too wide); :meth:`interval` corrects for that.
        """
        if now is None or self._count == 0:
            now_t = self.latest
        else:
            try:
                now_raw = times(np.asarray([now]))
            except InputError as exc:  # (the message names timestamps, its usual argument)
                raise InputError(f"now: {now!r} is not a time ({exc})") from None
            now_t = int(now_raw[0]) if now_raw.dtype.kind == "i" else float(now_raw[0])
            # (int against int: exact; a float ``now`` against the float of an int latest time,
            # which it may stand for: float(T) for T past 2**53 lies below T)
            latest = self.latest if isinstance(now_t, int) else float(self.latest)
            if now_t < latest:
                raise InputError(f"now: {now!r} is before the latest timestamp {self.latest}")
        out = self.inner.copy()
        if self._count:
            since = self._since_latest_ref()
            if now is not None:
                # (never before the latest time: a float ``now`` standing for an int latest
                # time past 2**53 may lie some nanoseconds below it)
                since = max(since, float(self._since_ref(now_raw, self.epoch)[0]))
            scale(out, float(np.exp2(-since / self._config["half_life"])))
        return out

    def _compute(self) -> Any:
        return self.at().compute()

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """The wrapped metric's interval on the decayed weights (Kish's effective size of the
        weights is what shrinks as old rows fade).

        Metrics that read weights as counts (``ROCAUC``, ``AveragePrecision``,
        ``MulticlassROCAUC``: ``docs/uncertainty.md``) get their weights scaled so that they
        total Kish's effective size ``(sum w)**2 / sum w**2``: their interval then depends
        neither on the time it is asked at nor on the weights' scale (read as counts, the
        decayed weights gave intervals about 1.4 times too wide, wider still later on)."""
        level = check_level(level)
        if callable(getattr(self._template, "intervals", None)):  # Decayed(Sliced(...))
            raise NoIntervalError(
                "Decayed(Sliced(...)) has no per-slice interval: the squares of the decayed "
                "weights are kept for the whole stream, not per slice, and at().intervals() "
                "reads the decayed weights as counts (too wide for ROCAUC, AveragePrecision); "
                "use Sliced(Decayed(metric, half_life)).intervals()"
            )
        if not getattr(self._template, "_weights_are_counts", False):
            interval: tuple[float, float] = self.at().interval(level)
            return interval
        if not (self._count and self.weight_sq > 0 and math.isfinite(self.weight_sq)):
            return NAN_INTERVAL  # no rows, or a schema 1 state's unknown sums
        counted = self.inner.copy()
        scale(counted, self.weight / self.weight_sq)
        kish: tuple[float, float] = counted.interval(level)
        return kish

    def _empty_result(self) -> Any:
        return self._template.compute()

    def _validate_state(self) -> None:
        if self.inner.count != self._count:
            raise ValueError("the wrapped state's count differs from the wrapper's")
        for name in ("weight", "weight_sq"):
            value = getattr(self, name)
            if type(value) is not float or not (math.isnan(value) or 0.0 <= value < math.inf):
                raise ValueError(f"{name} must be a non-negative float (or nan), got {value!r}")
        if math.isnan(self.weight) != math.isnan(self.weight_sq):
            raise ValueError("weight and weight_sq are known together or not at all")
        # (0.8.14 took a weight of 1e308, and a merge of the state with itself wrote inf,
        # which loads refused)
        _check_weights(self.weight, self.weight_sq, ValueError)
        if self._count == 0 and (self.weight, self.weight_sq) != (0.0, 0.0):
            raise ValueError("an empty state has weights of 0")
        check_weight_sq(self.weight_sq, self.weight, self._count)
        if self._count == 0:
            if self.epoch != 0 or self.latest != -math.inf:
                raise ValueError("an empty state has epoch 0 and no latest time")
        elif isinstance(self.latest, bool) or (
            isinstance(self.latest, int) and not -(2**63) <= self.latest < 2**63
        ):
            raise ValueError("the latest timestamp must be a float or an int64")
        elif not math.isfinite(self.latest) or self._epoch_of(self.latest) != self.epoch:
            raise ValueError("the epoch does not match the latest timestamp")
        elif abs(self.epoch) > MAX_EPOCH:
            raise ValueError("the epoch lies beyond 2**62")
