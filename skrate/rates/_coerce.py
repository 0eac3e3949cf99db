"""Accept specs the way users write them: objects, strings, lists of both."""

from __future__ import annotations

from ._expression import Constraint, Expression, Ratio
from ._parser import parse_constraint, parse_expression


def as_constraints(spec: Constraint | str | list | tuple | None) -> list[Constraint]:
    """Flatten ``None``, a constraint, a string, or (nested) lists of them into constraints.

    Goal helpers return lists, so ``[*equal_opportunity("race"), "ppr >= 0.3"]`` and
    ``[equal_opportunity("race"), "ppr >= 0.3"]`` are both accepted.

    Parameters
    ----------
    spec : None, Constraint, str, or (nested) list or tuple of them
        Strings are parsed with :func:`parse_constraint`. A metric constraint of
        :mod:`skrate.generalized` that bounds ratios over one denominator (``precision() >=
        0.8``, ``f_measure() <= 0.3``) is taken as the rate constraint it states.

    Returns
    -------
    list of Constraint
        In the order given; empty for None.

    Raises
    ------
    TypeError
        For a rate expression without a comparison, a bool (what ``a == b`` gives: an
        equality is written as two constraints), another metric constraint, or any other
        object.
    ValueError
        For a string that is not a valid constraint (:class:`SpecParseError`, a subclass,
        pointing at the position).
    """
    if spec is None:
        return []
    if isinstance(spec, Constraint):
        return [spec]
    if isinstance(spec, str):
        return [parse_constraint(spec)]
    if isinstance(spec, (list, tuple)):
        return [c for item in spec for c in as_constraints(item)]
    if isinstance(spec, (Expression, Ratio)):
        raise TypeError(f"{spec} is a rate expression, not a constraint: compare it with <= or >= a bound.")
    if isinstance(spec, bool):  # what a == b between expressions gives: they compare as values
        raise TypeError(f"A constraint must be a Constraint or a string, got the bool {spec}: == between rate "
                        "expressions compares them as objects (the same expression or not) and states no "
                        "constraint. Write an equality a == b as two constraints, [a <= b, a >= b], or "
                        "bound the gap on both sides, [a - b <= 0.01, a - b >= -0.01].")
    from ..generalized import MetricConstraint  # it builds on this module: imported when needed
    from ..generalized._program import rate_constraint

    if isinstance(spec, MetricConstraint):
        stated = rate_constraint(spec)
        if stated is not None:  # a bound on ratios over one denominator is a rate constraint
            return [stated]
        raise TypeError(f"{spec} is a metric constraint, a function of rates as MetricOptimizer takes them; "
                        "only rate constraints are taken here, and bounds on ratios over one denominator "
                        "(precision() >= 0.8, f_measure() <= 0.3). Evaluate metric constraints with "
                        "skrate.metrics.make_violation_scorer or MetricOptimizer.metric_values.")
    raise TypeError(f"A constraint must be a Constraint, a string such as 'tpr[race] >= 0.9 * tpr', "
                    f"or a list of them; got {type(spec).__name__}: {spec!r}.")


def as_expression(spec: Expression | Ratio | str) -> Expression | Ratio:
    """A rate expression from an object or a string (``"error"``, ``"fpr - 0.5 * tpr"``).

    Parameters
    ----------
    spec : Expression, Ratio or str
        Strings are parsed with :func:`parse_expression`.

    Returns
    -------
    Expression or Ratio
        ``spec`` itself when it is already an expression or a ratio.

    Raises
    ------
    TypeError
        For any other object.
    ValueError
        For a string that is not a valid rate expression (:class:`SpecParseError`, a
        subclass, pointing at the position).
    """
    if isinstance(spec, str):
        return parse_expression(spec)
    if isinstance(spec, (Expression, Ratio)):
        return spec
    raise TypeError(f"A rate expression must be an Expression or a string such as 'error'; got {spec!r}.")
