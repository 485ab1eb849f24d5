"""Where a ``Sliced`` of score slices held one state each should read through a pack of them.

    PYTHONPATH=. python benchmarks/bench_read_pack.py

Below ``PACK_MIN_SLICES`` (512) score slices are held one state each; from
``READ_PACK_FROM[reads]`` slices a read builds a pack of the states and reads their tables at
once. For 150, 300 and 450 slices of 200k rows (scores ``clip(0.3 y + 0.7 u)``, unweighted or
weights uniform in [0.5, 1.5)), the first read of the state loaded from its bytes, best of 5,
with the pack forced on (from 128 slices, as 0.8.24-0.8.25 had it for every read) and off,
each twice, best taken, in ms.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

import streammetrics as sm
from streammetrics.wrappers import _slice_table

ROWS = 200_000
NEVER = 1 << 30


def _first_read(
    make: Any, slices: int, weighted: bool, read: str, packed: bool, rng: np.random.Generator
) -> float:
    """Best of 5 first reads (ms) of a loaded ``Sliced(make())``, the pack on or off."""
    reads = _slice_table.READ_PACK_FROM
    saved = dict(reads)
    reads.update(dict.fromkeys(reads, 128 if packed else NEVER))
    try:
        y = rng.integers(0, 2, ROWS)
        s = np.clip(0.3 * y + 0.7 * rng.random(ROWS), 0.0, 1.0)
        w = rng.uniform(0.5, 1.5, ROWS) if weighted else None
        m = sm.Sliced(make())
        m.update(y, s, by=rng.integers(0, slices, ROWS), sample_weight=w)
        blob = m.to_bytes()
        best = float("inf")
        for _ in range(5):
            fresh = sm.loads(blob)
            t0 = time.perf_counter()
            getattr(fresh, read)()
            best = min(best, time.perf_counter() - t0)
        return best * 1e3
    finally:
        reads.update(saved)


def main() -> None:
    rng = np.random.default_rng(0)
    print("| metric | weights | read | slices | pack, ms | states, ms |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    for make in (sm.ROCAUC, sm.AveragePrecision):
        for weighted in (False, True):
            for read in ("compute", "intervals"):
                for slices in (150, 300, 450):
                    pack, states = (
                        min(_first_read(make, slices, weighted, read, on, rng) for _ in range(2))
                        for on in (True, False)
                    )
                    print(
                        f"| {make.__name__} | {'yes' if weighted else 'no'} | {read} "
                        f"| {slices} | {pack:.1f} | {states:.1f} |"
                    )


if __name__ == "__main__":
    main()
