"""What the benchmark scripts share: interleaved best-of timing."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def interleaved(fns: dict[str, Any], repeats: int = 5) -> dict[str, float]:
    """Best time of each function over ``repeats`` rounds, every function once per round: a
    machine that slows down for a while slows every line alike.

    A value may be a pair ``(setup, fn)``: ``setup()`` runs before ``fn`` in each round, outside
    the timing (e.g. ``torch.set_num_threads``)."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            if isinstance(fn, tuple):
                setup, fn = fn
                setup()
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def torch_threads() -> list[tuple[str, Callable[[], None]]]:
    """``(tag, pin)`` for torch at one thread and at its default (one per core here): peers are
    timed at both and the faster is reported. Empty when torch is not importable."""
    try:
        import torch
    except ImportError:
        return []
    default = torch.get_num_threads()
    out = []
    for n in sorted({1, default}):

        def pin(n: int = n) -> None:
            torch.set_num_threads(n)

        out.append((f" [{n} thread{'s' * (n > 1)}]", pin))
    return out
