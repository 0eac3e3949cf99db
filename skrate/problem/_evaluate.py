"""Evaluate constraints on given decisions: the shared core of every report and audit."""

from __future__ import annotations

import numpy as np

from ..rates import Constraint, Expression, Ratio
from ._compile import RateData, compile_expressions, expand_constraints


def evaluate_term(term: Expression | Ratio, data: RateData, decisions: np.ndarray) -> float:
    """Value of an expression or ratio for 0/1 or expected decisions (NaN for a zero denominator)."""
    if isinstance(term, Ratio):
        A, b = compile_expressions([term.numerator, term.denominator], data)
        num, den = A @ decisions + b
        return float(num / den) if den > 0 else float("nan")
    A, b = compile_expressions([term], data)
    return float((A @ decisions + b)[0])


def _sides(constraints: list[Constraint], data: RateData, decisions: np.ndarray):
    """(constraint, row) per expanded constraint, the row holding its text and both sides' values."""
    for con in expand_constraints(constraints, data.groups):
        yield con, {"constraint": str(con), "lhs": evaluate_term(con.lhs, data, decisions),
                    "rhs": evaluate_term(con.rhs, data, decisions)}


def constraint_rows(constraints: list[Constraint], data: RateData, decisions: np.ndarray) -> list[dict]:
    """One row per (expanded) constraint: its text, both sides' values and the violation ``g``.

    ``decisions`` are 0/1 labels or probabilities of predicting 1 (rates then hold in
    expectation). The violation is the canonical ``g`` of ``g <= 0``: positive when broken.
    For a ratio it is the linear rearrangement the solvers and margins work with (e.g.
    ``ppr * (c - precision)``); reports use :func:`violation_rows` instead.
    """
    return [{**row, "violation": evaluate_term(con.expression, data, decisions)}
            for con, row in _sides(constraints, data, decisions)]


def constraint_violation(constraint: Constraint, lhs, rhs):
    """Violation of ``constraint`` in its own units: ``lhs - rhs`` for ``<=``, ``rhs - lhs`` for ``>=``.

    Parameters
    ----------
    constraint : Constraint
    lhs, rhs : float or ndarray
        Values of its two sides (ratios as ratios; NaN where undefined).

    Returns
    -------
    float or ndarray
        ``> 0`` when broken; NaN when a side is undefined (a ratio with a zero denominator).
    """
    return lhs - rhs if constraint.op == "<=" else rhs - lhs


def violation_rows(constraints: list[Constraint], data: RateData, decisions: np.ndarray) -> list[dict]:
    """As :func:`constraint_rows`, but the violation is :func:`constraint_violation`: ``lhs - rhs``.

    Unlike the linearised ``g``, a ratio's violation is in the ratio's units
    (``0.8 - precision`` for ``precision >= 0.8``), so violations of ratio and linear
    constraints compare; it is NaN where the ratio is undefined.
    """
    return [{**row, "violation": constraint_violation(con, row["lhs"], row["rhs"])}
            for con, row in _sides(constraints, data, decisions)]
