"""BLEU and chrF throughput against sacrebleu, on 20-word sentences with punctuation and numbers.

Run: ``python benchmarks/bench_text.py [--quick] [n_sentences]`` (default 20,000; ``--quick``:
2,000). Every line (ours, sacrebleu's, the floor) runs once per round, interleaved, best of 3
rounds (until 0.8.14 each side's lines ran back to back and the chrF lines only once). Prints
sentences per second and the ratios: streammetrics against sacrebleu (the peer), and against a
floor that only splits every line on whitespace (no tokeniser, no counting: the least any BLEU
must do).
"""

from __future__ import annotations

import logging
import random
import sys

from _timing import interleaved  # (this folder: the script's own)

from streammetrics.text import BLEU, CHRF

WORDS = (
    "the a of to and in is it you that he was for on are with as his they at one have this from "
    "or had by word but what some we can out other were all there when up use your how said each "
    "she which do their time if will way about many then them would like so these her long make"
).split()
ODD = [
    "don't",
    "it's",
    "U.S.",
    "3.14",
    "1,000",
    "2019",
    "e-mail",
    "(see",
    "note)",
    "$5",
    "50%",
    '"quoted"',
    "co-op",
    "1990-2000",
    "can't",
    "O'Neil",
]


def sentence(rng: random.Random, n: int = 20) -> str:
    toks = [rng.choice(WORDS) if rng.random() > 0.15 else rng.choice(ODD) for _ in range(n)]
    for i in range(n - 1):
        if rng.random() < 0.08:
            toks[i] += rng.choice([",", ";", "."])
    return " ".join(toks).capitalize() + rng.choice([".", "!", "?"])


# Common Chinese characters and CJK punctuation, for the ``zh`` lines.
HANZI = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能"


def chinese(rng: random.Random, n: int = 30) -> str:
    """A Chinese line of ``n`` characters (CJK commas within), a number or an English word now
    and then, ending with a full stop."""
    out = []
    for _ in range(n):
        r = rng.random()
        out.append(rng.choice(HANZI) if r > 0.06 else rng.choice(["\uff0c", " 2019 ", " GPU "]))
    return "".join(out) + "。"


def perturb_chinese(rng: random.Random, s: str) -> str:
    t = list(s)
    for _ in range(rng.randint(0, 6)):
        t[rng.randrange(len(t))] = rng.choice(HANZI)
    return "".join(t)


