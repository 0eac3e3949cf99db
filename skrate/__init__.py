"""skrate: scikit-learn classifiers whose goals are rates."""

from ._auc import AUCClassifier
from ._constrained import ConstrainedClassifier
from ._divergence import robust_loss, worst_case_weights
from ._dro import DROClassifier, DRORegressor
from ._metric_optimizer import MetricOptimizer
from ._trimmed import TrimmedClassifier, TrimmedRegressor

__version__ = "0.1.0"

__all__: list[str] = [
    "AUCClassifier",
    "ConstrainedClassifier",
    "DROClassifier",
    "DRORegressor",
    "MetricOptimizer",
    "TrimmedClassifier",
    "TrimmedRegressor",
    "robust_loss",
    "worst_case_weights",
]
