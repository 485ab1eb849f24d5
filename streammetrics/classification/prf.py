"""Precision, recall and the F-scores of a confusion matrix, with scikit-learn's averages."""

from __future__ import annotations

import itertools
import math
from typing import Any, ClassVar

import numpy as np

from .._config_values import config_number, whole_if_integral
from .._intervals import kishes, normal_intervals, pairs, wilsons
from ..errors import InputError
from ..states.labels import config_labels
from ..uncertainty import (
    NAN_INTERVAL,
    check_level,
    no_interval,
    normal_interval,
    wilson,
)
from ._confusion_base import (
    _AVERAGES,
    _check_zero_division,
    _ConfusionMetric,
    _label_value,
    _nanaverage,
    _prf_divide,
    segment_nanaverage,
    segments,
)
from ._f_edge import RECALL_BETA2, f_edge
from ._table_stack import Summaries, delta_ses, summaries

__all__ = ["F1", "FBeta", "Precision", "Recall"]


class _PRF(_ConfusionMetric, register=False):
    """Precision, recall and F-beta exactly as scikit-learn's precision_recall_fscore_support."""

    _metric: str = "f"

    def __init__(
        self,
        *,
        beta: float | None = None,
        average: str | None = "binary",
        pos_label: Any = 1,
        labels: Any = None,
        zero_division: Any = 0.0,
    ) -> None:
        super().__init__()
        if average not in _AVERAGES:
            raise InputError(f"average: must be one of {_AVERAGES}; got {average!r}")
        if isinstance(pos_label, (np.generic,)):
            pos_label = pos_label.item()
        if isinstance(pos_label, bool):
            pos_label = int(pos_label)
        if isinstance(pos_label, float):  # 1.0, as labels 1.0 are read as 1 (scikit-learn's)
            pos_label = whole_if_integral(pos_label)
        if not isinstance(pos_label, (int, str)):
            raise InputError(
                f"pos_label: must be an int, a whole float below 2**53 or a str; got {pos_label!r}"
            )
        # Only FBeta configures beta; Precision, Recall and F1 score with beta = 1.
        if beta is not None:
            beta = config_number(beta, "beta", finite=False)
            self._add_config(beta=beta)
        self._beta = 1.0 if beta is None else float(beta)
        self._zero = _check_zero_division(zero_division)
        self._add_config(
            average=average,
            pos_label=pos_label,
            labels=config_labels(labels),
            zero_division=zero_division if isinstance(zero_division, str) else float(zero_division),
        )

    def _check_labels(self, labels: np.ndarray) -> None:
        if self._config["average"] != "binary":
            return
        if len(labels) > 2:
            raise InputError(
                f"y_true/y_pred: average='binary' needs two classes, but the labels "
                f"{labels.tolist()[:10]} have been seen; choose average='micro', 'macro', "
                "'weighted' or None"
            )
        pos = self._config["pos_label"]
        if len(labels) == 2 and pos not in labels.tolist():
            raise InputError(
                f"pos_label: {pos!r} is not a valid label; it should be one of {labels.tolist()}"
            )

    def _any_labels(self) -> bool:
        return bool(self._config["average"] != "binary")

    def _label_rule(self) -> tuple[int, Any] | None:
        return None if self._config["average"] != "binary" else (2, self._config["pos_label"])

    def _sums(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        labels = self.counts.rows
        tp, true, pred = self._margins()
        average = self._config["average"]
        if average == "binary":
            selected: list[Any] | None = [self._config["pos_label"]]
        else:
            selected = self._config["labels"]
        if selected is not None:
            index = {_label_value(v): i for i, v in enumerate(labels)}
            pick = np.array([index.get(v, -1) for v in selected], dtype=np.int64)
            found = pick >= 0
            sums = []
            for s in (tp, pred, true):
                out = np.zeros(len(pick), dtype=np.float64)
                out[found] = s[pick[found]]
                sums.append(out)
            tp, pred, true = sums
        if average == "micro":
            tp, pred, true = (np.array([s.sum()], dtype=np.float64) for s in (tp, pred, true))
        return (
            np.asarray(tp, np.float64),
            np.asarray(pred, np.float64),
            np.asarray(true, np.float64),
        )

    def _scores(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return self._scores_of(*self._sums())

    def _scores_of(
        self, tp: np.ndarray, pred: np.ndarray, true: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Precision, recall, F-beta and support of each label from its sums (elementwise)."""
        beta, zero = self._beta, self._zero
        precision = _prf_divide(tp, pred, zero)
        recall = _prf_divide(tp, true, zero)
        if beta * beta > RECALL_BETA2:  # (scores as recall: see RECALL_BETA2)
            f = recall
        elif beta == 0:
            f = precision
        else:
            b2 = beta * beta
            f = _prf_divide((1 + b2) * tp, b2 * true + pred, zero)
        return precision, recall, f, true

    def _compute(self) -> Any:
        self._check_labels(self.counts.rows)
        precision, recall, f, true = self._scores()
        value = {"precision": precision, "recall": recall, "f": f}[self._metric]
        average = self._config["average"]
        if average is None:
            return value
        return _nanaverage(value, true if average == "weighted" else None)

    def _compute_margins(
        self, tp: np.ndarray, true: np.ndarray, pred: np.ndarray, edges: list[int]
    ) -> list[Any] | None:
        average = self._config["average"]
        if average == "binary" or self._config["labels"] is not None:
            return None
        if average == "micro":
            seg = segments(edges)
            tp, true, pred = (
                np.bincount(seg, weights=x, minlength=len(edges) - 1) for x in (tp, true, pred)
            )
            edges = list(range(len(edges)))
        precision, recall, f, support = self._scores_of(tp, pred, true)
        value = {"precision": precision, "recall": recall, "f": f}[self._metric]
        if average is None:
            return [value[a:b] for a, b in itertools.pairwise(edges)]
        return segment_nanaverage(value, support if average == "weighted" else None, edges)

    def _table_values(self, sums: Summaries) -> tuple[np.ndarray, np.ndarray]:
        """``compute()`` of every table of a stack from its summaries, and where that is the
        state's own to the bit: wherever every label keeps its score (a nan, from
        ``zero_division=nan``, leaves a shorter array to average, summed in another order)."""
        diagonal, rows, cols, _ = sums
        tp, pred, true = diagonal, cols, rows
        if self._config["average"] == "micro":
            tp, pred, true = (x.sum(axis=1, keepdims=True) for x in (tp, pred, true))
        precision, recall, f, support = self._scores_of(tp, pred, true)
        value = {"precision": precision, "recall": recall, "f": f}[self._metric]
        with np.errstate(invalid="ignore", divide="ignore"):
            out = value.sum(axis=1) / value.shape[1]  # np.mean
            if self._config["average"] == "weighted":  # np.average, unless no support
                scale = support.sum(axis=1)
                out = np.where(scale == 0, out, (value * support).sum(axis=1) / scale)
        return out, ~np.isnan(value).any(axis=1)

    def _scored_by_tables(self) -> bool:
        # One value per slice, over the labels each slice has seen.
        average = self._config["average"]
        return average not in (None, "binary") and self._config["labels"] is None

    def _compute_tables(self, stack: np.ndarray) -> list[Any] | None:
        if self._config["average"] is None and self._config["labels"] is None:
            diagonal, rows, cols, _ = summaries(stack)  # one value per label: no average
            scores = self._scores_of(diagonal, cols, rows)
            value = {"precision": scores[0], "recall": scores[1], "f": scores[2]}[self._metric]
            return [row.copy() for row in value]
        if not self._scored_by_tables():
            return None
        value, exact = self._table_values(summaries(stack))
        return [v if ok else None for v, ok in zip(value.tolist(), exact.tolist(), strict=True)]

    def _interval_tables(
        self,
        stack: np.ndarray,
        count: np.ndarray,
        weight_sq: np.ndarray,
        level: float,
    ) -> list[Any] | None:
        """:meth:`interval` of many states from their tables, branch by branch as there."""
        if not self._scored_by_tables():
            return None
        g = len(stack)
        sums = summaries(stack)
        diagonal, rows, cols, total = sums
        n_eff = kishes(total, weight_sq)
        value, exact = self._table_values(sums)
        low, high = np.full(g, math.nan), np.full(g, math.nan)
        done = count == 0
        if self._config["average"] == "micro":
            tp, pred, true = (x.sum(axis=1) for x in (diagonal, cols, rows))
            if self._metric == "f":
                done |= pred + true == 0  # zero_division's value: no interval
            else:
                den = pred if self._metric == "precision" else true
                with np.errstate(invalid="ignore", divide="ignore"):
                    design = np.where(total > 0, n_eff / total, math.nan)
                    low, high = wilsons(tp * design, den * design, level)
                return pairs(low, high, done | (den == 0))
        perfect = ~done & exact & (value == 1.0)
        low[perfect], high[perfect] = 1.0, 1.0
        scored = ~done & exact & ~perfect
        se = delta_ses(stack[scored], self._vectorised(), n_eff[scored], count[scored])
        low[scored], high[scored] = normal_intervals(value[scored], se, level, (0.0, 1.0))
        answered = zip(pairs(low, high), (done | exact).tolist(), strict=True)
        return [interval if ok else None for interval, ok in answered]

    def _empty_result(self) -> Any:
        # average=None: one value per label, nan for each declared label; no label seen yet
        # without labels=, so an empty array (as ConfusionMatrix's 0x0), never a scalar.
        if self._config["average"] is None:
            return np.full(len(self._config["labels"] or ()), np.nan)
        return math.nan

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """A ``level`` confidence interval for ``compute()`` (``docs/uncertainty.md``).

        Precision and recall with ``average="binary"`` or ``"micro"`` are proportions: the
        Wilson (1927) score interval, on Kish's effective size of the denominator's rows. F-beta
        (any average) and the macro/weighted averages: the delta method over the multinomial
        confusion counts (Agresti, *Categorical Data Analysis*, sec. 16.1), normal, clipped to
        [0, 1]; binary F-beta at its edges (no true positive, or no miss), where that variance
        is 0, maps Wilson's interval of ``tp / (tp + fp + fn)`` (:func:`._f_edge.f_edge`).
        ``average=None`` gives an array, so it raises :class:`NoIntervalError`.
        O(L**2).
        """
        level = check_level(level)
        average = self._config["average"]
        if average is None:
            raise no_interval(type(self).__name__, "average=None gives one value per label")
        if self.count == 0:
            return NAN_INTERVAL
        self._check_labels(self.counts.rows)
        total = self.counts.total()
        design = self._n_eff() / total if total > 0 else math.nan
        if average in ("binary", "micro"):
            tp, pred, true = self._sums()
            if self._metric == "f":
                if float(pred[0]) + float(true[0]) == 0:
                    # No positive row and no positive prediction: the value is zero_division,
                    # a convention, not an estimate (0.8.9 gave it a zero-width interval).
                    return NAN_INTERVAL
                if average == "binary":
                    edge = f_edge(
                        float(tp[0]), float(pred[0]), float(true[0]), self._beta, design, level
                    )
                    if edge is not None:
                        return edge
            else:
                den = float((pred if self._metric == "precision" else true)[0])
                if den == 0:
                    return NAN_INTERVAL
                return wilson(float(tp[0]) * design, den * design, level)
        value = self._compute()
        if value == 1.0:
            # Every selected label scored without a miss: no filled cell moves the value, so
            # its variance is exactly 0 (the central differences leave 1e-11 of rounding).
            return (1.0, 1.0)
        se = self._delta_se(self._vectorised())
        return normal_interval(value, se, level, (0.0, 1.0))

    def _vectorised(self) -> Any:
        """``compute()`` as a function of the diagonal, row and column sums and total, each with
        a leading batch axis (for the delta method)."""
        labels = self.counts.rows
        average = self._config["average"]
        selected = [self._config["pos_label"]] if average == "binary" else self._config["labels"]
        pick: np.ndarray | None = None
        if selected is not None:
            index = {_label_value(v): i for i, v in enumerate(labels)}
            pick = np.array([index.get(v, -1) for v in selected], dtype=np.int64)
        beta, zero, metric = self._beta, self._zero, self._metric

        def take(s: np.ndarray) -> np.ndarray:
            if pick is None:
                return s
            out = np.where(pick >= 0, s[:, np.maximum(pick, 0)], 0.0)
            return out

        def divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
            safe = np.where(den == 0, 1.0, den)
            with np.errstate(over="ignore", invalid="ignore"):  # (subnormal weights)
                return np.where(den == 0, zero, num / safe)

        def f(d: np.ndarray, r: np.ndarray, c: np.ndarray, n: np.ndarray) -> np.ndarray:
            tp, pred, true = take(d), take(c), take(r)
            if average == "micro":
                tp, pred, true = (x.sum(axis=1, keepdims=True) for x in (tp, pred, true))
            if metric == "precision":
                v = divide(tp, pred)
            elif metric == "recall":
                v = divide(tp, true)
            elif beta * beta > RECALL_BETA2:
                v = divide(tp, true)
            elif beta == 0:
                v = divide(tp, pred)
            else:
                b2 = beta * beta
                v = divide((1 + b2) * tp, b2 * true + pred)
            keep = ~np.isnan(v)
            v0 = np.where(keep, v, 0.0)
            w = np.where(keep, true if average == "weighted" else 1.0, 0.0)
            wsum = w.sum(axis=1)
            plain = v0.sum(axis=1) / np.maximum(keep.sum(axis=1), 1)
            with np.errstate(invalid="ignore", divide="ignore"):
                out: np.ndarray = np.where(wsum > 0, (v0 * w).sum(axis=1) / wsum, plain)
            return out

        return f


class Precision(_PRF):
    """Precision, tp / (tp + fp), as ``sklearn.metrics.precision_score`` with the same arguments.

    ``average``: ``"binary"`` (the ``pos_label`` class), ``"micro"``, ``"macro"``,
    ``"weighted"`` (by support) or ``None`` (one value per label, in ``labels`` order or sorted).
    ``zero_division``: the value of a 0/0 ratio (0.0, 1.0 or nan; ``"warn"`` scores 0.0).
    Exact; state: the confusion matrix (O(L**2) memory).

    Examples
    --------
    >>> import streammetrics as sm
    >>> sm.Precision().update([0, 1, 1, 0], [1, 1, 0, 0]).compute()
    0.5
    """

    higher_is_better: ClassVar[bool | None] = True

    _metric = "precision"

    def __init__(
        self,
        average: str | None = "binary",
        pos_label: Any = 1,
        labels: Any = None,
        zero_division: Any = 0.0,
    ) -> None:
        super().__init__(
            average=average, pos_label=pos_label, labels=labels, zero_division=zero_division
        )


class Recall(_PRF):
    """Recall, tp / (tp + fn), as ``sklearn.metrics.recall_score`` with the same arguments.

    Arguments as :class:`Precision`. Exact; state: the confusion matrix.

    Examples
    --------
    >>> import streammetrics as sm
    >>> sm.Recall(average="macro").update([0, 1, 2, 2], [0, 2, 2, 2]).compute()
    0.6666666666666666
    """

    higher_is_better: ClassVar[bool | None] = True

    _metric = "recall"

    def __init__(
        self,
        average: str | None = "binary",
        pos_label: Any = 1,
        labels: Any = None,
        zero_division: Any = 0.0,
    ) -> None:
        super().__init__(
            average=average, pos_label=pos_label, labels=labels, zero_division=zero_division
        )


class FBeta(_PRF):
    """F-beta, (1 + b^2) tp / ((1 + b^2) tp + b^2 fn + fp), as ``sklearn.metrics.fbeta_score``.

    ``beta`` weighs recall ``beta`` times as much as precision; other arguments as
    :class:`Precision`. Exact; state: the confusion matrix.

    Examples
    --------
    >>> import streammetrics as sm
    >>> round(sm.FBeta(beta=2.0).update([0, 1, 1, 1], [1, 1, 0, 1]).compute(), 6)
    0.666667
    """

    higher_is_better: ClassVar[bool | None] = True

    def __init__(
        self,
        beta: float,
        average: str | None = "binary",
        pos_label: Any = 1,
        labels: Any = None,
        zero_division: Any = 0.0,
    ) -> None:
        if beta is None:  # (the shared base reads None as "not FBeta": beta = 1, not kept)
            raise InputError("beta: must be a number; got None (F1 is FBeta with beta=1)")
        super().__init__(
            beta=beta,
            average=average,
            pos_label=pos_label,
            labels=labels,
            zero_division=zero_division,
        )


class F1(_PRF):
    """F1, the harmonic mean of precision and recall, as ``sklearn.metrics.f1_score``.

    Arguments as :class:`Precision`. Exact; state: the confusion matrix.

    Examples
    --------
    >>> import streammetrics as sm
    >>> sm.F1(average="micro").update([0, 1, 2], [0, 2, 2]).compute()
    0.6666666666666666
    """

    higher_is_better: ClassVar[bool | None] = True

    def __init__(
        self,
        average: str | None = "binary",
        pos_label: Any = 1,
        labels: Any = None,
        zero_division: Any = 0.0,
    ) -> None:
        super().__init__(
            average=average,
            pos_label=pos_label,
            labels=labels,
            zero_division=zero_division,
        )
