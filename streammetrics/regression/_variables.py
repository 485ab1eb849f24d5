"""The variables a regression metric keeps moments of, and how a batch's are computed.

``y_true``, ``y_pred``, the ``error`` between them and the per-sample losses ``abs_error``,
``abs_pct_error`` (over ``max(|y_true|, eps)``, as scikit-learn's MAPE) and ``sq_error``: each
metric keeps the moments of the ones it needs, in a fixed order. A batch's are computed chunk by
chunk, into this thread's reused scratch arrays (``states.mappings.scratch``): a fresh array per
step of a large batch costs more in page faults than the arithmetic."""

from __future__ import annotations

import numpy as np

from ..states.mappings import scratch as _scratch

__all__ = ["loss_sums", "variable_columns"]

# The variables a metric may keep moments of, in a fixed order.
_T, _P, _E, _AE, _APE, _SE = "y_true", "y_pred", "error", "abs_error", "abs_pct_error", "sq_error"
_EPS = float(np.finfo(np.float64).eps)  # scikit-learn's floor for |y_true| in MAPE


def variable_columns(
    names: tuple[str, ...], t: np.ndarray, p: np.ndarray, scratch: bool = False
) -> list[np.ndarray]:
    """The variables ``names`` (a metric's, in its order), one (n, width) array each; with
    ``scratch`` (``t.size <= CHUNK``) computed into this thread's reused scratch arrays."""

    def buffer(name: str) -> np.ndarray | None:
        return (
            _scratch.get("regression-" + name, t.size, np.float64).reshape(t.shape)
            if (scratch)
            else None
        )

    cols: dict[str, np.ndarray] = {_T: t, _P: p}
    e = np.subtract(t, p, out=buffer("e"))
    cols[_E] = e
    out = []
    for name in names:
        if name == _AE:
            out.append(np.abs(e, out=buffer("ae")))
        elif name == _APE:
            den = np.maximum(np.abs(t, out=buffer("den")), _EPS, out=buffer("den"))
            out.append(np.divide(np.abs(e, out=buffer("ape")), den, out=buffer("ape")))
        elif name == _SE:
            out.append(np.multiply(e, e, out=buffer("se")))
        else:
            out.append(cols[name])
    return out


def loss_sums(name: str, t: np.ndarray, p: np.ndarray, step: int) -> tuple[float, float]:
    """``(sum l, sum l * l)`` of a one-loss metric's loss ``name`` (MSE, MAE, MAPE) on one
    column without weights, over pieces of ``step`` rows (those of :func:`variable_columns`)
    and added piece by piece from zero: the sums
    :class:`~streammetrics.states._shifted.ShiftedSums` makes of them, in two reused scratch
    arrays and one loop."""
    e = _scratch.get("regression-e", step, np.float64)
    buf = _scratch.get("regression-loss", step, np.float64)
    sums = products = 0.0
    for a in range(0, len(t), step):
        tc, pc = t[a : a + step], p[a : a + step]
        m = len(tc)
        err = np.subtract(tc, pc, out=e[:m])
        if name == _SE:
            loss = np.multiply(err, err, out=buf[:m])
        elif name == _AE:
            loss = np.abs(err, out=buf[:m])
        else:  # _APE
            den = np.maximum(np.abs(tc, out=buf[:m]), _EPS, out=buf[:m])
            loss = np.divide(np.abs(err, out=err), den, out=buf[:m])
        sums += float(np.add.reduce(loss))
        products += float(loss @ loss)
    return sums, products
