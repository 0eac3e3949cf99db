"""skrate: scikit-learn classifiers whose goals are rates."""

__version__ = "0.1.0"

__all__: list[str] = []
