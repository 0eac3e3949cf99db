"""What a solver returns: candidate models and their rates on the training data."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Trajectory:
    """Snapshots of the iterates.

    Parameters
    ----------
    params : ndarray of shape (n_candidates, n_params)
        The candidates: the model's parameters at each snapshot.
    objective : ndarray of shape (n_candidates,)
        Objective value of each candidate on the training data (0-1 rates).
    constraints : ndarray of shape (n_constraints, n_candidates)
        Constraint values ``g_j`` (feasible when ``<= 0``) of each candidate.
    multipliers : ndarray of shape (n_candidates, n_constraints + 1)
        The lambda-player's weights when each snapshot was taken.
    n_iter : int
        The number of iterations played.
    """

    params: np.ndarray
    objective: np.ndarray
    constraints: np.ndarray
    multipliers: np.ndarray
    n_iter: int

    @property
    def max_violation(self) -> np.ndarray:
        """Largest constraint value of each candidate (<= 0 means feasible)."""
        if self.constraints.shape[0] == 0:
            return np.zeros(self.objective.shape[0])
        return self.constraints.max(axis=0)
