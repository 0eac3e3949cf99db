"""The lambda-players of the Lagrangian games of Cotter et al. (2019).

Each player holds multipliers over the objective (index 0) and the m constraints and
updates them from the constraint values it is shown. ``weights()`` is what the theta-player
minimises against: ``sum_k weights_k * surrogate(rate_k)``.
"""

from __future__ import annotations

import numpy as np


def _log_normalize(log_w: np.ndarray, axis=None) -> np.ndarray:
    """``log_w`` minus its log-sum-exp along ``axis`` (plain NumPy: this runs every iteration)."""
    top = log_w.max(axis=axis, keepdims=True)
    return log_w - (top + np.log(np.exp(log_w - top).sum(axis=axis, keepdims=True)))


def stationary_distribution(M: np.ndarray) -> np.ndarray:
    """The distribution ``lam`` with ``M @ lam = lam`` of a column-stochastic matrix ``M``.

    Solved exactly as a linear system (``(M - I) lam = 0`` with one row replaced by
    ``sum(lam) = 1``); for a positive ``M`` the fixed point is unique (Perron-Frobenius).

    Parameters
    ----------
    M : ndarray of shape (k, k)
        A column-stochastic matrix: non-negative, each column summing to 1.

    Returns
    -------
    ndarray of shape (k,)
        The stationary distribution: non-negative, summing to 1. When the system is singular
        (``M`` with several fixed points) a least-squares solution, clipped at 0 and
        renormalised.

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization
    with Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and
    Other Goals. JMLR 20(172), 2019.
    """
    k = M.shape[0]
    system = M - np.eye(k)
    system[-1] = 1.0
    rhs = np.zeros(k)
    rhs[-1] = 1.0
    try:
        lam = np.linalg.solve(system, rhs)
    except np.linalg.LinAlgError:
        lam = np.linalg.lstsq(system, rhs, rcond=None)[0]
    lam = np.clip(lam, 0.0, None)
    return lam / lam.sum()


# Power steps from the last distribution before a full solve; a step is O(k^2), the solve O(k^3).
_POWER_STEPS = 30
# Up to this many weights the solve itself is cheaper than the power steps' Python overhead.
_SOLVE_MAX = 32


def _warm_stationary(M: np.ndarray, start: np.ndarray) -> np.ndarray:
    """The stationary distribution of ``M``, by power steps from ``start`` (the last one: one
    multiplicative update moves it little) while they converge to rounding, else by
    :func:`stationary_distribution`. With hundreds of constraints the dense solve of every
    iteration was most of a fit's time; with a few, a solve (a few microseconds) beats the
    tens of power steps an oscillating game needs."""
    if M.shape[0] <= _SOLVE_MAX:
        return stationary_distribution(M)
    lam = start
    for _ in range(_POWER_STEPS):
        nxt = M @ lam
        nxt /= nxt.sum()
        if np.abs(nxt - lam).sum() <= 1e-14:
            return nxt
        lam = nxt
    return stationary_distribution(M)


class SwapRegretPlayer:
    """Multiplicative updates of a column-stochastic matrix; play its stationary distribution.

    Algorithm 3 ("0-1 swap") of Cotter et al. (2019): ``M <- M * exp(eta * grad lam^T)``,
    columns renormalised, ``lam = M lam``. Low swap regret for the lambda-player is what
    makes the proxy-Lagrangian game reach a feasible mixture of at most m+1 models.

    Parameters
    ----------
    n_constraints : int
        Number ``m`` of constraints; the player weighs the objective and them, ``m + 1``
        weights.
    learning_rate : float
        Step ``eta`` of the multiplicative updates.

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization
    with Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and
    Other Goals. JMLR 20(172), 2019.
    """

    needs_surrogate = False

    def __init__(self, n_constraints: int, learning_rate: float):
        k = n_constraints + 1
        self.eta = learning_rate
        self.log_M = np.full((k, k), -np.log(k))  # uniform columns
        self.lam = np.full(k, 1.0 / k)

    def weights(self) -> np.ndarray:
        """The distribution over (objective, constraints) the player plays.

        Returns
        -------
        ndarray of shape (n_constraints + 1,)
            The stationary distribution of the current matrix, objective first (the player's
            own array, not a copy).
        """
        return self.lam

    def update(self, constraint_values: np.ndarray) -> None:
        """One multiplicative step of the matrix on the constraint values, then its new
        stationary distribution.

        Parameters
        ----------
        constraint_values : ndarray of shape (n_constraints,)
            The values ``g_j`` (``> 0`` when violated) at the model just played; the
            objective's weight has gradient 0.
        """
        grad = np.concatenate(([0.0], constraint_values))
        self.log_M += self.eta * np.outer(grad, self.lam)
        self.log_M = _log_normalize(self.log_M, axis=0)
        self.lam = _warm_stationary(np.exp(self.log_M), self.lam)


