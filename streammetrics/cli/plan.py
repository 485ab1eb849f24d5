"""What a command reads and feeds: the metrics, their columns, and the reading loop.

:func:`build` turns ``--metric`` names and column options into a :class:`Plan` (a collection of
metrics, one ``Sliced`` per metric under ``--by``, and the type of each column to read).
:func:`stream` reads the log in chunks, converts the columns, feeds the metrics, shows the
progress bar and, for ``eval --every``, hands the rows so far to a callback. ``report`` adds sinks
to that loop (the metrics behind the pictures, the windows over time).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError, StreamMetricsError
from ..wrappers import Sliced
from ..wrappers.collection import MetricCollection
from .columns import convert
from .errors import CLIError
from .names import Member, check_columns, make_metric
from .output import Progress
from .readers import READERS, Source, guess_format

__all__ = ["DEFAULT_BATCH", "Plan", "build", "flush", "stream"]

Sink = Callable[[dict[str, np.ndarray]], None]

#: Rows per chunk when ``--batch-size`` is not given (an explicit value is told apart, so that
#: ``report STATE --batch-size N`` is refused rather than ignored).
DEFAULT_BATCH = 100_000


@dataclass
class Plan:
    """The metrics of a command and the columns they read, with their types."""

    members: list[Member]
    args: argparse.Namespace
    collection: MetricCollection = field(init=False)
    types: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        a = self.args
        by = getattr(a, "by", None) or []
        # --by: every metric per slice of the data (one Sliced per metric, keyed alike).
        self.collection = MetricCollection(
            **{m.name: Sliced(m.metric) if by else m.metric for m in self.members}
        )
        kinds = {m.kind for m in self.members}
        families = {m.family for m in self.members}
        types: dict[str, str] = {}

        def put(col: str | None, kind: str) -> None:
            if col is not None:
                types.setdefault(col, kind)

        for ref in a.reference or []:
            put(ref, "references")
        put(a.hypothesis, "text")
        put(a.y_score, "number")
        put(getattr(a, "time", None), "time")
        if families == {"regression"}:  # values, not labels: numbers, --labels-as-text or not
            put(a.y_true, "number")
            put(a.y_pred, "number")
        if "query" in kinds and kinds <= {"query", "score"}:
            put(a.y_true, "number")  # graded relevance
        for col in (a.y_true, a.y_pred):
            put(col, "label")
        for col in (a.group, a.query, *by):
            put(col, "key")  # labels too, but booleans are no key: read as text
            if col is not None and types[col] == "label":
                # Both (``--by`` on ``--y-pred``): booleans stay booleans for the label and
                # become text keys (``_as_key``); booleans beside integers, which a label
                # column reads as 1 and 0, are refused here as for keys, in any chunking.
                types[col] = "label+key"
        self.types = types
        #: ``--queries-grouped``: the ids of the queries marked complete so far (one per query,
        #: where buffering would keep every row), to refuse one that comes back.
        self.closed: set[Any] | None = set() if getattr(a, "queries_grouped", False) else None
        #: ... and the rows of the last query read, held until the next chunk shows whether it
        #: goes on (:meth:`flush` feeds them).
        self.carry: dict[str, np.ndarray] | None = None
        #: Rows of earlier chunks the last update or flush fed (for the lines of its errors).
        self.carried = 0
        #: The query whose rows a rolling report's flush fed as not complete: it is closed
        #: when the next chunk starts with another.
        self.open: Any = None
        #: Whether a row of ``--y-true`` held the ``--pos-label`` of the score metrics.
        self.positive_seen = False
        #: Columns a regression metric reads beside label metrics: labels, but never as text.
        self.values = frozenset(
            c for c in (a.y_true, a.y_pred) if c is not None and "regression" in families
        )

    @property
    def wanted(self) -> list[str]:
        return list(self.types)

    def columns(self, member: Member, cols: dict[str, np.ndarray]) -> tuple[Any, ...]:
        """The arguments of ``member.metric.update`` from a chunk's columns."""
        a = self.args
        if member.kind == "text":
            refs = [cols[r] for r in a.reference]
            rows = [list(row) for row in zip(*refs, strict=True)] if len(refs) > 1 else refs[0]
            return (cols[a.hypothesis], rows)
        out = tuple(cols[getattr(a, attr)] for attr, _ in member.needs())
        if member.positive_rows is not None:  # y_true comes first for score and group kinds
            positives = _positives(out[0], member.positive_rows)
            self.positive_seen = self.positive_seen or bool(positives.any())
            out = (positives, *out[1:])
        return out

    def update(self, cols: dict[str, np.ndarray]) -> None:
        if self.closed is None or not any(m.kind == "query" for m in self.members):
            self._update(cols, False)
            return
        # --queries-grouped: every query but the last read is complete (its rows are all here
        # or buffered), so the ranking metrics score it and drop its rows; the last may go on
        # in the next chunk, so its rows wait for it (or for flush).
        self.carried = 0
        if not len(cols[self.args.query]):
            return
        if self.carry is not None:
            self.carried = len(self.carry[self.args.query])
            cols = {c: np.concatenate([self.carry[c], v]) for c, v in cols.items()}
            self.carry = None
        q = cols[self.args.query]
        starts = np.flatnonzero(q[1:] != q[:-1]) + 1
        ids = q[np.concatenate(([0], starts))].tolist()
        if self.open is not None:
            # (Its rows went in before a rolling report; unless they go on here, it is done:
            # 0.8.10 forgot it, and took it back later without the documented error.)
            if ids[0] != self.open:
                self.closed.add(self.open)
            self.open = None
        again = [i for i in ids if i in self.closed]
        if again or len(set(ids)) < len(ids):
            who = again[0] if again else next(i for i in ids if ids.count(i) > 1)
            raise InputError(
                f"--queries-grouped: the rows of query {who!r} are not together (it comes back "
                "after other queries); drop the option or sort the log by query"
            )
        last = int(starts[-1]) if len(starts) else 0
        if last:
            self._update({c: v[:last] for c, v in cols.items()}, True)
            self.closed.update(ids[:-1])
        self.carry = {c: v[last:] for c, v in cols.items()} if last else cols

    def flush(self, final: bool) -> None:
        """Feed the rows :meth:`update` holds back (``--queries-grouped``): as complete at the
        end of the data (``final``), else buffered (before a rolling report, which counts
        them; later rows of that query then join them)."""
        carry, self.carry = self.carry, None
        self.carried = 0 if carry is None else len(carry[self.args.query])
        if carry is not None:
            self._update(carry, final)
            if not final and self.closed is not None and len(carry[self.args.query]):
                self.open = carry[self.args.query][0].item()

    def _update(self, cols: dict[str, np.ndarray], complete: bool) -> None:
        # Members take different columns: each gets its own, all or nothing.
        by = getattr(self.args, "by", None) or []
        extra: dict[str, Any] = {}
        if by:
            keys = [_as_key(cols[c]) for c in by]
            extra["by"] = keys[0] if len(by) == 1 else tuple(keys)
        self.collection.update_each(
            {
                m.name: (
                    self.columns(m, cols),
                    {**extra, "complete": True} if complete and m.kind == "query" else extra,
                )
                for m in self.members
            }
        )


