"""The best-iterate rank heuristic of Cotter et al. (2019), Eq. 18."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy.stats import rankdata

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


def candidate_values(objective: ArrayLike, constraints: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``objective`` as a float vector of the ``k`` candidates and ``constraints`` as an ``(m, k)``
    matrix: one row per constraint (a vector of length ``k`` is one constraint; an empty array,
    none). Any other shape is refused, rather than reshaped into a matrix of scrambled entries."""
    objective = np.asarray(objective, dtype=float)
    constraints = np.asarray(constraints, dtype=float)
    if objective.ndim != 1 or objective.shape[0] == 0:
        raise ValueError(f"objective must be a non-empty 1-D array, one value per candidate; got shape "
                         f"{objective.shape}")
    k = objective.shape[0]
    if constraints.size == 0:
        return objective, np.empty((0, k))
    if constraints.ndim == 1:
        constraints = constraints[None, :]
    if constraints.ndim != 2 or constraints.shape[1] != k:
        raise ValueError(f"constraints must have shape (m, {k}): one row per constraint, one column per "
                         f"candidate of the objective; got shape {constraints.shape}"
                         + (", transpose it" if constraints.ndim == 2 and constraints.shape[0] == k else ""))
    return objective, constraints


def best_iterate(objective: ArrayLike, constraints: ArrayLike) -> int:
    """Index of the candidate minimising ``max(rank of objective, rank of max violation)``.

    Violations are ``max(0, max_j g_j)``, so all feasible candidates share the best violation
    rank and the objective decides among them. Ties go to the lower objective, then the later
    candidate.

    Parameters
    ----------
    objective : array-like of shape (k,)
        Objective value of each candidate.
    constraints : array-like of shape (m, k)
        Constraint values ``g_j`` (met when ``<= 0``) of each candidate; ``m`` may be 0, and
        then the objective alone decides. Values may be ``+inf`` (undefined: ranked last), not NaN.

    Returns
    -------
    int
        Index of the best candidate, in ``range(k)``.

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization
    with Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and
    Other Goals. JMLR 20(172), 2019, Eq. 18.
    """
    objective, constraints = candidate_values(objective, constraints)
    if np.isnan(objective).any() or np.isnan(constraints).any():  # rankdata would rank nothing at all
        raise ValueError("objective and constraints hold NaN; give an undefined value as +inf, which ranks "
                         "its candidate last")
    violation = np.maximum(constraints.max(axis=0), 0.0) if constraints.shape[0] else np.zeros_like(objective)
    score = np.maximum(rankdata(objective, method="min"), rankdata(violation, method="min"))
    order = np.lexsort((-np.arange(objective.shape[0]), objective, score))
    return int(order[0])
