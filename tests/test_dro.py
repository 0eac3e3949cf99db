"""Distributionally robust learning: inner maximisation, solvers and estimators."""

import warnings
from dataclasses import replace

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from sklearn.datasets import load_breast_cancer, load_iris, make_classification
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.utils.estimator_checks import (
    check_non_transformer_estimators_n_iter,
    check_sample_weight_equivalence_on_dense_data,
)

from skrate import (
    DROClassifier,
    DRORegressor,
    TrimmedRegressor,
    _dro_conic,
    _dro_continuation,
    _dro_sgd,
    robust_loss,
    worst_case_weights,
)
from skrate._divergence import _dual, _into_ball, _smoothed_worst_case, _worst_case
from skrate._dro_conic import _certify
from skrate._dro_continuation import primal_lbfgs
from skrate._dro_lbfgs import _lbfgs, dual_lbfgs
from skrate._dro_losses import LOSSES
from skrate._dro_problem import LinearDRO, Result
from skrate._dro_sgd import _two_loop, dynamic_sgd, sample_sizes
import scipy.sparse as sp

# ---------------------------------------------------------------- exact references (cvxpy)


def _divergence(p, q, divergence):
    """sum_i q_i f(p_i / q_i) in numpy (0 log 0 = 0)."""
    r = p / q
    if divergence == "chi2":
        return float(q @ ((r - 1.0) ** 2) / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.sum(np.where(p > 0, p * np.log(r), 0.0)))


def _cvx_inner(losses, q, divergence, radius):
    p = cp.Variable(losses.size, nonneg=True)
    if divergence == "chi2":
        ball = cp.sum(cp.multiply(q, cp.square(p / q - 1.0))) / 2.0 <= radius
    else:
        ball = cp.sum(cp.kl_div(p, q)) <= radius  # = KL(p || q) when both sum to one
    problem = cp.Problem(cp.Maximize(losses @ p), [cp.sum(p) == 1.0, ball])
    problem.solve(solver="CLARABEL")
    return problem.value, p.value


def _cvx_losses(z, y, loss):
    """Per-sample losses of the scores ``z`` as a cvxpy expression, written out independently of
    skrate's: the logistic loss, or half the squared error."""
    return cp.logistic(z) - cp.multiply(y, z) if loss == "logistic" else cp.square(z - y) / 2


def _cvx_dro(X, y, q, loss, divergence, radius, alpha):
    """The full DRO problem through its dual, solved exactly by a conic solver."""
    n, d = X.shape
    w, b, eta = cp.Variable(d), cp.Variable(), cp.Variable()
    z = X @ w + b
    losses = _cvx_losses(z, y, loss)
    s = cp.Variable(n)
    cons = [s >= losses]
    if divergence == "chi2":
        robust = eta + np.sqrt(1 + 2 * radius) * cp.norm(
            cp.multiply(np.sqrt(q), cp.pos(s - eta)), 2)
    else:
        # t >= eta log sum_i q_i exp(s_i / eta)  <=>  sum_i q_i u_i <= eta,
        # eta exp((s_i - t) / eta) <= u_i.
        t, u = cp.Variable(), cp.Variable(n)
        cons += [cp.constraints.ExpCone(s - t, eta * np.ones(n), u), q @ u <= eta]
        robust = t + radius * eta
    problem = cp.Problem(cp.Minimize(robust + alpha / 2 * cp.sum_squares(w)), cons)
    problem.solve(solver="CLARABEL")
    return problem.value, w.value, float(b.value)


# ---------------------------------------------------------------- inner maximisation


@pytest.mark.parametrize("divergence", ["chi2", "kl"])
@pytest.mark.parametrize("radius", [0.01, 0.3, 2.0, 8.0])
@pytest.mark.parametrize("weighted", [False, True])
def test_worst_case_matches_cvxpy(divergence, radius, weighted):
    rng = np.random.default_rng(int(radius * 100) + weighted)
    n = 40
    losses = rng.exponential(size=n)
    sw = rng.uniform(0.2, 3.0, size=n) if weighted else None
    q = np.full(n, 1.0 / n) if sw is None else sw / sw.sum()
    value, p_ref = _cvx_inner(losses, q, divergence, radius)
    p = worst_case_weights(losses, divergence, radius, sample_weight=sw)
    assert p.min() >= 0 and p.sum() == pytest.approx(1.0, abs=1e-12)
    assert _divergence(p, q, divergence) <= radius * (1 + 1e-9)
    assert p @ losses == pytest.approx(value, rel=1e-6)
    np.testing.assert_allclose(p, p_ref, atol=1e-4)
    assert robust_loss(losses, divergence, radius, sample_weight=sw) == pytest.approx(p @ losses)


def test_chi2_large_radius_zeroes_the_small_losses_exactly():
    # radius 2 on n=40: p >= 0 is active, the smallest losses get exactly zero mass.
    rng = np.random.default_rng(3)
    losses = rng.normal(size=40)
    p = worst_case_weights(losses, "chi2", 2.0)
    assert np.sum(p == 0) > 5
    assert losses[p == 0].max() <= losses[p > 0].min()
    assert _divergence(p, np.full(40, 1 / 40), "chi2") == pytest.approx(2.0, rel=1e-9)
    # Inside the support the worst case is affine in the losses.
    support = p > 0
    slope = np.polyfit(losses[support], p[support], 1)
    np.testing.assert_allclose(np.polyval(slope, losses[support]), p[support], atol=1e-12)


@pytest.mark.parametrize("gap", [1e-1, 1e-5, 1e-9, "ulp"])
def test_kl_worst_case_on_near_tied_top_losses_stays_in_the_ball(gap):
    # A loss just below the largest puts the inverse temperature of the root near 1 / gap;
    # the mass went all to the largest loss, outside the ball, for gaps below 1e-5.
    second = np.nextafter(1.0, 0.0) if gap == "ulp" else 1.0 - gap
    losses, radius = np.array([0.0, 1.0, second]), 0.8
    p = worst_case_weights(losses, "kl", radius)
    assert _divergence(p, np.full(3, 1 / 3), "kl") == pytest.approx(radius, rel=1e-9)
    # the root puts (almost) nothing on the loss 0: the two top losses share the mass as the
    # two-point distribution on the ball's boundary does
    two_point = minimize_scalar(lambda a: (a * np.log(3 * a) + (1 - a) * np.log(3 * (1 - a)) - radius) ** 2,
                                bounds=(0.5, 1.0 - 1e-12), method="bounded", options={"xatol": 1e-12}).x
    assert p[0] < 1e-9
    assert p[1] == pytest.approx(two_point, abs=1e-6) and p[1] >= p[2]
    assert robust_loss(losses, "kl", radius) == pytest.approx(p @ losses, rel=1e-15)


@pytest.mark.parametrize("low", [-1e20, -1e100, -1e300])
def test_kl_worst_case_ignores_how_far_below_a_loss_lies(low):
    # the root's inverse temperature is about 1 / 1e300 of the spread here: growing by 4x
    # per step and bisecting arithmetically, the search stopped short after 200 steps and
    # returned a distribution outside the ball (1e100) or inside but not the worst (1e300)
    ref = worst_case_weights(np.array([-1.0, 0.0, 1.0]), "kl", 1.0)
    assert ref[0] < 0.01  # the far loss carries (almost) nothing even at a spread of 2
    p = worst_case_weights(np.array([low, 0.0, 1.0]), "kl", 1.0)
    assert p[0] == 0.0
    assert _divergence(p, np.full(3, 1 / 3), "kl") == pytest.approx(1.0, rel=1e-9)
    # the top two share the mass as the two-point distribution on the ball's boundary does
    two_point = minimize_scalar(lambda a: (a * np.log(3 * a) + (1 - a) * np.log(3 * (1 - a)) - 1.0) ** 2,
                                bounds=(0.5, 1.0 - 1e-12), method="bounded", options={"xatol": 1e-12}).x
    assert p[2] == pytest.approx(two_point, abs=1e-6)
    assert robust_loss(np.array([low, 0.0, 1.0]), "kl", 1.0) == pytest.approx(two_point, abs=1e-6)


@pytest.mark.parametrize("top, tiny", [(1.0, 1.0), (1e10, 1e-14), (1e12, 1e-16)])
def test_chi2_worst_case_of_a_light_top_loss_stays_in_the_ball(top, tiny):
    # With every row active, p = q (l - eta) / E_q[l - eta] and the robust loss is
    # E_q[l] + sqrt(2 rho Var_q(l)); a top loss of mass 1e-14 carries the variance, which
    # E[z^2] - mean^2 cancelled: 1.7% too high at 1e-14, 8e4 times at 1e-16, outside the ball.
    losses, weights, radius = np.array([top, 0.0, 0.5, 1.0]), np.array([tiny, 1.0, 1.0, 1.0]), 0.1
    q = weights / weights.sum()
    mean = q @ losses
    exact = mean + np.sqrt(2 * radius * (q @ (losses - mean) ** 2))
    assert mean - np.sqrt((q @ (losses - mean) ** 2) / (2 * radius)) < losses.min()  # all active
    p = worst_case_weights(losses, "chi2", radius, sample_weight=weights)
    assert _divergence(p, q, "chi2") == pytest.approx(radius, rel=1e-7)
    # eta sits 1e-7 (1e-8) of the loss range below the bulk of losses: their excesses over it
    # keep 9 (8) digits
    assert robust_loss(losses, "chi2", radius, sample_weight=weights) == pytest.approx(exact, rel=1e-7)


@pytest.mark.parametrize("divergence", ["chi2", "kl"])
def test_extreme_losses_are_scaled_before_the_worst_case(divergence):
    # The worst case does not change under a positive affine map of the losses; the
    # squares of 1e300 overflowed (chi2 returned NaN).
    reference = worst_case_weights([1.0, -1.0, 0.5], divergence, 0.1)
    for scale in (1e300, 1e-300):
        losses = scale * np.array([1.0, -1.0, 0.5])
        np.testing.assert_allclose(worst_case_weights(losses, divergence, 0.1), reference,
                                   rtol=1e-12)
        assert robust_loss(losses, divergence, 0.1) == pytest.approx(
            scale * (reference @ [1.0, -1.0, 0.5]), rel=1e-12)
    np.testing.assert_allclose(worst_case_weights([1e300, -1e300], divergence, 0.1),
                               worst_case_weights([1.0, -1.0], divergence, 0.1), rtol=1e-12)


@pytest.mark.parametrize("divergence", ["chi2", "kl"])
@pytest.mark.parametrize("radius", [0.05, 0.5, 3.0, 50.0])
def test_smoothed_worst_case_matches_cvxpy(divergence, radius):
    # max_p p @ l - mu D(p || q) over the ball, for temperatures on both sides of the
    # exact worst case's; 50 concentrates all mass on the top loss.
    rng = np.random.default_rng(int(10 * radius))
    n = 30
    losses, q = rng.exponential(size=n), rng.dirichlet(np.ones(n))
    exact, _ = _worst_case(losses, q, divergence, radius)
    for mu in (1e-3, 0.1, 1.0, 10.0):
        p, value, robust, _, _ = _smoothed_worst_case(losses, q, divergence, radius, mu)
        v = cp.Variable(n, nonneg=True)
        if divergence == "chi2":
            div = cp.sum(cp.multiply(1.0 / q, cp.square(v - q))) / 2.0
        else:
            div = cp.sum(cp.kl_div(v, q))
        ref = cp.Problem(cp.Maximize(losses @ v - mu * div), [cp.sum(v) == 1.0, div <= radius])
        # Clarabel at its defaults (1e-8) left the KL reference 2e-7 off with cvxpy < 1.7
        ref.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
        assert value == pytest.approx(ref.value, rel=1e-7, abs=1e-9)
        np.testing.assert_allclose(p, v.value, atol=1e-4)
        assert p.sum() == pytest.approx(1.0) and p.min() >= 0.0
        assert robust == pytest.approx(exact @ losses, rel=1e-12)
        assert robust - mu * radius - 1e-12 <= value <= robust + 1e-12
    # mu = 0 is the exact worst case.
    p, value, robust, _, _ = _smoothed_worst_case(losses, q, divergence, radius, 0.0)
    np.testing.assert_array_equal(p, exact)
    assert value == robust


