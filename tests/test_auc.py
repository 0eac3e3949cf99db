"""AUCClassifier: the objective, its reformulation, the prox operators and the solvers."""

import re
import sys
import warnings

import cvxpy as cp
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted

from skrate import AUCClassifier
from skrate._auc_calibration import RowReservoir, fit_platt
from skrate._auc_objective import (
    ClassStatistics,
    full_gradient,
    minibatch_gradient,
    pairwise_square_loss,
    quadratic_form,
    saddle_function,
    smooth_objective,
)
from skrate._auc_solvers import (
    _relative_gap,
    _solve_symmetric,
    column_scale,
    dual_objective,
    minibatch_smoothness,
    solve_exact,
    spam,
    vrspam,
)
from skrate._prox import elastic_net_penalty, prox_elastic_net, soft_threshold
import scipy.linalg
from skrate._auc_solvers import spam_epoch


def _data(n=600, d=8, seed=0, weights=(0.7,)):
    X, y = make_classification(n_samples=n, n_features=d, n_informative=min(5, d), n_redundant=0,
                               weights=list(weights), flip_y=0.05, random_state=seed)
    return StandardScaler().fit_transform(X) + 0.5, y  # shifted: centring must not matter


def _objective(w, X, y, alpha, l1_ratio):
    return smooth_objective(w, X, y) + elastic_net_penalty(w, alpha, l1_ratio)


def _badly_scaled(X):
    """``X`` with columns in units from 1e3 to 1e-2, and those factors (the column scales of
    ``_data``'s unit-variance columns)."""
    factors = np.geomspace(1e3, 1e-2, X.shape[1])
    return X * factors, factors


# ----------------------------------------------------------------------------- prox

