"""The linear score f(x) = x . w + b."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._design import as_matrix

if TYPE_CHECKING:
    import scipy.sparse as sp


class LinearModel:
    """Linear scores over a flat parameter vector ``theta = [w, b]``.

    Parameters
    ----------
    n_features : int
        Number of features: the length of ``w``; ``theta`` has ``n_features + 1`` entries.
    """

    def __init__(self, n_features: int):
        self.n_features = n_features

    @property
    def n_params(self) -> int:
        return self.n_features + 1

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        """Zeros: the hinge and logistic surrogates are convex for this model.

        Parameters
        ----------
        rng : numpy.random.Generator
            Unused; taken for the interface the models share (:meth:`MLPModel.init_params`).

        Returns
        -------
        ndarray of shape (n_params,)
            Zeros.
        """
        return np.zeros(self.n_params)

    def scores(self, X: np.ndarray | sp.spmatrix, theta: np.ndarray) -> np.ndarray:
        return X @ theta[:-1] + theta[-1]

    def scores_many(self, X: np.ndarray | sp.spmatrix, thetas: np.ndarray) -> np.ndarray:
        """Scores of many parameter vectors (k, n_params) at once: (n, k), one matrix product.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows to score.
        thetas : ndarray of shape (k, n_params)
            One parameter vector ``[w, b]`` per row.

        Returns
        -------
        ndarray of shape (n_samples, k)
            Column ``j`` holds the scores of ``thetas[j]``.
        """
        out = np.asarray(as_matrix(X) @ thetas[:, :-1].T)  # a DataFrame's product is read-only
        out += thetas[:, -1]  # in place: no second (n, k) array
        return out

    def forward(self, X: np.ndarray | sp.spmatrix, theta: np.ndarray) -> tuple[np.ndarray, None]:
        """``(scores, cache)`` as :meth:`MLPModel.forward`; a linear model's gradient needs no cache (None).

        Parameters
        ----------
        X : {ndarray, sparse matrix} of shape (n_samples, n_features)
            The rows to score.
        theta : ndarray of shape (n_params,)
            The parameters ``[w, b]``.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            ``X @ w + b``.
        cache : None
            Nothing for :meth:`backward` to reuse.
        """
        return self.scores(X, theta), None

    def backward(self, X: np.ndarray | sp.spmatrix, theta: np.ndarray, grad_scores: np.ndarray,
                 XT: np.ndarray | sp.spmatrix | None = None, cache: None = None) -> np.ndarray:
        """Gradient of ``sum_i grad_scores_i * f(x_i)`` with respect to theta (``XT``: ``X.T``, precomputed;
        ``cache``, from :meth:`forward`, is unused).

        Parameters
        ----------
        X : {ndarray, sparse matrix} of shape (n_samples, n_features)
            The rows scored.
        theta : ndarray of shape (n_params,)
            The parameters; the gradient of a linear model does not depend on them.
        grad_scores : ndarray of shape (n_samples,)
            The weight of each row's score.
        XT : {ndarray, sparse matrix} of shape (n_features, n_samples), default=None
            ``X.T``, precomputed; None transposes ``X``.
        cache : None, default=None
            Unused (see :meth:`forward`).

        Returns
        -------
        ndarray of shape (n_params,)
            ``[X.T @ grad_scores, sum(grad_scores)]``.
        """
        return np.append((X.T if XT is None else XT) @ grad_scores, grad_scores.sum())

    def penalty_mask(self) -> np.ndarray:
        """1 for the weights the L2 penalty applies to (the intercept is not penalised).

        Returns
        -------
        ndarray of shape (n_params,)
            Ones, with 0 for the intercept (the last entry).
        """
        mask = np.ones(self.n_params)
        mask[-1] = 0.0
        return mask

    def unscale(self, thetas: np.ndarray, transform: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """Parameters (k, n_params) fitted on ``(X - shift) / scale``, as parameters on ``X`` (same
        scores): the weights divided by ``scale``, and ``w . shift`` taken from the intercept, the
        last parameter (shared by a stacked score's levels, whose own biases sit between).

        Parameters
        ----------
        thetas : ndarray of shape (k, n_params)
            Parameter vectors fitted on the transformed rows.
        transform : (ndarray, ndarray)
            ``(shift, scale)``, each of shape (n_features,).

        Returns
        -------
        ndarray of shape (k, n_params)
            A new array of the parameters on ``X``; ``thetas`` is left unchanged.
        """
        shift, scale = transform
        out = np.array(thetas, dtype=float)
        out[:, :self.n_features] /= scale
        out[:, -1] -= out[:, :self.n_features] @ shift
        return out
