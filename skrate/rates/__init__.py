"""Declarative rate specs: slices, rates, expressions, constraints and the string parser.

Examples
--------
>>> from skrate.rates import tpr, parse_constraint
>>> c = tpr(group="race") >= 0.95 * tpr()
>>> c == parse_constraint("tpr[race] >= 0.95 * tpr")
True
"""

from ._expression import Constraint, Expression, Rate, Ratio
from ._functions import (
    accuracy, baseline_ppr, churn, coverage, error_rate, f1, fnr, fpr, label_rate, loss_churn, losses, npr,
    ppr, precision, recall, tnr, tp_proportion, tpr, win_loss_ratio, wins,
)
from ._goals import (
    accurate_coverage, demographic_parity, equal_accuracy, equal_odds, equal_opportunity,
    minimum_accuracy, minimum_coverage, minimum_recall, no_lost_benefits, not_worse_off,
    statistical_parity,
)
from ._coerce import as_constraints, as_expression
from ._parser import SpecParseError, parse_constraint, parse_expression
from ._slice import Slice

__all__ = [
    "Constraint", "Expression", "Rate", "Ratio", "Slice", "SpecParseError", "as_constraints", "as_expression",
    "accuracy", "accurate_coverage", "baseline_ppr", "churn", "coverage", "demographic_parity",
    "equal_accuracy", "equal_odds", "equal_opportunity", "error_rate", "f1", "fnr", "fpr",
    "label_rate", "loss_churn", "losses", "minimum_accuracy", "minimum_coverage",
    "minimum_recall", "no_lost_benefits", "not_worse_off", "npr", "parse_constraint",
    "parse_expression", "ppr", "precision", "recall", "statistical_parity", "tnr",
    "tp_proportion", "tpr", "win_loss_ratio", "wins",
]
