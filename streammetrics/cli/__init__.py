"""The ``streammetrics`` command: evaluate a prediction log, write an HTML report, merge saved
states, show a state.

::

    streammetrics eval DATA --metric NAME [--metric NAME ...]
                       [--y-true COL] [--y-score COL | --y-pred COL] [--group COL]
                       [--query COL [--queries-grouped]]
                       [--hypothesis COL --reference COL [--reference COL ...]]
                       [--format csv|jsonl|parquet] [--batch-size N] [--every N]
                       [--labels-as-text] [--save STATE] [--json]
    streammetrics report DATA --metric NAME ... -o report.html [--window WIDTH --time COL]
    streammetrics report STATE... -o report.html
    streammetrics merge STATE... -o OUT
    streammetrics show STATE [--json]

``DATA`` is a CSV, JSON Lines or Parquet file, or ``-`` for standard input (read line by line,
so a log piped in with ``tail -f`` is evaluated as it grows; ``--every N`` prints the values so
far every ``N`` rows). Files are read in chunks of ``--batch-size`` rows (with pandas' CSV parser
when pandas is installed, else the standard library; Parquet needs pyarrow), so memory does not
grow with the file (ranking metrics: with ``--queries-grouped`` it grows with the queries only,
one id each; without it they keep every row, not knowing when a query ends). Metric names
follow scikit-learn's scorer names (ranking metrics take a cut-off, ``ndcg@10``); see
``docs/cli.md``. ``report`` prints what ``eval`` prints and writes one self-contained HTML page
(inline SVG pictures; needs the ``plot`` extra).

Bad data ends the command with a one-line message naming the file, line and column, and exit
status 1 (2 for a bad command line); never a traceback.

The package: :mod:`.names` (metric names, the columns each reads), :mod:`.sources` (opening
and decoding files, CSV records, the line of each row), :mod:`.readers` (chunked readers),
:mod:`.columns` (column conversion), :mod:`.output` (tables, progress bar), :mod:`.plan` (the
metrics and columns of a command, and the reading loop), :mod:`.arguments` (the parser),
:mod:`.commands` (the commands), :mod:`.page` (the HTML report).
"""

from .commands import main
from .names import METRICS

__all__ = ["METRICS", "main"]
