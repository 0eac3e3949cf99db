"""skrate: scikit-learn classifiers whose goals are rates."""

from skrate._trimmed import TrimmedClassifier, TrimmedRegressor

__version__ = "0.1.0"

__all__: list[str] = ["TrimmedClassifier", "TrimmedRegressor"]
