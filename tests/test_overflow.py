"""No silent overflow: integer counts never wrap.

A coverage-guided fuzzer found a BLEU blob that decoded and whose merge with itself wrapped its
int64 counts negative; the same wrap with counts above 2**62 gave F1 = -1.0, mAP = -1.0 and
ROCAUC nan, silently. Every family here is driven to that edge from a real state whose counts
are scaled up (every count array and ``count`` together, so the state stays consistent):

* at 2**62 the blob is refused by ``loads`` with ``StateDecodeError``;
* just under 2**53 (``COUNT_LIMIT``) it decodes and computes, but merging it with itself and
  (where the update path is bounded) updating it again raise ``CountOverflowError``, an
  ``IncompatibleStateError`` and an ``InputError`` at once, leaving the state unchanged.
"""

from __future__ import annotations

import math
import zlib
from typing import Any

import numpy as np
import pytest

import streammetrics as sm
from streammetrics import _codec
from streammetrics._codec import COUNT_LIMIT, CountOverflowError
from streammetrics.text import BLEU, CHRF
from tests.harness import Case, all_cases
from tests.test_golden import SIZES, build

# case id -> (groups of paths of the count arrays or ints to scale, each group one bounded
# total; whether update is bounded).
Paths = list[list[tuple[str, ...]]]
FAMILIES: dict[str, tuple[Paths, bool]] = {
    "ConfusionMatrix": ([[("counts", "table")]], True),
    "F1-macro-str": ([[("counts", "table")]], True),
    "AdjustedRandIndex": ([[("counts", "table")]], True),
    "ROCAUC": ([[("hist", "pos"), ("hist", "neg")]], True),
    "ROCAUC-exact-weighted": ([[("hist", "pos"), ("hist", "neg")]], False),
    "AveragePrecision-exact": ([[("hist", "pos"), ("hist", "neg")]], False),
    "GAUC-exact": ([[("scores", "rows")], [("scores", "pos"), ("scores", "neg")]], True),
    "BLEU": ([[("stats",)]], True),
    "CHRF++-multiref": ([[("stats",)]], True),
    "MeanAveragePrecision": ([[("records", "gt_counts")]], True),
    "MeanAveragePrecision-sketch": (
        [[("records", "gt_counts")], [("records", "tp"), ("records", "fp")]],
        False,
    ),
    "NDCG-linear-k-complete": ([[("count",)], [("queries",), ("skipped",)]], False),
}


def _case(case_id: str) -> Case:
    cases = {c.id: c for c in all_cases()}
    # Exact groups: scaling the rows of a sketched state would change which groups are exact.
    cases["GAUC-exact"] = Case("GAUC-exact", lambda: sm.GAUC(exact=True), cases["GAUC"].batch)
    return cases[case_id]


def _batches(case: Case) -> list[Any]:
    rng = np.random.default_rng(zlib.crc32(case.id.encode()))
    return [case.batch(rng, n) for n in SIZES]


