"""Goal helpers: the fairness and policy goals of Cotter et al. (2019), Tables 1-2.

Each helper returns a list of :class:`~skrate.rates.Constraint` and expands over every value
of the named group column(s) at fit time. ``slack`` is additive by default
(``|r_g - r| <= slack``); with ``multiplicative=True`` it bounds the ratio instead
(``r_g >= (1 - slack) * r``, and for two-sided goals also ``r >= (1 - slack) * r_g``, the
"four-fifths rule" at ``slack=0.2``).

References
----------
A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization with
Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and Other Goals.
JMLR 20(172), 2019.
"""

from __future__ import annotations

from numbers import Real
from typing import Iterable

from ._expression import Constraint
from ._functions import RATE_FUNCTIONS
from ._slice import as_columns

Group = str | Iterable[str]


def _lower(kind: str, group: Group, slack: float, multiplicative: bool, reference=None) -> Constraint:
    """r_g >= reference - slack, or r_g >= (1 - slack) * reference."""
    rate = RATE_FUNCTIONS[kind]
    ref = rate() if reference is None else reference
    if multiplicative:
        return rate(group=group) >= (1.0 - slack) * ref
    return rate(group=group) >= ref - slack


def _upper(kind: str, group: Group, slack: float, multiplicative: bool) -> Constraint:
    """r_g <= r + slack, or r >= (1 - slack) * r_g, ``r`` the overall rate."""
    rate = RATE_FUNCTIONS[kind]
    ref = rate()
    if multiplicative:
        return ref >= (1.0 - slack) * rate(group=group)
    return rate(group=group) <= ref + slack


def _check_slack(slack: float, multiplicative: bool) -> None:
    if not isinstance(slack, Real) or isinstance(slack, bool):
        raise TypeError(f"slack must be a real number >= 0, got {type(slack).__name__} {slack!r}; "
                        "pass a number such as slack=0.05.")
    if not 0 <= slack or (multiplicative and slack >= 1):
        raise ValueError(f"slack must be >= 0{' and < 1 when multiplicative' if multiplicative else ''}, got {slack}.")


def parity_columns(group: Group) -> tuple[str, ...]:
    """The group columns a parity goal compares, read once (each constraint names them again);
    none is refused: without a column, ``r[group]`` is the overall rate and every constraint would
    hold trivially."""
    columns = as_columns(group)
    if columns in ((), ("",)):
        raise ValueError(f"A parity goal needs the group column(s) to compare, got group={group!r}; "
                         "pass a column name such as group='race', or a list of names.")
    return columns


def _parity(kinds: tuple[str, ...], group: Group, slack: float, multiplicative: bool, two_sided: bool):
    _check_slack(slack, multiplicative)
    columns = parity_columns(group)
    out = []
    for kind in kinds:
        out.append(_lower(kind, columns, slack, multiplicative))
        if two_sided:
            out.append(_upper(kind, columns, slack, multiplicative))
    return out


def statistical_parity(group: Group, slack: float = 0.05, *, multiplicative: bool = False) -> list[Constraint]:
    """Demographic parity: every group's positive prediction rate close to the overall one.

    ``demographic_parity`` is the same function.

    Parameters
    ----------
    group : str or list of str
        Group column(s) to expand over at fit time: one constraint per value (per combination
        of values when several columns are given).
    slack : float, default=0.05
        Allowed gap, ``>= 0``: ``|ppr[g] - ppr| <= slack``. When multiplicative, a fraction
        ``< 1``: ``ppr[g] >= (1 - slack) * ppr`` and ``ppr >= (1 - slack) * ppr[g]``, so
        ``slack=0.2`` bounds the ratio by 0.8 in both directions.
    multiplicative : bool, default=False
        Bound the ratio of the rates instead of their difference.

    Returns
    -------
    list of Constraint
        Two constraints: ``ppr[group]`` at least and at most the overall ``ppr``, within
        the slack.

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization with
    Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and Other Goals.
    JMLR 20(172), 2019.
    """
    return _parity(("ppr",), group, slack, multiplicative, True)


demographic_parity = statistical_parity


