"""Trimmed estimation: capped-simplex projection, SMART, concentration steps, estimators."""

import re
import warnings

import cvxpy as cp
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.validation import check_is_fitted

import skrate._trimmed
from skrate import TrimmedClassifier, TrimmedRegressor
from skrate._capped_simplex import project_capped_simplex
from skrate._smart import (
    TrimmedProblem,
    concentration_steps,
    hard_threshold,
    linear_loss,
    penalty_value,
    smart,
)


# ------------------------------------------------------------------ projection
@pytest.mark.parametrize("seed", range(6))
def test_capped_simplex_projection_matches_cvxpy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    v = rng.normal(scale=[0.3, 1.0, 5.0][seed % 3], size=n)
    if seed % 2:
        v = np.round(v)  # ties among entries and breakpoints
    h = float(rng.uniform(0.5, n - 0.5))
    v_before = v.copy()
    w = project_capped_simplex(v, h)
    x = cp.Variable(n)
    cp.Problem(cp.Minimize(cp.sum_squares(x - v)), [x >= 0, x <= 1, cp.sum(x) == h]).solve(
        solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12
    )
    np.testing.assert_allclose(w, x.value, atol=1e-6)
    assert np.all((w >= 0) & (w <= 1))
    assert w.sum() == pytest.approx(h, abs=1e-9)
    np.testing.assert_array_equal(v, v_before)


def test_capped_simplex_projection_edges_and_kkt():
    rng = np.random.default_rng(0)
    v = rng.normal(size=50)
    np.testing.assert_array_equal(project_capped_simplex(v, 0), np.zeros(50))
    np.testing.assert_array_equal(project_capped_simplex(v, 50), np.ones(50))
    # points inside the set are fixed
    inside = project_capped_simplex(v, 17.0)
    np.testing.assert_allclose(project_capped_simplex(inside, 17.0), inside, atol=1e-12)
    # KKT: w = clip(v - tau) with one tau for all fractional entries
    frac = (inside > 1e-12) & (inside < 1 - 1e-12)
    assert np.ptp((v - inside)[frac]) < 1e-9
    # large steps on integers h select the h largest entries
    np.testing.assert_array_equal(
        project_capped_simplex(1e6 * v, 10) == 1, np.isin(np.arange(50), np.argsort(v)[-10:])
    )
    with pytest.raises(ValueError, match="h <= n"):
        project_capped_simplex(v, 51)


# ------------------------------------------------------------------ losses / prox
@pytest.mark.parametrize("loss,K", [("squared", 1), ("logistic", 1), ("multinomial", 4)])
def test_loss_derivative_matches_finite_differences(loss, K):
    rng = np.random.default_rng(1)
    m = 7
    S = rng.normal(size=(m, K))
    if loss == "squared":
        Y = rng.normal(size=m)
    elif loss == "logistic":
        Y = rng.choice([-1.0, 1.0], size=m)
    else:
        Y = np.eye(K)[rng.integers(0, K, size=m)]
    f, D = linear_loss(loss, S, Y)
    eps = 1e-6
    for k in range(K):
        E = np.zeros_like(S)
        E[:, k] = eps
        fd = (linear_loss(loss, S + E, Y)[0] - linear_loss(loss, S - E, Y)[0]) / (2 * eps)
        np.testing.assert_allclose(D[:, k], fd, rtol=1e-6, atol=1e-8)
    if loss == "multinomial":  # against the textbook formula
        ref = np.log(np.exp(S).sum(axis=1)) - (S * Y).sum(axis=1)
        np.testing.assert_allclose(f, ref)


def test_hard_threshold_is_the_l0_prox():
    v = np.linspace(-3, 3, 61)
    t = 0.8
    grid = np.linspace(-4, 4, 80001)
    grid = np.concatenate([grid, [0.0]])
    for vi, pi in zip(v, hard_threshold(v, t)):
        obj = 0.5 * (grid - vi) ** 2 + t * (grid != 0)
        best = grid[np.argmin(obj)]
        # away from the tie |v| = sqrt(2 t) the minimiser is unique
        if abs(abs(vi) - np.sqrt(2 * t)) > 1e-3:
            assert pi == pytest.approx(best, abs=1e-4)


