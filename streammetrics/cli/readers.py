"""Readers of prediction logs: CSV, JSON Lines and Parquet, in chunks of columns.

Each reader yields ``(line, {column: array})`` with the file line of the chunk's first row, for
messages. :func:`convert` turns a chunk's raw columns into numbers, labels, text or times, and
names the file, line and column of the first bad value.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from collections.abc import Iterator
from typing import Any, TextIO

import numpy as np

from .errors import CLIError

__all__ = ["READERS", "Source", "convert", "guess_format"]


class Source:
    """Where rows come from, for messages: ``path`` and the line of a chunk's first row."""

    def __init__(self, path: str, fmt: str, text: frozenset[str] = frozenset()) -> None:
        self.path = "<stdin>" if path == "-" else path
        self.raw = path
        self.fmt = fmt
        #: Columns read as text whatever they hold (``--labels-as-text``): no number parsing.
        self.text = text

    def fail(self, line: int | None, message: str) -> CLIError:
        where = f"{self.path}:{line}" if line is not None else self.path
        return CLIError(f"{where}: {message}")


def guess_format(path: str, fmt: str | None) -> str:
    if fmt:
        return fmt
    lower = path.lower()
    for suffix in (".gz", ".bz2", ".xz", ".zst"):
        if lower.endswith(suffix):
            lower = lower[: -len(suffix)]
    if lower.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    if lower.endswith((".parquet", ".pq")):
        return "parquet"
    return "csv"


def _missing(src: Source, wanted: list[str], present: list[str], line: int | None) -> None:
    absent = [c for c in wanted if c not in present]
    if absent:
        raise src.fail(
            line, f"no column {absent[0]!r} (columns: {', '.join(map(str, present)) or 'none'})"
        )


def _read_csv(src: Source, wanted: list[str], batch: int) -> Iterator[tuple[int, dict[str, Any]]]:
    if src.raw != "-":
        try:
            import pandas as pd
        except ImportError:
            pd = None
        if pd is not None:
            yield from _read_csv_pandas(pd, src, wanted, batch)
            return
        with open(src.raw, newline="", encoding="utf-8") as fh:
            yield from _read_csv_stdlib(src, fh, wanted, batch)
        return
    stream = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", newline="")
    yield from _read_csv_stdlib(src, stream, wanted, batch)


def _read_csv_pandas(
    pd: Any, src: Source, wanted: list[str], batch: int
) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        header = pd.read_csv(src.raw, nrows=0).columns.tolist()
    except pd.errors.EmptyDataError:
        raise src.fail(1, "the file is empty (no header line)") from None
    _missing(src, wanted, header, 1)
    line = 2
    reader = pd.read_csv(
        src.raw,
        usecols=wanted,
        chunksize=batch,
        keep_default_na=False,
        na_values=[""],
        dtype=dict.fromkeys(src.text, str) or None,
    )
    try:
        for chunk in reader:
            yield line, {c: chunk[c].to_numpy() for c in wanted}
            line += len(chunk)
    except (pd.errors.ParserError, ValueError) as exc:
        raise src.fail(line, f"cannot parse CSV: {str(exc).splitlines()[0]}") from None


def _read_csv_stdlib(
    src: Source, fh: TextIO, wanted: list[str], batch: int
) -> Iterator[tuple[int, dict[str, Any]]]:
    reader = csv.reader(fh)
    try:
        header = next(reader)
    except StopIteration:
        raise src.fail(1, "the input is empty (no header line)") from None
    _missing(src, wanted, header, 1)
    index = [header.index(c) for c in wanted]
    rows: list[list[str]] = []
    first = 0
    for row in reader:
        if not row:
            continue
        if len(row) != len(header):
            raise src.fail(reader.line_num, f"{len(row)} fields, the header has {len(header)}")
        if not rows:
            first = reader.line_num
        rows.append([row[i] for i in index])
        if len(rows) == batch:
            yield first, _transpose(rows, wanted)
            rows = []
    if rows:
        yield first, _transpose(rows, wanted)


def _transpose(rows: list[list[str]], wanted: list[str]) -> dict[str, np.ndarray]:
    table = np.array(rows, dtype=str).reshape(len(rows), len(wanted))
    return {c: table[:, i] for i, c in enumerate(wanted)}


def _read_jsonl(src: Source, wanted: list[str], batch: int) -> Iterator[tuple[int, dict[str, Any]]]:
    fh: TextIO
    if src.raw == "-":
        fh = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8")
    else:
        fh = open(src.raw, encoding="utf-8")
    with fh:
        cols: dict[str, list[Any]] = {c: [] for c in wanted}
        start = 1
        for number, text in enumerate(fh, start=1):
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                raise src.fail(number, f"not a JSON object: {exc.msg}") from None
            if not isinstance(record, dict):
                raise src.fail(number, "not a JSON object")
            for c in wanted:
                if c not in record:
                    raise src.fail(number, f"no column {c!r} in this record")
                cols[c].append(record[c])
            if len(cols[wanted[0]]) == batch:
                yield start, {c: _json_column(v) for c, v in cols.items()}
                cols = {c: [] for c in wanted}
                start = number + 1
        if cols[wanted[0]]:
            yield start, {c: _json_column(v) for c, v in cols.items()}


def _json_column(values: list[Any]) -> np.ndarray:
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError):
        arr = np.empty(len(values), dtype=object)
        for i, v in enumerate(values):
            arr[i] = v
    return arr


