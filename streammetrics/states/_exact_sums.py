"""The AUC's and DeLong's sums of a table of integer counts as exact integers, and the same
sums after a few entries change, from prefix sums kept with the table.

A table ascending by score holds ``p`` positives and ``n`` negatives per entry. With ``B = 2 *
(negatives at or below) - n`` (twice the negatives below plus half the tied ones) and ``A = 2 *
(positives at or below) - p``, three integers carry the AUC and DeLong's variance:

* ``S1 = sum p B``: twice the AUC's numerator (``AUC = S1 / (2 P N)``);
* ``S2 = sum p B**2`` and ``U2 = sum n A**2``: four times the sums of the squared placements
  (``streammetrics.uncertainty.delong`` takes ``s1, s2, u2 = S1 / 2, S2 / 4, U2 / 4``).

Being integers, they are the same however they are summed: over the whole table
(:func:`table_sums`), or as the sums of a table already read moved by a few queued entries
(:func:`moved_sums`). A new entry shifts ``B`` by the same amount for every held entry between
two queued keys, so the held entries' change is ``2 d sum p B + d**2 sum p`` per such run, read
off the kept prefix sums of ``p`` and ``p B`` (:class:`Prefix`): O(k log m) for k queued entries
into m held ones, where folding them in and summing again is O(m). A served exact ``ROCAUC``
reads its value and interval so (``ScoreBuckets.exact_sums``).

Every sum and product stays below ``2**63`` (:func:`fits`): ``S2 <= P (2N)**2`` and ``U2 <= N
(2P)**2``, so int64 arithmetic is exact. That holds up to about 1.3 million rows of each
class (balanced); past it the callers sum the whole table in floats, as before 0.8.27.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Placed", "Prefix", "Sums", "fits", "moved_sums", "placed", "table_prefix", "table_sums"]

#: Every product and sum of :func:`table_sums` and :func:`moved_sums` stays below this.
SUM_LIMIT = 1 << 63

#: ``(P, N, S1, S2, U2)``, Python ints.
Sums = tuple[int, int, int, int, int]

_I64 = np.dtype(np.int64)
_sum, _accumulate = np.add.reduce, np.add.accumulate


def fits(p_total: int, n_total: int) -> bool:
    """Whether a table of these class totals has every sum below :data:`SUM_LIMIT`: the
    largest, ``S2`` or ``U2``, is at most ``4 P N max(P, N)``."""
    return 4 * p_total * n_total * max(p_total, n_total) < SUM_LIMIT


class Prefix(NamedTuple):
    """A table's sums with its inclusive prefix sums of ``p``, ``n``, ``p B`` and ``n A``
    (int64): what :func:`moved_sums` reads a run of held entries from."""

    sums: Sums
    cum_p: np.ndarray
    cum_n: np.ndarray
    cum_pb: np.ndarray
    cum_na: np.ndarray


def table_sums(pos: np.ndarray, neg: np.ndarray) -> Sums | None:
    """``(P, N, S1, S2, U2)`` of a table of int64 counts (ascending by score, at least one
    entry); None for other dtypes or past :func:`fits`."""
    totals = _totals(pos, neg)
    if totals is None:
        return None
    scratch = np.empty((2, len(pos)), dtype=_I64)  # (both sides' B and w B, in turn)
    s1, s2 = _side(pos, neg, scratch[0], scratch[1])
    _, u2 = _side(neg, pos, scratch[0], scratch[1])
    return *totals, s1, s2, u2


def table_prefix(pos: np.ndarray, neg: np.ndarray) -> Prefix | None:
    """:func:`table_sums` with the prefix sums :func:`moved_sums` needs (four int64 arrays of
    the table's length); None as there."""
    totals = _totals(pos, neg)
    if totals is None:
        return None
    b = np.empty(len(pos), dtype=_I64)
    cum_n, cum_pb = _accumulate(neg), np.empty(len(pos), dtype=_I64)
    s1, s2 = _side(pos, neg, b, cum_pb, cum_n)
    cum_p, cum_na = _accumulate(pos), np.empty(len(pos), dtype=_I64)
    _, u2 = _side(neg, pos, b, cum_na, cum_p)
    _accumulate(cum_pb, out=cum_pb)
    _accumulate(cum_na, out=cum_na)
    return Prefix((*totals, s1, s2, u2), cum_p, cum_n, cum_pb, cum_na)


def _totals(pos: np.ndarray, neg: np.ndarray) -> tuple[int, int] | None:
    """``(P, N)`` of int64 counts within :func:`fits`, else None."""
    if pos.dtype != _I64 or neg.dtype != _I64 or not len(pos):
        return None
    p_total, n_total = int(_sum(pos)), int(_sum(neg))
    return (p_total, n_total) if fits(p_total, n_total) else None


def _side(
    w: np.ndarray, other: np.ndarray, b: np.ndarray, wb: np.ndarray, cum: np.ndarray | None = None
) -> tuple[int, int]:
    """``(sum w B, sum w B**2)`` with ``B = 2 * (other at or below) - other``: the positives'
    side (``S1``, ``S2``) for ``w = pos``, the negatives' (``U2``) for ``w = neg``. ``B`` and
    ``w B`` are written into ``b`` and ``wb``; ``cum``, if given, holds the prefix sums of
    ``other``. (Into given arrays: a fresh array of a million entries costs more to fault in
    than to fill.)"""
    if cum is None:
        cum = _accumulate(other, out=b)
    np.add(cum, cum, out=b)
    b -= other
    np.multiply(w, b, out=wb)
    return int(_sum(wb)), int(np.einsum("i,i->", wb, b))


class Placed(NamedTuple):
    """Where sorted keys fall in a held table: per key (columns of ``info``, int64), the held
    counts at that key (0 if not held), and the held positives, negatives, ``p B`` and ``n A``
    below it (:data:`PLACED_ROWS`). A pure function of the table and the key, so it is kept
    from read to read and only keys not placed before are searched (:func:`placed`)."""

    keys: np.ndarray
    info: np.ndarray


#: The rows of :attr:`Placed.info`.
PLACED_ROWS = ("p at", "n at", "p below", "n below", "pb below", "na below")


def placed(held: Prefix, keys: np.ndarray, new_keys: np.ndarray, known: Placed | None) -> Placed:
    """:class:`Placed` of ``new_keys`` (sorted, distinct) in the table of ``keys`` (with prefix
    sums ``held``), taking what ``known`` (an earlier :class:`Placed` in the same table) holds.

    A binary search per key into the table is most of a read's cost (about 120 ns a key at a
    million entries: every step a cache miss); the queued keys of one read are mostly the last
    read's, so only the others are searched."""
    if known is not None and len(known.keys):
        at = np.searchsorted(known.keys, new_keys)
        at = np.minimum(at, len(known.keys) - 1)
        old = known.keys[at] == new_keys
        if old.all():
            return Placed(new_keys, known.info[:, at])
        fresh = ~old
        info = np.empty((len(PLACED_ROWS), len(new_keys)), dtype=_I64)
        info[:, old] = known.info[:, at[old]]
        info[:, fresh] = _searched(held, keys, new_keys[fresh])
        return Placed(new_keys, info)
    return Placed(new_keys, _searched(held, keys, new_keys))


def _searched(held: Prefix, keys: np.ndarray, new_keys: np.ndarray) -> np.ndarray:
    """:attr:`Placed.info` of ``new_keys``, searched in the table."""
    below = np.searchsorted(keys, new_keys)  # held keys below each new key
    at = np.minimum(below, len(keys) - 1)
    hit = keys[at] == new_keys
    hit &= below < len(keys)
    info = np.zeros((len(PLACED_ROWS), len(new_keys)), dtype=_I64)
    # The held counts at a hit key: the prefix sums' step there.
    info[0], info[1] = held.cum_p[at], held.cum_n[at]
    last, some = below - 1, below > 0
    lower = last[some]
    for row, cum in enumerate((held.cum_p, held.cum_n, held.cum_pb, held.cum_na), start=2):
        info[row, some] = cum[lower]
    info[0] -= np.where(some, info[2], 0)
    info[1] -= np.where(some, info[3], 0)
    info[:2, ~hit] = 0
    return info


def moved_sums(
    held: Prefix, where: Placed, new_pos: np.ndarray, new_neg: np.ndarray
) -> Sums | None:
    """The sums of the table of ``held`` with the entries ``where.keys, new_pos, new_neg``
    (sorted, distinct keys; int64 counts) added: a new key becomes an entry, a held key's
    counts grow. None past :func:`fits`.

    Each new entry j has ``below_j`` held keys below it and, if its key is held, that entry at
    ``below_j`` (``hit``). Held entries with j new keys below them form run j: ``B`` moves by
    ``2 * (new negatives below)`` there, ``A`` by ``2 * (new positives below)``. The sums take
    that move for every held entry, then trade each hit entry's moved terms for the terms of
    the entry it becomes, and add the new keys' terms."""
    (held_p, held_n, s1, s2, u2) = held.sums
    added_p, added_n = int(_sum(new_pos)), int(_sum(new_neg))
    p_total, n_total = held_p + added_p, held_n + added_n
    if not fits(p_total, n_total):
        return None
    old_p, old_n, p_below, n_below, pb_below, na_below = where.info
    # Runs of held entries: run j (j >= 1) lies between new keys j - 1 and j (the last run
    # reaching the end), read as differences of the prefix sums at the held entries at or
    # below each new key; B moves by 2 * (new negatives of keys 0..j-1) there, A by
    # 2 * (new positives of keys 0..j-1).
    ends_p = np.append(p_below + old_p, held_p)
    ends_n = np.append(n_below + old_n, held_n)
    ends_pb = np.append(pb_below + old_p * (2 * n_below + old_n), held.sums[2])
    ends_na = np.append(na_below + old_n * (2 * p_below + old_p), int(held.cum_na[-1]))
    new_n_upto, new_p_upto = _accumulate(new_neg), _accumulate(new_pos)
    move_b, move_a = 2 * new_n_upto, 2 * new_p_upto
    run_p, run_pb = np.diff(ends_p), np.diff(ends_pb)
    run_n, run_na = np.diff(ends_n), np.diff(ends_na)
    s1 += int(_sum(move_b * run_p))
    s2 += int(_sum(move_b * (2 * run_pb + move_b * run_p)))
    u2 += int(_sum(move_a * (2 * run_na + move_a * run_n)))
    # Hit entries: their moved terms out; every new key's entry in.
    moved_b = 2 * (n_below + new_n_upto - new_neg)  # B less the entry's own negatives, moved
    moved_a = 2 * (p_below + new_p_upto - new_pos)
    b_old, a_old = moved_b + old_n, moved_a + old_p
    all_p, all_n = old_p + new_pos, old_n + new_neg
    b_new, a_new = moved_b + all_n, moved_a + all_p
    s1 += int(_sum(all_p * b_new)) - int(_sum(old_p * b_old))
    s2 += int(_sum(all_p * b_new * b_new)) - int(_sum(old_p * b_old * b_old))
    u2 += int(_sum(all_n * a_new * a_new)) - int(_sum(old_n * a_old * a_old))
    return p_total, n_total, s1, s2, u2
