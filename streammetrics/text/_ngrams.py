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

chrF needs the clipped matches of a hypothesis against each of its references separately (it
keeps the best reference), over long character n-grams: :func:`match_counts` names each
n-gram by a dense rank instead (an n-gram is its (n-1)-gram prefix's rank and its last token's
rank), so keys stay below ``positions**2`` whatever the alphabet or the order.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

__all__ = ["bleu_statistics", "closest_length", "match_counts"]

#: Keys stay below this bound (tests lower it to exercise the fallbacks).
KEY_LIMIT = 1 << 62


def closest_length(hyp_len: int, ref_lens: list[int]) -> int:
    """The reference length closest to ``hyp_len``; the shorter one on a tie."""
    return min(ref_lens, key=lambda r: (abs(hyp_len - r), r))


def _counter_statistics(hyp: list[str], refs: list[list[str]], order: int) -> np.ndarray:
    """The plain definition, with ``collections.Counter``: for sentences too long for exact
    int64 keys, and for batches of few tokens (:data:`SMALL_TOKENS`), where the vectorised
    path's fixed cost of some 130 µs dominates (one sentence of a translation server's
    request). A reference's n-grams join the best counts as a multiset union (the largest
    count of each), the clipped matches are the intersection with the hypothesis's."""
    out = np.zeros(2 + 2 * order, dtype=np.int64)
    out[0] = len(hyp)
    out[1] = closest_length(len(hyp), [len(r) for r in refs])
    for n in range(1, order + 1):
        grams = Counter(zip(*[hyp[i:] for i in range(n)], strict=False))
        best: Counter[tuple[str, ...]] = Counter()
        for ref in refs:
            best |= Counter(zip(*[ref[i:] for i in range(n)], strict=False))
        out[1 + n] = sum((grams & best).values())
        out[1 + order + n] = max(len(hyp) - n + 1, 0)
    return out


#: Batches of at most this many tokens (hypotheses and references together) are counted with
#: ``Counter`` per sentence (about 1.5 µs a token over four orders) rather than vectorised
#: (some 130 µs on a busy machine, plus 0.5 µs a token): a BLEU update of one 12-word
#: sentence and its reference, 114 -> 45 µs.
SMALL_TOKENS = 64


def bleu_statistics(hyps: list[list[str]], refs: list[list[list[str]]], order: int) -> np.ndarray:
    """``[hyp_len, ref_len, correct_1..N, total_1..N]`` summed over a batch (int64).

    ``hyps[i]`` is the token list of hypothesis ``i``, ``refs[i]`` the token lists of its
    (one or more) references.
    """
    out = np.zeros(2 + 2 * order, dtype=np.int64)
    if not hyps:
        return out
    if sum(len(h) + sum(map(len, rs)) for h, rs in zip(hyps, refs, strict=True)) <= SMALL_TOKENS:
        for hyp, rs in zip(hyps, refs, strict=True):
            out += _counter_statistics(hyp, rs, order)
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


#: Batches of at most this many positions (characters or words of every line) are matched
#: with ``Counter`` per line (:func:`_counted_matches`) rather than with the sorts of
#: :func:`match_counts`, whose fixed cost (some 300 µs for six orders) dominates one sentence.
SMALL_POSITIONS = 256


def _counted_matches(
    ids: np.ndarray,
    line_len: np.ndarray,
    n_refs: np.ndarray,
    order: int,
    out: np.ndarray,
    by_line: bool,
) -> np.ndarray:
    """:func:`match_counts` by the definition: each reference line's n-grams intersected (as
    multisets) with its hypothesis's, per order, into ``out`` (one row per reference line, or
    the one row of their sums)."""
    tokens, lengths = ids.tolist(), line_len.tolist()
    line = pos = row = 0
    for refs in n_refs.tolist():
        hyp = tokens[pos : pos + lengths[line]]
        pos += lengths[line]
        line += 1
        grams = [
            Counter(zip(*[hyp[i:] for i in range(n)], strict=False)) for n in range(1, order + 1)
        ]
        for _ in range(refs):
            ref = tokens[pos : pos + lengths[line]]
            pos += lengths[line]
            line += 1
            target = out[row] if by_line else out[0]
            for n in range(1, order + 1):
                if len(ref) < n or len(hyp) < n:
                    break
                common = grams[n - 1] & Counter(zip(*[ref[i:] for i in range(n)], strict=False))
                target[n - 1] += sum(common.values())
            row += 1
    return out


