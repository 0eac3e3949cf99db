"""Audits, plots and scikit-learn scorers for rate goals.

Importing this package needs neither pandas nor matplotlib: :func:`audit` needs pandas when
called (as does :func:`skrate.model_selection.tradeoff_curve`), the plots need matplotlib.
"""

from ._audit import DEFAULT_METRICS, audit
from ._decisions import decisions_of, is_stochastic
from ._plot import plot_audit, plot_tradeoff
from ._scorers import make_metric_scorer, make_rate_scorer, make_violation_scorer

__all__ = ["DEFAULT_METRICS", "audit", "decisions_of", "is_stochastic", "make_metric_scorer", "make_rate_scorer",
           "make_violation_scorer", "plot_audit", "plot_tradeoff"]