def _read_parquet(
    src: Source, wanted: list[str], batch: int
) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise CLIError(
            "reading Parquet needs pyarrow: pip install 'streammetrics[parquet]'"
        ) from None
    if src.raw == "-":
        data: Any = io.BytesIO(sys.stdin.buffer.read())
    else:
        data = src.raw
    try:
        pf = pq.ParquetFile(data)
    except Exception as exc:
        raise src.fail(None, f"not a Parquet file ({type(exc).__name__}: {exc})") from None
    _missing(src, wanted, pf.schema_arrow.names, None)
    row = 0
    for rb in pf.iter_batches(batch_size=batch, columns=wanted):
        yield row + 1, {c: rb.column(c).to_numpy(zero_copy_only=False) for c in wanted}
        row += rb.num_rows


# -- column conversion -------------------------------------------------------------------------


def _first_bad(values: np.ndarray, ok: Any) -> int:
    for i, v in enumerate(values.tolist()):
        if not ok(v):
            return i
    return 0


def _is_number(v: Any) -> bool:
    try:
        return math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds, for messages (``nan``, not
    ``np.float64(nan)``)."""
    return value.item() if isinstance(value, np.generic) else value


def _numbers(values: np.ndarray, name: str, src: Source, line: int) -> np.ndarray:
    try:
        out = values.astype(np.float64)
    except (TypeError, ValueError):
        i = _first_bad(values, _is_number)
        raise src.fail(
            line + i, f"column {name!r}: {_plain(values[i])!r} is not a number"
        ) from None
    finite = np.isfinite(out)
    if not finite.all():
        i = int(np.flatnonzero(~finite)[0])
        raise src.fail(
            line + i, f"column {name!r}: missing or non-finite value {_plain(values[i])!r}"
        )
    return out


def _labels(values: np.ndarray, name: str, src: Source, line: int) -> np.ndarray:
    kind = values.dtype.kind
    as_text = name in src.text
    if kind in "biu" and not as_text:
        return values
    if kind == "f" and not as_text:
        return _numbers(values, name, src, line)
    if kind == "f" and np.isnan(values).any():
        raise src.fail(
            line + int(np.flatnonzero(np.isnan(values))[0]), f"column {name!r}: missing value"
        )
    if kind == "O" and any(v is None or (isinstance(v, float) and v != v) for v in values):
        i = _first_bad(values, lambda v: v is not None and v == v)
        raise src.fail(line + i, f"column {name!r}: missing value")
    text = values.astype(str)
    if text.size and (text == "").any():
        i = int(np.flatnonzero(text == "")[0])
        raise src.fail(line + i, f"column {name!r}: missing value")
    if name in src.text:
        return text
    for dtype in (np.int64, np.float64):
        try:
            return text.astype(dtype)
        except (TypeError, ValueError, OverflowError):
            continue
    # Text labels. A column that also holds numbers would be read as numbers in a chunk of
    # numbers alone and as text in a chunk with text, so the answer would depend on the
    # chunking (--batch-size): refused, whatever the chunk.
    numeric = _numeric(text)
    if numeric.any():
        i, j = int(np.argmax(numeric)), int(np.argmin(numeric))
        raise src.fail(
            line + j,
            f"column {name!r}: {str(text[j])!r} is text, but {str(text[i])!r} (at {line + i}) "
            "is a number; "
            "a label column holds labels of one kind (pass --labels-as-text to read every "
            "label as text)",
        )
    return text


def _numeric(text: np.ndarray) -> np.ndarray:
    """Which values of a str array read as a finite number (``float()``)."""
    try:
        import pandas as pd
    except ImportError:
        return np.array([_is_number(v) for v in text.tolist()], dtype=bool)
    parsed = pd.to_numeric(pd.Series(text, dtype=object), errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan
    )
    out: np.ndarray = np.isfinite(parsed)
    return out


def _texts(values: np.ndarray, required: bool) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values.tolist()):
        if v is None or (isinstance(v, float) and v != v):
            v = "" if required else None  # an empty hypothesis; a missing reference
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


def _times(values: np.ndarray, name: str, src: Source, line: int) -> np.ndarray:
    """Numbers as they are; date-times (ISO 8601 text) as seconds since the epoch."""
    if values.dtype.kind in "biuf":
        return _numbers(values, name, src, line)
    try:
        return _numbers(values, name, src, line)
    except CLIError:
        pass
    try:
        stamps = values.astype("datetime64[ms]")
    except (TypeError, ValueError):
        i = _first_bad(values, lambda v: _is_time(v))
        raise src.fail(line + i, f"column {name!r}: {values[i]!r} is not a time") from None
    if np.isnat(stamps).any():
        i = int(np.flatnonzero(np.isnat(stamps))[0])
        raise src.fail(line + i, f"column {name!r}: missing time")
    return stamps.astype(np.int64) / 1000.0


def _is_time(v: Any) -> bool:
    try:
        np.datetime64(v)
    except (TypeError, ValueError):
        return False
    return True


def convert(
    cols: dict[str, Any], types: dict[str, str], src: Source, line: int
) -> dict[str, np.ndarray]:
    """Each raw column as its type: ``"number"``, ``"label"``, ``"text"`` (missing -> ""),
    ``"references"`` (missing -> None, dropped) or ``"time"``."""
    out = {}
    for name, values in cols.items():
        values = np.asarray(values)
        kind = types.get(name, "label")
        if kind == "number":
            out[name] = _numbers(values, name, src, line)
        elif kind == "time":
            out[name] = _times(values, name, src, line)
        elif kind in ("text", "references"):
            out[name] = _texts(values, required=kind == "text")
        else:
            out[name] = _labels(values, name, src, line)
    return out


READERS = {"csv": _read_csv, "jsonl": _read_jsonl, "parquet": _read_parquet}
