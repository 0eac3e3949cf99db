"""Whether any classifier at all can meet the constraints on the given rows."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from ..rates import Constraint
from ..rates._functions import named_ratio
from ._cells import CellMatrix
from ._compile import RateProblem

# ranges of the named ratios over every classifier (tp <= ppr; wins and losses are rates)
_RATIO_RANGES = {"precision": (0.0, 1.0), "win_loss_ratio": (0.0, np.inf), "f1": (0.0, 1.0)}


def least_violation(problem: RateProblem) -> tuple[float, int]:
    """The smallest largest constraint value ``max_j g_j`` any classifier can reach on these rows.

    The constraints are linear in each row's probability of predicting 1, so the most
    flexible classifier, one that chooses every row's probability freely in [0, 1], reaches
    it by the LP ``min t s.t. A yhat + b <= t, 0 <= yhat <= 1``. A positive value means no
    model can meet the constraints together (a bound outside a rate's range, contradictory
    bounds); a value <= 0 means the model class or the training fell short.

    Rows alike in every slice the rates read (label, groups, baseline decision) enter ``A``
    in proportion to their weights, so only their weighted sum of decisions matters: the LP
    has one variable per such cell (a few hundred), not per row, and the same optimum.

    Parameters
    ----------
    problem : RateProblem
        The compiled problem; its objective (row 0) is ignored.

    Returns
    -------
    value : float
        The least achievable largest constraint value (margins included, as compiled); NaN
        when the linear program fails.
    worst : int
        The index of the constraint attaining it, among ``problem.constraints`` (0 when the
        linear program fails).
    """
    return least_largest(CellMatrix.from_factors(problem.mix[1:], problem.basis), problem.b[1:])


def least_largest(cells: CellMatrix, offsets: np.ndarray) -> tuple[float, int]:
    """The least ``max_j (A yhat + offsets)_j`` over every ``yhat`` in ``[0, 1]^n``, ``A`` given
    as ``cells``, and the index attaining it; (NaN, 0) when the linear program fails.

    Each cell's decisions enter only through their weighted sum ``s``, which ranges over
    ``[0, P 1]``: the LP ``min t s.t. K s + offsets <= t`` has one variable per cell.

    Parameters
    ----------
    cells : CellMatrix of shape (m, n_samples)
        The coefficients ``A`` of the decisions in the ``m`` values.
    offsets : ndarray of shape (m,)
        The values at decisions all 0.

    Returns
    -------
    value : float
        The least achievable ``max_j (A yhat + offsets)_j``; NaN when the linear program
        fails.
    worst : int
        The index of the value attaining it (0 when the linear program fails).
    """
    A, upper = cells.K, np.asarray(cells.P.sum(axis=1)).ravel()
    m, n = A.shape
    A_ub = sp.hstack([A, -np.ones((m, 1))], format="csr")
    c = np.zeros(n + 1)
    c[-1] = 1.0
    res = linprog(c, A_ub=A_ub, b_ub=-offsets, bounds=[(0.0, u) for u in upper] + [(None, None)], method="highs")
    if res.status != 0:
        return float("nan"), 0
    values = A @ res.x[:n] + offsets
    return float(res.x[-1]), int(np.argmax(values))


def ratio_bound_out_of_range(constraint: Constraint) -> str | None:
    """Why no classifier meets ``constraint``, a bound on a named ratio beyond the ratio's range
    (``precision >= 1.5``), in words; else None.

    :func:`least_violation` cannot see it: the ratio's linear form (``1.5 ppr - tp <= 0``) is
    met by predicting no positives, where the ratio itself is undefined.

    Parameters
    ----------
    constraint : Constraint
        Any constraint; only a named ratio (``precision``, ``win_loss_ratio``, ``f1``, scaled or not)
        compared with a constant is checked.

    Returns
    -------
    str or None
        The constraint and the ratio's range, in words, when the bound lies outside the range
        on the side that cannot be met; else None.
    """
    oriented = constraint.ratio_bound
    if oriented is None:
        return None
    ratio, op, bound = oriented
    named = None if bound.terms else named_ratio(ratio)
    if named is None:
        return None
    name, _, scale, cd = named
    low, high = sorted(scale / cd * np.array(_RATIO_RANGES[name]) + 0.0)  # + 0.0: no "-0"
    c = bound.constant
    if (op == ">=" and c > high) or (op == "<=" and c < low):
        return f"'{constraint}': {ratio} lies in [{low:g}, {high:g}]"
    return None
