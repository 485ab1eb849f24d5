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

While every sum and product stays below ``2**63`` (:func:`fits`: ``S2 <= P (2N)**2``, ``U2 <= N
(2P)**2``; about 1.3 million rows of each class, balanced), int64 arithmetic is exact. Past
it, the same int64 arithmetic wraps: it gives each sum modulo ``2**64`` exactly, and a float
estimate of the sum, certainly within ``2**62`` of it, picks the one integer with that
remainder (:func:`_joined`; :func:`wide_fits` bounds the estimates' error: about 500 million
rows of each class at a million entries). Past that, the callers sum the whole table in
floats, as before 0.8.27.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "Placed",
    "Prefix",
    "Sums",
    "fits",
    "moved_sums",
    "placed",
    "ranked_sum",
    "table_prefix",
    "table_sums",
    "wide_fits",
]

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


def wide_fits(p_total: int, n_total: int, terms: int) -> bool:
    """Whether float estimates of sums of ``terms`` terms (entries, or 8 per queued entry)
    are within ``2**61`` of sums up to ``4 P N max(P, N)``: each float sum, product and
    difference errs by at most ``2**-50`` of that bound per term (pairwise sums err far less;
    this is the crude bound), so ``bound * terms < 2**111`` does."""
    return 4 * p_total * n_total * max(p_total, n_total) * (terms + 64) < 1 << 111


def _joined(wrapped: int, estimate: float) -> int:
    """The integer equal to ``wrapped`` modulo ``2**64`` nearest ``estimate`` (the true sum,
    when the estimate is within ``2**62`` of it)."""
    near = int(estimate)
    return near + (wrapped - near + (1 << 63)) % (1 << 64) - (1 << 63)


def _near(wrapped: np.ndarray, estimate: np.ndarray) -> np.ndarray:
    """:func:`_joined` of arrays, as float64 (within a rounding of the integers): the
    estimate, rounded, and its remainder modulo ``2**64`` (``fmod`` is exact) give the
    estimate's integer modulo ``2**64``; the wrapped difference to it is the correction."""
    near = np.rint(estimate)
    low = np.fmod(near, 2.0**64).astype(np.uint64).view(np.int64)
    out: np.ndarray = near + (wrapped - low).astype(np.float64)
    return out


class Prefix(NamedTuple):
    """A table's sums with its inclusive prefix sums of ``p``, ``n``, ``p B`` and ``n A``
    (int64; the last two modulo ``2**64`` past :func:`fits`, with float estimates ``est_pb``,
    ``est_na`` beside them, else None): what :func:`moved_sums` reads a run of held entries
    from."""

    sums: Sums
    cum_p: np.ndarray
    cum_n: np.ndarray
    cum_pb: np.ndarray
    cum_na: np.ndarray
    est_pb: np.ndarray | None = None
    est_na: np.ndarray | None = None
    #: The table's every ``2**BLOCK_BITS``-th key (the last of each block), for :func:`_below`.
    coarse: np.ndarray | None = None


def table_sums(pos: np.ndarray, neg: np.ndarray) -> Sums | None:
    """``(P, N, S1, S2, U2)`` of a table of int64 counts (ascending by score, at least one
    entry); None for other dtypes or past :func:`wide_fits`."""
    totals = _totals(pos, neg)
    if totals is None:
        return None
    scratch = np.empty((2, len(pos)), dtype=_I64)  # (both sides' B and w B, in turn)
    wide = not fits(*totals)
    s1, s2 = _side(pos, neg, scratch[0], scratch[1], wide)
    _, u2 = _side(neg, pos, scratch[0], scratch[1], wide)
    return *totals, s1, s2, u2


def ranked_sum(pos: np.ndarray, neg: np.ndarray) -> int | None:
    """``S1`` alone (the AUC's numerator, twice), for int64 counts while ``2 P N < 2**63`` or
    within :func:`wide_fits` (so wherever :func:`table_sums` gives it too); else None."""
    if pos.dtype != _I64 or neg.dtype != _I64 or not len(pos):
        return None
    p_total, n_total = int(_sum(pos)), int(_sum(neg))
    wide = 2 * p_total * n_total >= SUM_LIMIT
    if wide and not wide_fits(p_total, n_total, len(pos)):
        return None
    b = _doubled_below(neg, np.empty(len(neg), dtype=_I64))
    found = int(np.einsum("i,i->", pos, b))
    return _joined(found, float(np.einsum("i,i->", pos * 1.0, b * 1.0))) if wide else found


