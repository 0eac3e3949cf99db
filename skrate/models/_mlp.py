"""A small multilayer perceptron with ReLU hidden layers, in NumPy."""

from __future__ import annotations

from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np

from ._design import as_matrix

if TYPE_CHECKING:
    import scipy.sparse as sp


class MLPModel:
    """ReLU network ``x -> R^1`` over a flat parameter vector, with backpropagation.

    The vector holds each layer in turn, its weights then its biases: ``W1`` (``n_features`` x
    ``h1``, row-major), ``b1`` (``h1``), ..., ``W_out`` (``h_last`` x 1), ``b_out`` (1); the rows of
    an estimator's ``candidates_`` are such vectors, ``n_params`` long.

    Parameters
    ----------
    n_features : int
        Width of the input.
    hidden_layer_sizes : tuple of int
        Widths of the hidden layers, each at least 1.
    """

    def __init__(self, n_features: int, hidden_layer_sizes: tuple[int, ...]):
        # an estimator's parameter as given: a fractional width is refused, not rounded down
        if not isinstance(hidden_layer_sizes, (tuple, list)) or not hidden_layer_sizes or not all(
                isinstance(s, Integral) and not isinstance(s, bool) and s >= 1 for s in hidden_layer_sizes):
            raise ValueError(f"hidden_layer_sizes must be a tuple of positive integers, got {hidden_layer_sizes!r}.")
        self.n_features = n_features
        self.sizes = (n_features, *(int(s) for s in hidden_layer_sizes), 1)
        self._shapes = [(a, b) for a, b in zip(self.sizes[:-1], self.sizes[1:])]
        self.n_params = sum(a * b + b for a, b in self._shapes)

    def _unpack(self, theta: np.ndarray):
        layers, at = [], 0
        for a, b in self._shapes:
            W = theta[at:at + a * b].reshape(a, b)
            at += a * b
            layers.append((W, theta[at:at + b]))
            at += b
        return layers

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        """He initialisation for the ReLU layers, zero biases.

        Parameters
        ----------
        rng : numpy.random.Generator
            Draws the weights: normal, of standard deviation ``sqrt(2 / fan_in)``.

        Returns
        -------
        ndarray of shape (n_params,)
            The initial parameter vector.
        """
        parts = []
        for a, b in self._shapes:
            parts += [rng.normal(scale=np.sqrt(2.0 / a), size=a * b), np.zeros(b)]
        return np.concatenate(parts)

    def _activations(self, X, layers) -> list:
        acts = [X]
        for k, (W, c) in enumerate(layers):
            z = np.asarray(acts[-1] @ W) + c
            acts.append(z if k == len(layers) - 1 else np.maximum(z, 0.0))
        return acts

    def forward(self, X: np.ndarray | sp.spmatrix, theta: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """``(scores, cache)``: the scores and the layers' activations, which :meth:`backward` at the
        same ``X`` and ``theta`` reuses instead of running the network again.

        Parameters
        ----------
        X : {ndarray, sparse matrix} of shape (n_samples, n_features)
            The rows to score.
        theta : ndarray of shape (n_params,)
            The network's parameters.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            The network's output.
        cache : list of ndarray
            ``X`` and the activations of every layer after it, the output last.
        """
        acts = self._activations(X, self._unpack(theta))
        return acts[-1][:, 0], acts

    def scores(self, X: np.ndarray | sp.spmatrix, theta: np.ndarray) -> np.ndarray:
        return self.forward(X, theta)[0]

    def scores_many(self, X: np.ndarray | sp.spmatrix, thetas: np.ndarray) -> np.ndarray:
        X = as_matrix(X)
        out = np.empty((X.shape[0], len(thetas)))
        for j, theta in enumerate(thetas):  # filled column by column: the (n, k) scores exist once
            out[:, j] = self.scores(X, theta)
        return out

    def backward(self, X: np.ndarray | sp.spmatrix, theta: np.ndarray, grad_scores: np.ndarray,
                 XT: np.ndarray | sp.spmatrix | None = None, cache: list[np.ndarray] | None = None) -> np.ndarray:
        """Gradient of ``sum_i grad_scores_i * f(x_i)`` with respect to theta.

        ``cache`` is what :meth:`forward` returned with the scores for this ``X`` and ``theta``;
        None runs the forward pass again.

        Parameters
        ----------
        X : {ndarray, sparse matrix} of shape (n_samples, n_features)
            The rows scored.
        theta : ndarray of shape (n_params,)
            The network's parameters.
        grad_scores : ndarray of shape (n_samples,)
            The weight of each row's score.
        XT : {ndarray, sparse matrix} of shape (n_features, n_samples), default=None
            Unused: the models' common signature, where a linear model's vector product
            reads a precomputed transpose. The network's first layer multiplies a matrix of
            deltas, faster through ``X.T`` itself.
        cache : list of ndarray, default=None
            The activations :meth:`forward` returned for this ``X`` and ``theta``.

        Returns
        -------
        ndarray of shape (n_params,)
            The gradient, laid out as ``theta``.
        """
        layers = self._unpack(theta)
        acts = self._activations(X, layers) if cache is None else cache
        delta = grad_scores[:, None]
        grads = []
        for k in range(len(layers) - 1, -1, -1):
            W, _ = layers[k]
            # acts[0].T is X.T: for a sparse X its column view, which reads each row of the
            # deltas once, where a row-major transpose gathers them at random, out of the
            # cache once n * n_hidden floats outgrow it (2.5x slower at 320k rows)
            inputs_T = acts[k].T
            grads.append(np.asarray(inputs_T @ delta).ravel())
            grads.append(delta.sum(axis=0))
            if k:
                delta = (delta @ W.T) * (acts[k] > 0)
        out = []
        for k in range(len(layers)):  # grads were collected last layer first: (dW, db) pairs
            dW, db = grads[2 * (len(layers) - 1 - k)], grads[2 * (len(layers) - 1 - k) + 1]
            out += [dW, db]
        return np.concatenate(out)

    def penalty_mask(self) -> np.ndarray:
        """1 for weight matrices, 0 for biases.

        Returns
        -------
        ndarray of shape (n_params,)
            The entries the L2 penalty applies to, laid out as ``theta``.
        """
        parts = []
        for a, b in self._shapes:
            parts += [np.ones(a * b), np.zeros(b)]
        return np.concatenate(parts)

    def unscale(self, thetas: np.ndarray, transform: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """Parameters (k, n_params) fitted on ``(X - shift) / scale``, as parameters on ``X`` (same
        scores): the first layer's weights of input ``j`` divided by ``scale[j]``, and its biases
        less ``shift @ W``.

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
        d, h = self._shapes[0]
        first = out[:, :d * h].reshape(len(out), d, h)  # a view: the division lands in out
        first /= scale[:, None]
        out[:, d * h:d * h + h] -= np.einsum("j,kjh->kh", shift, first)
        return out
