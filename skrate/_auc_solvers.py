"""Solvers for the square-loss AUC objective of :mod:`skrate._auc_objective`.

Plain functions over arrays: ``exact`` (one linear solve for the ridge penalty, accelerated
proximal gradient on the precomputed, equilibrated quadratic otherwise), ``spam`` (proximal
SGD on the saddle reformulation, Natole et al. 2018) and ``vrspam`` (proximal SVRG on the
same objective, Dan and Sahoo). ``y`` is coded 1 / 0 throughout.

The stochastic solvers accept a per-coordinate step. With the column scales ``s`` of
:func:`column_scale`, proximal SGD with step ``eta`` on the exact reparametrisation
``w = v / s`` (columns ``X / s``, the penalty ``R(v / s)`` kept in the original units) is,
written in ``w``, proximal SGD with the step ``eta / s**2``: the gradient in ``v`` is the one
in ``w`` divided by ``s``, and the prox of ``R(v / s)`` is the elastic net's with the step
``eta / s_j**2`` on coordinate ``j``. The minimiser is unchanged and the iterates stay in the
original units, while the steps no longer depend on those units.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from sklearn.utils.extmath import row_norms
from sklearn.utils.sparsefuncs import mean_variance_axis

from ._auc_objective import (ClassStatistics, gradient_and_loss,
                              minibatch_gradient, quadratic_form, rows_of)
from .models._input_scale import column_extremes
from ._prox import elastic_net_penalty, elastic_net_prox, soft_threshold
from .utils._warnings import warn

_MAX_PEAK = 10.0  # largest deviation from the mean of a preconditioned column, in scales
# The loss is 1/2 at w = 0, so at most 1/2 at the minimiser: an iterate whose loss is 1e8 times
# that has scores spread 1e4 times too wide, beyond any noise of a step that converges
_DIVERGED_LOSS = 1e8
# Relative rounding error of a centred value x - m: m is a running mean, whose sums carry an
# error relative to the magnitude of the values (a few eps per addition)
_ROUNDING = 1e-12

__all__ = ["SolverResult", "column_scale", "diverged", "dual_objective",
           "minibatch_smoothness", "pinned_scale", "solve_exact", "spam", "spam_epoch",
           "vrspam"]


@dataclass
class SolverResult:
    coef: np.ndarray
    n_passes: float
    converged: bool
    gap: float = np.nan  # last estimated relative objective gap (stochastic solvers)
    stopped: bool = False  # by the callback: the user's choice, not a failure to converge


#: P(0): the loss of the zero model (every pair's margin 0, half its squared unit), no penalty.
_ZERO_OBJECTIVE = 0.5


def diverged(loss: float) -> bool:
    """Whether an iterate with this loss (or objective, both 1/2 at ``w = 0``) shows
    diverging steps; NaN does too."""
    return not loss <= _DIVERGED_LOSS


def dual_objective(w: np.ndarray, grad: np.ndarray, loss: float, stats: ClassStatistics,
                   alpha: float, l1_ratio: float) -> float:
    """A lower bound on the optimal objective from a dual point built at ``w``.

    The loss is ``||A w - e||^2 / 2`` with ``A`` the rows ``delta'``, ``(x_i - m_+)' / sqrt(n_+)``
    and ``(x_j - m_-)' / sqrt(n_-)`` (each times the square root of its row's weight when the
    rows are weighted, ``n_+`` and ``n_-`` then the classes' total weights), and ``e`` the first
    unit vector. Fenchel duality gives,
    for every ``u``, ``P* >= u.e - ||u||^2 / 2 - R*(A'u)`` with ``R*`` the conjugate of the
    elastic net ``l1 ||.||_1 + l2 ||.||^2 / 2``: ``sum_j (|v_j| - l1)_+^2 / (2 l2)``, or the
    indicator of ``||v||_inf <= l1`` when ``l2 = 0``. On the ray ``u = s (e - A w)``, optimal
    at the minimiser for ``s = 1``, all terms are known without ``A``: ``u.e = s (1 - w.delta)``,
    ``||u||^2 / 2 = s^2 loss(w)`` and ``A'u = -s grad``. The bound is taken at the better of
    ``s = 1`` and the maximiser of a quadratic minorant (exact for pure L2); for pure L1 at the
    best feasible ``s``. ``-inf`` when ``alpha = 0``: there is no dual bound then.

    Parameters
    ----------
    w : ndarray of shape (n_features,)
    grad : ndarray of shape (n_features,)
        Gradient of the loss at ``w``.
    loss : float
        The loss (smooth part of the objective) at ``w``.
    stats : ClassStatistics
    alpha, l1_ratio : float
        The penalty.

    Returns
    -------
    float
    """
    a = 1.0 - w @ (stats.mean_pos - stats.mean_neg)
    l1, l2 = alpha * l1_ratio, alpha * (1.0 - l1_ratio)
    abs_g = np.abs(grad)
    if l2 > 0:
        def bound(s):
            return s * a - s * s * loss - np.sum(np.maximum(s * abs_g - l1, 0.0) ** 2) / (2 * l2)

        curvature = loss + (abs_g @ abs_g) / (2 * l2)
        s_quad = max(a, 0.0) / (2 * curvature) if curvature > 0 else 1.0
        return float(max(bound(1.0), bound(s_quad)))
    if l1 <= 0:
        return -np.inf
    g_max = float(abs_g.max(initial=0.0))
    s_max = l1 / g_max if g_max > 0 else np.inf
    s = min(s_max, max(a, 0.0) / (2 * loss)) if loss > 0 else 0.0
    return float(s * a - s * s * loss)


def _relative_gap(w: np.ndarray, X, y: np.ndarray, stats: ClassStatistics, alpha: float,
                  l1_ratio: float, previous: float,
                  weight: np.ndarray | None = None) -> tuple[np.ndarray, float, float]:
    """Full gradient, objective ``P(w)`` and an estimate of ``(P(w) - P*) / min(P*, P(0) - P*)``
    (one pass), ``P(0) = 1/2``.

    With ``alpha > 0`` the estimate is the certified bound ``(P(w) - D) / min(D, 1/2 - D)``
    from the dual lower bound ``D`` of :func:`dual_objective` (infinite while ``D <= 0``). The
    second term matters where a strong penalty (or features in tiny units) leaves ``P*`` just
    below ``P(0)``: relative to ``P*`` alone, any small ``w`` would pass, whatever its
    direction, which alone sets the ranking. Without a penalty there is no such bound, and it
    is the relative decrease of ``P`` since ``previous``, the value at the last check.
    """
    grad, loss = gradient_and_loss(w, X, y, stats, weight)
    value = loss + elastic_net_penalty(w, alpha, l1_ratio)
    if alpha > 0:
        lower = dual_objective(w, grad, loss, stats, alpha, l1_ratio)
        excess = max(value - lower, 0.0)
        scale = min(lower, _ZERO_OBJECTIVE - lower)
        gap = 0.0 if excess == 0 else (excess / scale if scale > 0 else np.inf)
    else:
        gap = abs(previous - value) / max(value, np.finfo(float).tiny)
    return grad, value, float(gap)


def column_scale(X, extremes: tuple[np.ndarray, np.ndarray] | None = None,
                 weight: np.ndarray | None = None) -> np.ndarray:
    """Column scales of the preconditioned stochastic solvers (see the module docstring).

    A step is limited by the largest curvature, which a column in large units sets for all
    the others: the scale is the root mean square of the centred column, so that every
    column has unit spread. It is at least a tenth of the column's largest deviation from
    its mean: otherwise the few extreme rows of a column (a rare category, an outlier) would
    get large entries, and set through the per-example smoothness ``max(L_i)`` a small step
    for all the columns. A constant column (no spread to normalise, no gradient) keeps 1.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
    extremes : (ndarray, ndarray), default=None
        The columns' smallest and largest values, when already known (as
        :class:`ClassStatistics` holds them); computed from ``X`` otherwise.
    weight : ndarray of shape (n_samples,), default=None
        Positive row weights of the mean and the root mean square (None: equal).

    Returns
    -------
    ndarray of shape (n_features,)
    """
    if sp.issparse(X):
        mean, var = mean_variance_axis(X, axis=0, weights=weight)
    elif weight is None:
        mean, var = X.mean(axis=0), X.var(axis=0)
    else:
        mean = np.average(X, axis=0, weights=weight)
        var = np.average((X - mean) ** 2, axis=0, weights=weight)
    low, high = column_extremes(X) if extremes is None else extremes
    peak = np.maximum(high - mean, mean - low)
    return np.where(high > low, np.maximum(np.sqrt(var), peak / _MAX_PEAK), 1.0)


def pinned_scale(scale: np.ndarray, stats: ClassStatistics) -> np.ndarray:
    """The column scales the stochastic solvers use: infinite for the columns constant so far.

    An infinite scale pins the coefficient (the step ``eta / s**2`` is 0) of a column that has
    no gradient but rounding error, and leaves that error out of :func:`minibatch_smoothness`
    (the column of ``X / s`` is 0).
    """
    return np.where(stats.constant, np.inf, scale)


def _unstored_sums(X, v: np.ndarray) -> np.ndarray:
    """``sum_j v_j`` over the columns that each row of the sparse ``X`` does not store.

    The total minus the row's stored part would cancel: a row that stores the columns holding
    most of the total (those far from zero) would be left with rounding error of order eps
    times the total. Instead ``v`` is split, twice, into multiples of ``eps * sigma / 2``, with
    ``sigma >= (d + 2) max |v|`` a power of 2 (``d = len(v)``), every sum of which is exact,
    and an exact remainder (Rump, Ogita and Oishi's error-free extraction): on the multiples
    the total minus the stored sum is exact, and only the last remainder, below
    ``((d + 2) eps)^2 max |v|``, is summed with rounding.

    Parameters
    ----------
    X : sparse matrix of shape (n_samples, n_features)
        CSR, without duplicate entries; only its pattern is used.
    v : ndarray of shape (n_features,)

    Returns
    -------
    ndarray of shape (n_samples,)

    References
    ----------
    Rump, S. M., Ogita, T. and Oishi, S. Accurate Floating-Point Summation Part I: Faithful
    Rounding. SIAM J. Sci. Comput. 31(1), 2008 (their ExtractVector).
    """
    stored = sp.csr_matrix((np.ones_like(X.data), X.indices, X.indptr), shape=X.shape)
    out = np.zeros(X.shape[0])
    for _ in range(2):
        top = np.abs(v).max(initial=0.0)
        if top == 0:
            return out
        sigma = 2.0 ** np.ceil(np.log2(top * (len(v) + 2)))
        high = (sigma + v) - sigma  # v rounded to those multiples; v - high is exact
        v = v - high
        out += high.sum() - stored @ high
    return out + (v.sum() - stored @ v)


def _sq_distances(X, u: np.ndarray) -> np.ndarray:
    """Squared distances of the rows of ``X`` to ``u``, those within rounding of 0 set to 0.

    Computed from centred values: the expansion ``||x||^2 - 2 x.u + ||u||^2`` would lose them
    on columns far from zero. Dense rows are centred; a sparse row's distance is the sum of
    its centred stored entries squared and of ``u_j^2`` over the columns it does not store,
    summed without cancellation (:func:`_unstored_sums`), so that it is as accurate as the
    dense one. A centred value is known up to ``_ROUNDING`` times the magnitude of ``x`` and
    ``u``.
    """
    floor = _ROUNDING**2 * (row_norms(X, squared=True) + u @ u)
    if sp.issparse(X):
        D = X.copy()
        D.data = (D.data - u[X.indices]) ** 2
        sq = np.asarray(D.sum(axis=1)).ravel() + _unstored_sums(X, u**2)
    else:
        sq = row_norms(X - u, squared=True)
    return np.where(sq > floor, sq, 0.0)


def minibatch_smoothness(X, y: np.ndarray, stats: ClassStatistics, batch_size: int,
                         scale: np.ndarray | None = None,
                         weight: np.ndarray | None = None) -> float:
    """Smoothness bound of a minibatch gradient, from the norms of the (shifted) examples.

    Example ``i``'s gradient is ``w -> (x_i - c) (x_i - m_other)' w / p_class + const``, whose
    Lipschitz constant is ``L_i = ||x_i - c|| ||x_i - m_other|| / p_class``. For minibatches of
    ``b`` out of ``n`` examples drawn without replacement the expected smoothness is
    ``n (b-1) / (b (n-1)) * mean(L_i) + (n-b) / (b (n-1)) * max(L_i)`` (Gower et al., 2019,
    Prop. 3.8, with ``mean(L_i)`` bounding ``||Q||``). Distances within rounding of zero
    count as zero, so that rows which coincide up to rounding give a bound of 0, not one of
    rounding noise whose inverse would be a huge step.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    stats : ClassStatistics
        Class counts and means (of the unscaled ``X``).
    batch_size : int
    scale : ndarray of shape (n_features,), default=None
        Column scales ``s``: the bound of the preconditioned problem, on the columns
        ``X / s`` (an infinite scale, see :func:`pinned_scale`, drops the column). None means
        no scaling.
    weight : ndarray of shape (n_samples,), default=None
        Row weights of mean 1, which multiply the examples' gradients and so their ``L_i``.

    Returns
    -------
    float
    """
    c, mean_pos, mean_neg = stats.shift, stats.mean_pos, stats.mean_neg
    if scale is not None:
        # X @ diag(1 / s) keeps sparse input sparse
        X = X @ sp.diags(1.0 / scale) if sp.issparse(X) else X / scale
        c, mean_pos, mean_neg = c / scale, mean_pos / scale, mean_neg / scale
    pos = y == 1
    dist_c = np.sqrt(_sq_distances(X, c))
    dist_m = np.empty(len(y))  # to the other class's mean
    dist_m[pos] = np.sqrt(_sq_distances(X[pos], mean_neg))
    dist_m[~pos] = np.sqrt(_sq_distances(X[~pos], mean_pos))
    L = dist_c * dist_m / np.where(pos, stats.p, 1.0 - stats.p)
    if weight is not None:
        L = L * weight
    n, b = len(L), min(batch_size, len(L))
    if n == 1:
        return float(L[0])
    return float(n * (b - 1) / (b * (n - 1)) * L.mean() + (n - b) / (b * (n - 1)) * L.max())


# ----------------------------------------------------------------------------- exact

def _equilibration(Q: np.ndarray) -> np.ndarray:
    """``d`` with ``Q / outer(d, d)`` of unit diagonal (1 where the diagonal is 0): the
    scaling that frees a quadratic's conditioning from the units of its columns."""
    d = np.sqrt(np.diag(Q))
    return np.where(d > 0, d, 1.0)


def _quadratic_prox_gradient(Q, delta, alpha, l1_ratio, w0, tol, max_steps):
    """FISTA with adaptive restart on ``w'Qw/2 - delta'w + elastic net``, equilibrated.

    It runs on ``v = D w`` with ``D = diag(d)``, ``d = sqrt(diag(Q))``: the quadratic
    ``D^-1 Q D^-1`` has a unit diagonal, so its step ``1 / L`` (``L`` its largest eigenvalue)
    does not depend on the units of the columns, and only their collinearity slows the
    iterations (on ``Q`` itself they crawled on breast_cancer's raw columns, whose spreads
    span a factor 2e5). The penalty stays in the original units, a weighted elastic net of
    ``v``: its prox soft-thresholds ``v_j`` by ``alpha * l1_ratio / (L d_j)`` and divides it
    by ``1 + alpha * (1 - l1_ratio) / (L d_j**2)``. Stops once the gradient mapping at the
    extrapolated point ``z``, ``L (z - v_new)``, is at most ``tol / 2`` times
    ``||D^-1 delta||``: the objective then has a subgradient at ``v_new`` of norm at most
    ``tol ||D^-1 delta||``.
    """
    d = _equilibration(Q)
    Qe, b = Q / np.outer(d, d), delta / d
    L = max(float(scipy.linalg.eigvalsh(Qe, subset_by_index=[len(b) - 1] * 2)[0]), 1e-12)
    threshold = alpha * l1_ratio / (L * d)
    shrink = 1.0 + alpha * (1.0 - l1_ratio) / (L * d**2)
    bound = 0.5 * tol * max(np.linalg.norm(b), 1e-300) / L

    def prox_step(z):
        return soft_threshold(z - (Qe @ z - b) / L, threshold) / shrink

    v = z = d * w0
    t = 1.0
    for k in range(1, max_steps + 1):
        v_new = prox_step(z)
        if (z - v_new) @ (v_new - v) > 0:  # restart when momentum points uphill
            t, z = 1.0, v
            v_new = prox_step(z)
        if np.linalg.norm(z - v_new) <= bound:
            return v_new / d, True, k
        t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        z = v_new + (t - 1.0) / t_new * (v_new - v)
        v, t = v_new, t_new
    return v / d, False, max_steps


def _solve_symmetric(A, b):
    """``(x, singular)`` solving ``A x = b`` for a positive semi-definite ``A``, its diagonal
    equilibrated first.

    Columns in very different units make ``A`` look ill-conditioned to LAPACK although the
    solve is accurate: equilibrated, only (nearly) collinear columns leave it so. A Cholesky
    solve of the equilibrated system serves unless it fails or LAPACK's estimate of its
    reciprocal condition number is at most ``size * eps``; then the eigenvalues of that system
    (unit diagonal, so that its rounding noise is a multiple of eps whatever the units) at most
    ``size * eps`` times the largest count as zero, and ``x`` is the least-squares solution of
    minimum norm in the equilibrated variables (which does not depend on the units of the
    columns either). ``singular`` says whether eigenvalues were dropped.
    """
    d = _equilibration(A)
    A, b = A / np.outer(d, d), b / d
    # LAPACK's condition estimate asked directly (recording scipy's LinAlgWarning would swap
    # process-wide state, unsafe under threaded fits), held to the fallback's rank threshold
    factor, info = scipy.linalg.lapack.dpotrf(A)
    if info == 0:
        rcond, info = scipy.linalg.lapack.dpocon(factor, np.abs(A).sum(axis=0).max())
    if info == 0 and rcond > len(b) * np.finfo(float).eps:
        return scipy.linalg.lapack.dpotrs(factor, b)[0] / d, False
    x, _, rank, _ = scipy.linalg.lstsq(A, b, cond=len(b) * np.finfo(float).eps)
    return x / d, rank < len(b)


def _polish_support(Q, delta, alpha, l1_ratio, w):
    """Solve the problem restricted to ``w``'s support and signs; keep it if it is optimal."""
    support = np.flatnonzero(w)
    lam1, lam2 = alpha * l1_ratio, alpha * (1.0 - l1_ratio)
    if support.size == 0:
        return w
    sign = np.sign(w[support])
    A = Q[np.ix_(support, support)] + lam2 * np.eye(support.size)
    rhs = delta[support] - lam1 * sign
    try:
        # an inaccurate candidate fails the optimality checks below
        ws, singular = _solve_symmetric(A, rhs)
    except (scipy.linalg.LinAlgError, ValueError):
        return w
    if np.any(np.sign(ws) != sign):
        return w
    # collinear columns on the support: a least-squares solution, stationary only when the
    # system has an exact one (else no point of these signs is optimal)
    if singular and np.max(np.abs(A @ ws - rhs)) > 1e-9 * np.max(np.abs(rhs)) + 1e-12:
        return w
    cand = np.zeros_like(w)
    cand[support] = ws
    grad = Q @ cand - delta + lam2 * cand
    off = np.setdiff1d(np.arange(len(w)), support)
    if off.size and np.max(np.abs(grad[off])) > lam1 * (1 + 1e-9) + 1e-12:
        return w
    return cand


def solve_exact(X, y: np.ndarray, alpha: float, l1_ratio: float, *, tol: float = 1e-10,
                max_steps: int = 100_000, stats: ClassStatistics | None = None,
                weight: np.ndarray | None = None) -> SolverResult:
    """Minimiser of the penalised objective from the ``d x d`` quadratic form.

    Constant columns get a coefficient of exactly zero: the problem is solved on the others
    (a constant column's entries in ``Q`` and ``delta`` are rounding noise). Ridge
    (``l1_ratio == 0``): one linear solve of ``(Q + alpha I) w = delta``, equilibrated, the
    least-squares solution of minimum norm in the equilibrated variables when that system is
    singular (:func:`_solve_symmetric`); a singular system with ``alpha > 0`` warns.
    Otherwise accelerated proximal gradient (FISTA with restart) on the quadratic with its
    diagonal equilibrated (:func:`_quadratic_prox_gradient`), then the sign pattern found is
    solved exactly and kept when it satisfies the optimality conditions (the result is then
    converged even if FISTA stopped at ``max_steps``). ``stats``, the
    :class:`ClassStatistics` of ``X, y`` when the caller has them, saves a pass. ``weight``
    weighs the rows (see :func:`quadratic_form`).
    """
    Q, delta = quadratic_form(X, y, weight)
    free = ~(ClassStatistics.from_data(X, y) if stats is None else stats).constant
    Q, delta = Q[np.ix_(free, free)], delta[free]
    w = np.zeros(len(free))
    if not free.any():
        return SolverResult(w, 1.0, True)
    if l1_ratio == 0:
        w[free], singular = _solve_symmetric(Q + alpha * np.eye(len(delta)), delta)
        if singular and alpha > 0:
            warn("The exact solver's linear system is ill-conditioned (nearly "
                 "collinear features and a small alpha): the coefficients may be "
                 "inaccurate. Increase alpha, or drop or combine collinear "
                 "features.", scipy.linalg.LinAlgWarning)
        return SolverResult(w, 1.0, True)
    w_free, converged, _ = _quadratic_prox_gradient(Q, delta, alpha, l1_ratio,
                                                    np.zeros(len(delta)), tol, max_steps)
    polished = _polish_support(Q, delta, alpha, l1_ratio, w_free)
    w[free] = polished
    # a kept polish meets the optimality conditions, however far FISTA got on a badly
    # conditioned (collinear) quadratic
    return SolverResult(w, 1.0, converged or polished is not w_free)


# ----------------------------------------------------------------------------- stochastic

def _batches(n: int, batch_size: int, rng: np.random.Generator):
    order = rng.permutation(n)
    return [order[i:i + batch_size] for i in range(0, n, batch_size)]


def spam_epoch(w: np.ndarray, X, y: np.ndarray, stats: ClassStatistics,
               step: float | np.ndarray, alpha: float, l1_ratio: float, batch_size: int,
               rng: np.random.Generator, weight: np.ndarray | None = None) -> np.ndarray:
    """One pass of proximal SGD over ``X`` in random minibatches, constant ``step``.

    ``step`` may be per coordinate (the preconditioned step of the module docstring).
    ``weight`` (mean 1) multiplies each example's gradient. The update is inherently
    sequential, so the loop runs over minibatches (not examples).
    """
    prox = elastic_net_prox(step, alpha, l1_ratio)
    for idx in _batches(X.shape[0], batch_size, rng):
        g = minibatch_gradient(w, X[idx], y[idx], stats, weight=rows_of(weight, idx))
        w = prox(w - step * g)
    return w


def spam(X, y: np.ndarray, stats: ClassStatistics, *, alpha: float, l1_ratio: float,
         step: float | np.ndarray, max_iter: int, batch_size: int, rng: np.random.Generator,
         tol: float = 0.0, w0: np.ndarray | None = None, callback: Callable | None = None,
         verbose: int = 0, weight: np.ndarray | None = None) -> SolverResult:
    """SPAM: proximal SGD, step ``step / sqrt(k)`` in pass ``k``, at most ``max_iter`` passes.

    ``step`` may be per coordinate (the preconditioned step of the module docstring).
    ``weight``, row weights of mean 1, weighs the examples (:func:`spam_epoch`).
    ``callback({"coef": w, "n_iter": k})`` runs after every pass; returning the object
    ``False`` stops the run.

    After every pass, one full-gradient pass at the iterate gives the same relative objective
    gap estimate as :func:`vrspam`'s stopping test (:func:`_relative_gap`); the run stops once
    it is at most ``tol``. That check costs two products with ``X``, little next to the pass's
    ``n / batch_size`` minibatch steps, and is not counted in ``n_passes``. The result's
    ``gap`` is the estimate at the returned iterate. A run whose loss shows divergence
    (:func:`diverged`) stops there.

    References
    ----------
    Natole, M., Ying, Y. and Lyu, S. Stochastic Proximal Algorithms for AUC Maximization.
    ICML 2018.
    """
    w = np.zeros(X.shape[1]) if w0 is None else w0.copy()
    value, gap = np.inf, np.nan
    for k in range(1, max_iter + 1):
        w = spam_epoch(w, X, y, stats, step / np.sqrt(k), alpha, l1_ratio, batch_size, rng,
                       weight)
        _, value, gap = _relative_gap(w, X, y, stats, alpha, l1_ratio, value, weight)
        if verbose:
            print(f"SPAM pass {k}: objective {value:.8g}, estimated gap {gap:.2e}")
        if diverged(value):
            return SolverResult(w, float(k), False, gap)
        if callback is not None and callback({"coef": w.copy(), "n_iter": float(k)}) is False:
            return SolverResult(w, float(k), gap <= tol, gap, stopped=True)
        if gap <= tol:
            return SolverResult(w, float(k), True, gap)
    return SolverResult(w, float(max_iter), False, gap)


def vrspam(X, y: np.ndarray, stats: ClassStatistics, *, alpha: float, l1_ratio: float,
           step: float | np.ndarray, max_iter: int, inner_iter: int, batch_size: int,
           rng: np.random.Generator, tol: float, w0: np.ndarray | None = None,
           callback: Callable | None = None, verbose: int = 0,
           weight: np.ndarray | None = None) -> SolverResult:
    """VRSPAM: one SPAM pass as warm start, then proximal SVRG with a constant step.

    Every outer loop computes the full gradient ``mu`` at the snapshot ``w_s`` (one pass),
    then runs ``inner_iter`` minibatch steps
    ``w <- prox(w - step * (g_B(w) - g_B(w_s) + mu))``. The per-example gradients are affine
    in ``w``, so ``g_B(w) - g_B(w_s)`` is one product with the minibatch. Stops when the
    relative objective gap at a snapshot, estimated from the same pass by
    :func:`_relative_gap` (a duality-gap bound when ``alpha > 0``), is at most ``tol``, or
    after ``max_iter`` passes (a pass is ``n`` example gradients). An inner loop that would
    end after ``max_iter - 1`` passes is cut to end there, leaving a pass for a last check
    at the returned point. When no pass is left for it (``max_iter < 2``, or the cut would
    leave no step and the loop runs to ``max_iter``), the returned point is checked with an
    extra full gradient, not counted, as :func:`spam` checks. The result's ``gap`` is thus
    always the estimate at the returned point. A run whose loss shows divergence
    (:func:`diverged`) stops there.
    ``step`` may be per coordinate (the preconditioned step of the module docstring), and
    ``weight``, row weights of mean 1, weighs the examples (:func:`spam_epoch`).
    ``callback({"coef": w, "n_iter": passes})`` runs after the warm start and every outer
    loop; returning the object ``False`` stops the run.

    References
    ----------
    Dan, S. and Sahoo, D. Variance Reduced Stochastic Proximal Algorithm for AUC
    Maximization. arXiv:1911.03548 (ECML PKDD 2021).
    Xiao, L. and Zhang, T. A Proximal Stochastic Gradient Method with Progressive Variance
    Reduction. SIAM J. Optim. 24(4), 2014.
    """
    n = X.shape[0]
    per_epoch = -(-n // batch_size)
    w = np.zeros(X.shape[1]) if w0 is None else w0.copy()
    w = spam_epoch(w, X, y, stats, step, alpha, l1_ratio, batch_size, rng, weight)
    passes = 1.0
    if verbose:
        print("VRSPAM warm start: 1 SPAM pass")
    if callback is not None and callback({"coef": w.copy(), "n_iter": passes}) is False:
        return SolverResult(w, passes, False, stopped=True)
    value, gap = np.inf, np.nan
    checked = False
    prox = elastic_net_prox(step, alpha, l1_ratio)
    while passes + 1 <= max_iter:
        mu, value, gap = _relative_gap(w, X, y, stats, alpha, l1_ratio, value, weight)
        checked = True
        passes += 1
        if verbose:
            print(f"VRSPAM pass {passes:g}: objective {value:.8g}, estimated gap {gap:.2e}")
        if diverged(value) or gap <= tol:
            return SolverResult(w, passes, gap <= tol, gap)
        batches = []  # whole epochs (of per_epoch minibatches each), enough for either limit
        while len(batches) < inner_iter and passes + len(batches) / per_epoch < max_iter:
            batches.extend(_batches(n, batch_size, rng))
        ends = passes + np.cumsum([len(idx) for idx in batches[:inner_iter]]) / n
        # an inner loop longer than the passes left is cut to them, not skipped (which would
        # return the warm start), and ends a pass early when that leaves steps: the last check
        # then fits, at the returned point
        cut = np.searchsorted(ends, [max_iter - 1 + 1e-9, max_iter + 1e-9], side="right")
        batches = batches[:cut[0] or cut[1]]
        if not batches:
            break
        snapshot = w
        for idx in batches:
            v = minibatch_gradient(w - snapshot, X[idx], y[idx], stats, affine=False,
                                   weight=rows_of(weight, idx)) + mu
            w = prox(w - step * v)
        passes = float(ends[len(batches) - 1])
        checked = False
        if callback is not None and callback({"coef": w.copy(), "n_iter": passes}) is False:
            return SolverResult(w, passes, False, gap, stopped=True)
    if not checked:
        # no pass was left for a check at the returned point (max_iter < 2, or cutting the
        # last loop a pass early left no step): one extra full gradient, as SPAM makes
        _, value, gap = _relative_gap(w, X, y, stats, alpha, l1_ratio, value, weight)
        if verbose:
            print(f"VRSPAM at pass {passes:g}: objective {value:.8g}, estimated gap {gap:.2e}")
    return SolverResult(w, passes, not diverged(value) and gap <= tol, gap)
