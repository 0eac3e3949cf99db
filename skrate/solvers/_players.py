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


class SwapRegretPlayer:
    """Multiplicative updates of a column-stochastic matrix; play its stationary distribution.

    Algorithm 3 ("0-1 swap") of Cotter et al. (2019): ``M <- M * exp(eta * grad lam^T)``,
    columns renormalised, ``lam = M lam``. Low swap regret for the lambda-player is what
    makes the proxy-Lagrangian game reach a feasible mixture of at most m+1 models.
    """

    needs_surrogate = False

    def __init__(self, n_constraints: int, learning_rate: float):
        k = n_constraints + 1
        self.eta = learning_rate
        self.log_M = np.full((k, k), -np.log(k))  # uniform columns
        self.lam = np.full(k, 1.0 / k)

    def weights(self) -> np.ndarray:
        return self.lam

    def update(self, constraint_values: np.ndarray) -> None:
        grad = np.concatenate(([0.0], constraint_values))
        self.log_M += self.eta * np.outer(grad, self.lam)
        self.log_M = _log_normalize(self.log_M, axis=0)
        self.lam = stationary_distribution(np.exp(self.log_M))


class ExternalRegretPlayer:
    """Exponentiated gradient over the simplex of (objective, constraints) weights.

    Algorithm 4 ("0-1 ext") of Cotter et al. (2019): ``lam proportional to exp(eta * sum_t grad_t)``.
    """

    needs_surrogate = False

    def __init__(self, n_constraints: int, learning_rate: float):
        self.eta = learning_rate
        self.log_lam = np.full(n_constraints + 1, -np.log(n_constraints + 1))

    def weights(self) -> np.ndarray:
        return np.exp(self.log_lam)

    def update(self, constraint_values: np.ndarray) -> None:
        self.log_lam += self.eta * np.concatenate(([0.0], constraint_values))
        self.log_lam = _log_normalize(self.log_lam)


class LagrangePlayer:
    """Projected gradient ascent on non-negative multipliers of the surrogate constraints.

    The hinge-relaxed Lagrangian baseline of Cotter et al. (2019) (Algorithm 5): the objective
    keeps weight 1, ``lam_j <- clip(lam_j + eta * surrogate_j, 0, radius)``.
    """

    needs_surrogate = True

    def __init__(self, n_constraints: int, learning_rate: float, radius: float = 1e3):
        self.eta, self.radius = learning_rate, radius
        self.lam = np.zeros(n_constraints)

    def weights(self) -> np.ndarray:
        return np.concatenate(([1.0], self.lam))

    def update(self, constraint_values: np.ndarray) -> None:
        self.lam = np.clip(self.lam + self.eta * constraint_values, 0.0, self.radius)


PLAYERS = {
    "proxy_lagrangian": SwapRegretPlayer,
    "proxy_lagrangian_ext": ExternalRegretPlayer,
    "lagrangian": LagrangePlayer,
}
