"""Evaluate constraints on given decisions: the shared core of every report and audit."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..exceptions import UndefinedRateError
from ..rates import Constraint, Expression, Ratio
from ..rates._slice import RESERVED
from ._compile import RateData, compile_factored, expand_constraints

if TYPE_CHECKING:
    from collections.abc import Iterable

    import scipy.sparse as sp

    from ..rates._expression import Rate


def ratio_value(num: float | np.ndarray, den: float | np.ndarray) -> float | np.ndarray:
    """``num / den`` of a ratio: over a zero denominator, infinite with the numerator's sign
    (wins with no losses: a win-loss ratio above every bound, as its linear form says) and
    NaN for ``0 / 0`` (precision with no positive prediction: undefined).

    Parameters
    ----------
    num, den : float or ndarray
        Values of the numerator and the denominator (broadcast together).

    Returns
    -------
    float or ndarray
        ``num / den`` where ``den > 0``; ``sign(num) * inf`` where ``den <= 0`` and ``num != 0``;
        NaN where both are 0. A float for scalar inputs.
    """
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(den > 0, num / np.where(den > 0, den, 1.0),
                       np.where(num == 0, np.nan, np.sign(num) * np.inf))
    return float(out) if out.ndim == 0 else out


# A rate is a sum of many terms of either sign (losses: baseline-correct rows minus those the
# model keeps right); one within this many ulps of its terms' magnitude is zero up to rounding
_ROUNDING = 1e3 * np.finfo(float).eps


def reported_rates(A: sp.spmatrix | np.ndarray, b: np.ndarray, decisions: np.ndarray) -> np.ndarray:
    """``A @ decisions + b``, with the values within rounding of zero set to 0: a report reads
    ratios of them, and wins over losses of 1e-17 (no loss, up to rounding) are not 1e16.

    Parameters
    ----------
    A : sparse matrix or ndarray of shape (n_rates, n_samples)
        The rates' rows, as :func:`compile_expressions` gives them.
    b : ndarray of shape (n_rates,)
        Their constants.
    decisions : ndarray of shape (n_samples,) or (n_samples, k)
        0/1 decisions or probabilities of predicting 1 (one column per model).

    Returns
    -------
    ndarray of shape (n_rates,) or (n_rates, k)
        The rates; those within ``1e3`` machine epsilons (relative to the magnitude of their
        terms) of zero are exactly 0.
    """
    return zero_within_rounding(A @ decisions + b, abs(A) @ np.abs(decisions) + np.abs(b))


def zero_within_rounding(values: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``values`` with those within ``1e3`` machine epsilons of ``scale`` (the sum of their terms'
    magnitudes) set to exactly 0 (see :func:`reported_rates`)."""
    return np.where(np.abs(values) <= _ROUNDING * scale, 0.0, values)


def _side_values(sides: list, data: RateData, decisions: np.ndarray) -> list[float]:
    """Values of expressions and ratios for 0/1 or expected decisions, all compiled in one call
    (a ratio as its numerator and denominator, see :func:`ratio_value`), so a report costs one
    sparse product, not one per side."""
    exprs = [e for side in sides for e in ((side.numerator, side.denominator) if isinstance(side, Ratio) else (side,))]
    if not exprs:
        return []
    # through the factors: parity constraints share the overall rate, whose row of n entries
    # the product mix @ basis would copy into every constraint (constraints x n memory)
    mix, basis, b = compile_factored(exprs, data)
    rates, scale = basis @ decisions, abs(basis) @ np.abs(decisions)
    values = iter(zero_within_rounding(mix @ rates + b, abs(mix) @ scale + np.abs(b)))
    out = []
    for side in sides:
        if isinstance(side, Ratio):
            num, den = next(values), next(values)
            out.append(ratio_value(num, den))
        else:
            out.append(float(next(values)))
    return out


def evaluate_term(term: Expression | Ratio, data: RateData, decisions: np.ndarray) -> float:
    """Value of an expression or ratio for 0/1 or expected decisions (see :func:`ratio_value`).

    Parameters
    ----------
    term : Expression or Ratio
        A rate expression or a ratio of two, without bare group columns.
    data : RateData
        What the rates are measured on.
    decisions : ndarray of shape (n_samples,)
        0/1 decisions, or probabilities of predicting 1 (the value then holds in expectation).

    Returns
    -------
    float
        The value; for a ratio over a zero denominator, infinite with the sign of the
        numerator, or NaN for ``0 / 0``.
    """
    return _side_values([term], data, decisions)[0]


def _sides(constraints: list[Constraint], data: RateData, decisions: np.ndarray):
    """(constraint, row) per expanded constraint, the row holding its text and both sides' values."""
    expanded = expand_constraints(constraints, data.groups)
    values = _side_values([side for con in expanded for side in (con.lhs, con.rhs)], data, decisions)
    for k, con in enumerate(expanded):
        yield con, {"constraint": str(con), "lhs": values[2 * k], "rhs": values[2 * k + 1]}


def zero_denominator_reason(denominator: Expression) -> str:
    """Why a ratio is undefined, in words: its denominator is 0 (for precision, no positives).

    Parameters
    ----------
    denominator : Expression
        The ratio's denominator.

    Returns
    -------
    str
        The reason, naming the slice where the model predicts no positives when the
        denominator is a single ``ppr``.
    """
    text = f"the ratio's denominator {denominator} is 0"
    if len(denominator.terms) != 1 or denominator.terms[0][0].kind != "ppr":
        return text
    where = str(denominator.terms[0][0].slice)
    return "the model predicts no positives" + (f" in the slice {where}" if where else "") + f" ({text})"


