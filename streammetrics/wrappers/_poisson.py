"""Poisson(1) bootstrap weights as a pure function of ``(seed, replicate, row hash)``.

Two schemes, both counter-based (no generator state, so shards draw the same weights for the
same ids and merge byte for byte):

* **scheme 1** (0.2.0): one splitmix64 mix of the row's hash with a per-replicate key per weight;
  the 64-bit result is turned into a Poisson(1) count by the inverse distribution function.
* **scheme 2** (0.3.0, the default): one splitmix64 mix per *pair* of replicates; replicate
  ``2p`` reads the low 32 bits of the mix of pair ``p``, replicate ``2p + 1`` the high 32 bits,
  and each 32-bit uniform becomes a count by the inverse distribution function at 2**-32
  resolution (counts above 12, of probability below 1e-9 together, are not drawn). Half the
  mixes of scheme 1 and half the lookup width: about three times cheaper.

Weights come out as ``(rows, replicates)`` uint8, row-major: a fold over rows then adds whole
rows of ``replicates`` weights at a time (contiguous, vectorised).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator

import numpy as np

from ..states.labels import splitmix64 as _mix

__all__ = ["SCHEMES", "poisson_rows", "position_hashes"]

#: Weight schemes this version draws: 1 (0.2.0 blobs keep it), 2 (new states).
SCHEMES = (1, 2)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_NO_ID = np.uint64(0x243F6A8885A308D3)  # domain tag of row positions (no ids given)
_STR = np.uint64(0xB7E151628AED2A6B)  # domain tag of string ids (``_bootstrap_ids.id_hashes``)
_PAIR = np.uint64(0x452821E638D01377)  # domain tag of scheme 2's pair keys
# Poisson(1) cumulative distribution, k = 0..19; P(K >= 20) = 1.6e-19, below one 2**-53 step.
_POISSON_CDF = np.cumsum([math.exp(-1) / math.factorial(k) for k in range(20)])
# Mixes per block: 32 Ki uint64 (256 KiB, and as much scratch) stay in L2 cache from step to
# step. On 10,000 rows x 100 pairs (0.8.9, best of 60): 16.2 ms in 0.8.8's blocks of 4 Mi
# mixes with a fresh array per step, 6.7 ms in blocks of 32 Ki mixed in place (6.8 at 64 Ki,
# 7.0 at 16 Ki).
_CHUNK = 1 << 15
_LITTLE = sys.byteorder == "little"


def _tables(bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Poisson(1) thresholds on ``bits``-bit uniforms, and a lookup by the top 16 bits.

    ``thresholds[k]`` is ``P(K <= k) * 2**bits`` (rounded down; thresholds that round to the
    top are left out): a uniform ``u`` gives the number of thresholds at or below it. The table
    maps the top 16 bits of ``u`` to that number wherever no threshold falls inside the block;
    the few blocks holding one are marked 255 and resolved exactly by a search.
    """
    top = 2**bits - 1
    cuts = [min(int(c * 2.0**bits), top) for c in _POISSON_CDF[:-1]]
    if bits < 64:
        cuts = [c for c in cuts if c < top]
    thresholds = np.array(cuts, dtype=np.uint64)
    shift = np.uint64(bits - 16)
    lower = np.arange(2**16, dtype=np.uint64) << shift
    upper = lower | np.uint64(2 ** (bits - 16) - 1)
    table = np.searchsorted(thresholds, lower, side="right").astype(np.uint8)
    table[table != np.searchsorted(thresholds, upper, side="right")] = 255
    return thresholds, table


_T64, _TABLE64 = _tables(64)
_T32, _TABLE32 = _tables(32)
_T32 = _T32.astype(np.uint32)


