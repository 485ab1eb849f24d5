"""Probability-quality metrics: log loss and the Brier score, and the checks of probability
columns they share with :class:`~streammetrics.classification.reliability.CalibrationError`.

Their states are running float64 sums, so merged shards agree with the single stream to rounding
(1e-12 relative), not byte for byte.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .._codec import WEIGHT_LIMIT, check_sum
from .._input_labels import as_labels
from .._inputs import as_array, as_scores, as_weights, check_same_length, one_sample_row
from ..base import Metric
from ..errors import IncompatibleStateError, InputError
from ..states.labels import codes_in
from ..uncertainty import (
    NAN_INTERVAL,
    check_level,
    check_linearised_sums,
    check_weight_sq,
    mean_interval,
)
from ._checks import binary_labels, class_columns, column_labels

__all__ = ["BrierScore", "CalibrationError", "LogLoss"]


def _probabilities(
    y_prob: Any, y_true: Any, labels: list[Any] | None = None, name: str = "y_prob"
) -> np.ndarray:
    arr = one_sample_row(y_true, as_array(y_prob, name))
    if arr.ndim == 2 and arr.shape[1] == 1:
        # One column (``torch.sigmoid(logits)`` of shape (n, 1)): the positive class's
        # probability, as scikit-learn's ``log_loss`` reads it; 1-D probabilities need
        # ``labels`` of two classes, if any (``_binary_outcomes``).
        arr = arr[:, 0]
    if arr.ndim not in (1, 2):
        raise InputError(f"{name}: expected a 1-D (binary) or 2-D (n, classes) array")
    x = as_scores(arr, name, ndim=arr.ndim)
    if x.size and (x.min() < 0.0 or x.max() > 1.0):
        raise InputError(f"{name}: probabilities must lie in [0, 1]")
    return x


def _binary_outcomes(y_true: Any, labels: list[Any] | None) -> np.ndarray:
    """The outcome (1: the positive class) of each row of 1-D probabilities.

    Without ``labels``, ``y_true`` holds binary labels (0/1, False/True). With ``labels`` (sorted,
    see :func:`column_labels`), they must name two classes, and ``y_true`` holds those classes:
    the probability is that of the larger one, ``labels[1]``, as scikit-learn's ``log_loss``
    reads one column beside two labels (and as the second of two columns, so that 1-D and 2-D
    probabilities agree). ``InputError`` naming the argument otherwise.
    """
    if labels is None:
        return binary_labels(y_true)
    if len(labels) != 2:
        classes = "1 class" if len(labels) == 1 else f"{len(labels)} classes"
        raise InputError(
            "labels: 1-D (binary) y_prob, the probability of labels[1], needs two classes, but "
            f"labels names {classes}; pass one probability column per class"
        )
    return codes_in(np.asarray(labels), as_labels(y_true, "y_true"), "y_true")


def _class_codes(y_true: Any, k: int, labels: list[Any] | None) -> np.ndarray:
    """Column index of each row's class (2-D probabilities)."""
    return class_columns(as_labels(y_true, "y_true"), k, labels)


def _shape(columns: int) -> str:
    return "1-D (binary) probabilities" if columns == 0 else f"{columns} probability columns"


def _check_columns(held: int, k: int) -> None:
    """``InputError`` when a batch of ``k`` columns (0: 1-D) differs from the ``held`` ones."""
    if held >= 0 and k != held:
        raise InputError(f"y_prob: has {_shape(k)}, earlier batches had {_shape(held)}")


def _check_merge_columns(name: str, mine: int, theirs: int) -> None:
    """``IncompatibleStateError`` when two states hold rows of different shapes."""
    if mine >= 0 and theirs >= 0 and mine != theirs:
        raise IncompatibleStateError(
            f"cannot merge {name} states of {_shape(mine)} and {_shape(theirs)}"
        )


#: The most probability columns a state may claim: one row of more would be 16 GiB of floats
#: (a blob claiming 2**53 loaded, and then refused every update and merge).
MAX_COLUMNS = 2**31