# ------------------------------------------------------------------ data
def _regression_with_outliers(seed=0, n=300, d=5, frac=0.2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    coef = rng.uniform(1, 3, size=d) * rng.choice([-1, 1], size=d)
    y = X @ coef + 0.5 + 0.05 * rng.normal(size=n)
    out = rng.choice(n, int(frac * n), replace=False)
    y[out] += rng.choice([-1, 1], size=out.size) * rng.uniform(20, 40, size=out.size)
    return X, y, coef, out


def _classification_with_flips(seed=0, n=400, d=4, n_classes=2, frac=0.1):
    rng = np.random.default_rng(seed)
    centers = 3.0 * rng.normal(size=(n_classes, d))
    y = rng.integers(0, n_classes, size=n)
    X = centers[y] + rng.normal(size=(n, d))
    flip = rng.choice(n, int(frac * n), replace=False)
    y_noisy = y.copy()
    y_noisy[flip] = (y[flip] + rng.integers(1, n_classes, size=flip.size)) % n_classes
    return X, y_noisy, flip


SMART_VARIANTS = [
    {"variance_reduction": "saga"},
    {"variance_reduction": "svrg"},
    {"variance_reduction": "saga", "block": "random"},
    {"variance_reduction": "svrg", "weight_step": 1.0},
    {"solver": "alternating"},
]


# ------------------------------------------------------------------ recovery
@pytest.mark.parametrize("params", SMART_VARIANTS)
def test_regressor_recovers_inliers_and_coefficients(params):
    X, y, coef, out = _regression_with_outliers()
    reg = TrimmedRegressor(trim_fraction=0.25, alpha=0.0, random_state=0, **params).fit(X, y)
    assert reg.n_inliers_ == 225
    assert not reg.inlier_mask_[out].any()
    assert reg.inlier_mask_.sum() == 225
    np.testing.assert_allclose(reg.coef_, coef, atol=0.03)
    assert reg.intercept_ == pytest.approx(0.5, abs=0.03)
    # a fixed point: the model is the least-squares fit on its own kept samples
    ref = Ridge(alpha=0.0).fit(X[reg.inlier_mask_], y[reg.inlier_mask_])
    np.testing.assert_allclose(reg.coef_, ref.coef_, atol=2e-3)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("params", SMART_VARIANTS[:2] + SMART_VARIANTS[-1:])
def test_classifier_trims_flipped_labels(n_classes, params):
    X, y, flip = _classification_with_flips(n_classes=n_classes)
    alpha = 1e-2
    clf = TrimmedClassifier(
        trim_fraction=0.12, alpha=alpha, random_state=0, tol=1e-6, max_iter=300, **params
    ).fit(X, y)
    h = clf.n_inliers_
    assert clf.inlier_mask_.sum() == h
    # nearly every flipped label is trimmed
    assert clf.inlier_mask_[flip].mean() < 0.1
    # the model is the penalised logistic fit on its own kept samples:
    # (1/h) sum log-loss + alpha/2 ||coef||^2  <=>  C = 1 / (alpha h)
    ref = LogisticRegression(C=1.0 / (alpha * h), tol=1e-10, max_iter=10000)
    ref.fit(X[clf.inlier_mask_], y[clf.inlier_mask_])
    np.testing.assert_allclose(clf.coef_, ref.coef_, rtol=0.01, atol=0.03)
    np.testing.assert_allclose(clf.intercept_, ref.intercept_, rtol=0.01, atol=0.03)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[np.argmax(proba, axis=1)])


def test_smart_and_concentration_steps_reach_the_same_objective():
    X, y, _, _ = _regression_with_outliers(seed=3)
    P = TrimmedProblem(X, y, "squared", 240.0, "l2", 1e-3, True)
    a = smart(P, tol=1e-8, max_iter=300, rng=np.random.default_rng(0))
    b = concentration_steps(P)
    assert a.objective[-1] == pytest.approx(b.objective[-1], rel=1e-4)
    np.testing.assert_array_equal(a.weights, b.weights)


