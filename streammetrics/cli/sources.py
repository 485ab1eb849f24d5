"""Where rows come from: the :class:`Source` of a run (its name and the file line of every row,
for messages), opening a file (compressed by its suffix) and reading it as lines of UTF-8 text
and CSV records, each with the line of the file it starts on.

Every reader goes through these, so a file and the same bytes on standard input read alike: a
UTF-8 byte order mark is dropped, an undecodable byte is reported at its line, blank lines are
skipped but counted, and a record with more fields than the header is refused.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import importlib
import lzma
import sys
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

from .errors import CLIError

__all__ = [
    "READ_ERRORS",
    "Lines",
    "Source",
    "csv_records",
    "first_problem",
    "open_binary",
    "row_lines",
]

#: What a damaged (compressed) file raises while it is read.
READ_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError)


class Source:
    """Where rows come from, for messages: ``path``, and the file line of each row.

    Rows are numbered from 0 (the first row after the header) across the whole input. A reader
    records the lines of the rows of the chunk it yields (:meth:`chunk`) or, when it does not know
    them (pandas' parser), sets :attr:`resolve` to find the line of a row on demand (re-reading the
    file, only when a message needs it).
    """

    def __init__(
        self,
        path: str,
        fmt: str,
        text: frozenset[str] = frozenset(),
        verbatim: frozenset[str] = frozenset(),
    ) -> None:
        self.path = "<stdin>" if path == "-" else path
        self.raw = path
        self.fmt = fmt
        #: Label columns read as text whatever they hold (``--labels-as-text``).
        self.text = text
        #: Columns the reader keeps as the text of the file (no number parsing).
        self.verbatim = text | verbatim
        #: The line of a row outside the current chunk (None: unknown).
        self.resolve: Callable[[int], int | None] | None = None
        #: Per label column, the first row holding a negative integer (``"negative"``) and the
        #: first holding one past int64 (``"past"``), with its line when the reader recorded
        #: it: no integer type holds both, in any chunks.
        self.int_signs: dict[str, dict[str, tuple[int, int | None]]] = {}
        self._first = 0
        self._lines: Sequence[int] = ()

    def chunk(self, first: int, lines: Sequence[int]) -> None:
        """The rows ``first, first + 1, ...`` start on ``lines`` of the file."""
        self._first, self._lines = first, lines

    def chunk_line(self, row: int) -> int | None:
        """The line of a row of the current chunk when the reader recorded it (no re-read)."""
        i = row - self._first
        return int(self._lines[i]) if 0 <= i < len(self._lines) else None

    def line(self, row: int) -> int | None:
        i = row - self._first
        if 0 <= i < len(self._lines):
            return int(self._lines[i])
        if self.resolve is None:
            return None
        try:
            return self.resolve(row)
        except (CLIError, csv.Error, ValueError, *READ_ERRORS):
            return None

    def span(self, first: int, last: int) -> str:
        """``"a-b"``: the lines of rows ``first`` to ``last`` (``?`` where unknown)."""
        b = self.line(last)  # the later row first: a re-read then finds both
        a = self.line(first)
        return f"{'?' if a is None else a}-{'?' if b is None else b}"

    def fail(self, line: int | None, message: str) -> CLIError:
        where = f"{self.path}:{line}" if line is not None else self.path
        return CLIError(f"{where}: {message}")

    def fail_row(self, row: int, message: str) -> CLIError:
        return self.fail(self.line(row), message)


_OPENERS: dict[str, Callable[..., Any]] = {
    ".gz": gzip.open,
    ".bz2": bz2.open,
    ".xz": lzma.open,
}


@contextmanager
def open_binary(src: Source) -> Iterator[IO[bytes]]:
    """The bytes of ``src`` (standard input, left open), decompressed by the file's suffix."""
    if src.raw == "-":
        yield sys.stdin.buffer
        return
    lower = src.raw.lower()
    opener: Callable[..., Any] = open
    for suffix, func in _OPENERS.items():
        if lower.endswith(suffix):
            opener = func
    if lower.endswith(".zst"):
        try:
            opener = importlib.import_module("zstandard").open
        except ImportError:
            raise src.fail(None, "reading .zst needs the zstandard package") from None
    try:
        fh = opener(src.raw, "rb")
    except READ_ERRORS as exc:
        raise src.fail(None, f"cannot read ({getattr(exc, 'strerror', None) or exc})") from None
    with fh:
        yield fh


def _undecodable(exc: UnicodeDecodeError, raw: bytes, number: int) -> str:
    if number == 1 and raw.startswith(b"PAR1"):
        return "a Parquet file, not text (name it .parquet or pass --format parquet)"
    if number == 1 and raw.startswith(b"\x1f\x8b"):
        return "gzip-compressed data (name the file .gz)"
    return f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"


