"""The dynamically sampled descent of Ghosh et al. (2018) on the robust problem.

:func:`dynamic_sgd`: samples drawn without replacement grow geometrically until they cover
the data; on each, the inner maximisation is solved exactly and a few L-BFGS steps are
taken until the sample's gradient is within its sampling noise; on the full data the same
steps continue, as the stages of :func:`~skrate._dro_continuation._continuation`.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ._dro_conic import _certify, max_loss
from ._dro_continuation import _continuation, _first_temperature
from ._dro_lbfgs import erm_lbfgs
from ._dro_problem import LinearDRO, Result, _best, _sup

# Armijo sufficient-decrease constant and the most step halvings of one line search.
_ARMIJO = 1e-4
_HALVINGS = 40
# Curvature pairs kept by the L-BFGS steps of the sampled path.
_MEMORY = 20
# A sample's stage ends when its gradient norm is at most this multiple of its sampling
# noise, or after this many steps.
_NOISE_RATIO = 1.0
_STAGE_STEPS = 10
# Iterations of empirical risk minimisation that start the sampled path on its first
# sample, where they are cheaper than robust steps (on Adult they saved about 8 % of the
# data passes of the KL fit; the max-loss path starts likewise, ``_ERM_START`` in
# :mod:`skrate._dro_conic`); more pull the sampled path towards the sample's ERM point
# and, on Adult, slowed it by 10-25 % without helping.
_SAMPLE_ERM_START = 2


def sample_sizes(n: int, initial_sample_size: int, growth: float):
    """The distinct sizes among ``m_t = min(n, ceil(initial_sample_size * growth**t))``,
    ``t = 0, 1, ...``: a growth near 1 repeats a size for many ``t``, and each repeat was a
    stage on the same sample again."""
    size, last = float(min(n, initial_sample_size)), 0
    while True:
        m = min(n, math.ceil(size))
        if m > last or m == n:
            yield m
            last = m
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


def _armijo(sub: LinearDRO, theta, state, direction, row_sq, mu):
    """Backtrack from the unit step until ``sub``'s objective decreases enough, or ``None``."""
    slope = state.grad @ direction
    step = 1.0
    for _ in range(_HALVINGS):
        candidate = theta + step * direction
        new = sub.sampled_objective(candidate, state.eta, row_sq, mu)
        # Strict decrease too: near the optimum the Armijo bound rounds to the value itself.
        if new.value <= state.value + _ARMIJO * step * slope and new.value < state.value:
            return candidate, new
        step *= 0.5
    return None


def _descent_step(sub: LinearDRO, theta, state, pairs: list, row_sq, mu):
    """One L-BFGS step on ``sub``'s ``F_mu``: ``(theta, state, pairs)`` after it, or ``None``
    when no step decreases the objective."""
    found = None
    if pairs:
        direction = -_two_loop(state.grad, pairs)
        if state.grad @ direction < 0:
            found = _armijo(sub, theta, state, direction, row_sq, mu)
    if found is None:
        # Steepest descent, first step at most 1 in every coordinate.
        pairs = []
        direction = -state.grad / max(1.0, np.max(np.abs(state.grad)))
        found = _armijo(sub, theta, state, direction, row_sq, mu)
    if found is None:
        return None
    candidate, new = found
    s, y = candidate - theta, new.grad - state.grad
    sy = s @ y
    # Both gradients are on the same sample, so (s, y) is a curvature pair of it. The test
    # is on the cosine of s and y, free of scale: s'y > 1e-10 y'y asked for a curvature
    # below 1e10, and a feature whose penalty alpha / std^2 exceeds that lost every pair.
    if sy > 1e-10 * math.sqrt(s @ s) * math.sqrt(y @ y):
        pairs = (pairs + [(s, y, 1.0 / sy)])[-_MEMORY:]
    return candidate, new, pairs


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
    inner maximisation is solved exactly (smoothed at the first temperature of
    :func:`_continuation`, see :func:`primal_lbfgs`), so the step direction is the
    sample's exact gradient, turned into a quasi-Newton direction by the L-BFGS two-loop
    recursion (curvature pairs kept across samples) and given an Armijo step on the
    sample's objective. A stage ends as soon as the sample's gradient is no larger
    than its own sampling noise (``||g|| <= sqrt(trace Var(v_i) / m)`` for the per-sample
    terms ``v_i`` of :meth:`LinearDRO.sampled_objective`, the norm test of
    dynamic sampling methods), or after ``_STAGE_STEPS`` steps: a sample of ``m`` points
    only pins the optimum down to ``O(1 / sqrt(m))``. Once the sample is the full data the
    same L-BFGS steps continue, deterministically, as the stages of :func:`_continuation`
    until it converges; if no step decreases the objective before that, or after
    ``max_iter`` steps, the result is not converged. The first sample starts with two
    iterations of empirical risk minimisation (they count in ``n_iter``). A ball so large
    that the worst case always sits on the largest loss goes to :func:`max_loss`.
    """
    if problem.concentrated():
        return max_loss(problem, theta, max_iter, tol, callback)
    theta0, start = theta, problem.objective(theta)[0]
    # Rows of zero base weight never matter and are left out, so no sample has zero
    # total weight; the samples are prefixes (views) of one permuted copy of the data.
    support = np.flatnonzero(problem.q > 0)
    n = support.size
    shuffled = problem.subset(rng.permutation(support))
    row_sq = shuffled.row_sq()
    pairs: list = []
    eta, it = None, 0
    for t, m in enumerate(sample_sizes(n, initial_sample_size, growth)):
        sub = shuffled if m == n else shuffled.subset(slice(0, m))
        rows = row_sq[:m]
        if t == 0:
            erm = erm_lbfgs(sub, theta, min(max_iter, _SAMPLE_ERM_START), tol)
            theta, it = erm.theta, erm.n_iter
            mu = _first_temperature(sub.objective(theta)[0])
        if m == n:
            break
        state = sub.sampled_objective(theta, eta, rows, mu)
        for _ in range(_STAGE_STEPS):
            if np.linalg.norm(state.grad) <= _NOISE_RATIO * state.noise:
                break
            if it >= max_iter:
                grad_max = _sup(shuffled.smoothed_objective(theta, mu, eta)[1])
                return _best(problem, Result(theta, it, False, grad_max), theta0, start)
            found = _descent_step(sub, theta, state, pairs, rows, mu)
            if found is None:
                break
            theta, state, pairs = found
            eta, it = state.eta, it + 1
            if callback is not None:
                callback(theta)

    def stage(theta, stage_mu, it):
        """The same L-BFGS steps on the full data's ``F_mu``."""
        nonlocal pairs, eta
        if stage_mu != mu:
            pairs = []  # curvature pairs of a hotter objective
        state = shuffled.sampled_objective(theta, eta, row_sq, stage_mu)
        while True:
            grad_max = _sup(state.grad)
            if grad_max <= tol or it >= max_iter:
                return Result(theta, it, grad_max <= tol, grad_max)
            found = _descent_step(shuffled, theta, state, pairs, row_sq, stage_mu)
            if found is None:  # no step decreases the objective, yet the gradient test fails
                return Result(theta, it, False, grad_max)
            theta, state, pairs = found
            eta, it = state.eta, it + 1
            if callback is not None:
                callback(theta)

    result = _continuation(shuffled, theta, mu, max_iter, tol, stage, it)
    if result.n_iter < max_iter:
        result = _certify(shuffled, result, tol)
    return _best(problem, result, theta0, start)
