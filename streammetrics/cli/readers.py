"""Readers of prediction logs: CSV, JSON Lines and Parquet, in chunks of columns.

Each reader yields ``(row, {column: array})`` with the number of the chunk's first row (rows
counted from 0 after the header) and records the file line of each row in the
:class:`~.sources.Source`, for messages. The columns are converted by
:mod:`streammetrics.cli.columns`.
"""

from __future__ import annotations

import io
import json
import math
import os
import stat
import sys
from collections.abc import Generator
from typing import Any

import numpy as np

from .columns import INT64_RANGE
from .errors import CLIError
from .sources import READ_ERRORS, Lines, Source, csv_records, first_problem, open_binary, row_lines

__all__ = ["READERS", "Source", "guess_format"]

#: What a reader yields: ``(number of the chunk's first row, {column: values})``.
Chunks = Generator[tuple[int, dict[str, Any]], None, None]


#: Archives of one CSV file (a compressed tar included), which pandas alone opens.
_ARCHIVES = (".zip", ".tar", ".tgz", ".tar.gz", ".tar.bz2", ".tar.xz")


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


def _regular(path: str) -> bool:
    """Whether ``path`` is a regular file, which pandas may open more than once (a pipe such
    as ``<(zcat log.gz)`` or ``/dev/stdin`` is read once, by the standard library's parser)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True  # (pandas then says what is wrong with it)


def _missing(src: Source, wanted: list[str], present: list[str], line: int | None) -> None:
    twice = [c for c in wanted if present.count(c) > 1]
    if twice:  # (0.8.10 took the first silently from a file, and pandas' "a.1" for the next)
        raise src.fail(line, f"column {twice[0]!r} is named twice in the header: rename one")
    absent = [c for c in wanted if c not in present]
    if absent:
        names = ", ".join(repr(c) if not c.isprintable() else c for c in map(str, present))
        raise src.fail(line, f"no column {absent[0]!r} (columns: {names or 'none'})")


def _read_csv(src: Source, wanted: list[str], batch: int) -> Chunks:
    if src.raw != "-" and _regular(src.raw):
        try:
            import pandas as pd
        except ImportError:
            pd = None
        if pd is not None:
            yield from _read_csv_pandas(pd, src, wanted, batch)
            return
    if src.raw.lower().endswith(_ARCHIVES):
        raise src.fail(None, "an archive is read through pandas: pip install pandas, or extract it")
    with open_binary(src) as fh:
        yield from _read_csv_stdlib(src, Lines(src, fh), wanted, batch)


def _read_csv_pandas(pd: Any, src: Source, wanted: list[str], batch: int) -> Chunks:
    """pandas' parser, on every column: with ``usecols`` it would take a row with more fields
    than the header without a word. Problems are worded as the standard library path words
    them (:func:`~.sources.first_problem`), and lines found by reading the file again."""

    def problem(exc: BaseException) -> CLIError:
        found = None if own else first_problem(src)
        if found is not None:
            return found
        return src.fail(None, f"cannot parse CSV: {str(exc).splitlines()[0] if str(exc) else exc}")

    # The header and the first record through the csv module: pandas takes the extra fields of
    # a first row for an index (shifting every column) and reports undecodable bytes without
    # their line.
    own = src.raw.lower().endswith(_ARCHIVES)  # archives only pandas opens
    # (pandas infers tar from .tar and .tar.gz, not from .tgz: 0.8.14 read its gzip bytes as
    # text, "cannot parse CSV: 'utf-8' codec can't decode byte 0x8b")
    compression = "tar" if src.raw.lower().endswith(".tgz") else "infer"
    names = None
    if not own:
        with open_binary(src) as fh:
            records = csv_records(src, Lines(src, fh))
            for _, (_, fields) in zip(range(2), records, strict=False):
                names = fields if names is None else names
    try:
        header = pd.read_csv(
            src.raw, nrows=0, encoding="utf-8", compression=compression
        ).columns.tolist()
    except pd.errors.EmptyDataError:
        raise src.fail(1, "the file is empty (no header line)") from None
    except (pd.errors.ParserError, ValueError) as exc:
        raise problem(exc) from None
    except READ_ERRORS as exc:
        raise src.fail(None, f"cannot read ({exc})") from None
    # Wanted columns are looked up in the header as written, not in pandas' (which renames a
    # second "a" to "a.1", a name standard input never has).
    _missing(src, wanted, header if names is None else names, 1)
    src.resolve = None if own else row_lines(src)
    dtype = {c: str for c in wanted if c in src.verbatim}
    row = 0
    try:
        with pd.read_csv(
            src.raw,
            chunksize=batch,
            keep_default_na=False,
            na_values=[""],
            dtype=dtype or None,
            index_col=False,
            encoding="utf-8",
            compression=compression,
        ) as reader:
            for chunk in reader:
                yield row, {c: chunk[c].to_numpy() for c in wanted}
                row += len(chunk)
    except (pd.errors.ParserError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise problem(exc) from None
    except READ_ERRORS as exc:
        raise src.fail(None, f"cannot read ({exc})") from None


def _read_csv_stdlib(src: Source, lines: Lines, wanted: list[str], batch: int) -> Chunks:
    records = csv_records(src, lines)
    try:
        _, header = next(records)
    except StopIteration:
        raise src.fail(1, "the input is empty (no header line)") from None
    _missing(src, wanted, header, 1)
    index = [header.index(c) for c in wanted]
    rows: list[list[str]] = []
    at: list[int] = []
    first = 0
    for line, fields in records:
        rows.append([fields[i] for i in index])
        at.append(line)
        if len(rows) == batch:
            src.chunk(first, at)
            yield first, _transpose(rows, wanted)
            first += len(rows)
            rows, at = [], []
    if rows:
        src.chunk(first, at)
        yield first, _transpose(rows, wanted)


def _transpose(rows: list[list[str]], wanted: list[str]) -> dict[str, np.ndarray]:
    table = np.array(rows, dtype=str).reshape(len(rows), len(wanted))
    return {c: table[:, i] for i, c in enumerate(wanted)}


def _read_jsonl(src: Source, wanted: list[str], batch: int) -> Chunks:
    with open_binary(src) as fh:
        lines = Lines(src, fh)
        cols: dict[str, list[Any]] = {c: [] for c in wanted}
        at: list[int] = []
        first = 0
        for text in lines:
            number = lines.number
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
                value = record[c]
                # A label read as text: the number's own text, whatever else shares its chunk
                # (numpy would make the 7 beside a 7.5 the label "7.0").
                cols[c].append(_json_text(value) if c in src.text else value)
            at.append(number)
            if len(at) == batch:
                src.chunk(first, at)
                yield first, {c: _json_column(v) for c, v in cols.items()}
                first += len(at)
                cols, at = {c: [] for c in wanted}, []
        if at:
            src.chunk(first, at)
            yield first, {c: _json_column(v) for c, v in cols.items()}


def _json_text(value: Any) -> Any:
    """A JSON scalar of a column read as text: numbers as JSON writes them (``7``, ``7.5``),
    booleans as ``True``/``False`` (as a CSV or Parquet column of booleans reads); strings,
    nulls, non-finite numbers and lists as they are (checked later)."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
        return json.dumps(value)
    return value  # NaN: a missing value, as without the option


