"""Named score distributions for the sketch-accuracy tests and benchmarks.

Each function draws ``(y_true, y_score)`` of ``n`` samples with a seeded generator. The set
follows the study behind the default grid (issue 3): calibrated scores at AUC about 0.75 and
0.95, CTR-like scores (1% positives, scores near 0.01-0.05), logits N(0, 3^2) and N(-1, 8^2)
turned into probabilities, heavily tied scores, and float16 scores.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Dataset = Callable[[int, int], tuple[np.ndarray, np.ndarray]]


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _calibrated(separation: float) -> Dataset:
    def draw(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(seed)
        y = rng.random(n) < 0.3
        z = rng.normal(0.0, 1.0, n) + separation * y - 1.0
        return y, _sigmoid(z)

    return draw


def ctr_like(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = np.clip(rng.lognormal(np.log(0.02), 0.35, n), 1e-6, 0.2)
    y = rng.random(n) < p * 0.5
    return y, np.clip(p * rng.lognormal(0.0, 0.05, n), 0.0, 1.0)


def _logits(mean: float, sd: float) -> Dataset:
    def draw(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(seed)
        z = rng.normal(mean, sd, n)
        y = rng.random(n) < _sigmoid(z / 2.0)
        return y, _sigmoid(z)

    return draw


def heavily_tied(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 21, n) / 20.0
    y = rng.random(n) < 0.2 + 0.6 * x
    return y, x


def float16_scores(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    y, x = _calibrated(1.5)(n, seed)
    return y, x.astype(np.float16).astype(np.float64)


DATASETS: dict[str, Dataset] = {
    "calibrated_auc75": _calibrated(0.95),
    "calibrated_auc95": _calibrated(2.33),
    "ctr_like": ctr_like,
    "logit_n0_sd3": _logits(0.0, 3.0),
    "logit_n-1_sd8": _logits(-1.0, 8.0),
    "heavily_tied": heavily_tied,
    "float16": float16_scores,
}
