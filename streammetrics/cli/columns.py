"""Column conversion: a chunk's raw columns as numbers, labels, text or times.

:func:`convert` checks each value and names the file, line and column of the first bad one;
:func:`parse_width` reads a window width (``--window 1h``).
"""

from __future__ import annotations

import math
import re
import warnings
from typing import Any, NoReturn

import numpy as np

from .errors import CLIError
from .sources import Source, csv_field

__all__ = ["convert", "parse_width"]


def _first_bad(values: np.ndarray, ok: Any) -> int:
    for i, v in enumerate(values.tolist()):
        if not ok(v):
            return i
    return 0


def _is_number(v: Any) -> bool:
    try:
        return math.isfinite(float(v))
    except (TypeError, ValueError, OverflowError):  # (a JSON integer past float64)
        return False


def _reads_as_number(v: Any) -> bool:
    """Whether ``float()`` reads ``v``, as a finite number or not."""
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds, for messages (``nan``, not
    ``np.float64(nan)``)."""
    return value.item() if isinstance(value, np.generic) else value


def _numbers(values: np.ndarray, name: str, src: Source, row: int) -> np.ndarray:
    if values.dtype.kind == "b" or (
        values.dtype.kind == "O" and any(isinstance(v, (bool, np.bool_)) for v in values)
    ):
        # (pandas' parser reads a chunk of TRUE/FALSE as booleans, JSON has true and false:
        # they were read as 1 and 0, where standard input refused the same bytes as text.)
        i = _first_bad(values, lambda v: not isinstance(v, (bool, np.bool_)))
        raise src.fail_row(row + i, f"column {name!r}: {_plain(values[i])!r} is not a number")
    if values.dtype.kind == "U" and not _plain_ascii(values):
        # (Python's float() reads 1_0 as 10 and Arabic-Indic digits as digits; pandas' parser
        # reads both as text: refused, as label columns refuse them since 0.8.10)
        i = _first_bad(values, lambda v: v.isascii() and "_" not in v)
        raise src.fail_row(row + i, f"column {name!r}: {_plain(values[i])!r} is not a number")
    if values.dtype.kind == "O":
        strange = [
            j
            for j, v in enumerate(values.tolist())
            if isinstance(v, str) and not (v.isascii() and "_" not in v)
        ]
        if strange:
            raise src.fail_row(
                row + strange[0], f"column {name!r}: {values[strange[0]]!r} is not a number"
            )
    try:
        out = values.astype(np.float64)
    except (TypeError, ValueError, OverflowError):
        i = _first_bad(values, _is_number)
        bad = _plain(values[i])
        if type(bad) is int:  # (past float64: a JSON integer of hundreds of digits)
            raise src.fail_row(
                row + i,
                f"column {name!r}: an integer of {len(str(abs(bad)))} digits lies beyond float64",
            ) from None
        raise src.fail_row(row + i, f"column {name!r}: {bad!r} is not a number") from None
    finite = np.isfinite(out)
    if not finite.all():
        i = int(np.flatnonzero(~finite)[0])
        bad = _plain(values[i])
        if isinstance(bad, float) and math.isinf(bad) and src.fmt == "csv":
            # pandas' parser read the field as a float: its text says whether the file wrote
            # inf or an integer too long for float64, as a chunk of text or of one value does
            # (0.8.13's message depended on --batch-size).
            bad = csv_field(src, row + i, name) or bad
        if isinstance(bad, str) and _INT_TEXT.fullmatch(bad):
            digits = len(bad.strip().lstrip("+-").lstrip("0"))
            raise src.fail_row(
                row + i, f"column {name!r}: an integer of {digits} digits lies beyond float64"
            )
        if isinstance(bad, str) and len(bad) > 60:
            shown = f"{bad[:24]!r}...{bad[-8:]!r} ({len(bad)} characters)"
        else:
            shown = repr(bad)
        raise src.fail_row(row + i, f"column {name!r}: missing or non-finite value {shown}")
    return out


#: int64's range: integers past it are read as uint64 or refused (JSON keeps them as Python
#: ints, so the readers look for them too).
INT64_RANGE = (-(2**63), 2**63 - 1)
_UINT64_MAX = 2**64 - 1

#: An integer written as text (the values numpy's ``astype(np.int64)`` reads).
_INT_TEXT = re.compile(r"\s*[+-]?[0-9]+\s*")
_AS_TEXT = "read the column as text (--labels-as-text)"


def _ints(values: np.ndarray, name: str, src: Source, row: int) -> np.ndarray:
    """An integer label column (int64 or uint64), checked against the file's earlier chunks: a
    column holding negative integers and integers past int64 is refused whatever the chunking
    (no integer type holds both; 0.8.13's first version decided it chunk by chunk, so
    ``--batch-size`` changed the answer)."""
    kind = values.dtype.kind
    if not values.size or kind not in "iu":
        return values
    if kind == "i":
        if values.min() >= 0:
            return values
        mine, other, i = "negative", "past", int(np.argmax(values < 0))
    else:
        if values.max() <= INT64_RANGE[1]:
            return values
        mine, other, i = "past", "negative", int(np.argmax(values > INT64_RANGE[1]))
    seen = src.int_signs.setdefault(name, {})
    if other in seen:
        first, line = seen[other]
        if line is None:
            line = src.line(first)  # (pandas' reader: found by re-reading the file)
        raise src.fail_row(row + i, _both_kinds(name, _plain(values[i]), line))
    seen.setdefault(mine, (row + i, src.chunk_line(row + i)))
    return values


def _both_kinds(name: str, value: int, other_line: int | None) -> str:
    """The message refusing ``value`` (negative, or past int64) because the line
    ``other_line`` of its column holds an integer of the other kind."""
    where = f"line {other_line}" if other_line is not None else "an earlier row"
    if value < 0:
        what = f"the integer {value} is negative, and {where} holds one past int64"
    else:
        what = f"the integer {value} lies past int64 (2**63 - 1), and {where} holds a negative one"
    return f"column {name!r}: {what}; no integer type holds both: {_AS_TEXT}"


def _refuse_wide(values: list[Any], name: str, src: Source, row: int) -> NoReturn:
    """Refuse a chunk holding an integer past int64 that uint64 cannot take with the rest:
    one past 64 bits, or one beside negative integers (or values that are not integers)."""
    for i, v in enumerate(values):
        if type(v) is int and not INT64_RANGE[0] <= v <= _UINT64_MAX:
            raise src.fail_row(
                row + i, f"column {name!r}: the integer {v} lies beyond 64 bits; {_AS_TEXT}"
            )
    i = next(i for i, v in enumerate(values) if type(v) is int and v > INT64_RANGE[1])
    j = next((j for j, v in enumerate(values) if type(v) is int and v < 0), None)
    if j is None:
        raise src.fail_row(
            row + i,
            f"column {name!r}: the integer {values[i]} lies past int64 (2**63 - 1) beside "
            f"values that are not integers; {_AS_TEXT}",
        )
    # The later of the two is refused, naming the line of the other, as across chunks (_ints).
    later, earlier = max(i, j), min(i, j)
    raise src.fail_row(row + later, _both_kinds(name, values[later], src.line(row + earlier)))


def bool_words(text: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which strings of ``text`` spell true and which false, in any case: pandas 3's CSV parser
    reads ``tRUE`` as a boolean, so standard input does too (0.8.17 knew three spellings of
    each, and the same bytes read from a file and from a pipe gave two labels or one). On the
    code points, ASCII letters folded: no Python call per string."""
    text = np.asarray(text).astype(str, copy=False)
    width = text.dtype.itemsize // 4
    if not text.size or width < 4:
        none = np.zeros(len(text), dtype=bool)
        return none, none.copy()
    codes = np.ascontiguousarray(text).view(np.uint32).reshape(len(text), width)
    head = np.zeros((len(text), 6), dtype=np.uint32)  # the first five, and a NUL after them
    head[:, : min(width, 6)] = codes[:, :6]
    head |= np.where((head >= 65) & (head <= 90), np.uint32(32), np.uint32(0))  # A-Z to a-z
    true = (head[:, :5] == np.array([116, 114, 117, 101, 0], dtype=np.uint32)).all(axis=1)
    false = (head == np.array([102, 97, 108, 115, 101, 0], dtype=np.uint32)).all(axis=1)
    return true, false