def equal_opportunity(group: Group, slack: float = 0.05, *, multiplicative: bool = False,
                      two_sided: bool = False) -> list[Constraint]:
    """Every group's true positive rate at least the overall one less the slack.

    Parameters
    ----------
    group : str or list of str
        Group column(s) to expand over at fit time: one constraint per value (per combination
        of values when several columns are given).
    slack : float, default=0.05
        Allowed gap, ``>= 0``: ``tpr[g] >= tpr - slack``. When multiplicative, a fraction
        ``< 1``: ``tpr[g] >= (1 - slack) * tpr``.
    multiplicative : bool, default=False
        Bound the ratio of the rates instead of their difference.
    two_sided : bool, default=False
        Also bound the group's rate from above (``tpr[g] <= tpr + slack``, or
        ``tpr >= (1 - slack) * tpr[g]``).

    Returns
    -------
    list of Constraint
        One constraint, or two when ``two_sided``.

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization with
    Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and Other Goals.
    JMLR 20(172), 2019.
    """
    return _parity(("tpr",), group, slack, multiplicative, two_sided)


def equal_odds(group: Group, slack: float = 0.05, *, multiplicative: bool = False) -> list[Constraint]:
    """Every group's true and false positive rates close to the overall ones (equalized odds).

    Parameters
    ----------
    group : str or list of str
        Group column(s) to expand over at fit time: one constraint per value (per combination
        of values when several columns are given).
    slack : float, default=0.05
        Allowed gap, ``>= 0``, for both rates: ``|tpr[g] - tpr| <= slack`` and
        ``|fpr[g] - fpr| <= slack``. When multiplicative, a fraction ``< 1`` bounding the ratios
        in both directions.
    multiplicative : bool, default=False
        Bound the ratio of the rates instead of their difference.

    Returns
    -------
    list of Constraint
        Four constraints: ``tpr`` from below and above, then ``fpr`` from below and above.

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization with
    Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and Other Goals.
    JMLR 20(172), 2019.
    """
    return _parity(("tpr", "fpr"), group, slack, multiplicative, True)


def equal_accuracy(group: Group, slack: float = 0.05, *, multiplicative: bool = False) -> list[Constraint]:
    """Every group's accuracy close to the overall accuracy.

    Parameters
    ----------
    group : str or list of str
        Group column(s) to expand over at fit time: one constraint per value (per combination
        of values when several columns are given).
    slack : float, default=0.05
        Allowed gap, ``>= 0``: ``|accuracy[g] - accuracy| <= slack``. When multiplicative, a
        fraction ``< 1`` bounding the ratio in both directions.
    multiplicative : bool, default=False
        Bound the ratio of the rates instead of their difference.

    Returns
    -------
    list of Constraint
        Two constraints: ``accuracy[group]`` at least and at most the overall accuracy, within
        the slack.

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization with
    Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and Other Goals.
    JMLR 20(172), 2019.
    """
    return _parity(("accuracy",), group, slack, multiplicative, True)


def _minimum(kind: str, value: float, group: Group | None) -> list[Constraint]:
    if not isinstance(value, Real) or isinstance(value, bool):
        raise TypeError(f"A minimum {kind} must be a number in [0, 1], got {type(value).__name__} {value!r}.")
    if not 0 <= value <= 1:
        raise ValueError(f"A minimum {kind} must lie in [0, 1], got {value}.")
    return [RATE_FUNCTIONS[kind](group=group) >= value]


def minimum_coverage(value: float, group: Group | None = None) -> list[Constraint]:
    """Positive prediction rate at least ``value`` (in every group when ``group`` is given).

    Parameters
    ----------
    value : float
        The lower bound, in ``[0, 1]``.
    group : str or list of str, default=None
        Group column(s) to expand over at fit time: one constraint per value (per combination
        of values when several columns are given). None constrains the overall rate.

    Returns
    -------
    list of Constraint
        The single constraint ``ppr[group] >= value`` (``ppr >= value`` without a group).

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization with
    Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and Other Goals.
    JMLR 20(172), 2019.
    """
    return _minimum("ppr", value, group)


