"""The public constructors of metrics (``error``, ``f_measure``, ``ratio``, ``rate_function``...)
and of metric constraints (``kld_fairness``, ``predictive_parity``...)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..rates import Expression, Ratio, Slice, as_expression
from ..rates import _functions as R
from ..rates._functions import rates_on
from ..rates._goals import parity_columns
from ._atoms import KLD, FMeasure, GMean, HMean, MaxOf, QMean, RateFunction
from ._metric import CLASSES, LinearRate, MetricConstraint, MetricSum, RatioAtom, _finite, _scalar

# the largest beta of an F-measure: its square stays far from overflow in the solvers' sums
_MAX_BETA = 1e150


def _linear(spec, where: str) -> Expression:
    """A linear rate expression for ``where``; ratios (``precision``) are refused by name."""
    expr = as_expression(spec)
    if isinstance(expr, Ratio):
        raise TypeError(f"{where} takes linear rate expressions, but {spec!r} is the ratio {expr}; "
                        "build ratios with skrate.generalized.ratio(numerator, denominator).")
    return expr


# -- constructors -------------------------------------------------------------------------------
def error(group: str | Iterable[str] | None = None, *, where: dict[str, Any] | None = None,
          **filters: Any) -> MetricSum:
    """The error rate P(yhat != y) on a slice (linear).

    Parameters
    ----------
    group : str or list of str, optional
        Group columns to expand over: as an objective, the sum over their values; in a
        constraint, one constraint per value.
    where : dict, optional
        Filters as a dict, for column names that are not valid keywords or that name a
        parameter (``group``).
    **filters
        Group column = value (or list of values) restricting the slice.

    Returns
    -------
    MetricSum
    """
    return LinearRate(R.error_rate(group, where=where, **filters)).as_sum()


def f_measure(beta: float = 1.0, group: str | Iterable[str] | None = None, *,
              where: dict[str, Any] | None = None, **filters: Any) -> MetricSum:
    """``1 - F_beta`` on a slice: minimise it to maximise the F-measure (a ratio of rates).

    Parameters
    ----------
    beta : float, default=1.0
        Weight of recall against precision: a finite number in ``(0, 1e150]``.
    group : str or list of str, optional
        Group columns to expand over (a sum over groups as an objective, one constraint per
        group in a constraint).
    where : dict, optional
        Filters as a dict, for column names that are not valid keywords or that name a
        parameter (``group``).
    **filters
        Group column = value(s) restricting the slice.

    Returns
    -------
    MetricSum
    """
    # an infinite beta gives F = inf / inf = NaN, and a square near overflow overflows in the
    # solvers' sums; long before the cap F_beta is the recall to machine precision
    if not (_scalar(beta) and 0 < beta <= _MAX_BETA):
        raise ValueError(f"beta of the F-measure must be a finite number > 0, at most {_MAX_BETA:g} "
                         f"(F_beta is the recall long before), got {beta!r}.")
    return FMeasure(*rates_on(("tp_proportion", "ppr", "label_rate"), group, where, filters), float(beta)).as_sum()


def g_mean(group: str | Iterable[str] | None = None, *, where: dict[str, Any] | None = None,
           **filters: Any) -> MetricSum:
    """``1 - sqrt(TPR * TNR)`` on a slice (convex).

    Parameters
    ----------
    group : str or list of str, optional
        Group columns to expand over: as an objective, the sum over their values; in a
        constraint, one constraint per value.
    where : dict, optional
        Filters as a dict, for column names that are not valid keywords or that name a
        parameter (``group``).
    **filters
        Group column = value (or list of values) restricting the slice.

    Returns
    -------
    MetricSum
    """
    return GMean(*rates_on(("tpr", "tnr"), group, where, filters)).as_sum()


def h_mean(group: str | Iterable[str] | None = None, *, where: dict[str, Any] | None = None,
           **filters: Any) -> MetricSum:
    """``1 - 2 TPR TNR / (TPR + TNR)`` on a slice (convex).

    Parameters
    ----------
    group : str or list of str, optional
        Group columns to expand over: as an objective, the sum over their values; in a
        constraint, one constraint per value.
    where : dict, optional
        Filters as a dict, for column names that are not valid keywords or that name a
        parameter (``group``).
    **filters
        Group column = value (or list of values) restricting the slice.

    Returns
    -------
    MetricSum
    """
    return HMean(*rates_on(("tpr", "tnr"), group, where, filters)).as_sum()


def q_mean(group: str | Iterable[str] | None = None, *, where: dict[str, Any] | None = None,
           **filters: Any) -> MetricSum:
    """``sqrt((FNR^2 + FPR^2) / 2)`` on a slice (convex).

    Parameters
    ----------
    group : str or list of str, optional
        Group columns to expand over: as an objective, the sum over their values; in a
        constraint, one constraint per value.
    where : dict, optional
        Filters as a dict, for column names that are not valid keywords or that name a
        parameter (``group``).
    **filters
        Group column = value (or list of values) restricting the slice.

    Returns
    -------
    MetricSum
    """
    return QMean(*rates_on(("fnr", "fpr"), group, where, filters)).as_sum()


def kld(group: str | Iterable[str] | None = None, *, reference: str = "overall",
        where: dict[str, Any] | None = None, **filters: Any) -> MetricSum:
    """KL-divergence between the true and the predicted positive proportion (convex).

    Parameters
    ----------
    group : str, optional
        Expand over this group column: as an objective, ``sum_g KL(p, ppr_g)``; in a constraint,
        one ``KL(p, ppr_g) <= eps`` per group (KL fairness, Narasimhan et al. 2019, Section 6).
    reference : {"overall", "slice"}, default="overall"
        Whether ``p`` is the positive proportion of all examples or of the slice itself
        (quantification within the slice).
    where : dict, optional
        Filters as a dict, for column names that are not valid keywords or that name a
        parameter (``group``).
    **filters
        Group column = value (or list of values) restricting the slice.

    Returns
    -------
    MetricSum

    Notes
    -----
    The predicted proportion is read within ``[1e-6, 1 - 1e-6]``, so the divergence stays finite
    for the games' steps: a model that predicts no positive at all (or only positives) on a
    slice reads ``p log(p / 1e-6) + (1 - p) log(1 - p)`` (6.2 at ``p = 0.5``) instead of
    infinity.
    """
    if reference not in ("overall", "slice"):
        raise ValueError(f"reference must be 'overall' or 'slice', got {reference!r}.")
    label, ppr = rates_on(("label_rate", "ppr"), group, where, filters)
    return KLD(R.label_rate() if reference == "overall" else label, ppr).as_sum()


def max_of(*rates: Expression | str) -> MetricSum:
    """The largest of several rates (e.g. the worst group error), convex.

    A rate over a bare group column stands for its rate on every value, inside the max:
    ``max_of("error_rate[race]")`` is the worst group error, the same metric as
    ``max_of("error_rate[race=A]", "error_rate[race=B]")`` when race takes the values A and B.

    Parameters
    ----------
    *rates : Expression or str
        Linear rate expressions, e.g. ``"error_rate[race=A]"`` or ``"fnr[race]"``; ratios are
        refused.

    Returns
    -------
    MetricSum
    """
    if not rates:
        raise ValueError("max_of needs at least one rate.")
    return MaxOf(tuple(_linear(r, "max_of") for r in rates)).as_sum()


def min_of(*rates: Expression | str) -> MetricSum:
    """The smallest of several rates, ``-max(-r)``: concave (maximise it as ``-min_of(...)``).

    A rate over a bare group column stands for its rate on every value, inside the min
    (``min_of("tpr[race]")`` is the lowest group TPR).

    Parameters
    ----------
    *rates : Expression or str
        Linear rate expressions; ratios are refused.

    Returns
    -------
    MetricSum
    """
    if not rates:
        raise ValueError("min_of needs at least one rate.")
    return -MaxOf(tuple(-_linear(r, "min_of") for r in rates)).as_sum()


def ratio(numerator: Expression | str, denominator: Expression | str) -> MetricSum:
    """The ratio of two linear rate expressions (sums of these suit ``solver="ratio"``).

    Parameters
    ----------
    numerator, denominator : Expression or str
        Linear rate expressions, e.g. ``"wins"`` and ``"losses"``; ratios are refused.

    Returns
    -------
    MetricSum
        A ratio-class metric; a linear one over a constant denominator.

    Raises
    ------
    ValueError
        When the denominator is the constant 0.
    TypeError
        When the denominator can take both signs (``"ppr - 0.1"``): bounds on the ratio could
        not be multiplied out by it, as :class:`skrate.rates.Ratio` refuses too.
    """
    numerator, denominator = _linear(numerator, "ratio"), _linear(denominator, "ratio")
    if not denominator.terms and denominator.constant == 0:
        raise ValueError("The denominator of ratio() is the constant 0: the ratio is undefined for every model.")
    # the core's division: over a constant, a linear expression (tpr / 2); otherwise a ratio whose
    # denominator of one sign is kept non-negative (-ppr / -npr as ppr / npr), one of both signs refused
    q = numerator / denominator
    return (LinearRate(q) if isinstance(q, Expression) else RatioAtom(q.numerator, q.denominator)).as_sum()


def precision(group: str | Iterable[str] | None = None, *, where: dict[str, Any] | None = None,
              **filters: Any) -> MetricSum:
    """Precision ``tp / ppr`` on a slice, a ratio of rates.

    As a loss to minimise, use ``1 - precision()`` (the metric name ``"precision"``).

    Parameters
    ----------
    group : str or list of str, optional
        Group columns to expand over: as an objective, the sum over their values; in a
        constraint, one constraint per value.
    where : dict, optional
        Filters as a dict, for column names that are not valid keywords or that name a
        parameter (``group``).
    **filters
        Group column = value (or list of values) restricting the slice.

    Returns
    -------
    MetricSum
        A ratio-class metric.
    """
    return ratio(*rates_on(("tp_proportion", "ppr"), group, where, filters))


def rate_function(fn: Callable, rates: Iterable[Expression | str] | str, *, convexity: str = "convex",
                  gradient: Callable | None = None, name: str = "rate_function",
                  cvxpy: Callable | None = None, smooth: bool = True) -> MetricSum:
    """A metric defined by a user function of named rates, with its declared class.

    Parameters
    ----------
    fn : callable
        ``fn(r) -> float`` for the vector ``r`` of the values of ``rates``.
    rates : list of str or Expression
        The rates ``fn`` takes, e.g. ``["tpr", "fpr"]``.
    convexity : {"linear", "convex", "concave", "nonconvex"}, default="convex"
        The class of ``fn`` in the rates on the box ``[0, 1]^k``; it decides which solvers
        apply, and their guarantees rest on it. A ``"linear"`` function is checked to be affine
        and becomes the rate expression with its coefficients (``fn`` at zero and at the unit
        vectors), optimised exactly as if written out. A ``"convex"`` (``"concave"``) one is
        checked at 16 fixed pairs of points of the box, midpoint against the mean: a check
        that catches most wrong declarations, not a proof.
    gradient : callable, optional
        ``gradient(r) -> array``; when omitted, finite differences that evaluate ``fn`` only
        on the box ``[0, 1]^k`` (central inside, one-sided at a rate of 0 or 1).
    name : str, default="rate_function"
        The function's name, as the metric reads (``name(rates)``).
    cvxpy : callable, optional
        The same function of a cvxpy vector of rates (``lambda r: cp.norm(r)``): the xi-player
        then solves its small convex problem with cvxpy, built once and re-solved with new
        multipliers; without it, a box-constrained quasi-Newton method.
    smooth : bool, default=True
        Whether ``fn``'s gradient is continuous. Declare a function with kinks (a maximum of
        rates written by hand) ``smooth=False``: ``solver="auto"`` then avoids Frank-Wolfe,
        whose multipliers, the gradient at the running average, jump between the kink's sides
        and never settle (as for :func:`max_of`).

    Returns
    -------
    MetricSum
        A linear rate expression for ``convexity="linear"``, else the user function.

    Raises
    ------
    ValueError
        For an unknown ``convexity`` or ``"ratio"``, or a function found not to be of its
        declared class.
    """
    if convexity not in CLASSES:
        raise ValueError(f"convexity must be one of {CLASSES}, got {convexity!r}.")
    if convexity == "ratio":
        raise ValueError("A user function cannot be declared a ratio; build ratios with ratio(N, D).")
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {fn!r}.")
    exprs = tuple(_linear(r, "rate_function") for r in ([rates] if isinstance(rates, str) else rates))
    atom = RateFunction(fn, exprs, convexity, gradient, name, cvxpy, bool(smooth))
    if convexity == "linear":
        return LinearRate(atom.linear_expression()).as_sum()
    return atom.as_sum()


# -- constraints --------------------------------------------------------------------------------
def kld_fairness(group: str | Iterable[str], epsilon: float) -> MetricConstraint:
    """``KL(p, ppr_g) <= epsilon`` for every value ``g`` of the group column (``kld[g=a] <= eps``).

    ``p`` is the overall positive proportion, so the constraint keeps every group's positive
    prediction rate near it: a smooth form of demographic parity. The same constraint as
    ``kld(group) <= epsilon``, labelled shorter.

    Parameters
    ----------
    group : str or list of str
        Group column(s) to expand over at fit time: one constraint per value (per combination
        of values when several columns are given).
    epsilon : float
        Bound on each group's KL-divergence.

    Returns
    -------
    MetricConstraint
        Convex; reads ``kld[group=value] <= epsilon`` once expanded.
    """
    epsilon = _finite(epsilon, "epsilon of kld_fairness")
    if epsilon < 0:
        raise ValueError(f"The epsilon of kld_fairness must be >= 0, got {epsilon:g}: a KL-divergence is never "
                         "negative, so no classifier could meet the constraint.")
    group = parity_columns(group)
    return MetricConstraint(kld(group) - epsilon, f"kld{{slice}} <= {epsilon:g}", Slice.make({}, group))


def g_mean_at_least(value: float, group: str | Iterable[str] | None = None, *,
                    where: dict[str, Any] | None = None, **filters: Any) -> MetricConstraint:
    """``G-mean >= value`` on a slice (one per value of ``group`` when given).

    Parameters
    ----------
    value : float
        Lower bound on ``sqrt(TPR * TNR)``.
    group : str or list of str, optional
        Group columns to expand over: one constraint per value.
    where : dict, optional
        Filters as a dict, for column names that are not valid keywords or that name a
        parameter (``group``).
    **filters
        Group column = value (or list of values) restricting the slice.

    Returns
    -------
    MetricConstraint
        Convex; reads ``g_mean[group=value] >= value`` once expanded.
    """
    value = _finite(value, "value of g_mean_at_least")
    if value > 1:
        raise ValueError(f"The value of g_mean_at_least must be at most 1, got {value:g}: the G-mean "
                         "sqrt(TPR * TNR) lies in [0, 1], so no classifier could meet the constraint.")
    tpr, tnr = rates_on(("tpr", "tnr"), group, where, filters)  # the slice, built once
    return MetricConstraint(GMean(tpr, tnr).as_sum() - (1.0 - value), f"g_mean{{slice}} >= {value:g}",
                            tpr.rates[0].slice)


def predictive_parity(group: str | Iterable[str], epsilon: float) -> list[MetricConstraint]:
    """``|precision_g - precision| <= epsilon`` for every value of the group column (ratios).

    Parameters
    ----------
    group : str or list of str
        Group column(s) to expand over at fit time: one constraint per value (per combination
        of values when several columns are given).
    epsilon : float
        Allowed gap between a group's precision and the overall one.

    Returns
    -------
    list of MetricConstraint
        Two ratio-class constraints, one per side, for ``solver="ratio"`` (which
        ``"auto"`` picks).
    """
    epsilon = _finite(epsilon, "epsilon of predictive_parity")
    group = parity_columns(group)
    gap = precision(group) - precision()
    where = Slice.make({}, group)
    return [MetricConstraint(gap - epsilon, f"precision{{slice}} - precision <= {epsilon:g}", where),
            MetricConstraint(-gap - epsilon, f"precision - precision{{slice}} <= {epsilon:g}", where)]


def f_measure_parity(protected: dict, other: dict, epsilon: float, beta: float = 1.0) -> MetricConstraint:
    """``F(protected) >= F(other) - epsilon`` between two slices given as filter dicts (ratios).

    Parameters
    ----------
    protected, other : dict
        Filters of the two slices, e.g. ``{"sex": "Female"}`` and ``{"sex": "Male"}``.
    epsilon : float
        How far the protected slice's F-measure may fall below the other's.
    beta : float, default=1.0
        Weight of recall against precision in ``F_beta``.

    Returns
    -------
    MetricConstraint
        A ratio-class constraint, for ``solver="ratio"`` (which ``"auto"`` picks).
    """
    epsilon = _finite(epsilon, "epsilon of f_measure_parity")
    for name, value in (("protected", protected), ("other", other)):
        if not isinstance(value, Mapping):
            raise TypeError(f"The {name} slice of f_measure_parity is a dict of group column filters, such as "
                            f"{{'sex': 'Female'}} ({{}} for every row), got {value!r}.")
    # F_other - F_prot - eps = (1 - F_prot) - (1 - F_other) - eps
    # where=: a filter on a column named like a parameter of f_measure ("group", "beta")
    # each slice read once (a generator of values would be empty on a second reading) and
    # written as every slice is: f_measure[g=a|b]
    protected, other = Slice.make(protected), Slice.make(other)
    if protected == other:
        raise ValueError(f"f_measure_parity compares two slices, but both are [{protected}]: every classifier "
                         "would meet it. Pass the protected slice and the one it is compared with.")
    gap = f_measure(beta, where=dict(protected.filters)) - f_measure(beta, where=dict(other.filters))
    label = f"f_measure[{protected}] >= f_measure[{other}] {'-' if epsilon >= 0 else '+'} {abs(epsilon):g}"
    return MetricConstraint(gap - epsilon, label)
