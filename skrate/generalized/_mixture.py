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

from ._atoms import MaxOf
from ._program import CompiledSum, MetricProgram


def _grad(s: CompiledSum, r: np.ndarray) -> np.ndarray:
    g = np.zeros(r.shape[0])
    for coef, atom, idx in s.atoms:
        g[idx] += coef * atom.gradient(r[idx])
    return g


def _epigraph(s: CompiledSum) -> tuple[list, list]:
    """``s``'s atoms split into (the others, the maxima of rates with a positive weight). Such a
    max is minimised as a variable ``t >= r_j`` for each of its rates: SLSQP then meets a smooth
    problem, not the kinks where the largest rate changes."""
    is_kinked = [isinstance(atom, MaxOf) and coef > 0 for coef, atom, _ in s.atoms]
    return ([a for a, kink in zip(s.atoms, is_kinked) if not kink],
            [a for a, kink in zip(s.atoms, is_kinked) if kink])


#: A constraint value at most this is met: how ``feasible_`` reads a solution.
FEASIBLE_TOL = 1e-9


def merits(program: MetricProgram, rates: np.ndarray, tol: float = 1e-7) -> tuple[np.ndarray, np.ndarray]:
    """(largest violation beyond ``tol``, objective) of each column of ``rates`` (K, k): models
    compare by violation, and the feasible ones by objective."""
    obj = np.broadcast_to(np.asarray(program.objective.value(rates), dtype=float), (rates.shape[1],))
    if not program.n_constraints or not rates.shape[1]:
        return np.zeros(rates.shape[1]), obj
    return np.maximum(program.largest_violation(rates) - tol, 0.0), obj


def _merit(program: MetricProgram, R: np.ndarray, p: np.ndarray, tol: float = 1e-7) -> tuple[float, float]:
    """:func:`merits` of the mixture ``p`` of the columns of ``R``."""
    violation, objective = merits(program, (R @ p)[:, None], tol)
    return float(violation[0]), float(objective[0])


def best_mixture(program: MetricProgram, R: np.ndarray, starts: list[np.ndarray], tol: float = 1e-7) -> np.ndarray:
    """Weights over the candidates (columns of ``R``, shape (K, k)) of the best mixture found.

    The result is compared with every start by (largest violation beyond ``tol``, objective)
    and the best kept, so it is never worse than any of them on the training data.
    """
    # snapshots often share their rates: solve over the distinct rate vectors only
    _, first = np.unique(np.round(R, 12).T, axis=0, return_index=True)
    first = hull_vertices(R[_model_rows(program)], np.sort(first))
    Ru = R[:, first]
    k = Ru.shape[1]
    smooth, kinked = _epigraph(program.objective)
    n_t = len(kinked)  # x = [p, t]: the mixture, then one epigraph variable per kinked atom
    cons = [{"type": "eq", "fun": lambda x: x[:k].sum() - 1.0, "jac": lambda x: np.r_[np.ones(k), np.zeros(n_t)]}]
    for s in program.constraints:
        cons.append({"type": "ineq", "fun": lambda x, s=s: -float(s.value(Ru @ x[:k])),
                     "jac": lambda x, s=s: np.r_[-(Ru.T @ _grad(s, Ru @ x[:k])), np.zeros(n_t)]})
    for j, (_, _, idx) in enumerate(kinked):  # t_j - r_i >= 0 for every rate i of the max
        unit = np.zeros((len(idx), n_t))
        unit[:, j] = 1.0
        jac = np.hstack([-Ru[idx], unit])
        cons.append({"type": "ineq", "fun": lambda x, jac=jac: jac @ x, "jac": lambda x, jac=jac: jac})
    weights = np.array([coef for coef, _, _ in kinked])

    def fun(x):
        r = Ru @ x[:k]
        g = np.zeros(r.shape[0])
        value = program.objective.constant + weights @ x[k:]
        for coef, atom, idx in smooth:
            value = value + coef * atom.value(r[idx])
            g[idx] += coef * atom.gradient(r[idx])
        return float(value), np.r_[Ru.T @ g, weights]

    best = min(starts, key=lambda p: _merit(program, R, p, tol))
    # start at the best single candidate (least violation, then objective): near the optimum
    # when one model nearly solves the problem (a ratio's optimum is a vertex), fewer steps; if
    # that ends infeasible (SLSQP may need to cross higher violations along the first edge) or
    # finds nothing better than the starts, again from the centre of the candidates, where the
    # mixtures the game played lie
    obj, viol = program.values(Ru)
    viol = np.maximum(program.flag_undefined(Ru, viol).max(axis=0), 0.0) if viol.size else np.zeros(k)
    single = np.zeros(k)
    single[np.lexsort((obj, viol))[0]] = 1.0
    for p0 in (single, np.full(k, 1.0 / k)):
        found = False
        r0 = Ru @ p0
        x0 = np.r_[p0, [atom.value(r0[idx]) for _, atom, idx in kinked]]
        res = minimize(fun, x0, jac=True, method="SLSQP", bounds=[(0.0, 1.0)] * k + [(None, None)] * n_t,
                       constraints=cons, options={"maxiter": 200, "ftol": 1e-10})
        p = np.zeros(R.shape[1])
        p[first] = np.where(res.x[:k] > 1e-12, res.x[:k], 0.0)  # SLSQP leaves round-off on unused candidates
        if p.sum() > 0:
            p /= p.sum()
            small = np.count_nonzero(p) <= _model_rows(program).sum() + 1
            cand = p if small else _caratheodory(program, R, p)
            if _merit(program, R, cand, tol) <= _merit(program, R, best, tol):
                best, found = cand, True
        # SLSQP may also stall at the vertex (a kld objective: no step from an extreme ppr),
        # leaving the starts, the game's uniform mixture of every candidate, as the best
        if found and _merit(program, R, best, tol)[0] == 0.0 or k == 1:
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


def _caratheodory(program: MetricProgram, R: np.ndarray, p: np.ndarray) -> np.ndarray:
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
