"""Fitted classifiers as a family of score models indexed by their position."""

from __future__ import annotations

import numpy as np
from joblib import Parallel, delayed


def _signs(estimator, X) -> np.ndarray:
    return np.where(np.asarray(estimator.predict(X)) == 1, 1.0, -1.0)


class FittedEstimators:
    """Scores of fitted 0/1 classifiers: ``+1`` where one predicts 1, ``-1`` elsewhere.

    The parameters of a candidate are its index (``params[k, 0]``), so a
    :class:`skrate.solutions.StochasticModel` over these candidates works as over any other
    score model: ``P(predict 1) = sum_k p_k 1[f_k(x) > 0]``.

    Parameters
    ----------
    estimators : list of fitted classifiers
        Each ``predict`` returns labels in {0, 1}.
    n_jobs : int or None, default=None
        Models predicted in parallel threads by :mod:`joblib` (``None``: one, unless in a
        ``joblib.parallel_backend`` context).
    """

    def __init__(self, estimators: list, n_jobs: int | None = None):
        self.estimators, self.n_jobs = list(estimators), n_jobs

    @property
    def n_params(self) -> int:
        return 1

    def keep(self, indices) -> None:
        """Drop every estimator but those at ``indices`` (their positions stay valid)."""
        kept = set(int(i) for i in indices)
        self.estimators = [e if k in kept else None for k, e in enumerate(self.estimators)]

    def scores_many(self, X, params: np.ndarray) -> np.ndarray:
        """Scores (n, k) of the estimators ``params[:, 0]``."""
        picked = [self.estimators[int(i)] for i in np.asarray(params)[:, 0]]
        if any(e is None for e in picked):
            raise ValueError("This solution mixes fitted estimators that were dropped after fit to keep the "
                             "model small; refit with solution='T_stochastic' to keep every estimator.")
        if not picked:
            return np.zeros((X.shape[0], 0))
        if len(picked) == 1:
            return _signs(picked[0], X)[:, None]
        columns = Parallel(n_jobs=self.n_jobs, prefer="threads")(delayed(_signs)(e, X) for e in picked)
        return np.column_stack(columns)

    def scores(self, X, theta: np.ndarray) -> np.ndarray:
        return self.scores_many(X, np.asarray(theta).reshape(1, -1))[:, 0]
