"""Per-sample losses of linear models and their derivatives with respect to the scores.

Each loss maps scores ``Z`` of shape (n, k) and targets ``T`` to per-sample losses of shape
(n,) and ``dZ`` (the derivative of each sample's loss with respect to its own scores).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, logsumexp, softmax


def logistic(Z: np.ndarray, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Binary logistic loss ``log(1 + exp(z)) - t z``, ``t`` in {0, 1}, ``Z`` of shape (n, 1)."""
    z = Z[:, 0]
    return np.logaddexp(0.0, z) - T * z, (expit(z) - T)[:, None]


def multinomial(Z: np.ndarray, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Multinomial logistic loss; ``T`` is the one-hot target matrix of shape (n, k)."""
    return logsumexp(Z, axis=1) - np.einsum("ij,ij->i", Z, T), softmax(Z, axis=1) - T


def squared(Z: np.ndarray, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Half the squared error, ``(z - t)^2 / 2`` (scikit-learn's convention, with which
    ``alpha`` means what it does in ``ElasticNet`` and ``SGDRegressor``), ``Z`` of shape (n, 1)."""
    r = Z[:, 0] - T
    return 0.5 * (r * r), r[:, None]


LOSSES = {"logistic": logistic, "multinomial": multinomial, "squared": squared}


def score_hessian(loss, Z: np.ndarray) -> np.ndarray:
    """The second derivative of each sample's ``loss`` (one of :data:`LOSSES`) in its own
    scores, shape (n, k, k); none depends on the target."""
    if loss is logistic:
        s = expit(Z[:, 0])
        return (s * (1.0 - s))[:, None, None]
    if loss is multinomial:
        S = softmax(Z, axis=1)
        return S[:, :, None] * np.eye(Z.shape[1]) - S[:, :, None] * S[:, None, :]
    return np.ones((Z.shape[0], 1, 1))


def convex_loss(loss, Z, T):
    """The numpy ``loss`` (one of :data:`LOSSES`) as a cvxpy expression of an affine ``Z``:
    the per-sample losses, for the exact conic solvers."""
    import cvxpy as cp  # only the exact solvers need cvxpy: importing skrate stays light

    forms = {
        logistic: lambda: cp.logistic(Z[:, 0]) - cp.multiply(T, Z[:, 0]),
        multinomial: lambda: cp.log_sum_exp(Z, axis=1) - cp.sum(cp.multiply(Z, T), axis=1),
        squared: lambda: 0.5 * cp.square(Z[:, 0] - T),
    }
    return forms[loss]()