def position_hashes(start: int, n: int) -> np.ndarray:
    """The hashes of stream positions ``start .. start + n - 1`` (rows given without ids)."""
    positions = np.arange(start, start + n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        out: np.ndarray = _mix(positions ^ _NO_ID)
    return out


def _resolve(out: np.ndarray, uniforms: np.ndarray, thresholds: np.ndarray) -> None:
    """Replace the 255 marks of ``out`` by the exact count of the matching uniform."""
    flat = out.reshape(-1)
    fix = np.flatnonzero(flat == 255)
    if len(fix):
        flat[fix] = np.searchsorted(thresholds, uniforms.reshape(-1)[fix], side="right")


def _finalise(z: np.ndarray, tmp: np.ndarray) -> None:
    """splitmix64's finaliser on ``z`` in place (``tmp``: scratch of its shape): the same
    values as ``states.labels.splitmix64``, without a fresh array per step."""
    np.right_shift(z, np.uint64(30), out=tmp)
    z ^= tmp
    z *= np.uint64(0xBF58476D1CE4E5B9)
    np.right_shift(z, np.uint64(27), out=tmp)
    z ^= tmp
    z *= np.uint64(0x94D049BB133111EB)
    np.right_shift(z, np.uint64(31), out=tmp)
    z ^= tmp


def _blocks(hashes: np.ndarray, keys: np.ndarray) -> Iterator[tuple[int, int, np.ndarray]]:
    """``(lo, hi, z)`` for blocks of rows: ``z`` the mixes of rows ``lo:hi`` with every key,
    ``(hi - lo, len(keys))`` uint64, in scratch reused from block to block (read it before
    asking for the next)."""
    n, width = len(hashes), len(keys)
    step = max(1, _CHUNK // max(width, 1))
    z_all = np.empty((min(step, n), width), dtype=np.uint64)
    tmp_all = np.empty_like(z_all)
    with np.errstate(over="ignore"):
        for lo in range(0, n, step):
            hi = min(lo + step, n)
            z, tmp = z_all[: hi - lo], tmp_all[: hi - lo]
            np.bitwise_xor(hashes[lo:hi, None], keys[None, :], out=z)
            _finalise(z, tmp)
            yield lo, hi, z


def _scheme1(hashes: np.ndarray, seed: int, replicates: int) -> np.ndarray:
    out = np.empty((len(hashes), replicates), dtype=np.uint8)
    with np.errstate(over="ignore"):
        r = np.arange(1, replicates + 1, dtype=np.uint64)
        keys = _mix(_mix(np.uint64(seed) * _GOLDEN + np.uint64(1)) + r * _GOLDEN)
    for lo, hi, z in _blocks(hashes, keys):  # blocks of rows, each over every replicate
        block = out[lo:hi]
        np.take(_TABLE64, z >> np.uint64(48), out=block, mode="clip")
        _resolve(block, z, _T64)
    return out


def _scheme2(hashes: np.ndarray, seed: int, replicates: int) -> np.ndarray:
    pairs = (replicates + 1) // 2
    out = np.empty((len(hashes), 2 * pairs), dtype=np.uint8)
    with np.errstate(over="ignore"):
        p = np.arange(1, pairs + 1, dtype=np.uint64)
        keys = _mix(_mix(np.uint64(seed) * _GOLDEN + _PAIR) + p * _GOLDEN)
    for lo, hi, z in _blocks(hashes, keys):
        if not _LITTLE:
            z = z.byteswap().view(z.dtype.newbyteorder())
        # Little-endian bytes of each 64-bit mix: two 32-bit uniforms (low, high), whose
        # top 16 bits are the 2nd and 4th uint16 of the word.
        halves = z.view("<u4")  # (rows, 2 * pairs): replicate 2p low, 2p + 1 high
        block = out[lo:hi]
        np.take(_TABLE32, z.view("<u2")[:, 1::2], out=block, mode="clip")  # (indices < 2**16)
        _resolve(block, halves, _T32)
    return out if 2 * pairs == replicates else out[:, :replicates]


def poisson_rows(hashes: np.ndarray, seed: int, replicates: int, scheme: int) -> np.ndarray:
    """``(n, replicates)`` Poisson(1) counts (uint8), each a pure function of (seed, r, hash)."""
    if scheme == 1:
        return _scheme1(hashes, seed, replicates)
    if scheme == 2:
        return _scheme2(hashes, seed, replicates)
    raise ValueError(f"unknown weight scheme {scheme!r}; this version draws {SCHEMES}")
