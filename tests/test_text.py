"""BLEU and chrF against sacrebleu (a test-only reference) on varied text, shards and bytes."""

from __future__ import annotations

import random

import msgpack
import numpy as np
import pytest

import streammetrics as sm
from streammetrics.text import BLEU, CHRF, _ngrams
from streammetrics.text.tokenizers import TOKENIZERS

sacrebleu = pytest.importorskip("sacrebleu")

VOCAB = (
    "the a of to and in is it you that he was for on are with as his they at one have this "
    "from or had by word but what some we can out other were all there when up use your how "
    "said each she which do their time if will way about many then them would like so these"
).split()
ODD = [
    "don't",
    "it's",
    "U.S.",
    "3.14",
    "1,000",
    "1,000.50",
    "2019.",
    "e-mail",
    "(see",
    "note)",
    "$5",
    "50%",
    '"quoted"',
    "&amp;",
    "&lt;tag&gt;",
    "&quot;",
    "co-op",
    "1990-2000",
    "3-4",
    "can't",
    "O'Neil",
    "a...b",
    "1.,2",
    "..",
    "--",
    "naïve",
    "Café",
    "“curly”",
    "¡Hola!",
    "—",
    "x/y",
    "{brace}",
    "[sq]",
    "#tag",
    "@user",
    "<skipped>",
    "7.",
    ",8",
    "A.B.C.",
    "Straße",
    "İstanbul",
    "日本語",
    "€10",
    "½",
    "line-\nbreak",
    "tab\there",
]
EDGE = ["", "   ", ".", "a", "a b", "  padded  ", "1-2-3", "...", "Hello , world ."]


def sentence(rng: random.Random, n: int = 20) -> str:
    toks = [rng.choice(VOCAB) if rng.random() > 0.2 else rng.choice(ODD) for _ in range(n)]
    for i in range(n - 1):
        r = rng.random()
        if r < 0.06:
            toks[i] += ","
        elif r < 0.08:
            toks[i] += ";"
        elif r < 0.09:
            toks[i] += "."
    if toks:
        toks[0] = toks[0].capitalize()
    return " ".join(toks) + rng.choice([".", "!", "?", "...", " .", "", " "])


def perturb(rng: random.Random, s: str) -> str:
    t = s.split()
    for _ in range(rng.randint(0, 7)):
        if not t:
            break
        i = rng.randrange(len(t))
        op = rng.random()
        if op < 0.4:
            t[i] = rng.choice(VOCAB).upper() if rng.random() < 0.2 else rng.choice(VOCAB)
        elif op < 0.7 and len(t) > 1:
            del t[i]
        else:
            t.insert(i, rng.choice(VOCAB + ODD))
    return " ".join(t)


def corpus(seed: int, n: int, max_refs: int = 1):
    """Hypotheses, per-hypothesis reference lists (1..max_refs), and sacrebleu's streams."""
    rng = random.Random(seed)
    hyps, refs = [], []
    for i in range(n):
        base = sentence(rng, rng.randint(0, 25))
        hyps.append(EDGE[i % len(EDGE)] if i % 37 == 5 else perturb(rng, base))
        k = rng.randint(1, max_refs)
        refs.append([base if j == 0 else perturb(rng, base) for j in range(k)])
    streams = [[r[j] if j < len(r) else None for r in refs] for j in range(max_refs)]
    return hyps, refs, streams


def sharded(make, hyps, refs, seed: int):
    """Feed random batches into random shards, merge through bytes."""
    rng = random.Random(seed)
    shards = [make() for _ in range(rng.randint(2, 5))]
    i = 0
    while i < len(hyps):
        j = i + rng.randint(0, 60)
        rng.choice(shards).update(hyps[i:j], refs[i:j])
        i = j
    blobs = [s.to_bytes() for s in shards]
    return sum(sm.loads(b) for b in blobs)


@pytest.mark.parametrize("tokenize", sorted(TOKENIZERS))
def test_tokenizers_equal_sacrebleu(tokenize: str) -> None:
    from sacrebleu.metrics.bleu import _get_tokenizer

    ref_tok = _get_tokenizer(tokenize)()
    hyps, refs, _ = corpus(1, 400, 2)
    lines = hyps + [r for rs in refs for r in rs] + ODD + EDGE
    got = TOKENIZERS[tokenize](lines)
    want = [ref_tok(line.rstrip()).split() for line in lines]
    assert got == want


