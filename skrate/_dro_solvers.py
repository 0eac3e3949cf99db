"""Solvers for distributionally robust linear models over an f-divergence ball.

The problem (see :mod:`skrate._divergence` for the ball):

    min_{W, b}  F(W, b) = sup_{p in P} sum_i p_i loss_i(X_i W + b) + (alpha / 2) ||W||^2,

the intercept ``b`` unpenalised. ``F`` is convex when the loss is; by Danskin's theorem its
(sub)gradient is that of the ``p*``-weighted loss at the worst case ``p*``.

* :func:`dynamic_sgd` is the dynamically sampled descent of Ghosh et al. (2018): samples
  drawn without replacement grow geometrically until they cover the data; on each, the
  inner maximisation is solved exactly and a few L-BFGS steps are taken until the sample's
  gradient is within its sampling noise; on the full data the same steps continue.
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
from sklearn.utils.extmath import row_norms

from ._divergence import _dual, _worst_case

# Armijo sufficient-decrease constant and the most step halvings of one line search.
_ARMIJO = 1e-4
_HALVINGS = 40
# Curvature pairs kept by the L-BFGS steps of the sampled path.
_MEMORY = 20
# A sample's stage ends when its gradient norm is at most this multiple of its sampling
# noise, or after this many steps.
_NOISE_RATIO = 1.0
_STAGE_STEPS = 10
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

    def sampled_objective(
        self, theta: np.ndarray, eta_hint: float | None, row_sq: np.ndarray
    ) -> SampleState:
        """``F`` and its gradient on this sample, with the sampling noise of the gradient.

        The loss part of the gradient is the sample mean of ``v_i = m p_i dZ_i (x_i, 1)``;
        its standard error ``sqrt((mean ||v_i||^2 - ||mean v_i||^2) / m)`` is the noise,
        ``row_sq`` holding ``||(x_i, 1)||^2`` (``||x_i||^2`` without intercept).
        """
        losses, dZ = self.losses(theta)
        p, eta = _worst_case(losses, self.q, self.divergence, self.radius, eta_hint)
        value = float(p @ losses) + self.penalty(theta)
        grad = self.weighted_gradient(theta, p, dZ)
        m = losses.size
        W, _ = self.unpack(theta)
        loss_grad = grad.copy()
        loss_grad[: W.size] -= self.alpha * W.ravel()
        second = np.mean((m * p) ** 2 * np.einsum("ij,ij->i", dZ, dZ) * row_sq)
        noise = math.sqrt(max(second - loss_grad @ loss_grad, 0.0) / m)
        return SampleState(value, grad, eta, noise)


@dataclass
class SampleState:
    """The robust objective of a sample at a point, with what the sampled path needs."""

    value: float
    grad: np.ndarray
    eta: float
    noise: float


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


def _two_loop(grad: np.ndarray, pairs: list) -> np.ndarray:
    """The L-BFGS product ``H grad`` from curvature pairs ``(s, y, 1 / s'y)``, oldest first."""
    r = grad.copy()
    coefs = []
    for s, y, rho in reversed(pairs):
        a = rho * (s @ r)
        coefs.append(a)
        r -= a * y
    s, y, _ = pairs[-1]
    r *= (s @ y) / (y @ y)
    for (s, y, rho), a in zip(pairs, reversed(coefs)):
        r += (a - rho * (y @ r)) * s
    return r


def _armijo(sub: LinearDRO, theta, state, direction, row_sq):
    """Backtrack from the unit step until ``sub``'s objective decreases enough, or ``None``."""
    slope = state.grad @ direction
    step = 1.0
    for _ in range(_HALVINGS):
        candidate = theta + step * direction
        new = sub.sampled_objective(candidate, state.eta, row_sq)
        # Strict decrease too: near the optimum the Armijo bound rounds to the value itself.
        if new.value <= state.value + _ARMIJO * step * slope and new.value < state.value:
            return candidate, new
        step *= 0.5
    return None


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
    """Dynamically sampled descent with the exact inner maximisation (Ghosh et al. 2018).

    Stage ``t`` works on the sample of the first ``m_t = min(n, ceil(initial_sample_size *
    growth**t))`` points of one random permutation of the data: samples drawn without
    replacement that grow by new points until they cover the data. On each sample the
    inner maximisation is solved exactly, so the step direction is the sample's exact
    Danskin gradient, turned into a quasi-Newton direction by the L-BFGS two-loop
    recursion (curvature pairs kept across samples) and given an Armijo step on the
    sample's robust objective. A stage ends as soon as the sample's gradient is no larger
    than its own sampling noise (``||g|| <= sqrt(trace Var(v_i) / m)`` for the per-sample
    terms ``v_i`` of :meth:`LinearDRO.sampled_objective`, the norm test of
    dynamic sampling methods), or after ``_STAGE_STEPS`` steps: a sample of ``m`` points
    only pins the optimum down to ``O(1 / sqrt(m))``. Once the sample is the full data the
    same L-BFGS steps continue, deterministically, until the largest absolute gradient
    entry is at most ``tol`` (or no step decreases the objective any more).
    """
    # Rows of zero base weight never matter and are left out, so no sample has zero
    # total weight; the samples are prefixes (views) of one permuted copy of the data.
    support = np.flatnonzero(problem.q > 0)
    n = support.size
    shuffled = problem.subset(rng.permutation(support))
    row_sq = row_norms(shuffled.X, squared=True) + float(problem.fit_intercept)
    pairs: list = []
    eta, it = None, 0
    for m in sample_sizes(n, initial_sample_size, growth):
        full = m == n
        sub = shuffled if full else shuffled.subset(slice(0, m))
        rows = row_sq[:m]
        state = sub.sampled_objective(theta, eta, rows)
        for stage_step in range(max_iter + 1):
            if full and np.max(np.abs(state.grad)) <= tol:
                return Result(theta, it, True)
            if not full and (np.linalg.norm(state.grad) <= _NOISE_RATIO * state.noise
                             or stage_step == _STAGE_STEPS):
                break
            if it == max_iter:
                return Result(theta, it, False)
            found = None
            if pairs:
                direction = -_two_loop(state.grad, pairs)
                if state.grad @ direction < 0:
                    found = _armijo(sub, theta, state, direction, rows)
            if found is None:
                # Steepest descent, first step at most 1 in every coordinate.
                pairs = []
                direction = -state.grad / max(1.0, np.max(np.abs(state.grad)))
                found = _armijo(sub, theta, state, direction, rows)
            if found is None:
                if full:  # the objective cannot decrease any more in floating point
                    return Result(theta, it, True)
                break
            candidate, new = found
            s, y = candidate - theta, new.grad - state.grad
            sy = s @ y
            # Both gradients are on the same sample, so (s, y) is a curvature pair of it.
            if sy > 1e-10 * (y @ y):
                pairs = (pairs + [(s, y, 1.0 / sy)])[-_MEMORY:]
            theta, state, eta = candidate, new, new.eta
            it += 1
            if callback is not None:
                callback(theta)
    raise AssertionError("unreachable: the schedule reaches the full data")


def _lbfgs(fun, theta, max_iter, tol, callback, bounds=None, memory=10):
    return minimize(fun, theta, jac=True, method="L-BFGS-B", bounds=bounds, callback=callback,
                    options=dict(maxiter=max_iter, gtol=tol, ftol=_FTOL, maxls=50,
                                 maxcor=memory))


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
    memory: int = 10,
) -> Result:
    """L-BFGS-B on ``F`` itself, the inner maximisation solved exactly at every evaluation.

    ``F`` is differentiable wherever the worst case is unique, with Danskin's gradient. It is
    not where losses with different gradients tie (at ``theta = 0`` all logistic losses
    tie), so the path starts with a few iterations of empirical risk minimisation, after
    which they generically do not; those iterations count in ``n_iter``. ``memory`` is the
    number of curvature pairs of L-BFGS-B (SciPy's ``maxcor``).
    """
    if problem.radius == 0.0:
        return erm_lbfgs(problem, theta, max_iter, tol)
    start = erm_lbfgs(problem, theta, min(max_iter, _ERM_START), tol)
    eta = [None]

    def fun(theta):
        value, grad, _, eta[0] = problem.objective(theta, eta[0], grad=True)
        return value, grad

    res = _lbfgs(fun, start.theta, max(1, max_iter - start.n_iter), tol, callback,
                 memory=memory)
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
