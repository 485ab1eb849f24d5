"""The ``streammetrics`` command: evaluate a prediction log, merge saved states, show a state.

::

    streammetrics eval DATA --metric NAME [--metric NAME ...] --y-true COL
                       (--y-score COL | --y-pred COL) [--group COL]
                       [--format csv|jsonl|parquet] [--batch-size N] [--every N]
                       [--save STATE] [--json]
    streammetrics merge STATE... -o OUT
    streammetrics show STATE [--json]

``DATA`` is a CSV, JSON Lines or Parquet file, or ``-`` for standard input (read line by line,
so a log piped in with ``tail -f`` is evaluated as it grows; ``--every N`` prints the values so
far every ``N`` rows). Files are read in chunks of ``--batch-size`` rows (with pandas' CSV parser
when pandas is installed, else the standard library; Parquet needs pyarrow), so memory does not
grow with the file. Metric names follow scikit-learn's scorer names; see ``docs/cli.md``.

Bad data ends the command with a one-line message naming the file, line and column, and exit
status 1 (2 for a bad command line); never a traceback.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import io
import json
import math
import os
import sys
import time
from collections.abc import Iterator
from typing import Any, TextIO

import numpy as np

from .base import Metric, loads
from .errors import StreamMetricsError

__all__ = ["METRICS", "main"]

#: Metric names (scikit-learn scorer names where one exists) -> (module, class, kwargs, inputs).
#: ``inputs``: ``"pred"`` takes (y_true, y_pred); ``"score"`` (y_true, y_score); ``"group"``
#: (y_true, y_score, groups). Classes are looked up when used, so a name works once its family
#: is installed.
METRICS: dict[str, tuple[str, str, dict[str, Any], str]] = {
    "accuracy": ("classification", "Accuracy", {}, "pred"),
    "f1": ("classification", "F1", {}, "pred"),
    "precision": ("classification", "Precision", {}, "pred"),
    "recall": ("classification", "Recall", {}, "pred"),
    **{
        f"{name}_{avg}": ("classification", cls, {"average": avg}, "pred")
        for name, cls in (("f1", "F1"), ("precision", "Precision"), ("recall", "Recall"))
        for avg in ("macro", "micro", "weighted")
    },
    "mcc": ("classification", "MatthewsCorrCoef", {}, "pred"),
    "matthews_corrcoef": ("classification", "MatthewsCorrCoef", {}, "pred"),
    "cohen_kappa": ("classification", "CohenKappa", {}, "pred"),
    "confusion_matrix": ("classification", "ConfusionMatrix", {}, "pred"),
    "classification_report": ("classification", "ClassificationReport", {}, "pred"),
    "roc_auc": ("classification", "ROCAUC", {}, "score"),
    "average_precision": ("classification", "AveragePrecision", {}, "score"),
    "log_loss": ("classification", "LogLoss", {}, "score"),
    "brier_score": ("classification", "BrierScore", {}, "score"),
    "calibration_error": ("classification", "CalibrationError", {}, "score"),
    "gauc": ("classification", "GAUC", {}, "group"),
    "mse": ("regression", "MeanSquaredError", {}, "pred"),
    "mean_squared_error": ("regression", "MeanSquaredError", {}, "pred"),
    "rmse": ("regression", "RootMeanSquaredError", {}, "pred"),
    "root_mean_squared_error": ("regression", "RootMeanSquaredError", {}, "pred"),
    "mae": ("regression", "MeanAbsoluteError", {}, "pred"),
    "mean_absolute_error": ("regression", "MeanAbsoluteError", {}, "pred"),
    "mape": ("regression", "MeanAbsolutePercentageError", {}, "pred"),
    "r2": ("regression", "R2Score", {}, "pred"),
    "explained_variance": ("regression", "ExplainedVariance", {}, "pred"),
    "pearson": ("regression", "PearsonCorrCoef", {}, "pred"),
    "regression_report": ("regression", "RegressionReport", {}, "pred"),
    "nmi": ("clustering", "NormalizedMutualInfo", {}, "pred"),
    "normalized_mutual_info_score": ("clustering", "NormalizedMutualInfo", {}, "pred"),
    "ami": ("clustering", "AdjustedMutualInfo", {}, "pred"),
    "adjusted_mutual_info_score": ("clustering", "AdjustedMutualInfo", {}, "pred"),
    "ari": ("clustering", "AdjustedRandIndex", {}, "pred"),
    "adjusted_rand_score": ("clustering", "AdjustedRandIndex", {}, "pred"),
    "rand_score": ("clustering", "RandIndex", {}, "pred"),
    "mutual_info_score": ("clustering", "MutualInfo", {}, "pred"),
    "homogeneity_score": ("clustering", "Homogeneity", {}, "pred"),
    "completeness_score": ("clustering", "Completeness", {}, "pred"),
    "v_measure_score": ("clustering", "VMeasure", {}, "pred"),
    "fowlkes_mallows_score": ("clustering", "FowlkesMallows", {}, "pred"),
    "purity": ("clustering", "Purity", {}, "pred"),
    "cluster_accuracy": ("clustering", "ClusterAccuracy", {}, "pred"),
}


class CLIError(Exception):
    """A failure to report as one line (no traceback) with exit status 1."""


# -- metrics -----------------------------------------------------------------------------------


def _make_metric(name: str) -> tuple[Metric, str]:
    entry = METRICS.get(name)
    if entry is None:
        known = ", ".join(sorted(METRICS))
        raise CLIError(f"unknown metric {name!r}; known names: {known}")
    module_name, class_name, kwargs, inputs = entry
    try:
        module = importlib.import_module(f"streammetrics.{module_name}")
    except ImportError:
        module = None
    klass = getattr(module, class_name, None)
    if klass is None:
        raise CLIError(
            f"metric {name!r} needs streammetrics.{module_name}.{class_name}, which this "
            "version of streammetrics does not have"
        )
    return klass(**kwargs), inputs


def _build(names: list[str], args: argparse.Namespace) -> tuple[Metric, dict[str, str]]:
    from .collection import MetricCollection

    members: dict[str, Metric] = {}
    kinds: dict[str, str] = {}
    for name in names:
        if name in members:
            continue
        metric, kind = _make_metric(name)
        if kind == "pred" and args.y_pred is None:
            raise CLIError(f"metric {name!r} compares predicted labels: give --y-pred COL")
        if kind in ("score", "group") and args.y_score is None:
            raise CLIError(f"metric {name!r} ranks scores: give --y-score COL")
        if kind == "group" and args.group is None:
            raise CLIError(f"metric {name!r} is computed per group: give --group COL")
        members[name], kinds[name] = metric, kind
    return MetricCollection(**members), kinds


def _columns_for(
    kind: str, cols: dict[str, np.ndarray], args: argparse.Namespace
) -> tuple[np.ndarray, ...]:
    if kind == "pred":
        return (cols[args.y_true], cols[args.y_pred])
    if kind == "score":
        return (cols[args.y_true], cols[args.y_score])
    return (cols[args.y_true], cols[args.y_score], cols[args.group])


def _update(coll: Any, kinds: dict[str, str], cols: dict[str, np.ndarray], args: Any) -> None:
    # Members take different columns: each gets its own, all or nothing.
    coll.update_each({name: (_columns_for(kind, cols, args), {}) for name, kind in kinds.items()})


# -- readers -----------------------------------------------------------------------------------


class _Source:
    """Where rows come from, for messages: ``path`` and the line of a chunk's first row."""

    def __init__(self, path: str, fmt: str) -> None:
        self.path = "<stdin>" if path == "-" else path
        self.raw = path
        self.fmt = fmt

    def fail(self, line: int | None, message: str) -> CLIError:
        where = f"{self.path}:{line}" if line is not None else self.path
        return CLIError(f"{where}: {message}")