def _positives(labels: np.ndarray, positive: Any) -> np.ndarray:
    """Which rows hold the positive label, as booleans. A text column compares the label as
    text; a column of booleans reads ``True``/``1`` and ``False``/``0`` as its label column
    does; a column of numbers never holds a text label."""
    kind = labels.dtype.kind
    if kind in "US":
        return np.asarray(labels == str(positive))
    if kind == "O":
        return np.fromiter((v == positive for v in labels.tolist()), dtype=bool, count=len(labels))
    if isinstance(positive, str):
        # Booleans in any case (a column of them, or beside integers, which reads them as 1 and
        # 0), or a number that is not whole (a column of 0.5 and 1.5)
        word = positive.strip().lower()
        if word in ("true", "false"):
            positive = int(word == "true")
        else:
            try:
                positive = float(positive)
            except ValueError:
                return np.zeros(len(labels), dtype=bool)
    if kind == "b":
        if positive not in (0, 1):
            return np.zeros(len(labels), dtype=bool)
        return labels if positive else ~labels
    return np.asarray(labels == positive)


def _as_key(column: np.ndarray) -> np.ndarray:
    """A key column: booleans as the text ``True``/``False`` (keys refuse booleans). A column
    read as keys alone already is text; one that is also a label column (``--by`` on
    ``--y-pred``) is read as booleans for the label, so its keys are converted here (0.8.8
    refused them, with a hint about float keys)."""
    return column.astype(str) if column.dtype.kind == "b" else column


def _pos_label(args: argparse.Namespace) -> Any:
    """``--pos-label`` as the label column reads it: text with ``--labels-as-text`` or when
    it is not a whole number, else that number."""
    given = getattr(args, "pos_label", None)
    if given is None or getattr(args, "labels_as_text", False):
        return given
    whole = re.fullmatch(r"([+-]?[0-9]+)(?:\.0*)?", given.strip())  # (1.0: as a column reads it)
    if not whole:
        return given
    value = int(whole.group(1))
    if not -(2**63) <= value < 2**63:  # (no label column reads past int64)
        raise CLIError(f"--pos-label {given}: a whole number past 64 bits is no label")
    return value