class ExternalRegretPlayer:
    """Exponentiated gradient over the simplex of (objective, constraints) weights.

    Algorithm 4 ("0-1 ext") of Cotter et al. (2019): ``lam proportional to exp(eta * sum_t grad_t)``.

    Parameters
    ----------
    n_constraints : int
        Number ``m`` of constraints; the player weighs the objective and them, ``m + 1``
        weights.
    learning_rate : float
        Step ``eta`` of the exponentiated-gradient updates.

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization
    with Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and
    Other Goals. JMLR 20(172), 2019.
    """

    needs_surrogate = False

    def __init__(self, n_constraints: int, learning_rate: float):
        self.eta = learning_rate
        self.log_lam = np.full(n_constraints + 1, -np.log(n_constraints + 1))

    def weights(self) -> np.ndarray:
        """The distribution over (objective, constraints) the player plays.

        Returns
        -------
        ndarray of shape (n_constraints + 1,)
            Non-negative weights summing to 1, objective first.
        """
        return np.exp(self.log_lam)

    def update(self, constraint_values: np.ndarray) -> None:
        """One exponentiated-gradient step on the constraint values.

        Parameters
        ----------
        constraint_values : ndarray of shape (n_constraints,)
            The values ``g_j`` (``> 0`` when violated) at the model just played; the
            objective's weight has gradient 0.
        """
        self.log_lam += self.eta * np.concatenate(([0.0], constraint_values))
        self.log_lam = _log_normalize(self.log_lam)


class LagrangePlayer:
    """Projected gradient ascent on non-negative multipliers of the surrogate constraints.

    The hinge-relaxed Lagrangian baseline of Cotter et al. (2019) (Algorithm 5): the objective
    keeps weight 1, ``lam_j <- clip(lam_j + eta * surrogate_j, 0, radius)``.

    Parameters
    ----------
    n_constraints : int
        Number ``m`` of constraints, one multiplier each.
    learning_rate : float
        Step ``eta`` of the gradient ascent.
    radius : float, default=1e3
        Upper bound of every multiplier.

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization
    with Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and
    Other Goals. JMLR 20(172), 2019.
    """

    needs_surrogate = True

    def __init__(self, n_constraints: int, learning_rate: float, radius: float = 1e3):
        self.eta, self.radius = learning_rate, radius
        self.lam = np.zeros(n_constraints)

    def weights(self) -> np.ndarray:
        """The weights of (objective, constraints) in the Lagrangian.

        Returns
        -------
        ndarray of shape (n_constraints + 1,)
            ``(1, lam_1, ..., lam_m)``: the objective's weight 1, then the multipliers.
        """
        return np.concatenate(([1.0], self.lam))

    def update(self, constraint_values: np.ndarray) -> None:
        """One projected gradient-ascent step of the multipliers.

        Parameters
        ----------
        constraint_values : ndarray of shape (n_constraints,)
            The surrogate constraint values at the model just played.
        """
        self.lam = np.clip(self.lam + self.eta * constraint_values, 0.0, self.radius)


PLAYERS = {
    "proxy_lagrangian": SwapRegretPlayer,
    "proxy_lagrangian_ext": ExternalRegretPlayer,
    "lagrangian": LagrangePlayer,
}
