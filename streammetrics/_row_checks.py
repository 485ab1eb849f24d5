"""The checks of one column of the per-request path, per kind (``streammetrics._rows``).

Each check decides, in plain Python or one numpy reduction, whether a value or a small column
*certainly* passes a metric's ``update``; it never raises (anything doubtful is "no", and the
ordinary path then says what is wrong). What a check trusts of labels and keys it reads from a
:class:`Seen` set that ``Rows`` fills from accepted calls.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._input_labels import encodable, surrogate_row
from ._inputs import BFLOAT16_BITS
from ._small_columns import SMALL_BATCH, _bfloat16_bits

# Column kinds.
LABEL = "label"  # a class label (int or str); each value is trusted once accepted
KEY = "key"  # a group or query id; trusted once a key of the same kind (int/str) is accepted
NUMBER = "number"  # a finite real (buffered only within +-2**200, see NUMBER_LIMIT)
PROBABILITY = "probability"  # a real in [0, 1]
_KINDS = (LABEL, KEY, NUMBER, PROBABILITY)

_INT_TYPES = frozenset(
    {int, bool, np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32}
)
_REAL_TYPES = _INT_TYPES | {float, np.float16, np.float32, np.float64}
_STR_TYPES = frozenset({str, np.str_})
_SCALAR_TYPES = _REAL_TYPES | _STR_TYPES
_INT64 = 2**63
#: Weights above this take the ordinary path (which checks the bound of the weight totals,
#: ``WEIGHT_LIMIT`` = 2**100): a full buffer (under 2**17 rows) of rows below it adds less than
#: 2**99.
MAX_WEIGHT = 2.0**82
#: Numbers beyond this magnitude take the ordinary path, which refuses those a metric cannot
#: hold (the regression metrics: above 2**200 the squared errors overflow float64).
NUMBER_LIMIT = 2.0**200


class Seen(set[Any]):
    """A set of trusted values that also knows its run of integers from 0: the largest ``k``
    with ``0, 1, ..., k - 1`` all in the set (cached, recomputed after any change). A batch of
    integer labels is trusted by one reduction when its largest value, read as unsigned, is
    below that run: the common case of labels ``0 .. k-1``."""

    __slots__ = ("_run",)

    def __init__(self, values: Any = ()) -> None:
        super().__init__(values)
        self._run: int | None = None

    def update(self, *others: Any) -> None:
        self._run = None
        super().update(*others)

    def discard(self, value: Any) -> None:
        self._run = None
        super().discard(value)

    def clear(self) -> None:
        self._run = None
        super().clear()

    def add(self, value: Any) -> None:
        self._run = None
        super().add(value)

    @property
    def run(self) -> int:
        run = self._run
        if run is None:
            run = 0
            while run in self:
                run += 1
            self._run = run
        return run


# Unsigned views of the native integer and float dtypes, and the bit pattern of 1.0 for floats:
# as unsigned integers, non-negative floats sort like their values, and negative ones (sign bit
# set), NaN and infinities lie above 1.0's pattern, so one max() checks 0 <= x <= 1.
_UNSIGNED = {
    np.dtype(t): np.dtype(f"u{np.dtype(t).itemsize}")
    for t in ("i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8")
}
_ONE_BITS = {
    np.dtype(t): int(np.array(1, dtype=t).view(f"u{np.dtype(t).itemsize}"))
    for t in ("f2", "f4", "f8")
}


_MAX = np.maximum.reduce  # without ndarray.max's Python wrapper: small batches pay for it


def _is_probability(v: Any) -> bool:
    return type(v) in _REAL_TYPES and 0 <= v <= 1


def _is_number(v: Any) -> bool:
    t = type(v)
    if t is float or t is int:  # the common case first (False for nan)
        return bool(-NUMBER_LIMIT <= v <= NUMBER_LIMIT)
    # float(v): a float16 compared with 2**200 itself would warn of an overflow in the cast.
    return t in _REAL_TYPES and -NUMBER_LIMIT <= float(v) <= NUMBER_LIMIT


def _scalar_check(kind: str, seen: set[Any]) -> Any:
    if kind == LABEL:
        # Only scalars are looked up: a tensor or an array may hash, and compare element-wise.
        return seen.__contains__  # the caller checks first that the value is a scalar
    if kind == PROBABILITY:
        return _is_probability
    if kind == NUMBER:
        return _is_number
    return lambda v: _key_trusted(seen, v)


def _paired_scalar_check(kind: str) -> Any:
    """The per-value part of a paired column's check (the pair is checked per row)."""
    if kind == KEY:
        return lambda v: _key_kind(v) is not None
    return lambda v: True  # a label: any scalar, looked up with its slice key


