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
    has one variable per such cell (a few hundred), not per row, and the same optimum; and one
    per basic rate, so that its matrix holds the factors of ``A`` (see :func:`least_largest`).

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
    ``[0, P 1]``: the LP ``min t s.t. K s + offsets <= t`` has one variable per cell. With
    ``K = mix @ unit`` factored (:meth:`CellMatrix.from_factors`) it also has one per basic rate,
    ``r = unit @ s``, and reads ``mix r + offsets <= t``: the factors' few entries per row where
    ``K`` repeats the overall rate's every cell in each parity row (2,000 of them over 2,000
    cells: 4 million entries, against 8,000).

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
        The index of the value attaining it: the first within ``1e-9 max(1, |largest|)`` of the
        largest at the LP's solution, since several constraints often bind together at the optimum
        and their values there differ by rounding alone (0 when the linear program fails).
    """
    upper = np.asarray(cells.P.sum(axis=1)).ravel()
    m, n_cells = cells.shape[0], upper.size
    if cells.factors is None:
        A_ub, A_eq, n_rates = sp.hstack([cells.K, -np.ones((m, 1))], format="csr"), None, 0
    else:
        mix, unit = cells.factors
        n_rates = unit.shape[0]
        # variables (s, r, t): unit s - r = 0 and mix r - t <= -offsets
        A_eq = sp.hstack([unit, -sp.identity(n_rates), sp.csr_matrix((n_rates, 1))], format="csr")
        A_ub = sp.hstack([sp.csr_matrix((m, n_cells)), mix, -np.ones((m, 1))], format="csr")
    c = np.zeros(n_cells + n_rates + 1)
    c[-1] = 1.0
    bounds = [(0.0, u) for u in upper] + [(None, None)] * (n_rates + 1)
    res = linprog(c, A_ub=A_ub, b_ub=-offsets, A_eq=A_eq, b_eq=None if A_eq is None else np.zeros(n_rates),
                  bounds=bounds, method="highs")
    if res.status != 0:
        return float("nan"), 0
    values = cells.cell_product(res.x[:n_cells]) + offsets
    top = values.max(initial=-np.inf)
    return float(res.x[-1]), int(np.argmax(values >= top - 1e-9 * max(1.0, abs(top))))


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
