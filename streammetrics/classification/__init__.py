"""Classification: label metrics from a confusion matrix, and score metrics (AUC, AP, GAUC, ...)."""

from ..errors import InputError  # noqa: F401 - the family's inputs are refused with it
from . import confusion, scores, topk
from .confusion import *  # noqa: F403
from .scores import *  # noqa: F403
from .topk import *  # noqa: F403

__all__ = [*confusion.__all__, *scores.__all__, *topk.__all__]
