"""Word tokenisers of sacrebleu's BLEU, rewritten to work on a whole batch of lines at once.

Each tokeniser takes a list of lines and returns, for each line, its list of tokens: what
sacrebleu's tokeniser of the same name produces after ``str.split()``. The ``13a`` tokeniser is
mteval-v13a's (the WMT standard): it pads the line with spaces, splits off ASCII punctuation and
symbols, splits periods and commas unless a digit is on the relevant side, and a dash that
follows a digit.

Speed: instead of four regular-expression passes per line, the lines of a batch are joined
with a newline (a character none of the patterns can match, next to the space padding of each
line, so no match can reach across two lines) and each pass runs once over the batch. The
first pass (surround every punctuation character with spaces) is a handful of ``str.replace``
calls, since a space around a space changes no token.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..errors import InputError

__all__ = ["TOKENIZERS", "get_tokenizer"]

Tokenizer = Callable[[list[str]], list[list[str]]]

# mteval-v13a's first pass: these ASCII characters become tokens of their own ({|}~ [\]^_`
# space !"#$%& ()*+ :;<=>?@ /). Space is left out: padding a space with spaces changes nothing.
_PUNCT_13A = '{|}~[\\]^_`!"#$%&()*+:;<=>?@/'
# Period and comma are split off unless preceded (then unless followed) by a digit; a dash
# after a digit is split off. Written as mteval-v13a writes them, because the order in which
# overlapping matches consume characters ("a..." or "1.,") decides the tokens.
_NOT_DIGIT_THEN_PERIOD = re.compile(r"([^0-9])([.,])")
_PERIOD_THEN_NOT_DIGIT = re.compile(r"([.,])([^0-9])")
_DIGIT_THEN_DASH = re.compile(r"(?<=[0-9])-")
_ENTITIES = (("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">"))


def _clean_13a(line: str) -> str:
    # The language-independent part of mteval-v13a, in its order (the entities only where an
    # ampersand occurs, as in mteval).
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        for entity, char in _ENTITIES:
            line = line.replace(entity, char)
    return line


def _split_13a(m: re.Match[str]) -> str:
    return f"{m[1]} {m[2]} "


def _split_13a_after(m: re.Match[str]) -> str:
    return f" {m[1]} {m[2]}"


def tokenize_13a(lines: list[str]) -> list[list[str]]:
    """mteval-v13a tokens of each line (sacrebleu's ``tokenize="13a"``)."""
    padded = []
    for line in lines:
        line = line.rstrip()
        if "<" in line or "\n" in line or "&" in line:
            line = _clean_13a(line)
        padded.append(line)
    # Every line is padded with a space on both sides, so no pattern can match the newline or
    # span two lines: the batch gives each line the tokens it gets alone.
    text = " \n ".join(padded)
    text = f" {text} "
    for char in _PUNCT_13A:
        if char in text:
            text = text.replace(char, f" {char} ")
    if "." in text or "," in text:
        text = _NOT_DIGIT_THEN_PERIOD.sub(_split_13a, text)
        text = _PERIOD_THEN_NOT_DIGIT.sub(_split_13a_after, text)
    if "-" in text:
        # "(?<=[0-9])-" equals mteval's "([0-9])(-)": two such matches can never overlap.
        text = _DIGIT_THEN_DASH.sub(" - ", text)
    return [part.split() for part in text.split("\n")]


def tokenize_none(lines: list[str]) -> list[list[str]]:
    """Whitespace-separated tokens (sacrebleu's ``tokenize="none"``)."""
    return [line.split() for line in lines]


def tokenize_char(lines: list[str]) -> list[list[str]]:
    """Every non-whitespace character is a token (sacrebleu's ``tokenize="char"``)."""
    return [list("".join(line.split())) for line in lines]


# The code points sacrebleu's ``zh`` tokeniser spaces out as characters of their own: the CJK
# blocks of its table as Python compares them. Two of its ranges are written with five hex
# digits after ``\u`` (Extension B, "\u20000" to "\u2a6d6", and the compatibility supplement,
# "\u2f800" to "\u2fa1d"), which Python reads as four-digit escapes followed by a digit, so
# that single characters from U+2001 to U+2A6D compare as inside (general punctuation, arrows,
# mathematical symbols among them), and the supplementary planes themselves do not. Written
# here as the ranges that table selects, merged (checked code point by code point against
# sacrebleu's in the tests), so that BLEU with ``tokenize="zh"`` gives sacrebleu's scores.
_ZH_RANGES = (
    (0x2001, 0x2A6D),
    (0x2E80, 0x2FDF),
    (0x2FF0, 0x303F),
    (0x3100, 0x312F),
    (0x31A0, 0x31EF),
    (0x3200, 0x4DB5),
    (0x4E00, 0x9FBB),
    (0xF900, 0xFA2D),
    (0xFA30, 0xFA6A),
    (0xFA70, 0xFAD9),
    (0xFE10, 0xFE1F),
    (0xFE30, 0xFE4F),
    (0xFF00, 0xFFEF),
)
# One character class for both single-character steps of ``zh``: a CJK character, then (the
# first of mteval's patterns) an ASCII punctuation character, each surrounded by spaces. A space
# is left out, as in ``13a``: padding a space with spaces changes no token.
_ZH_SINGLE = re.compile(
    "([" + "".join(f"\\u{a:04x}-\\u{b:04x}" for a, b in _ZH_RANGES) + re.escape(_PUNCT_13A) + "])"
)


def tokenize_zh(lines: list[str]) -> list[list[str]]:
    """sacrebleu's ``tokenize="zh"``: each line stripped, every CJK character (see
    ``_ZH_RANGES``) made a token of its own, then mteval's patterns on the rest, as ``13a``
    runs them but without its entity and ``<skipped>`` clean-up, and without padding the line:
    a period or comma at either end of a line is split off only as the patterns split it
    there (``"7."`` stays one token at the end of a line, where ``13a`` splits it).

    The single-character step runs once over the batch joined by newlines (no line holds one
    then); the two-character patterns run line by line, since at a line's ends they see no
    neighbour."""
    stripped = [line.strip() for line in lines]
    text = "\n".join(stripped)
    if text.count("\n") == len(stripped) - 1:
        spaced = _ZH_SINGLE.sub(r" \1 ", text).split("\n")
    else:  # a line holds a newline: line by line
        spaced = [_ZH_SINGLE.sub(r" \1 ", line) for line in stripped]
    out = []
    for line in spaced:
        if "." in line or "," in line:
            line = _NOT_DIGIT_THEN_PERIOD.sub(_split_13a, line)
            line = _PERIOD_THEN_NOT_DIGIT.sub(_split_13a_after, line)
        if "-" in line:
            line = _DIGIT_THEN_DASH.sub(" - ", line)
        out.append(line.split())
    return out


_INTL: list[tuple[Any, str]] = []


def tokenize_intl(lines: list[str]) -> list[list[str]]:
    """mteval-v14's international tokens (sacrebleu's ``tokenize="intl"``).

    Needs the ``regex`` package (for Unicode property classes), which sacrebleu also needs.
    """
    if not _INTL:
        try:
            import regex
        except ImportError:  # pragma: no cover - regex ships with sacrebleu
            raise InputError(
                "tokenize: 'intl' needs the 'regex' package; install streammetrics[text]"
            ) from None
        _INTL.extend(
            [
                # punctuation after a non-digit, punctuation before a non-digit, and symbols
                (regex.compile(r"(\P{N})(\p{P})"), r"\1 \2 "),
                (regex.compile(r"(\p{P})(\P{N})"), r" \1 \2"),
                (regex.compile(r"(\p{S})"), r" \1 "),
            ]
        )
    out = []
    for line in lines:
        line = line.rstrip()
        for pattern, repl in _INTL:
            line = pattern.sub(repl, line)
        out.append(line.split())
    return out


TOKENIZERS: dict[str, Tokenizer] = {
    "13a": tokenize_13a,
    "none": tokenize_none,
    "char": tokenize_char,
    "intl": tokenize_intl,
    "zh": tokenize_zh,
}


def get_tokenizer(name: Any) -> Tokenizer:
    """The batch tokeniser called ``name``; ``InputError`` naming the choices otherwise."""
    if not isinstance(name, str) or name not in TOKENIZERS:
        raise InputError(f"tokenize: must be one of {sorted(TOKENIZERS)}; got {name!r}")
    return TOKENIZERS[name]