def _validate_columns(columns: int, count: int, labels: list[Any] | None) -> None:
    if columns < -1 or (count == 0) != (columns == -1):
        raise ValueError("columns must be -1 exactly when the state is empty")
    if columns > MAX_COLUMNS:
        raise ValueError(f"columns must be at most 2**31, got {columns}")
    if labels is not None and columns > 0 and columns != len(labels):
        raise ValueError(f"{columns} columns, but labels names {len(labels)} classes")
    # (A 1-D state beside labels of other than two classes loads: 0.8.11 and earlier built
    # them, labels= ignored for 1-D probabilities; its further 1-D updates are refused.)


# Relative slack of the consistency bounds below (float sums in different orders round apart).
_SLACK = 1.0 + 1e-6


class _SumMetric(Metric, register=False):
    """A weighted mean of one per-row loss, kept as two running float sums.

    Bounds (``docs/format.md``): ``weight_sum`` at most ``WEIGHT_LIMIT`` (2**100; an update or
    merge past it raises ``CountOverflowError``, the state unchanged) and ``|loss_sum|`` at most
    the largest per-row loss times ``weight_sum`` (``loss_sq_sum``: its square times
    ``weight_sum``), as every real stream gives; decoding refuses anything else, so the mean
    is finite.
    """

    #: 2: the state gained ``loss_sq_sum`` (sum w loss**2) and ``weight_sq`` (sum w**2).
    #: 3 (0.8.9): and ``loss_wsq`` (sum w**2 loss) and ``loss_sq_wsq`` (sum w**2 loss**2), the
    #: sums of the linearised variance.
    _schema: ClassVar[int] = 3

    def __init__(self, labels: Any = None) -> None:
        super().__init__()
        self._add_config(labels=column_labels(labels, sort=True))
        self._add_state("loss_sum", 0.0)
        self._add_state("weight_sum", 0.0)
        self._add_state("columns", -1, merge="max")  # -1: none yet, 0: 1-D
        self._add_state("loss_sq_sum", 0.0)
        self._add_state("weight_sq", 0.0, power=2)
        self._add_state("loss_wsq", 0.0, power=2)
        self._add_state("loss_sq_wsq", 0.0, power=2)
        self._declare_rows("label", "probability")

    loss_sum: float
    weight_sum: float
    columns: int
    loss_sq_sum: float
    weight_sq: float
    loss_wsq: float
    loss_sq_wsq: float

    def _losses(self, y_true: Any, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _max_loss(self) -> float:
        """The largest per-row loss."""
        raise NotImplementedError

    def update(self, y_true: Any, y_prob: Any, sample_weight: Any = None) -> Any:
        """Add a batch of (label, probability) rows, optionally weighted. Complexity O(n k)."""
        x = _probabilities(y_prob, y_true, self._config.get("labels"))
        n = len(x)
        k = 0 if x.ndim == 1 else x.shape[1]
        if n:
            _check_columns(self.columns, k)
        losses = self._losses(y_true, x)
        check_same_length(y_true=losses, y_prob=x)
        w = as_weights(sample_weight, n)
        if n == 0:
            return self
        with np.errstate(over="ignore"):
            weight = float(n) if w is None else float(w.sum())
        check_sum("sample_weight", "f", self.weight_sum, weight)
        total = float(losses.sum()) if w is None else float(np.dot(losses, w))
        sq = losses * losses
        sq_total = float(sq.sum()) if w is None else float(np.dot(sq, w))
        if w is None:  # unit weights: w**2 = w
            w_sq, wsq_total, wsq_sq_total = float(n), total, sq_total
        else:
            w2 = w * w
            w_sq = float(w2.sum())
            wsq_total, wsq_sq_total = float(np.dot(losses, w2)), float(np.dot(sq, w2))
        return self._commit(
            n,
            loss_sum=self.loss_sum + total,
            weight_sum=self.weight_sum + weight,
            columns=k,
            loss_sq_sum=self.loss_sq_sum + sq_total,
            weight_sq=self.weight_sq + w_sq,
            loss_wsq=self.loss_wsq + wsq_total,
            loss_sq_wsq=self.loss_sq_wsq + wsq_sq_total,
        )

    def _stacked(self, y_true: Any, y_prob: Any, sample_weight: Any = None) -> Any:
        """This batch for ``Sliced``'s packed fold (``_loss_stack``): its per-row losses,
        weights and columns; None for a subclass's own update or a batch it would refuse."""
        if type(self).update is not _SumMetric.update:
            return None
        from ._loss_stack import sum_stack

        return sum_stack(self, y_true, y_prob, sample_weight)

    def _check_compatible(self, other: Any) -> None:
        super()._check_compatible(other)
        _check_merge_columns(type(self).__name__, self.columns, other.columns)
        check_sum("weight_sum", "f", self.weight_sum, other.weight_sum)

    def _held_total(self) -> float:
        return max(super()._held_total(), self.weight_sum)

    def _validate_state(self) -> None:
        if not 0 <= self.weight_sum <= WEIGHT_LIMIT or not math.isfinite(self.loss_sum):
            raise ValueError("sums must be finite and weights non-negative, at most 2**100")
        top = self._max_loss() * _SLACK
        # (plus a few subnormals per row: w * loss**2 of a subnormal weight rounds apart from
        # top**2 * w; 0.8.14 refused such a stream's bytes)
        tiny = self._count * 2.0**-1074 * top * top
        if not abs(self.loss_sum) <= top * self.weight_sum + tiny:
            raise ValueError(f"loss_sum is more than {top:.6g} times weight_sum")
        if not abs(self.loss_sq_sum) <= top * top * self.weight_sum + tiny:
            if not math.isnan(self.loss_sq_sum):  # nan: unknown since schema 1
                raise ValueError(f"loss_sq_sum is more than {top * top:.6g} times weight_sum")
        if self.loss_sum < 0 or self.loss_sq_sum < 0:  # per-row losses are never negative
            raise ValueError("loss_sum and loss_sq_sum must be non-negative")
        check_weight_sq(self.weight_sq, self.weight_sum, self._count)
        if self.weight_sum > 0 and not math.isnan(self.loss_sq_sum):
            # sum w loss**2 >= (sum w loss)**2 / sum w (a spread is never negative), to
            # rounding, subnormal weights' included
            spread = self.loss_sq_sum - self.loss_sum / self.weight_sum * self.loss_sum
            if not spread >= -1e-9 * self.loss_sq_sum - self._count * 2.0**-1074 * top * top:
                raise ValueError("loss_sq_sum is below loss_sum**2 / weight_sum")
        # sum w**2 loss and sum w**2 loss**2 lie within the largest loss (squared) times
        # sum w**2; nan: unknown (a weighted state of schema 2 or older).
        for name, bound in (("loss_wsq", top), ("loss_sq_wsq", top * top)):
            value = getattr(self, name)
            if not (0 <= value <= bound * self.weight_sq or math.isnan(value)):
                raise ValueError(f"{name} must lie in [0, {bound:.6g} * weight_sq]")
        if math.isnan(self.loss_wsq) != math.isnan(self.loss_sq_wsq):
            raise ValueError("loss_wsq and loss_sq_wsq are known (not nan) together")
        # Every row's loss is at most ``top``, so loss**2 <= top * loss, row by row: the sums
        # of squares lie within top times the sums (to a few subnormals a product may round
        # to). 0.8.14 checked neither: a forged state with loss_sum 0 beside a positive
        # loss_sq_sum decoded, and merged into bytes loads refused (a negative spread).
        for squares, sums in (("loss_sq_sum", "loss_sum"), ("loss_sq_wsq", "loss_wsq")):
            value, linear = getattr(self, squares), getattr(self, sums)
            if not math.isnan(value) and not value <= top * linear * _SLACK + tiny:
                raise ValueError(f"{squares} is more than {top:.6g} times {sums}")
        if not math.isnan(self.loss_wsq) and self.weight_sum > 0:
            check_linearised_sums(
                (self.weight_sum, self.loss_sum, self.loss_sq_sum),
                (self.weight_sq, self.loss_wsq, self.loss_sq_wsq),
                self._count,
                top,
            )
        _validate_columns(self.columns, self._count, self._config["labels"])

    def _scale(self) -> float:
        """The factor between the mean of the per-row losses summed and the value."""
        return 1.0

    def _compute(self) -> float:
        return self.loss_sum / self.weight_sum * self._scale() if self.weight_sum > 0 else math.nan

    @classmethod
    def _upgrade_state(cls, state: Any, schema: int) -> Any:
        """Schema 1 (0.1.0) kept no second moments: unknown (nan) for a non-empty state, so
        ``interval`` is nan; the value and merges are unchanged. Schema 2 (to 0.8.8) kept no
        ``sum w**2 loss`` nor ``sum w**2 loss**2``: for a state of unit weights they are the
        plain sums it kept, else unknown (nan), and ``interval`` takes Kish's rule."""
        if schema < 2 and isinstance(state, dict) and "weight_sq" not in state:
            unknown = 0.0 if state.get("count") == 0 else math.nan
            state = {**state, "loss_sq_sum": unknown, "weight_sq": unknown}
        if schema < 3 and isinstance(state, dict) and "loss_wsq" not in state:
            n, w, sq = state.get("count"), state.get("weight_sum"), state.get("weight_sq")
            unit = isinstance(n, int) and n == w == sq  # sum (w - 1)**2 = 0: every w is 1
            state = {
                **state,
                "loss_wsq": state.get("loss_sum") if unit else math.nan,
                "loss_sq_wsq": state.get("loss_sq_sum") if unit else math.nan,
            }
        return state

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Student-t interval (central limit theorem) of the mean per-row loss, with the larger
        of two variances: the linearised ``sum w**2 (loss - mean)**2 / (sum w)**2`` (right
        also when the weights go with the losses) and Kish's (the loss's weighted spread over
        ``n_eff``, steadier when they do not); ``n_eff - 1`` degrees of freedom, ``n_eff``
        Kish's effective sample size ``(sum w)**2 / sum w**2``. For unit weights both are the
        sample variance over ``n``. A weighted state written before 0.8.9 lacks the sums of
        the first: Kish's alone. ``nan, nan`` when empty. O(1)."""
        level = check_level(level)
        if self.count == 0:
            return NAN_INTERVAL
        known = not (math.isnan(self.loss_wsq) or math.isnan(self.loss_sq_wsq))
        low, high = mean_interval(
            self.weight_sum,
            self.loss_sum,
            self.loss_sq_sum,
            self.weight_sq,
            level,
            (0.0, math.inf),
            wsq=(self.loss_wsq, self.loss_sq_wsq) if known else None,
        )
        return low * self._scale(), high * self._scale()