def test_chrf_renumbers_ngrams_when_keys_would_overflow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A batch so varied that n-gram keys would pass KEY_LIMIT is renumbered compactly first."""
    hyps, refs, _ = corpus(9, 120, 2)
    hyps = [h + " 東京は晴れ。" for h in hyps]
    want = [CHRF(word_order=2).update(hyps, refs), CHRF().update(hyps, refs)]
    monkeypatch.setattr(_ngrams, "KEY_LIMIT", 1 << 20)
    assert [CHRF(word_order=2).update(hyps, refs), CHRF().update(hyps, refs)] == want


HANZI = (
    "我们今天去北京上海天气很好的是在有人这个中国东京晴れ。、“”《》…—"
    "\uff0c\uff01\uff1f\uff08\uff09\uff1a\uff1b"  # fullwidth , ! ? ( ) : ;
)


def chinese(rng: random.Random, n: int) -> str:
    """A line of Chinese characters, CJK punctuation, English words and ``ODD`` tokens, with
    or without spaces between them, ending as lines do ("。", ".", "5.", a space, nothing)."""
    parts = []
    for _ in range(n):
        r = rng.random()
        if r < 0.6:
            parts.append("".join(rng.choice(HANZI) for _ in range(rng.randint(1, 4))))
        elif r < 0.85:
            parts.append(rng.choice(VOCAB))
        else:
            parts.append(rng.choice([t for t in ODD if "\n" not in t]))
    glue = rng.choice(["", " "])
    return glue.join(parts) + rng.choice(["。", ".", " 5.", "", " ", "\uff0c", "7,", " ."])


def test_zh_characters_are_sacrebleus() -> None:
    """Every code point is a character of its own under ``zh`` exactly when sacrebleu's table
    says so (its string comparisons included: U+2001 to U+2A6D in, Extension B out)."""
    from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh

    from streammetrics.text.tokenizers import _ZH_RANGES

    ours = np.zeros(0x110000, dtype=bool)
    for a, b in _ZH_RANGES:
        ours[a : b + 1] = True
    theirs = np.array([TokenizerZh._is_chinese_char(chr(c)) for c in range(0x110000)])
    assert np.array_equal(ours, theirs)
    assert ours[0x4E2D] and ours[0x2014] and not ours[0x20000] and not ours[ord("a")]


@pytest.mark.parametrize("newline", [False, True])
def test_zh_tokens_equal_sacrebleu(newline: bool) -> None:
    """Batches with no newline in any line (the batch pass) and with one (line by line)."""
    from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh

    rng = random.Random(11)
    lines = [chinese(rng, rng.randint(0, 12)) for _ in range(500)] + EDGE + ODD[:-2]
    lines += ["  东京。 ", ".5 元", "价格是 5.", ",8 个", "3-4 天", "A.B.C.", "1,000.50"]
    if newline:
        lines[7] += "\n下一行 2."
    ref = TokenizerZh()
    assert TOKENIZERS["zh"](lines) == [ref(line.rstrip()).split() for line in lines]


@pytest.mark.parametrize("lowercase", [False, True])
def test_bleu_zh_equals_sacrebleu(lowercase: bool) -> None:
    rng = random.Random(5)
    refs = [
        [chinese(rng, rng.randint(1, 15)) for _ in range(rng.randint(1, 2))] for _ in range(400)
    ]
    hyps = [r[0][: rng.randint(0, len(r[0]))] + chinese(rng, rng.randint(0, 3)) for r in refs]
    m = sharded(lambda: BLEU(tokenize="zh", lowercase=lowercase), hyps, refs, seed=3)
    streams = [[r[j] if j < len(r) else None for r in refs] for j in range(2)]
    want = sacrebleu.BLEU(tokenize="zh", lowercase=lowercase).corpus_score(hyps, streams)
    d = m.details()
    assert d["counts"] == list(want.counts) and d["totals"] == list(want.totals)
    assert (d["sys_len"], d["ref_len"]) == (want.sys_len, want.ref_len)
    assert m.compute() == pytest.approx(want.score, rel=0, abs=1e-9)
    assert sm.loads(m.to_bytes()).to_bytes() == m.to_bytes()


@pytest.mark.parametrize("max_refs", [1, 3])
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"lowercase": True},
        {"smooth_method": "floor"},
        {"smooth_method": "floor", "smooth_value": 0.3},
        {"smooth_method": "add-k"},
        {"smooth_method": "add-k", "smooth_value": 2},
        {"smooth_method": "none"},
        {"tokenize": "none"},
        {"tokenize": "intl"},
        {"tokenize": "char", "max_ngram_order": 6},
        {"max_ngram_order": 2},
    ],
)
def test_bleu_equals_sacrebleu(kwargs: dict, max_refs: int) -> None:
    hyps, refs, streams = corpus(2 + max_refs, 600, max_refs)
    m = sharded(lambda: BLEU(**kwargs), hyps, refs, seed=7)
    bleu = sacrebleu.BLEU(force=True, **{k: v for k, v in kwargs.items()})
    want = bleu.corpus_score(hyps, streams)
    assert m.count == len(hyps)
    d = m.details()
    if kwargs.get("smooth_method") != "add-k":  # sacrebleu adds k into its reported counts
        assert d["counts"] == list(want.counts) and d["totals"] == list(want.totals)
    assert (d["sys_len"], d["ref_len"]) == (want.sys_len, want.ref_len)
    assert m.compute() == pytest.approx(want.score, rel=0, abs=1e-9)


def test_bleu_corpus_call_and_effective_order() -> None:
    hyps, refs, streams = corpus(5, 300, 2)
    m = BLEU().update(hyps, refs)
    assert m.compute() == pytest.approx(
        sacrebleu.corpus_bleu(hyps, streams, force=True).score, abs=1e-9
    )
    short = ["a b", "c"]
    for eff in (False, True):
        m = BLEU(effective_order=eff).update(short, [["a b"], ["c d"]])
        want = sacrebleu.corpus_bleu(short, [["a b", "c d"]], use_effective_order=eff).score
        assert m.compute() == pytest.approx(want, abs=1e-9)


def test_bleu_single_sentence_and_scalars() -> None:
    m = BLEU().update("The cat sat on the mat.", ["The cat is on the mat.", "A cat sat."])
    want = sacrebleu.corpus_bleu(
        ["The cat sat on the mat."], [["The cat is on the mat."], ["A cat sat."]]
    )
    assert m.compute() == pytest.approx(want.score, abs=1e-12)
    assert BLEU().update([], []).count == 0
    assert np.isnan(BLEU().compute())
    # numpy and pandas columns
    pd = pytest.importorskip("pandas")
    h = pd.Series(["a b c d", "e f g h"])
    r = np.array(["a b c d", "e f g x"])
    assert BLEU().update(h, r) == BLEU().update(list(h), list(r))


def test_bleu_fallbacks_for_huge_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches whose exact keys would overflow are split, then counted with Counter."""
    hyps, refs, _ = corpus(8, 200, 3)
    want = BLEU().update(hyps, refs)
    for limit in (1 << 24, 1000):
        monkeypatch.setattr(_ngrams, "KEY_LIMIT", limit)
        assert BLEU().update(hyps, refs) == want


