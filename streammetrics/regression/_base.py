"""The state and update shared by the regression metrics: one running-moments block over the
variables a metric needs (``regression._variables``), and the multioutput handling of
scikit-learn. The formulas of the values and intervals read off the moments are in
``regression._formulas``.

Nothing overflows silently: the moment blocks bound what a state may hold
(``states.moments``, ``states.central``), and ``update`` refuses a batch that would take the
state past those bounds (``InputError`` naming the argument, the state unchanged): every batch
of values within 2**200 in magnitude fits (their squared errors and fourth powers stay far
inside float64), larger ones fit only while their spread does. Weights totalling more than
2**100 raise ``CountOverflowError``. A fit worse than float64 can say (R2 or explained
variance below -1.8e308, e.g. a finite error over a subnormal variance) is reported as the
most negative float, never as -inf."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np

from .._codec import check_sum
from .._inputs import as_matrix, as_weights, check_finite, check_same_length
from ..base import Metric
from ..errors import IncompatibleStateError, InputError
from ..states._shifted import SHIFTED_MIN_ROWS, ShiftedSums, one_loss_values
from ..states.central import CentralMoments
from ..states.moments import CHUNK, Moments
from ..uncertainty import (
    NAN_INTERVAL,
    check_level,
    check_weight_sq,
    explained_delta_se,
    kish,
    no_interval,
    normal_interval,
)
from ._formulas import _explained, _floor, loss_interval, pearson
from ._stack import regression_stack
from ._upgrade import upgraded
from ._variables import _AE, _APE, _E, _P, _SE, _T, loss_sums, variable_columns
from ._wsq import check_wsq_fields, wsq_batch, wsq_merged

_MULTIOUTPUT = ("raw_values", "uniform_average", "variance_weighted")
# The central moments of (error, y_true) the delta method of R2 and explained variance reads:
# every index of order 2 to 4 below (2, 2), (4, 0) and (0, 4).
_SHAPE = ((2, 0), (3, 0), (4, 0), (0, 2), (0, 3), (0, 4), (1, 1), (2, 1), (1, 2), (2, 2))
#: Targets and predictions within this magnitude (about 1.6e60) always fit the state.
VALUE_LIMIT = 2.0**200
_F64 = np.dtype(np.float64)


def _piece(n: int, rows: int) -> int:
    """The length of equal pieces of at most ``rows`` covering ``n`` rows (no short tail)."""
    return -(-n // -(-n // rows))


def _check_multioutput(multioutput: Any) -> str | list[float]:
    if isinstance(multioutput, str):
        if multioutput not in _MULTIOUTPUT:
            raise InputError(
                f"multioutput: must be one of {_MULTIOUTPUT} or an array of weights; "
                f"got {multioutput!r}"
            )
        return multioutput
    try:
        arr = np.asarray(multioutput, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InputError(f"multioutput: cannot be read as weights ({exc})") from None
    if arr.ndim != 1 or arr.size == 0 or not np.isfinite(arr).all() or arr.sum() == 0:
        raise InputError(
            "multioutput: weights must be a non-empty 1-D array of finite numbers "
            "that does not sum to zero"
        )
    return [float(v) for v in arr]


def _check_range(arr: np.ndarray, name: str) -> None:
    """InputError unless every value is within +-VALUE_LIMIT (two reductions, no copy): names
    the argument of a batch the state refused."""
    if arr.size and not (arr.max() <= VALUE_LIMIT and arr.min() >= -VALUE_LIMIT):
        raise InputError(
            f"{name}: values beyond +-2**200 (about 1.6e60) whose squares or moments would "
            "overflow float64; refused, the state is unchanged"
        )


class _RegressionMetric(Metric, register=False):
    """Shared state, update and multi-output averaging of the regression metrics."""

    _vars: ClassVar[tuple[str, ...]] = ()
    _pairs: ClassVar[tuple[tuple[str, str], ...]] = ()
    #: The per-sample loss whose variance ``interval`` needs (its pair comes last, so that
    #: schema-1 states upgrade by appending one row).
    _loss: ClassVar[str | None] = None
    #: Keep the fourth-order central moments of (error, y_true) for the delta method.
    _shape: ClassVar[bool] = False
    #: 2: the moments gained the loss's second moment and the state ``weight_sq`` (Kish).
    #: 3 (R2Score, ExplainedVariance): the state gained ``shape``; (the loss means, 0.8.9):
    #: ``wsq_mean`` and ``wsq_spread``, the loss's moments under the weights squared.
    _schema: ClassVar[int] = 2
    #: Set in ``__init__`` and never changed: copies share them (``Metric._constant``).
    _constant: ClassVar[frozenset[str]] = frozenset({"_index"})

    moments: Moments
    weight_sq: float
    shape: CentralMoments
    wsq_mean: np.ndarray
    wsq_spread: np.ndarray

    def __init__(self, multioutput: Any = "uniform_average") -> None:
        super().__init__()
        mo = _check_multioutput(multioutput)
        self._add_config(multioutput=mo)
        names, pairs = list(self._vars), list(self._pairs)
        if mo == "variance_weighted":
            names += [_T] if _T not in names else []
            pairs += [(_T, _T)] if (_T, _T) not in pairs else []
        self._names = tuple(names)
        pairs += [(self._loss, self._loss)] if self._loss is not None else []
        self._index = {v: i for i, v in enumerate(names)}
        # The per-sample losses are non-negative: their shifted sums are taken about zero.
        self._losses = frozenset(self._index[v] for v in (_AE, _APE, _SE) if v in self._index)
        block = Moments(len(names), [(self._index[a], self._index[b]) for a, b in pairs])
        #: One loss and its variance, nothing else (MSE, RMSE, MAE, MAPE): :func:`loss_sums`.
        self._one_loss = (
            block.groups == 1 and tuple(block.pairs) == ((0, 0),) and self._losses == {0}
        )
        self._add_state("moments", block, merge=None)
        self._add_state("weight_sq", 0.0, power=2)
        if self._shape:
            self._add_state("shape", CentralMoments(2, _SHAPE), merge=None)
        if self._loss is not None:
            # The loss's mean and spread under the weights squared (``sum w**2 (x - a)**2``,
            # merged by Chan's formula with weights ``weight_sq``), per output, for the
            # linearised variance of the mean loss. Empty while every weight is 1 (they are
            # then the moments' own: nothing to keep, nothing to pay per unweighted batch);
            # nan where unknown (a weighted state written before 0.8.9).
            self._add_state("wsq_mean", np.zeros(0), merge=None)
            self._add_state("wsq_spread", np.zeros(0), merge=None)
        self._declare_rows("number", "number")

    def update(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        """Fold a batch of targets and predictions (1-D, or 2-D ``(n, n_outputs)``).

        Complexity: O(n * n_outputs).
        """
        if (
            sample_weight is None
            and self._one_loss
            and type(y_true) is np.ndarray
            and type(y_pred) is np.ndarray
            and y_true.ndim == 1
            and y_pred.ndim == 1
            and y_true.dtype == _F64
            and y_pred.dtype == _F64
            and self._one_loss_batch(y_true, y_pred)
        ):
            return self
        # Finiteness is checked on the result: a nan or an infinity in either column makes the
        # new moments non-finite, which their bounds refuse; only then are the columns read
        # again, to name the one at fault (two passes fewer for every good batch).
        t = as_matrix(y_true, "y_true", finite=False)
        p = as_matrix(y_pred, "y_pred", finite=False)
        n = check_same_length(y_true=t, y_pred=p)
        if t.shape[1] != p.shape[1]:
            raise InputError(f"y_pred: has {p.shape[1]} outputs, y_true has {t.shape[1]}")
        weights = as_weights(sample_weight, n)
        if weights is not None:
            # A row of weight zero adds nothing to the moments, a nan in it included: weighted
            # batches are checked up front.
            check_finite(t, "y_true")
            check_finite(p, "y_pred")
        if n == 0:
            return self
        d = t.shape[1]
        if d == 0:
            raise InputError("y_true: needs at least one output column")
        width = self.moments.width
        if width is not None and width != d:
            raise InputError(f"y_true: has {d} outputs, earlier batches had {width}")
        mo = self._config["multioutput"]
        if isinstance(mo, list) and len(mo) != d:
            raise InputError(f"y_true: has {d} outputs, but multioutput gives {len(mo)} weights")
        if weights is not None:
            with np.errstate(over="ignore"):
                check_sum("sample_weight", "f", self.moments.weight, float(weights.sum()))
        # In chunks whose temporaries live in reused scratch arrays: a fresh array per step
        # of a large batch costs more in page faults than the arithmetic (issue 11).
        block, rows, small = self.moments, max(1, CHUNK // d), d <= CHUNK
        try:
            # Values too large for the state overflow to inf or nan here, silently, and stay
            # so: the bounds the new block is checked against refuse them (no pass over the
            # input for it).
            with np.errstate(over="ignore", invalid="ignore"):
                step = _piece(n, rows)

                def pieces() -> Iterator[tuple[list[np.ndarray], np.ndarray | None]]:
                    for a in range(0, n, step):
                        w = None if weights is None else weights[a : a + step]
                        yield self._columns(t[a : a + step], p[a : a + step], small), w

                if n >= SHIFTED_MIN_ROWS and d == 1 and weights is None and self._one_loss:
                    # The common batch of MSE, MAE, MAPE: the shifted sums in a lean loop.
                    sums = loss_sums(self._names[0], t.reshape(-1), p.reshape(-1), step)
                    values = one_loss_values(*sums, float(n))
                    if values is not None:
                        block = block.plus_values(float(n), values[0], 0.0, values[1])
                elif (
                    n >= SHIFTED_MIN_ROWS
                    and (shifted := ShiftedSums(block, d, self._losses)).usable
                ):
                    for cols, w in pieces():
                        shifted.add(cols, w, scratch=small)
                    new = shifted.result()
                    if new is not None:
                        block = block.combined(new)
                if block is self.moments:  # small, or the shifted sums were refused
                    for cols, w in pieces():
                        block = block.combined(block.batch(cols, w, scratch=small))
                block.check_bounds()
                shape = (
                    self.shape.merged(self.shape.batch([t - p, t], weights))
                    if self._shape
                    else None
                )
        except IncompatibleStateError as exc:
            if isinstance(exc, InputError):  # CountOverflowError: already an InputError
                raise
            check_finite(t, "y_true")  # names the argument holding a nan or an infinity
            check_finite(p, "y_pred")
            _check_range(t, "y_true")  # names the argument past 2**200, if one is
            _check_range(p, "y_pred")
            # Else a decoded state near its bounds: values within 2**200 cannot pass them.
            raise InputError(
                f"y_true: the batch would take the state past its bounds ({exc}); refused, "
                "the state is unchanged"
            ) from None
        sq = float(n) if weights is None else float(weights @ weights)
        extra: dict[str, Any] = {} if shape is None else {"shape": shape}
        if self._loss is not None and (weights is not None or self.wsq_mean.size):
            wsq_mean, wsq_spread = self._wsq_after(t, p, weights)
            extra.update(wsq_mean=wsq_mean, wsq_spread=wsq_spread)
        return self._commit(n, moments=block, weight_sq=self.weight_sq + sq, **extra)

    def _stacked(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        """This batch for ``Sliced``'s packed folds (``regression._stack``): the per-row losses
        of a one-loss metric, else the columns, one output, and their weights; None otherwise
        (the per-slice path)."""
        return regression_stack(self, y_true, y_pred, sample_weight)

    def _wsq(self) -> tuple[np.ndarray, np.ndarray]:
        """The loss's mean and spread under the weights squared (from the moments while every
        weight is 1); empty arrays when nothing was seen."""
        if self.wsq_mean.size or self.moments.width is None:
            return self.wsq_mean, self.wsq_spread
        i = self._index[self._loss]  # type: ignore[index]
        return np.array(self.moments.mean[i]), np.array(self._co(self._loss, self._loss))  # type: ignore[arg-type]

    def _wsq_after(
        self, t: np.ndarray, p: np.ndarray, weights: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_wsq` with the batch ``t``, ``p`` added (weights squared: ``weights**2``)."""
        x = self._columns(t, p)[self._index[self._loss]]  # type: ignore[index]
        batch = wsq_batch(x, weights)
        if batch is None:  # every weight 0
            return self._wsq()
        return wsq_merged((self.weight_sq, *self._wsq()), batch)

    def _merge_many(self, others: list[Any], join: bool = False) -> None:
        """All or nothing: every merged block is built (and checked against its bounds) before
        any field changes."""
        moments, shape, sq = self.moments, self.shape if self._shape else None, self.weight_sq
        wsq = None
        if self._loss is not None and any(m.wsq_mean.size for m in (self, *others)):
            # Some side had weights: every side's moments under the weights squared, merged.
            wsq = (self.weight_sq, *self._wsq())
            for other in others:
                wsq = (
                    wsq[0] + other.weight_sq,
                    *wsq_merged(wsq, (other.weight_sq, *other._wsq())),
                )
        for other in others:
            moments = moments.merged(other.moments)
            if shape is not None:
                shape = shape.merged(other.shape)
            sq = sq + other.weight_sq
        self.moments, self.weight_sq = moments, sq
        if shape is not None:
            self.shape = shape
        if wsq is not None:
            self.wsq_mean, self.wsq_spread = wsq[1], wsq[2]

    def _one_loss_batch(self, t: np.ndarray, p: np.ndarray) -> bool:
        """The update of a one-loss metric (MSE, RMSE, MAE, MAPE) by two float64 columns without
        weights, as the general path below makes it (the same sums in the same order), without
        its conversions and checks; False, with nothing changed, for anything else (shorter or
        unequal columns, a state with weights or of several outputs, a batch the general path
        must check or refuse: it runs then, and names what is wrong)."""
        n = len(t)
        mo = self._config["multioutput"]
        if (
            n != len(p)
            or n < SHIFTED_MIN_ROWS
            or self.wsq_mean.size
            or self.moments.width not in (None, 1)
            or (isinstance(mo, list) and len(mo) != 1)
        ):
            return False
        step = _piece(n, CHUNK)  # the general path's pieces, for one output
        with np.errstate(over="ignore", invalid="ignore"):
            values = one_loss_values(*loss_sums(self._names[0], t, p, step), float(n))
        if values is None:
            return False
        block = self.moments.plus_values(float(n), values[0], 0.0, values[1])
        try:
            block.check_bounds()
        except IncompatibleStateError:
            return False
        self._commit(n, moments=block, weight_sq=self.weight_sq + float(n))
        return True

    def _columns(self, t: np.ndarray, p: np.ndarray, scratch: bool = False) -> list[np.ndarray]:
        """The variables this metric keeps moments of (:func:`variable_columns`)."""
        return variable_columns(self._names, t, p, scratch)

    def _validate_state(self) -> None:
        width = self.moments.width
        if (self._count == 0) != (width is None):  # (a state just loaded: nothing pending)
            raise ValueError("moments and count disagree on whether anything was seen")
        mo = self._config["multioutput"]
        if isinstance(mo, list) and width is not None and width != len(mo):
            raise ValueError(f"{width} outputs, but multioutput gives {len(mo)} weights")
        for name in (_AE, _APE, _SE):
            if name in self._index and width is not None and self._mean(name).min() < 0:
                raise ValueError(f"the mean {name} must be non-negative")
        if width is not None:
            check_weight_sq(self.weight_sq, self.moments.weight, self._count)
        loss = self._loss
        if loss is not None:
            totals = (self.moments.weight, self.weight_sq, self._count)
            moments = lambda: (self._mean(loss), self._co(loss, loss))  # noqa: E731
            check_wsq_fields(self.wsq_mean, self.wsq_spread, width, totals, moments)

    @classmethod
    def _upgrade_state(cls, state: Any, schema: int) -> Any:
        """Older schemas (``streammetrics.regression._upgrade``): their values and merges are
        unchanged; what they did not keep leaves the interval unknown until a reset."""
        if schema >= cls._schema:
            return state  # (current: nothing to add; a Sliced of 100,000 slices asks each)
        shape = CentralMoments(2, _SHAPE).to_wire() if cls._shape else None
        return upgraded(state, schema, cls._loss is not None, shape)

    def _n_eff(self) -> float:
        return kish(self.moments.weight, self.weight_sq)

    def _single_output(self) -> None:
        """``interval`` covers one averaged value; across outputs the covariances are not kept."""
        mo = self._config["multioutput"]
        if mo == "raw_values":
            raise no_interval(type(self).__name__, "multioutput='raw_values' gives an array")
        if (self.moments.width or 1) > 1:
            raise no_interval(type(self).__name__, "the covariances between outputs are not kept")

    def _loss_interval(self, level: float) -> tuple[float, float]:
        """Student-t interval (central limit theorem) of the mean per-sample loss."""
        level = check_level(level)
        self._single_output()
        if self.count == 0 or self._loss is None:
            return NAN_INTERVAL
        wsq = float(self.wsq_mean[0]) if self.wsq_mean.size else None
        return loss_interval(
            self.moments.weight,
            float(self._mean(self._loss)[0]),
            float(self._co(self._loss, self._loss)[0]),
            self.weight_sq,
            wsq,
            float(self.wsq_spread[0]) if wsq is not None else math.nan,
            level,
        )

    def _explained_interval(self, level: float, kind: str) -> tuple[float, float]:
        """The delta-method interval of R2 (``kind="r2"``) or explained variance (``"ev"``)."""
        level = check_level(level)
        self._single_output()
        if self.count < 2 or self.shape.width is None:
            return NAN_INTERVAL
        value = float(self.compute())
        se = explained_delta_se(self.shape, kind, self._n_eff())
        return normal_interval(value, se, level, (-math.inf, 1.0))

    def compute(self) -> Any:
        # A decoded state may hold absurd (finite) values: give inf or nan, never a warning.
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return super().compute()

    # -- helpers for compute -------------------------------------------------------------------

    def _mean(self, name: str) -> np.ndarray:
        return np.asarray(self.moments.mean[self._index[name]])

    def _co(self, a: str, b: str) -> np.ndarray:
        return self.moments.comoment_of(self._index[a], self._index[b])

    def _average(self, values: np.ndarray) -> Any:
        mo = self._config["multioutput"]
        if self.moments.weight == 0.0:  # only zero weights seen: nothing to average
            values = np.full(len(values), math.nan)
        if mo == "raw_values":
            return values
        if mo == "uniform_average":
            return _floor(float(np.mean(values)), values)
        if mo == "variance_weighted":
            den = self._co(_T, _T)
            if np.any(den != 0):
                # Scaled by a power of two (exactly) so that sums of variances near the bound
                # of the moments stay finite.
                den = np.ldexp(den, -int(np.frexp(den.max())[1]))
            return _floor(
                float(np.average(values, weights=den if np.any(den != 0) else None)), values
            )
        return _floor(float(np.average(values, weights=np.asarray(mo))), values)

    def _empty_result(self) -> Any:
        mo = self._config["multioutput"]
        return np.full(1, math.nan) if mo == "raw_values" else math.nan

    # the per-output values of each metric ---------------------------------------------------

    def _mse(self) -> np.ndarray:
        return self._mean(_SE)

    def _r2(self, force_finite: bool) -> np.ndarray:
        num = self._mean(_SE) * self.moments.weight  # sum w e**2, without cancellation
        return _explained(num, self._co(_T, _T), force_finite)

    def _ev(self, force_finite: bool) -> np.ndarray:
        return _explained(self._co(_E, _E), self._co(_T, _T), force_finite)

    def _pearson(self) -> np.ndarray:
        return pearson(self._co(_T, _T), self._co(_P, _P), self._co(_T, _P))