@pytest.mark.parametrize("divergence", ["chi2", "kl"])
def test_inactive_and_degenerate_balls_return_the_base_distribution(divergence):
    losses = np.array([0.3, 1.0, 0.2, 0.7])
    sw = np.array([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(worst_case_weights(losses, divergence, 0.0, sw), sw / 10)
    np.testing.assert_allclose(worst_case_weights(np.full(4, 2.5), divergence, 1.0, sw),
                               sw / 10)


@pytest.mark.parametrize("divergence", ["chi2", "kl"])
def test_large_radius_concentrates_on_the_largest_losses(divergence):
    losses = np.array([0.1, 2.0, 0.5, 2.0, 1.9])
    sw = np.array([1.0, 1.0, 1.0, 3.0, 1.0])
    q_top = 4 / 7
    limit = 0.5 * (1 / q_top - 1) if divergence == "chi2" else -np.log(q_top)
    for radius in (limit, 1.5 * limit, 1e12):
        p = worst_case_weights(losses, divergence, radius, sample_weight=sw)
        np.testing.assert_allclose(p, [0, 0.25, 0, 0.75, 0], atol=1e-12)
        assert robust_loss(losses, divergence, radius, sw) == 2.0
    # Just below the limit the mass is not yet all on the top losses, and no NaN appears.
    p = worst_case_weights(losses, divergence, 0.99 * limit, sample_weight=sw)
    assert np.all(np.isfinite(p)) and p[[1, 3]].sum() < 1.0
    assert p[1] / p[3] == pytest.approx(1 / 3)


@pytest.mark.parametrize("divergence", ["chi2", "kl"])
def test_zero_weight_samples_get_no_mass_and_ties_share_it(divergence):
    losses = np.array([5.0, 1.0, 1.0, 0.0, 3.0])
    sw = np.array([0.0, 1.0, 1.0, 1.0, 1.0])
    p = worst_case_weights(losses, divergence, 0.2, sample_weight=sw)
    assert p[0] == 0.0 and p[1] == pytest.approx(p[2])
    np.testing.assert_allclose(p[1:], worst_case_weights(losses[1:], divergence, 0.2))


@pytest.mark.parametrize("divergence", ["chi2", "kl"])
def test_robust_loss_is_monotone_in_the_radius(divergence):
    losses = np.random.default_rng(0).gamma(2.0, size=300)
    values = [robust_loss(losses, divergence, r) for r in (0.0, 0.05, 0.2, 1.0, 5.0, 1e3)]
    assert values[0] == pytest.approx(losses.mean())
    assert values[-1] == losses.max()
    assert np.all(np.diff(values[:-1]) > 0)


@pytest.mark.parametrize("divergence", ["chi2", "kl"])
@pytest.mark.parametrize("radius", [1e-18, 1e-16, 1e-14, 1e-12, 1e-8])
def test_tiny_radius_keeps_the_worst_case_in_the_ball(divergence, radius):
    # 1 + 2 radius rounds to 1 below 1e-16 and keeps few of its digits above: the chi2
    # worst case at 1e-18 had 222 times the radius, and 1.0002 times it at 1e-12; the KL
    # divergence, a difference of terms of order sqrt(radius), was lost to rounding.
    losses = np.random.default_rng(23).normal(size=64)
    q = np.full(64, 1 / 64)  # exact, so that q sums to 1
    p, _ = _worst_case(losses, q, divergence, radius)
    r = (p - q) / q  # exact: p is within a factor 2 of q
    # sum q (1 + r) log(1 + r) - r: the KL divergence in terms of one sign each
    value = (0.5 * q @ r**2 if divergence == "chi2"
             else q @ ((1.0 + r) * np.log1p(r) - r))
    assert value == pytest.approx(radius, rel=1e-6)
    # To leading order the worst case gains sqrt(2 radius Var(losses)) over the mean.
    gain = robust_loss(losses, divergence, radius) - losses.mean()
    assert gain == pytest.approx(np.sqrt(2.0 * radius * losses.var()), rel=1e-3)


@pytest.mark.parametrize("divergence", ["chi2", "kl"])
def test_radius_below_the_rounding_of_the_weights_gives_the_base_distribution(divergence):
    losses = np.random.default_rng(23).normal(size=64)
    p = worst_case_weights(losses, divergence, 1e-300)
    np.testing.assert_allclose(p, 1 / 64, rtol=1e-15)
    assert robust_loss(losses, divergence, 1e-300) == pytest.approx(losses.mean(), abs=1e-15)


@pytest.mark.parametrize("divergence", ["chi2", "kl"])
def test_warm_start_hint_does_not_change_the_answer(divergence):
    rng = np.random.default_rng(1)
    q = np.full(500, 1 / 500)
    losses = rng.exponential(size=500)
    p, eta = _worst_case(losses, q, divergence, 0.3)
    for hint in (eta, 0.5 * eta, 3.0 * eta, -10.0, 1e-6):
        p_hint, eta_hint = _worst_case(losses, q, divergence, 0.3, eta_hint=hint)
        np.testing.assert_allclose(p_hint, p, rtol=1e-9, atol=1e-15)


def test_warm_start_hint_survives_an_active_set_at_the_rounding_edge():
    # The hinted active set {0, 1} has mass Q with 1 / c < Q but c Q - 1 rounding to 0:
    # the closed form divided by zero (a RuntimeWarning) before falling back.
    Q = 0.9803921568627452  # c = 1.02 (radius 0.01)
    q, losses = np.array([0.5, Q - 0.5, 1.0 - Q]), np.array([2.0, 1.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p, eta = _worst_case(losses, q, "chi2", 0.01, eta_hint=0.5)
    p_ref, eta_ref = _worst_case(losses, q, "chi2", 0.01)
    np.testing.assert_allclose(p, p_ref, rtol=1e-12)
    assert eta == pytest.approx(eta_ref, rel=1e-12)


@pytest.mark.parametrize("divergence", ["chi2", "kl"])
def test_dual_minimum_is_the_robust_loss_and_its_gradients_are_exact(divergence):
    rng = np.random.default_rng(2)
    losses, q = rng.exponential(size=30), rng.dirichlet(np.ones(30))
    radius = 0.4
    p, eta = _worst_case(losses, q, divergence, radius)
    value = _dual(losses, q, divergence, radius, eta)[0]
    assert value == pytest.approx(p @ losses, rel=1e-10)
    bounds = (-5.0, losses.max()) if divergence == "chi2" else (1e-3, 50.0)
    best = minimize_scalar(lambda e: _dual(losses, q, divergence, radius, e)[0],
                           bounds=bounds, method="bounded", options=dict(xatol=1e-10))
    assert best.fun == pytest.approx(p @ losses, rel=1e-8)
    # Gradients against central finite differences, away from the optimum in eta.
    e0, h = eta + 0.1, 1e-6
    _, d_losses, d_eta = _dual(losses, q, divergence, radius, e0)
    fd_eta = (_dual(losses, q, divergence, radius, e0 + h)[0]
              - _dual(losses, q, divergence, radius, e0 - h)[0]) / (2 * h)
    assert d_eta == pytest.approx(fd_eta, rel=1e-5, abs=1e-8)
    basis = np.eye(30)[[0, 7, 19]]
    fd = [(_dual(losses + h * e, q, divergence, radius, e0)[0]
           - _dual(losses - h * e, q, divergence, radius, e0)[0]) / (2 * h) for e in basis]
    np.testing.assert_allclose(d_losses[[0, 7, 19]], fd, rtol=1e-5, atol=1e-9)
    # At the optimal eta the gradient in the losses is the worst case (Danskin).
    np.testing.assert_allclose(_dual(losses, q, divergence, radius, eta)[1], p, atol=1e-7)


@pytest.mark.parametrize("bad, match", [
    (dict(radius=-0.1), "radius"),
    (dict(radius=np.nan), "radius"),
    (dict(divergence="tv"), "divergence"),
    (dict(losses=[1.0, np.nan]), "NaN"),
    (dict(losses=np.ones((2, 2))), "1-d"),
    (dict(sample_weight=[1.0, -1.0]), "sample_weight"),
    (dict(sample_weight=[1.0]), "shape"),
])
def test_inner_maximiser_rejects_bad_input(bad, match):
    kwargs = dict(losses=[1.0, 2.0], divergence="chi2", radius=0.1, sample_weight=None)
    kwargs.update(bad)
    with pytest.raises(ValueError, match=match):
        worst_case_weights(**kwargs)


@pytest.mark.parametrize("divergence", ["chi2", "kl"])
def test_into_ball_makes_a_nearly_feasible_distribution_a_point_of_the_ball(divergence):
    rng = np.random.default_rng(17)
    q = rng.dirichlet(np.ones(30))
    radius = 0.2
    inside = worst_case_weights(rng.exponential(size=30), divergence, radius, q)
    # A point of the ball is kept (up to the simplex normalisation).
    np.testing.assert_allclose(_into_ball(inside, q, divergence, radius), inside, atol=1e-15)
    # Pushed out of the ball and off the simplex, with a rounding-size negative entry.
    outside = 1.2 * (inside + 0.5 * (inside - q))
    outside[np.argmin(outside)] = -1e-12
    assert _divergence(np.maximum(outside, 0) / np.maximum(outside, 0).sum(), q,
                       divergence) > radius
    p = _into_ball(outside, q, divergence, radius)
    assert p.min() >= 0 and p.sum() == pytest.approx(1.0, abs=1e-12)
    assert _divergence(p, q, divergence) <= radius * (1 + 1e-12)
    # It moved along the segment towards q; for chi2 exactly to the boundary.
    start = np.maximum(outside, 0) / np.maximum(outside, 0).sum()
    keep = (p - q) / (start - q)
    assert 0 < keep[0] < 1
    np.testing.assert_allclose(keep, keep[0], rtol=1e-8)
    if divergence == "chi2":
        assert _divergence(p, q, divergence) == pytest.approx(radius, rel=1e-12)
    assert _into_ball(np.zeros(30), q, divergence, radius) is None


# ---------------------------------------------------------------- solvers


def test_sample_size_schedule_is_geometric_and_caps_at_n():
    sizes = sample_sizes(1000, 10, 1.5)
    got = [next(sizes) for _ in range(15)]
    expected = [min(1000, int(np.ceil(10 * 1.5**t - 1e-9))) for t in range(15)]
    assert got == expected
    assert got[-1] == 1000 and got[-2] == 1000 and got[10] < 1000
    assert next(sample_sizes(50, 100, 2.0)) == 50
    # a growth near 1 repeated each size for thousands of t, a stage on the same sample each
    # (13,864 stages of 4 sizes in 1.6 s on 5 rows)
    sizes = sample_sizes(5, 1, 1.0001)
    assert [next(sizes) for _ in range(7)] == [1, 2, 3, 4, 5, 5, 5]


def _binary_problem(n=300, d=5, divergence="chi2", radius=0.2, alpha=1e-2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X @ rng.normal(size=d) + rng.normal(size=n) > 0).astype(float)
    return LinearDRO(X, y, LOSSES["logistic"], np.full(n, 1 / n), divergence, radius, alpha,
                     1, True)


def test_dynamic_sgd_draws_growing_samples_without_replacement_then_goes_full_batch(
        monkeypatch):
    problem = _binary_problem()
    calls = []
    subset = LinearDRO.subset

    def recording_subset(self, rows):
        calls.append((self.X.shape[0], rows))
        return subset(self, rows)

    monkeypatch.setattr(LinearDRO, "subset", recording_subset)
    result = dynamic_sgd(problem, np.zeros(problem.n_params), np.random.default_rng(0), 16,
                         2.0, 200, 1e-6)
    # One random permutation of all 300 rows, then its prefixes: nested samples drawn
    # without replacement, growing geometrically; the next size, 512, is the full batch.
    (n, permutation), prefixes = calls[0], calls[1:]
    assert n == 300 and np.array_equal(np.sort(permutation), np.arange(300))
    assert not np.array_equal(permutation, np.arange(300))
    assert all(size == 300 and rows.start in (0, None) for size, rows in prefixes)
    assert [rows.stop for _, rows in prefixes] == [16, 32, 64, 128, 256]
    assert result.converged and result.n_iter > len(prefixes)


def test_two_loop_is_symmetric_positive_definite_and_meets_the_secant_condition():
    rng = np.random.default_rng(13)
    d = 6
    A = rng.normal(size=(d, d))
    A = A @ A.T + 0.1 * np.eye(d)
    pairs = []
    for _ in range(4):
        s = rng.normal(size=d)
        y = A @ s
        pairs.append((s, y, 1.0 / (s @ y)))
    H = np.column_stack([_two_loop(e, pairs) for e in np.eye(d)])
    np.testing.assert_allclose(H, H.T, atol=1e-10)
    assert np.linalg.eigvalsh(H).min() > 0
    # The newest pair's secant condition holds exactly; with d conjugate pairs of a
    # quadratic, H is its inverse Hessian.
    np.testing.assert_allclose(H @ pairs[-1][1], pairs[-1][0], rtol=1e-10)
    # Between updates H acts as the scaling s'y / y'y of the newest pair: with one pair,
    # on a vector orthogonal to s and y.
    s, y, _ = pairs[-1]
    basis = np.linalg.qr(np.column_stack([s, y, rng.normal(size=d)]))[0]
    np.testing.assert_allclose(_two_loop(basis[:, 2], pairs[-1:]),
                               (s @ y) / (y @ y) * basis[:, 2], atol=1e-12)
    _, vecs = np.linalg.eigh(A)
    conjugate = [(v, A @ v, 1.0 / (v @ A @ v)) for v in vecs.T]
    H = np.column_stack([_two_loop(e, conjugate) for e in np.eye(d)])
    np.testing.assert_allclose(H, np.linalg.inv(A), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("divergence", ["chi2", "kl"])
@pytest.mark.parametrize("k, fit_intercept", [(1, True), (1, False), (3, True)])
def test_sampled_objective_noise_is_the_standard_error_of_the_gradient(
        divergence, k, fit_intercept):
    rng = np.random.default_rng(14)
    n, d = 90, 4
    X = rng.normal(size=(n, d))
    if k == 1:
        T, loss = (rng.uniform(size=n) < 0.5).astype(float), LOSSES["logistic"]
    else:
        T, loss = np.eye(k)[rng.integers(0, k, size=n)], LOSSES["multinomial"]
    q = rng.uniform(0.5, 2.0, size=n)
    problem = LinearDRO(X, T, loss, q / q.sum(), divergence, 0.3, 0.1, k, fit_intercept)
    theta = rng.normal(size=problem.n_params)
    value, grad, p, eta = problem.objective(theta, grad=True)
    row_sq = (X**2).sum(axis=1) + fit_intercept
    state = problem.sampled_objective(theta, None, row_sq)
    assert state.value == pytest.approx(value) and state.eta == pytest.approx(eta)
    np.testing.assert_allclose(state.grad, grad)
    # Per-sample gradient terms v_i = n p_i dZ_i (x_i, 1), written out in full.
    _, dZ = problem.losses(theta)
    features = np.column_stack([X, np.ones(n)]) if fit_intercept else X
    V = (n * p)[:, None, None] * features[:, :, None] * dZ[:, None, :]
    V = np.concatenate([V[:, :d].reshape(n, -1), V[:, d:].reshape(n, -1)], axis=1)
    W, _ = problem.unpack(theta)
    np.testing.assert_allclose(V.mean(axis=0), grad - np.r_[0.1 * W.ravel(),
                                                            np.zeros(k * fit_intercept)])
    expected = np.sqrt(np.sum(V.var(axis=0)) / n)
    assert state.noise == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("divergence", ["chi2", "kl"])
@pytest.mark.parametrize("noise_ratio", [1.0, 0.0])
def test_each_sample_stage_ends_at_its_gradient_noise_or_the_step_cap(
        monkeypatch, divergence, noise_ratio):
    # noise_ratio 0 switches the noise rule off: every stage then runs to the cap.
    monkeypatch.setattr(_dro_sgd, "_NOISE_RATIO", noise_ratio)
    problem = _binary_problem(n=3000, d=8, divergence=divergence, alpha=1e-3)
    events = []
    sampled = LinearDRO.sampled_objective

    def recording(self, theta, eta_hint, row_sq, mu=0.0):
        state = sampled(self, theta, eta_hint, row_sq, mu)
        events.append([self.X.shape[0], np.linalg.norm(state.grad), state.noise, False])
        return state

    def accepted(theta):
        events[-1][3] = True  # the last evaluation is the accepted step

    monkeypatch.setattr(LinearDRO, "sampled_objective", recording)
    result = dynamic_sgd(problem, np.zeros(problem.n_params), np.random.default_rng(1), 32,
                         2.0, 500, 1e-6, accepted)
    assert result.converged
    sizes = [32, 64, 128, 256, 512, 1024, 2048]
    assert sorted({e[0] for e in events}) == sizes + [3000]
    capped = 0
    for m in sizes:
        stage = [e for e in events if e[0] == m]
        # The stage's iterates: its first point and every accepted step.
        iterates = [stage[0]] + [e for e in stage if e[3]]
        steps = len(iterates) - 1
        assert steps <= _dro_sgd._STAGE_STEPS
        # Only the last iterate may be within its noise; a stage ends there, at the cap, or
        # (on these small well-conditioned samples) when its problem is solved to rounding.
        assert all(norm > noise_ratio * noise for _, norm, noise, _ in iterates[:-1])
        norm, noise = iterates[-1][1:3]
        if norm > noise_ratio * noise:
            assert steps == _dro_sgd._STAGE_STEPS or norm < 1e-8
            capped += steps == _dro_sgd._STAGE_STEPS
    if noise_ratio == 0.0:
        assert capped >= len(sizes) - 2
    else:
        # The rule does end stages early, and saves steps on small samples.
        assert capped < len(sizes)


def test_dynamic_sgd_stops_when_no_step_decreases_the_objective():
    # tol=0 is out of reach in floating point; the path must stop on its own, at the optimum,
    # without claiming that the gradient test passed.
    problem = _binary_problem(n=200, d=3)
    result = dynamic_sgd(problem, np.zeros(problem.n_params), np.random.default_rng(0), 16,
                         2.0, 5000, 0.0)
    reference = primal_lbfgs(problem, np.zeros(problem.n_params), 5000, 1e-10)
    assert not result.converged and 0.0 < result.grad_max < 1e-6
    assert result.n_iter < 5000
    assert problem.objective(result.theta)[0] == pytest.approx(
        problem.objective(reference.theta)[0], rel=1e-10)


@pytest.mark.parametrize("divergence", ["chi2", "kl"])
def test_dynamic_sgd_never_returns_a_point_worse_than_its_start(divergence):
    # At radius 1 the first steps, taken on small samples and on smoothed objectives, can
    # leave the full data's F above its value at the start; a path cut short by max_iter
    # there must return the start instead.
    problem = _binary_problem(n=100, d=3, divergence=divergence, radius=1.0, alpha=1e-4)
    theta0 = np.zeros(problem.n_params)
    start = problem.objective(theta0)[0]
    for max_iter in range(1, 13):
        result = dynamic_sgd(problem, theta0, np.random.default_rng(1), 16, 2.0, max_iter, 1e-8)
        assert problem.objective(result.theta)[0] <= start, max_iter


@pytest.mark.parametrize("divergence", ["chi2", "kl"])
@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_solvers_reach_the_exact_optimum(divergence, loss):
    rng = np.random.default_rng(4)
    n, d, radius, alpha = 60, 4, 0.3, 0.05
    X = rng.normal(size=(n, d))
    score = X @ rng.normal(size=d)
    if loss == "logistic":
        y = (score + rng.normal(size=n) > 0).astype(float)
    else:
        y = score + 0.5 * rng.standard_t(3, size=n)
    sw = rng.integers(1, 4, size=n).astype(float)
    q = sw / sw.sum()
    value, w_ref, b_ref = _cvx_dro(X, y, q, loss, divergence, radius, alpha)
    problem = LinearDRO(X, y, LOSSES[loss], q, divergence, radius, alpha, 1, True)
    theta0 = np.zeros(problem.n_params)
    runs = {
        "primal": primal_lbfgs(problem, theta0, 2000, 1e-9),
        "dual": dual_lbfgs(problem, theta0, 2000, 1e-9),
        "sgd": dynamic_sgd(problem, theta0, np.random.default_rng(0), 8, 1.5, 5000, 1e-7),
    }
    for name, result in runs.items():
        objective = problem.objective(result.theta)[0]
        assert objective == pytest.approx(value, rel=1e-5), name
        assert objective >= value - 1e-6 * abs(value)  # cvxpy's value is the minimum
        W, b = problem.unpack(result.theta)
        np.testing.assert_allclose(W[:, 0], w_ref, atol=2e-3, err_msg=name)


def test_multiclass_classifier_matches_cvxpy():
    rng = np.random.default_rng(5)
    n, d, k, radius, alpha = 45, 3, 3, 0.2, 0.1
    X = rng.normal(size=(n, d))
    y = np.argmax(X @ rng.normal(size=(d, k)) + rng.gumbel(size=(n, k)), axis=1)
    W, b, eta = cp.Variable((d, k)), cp.Variable(k), cp.Variable()
    Z = X @ W + np.ones((n, 1)) @ cp.reshape(b, (1, k), order="C")
    losses = cp.log_sum_exp(Z, axis=1) - cp.sum(cp.multiply(Z, np.eye(k)[y]), axis=1)
    robust = eta + np.sqrt(1 + 2 * radius) * cp.norm(cp.pos(losses - eta), 2) / np.sqrt(n)
    ref = cp.Problem(cp.Minimize(robust + alpha / 2 * cp.sum_squares(W)))
    ref.solve(solver="CLARABEL")
    clf = DROClassifier(radius=radius, alpha=alpha, tol=1e-8).fit(X, y)
    assert clf.objective_ == pytest.approx(ref.value, rel=1e-6)
    np.testing.assert_allclose(clf.coef_, W.value.T, atol=1e-3)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[proba.argmax(axis=1)])


# ---------------------------------------------------------------- estimators


@pytest.mark.parametrize("divergence", ["chi2", "kl"])
def test_classifier_attributes_are_consistent(divergence):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(200, 4))
    y = np.where(X[:, 0] - X[:, 1] + 0.5 * rng.normal(size=200) > 0, "yes", "no")
    clf = DROClassifier(divergence=divergence, radius=0.3, alpha=0.01).fit(X, y)
    z = clf.decision_function(X)
    t = (y == "yes").astype(float)
    losses = np.logaddexp(0, z) - t * z
    np.testing.assert_allclose(clf.sample_weights_,
                               worst_case_weights(losses, divergence, 0.3), atol=1e-12)
    assert clf.objective_ == pytest.approx(
        robust_loss(losses, divergence, 0.3) + 0.005 * np.sum(clf.coef_**2))
    np.testing.assert_allclose(clf.predict_proba(X)[:, 1], 1 / (1 + np.exp(-z)))
    assert set(clf.predict(X)) <= {"no", "yes"} and (clf.predict(X) == y).mean() > 0.8
    # Heavier weight on the worst-fitted samples.
    assert np.corrcoef(clf.sample_weights_, losses)[0, 1] > 0.9


def test_dro_beats_empirical_risk_minimiser_on_its_own_objective():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(300, 3))
    y = X @ [1.0, -2.0, 0.5] + rng.standard_t(2, size=300)
    erm = DRORegressor(radius=0.0, alpha=0.01).fit(X, y)
    dro = DRORegressor(radius=0.5, alpha=0.01).fit(X, y)
    erm_losses = (erm.predict(X) - y) ** 2 / 2
    erm_robust = robust_loss(erm_losses, "chi2", 0.5) + 0.005 * erm.coef_ @ erm.coef_
    assert dro.objective_ < erm_robust - 1e-3
    assert np.mean((dro.predict(X) - y) ** 2 / 2) > np.mean(erm_losses)


def test_zero_radius_regressor_is_ridge():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(80, 5))
    y = X @ rng.normal(size=5) + 3.0 + rng.normal(size=80)
    alpha = 0.2
    reg = DRORegressor(radius=0.0, alpha=alpha, tol=1e-10).fit(X, y)
    ridge = Ridge(alpha=80 * alpha).fit(X, y)
    np.testing.assert_allclose(reg.coef_, ridge.coef_, rtol=1e-6)
    assert reg.intercept_ == pytest.approx(ridge.intercept_, rel=1e-6)
    np.testing.assert_allclose(reg.sample_weights_, 1 / 80)


@pytest.mark.parametrize("divergence", ["chi2", "kl"])
def test_sgd_and_lbfgs_agree(divergence):
    rng = np.random.default_rng(9)
    X = rng.normal(size=(2000, 6))
    y = (X[:, :3].sum(axis=1) + rng.normal(size=2000) > 0).astype(int)
    kw = dict(divergence=divergence, radius=0.2, alpha=1e-2, tol=1e-7)
    lbfgs = DROClassifier(solver="lbfgs", **kw).fit(X, y)
    sgd = DROClassifier(solver="sgd", initial_sample_size=32, growth=1.5, random_state=0,
                        max_iter=3000, **kw).fit(X, y)
    assert sgd.objective_ == pytest.approx(lbfgs.objective_, rel=1e-6)
    np.testing.assert_allclose(sgd.coef_, lbfgs.coef_, atol=1e-3)
    again = DROClassifier(solver="sgd", initial_sample_size=32, growth=1.5, random_state=0,
                          max_iter=3000, **kw).fit(X, y)
    np.testing.assert_array_equal(again.coef_, sgd.coef_)


def _cvx_max_loss(X, y, loss, alpha):
    """min over (w, b) of the largest loss plus the penalty, solved by a conic solver."""
    w, b, t = cp.Variable(X.shape[1]), cp.Variable(), cp.Variable()
    z = X @ w + b
    losses = _cvx_losses(z, y, loss)
    problem = cp.Problem(cp.Minimize(t + alpha / 2 * cp.sum_squares(w)), [losses <= t])
    problem.solve(solver="CLARABEL")
    return problem.value


def test_concentrated_ball_threshold_is_the_smallest_base_weight():
    problem = _binary_problem(n=40)
    for divergence, limit in (("chi2", 19.5), ("kl", np.log(40))):
        problem.divergence = divergence
        problem.radius = limit
        assert problem.concentrated()
        problem.radius = 0.999 * limit
        assert not problem.concentrated()
    # With weights the lightest sample sets the threshold; zero weights do not count.
    q = np.r_[0.0, 0.5, np.ones(38)]
    problem.q, problem.divergence = q / q.sum(), "chi2"
    problem.radius = 0.5 * (q.sum() / 0.5 - 1)
    assert problem.concentrated()
    problem.radius *= 0.999
    assert not problem.concentrated()


@pytest.mark.parametrize("Estimator", [DROClassifier, DRORegressor])
@pytest.mark.parametrize("divergence, radius", [("chi2", 1e6), ("kl", 1e6), ("kl", 10.0),
                                                ("chi2", 25.0)])
@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_radius_so_large_that_all_mass_is_on_one_point(Estimator, divergence, radius, solver):
    # On n = 40 points any chi2 radius >= 19.5 or KL radius >= log 40 lets the worst case
    # sit on the largest loss whatever the model: the problem is the max-loss problem.
    rng = np.random.default_rng(10)
    n, alpha = 40, 0.1
    X = rng.normal(size=(n, 2))
    if Estimator is DROClassifier:
        y, loss = (X[:, 0] > 0).astype(int), "logistic"  # separable: max loss < log 2
    else:
        y, loss = X[:, 0] + rng.normal(size=n), "squared"
    reference = _cvx_max_loss(X, y, loss, alpha)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = Estimator(divergence=divergence, radius=radius, alpha=alpha, solver=solver,
                        random_state=0).fit(X, y)
    assert est.objective_ == pytest.approx(reference, rel=1e-6)
    if radius < 1e3:  # the same value through the DRO problem's own conic dual
        assert est.objective_ == pytest.approx(
            _cvx_dro(X, y, np.full(n, 1 / n), loss, divergence, radius, alpha)[0], rel=1e-5)
    if Estimator is DROClassifier:
        assert est.objective_ < np.log(2) - 1e-3  # better than w = 0
    p = est.sample_weights_
    assert np.all(np.isfinite(p)) and np.all(np.isfinite(est.coef_))
    # a minimax optimum over 3 parameters (2 coefficients, the intercept) ties at most 4 losses
    # generically; the worst case may spread over all of them
    assert p.max() == pytest.approx(1.0) or np.count_nonzero(p) <= X.shape[1] + 2
    # The objective is the largest loss plus the penalty.
    z = est.decision_function(X) if Estimator is DROClassifier else est.predict(X)
    losses = np.logaddexp(0, z) - y * z if loss == "logistic" else (z - y) ** 2 / 2
    assert est.objective_ == pytest.approx(losses.max() + alpha / 2 * np.sum(est.coef_**2))
    assert losses[p > 0].min() == pytest.approx(losses.max(), rel=1e-6)  # mass on the largest only


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_large_radius_with_sample_weights_is_the_max_loss_over_their_support(solver):
    rng = np.random.default_rng(15)
    X = rng.normal(size=(50, 3))
    y = X @ [1.0, -1.0, 0.5] + rng.normal(size=50)
    sw = rng.uniform(0.5, 2.0, size=50)
    sw[:6] = 0.0
    y[:6] += 100.0  # zero-weight outliers must not count
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        reg = DRORegressor(radius=1e6, alpha=0.1, solver=solver).fit(X, y, sample_weight=sw)
    reference = _cvx_max_loss(X[6:], y[6:], "squared", 0.1)
    assert reg.objective_ == pytest.approx(reference, rel=1e-6)
    np.testing.assert_array_equal(reg.sample_weights_[:6], 0.0)


def test_max_loss_path_stops_unconverged_at_max_iter():
    problem = _binary_problem(n=200, d=3, radius=1e6)
    result = _dro_conic.max_loss(problem, np.zeros(problem.n_params), 3, 1e-4)
    assert not result.converged and result.n_iter == 3
    full = _dro_conic.max_loss(problem, np.zeros(problem.n_params), 1000, 1e-4)
    assert full.converged and full.grad_max <= 1e-4


def test_working_set_multipliers_of_repeated_rows_are_shared_in_proportion_to_q():
    # Every row twice, the copies weighted 1 and 3: equal rows are one constraint of the conic
    # problem, whose multiplier the copies share in proportion to q. The multipliers of
    # loss_i <= t in min t + penalty sum to one and make the weighted gradient vanish.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 1))
    y = X[:, 0] + rng.normal(size=10)
    q = np.r_[np.ones(10), 3 * np.ones(10)]
    problem = LinearDRO(np.vstack([X, X]), np.r_[y, y], LOSSES["squared"], q / q.sum(), "chi2",
                        1e6, 1e-2, 1, True)
    theta, lam, _ = _dro_conic._solve_working_set(problem, np.arange(20), 500)
    assert lam.min() >= 0.0 and lam.sum() == pytest.approx(1.0, rel=1e-9)
    np.testing.assert_allclose(lam[10:], 3 * lam[:10], rtol=1e-12, atol=1e-15)
    losses, dZ = problem.losses(theta)
    assert np.count_nonzero(lam > 1e-6) >= 2
    np.testing.assert_allclose(losses[lam > 1e-6], losses.max(), rtol=1e-9)
    np.testing.assert_allclose(problem.weighted_gradient(theta, lam, dZ), 0.0, atol=1e-9)


def test_working_set_multipliers_are_never_negative():
    # A row whose loss at the max-loss optimum is below the maximum by a relative 1e-8: the
    # conic solver gives it a sizeable multiplier, and refining the solution on the rows of
    # positive multiplier as if they all tied gives it a negative one. Multipliers of
    # loss_i <= t are nonnegative, sum to one and make the weighted gradient vanish.
    rng = np.random.default_rng(2)
    n, d, alpha = 12, 2, 30.0
    X = rng.normal(size=(n, d))
    y = X.sum(axis=1) + rng.normal(size=n)
    problem = LinearDRO(X, y, LOSSES["squared"], np.full(n, 1 / n), "chi2", 1e6, alpha, 1, True)
    theta, _, _ = _dro_conic._solve_working_set(problem, np.arange(n), 500)
    top = problem.losses(theta)[0].max()
    x = rng.normal(size=d)
    X, y = np.vstack([X, x]), np.r_[y, x @ theta[:d] + theta[d] + np.sqrt(2 * top * (1 - 1e-8))]
    problem = LinearDRO(X, y, LOSSES["squared"], np.full(n + 1, 1 / (n + 1)), "chi2", 1e6, alpha,
                        1, True)
    theta, lam, _ = _dro_conic._solve_working_set(problem, np.arange(n + 1), 500)
    assert lam.min() >= 0.0 and lam.sum() == pytest.approx(1.0, rel=1e-6)
    _, dZ = problem.losses(theta)
    # the conic solution stands here, accurate to its solver's tolerance
    np.testing.assert_allclose(problem.weighted_gradient(theta, lam, dZ), 0.0, atol=1e-4)


def test_max_loss_result_is_not_converged_while_a_row_outside_its_set_exceeds_it():
    # A 17th row fitted exactly at the start stays out of the first working set (16 rows), but
    # at the set's optimum its loss exceeds the set's largest by a relative 5e-7. With the
    # set capped at 16 it cannot join: the set's optimum is not the data's, whatever its
    # multipliers say.
    rng = np.random.default_rng(0)
    n = 16
    X = rng.normal(size=(n, 1))
    y = X[:, 0] + 0.5 * rng.normal(size=n)
    problem = LinearDRO(X, y, LOSSES["squared"], np.full(n, 1 / n), "chi2", 1e6, 1e-2, 1, True)
    on_16 = _dro_conic.max_loss(problem, np.zeros(2), 500, 1e-6)
    top = problem.losses(on_16.theta)[0].max()
    extra = on_16.theta[1] + np.sqrt(2 * top * (1 + 5e-7))  # at x = 0
    problem = LinearDRO(np.vstack([X, [[0.0]]]), np.r_[y, extra], LOSSES["squared"],
                        np.full(n + 1, 1 / (n + 1)), "chi2", 1e6, 1e-2, 1, True)
    theta0 = np.array([0.0, extra])
    capped = _dro_conic.max_loss(problem, theta0, 500, 1e-6, max_set=n)
    assert capped.n_outside == 1 and not capped.converged
    full = _dro_conic.max_loss(problem, theta0, 500, 1e-6)
    assert full.converged and full.n_outside == 0
    assert problem.objective(full.theta)[0] < problem.objective(capped.theta)[0]


@pytest.mark.parametrize("seed, weighted", [(4, False), (6, False), (7, False), (5, True),
                                          (10, True)])
def test_max_loss_constant_optimum_converges_without_warning(seed, weighted):
    # At a constant max-loss optimum all 200 losses tie and Clarabel stops up to 2e-8
    # above it: its multipliers fell short of the robust loss by more than the descent
    # paths' slack (1.69e-8 against 1.49e-8), and the fit warned that a gradient entry of
    # 4.9e-7 failed tol=1e-4, advising to increase tol.
    X, y = make_classification(200, 6, random_state=seed, flip_y=0.05)
    sw = np.random.default_rng(seed).uniform(0.5, 2.0, 200) if weighted else None
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = DROClassifier(radius=1e4).fit(X, y, sample_weight=sw)
    assert np.log(2) <= clf.objective_ <= np.log(2) * (1 + 1e-7)


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
@pytest.mark.parametrize("max_iter", [1, 3, 12, 25])
def test_max_loss_path_keeps_to_max_iter_and_the_start(solver, max_iter):
    # The max-loss path bounded only its ERM start by max_iter and returned its last
    # point: max_iter=3 reported 30 iterations at objective 23.8, against log 2 at the
    # start coef_ = 0.
    X, y = _scaled_breast_cancer()
    with pytest.warns(ConvergenceWarning, match=f"stopped at max_iter={max_iter} "):
        clf = DROClassifier(radius=1000, max_iter=max_iter, solver=solver).fit(X, y)
    assert 1 <= clf.n_iter_ <= max_iter
    assert clf.objective_ <= np.log(2) * (1 + 1e-15)


@pytest.mark.parametrize("Estimator", [DROClassifier, DRORegressor])
@pytest.mark.parametrize("divergence", ["chi2", "kl"])
@pytest.mark.parametrize("radius", [1.0, 100.0])
@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_weights_are_repeated_samples_at_large_radii(Estimator, divergence, radius, solver):
    # Radius 1 ends at the max-loss optimum, radius 100 is beyond its bound. Clarabel
    # stopped 1.1e-7 above it on the repeated rows (duplicate constraints), whose
    # smoothed path then ended 5.8e-5 (relative) above it, and solutions accurate in the
    # objective to 1e-10 differed by 5.6e-6 in the coefficients: predict_proba differed by
    # 3e-3 to 6e-3 (radius 0.5 to 3) and 1.1e-5 (radius 100).
    check_sample_weight_equivalence_on_dense_data(
        Estimator.__name__,
        Estimator(divergence=divergence, radius=radius, solver=solver, random_state=0))


@pytest.mark.parametrize("divergence", ["chi2", "kl"])
def test_repeated_samples_reach_the_weighted_objective(divergence):
    rng = np.random.RandomState(42)  # sklearn's data for the check above
    X, y, sw = rng.rand(15, 30), rng.randint(0, 3, size=15), rng.randint(0, 5, size=15)
    kw = dict(divergence=divergence, radius=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        weighted = DROClassifier(**kw).fit(X, y, sample_weight=sw)
        repeated = DROClassifier(**kw).fit(X.repeat(sw, axis=0), y.repeat(sw))
    assert repeated.objective_ == pytest.approx(weighted.objective_, rel=1e-12)
    np.testing.assert_allclose(repeated.coef_, weighted.coef_, rtol=1e-10, atol=1e-12)


def test_smoothed_path_returns_a_better_max_loss_point_found_on_the_way(monkeypatch):
    # On sklearn's repeated samples the smoothed path passes the tol test 5.8e-5
    # (relative) above the max-loss optimum, which the path found on the way. That point
    # was kept only when the path failed its test; it is the better one even when its
    # own test fails (as it did before the conic solves were refined).
    max_loss = _dro_conic.max_loss

    def failing(*args, **kwargs):
        return replace(max_loss(*args, **kwargs), converged=False)

    rng = np.random.RandomState(42)
    X, y, sw = rng.rand(15, 30), rng.randint(0, 3, size=15), rng.randint(0, 5, size=15)
    optimum = DROClassifier(divergence="kl", radius=1.0).fit(X, y, sample_weight=sw)
    monkeypatch.setattr(_dro_continuation, "max_loss", failing)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = DROClassifier(divergence="kl", radius=1.0).fit(X.repeat(sw, axis=0),
                                                             y.repeat(sw))
    assert clf.objective_ == pytest.approx(optimum.objective_, rel=1e-12)


def _scaled_breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return (X - X.mean(axis=0)) / X.std(axis=0), y


def _binary_iris():
    X, y = load_iris(return_X_y=True)
    return X, (y == 2).astype(int)  # raw features: not linearly separable from the rest


@pytest.mark.parametrize("data, divergence, radius", [
    (_scaled_breast_cancer, "kl", 2.0),
    (_binary_iris, "chi2", 1.0),
    (_binary_iris, "kl", 0.1),
])
def test_sgd_moves_off_the_tie_at_zero(data, divergence, radius):
    # At w = 0 all logistic losses tie and the gradient at the base distribution is no
    # descent direction of the robust objective; the path must still reach the optimum.
    X, y = data()
    alpha = 1e-3
    reference = _cvx_dro(X, y.astype(float), np.full(len(y), 1 / len(y)), "logistic",
                         divergence, radius, alpha)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        sgd = DROClassifier(solver="sgd", divergence=divergence, radius=radius, alpha=alpha,
                            random_state=0).fit(X, y)
        lbfgs = DROClassifier(divergence=divergence, radius=radius, alpha=alpha).fit(X, y)
    assert sgd.objective_ == pytest.approx(reference, rel=1e-4)
    assert sgd.objective_ == pytest.approx(lbfgs.objective_, rel=1e-4)
    assert sgd.objective_ < np.log(2) - 0.01
    assert np.abs(sgd.coef_).max() > 0.1 and sgd.n_iter_ > 0


@pytest.mark.parametrize("Estimator", [DROClassifier, DRORegressor])
@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_constant_optimum_converges_without_warning(Estimator, solver):
    # Labels independent of X: the robust optimum is the constant model, where all losses
    # tie and the objective is not differentiable; the tie's smallest subgradient is zero.
    X, y = np.random.default_rng(0).normal(size=(20, 2)), np.arange(20) % 2
    loss = "logistic" if Estimator is DROClassifier else "squared"
    reference = _cvx_dro(X, y.astype(float), np.full(20, 1 / 20), loss, "chi2", 0.1, 1e-3)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = Estimator(solver=solver, random_state=0).fit(X, y)
    assert est.objective_ == pytest.approx(reference, rel=1e-6)
    np.testing.assert_allclose(est.coef_, 0.0, atol=1e-6)


def test_constant_optimum_is_reached_where_lbfgs_stalled():
    # A constant optimum (all losses tie) that the unsmoothed L-BFGS path stalled short
    # of (objective 0.694126, |coef_| 1.1, with a warning telling to increase tol).
    X, y = make_classification(120, 4, random_state=0, flip_y=0.1)
    reference = _cvx_dro(X, y.astype(float), np.full(120, 1 / 120), "logistic", "chi2", 2.0,
                         1e-3)[0]
    for solver in ("lbfgs", "sgd"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            clf = DROClassifier(radius=2.0, solver=solver, random_state=0).fit(X, y)
        assert clf.objective_ == pytest.approx(reference, rel=1e-7), solver
        # The objective is flat but for the penalty there: tol / alpha bounds coef_.
        assert np.abs(clf.coef_).max() < 0.05, solver


@pytest.mark.parametrize("seed", range(10))
def test_lbfgs_reaches_the_optimum_at_radius_two(seed):
    # Most of these optima are constant models; the unsmoothed path ended above the
    # optimum on 7 of 10 seeds (on 6 by more than 1e-6).
    X, y = make_classification(200, 5, random_state=seed)
    reference = _cvx_dro(X, y.astype(float), np.full(200, 1 / 200), "logistic", "chi2", 2.0,
                         1e-3)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = DROClassifier(radius=2.0).fit(X, y)
    # tol=1e-4 leaves a non-constant optimum up to about 1e-6 short; cvxpy's own value is
    # accurate to about 1e-5 here (the fit is below it on one seed).
    assert clf.objective_ <= reference * (1 + 1e-6)
    assert clf.objective_ == pytest.approx(reference, rel=2e-5)


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
@pytest.mark.parametrize("divergence, radius", [("chi2", 20.0), ("chi2", 100.0),
                                                ("kl", 6.0)])
def test_large_radius_below_the_max_loss_bound_matches_cvxpy(solver, divergence, radius):
    # Between the bounds (569 samples: chi2 284, kl 6.34) the optimum is the max-loss one,
    # where many top losses tie: the unsmoothed paths ended above the all-zero model
    # (log 2; 0.728 for chi2 100, 0.895 for kl 6) against cvxpy's 0.69290.
    X, y = _scaled_breast_cancer()
    n = len(y)
    reference = _cvx_dro(X, y.astype(float), np.full(n, 1 / n), "logistic", divergence,
                         radius, 1e-3)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = DROClassifier(divergence=divergence, radius=radius, solver=solver,
                            random_state=0).fit(X, y)
        max_loss = DROClassifier(radius=300.0, solver=solver).fit(X, y)
    assert clf.objective_ == pytest.approx(reference, rel=1e-6)
    # The max-loss objective bounds every smaller radius's optimum from above.
    assert clf.objective_ <= max_loss.objective_ * (1 + 1e-8)
    assert clf.objective_ < np.log(2) - 1e-4


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_optimum_is_non_decreasing_in_the_radius(solver):
    # Two samples: chi2 concentrates at radius 0.5, and the optimum ties both losses at
    # every radius. The sampled path once ended 10 % above the radius-0.5 optimum.
    X, y = np.array([[1.304], [0.947]]), np.array([0, 1])
    values = [DROClassifier(radius=radius, solver=solver, random_state=0).fit(X, y).objective_
              for radius in (0.01, 0.1, 0.2, 0.3, 0.45, 0.5, 1.0)]
    assert np.all(np.diff(values) >= -1e-6 * np.abs(values[:-1]))
    np.testing.assert_allclose(values, values[-1], rtol=1e-6)


def test_smoothed_path_tries_the_max_loss_optimum_only_when_few_samples_carry_the_mass(
        monkeypatch):
    calls = []
    max_loss = _dro_conic.max_loss

    def recording(problem, theta, max_iter, tol, callback=None, max_set=None):
        calls.append(max_set)
        return max_loss(problem, theta, max_iter, tol, callback, max_set)

    monkeypatch.setattr(_dro_continuation, "max_loss", recording)
    X, y = _scaled_breast_cancer()
    n = len(y)
    problem = LinearDRO(X, y.astype(float), LOSSES["logistic"], np.full(n, 1 / n), "chi2",
                        100.0, 1e-3, 1, True)
    result = primal_lbfgs(problem, np.zeros(problem.n_params), 1000, 1e-4)
    assert result.converged and calls == [2 * 64]
    # A moderate radius converges at the first temperature, without it.
    calls.clear()
    problem.radius = 0.1
    assert primal_lbfgs(problem, np.zeros(problem.n_params), 1000, 1e-4).converged
    assert calls == []


def test_lbfgs_stall_is_not_convergence():
    # tol=0 cannot be met in floating point: SciPy stops when no step decreases the
    # objective, which must not count as passing the gradient test.
    problem = _binary_problem(n=200, d=3)
    result = primal_lbfgs(problem, np.zeros(problem.n_params), 5000, 0.0)
    assert not result.converged and result.n_iter < 5000 and result.grad_max > 0.0
    assert dual_lbfgs(problem, np.zeros(problem.n_params), 5000, 0.0).converged is False


def test_lbfgs_convergence_claims_are_within_tolerance_of_the_optimum():
    # At KL radius 3 the optimum is the constant model (F = log 2), a kink where all losses
    # tie. A smoothing stage can pass the gradient test well above it (F - F_mu up to
    # mu * radius): such a point is no epsilon-subgradient point of F, so at every
    # iteration budget a result that claims convergence must have its gap within the slack
    # and F within the tolerance of the conic optimum.
    rng = np.random.default_rng(0)
    n = 60
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(float)
    q = np.full(n, 1 / n)
    reference = _cvx_dro(X, y, q, "logistic", "kl", 3.0, 1e-3)[0]
    problem = LinearDRO(X, y, LOSSES["logistic"], q, "kl", 3.0, 1e-3, 1, True)
    claims = 0
    for max_iter in [*range(3, 40), 1000]:
        result = primal_lbfgs(problem, np.zeros(problem.n_params), max_iter, 1e-7)
        if result.converged:
            claims += 1
            value = problem.objective(result.theta)[0]
            assert result.gap <= _dro_conic._TIE_SLACK * max(1.0, value), max_iter
            assert value == pytest.approx(reference, rel=1e-6), max_iter
    assert claims > 0


def test_a_converged_result_is_beaten_only_by_more_than_the_slack():
    # A point that failed its test replaces a converged result only when its objective is
    # lower by more than _TIE_SLACK (relative); an unconverged result yields to any decrease;
    # no result yields to a point that is no better.
    slack = _dro_conic._TIE_SLACK
    for objective in (0.5, 1.0, -4.0, 100.0):
        scale = max(1.0, abs(objective))
        converged = Result(np.zeros(2), 5, True, 0.0, objective=objective)
        failed = replace(converged, converged=False)
        for result in (converged, failed):
            assert not _dro_continuation._improves(objective, result)
            assert not _dro_continuation._improves(objective + 1e-3 * slack * scale, result)
            assert _dro_continuation._improves(objective - 4 * slack * scale, result)
        assert not _dro_continuation._improves(objective - 0.5 * slack * scale, converged)
        assert _dro_continuation._improves(objective - 0.5 * slack * scale, failed)


def test_continuation_cools_to_the_worst_case_temperature_when_it_is_lower():
    # Squared losses fitted close to zero: the first temperature (1e-2 of F at theta = 0) is
    # far above the worst case's at the optimum. Each next stage runs at _MU_FACTOR times
    # the lower of its temperature and the exact worst case's at the stage's point, but at
    # least _MU_FACTOR**2 times its temperature.
    rng = np.random.default_rng(0)
    n = 60
    X = rng.normal(size=(n, 2))
    y = X @ np.array([1.0, -2.0]) + 0.01 * rng.normal(size=n)
    problem = LinearDRO(X, y, LOSSES["squared"], np.full(n, 1 / n), "kl", 0.3, 1e-3, 1, True)
    stages = []  # (temperature of the stage, exact worst case's temperature at its point)

    def stage(theta, mu, n_iter):
        result = _lbfgs(lambda th: problem.smoothed_objective(th, mu)[:2], theta,
                        2000 - n_iter, 1e-7, None, n_before=n_iter)
        stages.append((mu, problem.smoothed_objective(result.theta, mu)[5]))
        return result

    theta = np.zeros(problem.n_params)
    mu = _dro_continuation._first_temperature(problem.objective(theta)[0])
    result = _dro_continuation._continuation(problem, theta, mu, 2000, 1e-7, stage)
    assert result.converged
    factor = _dro_continuation._MU_FACTOR
    for (mu, temperature), (next_mu, _) in zip(stages, stages[1:]):
        assert next_mu == pytest.approx(factor * max(min(mu, temperature), factor * mu))
    # the worst case was colder than the stage at least once: the rule was exercised
    assert any(temperature < factor * mu for mu, temperature in stages[:-1])
    assert problem.objective(result.theta)[0] == pytest.approx(
        _cvx_dro(X, y, np.full(n, 1 / n), "squared", "kl", 0.3, 1e-3)[0], rel=1e-5)


def test_lbfgs_with_bounds_tests_the_projected_gradient():
    # min ||x - c||^2 / 2 over the box [0, 1]^3: the optimum clip(c, 0, 1) has x = 0 where the
    # gradient is positive and x = 1 where it is negative; there only the component into the
    # box counts (KKT), so the optimum passes the gradient test.
    c = np.array([-1.0, 0.5, 2.0])

    def fun(x):
        return 0.5 * float((x - c) @ (x - c)), x - c

    result = _lbfgs(fun, np.array([0.7, 0.2, 0.4]), 100, 1e-8, None,
                    bounds=[(0.0, 1.0)] * 3)
    np.testing.assert_allclose(result.theta, np.clip(c, 0.0, 1.0), atol=1e-10)
    assert result.converged and result.grad_max <= 1e-8


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_constant_optimum_certified_by_the_smoothed_path(monkeypatch, solver):
    # Random labels: the robust optimum is coef_ = 0, where all losses tie. The smoothed
    # path's own epsilon-subgradient certifies it, without the conic search.
    def no_conic(conic, **options):
        raise AssertionError("no conic solve expected")

    monkeypatch.setattr(_dro_conic, "_solve_quietly", no_conic)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(1000, 10)), rng.integers(0, 2, 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = DROClassifier(radius=0.5, solver=solver, random_state=0).fit(X, y)
    np.testing.assert_allclose(clf.coef_, 0.0, atol=1e-7)
    assert np.log(2) <= clf.objective_ <= np.log(2) * (1 + _dro_conic._TIE_SLACK)


def test_certificate_is_skipped_above_its_size_limit(monkeypatch):
    # the conic search takes about 100 times the n x n_params gradient matrix in memory (2.8 GB at
    # 200,000 rows): above the limit the stalled result stands, unsolved and uncertified
    X, y = np.random.default_rng(0).normal(size=(20, 2)), np.arange(20) % 2
    problem = LinearDRO(X, y.astype(float), LOSSES["logistic"], np.full(20, 1 / 20), "chi2",
                        0.1, 1e-3, 1, True)
    stalled = Result(np.zeros(problem.n_params), 5, False, 1.0)
    assert _certify(problem, stalled, 1e-4).converged  # within the limit: certified

    def no_conic(conic, **options):
        raise AssertionError("no conic solve expected")

    assert 200_000 * 21 > _dro_conic._CERTIFY_MAX_ENTRIES  # the case measured above is skipped
    monkeypatch.setattr(_dro_conic, "_solve_quietly", no_conic)
    monkeypatch.setattr(_dro_conic, "_CERTIFY_MAX_ENTRIES", 20 * problem.n_params - 1)
    assert _certify(problem, stalled, 1e-4) is stalled


def test_certificate_checks_the_distribution_of_an_inaccurate_solve(monkeypatch):
    # At theta = 0 all logistic losses tie, and a distribution of the ball zeroes the
    # gradient: the real solve certifies the point.
    X, y = np.random.default_rng(0).normal(size=(20, 2)), np.arange(20) % 2
    problem = LinearDRO(X, y.astype(float), LOSSES["logistic"], np.full(20, 1 / 20), "chi2",
                        0.1, 1e-3, 1, True)
    stalled = Result(np.zeros(problem.n_params), 5, False, 1.0)
    certified = _certify(problem, stalled, 1e-4)
    assert certified.converged and certified.grad_max <= 1e-4
    solve = _dro_conic._solve_quietly

    def inaccurate(conic, **options):
        # The base distribution q: in the ball, but its gradient (plain logistic
        # regression's at 0) is far from 0, whatever the solver's own value says.
        solve(conic, **options)
        conic._status = cp.OPTIMAL_INACCURATE
        conic.variables()[0].value = np.full(20, 1 / 20)

    monkeypatch.setattr(_dro_conic, "_solve_quietly", inaccurate)
    rejected = _certify(problem, stalled, 1e-4)
    _, dZ = problem.losses(stalled.theta)
    at_q = np.abs(problem.weighted_gradient(stalled.theta, problem.q, dZ)).max()
    assert at_q > 1e-2
    assert not rejected.converged and rejected.grad_max == pytest.approx(at_q)


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
@pytest.mark.parametrize("scale", [1e-5, 1e5])
def test_rescaled_target_gives_the_rescaled_fit(solver, scale):
    # Small targets once stopped at coef_ = 0 (the start passed an absolute gradient
    # test); large ones warned although the fit was fine.
    rng = np.random.default_rng(18)
    X = rng.normal(size=(500, 3))
    y = X @ [1.0, -1.0, 0.5] + 2.0 + 0.3 * rng.normal(size=500)
    kw = dict(radius=0.1, solver=solver, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        reference = DRORegressor(**kw).fit(X, y)
        scaled = DRORegressor(**kw).fit(X, scale * y)
    np.testing.assert_allclose(scaled.coef_ / scale, reference.coef_, rtol=1e-3)
    assert scaled.intercept_ / scale == pytest.approx(reference.intercept_, rel=1e-3)
    assert scaled.objective_ / scale**2 == pytest.approx(reference.objective_, rel=1e-3)
    np.testing.assert_allclose(scaled.sample_weights_, reference.sample_weights_, atol=1e-6)


@pytest.mark.parametrize("Estimator", [DROClassifier, DRORegressor])
@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_rescaled_features_give_the_rescaled_fit(Estimator, solver):
    # Without a penalty, scaling feature j by s_j divides its coefficient by s_j and
    # changes nothing else; small features once ended near coef_ = 0 as "converged".
    rng = np.random.default_rng(19)
    X = rng.normal(size=(600, 3))
    score = X @ [1.0, -1.0, 0.5] + 0.5 * rng.normal(size=600)
    y = (score > 0).astype(int) if Estimator is DROClassifier else score
    s = np.array([1e-4, 1.0, 1e3])
    kw = dict(radius=0.2, alpha=0.0, solver=solver, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        reference = Estimator(**kw).fit(X, y)
        scaled = Estimator(**kw).fit(X * s, y)
    np.testing.assert_allclose(scaled.coef_ * s, reference.coef_, rtol=1e-3)
    np.testing.assert_allclose(scaled.intercept_, reference.intercept_, rtol=1e-3, atol=1e-4)
    assert scaled.objective_ == pytest.approx(reference.objective_, rel=1e-6)


@pytest.mark.parametrize("sparse", [False, True])
def test_constant_feature_is_left_to_the_intercept(sparse):
    # Standardising must not blow the rounding left of a constant column up to a feature.
    import scipy.sparse as sp

    rng = np.random.default_rng(22)
    X = rng.normal(size=(200, 3))
    y = X @ [1.0, 2.0, 3.0] + 0.1 * rng.normal(size=200)
    with_constant = np.c_[X, np.full(200, 1e6 + 0.1)]
    container = sp.csr_matrix if sparse else np.asarray
    reference = DRORegressor(tol=1e-8).fit(container(X), y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reg = DRORegressor(tol=1e-8).fit(container(with_constant), y)
    np.testing.assert_allclose(reg.coef_[:3], reference.coef_, rtol=1e-6)
    np.testing.assert_allclose(reg.predict(container(with_constant)),
                               reference.predict(container(X)), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_unfinished_working_set_is_the_reason_given(monkeypatch, solver):
    # max_iter cuts the second conic solve off after one iteration: the first solve's
    # optimum stands, its gradient test passed on its working set, but losses outside
    # the set still exceed the set's maximum.
    rng = np.random.default_rng(20)
    X = rng.normal(size=(300, 5))
    y = X @ rng.normal(size=5) + rng.normal(size=300)
    solves = []
    solve = _dro_conic._solve_working_set

    def recording(data, working, max_iter):
        found = solve(data, working, max_iter)
        solves.append((max_iter, found[2]))
        return found

    monkeypatch.setattr(_dro_conic, "_solve_working_set", recording)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        DRORegressor(radius=1000, solver=solver).fit(X, y)
    (budget, first), _ = solves[:2]
    max_iter = 1000 - budget + first + 1  # the ERM start, the first solve, one more
    with pytest.warns(ConvergenceWarning, match=f"stopped at max_iter={max_iter} ") as record:
        reg = DRORegressor(radius=1000, max_iter=max_iter, solver=solver).fit(X, y)
    message = str(record[0].message)
    assert "samples outside the working set" in message and "passed on the set" in message
    assert "before the gradient test" not in message and "increase max_iter" in message
    assert reg.n_iter_ == max_iter


@pytest.mark.parametrize("Estimator", [DROClassifier, DRORegressor])
@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_unconverged_fit_warns_naming_max_iter_and_tol(Estimator, solver):
    rng = np.random.default_rng(16)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=300) > 0).astype(int)
    est = Estimator(solver=solver, max_iter=2, tol=1e-8, initial_sample_size=32,
                    random_state=0)
    with pytest.warns(ConvergenceWarning, match=r"max_iter=2.*tol=1e-08"):
        est.fit(X, y)
    assert est.n_iter_ == 2


def test_stall_message_names_its_cause():
    # A stall once always blamed rounding "or a point where the objective is not
    # differentiable"; the smoothing tells the two apart by the subgradient's gap.
    X, y = _binary_iris()
    with pytest.warns(ConvergenceWarning, match="rounding keeps that tol out of reach"):
        DROClassifier(tol=0.0).fit(X, y)
    clf = DROClassifier()
    kink = Result(np.zeros(3), 5, False, 1e-3, gap=1e-3, objective=0.7, gap_ok=False)
    message = clf._convergence_message(kink)
    assert "not differentiable" in message and "0.001 of the objective" in message
    assert "increase tol" not in message


def test_max_loss_messages_name_their_cause():
    # A conic result once fell back to the descent paths' wording ("no step decreasing
    # the objective any more", "increase tol") whatever had failed.
    clf = DROClassifier(max_iter=50)
    conic = dict(conic=True, objective=0.7)
    inaccurate = clf._convergence_message(Result(np.zeros(3), 20, False, 2e-3, gap=1e-5,
                                                 gap_ok=False, **conic))
    assert "conic solution of the maximum-loss problem" in inaccurate
    assert "within 1e-05 of the objective" in inaccurate and "accuracy" in inaccurate
    outside = clf._convergence_message(Result(np.zeros(3), 20, False, 2e-3, gap=np.inf,
                                              **conic))
    assert "no distribution of the divergence ball" in outside
    multipliers = clf._convergence_message(Result(np.zeros(3), 20, False, 2e-3, gap=1e-9,
                                                  **conic))
    assert "of its multipliers" in multipliers and "increase tol" in multipliers
    cut = clf._convergence_message(Result(np.zeros(3), 50, False, 2e-3, gap=1e-5, gap_ok=False, **conic))
    assert "stopped at max_iter=50 at the conic solution" in cut
    unfinished = clf._convergence_message(Result(np.zeros(3), 50, False, **conic))
    assert "before a conic solve of the maximum-loss problem finished" in unfinished
    failed = clf._convergence_message(Result(np.zeros(3), 20, False, **conic))
    assert "conic solver of the maximum-loss problem failed" in failed
    for message in (inaccurate, outside, multipliers, cut, unfinished, failed):
        assert "no step decreasing" not in message, message
    for message in (inaccurate, outside, cut, unfinished, failed):
        assert "increase tol" not in message, message
    for message in (cut, unfinished):
        assert "increase max_iter" in message


@pytest.mark.parametrize("Estimator", [DROClassifier, DRORegressor])
def test_sgd_reports_at_least_one_iteration(Estimator):
    check_non_transformer_estimators_n_iter(Estimator.__name__, Estimator(solver="sgd"))


@pytest.mark.parametrize("Estimator", [DROClassifier, DRORegressor])
@pytest.mark.parametrize("params, match", [
    (dict(radius=-1.0), "radius"),
    (dict(radius=float("nan")), "radius"),
    (dict(alpha=-1.0), "alpha"),
    (dict(divergence="hellinger"), "divergence"),
    (dict(growth=1.0), "growth"),
    (dict(solver="adam"), "solver"),
])
def test_bad_parameters_name_themselves(Estimator, params, match):
    X, y = np.random.default_rng(0).normal(size=(20, 2)), np.arange(20) % 2
    with pytest.raises(ValueError, match=match):
        Estimator(**params).fit(X, y)


@pytest.mark.parametrize("Estimator", [DROClassifier, DRORegressor])
def test_nan_input_and_bad_weights_are_rejected(Estimator):
    X, y = np.random.default_rng(0).normal(size=(20, 2)), np.arange(20) % 2
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        Estimator().fit(X_nan, y)
    with pytest.raises(ValueError, match="[Nn]egative"):
        Estimator().fit(X, y, sample_weight=np.r_[-1.0, np.ones(19)])
    X_before = X.copy()
    Estimator().fit(X, y)
    np.testing.assert_array_equal(X, X_before)


def test_weights_whose_sum_overflows_are_normalised():
    # A finite sum overflowing to infinity made every normalised weight 0: "zero-size
    # array to reduction operation maximum which has no identity".
    rng = np.random.default_rng(24)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=60) > 0).astype(int)
    huge = np.full(60, 1e307)
    np.testing.assert_array_equal(DROClassifier().fit(X, y, sample_weight=huge).coef_,
                                  DROClassifier().fit(X, y).coef_)
    losses = np.arange(60.0)
    assert robust_loss(losses, "chi2", 0.1, sample_weight=huge) == pytest.approx(
        robust_loss(losses, "chi2", 0.1), rel=1e-15)
    p = worst_case_weights(losses, "kl", 0.1, sample_weight=np.r_[huge[:59], 1.5e308])
    assert np.all(np.isfinite(p)) and p.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("scale", [1e-200, 1e200])
def test_features_of_extreme_scale_give_the_rescaled_fit(sparse, scale):
    # Their variance under- or overflowed: scale 0 taken for a constant column (1e-200)
    # or infinite (1e200), and coef_ silently 0.
    import scipy.sparse as sp

    rng = np.random.default_rng(25)
    X = rng.normal(size=(100, 3))
    y = X @ [1.0, -2.0, 0.5] + 0.3 * rng.normal(size=100)
    container = sp.csr_matrix if sparse else np.asarray
    reference = DRORegressor(alpha=0.0).fit(container(X), y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scaled = DRORegressor(alpha=0.0).fit(container(X * scale), y)
    np.testing.assert_allclose(scaled.coef_ * scale, reference.coef_, rtol=1e-6)
    assert scaled.objective_ == pytest.approx(reference.objective_, rel=1e-8)


@pytest.mark.filterwarnings("ignore:invalid value encountered in reduce")  # sklearn's finite check sums X
def test_features_beyond_the_largest_power_of_two_give_the_rescaled_fit():
    # Entries beyond 2**1023 had the power of 2 above them inf: coef_ NaN
    rng = np.random.default_rng(25)
    X = rng.normal(size=(100, 3))
    y = X @ [1.0, -2.0, 0.5] + 0.3 * rng.normal(size=100)
    assert np.abs(5e307 * X).max() > 2.0**1023
    reference = DRORegressor(alpha=0.0).fit(X, y)
    scaled = DRORegressor(alpha=0.0).fit(5e307 * X, y)
    np.testing.assert_allclose(scaled.coef_ * 5e307, reference.coef_, rtol=1e-6)


def test_extreme_target_scales_fit_or_name_y():
    rng = np.random.default_rng(26)
    X = rng.normal(size=(100, 3))
    y = X @ [1.0, -2.0, 0.5] + 0.3 * rng.normal(size=100)
    reference = DRORegressor().fit(X, y)
    tiny = DRORegressor().fit(X, y * 1e-200)  # once coef_ 0 and objective_ 0
    np.testing.assert_allclose(tiny.coef_ * 1e200, reference.coef_, rtol=1e-6)
    # Its squared errors leave the float range: once NaN coef_ without a word.
    with pytest.raises(ValueError, match="y is too large"):
        DRORegressor().fit(X, X[:, 0] * 1e200)
    # A penalty alpha / scale^2 beyond the float range zeroes the feature's coefficient,
    # its contribution below any rounding (once a NaN penalty at 0).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frozen = DRORegressor().fit(np.c_[X[:, :2], X[:, 2] * 1e-200], y)
    assert np.all(np.isfinite(frozen.coef_)) and frozen.coef_[2] == 0.0
    np.testing.assert_allclose(frozen.coef_[:2], DRORegressor().fit(X[:, :2], y).coef_,
                               rtol=1e-6)


def test_failed_refit_leaves_the_estimator_unfitted():
    rng = np.random.default_rng(21)
    X = rng.normal(size=(60, 3))
    y = np.where(X[:, 0] > 0, "spam", "ham")
    clf = DROClassifier().fit(X, y)
    with pytest.raises(ValueError, match="only one class"):
        clf.fit(X, np.full(60, "ham"))
    reg = DRORegressor().fit(X[:, :2], X[:, 0])
    # Validation passes for the new X (3 features), then the weights fail.
    with pytest.raises(ValueError, match="[Nn]egative"):
        reg.fit(X, X[:, 0], sample_weight=np.r_[-1.0, np.ones(59)])
    for est in (clf, reg):
        assert not [k for k in vars(est) if k.endswith("_") and not k.startswith("__")]
        with pytest.raises(NotFittedError):
            est.predict(X)


def test_single_class_is_a_clear_error():
    with pytest.raises(ValueError, match=r"at least 2 classes.*only one class: 0\.0\.$"):
        DROClassifier().fit(np.ones((5, 2)), np.zeros(5))
    with pytest.raises(ValueError, match=r"only one class: yes\.$"):
        DROClassifier().fit(np.ones((5, 2)), np.array(["yes"] * 5))


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_zero_weight_equals_removal(solver):
    rng = np.random.default_rng(11)
    X = rng.normal(size=(120, 3))
    y = X @ [1.0, 0.0, -1.0] + rng.normal(size=120)
    sw = np.ones(120)
    sw[:20] = 0.0
    kw = dict(solver=solver, radius=0.3, alpha=0.01, tol=1e-8, max_iter=5000,
              initial_sample_size=16, random_state=0)
    weighted = DRORegressor(**kw).fit(X, y, sample_weight=sw)
    removed = DRORegressor(**kw).fit(X[20:], y[20:])
    np.testing.assert_allclose(weighted.coef_, removed.coef_, atol=1e-6)
    np.testing.assert_array_equal(weighted.sample_weights_[:20], 0.0)


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
@pytest.mark.parametrize("Estimator, huge", [(DRORegressor, "X"), (DRORegressor, "y"),
                                             (DROClassifier, "X")])
def test_zero_weight_row_of_any_magnitude_equals_removal(Estimator, huge, solver):
    # Its loss overflowed (0 * inf = NaN) and its 1e200 entered the column scales: coef_
    # 0 (lbfgs), objective_ NaN (sgd), and with the huge target a fit that never returned.
    rng = np.random.default_rng(27)
    X = rng.normal(size=(30, 3))
    y = X @ [1.0, -2.0, 0.5] + rng.normal(size=30)
    if Estimator is DROClassifier:
        y = (y > 0).astype(int)
    X_row, y_row = (np.r_[1e200, 0.0, 0.0], y[0]) if huge == "X" else (X[0], 1e200)
    kw = dict(radius=0.5, solver=solver, random_state=0)
    removed = Estimator(**kw).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        weighted = Estimator(**kw).fit(np.vstack([X, X_row]), np.r_[y, y_row],
                                       sample_weight=np.r_[np.ones(30), 0.0])
    np.testing.assert_array_equal(weighted.coef_, removed.coef_)
    assert weighted.objective_ == removed.objective_
    np.testing.assert_array_equal(weighted.sample_weights_, np.r_[removed.sample_weights_, 0])


def test_tiny_weight_on_an_overflowing_target_is_a_clear_error():
    # Positive weight 1e-320 keeps the row, 5e160 standard deviations out: its squared
    # error overflowed, and the NaN objective hung the fit.
    rng = np.random.default_rng(27)
    X = rng.normal(size=(31, 3))
    y = np.r_[X[:30] @ [1.0, -2.0, 0.5], 1e200]
    with pytest.raises(ValueError, match=r"y\[30\], of .* leaves the float64 range"):
        DRORegressor(radius=0.5).fit(X, y, sample_weight=np.r_[np.ones(30), 1e-320])


def test_continuation_stops_on_a_nan_objective():
    # A NaN objective made the first temperature NaN, so "mu <= mu_end" never held, and
    # the L-BFGS stages on it took no iteration: the loop never reached max_iter.
    rng = np.random.default_rng(27)
    T = np.r_[rng.normal(size=29), 1e200]  # its squared error overflows
    problem = LinearDRO(rng.normal(size=(30, 2)), T, LOSSES["squared"], np.full(30, 1 / 30),
                        "chi2", 0.5, 1e-3, 1, True)
    theta = np.zeros(problem.n_params)
    mu = _dro_continuation._first_temperature(problem.objective(theta)[0])
    calls = []

    def stage(theta, mu, n_iter):  # a stage that cannot move, like L-BFGS on NaN
        calls.append(mu)
        assert len(calls) < 50, "the continuation loop does not stop"
        return Result(theta, n_iter, False, np.nan)

    with np.errstate(all="ignore"):
        result = _dro_continuation._continuation(problem, theta, mu, 100, 1e-4, stage)
    assert len(calls) == 1 and not result.converged


@pytest.mark.parametrize("Estimator", [DROClassifier, DRORegressor])
@pytest.mark.parametrize("radius", [0.0, 0.3])
def test_sgd_converges_with_a_penalty_of_huge_curvature(Estimator, radius):
    # alpha / std^2 = 1e11 on the standardised second feature: the curvature pair test
    # s'y > 1e-10 y'y (a curvature below 1e10) refused every pair, and the path crawled
    # by steepest descent to max_iter, far from the optimum (coef_[0] 0.18, not 1.2), or
    # stalled at once. Such a feature is now frozen at 0 (its penalty beyond 6.7e7), and both
    # solvers stop within tol of the same optimum.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 2)) * [1.0, 1e-6]
    y = X @ [1.0, 2e6] + 0.1 * rng.normal(size=100)
    if Estimator is DROClassifier:
        y = (y + 0.5 * rng.normal(size=100) > 0).astype(int)
    kw = dict(radius=radius, alpha=0.1, tol=1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # lbfgs stalls on the classifier
        reference = Estimator(**kw).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        sgd = Estimator(solver="sgd", random_state=0, **kw).fit(X, y)
    assert sgd.objective_ == pytest.approx(reference.objective_, rel=1e-8)
    assert sgd.coef_.ravel()[1] == reference.coef_.ravel()[1] == 0.0
    if Estimator is DRORegressor and radius == 0.0:
        np.testing.assert_allclose(sgd.coef_[0], Ridge(alpha=100 * 0.1).fit(X, y).coef_[0],
                                   rtol=1e-6)


@pytest.mark.parametrize("Estimator", [DROClassifier, DRORegressor])
@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_a_mostly_zero_dense_table_is_fitted_as_csr(Estimator, solver):
    # a one-hot table (2,000 x 60, 5% non-zero) takes the sparse path: the same fit, bit for bit,
    # at the cost of its non-zeros
    rng = np.random.default_rng(3)
    X = (rng.uniform(size=(2000, 60)) < 0.05) * rng.integers(1, 3, size=(2000, 60)).astype(float)
    y = X[:, :5].sum(axis=1) + 0.5 * rng.normal(size=2000)
    if Estimator is DROClassifier:
        y = (y > np.median(y)).astype(int)
    before = X.copy()
    kw = dict(solver=solver, initial_sample_size=64, random_state=0)
    dense = Estimator(**kw).fit(X, y)
    sparse = Estimator(**kw).fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(dense.coef_, sparse.coef_)
    np.testing.assert_array_equal(dense.intercept_, sparse.intercept_)
    np.testing.assert_array_equal(X, before)


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_sparse_input_gives_the_dense_solution(solver):
    import scipy.sparse as sp

    rng = np.random.default_rng(12)
    X = rng.normal(size=(150, 6)) * (rng.uniform(size=(150, 6)) < 0.4)
    y = (X[:, 0] + X[:, 1] + 0.3 * rng.normal(size=150) > 0).astype(int)
    kw = dict(solver=solver, divergence="kl", radius=0.3, alpha=0.05, tol=1e-8,
              initial_sample_size=20, random_state=0, max_iter=3000)
    dense = DROClassifier(**kw).fit(X, y)
    sparse = DROClassifier(**kw).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, atol=1e-6)
    np.testing.assert_allclose(sparse.predict_proba(sp.csr_matrix(X)), dense.predict_proba(X),
                               atol=1e-6)


def test_standardise_holds_one_copy_of_x_and_keeps_its_values():
    import tracemalloc

    from skrate._dro import _standardise

    rng = np.random.default_rng(13)
    X = rng.normal(loc=3.0, size=(20_000, 50)) * rng.uniform(0.5, 4.0, 50)
    X[:, 7] = 2.5  # a constant column keeps scale 1
    q = rng.uniform(size=20_000)
    q /= q.sum()
    tracemalloc.start()
    try:
        scaled, offset, scale = _standardise(X, q, True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # one X-sized array alive at a time: the centred copy is freed before the result is made
    assert peak < 1.5 * X.nbytes
    mean = q @ X
    var = np.einsum("i,ij,ij->j", q, X - mean, X - mean)
    expected = np.where(np.sqrt(var) <= X.shape[0] * np.finfo(float).eps * np.abs(mean), 1.0, np.sqrt(var))
    assert scale[7] == 1.0
    np.testing.assert_array_equal(scale, expected)
    np.testing.assert_array_equal(offset, mean / expected)
    np.testing.assert_array_equal(scaled, X / expected)


def test_wide_data_of_some_size_does_not_try_the_max_loss_problem_on_every_row(monkeypatch):
    # n < 4 (d + 2): the max-loss working set could hold every row, so the continuation solved
    # the conic problem on all of X made dense (sparse 400 x 2000: 20 s and 450 MB, not 0.1 s)
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    n, d = 400, 2000
    nnz = n * d // 20
    X = sp.csr_matrix((rng.normal(size=nnz), (rng.integers(0, n, nnz), rng.integers(0, d, nnz))), shape=(n, d))
    y = (X @ rng.normal(size=d) + 0.1 * rng.normal(size=n) > 0).astype(int)
    monkeypatch.setattr(_dro_continuation, "max_loss", lambda *a, **k: pytest.fail("max-loss problem on every row"))
    clf = DROClassifier().fit(X, y)
    assert np.isfinite(clf.objective_)


def _with_column(X, column, at=1):
    return np.column_stack([X[:, :at], column, X[:, at:]])


@pytest.mark.parametrize("estimator", ["classifier", "regressor"])
@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
@pytest.mark.parametrize("kind", ["tiny units", "constant date in ns", "constant subnormal"])
def test_a_feature_the_penalty_or_the_intercept_takes_gets_coefficient_zero(estimator, solver, kind):
    # a noise column in units of 1e-12 stalled every coefficient at 0; a constant 1.7e18 column
    # (centred: its mean's rounding) swamped the others; a constant subnormal one gave NaN
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 2))
    y = (X[:, 0] - 0.5 * X[:, 1] + rng.normal(size=300) > 0).astype(int)
    if estimator == "regressor":
        y = X @ [1.0, -2.0] + 0.1 * rng.normal(size=300)
    column = {"tiny units": 1e-12 * rng.normal(size=300), "constant date in ns": np.full(300, 1.704067200e18),
              "constant subnormal": np.full(300, 7e-310)}[kind]
    make = DROClassifier if estimator == "classifier" else DRORegressor
    params = dict(radius=0.1, solver=solver, random_state=0)
    without = make(**params).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ConvergenceWarning, no RuntimeWarning
        est = make(**params).fit(_with_column(X, column), y)
    coef = np.ravel(est.coef_)
    assert coef[1] == 0.0
    np.testing.assert_allclose(np.delete(coef, 1), np.ravel(without.coef_), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(est.intercept_, without.intercept_, rtol=1e-6, atol=1e-8)


def _sparse_data(n=150, seed=12):
    """Mostly zeros, the non-zero entries off centre (so that centring would change the fit) and
    one column in large units (so that its scale matters)."""
    rng = np.random.default_rng(seed)
    X = (rng.normal(size=(n, 6)) + 1.0) * (rng.uniform(size=(n, 6)) < 0.4)
    X[:, 2] *= 50.0
    y_class = (X[:, 0] - X[:, 1] + 0.3 * rng.normal(size=n) > 0.2).astype(int)
    y_reg = X[:, 0] - 2.0 * X[:, 1] + 0.01 * X[:, 2] + 0.3 * rng.normal(size=n)
    return X, y_class, y_reg


@pytest.mark.parametrize("Estimator", [DROClassifier, DRORegressor])
@pytest.mark.parametrize("divergence", ["chi2", "kl"])
@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_sparse_input_without_intercept_gives_the_dense_solution(Estimator, divergence, solver):
    X, y_class, y_reg = _sparse_data()
    y = y_class if Estimator is DROClassifier else y_reg
    kw = dict(divergence=divergence, radius=0.3, alpha=0.05, tol=1e-8, fit_intercept=False, solver=solver,
              initial_sample_size=20, random_state=0, max_iter=3000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # both converge: the comparison is of two optima
        dense = Estimator(**kw).fit(X, y)
        sparse = Estimator(**kw).fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(np.ravel(sparse.intercept_), 0.0)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-6, atol=1e-8)
    assert sparse.objective_ == pytest.approx(dense.objective_, rel=1e-8)
    np.testing.assert_allclose(sparse.sample_weights_, dense.sample_weights_, rtol=1e-6, atol=1e-10)


def test_sparse_zero_radius_regressor_without_intercept_is_ridge_without_intercept():
    # a direct reference: at radius 0 the robust loss is half the mean squared error
    X, _, y = _sparse_data()
    n, alpha = X.shape[0], 0.2
    reg = DRORegressor(radius=0.0, alpha=alpha, tol=1e-10, fit_intercept=False).fit(sp.csr_matrix(X), y)
    ridge = Ridge(alpha=n * alpha, fit_intercept=False).fit(X, y)
    np.testing.assert_allclose(reg.coef_, ridge.coef_, rtol=1e-6)
    assert reg.intercept_ == 0.0


def test_alpha_means_the_same_in_the_dro_and_the_trimmed_regressor():
    # both halve the squared error, as scikit-learn's ElasticNet and SGDRegressor do, so their
    # plain limits (no ball, nothing trimmed) are one ridge regression at the same alpha
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 4))
    y = X @ rng.normal(size=4) + 1.0 + rng.normal(size=120)
    dro = DRORegressor(radius=0.0, alpha=0.3, tol=1e-10).fit(X, y)
    trimmed = TrimmedRegressor(trim_fraction=0.0, alpha=0.3, penalty="l2", solver="alternating",
                               tol=1e-10).fit(X, y)
    np.testing.assert_allclose(dro.coef_, trimmed.coef_, rtol=1e-6)
    assert dro.intercept_ == pytest.approx(trimmed.intercept_, rel=1e-6)


def test_zero_radius_classifier_is_logistic_regression_at_c_one_over_alpha_n():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 4))
    y = (X @ [1.0, -1.0, 0.5, 0.0] + rng.normal(size=300) > 0).astype(int)
    alpha, sw = 0.01, rng.integers(1, 3, size=300).astype(float)
    dro = DROClassifier(radius=0.0, alpha=alpha, tol=1e-10).fit(X, y, sample_weight=sw)
    reference = LogisticRegression(C=1 / (alpha * sw.sum()), tol=1e-12, max_iter=10_000).fit(
        X, y, sample_weight=sw)
    np.testing.assert_allclose(dro.coef_, reference.coef_, rtol=1e-6, atol=1e-8)
    assert dro.intercept_ == pytest.approx(reference.intercept_, rel=1e-6)
