"""The metric names the command line knows, and the columns each one reads.

A name is either a key of :data:`METRICS` (scikit-learn scorer names where one exists) or
``NAME@K`` for a ranking metric cut at rank K (:data:`AT_K`). A name the table does not hold is
answered with the closest known one (``difflib``).
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import re
from dataclasses import dataclass
from typing import Any

from ..base import Metric
from .errors import CLIError

__all__ = ["AT_K", "INPUTS", "METRICS", "Member", "known_names", "make_metric"]

#: Metric names (scikit-learn scorer names where one exists) -> (module, class, kwargs, inputs).
#: ``inputs`` names the columns the metric takes, in order (see :data:`INPUTS`). Classes are
#: looked up when used, so a name works once its family is installed.
METRICS: dict[str, tuple[str, str, dict[str, Any], str]] = {
    "accuracy": ("classification", "Accuracy", {}, "pred"),
    "f1": ("classification", "F1", {}, "pred"),
    "precision": ("classification", "Precision", {}, "pred"),
    "recall": ("classification", "Recall", {}, "pred"),
    **{
        f"{name}_{avg}": ("classification", cls, {"average": avg}, "pred")
        for name, cls in (("f1", "F1"), ("precision", "Precision"), ("recall", "Recall"))
        for avg in ("macro", "micro", "weighted")
    },
    "mcc": ("classification", "MatthewsCorrCoef", {}, "pred"),
    "matthews_corrcoef": ("classification", "MatthewsCorrCoef", {}, "pred"),
    "cohen_kappa": ("classification", "CohenKappa", {}, "pred"),
    "confusion_matrix": ("classification", "ConfusionMatrix", {}, "pred"),
    "classification_report": ("classification", "ClassificationReport", {}, "pred"),
    "roc_auc": ("classification", "ROCAUC", {}, "score"),
    "average_precision": ("classification", "AveragePrecision", {}, "score"),
    "log_loss": ("classification", "LogLoss", {}, "score"),
    "brier_score": ("classification", "BrierScore", {}, "score"),
    "calibration_error": ("classification", "CalibrationError", {}, "score"),
    "gauc": ("classification", "GAUC", {}, "group"),
    "mse": ("regression", "MeanSquaredError", {}, "pred"),
    "mean_squared_error": ("regression", "MeanSquaredError", {}, "pred"),
    "rmse": ("regression", "RootMeanSquaredError", {}, "pred"),
    "root_mean_squared_error": ("regression", "RootMeanSquaredError", {}, "pred"),
    "mae": ("regression", "MeanAbsoluteError", {}, "pred"),
    "mean_absolute_error": ("regression", "MeanAbsoluteError", {}, "pred"),
    "mape": ("regression", "MeanAbsolutePercentageError", {}, "pred"),
    "r2": ("regression", "R2Score", {}, "pred"),
    "explained_variance": ("regression", "ExplainedVariance", {}, "pred"),
    "pearson": ("regression", "PearsonCorrCoef", {}, "pred"),
    "regression_report": ("regression", "RegressionReport", {}, "pred"),
    "nmi": ("clustering", "NormalizedMutualInfo", {}, "pred"),
    "normalized_mutual_info_score": ("clustering", "NormalizedMutualInfo", {}, "pred"),
    "ami": ("clustering", "AdjustedMutualInfo", {}, "pred"),
    "adjusted_mutual_info_score": ("clustering", "AdjustedMutualInfo", {}, "pred"),
    "ari": ("clustering", "AdjustedRandIndex", {}, "pred"),
    "adjusted_rand_score": ("clustering", "AdjustedRandIndex", {}, "pred"),
    "rand_score": ("clustering", "RandIndex", {}, "pred"),
    "mutual_info_score": ("clustering", "MutualInfo", {}, "pred"),
    "homogeneity_score": ("clustering", "Homogeneity", {}, "pred"),
    "completeness_score": ("clustering", "Completeness", {}, "pred"),
    "v_measure_score": ("clustering", "VMeasure", {}, "pred"),
    "fowlkes_mallows_score": ("clustering", "FowlkesMallows", {}, "pred"),
    "purity": ("clustering", "Purity", {}, "pred"),
    "cluster_accuracy": ("clustering", "ClusterAccuracy", {}, "pred"),
    "ndcg": ("ranking", "NDCG", {}, "query"),
    "map": ("ranking", "MAP", {}, "query"),
    "mrr": ("ranking", "MRR", {}, "query"),
    "bleu": ("text", "BLEU", {}, "text"),
    "chrf": ("text", "CHRF", {}, "text"),
}

#: Names with a cut-off, ``NAME@K`` (K a positive integer): NAME -> (module, class).
AT_K: dict[str, tuple[str, str]] = {
    "ndcg": ("ranking", "NDCG"),
    "map": ("ranking", "MAP"),
    "precision": ("ranking", "PrecisionAtK"),
    "recall": ("ranking", "RecallAtK"),
    "hit_rate": ("ranking", "HitRate"),
}


#: What each kind of metric reads, as the attribute names of the parsed command line, in the
#: order its ``update`` takes them, and the option that gives each one.
INPUTS: dict[str, tuple[tuple[str, str], ...]] = {
    "pred": (("y_true", "--y-true"), ("y_pred", "--y-pred")),
    "score": (("y_true", "--y-true"), ("y_score", "--y-score")),
    "group": (("y_true", "--y-true"), ("y_score", "--y-score"), ("group", "--group")),
    "query": (("query", "--query"), ("y_true", "--y-true"), ("y_score", "--y-score")),
    "text": (("hypothesis", "--hypothesis"), ("reference", "--reference")),
}

_WHY = {
    "y_pred": "compares predicted labels or values",
    "y_score": "ranks scores",
    "group": "is computed per group",
    "query": "ranks the rows of each query",
    "y_true": "needs the true labels",
    "hypothesis": "scores hypotheses against references",
    "reference": "scores hypotheses against references",
}


@dataclass
class Member:
    """One metric of the command: its name, a fresh metric, its family and input kind."""

    name: str
    metric: Metric
    family: str
    kind: str
    #: Whether ``--pos-label`` went to this metric.
    positive: bool = False
    #: For a binary score metric (``roc_auc``, ``average_precision``, ``gauc``, ...) given
    #: ``--pos-label``: the label whose rows are the positives (``--y-true`` becomes
    #: ``y_true == label``, as scikit-learn's ``roc_curve(pos_label=...)`` reads it).
    positive_rows: Any = None

    def needs(self) -> tuple[tuple[str, str], ...]:
        return INPUTS[self.kind]


def known_names() -> list[str]:
    """Every name the command line accepts (``NAME@K`` shown as ``NAME@10``)."""
    return sorted({*METRICS, *(f"{n}@10" for n in AT_K)})


#: Names users type for a metric the table calls otherwise (for the "did you mean" hint only).
_ALIASES = {
    "auc": "roc_auc",
    "auroc": "roc_auc",
    "rocauc": "roc_auc",
    "ap": "average_precision",
    "auprc": "average_precision",
    "acc": "accuracy",
    "f1_score": "f1",
    "f_1": "f1",
    "logloss": "log_loss",
    "brier": "brier_score",
    "ece": "calibration_error",
    "kappa": "cohen_kappa",
}


def _suggest(name: str) -> str:
    name = name.strip().lower()
    cut = re.fullmatch(r"([a-z_]+)@[1-9][0-9]*", name)
    if name in METRICS or (cut and cut.group(1) in AT_K):
        return name  # (another case: ROC_AUC)
    if name in _ALIASES:
        return _ALIASES[name]
    base, at, k = name.partition("@")
    if not (k.isascii() and k.isdigit() and int(k) >= 1):
        k = "10"  # (0.8.15 suggested the name back with the user's own invalid K: ndcg@-1)
    if at or base in AT_K:
        close = difflib.get_close_matches(base, list(AT_K), n=1, cutoff=0.5)
        if close:
            return f"{close[0]}@{k}"
    close = difflib.get_close_matches(name, list(METRICS), n=1, cutoff=0.5)
    return close[0] if close else ""


def _entry(name: str) -> tuple[str, str, dict[str, Any], str]:
    entry = METRICS.get(name)
    if entry is not None:
        return entry
    match = re.fullmatch(r"([a-z_]+)@([0-9]+)", name)
    if match and match.group(1) in AT_K:
        k = int(match.group(2))
        if k < 1:
            raise CLIError(f"metric {name!r}: the cut-off K must be at least 1")
        module_name, class_name = AT_K[match.group(1)]
        return module_name, class_name, {"k": k}, "query"
    base, at, _ = name.partition("@")
    if at and base in AT_K:
        raise CLIError(
            f"metric {name!r}: the cut-off K must be a whole number of at least 1, "
            f"as in {base + '@10'!r}"
        )
    if "," in name:  # (0.8.16 suggested one of them)
        names = [n.strip() for n in name.split(",") if n.strip()]
        repeated = " ".join(f"--metric {n}" for n in names)
        raise CLIError(f"metric {name!r}: give each metric its own --metric, as in {repeated}")
    hint = _suggest(name)
    did = f"did you mean {hint!r}? " if hint else ""
    raise CLIError(f"unknown metric {name!r}; {did}known names: {', '.join(known_names())}")


def make_metric(name: str, score_type: str | None = None, pos_label: Any = None) -> Member:
    """A fresh metric for ``name``; ``CLIError`` naming the closest known name if unknown.
    ``score_type`` (``--score-type``) goes to the metrics that take one, and only to them;
    ``pos_label`` (``--pos-label``) to the binary ones that take one (not ``f1_macro``)."""
    module_name, class_name, kwargs, kind = _entry(name)
    try:
        module = importlib.import_module(f"streammetrics.{module_name}")
    except ImportError:
        module = None
    klass = getattr(module, class_name, None)
    if klass is None:
        raise CLIError(
            f"metric {name!r} needs streammetrics.{module_name}.{class_name}, which this "
            "version of streammetrics does not have"
        )
    if score_type is not None and "score_type" in inspect.signature(klass).parameters:
        kwargs = {**kwargs, "score_type": score_type}
    takes_label = "pos_label" in inspect.signature(klass).parameters and "average" not in kwargs
    if pos_label is not None and takes_label:
        kwargs = {**kwargs, "pos_label": pos_label}
    if pos_label is not None and kind in ("score", "group"):  # binary labels beside scores
        return Member(name, klass(**kwargs), module_name, kind, True, pos_label)
    return Member(name, klass(**kwargs), module_name, kind, pos_label is not None and takes_label)


def check_columns(member: Member, args: Any) -> None:
    """``CLIError`` naming the option to give when a column ``member`` reads is missing."""
    for attr, option in member.needs():
        if not getattr(args, attr, None):
            why = _WHY[attr]
            raise CLIError(f"metric {member.name!r} {why}: give {option} COL")
