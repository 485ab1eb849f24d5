"""The shared state and update of the internal clustering indices: per-cluster moments, a
bounded per-cluster sample, and the distances between points and centres.

Nothing overflows silently: ``centers`` and, for the indices that keep a sample of rows, rows
``X`` must lie within 2**200 in magnitude (``InputError`` naming the argument, the state
unchanged), so every squared distance stays inside float64; without a sample, a batch that
would take the moments past the bounds of
:class:`~streammetrics.states.centroids.ClusterMoments` is refused the same way (rows within
2**200 always fit). A decoded state is held to the same bounds.

The indices are computed from this state in :mod:`streammetrics.clustering._indices`, the
distances in :mod:`streammetrics.clustering._distances`."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from .._input_labels import as_labels
from .._inputs import as_array, as_matrix, check_same_length, one_sample_row
from ..base import Metric
from ..errors import IncompatibleStateError, InputError
from ..states.centroids import ClusterMoments
from ..states.labels import codes_in, config_labels
from ..states.samples import BottomKSample, Legacy
from ._distances import _check_distance, _to_centres, unit_rows
from ._indices import _Indices
from ._rows import VALUE_LIMIT, held_far_from_bounds, trusted_row


def _check_range(arr: np.ndarray, name: str) -> None:
    """InputError unless every value is within +-VALUE_LIMIT (two reductions, no copy)."""
    if arr.size and not (arr.max() <= VALUE_LIMIT and arr.min() >= -VALUE_LIMIT):
        raise InputError(
            f"{name}: values must be within +-2**200 (about 1.6e60); their squared distances "
            "would overflow float64"
        )


class _Geometry(_Indices, Metric, register=False):
    """Shared state and update of the internal indices (their computation: :class:`_Indices`)."""

    moments: ClusterMoments
    sample: BottomKSample

    _uses_sample = True
    #: 2 (0.8.6): the moments keep each mean as two float64 parts (``means_lo``).
    #: 3 (0.8.17): the sample keeps each distinct row once, with its count (``mult``).
    _schema: ClassVar[int] = 3

    @classmethod
    def _upgrade_state(cls, state: Any, schema: int) -> Any:
        """Schema 1 (0.1.0 to 0.8.5) kept each mean as one float64: its low part is 0.
        Schemas 1 and 2 (to 0.8.16) kept copies of a row side by side in the sample: it is
        read as that form (:class:`~streammetrics.states.samples.Legacy`), each run of copies
        becoming one row with its count."""
        if not isinstance(state, dict):
            return state
        moments = state.get("moments")
        if schema < 2 and isinstance(moments, dict) and "means_lo" not in moments:
            means = moments.get("means")
            if isinstance(means, np.ndarray):
                low = np.zeros(means.shape, dtype=np.float64)
                state = {**state, "moments": {**moments, "means_lo": low}}
        if schema < 3 and "sample" in state:
            state = {**state, "sample": Legacy(state["sample"])}
        return state

    #: The arguments a class takes and keeps in its config (the internal indices take fewer:
    #: ``CalinskiHarabasz`` only ``distance``). A class attribute, not a keyword of ``__init__``
    #: (0.8.9's ``_options`` showed in every public signature).
    _config_options: ClassVar[tuple[str, ...]] = (
        "distance",
        "centers",
        "center_labels",
        "sample_size",
    )

    def __init__(
        self,
        distance: str = "euclidean",
        centers: Any = None,
        center_labels: Any = None,
        sample_size: int = 1024,
    ) -> None:
        super().__init__()
        distance = _check_distance(distance)
        if (
            isinstance(sample_size, bool)
            or not isinstance(sample_size, (int, np.integer))
            or (sample_size < 2)
        ):
            raise InputError(f"sample_size: must be an integer of at least 2; got {sample_size!r}")
        self._centers: np.ndarray | None = None
        self._center_keys: np.ndarray | None = None
        stored_centers: np.ndarray | None = None
        keys: list[Any] | None = None
        if centers is not None:
            stored_centers = as_matrix(centers, "centers")
            _check_range(stored_centers, "centers")
            if stored_centers.shape[0] == 0 or stored_centers.shape[1] == 0:
                raise InputError("centers: must hold at least one centre of at least one column")
            if distance == "cosine" and unit_rows(stored_centers)[1].any():
                raise InputError("centers: a zero centre has no cosine distance")
            keys = config_labels(center_labels, "center_labels")
            if keys is None:
                labels = np.arange(len(stored_centers), dtype=np.int64)
            else:
                labels = np.asarray(keys)
                if len(labels) != len(stored_centers):
                    raise InputError(
                        f"center_labels: {len(labels)} labels for {len(stored_centers)} centres"
                    )
            order = np.argsort(labels, kind="stable")
            self._center_keys, self._centers = labels[order], stored_centers[order]
        elif center_labels is not None:
            raise InputError("center_labels: given without centers")
        # Centres travel in the config as plain lists of floats (comparable with ==).
        listed = None if stored_centers is None else stored_centers.tolist()
        values = {
            "distance": distance,
            "centers": listed,
            "center_labels": keys,
            "sample_size": int(sample_size),
        }
        self._add_config(**{k: values[k] for k in type(self)._config_options})
        self._distance = distance
        self._add_state(
            "moments", ClusterMoments(n_extra=1 if centers is not None else 0), merge=None
        )
        if self._uses_sample:
            self._add_state("sample", BottomKSample(int(sample_size)), merge=None)

    # -- update ------------------------------------------------------------------------------

    def update(self, X: Any, labels: Any) -> Any:
        """Add a batch of rows ``X`` (shape (n, d)) with their cluster ``labels`` (n,).

        One sample may be given as its row (1-D, d > 1 values) beside a scalar label, as
        ``MulticlassROCAUC`` and ``TopKAccuracy`` take one (0.8.11 read that row as d rows of
        one column, refused beside one label).

        Complexity: O(n * d) plus O(n log n) to group the rows by cluster and pick the sample.
        """
        x = as_matrix(one_sample_row(labels, as_array(X, "X")), "X")
        lab = as_labels(labels, "labels")
        n = check_same_length(X=x, labels=lab)
        if n == 0:
            return self
        d = x.shape[1]
        if d == 0:
            raise InputError("X: rows need at least one column")
        if self.moments.dim and d != self.moments.dim:
            raise InputError(f"X: has {d} columns, earlier batches had {self.moments.dim}")
        if self._uses_sample:
            # Every row may be sampled, and pairwise distances of rows past 2**200 overflow.
            _check_range(x, "X")
        with np.errstate(over="ignore", invalid="ignore"):
            # Without a sample, rows too large for the moments overflow to inf or nan here,
            # silently: the bounds the merged block is checked against refuse them.
            moments = self._moments_of(x, lab, d)
        if not self._uses_sample:
            return self._commit(n, moments=moments)
        sample = self.sample.merged(self.sample.batch(lab, x, "labels"))
        return self._commit(n, moments=moments, sample=sample)

    def _take_row(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Buffer one sample (its row and a scalar label) when ``update`` certainly accepts it
        (:func:`~streammetrics.clustering._rows.trusted_row`); the buffer is folded by one
        ordinary update before any read. False, with nothing changed, for any other call.
        Lock held."""
        pending = self._pending
        moments = (self.__dict__ if pending is None else pending.stash)["moments"]
        if not len(moments.keys):
            return False
        if pending is None and not held_far_from_bounds(moments):
            return False  # (a decoded state near its bounds: the ordinary update checks them)
        kind = "str" if moments.keys.dtype.kind == "U" else "int"
        centres = self._center_set
        row = trusted_row(args, kwargs, moments.dim, kind, centres, self._distance == "cosine")
        if row is None or not self._room_for(None, 1.0, lambda: float(self._count)):
            return False
        self._push((row, False))
        return True

    @property
    def _center_set(self) -> frozenset[Any] | None:
        """The ``center_labels`` (or centre numbers) as a set, for :meth:`_take_row`."""
        if self._center_keys is None:
            return None
        found = self.__dict__.get("_center_keys_set")
        if found is None:
            found = self.__dict__["_center_keys_set"] = frozenset(self._center_keys.tolist())
        return found

    def _moments_of(self, x: np.ndarray, lab: np.ndarray, d: int) -> ClusterMoments:
        """The moments with the rows of one batch; ``InputError`` naming ``X`` if they would
        pass the bounds."""
        extra = None
        if self._centers is not None:
            assert self._center_keys is not None
            if d != self._centers.shape[1]:
                raise InputError(f"X: has {d} columns, the centers have {self._centers.shape[1]}")
            codes = codes_in(self._center_keys, lab, "labels")
            extra = _to_centres(x, self._centers[codes], self._distance)[:, None]
        points = x
        if self._distance == "cosine":
            if not np.isfinite(np.einsum("ij,ij->i", x, x)).all():  # unit rows of zeros
                _check_range(x, "X")  # would be silently wrong
            points, zero = unit_rows(x)
            if zero.any():
                bad = int(np.flatnonzero(zero)[0])
                raise InputError(
                    f"X: row {bad} is all zeros; the cosine distance needs non-zero rows"
                )
        try:
            return self.moments.merged(self.moments.batch(lab, points, extra, "labels"))
        except IncompatibleStateError as exc:
            _check_range(x, "X")  # names the rows past 2**200, if some are
            # Else a decoded state near its bounds: rows within 2**200 cannot pass them.
            raise InputError(
                f"X: the batch would take the state past its bounds ({exc}); refused, the "
                "state is unchanged"
            ) from None

    def _validate_state(self) -> None:
        m = self.moments
        if m.total() != self._count:
            raise ValueError("the cluster sizes do not add up to count")
        if self._centers is not None:
            assert self._center_keys is not None
            if len(m.keys) and m.dim != self._centers.shape[1]:
                raise ValueError("the rows and the centers differ in width")
            codes_in(self._center_keys, m.keys, "labels")
            if m.extra.size and m.extra.min() < 0:
                raise ValueError("sums of distances must be non-negative")
        if self._uses_sample:
            s = self.sample
            if not (np.array_equal(s.keys, m.keys) and np.array_equal(s.seen, m.counts)):
                raise ValueError("the sample and the moments disagree on the clusters")
            if len(m.keys) and s.dim != m.dim:
                raise ValueError("the sample and the moments differ in width")
            rows = s.rows
            if rows.size and not (np.abs(rows).max() <= VALUE_LIMIT):
                raise ValueError("a sampled row is past the bound 2**200")
