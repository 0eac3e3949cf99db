"""Metric names: what ``metric=`` accepts and how a name, a metric or a rate expression
becomes a metric, with the refusal of lone scores."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable

from ..rates import Expression, Rate, Ratio
from ..rates import _functions as R
from ..rates._functions import RATE_FUNCTIONS, named_ratio
from ._constructors import error, f_measure, g_mean, h_mean, kld, precision, q_mean, ratio
from ._metric import LinearRate, Metric, MetricSum, RatioAtom, _rate_atom


def _pr_auc() -> Metric:
    from ._pr_auc import pr_auc  # it imports as_metric from this module

    return pr_auc()


# names denote losses, as the estimator minimises: "f1" is 1 - F1, "precision" 1 - precision
METRICS: dict[str, Callable[[], Metric]] = {
    "error": error, "f1": lambda: f_measure(1.0), "f_measure": lambda: f_measure(1.0),
    "g_mean": g_mean, "h_mean": h_mean, "q_mean": q_mean, "kld": kld,
    "precision": lambda: 1.0 - precision(), "win_loss_ratio": lambda: -ratio(R.wins(), R.losses()),
    "pr_auc": _pr_auc,
}
# rates that are scores (higher is better) and the loss that complements each
SCORE_LOSSES = {"accuracy": "error_rate", "tpr": "fnr", "tnr": "fpr"}
# F-beta by name: "f2", "f0.5", "f.5"
_F_BETA = re.compile(r"f(\d+(?:\.\d*)?|\.\d+)")
# names that need arguments: the constructor to use instead
_NEEDS_ARGUMENTS = {"max": "max_of", "min": "min_of", "max_of": "max_of", "min_of": "min_of"}


def metric_names() -> list[str]:
    """The names ``metric=`` accepts, ``"f<beta>"`` standing for any F-beta."""
    return sorted(METRICS) + ["f<beta>"]


def as_objective(spec: Metric | Expression | Ratio | str) -> Metric:
    """A metric from a name (``"f1"``, ``"F1"``, ``"f0.5"``; names ignore case), a metric, a core
    rate expression or ratio, or its string; a metric given whole (``pr_auc()``) is returned as it is.

    Parameters
    ----------
    spec : str, Metric, Expression or Ratio
        A metric name (see ``MetricOptimizer``'s ``metric``; ``"f<beta>"`` for any F-beta), a
        metric of :mod:`skrate.generalized`, or a rate expression or ratio of
        :mod:`skrate.rates`, as an object or a string (``"fpr + fnr"``).

    Returns
    -------
    Metric
        ``spec`` itself when it is a metric; a named metric as its constructor builds it (a
        :class:`MetricSum`, or a :class:`PRAUC` for ``"pr_auc"``); a rate expression or ratio
        as a one-atom :class:`MetricSum`.

    Raises
    ------
    ValueError
        For an unknown name (listing the known ones and suggesting close matches) or a name that
        needs arguments.
    """
    if isinstance(spec, Metric):
        return spec
    if isinstance(spec, str):
        name = spec.strip().lower()
        if name in METRICS:
            return METRICS[name]()
        beta = _F_BETA.fullmatch(name)
        if beta:
            return f_measure(float(beta.group(1)))
        if name in _NEEDS_ARGUMENTS:
            fn = _NEEDS_ARGUMENTS[name]
            raise ValueError(f"The metric {spec!r} needs the rates it compares: build it with "
                             f"skrate.generalized.{fn}('error_rate[g=a]', 'error_rate[g=b]') (any rate "
                             "expressions) and pass that as the metric.")
    try:
        return _rate_atom(spec).as_sum()
    except (TypeError, ValueError) as exc:
        if getattr(exc, "reason", None) is not None:
            # a rate expression that reads but means nothing (a division by zero): no name is near
            raise ValueError(f"Invalid metric {spec!r}, read as a rate expression: {exc}") from None
        names = dict.fromkeys([*METRICS, *RATE_FUNCTIONS])  # a name in both is suggested once
        close = (difflib.get_close_matches(spec.strip().lower(), list(names), n=3)
                 if isinstance(spec, str) else [])
        hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
        raise ValueError(f"Unknown metric {spec!r}{hint}: give a name among {metric_names()}, a metric such as "
                         "skrate.generalized.f_measure(beta=2), or a rate expression such as 'fpr + fnr' "
                         f"({exc}).") from None


def score_loss(metric: Metric) -> str | None:
    """The loss to minimise instead of ``metric`` when it is a lone score, else None.

    A score is better when higher: one rate such as ``accuracy`` or ``tpr[g=a]`` (its
    complement, ``error_rate`` or ``fnr[g=a]``), one named ratio such as ``precision[g=a]``
    or a ratio of a score to a rate such as ``tpr / fpr`` (their negative), with a positive
    coefficient. Minimising it gives the worst classifier. Sums such as ``"fpr + fnr"`` and
    ratios of losses (``fpr / tpr``) are read as written.
    """
    terms = metric.terms if isinstance(metric, MetricSum) else ()
    if len(terms) != 1 or terms[0][0] <= 0:
        return None
    atom = terms[0][1]
    if isinstance(atom, LinearRate) and len(atom.expr.terms) == 1:
        rate, coef = atom.expr.terms[0]
        if coef > 0 and rate.kind in SCORE_LOSSES:
            return str(Rate(SCORE_LOSSES[rate.kind], rate.slice))
    if isinstance(atom, RatioAtom):
        named = named_ratio(Ratio(atom.numerator, atom.denominator))
        if named is not None and named[2] * named[3] > 0:
            return f"-{atom}"
        if len(atom.numerator.terms) == len(atom.denominator.terms) == 1:
            (num, a), (_, b) = atom.numerator.terms[0], atom.denominator.terms[0]
            if a * b > 0 and num.kind in SCORE_LOSSES:
                return f"-{atom}"
    return None


def refuse_score(spec: Metric | Expression | Ratio | str, metric: Metric, minimised: str) -> None:
    """Raise when ``metric``, read from ``spec``, is a lone score (:func:`score_loss`), naming its
    loss; ``minimised`` says who minimises what (``"MetricOptimizer minimises its metric"``)."""
    loss = score_loss(metric)
    if loss is None:
        return
    name = spec if isinstance(spec, str) else str(metric)
    alone = (" Alone it is minimised by predicting one class everywhere: pair it, as in 'fpr + fnr', or state "
             f"the score as a constraint, as in '{name} >= 0.8'.") if loss.startswith(("fnr", "fpr")) else ""
    raise ValueError(f"{minimised}, and {name!r} is a score (higher is better): minimising it gives the "
                     f"worst classifier. Pass the loss {loss!r} instead.{alone}")


def as_metric(spec: Metric | Expression | Ratio | str) -> MetricSum:
    """:func:`as_objective` as a sum of atoms (what sums and constraints are made of).

    Parameters
    ----------
    spec : str, Metric, Expression or Ratio
        As for :func:`as_objective`.

    Returns
    -------
    MetricSum
        The metric's sum form.

    Raises
    ------
    ValueError
        As :func:`as_objective`.
    TypeError
        For a metric that has no sum form (``pr_auc()``, usable only whole).
    """
    return as_objective(spec).as_sum()
