"""A distribution over candidate models, with reproducible randomised predictions."""

from __future__ import annotations

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(h: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: a bijective scrambling of 64-bit words."""
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def row_uniforms(X: np.ndarray, seed: int = 0) -> np.ndarray:
    """A uniform number in [0, 1) per row, a pure function of the row's bytes and ``seed``.

    The same row gets the same number in every call and every process; distinct rows get
    (pseudo-)independent numbers. Loops over columns, never over rows.
    """
    X = np.ascontiguousarray(X, dtype=np.float64) + 0.0  # + 0.0 folds -0.0 into 0.0
    bits = X.view(np.uint64).reshape(X.shape[0], -1)
    with np.errstate(over="ignore"):  # 64-bit wrap-around is the point of the hash
        h = np.full(X.shape[0], _mix(np.array([seed], dtype=np.uint64) + _GOLDEN)[0], dtype=np.uint64)
        for j in range(bits.shape[1]):
            h = _mix(h ^ (bits[:, j] + _GOLDEN * np.uint64(j + 1)))
    return (h >> np.uint64(11)).astype(np.float64) * 2.0**-53


class StochasticModel:
    """Weights over candidate score models; predicts 1 with probability ``sum_k p_k 1[f_k(x) > 0]``.

    Parameters
    ----------
    model : LinearModel or MLPModel
        The score function family.
    params : ndarray of shape (k, n_params)
        The candidates in the support.
    weights : ndarray of shape (k,)
    seed : int
        Salt of the per-row draws of :meth:`predict`.
    """

    def __init__(self, model, params: np.ndarray, weights: np.ndarray, seed: int = 0):
        keep = weights > 0
        self.model, self.params, self.weights, self.seed = model, params[keep], weights[keep], seed

    @property
    def is_deterministic(self) -> bool:
        return self.weights.shape[0] == 1

    def scores(self, X) -> np.ndarray:
        """Scores of every model in the support, shape (n, k)."""
        return self.model.scores_many(X, self.params)

    def proba(self, X) -> np.ndarray:
        """Probability that the randomised classifier predicts 1."""
        return np.clip((self.scores(X) > 0) @ self.weights, 0.0, 1.0)

    def predict(self, X) -> np.ndarray:
        """0/1 decisions: 1 when the row's reproducible uniform draw falls below its probability."""
        p = self.proba(X)
        if self.is_deterministic:
            return (p > 0.5).astype(int)
        return (row_uniforms(X, self.seed) < p).astype(int)