@pytest.mark.parametrize("max_refs", [1, 3])
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"word_order": 2},
        {"word_order": 2, "lowercase": True},
        {"beta": 1},
        {"char_order": 4, "word_order": 1, "beta": 3},
        {"whitespace": True},
        {"eps_smoothing": True, "word_order": 2},
    ],
)
def test_chrf_equals_sacrebleu(kwargs: dict, max_refs: int) -> None:
    hyps, refs, streams = corpus(20 + max_refs, 300, max_refs)
    m = sharded(lambda: CHRF(**kwargs), hyps, refs, seed=9)
    want = sacrebleu.CHRF(**kwargs).corpus_score(hyps, streams)
    assert m.compute() == pytest.approx(want.score, rel=0, abs=1e-9)
    if not kwargs:
        call = sacrebleu.corpus_chrf(hyps, streams).score
        assert m.compute() == pytest.approx(call, abs=1e-9)


def test_split_invariance_byte_for_byte() -> None:
    hyps, refs, _ = corpus(30, 500, 3)
    for make in (BLEU, lambda: CHRF(word_order=2)):
        whole = make().update(hyps, refs)
        assert sharded(make, hyps, refs, seed=3).to_bytes() == whole.to_bytes()


def test_bad_inputs_name_the_argument() -> None:
    m = BLEU()
    with pytest.raises(sm.InputError, match="references"):
        m.update(["a"], [["b", 7]])
    with pytest.raises(sm.InputError, match="hypotheses"):
        m.update([b"a"], ["b"])
    with pytest.raises(sm.InputError, match="tokenize"):
        BLEU(tokenize="ja-mecab")
    with pytest.raises(sm.InputError, match="smooth_method"):
        BLEU(smooth_method="nist")
    with pytest.raises(sm.InputError, match="word_order"):
        CHRF(word_order=-1)


