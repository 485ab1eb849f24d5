"""Corpus BLEU (Papineni et al., 2002) as sacrebleu computes it, from summed statistics."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .._codec import check_counts, check_sum, held_total
from .._config_values import config_flag, config_int, config_number, whole_if_integral
from ..base import Metric
from ..errors import InputError
from ._inputs import as_texts
from ._ngrams import bleu_statistics
from .tokenizers import get_tokenizer

__all__ = ["BLEU", "bleu_from_statistics"]

# Default smoothing values of sacrebleu (Chen and Cherry, 2014: floor 0.1, add-k 1).
SMOOTH_DEFAULTS: dict[str, float | None] = {"none": None, "floor": 0.1, "add-k": 1, "exp": None}


def _log(x: float) -> float:
    # sacrebleu floors log(0) at -9999999999 rather than -inf, so a zero precision gives a
    # score of exactly 0.0 through exp().
    return -9999999999 if x == 0.0 else math.log(x)


def bleu_from_statistics(
    stats: Any,
    max_ngram_order: int = 4,
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    effective_order: bool = False,
) -> dict[str, Any]:
    """BLEU and its parts from ``[hyp_len, ref_len, correct_1..N, total_1..N]``.

    Follows ``sacrebleu.BLEU.compute_bleu`` step for step, in the same floating-point order,
    so the score is bit-for-bit sacrebleu's. Returns a dict with ``score`` (0 to 100), ``bp``,
    ``precisions`` (percent), ``counts``, ``totals``, ``sys_len`` and ``ref_len``.
    """
    values = [int(v) for v in stats]
    order = max_ngram_order
    sys_len, ref_len = values[0], values[1]
    correct: list[float] = list(values[2 : 2 + order])
    total: list[float] = list(values[2 + order : 2 + 2 * order])
    counts, totals = list(values[2 : 2 + order]), list(values[2 + order :])
    if smooth_value is None:
        smooth_value = SMOOTH_DEFAULTS[smooth_method]
    bp = 1.0
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    precisions = [0.0] * order
    result = {
        "score": 0.0,
        "bp": bp,
        "precisions": precisions,
        "counts": counts,
        "totals": totals,
        "sys_len": sys_len,
        "ref_len": ref_len,
    }
    if not any(correct):
        return result
    mteval = 1.0
    eff_order = order
    for n in range(1, order + 1):
        if smooth_method == "add-k" and n > 1:
            assert smooth_value is not None
            correct[n - 1] += smooth_value
            total[n - 1] += smooth_value
        if total[n - 1] == 0:
            break
        if effective_order:
            eff_order = n
        if correct[n - 1] == 0:
            if smooth_method == "exp":
                mteval *= 2
                precisions[n - 1] = 100.0 / (mteval * total[n - 1])
            elif smooth_method == "floor":
                assert smooth_value is not None
                precisions[n - 1] = 100.0 * smooth_value / total[n - 1]
        else:
            precisions[n - 1] = 100.0 * correct[n - 1] / total[n - 1]
    result["score"] = bp * math.exp(sum([_log(p) for p in precisions[:eff_order]]) / eff_order)
    return result


class BLEU(Metric):
    """Corpus BLEU, equal to ``sacrebleu.corpus_bleu`` with the same options.

    BLEU is the geometric mean of the clipped n-gram precisions (orders 1 to
    ``max_ngram_order``) times the brevity penalty ``exp(1 - r / c)`` when the hypotheses'
    total length ``c`` is below the reference length ``r``. Over a corpus each precision is
    a ratio of sums, so the state is those sums: ``[c, r, matches_1..N, totals_1..N]``. Each
    hypothesis's n-gram counts are clipped by the largest count of that n-gram in any one of
    its references, and ``r`` adds up, per hypothesis, the reference length closest to the
    hypothesis length (the shorter one on a tie), as sacrebleu does.

    Parameters
    ----------
    max_ngram_order : int
        Highest n-gram order (4 for BLEU-4).
    smooth_method : {"exp", "floor", "add-k", "none"}
        sacrebleu's smoothing (Chen and Cherry, 2014): ``exp`` halves the precision of each
        further order without matches (mteval's NIST smoothing); ``floor`` replaces a zero
        match count by ``smooth_value`` (default 0.1); ``add-k`` adds ``smooth_value``
        (default 1) to the matches and totals of orders 2 and above.
    tokenize : {"13a", "none", "intl", "char", "zh"}
        The tokeniser, as sacrebleu's (``intl`` needs the ``regex`` package; ``zh`` makes every
        CJK character a token, ``docs/text.md``).
    lowercase : bool
        Lowercase hypotheses and references first.
    smooth_value : float, optional
        The value for ``floor`` and ``add-k``; ``None`` takes sacrebleu's default.
    effective_order : bool
        Leave out the orders for which the corpus has no n-gram at all (sacrebleu's
        ``use_effective_order``).

    Notes
    -----
    Exact: the state is integers, so splits merge to identical bytes, and the score is
    computed from them with sacrebleu's own arithmetic (equal to ``corpus_bleu`` to the last
    bit in our tests). Memory: ``2 + 2 * max_ngram_order`` integers. ``update``: one batched
    tokenisation pass and a few numpy sorts, O(T log T) for T tokens. ``merge``: O(N).
    ``compute``: O(N).

    ``update(hypotheses, references)`` takes one entry of ``references`` per hypothesis: a
    string or a list of strings (its references; ``None`` entries are dropped, so hypotheses
    may have different numbers of references, as sacrebleu allows with ``None`` in a
    reference stream). Note that sacrebleu's own ``references`` argument is the transpose: a
    list of reference streams. ``count`` is the number of hypotheses seen.

    Examples
    --------
    >>> from streammetrics.text import BLEU
    >>> m = BLEU()
    >>> _ = m.update(["The cat sat on the mat."], [["The cat is on the mat.", "A cat sat there."]])
    >>> round(m.compute(), 6)
    53.728497
    """

    higher_is_better: ClassVar[bool | None] = True
    #: No ``sample_weight``, but its sentences are independent units: ``Bootstrap`` resamples
    #: them (each repeated by its Poisson count in each replicate; Koehn 2004).
    bootstrap_by_rows: ClassVar[bool] = True

    def __init__(
        self,
        *,
        max_ngram_order: int = 4,
        smooth_method: str = "exp",
        tokenize: str = "13a",
        lowercase: bool = False,
        smooth_value: float | None = None,
        effective_order: bool = False,
    ) -> None:
        super().__init__()
        max_ngram_order = config_int(max_ngram_order, "max_ngram_order", maximum=16)
        if smooth_method not in SMOOTH_DEFAULTS:
            raise InputError(
                f"smooth_method: must be one of {sorted(SMOOTH_DEFAULTS)}; got {smooth_method!r}"
            )
        if smooth_value is not None:
            # As a float first: an int past 2**64, which the wire cannot hold, becomes the float
            # it is (0.8.17 raised msgpack's OverflowError); a whole value below 2**53 is kept
            # as that int, as before.
            smooth_value = whole_if_integral(config_number(smooth_value, "smooth_value"))
        self._tokenizer = get_tokenizer(tokenize)
        self._add_config(
            max_ngram_order=max_ngram_order,
            smooth_method=smooth_method,
            tokenize=tokenize,
            lowercase=config_flag(lowercase, "lowercase"),
            smooth_value=smooth_value,
            effective_order=config_flag(effective_order, "effective_order"),
        )
        self._add_state("stats", np.zeros(2 + 2 * max_ngram_order, dtype=np.int64))

    stats: np.ndarray

    def update(self, hypotheses: Any, references: Any) -> BLEU:
        """Add a batch of hypotheses, each with its reference(s).

        Complexity: O(T log T) for T tokens in the batch (vectorised; no Python loop per
        n-gram).
        """
        hyps, refs = as_texts(hypotheses, references)
        if not hyps:
            return self
        if self._config["lowercase"]:
            hyps = [h.lower() for h in hyps]
            refs = [[r.lower() for r in rs] for rs in refs]
        flat_refs = [r for rs in refs for r in rs]
        tokens = self._tokenizer(hyps + flat_refs)
        hyp_tokens = tokens[: len(hyps)]
        ref_tokens: list[list[list[str]]] = []
        at = len(hyps)
        for rs in refs:
            ref_tokens.append(tokens[at : at + len(rs)])
            at += len(rs)
        inc = bleu_statistics(hyp_tokens, ref_tokens, self._config["max_ngram_order"])
        check_sum("BLEU statistics", "i", held_total(self.stats), held_total(inc))
        return self._commit(len(hyps), stats=self.stats + inc)

    def details(self) -> dict[str, Any]:
        """The score and its parts: ``score``, ``bp``, ``precisions``, ``counts``, ``totals``,
        ``sys_len``, ``ref_len``, as sacrebleu's ``BLEUScore`` has them, except that ``counts``
        and ``totals`` are always the raw n-gram statistics: with ``smooth_method="add-k"``
        sacrebleu's have ``k`` added from the second order on (the score is the same)."""
        c = self._config
        return bleu_from_statistics(
            self.stats,
            c["max_ngram_order"],
            c["smooth_method"],
            c["smooth_value"],
            c["effective_order"],
        )

    def _compute(self) -> float:
        return float(self.details()["score"])

    def _validate_state(self) -> None:
        order = self._config["max_ngram_order"]
        s = self.stats
        if s.shape != (2 + 2 * order,):
            raise ValueError(f"stats must hold {2 + 2 * order} counts, got {s.shape}")
        check_counts("BLEU statistics", s)
        totals = s[2 + order :]
        if (s[2 : 2 + order] > totals).any():
            raise ValueError("n-gram matches exceed n-gram totals")
        # A hypothesis of L tokens has max(0, L - n + 1) n-grams: totals fall with n, from L.
        if totals[0] != s[0] or (totals[1:] > totals[:-1]).any():
            raise ValueError("n-gram totals do not add up to the hypothesis length")

    def _check_compatible(self, other: Any) -> None:
        super()._check_compatible(other)
        # The statistics total at most 2**53 (checked on decode): their sum cannot wrap.
        check_sum("BLEU statistics", "i", held_total(self.stats), held_total(other.stats))

    def _check_compatible_together(self, others: tuple[Any, ...]) -> None:
        # (pairs within the bound may pass it together: 0.8.18's merge(*others) wrapped them)
        super()._check_compatible_together(others)
        totals = [held_total(m.stats) for m in (self, *others)]
        check_sum("BLEU statistics", "i", *totals)
