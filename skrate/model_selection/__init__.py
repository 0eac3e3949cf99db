"""Model selection for rate goals: the rank heuristic as a GridSearchCV refit, trade-off curves."""

from ._refit import RankRefit
from ._tradeoff import tradeoff_curve

__all__ = ["RankRefit", "tradeoff_curve"]
