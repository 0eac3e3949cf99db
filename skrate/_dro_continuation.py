"""The smoothing continuation of the descent paths, and the full-batch path on it.

``F`` (:mod:`skrate._dro_problem`) is not differentiable where the worst case is not
unique (tied losses holding all its mass), which is where the optimum sits when the best
model is constant or the radius is large. Both descent paths therefore minimise smoothings
of ``F`` at decreasing temperatures (:func:`_continuation`), which coincide with ``F`` near
an optimum where it is smooth.

:func:`primal_lbfgs` runs L-BFGS-B on ``F`` with the exact inner maximiser (the default
full-batch path); the sampled path is :func:`~skrate._dro_sgd.dynamic_sgd`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

import numpy as np

from ._dro_conic import _TIE_SLACK, _certify, _first_working_size, max_loss
from ._dro_lbfgs import _lbfgs, erm_lbfgs
from ._dro_problem import LinearDRO, Result, _best, _objective_of, _sup

# The smoothing continuation (:func:`_continuation`): the first temperature relative to the
# robust loss at the start, which smooths the tie of all losses at theta = 0 but is below
# the temperature of the worst case at moderate radii, and the factor between stages.
_MU_START = 1e-2
_MU_FACTOR = 0.1
# Largest rows x parameters for which the continuation tries the max-loss problem on all rows.
_CONIC_FULL_ENTRIES = 1e5


def _first_temperature(objective: float) -> float:
    """The first temperature of :func:`_continuation`, from ``F`` at its start."""
    return _MU_START * max(abs(objective), np.finfo(float).tiny)


def _continuation(problem: LinearDRO, theta, mu: float, max_iter: int, tol: float, stage,
                  n_iter: int = 0) -> Result:
    """Minimise ``F`` through its smoothings ``F_mu`` at decreasing temperatures ``mu``.

    ``F`` is convex but not differentiable where the worst case is not unique (tied top
    losses holding all the mass: at large radii, or when the best model is constant), and
    a descent method on it stalls at such a kink, possibly far from the optimum. ``F_mu``
    (:meth:`LinearDRO.smoothed_objective`) is smooth, within ``mu * radius`` of ``F``, and
    equal to ``F - mu * radius`` wherever the exact worst case is hotter than ``mu``: at
    moderate radii the first stage already minimises ``F`` near its optimum. ``stage(theta,
    mu, n_iter)`` minimises ``F_mu`` from ``theta`` and returns its :class:`Result`.

    After a stage, its gradient ``g`` is a ``gap``-subgradient of ``F``; the result is
    converged when ``g`` passes the ``tol`` test and ``gap`` is within ``_TIE_SLACK``
    (relative) of ``F``, the slack of :func:`_certify`. Otherwise the next stage runs at
    ``_MU_FACTOR`` times the temperature, or times the exact worst case's temperature at
    the stage's point if that is lower (at most ``_MU_FACTOR**2`` times the temperature),
    until ``mu`` is below ``_TIE_SLACK`` times its start or the iterations run out.

    Each stage only gains a constant factor on the distance to a kink, and at a large
    radius the optimum is typically the max-loss optimum, where a few top losses tie (see
    :func:`max_loss`). So after the first stage that does not pass with at most
    ``2 max(2 (n_params + 1), 16)`` samples carrying the worst case's mass, that optimum
    is tried on a working set of at most as many samples (its first size and one
    doubling: at a constant optimum all losses tie and the set would grow to the data).
    It is not a warm start: the conic solve's rounding would enter the path, and with it
    the equivalence of weighted and repeated samples. But if the path ends above that
    point (:func:`_improves`), the point is the result, with its own test's outcome.
    """
    mu_end = _TIE_SLACK * mu
    few = 2 * _first_working_size(problem)
    tried, alt = False, None
    while True:
        result = stage(theta, mu, n_iter)
        theta, n_iter = result.theta, result.n_iter
        _, grad, value, gap, _, temperature, p = problem.smoothed_objective(theta, mu)
        tight = gap <= _TIE_SLACK * max(1.0, abs(value))
        grad_max = _sup(grad)
        result = Result(theta, n_iter, tight and grad_max <= tol, grad_max, gap=gap,
                        objective=value, gap_ok=tight)
        # "not mu > mu_end": a NaN temperature (from a NaN objective, where no stage moves
        # and n_iter never reaches max_iter) ends the loop too.
        if not (tight or n_iter >= max_iter or not mu > mu_end or tried):
            # a working set that may hold every row is the conic problem on all of X, dense: worth
            # it on small data (its exact point makes weights and repeated rows fit alike), not
            # on wide data of some size (400 x 2000 took 20 s), where the smoothing stages go on
            rows = np.count_nonzero(problem.q)
            if (np.count_nonzero(p > _TIE_SLACK * p.max()) <= few
                    and (few < rows or rows * problem.n_params <= _CONIC_FULL_ENTRIES)):
                tried = True
                alt = max_loss(problem, theta, max_iter - n_iter, tol, max_set=few)
                n_iter += alt.n_iter
                if alt.converged:
                    return replace(alt, n_iter=n_iter)
                alt.objective = _objective_of(problem, alt)
                result.n_iter = n_iter
        if tight or n_iter >= max_iter or not mu > mu_end:
            if alt is not None and _improves(alt.objective, result):
                return replace(alt, n_iter=n_iter)  # the best point found, with its own test
            return result
        # Below the exact worst case's temperature here, the next stage is F itself near
        # theta: a first temperature far above the optimum's (losses fitted close to 0)
        # then costs one more stage, not one per factor. At most two factors at a time,
        # as the temperature is 0 at a kink.
        mu = _MU_FACTOR * max(min(mu, temperature), _MU_FACTOR * mu)


def _improves(value: float, result: Result) -> bool:
    """Whether a point of objective ``value`` beats ``result``.

    Any decrease beats a result that failed its test. One that passed it is beaten only by
    more than ``_TIE_SLACK`` (relative), the accuracy to which objectives are known here:
    a rounding-level difference must not trade it for a point that failed its test.
    """
    slack = _TIE_SLACK * max(1.0, abs(result.objective)) if result.converged else 0.0
    return value < result.objective - slack


def primal_lbfgs(
    problem: LinearDRO,
    theta: np.ndarray,
    max_iter: int,
    tol: float,
    callback: Callable | None = None,
    memory: int = 10,
) -> Result:
    """L-BFGS-B on ``F``, the inner maximisation solved exactly at every evaluation.

    ``F`` is differentiable wherever the worst case is unique, with Danskin's gradient,
    but not where tied losses hold all the worst case's mass: at ``theta = 0`` all
    logistic losses tie, at a constant optimum all losses do, and at large radii the
    optimum ties a few top losses. L-BFGS stalls at such kinks, so it runs on the
    smoothed objectives of :func:`_continuation`, each stage warm-started from the last.
    ``memory`` is the number of curvature pairs of L-BFGS-B (SciPy's ``maxcor``). A ball so
    large that the worst case always sits on the largest loss goes to :func:`max_loss`,
    which solves that problem exactly.
    """
    if problem.concentrated():
        return max_loss(problem, theta, max_iter, tol, callback)
    if problem.radius == 0.0:
        return erm_lbfgs(problem, theta, max_iter, tol)
    eta = [None]

    def stage(theta, mu, n_iter):
        def fun(theta):
            value, grad, _, _, eta[0], _, _ = problem.smoothed_objective(theta, mu, eta[0])
            return value, grad

        return _lbfgs(fun, theta, max_iter - n_iter, tol, callback, memory=memory,
                      n_before=n_iter)

    start = problem.objective(theta)[0]
    result = _continuation(problem, theta, _first_temperature(start), max_iter, tol, stage)
    if result.n_iter < max_iter:
        result = _certify(problem, result, tol)
    return _best(problem, result, theta, start)
