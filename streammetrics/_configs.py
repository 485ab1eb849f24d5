"""Metric configurations: how they are passed, and whether two are equal.

A metric's configuration is passed by keyword (``sm.F1(average="macro")``, as the API promises);
:func:`keyword_config` makes a positional one warn (it will be refused in 0.9). A merge refuses
states of different configurations, and a decoder matches a blob to an expected metric by
configuration; both compare with :func:`same_config`, under which a nan equals itself and
arrays compare by their encoded bytes.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any

import numpy as np

from . import _codec

__all__ = ["keyword_config", "same_config"]


def _call_text(value: Any) -> str:
    """``value`` as code that rebuilds it: a metric as its constructor call with its
    configuration (its ``repr`` adds ``count=``, which no constructor takes), and so the metric
    a wrapper's configuration names; anything else as its ``repr``."""
    config = getattr(value, "_config", None)
    if isinstance(config, dict) and hasattr(value, "_fields"):
        return _constructor(type(value).__name__, config)
    if isinstance(value, dict) and set(value) == {"class", "config"}:
        if isinstance(value["class"], str) and isinstance(value["config"], dict):
            return _constructor(value["class"], value["config"])
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_call_text(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _constructor(name: str, config: dict[str, Any]) -> str:
    if name == "MetricCollection" and isinstance(config.get("members"), dict):
        config = config["members"]  # (its members are its keyword arguments)
    return f"{name}({', '.join(f'{k}={_call_text(v)}' for k, v in config.items())})"


def keyword_config(cls: type) -> None:
    """Make ``cls(...)`` warn (``FutureWarning``) when configuration is passed by position.

    0.8.12 and earlier took all of it by position too (``sm.F1("macro")``), which the API
    never promised and which would pin the order of every metric's options. What the API shows
    by position stays so: a required option (``PrecisionAtK(k)``, ``FBeta(beta, ...)``), and the
    leading ``_positional_config`` options of a class (``TopKAccuracy(k)``, whose ``k`` has a
    default here; a wrapper's metric, a window's width and slots, a decay's half-life). Only
    the caller's own call warns: a subclass passing its configuration on to its base's
    ``__init__`` does not. Classes outside the package (a user's own subclass) keep their own
    signatures."""
    init = cls.__dict__.get("__init__")
    if init is None or getattr(init, "__sm_keywords__", False):
        return
    if not cls.__module__.startswith("streammetrics."):
        return
    params = [
        p
        for p in list(inspect.signature(init).parameters.values())[1:]
        if p.kind is p.POSITIONAL_OR_KEYWORD
    ]
    if not params:
        return
    names = [p.name for p in params]
    required = next((i for i, p in enumerate(params) if p.default is not p.empty), len(params))
    allowed = max(required, getattr(cls, "_positional_config", 0))
    if allowed >= len(params):
        return

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > allowed and type(self).__init__ is __init__:
            name = type(self).__name__
            given = ", ".join(
                _call_text(a) if i < allowed else f"{n}={_call_text(a)}"
                for i, (n, a) in enumerate(zip(names, args, strict=False))
            )
            warnings.warn(
                f"{name}: configuration passed by position is deprecated and will be refused "
                f"in 0.9; pass it by keyword: {name}({given})",
                FutureWarning,
                stacklevel=2,
            )
        init(self, *args, **kwargs)

    __init__.__sm_keywords__ = True  # type: ignore[attr-defined]
    cls.__init__ = __init__  # type: ignore[misc]


def same_config(a: Any, b: Any) -> bool:
    """Configurations equal as the codec would write them: same types, a nan equals itself."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_config(v, b[k]) for k, v in a.items())
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_config(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b or (a != a and b != b)
    if isinstance(a, np.ndarray):
        return _codec.encode(a) == _codec.encode(b)
    return bool(a == b)
