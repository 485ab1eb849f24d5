"""The commands: ``eval``, ``report``, ``merge``, ``show``, and the argument parser.

``eval`` and ``report`` share one reading loop (:func:`stream`): it reads the log in chunks,
converts the columns, feeds the metrics, shows the progress bar and, for ``eval --every``,
prints the values so far. ``report`` adds sinks to that loop (the metrics behind the pictures,
the windows over time) and writes a page (:mod:`streammetrics.cli.page`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..base import Metric, loads
from ..errors import InputError, NoIntervalError, StreamMetricsError
from ..wrappers import Sliced
from ..wrappers.collection import MetricCollection
from .errors import CLIError
from .names import Member, check_columns, make_metric
from .output import Progress, flatten, plain, slice_table, table
from .readers import READERS, Source, convert, guess_format

__all__ = ["Plan", "main", "parser", "stream"]

Sink = Callable[[dict[str, np.ndarray]], None]

#: Rows per chunk when ``--batch-size`` is not given (an explicit value is told apart, so that
#: ``report STATE --batch-size N`` is refused rather than ignored).
DEFAULT_BATCH = 100_000


# -- what to read and feed -----------------------------------------------------------------------


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
        return tuple(cols[getattr(a, attr)] for attr, _ in member.needs())

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


def _as_key(column: np.ndarray) -> np.ndarray:
    """A key column: booleans as the text ``True``/``False`` (keys refuse booleans). A column
    read as keys alone already is text; one that is also a label column (``--by`` on
    ``--y-pred``) is read as booleans for the label, so its keys are converted here (0.8.8
    refused them, with a hint about float keys)."""
    return column.astype(str) if column.dtype.kind == "b" else column


def build(names: list[str], args: argparse.Namespace) -> Plan:
    members: dict[str, Member] = {}
    score_type = getattr(args, "score_type", None)
    for name in names:
        if name in members:
            continue
        member = make_metric(name, score_type)
        check_columns(member, args)
        members[name] = member
    if score_type is not None and not any(
        m.metric.config.get("score_type") == score_type for m in members.values()
    ):
        raise CLIError(
            "--score-type: none of the metrics takes a score type (roc_auc, average_precision, "
            "gauc and the curves do)"
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
    return rows


def flush(src: Source, plan: Plan, final: bool, rows: int) -> None:
    """:meth:`Plan.flush`, its errors worded as the rows' own are."""
    try:
        plan.flush(final)
    except StreamMetricsError as exc:
        lines = src.span(rows - plan.carried, rows - 1)
        raise src.fail(None, f"rows at lines {lines}: {exc}") from None


def _check_data_args(args: argparse.Namespace) -> None:
    if not (args.y_score or args.y_pred or args.hypothesis):
        raise CLIError(
            "give --y-score COL (score and ranking metrics), --y-pred COL (label metrics) or "
            "--hypothesis COL --reference COL (text metrics)"
        )


# -- eval ----------------------------------------------------------------------------------------


def _eval(args: argparse.Namespace) -> int:
    _check_data_args(args)
    plan = build(args.metric, args)
    coll = plan.collection

    def rolling(rows: int) -> None:
        print_values(coll, rows, args.json, rolling=True)

    rows = stream(args, plan, every=rolling)
    if args.save:
        write(args.save, coll.to_bytes())
    print_values(coll, rows, args.json, rolling=False, ci=args.ci)
    return 0


def intervals(coll: Metric, level: float) -> dict[str, Any]:
    """``{metric: (low, high)}`` (or ``{metric: {slice: (low, high)}}`` under ``--by``); a
    metric without a closed-form interval gets None."""
    members = coll._names if isinstance(coll, MetricCollection) else [type(coll).__name__]
    out: dict[str, Any] = {}
    for name in members:
        metric = coll[name] if isinstance(coll, MetricCollection) else coll
        try:
            if isinstance(metric, Sliced):
                out[name] = metric.intervals(level)
            else:
                out[name] = metric.interval(level)
        except NoIntervalError:
            out[name] = None
    return out


def print_values(
    coll: Metric, rows: int, as_json: bool, rolling: bool, ci: float | None = None
) -> None:
    """Print a collection's values (or a single metric's, under its class name), with their
    confidence intervals at level ``ci`` when given."""
    values = coll.compute()
    if not isinstance(coll, MetricCollection):
        values = {type(coll).__name__: values}
    bounds = intervals(coll, ci) if ci is not None and not rolling else None
    # (A saved Sliced read alone, `report STATE --ci`, is sliced too: 0.8.10 printed the plain
    # table, which leaves out values that are dicts, intervals and all.)
    sliced = isinstance(coll, Sliced) or (
        isinstance(coll, MetricCollection) and any(isinstance(coll[n], Sliced) for n in coll.keys())
    )
    if as_json:
        out: dict[str, Any] = {"rows": rows, "metrics": plain(values)}
        if bounds is not None:
            out["level"] = ci
            out["intervals"] = plain(bounds)
        print(json.dumps(out), flush=True)
    elif sliced and not rolling:
        print(slice_table(values, rows, bounds), flush=True)
    elif bounds is not None:
        print(table(values, rows, bounds), flush=True)
    elif rolling:
        flat = [f"{k}={v}" for name, value in values.items() for k, v in flatten(name, value)]
        print(f"rows={rows} " + " ".join(flat), flush=True)
    else:
        print(table(values, rows), flush=True)