def _get(tree: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        tree = tree[key]
    return tree


def _set(tree: Any, path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        tree = tree[key]
    tree[path[-1]] = value


def _total(value: Any) -> int:
    return int(np.sum(value, dtype=object)) if isinstance(value, np.ndarray) else int(value)


def scaled(metric: sm.Metric, groups: Paths, target: int) -> tuple[bytes, int]:
    """The metric's blob with its counts (and ``count``) multiplied by the largest factor that
    keeps the largest group total at most ``target``; and the factor."""
    name, schema, config, state = _codec.unpack_envelope(metric.to_bytes())
    held = max(sum(_total(_get(state, p)) for p in group) for group in groups)
    factor = target // held
    weighted = False
    for p in (p for group in groups for p in group):
        v = _get(state, p)
        if isinstance(v, np.ndarray):
            weighted |= v.dtype.kind == "f"
            wide = np.uint64 if v.dtype.kind == "u" else np.int64  # narrow counts: GAUC
            _set(state, p, (v.astype(object) * factor).astype(wide))
        else:
            _set(state, p, v * factor)
    if not any(p == ("count",) for group in groups for p in group):
        # count bounds the rows held; it scales with them (past 2**53 only at 2**62).
        state["count"] = min(state["count"] * factor, 2**64 - 1)
        if weighted:
            # Integer-valued weights made integer counts: each is now that many rows, and the
            # decoder checks integer buckets against the rows counted (0.8.10).
            state["count"] = min(held * factor, 2**64 - 1)
    if not weighted and isinstance(state.get("weight_sq"), float):
        # Unweighted rows: the squared weights total the rows (checked since 0.8.17).
        state["weight_sq"] = float(state["count"])
    return _codec.pack_envelope(name, schema, config, state), factor


@pytest.mark.parametrize("case_id", sorted(FAMILIES))
def test_counts_at_2_62_are_refused_on_decode(case_id: str) -> None:
    paths, _ = FAMILIES[case_id]
    blob, _ = scaled(build(_case(case_id)), paths, 2**62)
    with pytest.raises(sm.StateDecodeError):
        sm.loads(blob)


@pytest.mark.parametrize("case_id", sorted(FAMILIES))
def test_merge_past_the_bound_is_refused(case_id: str) -> None:
    paths, _ = FAMILIES[case_id]
    blob, _ = scaled(build(_case(case_id)), paths, int(0.6 * COUNT_LIMIT))
    big = sm.loads(blob)
    _finite_or_nan(big.compute())
    before = big.to_bytes()
    with pytest.raises(CountOverflowError, match="2\\*\\*53"):
        big.merge(sm.loads(blob))
    with pytest.raises(sm.IncompatibleStateError):
        big.merge(big)
    assert big.to_bytes() == before
    # Well inside the bound, the same merge works and is exact.
    small, _ = scaled(build(_case(case_id)), paths, 2**40)
    m = sm.loads(small)
    m.merge(sm.loads(small))


@pytest.mark.parametrize("case_id", sorted(k for k, (_, bounded) in FAMILIES.items() if bounded))
def test_update_past_the_bound_is_refused(case_id: str) -> None:
    case = _case(case_id)
    paths, _ = FAMILIES[case_id]
    blob, _ = scaled(build(case), paths, COUNT_LIMIT)
    big = sm.loads(blob)
    for args, kwargs in _batches(case):
        before = big.to_bytes()
        try:
            big.update(*args, **kwargs)
        except sm.InputError as exc:
            assert isinstance(exc, CountOverflowError) and "2**53" in str(exc)
            assert big.to_bytes() == before
            break
    else:
        pytest.fail("the updates passed the bound")


def _finite_or_nan(result: Any) -> None:
    if isinstance(result, dict):
        for v in result.values():
            _finite_or_nan(v)
    elif isinstance(result, (list, tuple)):
        for v in result:
            _finite_or_nan(v)
    elif isinstance(result, np.ndarray):
        if result.dtype.kind == "f":
            assert not np.isinf(result).any()
    elif isinstance(result, float):
        assert not math.isinf(result)


def test_the_wrap_the_fuzzer_found_is_refused() -> None:
    # BLEU statistics above 2**62: merged with themselves, int64 would wrap negative and
    # compute would raise "math domain error". Now loads refuses the blob.
    m = BLEU().update(["the cat sat on the mat"], [["the cat sat on a mat"]])
    blob, _ = scaled(m, [[("stats",)]], 2**62 + 2**61)
    with pytest.raises(sm.StateDecodeError, match="2\\*\\*53"):
        sm.loads(blob)


def test_inconsistent_text_statistics_are_refused() -> None:
    m = BLEU().update(["the cat sat"], [["the cat sat"]])
    name, schema, config, state = _codec.unpack_envelope(m.to_bytes())
    stats = state["stats"].copy()
    stats[6] += 5  # 1-gram total above the hypothesis length
    state["stats"] = stats
    with pytest.raises(sm.StateDecodeError, match="add up"):
        sm.loads(_codec.pack_envelope(name, schema, config, state))
    c = CHRF().update(["the cat"], [["the dog"]])
    name, schema, config, state = _codec.unpack_envelope(c.to_bytes())
    stats = state["stats"].copy()
    stats[2] = stats[0] + 1  # matches above the hypothesis n-grams
    state["stats"] = stats
    with pytest.raises(sm.StateDecodeError, match="exceed"):
        sm.loads(_codec.pack_envelope(name, schema, config, state))


def test_grouped_counts_must_add_up_to_rows() -> None:
    m = sm.GAUC(exact=True).update([0, 0, 1, 1], [0.1, 0.9, 0.2, 0.8], [0, 1, 1, 0])
    name, schema, config, state = _codec.unpack_envelope(m.to_bytes())
    rows = state["scores"]["rows"].copy()
    rows[0] += 1
    state["scores"]["rows"] = rows
    with pytest.raises(sm.StateDecodeError, match="add up"):
        sm.loads(_codec.pack_envelope(name, schema, config, state))


def test_count_overflow_error_is_both_kinds() -> None:
    assert issubclass(CountOverflowError, sm.InputError)
    assert issubclass(CountOverflowError, sm.IncompatibleStateError)
    with pytest.raises(CountOverflowError):
        _codec.check_sum("x", "i", COUNT_LIMIT, 1)
    _codec.check_sum("x", "i", COUNT_LIMIT - 1, 1)
    _codec.check_sum("x", "f", 2.0**99, 2.0**99)
    with pytest.raises(CountOverflowError):
        _codec.check_sum("x", "f", 2.0**100, 1.0e20)
    with pytest.raises(CountOverflowError):
        _codec.check_sum("x", "f", float("nan"))


def test_many_states_merged_at_once_are_bounded_together() -> None:
    # Each pair stays within 2**53; the three together do not: merge(*others) must refuse.
    from streammetrics._codec import COUNT_LIMIT

    big = sm.Accuracy().update([0], [0], sample_weight=[1.0])
    big.counts.table = np.array([[COUNT_LIMIT * 0.4]], dtype=np.float64).astype(np.int64)
    a, b, c = big.copy(), big.copy(), big.copy()
    before = a.to_bytes()
    with pytest.raises(sm.IncompatibleStateError):
        a.merge(b, c)
    assert a.to_bytes() == before


def test_a_row_count_at_the_bound_does_not_merge_past_it() -> None:
    """A decoded state may hold a row count at the bound (a hypothesis example of
    tests/fuzz): merging it with itself is refused, nothing changed."""
    m = sm.Accuracy().update([0, 1, 1], [0, 1, 0])
    name, schema, config, state = _codec.unpack_envelope(m.to_bytes())
    table = state["counts"]["table"].copy()
    table[0, 0] = COUNT_LIMIT - 2  # (integer counts are rows: they add up to the count)
    at_bound = {
        **state,
        "count": COUNT_LIMIT,
        "counts": {**state["counts"], "table": table},
        "weight_sq": float(COUNT_LIMIT),
    }
    forged = sm.loads(_codec.pack_envelope(name, schema, config, at_bound))
    before = forged.to_bytes()
    with pytest.raises(CountOverflowError):
        forged.merge(forged)
    with pytest.raises(CountOverflowError):
        forged.copy().merge(sm.Accuracy().update([1], [1]))
    assert forged.to_bytes() == before


def test_one_row_at_a_time_does_not_pass_the_bound() -> None:
    """Counts near 2**53 take rows one by one up to the bound and no further: in float64 the
    bound check read ``2**53 + 1`` as ``2**53`` and let every single row through, and the
    state's own bytes were then refused by ``loads``."""
    m = sm.Accuracy().update([0, 1], [0, 1])
    name, schema, config, state = _codec.unpack_envelope(m.to_bytes())
    table = state["counts"]["table"].copy()
    table[0, 0] = COUNT_LIMIT - 20
    near = {
        **state,
        "count": COUNT_LIMIT - 19,
        "counts": {**state["counts"], "table": table},
        "weight_sq": float(COUNT_LIMIT - 19),
    }
    m = sm.loads(_codec.pack_envelope(name, schema, config, near))
    refused = 0
    for _ in range(40):
        try:
            m.update(0, 0)
        except CountOverflowError:
            refused += 1
    assert (refused, m.count) == (21, COUNT_LIMIT)
    assert sm.loads(m.to_bytes()) == m
