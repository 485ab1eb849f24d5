"""What the command prints: tables, JSON-ready values, the progress bar."""

from __future__ import annotations

import math
import sys
import time
from typing import Any

import numpy as np

__all__ = ["Progress", "flatten", "plain", "table"]


def plain(value: Any) -> Any:
    """A computed value as JSON-ready data (nan and inf become null)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def flatten(prefix: str, value: Any) -> list[tuple[str, str]]:
    if isinstance(value, dict):
        rows: list[tuple[str, str]] = []
        for k, v in value.items():
            rows += flatten(f"{prefix}.{k}", v)
        return rows
    if isinstance(value, float):
        return [(prefix, f"{value:.6g}")]
    if isinstance(value, np.ndarray):
        return [(prefix, np.array2string(value, precision=6, separator=", ").replace("\n", ""))]
    return [(prefix, str(value))]


def table(values: dict[str, Any], rows: int) -> str:
    lines = [("metric", "value")]
    for name, value in values.items():
        lines += flatten(name, value)
    lines.append(("rows", str(rows)))
    width = max(len(a) for a, _ in lines)
    return "\n".join(f"{a:<{width}}  {b}" for a, b in lines)


class Progress:
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