def _with_pairs(
    check: Any,
    pairs_ok: Any,
    kinds: tuple[str, ...],
    checks: tuple[Any, ...],
    seen: list[Any],
    anywhere: list[Any] | None = None,
) -> Any:
    """The row check of a call with a slice key last: ``check`` (every column's own check)
    and ``pairs_ok`` (each paired value trusted with its slice key, or, given ``anywhere``,
    each label value trusted in every slice: ``Rows._anywhere``). Unrolled for the rows of
    ``Sliced`` over two label columns (``Accuracy``, ``F1``, ...) or a label and a score
    (``ROCAUC``, ...): a server pays this on every request."""
    scalar = _SCALAR_TYPES
    # Paired: a label is looked up with its slice key; anywhere: alone.
    pair = anywhere is None
    sets = seen if anywhere is None else anywhere
    if kinds[:2] == (LABEL, LABEL) and len(kinds) == 3:
        s0, s1, ck = sets[0], sets[1], checks[2]

        def labels_and_key(args: tuple[Any, ...]) -> bool:
            try:
                a, b, k = args
                return (
                    type(a) in scalar
                    and type(b) in scalar
                    and type(k) in scalar
                    and ck(k)
                    and ((a, k) if pair else a) in s0
                    and ((b, k) if pair else b) in s1
                )
            except Exception:  # an unhashable value: not certainly valid
                return False

        return labels_and_key
    if kinds[0] == LABEL and kinds[1] in (NUMBER, PROBABILITY) and len(kinds) == 3:
        s0, c1, ck = sets[0], checks[1], checks[2]

        def label_score_and_key(args: tuple[Any, ...]) -> bool:
            try:
                a, b, k = args
                return (
                    type(a) in scalar
                    and type(b) in scalar
                    and type(k) in scalar
                    and c1(b)
                    and ck(k)
                    and ((a, k) if pair else a) in s0
                )
            except Exception:
                return False

        return label_score_and_key

    def checked(args: tuple[Any, ...]) -> bool:
        try:
            return bool(check(args) and pairs_ok(args))
        except Exception:  # an unhashable value: not certainly valid
            return False

    return checked


def _never(args: tuple[Any, ...]) -> bool:
    return False


def _row_check(checks: tuple[Any, ...]) -> Any:
    """One function checking a whole row of scalars; unrolled for the common widths."""
    scalar = _SCALAR_TYPES
    # Only plain scalars reach the checks: a tensor or a Decimal may hash like a label. Any
    # exception (a value that does not compare) means "not certainly valid".
    if len(checks) == 2:
        c0, c1 = checks

        def check2(args: tuple[Any, ...]) -> bool:
            try:
                a, b = args
                return type(a) in scalar and type(b) in scalar and c0(a) and c1(b)
            except Exception:
                return False

        return check2
    if len(checks) == 3:
        c0, c1, c2 = checks

        def check3(args: tuple[Any, ...]) -> bool:
            try:
                a, b, c = args
                return (
                    type(a) in scalar
                    and type(b) in scalar
                    and type(c) in scalar
                    and c0(a)
                    and c1(b)
                    and c2(c)
                )
            except Exception:
                return False

        return check3

    def check(args: tuple[Any, ...]) -> bool:
        try:
            if len(args) != len(checks):
                return False
            return all(type(v) in scalar and f(v) for f, v in zip(checks, args, strict=True))
        except Exception:
            return False

    return check


