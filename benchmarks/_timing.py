"""What the benchmark scripts share: interleaved best-of timing."""

from __future__ import annotations

import time
from collections.abc import Callable


def interleaved(fns: dict[str, Callable[[], object]], repeats: int = 5) -> dict[str, float]:
    """Best time of each function over ``repeats`` rounds, every function once per round: a
    machine that slows down for a while slows every line alike."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best
