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


def constraint_rows(constraints: list[Constraint], data: RateData, decisions: np.ndarray) -> list[dict]:
    """One row per (expanded) constraint: its text, both sides' values and the violation ``g``.

    ``decisions`` are 0/1 labels or probabilities of predicting 1 (rates then hold in
    expectation). The violation is the canonical ``g`` of ``g <= 0``: positive when broken.
    """
    rows = []
    for con in expand_constraints(constraints, data.groups):
        rows.append({
            "constraint": str(con),
            "lhs": evaluate_term(con.lhs, data, decisions),
            "rhs": evaluate_term(con.rhs, data, decisions),
            "violation": evaluate_term(con.expression, data, decisions),
        })
    return rows