class LogLoss(_SumMetric):
    """Mean negative log-likelihood, as scikit-learn's ``log_loss``.

    ``y_prob`` is the probability of class 1 (1-D, binary labels) or a matrix of class
    probabilities (one column per class; ``y_true`` holds column indices, or the classes named
    by ``labels``, which are sorted). Beside ``labels`` of two classes, 1-D probabilities are
    those of ``labels[1]`` and ``y_true`` holds the two labels (as scikit-learn reads one
    column beside two labels); beside any other number, 1-D probabilities are an
    ``InputError``. Probabilities are clipped to ``[eps, 1 - eps]`` (``eps="auto"``: float64's
    machine epsilon, whatever the input's dtype; scikit-learn 1.5 and later clip at the
    input's own, so for float32 probabilities within 1.2e-7 of 0 or 1 the two differ: pass
    ``eps=float(np.finfo(np.float32).eps)`` to match it there); rows are not renormalised.

    State: two float sums (agree to rounding after merges) and the number of columns. A state
    holds either 1-D rows or rows of one number of columns. A batch of another shape is an
    ``InputError``, and merging states of different shapes is an ``IncompatibleStateError``.
    Memory O(1); update O(n k); merge and compute O(1).

    Examples
    --------
    >>> import streammetrics as sm
    >>> round(sm.LogLoss().update([0, 1, 1, 0], [0.1, 0.9, 0.8, 0.35]).compute(), 6)
    0.216162
    """

    higher_is_better: ClassVar[bool | None] = False

    def __init__(self, eps: Any = "auto", labels: Any = None) -> None:
        super().__init__(labels)
        if eps == "auto":
            value = float(np.finfo(np.float64).eps)
        elif isinstance(eps, (int, float)) and not isinstance(eps, bool) and 0 < eps < 0.5:
            value = float(eps)
        else:
            raise InputError(f"eps: must be 'auto' or a number in (0, 0.5); got {eps!r}")
        self._eps = value
        self._add_config(eps=eps if eps == "auto" else value)

    def _losses(self, y_true: Any, x: np.ndarray) -> np.ndarray:
        eps = self._eps
        if x.ndim == 1:
            y = _binary_outcomes(y_true, self._config["labels"])
            check_same_length(y_true=y, y_prob=x)
            chosen = np.where(y, x, 1.0 - x)
        else:
            codes = _class_codes(y_true, x.shape[1], self._config["labels"])
            check_same_length(y_true=codes, y_prob=x)
            chosen = x[np.arange(len(x)), codes]
        out: np.ndarray = -np.log(np.clip(chosen, eps, 1.0 - eps))
        return out

    def _max_loss(self) -> float:
        return -math.log(self._eps)


