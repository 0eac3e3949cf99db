"""Solvers for distributionally robust linear models over an f-divergence ball.

The problem (see :mod:`skrate._divergence` for the ball):

    min_{W, b}  F(W, b) = sup_{p in P} sum_i p_i loss_i(X_i W + b) + (alpha / 2) ||W||^2,

the intercept ``b`` unpenalised. ``F`` is convex when the loss is; by Danskin's theorem its
(sub)gradient is that of the ``p*``-weighted loss at the worst case ``p*``.

``F`` is not differentiable where the worst case is not unique (tied losses holding all its
mass), which is where the optimum sits when the best model is constant or the radius is
large. Both descent paths therefore minimise smoothings of ``F`` at decreasing temperatures
(:func:`_continuation`), which coincide with ``F`` near an optimum where it is smooth.

* :func:`dynamic_sgd` is the dynamically sampled descent of Ghosh et al. (2018): samples
  drawn without replacement grow geometrically until they cover the data; on each, the
  inner maximisation is solved exactly and a few L-BFGS steps are taken until the sample's
  gradient is within its sampling noise; on the full data the same steps continue.
* :func:`primal_lbfgs` runs L-BFGS-B on ``F`` with the exact inner maximiser (the default
  full-batch path).
* :func:`max_loss` solves the problem exactly when the ball is so large that the worst case
  puts all its mass on the largest loss whatever the model: ``F`` is then the largest loss
  plus the penalty, a non-smooth problem that both paths above hand over to it. Below that
  radius its optimum is often ``F``'s, and :func:`_continuation` tries it.
* :func:`dual_lbfgs` minimises the exact convex dual jointly over the model and the dual
  variable ``eta`` with L-BFGS-B. It is fast on well-conditioned problems but stalls far
  from the optimum when the losses can be driven near zero (interpolation) or the KL
  temperature tends to zero, so the estimators use :func:`primal_lbfgs`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable

import numpy as np
from scipy.optimize import minimize
from sklearn.utils.extmath import row_norms

from ._divergence import (
    _ball_divergence,
    _dual,
    _into_ball,
    _smoothed_worst_case,
    _smoothing,
    _worst_case,
)
from ._dro_losses import convex_loss, score_hessian
from .utils._conic import CLARABEL_TOLERANCES
from .utils._sorting import stable_argsort
from .utils._warnings import ignoring

if TYPE_CHECKING:
    import cvxpy as cp

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
# Iterations of empirical risk minimisation that start the max-loss path, and the sampled
# path on its first sample, where they are cheaper than robust steps (on Adult they saved
# about 8 % of the data passes of the KL fit); more pull the sampled path towards the
# sample's ERM point and, on Adult, slowed it by 10-25 % without helping.
_ERM_START = 10
_SAMPLE_ERM_START = 2
# A point where the objective is not differentiable is accepted with a subgradient of the
# distributions whose expected loss is within this relative amount of the robust loss
# (an epsilon-subgradient): the losses a descent path leaves tied differ by far less, and
# the objective is known to no better than this anyway.
_TIE_SLACK = math.sqrt(np.finfo(float).eps)
# The smoothing continuation (:func:`_continuation`): the first temperature relative to the
# robust loss at the start, which smooths the tie of all losses at theta = 0 but is below
# the temperature of the worst case at moderate radii, and the factor between stages.
_MU_START = 1e-2
_MU_FACTOR = 0.1
# The search of a stalled path for a small subgradient builds the n x n_params matrix of
# per-sample gradients and a conic problem over n variables, which takes about 100 times that
# matrix in memory (2.8 GB and a minute at 200,000 rows x 21 parameters); above this many
# entries it is skipped. It only certifies: the coefficients are the same either way.
_CERTIFY_MAX_ENTRIES = 1e6
# Largest rows x parameters for which the continuation tries the max-loss problem on all rows.
_CONIC_FULL_ENTRIES = 1e5
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
