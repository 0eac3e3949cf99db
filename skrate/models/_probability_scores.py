"""Linear scores over the features and the log-odds of a fitted class-probability model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from scipy.special import logit

from ..utils._frames import frame_floats, is_frame
from ._linear import LinearModel

if TYPE_CHECKING:
    from numpy.typing import ArrayLike
    from sklearn.base import BaseEstimator


def log_odds(estimator: BaseEstimator, X: ArrayLike | sp.spmatrix, positive: Any = 1) -> np.ndarray:
    """``logit P(y = positive | x)`` of a fitted classifier, clipped to be finite.

    Parameters
    ----------
    estimator : fitted classifier
        With ``classes_`` and ``predict_proba``.
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Rows the estimator predicts on, in the form it takes.
    positive : label, default=1
        The class whose probability is read; one of ``estimator.classes_``.

    Returns
    -------
    ndarray of shape (n_samples,)
        The log-odds, with the probabilities clipped to ``[eps, 1 - eps]`` first.

    Raises
    ------
    ValueError
        When ``positive`` is not among ``estimator.classes_``.
    """
    classes = np.asarray(estimator.classes_)
    # compared one by one: numpy < 1.25 warns on comparing numbers with a string elementwise
    column = np.flatnonzero([c == positive for c in classes.tolist()])
    if column.size != 1:
        raise ValueError(f"The probability model's classes_ {classes.tolist()} do not include the positive "
                         f"class '{positive}'; fit it on the same labels.")
    p = np.asarray(estimator.predict_proba(X))[:, column[0]]
    eps = np.finfo(float).eps
    return logit(np.clip(p, eps, 1.0 - eps))


def with_score(X: np.ndarray | sp.spmatrix, z: np.ndarray) -> np.ndarray | sp.csr_matrix:
    """``[X, z]``, sparse when ``X`` is: the features with a score column appended.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        The features.
    z : ndarray of shape (n_samples,)
        The score column.

    Returns
    -------
    {ndarray, scipy.sparse.csr_matrix} of shape (n_samples, n_features + 1)
        ``X`` with ``z`` as its last column; CSR when ``X`` is sparse.
    """
    z = np.asarray(z, dtype=float)[:, None]
    return sp.hstack([X, z], format="csr") if sp.issparse(X) else np.hstack([X, z])


def score_threshold(n_features: int) -> np.ndarray:
    """Parameters of the linear model on ``[x, z]`` that predicts ``z > 0``: weight 1 on ``z``.

    Parameters
    ----------
    n_features : int
        Features of ``x`` (without ``z``).

    Returns
    -------
    ndarray of shape (n_features + 2,)
        Zero weights on ``x``, weight 1 on ``z`` and a zero intercept.
    """
    theta = np.zeros(n_features + 2)
    theta[-2] = 1.0
    return theta


class ProbabilityScoreModel:
    """``f(x) = [x, z(x)] . theta[:-1] + theta[-1]`` with ``z(x) = logit eta(x)``.

    The plug-in oracle's answers threshold ``z`` per group cell, and the cells are decoded
    linearly from ``x``: each answer is then a linear model in ``[x, z(x)]`` with weight 1 on
    ``z``. This family scores such parameters on new rows, computing ``z`` from the fitted
    ``estimator`` once per call for all candidates.

    Parameters
    ----------
    estimator : fitted classifier
        With ``predict_proba``.
    n_features : int
        Features of ``x`` (without ``z``).
    positive : label, default=1
        The class whose probability is ``eta``.
    """

    def __init__(self, estimator: BaseEstimator, n_features: int, positive: Any = 1):
        self.estimator = estimator
        self.n_features = n_features
        self.positive = positive
        self.linear = LinearModel(n_features + 1)

    @property
    def n_params(self) -> int:
        return self.linear.n_params

    def augment(self, X: ArrayLike | sp.spmatrix, z: np.ndarray | None = None) -> np.ndarray | sp.csr_matrix:
        """``[X, z]``, sparse when ``X`` is; ``z`` defaults to ``z(X)``. A DataFrame ``X`` (of numeric
        columns) reaches the estimator as it is.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The features ``x``, in the form the estimator takes.
        z : ndarray of shape (n_samples,), default=None
            The score column; None computes the estimator's log-odds of ``positive`` on ``X``.

        Returns
        -------
        {ndarray, scipy.sparse.csr_matrix} of shape (n_samples, n_features + 1)
            ``X`` as floats, its missing values read as 0, with ``z`` as its last column; CSR
            when ``X`` is sparse.
        """
        if z is None:
            z = log_odds(self.estimator, X, self.positive)
        if is_frame(X):
            X = frame_floats(X)
        # x only decodes the group cells; a missing value the estimator took must not make the
        # score NaN (weight 0 times NaN), so it reads as 0 there, in fit and predict alike
        if sp.issparse(X):
            X = sp.csr_matrix(X, dtype=float)  # a new matrix, which may share the input's arrays
            if np.isnan(X.data).any():  # a new data array, so the input's is left as it was
                X.data = np.nan_to_num(X.data, nan=0.0)
        else:
            X = np.asarray(X, dtype=float)
            if np.isnan(X).any():
                X = np.nan_to_num(X, nan=0.0)
        return with_score(X, z)

    def scores_many(self, X: ArrayLike | sp.spmatrix, thetas: np.ndarray) -> np.ndarray:
        return self.linear.scores_many(self.augment(X), thetas)

    def scores(self, X: ArrayLike | sp.spmatrix, theta: np.ndarray) -> np.ndarray:
        return self.scores_many(X, np.asarray(theta).reshape(1, -1))[:, 0]
