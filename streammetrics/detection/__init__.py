"""Object detection metrics: COCO box mAP / mAR as a mergeable state (see ``docs/detection.md``)."""

from .mean_ap import MeanAveragePrecision

__all__ = ["MeanAveragePrecision"]
