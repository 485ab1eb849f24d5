"""Binary-score metrics (ROC AUC, average precision, curves, GAUC, calibration)."""

__all__: list[str] = []
