"""Top-k accuracy: whether the true class is among the ``k`` highest of a row's class scores.

A matrix of class scores per row, not a pair of labels: its state is two sums (rows whose
true class ranks in the top ``k``, and all rows), not a confusion matrix.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .._codec import WEIGHT_LIMIT, check_sum
from .._config_values import config_int
from .._input_labels import as_labels
from .._inputs import as_array, as_scores, as_weights, check_same_length
from .._row_checks import _INT_TYPES, BOOL_TYPES, real_row, weight_keyword
from .._warn import warn
from ..base import Metric
from ..errors import InputError, UndefinedMetricWarning
from ..uncertainty import NAN_INTERVAL, check_level, check_weight_sq, kish, wilson

__all__ = ["TopKAccuracy"]


def _top_k_row(args: tuple[Any, ...], kwargs: dict[str, Any], k: int) -> tuple[Any, ...] | None:
    """``(hit[, weight])`` for ``update(*args, **kwargs)`` when it is one sample that
    :meth:`TopKAccuracy.update` certainly accepts: a label (an int, not a bool) that indexes a
    row of scores finite as float64 (a list or tuple of Python or numpy reals, not bools, or a
    1-D float or integer array), and no weight or one that passes (:func:`weight_keyword`).
    None for any other call. Scores are compared as float64, as ``update`` reads them (two
    integers above 2**53 may tie there). A hit as ``update`` counts it: fewer than ``k``
    scores rank ahead of the true class's, a tie ranking the higher column ahead
    (scikit-learn's stable sort)."""
    if len(args) != 2:
        return None
    ok, weight = weight_keyword(kwargs)
    if not ok:
        return None
    y, row = args
    if type(y) not in _INT_TYPES or type(y) in BOOL_TYPES:
        return None
    t = type(row)
    if t is np.ndarray:  # compared as float64, as update reads every score
        if row.ndim != 1 or row.dtype.kind not in "iuf" or row.dtype.itemsize > 8:
            return None
        scores = row.astype(np.float64, copy=False)
        if not 0 <= y < len(scores) or not np.isfinite(scores).all():
            return None
        true = scores[y]
        ahead = int(np.count_nonzero(scores > true)) + int(
            np.count_nonzero(scores[y + 1 :] == true)
        )
    elif t is list or t is tuple:
        values = real_row(row)
        if values is None or not 0 <= y < len(values) or not all(map(math.isfinite, values)):
            return None
        true = values[y]
        ahead = 0
        for j, v in enumerate(values):
            if v > true or (v == true and j > y):
                ahead += 1
    else:
        return None
    if len(row) <= k:
        return None  # every row a hit: update warns (UndefinedMetricWarning)
    hit = int(ahead < k)
    return (hit,) if weight is None else (hit, weight)


def _warn_every_hit(k: int, n_classes: int) -> None:
    """Warn, as ``top_k_accuracy_score`` does, that ``k`` leaves no row out."""
    warn(
        f"TopKAccuracy: k ({k}) is at least the number of classes ({n_classes}), so every row "
        "is a hit and the value (1.0) is meaningless",
        UndefinedMetricWarning,
    )


class TopKAccuracy(Metric):
    """Fraction of samples whose true class is among the ``k`` highest scores.

    As ``sklearn.metrics.top_k_accuracy_score`` with ``labels=range(n_classes)``: ``y_true``
    holds column indices of ``y_score_matrix`` (shape (n, n_classes)); ties are broken as
    scikit-learn's stable sort breaks them (among equal scores the higher column ranks first).
    State: two sums. Exact.

    Examples
    --------
    >>> import streammetrics as sm
    >>> scores = [[0.5, 0.2, 0.3], [0.3, 0.4, 0.3], [0.2, 0.4, 0.4]]
    >>> sm.TopKAccuracy(k=2).update([0, 1, 0], scores).compute()
    0.6666666666666666
    """

    higher_is_better: ClassVar[bool | None] = True
    #: ``TopKAccuracy(3)``, as the API shows it (``streammetrics._configs.keyword_config``).
    _positional_config: ClassVar[int] = 1

    #: 2: the state gained ``weight_sq`` (sum of squared weights, for Kish's effective size).
    _schema: ClassVar[int] = 2

    hits: float
    total: float
    weight_sq: float

    def __init__(self, k: int = 2) -> None:
        super().__init__()
        self._add_config(k=config_int(k, "k"))
        self._add_state("hits", 0.0)
        self._add_state("total", 0.0)
        self._add_state("weight_sq", 0.0, power=2)

    def update(self, y_true: Any, y_score_matrix: Any, sample_weight: Any = None) -> TopKAccuracy:
        """Score a batch. Complexity: O(n * n_classes)."""
        yt = as_labels(y_true, "y_true")
        raw = as_array(y_score_matrix, "y_score_matrix")
        if raw.ndim == 1 and raw.size == 0:
            raw = raw.reshape(0, 0)
        elif raw.ndim == 1 and np.ndim(y_true) == 0:
            raw = raw.reshape(1, -1)  # one sample: a scalar label and its row of scores
        scores = as_scores(raw, "y_score_matrix", ndim=2)
        n = check_same_length(y_true=yt, y_score_matrix=scores)
        weights = as_weights(sample_weight, n)
        if n == 0:
            return self
        n_classes = scores.shape[1]
        if yt.dtype.kind != "i" or yt.min() < 0 or yt.max() >= n_classes:
            raise InputError(
                f"y_true: must hold column indices of y_score_matrix, 0 to {n_classes - 1}"
            )
        if n_classes <= self._config["k"]:
            _warn_every_hit(self._config["k"], n_classes)
        true_score = scores[np.arange(n), yt][:, None]
        cols = np.arange(n_classes)[None, :]
        ahead = (scores > true_score) | ((scores == true_score) & (cols > yt[:, None]))
        hit = ahead.sum(axis=1) < self._config["k"]
        if weights is None:
            hits, total = float(hit.sum()), float(n)
        else:
            hits, total = float(weights[hit].sum()), float(weights.sum())
        check_sum("sample_weight", "f", self.total, total)  # (first: past it, w @ w overflows)
        sq = float(n) if weights is None else float(weights @ weights)
        return self._commit(
            n, hits=self.hits + hits, total=self.total + total, weight_sq=self.weight_sq + sq
        )

    # -- one sample per call ---------------------------------------------------------------

    def _take_row(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Take one sample (a scalar label and its row of class scores) that :meth:`update`
        certainly accepts: whether it is a hit is decided now, and the hit (with its weight)
        waits in the buffer, folded into the two sums before any read. False, with nothing
        changed, for any other call (the ordinary ``update`` takes it, and words its errors).
        15 µs a call on the ordinary path in 0.8.11 (a batch of one row). Lock held."""
        row = _top_k_row(args, kwargs, self._config["k"])
        if row is None:
            return False
        weight = row[1] if len(row) == 2 else None
        if not self._room_for(weight, 1.0, lambda: max(float(self._count), self.total)):
            return False
        self._push((row, weight is not None))
        return True

    def _fold_rows(self, hit: np.ndarray, sample_weight: Any = None) -> None:
        """Fold the hits :meth:`_take_row` buffered (one 0/1 per row), as ``update`` adds a
        batch's."""
        n = len(hit)
        hit = hit.astype(bool)
        if sample_weight is None:
            hits, total, sq = float(hit.sum()), float(n), float(n)
        else:
            w = np.asarray(sample_weight, dtype=np.float64)
            hits, total, sq = float(w[hit].sum()), float(w.sum()), float(w @ w)
        self._commit(
            n, hits=self.hits + hits, total=self.total + total, weight_sq=self.weight_sq + sq
        )

    def _compute(self) -> float:
        return self.hits / self.total if self.total else math.nan

    def _check_compatible(self, other: Any) -> None:
        super()._check_compatible(other)
        check_sum("total", "f", self.total, other.total)

    def _held_total(self) -> float:
        return max(super()._held_total(), self.total)

    def _validate_state(self) -> None:
        """The weights total at most ``WEIGHT_LIMIT`` (2**100) and the hits lie within it."""
        if not 0 <= self.total <= WEIGHT_LIMIT:
            raise ValueError("total must be a non-negative weight of at most 2**100")
        if not 0 <= self.hits <= self.total * (1 + 1e-9):
            raise ValueError("hits must lie between 0 and the total")
        # (Cauchy-Schwarz, as every weighted state: 0.8.14 took a forged weight_sq of 1e-300
        # beside unit weights, and gave an interval of width 0)
        check_weight_sq(self.weight_sq, self.total, self.count)
        if self.count == 0 and self.total != 0:
            raise ValueError("an empty state holds no weight")

    @classmethod
    def _upgrade_state(cls, state: Any, schema: int) -> Any:
        """Schema 1 (0.1.0) kept no ``weight_sq``: unknown (nan) for a non-empty state, so
        ``interval`` is nan; the value and merges are unchanged."""
        if schema < 2 and isinstance(state, dict) and "weight_sq" not in state:
            state = {**state, "weight_sq": 0.0 if state.get("count") == 0 else math.nan}
        return state

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Wilson (1927) score interval of the top-k hit rate, on Kish's effective sample size.
        O(1)."""
        level = check_level(level)
        if self.count == 0 or not self.total > 0:
            return NAN_INTERVAL
        n_eff = kish(self.total, self.weight_sq)
        return wilson(self.hits / self.total * n_eff, n_eff, level)