# -- report --------------------------------------------------------------------------------------


def _report(args: argparse.Namespace) -> int:
    from ..plot import _matplotlib
    from .page import Report

    _matplotlib()  # the plot extra, before the log is read: an ImportError naming it
    folder = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise CLIError(f"{args.output}: cannot write the report there (no such writable folder)")
    if os.path.isdir(args.output):  # (0.8.8 read the whole log first, then failed)
        raise CLIError(f"{args.output}: is a folder; give the report's file name (report.html)")

    if args.metric:
        if len(args.inputs) != 1:
            raise CLIError("report reads one DATA file (or several saved states, without --metric)")
        args.data = args.inputs[0]
        _check_data_args(args)
        if (args.window is None) != (args.time is None):
            raise CLIError("--window WIDTH and --time COL go together")
        plan = build(args.metric, args)
        report = Report.for_data(plan, args)
        rows = stream(args, plan, sinks=report.sinks())
        if args.save:
            write(args.save, plan.collection.to_bytes())
        print_values(plan.collection, rows, args.json, rolling=False, ci=args.ci)
        report.finish(plan.collection, rows, source=args.data)
    else:
        if args.window is not None or args.time is not None:
            raise CLIError("--window and --time need a DATA file and --metric")
        given = [
            f"--{o.replace('_', '-')}"
            for o in _DATA_ONLY
            if getattr(args, o, None) is not None and getattr(args, o) is not False
        ]
        if given:  # (0.8.9 ignored them: `report STATE --by COL` drew the whole, silently)
            raise CLIError(
                f"{', '.join(given)}: read a DATA file with --metric; saved states keep the "
                "columns, metrics and slices they were evaluated with"
            )
        total = merged(args.inputs)
        if args.save:  # the merge the page shows, as `merge -o` writes it
            write(args.save, total.to_bytes())
        print_values(total, total.count, args.json, rolling=False, ci=args.ci)
        report = Report.for_state(total, args.ci)
        report.finish(total, total.count, source=", ".join(args.inputs))
    try:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(report.html())
    except OSError as exc:
        raise CLIError(f"{args.output}: cannot write the report ({exc.strerror})") from None
    if not args.json:
        print(f"report written to {args.output}", file=sys.stderr)
    return 0


#: The options of ``report`` that read a prediction log: without ``--metric`` (saved states),
#: any of them is refused rather than ignored.
_DATA_ONLY = (
    "y_true",
    "y_score",
    "y_pred",
    "group",
    "query",
    "queries_grouped",
    "hypothesis",
    "reference",
    "format",
    "score_type",
    "labels_as_text",
    "by",
    "batch_size",
)


# -- states --------------------------------------------------------------------------------------


def write(path: str, blob: bytes) -> None:
    try:
        with open(path, "wb") as fh:
            fh.write(blob)
    except OSError as exc:
        raise CLIError(f"{path}: cannot write the state ({exc.strerror})") from None


def load(path: str) -> Metric:
    try:
        with open(path, "rb") as fh:
            blob = fh.read()
    except OSError as exc:
        raise CLIError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        return loads(blob)
    except StreamMetricsError as exc:
        raise CLIError(f"{path}: not a streammetrics state ({exc})") from None


def merged(paths: list[str]) -> Metric:
    """The merge of the states saved in ``paths`` (one-line errors naming the file)."""
    metrics = [load(p) for p in paths]
    total = metrics[0].copy()
    for path, metric in zip(paths[1:], metrics[1:], strict=True):
        try:
            total.merge(metric)
        except StreamMetricsError as exc:
            raise CLIError(f"{path}: cannot be merged into {paths[0]} ({exc})") from None
    return total


def _merge(args: argparse.Namespace) -> int:
    write(args.output, merged(args.states).to_bytes())
    return 0


def _show(args: argparse.Namespace) -> int:
    metric = load(args.state)
    values = metric.compute()
    config = metric.config
    if args.json:
        out = {
            "class": type(metric).__name__,
            "config": plain(config),
            "count": metric.count,
            "values": plain(values),
        }
        print(json.dumps(out))
        return 0
    print(f"class   {type(metric).__name__}")
    if "members" in config:
        for name, spec in config["members"].items():
            print(f"member  {name}: {spec['class']}({_kwargs(spec['config'])})")
    else:
        print(f"config  {_kwargs(config)}")
    print(f"count   {metric.count}")
    if isinstance(values, dict):
        print(table(values, metric.count))
    else:
        print(table({"value": values}, metric.count))
    return 0


