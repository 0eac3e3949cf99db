"""The theta-player of the rate games: surrogate gradient steps on a weighted sum of rates.

Whatever the other players do, the model only ever minimises a *linear* combination
``sum_k c_k rate_k`` of the rows of a rate matrix, whose surrogate gradient with respect to
the scores is ``(A.T @ c) * surrogate'(f)`` (the core's compiler and surrogates).
"""

from __future__ import annotations

import numpy as np

from ..models import Design
from ..problem import CellMatrix, CellVectors
from ..solvers import surrogate_bounds, surrogate_grad
from ..solvers._adam import Adam


class SurrogateTheta:
    """Adam steps on the surrogate of ``row_weights . (A @ yhat)``, full-batch or minibatch;
    with a plug-in ``oracle``, its exact best responses instead (full-batch)."""

    def __init__(self, model, X, A: CellMatrix, *, surrogate: str, learning_rate: float, alpha: float,
                 batch_size: int | None, rng: np.random.Generator, init_params: np.ndarray | None = None,
                 oracle=None):
        self.oracle = oracle
        if oracle is not None:  # an exact answer needs every row's cost
            batch_size = None
        design = Design(X)
        self.model, self.X, self.XT, self.A = model, design.X, design.T, A
        self.n = self.X.shape[0]
        self.surrogate, self.rng = surrogate, rng
        self.theta = model.init_params(rng) if init_params is None else np.array(init_params, dtype=float)
        self.adam = Adam(self.theta.shape[0], learning_rate)
        self.reg = alpha * model.penalty_mask()
        self.full = batch_size is None or batch_size >= self.n
        self.design = design
        # the products with A: over every row, or over a minibatch's rows through each row's cell
        self.vectors = CellVectors(A)
        self.batch_size = batch_size
        self.order, self.at = rng.permutation(self.n), 0
        self._pos_neg = None
        self._cache = None

    def batch(self) -> np.ndarray:
        """Draw the next batch; return the batch estimate of the rates ``A @ 1[f > 0]`` (without b)."""
        if self.full:
            self.Xb, self.XTb, self.scale, self.idx = self.X, self.XT, 1.0, None
        else:
            if self.at + self.batch_size > self.n:
                self.order, self.at = self.rng.permutation(self.n), 0
            self.idx = self.order[self.at:self.at + self.batch_size]
            self.at += self.batch_size
            self.Xb, self.XTb = self.design.rows(self.idx), None
            self.batch_vectors = self.vectors.batch(self.idx)
            self.scale = self.n / self.batch_size
        self._cache = None  # the previous batch's activations are not held through this forward pass
        self.scores, self._cache = self.model.forward(self.Xb, self.theta)
        decisions = (self.scores > 0).astype(float)
        if self.full:
            return self.vectors.matvec(decisions)
        return self.scale * self.batch_vectors.matvec(decisions)

    def surrogate_rates(self, direction: np.ndarray) -> np.ndarray:
        """Surrogate estimate of the rates on the current batch (without b): an upper bound of the
        rates with ``direction >= 0`` (penalised), a lower bound of the others (rewarded), so the
        surrogate of ``direction . rates`` bounds it from above."""
        if self._pos_neg is None:
            self._pos_neg = (self.A.maximum(0), self.A.minimum(0))
        pos, neg = self._pos_neg
        if self.idx is not None:  # a minibatch: its columns, scaled to the full sample
            pos, neg = pos[:, self.idx] * self.scale, neg[:, self.idx] * self.scale
        # each row's upper and lower stand-in, once: an upper bound of a rate takes the upper one
        # on its positive coefficients, a lower bound the lower one there
        up, low = surrogate_bounds(self.scores, self.surrogate)
        upper = pos @ up + neg @ low
        lower = -((-neg) @ up + (-pos) @ low)
        return np.where(direction >= 0, upper, lower)

    def costs(self, row_weights: np.ndarray) -> np.ndarray:
        """Each training row's coefficient in ``row_weights . (A @ yhat)``: ``A.T @ row_weights``."""
        return self.vectors.rmatvec(row_weights)

    def step(self, row_weights: np.ndarray) -> None:
        if self.oracle is not None:
            self.theta = self.oracle.best_response(self.costs(row_weights))
            return
        coef = self.costs(row_weights) if self.full else self.scale * self.batch_vectors.rmatvec(row_weights)
        cache, self._cache = self._cache, None  # the activations of batch(), at this theta
        grad = self.model.backward(self.Xb, self.theta, surrogate_grad(self.scores, coef, self.surrogate), self.XTb,
                                   cache=cache)
        self.theta = self.adam.step(self.theta, grad + self.reg * self.theta)
