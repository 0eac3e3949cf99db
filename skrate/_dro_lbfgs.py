"""L-BFGS-B on smooth objectives of the robust problem (:mod:`skrate._dro_problem`).

:func:`_lbfgs` is the driver the full-batch paths share, :func:`erm_lbfgs` the empirical
risk minimisation of ``radius = 0`` (which also starts the max-loss and sampled paths).
:func:`dual_lbfgs` minimises the exact convex dual jointly over the model and the dual
variable ``eta`` with L-BFGS-B. It is fast on well-conditioned problems but stalls far
from the optimum when the losses can be driven near zero (interpolation) or the KL
temperature tends to zero, so the estimators use
:func:`~skrate._dro_continuation.primal_lbfgs`.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from scipy.optimize import minimize

from ._divergence import _dual, _worst_case
from ._dro_problem import LinearDRO, Result, _sup

# L-BFGS-B stops only on the gradient test or when the objective can no longer decrease.
_FTOL = 0.0


def _lbfgs(fun, theta, max_iter, tol, callback, bounds=None, memory=10, n_before=0) -> Result:
    """L-BFGS-B from ``theta``; converged only if the final projected gradient meets ``tol``.

    SciPy also stops with success when no step decreases the objective any more, which on
    a non-smooth stretch happens far from the gradient test; that is not convergence.
    ``n_before`` iterations of an earlier stage are added to ``n_iter``.
    """
    res = minimize(fun, theta, jac=True, method="L-BFGS-B", bounds=bounds, callback=callback,
                   options=dict(maxiter=max_iter, gtol=tol, ftol=_FTOL, maxls=50,
                                maxcor=memory))
    grad = np.array(res.jac, dtype=float)
    if bounds is not None:
        lower = np.array([-np.inf if lo is None else lo for lo, _ in bounds])
        upper = np.array([np.inf if hi is None else hi for _, hi in bounds])
        # At an active bound only the component pointing into the box counts.
        grad[(res.x <= lower) & (grad > 0)] = 0.0
        grad[(res.x >= upper) & (grad < 0)] = 0.0
    grad_max = _sup(grad)
    return Result(res.x, n_before + int(res.nit), grad_max <= tol, grad_max)


def erm_lbfgs(problem: LinearDRO, theta: np.ndarray, max_iter: int, tol: float) -> Result:
    """Weighted empirical risk minimisation (the ``radius = 0`` problem), smooth."""

    def fun(theta):
        losses, dZ = problem.losses(theta)
        value = problem.q @ losses + problem.penalty(theta)
        return value, problem.weighted_gradient(theta, problem.q, dZ)

    return _lbfgs(fun, theta, max_iter, tol, None)


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
    result = _lbfgs(fun, np.append(theta, eta), max_iter, tol, step, bounds)
    result.theta = result.theta[:-1]
    return result
