"""Solvers for distributionally robust linear models over an f-divergence ball.

The problem (see :mod:`skrate._divergence` for the ball):

    min_{W, b}  F(W, b) = sup_{p in P} sum_i p_i loss_i(X_i W + b) + (alpha / 2) ||W||^2,

the intercept ``b`` unpenalised. ``F`` is convex when the loss is; by Danskin's theorem its
(sub)gradient is that of the ``p*``-weighted loss at the worst case ``p*``.

* :func:`dynamic_sgd` is the dynamically sampled subgradient descent of Ghosh et al. (2018):
  each iteration draws a sample without replacement, solves the inner maximisation exactly on
  it, takes a step along the resulting subgradient, and grows the sample geometrically until
  it covers the data; it then continues on the full batch.
* :func:`primal_lbfgs` runs L-BFGS-B on ``F`` with the exact inner maximiser (the default
  full-batch path).
* :func:`dual_lbfgs` minimises the exact convex dual jointly over the model and the dual
  variable ``eta`` with L-BFGS-B. It is fast on well-conditioned problems but stalls far
  from the optimum when the losses can be driven near zero (interpolation) or the KL
  temperature tends to zero, so the estimators use :func:`primal_lbfgs`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.optimize import minimize

from ._divergence import _dual, _worst_case

# Armijo sufficient-decrease constant and the memory of the non-monotone line search.
_ARMIJO = 1e-4
_MEMORY = 10
# L-BFGS-B stops only on the gradient test or when the objective can no longer decrease.
_FTOL = 0.0
# Iterations of empirical risk minimisation that start the primal L-BFGS path.
_ERM_START = 10


@dataclass
class LinearDRO:
    """A robust linear problem on arrays: ``X`` (n, d), targets ``T``, base distribution ``q``."""

    X: object
    T: np.ndarray
    loss: Callable
    q: np.ndarray
    divergence: str
    radius: float
    alpha: float
    n_outputs: int
    fit_intercept: bool

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
                         self.radius, self.alpha, self.n_outputs, self.fit_intercept)

    def losses(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        W, b = self.unpack(theta)
        return self.loss(np.asarray(self.X @ W) + b, self.T)

    def weighted_gradient(
        self, theta: np.ndarray, weights: np.ndarray, dZ: np.ndarray
    ) -> np.ndarray:
        """Gradient of ``sum_i weights_i loss_i + penalty`` from the per-sample ``dZ``."""
        W, _ = self.unpack(theta)
        G = weights[:, None] * dZ
        grad_W = np.asarray(self.X.T @ G) + self.alpha * W
        if not self.fit_intercept:
            return grad_W.ravel()
        return np.concatenate([grad_W.ravel(), G.sum(axis=0)])

    def penalty(self, theta: np.ndarray) -> float:
        W, _ = self.unpack(theta)
        return 0.5 * self.alpha * float(np.sum(W * W))

    def objective(self, theta: np.ndarray, eta_hint: float | None = None, grad: bool = False):
        """``(F(theta), subgradient or None, worst-case p, its dual variable eta)``.

        The subgradient is Danskin's: that of the ``p``-weighted loss plus the penalty.
        ``eta_hint`` (a nearby problem's ``eta``) only speeds up the inner maximisation.
        """
        losses, dZ = self.losses(theta)
        p, eta = _worst_case(losses, self.q, self.divergence, self.radius, eta_hint)
        value = float(p @ losses) + self.penalty(theta)
        return value, (self.weighted_gradient(theta, p, dZ) if grad else None), p, eta


@dataclass
class Result:
    theta: np.ndarray
    n_iter: int
    converged: bool


def sample_sizes(n: int, initial_sample_size: int, growth: float):
    """The sizes ``m_t = min(n, ceil(initial_sample_size * growth**t))``, ``t = 0, 1, ...``."""
    size = float(min(n, initial_sample_size))
    while True:
        yield min(n, math.ceil(size))
        size = min(size * growth, float(n))


def dynamic_sgd(
    problem: LinearDRO,
    theta: np.ndarray,
    rng: np.random.Generator,
    initial_sample_size: int,
    growth: float,
    max_iter: int,
    tol: float,
    callback: Callable | None = None,
) -> Result:
    """Dynamically sampled subgradient descent (Ghosh et al. 2018).

    Iteration ``t`` uses the first ``m_t = min(n, ceil(initial_sample_size * growth**t))``
    points of a random permutation of the data: a sample without replacement that grows by
    new points until it covers the data. The step length starts from the Barzilai-Borwein
    estimate and is backtracked until the sample's robust objective decreases enough
    (Armijo; non-monotone over the last few iterations once the sample is the full data).
    Stops on the full batch when the largest absolute gradient entry is at most ``tol``.
    """
    # Samples without replacement that grow by adding new points: the prefixes of one
    # random permutation (views of a single permuted copy of the data). Rows of zero base
    # weight never matter and are left out, so no sample has zero total weight.
    support = np.flatnonzero(problem.q > 0)
    n = support.size
    shuffled = problem.subset(rng.permutation(support))
    step, eta = 1.0, None
    prev_theta = prev_grad = at_theta = None
    history: list[float] = []
    sizes = sample_sizes(n, initial_sample_size, growth)
    for it, m in zip(range(1, max_iter + 1), sizes):
        full = m == n
        sub = shuffled if full else shuffled.subset(slice(0, m))
        if at_theta is None:
            value, grad, _, eta = sub.objective(theta, eta, grad=True)
        else:
            value, grad = at_theta
        if full and np.max(np.abs(grad)) <= tol:
            return Result(theta, it - 1, True)
        if prev_grad is not None:
            s, y = theta - prev_theta, grad - prev_grad
            sy = s @ y
            if sy > 0:
                step = (s @ s) / sy
        # Non-monotone only on the full batch, where the function no longer changes.
        history = (history if full else [])[-(_MEMORY - 1):] + [value]
        reference, g2 = max(history), grad @ grad
        while True:
            candidate = theta - step * grad
            # On the full batch the gradient at an accepted candidate is the next one needed.
            c_value, c_grad, _, c_eta = sub.objective(candidate, eta, grad=full)
            if c_value <= reference - _ARMIJO * step * g2 or step < 1e-20:
                break
            step *= 0.5
        at_theta = (c_value, c_grad) if full else None
        eta = c_eta
        prev_theta, prev_grad, theta = theta, grad, candidate
        if callback is not None:
            callback(theta)
    return Result(theta, max_iter, False)


def _lbfgs(fun, theta, max_iter, tol, callback, bounds=None):
    return minimize(fun, theta, jac=True, method="L-BFGS-B", bounds=bounds, callback=callback,
                    options=dict(maxiter=max_iter, gtol=tol, ftol=_FTOL, maxls=50))


def erm_lbfgs(problem: LinearDRO, theta: np.ndarray, max_iter: int, tol: float) -> Result:
    """Weighted empirical risk minimisation (the ``radius = 0`` problem), smooth."""

    def fun(theta):
        losses, dZ = problem.losses(theta)
        value = problem.q @ losses + problem.penalty(theta)
        return value, problem.weighted_gradient(theta, problem.q, dZ)

    res = _lbfgs(fun, theta, max_iter, tol, None)
    return Result(res.x, int(res.nit), res.status != 1)


def primal_lbfgs(
    problem: LinearDRO,
    theta: np.ndarray,
    max_iter: int,
    tol: float,
    callback: Callable | None = None,
) -> Result:
    """L-BFGS-B on ``F`` itself, the inner maximisation solved exactly at every evaluation.

    ``F`` is differentiable wherever the worst case is unique, with Danskin's gradient. It is
    not where losses with different gradients tie (at ``theta = 0`` all logistic losses
    tie), so the path starts with a few iterations of empirical risk minimisation, after
    which they generically do not; those iterations count in ``n_iter``.
    """
    if problem.radius == 0.0:
        return erm_lbfgs(problem, theta, max_iter, tol)
    start = erm_lbfgs(problem, theta, min(max_iter, _ERM_START), tol)
    eta = [None]

    def fun(theta):
        value, grad, _, eta[0] = problem.objective(theta, eta[0], grad=True)
        return value, grad

    res = _lbfgs(fun, start.theta, max(1, max_iter - start.n_iter), tol, callback)
    return Result(res.x, start.n_iter + int(res.nit), res.status != 1)


def dual_lbfgs(
    problem: LinearDRO,
    theta: np.ndarray,
    max_iter: int,
    tol: float,
    callback: Callable | None = None,
) -> Result:
    """Minimise the convex dual jointly over ``(theta, eta)`` with L-BFGS-B."""
    if problem.radius == 0.0:
        return erm_lbfgs(problem, theta, max_iter, tol)
    losses, _ = problem.losses(theta)
    q, divergence, radius = problem.q, problem.divergence, problem.radius
    _, eta = _worst_case(losses, q, divergence, radius)
    spread = float(np.ptp(losses)) + 1.0
    if divergence == "chi2":
        eta = eta if np.isfinite(eta) else float(losses.min()) - spread
        bound = (None, None)
    else:
        eta = eta if 0.0 < eta < np.inf else spread
        bound = (1e-12 * spread, None)

    def fun(z):
        theta, eta = z[:-1], z[-1]
        losses, dZ = problem.losses(theta)
        value, d_losses, d_eta = _dual(losses, q, divergence, radius, eta)
        grad = problem.weighted_gradient(theta, d_losses, dZ)
        return value + problem.penalty(theta), np.append(grad, d_eta)

    bounds = [(None, None)] * theta.size + [bound]
    step = None if callback is None else (lambda z: callback(z[:-1]))
    res = _lbfgs(fun, np.append(theta, eta), max_iter, tol, step, bounds)
    return Result(res.x[:-1], int(res.nit), res.status != 1)
