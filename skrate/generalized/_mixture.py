"""The best mixture of candidate models for a non-linear metric, shrunk to a small support.

The rates of a mixture ``p`` of candidates are the mixture of their rates, ``R @ p``; so the
best mixture solves ``min_p psi(R p)`` s.t. ``phi_j(R p) <= 0`` over the simplex, a convex
problem for convex metrics (quasi-convex for a single ratio) in as many variables as candidates,
solved by SLSQP. Every metric value depends on ``p`` only through ``R p``, so any other mixture
with the same rates is as good: a vertex of ``{p >= 0, sum p = 1, R_S p = R_S p*}`` (an LP, with
``R_S`` the K model-dependent rate rows) has at most K + 1 models (Caratheodory) -- the
non-linear counterpart of the m + 1 shrink of Cotter et al. (2019). For the same reason only the
vertices of the convex hull of the candidates' rate vectors matter (every mixture's rates are a
mixture of the vertices'), and SLSQP runs over those alone when the hull is cheap to compute.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog, minimize
from scipy.spatial import ConvexHull, QhullError

from ._program import CompiledSum, MetricProgram


def _grad(s: CompiledSum, r: np.ndarray) -> np.ndarray:
    g = np.zeros(r.shape[0])
    for coef, atom, idx in s.atoms:
        g[idx] += coef * atom.gradient(r[idx])
    return g


def _merit(program: MetricProgram, R: np.ndarray, p: np.ndarray, tol: float = 1e-7) -> tuple[float, float]:
    """(largest violation beyond ``tol``, objective): feasible mixtures compare by objective."""
    r = R @ p
    obj, cons = program.values(r)
    cons = program.flag_undefined(r, cons)
    return max(0.0, float(np.max(cons)) - tol) if np.size(cons) else 0.0, float(obj)


def best_mixture(program: MetricProgram, R: np.ndarray, starts: list[np.ndarray], tol: float = 1e-7) -> np.ndarray:
    """Weights over the candidates (columns of ``R``, shape (K, k)) of the best mixture found.

    The result is compared with every start by (largest violation, objective) and the best kept,
    so it is never worse than any of them on the training data.
    """
    # snapshots often share their rates: solve over the distinct rate vectors only
    _, first = np.unique(np.round(R, 12).T, axis=0, return_index=True)
    first = hull_vertices(R[_model_rows(program)], np.sort(first))
    Ru = R[:, first]
    k = Ru.shape[1]
    cons = [{"type": "eq", "fun": lambda p: p.sum() - 1.0, "jac": lambda p: np.ones(k)}]
    for s in program.constraints:
        cons.append({"type": "ineq", "fun": lambda p, s=s: -float(s.value(Ru @ p)),
                     "jac": lambda p, s=s: -(Ru.T @ _grad(s, Ru @ p))})

    def fun(p):
        r = Ru @ p
        return float(program.objective.value(r)), Ru.T @ _grad(program.objective, r)

    best = min(starts, key=lambda p: _merit(program, R, p))
    # start at the best single candidate (least violation, then objective): near the optimum
    # when one model nearly solves the problem (a ratio's optimum is a vertex), fewer steps; if
    # that ends infeasible (SLSQP may need to cross higher violations along the first edge),
    # again from the centre of the candidates, where the mixtures the game played lie
    obj, viol = program.values(Ru)
    viol = np.maximum(program.flag_undefined(Ru, viol).max(axis=0), 0.0) if viol.size else np.zeros(k)
    single = np.zeros(k)
    single[np.lexsort((obj, viol))[0]] = 1.0
    for x0 in (single, np.full(k, 1.0 / k)):
        res = minimize(fun, x0, jac=True, method="SLSQP", bounds=[(0.0, 1.0)] * k,
                       constraints=cons, options={"maxiter": 200, "ftol": 1e-10})
        p = np.zeros(R.shape[1])
        p[first] = np.where(res.x > 1e-12, res.x, 0.0)  # SLSQP leaves round-off on unused candidates
        if p.sum() > 0:
            p /= p.sum()
            small = np.count_nonzero(p) <= _model_rows(program).sum() + 1
            cand = p if small else _caratheodory(program, R, p, tol)
            if _merit(program, R, cand) <= _merit(program, R, best):
                best = cand
        if _merit(program, R, best)[0] == 0.0 or k == 1:
            break
    return best


def _model_rows(program: MetricProgram) -> np.ndarray:
    return np.asarray(abs(program.A).sum(axis=1)).ravel() > 0


def hull_vertices(R: np.ndarray, cols: np.ndarray, max_dim: int = 6) -> np.ndarray:
    """The columns among ``cols`` whose rate vectors (columns of ``R``) are vertices of their hull.

    Points inside the hull are mixtures of vertices, so dropping them loses no mixture. The hull
    is computed in the affine span of the points (qhull needs full dimension); when that span
    has more than ``max_dim`` dimensions, or qhull fails, every column is kept.
    """
    P = R[:, cols].T
    if P.shape[0] <= P.shape[1] + 1:
        return cols
    centred = P - P.mean(axis=0)
    _, sv, Vt = np.linalg.svd(centred, full_matrices=False)
    rank = int(np.sum(sv > 1e-9 * max(1.0, sv[0]))) if sv.size else 0
    if rank == 0:
        return cols[:1]
    if rank > max_dim:
        return cols
    Z = centred @ Vt[:rank].T
    if rank == 1:
        return cols[np.unique([np.argmin(Z[:, 0]), np.argmax(Z[:, 0])])]
    try:
        return cols[np.sort(ConvexHull(Z).vertices)]
    except QhullError:
        return cols


def _caratheodory(program: MetricProgram, R: np.ndarray, p: np.ndarray, tol: float) -> np.ndarray:
    """A vertex mixture with the same model-dependent rates as ``p`` (support <= K + 1)."""
    rows = _model_rows(program)
    A_eq = np.vstack([R[rows], np.ones((1, R.shape[1]))])
    res = linprog(np.zeros(R.shape[1]), A_eq=A_eq, b_eq=A_eq @ p, bounds=[(0, None)] * R.shape[1],
                  method="highs-ds")
    if res.status != 0:
        return p
    q = np.clip(res.x, 0.0, None)
    q[q < 1e-12] = 0.0
    return q / q.sum()
