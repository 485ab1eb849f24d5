"""Text metrics: corpus BLEU and chrF / chrF++ as sacrebleu computes them, as mergeable states.

Both keep only summed integer sufficient statistics, so shards merge exactly (byte for byte)
and the corpus score of the merged state equals sacrebleu's ``corpus_bleu`` / ``corpus_chrf``
on the concatenated text. See ``docs/text.md``.
"""

from .bleu import BLEU
from .chrf import CHRF

__all__ = ["BLEU", "CHRF"]