def _bfloat16_column(kind: str, x: Any) -> np.ndarray | None:
    """The raw bits of a 1-D bfloat16 tensor of at most ``SMALL_BATCH`` rows, copied and marked
    ``BFLOAT16_BITS`` (the fold widens the whole buffer at once), if they pass the checks of
    ``kind``; None otherwise."""
    try:
        if x.ndim != 1 or x.shape[0] > SMALL_BATCH or x.shape[0] == 0:
            return None
        bits = _bfloat16_bits(x)
    except (RuntimeError, TypeError):
        return None  # sparse layouts and the like: the ordinary path reads them
    if not _bfloat16_trusted(kind, bits):
        return None
    marked: np.ndarray = bits.copy().view(BFLOAT16_BITS)
    return marked


def _all_str(values: list[Any]) -> bool:
    return all(type(v) in _STR_TYPES for v in values)


def _is_scalar(v: Any) -> bool:
    return type(v) in _SCALAR_TYPES


def _key_kind(v: Any) -> str | None:
    """``"int"`` or ``"str"``: the kind of a group, query or slice key; None for anything
    else, bools among them (``Sliced`` refuses them; the ordinary path decides)."""
    t = type(v)
    if t is bool or t is np.bool_:
        return None
    if t in _INT_TYPES:
        return "int" if -_INT64 <= v < _INT64 else None
    if t in _STR_TYPES:
        return "str" if encodable(v) else None
    return None


def _key_trusted(seen: set[Any], v: Any) -> bool:
    kind = _key_kind(v)
    return kind is not None and kind in seen


def _label_run(unsigned: np.dtype[Any]) -> Any:
    def trusted(seen: Seen, arr: np.ndarray) -> bool:
        # every value in 0 .. run - 1 (negative ones are huge as unsigned), else a look-up
        return bool(_MAX(arr.view(unsigned)) < seen.run) or seen.issuperset(arr.tolist())

    return trusted


def _probability_bits(unsigned: np.dtype[Any], one: int) -> Any:
    def trusted(seen: Seen, arr: np.ndarray) -> bool:
        # one reduction (see _ONE_BITS): -0.0 is refused here (the ordinary path takes it)
        return bool(_MAX(arr.view(unsigned)) <= one)

    return trusted


def _number(seen: Seen, arr: np.ndarray) -> bool:
    # Finite and within NUMBER_LIMIT: the largest magnitude, one reduction (nan compares
    # False). Cheaper for small batches than a sum of squares under np.errstate (entering it
    # costs more than the check), and it never warns.
    return float(_MAX(np.abs(arr))) <= NUMBER_LIMIT


#: The checks of :func:`_column_trusted` for the common (kind, dtype) pairs, as one function
#: each: the per-request path of a training loop calls them on every column of every step.
_TRUSTED: dict[tuple[str, np.dtype[Any]], Any] = {}
for _t in ("i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"):
    _TRUSTED[LABEL, np.dtype(_t)] = _label_run(_UNSIGNED[np.dtype(_t)])
for _t in ("f2", "f4", "f8"):
    _TRUSTED[PROBABILITY, np.dtype(_t)] = _probability_bits(
        _UNSIGNED[np.dtype(_t)], _ONE_BITS[np.dtype(_t)]
    )
    _TRUSTED[NUMBER, np.dtype(_t)] = _number


def _column_trusted(kind: str, seen: Seen, arr: np.ndarray) -> bool:
    """Whether every value of ``arr`` certainly passes the checks of a column of ``kind``: the
    one-function checks of ``_TRUSTED`` for native numeric dtypes, the general rules here."""
    dtype = arr.dtype
    check = _TRUSTED.get((kind, dtype))
    if check is not None:
        return bool(check(seen, arr))
    dk = dtype.kind
    if dk == "V":
        return dtype is BFLOAT16_BITS and _bfloat16_trusted(kind, arr.view(np.uint16))
    if kind == LABEL:
        if dk == "b" and seen.run >= 2:
            return True
        return dk in "biuU" and seen.issuperset(arr.tolist())
    if kind == KEY:  # (bool keys take the ordinary path, as bool scalars do)
        if dk == "i" or (dk == "u" and arr.dtype.itemsize < 8):
            return "int" in seen
        return dk == "U" and "str" in seen and surrogate_row(arr) is None
    if dk not in "biuf":
        return False
    if kind == PROBABILITY:
        return bool(arr.min() >= 0 and arr.max() <= 1)  # False for nan
    return dk != "f" or _number(seen, arr)