def test_corrupt_state_refused() -> None:
    m = BLEU().update(["a b c"], ["a b d"])
    m.stats = m.stats.copy()
    m.stats[2] = 99  # more matches than n-grams
    with pytest.raises(sm.StateDecodeError):
        sm.loads(m.to_bytes())


def test_arrow_string_arrays_are_columns_of_text() -> None:
    # 0.8.4 refused them ("entry 0 is a StringScalar"); they work as labels everywhere else.
    pa = pytest.importorskip("pyarrow")
    from streammetrics.text import BLEU, CHRF

    hyps = ["the cat sat on the mat", "a dog ran in the park"]
    refs = [["the cat sat on a mat"], ["a dog ran in a park"]]
    for make in (BLEU, CHRF):
        assert make().update(pa.array(hyps), refs) == make().update(hyps, refs)
        chunked = pa.chunked_array([hyps[:1], hyps[1:]])
        assert make().update(chunked, refs) == make().update(hyps, refs)


def test_wrappers_take_one_hypothesis_beside_the_list_of_its_references() -> None:
    # Sliced and the windows counted the references as rows ("references: has 2 rows, by has
    # 1"), where BLEU, CHRF, collections and Bootstrap take one hypothesis with its references.
    from streammetrics.windows import SlidingWindow, TumblingWindows

    hyp, refs = "the cat sat on the mat", ["the cat sat on a mat", "a cat"]
    for metric in (BLEU, CHRF):
        alone = metric().update(hyp, refs).compute()
        assert sm.Sliced(metric()).update(hyp, refs, by="k").compute() == {"k": alone}
        tumbling = TumblingWindows(metric(), width=10).update(hyp, refs, timestamps=3)
        assert tumbling.compute() == {0: alone}
        sliding = SlidingWindow(metric(), width=10, slots=2).update(hyp, refs, timestamps=3)
        assert sliding.compute() == alone
        sliced = sm.Sliced(metric())
        before = sliced.to_bytes()
        with pytest.raises(sm.InputError, match="references"):
            sliced.update(hyp, [1], by="k")
        assert sliced.to_bytes() == before


def test_whole_number_options_given_as_floats_are_the_same_configuration() -> None:
    # CHRF(beta=2.0) refused to merge with CHRF() ("different config ()": the message compared
    # with ==, under which 2 == 2.0), as did BLEU's smooth_value and the windows' width.
    from streammetrics.windows import Decayed, TumblingWindows

    pairs = [
        (CHRF(), CHRF(beta=2.0)),
        (
            BLEU(smooth_method="floor", smooth_value=1),
            BLEU(smooth_method="floor", smooth_value=1.0),
        ),
        (TumblingWindows(BLEU(), width=10), TumblingWindows(BLEU(), width=10.0)),
        (Decayed(sm.Accuracy(), half_life=60), Decayed(sm.Accuracy(), half_life=60.0)),
    ]
    for a, b in pairs:
        assert a == b and a.to_bytes() == b.to_bytes()
        a.merge(b)
    with pytest.raises(sm.IncompatibleStateError, match=r"beta: 2\.5 here, 3 there"):
        CHRF(beta=2.5).merge(CHRF(beta=3))


@pytest.mark.parametrize(
    "config",
    [
        {"char_order": 0, "word_order": 2},  # word n-grams alone
        {"char_order": 0, "word_order": 1, "beta": 1},
        {"beta": 0},  # precision alone
        {"beta": 0, "word_order": 2, "eps_smoothing": True},
    ],
)
def test_chrf_configurations_sacrebleu_computes(config: dict) -> None:
    # 0.8.10 refused char_order=0 and beta=0, which sacrebleu scores.
    rng = random.Random(7)
    words = "the cat sat on a mat dog is big red , . !".split()
    for _ in range(40):
        n = rng.randint(1, 4)
        hyps = [" ".join(rng.choices(words, k=rng.randint(0, 8))) for _ in range(n)]
        refs = [[" ".join(rng.choices(words, k=rng.randint(0, 8))) for _ in range(n)]]
        want = sacrebleu.metrics.CHRF(**config).corpus_score(hyps, refs).score
        m = CHRF(**config)
        for h, r in zip(hyps, refs[0], strict=True):
            m.update([h], [[r]])
        assert m.compute() == pytest.approx(want, abs=1e-9)
        assert sm.loads(m.to_bytes()).compute() == m.compute()