def _labels(
    values: np.ndarray, name: str, src: Source, row: int, key: bool = False, ints: bool = True
) -> np.ndarray:
    """A label column (``key``: one that keys slices, groups or queries, where booleans are
    refused, so they are read as the text ``True``/``False``; ``ints``: booleans beside
    integers read as 1 and 0, for a column that keys nothing)."""
    kind = values.dtype.kind
    as_text = name in src.text
    if kind == "b":
        return values.astype(str) if as_text or key else values
    if kind in "iu" and not as_text:
        return _ints(values, name, src, row)
    if kind == "f" and not as_text:
        return _numbers(values, name, src, row)
    if kind == "f" and np.isnan(values).any():
        raise src.fail_row(
            row + int(np.flatnonzero(np.isnan(values))[0]), f"column {name!r}: missing value"
        )
    if kind == "O" and any(v is None or (isinstance(v, float) and v != v) for v in values):
        i = _first_bad(values, lambda v: v is not None and v == v)
        raise src.fail_row(row + i, f"column {name!r}: missing value")
    # (Parquet's list cells arrive as numpy arrays, JSON's as lists.)
    if kind == "O" and any(isinstance(v, (list, dict, np.ndarray)) for v in values):
        i = _first_bad(values, lambda v: not isinstance(v, (list, dict, np.ndarray)))
        what = "an object" if isinstance(values[i], dict) else "a list"
        raise src.fail_row(row + i, f"column {name!r}: {what} is not a label")
    if kind == "O" and any(
        type(v) is int and not INT64_RANGE[0] <= v <= INT64_RANGE[1] for v in values
    ):
        if all(type(v) is int and 0 <= v <= _UINT64_MAX for v in values):
            return _ints(np.array(values.tolist(), dtype=np.uint64), name, src, row)
        _refuse_wide(values.tolist(), name, src, row)
    text = values.astype(str)
    if text.size and (text == "").any():
        i = int(np.flatnonzero(text == "")[0])
        raise src.fail_row(row + i, f"column {name!r}: missing value")
    if name in src.text:
        return text
    if key:
        # Booleans written as text become the text True/False, as pandas' parser reads them
        # from a file (as booleans, then named) whatever their neighbours: standard input
        # kept "true" and "TRUE" apart, and a file's chunk of booleans alone merged them.
        text = _named_booleans(text)
    if _plain_ascii(text):
        try:
            return _ints(text.astype(np.int64), name, src, row)
        except OverflowError:
            # Integers past int64 (standard input's text; 0.8.12 read them as floats, a label
            # 1e+23 that the file does not hold): uint64 as pandas reads a file's, else refused
            # at their line (beside negative integers, or past 64 bits).
            try:
                return _ints(text.astype(np.uint64), name, src, row)
            except (TypeError, ValueError, OverflowError):
                pass
            if all(_INT_TEXT.fullmatch(v) for v in text.tolist()):
                _refuse_wide([int(v) for v in text.tolist()], name, src, row)
        except (TypeError, ValueError):
            pass
        try:
            return text.astype(np.float64)
        except (TypeError, ValueError, OverflowError):
            pass
    if not key and text.size and str(text[0]).lower() in ("true", "false"):
        # Booleans written as text (standard input, read by the csv module): booleans, as the
        # same bytes read from a file by pandas' parser (and Parquet's booleans) are. (Text
        # labels that do not start with one skip the pass.)
        true, false = bool_words(text)
        if (true | false).all():
            return true
    # Text labels. A column that also holds numbers would be read as numbers in a chunk of
    # numbers alone and as text in a chunk with text, so the answer would depend on the
    # chunking (--batch-size): refused, whatever the chunk (booleans beside integers aside).
    numeric = _numeric(text)
    if numeric.any():
        mixed = _bools_beside_ints(text) if not key and ints else None
        if mixed is not None:
            return mixed
        i, j = int(np.argmax(numeric)), int(np.argmin(numeric))
        raise src.fail_row(
            row + j,
            f"column {name!r}: {str(text[j])!r} is text, but {str(text[i])!r} "
            f"(at {src.line(row + i)}) "
            "is a number; "
            "a label column holds labels of one kind (pass --labels-as-text to read every "
            "label as text)",
        )
    return text


