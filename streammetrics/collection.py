"""``MetricCollection`` (kept for imports written for 0.1): it lives in
:mod:`streammetrics.wrappers.collection`; import it from ``streammetrics``."""

from .wrappers.collection import MetricCollection

__all__ = ["MetricCollection"]