def _bfloat16_trusted(kind: str, bits: np.ndarray) -> bool:
    """The checks of a float column on the raw bits of a bfloat16 one (see ``_ONE_BITS``)."""
    if kind == PROBABILITY:
        return bool(_MAX(bits) <= _BF16_ONE)  # -0.0 is refused, as for the other floats
    if kind == NUMBER:
        return bool(_MAX(bits & 0x7FFF) < _BF16_INF)  # the exponent of inf and nan is all ones
    return False  # labels and keys are never bfloat16 on this path


_BF16_ONE = 0x3F80  # the bits of 1.0
_BF16_INF = 0x7F80  # the bits of +inf; NaNs lie above it


#: The boolean scalar types: numbers to numpy, but never a label, a key, a score or a weight
#: that a one-sample check trusts (the ordinary update decides).
BOOL_TYPES = (bool, np.bool_)


def real_row(row: Any) -> tuple[float, ...] | None:
    """One sample's row of real numbers (a list or tuple of Python or numpy reals, not bools,
    or a 1-D float or integer array of at most 8-byte items) as float64 values, as ``update``
    reads every value of it; None for anything else, or a Python int beyond float64 (the
    ordinary update names it). Finite or not: the caller checks what it needs."""
    t = type(row)
    if t is np.ndarray:
        if row.ndim != 1 or row.dtype.kind not in "iuf" or row.dtype.itemsize > 8:
            return None
        return tuple(row.astype(np.float64, copy=False).tolist())
    if t is not list and t is not tuple:
        return None
    try:
        values = tuple(
            float(v) for v in row if type(v) in _REAL_TYPES and type(v) not in BOOL_TYPES
        )
    except OverflowError:
        return None
    return values if len(values) == len(row) else None


def weight_keyword(kwargs: dict[str, Any]) -> tuple[bool, Any]:
    """``(ok, weight)`` for the keywords of a one-sample call whose only keyword may be
    ``sample_weight``: ``(True, None)`` without it, ``(True, weight)`` for a scalar weight that
    certainly passes (:func:`scalar_weight_ok`, not a bool), ``(False, None)`` otherwise (the
    ordinary update takes the call)."""
    if not kwargs:
        return True, None
    if len(kwargs) != 1 or "sample_weight" not in kwargs:
        return False, None
    weight = kwargs["sample_weight"]
    if type(weight) in BOOL_TYPES or not scalar_weight_ok(weight):
        return False, None
    return True, weight


def scalar_weight_ok(weight: Any) -> bool:
    """Whether one sample weight certainly passes the ordinary checks: a real number in
    ``[0, MAX_WEIGHT]``. Compared as a float (in float16 the bound 2**82 is inf, and inf
    weights passed, 0.8.9), except a Python int, compared as it is (``float(10**400)`` raised
    ``OverflowError`` where the ordinary update names ``sample_weight``, 0.8.10)."""
    if type(weight) is int:
        return 0 <= weight <= MAX_WEIGHT
    return type(weight) in _REAL_TYPES and 0 <= float(weight) <= MAX_WEIGHT


def _weight_column(weight: Any, n: int) -> np.ndarray | None:
    if type(weight) in _REAL_TYPES:
        if not scalar_weight_ok(weight):
            return None
        return np.full(n, float(weight))
    w: np.ndarray
    if type(weight) is np.ndarray:  # not a masked array: the full check refuses its mask
        w = weight.copy()
    elif isinstance(weight, list):
        try:
            w = np.array(weight)
        except (TypeError, ValueError, OverflowError):  # ragged: the full check names it
            return None
    else:
        return None
    if w.ndim != 1 or len(w) != n or w.dtype.kind not in "biuf":
        return None
    if not (w.min() >= 0 and float(w.max()) <= MAX_WEIGHT):
        return None
    return w