def _plain_ascii(text: np.ndarray) -> bool:
    """Whether every string of ``text`` is ASCII without underscores: the only text whose
    conversion by ``astype`` (Python's ``int()``/``float()`` rules) reads numbers as pandas'
    parser does. Python also reads ``1_2`` as 12 and Arabic-Indic digits as digits, which
    merged the distinct groups or slices ``1_2`` and ``12`` (0.8.10)."""
    if not text.size:
        return True
    points = np.ascontiguousarray(text).view(np.uint32)
    return bool(points.max() < 128 and not (points == ord("_")).any())


def _named_booleans(text: np.ndarray) -> np.ndarray:
    """``text`` with pandas' spellings of booleans as ``True`` and ``False``."""
    true, false = bool_words(text)
    if not (true.any() or false.any()):
        return text
    out = text.astype(object)
    out[true], out[false] = "True", "False"
    return out.astype(str)


def _bools_beside_ints(text: np.ndarray) -> np.ndarray | None:
    """Booleans beside integers (True, False, 1, 0) as int64, True as 1; None for any other
    text. A chunk of either alone reads as booleans or integers, which the metrics take alike,
    so a chunk holding both does too (0.8.8 refused it as text beside numbers: --batch-size
    changed the answer)."""
    true, false = bool_words(text)
    boolish = true | false
    if not boolish.any():
        return None
    rest = text[~boolish]
    if not _plain_ascii(rest):
        return None
    try:
        whole = rest.astype(np.int64)
    except (TypeError, ValueError, OverflowError):
        # Whole numbers written as floats (1.0, 1e2): a chunk of them alone reads as labels
        # equal to those integers, so beside booleans too (0.8.15 refused them in one chunk
        # and took them across chunks).
        try:
            floats = rest.astype(np.float64)
        except (TypeError, ValueError, OverflowError):
            return None
        if not (np.abs(floats) < 2.0**53).all() or (floats != np.floor(floats)).any():
            return None
        whole = floats.astype(np.int64)
    out = true.astype(np.int64)
    out[~boolish] = whole
    return out


