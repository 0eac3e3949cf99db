"""Solvers over compiled problems and arrays (no scikit-learn objects)."""

from ._players import ExternalRegretPlayer, LagrangePlayer, SwapRegretPlayer, stationary_distribution
from ._rate_game import solve_rate_game
from ._surrogates import SURROGATES, surrogate_bounds, surrogate_grad, surrogate_value
from ._trajectory import Trajectory

GAME_SOLVERS = ("proxy_lagrangian", "proxy_lagrangian_ext", "lagrangian")

__all__ = [
    "ExternalRegretPlayer", "GAME_SOLVERS", "LagrangePlayer", "SURROGATES", "SwapRegretPlayer",
    "Trajectory", "solve_rate_game", "stationary_distribution", "surrogate_bounds", "surrogate_grad",
    "surrogate_value",
]