def table_prefix(pos: np.ndarray, neg: np.ndarray, keys: np.ndarray | None = None) -> Prefix | None:
    """:func:`table_sums` with the prefix sums :func:`moved_sums` needs (four int64 arrays of
    the table's length, and two float64 ones past :func:`fits`), and a coarse index of the
    table's ``keys`` if given; None as there."""
    totals = _totals(pos, neg)
    if totals is None:
        return None
    wide = not fits(*totals)
    b = np.empty(len(pos), dtype=_I64)
    cum_n, cum_pb = _accumulate(neg), np.empty(len(pos), dtype=_I64)
    s1, s2 = _side(pos, neg, b, cum_pb, wide, cum_n)
    est_pb = _accumulate(pos * b.astype(np.float64)) if wide else None
    cum_p, cum_na = _accumulate(pos), np.empty(len(pos), dtype=_I64)
    _, u2 = _side(neg, pos, b, cum_na, wide, cum_p)
    est_na = _accumulate(neg * b.astype(np.float64)) if wide else None
    _accumulate(cum_pb, out=cum_pb)
    _accumulate(cum_na, out=cum_na)
    coarse = None if keys is None else keys[(1 << BLOCK_BITS) - 1 :: 1 << BLOCK_BITS].copy()
    sums = (*totals, s1, s2, u2)
    return Prefix(sums, cum_p, cum_n, cum_pb, cum_na, est_pb, est_na, coarse)


def _totals(pos: np.ndarray, neg: np.ndarray) -> tuple[int, int] | None:
    """``(P, N)`` of int64 counts within :func:`wide_fits`, else None."""
    if pos.dtype != _I64 or neg.dtype != _I64 or not len(pos):
        return None
    p_total, n_total = int(_sum(pos)), int(_sum(neg))
    return (p_total, n_total) if wide_fits(p_total, n_total, len(pos)) else None


def _doubled_below(other: np.ndarray, out: np.ndarray, cum: np.ndarray | None = None) -> np.ndarray:
    """``B = 2 * (other at or below) - other`` into ``out``, from ``cum`` (the prefix sums of
    ``other``) if given, else taking them in ``out`` first."""
    if cum is None:
        cum = _accumulate(other, out=out)
    np.add(cum, cum, out=out)
    out -= other
    return out


def _side(
    w: np.ndarray,
    other: np.ndarray,
    b: np.ndarray,
    wb: np.ndarray,
    wide: bool,
    cum: np.ndarray | None = None,
) -> tuple[int, int]:
    """``(sum w B, sum w B**2)`` with ``B = 2 * (other at or below) - other``: the positives'
    side (``S1``, ``S2``) for ``w = pos``, the negatives' (``U2``) for ``w = neg``. ``B`` and
    ``w B`` (modulo ``2**64`` if ``wide``) are written into ``b`` and ``wb``; ``cum``, if
    given, holds the prefix sums of ``other``. (Into given arrays: a fresh array of a million
    entries costs more to fault in than to fill.)"""
    _doubled_below(other, b, cum)
    np.multiply(w, b, out=wb)
    first, second = int(_sum(wb)), int(np.einsum("i,i->", wb, b))
    if not wide:
        return first, second
    part = w * b.astype(np.float64)
    estimates = float(_sum(part)), float(np.einsum("i,i->", part, b.astype(np.float64)))
    return _joined(first, estimates[0]), _joined(second, estimates[1])


class Placed(NamedTuple):
    """Where sorted keys fall in a held table: per key (columns of ``info``, int64), the held
    counts at that key (0 if not held), and the held positives, negatives, ``p B`` and ``n A``
    below it (:data:`PLACED_ROWS`; the last two modulo ``2**64`` past :func:`fits`, their
    float values in ``est``). A pure function of the table and the key, so it is kept from
    read to read and only keys not placed before are searched (:func:`placed`)."""

    keys: np.ndarray
    info: np.ndarray
    est: np.ndarray | None = None


