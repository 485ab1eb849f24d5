"""Reusable mergeable states: the building blocks that metric families are made of.

| block | holds | merge | exact under any split |
| --- | --- | --- | --- |
| `ContingencyCounts` | counts of (row label, column label) pairs | label union, add | byte for byte |
| `Moments` | total weight, weighted means and co-moments | Chan et al. | to rounding |
| `ClusterMoments` | per-cluster count, mean, sum of squared deviations | Chan et al. | to rounding |
| `BottomKSample` | per-key bounded sample, bottom-k by a hash of the row | union, keep k | byte for byte |
| `QueryBuffers` | rows of ranking queries not yet complete | sorted union | byte for byte |
"""

from .centroids import ClusterMoments
from .contingency import ContingencyCounts
from .moments import Moments
from .queries import QueryBuffers
from .samples import BottomKSample

__all__ = ["BottomKSample", "ClusterMoments", "ContingencyCounts", "Moments", "QueryBuffers"]