def match_counts(
    ids: np.ndarray, line_len: np.ndarray, n_refs: np.ndarray, order: int, by_line: bool = True
) -> np.ndarray:
    """Clipped n-gram matches of every reference line with its hypothesis, orders 1 to ``order``.

    The lines are concatenated in ``ids`` (non-negative int64 token ids, equal tokens equal ids),
    sentence after sentence, each as its hypothesis line then its ``n_refs[i]`` reference lines;
    ``line_len`` holds every line's length. Row ``j`` of the ``(n_ref_lines, order)`` int64
    result is ``sum(min(hyp_count[g], ref_count[g]))`` over the n-grams ``g`` of reference line
    ``j``, per order. With ``by_line=False`` only the sum of those rows, shape ``(1, order)``.

    One ``argsort`` per order: a position's key is its n-gram's dense rank (one per sentence and
    n-gram: the rank of its (n-1)-gram prefix and of its last token), shifted left past its
    line's offset in the sentence (0 for the hypothesis, a last value for positions whose
    n-gram would run past the line's end), so sorted keys hold each n-gram's hypothesis count
    first, then its count in each reference. Keys stay below ``positions**2`` (denser ranks are
    taken first when the batch is so varied that they would pass ``KEY_LIMIT``).
    """
    n_sent, n_lines = len(n_refs), len(line_len)
    out = np.zeros((n_lines - n_sent if by_line else 1, order), dtype=np.int64)
    total = len(ids)
    if total == 0 or n_sent == 0:
        return out
    if total <= SMALL_POSITIONS:
        return _counted_matches(ids, line_len, n_refs, order, out, by_line)
    sent_line = np.zeros(n_sent, dtype=np.int64)
    np.cumsum(n_refs[:-1] + 1, out=sent_line[1:])
    line_sent = np.repeat(np.arange(n_sent, dtype=np.int64), n_refs + 1)
    line_off = np.arange(n_lines, dtype=np.int64) - sent_line[line_sent]
    # A reference line's row in ``out``: its line number less the hypotheses up to it.
    line_row = np.arange(n_lines, dtype=np.int64) - line_sent - 1
    pos_line = np.repeat(np.arange(n_lines, dtype=np.int64), line_len)
    starts = np.zeros(n_lines, dtype=np.int64)
    np.cumsum(line_len[:-1], out=starts[1:])
    left = line_len[pos_line] - (np.arange(total, dtype=np.int64) - starts[pos_line])
    pos_off = line_off[pos_line]
    shift = (int(n_refs.max()) + 1).bit_length()  # offsets 0 to max(n_refs), and past_end
    width = 1 << shift
    past_end = width - 1

    # Order 1: the key names (sentence, token); later orders (prefix rank, last token's rank).
    base = int(ids.max()) + 1
    content = line_sent[pos_line] * base + ids
    bound = n_sent * base
    first_rank = ids
    rank = ids
    for n in range(1, order + 1):
        m = total - n + 1
        if m <= 0:
            break
        if n > 1:
            content = rank[:m] * base + first_rank[n - 1 :]
        valid = left[:m] >= n
        if not valid.any():
            break
        if bound * width >= KEY_LIMIT:
            # Dense ranks first so the offset still fits (only for huge, varied batches).
            _, content = np.unique(content, return_inverse=True)
            bound = int(content.max()) + 1
            if bound * width >= KEY_LIMIT:
                raise OverflowError("too many characters in one batch for exact n-gram keys")
        key = (content << shift) | np.where(valid, pos_off[:m], past_end)
        by = np.argsort(key)
        key = key[by]
        gram_key = key >> shift
        new_gram = np.empty(m, dtype=np.int64)
        new_gram[0] = 0
        np.not_equal(gram_key[1:], gram_key[:-1], out=new_gram[1:])
        sorted_rank = np.cumsum(new_gram)
        n_grams = int(sorted_rank[-1]) + 1
        if n < order:
            rank = np.empty(m, dtype=np.int64)
            rank[by] = sorted_rank
            if n == 1:
                first_rank, base = rank, n_grams
            bound = n_grams * base
        # One entry per (n-gram, line offset): its count, and its n-gram's hypothesis count.
        edge = np.empty(m, dtype=bool)
        edge[0] = True
        np.not_equal(key[1:], key[:-1], out=edge[1:])
        first = np.flatnonzero(edge)
        counts = np.diff(first, append=m)
        off = key[first] & (width - 1)
        group = np.flatnonzero(new_gram[first])  # an n-gram's first entry: the hypothesis's
        group = np.insert(group, 0, 0)
        hyp_count = counts[group] * (off[group] == 0)
        matched = np.minimum(counts, np.repeat(hyp_count, np.diff(group, append=len(first))))
        matched *= (off > 0) & (off < past_end)
        if not by_line:
            out[0, n - 1] = matched.sum()
            continue
        rows = line_row[pos_line[by[first]]] + 1  # entries of hypotheses add 0 anywhere
        out[:, n - 1] = np.bincount(rows, weights=matched, minlength=len(out) + 1)[1:]
    return out