#: Text that ``float()`` reads as a non-finite number (in lower case, stripped).
_NON_FINITE = frozenset(
    sign + word for sign in ("", "+", "-") for word in ("nan", "inf", "infinity")
)


def _numeric(text: np.ndarray) -> np.ndarray:
    """Which values of a str array read as a number (``float()``), ``nan`` and ``inf``
    included: alone in a chunk they read as numbers (and are refused as labels there), so
    beside text they count as numbers too (0.8.8 took them as text labels there: the answer
    depended on --batch-size). So do numbers past float64 (``1e400``, an integer of 400
    digits), which read as infinite: 0.8.15 took them as text beside text."""
    words = np.char.lower(np.char.strip(text.astype(str)))
    non_finite = np.isin(words, list(_NON_FINITE))
    try:
        import pandas as pd
    except ImportError:
        return np.array([_reads_as_number(v) for v in text.tolist()], dtype=bool) | non_finite
    parsed = pd.to_numeric(pd.Series(text, dtype=object), errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan
    )
    out: np.ndarray = ~np.isnan(parsed) | non_finite
    return out


def _texts(values: np.ndarray, required: bool) -> np.ndarray:
    """Text as the file holds it. A missing or empty hypothesis is the empty string; a missing
    or empty reference is None (dropped, as sacrebleu drops None), whatever the format."""
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values.tolist()):
        if v is None or (isinstance(v, float) and v != v) or v == "":
            v = "" if required else None
        out[i] = v if v is None or isinstance(v, str) else str(v)
    return out


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_width(text: str) -> float:
    """A window width: a positive number, or one with a unit (``90s``, ``15m``, ``1h``, ``7d``)."""
    unit = 1
    if text and text[-1] in _UNITS:
        text, unit = text[:-1], _UNITS[text[-1]]
    try:
        width = float(text) * unit
    except ValueError:
        width = math.nan
    if not (math.isfinite(width) and width > 0):
        raise CLIError(f"--window: {text!r} is not a positive number (units s, m, h, d, w)")
    return int(width) if width == int(width) else width


