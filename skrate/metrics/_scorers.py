"""scikit-learn scorers of rates and constraint violations, with groups routed as metadata."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics._scorer import _BaseScorer
from sklearn.utils.validation import _num_samples

from ..exceptions import UndefinedRateError
from ..problem import GroupTable, RateData, evaluate_term, zero_denominator_reason
from ..problem._groups import check_row_order
from ..rates import Constraint, Ratio, as_expression
from ..utils._validation import check_baseline, check_sample_weight
from ..utils._warnings import warn
from ._decisions import DECISIONS, check_probabilities, is_stochastic, positive_labels

if TYPE_CHECKING:
    from ..generalized import Metric, MetricConstraint
    from ..rates import Expression


def _binary(y_true, y_pred) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """0/1 labels and decisions (or probabilities of predicting 1), and the two labels they were
    read as. RateScorer passes them as 0/1; scikit-learn's threshold tuner
    (TunedThresholdClassifierCV) calls a scorer's function with class labels instead, of which the
    greater is the positive class, as ``classes_[1]`` is."""
    y, p = np.asarray(y_true), np.asarray(y_pred)
    if (y.dtype.kind in "biuf" and p.dtype.kind in "biuf" and np.isin(y, (0, 1)).all()
            and ((p >= 0) & (p <= 1)).all()):
        return y.astype(int), p.astype(float), np.array([0, 1])
    labels = np.unique(np.concatenate([np.unique(y), np.unique(p)]))
    if labels.size != 2:
        raise ValueError(f"y_true and y_pred hold the labels {labels.tolist()}; a rate scores two classes, "
                         "0/1 or the two class labels (the greater one positive).")
    return (y == labels[1]).astype(int), (p == labels[1]).astype(float), labels


def _rate_data(y_true, y_pred, groups, sample_weight, baseline) -> tuple[RateData, np.ndarray]:
    """The rows' RateData and the decisions ``y_pred`` as 0/1 (or probabilities of 1), the rows
    of weight 0 dropped."""
    y, p, classes = _binary(y_true, y_pred)
    n = y.shape[0]
    table = groups if isinstance(groups, GroupTable) else GroupTable.from_input(groups, None, n)
    weights = check_sample_weight(sample_weight, n)  # negative weights refused, as in fit and audit
    # a scorer has mapped a baseline of labels with the estimator's classes_ already; the threshold
    # tuner passes it as routed, in the labels of y_true
    data = RateData(y, weights, table, check_baseline(baseline, classes, n))
    # as in fit: a group value held only by rows of weight 0 is no slice to expand over
    return data.without_weightless(p)


def _undefined(metric, exc: UndefinedRateError) -> float:
    """NaN for a score these rows leave undefined (a fold without positives in a slice, or
    without a group value), said in a warning as scikit-learn's metrics do: a misspelt group
    value reads the same, and the warning lists the known ones."""
    warn(f"{metric.__name__} is undefined on these rows, scored NaN: {exc}", UndefinedMetricWarning)
    return float("nan")


def _zero_over_zero(metric, value: float, reason: str) -> float:
    """``value``, said in a warning when it is NaN: the decisions leave a ratio 0 / 0 (a
    precision whose slice the classifier predicts no positives in), which a grid search would
    otherwise rank without a word."""
    if np.isnan(value):
        warn(f"{metric.__name__} is undefined for these decisions, scored NaN: {reason}.", UndefinedMetricWarning)
    return value


#: The reason of :func:`_zero_over_zero` for a score whose ratios are not looked at one by one.
_SOME_RATIO = ("a ratio it holds has a denominator of 0 (for precision, the classifier predicts no "
               "positives in its slice)")


class RateMetric:
    """Value of a rate expression for 0/1 labels and decisions (or two class labels, the greater
    one positive, as scikit-learn's threshold tuner passes them): ``metric(y_true, y_pred, groups=...)``."""

    factory = "make_rate_scorer"  # named in the scorer's repr

    def __init__(self, spec):
        self.term = as_expression(spec)
        expands = sorted({k for r in self.term.rates for k in r.slice.expand})
        if expands:
            raise ValueError(f"The rate {self.term} expands over the group column(s) {', '.join(expands)} "
                             "and has no single value; name a value (e.g. tpr[race=Black]) or score "
                             "a constraint with make_violation_scorer.")
        self.__name__ = str(self.term)

    def __call__(self, y_true, y_pred, *, groups=None, sample_weight=None, baseline=None):
        data, p = _rate_data(y_true, y_pred, groups, sample_weight, baseline)
        try:
            value = evaluate_term(self.term, data, p)
        except UndefinedRateError as exc:  # e.g. a fold without positives in the slice, as audit reports it
            return _undefined(self, exc)
        reason = zero_denominator_reason(self.term.denominator) if isinstance(self.term, Ratio) else _SOME_RATIO
        return _zero_over_zero(self, value, reason)

    def __repr__(self):
        return f"rate {self.term}"


class MaxViolation:
    """Largest constraint violation (``> 0`` when some constraint is broken) of 0/1 labels and
    decisions (or two class labels, the greater one positive).

    Violations are ``lhs - rhs`` in each constraint's own units (ratios as ratios), so ratio
    and linear constraints compare; NaN, with a warning, when a ratio is undefined on the
    data. Metric constraints (``kld_fairness``, ``predictive_parity``) read as MetricOptimizer's
    ``metric_values`` does: NaN too where a ratio they hold has a zero denominator.
    """

    factory = "make_violation_scorer"

    def __init__(self, constraints):
        from ..generalized._program import as_metric_constraints

        self.constraints = as_metric_constraints(constraints)
        if not self.constraints:
            raise ValueError("make_violation_scorer needs at least one constraint.")
        self.__name__ = "max_violation"

    def __call__(self, y_true, y_pred, *, groups=None, sample_weight=None, baseline=None):
        data, p = _rate_data(y_true, y_pred, groups, sample_weight, baseline)
        from ..generalized._program import constraint_violations

        try:
            values = constraint_violations(self.constraints, data, p)
        except UndefinedRateError as exc:  # a rate these rows leave undefined
            return _undefined(self, exc)
        return _zero_over_zero(self, float(np.max(values)), _SOME_RATIO)  # NaN, not an order-dependent max

    def __repr__(self):
        return "max violation of " + "; ".join(map(str, self.constraints))


class MetricLoss:
    """A generalized rate metric (the loss MetricOptimizer minimises) of 0/1 labels and decisions
    (or two class labels, the greater one positive)."""

    factory = "make_metric_scorer"

    def __init__(self, metric):
        from .._metric_optimizer import _as_loss
        from ..generalized import PRAUC

        self.metric = _as_loss(metric)
        if isinstance(self.metric, PRAUC):
            raise ValueError("PR-AUC ranks a score, not decisions: score it with scikit-learn's "
                             "scoring='average_precision'.")
        self.__name__ = str(self.metric)

    def __call__(self, y_true, y_pred, *, groups=None, sample_weight=None, baseline=None):
        from ..generalized._program import program_values

        data, p = _rate_data(y_true, y_pred, groups, sample_weight, baseline)
        try:
            value = program_values(self.metric, [], data, p)["objective"]
        except UndefinedRateError as exc:
            return _undefined(self, exc)
        return _zero_over_zero(self, value, _SOME_RATIO)

    def __repr__(self):
        return f"metric {self.metric}"


def _direct_call(estimator, response_method, X):
    return getattr(estimator, response_method)(X)


class RateScorer(_BaseScorer):
    """Scorer reading decisions as :func:`skrate.metrics.audit` does and passing group metadata on.

    Call it as ``scorer(estimator, X, y, groups=...)``; inside ``cross_validate`` or
    ``GridSearchCV`` request the groups with ``set_score_request(groups=True)`` under
    ``sklearn.set_config(enable_metadata_routing=True)``. Negative ``sample_weight`` entries
    are refused, as in ``fit`` and ``audit``.
    """

    def __init__(self, metric, sign: int, decisions: str):
        super().__init__(metric, sign, {}, response_method="predict")
        self._decisions = decisions

    def __call__(self, estimator, X, y_true, **kwargs):
        return self._score(_direct_call, estimator, X, y_true, **kwargs)

    def _accept_sample_weight(self):
        return True

    def _score(self, method_caller, estimator, X, y_true, **kwargs):
        unknown = set(kwargs) - {"groups", "sample_weight", "baseline"}
        if unknown:
            raise TypeError(f"Unexpected scorer argument(s) {sorted(unknown)}; a rate scorer takes "
                            "groups, sample_weight and baseline.")
        check_row_order(X, y_true=y_true, sample_weight=kwargs.get("sample_weight"), baseline=kwargs.get("baseline"))
        y = positive_labels(estimator, y_true, "y_true")
        if y.shape[0] != _num_samples(X):
            raise ValueError(f"y_true has {y.shape[0]} entries but X has {_num_samples(X)} rows.")
        expected = self._decisions == "expected" or (self._decisions == "auto" and is_stochastic(estimator))
        if expected:
            check_probabilities(estimator)
            proba = np.asarray(method_caller(estimator, "predict_proba", X), dtype=float)
            p = proba[:, 1] if proba.ndim == 2 else proba
        else:
            p = (np.asarray(method_caller(estimator, "predict", X)) == estimator.classes_[1]).astype(float)
        groups = GroupTable.from_input(kwargs.pop("groups", None), X, y.shape[0])
        # The same baseline forms as fit: 0/1 decisions or the estimator's class labels.
        kwargs["baseline"] = check_baseline(kwargs.get("baseline"), np.asarray(estimator.classes_), y.shape[0])
        return self._sign * self._score_func(y, p, groups=groups, **kwargs)

    def __repr__(self):
        # the sign is an argument of make_rate_scorer only: the other factories fix it
        sign = ", greater_is_better=False" if self._sign < 0 and isinstance(self._score_func, RateMetric) else ""
        return f"{self._score_func.factory}({self._score_func!r}{sign}, decisions={self._decisions!r})"


def _check_decisions(decisions):
    if decisions not in DECISIONS:
        raise ValueError(f"decisions must be one of {DECISIONS}, got {decisions!r}.")


def make_rate_scorer(spec: str | Expression | Ratio, *, greater_is_better: bool = True,
                     decisions: str = "auto") -> RateScorer:
    """A scorer for the value of a rate expression on a slice, e.g. ``"tpr[race=Black]"`` or ``"error"``.

    Parameters
    ----------
    spec : str, Expression or Ratio
        The rate, e.g. ``"tpr"``, ``"fpr[sex=Female] - fpr"``, ``precision(race="Black")``.
        It must have a single value: a bare group column (``tpr[race]``) is rejected.
    greater_is_better : bool, default=True
        Whether a higher value is better; False negates the score (for ``"error"``, ``"fpr"``),
        following scikit-learn's convention that scores are maximised.
    decisions : {"auto", "predict", "expected"}, default="auto"
        As in :func:`skrate.metrics.audit`: expected rates from ``predict_proba`` for skrate's
        stochastic estimators, ``predict`` labels for any other classifier.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y, groups=None, sample_weight=None, baseline=None)``, with
        ``baseline`` 0/1 decisions or labels of the estimator's ``classes_`` as in ``fit``. It
        supports metadata routing: ``scorer.set_score_request(groups=True)``. On rows that
        leave the rate undefined (a fold without positives in the slice, or without its group
        value), or decisions that leave a ratio ``0 / 0`` (no positive prediction in a
        precision's slice), it scores NaN with an ``UndefinedMetricWarning`` that says why.

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization with
    Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and Other Goals.
    JMLR 20(172), 2019.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skrate.datasets import load_compas
    >>> from skrate.metrics import make_rate_scorer
    >>> data = load_compas()
    >>> clf = LogisticRegression().fit(data.data, data.target)
    >>> scorer = make_rate_scorer("tpr[race=Caucasian]")
    >>> round(scorer(clf, data.data, data.target, groups=data.groups), 3)
    0.4
    """
    _check_decisions(decisions)
    return RateScorer(RateMetric(spec), 1 if greater_is_better else -1, decisions)


def make_metric_scorer(metric: str | Metric | Expression | Ratio, *, decisions: str = "auto") -> RateScorer:
    """A scorer for a generalized rate metric; scores are the negative of its loss.

    The metric is the loss :class:`~skrate.MetricOptimizer` minimises (``"f1"`` is
    ``1 - F1``, ``"g_mean"`` ``1 - G-mean``, ``kld(group="sex")`` a sum of KL-divergences), so
    the scorer returns ``-loss``: higher is better, as for every scikit-learn score, and
    ``GridSearchCV`` can rank MetricOptimizer's (or any classifier's) candidates by the metric
    the user trains for.

    Parameters
    ----------
    metric : str or Metric
        As MetricOptimizer's ``metric``: a name (``"f1"``, ``"g_mean"``, ``"h_mean"``,
        ``"kld"``...), a metric of :mod:`skrate.generalized` or a rate expression. Lone scores
        (``"accuracy"``) are refused as there, and PR-AUC, which ranks scores rather than
        decisions, is left to scikit-learn's ``"average_precision"``.
    decisions : {"auto", "predict", "expected"}, default="auto"
        As in :func:`skrate.metrics.audit`.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y, groups=None, sample_weight=None, baseline=None)``; it supports
        ``set_score_request(groups=True)``. NaN with an ``UndefinedMetricWarning`` naming the
        rate when the metric is undefined on an evaluation set (a slice without rows, or without
        the class its rate conditions on) or for the decisions (a ratio ``0 / 0``: no positive
        prediction in a precision's slice), as scikit-learn's metrics and
        :func:`make_violation_scorer` do.

    References
    ----------
    H. Narasimhan, A. Cotter, M. Gupta. Optimizing Generalized Rate Metrics with Three Players.
    NeurIPS 2019.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skrate.datasets import load_compas
    >>> from skrate.metrics import make_metric_scorer
    >>> data = load_compas()
    >>> clf = LogisticRegression().fit(data.data, data.target)
    >>> round(make_metric_scorer("g_mean")(clf, data.data, data.target), 3)  # -(1 - G-mean)
    -0.33
    """
    _check_decisions(decisions)
    return RateScorer(MetricLoss(metric), -1, decisions)


def make_violation_scorer(constraints: Constraint | MetricConstraint | str | list | tuple, *,
                          decisions: str = "auto") -> RateScorer:
    """A scorer for the largest violation of rate constraints; scores are its negative.

    The violation of ``lhs <= rhs`` is ``lhs - rhs`` (``> 0`` when broken), in the
    constraint's own units: ``0.8 - precision`` for ``precision >= 0.8``; the scorer
    returns ``-max violation`` so that, as for every scikit-learn score, higher is better:
    a score ``>= 0`` means every constraint holds. Use it next to an error scorer in
    ``GridSearchCV(scoring={...}, refit=skrate.model_selection.RankRefit(...))``.

    Parameters
    ----------
    constraints : Constraint, MetricConstraint, str, or list of them
        The constraints, e.g. ``"tpr[race] >= tpr - 0.05"`` or ``kld_fairness("race", 0.01)``;
        group columns expand per value on each evaluation set.
    decisions : {"auto", "predict", "expected"}, default="auto"
        As in :func:`skrate.metrics.audit`.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y, groups=None, sample_weight=None, baseline=None)``, with
        ``baseline`` 0/1 decisions or labels of the estimator's ``classes_`` as in ``fit``; it
        supports ``set_score_request(groups=True)``. NaN with an ``UndefinedMetricWarning``
        when a ratio is undefined (no positive prediction in a precision's slice), a metric
        constraint's ratio too (``predictive_parity``), or a rate is (a slice without rows of its
        class, or without its group value).

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization with
    Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and Other Goals.
    JMLR 20(172), 2019.
    """
    _check_decisions(decisions)
    return RateScorer(MaxViolation(constraints), -1, decisions)