# ------------------------------------------------------------------ objective
@pytest.mark.parametrize(
    "loss,params",
    [
        ("squared", {"variance_reduction": "saga"}),
        ("squared", {"variance_reduction": "svrg", "block": "random"}),
        ("multinomial", {"variance_reduction": "saga", "weight_step": 0.5}),
        ("logistic", {"variance_reduction": "svrg"}),
    ],
)
def test_smart_objective_decreases_monotonically(loss, params):
    if loss == "squared":
        X, y, _, _ = _regression_with_outliers(seed=1)
        Y = y
    else:
        X, y, _ = _classification_with_flips(seed=1, n_classes=3 if loss == "multinomial" else 2)
        Y = np.eye(3)[y] if loss == "multinomial" else np.where(y == 1, 1.0, -1.0)
    h = 0.8 * X.shape[0]
    P = TrimmedProblem(X, Y, loss, h, "l1", 1e-3, True)
    fit = smart(P, max_iter=40, tol=0, rng=np.random.default_rng(0), batch_size=16, **params)
    obj = np.asarray(fit.objective)
    assert len(obj) > 5
    assert np.all(np.diff(obj) <= 1e-12 * obj[0])
    assert obj[-1] < 0.5 * obj[0]
    # the recorded value is the trimmed objective at the returned point
    assert obj[-1] == pytest.approx(P.objective(fit.coef, fit.intercept, fit.weights), rel=1e-12)


def test_full_batch_smart_is_monotone_at_every_step_without_safeguard():
    # batch = n: SAGA and SVRG reduce to prox-gradient with step 1/L_full, and the
    # weight block to exact minimisation, each of which cannot increase the
    # objective; an epoch is one step here, and every one must be accepted.
    X, y, _, _ = _regression_with_outliers(seed=2, n=120)
    P = TrimmedProblem(X, y, "squared", 100.0, "l2", 1e-2, True)
    L_full, _ = P.lipschitz()
    fit = smart(
        P,
        batch_size=120,
        max_iter=60,
        tol=0,
        step_size=1.0 / L_full,
        step_growth=1.0,
        rng=np.random.default_rng(0),
    )
    obj = np.asarray(fit.objective)
    assert len(obj) == fit.n_iter + 1  # no epoch was rejected
    assert fit.n_iter > 10
    assert np.all(np.diff(obj) <= 1e-12 * obj[0])


@pytest.mark.parametrize("solver", ["smart", "alternating"])
def test_final_objective_is_sum_of_h_smallest_losses(solver):
    X, y, _, _ = _regression_with_outliers(seed=4)
    reg = TrimmedRegressor(n_inliers=230, alpha=1e-3, solver=solver, random_state=0).fit(X, y)
    r2 = 0.5 * (y - reg.predict(X)) ** 2
    expected = np.sort(r2)[:230].sum() / 230 + 1e-3 * 0.5 * reg.coef_ @ reg.coef_
    assert isinstance(reg.objective_, float)
    assert reg.objective_ == pytest.approx(expected, rel=1e-8)
    assert set(np.flatnonzero(reg.inlier_mask_)) == set(np.argsort(r2)[:230])
    # the path starts at the initial point, ends at objective_ and never increases
    path = reg.objective_path_
    assert path.ndim == 1 and path.size >= 2
    assert path[-1] == reg.objective_
    assert np.all(np.diff(path) <= 1e-12 * path[0])
    assert path[0] > reg.objective_


# ------------------------------------------------------------------ convergence
@pytest.mark.parametrize("Est", [TrimmedRegressor, TrimmedClassifier])
@pytest.mark.parametrize(
    "params",
    [{"variance_reduction": "saga"}, {"variance_reduction": "svrg"}, {"solver": "alternating"}],
)
def test_stopping_at_max_iter_warns_naming_max_iter_and_tol(Est, params):
    if Est is TrimmedRegressor:
        X, y, _, _ = _regression_with_outliers(seed=7)
    else:
        X, y, _ = _classification_with_flips(seed=7, n_classes=3)
    est = Est(max_iter=1, random_state=0, **params)
    with pytest.warns(ConvergenceWarning, match=r"max_iter=1\b.*tol="):
        est.fit(X, y)
    assert est.n_iter_ == 1
    check_is_fitted(est)  # a warning, not a failure: the fit is usable
    # given enough iterations the same fit meets its stopping test silently
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        converged = Est(max_iter=300, random_state=0, **params).fit(X, y)
    assert converged.n_iter_ < 300


