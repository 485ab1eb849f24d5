"""Whether two metric configurations are equal, as the codec would write them.

A merge refuses states of different configurations, and a decoder matches a blob to an expected
metric by configuration; both compare with :func:`same_config`, under which a nan equals itself
and arrays compare by their encoded bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _codec

__all__ = ["same_config"]


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
