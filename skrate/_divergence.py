"""Worst-case distributions over an f-divergence ball (the inner maximisation of DRO).

Convention. Given per-sample losses ``l`` and a base distribution ``q`` on the samples
(uniform ``1/n`` unless sample weights are given), the ball of radius ``rho`` is

    P = {p in the simplex : sum_i q_i f(p_i / q_i) <= rho},

with ``f(t) = (t - 1)^2 / 2`` for ``"chi2"`` and ``f(t) = t log t`` for ``"kl"``. For a uniform
``q`` this is ``(1/n) sum_i f(n p_i) <= rho``. The robust loss is ``sup_{p in P} sum_i p_i l_i``.

Both maximisers have a one-parameter form, found exactly (Ghosh et al. 2018):

* chi2: ``p_i ∝ q_i (l_i - eta)_+`` where ``eta`` solves
  ``E_q[(l - eta)_+^2] = (1 + 2 rho) E_q[(l - eta)_+]^2``; the left/right ratio is monotone in
  ``eta``, so after one sort the segment between consecutive sorted losses that holds the root
  is found by a search over the breakpoints and the root inside it has a closed form.
* kl: ``p_i ∝ q_i exp(l_i / eta)`` with ``eta`` set by ``KL(p || q) = rho``, a monotone
  equation solved by Newton's method safeguarded by bisection.

When the radius is at least the divergence of the distribution ``q`` conditioned on the
largest loss (``(1/Q - 1)/2`` for chi2, ``-log Q`` for kl, ``Q`` the base mass of the samples
that attain the largest loss), the worst case puts all its mass on those samples and the
robust loss is the largest loss.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import logsumexp, rel_entr
from sklearn.utils._param_validation import Interval, StrOptions, validate_params

from .utils._sorting import stable_argsort

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

DIVERGENCES = ("chi2", "kl")

# Largest inverse temperature tried for KL. The root is finite whenever the caller finds the
# ball short of the top losses, but a loss within a relative delta of the largest puts it
# near 1 / delta: 1e16 for a tie broken by the last bit, 1e300 for losses spanning 1e300.
_KL_MAX_INV_TEMP = float(np.finfo(float).max)


def _concentrated(losses: np.ndarray, q: np.ndarray) -> np.ndarray:
    top = losses == losses.max()
    p = np.where(top, q, 0.0)
    return p / p.sum()


def _chi2_guess(losses: np.ndarray, q: np.ndarray, radius: float, eta: float):
    """Exact solution in O(n) if the active set ``{l > eta}`` of a guess is the right one.

    The root's closed form on an active set is checked against the segment it must lie in;
    a few fixed-point rounds usually settle on the right set when the guess comes from a
    nearby problem (the previous iterate of a solver). Returns ``None`` otherwise.
    """
    total = q.sum()
    for _ in range(3):
        active = losses > eta
        qa = q[active]
        Q = qa.sum()
        excess = _excess(Q, total - Q, radius)
        if not excess > 0.0:
            return None
        la = losses[active]
        mean = (qa @ la) / Q
        var = max((qa @ (la - mean) ** 2) / Q, 0.0)
        new = mean - np.sqrt(var) / np.sqrt(excess)
        below = losses[~active]
        if new < la.min() and (below.size == 0 or below.max() <= new):
            p = q * np.maximum(losses - new, 0.0)
            return p / p.sum(), float(new)
        eta = new
    return None


def _excess(Q, rest, radius: float):
    """``(1 + 2 rho) Q - 1`` for an active set of base mass ``Q``, the rest ``rest = 1 - Q``.

    Written ``2 rho Q - rest`` with ``rest`` the total mass (as summed) minus ``Q``: ``1 +
    2 rho`` keeps only ``-log2(rho)`` of ``rho``'s bits, none below ``rho = 1e-16`` (the
    worst case then left the ball: 222 times its radius at 1e-18), and ``1 - Q`` need not
    be 0 for the full set, the active set of a small radius, where ``rest`` is.
    """
    return 2.0 * radius * Q - rest


def _chi2(
    losses: np.ndarray, q: np.ndarray, radius: float, eta_hint: float | None = None
) -> tuple[np.ndarray, float]:
    """The chi2 worst case ``(p, eta)`` of losses whose largest is 0 (:func:`_worst_case`
    maps them to [-1, 0]), so the cumulative moments below keep their precision."""
    if eta_hint is not None and np.isfinite(eta_hint):
        found = _chi2_guess(losses, q, radius, eta_hint)
        if found is not None:
            return found
    order = stable_argsort(-losses)
    z = losses[order]
    qs = q[order]
    # Candidate active sets: the top groups of equal losses (ends of tie groups).
    ends = np.flatnonzero(np.append(z[1:] != z[:-1], True))
    Q_all = np.cumsum(qs)
    mean_all = np.cumsum(qs * z) / Q_all
    # Welford's sums of squared deviations, each term >= 0: E[z^2] - mean^2 cancels when a
    # top loss of tiny mass carries the variance (weights 1e12 apart left the ball)
    Q_before = np.r_[0.0, Q_all[:-1]]
    mean_before = np.r_[z[0], mean_all[:-1]]
    M2 = np.cumsum(qs * (Q_before / Q_all) * (z - mean_before) ** 2)
    Q, mean, var = Q_all[ends], mean_all[ends], M2[ends] / Q_all[ends]
    excess = _excess(Q, Q[-1] - Q, radius)
    with np.errstate(divide="ignore", invalid="ignore"):
        # (var / excess would overflow for a radius near the smallest float)
        eta = mean - np.sqrt(var) / np.sqrt(excess)
    smallest_active = z[ends]
    next_loss = np.append(z[ends[1:]], -np.inf)
    # The root lies in exactly one segment; pick the candidate violating its segment least,
    # which is robust to rounding at the breakpoints.
    violation = np.maximum(np.maximum(eta - smallest_active, next_loss - eta), 0.0)
    violation[~(excess > 0.0)] = np.inf
    k = int(np.argmin(violation))
    p_sorted = qs * np.maximum(z - eta[k], 0.0)
    p = np.empty_like(p_sorted)
    p[order] = p_sorted / p_sorted.sum()
    return p, float(eta[k])


def _expm1_minus_x(x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """``exp(x) - 1 - x`` from ``e = expm1(x)``, accurate also where ``|x|`` is small and
    the difference cancels."""
    out = e - x  # relative error below 1e-14 for |x| >= 0.1
    small = np.abs(x) < 0.1
    xs = x[small]
    # x^2 (1/2! + x (1/3! + ... x / 10!)): the next term is below 1e-16 relative for |x| < 0.1.
    series = np.full_like(xs, 1.0 / math.factorial(10))
    for k in range(9, 1, -1):
        series = series * xs + 1.0 / math.factorial(k)
    out[small] = series * xs * xs
    return out


def _tilt(t: float, z: np.ndarray, z_top: np.ndarray, q: np.ndarray, log_q: np.ndarray,
          spread: float):
    """``p_t ∝ q exp(t z)``, ``KL(p_t || q)`` and its derivative ``t Var_{p_t}(z)``.

    ``z`` has ``q``-mean 0 and largest magnitude ``spread``; ``z_top`` is the same up to a
    shift, with largest value exactly 0. ``KL = t E_p[z] - log E_q[exp(t z)]`` is of order
    ``t^2`` for a small ``t``, which its two terms of order ``t`` would leave to their
    rounding (and a small radius to it), so there it is ``D / (1 + R) - log1p(R)`` with ``x =
    t z``, ``D = E_q[x expm1(x)]`` and ``R = E_q[expm1(x) - x]``: sums of terms of one sign
    each. A large ``t`` reads ``z_top``, where losses near the largest keep their tiny gaps
    exactly (centring would round them away) and the exponents ``t z_top`` cannot overflow.
    """
    if t * spread <= 1.0:
        x = t * z
        e = np.expm1(x)
        p = q + q * e
        p /= p.sum()
        R = float(q @ _expm1_minus_x(x, e))
        kl = float(q @ (x * e)) / (1.0 + R) - math.log1p(R)
        var = p @ (z - p @ z) ** 2
    else:  # exponents beyond 1 would overflow: shift them by their largest
        a = log_q + t * z_top
        top = a.max()
        e = np.exp(a - top)
        total = e.sum()
        p = e / total
        mean = p @ z_top
        kl = t * mean - top - np.log(total)
        var = p @ (z_top - mean) ** 2
    return p, float(kl), float(t * var)


def _kl(
    z: np.ndarray, q: np.ndarray, radius: float, eta_hint: float | None = None
) -> tuple[np.ndarray, float]:
    # z: the losses scaled to [-1, 0] by _worst_case. t = 1 / eta is an inverse
    # temperature, and KL(p_t || q) increases with t from 0 to -log Q (all mass on the top).
    # Neither depends on a shift of z: centred, t z is small where t is (see _tilt).
    z_top = z - z.max()
    z = z - q @ z
    spread = float(np.max(np.abs(z)))
    with np.errstate(divide="ignore"):
        log_q = np.log(q)
    if eta_hint is not None and 0.0 < eta_hint < np.inf:
        t = 1.0 / eta_hint
    else:  # KL(t) = t^2 Var_q(z) / 2 + O(t^3): the root of a small radius, in few steps
        with np.errstate(divide="ignore"):
            t = min(1.0, float(np.sqrt(2.0 * radius / (q @ (z * z)))))
    lo, hi = 0.0, np.inf
    # Newton's method on the monotone equation KL(t) = radius, safeguarded by bisection
    # (the bracket [lo, hi] always holds the root).
    for _ in range(200):
        t_p = t
        p, kl, slope = _tilt(t, z, z_top, q, log_q, spread)
        gap = kl - radius
        if abs(gap) <= 1e-13 * radius:
            break
        if gap < 0:
            lo = t
        else:
            hi = t
        if hi < np.inf and hi - lo <= 1e-15 * hi:
            break
        newton = t - gap / slope if slope > 0 else np.inf
        if lo < newton < hi:
            t = newton
        elif hi == np.inf:  # squaring reaches a root near 1 / delta in log log steps
            if t == _KL_MAX_INV_TEMP:  # gaps below 1 / MAX of the spread: p is in the
                break  # ball and optimal to the rounding of those gaps
            t = min(max(4.0 * t, t * t), _KL_MAX_INV_TEMP)
        else:  # bisection in log t where the bracket spans orders of magnitude
            t = math.sqrt(lo) * math.sqrt(hi) if lo > 0 and hi > 4.0 * lo else 0.5 * (lo + hi)
    return p, 1.0 / t_p


def _ball_divergence(p: np.ndarray, q: np.ndarray, divergence: str) -> float:
    """``sum_i q_i f(p_i / q_i)``, the divergence the ball bounds; ``q > 0``, both sum to one."""
    if divergence == "chi2":
        return 0.5 * float(np.sum((p - q) ** 2 / q))
    return float(np.sum(rel_entr(p, q)))


def _into_ball(
    p: np.ndarray, q: np.ndarray, divergence: str, radius: float
) -> np.ndarray | None:
    """A nearly feasible ``p`` (a conic solver's) made a point of the ball around ``q > 0``.

    ``p`` is put on the simplex, then mixed with the centre ``q`` to enter the ball: the
    mixture ``(1 - t) p + t q`` has ``(1 - t)^2`` times the chi2 divergence of ``p`` (on
    the boundary for the smallest such ``t``) and, by convexity, at most ``1 - t`` times
    its KL divergence. ``None`` if ``p`` has no positive mass.
    """
    p = np.maximum(p, 0.0)
    total = p.sum()
    if not total > 0:
        return None
    p = p / total
    value = _ball_divergence(p, q, divergence)
    if value <= radius:
        return p
    keep = math.sqrt(radius / value) if divergence == "chi2" else radius / value
    return keep * p + (1.0 - keep) * q


def _worst_case(
    losses: np.ndarray, q: np.ndarray, divergence: str, radius: float,
    eta_hint: float | None = None,
):
    """Unvalidated maximiser: returns ``(p, eta)``; ``q`` sums to one.

    ``eta`` is the dual variable: the threshold of the chi2 form, the temperature of the kl
    form (``inf`` when the constraint is inactive, 0 when all mass is on the largest loss).
    ``eta_hint`` (a previous ``eta``) only speeds up the search; the result is exact anyway.
    """
    support = q > 0
    if not support.all():
        p = np.zeros_like(q)
        p[support], eta = _worst_case(losses[support], q[support], divergence, radius,
                                      eta_hint)
        return p, eta
    top = losses.max()
    if top == losses.min() or radius == 0.0:
        return q.copy(), (-np.inf if divergence == "chi2" else np.inf)
    q_top = q[losses == top].sum()
    limit = 0.5 * (1.0 / q_top - 1.0) if divergence == "chi2" else -np.log(q_top)
    if radius >= limit:
        return _concentrated(losses, q), (top if divergence == "chi2" else 0.0)
    # The worst case is invariant under a positive affine map of the losses: solve it for
    # the losses mapped to [-1, 0], whose moments and exponents stay finite whatever the
    # losses' magnitude (squares of 1e300 overflow), and map eta back.
    unit = top - losses.min()
    if np.isfinite(unit):
        z = (losses - top) / unit
    else:  # a spread beyond the float range is measured in halves
        half = 0.5 * top - 0.5 * losses.min()
        z, unit = (0.5 * losses - 0.5 * top) / half, 2.0 * half
    if divergence == "chi2":
        hint = None if eta_hint is None else (eta_hint - top) / unit
        p, eta = _chi2(z, q, radius, hint)
        return p, top + unit * eta
    p, eta = _kl(z, q, radius, None if eta_hint is None else eta_hint / unit)
    return p, (unit * eta if eta > 0.0 else 0.0)


def _smoothed_worst_case(
    losses: np.ndarray, q: np.ndarray, divergence: str, radius: float, mu: float,
    eta_hint: float | None = None,
) -> tuple[np.ndarray, float, float, float, float]:
    """The maximiser ``p`` of ``p @ losses - mu * D(p || q)`` over the ball, and its value.

    Nesterov's smoothing of the robust loss ``F = sup_{p in P} p @ losses``: the value
    ``F_mu`` is a smooth function of the losses (its gradient ``p`` is Lipschitz, with a
    constant of order ``1 / mu``), and ``F - mu * radius <= F_mu <= F``. ``F`` itself is
    not differentiable where the worst case is not unique: all losses tied, or a tied
    group of top losses holding all the mass.

    Both worst cases belong to a one-parameter family with a "temperature": ``p ∝ q (l -
    eta)_+`` with ``s = E_q[(l - eta)_+]`` (chi2), ``p ∝ q exp(l / eta)`` with ``eta`` (kl).
    The penalty adds ``mu`` to the ball's multiplier, which is the temperature, so the
    smoothed maximiser is the member at temperature ``max(mu, exact one)``: the exact worst
    case (on the ball's boundary, ``F_mu = F - mu * radius``) unless its temperature is
    below ``mu``, the penalised maximiser then lying inside the ball.

    Returns ``(p, F_mu, F, eta, temperature)``: ``eta`` is the exact problem's dual
    variable (the hint of the next call), ``temperature`` the exact worst case's (``inf``
    for ``q`` itself, 0 when all mass is on the top losses).
    """
    exact, eta = _worst_case(losses, q, divergence, radius, eta_hint)
    p, value, robust, temperature = _smoothing(losses, q, divergence, radius, mu, exact, eta)
    return p, value, robust, eta, temperature


def _smoothing(
    losses: np.ndarray, q: np.ndarray, divergence: str, radius: float, mu: float,
    exact: np.ndarray, eta: float,
) -> tuple[np.ndarray, float, float, float]:
    """:func:`_smoothed_worst_case` from the exact worst case ``(exact, eta)`` of the
    losses, for callers that also need it: ``(p, F_mu, F, temperature)``."""
    robust = float(exact @ losses)
    if divergence == "chi2":
        # eta = -inf: p = q (no tilt), infinitely hot; eta = top: all mass on the top.
        temperature = np.inf if eta == -np.inf else float(q @ np.maximum(losses - eta, 0.0))
    else:
        temperature = eta
    if temperature >= mu:
        # The ball binds, D(p) = radius, unless the worst case is q itself.
        shift = mu * radius if temperature < np.inf else 0.0
        return exact, robust - shift, robust, temperature
    # The top of the support: a larger loss of weight 0 would cost the centred losses
    # their precision.
    top = np.max(losses, where=q > 0, initial=-np.inf)
    if divergence == "kl":
        with np.errstate(divide="ignore"):
            a = np.log(q) + (losses - top) / mu
        lse = logsumexp(a)
        return np.exp(a - lse), float(top + mu * lse), robust, temperature
    # chi2: p = q (l - t)_+ / mu with E_q[(l - t)_+] = mu. That expectation is piecewise
    # linear and decreasing in t; at the k-th largest loss it is S_k - Q_k l_k (prefix sums
    # of q l and q in decreasing order), so the root lies past the last loss where it is
    # below mu and has a closed form.
    z = losses - top
    order = stable_argsort(-z)
    z_sorted, q_sorted = z[order], q[order]
    Q, S = np.cumsum(q_sorted), np.cumsum(q_sorted * z_sorted)
    k = int(np.searchsorted(S - Q * z_sorted, mu, side="left")) - 1
    t = (S[k] - mu) / Q[k]
    ratio = np.maximum(z - t, 0.0) / mu  # p / q
    p = q * ratio
    value = float(top + p @ z - 0.5 * mu * (q @ (ratio - 1.0) ** 2))
    return p, value, robust, temperature


def _base_distribution(n: int, sample_weight) -> np.ndarray:
    if sample_weight is None:
        return np.full(n, 1.0 / n)
    sw = np.asarray(sample_weight, dtype=float)
    if sw.shape != (n,):
        raise ValueError(
            f"sample_weight must have shape ({n},) like losses, got {sw.shape}."
        )
    if not np.all(np.isfinite(sw)) or np.any(sw < 0) or not np.any(sw > 0):
        raise ValueError(
            "sample_weight must be finite, non-negative and have a positive sum; "
            "it is the base distribution of the divergence ball."
        )
    return _normalised(sw)


def _normalised(sw: np.ndarray) -> np.ndarray:
    """Finite non-negative weights, not all 0, divided by their sum.

    A sum that overflows (60 weights of 1e307) is taken of the weights divided by the
    largest first; other weights keep the plain division, bit for bit.
    """
    with np.errstate(over="ignore"):
        total = sw.sum()
    if np.isinf(total):
        sw = sw / sw.max()
        total = sw.sum()
    return sw / total


def _check_losses(losses) -> np.ndarray:
    losses = np.asarray(losses, dtype=float)
    if losses.ndim != 1 or losses.size == 0:
        raise ValueError(f"losses must be a non-empty 1-d array, got shape {losses.shape}.")
    if not np.all(np.isfinite(losses)):
        raise ValueError("losses contains NaN or infinity; pass finite per-sample losses.")
    return losses


_PARAMS = {
    "losses": ["array-like"],
    "divergence": [StrOptions(set(DIVERGENCES))],
    "radius": [Interval(Real, 0, None, closed="left")],
    "sample_weight": ["array-like", None],
}


@validate_params(_PARAMS, prefer_skip_nested_validation=True)
def worst_case_weights(
    losses: ArrayLike, divergence: str = "chi2", radius: float = 0.1,
    sample_weight: ArrayLike | None = None
) -> np.ndarray:
    """Worst-case distribution over an f-divergence ball around the (weighted) empirical one.

    Solves ``max_p sum_i p_i losses_i`` over the simplex subject to
    ``sum_i q_i f(p_i / q_i) <= radius``, with ``q`` the normalised ``sample_weight``
    (uniform by default, giving ``(1/n) sum_i f(n p_i) <= radius``),
    ``f(t) = (t - 1)^2 / 2`` for ``"chi2"`` and ``f(t) = t log t`` for ``"kl"``.

    Parameters
    ----------
    losses : array-like of shape (n_samples,)
        Finite per-sample losses.
    divergence : {"chi2", "kl"}, default="chi2"
        The f-divergence defining the ball.
    radius : float, default=0.1
        Radius ``rho >= 0`` of the ball. ``0`` returns the base distribution. A radius at
        least ``(1/Q - 1)/2`` (chi2) or ``-log Q`` (kl), where ``Q`` is the base mass of the
        samples attaining the largest loss, puts all the mass on those samples.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights defining the base distribution ``q``; samples of weight zero get
        probability zero.

    Returns
    -------
    p : ndarray of shape (n_samples,)
        A maximising distribution: ``q`` when all losses on its support are equal. Ties
        among the largest losses can leave the maximiser not unique (a ball wide enough to
        hold the point mass on any of them); the tied losses then share the mass in
        proportion to ``q``.

    References
    ----------
    .. [1] S. Ghosh, M. Squillante, E. Wollega. "Efficient Stochastic Gradient Descent for
       Distributionally Robust Learning". arXiv:1805.08728, 2018.

    Examples
    --------
    >>> from skrate import worst_case_weights
    >>> worst_case_weights([0.1, 0.2, 1.0], divergence="chi2", radius=0.1).round(3)
    array([0.21 , 0.247, 0.543])
    """
    losses = _check_losses(losses)
    q = _base_distribution(losses.size, sample_weight)
    return _worst_case(losses, q, divergence, float(radius))[0]


@validate_params(_PARAMS, prefer_skip_nested_validation=True)
def robust_loss(losses: ArrayLike, divergence: str = "chi2", radius: float = 0.1,
                sample_weight: ArrayLike | None = None) -> float:
    """Worst-case expected loss over an f-divergence ball, ``sup_p sum_i p_i losses_i``.

    See :func:`worst_case_weights` for the convention; use it to score any model:
    ``robust_loss(per_sample_losses, "kl", 0.5)``.

    Parameters
    ----------
    losses : array-like of shape (n_samples,)
        Finite per-sample losses.
    divergence : {"chi2", "kl"}, default="chi2"
        The f-divergence defining the ball.
    radius : float, default=0.1
        Radius ``rho >= 0`` of the ball.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights defining the base distribution.

    Returns
    -------
    float
        The robust loss; between the (weighted) mean loss and the largest loss.

    References
    ----------
    .. [1] S. Ghosh, M. Squillante, E. Wollega. "Efficient Stochastic Gradient Descent for
       Distributionally Robust Learning". arXiv:1805.08728, 2018.
    """
    losses = _check_losses(losses)
    q = _base_distribution(losses.size, sample_weight)
    return float(_worst_case(losses, q, divergence, float(radius))[0] @ losses)


def _dual(
    losses: np.ndarray, q: np.ndarray, divergence: str, radius: float, eta: float
) -> tuple[float, np.ndarray, float]:
    """The convex dual of the robust loss at dual variable ``eta``, with its derivatives.

    Minimising over ``eta`` gives the robust loss (Lagrange duality for the ball):

    * chi2: ``eta + sqrt(1 + 2 rho) * sqrt(E_q[(l - eta)_+^2])``, ``eta`` real;
    * kl: ``eta * log E_q[exp(l / eta)] + eta * rho``, ``eta > 0``.

    Returns ``(value, d value / d losses, d value / d eta)``; jointly convex in
    ``(losses, eta)`` and non-decreasing in the losses.
    """
    if divergence == "chi2":
        r = np.maximum(losses - eta, 0.0)
        s = q @ (r * r)
        if s <= 0.0:
            return float(eta), np.zeros_like(losses), 1.0
        root_c = np.sqrt(1.0 + 2.0 * radius)
        norm = np.sqrt(s)
        d_losses = root_c * q * r / norm
        return float(eta + root_c * norm), d_losses, float(1.0 - d_losses.sum())
    with np.errstate(divide="ignore"):
        a = np.log(q) + losses / eta
    lse = logsumexp(a)
    p = np.exp(a - lse)
    return float(eta * (lse + radius)), p, float(lse - (p @ losses) / eta + radius)