# ------------------------------------------------------------------ penalties
@pytest.mark.parametrize("solver", ["smart", "alternating"])
@pytest.mark.parametrize("penalty", ["l1", "l0"])
def test_sparse_penalties_zero_out_irrelevant_features(penalty, solver):
    rng = np.random.default_rng(5)
    n, d = 300, 12
    X = rng.normal(size=(n, d))
    coef = np.zeros(d)
    coef[:3] = [3.0, -2.0, 1.5]
    y = X @ coef + 0.1 * rng.normal(size=n)
    y[:30] += 30.0
    alpha = 0.05 if penalty == "l1" else 0.02
    reg = TrimmedRegressor(
        trim_fraction=0.15, penalty=penalty, alpha=alpha, solver=solver, random_state=0
    )
    reg.fit(X, y)
    np.testing.assert_array_equal(reg.coef_ != 0, coef != 0)
    assert not reg.inlier_mask_[:30].any()
    tol = 0.1 if penalty == "l1" else 0.03  # l1 shrinks by ~alpha; l0 does not
    np.testing.assert_allclose(reg.coef_, coef, atol=tol)
    assert penalty_value(penalty, reg.coef_[:, None]) > 0
    if penalty == "l1":
        # a fixed point: the lasso on its own kept samples (cvxpy reference)
        keep = reg.inlier_mask_
        c, c0 = cp.Variable(d), cp.Variable()
        h = keep.sum()
        cp.Problem(
            cp.Minimize(cp.sum_squares(X[keep] @ c + c0 - y[keep]) / (2 * h) + alpha * cp.norm1(c))
        ).solve(solver="CLARABEL")
        np.testing.assert_allclose(reg.coef_, c.value, atol=2e-3)
        assert reg.intercept_ == pytest.approx(c0.value, abs=2e-3)


# ------------------------------------------------------------------ estimator API
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # well separated
def test_estimators_do_not_modify_inputs_and_keep_labels():
    X, y, _ = _classification_with_flips(n_classes=3)
    labels = np.array(["ant", "bee", "cat"])[y]
    X0, l0 = X.copy(), labels.copy()
    clf = TrimmedClassifier(random_state=0).fit(X, labels)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(labels, l0)
    assert set(clf.predict(X)) <= set(clf.classes_)
    assert clf.coef_.shape == (3, 4) and clf.intercept_.shape == (3,)
    assert clf.decision_function(X).shape == (400, 3)
    w = clf.sample_weights_
    assert np.all((w >= 0) & (w <= 1)) and w.sum() == pytest.approx(clf.n_inliers_)
    assert clf.score(X, labels) > 0.8


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # max_iter=5
def test_random_state_makes_fits_reproducible():
    X, y, _, _ = _regression_with_outliers(seed=6)
    a = TrimmedRegressor(random_state=3, max_iter=5).fit(X, y)
    b = TrimmedRegressor(random_state=3, max_iter=5).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)


@pytest.mark.parametrize("value", [1.0, -0.1, 1.5])
def test_trim_fraction_out_of_range_names_the_parameter(value):
    X, y, _, _ = _regression_with_outliers()
    with pytest.raises(InvalidParameterError, match="trim_fraction"):
        TrimmedRegressor(trim_fraction=value).fit(X, y)


def test_too_many_inliers_names_the_parameter():
    X, y, _, _ = _regression_with_outliers(n=50)
    with pytest.raises(ValueError, match="n_inliers=60"):
        TrimmedRegressor(n_inliers=60).fit(X, y)


@pytest.mark.parametrize("Est", [TrimmedRegressor, TrimmedClassifier])
def test_nan_is_rejected(Est):
    X, y, _ = _classification_with_flips()
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        Est().fit(X, y)


