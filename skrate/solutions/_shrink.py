"""Shrinking a set of candidates to a mixture of at most m+1 of them by linear programming."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

from ._best import candidate_values


@dataclass
class ShrinkResult:
    """Weights over the candidates and whether the constraints could be met.

    ``multipliers`` are the LP's dual values of the constraints (``>= 0``): no candidate has a
    Lagrangian ``objective + multipliers . constraints`` below the mixture's objective, and a new
    candidate improves the mixture only if its Lagrangian is lower (column generation).

    Parameters
    ----------
    weights : ndarray of shape (k,)
        The mixture's weights over the candidates: non-negative, summing to 1, at most m + 1
        of them non-zero.
    feasible : bool
        Whether some mixture meets every constraint (within ``tol`` of :func:`shrink`).
    max_violation : float
        The mixture's largest constraint value, clipped at 0.
    multipliers : ndarray of shape (m,)
        The dual values of the constraints.
    least_violation : float
        The least largest violation ``s`` of any mixture (0 when one is feasible).
    violation_prices : ndarray of shape (m,)
        When no mixture is feasible, the dual values of the LP of ``s`` (``>= 0``, summing to
        1): only a candidate with ``violation_prices . g`` below ``s`` can lower it (column
        generation towards feasibility). Zeros otherwise.
    """

    weights: np.ndarray
    feasible: bool
    max_violation: float
    multipliers: np.ndarray
    least_violation: float
    violation_prices: np.ndarray


# Largest constraint value the LP is given; HiGHS reads coefficients near 1e15 as infinite.
_LARGEST_COEFFICIENT = 1e12


def _vertex(c, A_ub, b_ub, k):
    res = linprog(c, A_ub=A_ub if A_ub.size else None, b_ub=b_ub if A_ub.size else None,
                  A_eq=np.ones((1, c.shape[0])) if k is None else np.r_[np.ones(k), 0.0][None, :],
                  b_eq=[1.0], bounds=[(0, None)] * c.shape[0], method="highs-ds")
    if res.status != 0:
        raise RuntimeError(f"The shrinking LP failed: {res.message}")
    return res


def shrink(objective: np.ndarray, constraints: np.ndarray, tol: float = 1e-9) -> ShrinkResult:
    """Best mixture of candidates: ``min_p p . objective`` s.t. ``constraints @ p <= 0``, ``p`` in the simplex.

    The LP has m + 1 rows besides the bounds, so a vertex optimum -- which the dual simplex
    returns -- has at most m + 1 non-zero weights (Cotter et al., 2019, Section 6.1 / Theorem 2).
    When no mixture is feasible, it first minimises the largest violation ``s``, then the
    objective subject to every constraint at most ``s``: still a vertex, still m + 1 models.

    Parameters
    ----------
    objective : ndarray of shape (k,)
        Objective value of each candidate.
    constraints : ndarray of shape (m, k)
        Constraint values ``g_j`` (met when ``<= 0``) of each candidate.
    tol : float, default=1e-9
        Largest violation still counted as feasible. When no mixture is feasible (or the
        smallest violation is positive but within ``tol``), the objective is minimised with
        every constraint at most the smallest violation plus ``tol``.

    Returns
    -------
    ShrinkResult
        The mixture's weights, whether it is feasible, its largest violation and the
        constraints' dual values.

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization
    with Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and
    Other Goals. JMLR 20(172), 2019, Section 6.1.
    """
    objective, stated = candidate_values(objective, constraints)
    if not (np.isfinite(objective).all() and np.isfinite(stated).all()):
        raise ValueError("objective and constraints must be finite: a candidate's value is NaN or infinite.")
    multipliers = np.zeros(stated.shape[0])
    # A row no candidate violates holds for every mixture: dropping it leaves the LP's optimum
    # (and a zero multiplier); so a slack of 1e15, the unconstrained end of a trade-off curve,
    # never reaches the LP solver, which reads such coefficients as infinite.
    binding = stated.max(axis=1, initial=-np.inf) > 0
    constraints = stated[binding]
    large = np.abs(constraints).max(axis=1, initial=0.0) > _LARGEST_COEFFICIENT
    if large.any():
        j = int(np.flatnonzero(binding)[np.argmax(large)])
        raise ValueError(f"Constraint {j} reaches {np.abs(stated[j]).max():.3g} in magnitude, beyond what the LP "
                         "can take; rates lie in [0, 1], so its bound is out of any rate's reach.")
    m, k = constraints.shape
    if m == 0:
        weights = np.zeros(k)
        weights[int(np.argmin(objective))] = 1.0
        return ShrinkResult(weights, True, 0.0, multipliers, 0.0, np.zeros(stated.shape[0]))
    # Phase 1: smallest achievable max violation s (variables p, s; s free via s = s+ only
    # when needed: the violation is clipped at 0 so s >= 0).
    # A candidate meeting every constraint on its own is a mixture with s = 0: no LP needed.
    if (constraints <= 0).all(axis=0).any():
        s = 0.0
    else:
        c1 = np.r_[np.zeros(k), 1.0]
        A1 = np.hstack([constraints, -np.ones((m, 1))])
        phase1 = _vertex(c1, A1, np.zeros(m), k)
        s = float(phase1.x[-1])
    feasible = s <= tol
    prices = np.zeros(stated.shape[0])
    if not feasible:
        prices[binding] = np.clip(-phase1.ineqlin.marginals, 0.0, None)
    slack = s * (1 + 1e-9) + tol
    # Phase 2: best objective within that violation (none, when feasible) ...
    try:
        res = _vertex(objective, constraints, np.full(m, 0.0 if feasible else slack), None)
    except RuntimeError:
        if not feasible:
            raise
        # ... unless s, counted feasible, is beyond the LP solver's own tolerance of 0
        res = _vertex(objective, constraints, np.full(m, slack), None)
    p = np.clip(res.x, 0.0, None)
    p[p < 1e-12] = 0.0
    p /= p.sum()
    multipliers[binding] = np.clip(-res.ineqlin.marginals, 0.0, None)
    return ShrinkResult(p, feasible, float(max(0.0, (stated @ p).max())), multipliers, s if not feasible else 0.0,
                        prices)