def _times(values: np.ndarray, name: str, src: Source, row: int) -> np.ndarray:
    """Numbers as they are; date-times (ISO 8601 text, or a date-time column of any unit or
    time zone, such as Parquet's timestamps) as seconds since the epoch; durations as seconds."""
    kind = values.dtype.kind
    if kind in "Mm":
        missing = np.isnat(values)
        if missing.any():
            raise src.fail_row(
                row + int(np.flatnonzero(missing)[0]), f"column {name!r}: missing time"
            )
        if kind == "M":
            if np.datetime_data(values.dtype)[0] in ("Y", "M"):  # no fixed length: as days
                values = values.astype("datetime64[D]")
            values = values - np.datetime64(0, "s")
        try:
            seconds: np.ndarray = values / np.timedelta64(1, "s")
        except TypeError:  # durations in years or months
            raise src.fail_row(
                row, f"column {name!r}: durations of {values.dtype} have no length in seconds"
            ) from None
        return seconds.astype(np.float64)
    if kind in "biuf":
        return _numbers(values, name, src, row)
    try:
        return _numbers(values, name, src, row)
    except CLIError:
        pass
    try:
        with warnings.catch_warnings():
            # An offset (+02:00) is applied, to UTC, with a warning that it is deprecated: the
            # conversion is right, and the warning is not the reader's to see.
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            stamps = values.astype("datetime64[ms]")
    except (TypeError, ValueError):
        i = _first_bad(values, lambda v: _is_time(v))
        raise src.fail_row(row + i, f"column {name!r}: {values[i]!r} is not a time") from None
    if np.isnat(stamps).any():
        i = int(np.flatnonzero(np.isnat(stamps))[0])
        raise src.fail_row(row + i, f"column {name!r}: missing time")
    return stamps.astype(np.int64) / 1000.0


def _is_time(v: Any) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (numpy's warning about a time zone offset)
            np.datetime64(v)
    except (TypeError, ValueError):
        return False
    return True


def convert(
    cols: dict[str, Any], types: dict[str, str], src: Source, row: int
) -> dict[str, np.ndarray]:
    """Each raw column as its type: ``"number"``, ``"label"``, ``"key"`` (a label keying
    slices, groups or queries), ``"text"`` (missing -> ""),
    ``"references"`` (missing or empty -> None, dropped) or ``"time"``; ``row`` is the number of
    the chunk's first row."""
    out = {}
    for name, values in cols.items():
        values = np.asarray(values)
        kind = types.get(name, "label")
        if kind == "number":
            out[name] = _numbers(values, name, src, row)
        elif kind == "time":
            out[name] = _times(values, name, src, row)
        elif kind in ("text", "references"):
            out[name] = _texts(values, required=kind == "text")
        else:
            out[name] = _labels(values, name, src, row, key=kind == "key", ints=kind == "label")
    refs = [out[c] for c, kind in types.items() if kind == "references" and c in out]
    if refs:
        none = np.logical_and.reduce([r == None for r in refs])  # noqa: E711 (elementwise)
        if none.any():
            names = [repr(c) for c, kind in types.items() if kind == "references"]
            where = (
                f"column {names[0]} is" if len(names) == 1 else f"columns {', '.join(names)} are"
            )
            raise src.fail_row(row + int(np.flatnonzero(none)[0]), f"no reference: {where} empty")
    return out
