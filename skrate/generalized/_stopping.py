"""When to stop a rate game, and which snapshots to keep as candidates.

The games' iterates are models; their rates on the training rows are known exactly at every
full-batch iteration. Two solutions are tracked: the current iterate and the uniform mixture of
the last ``n_iter_no_change`` iterates (the game's own kind of solution over its recent play;
its rates are the mean of theirs). Each is scored by ``(largest constraint violation,
objective)``, points with violation <= ``tol`` comparing by objective, others by violation. The
game stops once the best point is feasible (violation <= ``tol``) and ``n_iter_no_change``
consecutive iterations have not improved its objective by more than ``tol``: the players'
answers have stopped producing better models or mixtures. An infeasible game runs to
``max_iter``.

Snapshots are kept at every iteration (every ``stride``-th for runs longer than ten times
``n_candidates``, to bound memory); the candidates are ``n_candidates`` of them evenly spaced
over the iterations actually played, plus the best iterate and the last, so an early stop does
not thin them.
"""

from __future__ import annotations

from collections import deque

import numpy as np


class WindowMean:
    """Mean of the last ``size`` vectors pushed (the rates of the uniform mixture of the last
    ``size`` iterates), kept as a running total: one addition and one subtraction per push."""

    def __init__(self, size: int):
        self.buf, self.total = deque(maxlen=int(size)), 0.0

    def push(self, r: np.ndarray) -> np.ndarray:
        if len(self.buf) == self.buf.maxlen:
            self.total = self.total - self.buf[0]  # the vector the append below drops
        self.buf.append(r)
        self.total = self.total + r
        return self.total / len(self.buf)


class EarlyStopping:
    """Plateau test on the best ``(violation, objective)`` of the iterates and their mixture.

    Parameters
    ----------
    tol : float or None
        Smallest improvement that counts; None never stops.
    n_iter_no_change : int
        Iterations without an improvement before stopping.
    """

    def __init__(self, tol: float | None, n_iter_no_change: int):
        self.tol, self.patience = tol, int(n_iter_no_change)
        self.best = (np.inf, np.inf)
        self.best_iterate, self.best_iterate_merit = 0, (np.inf, np.inf)
        self.since = 0

    @staticmethod
    def merit(objective: float, violations) -> tuple[float, float]:
        v = np.atleast_1d(np.asarray(violations, dtype=float))
        return (max(0.0, float(v.max())) if v.size else 0.0), float(objective)

    @staticmethod
    def _improves(m: tuple[float, float], ref: tuple[float, float], tol: float) -> bool:
        """Feasible (violation <= tol) points compare by objective, others by violation."""
        if m[0] <= tol + 1e-12 and ref[0] <= tol + 1e-12:
            return m[1] < ref[1] - tol
        return m[0] < ref[0] - tol

    def update(self, t: int, iterate: tuple[float, float], mixture: tuple[float, float]) -> bool:
        """Record iteration ``t``'s merits; True when the game should stop."""
        if self._improves(iterate, self.best_iterate_merit, 0.0):
            self.best_iterate, self.best_iterate_merit = t, iterate
        tol = 0.0 if self.tol is None else self.tol
        improved = False
        for m in (iterate, mixture):
            if self._improves(m, self.best, tol):
                improved = True
            if self._improves(m, self.best, 0.0):
                self.best = m
        self.since = 0 if improved or self.best[0] > tol else self.since + 1
        return self.tol is not None and self.since >= self.patience


class Snapshots:
    """The iterates' parameters and multipliers, from which the candidates are drawn."""

    def __init__(self, max_iter: int, n_candidates: int):
        self.stride = max(1, int(max_iter) // (10 * max(1, int(n_candidates))))
        self.kept, self.best = [], None  # (iteration, params, multipliers)

    def offer(self, t: int, theta: np.ndarray, mu: np.ndarray) -> None:
        if t % self.stride == 0:
            self.kept.append((t, theta, mu))

    def mark_best(self, t: int, theta: np.ndarray, mu: np.ndarray) -> None:
        self.best = (t, theta, mu)

    def candidates(self, n_candidates: int, last: tuple) -> tuple[np.ndarray, np.ndarray]:
        """(params, multipliers) of the evenly spaced snapshots and the best, in the order
        played, then ``last`` (the model after the final step)."""
        chosen = {self.kept[i][0]: self.kept[i] for i in candidate_indices(len(self.kept), n_candidates)}
        if self.best is not None:
            chosen[self.best[0]] = self.best
        ordered = [chosen[t] for t in sorted(chosen)]
        return (np.array([c[1] for c in ordered] + [last[0]]), np.array([c[2] for c in ordered] + [last[1]]))


def candidate_indices(n_played: int, n_candidates: int) -> np.ndarray:
    """Indices of ``n_candidates`` snapshots evenly spaced over ``n_played``, the first and last
    included (the best iterate is added by :meth:`Snapshots.mark_best`)."""
    return np.unique(np.round(np.linspace(0, n_played - 1, max(1, min(n_candidates, n_played)))).astype(int))
