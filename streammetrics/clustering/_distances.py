"""The distances of the internal clustering indices (``distance="euclidean"``, ``"cosine"``,
``"cityblock"``): the check of the option, the distance of each row to its centre, every
pairwise distance between two sets of rows, and for the cosine distance the unit rows and the
means of unit rows that stand for the centres.

The cosine distance is scikit-learn's ``cosine_distances`` (``1 - cos``, clipped to [0, 2]; a
row of zeros is at distance 1 from everything), recomputed where it is within rounding of 0 so
that equal rows are at distance 0; a mean of unit rows that is zero to rounding is read as
zero, in every order and split of a stream."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import InputError

_DISTANCES = ("euclidean", "cosine", "cityblock")
_EPS = float(np.finfo(np.float64).eps)


def _check_distance(distance: Any) -> str:
    if distance not in _DISTANCES:
        raise InputError(f"distance: must be one of {_DISTANCES}; got {distance!r}")
    return str(distance)


def _to_centres(x: np.ndarray, c: np.ndarray, distance: str) -> np.ndarray:
    """Row-wise distance of each row of ``x`` to the matching row of ``c``."""
    if distance == "euclidean":
        diff = x - c
        return np.asarray(np.sqrt(np.einsum("ij,ij->i", diff, diff)))
    if distance == "cityblock":
        return np.asarray(np.abs(x - c).sum(axis=1))
    xu, x_zero = unit_rows(x)
    cu, c_zero = unit_rows(c)
    cos = np.einsum("ij,ij->i", xu, cu)
    return np.where(x_zero | c_zero, 1.0, 1.0 - cos)


#: Rows whose norm is below this are scaled by their largest entry before it is taken: their
#: squared entries would fall among the subnormals (or to zero) and lose their digits.
_TINY_NORM = 2.0**-450


def unit_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``x`` with every row scaled to unit length, and which rows are all zeros (left zero).

    The cosine distance does not depend on a row's length, so no row is too short: a row of
    1e-200s is scaled by its largest entry first, where its squares would underflow."""
    norms = np.sqrt(np.einsum("ij,ij->i", x, x))
    small = np.flatnonzero(norms < _TINY_NORM)
    if len(small):
        x = x.copy()
        top = np.abs(x[small]).max(axis=1, initial=0.0)
        x[small] /= np.where(top > 0, top, 1.0)[:, None]
        norms[small] = np.sqrt(np.einsum("ij,ij->i", x[small], x[small]))
    zero = norms == 0
    unit: np.ndarray = x / np.where(zero, 1.0, norms)[:, None]
    return unit, zero


def _cosine_centres(means: np.ndarray) -> np.ndarray:
    """Means of unit rows, with those that are zero to rounding set to zero.

    Each unit row is rounded (about ``eps`` per entry), and the two-part sums of a cluster
    whose rows cancel leave a residue of that order whose value, and so direction, depends on
    the order of the rows: a cosine distance to it could be anything in [0, 2] and differ
    between splits of one stream. A mean shorter than ``16 eps sqrt(d)`` is read as zero, the
    convention of an all-zero row (distance 1 to everything), in every order and split."""
    if not len(means):
        return means
    tol = 16 * _EPS * math.sqrt(means.shape[1])
    residue = np.sqrt(np.einsum("ij,ij->i", means, means)) <= tol
    if not residue.any():
        return means
    out: np.ndarray = means.copy()
    out[residue] = 0.0
    return out


#: Cosine distances below this are recomputed from the unit rows (:func:`_pairwise`).
_COSINE_EXACT_BELOW = 1e-12


def _pairwise(a: np.ndarray, b: np.ndarray, distance: str) -> np.ndarray:
    if distance != "cosine":
        from scipy.spatial.distance import cdist  # (imported when used)

        return np.asarray(cdist(a, b, metric=distance))
    # scikit-learn's cosine_distances: 1 - cos, clipped to [0, 2]; zero rows count as distance 1.
    an, a_zero = unit_rows(a)
    bn, b_zero = unit_rows(b)
    out: np.ndarray = np.clip(1.0 - an @ bn.T, 0.0, 2.0)
    # ``1 - cos`` is only good to about 1e-16 absolute, so equal rows came out as 2e-16, not 0
    # (and Dunn finite where it is inf). Below a few rounding errors, recompute the few pairs
    # as ``|an - bn|**2 / 2`` (the same value for unit rows, exactly 0 for equal ones).
    i, j = np.nonzero(out < _COSINE_EXACT_BELOW)
    if len(i):
        out[i, j] = 0.5 * np.square(an[i] - bn[j]).sum(axis=1)
    out[a_zero[:, None] | b_zero[None, :]] = 1.0
    return out
