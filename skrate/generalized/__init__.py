"""Generalized rate metrics and the games that optimise them (Narasimhan, Cotter and Gupta, 2019).

Metrics are immutable specs over named rates; combine them with ``+``, ``-`` and scalars and
compare them with ``<=`` / ``>=`` to state constraints:

>>> from skrate.generalized import f_measure, kld, g_mean
>>> objective = g_mean() + 0.5 * kld()
>>> objective.kind
'convex'
>>> (kld(group="sex") <= 0.01).kind
'convex'
>>> f_measure(beta=2).kind
'ratio'
"""

from ._atoms import KLD, FMeasure, GMean, HMean, MaxOf, QMean, RateFunction
from ._constructors import (
    error,
    f_measure,
    f_measure_parity,
    g_mean,
    g_mean_at_least,
    h_mean,
    kld,
    kld_fairness,
    max_of,
    min_of,
    precision,
    predictive_parity,
    q_mean,
    rate_function,
    ratio,
)
from ._metric import CLASSES, LinearRate, Metric, MetricConstraint, MetricSum, RatioAtom
from ._names import as_metric, as_objective
from ._pr_auc import PRAUC, pr_auc
from ._program import MetricProgram, compile_program
from ._xi_player import CvxpyXiPlayer, best_response

__all__ = [
    "CLASSES",
    "KLD",
    "PRAUC",
    "CvxpyXiPlayer",
    "FMeasure",
    "GMean",
    "HMean",
    "LinearRate",
    "MaxOf",
    "Metric",
    "MetricConstraint",
    "MetricProgram",
    "MetricSum",
    "QMean",
    "RateFunction",
    "RatioAtom",
    "as_metric",
    "as_objective",
    "best_response",
    "compile_program",
    "error",
    "f_measure",
    "f_measure_parity",
    "g_mean",
    "g_mean_at_least",
    "h_mean",
    "kld",
    "kld_fairness",
    "max_of",
    "min_of",
    "pr_auc",
    "precision",
    "predictive_parity",
    "q_mean",
    "rate_function",
    "ratio",
]