#: The rows of :attr:`Placed.info`.
PLACED_ROWS = ("p at", "n at", "p below", "n below", "pb below", "na below")


def placed(held: Prefix, keys: np.ndarray, new_keys: np.ndarray, known: Placed | None) -> Placed:
    """:class:`Placed` of ``new_keys`` (sorted, distinct) in the table of ``keys`` (with prefix
    sums ``held``), taking what ``known`` (an earlier :class:`Placed` in the same table) holds.

    A binary search per key into the table is most of a read's cost (about 120 ns a key at a
    million entries: every step a cache miss); the queued keys of one read are mostly the last
    read's, so only the others are searched."""
    if known is None or not len(known.keys):
        return _searched(held, keys, new_keys)
    at = np.searchsorted(known.keys, new_keys)
    at = np.minimum(at, len(known.keys) - 1)
    old = known.keys[at] == new_keys
    if old.all():
        est = None if known.est is None else known.est[:, at]
        return Placed(new_keys, known.info[:, at], est)
    found = _searched(held, keys, new_keys[~old])
    info = np.empty((len(PLACED_ROWS), len(new_keys)), dtype=_I64)
    info[:, old], info[:, ~old] = known.info[:, at[old]], found.info
    if known.est is None or found.est is None:
        return Placed(new_keys, info)
    est = np.empty((2, len(new_keys)))
    est[:, old], est[:, ~old] = known.est[:, at[old]], found.est
    return Placed(new_keys, info, est)


#: :func:`_below` searches this many keys or more level by level, in blocks of
#: ``2**BLOCK_BITS`` table keys.
LOCKSTEP_KEYS = 512
BLOCK_BITS = 10


def _below(keys: np.ndarray, coarse: np.ndarray | None, new_keys: np.ndarray) -> np.ndarray:
    """``np.searchsorted(keys, new_keys)``: the table keys below each of ``new_keys``.

    ``searchsorted`` takes one key at a time, each step waiting on a cache miss once the table
    is out of the cache (a read's table is: 0.4-0.5 us a key at a million entries). Many keys
    are searched level by level instead, every key's probe of a level in one gather, so the
    misses of different keys overlap; the cached ``coarse`` index (each block's last key)
    gives the block, and ``BLOCK_BITS`` levels the place in it (1,000 keys into a million:
    0.41 -> 0.20 ms; below :data:`LOCKSTEP_KEYS` the fixed cost of the levels loses)."""
    if coarse is None or len(new_keys) < LOCKSTEP_KEYS:
        found: np.ndarray = np.searchsorted(keys, new_keys)
        return found
    last = len(keys) - 1
    below = np.searchsorted(coarse, new_keys) << BLOCK_BITS  # (whole blocks below each key)
    step = 1 << (BLOCK_BITS - 1)
    while step:  # the keys below among the block's first 2**BLOCK_BITS - 1 ...
        probe = below + (step - 1)
        inside = probe <= last
        np.minimum(probe, last, out=probe)
        below += ((keys[probe] < new_keys) & inside) * step
        step >>= 1
    probe = np.minimum(below, last)  # ... and its last
    below += (keys[probe] < new_keys) & (below <= last)
    return below


def _searched(held: Prefix, keys: np.ndarray, new_keys: np.ndarray) -> Placed:
    """:class:`Placed` of ``new_keys``, searched in the table."""
    below = _below(keys, held.coarse, new_keys)  # held keys below each new key
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
    if held.est_pb is None or held.est_na is None:
        return Placed(new_keys, info)
    est = np.zeros((2, len(new_keys)))
    est[0, some] = _near(info[4, some], held.est_pb[lower])
    est[1, some] = _near(info[5, some], held.est_na[lower])
    return Placed(new_keys, info, est)


