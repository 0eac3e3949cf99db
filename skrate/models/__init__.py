"""Score functions f_theta(x) over flat parameter vectors, with analytic gradients."""

from ._design import Design
from ._input_scale import folding_callback, input_scale, scaled_input
from ._linear import LinearModel
from ._mlp import MLPModel
from ._probability_scores import ProbabilityScoreModel, log_odds, score_threshold, with_score

__all__ = ["Design", "folding_callback", "input_scale", "LinearModel", "MLPModel", "ProbabilityScoreModel",
           "log_odds", "scaled_input", "score_threshold", "with_score"]
