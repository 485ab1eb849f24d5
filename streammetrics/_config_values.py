"""A metric's configuration values, checked: integers, flags and numbers within their bounds.

Each function takes a value as the caller gave it (numpy's numbers too) and returns the Python
value the configuration keeps. The checks raise :class:`~streammetrics.errors.InputError`
naming the argument (a bool is not a number here, and ``"no"`` is not a flag), and
:func:`whole_if_integral` makes ``2.0`` the ``2`` a default writes. The wire's integers are
64-bit: no configuration integer is larger than :data:`CONFIG_INT_MAX`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .errors import InputError

__all__ = [
    "config_int",
    "config_number",
]


#: The largest integer a configuration holds without a ``maximum`` of its own: the wire's
#: integers are 64-bit (0.8.12 took ``GAUC(max_exact=2**70)`` and raised ``OverflowError``
#: writing its configuration).
CONFIG_INT_MAX = 2**63 - 1


def config_int(value: Any, name: str, minimum: int = 1, maximum: int | None = None) -> int:
    """A whole-number configuration value within bounds (``maximum`` at most
    ``CONFIG_INT_MAX``, the default), as a Python int (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{name}: must be an integer; got {value!r}")
    top = CONFIG_INT_MAX if maximum is None else min(maximum, CONFIG_INT_MAX)
    if value < minimum or value > top:
        upper = "2**63 - 1" if top == CONFIG_INT_MAX else str(top)
        raise InputError(f"{name}: must be from {minimum} to {upper}; got {value}")
    return int(value)


def config_flag(value: Any, name: str) -> bool:
    """A yes/no configuration value: a bool (numpy's too), or the integers 0 and 1. Anything
    else (``"no"``, which ``bool()`` reads as True) is an ``InputError``."""
    if isinstance(value, (bool, np.bool_)) or (
        isinstance(value, (int, np.integer)) and value in (0, 1)
    ):
        return bool(value)
    raise InputError(f"{name}: must be True or False; got {value!r}")


def whole_if_integral(value: int | float) -> int | float:
    """A float holding a whole number (below 2**53) as that int, another float as a Python
    float, any other value unchanged: so that ``beta=2`` and ``beta=2.0`` are one configuration
    (merges compare configurations by type as well as by value), written as the int a default
    of ``2`` always wrote."""
    if isinstance(value, float):  # numpy floats too, written as Python's
        return int(value) if value.is_integer() and abs(value) < 2.0**53 else float(value)
    return value


def config_number(
    value: Any,
    name: str,
    minimum: float = 0.0,
    finite: bool = True,
    maximum: float | None = None,
) -> float:
    """A numeric configuration value of at least ``minimum`` (and at most ``maximum``), as a
    Python float. numpy's numbers too, compared as float64 (a float32 value compared with a
    bound past its range made the bound inf); an int past float64 is infinite."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise InputError(f"{name}: must be a number; got {value!r}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    top = math.inf if maximum is None else maximum
    if not minimum <= number <= top or (finite and math.isinf(number)):
        kind = "a finite number" if finite else "a number"
        upto = "" if maximum is None else f" and at most {maximum:g}"
        raise InputError(f"{name}: must be {kind} of at least {minimum:g}{upto}; got {value!r}")
    return number
