"""Conformance cases for the text metrics (BLEU, chrF)."""

from __future__ import annotations

import numpy as np

from streammetrics.text import BLEU, CHRF
from tests.harness import Case

WORDS = np.array(
    "the a cat dog sat on mat it's don't U.S. 3.14 1,000 e-mail (see) $5 50% \"so\" can't "
    "1990-2000 ran fast , . ! ? ... -- naïve Café".split()
)


def _sentence(rng: np.random.Generator) -> str:
    return " ".join(WORDS[rng.integers(0, len(WORDS), int(rng.integers(0, 12)))].tolist())


# Chinese characters and CJK punctuation for the ``zh`` tokeniser, beside the words above.
HANZI = np.array(list("我们今天去北京上海天气很好的是在有人这个中国。\uff0c\uff01\uff1f“”《》"))


def _chinese(rng: np.random.Generator) -> str:
    chars = "".join(HANZI[rng.integers(0, len(HANZI), int(rng.integers(0, 10)))].tolist())
    return chars + " " + _sentence(rng) if rng.random() < 0.5 else chars


def _batch(n_refs: int, line=_sentence):  # type: ignore[no-untyped-def]
    def batch(rng: np.random.Generator, n: int):
        hyps = [line(rng) for _ in range(n)]
        refs = [[line(rng) for _ in range(int(rng.integers(1, n_refs + 1)))] for _ in hyps]
        return (hyps, refs), {}

    return batch


BAD = [
    ((["a b", "c"], ["a b"]), {}),
    (([1, "c"], ["a", "b"]), {}),
    ((["a"], [[None]]), {}),
    ((["a"], [[3]]), {}),
    ((["a"], [None]), {}),
    ((None, ["a"]), {}),
]

CASES = [
    Case("BLEU", BLEU, _batch(1), BAD, other=lambda: BLEU(smooth_method="floor")),
    Case(
        "BLEU-multiref-lc",
        lambda: BLEU(lowercase=True, tokenize="intl"),
        _batch(3),
        BAD,
        other=lambda: BLEU(lowercase=True),
    ),
    Case(
        "BLEU-addk-char",
        lambda: BLEU(smooth_method="add-k", tokenize="char", max_ngram_order=3),
        _batch(2),
        BAD,
        other=lambda: BLEU(smooth_method="add-k", tokenize="char", max_ngram_order=2),
    ),
    Case("CHRF", CHRF, _batch(1), BAD, other=lambda: CHRF(word_order=2)),
    Case(
        "CHRF++-multiref",
        lambda: CHRF(word_order=2, lowercase=True),
        _batch(3),
        BAD,
        other=lambda: CHRF(word_order=2),
    ),
]

# The smoothing methods and options the cases above leave at their defaults.
CASES += [
    Case(
        "BLEU-floor",
        lambda: BLEU(smooth_method="floor", smooth_value=0.2),
        _batch(2),
        BAD,
        other=lambda: BLEU(smooth_method="floor"),
    ),
    Case(
        "BLEU-none",
        lambda: BLEU(smooth_method="none"),
        _batch(1),
        BAD,
        other=BLEU,
    ),
    Case(
        "BLEU-zh",
        lambda: BLEU(tokenize="zh"),
        _batch(2, _chinese),
        BAD,
        other=BLEU,
    ),
    Case(
        "BLEU-effective-order",
        lambda: BLEU(effective_order=True, max_ngram_order=3),
        _batch(2),
        BAD,
        other=lambda: BLEU(max_ngram_order=3),
    ),
    Case(
        "CHRF-whitespace-beta1",
        lambda: CHRF(whitespace=True, beta=1),
        _batch(2),
        BAD,
        other=lambda: CHRF(whitespace=True),
    ),
    Case(
        "CHRF-eps-smoothing",
        lambda: CHRF(eps_smoothing=True, char_order=4),
        _batch(1),
        BAD,
        other=lambda: CHRF(char_order=4),
    ),
]
