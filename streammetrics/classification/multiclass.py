"""``MulticlassROCAUC``: one-vs-rest ROC AUC of a probability matrix, from one score table per
class."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .._codec import check_sum
from .._input_labels import as_labels
from .._inputs import as_array, as_matrix, as_weights, check_same_length, one_sample_row
from ..base import Metric
from ..errors import InputError
from ..states.buckets import ScoreBuckets
from ..states.mappings import DEFAULT_RESOLUTION, mapping_for
from ..states.score_columns import ScoreColumns
from ..states.score_tables import auc_from_table
from ..uncertainty import (
    NAN_INTERVAL,
    check_level,
    delong,
    no_interval,
    normal_interval,
    normal_quantile,
)
from ._checks import (
    check_exact_probabilities,
    check_mode,
    checked_scores,
    class_columns,
    column_labels,
)
from ._multiclass_rows import trusted_row

__all__ = ["MulticlassROCAUC"]


class MulticlassROCAUC(Metric):
    """One-vs-rest ROC AUC of a probability matrix, as ``roc_auc_score(y_true, y_prob,
    multi_class="ovr", average=...)``.

    Parameters
    ----------
    average : {"macro", "weighted", "micro", None}
        Mean of the per-class AUCs, weighted by each class's (weighted) support, the AUC of the
        flattened one-hot problem, or the per-class array.
    exact, score_type, resolution
        As :class:`ROCAUC`; one score store per class column.
    labels : list, optional
        The class of each column, sorted. Without it, ``y_true`` holds column indices
        ``0 .. C-1``.

    Notes
    -----
    Unlike scikit-learn, rows need not sum to 1 (nothing is checked). A class with no positives
    or no negatives scores ``nan`` (so does a macro mean over it). ``error_bound()`` is the
    matching average of the per-class bounds (a bound on the average's error). Memory: C
    score stores. ``update`` O(n C); ``compute`` O(C buckets).

    Examples
    --------
    >>> import streammetrics as sm
    >>> m = sm.MulticlassROCAUC(exact=True)
    >>> rows = [[0.8, 0.1, 0.1], [0.3, 0.6, 0.1], [0.2, 0.2, 0.6], [0.5, 0.1, 0.4], [0.2, 0.3, 0.5]]
    >>> _ = m.update([0, 1, 2, 2, 1], rows)
    >>> round(m.compute(), 6)
    0.944444
    """

    #: Sample weights are read as counts (a row of weight 2 is two rows): ``Decayed`` scales
    #: them to Kish's effective size before asking for an interval.
    _weights_are_counts: ClassVar[bool] = True

    higher_is_better: ClassVar[bool | None] = True

    def __init__(
        self,
        average: str | None = "macro",
        exact: bool = False,
        score_type: str = "probability",
        resolution: int = DEFAULT_RESOLUTION,
        labels: Any = None,
    ) -> None:
        super().__init__()
        exact, score_type, resolution = check_mode(exact, score_type, resolution)
        if average not in ("macro", "weighted", "micro", None):
            raise InputError(
                f"average: must be 'macro', 'weighted', 'micro' or None; got {average!r}"
            )
        fixed = column_labels(labels)
        self._add_config(
            average=average, exact=exact, score_type=score_type, resolution=resolution, labels=fixed
        )
        self._mapping = None if exact else mapping_for(score_type, resolution)
        self._add_state("columns", ScoreColumns(self._mapping), merge=None)

    columns: ScoreColumns

    def update(self, y_true: Any, y_prob_matrix: Any, sample_weight: Any = None) -> Any:
        """Add a batch of (class, score row) pairs. Complexity O(n C).

        ``y_prob_matrix``: one row of class scores per sample, one column per class (named as
        the design contract names it; 0.8.9 called it ``y_prob``)."""
        y = as_labels(y_true, "y_true")
        name = "y_prob_matrix"
        x = as_matrix(one_sample_row(y_true, as_array(y_prob_matrix, name)), name)
        n = check_same_length(y_true=y, y_prob_matrix=x)
        w = as_weights(sample_weight, n)
        if n == 0:
            return self
        k = x.shape[1]
        codes = class_columns(y, k, self._config["labels"])
        if self.columns and len(self.columns) != k:
            raise InputError(f"{name}: has {k} columns, earlier batches had {len(self.columns)}")
        if self._config["score_type"] == "probability":
            checked_scores(x.reshape(-1), "probability", name)
        new = self.columns.added(x, codes, w)
        self._check_pooled("y_true", list(new))
        return self._commit(n, columns=new)

    def _take_row(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Buffer one sample given as a scalar label and its row of class probabilities (a list,
        tuple or 1-D float array), when the checks of :meth:`update` certainly pass it
        (:func:`~streammetrics.classification._multiclass_rows.trusted_row`); the buffer is
        folded by one ordinary update before any read. False, with nothing changed, for any
        other call (then ``update`` takes it). Lock held."""
        pending = self._pending
        columns = (self.__dict__ if pending is None else pending.stash)["columns"]
        k = len(columns)
        row = trusted_row(args, kwargs, self._config, k)
        if row is None:
            return False
        # "micro" pools every class's table: k columns count each row k times.
        pooled = k if self._config["average"] == "micro" else 1
        weight = row[2] if len(row) == 3 else None
        if not self._room_for(weight, pooled, lambda: max(float(self._count), self._held_total())):
            return False  # (near the bound, or a heavy weight: the ordinary update checks it)
        self._push((row, len(row) == 3))
        return True

    def _check_pooled(self, what: str, columns: list[ScoreBuckets]) -> None:
        """``"micro"`` pools every class's table (each holds every row): the pooled counts
        must stay within their bound too."""
        if self._config["average"] == "micro" and columns:
            kind = "f" if any(c.weighted for c in columns) else "i"
            check_sum(what, kind, *(c.held_total() for c in columns))

    def _check_compatible(self, other: Any) -> None:
        super()._check_compatible(other)
        if self._config["average"] == "micro" and self.columns and other.columns:
            self._check_pooled("pooled classes", [*self.columns, *other.columns])

    def _check_compatible_together(self, others: tuple[Any, ...]) -> None:
        super()._check_compatible_together(others)
        pooled = [c for m in (self, *others) for c in m.columns]
        self._check_pooled("pooled classes", pooled)

    def _validate_state(self) -> None:
        """Decoding: the columns match the labels and the count, and hold valid scores."""
        columns, count = self.columns, self._count
        labels = self._config["labels"]
        if labels is not None and columns and len(columns) != len(labels):
            raise ValueError("the columns differ from the labels")
        if (count == 0) != (not columns):
            raise ValueError("count and columns disagree")
        self._check_pooled("pooled classes", list(columns))
        if self._mapping is None and self._config["score_type"] == "probability":
            for c in columns:
                check_exact_probabilities(c.keys)
        if columns and not any(c.weighted for c in columns):
            # Unweighted rows: each counts once in every column, positive in exactly one.
            totals = [c.totals() for c in columns]
            if any(p + n != count for p, n in totals) or sum(p for p, _ in totals) != count:
                raise ValueError(f"the columns' counts do not add up to count {count}")

    def _per_class(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        values, bounds, support = [], [], []
        for c in self.columns:
            v, b = auc_from_table(c.lo, c.hi, c.pos, c.neg)
            values.append(v)
            bounds.append(0.0 if c.exact else b)
            support.append(c.totals()[0])
        return np.array(values), np.array(bounds), np.array(support)

    def _result(self) -> tuple[Any, Any]:
        average = self._config["average"]
        if average == "micro":
            pooled = self.columns[0]
            for c in self.columns.stores[1:]:
                pooled = pooled.merged(c)
            v, b = auc_from_table(pooled.lo, pooled.hi, pooled.pos, pooled.neg)
            return v, 0.0 if pooled.exact else b
        values, bounds, support = self._per_class()
        if average is None:
            return values, bounds
        if average == "weighted":
            # A class without positives weighs 0: it adds nothing (as scikit-learn, which
            # zeroes such a class's nan), where np.average would spread its nan.
            seen = support > 0
            if not seen.any():
                return math.nan, math.nan
            return (
                float(np.average(values[seen], weights=support[seen])),
                float(np.average(bounds[seen], weights=support[seen])),
            )
        return float(np.mean(values)), float(np.mean(bounds))

    def _empty_result(self) -> Any:
        # Per class: nan for each declared label (as F1(average=None, labels=...)), else none.
        if self._config["average"] is None:
            return np.full(len(self._config["labels"] or ()), np.nan)
        return math.nan

    def _compute(self) -> Any:
        return self._result()[0]

    def error_bound(self) -> Any:
        """A certified bound on the error of ``compute()`` (per class when ``average=None``)."""
        if self.count == 0:
            return self._empty_result()
        return self._result()[1]

    def interval(self, level: float = 0.95) -> Any:
        """DeLong intervals per class, and a conservative interval of their average.

        Each one-vs-rest AUC ``A_j`` gets DeLong's variance ``V_j`` from its own score table
        (as :meth:`ROCAUC.interval`; ties 1/2, weights as frequencies). ``average=None`` gives
        the per-class intervals as two arrays ``(low, high)``. The covariances between classes
        are not in the state (they need each row's placement in every class's table, and a
        score table does not keep which entries share a row), so ``"macro"`` and
        ``"weighted"`` bound the standard error of ``sum a_j A_j`` by ``sum a_j sqrt(V_j)``
        (the covariance inequality ``|Cov(A_j, A_k)| <= sqrt(V_j V_k)``, i.e. all classes
        perfectly correlated; the class supports taken as fixed): a valid but conservative
        interval, wider than the true one when the classes' errors are not perfectly
        correlated. ``"micro"`` pools the tables, whose entries are then not independent (each
        row appears in every class), so it raises :class:`NoIntervalError`. Sketch mode widens
        by ``error_bound()``; clipped to [0, 1]; ``nan`` where a class lacks two positives or
        two negatives. O(C buckets).
        """
        level = check_level(level)
        average = self._config["average"]
        if average == "micro":
            raise no_interval(
                "MulticlassROCAUC",
                "average='micro' pools the tables, counting each row once per class, so its "
                "entries are not independent and the table does not say which share a row",
            )
        if self.count == 0:
            empty = self._empty_result()
            return (empty, empty.copy()) if average is None else NAN_INTERVAL
        values, bounds, support = self._per_class()
        se = np.array([math.sqrt(max(delong(c.pos, c.neg)[1], 0.0)) for c in self.columns])
        if average is None:
            z = normal_quantile(level)
            half = z * se + bounds
            return np.clip(values - half, 0.0, 1.0), np.clip(values + half, 0.0, 1.0)
        weights = support if average == "weighted" else np.ones(len(values))
        if average == "weighted":  # classes without positives weigh 0 (as in compute)
            values, se, bounds, weights = (a[support > 0] for a in (values, se, bounds, weights))
        if not weights.sum() > 0:
            return NAN_INTERVAL
        share = weights / weights.sum()
        value = float(share @ values)
        return normal_interval(value, float(share @ se), level, (0.0, 1.0), float(share @ bounds))
