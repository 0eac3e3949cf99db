"""The xi-player's best response: ``argmin_{xi in box} w * f(xi) - lam . xi``.

In the game ``min_{h, xi} max_lam psi(xi) + lam . (R(h) - xi)`` the xi-player answers the
multipliers with the minimiser of ``w psi(xi) - lam . xi`` over the box of possible rates (minus
the conjugate of ``psi`` at ``lam / w``). A basic rate lies in ``[0, 1]``; an expression of rates
(``-tpr`` inside ``min_of``, ``ppr[g=a] - ppr[g=b]``) in the range its coefficients give it,
``lo <= xi <= hi``. Closed forms where they exist:

* KL-divergence in ``q``: the stationarity condition is the quadratic
  ``c q^2 + (1 - c) q - p = 0`` with ``c = lam / w``;
* G-, H- and Q-mean: the function is positively homogeneous of degree 1 (up to a constant),
  so on every ray from 0 it is linear and its minimum over ``[0, 1]^2`` lies at 0 or on a face
  ``a = 1`` or ``b = 1``, where a one-dimensional convex problem has a closed-form solution;
* max of rates: the same homogeneity gives ``xi = t 1[lam > 0]`` with ``t`` in ``{0, 1}`` on
  ``[0, 1]^k``, and on any box of equal sides by the affine map onto it (``min_of``'s negated
  rates lie in ``[-1, 0]``); a small LP on other boxes.

User functions given in cvxpy form are solved by :class:`CvxpyXiPlayer`, which builds the
problem once with parameters for ``lam`` and ``w`` and re-solves it every iteration (it is also
the tests' reference for the closed forms); other user functions fall back to a
box-constrained quasi-Newton solve.
Narasimhan, Cotter and Gupta (NeurIPS 2019), Section 4.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog, minimize

from ..utils._conic import CLARABEL_TOLERANCES
from ._atoms import KLD, GMean, HMean, MaxOf, QMean, RateFunction
from ._metric import Atom

_LO = 1e-6


def _kld(p: float, lam: float, w: float, lo: float = 0.0, hi: float = 1.0) -> float:
    lo, hi = max(lo, _LO), min(hi, 1 - _LO)
    if w <= 0:
        return hi if lam > 0 else lo
    c = lam / w
    # rationalised root of c q^2 + (1 - c) q - p = 0, stable for every sign of c; the function
    # is convex in q, so the box's nearest point is the box's minimiser
    q = 2 * p / ((1 - c) + np.sqrt((1 - c) ** 2 + 4 * c * p))
    return min(max(float(q), lo), hi)


def _face_gmean(w, lam):
    if lam >= 0:
        return 1.0
    return min(1.0, (w / (2 * -lam)) ** 2)


def _face_hmean(w, lam):
    if lam >= 0:
        return 1.0
    return float(np.clip(np.sqrt(2 * w / -lam) - 1, 0.0, 1.0))


def _face_qmean(w, lam):
    if lam <= 0:
        return 0.0
    if w <= 0:
        return 1.0
    s = np.sqrt(2.0) * lam / w
    return 1.0 if s >= 1 / np.sqrt(2.0) else float(min(1.0, s / np.sqrt(1 - s * s)))


_FACES = {GMean: _face_gmean, HMean: _face_hmean, QMean: _face_qmean}


def _homogeneous(atom, lam, w):
    face = _FACES[type(atom)]
    cands = [np.zeros(2), np.array([1.0, face(w, lam[1])]), np.array([face(w, lam[0]), 1.0])]
    vals = [w * atom.value(c) - lam @ c for c in cands]
    return cands[int(np.argmin(vals))]


def _max_of(lam, w, lo, hi):
    """Minimiser of ``w max(xi) - lam . xi`` over ``lo <= xi <= hi``."""
    side = hi - lo
    if np.allclose(lo, lo[0], rtol=0, atol=1e-12) and np.allclose(side, side[0], rtol=0, atol=1e-12):
        pos = lam > 0  # xi = lo + side z on [0, 1]^k, where w max(z) is homogeneous
        return lo + side * (pos if lam[pos].sum() > w else np.zeros(lam.shape[0]))
    # an epigraph LP in (xi, t): min w t - lam . xi, xi <= t
    k = lam.shape[0]
    res = linprog(np.r_[-lam, w], A_ub=np.hstack([np.eye(k), -np.ones((k, 1))]), b_ub=np.zeros(k),
                  bounds=list(zip(lo, hi)) + [(None, None)], method="highs")
    return np.clip(res.x[:k], lo, hi)


def _numeric(atom, lam, w, fixed, start, lo, hi):
    free = np.isnan(fixed)

    def full(z):
        r = fixed.copy()
        r[free] = z
        return r

    def fun(z):
        r = full(z)
        return w * float(atom.value(r)) - lam[free] @ z, w * atom.gradient(r)[free] - lam[free]

    lo, hi = lo[free], hi[free]
    z0 = np.clip(start[free], lo, hi)
    bounds = list(zip(lo, hi))
    res = minimize(fun, z0, jac=True, method="L-BFGS-B", bounds=bounds)
    z, grad = res.x, fun(res.x)[1]
    # L-BFGS-B can stall far from the optimum where the function is linear along some direction
    # (a log-sum-exp along (1, 1)); a projected gradient that is not ~0 says so: finish with SLSQP
    if np.abs(z - np.clip(z - grad, lo, hi)).max() > 1e-6:
        polished = minimize(fun, z, jac=True, method="SLSQP", bounds=bounds)
        if polished.fun < res.fun:
            z = np.clip(polished.x, lo, hi)
    return full(z)


def _unit_box(lo, hi) -> bool:
    return bool(np.allclose(lo, 0.0, rtol=0, atol=1e-12) and np.allclose(hi, 1.0, rtol=0, atol=1e-12))


def best_response(atom: Atom, lam: np.ndarray, w: float, fixed: np.ndarray, start: np.ndarray | None = None,
                  box: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Minimiser of ``w * atom(xi) - lam . xi`` over the box of the rates with some entries fixed.

    Parameters
    ----------
    atom : Atom
        The metric of ``k`` rate expressions whose rates ``xi`` are chosen (``KLD``, ``GMean``,
        ``HMean``, ``QMean``, ``MaxOf``, ``RateFunction``, ...).
    lam : ndarray of shape (k,)
        Multipliers of the atom's rate expressions.
    w : float
        Weight of the atom: its coefficient times its owner's (1 in the objective, the
        multiplier in a constraint); negative for a concave atom that enters negated.
    fixed : ndarray of shape (k,)
        Values of the rates that do not depend on the model (the class proportion of a KL
        divergence); NaN where the xi-player chooses.
    start : ndarray of shape (k,), optional
        Warm start of the numerical fallback.
    box : (ndarray, ndarray) of shape (k,) each, optional
        The range ``lo <= xi <= hi`` each rate expression can take (``rate_box``); by
        default ``[0, 1]``, the range of a basic rate.

    Returns
    -------
    ndarray of shape (k,)
        The minimising rates ``xi``: the ``fixed`` values where given, the chosen ones where
        ``fixed`` is NaN.
    """
    free = np.isnan(fixed)
    lo, hi = _box(box, len(fixed))
    if isinstance(atom, KLD) and free.tolist() == [False, True]:
        return np.array([fixed[0], _kld(float(fixed[0]), float(lam[1]), w, float(lo[1]), float(hi[1]))])
    if type(atom) in _FACES and free.all() and w >= 0 and _unit_box(lo, hi):
        return _homogeneous(atom, lam, w)
    if isinstance(atom, MaxOf) and free.all() and w >= 0:
        return _max_of(lam, w, lo, hi)
    return _numeric(atom, lam, w, fixed, np.where(free, (lo + hi) / 2, fixed) if start is None else start, lo, hi)


