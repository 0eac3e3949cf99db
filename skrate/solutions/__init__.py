"""Turn a trajectory of candidates into the model a user asked for."""

from ._best import best_iterate
from ._shrink import ShrinkResult, shrink
from ._stochastic_model import StochasticModel, row_uniforms

SOLUTIONS = ("m_stochastic", "best", "last", "T_stochastic")

__all__ = ["SOLUTIONS", "ShrinkResult", "StochasticModel", "best_iterate", "row_uniforms", "shrink"]