def _json_column(values: list[Any]) -> np.ndarray:
    kinds = {type(v) for v in values}
    try:
        if (len(kinds) > 1 and (str in kinds or bool in kinds)) or kinds & {list, dict}:
            # numpy would read a NaN beside text as "nan", true beside 0.5 as 1.0, and a chunk
            # of lists as one 2-D column (named as the metric's argument, not the column)
            raise TypeError
        arr = np.asarray(values)
        if (
            int in kinds
            and arr.dtype.kind in "fO"
            and any(type(v) is int and not INT64_RANGE[0] <= v <= INT64_RANGE[1] for v in values)
        ):
            raise TypeError  # an integer past int64 read as a float (a label the file lacks)
    except (TypeError, ValueError):
        arr = np.empty(len(values), dtype=object)
        for i, v in enumerate(values):
            arr[i] = v
    return arr


def _read_parquet(src: Source, wanted: list[str], batch: int) -> Chunks:
    try:
        import pyarrow as pa
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
    src.resolve = lambda row: row + 1  # a Parquet file has rows, not lines: the row's number
    row = 0
    try:
        for rb in pf.iter_batches(batch_size=batch, columns=wanted):
            yield row, {c: rb.column(c).to_numpy(zero_copy_only=False) for c in wanted}
            row += rb.num_rows
    except (pa.ArrowException, *READ_ERRORS) as exc:
        raise src.fail(None, f"cannot read ({type(exc).__name__}: {exc})") from None


READERS = {"csv": _read_csv, "jsonl": _read_jsonl, "parquet": _read_parquet}
