"""Solvers for trimmed linear M-estimation: SMART and concentration steps.

The problem, for a linear model ``s_i = x_i @ W + b`` with per-sample loss
``f_i`` and ``h`` kept samples, is::

    min_{W, b, w}  (1 / h) * sum_i w_i f_i(W, b) + alpha * R(W)
    s.t.           w in Delta_h = {w in [0, 1]^n : sum(w) = h}

optionally with a least kept weight per group of samples (per class). The solvers
work on preconditioned columns ``Z = (X - offset) / scale`` (see
:func:`column_scaling`); the penalty is then taken of ``W / scale``, the
coefficients in the original units, so the minimiser is that of the problem in
``X``. Plain functions over arrays; no scikit-learn estimators here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.utils.extmath import row_norms

from skrate._capped_simplex import project_capped_simplex
from skrate._kept_set import KeptSet, keep_first
from skrate._prox import elastic_net_penalty, elastic_net_prox
from skrate.utils._binary import power_of_two_above
from skrate.utils._sorting import stable_argsort

# Bound on the second derivative of each loss in the score: the Lipschitz constant of
# grad f_i is CURVATURE[loss] * ||(x_i, 1)||^2.
CURVATURE = {"squared": 1.0, "logistic": 0.25, "multinomial": 0.5}


# --------------------------------------------------------------------------- losses
def linear_loss(loss: str, S: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample losses and their derivatives in the scores.

    Parameters
    ----------
    loss : {"squared", "logistic", "multinomial"}
    S : ndarray of shape (m, K)
        Scores; ``K = 1`` for "squared" and "logistic".
    Y : ndarray
        Targets: real values (m,) for "squared", labels in {-1, +1} (m,) for
        "logistic", a one-hot matrix (m, K) for "multinomial".

    Returns
    -------
    losses : ndarray of shape (m,)
    dS : ndarray of shape (m, K)
        ``d f_i / d s_i``; for a linear model the gradient of ``f_i`` is
        ``x_i^T dS_i`` (and ``dS_i`` for the intercept), so tables store ``dS`` only.
    """
    if loss == "squared":
        r = S[:, 0] - Y
        # a gross target (|r| > 1e154) has an inf loss: still ranked last, so trimmed
        with np.errstate(over="ignore"):
            return 0.5 * r * r, r[:, None]
    if loss == "logistic":
        z = Y * S[:, 0]
        return np.logaddexp(0.0, -z), (-Y * expit(-z))[:, None]
    # log-sum-exp by hand: scipy's array-API wrapper costs more than the maths here
    shifted = S - S.max(axis=1, keepdims=True)
    E = np.exp(shifted)
    total = E.sum(axis=1, keepdims=True)
    return (np.log(total) - np.sum(shifted * Y, axis=1, keepdims=True))[:, 0], E / total - Y


