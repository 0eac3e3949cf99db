"""The oracle games of Cotter et al. (2019): a cost-sensitive learner as the theta-player.

For multipliers ``w`` over (objective, constraints) the Lagrangian of a rate problem is
linear in the 0/1 decisions: ``w . (A @ yhat + b) = c . yhat + const`` with ``c = A.T @ w``.
Predicting 1 on example i costs ``c_i`` and predicting 0 costs nothing, so the Lagrangian is
minimised by a weighted classification problem: label ``1[c_i < 0]``, weight ``|c_i|``
(scaled to sum to the total sample weight; the minimiser does not depend on the scale,
regularised learners do).
Any classifier that accepts ``sample_weight`` is then an approximate best-response oracle.

* ``"oracle_lagrangian"`` (Algorithm 1): the multipliers ``(1, lam)`` follow projected
  gradient ascent on the true 0-1 constraint values, ``lam`` kept in
  ``{lam >= 0, ||lam||_1 <= radius}``.
* ``"oracle_proxy_lagrangian"`` (Algorithm 2): the swap-regret lambda-player of the
  proxy-Lagrangian (a column-stochastic matrix and its stationary distribution), also on the
  true 0-1 constraint values.

Each iteration fits one model; every fitted model is a candidate. The solver sees arrays, a
compiled problem and an ``oracle(X, labels, sample_weight) -> fitted model`` callable; it never
sees estimator parameters.

Early stopping, by column generation. The game's output is a mixture of the candidates, and
the LP of the m-stochastic solution (:func:`skrate.solutions.shrink`, milliseconds for a
hundred candidates) gives the best such mixture so far, with objective ``F`` and dual values
``mu`` of the constraints. After every oracle call that LP is solved again; once for
``n_iter_no_change`` consecutive iterations neither its largest violation nor (at the same
violation) its objective improved by more than ``tol`` while a feasible mixture exists, the
oracle is asked for one more model at the LP's own multipliers ``(1, mu)``. LP duality says a
candidate can improve the mixture only if its Lagrangian ``f + mu . g`` is below ``F``, so when
the oracle's best response there has a Lagrangian of at least ``F - tol`` no model the oracle
can find improves the mixture by more than ``tol``: the game stops with that certificate (the
duality-gap test of Agarwal et al.'s reductions, here on the LP of the candidates). Otherwise
the response joins the candidates (it improves the mixture) and the game goes on. The
certificate is as good as the oracle: exact for an exact cost-sensitive learner, approximate
for a heuristic one. The multipliers' own updates never stop the game: with slack on every
constraint they shift weight to the objective slowly, and the certificate is what tells
whether that would still pay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse as sp
from ..problem import CellMatrix, RateProblem
from ..solutions._shrink import shrink
from ._players import LagrangePlayer, SwapRegretPlayer
from ._trajectory import Trajectory

ORACLE_SOLVERS = ("oracle_lagrangian", "oracle_proxy_lagrangian")
# Fits without improvement before the certificate is tried: each fit is costly, and a failed
# certificate is no loss (its model joins the candidates as a column-generation step).
N_ITER_NO_CHANGE = 3


def cost_sensitive_reduction(A: sp.spmatrix | CellMatrix, weights: np.ndarray,
                             total_weight: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Labels and sample weights whose weighted 0-1 loss is the Lagrangian ``weights . (A @ yhat + b)``.

    Parameters
    ----------
    A : sparse matrix or CellMatrix of shape (1 + m, n)
        Rate rows (objective first), as in :class:`skrate.problem.RateProblem` (whose
        ``cells`` keep them factored).
    weights : ndarray of shape (1 + m,)
        Multipliers of the objective and constraints.
    total_weight : float, optional
        What the returned weights sum to (default ``n``): the sum of the sample weights, so a
        regularised learner balances its penalty as it would on the unweighted problem.

    Returns
    -------
    labels : ndarray of int of shape (n,)
        ``1`` where predicting 1 lowers the Lagrangian (``c_i < 0``), else ``0``.
    sample_weight : ndarray of shape (n,)
        ``|c_i|`` scaled to sum to ``total_weight`` (all zeros when ``c`` is zero: every model
        is a best response).
    """
    cost = np.asarray(A.T @ np.asarray(weights, dtype=float)).ravel()
    labels = (cost < 0).astype(int)
    size = np.abs(cost)
    total = size.sum()
    target = size.shape[0] if total_weight is None else total_weight
    return labels, (size * (target / total) if total > 0 else size)


def project_l1_ball(v: np.ndarray, radius: float) -> np.ndarray:
    """Euclidean projection onto ``{lam >= 0, sum(lam) <= radius}`` (sorting, no loop over entries)."""
    lam = np.maximum(v, 0.0)
    if lam.sum() <= radius:
        return lam
    u = np.sort(lam)[::-1]
    cum = np.cumsum(u) - radius
    k = np.flatnonzero(u > cum / np.arange(1, u.shape[0] + 1))[-1]
    return np.maximum(lam - cum[k] / (k + 1), 0.0)


class OracleLagrangePlayer(LagrangePlayer):
    """Projected gradient ascent on the true 0-1 constraint values (Algorithm 1 of Cotter et al.).

    The objective keeps weight 1; ``lam <- Pi(lam + eta * g(theta))`` with ``Pi`` the projection
    onto ``{lam >= 0, ||lam||_1 <= radius}``, the multiplier set of the paper.
    """

    needs_surrogate = False

    def update(self, constraint_values: np.ndarray) -> None:
        self.lam = project_l1_ball(self.lam + self.eta * constraint_values, self.radius)


