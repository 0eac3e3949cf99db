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

Group = str | Iterable[str]


def _lower(kind: str, group: Group, slack: float, multiplicative: bool, reference=None) -> Constraint:
    """r_g >= reference - slack, or r_g >= (1 - slack) * reference."""
    rate = RATE_FUNCTIONS[kind]
    ref = rate() if reference is None else reference
    if multiplicative:
        return rate(group=group) >= (1.0 - slack) * ref
    return rate(group=group) >= ref - slack


def _upper(kind: str, group: Group, slack: float, multiplicative: bool, reference=None) -> Constraint:
    """r_g <= reference + slack, or reference >= (1 - slack) * r_g."""
    rate = RATE_FUNCTIONS[kind]
    ref = rate() if reference is None else reference
    if multiplicative:
        return ref >= (1.0 - slack) * rate(group=group)
    return rate(group=group) <= ref + slack


def _check_slack(slack: float, multiplicative: bool) -> None:
    if not isinstance(slack, Real) or isinstance(slack, bool):
        raise TypeError(f"slack must be a real number >= 0, got {type(slack).__name__} {slack!r}; "
                        "pass a number such as slack=0.05.")
    if not 0 <= slack or (multiplicative and slack >= 1):
        raise ValueError(f"slack must be >= 0{' and < 1 when multiplicative' if multiplicative else ''}, got {slack}.")


def _parity(kinds: tuple[str, ...], group: Group, slack: float, multiplicative: bool, two_sided: bool):
    _check_slack(slack, multiplicative)
    out = []
    for kind in kinds:
        out.append(_lower(kind, group, slack, multiplicative))
        if two_sided:
            out.append(_upper(kind, group, slack, multiplicative))
    return out


def statistical_parity(group: Group, slack: float = 0.05, *, multiplicative: bool = False) -> list[Constraint]:
    """Demographic parity: every group's positive prediction rate close to the overall one."""
    return _parity(("ppr",), group, slack, multiplicative, True)


demographic_parity = statistical_parity


def equal_opportunity(group: Group, slack: float = 0.05, *, multiplicative: bool = False,
                      two_sided: bool = False) -> list[Constraint]:
    """Every group's true positive rate at least the overall one less the slack (both sides if ``two_sided``)."""
    return _parity(("tpr",), group, slack, multiplicative, two_sided)


def equal_odds(group: Group, slack: float = 0.05, *, multiplicative: bool = False) -> list[Constraint]:
    """Every group's true and false positive rates close to the overall ones."""
    return _parity(("tpr", "fpr"), group, slack, multiplicative, True)


def equal_accuracy(group: Group, slack: float = 0.05, *, multiplicative: bool = False) -> list[Constraint]:
    """Every group's accuracy close to the overall accuracy."""
    return _parity(("accuracy",), group, slack, multiplicative, True)


def _minimum(kind: str, value: float, group: Group | None) -> list[Constraint]:
    if not isinstance(value, Real) or isinstance(value, bool):
        raise TypeError(f"A minimum {kind} must be a number in [0, 1], got {type(value).__name__} {value!r}.")
    if not 0 <= value <= 1:
        raise ValueError(f"A minimum {kind} must lie in [0, 1], got {value}.")
    return [RATE_FUNCTIONS[kind](group=group) >= value]


def minimum_coverage(value: float, group: Group | None = None) -> list[Constraint]:
    """Positive prediction rate at least ``value`` (in every group when ``group`` is given)."""
    return _minimum("ppr", value, group)


def minimum_accuracy(value: float, group: Group | None = None) -> list[Constraint]:
    """Accuracy at least ``value`` (in every group when ``group`` is given)."""
    return _minimum("accuracy", value, group)


def minimum_recall(value: float, group: Group | None = None) -> list[Constraint]:
    """True positive rate at least ``value`` (in every group when ``group`` is given)."""
    return _minimum("tpr", value, group)


def accurate_coverage(group: Group, slack: float = 0.05) -> list[Constraint]:
    """Each group's positive prediction rate within ``slack`` of its proportion of positive labels."""
    _check_slack(slack, False)
    label = RATE_FUNCTIONS["label_rate"](group=group)
    ppr = RATE_FUNCTIONS["ppr"](group=group)
    return [ppr >= label - slack, ppr <= label + slack]


def no_lost_benefits(group: Group, slack: float = 0.0, *, multiplicative: bool = False) -> list[Constraint]:
    """Each group's positive prediction rate at least the baseline model's on that group (needs ``baseline``)."""
    _check_slack(slack, multiplicative)
    return [_lower("ppr", group, slack, multiplicative, RATE_FUNCTIONS["baseline_ppr"](group=group))]


def not_worse_off(group: Group, slack: float = 0.0) -> list[Constraint]:
    """Each group's accuracy at least the baseline model's on that group, i.e. wins - losses >= -slack."""
    _check_slack(slack, False)
    return [RATE_FUNCTIONS["wins"](group=group) - RATE_FUNCTIONS["losses"](group=group) >= -slack]
