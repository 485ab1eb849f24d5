"""Reusable mergeable states: the building blocks that metric families are made of.

- ``ContingencyCounts``: counts of (row label, column label) pairs; merged by label union;
  byte-identical under any split.
- ``Moments``: total weight, weighted means and co-moments; Chan et al. merge; equal to rounding.
- ``CentralMoments``: weighted central moments of any order of a few variables; Pebay's merge;
  equal to rounding.
- ``ClusterMoments``: per-cluster count, mean and sum of squared deviations; Chan et al. merge;
  equal to rounding.
- ``BottomKSample``: a per-key bounded sample, the k distinct rows of smallest hash with their
  counts; byte-identical.
- ``QueryBuffers``: rows of ranking queries not yet complete, sorted; byte-identical.

Also here, imported from their modules: ``ScoreBuckets`` (``states.buckets``; its mappings in
``states.mappings``), ``ScoreColumns`` (``states.score_columns``, one store per class column),
``GroupedScores`` (``states.grouped``, the state of GAUC) and the label
sets of ``states.labels``.
"""

from .central import CentralMoments
from .centroids import ClusterMoments
from .contingency import ContingencyCounts
from .moments import Moments
from .queries import QueryBuffers
from .samples import BottomKSample

__all__ = [
    "BottomKSample",
    "CentralMoments",
    "ClusterMoments",
    "ContingencyCounts",
    "Moments",
    "QueryBuffers",
]