ORACLE_PLAYERS = {"oracle_lagrangian": OracleLagrangePlayer, "oracle_proxy_lagrangian": SwapRegretPlayer}


@dataclass
class OracleTrajectory(Trajectory):
    """A :class:`Trajectory` whose ``params`` index ``estimators`` (``params[k, 0] == k``)."""

    estimators: list


def _decisions(model, X) -> np.ndarray:
    return (np.asarray(model.predict(X)) == 1).astype(float)


def _standing(lp) -> tuple[float, float]:
    """``(violation, objective)`` of an LP mixture, the order of mixtures, with a violation within
    round-off of 0 read as 0: the LP reports ``1e-18`` as readily as ``0``, and that must not
    count as progress (nor its absence as a setback)."""
    objective, violation = lp
    return (violation if violation > 1e-12 else 0.0), objective


def _improved(lp, best, tol: float) -> bool:
    (violation, objective), (best_violation, best_objective) = _standing(lp), _standing(best)
    return violation < best_violation - tol or (violation <= best_violation and objective < best_objective - tol)


def solve_oracle_game(
    problem: RateProblem,
    oracle: Callable,
    X,
    *,
    solver: str = "oracle_proxy_lagrangian",
    lambda_learning_rate: float = 1.0,
    max_iter: int = 100,
    tol: float | None = 1e-4,
    n_iter_no_change: int = N_ITER_NO_CHANGE,
    total_weight: float | None = None,
    held_out: tuple[RateProblem, object] | None = None,
    callback: Callable | None = None,
    verbose: int = 0,
) -> OracleTrajectory:
    """Play the oracle game; every oracle response is a candidate.

    Parameters
    ----------
    problem : RateProblem
        Row 0 the objective, rows 1..m the constraints ``g_j <= 0``, measured on ``X``.
    oracle : callable
        ``oracle(X, labels, sample_weight)`` returns a fitted model with ``predict`` giving 0/1.
    X : array-like of shape (n_samples, n_features)
    solver : {"oracle_lagrangian", "oracle_proxy_lagrangian"}
    lambda_learning_rate : float
        Additive (Lagrangian) or multiplicative (proxy-Lagrangian) step of the multipliers.
    max_iter : int
        Largest number of oracle calls.
    tol : float or None
        Early stopping tolerance on the best mixture's objective and violation, and of the
        certificate that ends the game (module docstring); None plays all ``max_iter``
        iterations.
    n_iter_no_change : int
        Iterations without improvement before the certificate is tried.
    total_weight : float, optional
        Sum of the reduction's sample weights (default ``n``), see :func:`cost_sensitive_reduction`.
    held_out : (RateProblem, X_held_out), optional
        The multipliers and the candidates' constraint values use the rates on this sample
        (Cotter et al., ICML 2019); the oracle trains on ``X``.
    callback : callable, optional
        ``callback(iteration, model, values)`` after every oracle call, the certificate's
        included (it is a candidate too, whose values update no multipliers): ``iteration``
        counts candidates, ``values`` are the rates of ``model`` (objective first; the
        constraints on ``held_out`` when given). False stops the game.

    Returns
    -------
    OracleTrajectory

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization
    with Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and
    Other Goals. JMLR 20(172), 2019. Algorithms 1 and 2.
    """
    m = problem.n_constraints
    if solver not in ORACLE_PLAYERS:
        raise ValueError(f"solver must be one of {sorted(ORACLE_PLAYERS)}, got {solver!r}.")
    player = ORACLE_PLAYERS[solver](m, lambda_learning_rate)
    models, objective, constraints, lams = [], [], [], []
    A = problem.cells  # formed once: each call's costs are one product through its factors

    def respond(weights: np.ndarray) -> np.ndarray:
        """One oracle call at ``weights``; the model joins the candidates; returns its values."""
        labels, sample_weight = cost_sensitive_reduction(A, weights, total_weight)
        model = oracle(X, labels, sample_weight)
        values = problem.values(_decisions(model, X))
        if held_out is not None:
            values[1:] = held_out[0].values(_decisions(model, held_out[1]))[1:]
        models.append(model)
        lams.append(weights)
        objective.append(values[0])
        constraints.append(values[1:])
        return values

    best, stalled = (np.inf, np.inf), 0
    while len(models) < max_iter:
        values = respond(np.asarray(player.weights(), dtype=float).copy())
        player.update(values[1:])
        if verbose:
            worst = values[1:].max() if m else 0.0
            print(f"[{solver}] iter {len(models)}/{max_iter} objective {values[0]:.4f} max violation {worst:+.4f}")
        if callback is not None and callback(len(models) - 1, models[-1], values) is False:
            break
        if tol is None:
            continue
        lp = shrink(np.array(objective), np.array(constraints).T)
        current = (float(np.dot(lp.weights, objective)), lp.max_violation)
        stalled = 0 if _improved(current, best, tol) else stalled + 1
        best = min(best, current, key=_standing)
        if stalled >= n_iter_no_change and lp.feasible and len(models) < max_iter:
            check = respond(np.r_[1.0, lp.multipliers])
            gap = current[0] - (check[0] + lp.multipliers @ check[1:])
            if verbose:
                print(f"[{solver}] certificate at the LP's multipliers: the best response improves the "
                      f"mixture by at most {max(gap, 0.0):.2e}")
            if callback is not None and callback(len(models) - 1, models[-1], check) is False:
                break
            if gap <= tol:
                break
            stalled = 0
    k = len(models)
    return OracleTrajectory(np.arange(k, dtype=float)[:, None], np.array(objective),
                            np.array(constraints).reshape(k, m).T, np.array(lams), k, models)