@pytest.mark.parametrize("l1_ratio", [0.0, 0.3, 1.0])
def test_prox_elastic_net_matches_cvxpy(l1_ratio):
    rng = np.random.default_rng(1)
    v, step, alpha = rng.normal(size=12), 0.7, 0.9
    w = cp.Variable(12)
    penalty = alpha * (l1_ratio * cp.norm1(w) + (1 - l1_ratio) / 2 * cp.sum_squares(w))
    cp.Problem(cp.Minimize(cp.sum_squares(w - v) / 2 + step * penalty)).solve(
        solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    got = prox_elastic_net(v, step, alpha, l1_ratio)
    np.testing.assert_allclose(got, w.value, atol=1e-6)
    if l1_ratio > 0:
        assert np.any(got == 0) and np.any(got != 0)


def test_soft_threshold_values_and_input_untouched():
    v = np.array([-3.0, -0.5, 0.0, 0.2, 2.0])
    v0 = v.copy()
    np.testing.assert_array_equal(soft_threshold(v, 1.0), [-2.0, 0.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(v, v0)
    with pytest.raises(ValueError, match="threshold"):
        soft_threshold(v, -1.0)


# ----------------------------------------------------------------------------- objective

def test_pairwise_loss_equals_brute_force_mean_over_pairs():
    rng = np.random.default_rng(0)
    s, y = rng.normal(size=40), (rng.random(40) < 0.3).astype(int)
    pairs = s[y == 1][:, None] - s[y == 0][None, :]
    assert pairwise_square_loss(s, y) == pytest.approx(0.5 * np.mean((1 - pairs) ** 2), rel=1e-12)


def test_quadratic_form_reproduces_the_loss():
    X, y = _data(n=80)
    Q, delta = quadratic_form(X, y)
    w = np.random.default_rng(2).normal(size=X.shape[1])
    assert 0.5 * w @ Q @ w - delta @ w + 0.5 == pytest.approx(smooth_objective(w, X, y),
                                                                rel=1e-10)


def test_class_statistics_read_once_follow_every_update():
    # the class means and shift are computed once for the many minibatch steps; an update
    # (partial_fit's next chunk) must not leave the first chunk's
    X, y = _data(n=120)
    stats = ClassStatistics.from_data(X[:40], y[:40])
    first = (stats.p, stats.mean_pos, stats.mean_neg, stats.shift)
    stats.update(X[40:], y[40:])
    whole = ClassStatistics.from_data(X, y)
    for got, expected, old in zip((stats.p, stats.mean_pos, stats.mean_neg, stats.shift),
                                  (whole.p, whole.mean_pos, whole.mean_neg, whole.shift), first):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
        assert not np.allclose(got, old)


def test_elastic_net_prox_at_a_fixed_step_is_the_prox():
    from skrate._prox import elastic_net_prox

    v = np.random.default_rng(0).normal(size=6)
    step = np.array([0.1, 0.5, 1.0, 2.0, 0.0, 3.0])
    for l1_ratio in (0.0, 0.3, 1.0):
        prox = elastic_net_prox(step, 0.7, l1_ratio)
        np.testing.assert_array_equal(prox(v), prox_elastic_net(v, step, 0.7, l1_ratio))
        np.testing.assert_array_equal(prox(2 * v), prox_elastic_net(2 * v, step, 0.7, l1_ratio))
    with pytest.raises(ValueError, match="threshold must be non-negative"):
        elastic_net_prox(-0.1, 1.0, 0.5)


def test_saddle_reformulation_inner_optimum_gives_the_loss():
    X, y = _data(n=120)
    stats = ClassStatistics.from_data(X, y)
    p = stats.p
    w = np.random.default_rng(3).normal(size=X.shape[1])
    a, b = w @ stats.mean_pos, w @ stats.mean_neg
    al = w @ (stats.mean_neg - stats.mean_pos)
    value = saddle_function(w, a, b, al, X, y, p)
    assert value == pytest.approx(p * (1 - p) * (2 * smooth_objective(w, X, y) - 1), rel=1e-10)
    # the closed forms are stationary: minimum in a and b, maximum in alpha
    h = 1e-3
    for da, db, dal, sign in [(h, 0, 0, 1), (-h, 0, 0, 1), (0, h, 0, 1), (0, -h, 0, 1),
                              (0, 0, h, -1), (0, 0, -h, -1)]:
        moved = saddle_function(w, a + da, b + db, al + dal, X, y, p)
        assert sign * (moved - value) > 0


def test_gradients_match_finite_differences():
    X, y = _data(n=150)
    stats = ClassStatistics.from_data(X, y)
    p = stats.p
    w = np.random.default_rng(4).normal(size=X.shape[1])
    a, b = w @ stats.mean_pos, w @ stats.mean_neg
    al = w @ (stats.mean_neg - stats.mean_pos)
    h, eye = 1e-6, np.eye(X.shape[1])
    fd_loss = np.array([(smooth_objective(w + h * e, X, y) - smooth_objective(w - h * e, X, y))
                        / (2 * h) for e in eye])
    np.testing.assert_allclose(full_gradient(w, X, y, stats), fd_loss, rtol=1e-6, atol=1e-8)
    # SPAM's stochastic gradient is the partial w-gradient of F at the inner optimum,
    # divided by 2 p (1 - p)
    fd_saddle = np.array([(saddle_function(w + h * e, a, b, al, X, y, p)
                           - saddle_function(w - h * e, a, b, al, X, y, p)) / (2 * h)
                          for e in eye])
    np.testing.assert_allclose(2 * p * (1 - p) * full_gradient(w, X, y, stats), fd_saddle,
                               rtol=1e-6, atol=1e-8)
    # and per example (unbiased minibatches): the example-wise values average to it
    per_example = np.array([minibatch_gradient(w, X[[i]], y[[i]], stats) for i in range(len(y))])
    np.testing.assert_allclose(per_example.mean(axis=0), fd_loss, rtol=1e-6, atol=1e-8)


# ----------------------------------------------------------------------------- exact

@pytest.mark.parametrize("scaled", [False, True])
@pytest.mark.parametrize("l1_ratio", [0.0, 0.5, 1.0])
def test_exact_matches_cvxpy(l1_ratio, scaled):
    X, y = _data(n=200, d=6, seed=5)
    X, factors = _badly_scaled(X) if scaled else (X, np.ones(X.shape[1]))
    alpha = 0.02
    Q, delta = quadratic_form(X, y)
    w = cp.Variable(X.shape[1])
    penalty = alpha * l1_ratio * cp.norm1(w)
    if l1_ratio < 1:  # a zero-weight sum_squares term crashed cvxpy < 1.4.3
        penalty = penalty + alpha * (1 - l1_ratio) / 2 * cp.sum_squares(w)
    cp.Problem(cp.Minimize(0.5 * cp.quad_form(w, cp.psd_wrap(Q)) - delta @ w + penalty)).solve(
        solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    result = solve_exact(X, y, alpha, l1_ratio)
    got = result.coef
    # compared in the units of the columns
    np.testing.assert_allclose(got * factors, w.value * factors, atol=1e-6)
    assert _objective(got, X, y, alpha, l1_ratio) <= _objective(w.value, X, y, alpha,
                                                                 l1_ratio) + 1e-10
    assert result.converged  # an optimal polish is converged, however far FISTA got


@pytest.mark.parametrize("l1_ratio", [0.5, 1.0])
def test_exact_elastic_net_is_exact_on_columns_in_mixed_units(l1_ratio):
    # breast_cancer's raw column spreads span a factor 2e5: FISTA on the unequilibrated Q
    # crawled, and its sign-pattern polish then failed on a support with 7 extra columns
    X, y = load_breast_cancer(return_X_y=True)
    alpha = 1e-3
    Q, delta = quadratic_form(X, y)
    d = np.sqrt(np.diag(Q))
    v = cp.Variable(len(d))  # the reference solved in v = d * w, where it is accurate
    penalty = alpha * (l1_ratio * cp.norm1(v / d) + (1 - l1_ratio) / 2 * cp.sum_squares(v / d))
    cp.Problem(cp.Minimize(0.5 * cp.quad_form(v, cp.psd_wrap(Q / np.outer(d, d)))
                           - (delta / d) @ v + penalty)).solve(
        solver=cp.CLARABEL, tol_gap_abs=1e-14, tol_gap_rel=1e-14, tol_feas=1e-14)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = AUCClassifier(solver="exact", penalty="elasticnet", l1_ratio=l1_ratio,
                            alpha=alpha).fit(X, y)
    w, ref = clf.coef_.ravel(), v.value / d
    objective = _objective(ref, X, y, alpha, l1_ratio)
    assert abs(clf.objective_ - objective) <= 1e-9 * objective
    np.testing.assert_array_equal(w != 0, np.abs(v.value) > 1e-7)
    np.testing.assert_allclose(w * d, v.value, atol=1e-6)  # in the units of the columns


@pytest.mark.parametrize("l1_ratio", [0.5, 1.0])
def test_exact_is_converged_once_its_sign_pattern_solve_is_optimal(l1_ratio):
    X, y = _data(n=200, d=6, seed=5)
    short = solve_exact(X, y, 0.02, l1_ratio, max_steps=20)  # FISTA far from its tolerance
    assert short.converged
    np.testing.assert_array_equal(short.coef, solve_exact(X, y, 0.02, l1_ratio).coef)
    # so no ConvergenceWarning where FISTA crawls: a column in large units
    X, y = make_classification(600, 8, n_informative=4, random_state=0)
    X[:, 0] *= 1000
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        AUCClassifier(solver="exact", penalty="elasticnet", l1_ratio=l1_ratio).fit(X, y)


@pytest.mark.parametrize("l1_ratio", [0.5, 1.0])
@pytest.mark.parametrize("collinear", [False, True])
def test_exact_result_that_claims_convergence_meets_the_optimality_conditions(l1_ratio, collinear):
    # Whatever max_steps cut FISTA short, a converged result is the minimiser: on its support
    # the gradient plus alpha * (l1_ratio sign(w) + (1 - l1_ratio) w) vanishes, elsewhere the
    # gradient is at most alpha * l1_ratio. Two correlated columns give early iterates a sign
    # pattern that is not the optimum's; its restricted solve must then not be kept. Columns
    # that are exact combinations of others (rank 3 of 6) make that solve singular: its
    # least-squares solution is no optimum unless the system has an exact solution.
    rng = np.random.default_rng(0)
    if collinear:
        X, y = make_classification(300, 6, n_informative=3, n_redundant=3, random_state=0)
    else:
        X, y = make_classification(300, 6, n_informative=4, n_redundant=0, random_state=0)
        X[:, 1] = X[:, 0] + 0.3 * rng.normal(size=300)
    stats = ClassStatistics.from_data(X, y)
    alpha = 0.02
    lam1, lam2 = alpha * l1_ratio, alpha * (1 - l1_ratio)
    claims = 0
    for max_steps in [*range(1, 30), 100_000]:
        result = solve_exact(X, y, alpha, l1_ratio, max_steps=max_steps, stats=stats)
        if not result.converged:
            continue
        claims += 1
        w = result.coef
        g = full_gradient(w, X, y, stats) + lam2 * w
        on = w != 0
        np.testing.assert_allclose(g[on] + lam1 * np.sign(w[on]), 0.0, atol=1e-9,
                                   err_msg=f"max_steps={max_steps}")
        assert np.all(np.abs(g[~on]) <= lam1 * (1 + 1e-9)), max_steps
    assert claims > 0


def test_exact_ridge_is_stationary_and_alpha_zero_is_min_norm():
    X, y = _data(n=100, d=5)
    X = np.column_stack([X, X[:, 0], np.full(len(y), 3.0)])  # duplicate and constant column
    stats = ClassStatistics.from_data(X, y)
    for alpha in (0.0, 0.1):
        w = solve_exact(X, y, alpha, 0.0).coef
        assert np.all(np.isfinite(w))
        np.testing.assert_allclose(full_gradient(w, X, y, stats) + alpha * w, 0, atol=1e-8)
        assert w[-1] == pytest.approx(0.0, abs=1e-10)
        assert w[0] == pytest.approx(w[-2], abs=1e-8)  # the min-norm split of a duplicate


# ----------------------------------------------------------------------------- stochastic

@pytest.mark.parametrize("l1_ratio", [0.0, 0.5])
def test_stochastic_solvers_reach_exact_objective(l1_ratio):
    """VRSPAM within 1e-4 relative gap in <= 15 passes; SPAM within 2e-2 in 30 passes."""
    X, y = _data(n=3000, d=10, seed=7)
    alpha = 0.05
    stats = ClassStatistics.from_data(X, y)
    ref = _objective(solve_exact(X, y, alpha, l1_ratio).coef, X, y, alpha, l1_ratio)
    step = 1.0 / minibatch_smoothness(X, y, stats, 16)
    common = dict(alpha=alpha, l1_ratio=l1_ratio, step=step, batch_size=16)
    vr = vrspam(X, y, stats, max_iter=15, inner_iter=188, rng=np.random.default_rng(0),
                tol=0.0, **common)
    gap_vr = (_objective(vr.coef, X, y, alpha, l1_ratio) - ref) / ref
    assert -1e-12 <= gap_vr <= 1e-4
    sg = spam(X, y, stats, max_iter=30, rng=np.random.default_rng(0), **common)
    gap_sg = (_objective(sg.coef, X, y, alpha, l1_ratio) - ref) / ref
    assert -1e-12 <= gap_sg <= 2e-2
    assert gap_vr < gap_sg


def test_column_scale_is_the_rms_floored_by_a_tenth_of_the_peak():
    rng = np.random.default_rng(25)
    rare = np.zeros(1000)
    rare[:2] = 1.0
    X = np.column_stack([rng.normal(3.0, 2.0, 1000), np.full(1000, 0.1), rare])
    scale = column_scale(X)
    assert scale[0] == pytest.approx(X[:, 0].std(), rel=1e-12)  # peak below 10 RMS
    assert scale[1] == 1.0  # constant
    # RMS 0.045, but a tenth of the largest deviation from the mean
    assert scale[2] == pytest.approx(0.0998, rel=1e-12)
    np.testing.assert_allclose(column_scale(sp.csr_matrix(X)), scale, rtol=1e-12)


def test_column_scale_does_not_depend_on_the_sign_of_a_column():
    # The peak is the largest deviation from the mean on either side: a rare negative value
    # floors the scale as its positive mirror does.
    rng = np.random.default_rng(25)
    rare = np.zeros(1000)
    rare[:2] = 1.0
    X = np.column_stack([rng.normal(3.0, 2.0, 1000), rare, rng.standard_t(2, 1000)])
    scale = column_scale(X)
    np.testing.assert_allclose(column_scale(-X), scale, rtol=1e-12)
    assert column_scale(-X)[1] == pytest.approx(0.0998, rel=1e-12)
    np.testing.assert_allclose(column_scale(sp.csr_matrix(-X)), scale, rtol=1e-12)


def test_spam_pass_k_takes_the_step_over_the_square_root_of_k():
    # SPAM's pass k is a pass of proximal SGD at the constant step step / sqrt(k), on the
    # minibatches its generator draws.
    X, y = _data(n=200, d=3, seed=2)
    stats = ClassStatistics.from_data(X, y)
    common = dict(alpha=0.01, l1_ratio=0.5, batch_size=10)
    passes = []
    spam(X, y, stats, step=0.1, max_iter=4, rng=np.random.default_rng(1), tol=0.0,
         callback=lambda info: passes.append(info["coef"]), **common)
    rng, w = np.random.default_rng(1), np.zeros(3)
    assert len(passes) == 4
    for k, coef in enumerate(passes, start=1):
        w = spam_epoch(w, X, y, stats, 0.1 / np.sqrt(k), common["alpha"], common["l1_ratio"],
                       common["batch_size"], rng)
        np.testing.assert_allclose(coef, w, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("penalty", ["l2", "l1", "elasticnet"])
def test_stochastic_solvers_reach_the_exact_minimiser_on_badly_scaled_columns(penalty):
    X, y = _data(n=1000, d=6, seed=23)
    X, factors = _badly_scaled(X)
    exact = AUCClassifier(solver="exact", penalty=penalty, alpha=0.05).fit(X, y)

    def gap(clf):
        return (clf.objective_ - exact.objective_) / exact.objective_

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        vr = AUCClassifier(penalty=penalty, alpha=0.05, tol=1e-7, max_iter=50,
                           random_state=0).fit(X, y)
    assert vr.n_iter_ < 50 and -1e-12 <= gap(vr) <= 1e-7  # stopped by its certified gap
    # coefficients in the units of the columns (the exact ones are of order 0.1)
    np.testing.assert_allclose(vr.coef_ * factors, exact.coef_ * factors, atol=1e-6)
    np.testing.assert_array_equal(vr.coef_ == 0, exact.coef_ == 0)
    # SPAM gets close too, though its certified gap (the ConvergenceWarning's) stays far above
    # the true one: the penalty is weak along the column in large units
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        sg = AUCClassifier(solver="spam", penalty=penalty, alpha=0.05, max_iter=50,
                           random_state=0).fit(X, y)
    assert -1e-12 <= gap(sg) <= 1e-3
    np.testing.assert_allclose(sg.coef_ * factors, exact.coef_ * factors, atol=2e-2)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_column_in_large_units_leaves_the_ranking_of_fit_and_partial_fit_intact():
    X, y = make_classification(600, 8, n_informative=4, random_state=0)
    X[:, 0] *= 1000
    auc_exact = roc_auc_score(y, AUCClassifier(solver="exact").fit(X, y).decision_function(X))
    clf = AUCClassifier(random_state=0).fit(X, y)
    assert roc_auc_score(y, clf.decision_function(X)) == pytest.approx(auc_exact, abs=1e-3)
    stream = AUCClassifier(random_state=0)
    for chunk in np.array_split(np.arange(len(y)), 6):
        stream.partial_fit(X[chunk], y[chunk], classes=[0, 1])
    assert roc_auc_score(y, stream.decision_function(X)) > auc_exact - 0.03


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # max_iter=6
@pytest.mark.parametrize("sparse", [False, True])
def test_stochastic_iterates_do_not_depend_on_the_units_of_the_columns(sparse):
    """Without a penalty, columns rescaled by ``f`` give the coefficients divided by ``f``."""
    X, y = _data(n=400, d=5, seed=24)
    X = np.where(np.abs(X) > 1.0, X, 0.0)  # zeros: the sparse scales count implicit entries
    Xf, factors = _badly_scaled(X)
    Xf = sp.csr_matrix(Xf) if sparse else Xf
    params = dict(alpha=0.0, max_iter=6, tol=0.0, random_state=0)
    for solver in ("spam", "vrspam"):
        a = AUCClassifier(solver=solver, **params).fit(X, y)
        b = AUCClassifier(solver=solver, **params).fit(Xf, y)
        np.testing.assert_allclose(b.coef_ * factors, a.coef_, rtol=1e-8)
        assert b.step_size_ == pytest.approx(a.step_size_, rel=1e-10)
    # streaming: the scales of the first chunk
    a, b = AUCClassifier(alpha=0.0, random_state=0), AUCClassifier(alpha=0.0, random_state=0)
    for chunk in np.array_split(np.arange(len(y)), 4):
        a.partial_fit(X[chunk], y[chunk], classes=[0, 1])
        b.partial_fit(Xf[chunk], y[chunk], classes=[0, 1])
    np.testing.assert_allclose(b.coef_ * factors, a.coef_, rtol=1e-8)


@pytest.mark.parametrize("alpha,l1_ratio", [(0.05, 0.0), (0.05, 0.5), (0.05, 1.0), (0.002, 0.5)])
def test_dual_bound_is_a_certified_and_tight_lower_bound(alpha, l1_ratio):
    X, y = _data(n=400, d=6, seed=20)
    stats = ClassStatistics.from_data(X, y)
    w_star = solve_exact(X, y, alpha, l1_ratio).coef
    best = _objective(w_star, X, y, alpha, l1_ratio)
    rng = np.random.default_rng(21)
    for scale in (1e-4, 1e-2, 1.0):
        w = w_star + scale * rng.normal(size=w_star.size)
        grad = full_gradient(w, X, y, stats)
        lower = dual_objective(w, grad, smooth_objective(w, X, y), stats, alpha, l1_ratio)
        assert lower <= best + 1e-12
        _, value, gap = _relative_gap(w, X, y, stats, alpha, l1_ratio, np.inf)
        assert gap >= (value - best) / best - 1e-12
    # tight at the minimiser
    _, _, gap = _relative_gap(w_star, X, y, stats, alpha, l1_ratio, np.inf)
    assert gap < 1e-8
    # no penalty: no dual bound
    assert dual_objective(w_star, full_gradient(w_star, X, y, stats), best, stats, 0.0,
                          l1_ratio) == -np.inf


def test_stopping_test_measures_the_gap_against_the_reachable_decrease():
    # features in tiny units leave P* just below P(0) = 1/2: a gap relative to P* alone passed
    # a w of the wrong direction (VRSPAM stopped after 2 passes, test AUC 0.024 below exact's)
    X, y = _data(n=600, d=8, seed=31)
    X = X * 1e-4
    exact = AUCClassifier(solver="exact").fit(X, y)
    assert 0.5 - exact.objective_ < 1e-4 * exact.objective_  # the premise
    stats = ClassStatistics.from_data(X, y)
    assert _relative_gap(np.zeros(X.shape[1]), X, y, stats, 0.01, 0.0, np.inf)[2] > 0.5
    clf = AUCClassifier(solver="vrspam", random_state=0).fit(X, y)
    cosine = clf.coef_.ravel() @ exact.coef_.ravel() / np.linalg.norm(clf.coef_) / np.linalg.norm(exact.coef_)
    assert cosine > 1 - 1e-6


def test_vrspam_gradient_variance_shrinks_across_outer_loops():
    X, y = _data(n=2000, d=10, seed=8)
    alpha = 0.05
    stats = ClassStatistics.from_data(X, y)
    snapshots = []
    vrspam(X, y, stats, alpha=alpha, l1_ratio=0.0, batch_size=16, max_iter=13, inner_iter=125,
           step=1.0 / minibatch_smoothness(X, y, stats, 16), rng=np.random.default_rng(0),
           tol=0.0, callback=lambda info: snapshots.append(info["coef"]))

    def per_example(w, affine=True):
        return np.array([minibatch_gradient(w, X[[i]], y[[i]], stats, affine)
                         for i in range(len(y))])

    vr_var, sgd_var = [], []
    for w_snap, w in zip(snapshots[:-1], snapshots[1:]):
        # variance of g_i(w) - g_i(w_snap) + mu(w_snap) around the full gradient at w
        diff = per_example(w - w_snap, affine=False)
        vr_var.append(np.mean(np.sum((diff - diff.mean(axis=0)) ** 2, axis=1)))
        g = per_example(w)
        sgd_var.append(np.mean(np.sum((g - g.mean(axis=0)) ** 2, axis=1)))
    assert len(vr_var) >= 5
    assert vr_var[-1] < 1e-3 * vr_var[0]
    assert np.all(np.diff(np.log(vr_var)) < 0.5)  # no growth beyond noise
    assert sgd_var[-1] > 0.5 * sgd_var[0]  # plain SPAM's variance does not vanish
    assert vr_var[-1] < 1e-4 * sgd_var[-1]


# ----------------------------------------------------------------------------- estimator

def test_estimator_solvers_agree_and_auto_picks_exact():
    X, y = _data(n=1500, d=8, seed=9)
    exact = AUCClassifier(solver="auto", alpha=0.05).fit(X, y)
    assert exact.solver_ == "exact" and exact.n_iter_ == 1
    vr = AUCClassifier(solver="vrspam", alpha=0.05, random_state=0, tol=1e-6,
                       max_iter=40).fit(X, y)
    assert vr.objective_ >= exact.objective_ - 1e-12
    assert (vr.objective_ - exact.objective_) / exact.objective_ < 1e-4
    assert vr.n_iter_ < 40  # stopped by tol
    assert roc_auc_score(y, vr.decision_function(X)) == pytest.approx(
        roc_auc_score(y, exact.decision_function(X)), abs=2e-3)


def test_spam_warns_when_far_from_the_optimum():
    X, y = load_breast_cancer(return_X_y=True)  # collinear: badly conditioned in any units
    exact = AUCClassifier(solver="exact").fit(X, y)
    with pytest.warns(ConvergenceWarning, match=r"SPAM reached max_iter=30 .*tol=0.0001"):
        clf = AUCClassifier(solver="spam", random_state=0).fit(X, y)
    assert clf.n_iter_ == 30
    assert (clf.objective_ - exact.objective_) / exact.objective_ > 0.1  # far indeed


def test_convergence_warning_quotes_a_bound_on_the_true_gap():
    # with a penalty the quoted gap is the dual certificate: at least the true relative gap
    X, y = load_breast_cancer(return_X_y=True)
    exact = AUCClassifier(solver="exact").fit(X, y)
    with pytest.warns(ConvergenceWarning, match="gap bounded by") as record:
        clf = AUCClassifier(solver="spam", max_iter=3, random_state=0).fit(X, y)
    quoted = float(re.search(r"bounded by (\S+),", str(record[0].message)).group(1))
    true_gap = (clf.objective_ - exact.objective_) / exact.objective_
    assert quoted >= true_gap * 0.99  # two significant digits
    with pytest.warns(ConvergenceWarning, match="last relative decrease"):
        AUCClassifier(solver="spam", alpha=0.0, max_iter=2, tol=1e-12, random_state=0).fit(X, y)


def test_spam_stops_once_the_certified_gap_is_below_tol():
    X, y = _data(n=3000, d=10, seed=7)
    alpha, tol = 0.05, 0.25
    exact = AUCClassifier(solver="exact", alpha=alpha).fit(X, y)
    coefs = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = AUCClassifier(solver="spam", alpha=alpha, tol=tol, random_state=0,
                            callback=lambda info: coefs.append(info["coef"])).fit(X, y)
    assert len(coefs) == clf.n_iter_ < clf.max_iter
    stats = ClassStatistics.from_data(X, y)
    gaps = [_relative_gap(w, X, y, stats, alpha, 0.0, np.inf)[2] for w in coefs]
    assert all(g > tol for g in gaps[:-1]) and gaps[-1] <= tol
    assert (clf.objective_ - exact.objective_) / exact.objective_ <= gaps[-1]


def test_vrspam_with_l1_does_not_stop_far_from_the_optimum():
    # the relative decrease between snapshots is small there although the gap is not
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    exact = AUCClassifier(solver="exact", penalty="l1").fit(X, y)
    with pytest.warns(ConvergenceWarning, match="VRSPAM reached max_iter=30"):
        clf = AUCClassifier(solver="vrspam", penalty="l1", tol=1e-2, random_state=0).fit(X, y)
    assert (clf.objective_ - exact.objective_) / exact.objective_ > 1e-2


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # SPAM's
@pytest.mark.parametrize("solver", ["spam", "vrspam"])
def test_verbose_prints_objective_and_gap_per_check(solver, capsys):
    X, y = _data(n=1500, d=8, seed=9)
    params = dict(solver=solver, alpha=0.05, tol=1e-6, random_state=0, max_iter=40)
    AUCClassifier(**params).fit(X, y)
    assert capsys.readouterr().out == ""
    clf = AUCClassifier(verbose=1, **params).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    pattern = re.compile(rf"{solver.upper()} pass (\S+): objective (\S+), estimated gap (\S+)")
    checks = [pattern.fullmatch(line) for line in lines]
    if solver == "vrspam":
        assert lines[0] == "VRSPAM warm start: 1 SPAM pass"
        checks = checks[1:]
    assert checks and all(checks)
    passes = [float(m.group(1)) for m in checks]
    gaps = [float(m.group(3)) for m in checks]
    assert np.all(np.diff(passes) > 0) and passes[-1] <= clf.n_iter_
    if solver == "spam":
        assert passes == list(range(1, clf.n_iter_ + 1))
    else:  # stopped by tol at a snapshot, which is the returned point
        assert clf.n_iter_ < 40 and gaps[-1] <= 1e-6 and all(g > 1e-6 for g in gaps[:-1])
    # the last line reports the returned coefficients' objective
    assert float(checks[-1].group(2)) == pytest.approx(clf.objective_, rel=1e-7)


def test_l1_penalty_gives_sparse_coefficients():
    X, y = _data(n=800, d=12, seed=10)
    dense = AUCClassifier(solver="exact", penalty="l2", alpha=0.05).fit(X, y)
    sparse = AUCClassifier(solver="exact", penalty="l1", alpha=0.05).fit(X, y)
    assert np.count_nonzero(dense.coef_) == 12
    assert 0 < np.count_nonzero(sparse.coef_) < 12
    vr = AUCClassifier(solver="vrspam", penalty="l1", alpha=0.05, random_state=0,
                       max_iter=40, tol=1e-7).fit(X, y)
    np.testing.assert_array_equal(vr.coef_ == 0, sparse.coef_ == 0)


def test_predict_proba_is_monotone_and_consistent_with_predict():
    X, y = _data(n=500, seed=11)
    clf = AUCClassifier(solver="exact").fit(X, y)
    s = X @ clf.coef_.ravel()
    proba = clf.predict_proba(X)[:, 1]
    order = np.argsort(s)
    assert np.all(np.diff(proba[order]) >= 0)
    assert roc_auc_score(y, proba) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    np.testing.assert_array_equal(clf.predict(X) == 1, proba > 0.5)
    np.testing.assert_allclose(clf.decision_function(X), s + clf.intercept_[0])
    # calibrated: mean probability close to the base rate
    assert proba.mean() == pytest.approx(y.mean(), abs=0.02)


def test_predict_log_proba_is_the_log_of_predict_proba_and_finite_in_the_tails():
    X, y = _data(n=500, seed=11)
    clf = AUCClassifier(solver="exact").fit(X, y)
    np.testing.assert_allclose(clf.predict_log_proba(X), np.log(clf.predict_proba(X)), rtol=1e-12)
    far = 1e6 * X[:5]  # probabilities that round to 0 and 1
    assert (clf.predict_proba(far) == 0).any()
    log_p = clf.predict_log_proba(far)
    assert np.isfinite(log_p).all()
    np.testing.assert_allclose(np.logaddexp(log_p[:, 0], log_p[:, 1]), 0.0, atol=1e-12)


def test_platt_recovers_a_logistic_link():
    rng = np.random.default_rng(12)
    s = rng.normal(size=20000)
    y = (rng.random(20000) < 1 / (1 + np.exp(-(2.0 * s - 0.5)))).astype(int)
    cal = fit_platt(s, y)
    assert cal.slope == pytest.approx(2.0, rel=0.05)
    assert cal.slope * cal.offset == pytest.approx(-0.5, abs=0.05)
    flat = fit_platt(np.full(10, 4.0), np.array([1, 0] * 5))
    assert np.all(np.isfinite([flat.slope, flat.offset]))
    assert flat(np.array([4.0]))[0] == pytest.approx(0.5)


def test_platt_is_the_minimiser_of_the_smoothed_likelihood():
    from scipy.optimize import minimize

    rng = np.random.default_rng(14)
    s = 3.0 + 5.0 * rng.normal(size=300)
    y = (rng.random(300) < 1 / (1 + np.exp(-0.4 * s + 1.0))).astype(int)
    n_pos, n_neg = y.sum(), (1 - y).sum()
    t = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))  # Platt's targets

    def nll(th):
        u = th[0] * s + th[1]
        return np.sum(np.logaddexp(0.0, u) - t * u)

    ref = minimize(nll, np.zeros(2), method="BFGS", options={"gtol": 1e-10}).x
    cal = fit_platt(s, y)
    np.testing.assert_allclose([cal.slope, cal.slope * cal.offset], ref, rtol=1e-6, atol=1e-8)


def test_reservoir_is_bounded_and_uniform():
    rng = np.random.default_rng(13)
    res = RowReservoir(500)
    for start in range(0, 20000, 700):
        rows = np.arange(start, min(start + 700, 20000), dtype=float)[:, None]
        res.add(rows, np.zeros(len(rows), dtype=int), rng)
    kept = res.X.ravel()
    assert len(kept) == 500 and len(np.unique(kept)) == 500
    assert kept.mean() == pytest.approx(10000, rel=0.08)  # sd of the mean is ~260


def test_partial_fit_streams_to_the_batch_solution():
    X, y = _data(n=4000, d=8, seed=14)
    exact = AUCClassifier(solver="exact", alpha=0.05).fit(X, y)
    stream = AUCClassifier(alpha=0.05, random_state=0)
    for epoch in range(10):
        for chunk in np.array_split(np.random.default_rng(epoch).permutation(len(y)), 8):
            stream.partial_fit(X[chunk], y[chunk], classes=[0, 1])
    obj = _objective(stream.coef_.ravel(), X, y, 0.05, 0.0)
    assert (obj - exact.objective_) / exact.objective_ < 2e-2
    assert stream.t_ == 10 * len(y)
    assert roc_auc_score(y, stream.decision_function(X)) == pytest.approx(
        roc_auc_score(y, exact.decision_function(X)), abs=5e-3)


def test_partial_fit_one_example_at_a_time():
    X, y = _data(n=300, d=5, seed=15)
    clf = AUCClassifier(alpha=0.05, random_state=0)
    with pytest.raises(ValueError, match="classes must be given"):
        clf.partial_fit(X[:1], y[:1])
    for i in range(len(y)):
        clf.partial_fit(X[i:i + 1], y[i:i + 1], classes=[0, 1])
    assert np.all(np.isfinite(clf.coef_))
    assert roc_auc_score(y, clf.decision_function(X)) > 0.8
    with pytest.raises(ValueError, match="not in classes"):
        clf.partial_fit(X[:2], np.array([0, 2]))
    # beside both classes, a new label was refused as "a multiclass target"
    with pytest.raises(ValueError, match=r"y contains labels \[5\] not in classes \[0, 1\]"):
        clf.partial_fit(X[:3], np.array([0, 1, 5]))
    with pytest.raises(ValueError, match=r"y contains labels \[5\] not in classes \[0, 1\]"):
        AUCClassifier().partial_fit(X[:3], np.array([0, 1, 5]), classes=[0, 1])


def test_partial_fit_rejects_more_than_two_classes_and_stays_unfitted():
    X, y = _data(n=60, d=4, seed=22)
    clf = AUCClassifier(random_state=0)
    with pytest.raises(ValueError, match=r"exactly two labels, got \[0, 1, 2\]"):
        clf.partial_fit(X, y, classes=[0, 1, 2])
    with pytest.raises(NotFittedError):
        check_is_fitted(clf)
    clf.partial_fit(X, y, classes=[0, 1])  # a valid first call still works
    np.testing.assert_array_equal(clf.classes_, [0, 1])


def test_partial_fit_continues_fit_and_accepts_sparse_chunks():
    X, y = _data(n=1000, d=6, seed=19)
    clf = AUCClassifier(solver="exact", alpha=0.05).fit(X, y)
    start = clf.objective_
    Xs = sp.csr_matrix(X)
    for chunk in np.array_split(np.arange(len(y)), 5):
        clf.partial_fit(Xs[chunk], y[chunk])
    assert clf.solver_ == "exact" and clf.t_ == 2 * len(y)
    obj = _objective(clf.coef_.ravel(), X, y, 0.05, 0.0)
    assert start <= obj < start * 1.05  # SPAM steps stay near the optimum
    with pytest.raises(ValueError, match="differ"):
        clf.partial_fit(X[:5], y[:5], classes=[0, 3])
    with pytest.raises(ValueError, match="features"):
        clf.partial_fit(X[:5, :3], y[:5])


def test_pipeline_and_grid_search_with_roc_auc():
    X, y = load_breast_cancer(return_X_y=True)
    pipe = make_pipeline(StandardScaler(), AUCClassifier(solver="exact"))
    search = GridSearchCV(pipe, {"aucclassifier__alpha": [1e-3, 1e-2, 1e-1]},
                          scoring="roc_auc", cv=3).fit(X, y)
    assert search.best_score_ > 0.97
    assert search.predict_proba(X).shape == (len(y), 2)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_sparse_input_matches_dense():
    X, y = _data(n=400, d=6, seed=16)
    Xs = sp.csr_matrix(np.where(np.abs(X) > 1.0, X, 0.0))
    Xd = Xs.toarray()
    for solver in ("exact", "vrspam"):
        a = AUCClassifier(solver=solver, random_state=0, max_iter=5, tol=1e-2).fit(Xd, y)
        b = AUCClassifier(solver=solver, random_state=0, max_iter=5, tol=1e-2).fit(Xs, y)
        np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(a.predict_proba(Xd), b.predict_proba(Xs), atol=1e-12)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_reproducible_and_inputs_untouched():
    X, y = _data(n=300, seed=17)
    X0, y0 = X.copy(), y.copy()
    a = AUCClassifier(solver="spam", random_state=3, max_iter=4).fit(X, y)
    b = AUCClassifier(solver="spam", random_state=3, max_iter=4).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


@pytest.mark.parametrize("solver,passes", [("spam", [1, 2, 3, 4, 5]), ("vrspam", [1, 3, 5, 7, 9])])
def test_callback_stops_training_only_when_it_returns_false(solver, passes):
    X, y = _data(n=300, seed=17)
    seen = []

    def callback(info):
        seen.append(info["n_iter"])
        return [True, None, 0, np.False_, False][len(seen) - 1]  # only False stops

    clf = AUCClassifier(solver=solver, alpha=0.05, max_iter=20, tol=0.0, random_state=0,
                        callback=callback).fit(X, y)
    assert seen == passes and clf.n_iter_ == passes[-1]


# ----------------------------------------------------------------------------- edge cases

def test_one_class_and_multiclass_are_rejected():
    X, y = _data(n=50)
    with pytest.raises(ValueError, match="only one class"):
        AUCClassifier().fit(X, np.ones(50))
    with pytest.raises(ValueError, match="Only binary classification"):
        AUCClassifier().fit(X, np.arange(50) % 3)


def test_nan_and_bad_params_are_rejected():
    X, y = _data(n=50)
    X[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        AUCClassifier().fit(X, y)
    with pytest.raises(ValueError, match="solver"):
        AUCClassifier(solver="sgd").fit(np.nan_to_num(X), y)


@pytest.mark.parametrize("solver", ["exact", "spam", "vrspam"])
def test_constant_features_and_singleton_class_are_finite(solver):
    X, y = _data(n=200, d=4, seed=18)
    Xc = np.column_stack([X, np.full(200, 7.0)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = AUCClassifier(solver=solver, random_state=0).fit(Xc, y)
    assert np.all(np.isfinite(clf.coef_)) and abs(clf.coef_[0, -1]) < 1e-12
    # a class with a single example: its mean is that example
    y1 = np.zeros(200, dtype=int)
    y1[np.argmax(X[:, 0])] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = AUCClassifier(solver=solver, random_state=0).fit(X, y1)
    assert np.all(np.isfinite(clf.coef_)) and np.all(np.isfinite(clf.predict_proba(X)))
    assert np.argmax(clf.decision_function(X)) == np.argmax(X[:, 0]) or solver != "exact"
    # all features constant: zero coefficients, the base rate everywhere
    flat = AUCClassifier(solver=solver, random_state=0).fit(np.ones((20, 3)), y[:20])
    np.testing.assert_array_equal(flat.coef_, 0.0)
    np.testing.assert_allclose(flat.predict_proba(np.ones((2, 3)))[:, 1],
                               (y[:20].sum() + 1) / 22)


# ----------------------------------------------------------------------------- regressions

def _breast_cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def test_vrspam_cuts_an_inner_loop_longer_than_the_passes_left(capsys):
    # 2000 steps of 16 rows are 56 passes: skipping the loop returned the warm start silently
    X, y = _breast_cancer()
    exact = AUCClassifier(solver="exact").fit(X, y)
    with pytest.warns(ConvergenceWarning, match="VRSPAM reached max_iter=30"):
        clf = AUCClassifier(inner_iter=2000, random_state=0, verbose=1).fit(X, y)
    assert clf.n_iter_ == 30
    assert (clf.objective_ - exact.objective_) / exact.objective_ < 0.1  # 0.33 after one pass
    # cut a pass early, so that the last check (that of the warning) is at the returned point
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("VRSPAM pass 30: objective ")
    assert float(last.split()[4].rstrip(",")) == pytest.approx(clf.objective_, rel=1e-7)
    # a loop that fits is not cut: one pass of warm start, then (check, epoch) pairs
    seen = []
    with pytest.warns(ConvergenceWarning, match="max_iter=7"):
        AUCClassifier(max_iter=7, random_state=0, callback=lambda info: seen.append(
            info["n_iter"])).fit(X, y)
    assert seen == [1, 3, 5, 7]


@pytest.mark.parametrize("max_iter", [1, 5, 6])
def test_vrspam_warns_with_the_gap_of_the_returned_model(max_iter):
    # one-epoch loops: an odd max_iter leaves no step for a loop cut a pass early, so the
    # last loop runs to max_iter, and max_iter=1 leaves only the warm start
    X, y = _breast_cancer()
    with pytest.warns(ConvergenceWarning, match=f"max_iter={max_iter} passes") as record:
        clf = AUCClassifier(max_iter=max_iter, alpha=0.1, tol=1e-12, random_state=0).fit(X, y)
    assert clf.n_iter_ == max_iter
    quoted = float(re.search(r"bounded by (\S+),", str(record[0].message)).group(1))
    gap = _relative_gap(clf.coef_.ravel(), X, y, ClassStatistics.from_data(X, y), 0.1, 0.0,
                        np.inf)[2]
    assert quoted == pytest.approx(gap, rel=0.05)  # quoted to two digits


def test_vrspam_converges_at_a_returned_point_it_checks_at_no_pass_cost():
    # tol met at the end of a loop that ran to max_iter=5: converged, no warning
    X, y = _breast_cancer()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = AUCClassifier(max_iter=5, alpha=0.1, tol=0.5, random_state=0).fit(X, y)
    assert clf.n_iter_ == 5


@pytest.mark.parametrize("solver", ["exact", "vrspam", "spam"])
@pytest.mark.parametrize("scale, message", [(1e155, "reach beyond 1e\\+150.*Divide"),
                                            (1e-170, "all lie below 1e-150.*Multiply")])
def test_columns_past_the_float_range_of_their_squares_are_refused_by_name(solver, scale, message):
    # their squares overflowed (a LAPACK error on infs, or coef_ 0) or underflowed (zero
    # coefficients, or steps eta / scale^2 of inf read as divergence)
    X, y = _breast_cancer()
    frame = pd.DataFrame(X[:, :3], columns=["a", "b", "c"]).assign(b=lambda d: d.b * scale)
    with pytest.raises(ValueError, match=rf"X has columns whose entries {message}"):
        AUCClassifier(solver=solver).fit(frame, y)
    with pytest.raises(ValueError, match=r"magnitude: \[1\]"):
        AUCClassifier(solver=solver).fit(sp.csr_matrix(frame.to_numpy()), y)
    fitted = AUCClassifier().fit(frame.assign(b=X[:, 1]), y)
    with pytest.raises(ValueError, match=r"magnitude: \['b'\]"):
        fitted.partial_fit(frame, y)
    AUCClassifier(solver=solver).fit(frame.assign(b=0.0), y)  # an all-zero column is fine


@pytest.mark.parametrize("y_bad", [np.r_[np.zeros(9, int), 5], np.linspace(0, 1, 10)])
def test_partial_fit_rejected_first_call_leaves_the_estimator_unfitted(y_bad):
    X, y = _breast_cancer()
    clf = AUCClassifier(random_state=0)
    with pytest.raises(ValueError):
        clf.partial_fit(X[:10], y_bad, classes=[0, 1])
    with pytest.raises(NotFittedError):
        check_is_fitted(clf)
    with pytest.raises(NotFittedError):
        clf.predict(X[:2])
    clf.partial_fit(X[:100], y[:100], classes=[0, 1])  # a valid first call still works
    assert clf.t_ == 100 and clf.predict(X[:2]).shape == (2,)


def test_failed_refit_leaves_the_estimator_unfitted():
    X, y = _breast_cancer()
    clf = AUCClassifier(solver="exact").fit(X, y)
    with pytest.raises(ValueError, match="only one class"):
        clf.fit(X[:, :5], np.zeros(len(y)))
    with pytest.raises(NotFittedError):
        check_is_fitted(clf)
    assert not [k for k in vars(clf) if k.endswith("_")]
    with pytest.raises(ValueError, match="classes must be given"):  # a fresh stream
        clf.partial_fit(X, y)
    clf.fit(X[:, :5], y)
    assert clf.n_features_in_ == 5 and clf.coef_.shape == (1, 5)


def test_divergence_raises_in_fit_and_partial_fit_without_numpy_warnings():
    X, y = _breast_cancer()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow RuntimeWarning either
        for solver in ("spam", "vrspam"):
            with pytest.raises(FloatingPointError, match=f"The {solver} solver diverged"):
                AUCClassifier(solver=solver, eta0=1.0, random_state=0).fit(X, y)
        # partial_fit: the coefficients grew to 1e57 in 12 chunks while staying finite; the
        # loss of the first chunk is already 1.7e13
        clf = AUCClassifier(eta0=1.0, random_state=0)
        with pytest.raises(FloatingPointError, match="SPAM solver diverged .* step size 1;"):
            clf.partial_fit(X[:50], y[:50], classes=[0, 1])
        with pytest.raises(NotFittedError):
            check_is_fitted(clf)
        # slower: a loss of 3.4e4, then 6.3e8
        clf = AUCClassifier(eta0=0.1, random_state=0).partial_fit(X[:50], y[:50],
                                                                 classes=[0, 1])
        coef, t, n_calls = clf.coef_.copy(), clf.t_, clf._n_calls
        with pytest.raises(FloatingPointError, match="SPAM solver diverged"):
            clf.partial_fit(X[50:100], y[50:100])
    # a loss past a float's range: Python's float square raised a bare OverflowError
    X_small, y_small = np.random.default_rng(0).normal(size=(68, 3)), np.arange(68) % 2
    for solver in ("spam", "vrspam"):
        with pytest.raises(FloatingPointError, match=f"The {solver} solver diverged .* use a smaller eta0"):
            AUCClassifier(solver=solver, eta0=1e6, batch_size=1, random_state=0).fit(X_small, y_small)
    # the call that raised left the stream as it was
    np.testing.assert_array_equal(clf.coef_, coef)
    assert (clf.t_, clf._n_calls) == (t, n_calls)
    # the auto step never trips the check
    clf = AUCClassifier(random_state=0)
    for start in range(0, len(y), 50):
        clf.partial_fit(X[start:start + 50], y[start:start + 50], classes=[0, 1])
    assert roc_auc_score(y, clf.decision_function(X)) > 0.98


def test_exact_solve_is_equilibrated_against_columns_in_extreme_units():
    X, y = _data(n=300, d=5, seed=26)
    factors = np.array([1e8, 1.0, 1e-8, 1.0, 1.0])
    Xf = X * factors
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scipy's LinAlgWarning was raised here
        clf = AUCClassifier(solver="exact", alpha=0.05).fit(Xf, y)
    Q, delta = quadratic_form(Xf, y)
    d = np.sqrt(np.diag(Q) + 0.05)
    residual = (Q @ clf.coef_.ravel() + 0.05 * clf.coef_.ravel() - delta) / d
    assert np.abs(residual).max() < 1e-10
    # units alone are not flagged; what is left ill-conditioned after equilibration is
    units = np.array([1e8, 1e-8])
    A = np.array([[2.0, 1.0], [1.0, 2.0]]) * np.outer(units, units)
    x, ill = _solve_symmetric(A, units)
    assert not ill
    np.testing.assert_allclose(x * units, [1 / 3, 1 / 3], rtol=1e-12)
    assert _solve_symmetric(np.array([[1.0, 1.0 - 3e-16], [1.0 - 3e-16, 1.0]]), np.ones(2))[1]


def test_exact_solve_leaves_the_process_wide_warning_state_alone(monkeypatch):
    # catch_warnings swaps the process's filters and hook: fits on threads (GridSearchCV on
    # joblib's threading backend) that interleave can leave another fit's record as the hook
    X, y = _data(n=300, d=5, seed=28)
    reference = AUCClassifier(solver="exact", alpha=0.05).fit(X, y).coef_

    callers, original = [], warnings.catch_warnings

    def watched(*args, **kwargs):  # still the real one: pytest's own hooks use it too
        callers.append(sys._getframe(1).f_globals.get("__name__", ""))
        return original(*args, **kwargs)

    monkeypatch.setattr(warnings, "catch_warnings", watched)
    np.testing.assert_array_equal(AUCClassifier(solver="exact", alpha=0.05).fit(X, y).coef_, reference)
    assert not [c for c in callers if c.startswith("skrate")]


@pytest.mark.parametrize("offset", [1e3, 1e7])
def test_sparse_quadratic_form_is_stable_with_a_large_offset(offset):
    X, y = _data(n=500, d=5, seed=27)
    X = np.where(np.abs(X) > 1.0, X, 0.0)
    X[:, [0, 2]] += offset  # dense columns far from zero, next to sparse ones
    Qd, dd = quadratic_form(X, y)
    Qs, ds = quadratic_form(sp.csr_matrix(X), y)
    np.testing.assert_allclose(Qs, Qd, rtol=0, atol=1e-10 * np.abs(Qd).max())
    np.testing.assert_allclose(ds, dd, rtol=0, atol=1e-12 * offset)
    a = AUCClassifier(solver="exact").fit(X, y)
    b = AUCClassifier(solver="exact").fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-6, atol=1e-9)


def test_sparse_step_matches_dense_with_a_large_offset():
    # a sparse row's distance to the centre was ||c||^2 with the c_j^2 of its stored entries
    # replaced: with a column at 1e7 it cancelled below the rounding floor, so every distance,
    # the step bound and the step were 0 and nothing was learned
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X.sum(axis=1) + rng.normal(size=200) > 0).astype(int)
    X[:, [0, 2]] = np.where(np.abs(X[:, [0, 2]]) > 0.5, X[:, [0, 2]], 0.0)
    X[:, 1] += 1e7
    Xs = sp.csr_matrix(X)
    stats = ClassStatistics.from_data(X, y)
    assert minibatch_smoothness(Xs, y, stats, 16) == pytest.approx(
        minibatch_smoothness(X, y, stats, 16), rel=1e-12)
    a = AUCClassifier(random_state=0).fit(X, y)
    b = AUCClassifier(random_state=0).fit(Xs, y)
    assert b.step_size_ == pytest.approx(a.step_size_, rel=1e-9)
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-7)
    streams = []
    for Z in (X, Xs):
        clf = AUCClassifier(random_state=0)
        for start in range(0, len(y), 50):
            clf.partial_fit(Z[start:start + 50], y[start:start + 50], classes=[0, 1])
        streams.append(clf.coef_)
    np.testing.assert_allclose(streams[1], streams[0], rtol=1e-7)
    assert np.all(streams[0] > 0.1) and np.all(a.coef_ > 0.1)  # both learned the ranking


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("start", ["partial_fit", "fit"])
def test_partial_fit_mixes_sparse_and_dense_chunks(start):
    # a dense chunk after a sparse one crashed the calibration reservoir
    X, y = _data(n=300, d=5, seed=28)
    mixed, dense = (AUCClassifier(alpha=0.05, random_state=0) for _ in range(2))
    if start == "fit":
        mixed.fit(sp.csr_matrix(X), y)
        dense.fit(X, y)
    chunks = np.array_split(np.arange(len(y)), 4)
    for chunk, kind in zip(chunks, [sp.csr_matrix, np.asarray, sp.csr_matrix, np.asarray]):
        mixed.partial_fit(kind(X[chunk]), y[chunk], classes=[0, 1])
        dense.partial_fit(X[chunk], y[chunk], classes=[0, 1])
    np.testing.assert_allclose(mixed.coef_, dense.coef_, rtol=1e-9)
    np.testing.assert_allclose(mixed.predict_proba(X), dense.predict_proba(X), rtol=1e-9)
    assert mixed.t_ == dense.t_


@pytest.mark.parametrize("failure", ["divergence", "reservoir"])
def test_failed_partial_fit_call_leaves_the_stream_as_it_was(failure, monkeypatch):
    # the class statistics, the call count, the reservoir and the minibatch generator: a
    # stream that had a failing call goes on as one that never made it
    X, y = _data(n=200, d=5, seed=29)
    chunks = np.array_split(np.arange(len(y)), 4)
    failed, clean = (AUCClassifier(eta0=0.05, random_state=0) for _ in range(2))
    for clf in (failed, clean):
        clf.partial_fit(X[chunks[0]], y[chunks[0]], classes=[0, 1])
    if failure == "divergence":  # raised after the SPAM pass drew its minibatches
        with pytest.raises(FloatingPointError, match="SPAM solver diverged"):
            failed.partial_fit(X[chunks[1]] * 1e4, y[chunks[1]])
    else:
        def fail(*args):
            raise RuntimeError("reservoir")

        with monkeypatch.context() as patch:
            patch.setattr(RowReservoir, "add", fail)
            with pytest.raises(RuntimeError, match="reservoir"):
                failed.partial_fit(X[chunks[1]], y[chunks[1]])
    for chunk in chunks[1:]:
        for clf in (failed, clean):
            clf.partial_fit(X[chunk], y[chunk])
    np.testing.assert_array_equal(failed.coef_, clean.coef_)
    np.testing.assert_array_equal(failed.intercept_, clean.intercept_)
    assert (failed.t_, failed._n_calls) == (clean.t_, clean._n_calls)


@pytest.mark.parametrize("factor", [1e-6, 1e6])
def test_exact_without_penalty_is_equilibrated(factor):
    # the minimiser does not depend on the units of a column (a column in small units got a
    # zero coefficient)
    X, y = _data(n=200, d=4, seed=30)
    factors = np.array([1.0, 1.0, factor, 1.0])
    ref = solve_exact(X, y, 0.0, 0.0).coef
    np.testing.assert_allclose(solve_exact(X * factors, y, 0.0, 0.0).coef * factors, ref,
                               rtol=1e-8)
    # singular: a duplicate column in other units shares the weight in its own units (the
    # minimum norm of the equilibrated variables), as a duplicate in the same units does
    Xd = np.column_stack([X, X[:, 0] * factor])
    w = solve_exact(Xd, y, 0.0, 0.0).coef
    assert w[-1] * factor == pytest.approx(w[0], rel=1e-6)
    assert w[0] + w[-1] * factor == pytest.approx(ref[0], rel=1e-6)
    # only constant features: rounding noise is not inverted
    np.testing.assert_array_equal(solve_exact(np.full((100, 2), 0.1), y[:100], 0.0, 0.0).coef,
                                  0.0)


def test_a_zero_step_bound_takes_no_step():
    # with eta0="auto" a bound of 0 gave the step 1 / tiny = 4.5e307
    X, y = _data(n=300, d=5, seed=15)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # a stream whose first rows are one repeated record: nothing to learn from them yet
        Xr, yr = X.copy(), y.copy()
        Xr[:3], yr[:3] = Xr[0], [0, 1, 0]
        clf = AUCClassifier(alpha=0.0, random_state=0)
        for i in range(3):
            clf.partial_fit(Xr[i:i + 1], yr[i:i + 1], classes=[0, 1])
        assert clf.step_size_ == 0.0
        np.testing.assert_array_equal(clf.coef_, 0.0)
        for i in range(3, len(yr)):
            clf.partial_fit(Xr[i:i + 1], yr[i:i + 1])
        assert roc_auc_score(yr, clf.decision_function(Xr)) > 0.8
        # a row at the mean of the earlier ones, up to the rounding of that mean
        for rows in ([-0.1, 0.3, 0.1], [0.1, 0.3, 0.2]):
            clf = AUCClassifier(alpha=0.0, random_state=0)
            for value, label in zip(rows, [0, 0, 1]):
                clf.partial_fit([[value]], [label], classes=[0, 1])
            np.testing.assert_array_equal(clf.coef_, 0.0)
        # fit on constant features only
        for solver in ("spam", "vrspam"):
            flat = AUCClassifier(solver=solver, alpha=0.0, random_state=0).fit(
                np.full((100, 2), 0.1), y[:100])
            assert flat.step_size_ == 0.0
            np.testing.assert_array_equal(flat.coef_, 0.0)


def test_sparse_duplicate_entries_are_summed_without_touching_the_input():
    X, y = _data(n=120, d=4, seed=32)
    X = np.where(np.abs(X) > 0.8, X, 0.0)
    csr = sp.csr_matrix(X)
    # every stored value split in two halves: valid CSR, not canonical
    dup = sp.csr_matrix((np.repeat(csr.data / 2, 2), np.repeat(csr.indices, 2),
                         2 * csr.indptr), shape=X.shape)
    np.testing.assert_array_equal(dup.toarray(), X)
    data = dup.data.copy()
    for solver in ("spam", "vrspam"):
        a = AUCClassifier(solver=solver, max_iter=3, tol=0.0, random_state=0)
        b = AUCClassifier(solver=solver, max_iter=3, tol=0.0, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            a.fit(X, y)
            b.fit(dup, y)
        assert b.step_size_ == pytest.approx(a.step_size_, rel=1e-12)
        np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-9)
    a = AUCClassifier(random_state=0).partial_fit(X, y, classes=[0, 1])
    b = AUCClassifier(random_state=0).partial_fit(dup, y, classes=[0, 1])
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-9)
    np.testing.assert_array_equal(dup.data, data)  # still the duplicates
    assert len(dup.data) == 2 * csr.nnz


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("penalty", ["l2", "l1", "elasticnet"])
@pytest.mark.parametrize("solver", ["exact", "spam", "vrspam"])
def test_constant_features_get_exactly_zero_coefficients(solver, penalty):
    X, y = _data(n=200, d=3, seed=33)
    Xc = np.column_stack([X, np.full(200, 0.1), np.full(200, -3e5)])
    clf = AUCClassifier(solver=solver, penalty=penalty, random_state=0).fit(Xc, y)
    np.testing.assert_array_equal(clf.coef_[0, -2:], 0.0)
    assert np.all(np.isfinite(clf.coef_))
    # partial_fit: as long as they are constant
    stream = AUCClassifier(penalty=penalty, random_state=0)
    for chunk in np.array_split(np.arange(len(y)), 4):
        stream.partial_fit(Xc[chunk], y[chunk], classes=[0, 1])
    np.testing.assert_array_equal(stream.coef_[0, -2:], 0.0)
    Xc[-5:, -1] += 1.0  # then varies: no longer pinned
    stream.partial_fit(Xc[-50:], y[-50:])
    assert stream.coef_[0, -1] != 0


@pytest.mark.parametrize("solver", ["exact", "spam", "vrspam"])
def test_a_column_in_offset_units_is_fitted_as_its_centred_self(solver):
    # a timestamp in nanoseconds, spread over milliseconds: its scores cancelled against the
    # class means to their last digits, so VRSPAM stalled (a ConvergenceWarning quoting a gap
    # of 1e12) and returned coefficients off by a part in 1e3, and every solver's calibration
    # took the scores for constant (slope 1)
    rng = np.random.default_rng(3)
    t = rng.normal(size=2000)
    y = (t + rng.normal(size=2000) > 0).astype(int)
    X = np.c_[rng.normal(size=2000), 1.7e18 + t * 1e6]
    centred = X - X.mean(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore" if solver == "spam" else "error", ConvergenceWarning)
        a = AUCClassifier(solver=solver, random_state=0).fit(X, y)
        b = AUCClassifier(solver=solver, random_state=0).fit(centred, y)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-6)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(centred), atol=1e-3)
    streams = [AUCClassifier(random_state=0) for _ in range(2)]
    for chunk in np.array_split(np.arange(len(y)), 5):
        streams[0].partial_fit(X[chunk], y[chunk], classes=[0, 1])
        streams[1].partial_fit(centred[chunk], y[chunk], classes=[0, 1])
    np.testing.assert_allclose(streams[0].coef_, streams[1].coef_, rtol=1e-6)


def test_a_stream_of_single_rows_refits_the_calibration_only_when_it_is_read(monkeypatch):
    # a refit on up to 2000 kept rows after every call cost more than the update itself
    import skrate._auc as auc_module

    X, y = _data(n=400, d=5, seed=31)
    clf = AUCClassifier(random_state=0).partial_fit(X[:50], y[:50], classes=[0, 1])
    calls = []
    monkeypatch.setattr(auc_module, "fit_platt", lambda *a, **k: calls.append(1) or fit_platt(*a, **k))
    for i in range(50, 400):
        clf.partial_fit(X[i:i + 1], y[i:i + 1])
    assert calls == []
    proba = clf.predict_proba(X)
    assert len(calls) == 1
    clf.decision_function(X), clf.intercept_
    assert len(calls) == 1  # read once
    # the same calibration as refitted eagerly on the kept rows
    slope, intercept = clf._calibration(clf._centred(clf._reservoir.X), clf._reservoir.y, clf.coef_.ravel(),
                                         clf._reservoir.weight)
    np.testing.assert_allclose(clf.intercept_, intercept)
    np.testing.assert_allclose(proba[:, 1], 1 / (1 + np.exp(-slope * (X @ clf.coef_.ravel() + intercept[0]))))


def test_a_chunk_that_places_no_row_leaves_the_reservoir_arrays_as_they_were():
    rng = np.random.default_rng(0)
    res = RowReservoir(10)
    res.add(rng.normal(size=(10, 3)), np.arange(10) % 2, rng)
    res.n_seen = 10**9  # a long stream: a new row takes a slot with probability 1e-8
    X_before, y_before = res.X, res.y
    res.add(rng.normal(size=(1, 3)), np.array([1]), rng)
    assert res.X is X_before and res.y is y_before and res.n_seen == 10**9 + 1


def test_intercept_can_be_set_and_a_stream_refuses_continuous_labels_from_its_first_call():
    X, y = _data(n=200, d=4, seed=33)
    clf = AUCClassifier(random_state=0).fit(X, y)
    clf.intercept_ = np.array([5.0])  # as on scikit-learn's linear models
    np.testing.assert_allclose(clf.decision_function(X), X @ clf.coef_.ravel() + 5.0)
    assert np.all(clf.predict(X) == clf.classes_[1])
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        AUCClassifier().partial_fit(X, np.where(y == 1, 1.5, 0.5), classes=[0.5, 1.5])


def test_a_read_between_calls_never_keeps_a_calibration_of_older_coefficients():
    X, y = _data(n=300, d=4, seed=35)
    clf = AUCClassifier(random_state=0).partial_fit(X[:100], y[:100], classes=[0, 1])
    clf.predict_proba(X)  # calibrated for the first call's coefficients
    clf.partial_fit(X[100:], y[100:])
    fresh = clf._calibration(clf._centred(clf._reservoir.X), clf._reservoir.y, clf.coef_.ravel(),
                             clf._reservoir.weight)
    np.testing.assert_allclose(clf.intercept_, fresh[1])


# ----------------------------------------------------------------------------- sample_weight

def _weighted(n=120, d=5, seed=40, sparse=False):
    """Data with integer weights (zeros included) and its rows repeated by them."""
    X, y = _data(n=n, d=d, seed=seed)
    counts = np.random.default_rng(seed).integers(0, 4, size=n)
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) < 0.6, 0.0, X))
    return X, y, counts, X[np.repeat(np.arange(n), counts)], np.repeat(y, counts)


