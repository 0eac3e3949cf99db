"""The named rates users write: ``tpr(race="Black")``, ``ppr(group="sex")``, ``precision()``.

Every function takes group filters as keywords (a list means "any of"; several keywords
intersect), ``label=0|1`` and ``baseline=0|1`` to slice by the true label or the baseline
model's decision, and ``group=`` naming one or more group columns to expand over: a
constraint containing ``tpr(group="race")`` stands for one constraint per race.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Iterable

from ._expression import Expression, Rate, Ratio
from ._slice import Slice, as_columns


def _rate(kind: str, group: str | Iterable[str] | None, filters: dict[str, Any]) -> Expression:
    return Expression.of(Rate(kind, Slice.make(filters, as_columns(group))))


def rates_on(kinds: Iterable[str], group: str | Iterable[str] | None, where: dict[str, Any] | None,
             filters: dict[str, Any]) -> list[Expression]:
    """The rates ``kinds`` on one slice, built once: a generator given as ``group`` or as a
    filter's values would be empty when read for a second rate."""
    on = Slice.make(_filters(where, filters), as_columns(group))
    return [Expression.of(Rate(kind, on)) for kind in kinds]


def _ratio(numerator: str, denominator: str, group: str | Iterable[str] | None,
           where: dict[str, Any] | None, filters: dict[str, Any]) -> Ratio:
    """``numerator / denominator`` on one slice (:func:`rates_on`)."""
    return Ratio(*rates_on((numerator, denominator), group, where, filters))


def _filters(where: dict[str, Any] | None, filters: dict[str, Any]) -> dict[str, Any]:
    if where is not None and not isinstance(where, Mapping):
        raise TypeError(f"where= takes a dict of column: value (or list of values), got {type(where).__name__} "
                        f"{where!r}.")
    # Group column names are strings (as the group table stores them): 0 and "0" are one column.
    where = {str(k): v for k, v in (where or {}).items()}
    both = set(where) & set(filters)
    if both:
        raise ValueError(f"Column {sorted(both)[0]!r} is filtered twice (in where= and as a keyword).")
    return {**where, **filters}


def _rate_function(kind: str, doc: str) -> Callable[..., Expression]:
    def rate(group: str | Iterable[str] | None = None, *, where: dict[str, Any] | None = None,
             **filters: Any) -> Expression:
        return _rate(kind, group, _filters(where, filters))

    rate.__name__ = rate.__qualname__ = kind
    rate.__doc__ = (
        f"The {doc} on a slice.\n\n"
        "Parameters\n----------\n"
        "group : str or list of str, optional\n"
        "    Group columns to expand over (one constraint per value). Names are matched as\n"
        "    strings, so an integer column name ``0`` may be given as ``0`` or ``\"0\"``.\n"
        "where : dict, optional\n"
        "    Filters as a dict, for column names that are not valid keywords (or ``group``).\n"
        "**filters\n"
        "    Group column = value (or list of values); ``label`` and ``baseline`` take 0 or 1.\n\n"
        "Returns\n-------\nExpression\n"
    )
    return rate


ppr = _rate_function("ppr", "positive prediction rate P(yhat = 1)")
npr = _rate_function("npr", "negative prediction rate P(yhat = 0)")
tpr = _rate_function("tpr", "true positive rate (recall) P(yhat = 1 | y = 1)")
fnr = _rate_function("fnr", "false negative rate P(yhat = 0 | y = 1)")
fpr = _rate_function("fpr", "false positive rate P(yhat = 1 | y = 0)")
tnr = _rate_function("tnr", "true negative rate P(yhat = 0 | y = 0)")
accuracy = _rate_function("accuracy", "accuracy P(yhat = y)")
error_rate = _rate_function("error_rate", "error rate P(yhat != y)")
tp_proportion = _rate_function("tp_proportion", "proportion of true positives P(yhat = 1, y = 1)")
label_rate = _rate_function("label_rate", "proportion of positive labels P(y = 1), a constant of the data")
baseline_ppr = _rate_function("baseline_ppr", "baseline model's positive prediction rate, a constant of the data")
churn = _rate_function("churn", "churn P(yhat != baseline)")
wins = _rate_function("wins", "win rate P(yhat = y, baseline != y)")
losses = _rate_function("losses", "loss rate P(yhat != y, baseline = y)")
# Loss-only churn: the changes from the baseline that are mistakes; the same rate as losses.
loss_churn = losses
coverage = ppr
recall = tpr


def precision(group: str | Iterable[str] | None = None, *, where: dict[str, Any] | None = None,
              **filters: Any) -> Ratio:
    """Precision P(y = 1 | yhat = 1) on a slice, a ratio of two rates.

    In a constraint ``precision >= c`` becomes ``tp_proportion - c * ppr >= 0`` (exact,
    Cotter et al., 2019).

    Parameters
    ----------
    group : str or list of str, optional
        Group columns to expand over (one constraint per value).
    where : dict, optional
        Filters as a dict, for column names that are not valid keywords (or ``group``).
    **filters
        Group column = value (or list of values); ``label`` and ``baseline`` take 0 or 1.

    Returns
    -------
    Ratio
        ``tp_proportion / ppr`` on the slice.
    """
    return _ratio("tp_proportion", "ppr", group, where, filters)


