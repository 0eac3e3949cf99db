"""Accept specs the way users write them: objects, strings, lists of both."""

from __future__ import annotations

from ._expression import Constraint, Expression, Ratio
from ._parser import parse_constraint, parse_expression


def as_constraints(spec) -> list[Constraint]:
    """Flatten ``None``, a constraint, a string, or (nested) lists of them into constraints.

    Goal helpers return lists, so ``[*equal_opportunity("race"), "ppr >= 0.3"]`` and
    ``[equal_opportunity("race"), "ppr >= 0.3"]`` are both accepted.

    Parameters
    ----------
    spec : None, Constraint, str, or (nested) list or tuple of them
        Strings are parsed with :func:`parse_constraint`.

    Returns
    -------
    list of Constraint
        In the order given; empty for None.

    Raises
    ------
    TypeError
        For a rate expression without a comparison, or any other object.
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
    raise TypeError(f"A constraint must be a Constraint, a string such as 'tpr[race] >= 0.9 * tpr', "
                    f"or a list of them; got {type(spec).__name__}: {spec!r}.")


def as_expression(spec) -> Expression | Ratio:
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