def rate_box(A, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The range of the rates ``A @ yhat + b`` over decisions ``yhat`` in ``[0, 1]^n``: each row's
    negative coefficients at 1 give its least value, its positive ones its greatest."""
    return (b + np.asarray(A.minimum(0).sum(axis=1)).ravel(), b + np.asarray(A.maximum(0).sum(axis=1)).ravel())


def _box(box, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``box`` as arrays, by default ``[0, 1]^k``, the range of basic rates."""
    return (np.zeros(k), np.ones(k)) if box is None else (np.asarray(box[0]), np.asarray(box[1]))


class CvxpyXiPlayer:
    """The xi-player's problem for a built-in convex atom as a parametrised cvxpy problem.

    Built once (variables, parameters ``lam`` and ``|w|``), then re-solved with new values:
    the structure is cached across iterations, only the parameters change. ``sign`` is the sign
    of the atom's weight, fixed by its coefficient (a concave user function enters negated), and
    ``box`` the range of its rates (:func:`best_response`).

    Calling the instance with ``(lam, w)`` solves the problem for those values and returns the
    rates ``xi`` as an ndarray of shape (k,), the fixed entries included.

    Parameters
    ----------
    atom : Atom
        A built-in convex atom (``KLD``, ``GMean``, ``HMean``, ``QMean``, ``MaxOf``) or a
        ``RateFunction`` given with a cvxpy form (``cvx``); any other raises a TypeError.
    fixed : ndarray of shape (k,)
        Values of the rates that do not depend on the model; NaN where the xi-player chooses.
    sign : float, default=1.0
        Sign of the atom's weight (only its sign is read); the problem then accepts weights
        ``w`` of that sign (or 0) only.
    box : (ndarray, ndarray) of shape (k,) each, default=None
        The range ``lo <= xi <= hi`` of the rates; None means ``[0, 1]``, the range of a
        basic rate.
    """

    def __init__(self, atom: Atom, fixed: np.ndarray, sign: float = 1.0,
                 box: tuple[np.ndarray, np.ndarray] | None = None):
        import cvxpy as cp

        self.fixed = np.asarray(fixed, dtype=float)
        free = np.isnan(self.fixed)
        self.free = free
        self.sign = -1.0 if sign < 0 else 1.0
        lo, hi = _box(box, len(free))
        self.xi = cp.Variable(int(free.sum()))
        self.lam = cp.Parameter(int(free.sum()))
        self.w = cp.Parameter(nonneg=True)
        x = self.xi
        if isinstance(atom, KLD):
            p = float(self.fixed[0])
            f = -p * cp.log(x[0]) - (1 - p) * cp.log(1 - x[0])
        elif isinstance(atom, GMean):
            f = -cp.geo_mean(x)
        elif isinstance(atom, HMean):
            f = -cp.harmonic_mean(x)
        elif isinstance(atom, QMean):
            f = cp.norm(x, 2) / np.sqrt(2.0)
        elif isinstance(atom, MaxOf):
            f = cp.max(x)
        elif isinstance(atom, RateFunction) and atom.cvx is not None:
            parts, at = [], 0
            for j, is_free in enumerate(free):
                parts.append(x[at] if is_free else cp.Constant(self.fixed[j]))
                at += int(is_free)
            f = atom.cvx(cp.hstack(parts))
        else:
            raise TypeError(f"No cvxpy form for the metric {atom}.")
        self.problem = cp.Problem(cp.Minimize(self.sign * self.w * f - self.lam @ x),
                                  [x >= lo[free], x <= hi[free]])

    def __call__(self, lam: np.ndarray, w: float) -> np.ndarray:
        self.lam.value = np.asarray(lam, dtype=float)[self.free]
        if w * self.sign < 0:
            raise ValueError(f"w={w:g} has the other sign than this problem's, built with sign={self.sign:g}.")
        self.w.value = abs(float(w))  # its sign is the problem's, fixed when it was built
        self.problem.solve(solver="CLARABEL", **CLARABEL_TOLERANCES)
        out = self.fixed.copy()
        out[self.free] = self.xi.value
        return out
