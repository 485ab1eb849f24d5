"""Draw the two example pictures of ``docs/plots.md`` from the bundled prediction log.

Run from the repository root (needs the ``plot`` extra, matplotlib)::

    python examples/make_plots.py            # writes docs/img/curves.png, docs/img/over_time.png

The log (``examples/data/predictions.csv``) is fed in chunks of 1,000 rows to four metrics in
sketch mode, as a stream would feed them, and to an hourly window of ROC AUC; every picture is
drawn from the metrics' states alone.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

import streammetrics as sm
from streammetrics.plot import plot
from streammetrics.windows import TumblingWindows

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "predictions.csv"
OUT = ROOT / "docs" / "img"


def read(path: Path) -> dict[str, np.ndarray]:
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {
        "ts": np.array([float(r["ts"]) for r in rows]),
        "y_true": np.array([int(r["y_true"]) for r in rows]),
        "y_score": np.array([float(r["y_score"]) for r in rows]),
        "y_pred": np.array([int(r["y_pred"]) for r in rows]),
    }


def main(out: Path = OUT) -> list[Path]:
    cols = read(DATA)
    # A coarse ROC sketch (8 buckets per unit of logit) so that the certified band shows; the
    # precision-recall curve at the default resolution (128), where the band is a hairline.
    roc, pr = sm.ROCAUC(resolution=8), sm.AveragePrecision()
    calibration, confusion = sm.CalibrationError(bins=10), sm.ConfusionMatrix()
    hourly = TumblingWindows(sm.ROCAUC(), width=3600)
    for start in range(0, len(cols["ts"]), 1000):
        part = {k: v[start : start + 1000] for k, v in cols.items()}
        for m in (roc, pr, calibration):
            m.update(part["y_true"], part["y_score"])
        confusion.update(part["y_true"], part["y_pred"])
        hourly.update(part["y_true"], part["y_score"], timestamps=part["ts"])

    out.mkdir(parents=True, exist_ok=True)
    curves = Figure(figsize=(10, 4.2), layout="constrained")
    left, right = curves.subplots(1, 2)
    plot(roc, ax=left)
    plot(pr, ax=right)
    over_time = Figure(figsize=(10, 4.2), layout="constrained")
    left, right = over_time.subplots(1, 2, width_ratios=[1.4, 1])
    plot(hourly, ax=left)
    left.set_xlabel("hour start (seconds since the start of the log)")
    plot(calibration, ax=right)
    paths = [out / "curves.png", out / "over_time.png"]
    curves.savefig(paths[0], dpi=80)
    over_time.savefig(paths[1], dpi=80)
    return paths


if __name__ == "__main__":
    for path in main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT):
        print(path)
