"""chrF and chrF++ (Popović 2015, 2017) as sacrebleu computes them, from summed statistics."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ..base import Metric
from ..errors import InputError
from ._inputs import as_texts

__all__ = ["CHRF", "chrf_from_statistics"]

# string.punctuation: chrF++ splits one of these off the end (else the start) of a word.
_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_EPS = 1e-16


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
        Weight of recall against precision (2 for chrF2).
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
    arithmetic. Memory: ``3 * (char_order + word_order)`` integers. ``update``: O(L * (orders)
    * references) per hypothesis of L characters. ``merge`` and ``compute``: O(orders).

    Examples
    --------
    >>> from streammetrics.text import CHRF
    >>> m = CHRF(word_order=2)
    >>> _ = m.update(["The cat sat on the mat."], ["The cat is on the mat."])
    >>> round(m.compute(), 6)
    69.436953
    """

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
        for name, value, low in (("char_order", char_order, 1), ("word_order", word_order, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 32:
                raise InputError(f"{name}: must be an int between {low} and 32; got {value!r}")
        if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not beta > 0:
            raise InputError(f"beta: must be a positive number; got {beta!r}")
        self._add_config(
            char_order=char_order,
            word_order=word_order,
            beta=beta,
            lowercase=bool(lowercase),
            whitespace=bool(whitespace),
            eps_smoothing=bool(eps_smoothing),
        )
        self._add_state("stats", np.zeros(3 * (char_order + word_order), dtype=np.int64))

    stats: np.ndarray

    def _ngrams(self, sentence: str) -> list[Counter[Any]]:
        c = self._config
        chars = sentence if c["whitespace"] else "".join(sentence.split())
        grams: list[Counter[Any]] = [
            Counter([chars[i : i + n] for i in range(len(chars) - n + 1)])
            for n in range(1, c["char_order"] + 1)
        ]
        if c["word_order"]:
            words = _words(sentence)
            grams.append(Counter(words))
            for n in range(2, c["word_order"] + 1):
                grams.append(Counter(zip(*[words[i:] for i in range(n)], strict=False)))
        return grams

    def _sentence(self, hyp: str, refs: list[str]) -> list[int]:
        c = self._config
        hyp_grams = self._ngrams(hyp)
        hyp_totals = [sum(g.values()) for g in hyp_grams]
        best: list[int] = []
        best_f = -1.0
        for ref in refs:
            stats: list[int] = []
            for h, h_total, r in zip(hyp_grams, hyp_totals, self._ngrams(ref), strict=True):
                if len(h) <= len(r):
                    match = sum(min(n, r[g]) for g, n in h.items() if g in r)
                else:
                    match = sum(min(n, h[g]) for g, n in r.items() if g in h)
                stats += [h_total if r else 0, sum(r.values()), match]
            f = chrf_from_statistics(stats, c["beta"], c["eps_smoothing"])
            if f > best_f:
                best_f, best = f, stats
        return best

    def update(self, hypotheses: Any, references: Any) -> CHRF:
        """Add a batch of hypotheses, each with its reference(s).

        Complexity: O(L * orders) per hypothesis and reference of L characters.
        """
        hyps, refs = as_texts(hypotheses, references)
        if not hyps:
            return self
        if self._config["lowercase"]:
            hyps = [h.lower() for h in hyps]
            refs = [[r.lower() for r in rs] for rs in refs]
        rows = [self._sentence(h, rs) for h, rs in zip(hyps, refs, strict=True)]
        inc = np.asarray(rows, dtype=np.int64).sum(axis=0)
        return self._commit(len(hyps), stats=self.stats + inc)

    def _compute(self) -> float:
        return chrf_from_statistics(self.stats, self._config["beta"], self._config["eps_smoothing"])

    def _validate_state(self) -> None:
        c = self._config
        size = 3 * (c["char_order"] + c["word_order"])
        if self.stats.shape != (size,):
            raise ValueError(f"stats must hold {size} counts, got {self.stats.shape}")
        if (self.stats < 0).any():
            raise ValueError("stats must be non-negative")
