"""The constraint multipliers of the metric games: projected gradient ascent on the constraint
values, with a step that grows while a constraint keeps the sign of its value.

A tight constraint whose values are small numbers (a ratio floor in its linear form,
``0.9 ppr - tp <= 0``, is violated by thousandths) needs a multiplier of tens to move the model's
threshold; with a constant step it grew by thousandths a round and the game ended short of it.
The step is therefore multiplied by ``growth`` each round the multiplier keeps moving the same
way, and falls back to the base step when the constraint's sign changes or the multiplier
rests at a bound: a persistent violation is met in tens of rounds, and near the boundary, where
the sign alternates, the steps are those of plain gradient ascent.
"""

from __future__ import annotations

import numpy as np


class MultiplierAscent:
    """Multipliers ``mu`` in ``[0, bound]`` of ``m`` constraints, stepped by their values."""

    def __init__(self, m: int, learning_rate: float, bound: float, growth: float = 1.05):
        self.mu = np.zeros(m)
        self.base, self.bound, self.growth = learning_rate, bound, growth
        self.step_size = np.full(m, learning_rate)
        self.sign = np.zeros(m)

    def update(self, phi: np.ndarray) -> np.ndarray:
        """One step on the constraint values ``phi`` (positive: violated); the new multipliers."""
        sign = np.sign(phi)
        # moving: the last step went the same way and the bound in that direction is not reached
        moving = (sign == self.sign) & ((sign > 0) & (self.mu < self.bound) | (sign < 0) & (self.mu > 0))
        # no step need cross the whole range [0, bound]: keeps a long run of tiny values finite
        grown = np.minimum(self.step_size * self.growth, self.bound / np.maximum(np.abs(phi), 1e-300))
        self.step_size = np.where(moving, np.maximum(grown, self.base), self.base)
        self.sign = sign
        self.mu = np.clip(self.mu + self.step_size * phi, 0.0, self.bound)
        return self.mu
