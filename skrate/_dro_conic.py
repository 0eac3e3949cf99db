"""The conic solves of the robust problem (:mod:`skrate._dro_problem`), with cvxpy's Clarabel.

:func:`max_loss` solves the problem exactly when the ball is so large that the worst case
puts all its mass on the largest loss whatever the model: ``F`` is then the largest loss
plus the penalty, a non-smooth problem that both descent paths hand over to it. Below that
radius its optimum is often ``F``'s, and :func:`~skrate._dro_continuation._continuation`
tries it.

:func:`_certify` passes a stalled descent path's point whose smallest epsilon-subgradient,
found by a conic search over the distributions of the ball, meets the gradient test.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Callable

import numpy as np

from ._divergence import _ball_divergence, _into_ball, _worst_case
from ._dro_lbfgs import erm_lbfgs
from ._dro_losses import convex_loss, score_hessian
from ._dro_problem import LinearDRO, Result, _best, _sup
from .utils._conic import CLARABEL_TOLERANCES
from .utils._sorting import stable_argsort
from .utils._warnings import ignoring

if TYPE_CHECKING:
    import cvxpy as cp

# Iterations of empirical risk minimisation that start the max-loss path, where they are
# cheaper than robust steps (the sampled path starts likewise, ``_SAMPLE_ERM_START`` in
# :mod:`skrate._dro_sgd`).
_ERM_START = 10
# A point where the objective is not differentiable is accepted with a subgradient of the
# distributions whose expected loss is within this relative amount of the robust loss
# (an epsilon-subgradient): the losses a descent path leaves tied differ by far less, and
# the objective is known to no better than this anyway.
_TIE_SLACK = math.sqrt(np.finfo(float).eps)
# The search of a stalled path for a small subgradient builds the n x n_params matrix of
# per-sample gradients and a conic problem over n variables, which takes about 100 times that
# matrix in memory (2.8 GB and a minute at 200,000 rows x 21 parameters); above this many
# entries it is skipped. It only certifies: the coefficients are the same either way.
_CERTIFY_MAX_ENTRIES = 1e6
# Losses outside the working set of :func:`max_loss` may exceed its maximum by this
# relative amount (well below the conic solver's accuracy) before they join it.
_MAX_LOSS_SLACK = 1e-8
# The accuracy of those solves, relative like _TIE_SLACK: the expected loss under
# Clarabel's multipliers may fall this far short of the robust loss at its solution for
# the multipliers to count as a subgradient. The losses at its solution are less accurate
# than its tolerances (its tests are on its own, rescaled, conic form): where many losses
# tie (at a constant optimum, all of them) it stopped up to a relative 3.1e-8 above the
# optimum, more than _TIE_SLACK (9 of 40 make_classification fits at radius 1e4 failed
# that), and its multipliers fell short by up to 1.5e-7 (iris, three classes).
_CONIC_SLACK = 1e-6
# :func:`_polish`: multipliers above this fraction of their sum mark the tied losses; at
# most this many Newton steps, on systems of at most this size (a least-squares step
# then takes about 0.2 s); the largest entry of the optimality conditions its point must
# reach to replace the conic one, relative to the largest loss (there of order 1 in the
# standardised problem, at the conic solutions 1e-9 to 1e-7).
_POLISH_ACTIVE = 1e-6
_POLISH_STEPS = 20
_POLISH_MAX_SIZE = 1000
_POLISH_RESIDUAL = 1e-12


def _solve_quietly(conic: cp.Problem, **options) -> None:
    """Solve with Clarabel; the callers check the answer themselves, so cvxpy's accuracy
    warning would only repeat (or contradict) their verdict."""
    with ignoring(Warning, "Solution may be inaccurate"):
        conic.solve(solver="CLARABEL", **options)


def _certify(problem: LinearDRO, result: Result, tol: float) -> Result:
    """Pass a stalled path's point whose smallest near-tie subgradient meets ``tol``.

    ``F`` is not differentiable where losses with different gradients tie (when the best
    model is constant, all losses tie at the optimum), and a descent path stops next to
    such a point with a Danskin gradient that can be large however close it is. The
    subgradients there are ``sum_i p_i grad loss_i + grad penalty`` over the ``p`` of the
    ball whose expected loss is within ``_TIE_SLACK`` (relative) of the robust loss; the
    smallest (in the largest absolute entry) is found with cvxpy. If it is ``g``, no
    ``theta'`` improves ``F`` by more than that slack plus ``g . (theta' - theta)``.

    The conic solution is only as accurate as the solve (an ``OPTIMAL_INACCURATE`` one
    meets Clarabel's reduced tolerances), so its ``p`` is first made a point of the ball
    (:func:`~skrate._divergence._into_ball`) and must still be within the slack before its
    gradient is tested. The solve asks for half the slack, which leaves room for that
    correction.
    """
    if result.converged or problem.radius == 0.0:
        return result
    import cvxpy as cp  # only the conic solves need cvxpy: importing skrate stays light

    data = problem.on_support()
    n, k = data.X.shape[0], data.n_outputs
    if n * data.n_params > _CERTIFY_MAX_ENTRIES:
        return result
    losses, dZ = data.losses(result.theta)
    p_star, _ = _worst_case(losses, data.q, data.divergence, data.radius)
    robust = float(p_star @ losses)
    G = _loss_gradients(data.design_rows(data.dense_features()), dZ)
    W, _ = data.unpack(result.theta)
    shift = np.concatenate([(data.ridge * W).ravel(), np.zeros(k * data.fit_intercept)])
    p = cp.Variable(n, nonneg=True)
    if data.divergence == "chi2":
        ball = cp.sum(cp.multiply(1.0 / data.q, cp.square(p - data.q))) <= 2.0 * data.radius
    else:
        ball = cp.sum(cp.kl_div(p, data.q)) <= data.radius
    slack = _TIE_SLACK * max(1.0, abs(robust))
    near = losses @ p >= robust - 0.5 * slack
    smallest = cp.Problem(cp.Minimize(cp.norm(G.T @ p + shift, "inf")),
                          [cp.sum(p) == 1.0, ball, near])
    try:
        _solve_quietly(smallest)
    except cp.error.SolverError:
        return result
    if smallest.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or p.value is None:
        return result
    p_found = _into_ball(p.value, data.q, data.divergence, data.radius)
    if p_found is None or losses @ p_found < robust - slack:
        return result
    grad_max = _sup(G.T @ p_found + shift)
    if grad_max < result.grad_max or math.isnan(result.grad_max):
        return replace(result, converged=grad_max <= tol, grad_max=grad_max,
                       gap=max(robust - float(losses @ p_found), 0.0), gap_ok=True)
    return result


def _loss_gradients(rows: np.ndarray, dZ: np.ndarray) -> np.ndarray:
    """Row i: the gradient of loss_i in theta, laid out like theta (W row-major, then b), from
    the design ``rows`` (:meth:`LinearDRO.design_rows`) and the losses' score gradients."""
    return np.einsum("ij,ic->ijc", rows, dZ).reshape(rows.shape[0], -1)


def max_loss(
    problem: LinearDRO,
    theta: np.ndarray,
    max_iter: int,
    tol: float,
    callback: Callable | None = None,
    max_set: int | None = None,
) -> Result:
    """Minimise the largest loss plus the penalty exactly, for a ball that concentrates.

    When :meth:`LinearDRO.concentrated` holds, ``F(theta) = max_{i : q_i > 0} loss_i +
    penalty`` for every ``theta``, whatever the radius. Its epigraph form
    ``min t + penalty s.t. loss_i <= t`` is a conic problem, solved exactly by cvxpy's
    Clarabel on a working set of samples (:func:`_solve_working_set`): the largest losses
    after a few iterations of empirical risk minimisation from ``theta``, then, after each
    solve, the samples whose loss exceeds the set's maximum (at most as many as the set
    holds, largest first). The set's optimum is the optimum on all the data once no other
    loss exceeds its maximum. Typically about ``n_params + 1`` losses tie there, so the
    set stays small (unless the optimum is a constant model, where all losses tie).

    ``n_iter`` counts the ERM iterations and the interior-point iterations of all solves,
    at most ``max_iter``: a solve that would exceed it is cut off, and the last finished
    one stands (the ERM point if none did). The result is converged when no loss outside
    the set exceeds its maximum and the gradient of the losses weighted by the solver's
    multipliers ``lambda`` of ``loss_i <= t``, plus the penalty's, has no entry above
    ``tol``: a subgradient of ``F`` when ``lambda`` is a point of the ball (always, for a
    ball that concentrates) whose expected loss is within ``_CONIC_SLACK`` of the robust
    loss. Like the descent paths, it never returns a point worse than ``theta``.

    For a smaller radius, ``F`` is at most the largest loss plus the penalty, with equality
    where the tied top losses can hold all the worst case's mass; so the max-loss optimum,
    where typically a few losses tie, is also ``F``'s when ``lambda`` passes that test.
    :func:`_continuation` tries it (``max_set`` bounds the working set, beyond which the
    result is unconverged) from its own point ``theta``: no ERM iterations then, nor the
    costly search of :func:`_certify` when the multipliers fail.
    """
    data = problem.on_support()
    theta0, n_iter = theta, 0
    if max_set is None:
        start = data.objective(theta)[0]
        warm = erm_lbfgs(data, theta, min(max_iter, _ERM_START), tol)
        theta, n_iter = warm.theta, warm.n_iter
    losses, _ = data.losses(theta)
    n = losses.size
    working = stable_argsort(-losses)[: min(n, _first_working_size(data))]
    last = None  # the last finished solve: only the one returned gets the multiplier test
    while n_iter < max_iter:
        solved, weights, used = _solve_working_set(data, working, max_iter - n_iter)
        n_iter += used
        if solved is None:  # failed or cut off: the last finished solve stands
            break
        if callback is not None:
            callback(solved)
        losses, dZ = data.losses(solved)
        top = losses[working].max()
        outside = np.ones(n, dtype=bool)
        outside[working] = False
        excess = np.flatnonzero(outside & (losses > top + _MAX_LOSS_SLACK * max(1.0, abs(top))))
        full = np.zeros(n)
        full[working] = weights
        last = (solved, full, losses, dZ, excess.size)
        if excess.size == 0 or n_iter >= max_iter:
            break
        # Doubling the set at most keeps each solve small and the rounds few.
        excess = excess[stable_argsort(-losses[excess])[: working.size]]
        if max_set is not None and working.size + excess.size > max_set:
            break
        working = np.concatenate([working, excess])
    if last is None:
        result = Result(theta, n_iter, False, conic=True)
    else:
        solved, full, losses, dZ, n_outside = last
        result = _multiplier_test(data, solved, full, losses, dZ, tol, n_iter, n_outside)
    if max_set is not None:
        return result
    if not (result.converged or result.n_outside or math.isnan(result.grad_max)):
        # The multipliers are only as accurate as the conic solve, which on badly scaled
        # features is not enough; the smallest subgradient over the tied losses is exact.
        result = _certify(data, result, tol)
    return _best(data, result, theta0, start)


def _first_working_size(problem: LinearDRO) -> int:
    """Rows of :func:`max_loss`'s first working set: twice the ``n_params + 1`` losses that
    typically tie at its optimum, at least 16."""
    return max(2 * (problem.n_params + 1), 16)


def _solve_working_set(data: LinearDRO, working: np.ndarray, max_iter: int):
    """The max-loss optimum on the rows ``working``, with Clarabel's multipliers.

    Returns ``(theta, multipliers of the rows, interior-point iterations)``; ``theta`` and
    the multipliers are ``None`` when the solve failed or needed more than ``max_iter``
    iterations. Equal rows (features and target) are one constraint, in a canonical
    order: repeated constraints make the conic problem degenerate, and on sklearn's
    repeated-samples check Clarabel then stopped 1e-7 above the optimum it reaches to
    1e-10 on the weighted rows. Their multiplier is shared in proportion to ``q``, which
    keeps it nearest ``q`` for the ball.
    """
    import cvxpy as cp  # only the conic solves need cvxpy: importing skrate stays light

    d, k = data.X.shape[1], data.n_outputs
    X_set, T_set = data.dense_features(working), data.T[working]
    rows = np.column_stack([X_set, T_set.reshape(working.size, -1)])
    _, first, group = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    group = group.ravel()
    W, t = cp.Variable((d, k)), cp.Variable()
    Z = X_set[first] @ W
    if data.fit_intercept:
        b = cp.Variable(k)
        Z = Z + np.ones((first.size, 1)) @ cp.reshape(b, (1, k), order="C")
    epigraph = convex_loss(data.loss, Z, T_set[first]) <= t
    root_ridge = np.sqrt(np.broadcast_to(data.ridge, (d, k)))
    penalty = 0.5 * cp.sum_squares(cp.multiply(root_ridge, W))
    conic = cp.Problem(cp.Minimize(t + penalty), [epigraph])
    try:
        _solve_quietly(conic, max_iter=max_iter, **CLARABEL_TOLERANCES)
    except cp.error.SolverError:
        return None, None, 0
    used = int(conic.solver_stats.num_iters or 0)
    if conic.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or W.value is None:
        return None, None, used
    theta = W.value.ravel()
    if data.fit_intercept:
        theta = np.concatenate([theta, b.value])
    multipliers = np.maximum(np.asarray(epigraph.dual_value, dtype=float).ravel(), 0.0)
    polished = _polish(data, X_set[first], T_set[first], theta, multipliers)
    if polished is not None:
        theta, multipliers = polished
    q = data.q[working]
    return theta, multipliers[group] * q / np.bincount(group, weights=q)[group], used


def _polish(data: LinearDRO, X: np.ndarray, T: np.ndarray, theta: np.ndarray,
            multipliers: np.ndarray):
    """A conic max-loss solution on the rows ``X`` (centred features) refined to rounding.

    Clarabel's solution is accurate in the objective, to its tolerance, but along the
    directions only the penalty curves (more parameters than tied losses) only to about
    the square root of it: on sklearn's repeated-samples check, the same rows once
    weighted and once repeated (equal up to rounding) gave coefficients 5.6e-6 apart. If
    the losses of positive multiplier, the set ``A``, have independent gradients (at most
    ``n_params + 1`` of them; not at a constant optimum, where all tie), the optimum is
    the root of the optimality conditions

        ridge * W + sum_{i in A} lambda_i grad loss_i = 0,  loss_i = t (i in A),
        sum_{i in A} lambda_i = 1,

    which Newton's method (least-squares steps: multinomial scores leave a direction of
    the intercepts free) reaches to rounding in a few steps from there. Returns ``(theta,
    multipliers)``, or ``None`` if the root is not reached, a multiplier turns negative
    or another row's loss exceeds ``t``: the conic solution then stands.
    """
    d, k, P = data.X.shape[1], data.n_outputs, data.n_params
    active = multipliers > _POLISH_ACTIVE * multipliers.sum()
    m = int(np.count_nonzero(active))
    if not 0 < m <= P + 1 or P + m + 1 > _POLISH_MAX_SIZE:
        return None
    rows = data.design_rows(X)
    A, T_A = rows[active], T[active]
    pen = np.zeros(P)
    pen[: d * k] = np.broadcast_to(data.ridge, (d, k)).ravel()
    lam = multipliers[active] / multipliers[active].sum()
    z = np.concatenate([theta, lam, [data.loss(A @ theta.reshape(-1, k), T_A)[0].max()]])
    best = None
    for _ in range(_POLISH_STEPS):
        theta, lam, t = z[:P], z[P:-1], z[-1]
        Z = A @ theta.reshape(-1, k)
        losses, dZ = data.loss(Z, T_A)
        G = _loss_gradients(A, dZ)
        residual = np.concatenate([pen * theta + G.T @ lam, losses - t, [lam.sum() - 1.0]])
        size = _sup(residual)
        if best is not None and not size < 0.5 * best[0]:
            break  # rounding reached, or no convergence
        best = size, z
        H = np.einsum("i,ij,il,ice->jcle", lam, A, A, score_hessian(data.loss, Z),
                      optimize=True)
        J = np.zeros((P + m + 1, P + m + 1))
        J[:P, :P] = np.diag(pen) + H.reshape(P, P)
        J[:P, P:-1], J[P:-1, :P] = G.T, G
        J[P:-1, -1], J[-1, P:-1] = -1.0, 1.0
        z = z + np.linalg.lstsq(J, -residual, rcond=None)[0]
    size, z = best
    theta, lam, t = z[:P], z[P:-1], z[-1]
    top = data.loss(rows @ theta.reshape(-1, k), T)[0].max()
    exceeds = top > t + _MAX_LOSS_SLACK * max(1.0, abs(t))
    if size > _POLISH_RESIDUAL * max(1.0, abs(t)) or lam.min() < 0.0 or exceeds:
        return None
    polished = np.zeros_like(multipliers)
    polished[active] = lam
    return theta, polished


def _multiplier_test(data: LinearDRO, theta, weights, losses, dZ, tol: float, n_iter: int,
                     n_outside: int) -> Result:
    """The max-loss solution ``theta`` tested with the multipliers ``weights`` (all rows).

    Their ``gap`` as an epsilon-subgradient is the shortfall of their expected loss below
    the robust loss (infinite if they are no point of the ball), within ``_CONIC_SLACK``
    for convergence.
    """
    total = weights.sum()
    if not total > 0:
        return Result(theta, n_iter, False, n_outside=n_outside, conic=True)
    weights = weights / total
    grad_max = _sup(data.weighted_gradient(theta, weights, dZ))
    robust = float(_worst_case(losses, data.q, data.divergence, data.radius)[0] @ losses)
    inside = (data.concentrated()
              or _ball_divergence(weights, data.q, data.divergence) <= data.radius)
    gap = max(robust - float(weights @ losses), 0.0) if inside else math.inf
    near = gap <= _CONIC_SLACK * max(1.0, abs(robust))
    converged = n_outside == 0 and near and grad_max <= tol
    return Result(theta, n_iter, converged, grad_max, n_outside, gap,
                  robust + data.penalty(theta), conic=True, gap_ok=near)
