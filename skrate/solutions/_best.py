"""The best-iterate rank heuristic of Cotter et al. (2019), Eq. 18."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy.stats import rankdata

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


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
        then the objective alone decides.

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
    objective = np.asarray(objective, dtype=float)
    constraints = np.asarray(constraints, dtype=float).reshape(-1, objective.shape[0])
    violation = np.maximum(constraints.max(axis=0), 0.0) if constraints.shape[0] else np.zeros_like(objective)
    score = np.maximum(rankdata(objective, method="min"), rankdata(violation, method="min"))
    order = np.lexsort((-np.arange(objective.shape[0]), objective, score))
    return int(order[0])