class Lines:
    """The lines of ``fh`` as text, numbered from 1 (:attr:`number`: the last line read).

    A UTF-8 byte order mark at the start is dropped; an undecodable byte is an error at its
    line. Lines keep their ends (``\\n``, ``\\r\\n``), as the :mod:`csv` module wants them.
    :attr:`quotes` counts the ``"`` read so far (an unclosed quote runs to the end).
    """

    def __init__(self, src: Source, fh: IO[bytes]) -> None:
        self.src, self.fh = src, fh
        self.number = 0
        self.quotes = 0

    def __iter__(self) -> Iterator[str]:
        src = self.src
        it = iter(self.fh)
        while True:
            try:
                raw = next(it)
            except StopIteration:
                return
            except READ_ERRORS as exc:
                raise src.fail(self.number + 1, f"cannot read ({exc})") from None
            self.number += 1
            try:
                text = raw.decode("utf-8-sig" if self.number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise src.fail(self.number, _undecodable(exc, raw, self.number)) from None
            self.quotes += text.count('"')
            yield text


def _blank(fields: list[str]) -> bool:
    """A blank line (pandas skips a line of spaces too)."""
    return not fields or (len(fields) == 1 and not fields[0].strip())


def csv_records(src: Source, lines: Lines) -> Iterator[tuple[int, list[str]]]:
    """``(line, fields)`` of the header, then of every record, ``line`` the file line the record
    starts on. Blank lines are skipped; a record with more fields than the header, or with a
    quote that is never closed, is an error at its line; a shorter one is padded with empty
    fields (as pandas reads it: missing values)."""
    # Any field length, as pandas' parser reads them (the csv module's default refused a
    # field over 128 KiB: a long unused column failed standard input, not the file).
    csv.field_size_limit(2**31 - 1)
    reader = csv.reader(lines)
    width: int | None = None
    while True:
        start, quotes = reader.line_num + 1, lines.quotes
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            if "new-line character seen in unquoted field" in str(exc):
                # (The csv module's own advice, "universal-newline mode", means nothing here.)
                raise src.fail(
                    reader.line_num,
                    "cannot parse CSV: lines end in a lone carriage return (\\r, old Mac line "
                    "endings); convert them to \\n (for example: tr '\\r' '\\n')",
                ) from None
            raise src.fail(reader.line_num, f"cannot parse CSV: {exc}") from None
        if _blank(fields):
            continue
        if (lines.quotes - quotes) % 2 and (
            reader.line_num > start or fields[-1].endswith(("\n", "\r"))
        ):
            raise src.fail(start, 'a quoted field is never closed (a " without its pair)')
        if width is None:
            width = len(fields)
        elif len(fields) > width:
            raise src.fail(start, f"{len(fields)} fields, the header has {width}")
        elif len(fields) < width:
            fields += [""] * (width - len(fields))
        yield start, fields


def first_problem(src: Source) -> CLIError | None:
    """The first error :func:`csv_records` finds in the file ``src`` (None: none)."""
    try:
        with open_binary(src) as fh:
            for _ in csv_records(src, Lines(src, fh)):
                pass
    except CLIError as exc:
        return exc
    return None


def csv_field(src: Source, row: int, column: str) -> str | None:
    """The text of ``column`` in row ``row`` of the CSV file ``src``, read again by pandas (whose
    parser read it as a number, and numbers its rows as the reading did), for a message about a
    value the parse lost; None when it cannot be read."""
    if src.raw == "-":
        return None
    try:
        import pandas as pd

        seen = 0
        with pd.read_csv(
            src.raw,
            usecols=[column],
            dtype=str,
            keep_default_na=False,
            index_col=False,
            encoding="utf-8",
            chunksize=1 << 16,
        ) as reader:
            for chunk in reader:
                if row < seen + len(chunk):
                    return str(chunk[column].iloc[row - seen])
                seen += len(chunk)
    except Exception:  # (only a message's wording depends on it)
        return None
    return None


def row_lines(src: Source) -> Callable[[int], int | None]:
    """The file line of a row of the CSV file ``src``, found by reading the file again up to
    that row (the lines of the rows before it are kept for the next question)."""
    seen: list[int] = []

    def resolve(row: int) -> int | None:
        if row >= len(seen):
            seen.clear()
            with open_binary(src) as fh:
                records = csv_records(src, Lines(src, fh))
                next(records, None)  # the header
                for line, _ in records:
                    seen.append(line)
                    if len(seen) > row:
                        break
        return seen[row] if row < len(seen) else None

    return resolve