@pytest.mark.parametrize(
    "config",
    [
        {"char_order": 0},
        {"beta": float("inf")},
        {"beta": -0.5},
        {"char_order": 33},
        {"beta": 1e200},  # 0.8.12 took it: beta**2 overflowed in compute (OverflowError)
        {"beta": 10**200},
    ],
)
def test_chrf_refuses_configurations_without_a_score(config: dict) -> None:
    with pytest.raises(sm.InputError, match=next(iter(config))):
        CHRF(**config)


def test_the_largest_beta_scores_and_a_blob_past_it_is_refused() -> None:
    from streammetrics.text.chrf import MAX_BETA

    m = CHRF(beta=MAX_BETA).update(["a cat sat"], [["a cat sat on"]])
    both = CHRF(beta=MAX_BETA).update(["a cat"], [["a cat", "the cat"]])  # several references
    assert 0 < m.compute() <= 100 and both.compute() == 100.0
    for big in (2**64, 10**100):  # ints the wire cannot hold: kept as the floats they are
        wide = CHRF(beta=big).update(["a cat"], [["a cat"]])
        assert sm.loads(wide.to_bytes()).compute() == wide.compute() == 100.0
    tree = msgpack.unpackb(m.to_bytes(), strict_map_key=False)
    tree["config"]["beta"] = 1e200
    with pytest.raises(sm.StateDecodeError, match="beta"):
        sm.loads(msgpack.packb(tree, use_bin_type=True))


def test_few_tokens_are_counted_as_the_vectorised_path_counts_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Batches of at most SMALL_TOKENS tokens take Counter per sentence (one request's sentence:
    114 -> 45 µs a call); the statistics are the vectorised path's, ties and repeats included."""
    rng = np.random.default_rng(1)
    cases = []
    for _ in range(1_500):
        words = [f"w{i}" for i in range(int(rng.integers(1, 6)))]
        b, order = int(rng.integers(1, 4)), int(rng.integers(1, 6))
        hyps = [list(rng.choice(words, int(rng.integers(0, 15)))) for _ in range(b)]
        refs = [
            [
                list(rng.choice(words, int(rng.integers(0, 15))))
                for _ in range(int(rng.integers(1, 4)))
            ]
            for _ in range(b)
        ]
        cases.append((hyps, refs, order, _ngrams.bleu_statistics(hyps, refs, order)))
    monkeypatch.setattr(_ngrams, "SMALL_TOKENS", -1)
    for hyps, refs, order, small in cases:
        assert (small == _ngrams.bleu_statistics(hyps, refs, order)).all()
    monkeypatch.undo()
    hyps, refs, streams = corpus(31, 60, 2)
    one = BLEU()
    for h, r in zip(hyps, refs, strict=True):
        one.update(h, r)
    assert one.compute() == pytest.approx(sacrebleu.corpus_bleu(hyps, streams).score, abs=1e-9)


def test_few_positions_are_matched_as_the_sorted_path_matches_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """chrF batches of at most SMALL_POSITIONS characters (or words) are matched with Counter
    per line (one request's sentence: 260 -> 105 µs a call); the same counts per reference
    line as the sorted path, and the same score as sacrebleu one sentence per call."""
    rng = np.random.default_rng(2)
    cases = []
    for _ in range(2_000):
        n_refs = rng.integers(1, 4, int(rng.integers(1, 4))).astype(np.int64)
        lines = [
            rng.integers(0, int(rng.integers(1, 6)), int(rng.integers(0, 12)))
            for k in n_refs.tolist()
            for _ in range(k + 1)
        ]
        ids = np.concatenate(lines).astype(np.int64)
        lengths = np.array([len(x) for x in lines], dtype=np.int64)
        order = int(rng.integers(1, 8))
        for by_line in (True, False):
            got = _ngrams.match_counts(ids, lengths, n_refs, order, by_line)
            cases.append((ids, lengths, n_refs, order, by_line, got))
    monkeypatch.setattr(_ngrams, "SMALL_POSITIONS", -1)
    for ids, lengths, n_refs, order, by_line, got in cases:
        want = _ngrams.match_counts(ids, lengths, n_refs, order, by_line)
        assert got.shape == want.shape and (got == want).all()
    monkeypatch.undo()
    hyps, refs, streams = corpus(33, 40, 2)
    one = CHRF(word_order=2)
    for h, r in zip(hyps, refs, strict=True):
        one.update(h, r)
    want_score = sacrebleu.CHRF(word_order=2).corpus_score(hyps, streams).score
    assert one.compute() == pytest.approx(want_score, abs=1e-9)