def build(names: list[str], args: argparse.Namespace) -> Plan:
    members: dict[str, Member] = {}
    score_type = getattr(args, "score_type", None)
    pos_label = _pos_label(args)
    for name in names:
        if name in members:
            continue
        member = make_metric(name, score_type, pos_label)
        check_columns(member, args)
        members[name] = member
    if score_type is not None and not any(
        m.metric.config.get("score_type") == score_type for m in members.values()
    ):
        raise CLIError(
            "--score-type: none of the metrics takes a score type (roc_auc, average_precision, "
            "gauc and the curves do)"
        )
    if pos_label is not None and not any(m.positive for m in members.values()):
        raise CLIError(
            "--pos-label: none of the metrics takes a positive class (f1, precision, recall "
            "and the binary score metrics, roc_auc, average_precision, gauc, log_loss, "
            "brier_score and calibration_error, do; f1_macro and the other averages score every "
            "class)"
        )
    return Plan(list(members.values()), args)


def stream(
    args: argparse.Namespace,
    plan: Plan,
    sinks: list[Sink] = (),  # type: ignore[assignment]
    every: Callable[[int], None] | None = None,
) -> int:
    """Read ``args.data`` in chunks and feed ``plan`` and ``sinks``; returns the rows read.

    With ``args.every`` the chunks are cut where a rolling report is due, and ``every(rows)``
    is called there. The progress bar shows on a terminal.
    """
    batch = DEFAULT_BATCH if args.batch_size is None else args.batch_size
    if batch < 1 or (args.every is not None and args.every < 1):
        raise CLIError("--batch-size and --every must be positive")
    ci = getattr(args, "ci", None)
    if ci is not None and not 0.0 < ci < 1.0:  # before the file is read, not after
        raise CLIError(f"--ci: the level must be between 0 and 1 (exclusive); got {ci}")
    fmt = guess_format(args.data, args.format)
    as_text = getattr(args, "labels_as_text", False)
    labels = {
        c
        for c, kind in plan.types.items()
        if kind in ("label", "key", "label+key") and c not in plan.values
    }
    texts = {c for c, kind in plan.types.items() if kind in ("text", "references")}
    src = Source(args.data, fmt, frozenset(labels if as_text else ()), frozenset(texts))
    if args.data != "-" and not os.path.exists(args.data):
        raise src.fail(None, "no such file")
    reader = READERS[fmt]
    wanted = plan.wanted
    if args.data == "-" and args.every:
        batch = min(batch, args.every)  # a live pipe (tail -f) reports as soon as rows are due
    progress = Progress(sys.stderr.isatty())
    rows, next_report = 0, args.every
    try:
        with closing(reader(src, wanted, batch)) as chunks:  # closes the file on every path
            for row, raw in chunks:
                cols = convert(raw, plan.types, src, row)
                n = len(cols[wanted[0]])
                offset = 0
                while offset < n:
                    # cut the chunk where a rolling report is due
                    stop = n if next_report is None else min(n, offset + next_report - rows)
                    part = (
                        cols
                        if (offset, stop) == (0, n)
                        else {c: v[offset:stop] for c, v in cols.items()}
                    )
                    try:
                        plan.update(part)
                        for sink in sinks:
                            sink(part)
                    except StreamMetricsError as exc:
                        # (with the rows --queries-grouped held back from earlier chunks)
                        lines = src.span(row + offset - plan.carried, row + stop - 1)
                        hint = ""
                        if 'pass score_type="logit"' in str(exc):
                            hint = " (on the command line: --score-type logit, or real)"
                        if str(exc).startswith("pos_label:"):
                            hint = (
                                " (on the command line: --pos-label LABEL names the positive "
                                "class; f1_macro, precision_macro, ... score every class)"
                            )
                        if "labels, but this state holds" in str(exc) and not src.text:
                            # Earlier chunks held numbers only, this one text only.
                            hint = " (pass --labels-as-text to read every label as text)"
                        raise src.fail(None, f"rows at lines {lines}: {exc}{hint}") from None
                    rows += stop - offset
                    progress.add(stop - offset)
                    offset = stop
                    if next_report is not None and rows == next_report:
                        if every is not None:
                            flush(src, plan, False, rows)
                            every(rows)
                        next_report += args.every
        flush(src, plan, True, rows)
    finally:
        progress.close()
    scored = [m for m in plan.members if m.positive_rows is not None]
    if scored and rows and not plan.positive_seen:
        raise CLIError(
            f"--pos-label {args.pos_label}: no row of --y-true {args.y_true!r} holds it, so "
            f"{scored[0].name} has no positives; give the label as the column holds it"
        )
    return rows


def flush(src: Source, plan: Plan, final: bool, rows: int) -> None:
    """:meth:`Plan.flush`, its errors worded as the rows' own are."""
    try:
        plan.flush(final)
    except StreamMetricsError as exc:
        lines = src.span(rows - plan.carried, rows - 1)
        raise src.fail(None, f"rows at lines {lines}: {exc}") from None
