"""Write ``examples/data/predictions.csv``: a small, seeded prediction log of a click model.

Columns: ``y_true`` (clicked, 0/1), ``y_score`` (the model's probability), ``y_pred`` (the score
thresholded at 0.5), ``user_id`` (a user of ~200, for per-user GAUC), ``ts`` (seconds, one day of
traffic, in arrival order). The scores are informative but imperfect: the logit of the click
probability plus noise, so AUC is around 0.8. Run ``python examples/make_data.py`` to rebuild it;
the output is byte-for-byte the same every time.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

ROWS = 5000
USERS = 200


def make(rows: int = ROWS, seed: int = 20240501) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    user = rng.integers(0, USERS, rows)
    user_bias = rng.normal(-1.0, 0.8, USERS)  # some users click more than others
    signal = rng.normal(0.0, 1.0, rows)
    p_click = 1 / (1 + np.exp(-(user_bias[user] + 1.5 * signal)))
    y_true = (rng.random(rows) < p_click).astype(int)
    logit = user_bias[user] + 1.5 * signal + rng.normal(0.0, 1.0, rows)
    y_score = np.round(1 / (1 + np.exp(-logit)), 6)
    ts = np.sort(rng.integers(0, 86_400, rows))
    return {
        "ts": ts,
        "user_id": np.char.add("u", user.astype(str)),
        "y_true": y_true,
        "y_score": y_score,
        "y_pred": (y_score >= 0.5).astype(int),
    }


def main() -> None:
    data = make()
    out = Path(__file__).parent / "data" / "predictions.csv"
    out.parent.mkdir(exist_ok=True)
    with out.open("w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(list(data))
        for row in zip(*(data[c].tolist() for c in data), strict=True):
            writer.writerow(row)
    print(f"wrote {ROWS} rows to {out}")


if __name__ == "__main__":
    main()
