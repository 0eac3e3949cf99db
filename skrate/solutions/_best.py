"""The best-iterate rank heuristic of Cotter et al. (2019), Eq. 18."""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata


def best_iterate(objective: np.ndarray, constraints: np.ndarray) -> int:
    """Index of the candidate minimising ``max(rank of objective, rank of max violation)``.

    Violations are ``max(0, max_j g_j)``, so all feasible candidates share the best violation
    rank and the objective decides among them. Ties go to the lower objective, then the later
    candidate.
    """
    objective = np.asarray(objective, dtype=float)
    constraints = np.asarray(constraints, dtype=float).reshape(-1, objective.shape[0])
    violation = np.maximum(constraints.max(axis=0), 0.0) if constraints.shape[0] else np.zeros_like(objective)
    score = np.maximum(rankdata(objective, method="min"), rankdata(violation, method="min"))
    order = np.lexsort((-np.arange(objective.shape[0]), objective, score))
    return int(order[0])