def constraint_rows(constraints: list[Constraint], data: RateData, decisions: np.ndarray) -> list[dict]:
    """One row per (expanded) constraint: its text, both sides' values and the violation ``g``.

    ``decisions`` are 0/1 labels or probabilities of predicting 1 (rates then hold in
    expectation). The violation is the canonical ``g`` of ``g <= 0``: positive when broken.
    For a ratio it is the linear rearrangement the solvers and margins work with (e.g.
    ``ppr * (c - precision)``); reports use :func:`violation_rows` instead.

    Parameters
    ----------
    constraints : list of Constraint
        Constraints, those over bare group columns expanded over the values of ``data.groups``.
    data : RateData
        What the rates are measured on.
    decisions : ndarray of shape (n_samples,)
        0/1 decisions, or probabilities of predicting 1.

    Returns
    -------
    list of dict
        One dict per expanded constraint, with keys ``"constraint"`` (its text), ``"lhs"``,
        ``"rhs"`` (the values of its sides; ratios as ratios) and ``"violation"`` (``g``).
    """
    sides = list(_sides(constraints, data, decisions))
    g = _side_values([con.expression for con, _ in sides], data, decisions)
    return [{**row, "violation": v} for (_, row), v in zip(sides, g)]


def constraint_violation(constraint: Constraint, lhs: float | np.ndarray,
                         rhs: float | np.ndarray) -> float | np.ndarray:
    """Violation of ``constraint`` in its own units: ``lhs - rhs`` for ``<=``, ``rhs - lhs`` for ``>=``.

    Parameters
    ----------
    constraint : Constraint
        The constraint; only its comparison (``<=`` or ``>=``) is read.
    lhs, rhs : float or ndarray
        Values of its two sides (ratios as ratios; NaN where undefined).

    Returns
    -------
    float or ndarray
        ``> 0`` when broken; NaN when a side is undefined (a ratio ``0 / 0``).
        A difference within ``1e-12`` of zero is rounding in the rates' sums (a solution
        meeting a constraint with equality) and is given as 0.
    """
    v = np.asarray(lhs - rhs if constraint.op == "<=" else rhs - lhs, dtype=float)
    v = np.where(np.abs(v) <= 1e-12, 0.0, v)
    return float(v) if v.ndim == 0 else v


def violation_rows(constraints: list[Constraint], data: RateData, decisions: np.ndarray) -> list[dict]:
    """As :func:`constraint_rows`, but the violation is :func:`constraint_violation`: ``lhs - rhs``.

    Unlike the linearised ``g``, a ratio's violation is in the ratio's units
    (``0.8 - precision`` for ``precision >= 0.8``), so violations of ratio and linear
    constraints compare; it is NaN where the ratio is undefined.

    Parameters
    ----------
    constraints : list of Constraint
        Constraints, those over bare group columns expanded over the values of ``data.groups``.
    data : RateData
        What the rates are measured on.
    decisions : ndarray of shape (n_samples,)
        0/1 decisions, or probabilities of predicting 1.

    Returns
    -------
    list of dict
        One dict per expanded constraint, with keys ``"constraint"``, ``"lhs"``, ``"rhs"`` and
        ``"violation"`` (``> 0`` when broken).
    """
    return [{**row, "violation": constraint_violation(con, row["lhs"], row["rhs"])}
            for con, row in _sides(constraints, data, decisions)]


def absent_values(rates: Iterable[Rate], groups) -> list[str]:
    """The group values the ``rates`` name that no row holds, as ``column=value`` (an unknown
    column raises, naming the known ones)."""
    return [f"{k}={v}" for r in rates for k, vs in r.slice.filters if k not in RESERVED
            for v in groups.unknown(k, vs)]


def report_rows(constraints: list[Constraint], data: RateData, decisions: np.ndarray) -> tuple[list[dict], list[str]]:
    """As :func:`violation_rows`, for reports on new rows: a constraint these rows leave undefined
    (a group value it names that no row holds, a slice without the rows its rate needs) gets a
    row of NaN instead of an error; also returns those constraints' texts. A group column
    missing altogether is still an error.

    Parameters
    ----------
    constraints : list of Constraint
        Constraints, those over bare group columns expanded over the values of ``data.groups``.
    data : RateData
        The rows reported on.
    decisions : ndarray of shape (n_samples,)
        0/1 decisions, or probabilities of predicting 1.

    Returns
    -------
    rows : list of dict
        As :func:`violation_rows`; a constraint these rows leave undefined gets one row, under
        its own (unexpanded) text, with NaN values.
    undefined : list of str
        The texts of the constraints these rows leave undefined.
    """
    measured = {i: expand_constraints([con], data.groups) for i, con in enumerate(constraints)
                if not absent_values(con.rates, data.groups)}
    try:  # one compiled product for all (the overall rate of every parity constraint once)
        flat = iter(violation_rows([c for cons in measured.values() for c in cons], data, decisions))
        batch = {i: [next(flat) for _ in cons] for i, cons in measured.items()}
    except UndefinedRateError:  # some slice without positives: find which, one by one
        batch = {}
    rows, undefined = [], []
    for i, con in enumerate(constraints):
        if i in batch:
            rows += batch[i]
            continue
        if i in measured:
            try:
                rows += violation_rows([con], data, decisions)
                continue
            except UndefinedRateError:  # e.g. no positives in a tpr slice
                pass
        rows.append({"constraint": str(con), "lhs": np.nan, "rhs": np.nan, "violation": np.nan})
        undefined.append(str(con))
    return rows, undefined