def minimum_accuracy(value: float, group: Group | None = None) -> list[Constraint]:
    """Accuracy at least ``value`` (in every group when ``group`` is given).

    Parameters
    ----------
    value : float
        The lower bound, in ``[0, 1]``.
    group : str or list of str, default=None
        Group column(s) to expand over at fit time: one constraint per value (per combination
        of values when several columns are given). None constrains the overall rate.

    Returns
    -------
    list of Constraint
        The single constraint ``accuracy[group] >= value`` (``accuracy >= value`` without a group).

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization with
    Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and Other Goals.
    JMLR 20(172), 2019.
    """
    return _minimum("accuracy", value, group)


def minimum_recall(value: float, group: Group | None = None) -> list[Constraint]:
    """True positive rate at least ``value`` (in every group when ``group`` is given).

    Parameters
    ----------
    value : float
        The lower bound, in ``[0, 1]``.
    group : str or list of str, default=None
        Group column(s) to expand over at fit time: one constraint per value (per combination
        of values when several columns are given). None constrains the overall rate.

    Returns
    -------
    list of Constraint
        The single constraint ``tpr[group] >= value`` (``tpr >= value`` without a group).

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization with
    Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and Other Goals.
    JMLR 20(172), 2019.
    """
    return _minimum("tpr", value, group)


def accurate_coverage(group: Group, slack: float = 0.05) -> list[Constraint]:
    """Each group's positive prediction rate within ``slack`` of its proportion of positive labels.

    Parameters
    ----------
    group : str or list of str
        Group column(s) to expand over at fit time: one constraint per value (per combination
        of values when several columns are given).
    slack : float, default=0.05
        Allowed gap, ``>= 0``: ``|ppr[g] - label_rate[g]| <= slack`` (additive only).

    Returns
    -------
    list of Constraint
        Two constraints: ``ppr[group]`` at least and at most ``label_rate[group]``, within the
        slack.

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization with
    Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and Other Goals.
    JMLR 20(172), 2019.
    """
    _check_slack(slack, False)
    group = as_columns(group)  # read once: both rates name the columns
    label = RATE_FUNCTIONS["label_rate"](group=group)
    ppr = RATE_FUNCTIONS["ppr"](group=group)
    return [ppr >= label - slack, ppr <= label + slack]


def no_lost_benefits(group: Group, slack: float = 0.0, *, multiplicative: bool = False) -> list[Constraint]:
    """Each group's positive prediction rate at least the baseline model's on that group.

    The baseline's decisions are given to ``fit`` as ``baseline``.

    Parameters
    ----------
    group : str or list of str
        Group column(s) to expand over at fit time: one constraint per value (per combination
        of values when several columns are given).
    slack : float, default=0.0
        Allowed loss, ``>= 0``: ``ppr[g] >= baseline_ppr[g] - slack``. When multiplicative, a
        fraction ``< 1``: ``ppr[g] >= (1 - slack) * baseline_ppr[g]``.
    multiplicative : bool, default=False
        Bound the ratio of the rates instead of their difference.

    Returns
    -------
    list of Constraint
        The single constraint ``ppr[group] >= baseline_ppr[group]``, less the slack.

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization with
    Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and Other Goals.
    JMLR 20(172), 2019.
    """
    _check_slack(slack, multiplicative)
    group = as_columns(group)  # read once: both rates name the columns
    return [_lower("ppr", group, slack, multiplicative, RATE_FUNCTIONS["baseline_ppr"](group=group))]


def not_worse_off(group: Group, slack: float = 0.0) -> list[Constraint]:
    """Each group's accuracy at least the baseline model's on that group.

    The accuracy gained over the baseline on a slice is ``wins - losses``, so the constraint
    is ``wins[g] - losses[g] >= -slack``; the baseline's decisions are given to ``fit`` as
    ``baseline``.

    Parameters
    ----------
    group : str or list of str
        Group column(s) to expand over at fit time: one constraint per value (per combination
        of values when several columns are given).
    slack : float, default=0.0
        Allowed loss of accuracy, ``>= 0`` (additive only).

    Returns
    -------
    list of Constraint
        The single constraint ``wins[group] - losses[group] >= -slack``.

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization with
    Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and Other Goals.
    JMLR 20(172), 2019.
    """
    _check_slack(slack, False)
    group = as_columns(group)  # read once: both rates name the columns
    return [RATE_FUNCTIONS["wins"](group=group) - RATE_FUNCTIONS["losses"](group=group) >= -slack]