def loss_curvature(loss: str, S: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Second derivatives ``d^2 f_i / d s_ik^2`` of the losses in their scores.

    Parameters
    ----------
    loss : {"squared", "logistic", "multinomial"}
    S : ndarray of shape (m, K)
        Scores, as for :func:`linear_loss`.
    Y : ndarray
        Targets, as for :func:`linear_loss`.

    Returns
    -------
    ndarray of shape (m, K)
        At most ``CURVATURE[loss]``: 1, ``p (1 - p)`` for the probability ``p`` of
        the label, ``p_k (1 - p_k)`` for that of class ``k``.
    """
    if loss == "squared":
        return np.ones_like(S)
    if loss == "logistic":
        p = expit(Y * S[:, 0])
        return (p * (1.0 - p))[:, None]
    E = np.exp(S - S.max(axis=1, keepdims=True))
    p = E / E.sum(axis=1, keepdims=True)
    return p * (1.0 - p)


# ------------------------------------------------------------------------- penalties
# l1 / l2 share the elastic-net prox of skrate._prox (l1_ratio 1 / 0); l0 is the
# non-convex option, prox by hard thresholding.
_L1_RATIO = {"l1": 1.0, "l2": 0.0}
# Degree p of homogeneity, R(c W) = c^p R(W): rescaling the target by c rescales the
# minimiser by c when alpha is rescaled by c^(p - 2) ("none": any p)
PENALTY_DEGREE = {"l2": 2, "l1": 1, "l0": 0, "none": 2}


def hard_threshold(x: np.ndarray, t: float) -> np.ndarray:
    """Prox of ``t * ||.||_0`` (non-convex): keep entries with ``x^2 > 2 t``."""
    return np.where(x * x > 2.0 * t, x, 0.0)


def penalty_value(penalty: str, W: np.ndarray) -> float:
    """``R(W)``: ``||W||^2 / 2``, ``||W||_1``, ``||W||_0`` or 0."""
    if penalty in _L1_RATIO:
        return elastic_net_penalty(W.ravel(), 1.0, _L1_RATIO[penalty])
    if penalty == "l0":
        return float(np.count_nonzero(W))
    return 0.0


def penalty_prox(penalty: str, t: float | np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Prox of ``t * R``, as a function of ``W``; an array ``t`` weights each coordinate."""
    if penalty in _L1_RATIO:
        return elastic_net_prox(t, 1.0, _L1_RATIO[penalty])
    if penalty == "l0":
        return lambda W: hard_threshold(W, t)
    return lambda W: W


def penalty_weight(alpha: float, scale: np.ndarray) -> np.ndarray:
    """``alpha / scale**2``: the weight of a coefficient's penalty taken in the original units
    of a column that was divided by ``scale``. A scale beyond ``1e154`` gives 0 (no penalty, to
    the precision of floats) and one below ``1e-154`` inf (the coefficient is held at 0),
    without overflow warnings."""
    with np.errstate(over="ignore", divide="ignore"):
        return alpha / scale / scale


def kept_sum(w: np.ndarray, v: np.ndarray) -> float:
    """``w @ v`` over the rows with ``w > 0``: a trimmed row's loss may be inf (a gross
    target) and ``0 * inf`` is NaN."""
    kept = w > 0
    return float(w[kept] @ v[kept])


def _outward_cumsum(v: np.ndarray, m: int) -> np.ndarray:
    """Partial sums of ``v`` outward from entry ``m``: ``c[j] - c[i]`` is ``sum(v[i:j])``, and
    never subtracts entries beyond ``i:j``, so gross values at the ends cannot cancel the ones
    in between (``c[m] = 0``)."""
    c = np.zeros(v.size + 1)
    c[m + 1 :] = np.cumsum(v[m:])
    c[:m] = -np.cumsum(v[:m][::-1])[::-1]
    return c


def _fill(caps: np.ndarray, mass: float) -> np.ndarray:
    """The weight each entry takes when ``mass`` is poured over them in order, each up to its cap:
    the greedy minimiser of a linear cost over ``{0 <= w <= caps, sum w = mass}`` with the
    entries sorted by cost (the last one taken in part)."""
    return np.clip(mass - (np.cumsum(caps) - caps), 0.0, caps)


def _weighted_trimmed_location(y, weights, h, centre):
    """:func:`trimmed_location` of values ``y`` of masses ``weights``, keeping mass ``h``
    (the last value kept in part). The spread of a window of mass ``h`` is concave as the
    window slides between two values, so the least is at a window that starts or ends at
    a value's edge: those ``2n`` windows are compared."""
    if not centre:
        order = np.argsort(np.abs(y), kind="stable")
        a = np.abs(y)[order]
        kept = _fill(weights[order], h)
        unit = power_of_two_above(a[kept > 0][-1])
        return 0.0, float(np.sqrt(kept @ (a / unit) ** 2 / h) * unit)
    order = np.argsort(y, kind="stable")
    ys, s = y[order], weights[order]
    C = np.concatenate([[0.0], np.cumsum(s)])  # mass before each value
    m = int(np.searchsorted(C, C[-1] / 2, side="right")) - 1  # the weighted median's value
    z = ys - ys[m]
    unit = power_of_two_above(np.median(np.abs(z)))
    z = z / unit
    starts = np.concatenate([C[:-1], C[1:] - h])
    starts = np.clip(starts, 0.0, C[-1] - h)

    def mass_sums(v):
        """Sums of ``s * v`` over every window ``[a, a + h]`` of mass, ``a`` in ``starts``."""
        c = _outward_cumsum(s * v, m)

        def upto(t):  # the sum over mass [0, t], less that over [0, C[m]]
            k = np.clip(np.searchsorted(C, t, side="right") - 1, 0, v.size - 1)
            return c[k] + (t - C[k]) * v[k]

        return upto(starts + h) - upto(starts)

    with np.errstate(over="ignore", invalid="ignore"):
        s1, s2 = mass_sums(z), mass_sums(z * z)
        spread = s2 - s1 * s1 / h
    j = np.argmin(np.where(np.isnan(spread), np.inf, spread))
    return float(ys[m] + s1[j] / h * unit), float(np.sqrt(max(spread[j], 0.0) / h) * unit)


def trimmed_location(
    y: np.ndarray, h: float, centre: bool = True, weights: np.ndarray | None = None
) -> tuple[float, float]:
    """Location and scale of the ``h`` values of ``y`` with the least spread.

    With ``centre``, the mean of the ``h`` consecutive sorted values with the least sum
    of squared deviations from their mean, and the root mean square of those deviations
    (the least trimmed squares location and scale); without, 0 and the root mean square
    of the ``h`` values smallest in magnitude. The other values, however gross (up to
    the largest floats), move neither. With ``weights``, each value has that mass, and
    ``h`` is the mass kept (a value may be kept in part).
    """
    if weights is not None:
        return _weighted_trimmed_location(y, weights, h, centre)
    h = int(h)
    if not centre:
        kept = np.partition(np.abs(y), h - 1)[:h]
        unit = power_of_two_above(kept[-1])  # squares of the kept values cannot overflow
        return 0.0, float(np.sqrt(np.mean((kept / unit) ** 2)) * unit)
    ys = np.sort(y)
    m = ys.size // 2
    z = ys - ys[m]  # centred at the median: no cancellation in s2 - s1^2 / h
    # in units of the median deviation, which gross values do not move: squares of targets
    # beyond 1e154 overflowed (below 1e-162, underflowed), and every window read alike
    unit = power_of_two_above(np.median(np.abs(z)))
    z = z / unit

    def window_sums(v):
        c = _outward_cumsum(v, m)
        return c[h:] - c[:-h]

    with np.errstate(over="ignore", invalid="ignore"):
        s1 = window_sums(z)
        s2 = window_sums(z * z)
        spread = s2 - s1 * s1 / h  # h times the variance of each window
    j = np.argmin(np.where(np.isnan(spread), np.inf, spread))  # NaN: inf - inf, gross values
    return float(ys[m] + s1[j] / h * unit), float(np.sqrt(max(spread[j], 0.0) / h) * unit)


# ------------------------------------------------------------------------ the model
def column_scaling(X: np.ndarray, fit_intercept: bool) -> tuple[np.ndarray, np.ndarray]:
    """Offset and scale of each column, for the solvers to work on ``(X - offset) / scale``.

    First-order steps are set by the largest curvature, so columns on very
    different scales (an income next to an age) leave the small-scale directions
    and the intercept nearly still. The offset is the mean with an intercept
    (which absorbs it; 0 without), the scale the root mean square of ``X -
    offset``: the diagonal of the curvature then is 1. Both are taken of the column
    clipped at Tukey's far-out fences (quartiles -/+ 3 interquartile ranges): a few
    gross values (sentinel codes, unit errors), which the trimmed fit leaves out,
    would otherwise set the scale and squeeze the spread of the rest to nearly
    nothing. A column whose quartiles coincide (mostly one value) is not
    clipped; a constant one is scaled by 1.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    fit_intercept : bool

    Returns
    -------
    offset, scale : ndarray of shape (n_features,)
    """
    q1, q3 = np.percentile(X, [25, 75], axis=0)
    # moments in units of the quartiles' magnitude: squares beyond 1e154 overflowed
    unit = power_of_two_above(np.maximum(np.abs(q1), np.abs(q3)))
    X, q1, q3 = X / unit, q1 / unit, q3 / unit
    iqr = q3 - q1
    clipped = np.where(iqr > 0, np.clip(X, q1 - 3.0 * iqr, q3 + 3.0 * iqr), X)
    flat = np.ptp(X, axis=0) == 0
    # a constant column's offset is its value, exactly: a mean's rounding (1e234 at 1e250) left
    # behind as the centred column overflowed the solvers
    offset = np.where(flat, X[0], clipped.mean(axis=0)) if fit_intercept and X.shape[0] else np.zeros(X.shape[1])
    scale = np.sqrt(np.mean((clipped - offset) ** 2, axis=0))
    return offset * unit, np.where(flat, 1.0, scale * unit)


#: Entries of the scaled columns beyond this many spreads from the centre are held there.
_FAR = 2.0**64


def held_within(Z: np.ndarray) -> np.ndarray:
    """The scaled columns of :func:`column_scaling` with entries beyond ``2**64`` spreads held
    at ``+-2**64``. Such an entry (a sentinel code, a unit error) makes its row an outlier the
    trimmed fit sets aside, whatever its exact size; left as it is, one of ``1e160`` squared to
    inf in the curvature bounds and the losses, and the fit failed or returned NaN."""
    return np.clip(Z, -_FAR, _FAR)


@dataclass
class TrimmedProblem:
    """Data and model of a trimmed linear M-estimation problem.

    ``coef_scale`` (default ones): the penalty applies to ``W / coef_scale``, the
    coefficients for the columns ``X * coef_scale`` (with ``X`` preconditioned by
    :func:`column_scaling`, the original units). ``groups`` and ``floors``: each
    group ``k`` of samples keeps a weight of at least ``floors[k]``. ``caps``
    (default ones): the sample weights, the most weight each sample can keep; the
    solvers' weights ``w`` then lie in ``0 <= w_i <= caps_i``, ``sum_i w_i = h``, and
    ``w_i / caps_i`` is the share of sample ``i`` kept.
    """

    X: np.ndarray
    Y: np.ndarray
    loss: str
    h: float
    penalty: str = "l2"
    alpha: float = 0.0
    fit_intercept: bool = True
    coef_scale: np.ndarray | None = None
    groups: np.ndarray | None = None
    floors: np.ndarray | None = None
    caps: np.ndarray | None = None
    n_scores: int = field(init=False)

    group_rows: list = field(init=False, repr=False, compare=False)
    floor_counts: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        self.n_scores = self.Y.shape[1] if self.loss == "multinomial" else 1
        if self.coef_scale is None:
            self.coef_scale = np.ones(self.X.shape[1])
        # the rows of each group with a floor, in increasing order, and how many of them
        # the floor keeps (ceil(floors[k]), at most the group): found once, not at every
        # weight step, and shared with KeptSet so both select alike
        self.group_rows = []
        self.floor_counts = np.zeros(0, dtype=np.intp)
        if self.floors is not None:
            order = np.argsort(self.groups, kind="stable")
            counts = np.bincount(self.groups, minlength=len(self.floors))
            self.group_rows = np.split(order, np.cumsum(counts)[:-1])[: len(self.floors)]
            sizes = np.array([rows.size for rows in self.group_rows], dtype=np.intp)
            ceil = np.ceil(np.asarray(self.floors, dtype=float))
            self.floor_counts = np.clip(ceil, 0, sizes).astype(np.intp)

    def scores(self, W, b):
        return self.X @ W + b

    def losses(self, W, b):
        return linear_loss(self.loss, self.scores(W, b), self.Y)[0]

    def penalty_value(self, W) -> float:
        """``R`` of the coefficients in the original units, ``W / coef_scale``."""
        return penalty_value(self.penalty, W / self.coef_scale[:, None])

    def prox(self, W, t: float):
        """Prox of ``t * alpha * R(W / s)``: per coordinate ``s * prox_{t alpha R / s^2}(W / s)``.

        ``R`` being separable, the substitution ``W = s V`` turns it into the prox of
        ``R`` with a step weighted per coordinate.
        """
        return self.prox_at(t)(W)

    def prox_at(self, t: float) -> Callable[[np.ndarray], np.ndarray]:
        """:meth:`prox` at step ``t``, as a function of ``W``: its weights are computed once,
        for an epoch's many minibatch steps at one step size."""
        if self.penalty == "none":
            return lambda W: W
        s = self.coef_scale[:, None]
        with np.errstate(over="ignore"):  # inf holds the coefficient at 0, as penalty_weight's
            weight = t * penalty_weight(self.alpha, s)
        prox = penalty_prox(self.penalty, weight)
        return lambda W: s * prox(W / s)

    def objective(self, W, b, w) -> float:
        """``(1/h) sum_i w_i f_i + alpha R(W)``."""
        return kept_sum(w, self.losses(W, b)) / self.h + self.alpha * self.penalty_value(W)

    def keep_smallest(self, losses: np.ndarray) -> np.ndarray:
        """The exact minimiser over the weights: 1 on the ``h`` smallest losses.

        With floors the problem is a linear program over a polymatroid, solved
        greedily: each group's ``floors[k]`` smallest losses first (of equal losses,
        the first rows), then the smallest of the rest. With caps, each row takes
        up to its cap in that order until the mass is reached (the last in part).
        """
        return self.greedy(losses)[0]

    def kept_mask(self, w: np.ndarray) -> np.ndarray:
        """The rows kept more than half."""
        return w > 0.5 if self.caps is None else w > 0.5 * self.caps

    def _greedy_capped(self, losses: np.ndarray, bounds: bool) -> tuple:
        """:meth:`greedy` with caps: one stable sort by loss (NaN last, of equal losses
        the first rows), each group's floor filled in that order within the group, then
        the mass left over the capacity left."""
        caps = self.caps
        order = stable_argsort(losses)
        c = caps[order]
        w_floor = np.zeros_like(c)
        if self.floors is not None:
            by_group = np.argsort(self.groups[order], kind="stable")  # group, then loss
            g = self.groups[order][by_group]
            cb = c[by_group]
            before = np.cumsum(cb) - cb
            before -= before[np.searchsorted(g, g)]  # mass before a row within its group
            w_floor[by_group] = np.clip(np.asarray(self.floors, dtype=float)[g] - before, 0.0, cb)
        spare = c - w_floor
        mass = self.h - (0.0 if self.floors is None else float(np.sum(self.floors)))
        w_rest = _fill(spare, mass)
        w = np.empty_like(c)
        w[order] = np.where(w_rest >= spare, c, w_floor + w_rest)
        if not bounds:
            return w, None
        kept, free = w > 0, w < caps
        top = np.max(losses[kept]) if kept.any() else -np.inf
        low = np.min(losses[free]) if free.any() else np.inf
        return w, None, float(top), float(low)

    def greedy(self, losses: np.ndarray, bounds: bool = False) -> tuple:
        """:meth:`keep_smallest`, the rows left after the floors (None without floors)
        and, with ``bounds``, the largest kept and the least trimmed loss.

        No sort: a floor keeps the losses up to its group's ``floors[k]``-th smallest,
        of those equal to it the first rows (as a stable sort by group and loss
        would; NaN last), in ``O(n_k)``; the rest is one ``argpartition``. With caps,
        one sort (:meth:`_greedy_capped`), and the least trimmed loss is the least of
        the rows not kept in full.
        """
        if self.caps is not None:
            return self._greedy_capped(losses, bounds)
        h = round(self.h)
        w = np.zeros(losses.shape[0])
        rest, tops = None, []  # tops: the largest loss each floor keeps
        for rows, f in zip(self.group_rows, self.floor_counts.tolist()):
            if f <= 0:
                continue
            v = losses[rows]
            if f == rows.size:
                w[rows] = 1.0
                tops.append(v.max())
                continue
            keep, t = keep_first(v, rows, f)
            if t != t:  # NaN: all the numbers, then the first NaN
                keep = ~np.isnan(v)
                keep[np.flatnonzero(~keep)[: f - np.count_nonzero(keep)]] = True
            w[rows] = keep
            tops.append(t)
        if self.floors is not None:
            rest = np.flatnonzero(w == 0)
        m = h - int(w.sum())
        l_rest = losses if rest is None else losses[rest]
        if m > 0:
            part = np.argpartition(l_rest, m - 1)
            w[part[:m] if rest is None else rest[part[:m]]] = 1.0
        if not bounds:
            return w, rest
        # max and min propagate NaN, as the maximum over the kept rows would
        if m > 0:
            top = np.max([l_rest[part[m - 1]], *tops])
            low = l_rest[part[m:]].min() if m < l_rest.size else np.inf
        else:
            top = np.max(tops) if tops else -np.inf
            low = l_rest.min() if l_rest.size else np.inf
        return w, rest, float(top), float(low)

    def project(self, v: np.ndarray) -> np.ndarray:
        """Euclidean projection onto the weights' set."""
        return project_capped_simplex(v, self.h, self.groups, self.floors, self.caps)

    def start_intercept(self) -> np.ndarray:
        """Intercept of SMART's start, ``W = 0``.

        For the squared loss the trimmed location (:func:`trimmed_location`, the best
        intercept at ``W = 0``): unlike the mean of all of ``Y``, outliers do not move
        it towards themselves. 0 for the classification losses.
        """
        b = np.zeros(self.n_scores)
        if self.fit_intercept and self.loss == "squared":
            h = self.h if self.caps is not None else round(self.h)
            b[0] = trimmed_location(self.Y, h, weights=self.caps)[0]
        return b

    def start_model(self) -> tuple[np.ndarray, np.ndarray]:
        """SMART's start of the model: ``W = 0`` and :meth:`start_intercept`."""
        return np.zeros((self.X.shape[1], self.n_scores)), self.start_intercept()

    def start_weights(self, losses: np.ndarray) -> np.ndarray:
        """SMART's start of the weights, given the ``losses`` at :meth:`start_model`
        (taken by the caller, which needs them anyway for its tables).

        For the squared loss the weights keep the ``h`` smallest losses there (the
        targets nearest the trimmed location): gross targets are trimmed from the first
        step on, where uniform weights would let them dominate the first gradients and
        set the scale of the stopping test. For classification every loss is equal at
        the start (log 2, log K) and so every weight optimal; the uniform ``h / n``
        favours no sample (as for a fractional ``h``, which the exact weights miss),
        with caps the same share ``h / sum(caps)`` of every cap.
        """
        if self.loss == "squared" and (self.caps is not None or float(self.h).is_integer()):
            return self.keep_smallest(losses)
        return self.uniform_weights()

    def uniform_weights(self) -> np.ndarray:
        """The same share of every sample: ``h / n``, or ``h / sum(caps)`` of each cap."""
        if self.caps is None:
            n = self.X.shape[0]
            return np.full(n, self.h / n)
        return self.caps * (self.h / float(np.sum(self.caps)))

    def lipschitz(self) -> tuple[float, float]:
        """Lipschitz constants of the gradient in ``(W, b)`` of the smooth part.

        Returns ``(L_full, L_terms)``: ``L_full`` bounds the whole smooth part
        ``(1/h) sum_i w_i f_i`` for any ``w`` in the capped simplex, ``L_terms`` each
        term ``(n/h) f_i`` of its average form ``(1/n) sum_i (n w_i / h) f_i`` in
        the mean-square sense: ``sqrt(mean_i L_i^2)``.
        """
        kappa = CURVATURE[self.loss]
        X = self.X
        row_sq = row_norms(X, squared=True) + float(self.fit_intercept)
        n, d = X.shape
        # with caps a term's weight is at most its cap: row i's curvature scales by it
        scaled = row_sq if self.caps is None else self.caps * row_sq
        if d + self.fit_intercept <= 2000:
            Xt = np.hstack([X, np.ones((n, 1))]) if self.fit_intercept else X
            gram = Xt.T @ Xt if self.caps is None else Xt.T @ (self.caps[:, None] * Xt)
            lam = float(np.linalg.eigvalsh(gram)[-1])
        else:  # Frobenius norm: a cheap upper bound
            lam = float(scaled.sum())
        # mean-square (not worst-case) smoothness of the terms: what bounds the
        # variance of the minibatch gradient differences
        l_ms = float(np.sqrt(np.mean(scaled * scaled)))
        return kappa * lam / self.h, kappa * n * l_ms / self.h


@dataclass
class TrimmedFit:
    """Result of a trimmed solver."""

    coef: np.ndarray  # (d, K)
    intercept: np.ndarray  # (K,)
    weights: np.ndarray  # (n,), in the capped simplex
    n_iter: int
    objective: list = field(default_factory=list)  # after each epoch / C-step
    converged: bool = False
    # False when the model is an exact refit (concentration steps) short of its tol
    refit_converged: bool = True


# ---------------------------------------------------------------------------- SMART
# From this many rows on, SMART's exact weight steps use KeptSet (below, the full
# selection costs less than its bookkeeping); the weights are the same either way.
_KEPT_SET_MIN_ROWS = 20000
_KEPT_SET_BAND = 4  # rows either side of a cut, in minibatches
_CAPPED_SELECTIONS = 16  # most exact weight steps an epoch with sample weights (each a sort)


def _ordered_ties(losses: np.ndarray) -> np.ndarray:
    """``losses`` with each run of equal values raised by 0, 1, 2, ... units in the last place,
    in row order.

    A classifier starts at log K on every row: the weight block's cut then falls among n equal
    losses, where the incremental selection's zones hold them all and every step of the first
    epoch took an O(n) selection (quadratic in n). Ordered by row, the tie rule of
    :meth:`TrimmedProblem.keep_smallest`, the ties part within about ``n`` units in the last
    place (1e-10 relative at a million rows), and the zones hold a band of rows again.
    """
    order = np.lexsort((np.arange(losses.shape[0]), losses))
    v = losses[order]
    run = np.r_[True, v[1:] != v[:-1]]  # NaN != NaN: each its own run
    if run.all():
        return losses
    start = np.maximum.accumulate(np.where(run, np.arange(v.shape[0]), 0))
    out = losses.copy()
    with np.errstate(invalid="ignore"):  # spacing(inf) is NaN: infinite losses stay as they are
        ulp = np.where(np.isfinite(v), np.spacing(np.abs(v)), 0.0)
    out[order] = v + (np.arange(v.shape[0]) - start) * ulp
    return out


def smart(
    problem: TrimmedProblem,
    *,
    variance_reduction: str = "saga",
    batch_size: int | str = "auto",
    block: str = "cyclic",
    weight_step: float = np.inf,
    max_iter: int = 100,
    tol: float = 1e-4,
    rng: np.random.Generator | None = None,
    step_size: float | None = None,
    step_scale: float = 1.0,
    step_growth: float = 1.5,
    polish: bool = True,
) -> TrimmedFit:
    """Stochastic variance-reduced block prox-gradient on ``(W, b)`` and ``w``.

    The ``(W, b)`` block takes minibatch prox-gradient steps with a variance-
    reduced gradient: a table of per-sample score derivatives ``dS_i`` (one row per
    sample, ``K`` numbers, not a full gradient) and its weighted aggregate
    ``X^T (w/h * dS)``. "saga" refreshes the rows of the sampled minibatch at each
    step; "svrg" only between epochs. Both refresh the whole table at the end of
    each accepted epoch, in the pass that computes the exact objective, so the
    aggregate is then the exact gradient. The ``w`` block takes
    projected-gradient steps onto the capped simplex; its gradient is the loss
    vector ``f / h``, read from a table of the latest per-sample losses, so a
    ``w`` step costs no pass over the data; only the rows whose weight changed
    update the aggregate.

    ``block="cyclic"`` updates ``(W, b)`` then ``w`` at every iteration;
    ``block="random"`` updates one block per iteration, drawn uniformly.

    Steps: ``(W, b)`` uses ``step_scale / L(b)`` with the minibatch smoothness
    ``L(b) = n(b-1)/(b(n-1)) L_full + (n-b)/(b(n-1)) L_terms`` built from the
    Lipschitz constants of :meth:`TrimmedProblem.lipschitz`. The objective is
    linear in ``w``: that block's Lipschitz constant is 0 and its step ``1/0``
    unbounded, so the default ``weight_step=inf`` takes the exact block minimiser
    (weight 1 on the ``h`` smallest table losses, :meth:`TrimmedProblem.keep_smallest`;
    it changes only when a touched row crosses the cut, and from
    ``_KEPT_SET_MIN_ROWS`` rows on it is updated from the touched rows and those
    near the cut, not by a pass over all ``n``: same weights, see :class:`KeptSet`; with
    caps it is a sort, run at most ``_CAPPED_SELECTIONS`` times an epoch).
    A finite ``weight_step`` takes
    the projected-gradient step ``w <- P(w - weight_step * f / fbar)`` onto the
    capped simplex instead, with ``fbar`` the current weighted mean loss (so the
    step is free of the loss scale); its fixed points are the same.

    The exact objective is evaluated once per epoch (one pass). The ``(W, b)``
    step starts from the Lipschitz value above and grows by ``step_growth`` after
    each epoch that lowered the objective; an epoch that raised it is undone, the
    step halved and growth stopped. So the recorded objective is non-increasing.

    Stopping: after an accepted epoch, the run has converged when the norm of the
    prox-gradient mapping of the ``(W, b)`` block (full gradient at the current
    weights, step ``1 / L(b)``) is at most ``tol`` times a reference, and the
    weights are optimal for the exact losses to within ``tol`` (relative) of the
    weighted loss. The reference is the norm of that mapping at the start
    (:meth:`TrimmedProblem.start_model`), or the median norm of the per-sample gradients
    there when smaller, but at least ``tol`` times that median (a start already
    stationary has a gradient of rounding size). A small decrease
    of the objective alone is not enough: on a badly conditioned problem it is
    small far from a solution.

    When ``polish`` is true and an epoch ends with a kept set (``w > 0.5``) seen at
    the end of an earlier one (it has settled, or the epochs cycle), the ``(W, b)``
    block is minimised on it exactly by :func:`fit_weighted` (to ``tol`` times
    the reference, warm-started), then the epochs go on if the test fails. The
    run ends with the exact weight block on the exact losses when that lowers the
    objective (``h`` integer).

    References
    ----------
    .. [1] Aravkin, A. and Davis, D. "A SMART Stochastic Algorithm for Nonconvex
       Optimization with Applications to Robust Machine Learning", 2016.
    .. [2] Gazagnadou, N., Gower, R. M. and Salmon, J. "Optimal mini-batch and
       step sizes for SAGA", ICML 2019.
    """
    rng = np.random.default_rng() if rng is None else rng
    P = problem
    X, Y, h = P.X, P.Y, P.h
    n = X.shape[0]
    L_full, L_terms = P.lipschitz()
    if batch_size == "auto":
        # An epoch advances about as much as n / (b + L_terms / L_full) full-gradient
        # steps: b near that ratio is within 2x of b = 1 at a fraction of the
        # per-step overhead. At least 128 rows (a step of fewer costs more in Python
        # overhead than in arithmetic), at most 256; on small data at least 8 steps an
        # epoch (down to 64 rows), so the steps between two exact objective checks
        # stay stochastic.
        batch_size = int(min(np.clip(np.ceil(L_terms / max(L_full, 1e-300)), 128, 256), max(64, n // 8)))
    bsz = int(min(max(1, batch_size), n))
    n_batches = -(-n // bsz)
    fi = float(P.fit_intercept)

    if step_size is None:
        L_b = (
            L_full
            if n == 1
            else n * (bsz - 1) / (bsz * (n - 1)) * L_full + (n - bsz) / (bsz * (n - 1)) * L_terms
        )
        step_size = step_scale / max(L_b, 1e-12)  # all-zero design: any step
    eta = eta_ref = float(step_size)

    W, b = P.start_model()
    loss_tab, D = linear_loss(P.loss, P.scores(W, b), Y)
    loss_tab = _ordered_ties(loss_tab)
    w = P.start_weights(loss_tab)

    def aggregate(w, D):
        c = w / h
        return X.T @ (c[:, None] * D), c @ D * fi

    def residual(W, agg_W, agg_b):
        """Norm of the prox-gradient mapping of the (W, b) block at step eta_ref."""
        G_W = (W - P.prox(W - eta_ref * agg_W, eta_ref)) / eta_ref
        return float(np.sqrt(np.sum(G_W * G_W) + np.sum(agg_b * agg_b)))

    def stationary(W, w, agg_W, agg_b, losses):
        """The stopping test, with the aggregate at the exact gradient."""
        # the weights' loss exceeds the best weights' by 0 at a block minimiser
        kept = kept_sum(w, losses)
        gap = kept - kept_sum(P.keep_smallest(losses), losses)
        return residual(W, agg_W, agg_b) <= tol * ref and gap <= tol * abs(kept)

    agg_W, agg_b = aggregate(w, D)
    # Scale of the stopping test: the gradient at the start, or the median norm of
    # the per-sample gradients there when smaller: a few gross leverage rows can
    # dominate the former and make every later point look stationary. Not below tol
    # times the latter: a start already stationary (a penalty that zeroes every
    # coefficient) has a gradient of rounding size, which no later point would beat.
    with np.errstate(over="ignore"):  # a gross target's is inf, which the median ignores
        sample_grad = np.linalg.norm(D, axis=1) * np.sqrt(row_norms(X, squared=True) + fi)
    res0, typical = residual(W, agg_W, agg_b), float(np.median(sample_grad))
    ref = max(min(res0, typical), tol * typical) if 0 < typical < np.inf else res0

    # Exact weight block: the kept set stays optimal while (a bound on) the largest
    # kept loss is <= (a bound on) the smallest trimmed one; the bounds follow the
    # rows a step touched, and only a crossing triggers a new selection. That
    # selection, keep_smallest of the table, is kept up to date by KeptSet in
    # O(batch + band) per step (an O(n) one only when the cut leaves its band); on
    # small problems the plain O(n) selection costs less. Both give the same weights.
    exact_w = np.isinf(weight_step)
    # With caps the selection is a sort (KeptSet's zones count rows), and the row kept in part
    # sits at the cut, so nearly every step crosses it: the selection then runs at most
    # _CAPPED_SELECTIONS times an epoch (the weights wait a few steps, as a block left out)
    kept_set = KeptSet(P, _KEPT_SET_BAND * bsz, incremental=n >= _KEPT_SET_MIN_ROWS and P.caps is None)
    bounds = [np.inf, -np.inf]  # [upper bound of max kept loss, lower bound of min trimmed]
    every = 1 if P.caps is None else max(1, n_batches // _CAPPED_SELECTIONS)
    waited = [0]  # steps since the last selection

    def w_step(w, loss_tab, agg_W, agg_b, touched=None):
        """The weight block; updates ``w`` in place."""
        if exact_w:
            if touched is not None and bounds[0] <= bounds[1]:
                lt, kept = loss_tab[touched], w[touched] > 0
                # rows with weight to take: the trimmed, and with caps one kept in part
                free = ~kept if P.caps is None else w[touched] < P.caps[touched]
                if kept.any():
                    bounds[0] = max(bounds[0], float(lt[kept].max()))
                if free.any():
                    bounds[1] = min(bounds[1], float(lt[free].min()))
                if bounds[0] <= bounds[1]:
                    return w, agg_W, agg_b
            waited[0] += 1
            if waited[0] < every and bounds[0] < np.inf:  # bounds[0] is inf at an epoch's start
                return w, agg_W, agg_b
            waited[0] = 0
            idx, w_idx, bounds[0], bounds[1] = kept_set.update(loss_tab, w)
        else:
            # a step in units of the kept losses (an infinite move leaves a row out, as a
            # gross target's infinite loss does); when they are 0 (kept rows fitted exactly),
            # its limit, the exact step, where inf * 0 is NaN
            with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
                move = (weight_step / np.float64(kept_sum(w, loss_tab) / h)) * loss_tab
            w_new = P.keep_smallest(loss_tab) if np.isnan(move).any() else P.project(w - move)
            idx = np.flatnonzero(w_new != w)
            w_idx = w_new[idx]
        if idx.size:
            dc = (w_idx - w[idx]) / h
            agg_W = agg_W + X[idx].T @ (dc[:, None] * D[idx])
            agg_b = agg_b + dc @ D[idx] * fi
            w[idx] = w_idx
        return w, agg_W, agg_b

    # P.objective(W, b, w) term for term, on the losses already at hand
    objective = [kept_sum(w, loss_tab) / h + P.alpha * P.penalty_value(W)]
    n_iter, converged, rejected, grow = 0, False, 0, step_growth
    seen, stalled_key = {np.packbits(P.kept_mask(w)).tobytes()}, None  # kept sets after epochs
    for epoch in range(max_iter):
        saved = (W, b, w.copy(), D.copy(), loss_tab.copy(), agg_W, agg_b)
        bounds[:] = [np.inf, -np.inf]  # tables are refreshed below or were restored
        kept_set.reset()
        perm = rng.permutation(n)
        X_perm, Y_perm = X[perm], Y[perm]  # minibatches become contiguous views
        n_steps = n_batches if block == "cyclic" else 2 * n_batches
        pick_w = rng.random(n_steps) < 0.5 if block == "random" else None
        k = 0
        prox = P.prox_at(eta)
        for step in range(n_steps):
            if block == "random" and pick_w[step]:
                w, agg_W, agg_b = w_step(w, loss_tab, agg_W, agg_b)
                continue
            rows = slice((k % n_batches) * bsz, (k % n_batches + 1) * bsz)
            B = perm[rows]
            k += 1
            XB = X_perm[rows]
            l_B, D_B = linear_loss(P.loss, XB @ W + b, Y_perm[rows])
            cdiff = (w[B] / h)[:, None] * (D_B - D[B])
            corr_W = XB.T @ cdiff
            corr_b = cdiff.sum(axis=0) * fi
            scale = n / B.size
            W = prox(W - eta * (scale * corr_W + agg_W))
            b = b - eta * (scale * corr_b + agg_b)
            loss_tab[B] = l_B
            kept_set.touch(B)
            if variance_reduction == "saga":
                D[B] = D_B
                agg_W = agg_W + corr_W
                agg_b = agg_b + corr_b
            if block == "cyclic":
                w, agg_W, agg_b = w_step(w, loss_tab, agg_W, agg_b, B)
        n_iter = epoch + 1

        losses, D_now = linear_loss(P.loss, P.scores(W, b), Y)
        f_new = kept_sum(w, losses) / h + P.alpha * P.penalty_value(W)
        f_old = objective[-1]
        if not f_new <= f_old + 1e-12 * abs(f_old):  # beyond rounding: a real rise
            W, b, w, D, loss_tab, agg_W, agg_b = saved  # undo the epoch
            eta *= 0.5
            grow = 1.0  # the largest stable step is now bracketed
            rejected += 1
            if rejected > 30:
                break
            continue
        objective.append(f_new)
        eta *= grow
        # fresh tables: the aggregate becomes the exact gradient (it also clears the
        # drift of the running sums), the snapshot of "svrg"
        loss_tab, D = losses, D_now
        agg_W, agg_b = aggregate(w, D)
        key = np.packbits(P.kept_mask(w)).tobytes()
        recurring, stalled = key in seen, key == stalled_key
        seen.add(key)
        done = stationary(W, w, agg_W, agg_b, loss_tab)
        if polish and recurring and not stalled and not done:
            # The kept set has settled, or the epochs cycle between kept sets (at a
            # tie of the h-th smallest loss): minimise the model block on it
            # exactly. Where the loss is flat (small alpha, nearly separable classes)
            # first-order epochs close the last gap at a rate set by the condition
            # number, a quasi-Newton refit does not; and refits followed by exact
            # weight steps cannot cycle (each change of the kept set lowers the
            # objective). Not again on a set where it gained nothing.
            W_p, b_p, _ = fit_weighted(P, w / h, W, b, tol=tol * ref / np.sqrt(W.size + b.size))
            losses, D_now = linear_loss(P.loss, P.scores(W_p, b_p), Y)
            f_p = kept_sum(w, losses) / h + P.alpha * P.penalty_value(W_p)
            stalled_key = None if f_p < objective[-1] else key
            if f_p <= objective[-1]:
                W, b, loss_tab, D = W_p, b_p, losses, D_now
                objective.append(f_p)
                agg_W, agg_b = aggregate(w, D)
                done = stationary(W, w, agg_W, agg_b, loss_tab)
        if done:
            converged = True
            break
    # finish with the exact weight block on the exact losses: the minimiser over the capped
    # simplex, so it never raises the objective but by rounding, and its weights are 0 / 1
    # where a finite weight_step on tied losses leaves fractions. Every exit leaves loss_tab
    # exact at (W, b): an accepted epoch or a refit refreshes it, a rejected one restores the
    # table saved with the model
    w = P.keep_smallest(loss_tab)
    f_exact = kept_sum(w, loss_tab) / h + P.alpha * P.penalty_value(W)
    if f_exact < objective[-1]:
        objective.append(f_exact)
    return TrimmedFit(W, b, w, n_iter, objective, converged)


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
    X : ndarray of shape (m, n_features)
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
    diag = cv @ (X * X)
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
    Xt = np.hstack([Xu, np.ones((rows.size, 1))]) if P.fit_intercept else Xu
    L = CURVATURE[P.loss] * float(np.linalg.eigvalsh(Xt.T @ (cs[:, None] * Xt))[-1])
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
