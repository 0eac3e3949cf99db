"""Confidence margins: tighten constraints by the sampling error of their estimates."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy.stats import norm

from ..rates import Constraint, Ratio
from ..rates._expression import NEEDS_LABELS, RATE_KINDS
from ..rates._slice import LABEL
from ._compile import RateData, rate_coefficients, slice_weights
from ._evaluate import evaluate_term

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


def confidence_margins(constraints: list[Constraint], data: RateData, confidence: float) -> np.ndarray:
    """A margin per constraint so that, met with it on ``data``, it holds on new data.

    A constraint is linear in the decisions: its estimate ``g`` sums each example's
    contribution ``f_i(y_i, yhat_i)``, the constraint's coefficients over the slices row i
    belongs to, over the slices' weights. The examples are independent, so the standard
    deviation of ``g`` is about ``sqrt(sum_i Var f_i)``, and ``Var f_i <= r_i^2 / 4`` with
    ``r_i`` the range of ``f_i`` (Popoviciu's inequality) over what is random in it: the
    decision ``yhat_i`` in ``[0, 1]`` and, for a rate whose slice does not fix the label
    (``precision = tp_proportion / ppr``, ``error_rate``, ``wins``), the label too. A slice
    that fixes the label (``tpr``, ``fpr``, ``label=1``) is a sample of its own class, whose
    size the normal approximation takes as given. So ``s = ||r||_2 / 2``; overlapping slices
    are accounted for exactly (``tpr[g] - tpr`` has smaller coefficients than either rate
    alone), and the linear form ``c D - N`` of a ratio constraint ``N / D >= c`` counts the
    labels' spread: ``c ppr - tp_proportion`` ranges over 1 / n per example, not ``|c - y| / n``.

    The margin is ``z * s``, ``z`` the one-sided normal quantile of ``confidence``: meeting
    ``g + margin <= 0`` on ``data`` implies ``g <= 0`` in the population with about that
    probability per constraint (normal approximation, the solution's selection aside).
    For a single rate on a slice of effective size n it is ``z / (2 sqrt(n))``.

    Parameters
    ----------
    constraints : list of Constraint
        Expanded constraints (no bare group columns); their linear forms ``g`` are measured.
    data : RateData
        The sample the constraints are met on, whose slices' sizes and weights set the spread.
    confidence : float
        The one-sided confidence level (e.g. 0.95): the probability that each constraint met
        with its margin holds on new data.

    Returns
    -------
    ndarray of shape (n_constraints,)
        The margin of each constraint on its linear form ``g``, in the order given.
    """
    if not constraints:
        return np.zeros(0)
    spread = np.array([_spread(c.expression, data) for c in constraints])
    return norm.ppf(confidence) * 0.5 * spread


def _spread(expression, data: RateData) -> float:
    """``||r||_2`` of :func:`confidence_margins`: per example, the range of its contribution
    over the decision and, where a slice leaves it free, the label."""
    f = np.zeros((data.n, 2, 2))  # each example's contribution at label (0, 1) x decision (0, 1)
    for rate, coef in expression.terms:
        idx, weight = slice_weights(rate, data)
        free = rate.kind in NEEDS_LABELS and not _fixes_label(rate)
        for label in (0, 1) if free else (None,):
            v, c = rate_coefficients(rate, data, idx, None if label is None else np.full(idx.shape, label))
            labels = slice(None) if label is None else slice(label, label + 1)  # else the same at either
            f[idx, labels] += (coef * weight[:, None] * np.stack([c, v + c], axis=1))[:, None, :]
    ranges = f.max(axis=(1, 2)) - f.min(axis=(1, 2))
    return float(np.sqrt(np.dot(ranges, ranges)))


def _fixes_label(rate) -> bool:
    return RATE_KINDS[rate.kind][1] is not None or any(key == LABEL for key, _ in rate.slice.filters)


def in_own_units(constraints: list[Constraint], margins: ArrayLike, data: RateData,
                 decisions: np.ndarray) -> np.ndarray:
    """Margins on the linear forms ``g`` (as :func:`confidence_margins` gives them) in each
    constraint's own units, for reports beside its violation ``lhs - rhs``.

    A linear constraint's ``g`` is its violation, so its margin is unchanged. A ratio's ``g`` is
    ``c D - N`` (or ``N - c D``), its violation ``c - N / D``: a margin ``m`` on ``g`` is
    ``m / D`` in the ratio's units, with ``D`` the denominator at ``decisions`` (NaN when 0).

    Parameters
    ----------
    constraints : list of Constraint
        Expanded constraints, aligned with ``margins``.
    margins : array-like of shape (n_constraints,)
        Margins on the constraints' linear forms.
    data : RateData
        What the denominators are measured on.
    decisions : ndarray of shape (n_samples,)
        0/1 decisions, or probabilities of predicting 1, at which the denominators are read.

    Returns
    -------
    ndarray of shape (n_constraints,)
        The margins in the constraints' own units.
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
    a ratio is compared with a constant, so the constant side moves.

    Parameters
    ----------
    constraint : Constraint
        The constraint to tighten.
    margin : float
        How far to move its bound, in the constraint's own units; ``0`` leaves it as it is.

    Returns
    -------
    Constraint
        The tightened constraint (``constraint`` itself for a zero margin).
    """
    if margin == 0:
        return constraint
    shift = -margin if constraint.op == "<=" else margin
    if isinstance(constraint.rhs, Ratio):
        return Constraint(constraint.lhs - shift, constraint.op, constraint.rhs)
    return Constraint(constraint.lhs, constraint.op, constraint.rhs + shift)
