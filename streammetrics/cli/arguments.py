"""The command line's parser: the four commands and the options ``eval`` and ``report`` share."""

from __future__ import annotations

import argparse

from .plan import DEFAULT_BATCH

__all__ = ["parser"]


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
        "--pos-label",
        metavar="LABEL",
        help="the positive class of f1, precision and recall (default 1), and of the binary "
        "score metrics (roc_auc, average_precision, gauc, log_loss, brier_score, "
        "calibration_error: their --y-true is read as label == LABEL), as the --y-true "
        "column reads it: text ('yes'), or a whole number unless --labels-as-text",
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
