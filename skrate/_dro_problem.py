"""The distributionally robust linear problem over an f-divergence ball, and its solvers' result.

The problem (see :mod:`skrate._divergence` for the ball):

    min_{W, b}  F(W, b) = sup_{p in P} sum_i p_i loss_i(X_i W + b) + (alpha / 2) ||W||^2,

the intercept ``b`` unpenalised. ``F`` is convex when the loss is; by Danskin's theorem its
(sub)gradient is that of the ``p*``-weighted loss at the worst case ``p*``.

:class:`LinearDRO` holds the problem on arrays, :class:`Result` a solver's outcome, and
:func:`_best` the safeguard every path ends with. The solvers:
:func:`~skrate._dro_sgd.dynamic_sgd` (the growing-sample path),
:func:`~skrate._dro_continuation.primal_lbfgs` (the full-batch path),
:func:`~skrate._dro_conic.max_loss` (the exact solution for a ball that concentrates) and
:func:`~skrate._dro_lbfgs.dual_lbfgs` (the dual).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
from sklearn.utils.extmath import row_norms

from ._divergence import _smoothed_worst_case, _smoothing, _worst_case


@dataclass
class LinearDRO:
    """A robust linear problem on arrays: ``X`` (n, d), targets ``T``, base distribution ``q``.

    ``alpha`` is the L2 penalty strength, one for all coefficients or one per feature
    (shape (d,)): the penalty of a problem whose features were rescaled. The features are
    ``X - offset``, centred implicitly so that a sparse ``X`` stays sparse (no offset by
    default).
    """

    X: object
    T: np.ndarray
    loss: Callable
    q: np.ndarray
    divergence: str
    radius: float
    alpha: float | np.ndarray
    n_outputs: int
    fit_intercept: bool
    offset: np.ndarray | None = None

    def __post_init__(self):
        if self.offset is None:
            self.offset = np.zeros(self.X.shape[1])

    @property
    def n_params(self) -> int:
        d = self.X.shape[1]
        return (d + self.fit_intercept) * self.n_outputs

    def unpack(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d, k = self.X.shape[1], self.n_outputs
        W = theta[: d * k].reshape(d, k)
        b = theta[d * k :] if self.fit_intercept else np.zeros(k)
        return W, b

    def subset(self, rows) -> "LinearDRO":
        """The same problem on ``rows``, its base distribution renormalised."""
        q = self.q[rows]
        return LinearDRO(self.X[rows], self.T[rows], self.loss, q / q.sum(), self.divergence,
                         self.radius, self.alpha, self.n_outputs, self.fit_intercept,
                         self.offset)

    def on_support(self) -> "LinearDRO":
        """The problem on the rows of positive base weight, the only ones that matter."""
        return self.subset(np.flatnonzero(self.q > 0))

    @property
    def ridge(self) -> np.ndarray:
        """The penalty strengths as a column, broadcasting against ``W`` (d, k)."""
        return np.reshape(self.alpha, (-1, 1))

    def dense_features(self, rows=slice(None)) -> np.ndarray:
        """The features ``X - offset`` of ``rows`` as a dense array, for the conic solves."""
        X = self.X[rows]
        return (X.toarray() if hasattr(X, "toarray") else np.asarray(X)) - self.offset

    def design_rows(self, X: np.ndarray) -> np.ndarray:
        """Dense features ``X`` with a column of ones when there is an intercept: the rows whose
        products with ``theta`` (reshaped, W then b) are the scores."""
        return np.hstack([X, np.ones((X.shape[0], 1))]) if self.fit_intercept else X

    def row_sq(self) -> np.ndarray:
        """``||(x_i - offset, 1)||^2`` per row (without the 1 when there is no intercept)."""
        sq = (row_norms(self.X, squared=True) - 2.0 * np.asarray(self.X @ self.offset).ravel()
              + self.offset @ self.offset)
        return np.maximum(sq, 0.0) + float(self.fit_intercept)

    def losses(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        W, b = self.unpack(theta)
        return self.loss(np.asarray(self.X @ W) + (b - self.offset @ W), self.T)

    def weighted_gradient(
        self, theta: np.ndarray, weights: np.ndarray, dZ: np.ndarray
    ) -> np.ndarray:
        """Gradient of ``sum_i weights_i loss_i + penalty`` from the per-sample ``dZ``."""
        W, _ = self.unpack(theta)
        G = weights[:, None] * dZ
        total = G.sum(axis=0)
        grad_W = np.asarray(self.X.T @ G) - np.outer(self.offset, total) + self.ridge * W
        if not self.fit_intercept:
            return grad_W.ravel()
        return np.concatenate([grad_W.ravel(), total])

    def concentrated(self) -> bool:
        """Whether the worst case puts all its mass on the largest loss at every ``theta``.

        It does when the radius is at least the divergence of ``q`` conditioned on any one
        sample, ``(1 / q_min - 1) / 2`` (chi2) or ``-log q_min`` (kl), ``q_min`` the smallest
        positive base weight: the objective is then the largest loss plus the penalty.
        """
        if self.radius == 0.0:
            return False
        q_min = float(self.q[self.q > 0].min())
        limit = 0.5 * (1.0 / q_min - 1.0) if self.divergence == "chi2" else -math.log(q_min)
        return self.radius >= limit

    def penalty(self, theta: np.ndarray) -> float:
        W, _ = self.unpack(theta)
        return 0.5 * float(np.sum(self.ridge * W * W))

    def objective(self, theta: np.ndarray, eta_hint: float | None = None, grad: bool = False):
        """``(F(theta), subgradient or None, worst-case p, its dual variable eta)``.

        The subgradient is Danskin's: that of the ``p``-weighted loss plus the penalty.
        ``eta_hint`` (a nearby problem's ``eta``) only speeds up the inner maximisation.
        """
        losses, dZ = self.losses(theta)
        p, eta = _worst_case(losses, self.q, self.divergence, self.radius, eta_hint)
        value = float(p @ losses) + self.penalty(theta)
        return value, (self.weighted_gradient(theta, p, dZ) if grad else None), p, eta

    def smoothed_objective(self, theta: np.ndarray, mu: float, eta_hint: float | None = None):
        """``(F_mu(theta), its gradient, F(theta), gap, eta, temperature, p)``: the objective
        smoothed at temperature ``mu`` (:func:`~skrate._divergence._smoothed_worst_case`,
        which also gives ``eta`` and the exact ``temperature``; ``mu = 0`` is ``F``), and the
        exact worst case ``p`` (as in :meth:`objective`), which it computes anyway.

        The gradient is that of the ``p_mu``-weighted loss plus the penalty, and ``gap =
        F(theta) - (p_mu @ losses + penalty) >= 0``. As ``p_mu`` is a point of the ball, the
        gradient is a ``gap``-subgradient of ``F``: ``F(theta') >= F(theta) - gap + g @
        (theta' - theta)`` for every ``theta'`` (the losses are convex). ``gap`` is 0 where
        the smoothing leaves the worst case exact.
        """
        losses, dZ = self.losses(theta)
        exact, eta = _worst_case(losses, self.q, self.divergence, self.radius, eta_hint)
        p, value, robust, temperature = _smoothing(
            losses, self.q, self.divergence, self.radius, mu, exact, eta)
        penalty = self.penalty(theta)
        gap = max(robust - float(p @ losses), 0.0)
        return (value + penalty, self.weighted_gradient(theta, p, dZ), robust + penalty, gap,
                eta, temperature, exact)

    def sampled_objective(
        self, theta: np.ndarray, eta_hint: float | None, row_sq: np.ndarray, mu: float = 0.0
    ) -> SampleState:
        """``F_mu`` and its gradient on this sample, with the sampling noise of the gradient.

        The loss part of the gradient is the sample mean of
        ``v_i = m p_i dZ_i (x_i - offset, 1)``; its standard error
        ``sqrt((mean ||v_i||^2 - ||mean v_i||^2) / m)`` is the noise, ``row_sq`` holding
        :meth:`row_sq` of the sample's rows.
        """
        losses, dZ = self.losses(theta)
        p, value, _, eta, _ = _smoothed_worst_case(losses, self.q, self.divergence,
                                                   self.radius, mu, eta_hint)
        value += self.penalty(theta)
        grad = self.weighted_gradient(theta, p, dZ)
        m = losses.size
        W, _ = self.unpack(theta)
        loss_grad = grad.copy()
        loss_grad[: W.size] -= (self.ridge * W).ravel()
        second = np.mean((m * p) ** 2 * np.einsum("ij,ij->i", dZ, dZ) * row_sq)
        noise = math.sqrt(max(second - loss_grad @ loss_grad, 0.0) / m)
        return SampleState(value, grad, eta, noise)


@dataclass
class SampleState:
    """The (smoothed) robust objective of a sample at a point, with what the sampled path
    needs."""

    value: float
    grad: np.ndarray
    eta: float
    noise: float


@dataclass
class Result:
    """A solver's final point and whether it passed the ``tol`` test.

    ``converged`` only when ``grad_max`` passed it and ``n_outside`` is 0. ``grad_max`` is
    the largest absolute entry of the final full-data (projected) gradient, or of the
    multiplier-weighted subgradient for :func:`max_loss` (NaN when no conic solve of it
    finished). ``n_outside`` counts the samples outside the working set of
    :func:`max_loss` whose loss still exceeds the set's maximum. ``gap`` is the
    ``epsilon`` of that gradient as an epsilon-subgradient (0 where ``F`` is
    differentiable, see :func:`_continuation`; infinite for multipliers outside the
    ball), and ``gap_ok`` whether the test that measured it found it within its slack
    (``_TIE_SLACK``, or ``_CONIC_SLACK`` for multipliers). ``objective`` is ``F(theta)``
    when the solver has it. ``conic`` marks a result of :func:`max_loss`, whose iterations
    are interior-point ones and whose gradient is its multipliers'.
    """

    theta: np.ndarray
    n_iter: int
    converged: bool
    grad_max: float = math.nan
    n_outside: int = 0
    gap: float = 0.0
    objective: float = math.nan
    conic: bool = False
    gap_ok: bool = True


def _sup(v: np.ndarray) -> float:
    """The largest absolute entry: the measure of every gradient test here."""
    return float(np.max(np.abs(v), initial=0.0))


def _objective_of(problem: LinearDRO, result: Result) -> float:
    """``F`` at ``result``'s point: its own ``objective``, evaluated when the solver had none."""
    if math.isnan(result.objective):
        return problem.objective(result.theta)[0]
    return result.objective


def _best(problem: LinearDRO, result: Result, theta0: np.ndarray, start: float) -> Result:
    """An unconverged ``result``, or the start ``theta0`` (``F = start``) if that is better.

    A safeguard: a descent path only moves on decreases of the smoothed objective, which
    is within ``mu * radius`` of ``F``, and the max-loss path's ERM start and conic solves
    do not look at ``F``. A converged result passed its test and is kept.
    """
    if result.converged:
        return result
    if start < _objective_of(problem, result):
        return replace(result, theta=theta0.copy(), objective=start)
    return result
