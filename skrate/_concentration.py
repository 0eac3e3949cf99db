"""Concentration steps for trimmed linear M-estimation, and the exact weighted refits.

:func:`concentration_steps` (as in FAST-LTS) alternates the exact weight block, keep the
``h`` smallest losses, with an exact refit of the model on the kept samples by
:func:`fit_weighted`, in the Jacobi scaling of :func:`refit_scaling`. SMART polishes a
settled kept set with the same refit.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy.optimize import minimize

from skrate._centred_columns import largest_eigenvalue, weighted_column_sq
from skrate._trimmed_losses import CURVATURE, linear_loss, loss_curvature, penalty_weight
from skrate._trimmed_problem import TrimmedFit, TrimmedProblem


# -------------------------------------------------------------- concentration steps
# L-BFGS iterations between two updates of the Jacobi scaling of an exact refit: the
# curvature of the logistic losses falls by orders of magnitude as the fit separates
# the classes, and a scaling from the start would leave the Hessian badly conditioned.
_RESCALE_EVERY = 100


def refit_scaling(
    problem: TrimmedProblem, X: np.ndarray, c: np.ndarray, curvature: np.ndarray
) -> np.ndarray:
    """Jacobi scaling of the coefficients for an exact refit.

    The columns have a scale of 1 already, but the penalty is taken in their original
    units: a feature in small units (a ratio of order ``1e-3``) has a penalty curvature
    ``alpha / coef_scale^2`` orders of magnitude above the data's, and where the
    model separates the classes most losses are nearly flat. Either way the Hessian
    of the refit gets a condition number that first-order and quasi-Newton steps do
    not overcome in any sensible number of iterations; its Jacobi scaling does
    most of the work.

    Parameters
    ----------
    problem : TrimmedProblem
    X : ndarray or CentredColumns of shape (m, n_features)
        The rows refitted.
    c : ndarray of shape (m,)
        Their weights.
    curvature : ndarray of shape (m,)
        The second derivative of each row's loss in its scores (mean over scores).

    Returns
    -------
    ndarray of shape (n_features,)
        The square root of the Hessian's diagonal in each coefficient, ``sum_i c_i
        curvature_i x_ij^2`` plus ``alpha / coef_scale_j^2`` for "l2", relative to
        the intercept's ``sum_i c_i curvature_i``; 1 where either is 0.
    """
    P = problem
    cv = c * curvature
    diag = weighted_column_sq(X, cv)
    if P.penalty == "l2":
        diag = diag + penalty_weight(P.alpha, P.coef_scale)
    ref = float(cv.sum())
    if not ref > 0:
        return np.ones(X.shape[1])
    return np.sqrt(np.where(diag > 0, diag / ref, 1.0))


def fit_weighted(
    problem: TrimmedProblem,
    c: np.ndarray,
    W0: np.ndarray,
    b0: np.ndarray,
    *,
    max_iter: int = 1000,
    tol: float = 1e-6,
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Minimise ``sum_i c_i f_i(W, b) + alpha R(W)`` for fixed weights ``c``.

    L-BFGS for the smooth penalties, accelerated proximal gradient (FISTA, with
    adaptive restart) for "l1" and plain proximal gradient for the non-convex "l0".
    Each works on the coefficients ``D * W`` for the Jacobi scaling ``D`` of
    :func:`refit_scaling`, at the start and, for L-BFGS, every ``_RESCALE_EVERY``
    iterations. Each stops when no entry of the gradient (L-BFGS: the projected one)
    or of the gradient mapping, in the units of ``W``, exceeds ``tol``, after
    ``max_iter`` iterations, or (L-BFGS) when a run between two rescalings no longer
    lowers the objective: rounding errors then exceed ``tol``.

    Parameters
    ----------
    problem : TrimmedProblem
    c : ndarray of shape (n_samples,)
        Non-negative weight of each sample's loss.
    W0 : ndarray of shape (n_features, n_scores)
        Start (warm start) of the coefficients.
    b0 : ndarray of shape (n_scores,)
        Start of the intercepts.
    max_iter : int, default=1000
        Most iterations of the inner solver, in all.
    tol : float, default=1e-6
        Largest entry of the gradient (mapping) accepted at the solution.

    Returns
    -------
    W : ndarray of shape (n_features, n_scores)
    b : ndarray of shape (n_scores,)
    converged : bool
        Whether the test on ``tol`` was met.
    """
    P = problem
    rows = np.flatnonzero(c)
    Xs, Ys, cs = P.X[rows], P.Y[rows], c[rows]
    d, K = W0.shape
    fi = float(P.fit_intercept)

    def scaled(W, b):
        """The refit in ``u = D * W``: columns ``X / D``, penalty of ``u / (D * coef_scale)``."""
        curvature = loss_curvature(P.loss, Xs @ W + b, Ys).mean(axis=1)
        D = refit_scaling(P, Xs, cs, curvature)
        return D[:, None], Xs / D, P.coef_scale * D

    def smooth(Xu, U, b):
        ls, dS = linear_loss(P.loss, Xu @ U + b, Ys)
        cD = cs[:, None] * dS
        return float(cs @ ls), Xu.T @ cD, cD.sum(axis=0) * fi

    W, b = W0.copy(), b0.copy()
    if P.penalty in ("l2", "none"):
        used, f_last = 0, np.inf
        while used < max_iter:
            D, Xu, scale = scaled(W, b)
            # alpha ||W / s||^2 / 2: the l2 penalty of the coefficients in original units
            lam = penalty_weight(P.alpha if P.penalty == "l2" else 0.0, scale[:, None])

            def fun(theta):
                U, intercept = theta[: d * K].reshape(d, K), theta[d * K :]
                f, gU, gb = smooth(Xu, U, intercept)
                return f + 0.5 * float(np.sum(lam * U * U)), np.concatenate(
                    [(gU + lam * U).ravel(), gb]
                )

            # ftol=0: the gradient test alone. L-BFGS-B's test on the decrease of f,
            # relative to max(|f|, 1), stops it where f changes by little but the
            # gradient is still large: a small objective, or an ill-conditioned kept set
            # (leverage rows). The gradient in W is D times the one in u: gtol / max(D)
            # meets tol in the units of W.
            res = minimize(
                fun,
                np.concatenate([(D * W).ravel(), b]),
                jac=True,
                method="L-BFGS-B",
                options={
                    "maxiter": min(_RESCALE_EVERY, max_iter - used),
                    "gtol": tol / D.max(initial=1.0),
                    "ftol": 0.0,
                },
            )
            used += res.nit
            W, b = res.x[: d * K].reshape(d, K) / D, res.x[d * K :].copy()
            grad_W = D * res.jac[: d * K].reshape(d, K)
            if max(np.max(np.abs(grad_W), initial=0.0), np.max(np.abs(res.jac[d * K :]), initial=0.0)) <= tol:
                return W, b, True
            if not res.fun < f_last:  # no progress: rounding sets the limit
                break
            f_last = res.fun
        return W, b, False

    D, Xu, scale = scaled(W, b)
    Q = replace(P, X=Xu, Y=Ys, coef_scale=scale, groups=None, floors=None)  # for its prox
    L = CURVATURE[P.loss] * largest_eigenvalue(Xu, cs, P.fit_intercept)
    eta = 1.0 / max(L, np.finfo(float).tiny)
    accelerate = P.penalty == "l1"
    U = D * W
    Uy, by, t = U, b, 1.0
    for _ in range(max_iter):
        _, gU, gb = smooth(Xu, Uy, by)
        U_new = Q.prox(Uy - eta * gU, eta)
        b_new = by - eta * gb
        # the gradient mapping in the units of W: D times the one in u
        mapping = max(np.max(np.abs(D * (Uy - U_new)), initial=0.0) / eta, np.max(np.abs(gb), initial=0.0))
        if accelerate:
            # adaptive restart (O'Donoghue and Candes, 2015): drop the momentum when it
            # points against the step, which keeps FISTA fast on an ill-conditioned set
            if np.sum((Uy - U_new) * (U_new - U)) + np.sum((by - b_new) * (b_new - b)) > 0:
                t = 1.0
            t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
            mom = (t - 1.0) / t_new
            Uy, by, t = U_new + mom * (U_new - U), b_new + mom * (b_new - b), t_new
        else:
            Uy, by = U_new, b_new
        U, b = U_new, b_new
        if mapping <= tol:
            return U / D, b, True
    return U / D, b, False