def moved_sums(
    held: Prefix, where: Placed, new_pos: np.ndarray, new_neg: np.ndarray
) -> Sums | None:
    """The sums of the table of ``held`` with the entries ``where.keys, new_pos, new_neg``
    (sorted, distinct keys; int64 counts) added: a new key becomes an entry, a held key's
    counts grow. None past :func:`fits`, unless the table was summed past it (``held.est_pb``)
    and the estimates stay within :func:`wide_fits`.

    Each new entry j has ``below_j`` held keys below it and, if its key is held, that entry at
    ``below_j`` (``hit``). Held entries with j new keys below them form run j: ``B`` moves by
    ``2 * (new negatives below)`` there, ``A`` by ``2 * (new positives below)``. The sums take
    that move for every held entry, then trade each hit entry's moved terms for the terms of
    the entry it becomes, and add the new keys' terms. Past :func:`fits` the same int64
    arithmetic gives the moves modulo ``2**64``, and the same steps on floats their
    estimates."""
    held_p, held_n, s1, s2, u2 = held.sums
    p_total, n_total = held_p + int(_sum(new_pos)), held_n + int(_sum(new_neg))
    moves = _moves(held, where.info, new_pos, new_neg, _wrapped)
    if fits(p_total, n_total):
        return p_total, n_total, s1 + moves[0], s2 + moves[1], u2 + moves[2]
    if held.est_pb is None or where.est is None:
        return None
    if not wide_fits(p_total, n_total, len(held.cum_p) + 8 * len(new_pos)):
        return None
    info = where.info.astype(np.float64)
    info[4:] = where.est
    estimates = _moves(held, info, new_pos * 1.0, new_neg * 1.0, float)
    s1 += _joined(moves[0], estimates[0])
    s2 += _joined(moves[1], estimates[1])
    u2 += _joined(moves[2], estimates[2])
    return p_total, n_total, s1, s2, u2


def _wrapped(value: int) -> int:
    """``value`` modulo ``2**64`` as a signed int64's value."""
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


def _moves(
    held: Prefix,
    info: np.ndarray,
    new_pos: np.ndarray,
    new_neg: np.ndarray,
    end: Callable[[int], Any],
) -> tuple[Any, Any, Any]:
    """How much ``S1``, ``S2`` and ``U2`` move (see :func:`moved_sums`), by the arithmetic of
    ``info``'s dtype: int64 (exact within :func:`fits`, else modulo ``2**64``) or float64
    (estimates); ``end`` puts the held totals into it."""
    old_p, old_n, p_below, n_below, pb_below, na_below = info
    held_p, held_n, held_s1 = held.sums[:3]
    exact = info.dtype == _I64
    # Runs of held entries: run j (j >= 1) lies between new keys j - 1 and j (the last run
    # reaching the end), read as differences of the prefix sums at the held entries at or
    # below each new key; B moves by 2 * (new negatives of keys 0..j-1) there, A by
    # 2 * (new positives of keys 0..j-1).
    last_na = int(held.cum_na[-1]) if exact or held.est_na is None else float(held.est_na[-1])
    ends_p = np.append(p_below + old_p, end(held_p))
    ends_n = np.append(n_below + old_n, end(held_n))
    ends_pb = np.append(pb_below + old_p * (2 * n_below + old_n), end(held_s1))
    ends_na = np.append(na_below + old_n * (2 * p_below + old_p), last_na)
    new_n_upto, new_p_upto = _accumulate(new_neg), _accumulate(new_pos)
    move_b, move_a = 2 * new_n_upto, 2 * new_p_upto
    run_p, run_pb = np.diff(ends_p), np.diff(ends_pb)
    run_n, run_na = np.diff(ends_n), np.diff(ends_na)
    # Hit entries: their moved terms out; every new key's entry in.
    moved_b = 2 * (n_below + new_n_upto - new_neg)  # B less the entry's own negatives, moved
    moved_a = 2 * (p_below + new_p_upto - new_pos)
    b_old, a_old = moved_b + old_n, moved_a + old_p
    all_p, all_n = old_p + new_pos, old_n + new_neg
    b_new, a_new = moved_b + all_n, moved_a + all_p
    # (Each sum alone, then added as Python numbers: int64 scalars would warn as they wrap.)
    kind = int if exact else float
    d1 = [move_b * run_p, all_p * b_new, -(old_p * b_old)]
    d2 = [move_b * (2 * run_pb + move_b * run_p), all_p * b_new * b_new, -(old_p * b_old * b_old)]
    du2 = [move_a * (2 * run_na + move_a * run_n), all_n * a_new * a_new, -(old_n * a_old * a_old)]
    return tuple(sum(kind(_sum(x)) for x in terms) for terms in (d1, d2, du2))  # type: ignore[return-value]