def _kwargs(config: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in config.items())


# -- the parser ----------------------------------------------------------------------------------


def _data_options(e: argparse.ArgumentParser, required: bool) -> None:
    """The options ``eval`` and ``report`` share: metrics, columns, format, chunks."""
    e.add_argument(
        "--metric",
        action="append",
        required=required,
        metavar="NAME",
        help="a metric name as scikit-learn scorers name them, or NAME@K (repeatable)",
    )
    e.add_argument("--y-true", metavar="COL", help="column of true labels/values/relevance")
    e.add_argument("--y-score", metavar="COL", help="column of scores (AUC, AP, ranking, ...)")
    e.add_argument("--y-pred", metavar="COL", help="column of predicted labels or values")
    e.add_argument("--group", metavar="COL", help="column of group ids (gauc)")
    e.add_argument("--query", metavar="COL", help="column of query ids (ranking metrics)")
    e.add_argument(
        "--queries-grouped",
        action="store_true",
        help="the rows of each query are together (a log sorted by query): ranking metrics "
        "score each query as it ends and drop its rows (memory: one id per query)",
    )
    e.add_argument("--hypothesis", metavar="COL", help="column of hypotheses (bleu, chrf)")
    e.add_argument(
        "--reference",
        action="append",
        metavar="COL",
        help="column of references (repeatable: several references per hypothesis)",
    )
    e.add_argument(
        "--format",
        choices=("csv", "jsonl", "parquet"),
        help="input format (default: from the file name; csv for '-')",
    )
    e.add_argument(
        "--batch-size",
        type=int,
        metavar="N",
        help=f"rows per chunk (default {DEFAULT_BATCH})",
    )
    e.add_argument(
        "--score-type",
        choices=("probability", "logit", "real"),
        help="how the AUC and AP sketches bucket --y-score: probabilities in [0, 1] (the "
        "default), logits (raw model outputs) or any real scale",
    )
    e.add_argument(
        "--labels-as-text",
        action="store_true",
        help="read label, group, query and --by columns as text (default: numbers where a "
        "column holds only numbers)",
    )
    e.add_argument("--save", metavar="STATE", help="write the final state to this file")
    e.add_argument("--json", action="store_true", help="print JSON instead of a table")
    e.add_argument(
        "--by",
        action="append",
        metavar="COL",
        help="one row per slice: the metrics per value of COL (repeatable: composite slices)",
    )
    e.add_argument(
        "--ci",
        nargs="?",
        const=0.95,
        type=float,
        metavar="LEVEL",
        help="print each value's confidence interval (default level 0.95)",
    )


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="streammetrics",
        description="Streaming, mergeable evaluation metrics from the command line.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    e = sub.add_parser("eval", help="evaluate a prediction log (CSV, JSON Lines, Parquet, '-')")
    e.add_argument("data", metavar="DATA", help="a file, or '-' for standard input")
    _data_options(e, required=True)
    e.add_argument("--every", type=int, metavar="N", help="print the values so far every N rows")
    r = sub.add_parser(
        "report",
        help="evaluate a log (or merge saved states) and write a self-contained HTML page",
    )
    r.add_argument(
        "inputs",
        nargs="+",
        metavar="DATA|STATE",
        help="one prediction log (with --metric), or saved states to merge (without)",
    )
    _data_options(r, required=False)
    r.add_argument("-o", "--output", required=True, metavar="HTML", help="the page to write")
    r.add_argument("--window", metavar="WIDTH", help="window width for metrics over time")
    r.add_argument("--time", metavar="COL", help="column of timestamps (numbers or ISO 8601)")
    r.set_defaults(every=None)
    m = sub.add_parser("merge", help="merge saved states into one")
    m.add_argument("states", nargs="+", metavar="STATE")
    m.add_argument("-o", "--output", required=True, metavar="OUT")
    s = sub.add_parser("show", help="print a saved state: class, config, count, values")
    s.add_argument("state", metavar="STATE")
    s.add_argument("--json", action="store_true")
    return p


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "eval": _eval,
    "report": _report,
    "merge": _merge,
    "show": _show,
}


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (also used by the console script)."""
    args = parser().parse_args(argv)
    try:
        status = COMMANDS[args.command](args)
    except BrokenPipeError:  # the reader of the output left (`| head`): stop quietly
        try:  # (and let the interpreter's final flush of stdout write nowhere)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 1
    except (CLIError, StreamMetricsError, OSError) as exc:
        print(f"streammetrics: error: {exc}", file=sys.stderr)
        return 1
    except ImportError as exc:
        print(f"streammetrics: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return status
