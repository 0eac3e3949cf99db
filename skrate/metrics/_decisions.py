"""The decisions a fitted classifier makes on X, as 0/1 labels or probabilities of predicting 1."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from sklearn.exceptions import NotFittedError

from ..utils._validation import check_label_missing

if TYPE_CHECKING:
    import scipy.sparse as sp
    from numpy.typing import ArrayLike
    from sklearn.base import BaseEstimator

DECISIONS = ("auto", "predict", "expected")


def _innermost(estimator):
    """The estimator that decides: through fitted searches and pipelines."""
    while True:
        if hasattr(estimator, "best_estimator_"):
            estimator = estimator.best_estimator_
        elif hasattr(estimator, "steps"):
            estimator = estimator.steps[-1][1]
        else:
            return estimator


def is_stochastic(estimator: BaseEstimator) -> bool:
    """Whether ``predict_proba`` of the estimator is the probability that a randomised classifier says 1.

    skrate's stochastic estimators expose ``stochastic_model``; for any other classifier
    ``predict_proba`` is a probability *estimate* and decisions come from ``predict``.

    Parameters
    ----------
    estimator : estimator
        A classifier, or a fitted search (``best_estimator_``) or pipeline (last step) around
        one: the innermost estimator is checked.

    Returns
    -------
    bool
        True for skrate's stochastic classifiers (:class:`~skrate.ConstrainedClassifier`,
        :class:`~skrate.MetricOptimizer`), False otherwise.
    """
    return hasattr(_innermost(estimator), "stochastic_model")


def positive_labels(estimator, y, name: str = "y") -> np.ndarray:
    """``y`` as 0/1 with ``classes_[1]`` of the fitted estimator as the positive class."""
    classes = getattr(estimator, "classes_", None)
    if classes is None:  # NotFittedError is a ValueError: either kind of handler catches it
        raise NotFittedError(f"{type(estimator).__name__} has no classes_: pass a fitted classifier.")
    classes = np.asarray(classes)
    if classes.shape[0] != 2:
        raise ValueError(f"Rates are defined for binary classifiers; {type(estimator).__name__} has "
                         f"{classes.shape[0]} classes: {classes.tolist()[:10]}.")
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {y.shape}.")
    check_label_missing(y, name)
    try:
        present = set(np.unique(y).tolist())
    except TypeError:  # text labels next to a missing one (NaN, None, pd.NA) do not sort
        present = set(y.tolist())
    unknown = sorted(present - set(classes.tolist()), key=str)
    if unknown:
        raise ValueError(f"{name} holds labels {unknown[:5]} that are not classes of the estimator "
                         f"({classes.tolist()}).")
    return _equals_exactly(y, classes[1]).astype(int)


def _equals_exactly(y: np.ndarray, value) -> np.ndarray:
    """``y == value`` without rounding ``value`` into ``y``'s dtype: NumPy compares a float
    array with a large integer in float64, where the classes 2**53 and 2**53 + 1 are one
    number. Whole floats are compared as integers instead (float64 holds each exactly)."""
    if y.dtype.kind != "f" or np.asarray(value).dtype.kind not in "iu":
        return y == value
    whole = np.isfinite(y) & (y == np.trunc(y)) & (np.abs(y) < 2.0 ** 63)
    out = np.zeros(y.shape, dtype=bool)
    out[whole] = y[whole].astype(np.int64) == value
    return out


def check_decisions(decisions) -> None:
    """Refuse a ``decisions`` option that is not one of :data:`DECISIONS`."""
    if decisions not in DECISIONS:
        raise ValueError(f"decisions must be one of {DECISIONS}, got {decisions!r}.")


def check_probabilities(estimator) -> None:
    """Refuse ``decisions="expected"`` for an estimator without ``predict_proba``."""
    if not hasattr(estimator, "predict_proba"):
        raise ValueError(f"decisions='expected' needs predict_proba, which {type(estimator).__name__} "
                         "does not have; use decisions='predict'.")


def decisions_of(estimator: BaseEstimator, X: ArrayLike | sp.spmatrix | sp.sparray,
                 decisions: str = "auto") -> np.ndarray:
    """The estimator's decisions on ``X``: 0/1 labels, or probabilities of predicting 1.

    Parameters
    ----------
    estimator : fitted binary classifier
        With ``classes_``; ``classes_[1]`` is the positive class.
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Rows to decide on, as the estimator's ``predict`` takes them.
    decisions : {"auto", "predict", "expected"}, default="auto"
        ``"predict"`` uses the labels of ``predict``; ``"expected"`` uses
        ``predict_proba(X)[:, 1]`` as the probability of predicting 1, so rates hold in
        expectation over a randomised classifier; ``"auto"`` is ``"expected"`` for skrate's
        stochastic estimators and ``"predict"`` for any other classifier.

    Returns
    -------
    ndarray of shape (n_samples,)
        1.0 where the label is ``classes_[1]`` and 0.0 elsewhere, or the probabilities of
        ``classes_[1]``.
    """
    check_decisions(decisions)
    if decisions == "auto":
        decisions = "expected" if is_stochastic(estimator) else "predict"
    classes = np.asarray(estimator.classes_)
    if decisions == "expected":
        check_probabilities(estimator)
        out = np.asarray(estimator.predict_proba(X), dtype=float)[:, 1]
    else:
        out = (np.asarray(estimator.predict(X)) == classes[1]).astype(float)
    return out
