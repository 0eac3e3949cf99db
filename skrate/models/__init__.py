"""Score functions f_theta(x) over flat parameter vectors, with analytic gradients."""

from ._design import Design
from ._linear import LinearModel
from ._mlp import MLPModel

__all__ = ["Design", "LinearModel", "MLPModel"]