def _no_solver(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("the solver ran")

    monkeypatch.setattr(skrate._trimmed, "smart", fail)
    monkeypatch.setattr(skrate._trimmed, "concentration_steps", fail)


@pytest.mark.parametrize("solver", ["smart", "alternating"])
def test_trimming_as_many_as_the_smaller_class_is_rejected_before_solving(solver, monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.zeros(60, dtype=np.int64)
    y[:4] = 1  # 4 samples of class 1 and 12 trimmed: class 0 alone could be kept
    X[:4] += 5.0  # even a well separated minority class
    with monkeypatch.context() as m:
        _no_solver(m)
        with pytest.raises(ValueError) as err:
            TrimmedClassifier(trim_fraction=0.2, solver=solver).fit(X, y)
        msg = str(err.value)
        assert "trim_fraction=0.2 trims 12 of the 60" in msg
        assert "all 4 samples of class 1:" in msg and "np." not in msg
        with pytest.raises(ValueError, match=r"n_inliers of at least 57"):
            TrimmedClassifier(n_inliers=56, solver=solver).fit(X, y)
    # the suggested value works
    k, n = map(int, re.search(r"trim_fraction below (\d+)/(\d+)", msg).groups())
    params = dict(solver=solver, alpha=1e-2, max_iter=500, random_state=0)
    clf = TrimmedClassifier(trim_fraction=(k - 1) / n, **params).fit(X, y)
    assert clf.inlier_mask_[:4].any() and clf.inlier_mask_[4:].any()
    TrimmedClassifier(n_inliers=57, **params).fit(X, y)


def test_keeping_no_more_than_the_largest_class_is_rejected_before_solving(monkeypatch):
    _no_solver(monkeypatch)
    X = np.random.default_rng(1).normal(size=(60, 2))
    y = np.repeat(["a", "b", "c"], [50, 5, 5])
    with pytest.raises(ValueError, match=r"all 10 samples of the classes other than a:"):
        TrimmedClassifier(trim_fraction=0.2).fit(X, y)


def _class_lost_in_the_noise(seed=0):
    """Two clear classes and 5 scattered samples of a third: trimming takes all of those."""
    rng = np.random.default_rng(seed)
    X = np.vstack(
        [rng.normal(size=(100, 2)) + [4, 0], rng.normal(size=(100, 2)) - [4, 0],
         rng.normal(scale=3, size=(5, 2))]
    )
    y = np.repeat(np.array([0, 1, 2], dtype=np.int64), [100, 100, 5])
    return X, y


@pytest.mark.parametrize("solver", ["smart", "alternating"])
def test_a_class_trimmed_by_the_fit_is_an_error_that_leaves_no_fitted_state(solver):
    X, y = _class_lost_in_the_noise()
    clf = TrimmedClassifier(
        trim_fraction=0.05, alpha=1e-2, max_iter=500, solver=solver, random_state=0
    )
    clf.fit(*_classification_with_flips(n_classes=3)[:2])  # a successful fit first
    with pytest.raises(ValueError) as err:
        clf.fit(X, y)
    msg = str(err.value)
    assert "trimmed all 5 samples of class 2 (trim_fraction=0.05 trims 10 of the 205" in msg
    assert "np." not in msg
    # no attribute of either fit survives: not a mix of old coefficients and new classes
    with pytest.raises(NotFittedError):
        check_is_fitted(clf)
    assert not any(k.endswith("_") and not k.startswith("__") for k in vars(clf))
    # the suggested value keeps every class
    k, n = map(int, re.search(r"trim_fraction below (\d+)/(\d+)", msg).groups())
    clf.set_params(trim_fraction=(k - 1) / n).fit(X, y)
    assert set(y[clf.inlier_mask_]) == {0, 1, 2}


def test_refit_with_other_classes_replaces_every_attribute():
    X3, y3 = _classification_with_flips(n_classes=3)[:2]
    clf = TrimmedClassifier(alpha=1e-2, random_state=0).fit(X3, y3)
    X2, y2 = _classification_with_flips(seed=1, n=100, d=2)[:2]
    clf.fit(X2, y2 + 5)
    np.testing.assert_array_equal(clf.classes_, [5, 6])
    assert clf.coef_.shape == (1, 2) and clf.intercept_.shape == (1,)
    assert clf.sample_weights_.shape == (100,) and clf.n_features_in_ == 2
    assert set(clf.predict(X2)) <= {5, 6}


def test_one_class_is_an_error():
    X = np.random.default_rng(0).normal(size=(10, 2))
    clf = TrimmedClassifier()
    with pytest.raises(ValueError, match=r"at least 2 classes; y has 1 class \(1.0\)"):
        clf.fit(X, np.ones(10))
    with pytest.raises(NotFittedError):
        check_is_fitted(clf)
