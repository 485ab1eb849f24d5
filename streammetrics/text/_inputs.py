"""Coercion of ``(hypotheses, references)`` columns of text into plain lists of strings."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InputError

__all__ = ["as_texts"]


def _as_list(x: Any, name: str) -> list[Any]:
    if x is None:
        raise InputError(f"{name}: got None, expected a list of strings")
    if isinstance(x, str):
        return [x]
    if isinstance(x, (set, frozenset, dict)) or not hasattr(x, "__len__"):
        # Unordered (the pairing of hypotheses and references would follow the hash seed) or
        # read-once (a generator): refused, as the other metrics' columns are.
        raise InputError(
            f"{name}: expected a list of strings (an ordered sequence), got {type(x).__name__}"
        )
    if hasattr(x, "to_list"):  # pandas Series
        x = x.to_list()
    elif hasattr(x, "to_pylist"):  # Arrow arrays and chunked arrays
        x = x.to_pylist()
    elif isinstance(x, np.ndarray):
        if x.ndim != 1:
            raise InputError(f"{name}: expected a 1-D column, got shape {x.shape}")
        x = x.tolist()
    try:
        return list(x)
    except TypeError:
        raise InputError(f"{name}: expected a list of strings, got {type(x).__name__}") from None


def _zero_d(x: Any) -> Any:
    if isinstance(x, np.ndarray) and x.ndim == 0 and x.dtype.kind == "U":
        return str(x.item())
    return x


def as_texts(hypotheses: Any, references: Any) -> tuple[list[str], list[list[str]]]:
    """``(hypotheses, references)`` as a list of strings and a list of non-empty lists of strings.

    A single string for ``hypotheses`` is one hypothesis, and ``references`` is then its one
    entry (a string, or a list of reference strings). An entry of ``references`` is a string or
    a list of strings; ``None`` inside such a list is dropped (sacrebleu's marker of a missing
    reference), so hypotheses may have different numbers of references, but at least one.
    """
    # A 0-d string array is one string, as a 0-d number is one row elsewhere.
    hypotheses, references = _zero_d(hypotheses), _zero_d(references)
    single = isinstance(hypotheses, str)
    hyps = _as_list(hypotheses, "hypotheses")
    if single:
        if references is None:
            raise InputError("references: got None, expected a string or a list of strings")
        refs_in: list[Any] = [references]
    else:
        refs_in = _as_list(references, "references")
    if len(hyps) != len(refs_in):
        raise InputError(
            f"columns differ in length: hypotheses has {len(hyps)}, references has {len(refs_in)}"
        )
    for i, h in enumerate(hyps):
        if not isinstance(h, str):
            raise InputError(f"hypotheses: entry {i} is a {type(h).__name__}, not a string")
    refs: list[list[str]] = []
    for i, entry in enumerate(refs_in):
        if isinstance(entry, str):
            refs.append([entry])
            continue
        if isinstance(entry, np.ndarray):
            entry = entry.tolist()
            if isinstance(entry, str):  # a 0-d string array inside a column
                refs.append([entry])
                continue
        if not isinstance(entry, (list, tuple)):
            raise InputError(
                f"references: entry {i} is a {type(entry).__name__}; expected a string or a "
                "list of strings"
            )
        kept = [r for r in entry if r is not None]
        if not kept:
            raise InputError(f"references: entry {i} holds no reference string")
        for r in kept:
            if not isinstance(r, str):
                raise InputError(f"references: entry {i} holds a {type(r).__name__}, not a string")
        refs.append(kept)
    return hyps, refs