def concentration_steps(
    problem: TrimmedProblem,
    *,
    max_iter: int = 100,
    tol: float = 1e-6,
    refit_max_iter: int = 1000,
) -> TrimmedFit:
    """Alternating minimisation (concentration steps, as in FAST-LTS).

    Start from the fit on all samples; then repeat: keep the ``h`` samples with the
    smallest losses (the exact minimiser over ``w``), refit on them exactly
    (:func:`fit_weighted` to ``tol``, at most ``refit_max_iter`` iterations, warm
    started), until the kept set stops changing. Each step can only lower the
    objective; the result is a local solution when the last refit met ``tol``
    (``TrimmedFit.refit_converged``).

    References
    ----------
    .. [1] Rousseeuw, P. J. and Van Driessen, K. "Computing LTS regression for
       large data sets", Data Mining and Knowledge Discovery 12, 2006.
    """
    P = problem
    n, d = P.X.shape
    K = P.n_scores

    def refit(c, W, b):
        return fit_weighted(P, c, W, b, max_iter=refit_max_iter, tol=tol)

    c = np.full(n, 1.0 / n) if P.caps is None else P.caps / float(np.sum(P.caps))
    W, b, refit_converged = refit(c, np.zeros((d, K)), np.zeros(K))
    w = P.uniform_weights()
    objective = [P.objective(W, b, w)]
    converged, n_iter = False, 0
    for it in range(max_iter):
        w_new = P.keep_smallest(P.losses(W, b))
        n_iter = it + 1
        if np.array_equal(w_new, w):
            converged = True
            break
        w = w_new
        W, b, refit_converged = refit(w / P.h, W, b)
        objective.append(P.objective(W, b, w))
    return TrimmedFit(W, b, w, n_iter, objective, converged, refit_converged)
