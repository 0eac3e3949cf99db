"""skrate: scikit-learn classifiers whose goals are rates."""

from ._auc import AUCClassifier
from ._constrained import ConstrainedClassifier
from ._trimmed import TrimmedClassifier, TrimmedRegressor

__version__ = "0.1.0"

__all__: list[str] = [
    "AUCClassifier",
    "ConstrainedClassifier",
    "TrimmedClassifier",
    "TrimmedRegressor",
]