@pytest.mark.parametrize("sparse", [False, True])
def test_weighted_objective_pieces_equal_those_of_repeated_rows(sparse):
    X, y, counts, Xr, yr = _weighted(sparse=sparse)
    keep = counts > 0
    Xw, yw, weight = X[keep], y[keep], counts[keep] / counts[keep].mean()
    w = np.random.default_rng(1).normal(size=X.shape[1])
    # the quadratic form, the loss and the class statistics of the repeated rows
    for got, want in zip(quadratic_form(Xw, yw, weight), quadratic_form(Xr, yr)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert smooth_objective(w, Xw, yw, weight) == pytest.approx(smooth_objective(w, Xr, yr), rel=1e-12)
    stats, stats_r = ClassStatistics.from_data(Xw, yw, weight), ClassStatistics.from_data(Xr, yr)
    assert stats.p == pytest.approx(stats_r.p, rel=1e-12)
    np.testing.assert_allclose(stats.shift, stats_r.shift, rtol=1e-12)
    # the weighted mean of the weighted example gradients is the gradient, as on repeated rows
    np.testing.assert_allclose(full_gradient(w, Xw, yw, stats, weight), full_gradient(w, Xr, yr, stats_r),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(column_scale(Xw, weight=weight), column_scale(Xr), rtol=1e-10)


def test_weighted_gradient_matches_finite_differences_of_the_weighted_loss():
    X, y = _data(n=90)
    weight = np.random.default_rng(5).uniform(0.1, 3.0, size=90)
    weight /= weight.mean()
    stats = ClassStatistics.from_data(X, y, weight)
    w = np.random.default_rng(6).normal(size=X.shape[1])
    h = 1e-6
    fd = np.array([(smooth_objective(w + h * e, X, y, weight) - smooth_objective(w - h * e, X, y, weight))
                   / (2 * h) for e in np.eye(X.shape[1])])
    np.testing.assert_allclose(full_gradient(w, X, y, stats, weight), fd, rtol=1e-6, atol=1e-8)
    # the weighted loss is the weighted mean over pairs, weighted by both rows' weights
    s = X @ w
    pos, neg = y == 1, y == 0
    pair_w = np.outer(weight[pos], weight[neg])
    pairs = 0.5 * (1 - (s[pos][:, None] - s[neg][None, :])) ** 2
    assert smooth_objective(w, X, y, weight) == pytest.approx(np.sum(pair_w * pairs) / pair_w.sum(), rel=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("penalty", ["l2", "elasticnet"])
def test_exact_fit_with_integer_weights_equals_the_fit_on_repeated_rows(sparse, penalty):
    X, y, counts, Xr, yr = _weighted(sparse=sparse)
    weighted = AUCClassifier(solver="exact", penalty=penalty).fit(X, y, sample_weight=counts)
    repeated = AUCClassifier(solver="exact", penalty=penalty).fit(Xr, yr)
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(weighted.predict_proba(X), repeated.predict_proba(X), rtol=1e-7, atol=1e-10)
    assert weighted.objective_ == pytest.approx(repeated.objective_, rel=1e-10)
    assert weighted.t_ == int((counts > 0).sum())


@pytest.mark.parametrize("solver", ["spam", "vrspam"])
def test_stochastic_fits_with_weights_reach_the_weighted_optimum(solver):
    X, y = _data(n=2000, d=6, seed=41)
    weight = np.where(X[:, 1] > 0.5, 5.0, 0.2)  # weights that move the optimum
    exact = AUCClassifier(solver="exact", alpha=0.05).fit(X, y, sample_weight=weight)
    unweighted = AUCClassifier(solver="exact", alpha=0.05).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # SPAM's 1/sqrt(k) steps
        fit = AUCClassifier(solver=solver, alpha=0.05, max_iter=30, random_state=0).fit(
            X, y, sample_weight=weight)
    gap = (fit.objective_ - exact.objective_) / exact.objective_
    assert -1e-12 <= gap <= (1e-4 if solver == "vrspam" else 2e-2)
    # the weights move the optimum: the unweighted one is farther from it in the weighted objective
    ratio = weight / weight.mean()
    missed = (smooth_objective(unweighted.coef_.ravel(), X, y, ratio)
              + elastic_net_penalty(unweighted.coef_.ravel(), 0.05, 0.0) - exact.objective_) / exact.objective_
    assert gap < (1e-3 if solver == "vrspam" else 0.5) * missed


@pytest.mark.parametrize("solver", ["spam", "vrspam", "exact"])
def test_rows_of_weight_zero_are_rows_removed(solver):
    X, y = _data(n=200, d=4, seed=42)
    rng = np.random.default_rng(0)
    extra = rng.normal(scale=1e6, size=(30, 4))  # would set the column scales if counted
    X2, y2 = np.vstack([X, extra]), np.concatenate([y, rng.integers(0, 2, 30)])
    sw = np.concatenate([np.ones(200), np.zeros(30)])
    order = rng.permutation(230)
    kw = dict(solver=solver, max_iter=30, tol=1e-9, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # SPAM's 1/sqrt(k) steps
        removed = AUCClassifier(**kw).fit(X, y)
        weighted = AUCClassifier(**kw).fit(X2[order], y2[order], sample_weight=sw[order])
    # the kept rows come in another order, so the stochastic solvers draw other minibatches
    tol = {"exact": 1e-9, "vrspam": 1e-5, "spam": 2e-2}[solver]
    np.testing.assert_allclose(weighted.coef_, removed.coef_, rtol=tol * 10, atol=tol)
    assert weighted.objective_ == pytest.approx(removed.objective_, rel=tol)
    # the huge rows of weight 0 set neither the column scales nor the step nor the calibration
    assert weighted.step_size_ == removed.step_size_ or weighted.step_size_ == pytest.approx(removed.step_size_, rel=1e-9)
    np.testing.assert_allclose(weighted.predict_proba(X), removed.predict_proba(X), atol=tol * 10)


def test_a_class_held_only_by_rows_of_weight_zero_is_refused():
    X, y = _data(n=50, d=3, seed=43)
    sw = np.where(y == 1, 0.0, 1.0)
    for fit in (lambda c: c.fit(X, y, sample_weight=sw),):
        with pytest.raises(ValueError, match=r"rows of positive sample_weight hold only class 0 \(a row of "
                                             r"weight 0 is a row removed\)"):
            fit(AUCClassifier(solver="exact"))
    with pytest.raises(ValueError, match="sample_weight has negative entries"):
        AUCClassifier().fit(X, y, sample_weight=-np.ones(50))
    with pytest.raises(ValueError, match=r"sample_weight.shape == \(49,\), expected \(50,\)"):
        AUCClassifier().fit(X, y, sample_weight=np.ones(49))
    # refused alike whether or not scikit-learn refuses such weights itself
    with pytest.raises(ValueError, match=r"sample_weight is zero on all 50 rows: a row of weight 0 is a row removed, so no row is left"):
        AUCClassifier().fit(X, y, sample_weight=np.zeros(50))


def test_platt_with_integer_weights_equals_platt_on_repeated_rows():
    rng = np.random.default_rng(44)
    s = rng.normal(size=60)
    y = (rng.random(60) < 1 / (1 + np.exp(-2 * s))).astype(int)
    counts = rng.integers(1, 4, size=60)
    weighted = fit_platt(s, y, weight=counts.astype(float))
    repeated = fit_platt(np.repeat(s, counts), np.repeat(y, counts))
    assert weighted.slope == pytest.approx(repeated.slope, rel=1e-7)
    assert weighted.offset == pytest.approx(repeated.offset, rel=1e-7, abs=1e-9)


def test_weighted_stream_keeps_the_statistics_and_weights_of_repeated_rows():
    X, y, counts, _, _ = _weighted(n=300, d=4, seed=45)
    counts[:5] = 0
    weighted = AUCClassifier(random_state=0)
    repeated = AUCClassifier(random_state=0)
    for chunk in np.array_split(np.arange(300), 6):
        weighted.partial_fit(X[chunk], y[chunk], classes=[0, 1], sample_weight=counts[chunk])
        rep = np.repeat(chunk, counts[chunk])
        repeated.partial_fit(X[rep], y[rep], classes=[0, 1])
    a, b = weighted._stats, repeated._stats
    # the weighted stream's statistics are in units of its first chunk's mean weight
    unit = weighted._weight_unit
    assert unit == pytest.approx(counts[:50][counts[:50] > 0].mean())
    assert a.p == pytest.approx(b.p, rel=1e-12)
    assert (a.n_pos + a.n_neg) * unit == pytest.approx(counts.sum(), rel=1e-12)
    np.testing.assert_allclose(a.mean_pos, b.mean_pos, rtol=1e-10)
    np.testing.assert_allclose(a.mean_neg, b.mean_neg, rtol=1e-10)
    assert weighted.t_ == int((counts > 0).sum())
    # the reservoir keeps each row's weight for the calibration
    kept = weighted._reservoir
    assert kept.weight.shape == kept.y.shape and np.all(kept.weight >= 1)
    # both streams rank the data alike
    assert abs(roc_auc_score(y, weighted.decision_function(X))
               - roc_auc_score(y, repeated.decision_function(X))) < 0.01


@pytest.mark.parametrize("scale", [1e-200, 1e-155, 1e155, 1e250])
def test_weights_of_any_size_give_a_finite_calibration(scale):
    # the Newton system squared the weights' totals: NaN probabilities at 1e155, a division by
    # zero at 1e-200
    X, y = _data(n=300, d=4, seed=46)
    sw = np.random.default_rng(46).uniform(0.5, 2.0, 300)
    clf = AUCClassifier(solver="exact").fit(X, y, sample_weight=sw * scale)
    ref = AUCClassifier(solver="exact").fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(clf.coef_, ref.coef_, rtol=1e-9)
    proba = clf.predict_proba(X)
    assert np.isfinite(proba).all() and np.isfinite(clf.intercept_).all()
    if scale > 1:  # counts beyond 300 rows: the smoothing's extra row fades, the fit is the likelihood's
        assert np.corrcoef(proba[:, 1], ref.predict_proba(X)[:, 1])[0, 1] > 0.99
        assert roc_auc_score(y, proba[:, 1]) == pytest.approx(roc_auc_score(y, ref.predict_proba(X)[:, 1]))


def test_a_class_outweighing_the_other_beyond_float_precision_calibrates():
    # the smoothed positive rate rounded to 1: a division by zero in its log-odds
    X, y = _data(n=200, d=3, seed=47)
    sw = np.ones(200)
    sw[np.flatnonzero(y == 1)[0]] = 1e20
    clf = AUCClassifier(solver="exact").fit(X, y, sample_weight=sw)
    assert np.isfinite(clf.predict_proba(X)).all()
    cal = fit_platt(np.zeros(4), np.array([1, 0, 0, 0]), weight=np.array([1e20, 1.0, 1.0, 1.0]))
    assert cal.offset == pytest.approx(np.log((1e20 + 1) / 4))  # the smoothed prior's log-odds


@pytest.mark.parametrize("answer", [None, False])
def test_the_exact_solver_calls_the_callback_once_with_its_solution(answer):
    X, y = _data(n=300, seed=17)
    seen = []

    def callback(info):
        seen.append((info["n_iter"], info["coef"]))
        return answer  # False has nothing left to stop

    clf = AUCClassifier(solver="exact", alpha=0.05, callback=callback).fit(X, y)
    assert [n_iter for n_iter, _ in seen] == [1.0]
    np.testing.assert_array_equal(seen[0][1], clf.coef_.ravel())
    # the solution of the linear system itself, as the solver gives it on the raw columns
    np.testing.assert_allclose(clf.coef_.ravel(), solve_exact(X, y, 0.05, 0.0).coef, rtol=1e-8, atol=1e-12)
    assert clf.n_iter_ == 1
    seen[0][1][:] = 0.0  # a copy: the callback cannot change the model
    assert np.any(clf.coef_ != 0)


def test_vrspam_stopped_after_its_warm_start_returns_the_warm_start():
    X, y = _data(n=400, d=6, seed=5)
    stats = ClassStatistics.from_data(X, y)
    step = 1.0 / minibatch_smoothness(X, y, stats, 16)
    seen = []
    result = vrspam(X, y, stats, alpha=0.05, l1_ratio=0.0, step=step, max_iter=20, inner_iter=25, batch_size=16,
                    rng=np.random.default_rng(3), tol=0.0,
                    callback=lambda info: seen.append(info["n_iter"]) or False)
    assert seen == [1.0]
    assert result.stopped and not result.converged and result.n_passes == 1.0
    # one SPAM pass from zero with the same draws, by hand
    warm = spam_epoch(np.zeros(X.shape[1]), X, y, stats, step, 0.05, 0.0, 16, np.random.default_rng(3))
    np.testing.assert_array_equal(result.coef, warm)


def test_a_vrspam_fit_stopped_after_its_warm_start_is_the_warm_start_without_a_warning():
    X, y = _data(n=300, seed=17)
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # the user's choice, not a failure to converge
        clf = AUCClassifier(solver="vrspam", alpha=0.05, max_iter=20, tol=0.0, random_state=0,
                            callback=lambda info: seen.append(info["coef"]) or False).fit(X, y)
    assert len(seen) == 1 and clf.n_iter_ == 1
    np.testing.assert_array_equal(clf.coef_.ravel(), seen[0])
    # the same warm start as a fit of one pass, which does warn: its gap is far above tol
    with pytest.warns(ConvergenceWarning, match="VRSPAM reached max_iter=1"):
        one_pass = AUCClassifier(solver="vrspam", alpha=0.05, max_iter=1, tol=0.0, random_state=0).fit(X, y)
    np.testing.assert_array_equal(clf.coef_, one_pass.coef_)


@pytest.mark.parametrize("combine", [lambda X: X[:, 0], lambda X: 2.0 * X[:, 0] - X[:, 1]],
                         ids=["duplicate", "combination"])
def test_exactly_collinear_columns_and_a_tiny_alpha_warn_how_to_fix_it(combine):
    X, y = _data(n=300, d=5, seed=0)
    collinear = np.column_stack([X, combine(X)])
    with pytest.warns(scipy.linalg.LinAlgWarning,
                      match=r"ill-conditioned \(nearly collinear features and a small alpha\).*"
                            r"Increase alpha, or drop or combine collinear features") as record:
        clf = AUCClassifier(solver="exact", alpha=1e-18).fit(collinear, y)
    assert len([w for w in record if issubclass(w.category, scipy.linalg.LinAlgWarning)]) == 1
    # the least-squares solution it falls back to scores as the fit without the redundant column
    reference = AUCClassifier(solver="exact", alpha=1e-18).fit(X, y)
    assert np.all(np.isfinite(clf.coef_))
    np.testing.assert_allclose(clf.decision_function(collinear), reference.decision_function(X), atol=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning without a penalty (nothing to increase) or with a real one
        AUCClassifier(solver="exact", alpha=0.0).fit(collinear, y)
        AUCClassifier(solver="exact", alpha=1e-4).fit(collinear, y)


def test_weighted_stream_loss_is_that_of_the_repeated_rows():
    from skrate._auc_objective import stream_loss

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(50, 3)), (rng.random(50) < 0.4).astype(int)
    k = rng.integers(1, 5, 50)
    w = np.array([1.0, -2.0, 0.5])
    Xr, yr = np.repeat(X, k, axis=0), np.repeat(y, k)
    weighted = stream_loss(w, X, y, ClassStatistics.from_data(X, y, k.astype(float)), k.astype(float))
    assert weighted == pytest.approx(stream_loss(w, Xr, yr, ClassStatistics.from_data(Xr, yr)))