def perturb(rng: random.Random, s: str) -> str:
    t = s.split()
    for _ in range(rng.randint(0, 6)):
        i = rng.randrange(len(t))
        t[i] = rng.choice(WORDS)
    return " ".join(t)


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--quick"]
    n = int(args[0]) if args else (2000 if "--quick" in sys.argv else 20000)
    logging.getLogger("sacrebleu").setLevel(logging.ERROR)
    rng = random.Random(0)
    refs = [sentence(rng) for _ in range(n)]
    hyps = [perturb(rng, r) for r in refs]
    refs2 = [perturb(rng, r) for r in refs]
    zh_refs = [chinese(rng) for _ in range(n)]
    zh_hyps = [perturb_chinese(rng, r) for r in zh_refs]
    batch = 2000

    def ours_bleu(multi: bool = False):
        m = BLEU()
        for i in range(0, n, batch):
            r = (
                [[a, b] for a, b in zip(refs[i : i + batch], refs2[i : i + batch], strict=True)]
                if multi
                else refs[i : i + batch]
            )
            m.update(hyps[i : i + batch], r)
        return m.compute()

    def ours_zh():
        m = BLEU(tokenize="zh")
        for i in range(0, n, batch):
            m.update(zh_hyps[i : i + batch], zh_refs[i : i + batch])
        return m.compute()

    def ours_chrf(word_order: int, limit: int, multi: bool = False):
        m = CHRF(word_order=word_order)
        for i in range(0, limit, batch):
            j = min(i + batch, limit)
            r = [[a, b] for a, b in zip(refs[i:j], refs2[i:j], strict=True)] if multi else refs[i:j]
            m.update(hyps[i:j], r)
        return m.compute()

    def floor():
        return sum(len(line.split()) for line in hyps + refs)

    m = n // 4  # the chrF lines (both sides) run on the first quarter, scaled to n rows
    # Every line, ours and sacrebleu's, runs once per round, interleaved; best of 3 rounds.
    fns = {
        "floor: whitespace split only": floor,
        "streammetrics BLEU, 1 ref": ours_bleu,
        "streammetrics BLEU, 2 refs": lambda: ours_bleu(True),
        "streammetrics BLEU zh, 1 ref": ours_zh,
        "streammetrics chrF2": lambda: ours_chrf(0, m),
        "streammetrics chrF++": lambda: ours_chrf(2, m),
        "streammetrics chrF2, 2 refs": lambda: ours_chrf(0, m, True),
    }
    try:
        import sacrebleu
    except ImportError:
        sacrebleu = None
    if sacrebleu is not None:
        from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
        from sacrebleu.tokenizers.tokenizer_re import TokenizerRegexp
        from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh

        def cold(fn):
            # sacrebleu caches tokenised lines across calls: clear, so each run tokenises.
            def run():
                Tokenizer13a.__call__.cache_clear()
                TokenizerRegexp.__call__.cache_clear()
                TokenizerZh.__call__.cache_clear()
                return fn()

            return run

        fns["sacrebleu corpus_bleu, 1 ref"] = cold(lambda: sacrebleu.corpus_bleu(hyps, [refs]))
        fns["sacrebleu corpus_bleu, 2 refs"] = cold(
            lambda: sacrebleu.corpus_bleu(hyps, [refs, refs2])
        )
        fns["sacrebleu corpus_bleu zh, 1 ref"] = cold(
            lambda: sacrebleu.corpus_bleu(zh_hyps, [zh_refs], tokenize="zh")
        )
        fns["sacrebleu corpus_chrf"] = lambda: sacrebleu.corpus_chrf(hyps[:m], [refs[:m]])
        fns["sacrebleu chrF++"] = lambda: sacrebleu.corpus_chrf(hyps[:m], [refs[:m]], word_order=2)
        fns["sacrebleu corpus_chrf, 2 refs"] = lambda: sacrebleu.corpus_chrf(
            hyps[:m], [refs[:m], refs2[:m]]
        )
    times = interleaved(fns, 3)
    rows = [(name, t * n / m if "chr" in name else t, None) for name, t in times.items()]
    floor_t = rows[0][1]
    ours = dict((name, t) for name, t, _ in rows)
    print(f"{n} hypotheses of 20 words (+ references), batches of {batch}")
    print(f"{'':34s} {'sent/s':>10s} {'x floor':>8s}")
    for name, t, _ in rows:
        print(f"{name:34s} {n / t:10.0f} {t / floor_t:8.1f}")
    if sacrebleu is not None:
        for k in ("1 ref", "2 refs"):
            r = ours[f"sacrebleu corpus_bleu, {k}"] / ours[f"streammetrics BLEU, {k}"]
            print(f"BLEU speed-up over sacrebleu, {k}: {r:.1f}x")
        r = ours["sacrebleu corpus_bleu zh, 1 ref"] / ours["streammetrics BLEU zh, 1 ref"]
        print(f"BLEU zh speed-up over sacrebleu, 1 ref: {r:.1f}x")
        r = ours["sacrebleu corpus_chrf"] / ours["streammetrics chrF2"]
        print(f"chrF2 speed-up over sacrebleu: {r:.1f}x")
        r = ours["sacrebleu chrF++"] / ours["streammetrics chrF++"]
        print(f"chrF++ speed-up over sacrebleu: {r:.1f}x")
        r = ours["sacrebleu corpus_chrf, 2 refs"] / ours["streammetrics chrF2, 2 refs"]
        print(f"chrF2 speed-up over sacrebleu, 2 refs: {r:.1f}x")


if __name__ == "__main__":
    main()
