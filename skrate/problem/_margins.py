"""Confidence margins: tighten constraints by the sampling error of their estimates."""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from ..rates import Constraint, Ratio
from ._compile import RateData, compile_expressions
from ._evaluate import evaluate_term


def confidence_margins(constraints: list[Constraint], data: RateData, confidence: float) -> np.ndarray:
    """A margin per constraint so that, met with it on ``data``, it holds on new data.

    A constraint is linear in the decisions, ``g = sum_i a_i yhat_i + c`` (its row of the rate
    matrix: ``a_i`` sums the constraint's coefficients over the slices row i belongs to, over
    the slices' weights). Each example contributes independently, so the standard deviation
    of the estimate is about ``sqrt(sum_i a_i^2 v_i)`` with ``v_i`` the variance of a decision;
    with the worst case ``v_i = 1/4`` this is ``s = ||a||_2 / 2``. Overlapping slices are
    accounted for exactly (``tpr[g] - tpr`` has smaller coefficients than either rate alone).
    The margin is ``z * s``, ``z`` the one-sided normal quantile of ``confidence``: meeting
    ``g + margin <= 0`` on ``data`` implies ``g <= 0`` in the population with about that
    probability per constraint (normal approximation, the solution's selection aside).
    For a single rate on a slice of effective size n it is ``z / (2 sqrt(n))``.
    """
    if not constraints:
        return np.zeros(0)
    A, _ = compile_expressions([c.expression for c in constraints], data)
    row_norms = np.sqrt(np.asarray(A.multiply(A).sum(axis=1)).ravel())
    return norm.ppf(confidence) * 0.5 * row_norms


def in_own_units(constraints: list[Constraint], margins: np.ndarray, data: RateData,
                 decisions: np.ndarray) -> np.ndarray:
    """Margins on the linear forms ``g`` (as :func:`confidence_margins` gives them) in each
    constraint's own units, for reports beside its violation ``lhs - rhs``.

    A linear constraint's ``g`` is its violation, so its margin is unchanged. A ratio's ``g`` is
    ``c D - N`` (or ``N - c D``), its violation ``c - N / D``: a margin ``m`` on ``g`` is
    ``m / D`` in the ratio's units, with ``D`` the denominator at ``decisions`` (NaN when 0).
    """
    out = np.asarray(margins, dtype=float).copy()
    for j, con in enumerate(constraints):
        ratio = con.lhs if isinstance(con.lhs, Ratio) else con.rhs if isinstance(con.rhs, Ratio) else None
        if ratio is not None and out[j] != 0:
            den = evaluate_term(ratio.denominator, data, decisions)
            out[j] = out[j] / den if den > 0 else np.nan
    return out


def tightened(constraint: Constraint, margin: float) -> Constraint:
    """``constraint`` with its bound moved ``margin`` into the feasible side, in its own units:
    ``lhs <= rhs - margin`` or ``lhs >= rhs + margin`` (``precision >= 0.72`` for
    ``precision >= 0.7`` and a margin of 0.02). For a linear constraint that is ``g + margin <= 0``;
    a ratio is compared with a constant, so the constant side moves."""
    if margin == 0:
        return constraint
    shift = -margin if constraint.op == "<=" else margin
    if isinstance(constraint.rhs, Ratio):
        return Constraint(constraint.lhs - shift, constraint.op, constraint.rhs)
    return Constraint(constraint.lhs, constraint.op, constraint.rhs + shift)
