"""Reading states back: from wire trees to metrics, through the registry of metric classes.

Classes are looked up in the registry that :class:`~streammetrics.base.Metric` subclasses join
when they are defined, never imported by name, so bytes can only ever build metric classes.
Every failure becomes :class:`~streammetrics.errors.StateDecodeError`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _codec
from ._configs import same_config
from .base import _REGISTRY, Metric, StateBlock, _Field
from .errors import IncompatibleStateError, InputError, StateDecodeError

__all__ = ["loads", "metric_from_spec", "metric_spec"]

_INT64 = np.dtype(np.int64)


def _load_field(name: str, field: _Field, wire: Any) -> Any:
    default = field.default
    try:
        if isinstance(default, StateBlock):
            return default.from_wire(wire)
        if isinstance(default, Metric):
            return _from_tree(_codec.check_envelope(wire), expect=default)
    except StateDecodeError:
        raise
    except (TypeError, ValueError, KeyError, IndexError) as exc:
        raise StateDecodeError(f"state field {name!r}: {exc}") from exc
    where = f"state field {name!r}"
    if isinstance(default, np.ndarray):
        if not isinstance(wire, np.ndarray):
            raise StateDecodeError(f"{where} must be an array")
        if wire.ndim != default.ndim:
            raise StateDecodeError(f"{where} must have {default.ndim} dimensions")
        if wire.dtype not in field.dtypes:
            raise StateDecodeError(f"{where} has dtype {wire.dtype}, expected {field.dtypes}")
        return wire
    if isinstance(default, bool):
        ok = isinstance(wire, bool)
    elif isinstance(default, int):
        ok = type(wire) is int
    elif isinstance(default, float):
        ok = isinstance(wire, float) or type(wire) is int
        # A float field declaring int64 among its dtypes keeps an int64 integer as it is
        # (``Decayed.latest``: int64 nanoseconds lie past float64's integers).
        kept = type(wire) is int and _INT64 in field.dtypes and -(2**63) <= wire < 2**63
        wire = float(wire) + 0.0 if ok and not kept else wire  # -0.0 -> 0.0, as updates write
    else:
        ok = isinstance(wire, type(default))
    if not ok:
        raise StateDecodeError(f"{where} must be a {type(default).__name__}")
    return wire


def _from_tree(
    envelope: tuple[str, int, dict[str, Any], Any], expect: Metric | None = None
) -> Metric:
    name, schema, config, state = envelope
    klass = _REGISTRY.get(name)
    if klass is None:
        raise StateDecodeError(f"unknown metric class {name!r} (not a streammetrics metric)")
    if schema > klass._schema:
        raise StateDecodeError(
            f"{name} state schema {schema} is newer than this version reads ({klass._schema})"
        )
    metric: Metric | None = None
    if expect is not None and type(expect) is klass and same_config(expect._config, config):
        metric = expect._blank_for_load()  # the declared metric's twin: no __init__ again
    if metric is not None:
        return _loaded(metric, klass._upgrade_state(state, schema))
    metric = _built(klass, name, config)
    if expect is not None:
        try:
            expect._check_compatible(metric)
        except IncompatibleStateError as exc:
            raise StateDecodeError(f"nested metric does not match its declaration: {exc}") from exc
    return _loaded(metric, klass._upgrade_state(state, schema))


def _built(klass: type[Metric], name: str, config: dict[str, Any]) -> Metric:
    """A metric of ``klass`` built from ``config`` (``_from_config``, whose checks are the
    config's), to load a state into; ``StateDecodeError`` for a config it refuses.

    A package class keeping its state in declared fields (``_blank_for_load``) is built once
    per config and process: later blobs of the same config get a twin of that first metric, as
    a nested metric's declaration gives one, without ``__init__`` and its checks again (half
    or more of a small state's ``loads``). The config must match exactly, types, order of
    keys and float bits included (:func:`_config_key`); a config that was refused is never
    kept, so it is checked, and refused, every time; one naming a class outside the package
    (a wrapper's) is built every time."""
    key = _config_key(klass, config)
    kept = None if key is None else _PROTOTYPES.get(key)
    if kept is not None and kept is not _BUILD:
        twin: Metric | None = kept._blank_for_load()
        if twin is not None:
            return twin
    try:
        metric = klass._from_config(config)
    except StateDecodeError:
        raise
    except (InputError, TypeError, ValueError) as exc:
        shown = repr(config)  # (a forged config may be huge: its start names it)
        shown = shown if len(shown) <= 300 else shown[:300] + " ..."
        raise StateDecodeError(f"invalid {name} config {shown}: {exc}") from exc
    if key is not None and kept is None:
        twin = metric._blank_for_load() if _names_ours(config) else None
        if len(_PROTOTYPES) >= _MAX_PROTOTYPES:
            _PROTOTYPES.clear()  # (atomic, where evicting one entry races other threads)
        _PROTOTYPES[key] = _BUILD if twin is None else metric  # (the built one stays blank)
        if twin is not None:
            return twin
    return metric


#: Blank metrics built by :func:`_built`, by :func:`_config_key` (``_BUILD``: a config built
#: every time). Never loaded into, updated or handed out: only their twins are.
_PROTOTYPES: dict[Any, Any] = {}
_MAX_PROTOTYPES = 256
_BUILD = object()
_OURS = "streammetrics."


def _config_key(klass: type[Metric], config: dict[str, Any]) -> Any:
    """A key equal for configs only when ``_from_config`` cannot tell them apart: the class
    and the config's msgpack bytes as decoded (not canonical: the order of its keys kept;
    ``True``, ``1`` and ``1.0`` apart, and floats by their bits). None for a class outside
    the package (whose ``__init__`` may do more than build the metric, and which a notebook
    may define again under its name), for one keeping state outside its declared fields (no
    twin: the windows), or for a config of anything else (an array)."""
    if not (klass.__module__.startswith(_OURS) and klass._state_in_fields()):
        return None
    try:
        return (klass, _codec.tree_bytes(config))
    except (TypeError, ValueError, OverflowError):
        return None


def _names_ours(config: Any) -> bool:
    """Whether every metric ``config`` names (a wrapper's ``{"class", "config"}``) is a class
    of the package."""
    stack = [config]
    while stack:
        value = stack.pop()
        if type(value) is dict:
            name = value.get("class")
            if type(name) is str and not _REGISTRY.get(name, object).__module__.startswith(_OURS):
                return False
            stack.extend(value.values())
        elif type(value) is list:
            stack.extend(value)
    return True


def _loaded(metric: Metric, state: Any) -> Metric:
    """``metric`` with ``state`` loaded, and its count checked against the bound (classes that
    load their own state, such as the windows, skip the base class's check)."""
    metric._load_state(state)
    if metric._rows is not None:
        # A loaded state trusts nothing it has not seen a call pass (a class outside the
        # package is built by ``__init__``, which may trust binary labels from the start:
        # a review found such a ``ROCAUC`` subclass, loaded near its weight bound, buffering
        # rows whose fold then failed).
        metric._rows.forget()
    count = metric._count
    if type(count) is not int or not 0 <= count <= _codec.COUNT_LIMIT:
        raise StateDecodeError(
            f"{type(metric).__name__} count must be a non-negative integer of at most 2**53"
        )
    return metric


def metric_spec(metric: Metric) -> dict[str, Any]:
    """``{"class", "config"}``: how a wrapper's config names a metric it is built around."""
    return {"class": metric._wire_name, "config": metric.config}


def metric_from_spec(spec: Any) -> Metric:
    """An empty metric built from :func:`metric_spec` output; ``ValueError`` if it is not one.

    Classes are looked up in the registry of metric classes, never imported by name.
    """
    if not (isinstance(spec, dict) and set(spec) == {"class", "config"}):
        raise ValueError("a metric must be given as its class and config")
    klass = _REGISTRY.get(spec["class"]) if isinstance(spec["class"], str) else None
    if klass is None or not isinstance(spec["config"], dict):
        raise ValueError(f"unknown metric class {spec['class']!r}")
    return klass._from_config(spec["config"])


def loads(blob: bytes) -> Metric:
    """Rebuild whatever metric :meth:`Metric.to_bytes` wrote: the right class, config and state.

    Raises :class:`StateDecodeError`, and no other exception, for bytes that are not a valid
    state: truncated, corrupt, of an unsupported version or of an unknown class.
    """
    try:
        return _from_tree(_codec.unpack_envelope(blob))
    except StateDecodeError:
        raise
    except Exception as exc:  # a last guard: the contract allows no other exception type
        raise StateDecodeError(f"invalid state: {type(exc).__name__}: {exc}") from exc