def win_loss_ratio(group: str | Iterable[str] | None = None, *, where: dict[str, Any] | None = None,
                   **filters: Any) -> Ratio:
    """Win-loss ratio against the baseline model, ``wins / losses``, on a slice.

    In a constraint ``win_loss_ratio >= c`` becomes ``wins - c * losses >= 0``.

    Parameters
    ----------
    group : str or list of str, optional
        Group columns to expand over (one constraint per value).
    where : dict, optional
        Filters as a dict, for column names that are not valid keywords (or ``group``).
    **filters
        Group column = value (or list of values); ``label`` and ``baseline`` take 0 or 1.

    Returns
    -------
    Ratio
        ``wins / losses`` on the slice.
    """
    return _ratio("wins", "losses", group, where, filters)


def f1(group: str | Iterable[str] | None = None, *, where: dict[str, Any] | None = None,
       **filters: Any) -> Ratio:
    """F1 score ``2 TP / (2 TP + FP + FN)`` on a slice, a ratio of rates:
    ``2 * tp_proportion / (label_rate + ppr)``.

    In a constraint ``f1 >= c`` becomes ``2 * tp_proportion - c * label_rate - c * ppr >= 0``,
    exact wherever the slice holds a positive label or prediction. Other F-beta scores are
    metrics of :mod:`skrate.generalized` (``f_measure(beta)``).

    Parameters
    ----------
    group : str or list of str, optional
        Group columns to expand over (one constraint per value).
    where : dict, optional
        Filters as a dict, for column names that are not valid keywords (or ``group``).
    **filters
        Group column = value (or list of values); ``label`` and ``baseline`` take 0 or 1.

    Returns
    -------
    Ratio
        ``2 * tp_proportion / (label_rate + ppr)`` on the slice.
    """
    tp, positives, predicted = rates_on(("tp_proportion", "label_rate", "ppr"), group, where, filters)
    return Ratio(2.0 * tp, positives + predicted)


RATE_FUNCTIONS = {
    "ppr": ppr, "coverage": coverage, "npr": npr, "tpr": tpr, "recall": recall, "fnr": fnr,
    "fpr": fpr, "tnr": tnr, "accuracy": accuracy, "error_rate": error_rate, "error": error_rate,
    "tp_proportion": tp_proportion, "label_rate": label_rate, "baseline_ppr": baseline_ppr, "churn": churn, "wins": wins,
    "losses": losses, "loss_churn": loss_churn, "precision": precision, "win_loss_ratio": win_loss_ratio,
    "f1": f1,
}
# the named ratios: numerator rate, denominator rates (each of coefficient 1), and the numerator's
# coefficient in the ratio of scale 1
RATIO_NAMES = {("tp_proportion", ("ppr",)): ("precision", 1.0), ("wins", ("losses",)): ("win_loss_ratio", 1.0),
               ("tp_proportion", ("label_rate", "ppr")): ("f1", 2.0)}


def named_ratio(ratio: Ratio) -> tuple[str, Slice, float, float] | None:
    """``(name, slice, a, b)`` of a named ratio scaled, ``a name[slice]`` written as ``N / (b D)``
    with ``N / D`` the ratio of its definition (``precision``: ``tp_proportion / ppr``; ``f1``:
    ``2 tp_proportion / (label_rate + ppr)``), else None."""
    num, den = ratio.numerator, ratio.denominator
    if len(num.terms) != 1 or not den.terms or num.constant or den.constant:
        return None
    (rn, a), b = num.terms[0], den.terms[0][1]
    kinds = tuple(sorted(rd.kind for rd, _ in den.terms))
    named = RATIO_NAMES.get((rn.kind, kinds))
    if named is None or any(rd.slice != rn.slice or c != b for rd, c in den.terms) or len(set(kinds)) != len(kinds):
        return None
    return named[0], rn.slice, a / named[1], b


def display_ratio(ratio: Ratio) -> str:
    """Named form (``0.5 * precision[race=A]``) where the ratio is a named one, else ``(N) / (D)``.

    Either parses back to an equal ratio: a named one only when its denominator is the bare rate,
    since ``tp / (2 ppr)`` and ``0.5 tp / ppr`` are one ratio but not one linear form.
    """
    named = named_ratio(ratio)
    if named is not None and named[3] == 1.0:
        name, where, scale, _ = named
        body = str(Rate("ppr", where)).replace("ppr", name, 1)
        return body if scale == 1.0 else "-" + body if scale == -1.0 else f"{Expression((), scale)} * {body}"
    return f"({ratio.numerator}) / ({ratio.denominator})"
