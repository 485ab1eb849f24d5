"""The commands: ``eval``, ``report``, ``merge``, ``show``, and :func:`main`.

``eval`` and ``report`` read a log through one loop (:func:`streammetrics.cli.plan.stream`);
``report`` adds sinks to it and writes a page (:mod:`streammetrics.cli.page`). The parser is
:mod:`streammetrics.cli.arguments`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from ..base import Metric, loads
from ..errors import NoIntervalError, StreamMetricsError
from ..wrappers import Sliced
from ..wrappers.collection import MetricCollection
from .arguments import parser
from .errors import CLIError
from .output import flatten, plain, slice_table, table
from .plan import build, stream

__all__ = ["main"]


# -- eval ----------------------------------------------------------------------------------------


def _same_file(a: str, b: str) -> bool:
    if a == "-" or b == "-":
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:  # (one does not exist yet)
        return os.path.realpath(a) == os.path.realpath(b)


def _destination(flag: str, path: str, what: str) -> None:
    """Refuse, before reading anything, a file name that cannot be written: a folder, or a
    name in a folder that does not exist or is not writable (0.8.16's ``eval --save`` read
    the whole log first, then failed)."""
    if os.path.isdir(path):
        raise CLIError(f"{flag} {path}: is a folder; give the {what}'s file name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise CLIError(f"{flag} {path}: cannot write the {what} there (no such writable folder)")


def _check_writes(reads: list[str], writes: list[tuple[str, str | None]]) -> None:
    """Refuse, before reading anything, to write over a file the command reads or over
    another file it writes (0.8.14 replaced ``report data.csv -o data.csv``'s log, or the
    state of ``-o x --save x``, with the page, and said it had written the report), or to a
    name that cannot be written (:func:`_destination`)."""
    given = [(flag, path) for flag, path in writes if path]
    for flag, path in given:
        _destination(flag, path, "report" if flag == "-o" else "state")  # (-o: report's page)
    for flag, path in given:
        for read in reads:
            if _same_file(path, read):
                raise CLIError(f"{flag} {path}: is the input {read}; give another file name")
    for (flag, path), (other, path2) in itertools.combinations(given, 2):
        if _same_file(path, path2):
            raise CLIError(f"{flag} and {other} name one file ({path}); give two file names")


def _eval(args: argparse.Namespace) -> int:
    _check_writes([args.data], [("--save", args.save)])
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
    _destination("-o", args.output, "report")  # (0.8.8 read the whole log first, then failed)
    # (A saved state may be written over an input state: the merge holds it, as `merge -o`.)
    _check_writes(args.inputs, [("-o", args.output)] + [("--save", args.save)] * bool(args.metric))
    _check_writes([], [("-o", args.output), ("--save", args.save)])

    if args.metric:
        if len(args.inputs) != 1:
            raise CLIError("report reads one DATA file (or several saved states, without --metric)")
        args.data = args.inputs[0]
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
        try:
            total = merged(args.inputs)
        except CLIError as exc:
            if "not a streammetrics state" not in str(exc):
                raise
            # (a log given without --metric: say how to evaluate it)
            raise CLIError(f"{exc}; to draw a data file, give --metric NAME") from None
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
    "pos_label",
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
    _destination("-o", args.output, "state")
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
