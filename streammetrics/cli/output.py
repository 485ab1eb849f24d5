"""What the command prints: tables, JSON-ready values, the progress bar."""

from __future__ import annotations

import math
import sys
import time
from typing import Any

import numpy as np

__all__ = ["Progress", "flatten", "plain", "slice_table", "table"]


def plain(value: Any) -> Any:
    """A computed value as JSON-ready data (nan and inf become null)."""
    if isinstance(value, dict):
        return {_key(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def flatten(prefix: Any, value: Any) -> list[tuple[str, str]]:
    """``(name, text)`` of every number in ``value``: dicts flattened with dots (``a.b``), keys
    written as :func:`_key` writes them."""
    prefix = _key(prefix)
    if isinstance(value, dict):
        rows: list[tuple[str, str]] = []
        for k, v in value.items():
            rows += flatten(f"{prefix}.{_key(k)}", v)
        return rows
    if isinstance(value, float):
        return [(prefix, f"{value:.6g}")]
    if isinstance(value, np.ndarray):
        return [(prefix, np.array2string(value, precision=6, separator=", ").replace("\n", ""))]
    return [(prefix, str(value))]


def _interval(bounds: Any) -> str:
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        return ""
    low, high = (float(b) for b in bounds)
    return f" [{low:.6g}, {high:.6g}]"


def table(values: dict[str, Any], rows: int, bounds: dict[str, Any] | None = None) -> str:
    """One line per value; with ``bounds``, each float's interval beside it."""
    lines = [("metric", "value")]
    for name, value in values.items():
        flat = flatten(name, value)
        if bounds is not None and isinstance(value, float) and len(flat) == 1:
            flat = [(flat[0][0], flat[0][1] + _interval(bounds.get(name)))]
        lines += flat
    lines.append(("rows", str(rows)))
    width = max(len(a) for a, _ in lines)
    return "\n".join(f"{a:<{width}}  {b}" for a, b in lines)


def _key(key: Any) -> str:
    """A slice key (or window start) as text: a composite key's parts joined by ``/``, a ``/``
    or ``\\`` inside a part escaped (``\\/``, ``\\\\``) so that distinct slices stay distinct."""
    if not isinstance(key, tuple):
        return str(key)
    return "/".join(str(k).replace("\\", "\\\\").replace("/", "\\/") for k in key)


def slice_table(
    values: dict[str, dict[Any, Any]], rows: int, bounds: dict[str, Any] | None = None
) -> str:
    """One row per slice, one column per metric (``--by``), intervals beside the values; a
    metric whose value is a dict (``regression_report``) gets one column per number in it,
    named as the table without ``--by`` names its rows (``regression_report.mse``)."""
    keys = sorted({k for per in values.values() for k in per}, key=lambda k: (str(type(k)), k))
    columns: list[tuple[str, str, bool]] = []  # (header, metric, a number inside a dict)
    for name, per in values.items():
        inner: dict[str, None] = {}  # the dicts' numbers, in the order first met
        for value in per.values():
            if isinstance(value, dict):
                inner.update(dict.fromkeys(sub for sub, _ in flatten(name, value)))
        columns += [(sub, name, True) for sub in inner] or [(name, name, False)]
    header = ["slice", *(c[0] for c in columns)]
    body = []
    for key in keys:
        row = [_key(key)]
        flat: dict[str, dict[str, str]] = {}
        for head, name, inside in columns:
            value = values[name].get(key, float("nan"))
            if inside:
                if name not in flat:
                    flat[name] = dict(flatten(name, value)) if isinstance(value, dict) else {}
                row.append(flat[name].get(head, "nan"))
                continue
            per_bounds = (bounds or {}).get(name) or {}
            row.append(flatten("", value)[0][1] + _interval(per_bounds.get(key)))
        body.append(row)
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in [header, *body]
    ]
    lines.append(f"rows  {rows}")
    return "\n".join(lines)


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