def _guess_format(path: str, fmt: str | None) -> str:
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


def _missing(src: _Source, wanted: list[str], present: list[str], line: int | None) -> None:
    absent = [c for c in wanted if c not in present]
    if absent:
        raise src.fail(
            line, f"no column {absent[0]!r} (columns: {', '.join(map(str, present)) or 'none'})"
        )


def _read_csv(src: _Source, wanted: list[str], batch: int) -> Iterator[tuple[int, dict[str, Any]]]:
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
    pd: Any, src: _Source, wanted: list[str], batch: int
) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        header = pd.read_csv(src.raw, nrows=0).columns.tolist()
    except pd.errors.EmptyDataError:
        raise src.fail(1, "the file is empty (no header line)") from None
    _missing(src, wanted, header, 1)
    line = 2
    reader = pd.read_csv(
        src.raw, usecols=wanted, chunksize=batch, keep_default_na=False, na_values=[""]
    )
    try:
        for chunk in reader:
            yield line, {c: chunk[c].to_numpy() for c in wanted}
            line += len(chunk)
    except (pd.errors.ParserError, ValueError) as exc:
        raise src.fail(line, f"cannot parse CSV: {str(exc).splitlines()[0]}") from None


def _read_csv_stdlib(
    src: _Source, fh: TextIO, wanted: list[str], batch: int
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


def _read_jsonl(
    src: _Source, wanted: list[str], batch: int
) -> Iterator[tuple[int, dict[str, Any]]]:
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
    src: _Source, wanted: list[str], batch: int
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


def _numbers(values: np.ndarray, name: str, src: _Source, line: int) -> np.ndarray:
    try:
        out = values.astype(np.float64)
    except (TypeError, ValueError):
        i = _first_bad(values, _is_number)
        raise src.fail(line + i, f"column {name!r}: {values[i]!r} is not a number") from None
    finite = np.isfinite(out)
    if not finite.all():
        i = int(np.flatnonzero(~finite)[0])
        raise src.fail(line + i, f"column {name!r}: missing or non-finite value {values[i]!r}")
    return out


def _labels(values: np.ndarray, name: str, src: _Source, line: int) -> np.ndarray:
    kind = values.dtype.kind
    if kind in "biu":
        return values
    if kind == "f":
        return _numbers(values, name, src, line)
    if kind == "O" and any(v is None or (isinstance(v, float) and v != v) for v in values):
        i = _first_bad(values, lambda v: v is not None and v == v)
        raise src.fail(line + i, f"column {name!r}: missing value")
    text = values.astype(str)
    if text.size and (text == "").any():
        i = int(np.flatnonzero(text == "")[0])
        raise src.fail(line + i, f"column {name!r}: missing value")
    for dtype in (np.int64, np.float64):
        try:
            return text.astype(dtype)
        except (TypeError, ValueError, OverflowError):
            continue
    return text


def _convert(
    cols: dict[str, Any], args: argparse.Namespace, kinds: set[str], src: _Source, line: int
) -> dict[str, np.ndarray]:
    out = {}
    for name, values in cols.items():
        values = np.asarray(values)
        if name == args.y_score or (name == args.y_pred and kinds == {"regression"}):
            out[name] = _numbers(values, name, src, line)
        else:
            out[name] = _labels(values, name, src, line)
    return out


# -- output ------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A computed value as JSON-ready data (nan and inf become null)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _flatten(prefix: str, value: Any) -> list[tuple[str, str]]:
    if isinstance(value, dict):
        rows: list[tuple[str, str]] = []
        for k, v in value.items():
            rows += _flatten(f"{prefix}.{k}", v)
        return rows
    if isinstance(value, float):
        return [(prefix, f"{value:.6g}")]
    if isinstance(value, np.ndarray):
        return [(prefix, np.array2string(value, precision=6, separator=", ").replace("\n", ""))]
    return [(prefix, str(value))]


def _table(values: dict[str, Any], rows: int) -> str:
    lines = [("metric", "value")]
    for name, value in values.items():
        lines += _flatten(name, value)
    lines.append(("rows", str(rows)))
    width = max(len(a) for a, _ in lines)
    return "\n".join(f"{a:<{width}}  {b}" for a, b in lines)


class _Progress:
    """Rows read so far, on stderr, only when stderr is a terminal (tqdm when installed)."""

    def __init__(self, enabled: bool) -> None:
        self.bar: Any = None
        self.enabled = enabled
        self.rows = 0
        self.last = 0.0
        if enabled:
            try:
                from tqdm import tqdm

                self.bar = tqdm(unit=" rows", unit_scale=True, file=sys.stderr, leave=False)
            except ImportError:
                self.bar = None

    def add(self, n: int) -> None:
        self.rows += n
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(n)
        elif time.monotonic() - self.last > 0.2:
            self.last = time.monotonic()
            sys.stderr.write(f"\r{self.rows:,} rows")
            sys.stderr.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.enabled:
            sys.stderr.write("\r" + " " * 30 + "\r")
            sys.stderr.flush()


# -- commands ----------------------------------------------------------------------------------


def _eval(args: argparse.Namespace) -> int:
    if args.y_score is None and args.y_pred is None:
        raise CLIError("give --y-score COL (score metrics) or --y-pred COL (label metrics)")
    if args.batch_size < 1 or (args.every is not None and args.every < 1):
        raise CLIError("--batch-size and --every must be positive")
    coll, kinds = _build(args.metric, args)
    families = {METRICS[m][0] for m in kinds}
    wanted = list(
        dict.fromkeys(
            c for c in (args.y_true, args.y_score, args.y_pred, args.group) if c is not None
        )
    )
    fmt = _guess_format(args.data, args.format)
    src = _Source(args.data, fmt)
    if args.data != "-" and not os.path.exists(args.data):
        raise src.fail(None, "no such file")
    reader = {"csv": _read_csv, "jsonl": _read_jsonl, "parquet": _read_parquet}[fmt]
    batch = args.batch_size
    if args.data == "-" and args.every:
        batch = min(batch, args.every)  # a live pipe (tail -f) reports as soon as rows are due
    progress = _Progress(sys.stderr.isatty())
    rows, next_report = 0, args.every
    try:
        for line, raw in reader(src, wanted, batch):
            cols = _convert(raw, args, families, src, line)
            n = len(cols[wanted[0]])
            offset = 0
            while offset < n:
                # cut the chunk where a rolling report is due
                stop = n if next_report is None else min(n, offset + next_report - rows)
                part = {c: v[offset:stop] for c, v in cols.items()}
                try:
                    _update(coll, kinds, part, args)
                except StreamMetricsError as exc:
                    first, last = line + offset, line + stop - 1
                    raise src.fail(None, f"rows at lines {first}-{last}: {exc}") from None
                rows += stop - offset
                progress.add(stop - offset)
                offset = stop
                if next_report is not None and rows == next_report:
                    _report(coll, rows, args.json, rolling=True)
                    next_report += args.every
    finally:
        progress.close()
    if args.save:
        _write(args.save, coll.to_bytes())
    _report(coll, rows, args.json, rolling=False)
    return 0


def _report(coll: Any, rows: int, as_json: bool, rolling: bool) -> None:
    values = coll.compute()
    if as_json:
        print(json.dumps({"rows": rows, "metrics": _plain(values)}), flush=True)
    elif rolling:
        flat = [f"{k}={v}" for name, value in values.items() for k, v in _flatten(name, value)]
        print(f"rows={rows} " + " ".join(flat), flush=True)
    else:
        print(_table(values, rows), flush=True)


def _write(path: str, blob: bytes) -> None:
    try:
        with open(path, "wb") as fh:
            fh.write(blob)
    except OSError as exc:
        raise CLIError(f"{path}: cannot write the state ({exc.strerror})") from None


def _load(path: str) -> Metric:
    try:
        with open(path, "rb") as fh:
            blob = fh.read()
    except OSError as exc:
        raise CLIError(f"{path}: cannot read ({exc.strerror})") from None
    try:
        return loads(blob)
    except StreamMetricsError as exc:
        raise CLIError(f"{path}: not a streammetrics state ({exc})") from None


def _merge(args: argparse.Namespace) -> int:
    metrics = [_load(p) for p in args.states]
    total = metrics[0].copy()
    for path, metric in zip(args.states[1:], metrics[1:], strict=True):
        try:
            total.merge(metric)
        except StreamMetricsError as exc:
            raise CLIError(f"{path}: cannot be merged into {args.states[0]} ({exc})") from None
    _write(args.output, total.to_bytes())
    return 0


def _show(args: argparse.Namespace) -> int:
    metric = _load(args.state)
    values = metric.compute()
    config = metric.config
    if args.json:
        out = {
            "class": type(metric).__name__,
            "config": _plain(config),
            "count": metric.count,
            "values": _plain(values),
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
        print(_table(values, metric.count))
    else:
        print(_table({"value": values}, metric.count))
    return 0


def _kwargs(config: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in config.items())


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="streammetrics",
        description="Streaming, mergeable evaluation metrics from the command line.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    e = sub.add_parser("eval", help="evaluate a prediction log (CSV, JSON Lines, Parquet, '-')")
    e.add_argument("data", metavar="DATA", help="a file, or '-' for standard input")
    e.add_argument(
        "--metric",
        action="append",
        required=True,
        metavar="NAME",
        help="a metric name as scikit-learn scorers name them (repeatable)",
    )
    e.add_argument("--y-true", required=True, metavar="COL", help="column of true labels/values")
    e.add_argument("--y-score", metavar="COL", help="column of scores (AUC, AP, log loss, ...)")
    e.add_argument("--y-pred", metavar="COL", help="column of predicted labels or values")
    e.add_argument("--group", metavar="COL", help="column of group ids (gauc)")
    e.add_argument(
        "--format",
        choices=("csv", "jsonl", "parquet"),
        help="input format (default: from the file name; csv for '-')",
    )
    e.add_argument(
        "--batch-size",
        type=int,
        default=100_000,
        metavar="N",
        help="rows per chunk (default 100000)",
    )
    e.add_argument("--every", type=int, metavar="N", help="print the values so far every N rows")
    e.add_argument("--save", metavar="STATE", help="write the final state to this file")
    e.add_argument("--json", action="store_true", help="print JSON instead of a table")
    m = sub.add_parser("merge", help="merge saved states into one")
    m.add_argument("states", nargs="+", metavar="STATE")
    m.add_argument("-o", "--output", required=True, metavar="OUT")
    s = sub.add_parser("show", help="print a saved state: class, config, count, values")
    s.add_argument("state", metavar="STATE")
    s.add_argument("--json", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (also used by the console script)."""
    args = _parser().parse_args(argv)
    try:
        command = {"eval": _eval, "merge": _merge, "show": _show}[args.command]
        status = command(args)
    except CLIError as exc:
        print(f"streammetrics: error: {exc}", file=sys.stderr)
        return 1
    except StreamMetricsError as exc:
        print(f"streammetrics: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"streammetrics: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return status


if __name__ == "__main__":
    sys.exit(main())
