"""Every public metric says which way is better (``higher_is_better``), explicitly."""

from __future__ import annotations

import pytest

import streammetrics as sm
from streammetrics.classification import ROCAUC, ConfusionMatrix, LogLoss
from streammetrics.regression import MeanSquaredError, R2Score, RegressionReport
from tests.harness import public_metric_classes

METRICS = sorted(public_metric_classes(), key=lambda c: c.__name__)


def test_base_default_is_none() -> None:
    assert sm.Metric.higher_is_better is None


@pytest.mark.parametrize("cls", METRICS, ids=[c.__name__ for c in METRICS])
def test_declared_on_the_class_itself(cls: type[sm.Metric]) -> None:
    assert "higher_is_better" in vars(cls), f"{cls.__name__} does not declare higher_is_better"
    assert vars(cls)["higher_is_better"] in (True, False, None)


def test_directions() -> None:
    assert ROCAUC.higher_is_better is True and R2Score.higher_is_better is True
    assert LogLoss.higher_is_better is False and MeanSquaredError.higher_is_better is False
    assert ConfusionMatrix.higher_is_better is None and RegressionReport.higher_is_better is None


def test_decayed_has_its_wrapped_metrics_direction() -> None:
    """``Sliced(Decayed(Accuracy())).worst()`` raised "declares no direction"."""
    d = sm.Decayed(sm.Accuracy(), half_life=10)
    assert d.higher_is_better is True
    assert sm.Decayed(sm.ROCAUC(), half_life=10).higher_is_better is True
    s = sm.Sliced(d).update([1, 1, 0], [1, 0, 0], by=["a", "b", "a"], timestamps=[0, 1, 2])
    assert s.worst(1) == [("b", 0.0)]
