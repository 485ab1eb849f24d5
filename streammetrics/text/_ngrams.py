"""Vectorised BLEU sufficient statistics of a batch of tokenised sentences.

For each hypothesis, sacrebleu counts its n-grams (orders 1 to N), clips each count by the
largest count of that n-gram in any one reference, and sums; it also picks the reference length
closest to the hypothesis length (the shorter one on a tie). This module computes the batch's
sums of those numbers with a few numpy sorts instead of a Python ``Counter`` per sentence:

* tokens get small ids local to their sentence (hypothesis plus its references), so an n-gram
  of ids below ``L`` is exactly the integer ``sum(id_j * L**(n-1-j))`` and, prefixed with the
  line (or sentence) number, a unique int64 key;
* counting n-grams per line and per sentence is ``np.unique`` over those keys, clipping is a
  ``searchsorted`` of the hypothesis keys in the reference keys.

The keys are exact (no hashing): a batch whose keys could pass 2**62 is cut into smaller
batches, and a single sentence too long for that is counted with ``collections.Counter``.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

__all__ = ["bleu_statistics", "closest_length"]

#: Keys stay below this bound (tests lower it to exercise the fallbacks).
KEY_LIMIT = 1 << 62


def closest_length(hyp_len: int, ref_lens: list[int]) -> int:
    """The reference length closest to ``hyp_len``; the shorter one on a tie."""
    return min(ref_lens, key=lambda r: (abs(hyp_len - r), r))


def _counter_statistics(hyp: list[str], refs: list[list[str]], order: int) -> np.ndarray:
    # The plain definition, for sentences too long for exact int64 keys.
    out = np.zeros(2 + 2 * order, dtype=np.int64)
    out[0] = len(hyp)
    out[1] = closest_length(len(hyp), [len(r) for r in refs])
    for n in range(1, order + 1):
        grams = Counter(tuple(hyp[i : i + n]) for i in range(len(hyp) - n + 1))
        best: Counter[tuple[str, ...]] = Counter()
        for ref in refs:
            for gram, c in Counter(tuple(ref[i : i + n]) for i in range(len(ref) - n + 1)).items():
                if c > best[gram]:
                    best[gram] = c
        out[1 + n] = sum(min(c, best[g]) for g, c in grams.items() if g in best)
        out[1 + order + n] = max(len(hyp) - n + 1, 0)
    return out


def bleu_statistics(hyps: list[list[str]], refs: list[list[list[str]]], order: int) -> np.ndarray:
    """``[hyp_len, ref_len, correct_1..N, total_1..N]`` summed over a batch (int64).

    ``hyps[i]`` is the token list of hypothesis ``i``, ``refs[i]`` the token lists of its
    (one or more) references.
    """
    out = np.zeros(2 + 2 * order, dtype=np.int64)
    if not hyps:
        return out
    flat: list[int] = []
    line_len: list[int] = []
    n_refs: list[int] = []
    vocab = 1
    for hyp, rs in zip(hyps, refs, strict=True):
        tokens = hyp if len(rs) == 0 else hyp + [t for r in rs for t in r]
        local = dict.fromkeys(tokens)  # first-seen order
        if len(local) > vocab:
            vocab = len(local)
        flat.extend(map(dict(zip(local, range(len(local)), strict=True)).__getitem__, tokens))
        line_len.append(len(hyp))
        line_len.extend(len(r) for r in rs)
        n_refs.append(len(rs))
    n_lines = len(line_len)
    if n_lines * vocab**order >= KEY_LIMIT:
        if len(hyps) == 1:
            return _counter_statistics(hyps[0], refs[0], order)
        half = len(hyps) // 2
        first = bleu_statistics(hyps[:half], refs[:half], order)
        second = bleu_statistics(hyps[half:], refs[half:], order)
        return np.asarray(first + second, dtype=np.int64)
    return _vector_statistics(
        np.array(flat, dtype=np.int64),
        np.array(line_len, dtype=np.int64),
        np.array(n_refs, dtype=np.int64),
        vocab,
        order,
    )


def _count(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if len(keys) == 0:
        return keys, keys
    keys = np.sort(keys)
    edge = np.empty(len(keys), dtype=bool)
    edge[0] = True
    np.not_equal(keys[1:], keys[:-1], out=edge[1:])
    first = np.flatnonzero(edge)
    counts = np.diff(np.append(first, len(keys)))
    return keys[first], counts


def _vector_statistics(
    ids: np.ndarray, line_len: np.ndarray, n_refs: np.ndarray, vocab: int, order: int
) -> np.ndarray:
    out = np.zeros(2 + 2 * order, dtype=np.int64)
    n_sent = len(n_refs)
    n_lines = len(line_len)
    group = n_refs + 1
    hyp_line = np.zeros(n_sent, dtype=np.int64)
    np.cumsum(group[:-1], out=hyp_line[1:])
    line_sent = np.repeat(np.arange(n_sent, dtype=np.int64), group)
    is_hyp_line = np.zeros(n_lines, dtype=bool)
    is_hyp_line[hyp_line] = True

    # Lengths: the closest reference length, the shorter on a tie, as the minimum of
    # |hyp - ref| * big + ref over each sentence's references.
    hyp_len = line_len[hyp_line]
    ref_len = line_len[~is_hyp_line]
    ref_sent = line_sent[~is_hyp_line]
    big = int(ref_len.max()) + 1 if len(ref_len) else 1
    key = np.abs(ref_len - hyp_len[ref_sent]) * big + ref_len
    ref_start = np.zeros(n_sent, dtype=np.int64)
    np.cumsum(n_refs[:-1], out=ref_start[1:])
    out[0] = hyp_len.sum()
    out[1] = (np.minimum.reduceat(key, ref_start) % big).sum()

    # Per position: its line, whether the line is a hypothesis, tokens left in its line.
    pos_line = np.repeat(np.arange(n_lines, dtype=np.int64), line_len)
    starts = np.zeros(n_lines, dtype=np.int64)
    np.cumsum(line_len[:-1], out=starts[1:])
    left = line_len[pos_line] - (np.arange(len(ids), dtype=np.int64) - starts[pos_line])
    pos_hyp = is_hyp_line[pos_line]
    pos_sent = line_sent[pos_line]
    one_ref = bool((n_refs == 1).all())

    gram = ids
    scale = 1
    for n in range(1, order + 1):
        if n > 1:
            gram = gram[:-1] * vocab + ids[n - 1 :]
        scale *= vocab
        m = len(gram)
        valid = left[:m] >= n
        hmask = valid & pos_hyp[:m]
        rmask = valid & ~pos_hyp[:m]
        hyp_keys, hyp_counts = _count(pos_sent[:m][hmask] * scale + gram[hmask])
        out[1 + order + n] = len(np.flatnonzero(hmask))
        if one_ref:
            ref_keys, ref_counts = _count(pos_sent[:m][rmask] * scale + gram[rmask])
        else:
            # Count per reference line, then keep each n-gram's largest count per sentence.
            line_keys, line_counts = _count(pos_line[:m][rmask] * scale + gram[rmask])
            sent_keys = line_sent[line_keys // scale] * scale + line_keys % scale
            by = np.argsort(sent_keys, kind="stable")
            sent_keys, line_counts = sent_keys[by], line_counts[by]
            if len(sent_keys):
                edge = np.empty(len(sent_keys), dtype=bool)
                edge[0] = True
                np.not_equal(sent_keys[1:], sent_keys[:-1], out=edge[1:])
                first = np.flatnonzero(edge)
                ref_keys = sent_keys[first]
                ref_counts = np.maximum.reduceat(line_counts, first)
            else:
                ref_keys, ref_counts = sent_keys, line_counts
        if len(hyp_keys) and len(ref_keys):
            at = np.minimum(np.searchsorted(ref_keys, hyp_keys), len(ref_keys) - 1)
            found = ref_keys[at] == hyp_keys
            out[1 + n] = np.minimum(hyp_counts[found], ref_counts[at[found]]).sum()
    return out