class BrierScore(_SumMetric):
    """Mean squared difference between the predicted probability and the outcome, as
    scikit-learn's ``brier_score_loss``.

    1-D ``y_prob`` (probability of class 1, binary labels; or, beside ``labels`` of two
    classes, of ``labels[1]``, as :class:`LogLoss` reads it and as ``brier_score_loss`` with
    ``pos_label=labels[1]``): ``mean((y - p)**2)``. A matrix of
    class probabilities: ``mean(sum_c (onehot - p)**2)``, scikit-learn's multiclass form, halved
    when there are two columns (as its ``scale_by_half="auto"``: two columns are the binary
    case, and give the 1-D form's value). State, memory and complexity as :class:`LogLoss`; the
    state keeps the sum unhalved (as every version wrote it) and the halving is applied to the
    value and the interval.

    Examples
    --------
    >>> import streammetrics as sm
    >>> round(sm.BrierScore().update([0, 1, 1, 0], [0.1, 0.9, 0.8, 0.3]).compute(), 6)
    0.0375
    """

    higher_is_better: ClassVar[bool | None] = False

    def __init__(self, labels: Any = None) -> None:
        super().__init__(labels)

    def _losses(self, y_true: Any, x: np.ndarray) -> np.ndarray:
        if x.ndim == 1:
            y = _binary_outcomes(y_true, self._config["labels"])
            check_same_length(y_true=y, y_prob=x)
            d: np.ndarray = y - x
            sq: np.ndarray = d * d
            return sq
        codes = _class_codes(y_true, x.shape[1], self._config["labels"])
        check_same_length(y_true=codes, y_prob=x)
        sq = x * x
        rows = np.arange(len(x))
        # (1 - p_true)**2 in the true class's column, squared as it is: 0.8.18 added
        # 1 - 2 p_true to the row's sum of p**2, which cancels for confident rows (a loss of
        # 1e-20 came out 0.0, of 5e-14 off by 2e-4).
        miss = 1.0 - x[rows, codes]
        sq[rows, codes] = miss * miss
        out: np.ndarray = sq.sum(axis=1)
        return out

    def _max_loss(self) -> float:
        # Rows need not sum to 1 (as in scikit-learn): each of k columns adds at most 1, so a
        # row's loss is at most k (2 for a row that sums to 1: all the mass on a wrong class).
        # 1-D rows (``columns`` 0) lose (y - p)**2 <= 1 (0.8.14 allowed 2: a forged state
        # decoded to a Brier score of 2).
        return 1.0 if self.columns == 0 else max(2.0, float(self.columns))

    def _scale(self) -> float:
        return 0.5 if self.columns == 2 else 1.0


# Where 0.8.12 and earlier defined it: their imports, and their pickles (which name this
# module), still find it.
from .reliability import CalibrationError  # noqa: E402
