"""Reusable mergeable states: the building blocks that metric families are made of."""

from .contingency import ContingencyCounts

__all__ = ["ContingencyCounts"]
