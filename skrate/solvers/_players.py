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
# From this many weights on, a Krylov solve replaces the power steps. When the chain moves
# slowly between a few weights (an eigenvalue of M near 1) power steps stall far from 1e-14
# (1e-6 after 200 steps, with 2,001 weights), and the dense solve took 0.15 s; but M has few
# eigenvalues away from 0, and GMRES converges in about as many products with M (3 to 20).
_KRYLOV_MIN = 128
# Largest Krylov basis before the dense solve takes over.
_KRYLOV_DIM = 60


def _krylov_stationary(M: np.ndarray, start: np.ndarray) -> np.ndarray | None:
    """The stationary distribution of ``M`` by GMRES from ``start``, or None when it is not found
    within :data:`_KRYLOV_DIM` products with ``M``.

    The correction ``d`` to ``x0 = start / sum(start)`` solves ``(I - M) d = (M - I) x0``. The
    right-hand side sums to 0 and ``I - M`` keeps sums at 0 (``M``'s columns sum to 1), so the
    Krylov basis does too, and ``x0 + d`` sums to 1; on such vectors ``I - M`` has the
    eigenvalues ``1 - mu`` of ``M``'s others, clustered at 1 but for its few large ones, and is
    nonsingular for a positive ``M``. Each new basis vector is projected back onto the sums of 0
    (rounding would let in the direction of ``lam``, where ``I - M`` is singular) and
    orthogonalised twice (classical Gram-Schmidt, vectorised). A result is accepted when its L1
    residual ``|M lam - lam|_1`` is at most ``k`` units of rounding, the order of the dense
    solve's own (up to 0.2 ``k`` units with 2,001 weights).
    """
    k = M.shape[0]
    tol = k * np.finfo(float).eps
    target = 0.5 * tol / np.sqrt(k)  # in the 2-norm: |v|_1 <= sqrt(k) |v|_2
    x0 = start / start.sum()
    r = M @ x0 - x0
    beta = np.linalg.norm(r)
    lam = x0
    if beta > target:
        basis = np.empty((_KRYLOV_DIM + 1, k))
        H = np.zeros((_KRYLOV_DIM + 1, _KRYLOV_DIM))
        rhs = np.zeros(_KRYLOV_DIM + 1)
        rhs[0] = beta
        basis[0] = r / beta
        for j in range(_KRYLOV_DIM):
            w = basis[j] - M @ basis[j]
            w -= w.mean()
            for _ in range(2):
                h = basis[:j + 1] @ w
                w -= h @ basis[:j + 1]
                H[:j + 1, j] += h
            H[j + 1, j] = np.linalg.norm(w)
            y = np.linalg.lstsq(H[:j + 2, :j + 1], rhs[:j + 2], rcond=None)[0]
            if H[j + 1, j] <= target or np.linalg.norm(H[:j + 2, :j + 1] @ y - rhs[:j + 2]) <= target:
                break
            basis[j + 1] = w / H[j + 1, j]
        lam = np.clip(x0 + y @ basis[:j + 1], 0.0, None)
        total = lam.sum()
        if not 0 < total < np.inf:
            return None
        lam /= total
    return lam if np.abs(M @ lam - lam).sum() <= tol else None


def _warm_stationary(M: np.ndarray, start: np.ndarray) -> np.ndarray:
    """The stationary distribution of ``M`` from ``start`` (the last one: one multiplicative
    update moves it little): by power steps while they converge to rounding, or with many
    weights by a Krylov solve; else by :func:`stationary_distribution`. With hundreds of
    constraints the dense solve of every iteration was most of a fit's time; with a few, a solve
    (a few microseconds) beats the tens of power steps an oscillating game needs."""
    k = M.shape[0]
    if k <= _SOLVE_MAX:
        return stationary_distribution(M)
    if k >= _KRYLOV_MIN:
        lam = _krylov_stationary(M, start)
        return stationary_distribution(M) if lam is None else lam
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

    Attributes
    ----------
    M : ndarray of shape (n_constraints + 1, n_constraints + 1)
        The column-stochastic matrix.
    log_M : ndarray of shape (n_constraints + 1, n_constraints + 1)
        Its logarithm, in which the updates are made.
    lam : ndarray of shape (n_constraints + 1,)
        Its stationary distribution, the weights played. A step costs O(m^2) for the matrix and,
        with more than 127 weights, a Krylov solve of a few to a few tens of products with it;
        its state is two (m + 1) x (m + 1) matrices (64 MB for 2,000 constraints).

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization
    with Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and
    Other Goals. JMLR 20(172), 2019.
    """

    needs_surrogate = False

    #: Entries of the matrix a pass of :meth:`update` works on at a time (512 KiB): a block's
    #: step, shift and exponential stay in cache, where temporaries of the whole matrix (32 MB
    #: each with 2,000 constraints) went through memory.
    BLOCK_ENTRIES = 1 << 16

    def __init__(self, n_constraints: int, learning_rate: float):
        k = n_constraints + 1
        self.eta = learning_rate
        # log M is held as _log_M - _shift: a step's column normalisation is subtracted as the
        # next step adds to the matrix, one write of it a step
        self._log_M = np.full((k, k), -np.log(k))  # uniform columns
        self._shift = np.zeros(k)
        self.M = np.exp(self._log_M)
        self.lam = np.full(k, 1.0 / k)
        rows = min(k, max(1, self.BLOCK_ENTRIES // k))
        step, work = np.empty((rows, k)), np.empty((rows, k))
        # each block of rows with its views of the two scratch blocks
        self._blocks = [(slice(i, i + n), step[:n], work[:n]) for i in range(0, k, rows) for n in [min(rows, k - i)]]

    @property
    def log_M(self) -> np.ndarray:
        """The logarithm of the column-stochastic matrix ``M`` (a new array).

        Returns
        -------
        ndarray of shape (n_constraints + 1, n_constraints + 1)
            ``log M``; ``M`` itself is the attribute ``M``.
        """
        return self._log_M - self._shift

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
        log_M, M = self._log_M, self.M
        # the column-wise log-sum-exp of _log_normalize block by block; with up to 256 weights one
        # block does the same operations on the whole matrix, to the bit
        top = np.full(log_M.shape[1], -np.inf)
        for rows, step, _ in self._blocks:
            np.outer(grad[rows], self.lam, out=step)
            step *= self.eta
            block = log_M[rows]
            block -= self._shift
            block += step
            np.maximum(top, block.max(axis=0), out=top)
        total = 0.0
        for rows, _, work in self._blocks:
            np.subtract(log_M[rows], top, out=work)
            total = total + np.exp(work, out=work).sum(axis=0)
        self._shift = top + np.log(total)
        for rows, _, work in self._blocks:
            np.exp(np.subtract(log_M[rows], self._shift, out=work), out=M[rows])
        self.lam = _warm_stationary(M, self.lam)


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
