"""``Bootstrap``: a mergeable Poisson bootstrap of any metric that takes ``sample_weight`` (or
whose rows are independent units it may repeat: the external clustering indices, BLEU, chrF).

The classic bootstrap resamples the whole data set; a stream cannot. The Poisson bootstrap
(Hanley and MacGibbon 2006; Chamandy, Muralidharan, Najmi and Naik 2012, "Estimating
uncertainty for massive data streams") gives each row an independent Poisson(1) weight in each
replicate instead: a multinomial resample of ``n`` rows has Binomial(n, 1/n) -> Poisson(1)
counts, so every replicate is one ordinary weighted update of the wrapped metric and the
replicates merge like the metric does.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .._codec import COUNT_LIMIT, WEIGHT_LIMIT, check_sum
from .._config_values import config_int
from .._inputs import as_weights
from ..base import Metric, metric_from_spec, metric_spec
from ..errors import IncompatibleStateError, InputError, NoIntervalError
from ..states.stacked import blanks, stacked_batch
from ..uncertainty import check_level
from ._bootstrap_admission import instead, is_wrapper, takes_weights
from ._bootstrap_ids import id_hashes
from ._bootstrap_rows import held_total, position_hash, row_columns
from ._poisson import SCHEMES, poisson_rows, position_hashes
from ._rows import Rows, batch_length, column_names, template, weight_by_keyword
from ._slice_table import SliceTable

__all__ = ["MAX_REPLICATES", "Bootstrap", "poisson_weights"]

#: The most replicates a Bootstrap keeps (each is a state of the wrapped metric; percentile
#: intervals settle within a few thousand).
MAX_REPLICATES = 100_000


def poisson_weights(hashes: np.ndarray, seed: int, replicates: int, scheme: int = 2) -> np.ndarray:
    """``(replicates, n)`` Poisson(1) counts (uint8), each a pure function of (seed, r, hash).

    A counter-based generator (``streammetrics.wrappers._poisson``): the row's 64-bit hash is
    mixed (splitmix64) with a key drawn from ``seed`` per replicate (``scheme=1``, 0.2.0) or per
    pair of replicates, each half of the mix serving one (``scheme=2``, the default); the
    uniform becomes a Poisson(1) count by the inverse distribution function.
    """
    out: np.ndarray = poisson_rows(hashes, seed, replicates, scheme).T
    return out


class Bootstrap(Metric):
    """A metric with a Poisson-bootstrap confidence interval, mergeable like the metric.

    Keeps the wrapped metric over the real rows (``compute()`` is its value, with the real
    ``sample_weight``) and ``replicates`` copies in which every row weighs an independent
    Poisson(1) count times its sample weight (Hanley and MacGibbon 2006; Chamandy et al. 2012).
    ``interval(level)`` is the percentile interval of the replicate values (Efron's percentile
    method: the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles), chosen because it needs
    no variance formula, respects the metric's range (an AUC interval stays in [0, 1]) and is
    invariant under monotone transforms; ``std_error()`` is the replicates' standard deviation.

    **Weights.** With ``ids=`` (one integer or string per row, e.g. a request id) each row's
    weight in replicate ``r`` is a pure function of ``(seed, r, id)``: a splitmix64 mix of a
    64-bit hash of the id with a per-replicate key, turned into a uniform and then into a
    Poisson(1) count by the inverse distribution function. Any split of a stream over shards,
    merged in any order, then gives the same state byte for byte (for counting metrics). Without
    ``ids`` a row's "id" is its position in this instance's stream (``0, 1, 2, ...``; the
    position reached is the ``drawn`` state field, so ``to_bytes``/``loads`` carries the
    generator on exactly): statistically valid for one stream, but not split-invariant, and two
    shards of one seed reuse the same weights, so give sharded streams ``ids``.

    **Metrics without weights.** A metric whose ``update`` takes no ``sample_weight`` but
    whose class sets ``bootstrap_by_rows`` (the external clustering indices, ``BLEU``,
    ``CHRF``: rows or sentences are independent units) gets, in replicate ``r``, each row
    repeated by its Poisson count: the classic resampling bootstrap, with the same counts, so
    ``ids=`` still makes shards merge byte for byte. One update per replicate; a replicate's
    ``count`` is its number of drawn rows.

    **Weight schemes.** ``scheme=2`` (the default) mixes once per pair of replicates and reads
    a 32-bit uniform from each half; ``scheme=1`` is 0.2.0's (one mix per replicate, 64-bit
    uniforms). A state keeps its scheme for life: 0.2.0 blobs (no ``scheme`` in their config)
    load as scheme 1, write the same bytes and keep drawing scheme 1; states of two schemes
    refuse to merge (``docs/bootstrap.md``).

    **Cost.** One batch costs the ``(n, replicates)`` weights (about seven vectorised uint64
    operations per pair of weights, drawn in blocks of 4 Mi so the scratch stays under 32 MiB)
    and then, for metrics whose state is a weighted count table of per-row cells (confusion
    counts, score buckets on a grid), one stacked fold of every replicate: the rows sorted by
    cell, one ``np.add.reduceat`` over (rows, replicates), one merge of all the replicates'
    states (``streammetrics.states.stacked``); for other metrics, one weighted update of the
    wrapped metric per replicate. Never a loop over rows.
    Rows equal in every column are not folded into one row of summed weight, because states
    may hold non-linear sums of the weights (``weight_sq`` for Kish's effective sample size)
    that folding would make depend on the batch split. Memory: ``replicates + 1`` states of the
    wrapped metric; ``compute`` reads one, ``interval`` and ``replicates`` compute all of them.

    Parameters
    ----------
    metric : Metric
        Any metric whose ``update`` takes ``sample_weight``, or that sets ``bootstrap_by_rows``
        (its configuration is kept).
    replicates : int
        Bootstrap replicates (200 gives percentile intervals good to about a tenth of their
        width at 95%).
    seed : int
        Seeds the weights; states merge only with the same seed.
    scheme : {2, 1}
        How weights are drawn from (seed, replicate, id): 2 (default), or 1 to write states
        that 0.2.0 can read and merge with.

    Examples
    --------
    >>> import numpy as np, streammetrics as sm
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 1000)
    >>> b = sm.Bootstrap(sm.Accuracy(), replicates=200, seed=0)
    >>> _ = b.update(y, np.where(rng.random(1000) < 0.8, y, 1 - y), ids=np.arange(1000))
    >>> low, high = b.interval(0.95)
    >>> bool(low < b.compute() < high), b.replicates().shape
    (True, (200,))
    """

    #: The leading options passed by position, as the API shows them
    #: (``Bootstrap(metric, replicates=200, seed=0)``; ``streammetrics._configs.keyword_config``).
    _positional_config: ClassVar[int] = 1

    metric: Metric
    reps: SliceTable
    drawn: int
    #: None on the class; each instance takes the wrapped metric's direction.
    higher_is_better: ClassVar[bool | None] = None
    #: Keyword columns ``update`` may take beside the metric's (``_rows.row_keywords``): a
    #: ``MetricCollection`` passes ``ids=`` to its ``Bootstrap`` members only.
    optional_keywords: ClassVar[tuple[str, ...]] = ("ids",)

    def __init__(
        self, metric: Metric, replicates: int = 200, seed: int = 0, *, scheme: int = 2
    ) -> None:
        super().__init__()
        tpl = template(metric, "its replicates")
        #: Rows repeated by their Poisson counts, for metrics without sample_weight.
        self._by_rows = not takes_weights(tpl)
        if self._by_rows and not getattr(type(tpl), "bootstrap_by_rows", False):
            if is_wrapper(tpl):  # (a collection's update passes sample_weight on: no "takes no")
                raise InputError(
                    f"metric: Bootstrap does not wrap a {type(tpl).__name__}{instead(tpl)}"
                )
            raise InputError(
                f"metric: {type(tpl).__name__}.update takes no sample_weight, so it cannot be "
                "bootstrapped by weights (nor by repeating its rows: they are not independent "
                f"units, or its value is not one number){instead(tpl)}"
            )
        replicates = config_int(replicates, "replicates", minimum=2, maximum=MAX_REPLICATES)
        seed = config_int(seed, "seed", minimum=0, maximum=2**63 - 1)
        if type(scheme) is not int or scheme not in SCHEMES:  # 2.0 too: configs compare by type
            raise InputError(f"scheme: expected one of {SCHEMES}, got {scheme!r}")
        self._template = tpl
        self._scheme = scheme
        # (the instance's: Decayed sets its wrapped metric's direction on each instance, and
        # 0.8.18 read the class's None, so Sliced(Bootstrap(Decayed(m))).worst() refused)
        self.higher_is_better = getattr(tpl, "higher_is_better", None)  # type: ignore[misc]
        self._add_config(metric=metric_spec(tpl), replicates=replicates, seed=seed)
        if scheme != 1:  # scheme 1 states keep 0.2.0's config, byte for byte
            self._add_config(scheme=scheme)
        self._add_state("metric", tpl.copy(), merge=None)
        self._add_state("reps", SliceTable(tpl), merge=None)
        self._add_state("drawn", 0)

    @classmethod
    def _from_config(cls, config: dict[str, Any]) -> Bootstrap:
        keys = {"metric", "replicates", "seed"}
        if set(config) not in (keys, keys | {"scheme"}):
            raise ValueError(
                "a Bootstrap config holds exactly metric, replicates, seed (and scheme)"
            )
        if config.get("scheme", 2) == 1:
            raise ValueError("scheme 1 is written by leaving the scheme out of the config")
        return cls(
            metric_from_spec(config["metric"]),
            replicates=config["replicates"],
            seed=config["seed"],
            scheme=config.get("scheme", 1),  # 0.2.0 configs have no scheme: its weights
        )

    def _check_kind(self, other: Any) -> None:
        theirs = getattr(other, "_scheme", self._scheme)
        if isinstance(other, Bootstrap) and theirs != self._scheme:
            raise IncompatibleStateError(
                f"cannot merge Bootstrap states whose weights come from different schemes "
                f"({self._scheme} here, {theirs} there): the replicates would not be the same "
                "resamples. States written by 0.2.0 draw scheme 1; rebuild the other side with "
                f"Bootstrap(..., scheme={self._scheme}) to merge them"
            )
        super()._check_kind(other)

    def update(self, *args: Any, ids: Any = None, **kwargs: Any) -> Bootstrap:
        """Count a batch in the metric and in every replicate; ``ids``: one id per row, or None.

        All or nothing: the batch is validated by the wrapped metric (on a copy) first.
        """
        args, kwargs = weight_by_keyword(self.metric, args, kwargs)
        n = batch_length(args, kwargs, "update", column_names(self.metric))
        # The metric's own checks first: a column beside one value is its error, not the ids'.
        main = self.metric.copy().update(*args, **kwargs)  # type: ignore[attr-defined]
        hashes = None if ids is None else id_hashes(ids, n)
        added = main.count - self.metric.count
        if n == 0 or added == 0:
            return self
        if hashes is None:
            hashes = position_hashes(self.drawn, n)
        self._check_replicate_totals(main, hashes, kwargs.get("sample_weight"), n)
        drawn = self.drawn + (n if ids is None else 0)
        reps = self._drawn_into_replicates(args, kwargs, hashes, n)
        return self._commit(added, metric=main, reps=reps, drawn=drawn)

    def _drawn_into_replicates(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], hashes: np.ndarray, n: int
    ) -> SliceTable:
        """The replicates with the batch's ``n`` rows (of ``hashes``) drawn into each. Nothing
        here fails for a batch the wrapped metric took (``_check_replicate_totals`` first)."""
        R, seed = self._config["replicates"], self._config["seed"]
        table = self.reps
        reps = [table.slices.get(r) for r in range(R)]
        # The stack is laid out on the replicates' label set (all share one), not the wrapped
        # metric's: rows taken one at a time reach it before they reach the replicates.
        stack = stacked_batch(self._template if reps[0] is None else reps[0], args, kwargs)
        if (
            stack is not None
            and stack.replicates
            and stack.accepts([m for m in reps if m is not None])
        ):
            # One pass over (rows, replicates): nothing below can fail, so the replicates
            # are updated in place (they belong to this state alone).
            missing = [r for r, m in enumerate(reps) if m is None]
            made = blanks(self._template, len(missing))
            ready: list[Metric] = reps  # type: ignore[assignment]
            for r, metric in zip(missing, made, strict=True):
                ready[r] = metric
            counts = poisson_rows(hashes[stack.rows], seed, R, self._scheme)
            stack.fold_replicates(ready, counts)
            return table.updated({r: ready[r] for r in missing}) if missing else table
        counts = poisson_rows(hashes, seed, R, self._scheme)
        if self._by_rows:
            return self._resampled(args, kwargs, n, counts)
        rest = dict(kwargs)
        sample_weight = as_weights(rest.pop("sample_weight", None), n)
        weights = counts.T if sample_weight is None else counts.T * sample_weight
        rows = Rows(args, rest, n, "the batch", column_names(self.metric))
        updated: dict[Any, Metric] = {}
        for r in range(R):
            base = reps[r]
            updated[r] = rows.feed(
                base.copy() if base is not None else self._template.copy(),
                None,
                sample_weight=weights[r].astype(np.float64),
            )
        return table.updated(updated)

    # -- one sample per call (``_bootstrap_rows``) -------------------------------------------

    def _take_row(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Take one sample given as scalars: the wrapped metric now (its checks refuse a bad
        row here), the replicates at the next fold. False, with nothing changed, for any other
        call (the ordinary ``update`` takes it). Lock held."""
        if self._by_rows:
            return False
        pending = self._pending
        main = self.metric  # (a metric field is never taken out while rows wait: see StateAttr)
        rows = main._rows
        if rows is not None and len(args) == rows.n + 1:  # ``update(y, p, w, ids=i)``
            args, kwargs = weight_by_keyword(main, args, kwargs)
        plan = row_columns(main, args, kwargs)
        if plan is None:
            return False
        weight, hashed = plan
        weighted = weight is not None
        if pending is not None and pending.weighted != weighted:
            self._fold()  # (one shape of rows per buffer: see Pending)
            pending = None
        if pending is None:
            self._queued_positions = 0
        # (A replicate counts a row up to 255 times: its Poisson draw is below 20.)
        if not self._room_for(weight, 255.0, lambda: max(held_total(main), self._count)):
            return False  # near the bound: the ordinary update checks every replicate
        by_position = hashed is None  # (no id: the row's place in this instance's stream)
        if by_position:
            drawn = self._unfolded("drawn")
            h = position_hash(drawn + self._queued_positions)
        else:
            h = hashed
        main.update(*args, **({} if weight is None else {"sample_weight": weight}))  # type: ignore[attr-defined]
        self._queued_positions += by_position
        # (The hash as the int64 of its bits: a column of Python ints on both sides of 2**63
        # would join as float64, rounded.)
        row = (*args, h - (h >> 63 << 64), by_position)
        self._push((row if weight is None else (*row, weight), weighted))
        return True

    def _row_trusted(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """The wrapped metric's test (``ids`` aside: they never make states incompatible). A
        row whose values the wrapped metric has all seen adds nothing new to a replicate
        either, which holds some of the same rows: a window that trusted it skips checking the
        row against its other slots (2.9 ms a row for ``SlidingWindow(Bootstrap(Accuracy(),
        200))`` in 0.8.11, every replicate of every slot folded and compared)."""
        if "ids" in kwargs:
            kwargs = {k: v for k, v in kwargs.items() if k != "ids"}
        trusted: bool = self.metric._row_trusted(args, kwargs)
        return trusted

    def _check_compatible_together(self, others: tuple[Any, ...]) -> None:
        # The wrapped states, across the operands: they hold every label the replicates do.
        # (Until 0.8.28 nothing was checked across more than two operands, so a window of
        # ``Bootstrap(F1())`` took a third label in a third slot and wrote bytes that ``loads``
        # refused; found by a review.)
        self.metric._check_compatible_together(tuple(o.metric for o in others))

    def _row_certain(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """As :meth:`_row_trusted`, but ``ids`` given make the row uncertain: the wrapped
        metric trusting the row says nothing of them (a review of 0.8.28's first cut: a bad id
        beside a window in one collection updated the window alone)."""
        return "ids" not in kwargs and self._row_trusted(args, kwargs)

    def _learn_row(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if "ids" in kwargs:
            kwargs = {k: v for k, v in kwargs.items() if k != "ids"}
        self.metric._learn_row(args, kwargs)

    def _fold_rows(self, *cols: Any, sample_weight: Any = None) -> None:
        """Draw rows :meth:`_take_row` buffered into every replicate (the wrapped metric has
        them already): ``cols`` are its columns, then each row's hash and whether it was
        drawn by position."""
        args, hashes, by_position = cols[:-2], cols[-2], cols[-1]
        n = len(hashes)
        kwargs = {} if sample_weight is None else {"sample_weight": sample_weight}
        reps = self._drawn_into_replicates(args, kwargs, hashes.astype(np.int64).view(np.uint64), n)
        self._commit(n, reps=reps, drawn=self.drawn + int(np.count_nonzero(by_position)))

    def _check_replicate_totals(
        self, main: Metric, hashes: np.ndarray, weight: Any, n: int
    ) -> None:
        """``CountOverflowError`` (before anything changes) if a replicate would pass the count
        or weight bound: a replicate counts each row up to 255 times (its Poisson draw), so only
        a metric within 1/255 of the bound needs each replicate's exact total."""
        blocks = [getattr(main, name, None) for name in main._fields]
        weighted = weight is not None or any(getattr(b, "weighted", False) for b in blocks)
        kind = "f" if weighted else "i"
        limit = WEIGHT_LIMIT if weighted else COUNT_LIMIT
        if main._held_total() * 255.0 <= limit:
            return
        R, seed = self._config["replicates"], self._config["seed"]
        counts = poisson_rows(hashes, seed, R, self._scheme)
        w = as_weights(weight, n)
        added = counts.sum(axis=0) if w is None else w @ counts
        for r, more in enumerate(added.tolist()):
            held = self.reps.slices.get(r)
            check_sum("sample_weight", kind, 0.0 if held is None else held._held_total(), more)

    def _resampled(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], n: int, counts: np.ndarray
    ) -> SliceTable:
        """The replicates with this batch's rows, each repeated by its Poisson count in each
        replicate (``counts``, rows by replicates): the classic resampling bootstrap, for
        metrics without ``sample_weight``. One update per replicate. A replicate that has drawn
        no row yet is not stored (an empty slice has no bytes; ``replicates()`` reads it as
        the empty metric's value)."""
        # One sample, perhaps given as scalars (a hypothesis string beside the list of its
        # references, which is no row column): repeat the call itself.
        rows = None if n == 1 else Rows(args, kwargs, n, "the batch", column_names(self.metric))
        positions = np.arange(n)
        updated: dict[Any, Metric] = {}
        for r in range(self._config["replicates"]):
            times = counts[:, r]
            if not times.any():
                continue
            base = self.reps.slices.get(r)
            metric = base.copy() if base is not None else self._template.copy()
            if rows is None:
                for _ in range(int(times[0])):
                    metric.update(*args, **kwargs)  # type: ignore[attr-defined]
            else:
                metric = rows.feed(metric, np.repeat(positions, times))
            updated[r] = metric
        return self.reps.updated(updated)

    def _compute(self) -> Any:
        return self.metric.compute()

    def _empty_result(self) -> Any:
        return self._template.compute()

    def replicates(self) -> np.ndarray:
        """The wrapped metric's value in each replicate, ``(replicates, ...)``; nan when empty."""
        R = self._config["replicates"]
        if self._count == 0:
            return np.full(R, np.nan)
        held = self.reps.slices
        empty = self._template  # (a replicate resampled by rows that has drawn no row yet)
        first = held.get(0, empty).compute()
        if isinstance(first, (dict, tuple, list)):
            # (A curve, a report, a Decayed of slices: their replicates' states are kept and
            # merge, but their values are no one number or array to take quantiles of.)
            raise NoIntervalError(
                f"Bootstrap({type(self._template).__name__}): its value is a "
                f"{type(first).__name__} of values, so replicates(), std_error() and "
                "interval() have no one number (or array) per replicate; bootstrap a metric of "
                f"one value instead{instead(self._template)}"
            )
        values = [first, *(held.get(r, empty).compute() for r in range(1, R))]
        return np.asarray(values, dtype=np.float64)

    def std_error(self) -> float | np.ndarray:
        """The replicates' standard deviation: the bootstrap standard error of ``compute()``."""
        values = self.replicates()
        with np.errstate(invalid="ignore"):
            if np.isnan(values).all(axis=0).all():
                return np.nan if values.ndim == 1 else np.full(values.shape[1:], np.nan)
            out = np.nanstd(values, axis=0, ddof=1)
        return float(out) if values.ndim == 1 else out

    def interval(self, level: float = 0.95) -> tuple[Any, Any]:
        """The percentile bootstrap interval ``(low, high)`` at ``level``; ``nan, nan`` if empty.

        Replicates whose value is ``nan`` (e.g. an AUC replicate without a positive) are left
        out.
        """
        level = check_level(level)
        values = self.replicates()
        if np.isnan(values).all():
            return math.nan, math.nan
        low, high = np.nanquantile(values, [(1 - level) / 2, (1 + level) / 2], axis=0)
        if values.ndim == 1:
            return float(low), float(high)
        return low, high

    def _validate_state(self) -> None:
        R = self._config["replicates"]
        if self.metric.count != self._count:
            raise ValueError("the metric's count differs from the bootstrap's")
        held = self.reps.slices
        # Replicates by weights count every row: all R are held once a row is. Replicates by
        # rows are held once they have drawn a row (any of them, none when empty).
        full = R if self._count and not self._by_rows else 0
        if not full <= len(held) <= (R if self._count else 0):  # before any set is built
            raise ValueError(f"replicates must be keyed 0..{R - 1} (none when empty)")
        if not set(held) <= set(range(R)) or len(held) < full:
            raise ValueError(f"replicates must be keyed 0..{R - 1} (none when empty)")
        if not self._by_rows and any(m.count != self._count for m in self.reps.slices.values()):
            # (Resampled rows: a replicate counts each row as often as it was drawn.)
            raise ValueError("a replicate's count differs from the bootstrap's")
        if not 0 <= self.drawn <= self._count:  # row positions: at most the rows ever seen
            raise ValueError("drawn must be from 0 to the rows counted")

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._template._config.items())
        return (
            f"Bootstrap({type(self._template).__name__}({inner}), "
            f"replicates={self._config['replicates']}, seed={self._config['seed']}, "
            f"scheme={self._scheme}, count={self._count})"
        )
