"""chrF and chrF++ (Popović 2015, 2017) as sacrebleu computes them, from summed statistics."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from .._codec import check_counts, check_sum, held_total
from .._config_values import config_flag, config_int, config_number, whole_if_integral
from ..base import Metric
from ..errors import InputError
from ._inputs import as_texts
from ._ngrams import match_counts

__all__ = ["CHRF", "chrf_from_statistics"]

# string.punctuation: chrF++ splits one of these off the end (else the start) of a word.
_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_EPS = 1e-16
#: Sentences counted together (bounds the memory of one sort to a few of their characters).
_CHUNK = 8192


#: The largest ``beta``: the score needs ``beta**2``, which overflows past about 1.3e154.
MAX_BETA = 1e150


def chrf_from_statistics(stats: Any, beta: float, eps_smoothing: bool = False) -> float:
    """The chrF score (0 to 100) of ``[hyp, ref, match]`` counts per n-gram order.

    sacrebleu's formula in its floating-point order: by default the precision and recall of
    the orders with both hypothesis and reference n-grams are averaged and combined into one
    F-beta (sacrebleu's "effective order"); with ``eps_smoothing`` the per-order F-beta scores
    are averaged, an order without n-grams scoring 1e-16 (chrF++.py, Moses, NLTK).
    """
    values = [int(v) for v in stats]
    factor = beta**2
    score, avg_prec, avg_rec, effective = 0.0, 0.0, 0.0, 0
    n_orders = len(values) // 3
    for i in range(n_orders):
        n_hyp, n_ref, n_match = values[3 * i : 3 * i + 3]
        prec = n_match / n_hyp if n_hyp > 0 else _EPS
        rec = n_match / n_ref if n_ref > 0 else _EPS
        denom = factor * prec + rec
        score += ((1 + factor) * prec * rec / denom) if denom > 0 else _EPS
        if n_hyp > 0 and n_ref > 0:
            avg_prec += prec
            avg_rec += rec
            effective += 1
    if eps_smoothing:
        return 100 * score / n_orders
    if effective == 0:
        avg_prec = avg_rec = 0.0
    else:
        avg_prec /= effective
        avg_rec /= effective
    if avg_prec + avg_rec:
        f = (1 + factor) * avg_prec * avg_rec
        f /= (factor * avg_prec) + avg_rec
        return 100 * f
    return 0.0


def _words(sentence: str) -> list[str]:
    # chrF++'s word split: whitespace, then one punctuation mark off the end of a word, or
    # else off its start ("(hi)" gives "(hi" and ")", as in chrF++.py and sacrebleu).
    out: list[str] = []
    for w in sentence.split():
        if len(w) > 1 and w[-1] in _PUNCT:
            out += [w[:-1], w[-1]]
        elif len(w) > 1 and w[0] in _PUNCT:
            out += [w[0], w[1:]]
        else:
            out.append(w)
    return out


def _line_lengths(lines: list[Any]) -> np.ndarray:
    return np.fromiter(map(len, lines), dtype=np.int64, count=len(lines))


def _sentence_scores(stats: np.ndarray, beta: float, eps_smoothing: bool) -> np.ndarray:
    # chrf_from_statistics on every row at once, in the same floating-point operations.
    factor = beta**2
    n_orders = stats.shape[1] // 3
    score = np.zeros(len(stats))
    avg_prec = np.zeros(len(stats))
    avg_rec = np.zeros(len(stats))
    effective = np.zeros(len(stats), dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(n_orders):
            n_hyp, n_ref, n_match = stats[:, 3 * i], stats[:, 3 * i + 1], stats[:, 3 * i + 2]
            prec = np.where(n_hyp > 0, n_match / n_hyp, _EPS)
            rec = np.where(n_ref > 0, n_match / n_ref, _EPS)
            denom = factor * prec + rec
            score += np.where(denom > 0, (1 + factor) * prec * rec / denom, _EPS)
            both = (n_hyp > 0) & (n_ref > 0)
            avg_prec += np.where(both, prec, 0.0)
            avg_rec += np.where(both, rec, 0.0)
            effective += both
        if eps_smoothing:
            out: np.ndarray = 100 * score / n_orders
            return out
        avg_prec = np.where(effective > 0, avg_prec / effective, 0.0)
        avg_rec = np.where(effective > 0, avg_rec / effective, 0.0)
        f = (1 + factor) * avg_prec * avg_rec
        f /= (factor * avg_prec) + avg_rec
        return np.where(avg_prec + avg_rec != 0, 100 * f, 0.0)


def _best_rows(stats: np.ndarray, n_refs: np.ndarray, beta: float, eps: bool) -> np.ndarray:
    # Each hypothesis's reference rows are consecutive; keep its first best-scoring one.
    scores = _sentence_scores(stats, beta, eps)
    starts = np.zeros(len(n_refs), dtype=np.int64)
    np.cumsum(n_refs[:-1], out=starts[1:])
    best = np.maximum.reduceat(scores, starts)
    sent = np.repeat(np.arange(len(n_refs)), n_refs)
    top = np.flatnonzero(scores == best[sent])
    keep = np.ones(len(top), dtype=bool)
    np.not_equal(sent[top[1:]], sent[top[:-1]], out=keep[1:])
    return top[keep]


class CHRF(Metric):
    """Corpus chrF (``word_order=0``) or chrF++ (``word_order=2``), as ``sacrebleu.corpus_chrf``.

    chrF is an F-beta score of character n-gram precision and recall (orders 1 to
    ``char_order``, spaces removed first unless ``whitespace``); chrF++ adds word n-grams of
    orders 1 to ``word_order``. For each hypothesis sacrebleu counts, per order, the
    hypothesis n-grams, reference n-grams and clipped matches against each of its references
    and keeps the counts of the reference with the best sentence-level chrF (the first on a
    tie); the corpus score is computed from the sums of those counts. The state is those sums:
    ``3 * (char_order + word_order)`` integers.

    Parameters
    ----------
    char_order, word_order : int
        Highest character and word n-gram orders (chrF2: 6 and 0; chrF++: 6 and 2).
    beta : float
        Weight of recall against precision (2 for chrF2), from 0 to ``MAX_BETA`` (1e150: the
        score needs ``beta**2``).
    lowercase : bool
        Lowercase hypotheses and references first.
    whitespace : bool
        Keep whitespace inside character n-grams (sacrebleu's ``whitespace``; its
        ``corpus_chrf`` default ``remove_whitespace=True`` is ``whitespace=False``).
    eps_smoothing : bool
        Average per-order F-scores with epsilon smoothing instead of sacrebleu's default
        effective-order averaging.

    Notes
    -----
    Exact: integer state, merges to identical bytes, and the score uses sacrebleu's
    arithmetic. Memory: ``3 * (char_order + word_order)`` integers. ``update``: vectorised over
    the batch, one sort of its L characters (hypotheses and references) per order,
    O(L log L * orders); ``merge`` and ``compute``: O(orders).

    Examples
    --------
    >>> from streammetrics.text import CHRF
    >>> m = CHRF(word_order=2)
    >>> _ = m.update(["The cat sat on the mat."], ["The cat is on the mat."])
    >>> round(m.compute(), 6)
    69.436953
    """

    higher_is_better: ClassVar[bool | None] = True
    #: No ``sample_weight``, but its sentences are independent units: ``Bootstrap`` resamples
    #: them (each repeated by its Poisson count in each replicate; Koehn 2004).
    bootstrap_by_rows: ClassVar[bool] = True

    def __init__(
        self,
        *,
        char_order: int = 6,
        word_order: int = 0,
        beta: float = 2,
        lowercase: bool = False,
        whitespace: bool = False,
        eps_smoothing: bool = False,
    ) -> None:
        super().__init__()
        char_order = config_int(char_order, "char_order", minimum=0, maximum=32)
        word_order = config_int(word_order, "word_order", minimum=0, maximum=32)
        if char_order + word_order == 0:
            raise InputError("char_order: 0 needs a word_order of at least 1 (no n-grams at all)")
        # (beta = 0 scores precision alone, as sacrebleu does; an infinite beta has no score,
        # and the score needs beta**2 finite: 0.8.12 took any beta below 1e300, and one past
        # 1.3e154 raised OverflowError from compute, of a decoded state too.)
        beta_value = config_number(beta, "beta", maximum=MAX_BETA)
        self._add_config(
            char_order=char_order,
            word_order=word_order,
            # (as a float first: an int past 2**64, which the wire cannot hold, becomes the float
            # it is; a whole float, or an int, below 2**53 is kept as that int)
            beta=whole_if_integral(beta_value),
            lowercase=config_flag(lowercase, "lowercase"),
            whitespace=config_flag(whitespace, "whitespace"),
            eps_smoothing=config_flag(eps_smoothing, "eps_smoothing"),
        )
        self._add_state("stats", np.zeros(3 * (char_order + word_order), dtype=np.int64))

    stats: np.ndarray

    def _statistics(self, hyps: list[str], refs: list[list[str]]) -> np.ndarray:
        # Per reference line, its [hyp, ref, match] counts per order, then sacrebleu's choice
        # of each hypothesis's best reference, summed.
        c = self._config
        lines = [s for h, rs in zip(hyps, refs, strict=True) for s in (h, *rs)]
        n_refs = np.array([len(rs) for rs in refs], dtype=np.int64)
        is_ref = np.ones(len(lines), dtype=bool)
        is_ref[np.cumsum(n_refs + 1) - n_refs - 1] = False
        chars = lines if c["whitespace"] else ["".join(s.split()) for s in lines]
        codes = np.frombuffer("".join(chars).encode("utf-32-le", "surrogatepass"), "<u4")
        parts = [(_line_lengths(chars), codes.astype(np.int64), c["char_order"])]
        if c["word_order"]:
            words = [_words(s) for s in lines]
            vocab: dict[str, int] = {}
            word_ids = [vocab.setdefault(w, len(vocab)) for ws in words for w in ws]
            parts.append(
                (_line_lengths(words), np.array(word_ids, dtype=np.int64), c["word_order"])
            )
        # Rows per reference line, or with one reference each, only their sums.
        by_line = len(lines) > 2 * len(hyps)
        blocks = []
        for lengths, ids, order in parts:
            matches = match_counts(ids, lengths, n_refs, order, by_line)
            grams = np.maximum(lengths[:, None] - np.arange(order), 0)  # n-grams per line
            ref_grams = grams[is_ref]
            hyp_grams = np.repeat(grams[~is_ref], n_refs, axis=0)
            hyp_grams[ref_grams == 0] = 0  # sacrebleu: no hypothesis count without reference
            if not by_line:
                hyp_grams, ref_grams = hyp_grams.sum(axis=0)[None], ref_grams.sum(axis=0)[None]
            stacked = np.stack([hyp_grams, ref_grams, matches], axis=2)
            blocks.append(stacked.reshape(len(matches), -1))
        stats = np.concatenate(blocks, axis=1)
        if by_line:
            stats = stats[_best_rows(stats, n_refs, c["beta"], c["eps_smoothing"])]
        total: np.ndarray = stats.sum(axis=0)
        return total

    def update(self, hypotheses: Any, references: Any) -> CHRF:
        """Add a batch of hypotheses, each with its reference(s).

        Complexity: O(L log L * orders) for a batch of L characters (one sort per order).
        """
        hyps, refs = as_texts(hypotheses, references)
        if not hyps:
            return self
        if self._config["lowercase"]:
            hyps = [h.lower() for h in hyps]
            refs = [[r.lower() for r in rs] for rs in refs]
        inc = np.zeros_like(self.stats)
        for i in range(0, len(hyps), _CHUNK):
            inc += self._statistics(hyps[i : i + _CHUNK], refs[i : i + _CHUNK])
        check_sum("chrF statistics", "i", held_total(self.stats), held_total(inc))
        return self._commit(len(hyps), stats=self.stats + inc)

    def _compute(self) -> float:
        return chrf_from_statistics(self.stats, self._config["beta"], self._config["eps_smoothing"])

    def _validate_state(self) -> None:
        c = self._config
        size = 3 * (c["char_order"] + c["word_order"])
        if self.stats.shape != (size,):
            raise ValueError(f"stats must hold {size} counts, got {self.stats.shape}")
        check_counts("chrF statistics", self.stats)
        hyp, ref, match = self.stats[0::3], self.stats[1::3], self.stats[2::3]
        if (match > hyp).any() or (match > ref).any():
            raise ValueError("character or word n-gram matches exceed their totals")

    def _check_compatible(self, other: Any) -> None:
        super()._check_compatible(other)
        # The statistics total at most 2**53 (checked on decode): their sum cannot wrap.
        check_sum("chrF statistics", "i", held_total(self.stats), held_total(other.stats))

    def _check_compatible_together(self, others: tuple[Any, ...]) -> None:
        # (pairs within the bound may pass it together: 0.8.18's merge(*others) wrapped them)
        super()._check_compatible_together(others)
        totals = [held_total(m.stats) for m in (self, *others)]
        check_sum("chrF statistics", "i", *totals)
