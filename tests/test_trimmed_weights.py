"""Sample weights in trimmed estimation: capped weights in the projection, the exact weight
block and the trimmed location, and the estimators' weighted fits."""

import warnings

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import linprog
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import cross_validate
from sklearn.utils.validation import has_fit_parameter

import skrate._smart
from skrate import TrimmedClassifier, TrimmedRegressor
from skrate._capped_simplex import project_capped_simplex
from skrate._trimmed_location import trimmed_location
from skrate._trimmed_problem import TrimmedProblem


def _weights(rng, n, whole=False):
    return rng.integers(1, 4, n).astype(float) if whole else rng.uniform(0.2, 3.0, n)


# ------------------------------------------------------------------ projection
@pytest.mark.parametrize("seed", range(6))
def test_projection_with_caps_and_floors_matches_cvxpy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 40))
    caps = _weights(rng, n, whole=seed % 3 == 0)
    groups = rng.integers(0, 3, size=n)
    groups[:3] = [0, 1, 2]
    mass = np.bincount(groups, weights=caps)
    floors = None if seed % 2 else rng.uniform(0, mass)
    v = rng.normal(scale=3.0, size=n)
    if seed % 3 == 1:
        v[0] = -1e300  # a step along an inf loss: projects to 0 all the same
    least = 0.0 if floors is None else floors.sum()
    h = float(rng.uniform(least, caps.sum()))
    w = project_capped_simplex(v, h, None if floors is None else groups, floors, upper=caps)
    x = cp.Variable(n)
    cons = [x >= 0, x <= caps, cp.sum(x) == h]
    if floors is not None:
        cons += [cp.sum(x[groups == k]) >= floors[k] for k in range(3)]
    target = np.maximum(v, -1e3)  # same projection; keeps cvxpy's problem well scaled
    cp.Problem(cp.Minimize(cp.sum_squares(x - target)), cons).solve(
        solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12
    )
    np.testing.assert_allclose(w, x.value, atol=1e-5)
    assert np.all(w >= 0) and np.all(w <= caps) and w.sum() == pytest.approx(h, abs=1e-9)
    np.testing.assert_array_equal(project_capped_simplex(v, caps.sum(), upper=caps), caps)
    with pytest.raises(ValueError, match=r"h <= sum\(upper\)"):
        project_capped_simplex(v, caps.sum() + 1.0, upper=caps)


# ------------------------------------------------------------------ exact weight block
@pytest.mark.parametrize("seed", range(8))
def test_capped_weight_block_solves_the_linear_program(seed):
    rng = np.random.default_rng(seed)
    n = 30
    groups = np.repeat([0, 1, 2], [18, 8, 4])
    caps = _weights(rng, n, whole=seed % 2 == 0)
    mass = np.bincount(groups, weights=caps)
    floors = mass / 2.0 if seed % 4 < 2 else None
    losses = rng.exponential(size=n) * np.where(groups == 0, 1.0, 5.0)  # small groups worse
    if seed % 3 == 0:
        losses = np.round(losses)  # ties
    h = float(0.8 * caps.sum())
    P = TrimmedProblem(np.zeros((n, 1)), np.zeros(n), "squared", h, groups=groups, floors=floors, caps=caps)
    w, _, top, low = P.greedy(losses, bounds=True)
    A_ub, b_ub = (None, None) if floors is None else (-np.eye(3)[groups].T, -floors)
    res = linprog(losses, A_ub=A_ub, b_ub=b_ub, A_eq=np.ones((1, n)), b_eq=[h], bounds=list(zip(0 * caps, caps)))
    assert w @ losses == pytest.approx(res.fun, rel=1e-10)
    assert np.all(w >= 0) and np.all(w <= caps) and w.sum() == pytest.approx(h, rel=1e-12)
    if floors is not None:
        assert np.all(np.bincount(groups, weights=w) >= floors * (1 - 1e-12))
    # the bounds: the largest loss kept at all, the least with weight left to take
    assert top == losses[w > 0].max() and low == losses[w < caps].min()
    assert np.count_nonzero((w > 0) & (w < caps)) <= 1 + (0 if floors is None else 3)


@pytest.mark.parametrize("c1, c2, floor", [(1.58, 2.86, 1.99), (0.4, 1.24, 0.57)])
def test_a_row_a_floor_keeps_in_part_and_the_rest_fills_is_kept_to_its_cap(c1, c2, floor):
    # Group 0's floor takes row 0 in full and row 1 in part, the rest's mass then fills row 1
    # and takes row 2 in part. Row 1 must end at its cap exactly: in floating point the floor's
    # share plus the spare left above it is its cap give or take a unit in the last place,
    # which would put it above its cap or count it as a row with weight left to take (and its
    # loss as the least trimmed one).
    caps = np.array([c1, c2, 1.0, 1.0])
    losses = np.array([0.1, 0.2, 0.3, 0.4])
    h = c1 + c2 + 0.5
    P = TrimmedProblem(np.zeros((4, 1)), np.zeros(4), "squared", h, groups=np.array([0, 0, 1, 1]),
                       floors=np.array([floor, 0.0]), caps=caps)
    w, _, top, low = P.greedy(losses, bounds=True)
    np.testing.assert_array_equal(w[:2], caps[:2])
    assert w[2] == pytest.approx(0.5) and w[3] == 0.0
    assert np.all(w <= caps) and w.sum() == pytest.approx(h, rel=1e-12)
    assert top == 0.3 and low == 0.3  # row 2 is kept in part: the least with weight to take


def test_lipschitz_constants_with_caps_scale_each_row_by_its_cap():
    # A row's weight is at most its cap, so its term (n/h) w_i f_i has a gradient Lipschitz
    # constant of (n/h) cap_i times the largest eigenvalue of its Hessian; L_terms is their root
    # mean square. L_full bounds the Hessian of (1/h) sum_i w_i f_i over the capped simplex, that
    # of w = caps, which whole caps share with repeated rows.
    rng = np.random.default_rng(0)
    n, h = 40, 20.0
    X = rng.normal(size=(n, 3)) * [1.0, 5.0, 0.2] + [0.0, 3.0, 0.0]
    y = rng.normal(size=n)
    caps = rng.integers(1, 4, n).astype(float)
    L_full, L_terms = TrimmedProblem(X, y, "squared", h, caps=caps).lipschitz()
    Z = np.hstack([X, np.ones((n, 1))])
    per_row = [n / h * np.linalg.eigvalsh(c * np.outer(z, z))[-1] for z, c in zip(Z, caps)]
    assert L_terms == pytest.approx(np.sqrt(np.mean(np.square(per_row))), rel=1e-10)
    assert L_full == pytest.approx(np.linalg.eigvalsh((caps[:, None] * Z).T @ Z)[-1] / h,
                                   rel=1e-10)
    rows = np.repeat(np.arange(n), caps.astype(int))
    repeated = TrimmedProblem(X[rows], y[rows], "squared", h).lipschitz()
    assert L_full == pytest.approx(repeated[0], rel=1e-10)


def test_capped_weight_block_with_whole_caps_keeps_what_repeated_rows_keep():
    # a row of cap k is k repeated rows: the mass kept per row equals the repeated rows kept
    rng = np.random.default_rng(0)
    for trial in range(200):
        n = int(rng.integers(2, 40))
        caps = rng.integers(1, 4, n).astype(float)
        losses = rng.integers(0, 5, n).astype(float) if trial % 2 else rng.random(n)
        h = int(rng.integers(1, caps.sum() + 1))
        P = TrimmedProblem(np.zeros((n, 1)), np.zeros(n), "squared", float(h), caps=caps)
        rows = np.repeat(np.arange(n), caps.astype(int))
        R = TrimmedProblem(np.zeros((rows.size, 1)), np.zeros(rows.size), "squared", float(h))
        repeated = np.bincount(rows, weights=R.keep_smallest(losses[rows]), minlength=n)
        kept = P.keep_smallest(losses)
        # equal losses may share the cut otherwise: compare the objective and each loss level
        assert kept @ losses == pytest.approx(repeated @ losses, rel=1e-12)
        for value in np.unique(losses):
            assert kept[losses == value].sum() == pytest.approx(repeated[losses == value].sum())


# ------------------------------------------------------------------ trimmed location
@pytest.mark.parametrize("centre", [True, False])
def test_weighted_trimmed_location_equals_that_of_repeated_values(centre):
    rng = np.random.default_rng(3)
    for _ in range(50):
        n = int(rng.integers(3, 30))
        y = rng.standard_t(2, size=n) * 10
        s = rng.integers(1, 5, n)
        h = int(rng.integers(1, s.sum() + 1))
        expected = trimmed_location(np.repeat(y, s), h, centre=centre)
        got = trimmed_location(y, float(h), centre=centre, weights=s.astype(float))
        if centre and h <= s.max():  # windows of one value, spread 0: rounding picks one
            assert got[1] == pytest.approx(0.0, abs=1e-6) and np.isclose(y[s >= h], got[0]).any()
            continue
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def test_weighted_trimmed_location_is_the_least_spread_window():
    # fractional masses: no window of mass h (a grid of starts, both ends in part) spreads less
    rng = np.random.default_rng(4)
    for _ in range(20):
        n = 12
        y, s = np.sort(rng.normal(size=n) * 3), rng.uniform(0.1, 2.0, n)
        h = float(0.6 * s.sum())
        loc, scale = trimmed_location(y, h, weights=s)
        C = np.concatenate([[0.0], np.cumsum(s)])
        best = np.inf
        for a in np.linspace(0, C[-1] - h, 2001):
            mass = np.clip(np.minimum(C[1:], a + h) - np.maximum(C[:-1], a), 0, None)
            mean = mass @ y / h
            best = min(best, mass @ (y - mean) ** 2 / h)
        assert scale**2 <= best + 1e-12
        assert scale**2 >= best - 1e-2 * best  # the grid comes close to the least


# ------------------------------------------------------------------ estimators
def _regression(seed=0, n=120, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X @ np.arange(1.0, d + 1) + 0.3 * rng.normal(size=n)
    y[: n // 10] += 30.0
    return X, y


def _classes(seed=0, n=150, k=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    X = 2.0 * rng.normal(size=(k, 2))[y] + rng.normal(size=(n, 2))
    flip = rng.choice(n, n // 10, replace=False)
    y[flip] = (y[flip] + 1) % k
    return X, y


def _tight(Est, **params):
    return Est(solver="alternating", tol=1e-10, max_iter=200, **params)


@pytest.mark.parametrize("Est,data", [(TrimmedRegressor, _regression), (TrimmedClassifier, _classes)])
def test_whole_weights_fit_as_repeated_rows(Est, data):
    X, y = data()
    s = np.random.default_rng(1).integers(0, 4, len(y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a refit short of 1e-10 by rounding
        weighted = _tight(Est).fit(X, y, sample_weight=s)
        repeated = _tight(Est).fit(np.repeat(X, s, axis=0), np.repeat(y, s))
    assert weighted.n_inliers_ == repeated.n_inliers_
    assert weighted.objective_ == pytest.approx(repeated.objective_, rel=1e-9)
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, rtol=1e-5, atol=1e-6)
    # the share kept of each row is the share of its repeats kept; rows of weight 0 keep none
    rows = np.repeat(np.arange(len(y)), s)
    share = np.bincount(rows, weights=repeated.sample_weights_, minlength=len(y))[s > 0] / s[s > 0]
    np.testing.assert_allclose(weighted.sample_weights_[s > 0], share, atol=1e-9)
    assert np.all(weighted.sample_weights_[s == 0] == 0)


@pytest.mark.parametrize("solver", ["smart", "alternating"])
def test_fractional_weights_give_a_solution_of_the_weighted_problem(solver):
    X, y = _regression(2)
    s = np.random.default_rng(2).uniform(0.1, 3.0, len(y))
    reg = TrimmedRegressor(solver=solver, alpha=1e-3, tol=1e-8, random_state=0).fit(X, y, sample_weight=s)
    v = s * reg.sample_weights_  # the weight kept of each row
    assert v.sum() == pytest.approx(0.9 * s.sum(), rel=1e-9) and reg.n_inliers_ == pytest.approx(0.9 * s.sum())
    # the weights are the best for the model: every row kept has a loss at most that of
    # every row with weight left to take
    r2 = (y - reg.predict(X)) ** 2
    assert r2[v > 0].max() <= r2[reg.sample_weights_ < 1].min() + 1e-9
    # the model is the weighted ridge fit of the rows as kept (cvxpy)
    c, c0 = cp.Variable(X.shape[1]), cp.Variable()
    data = cp.sum(cp.multiply(v, cp.square(X @ c + c0 - y))) / (2 * v.sum())
    cp.Problem(cp.Minimize(data + 1e-3 * cp.sum_squares(c) / 2)).solve(solver="CLARABEL")
    np.testing.assert_allclose(reg.coef_, c.value, rtol=1e-4, atol=1e-5)
    # the outliers, whatever their weight, are trimmed
    assert not reg.inlier_mask_[: len(y) // 10].any()


def test_fractional_weights_are_scale_free():
    X, y = _classes(3, k=2)
    s = np.random.default_rng(3).uniform(0.5, 2.0, len(y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = _tight(TrimmedClassifier).fit(X, y, sample_weight=s)
        b = _tight(TrimmedClassifier).fit(X, y, sample_weight=3.7 * s)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a.sample_weights_, b.sample_weights_, atol=1e-9)
    assert b.n_inliers_ == pytest.approx(3.7 * a.n_inliers_)


def test_weighted_classifier_keeps_half_of_every_class_weight():
    X, y = _classes(4)
    s = np.where(y == 2, 0.05, 1.3)  # class 2 nearly weightless
    clf = TrimmedClassifier(trim_fraction=0.4, random_state=0).fit(X, y, sample_weight=s)
    kept = np.bincount(y, weights=s * clf.sample_weights_)
    assert np.all(kept >= np.bincount(y, weights=s) / 2 * (1 - 1e-9))
    assert kept.sum() == pytest.approx(0.6 * s.sum())


def test_weights_of_one_and_of_zero_fit_as_no_weights_and_removed_rows():
    X, y = _regression(5)
    s = np.ones(len(y))
    s[::7] = 0
    a = TrimmedRegressor(random_state=0).fit(X, y, sample_weight=s)
    b = TrimmedRegressor(random_state=0).fit(X[s > 0], y[s > 0])
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.sample_weights_[s > 0], b.sample_weights_)
    assert not a.sample_weights_[s == 0].any() and a.n_inliers_ == b.n_inliers_


def test_finite_weight_step_reaches_the_exact_block_objective():
    X, y = _regression(6)
    s = np.random.default_rng(6).uniform(0.5, 2.0, len(y))
    exact = TrimmedRegressor(tol=1e-8, random_state=0).fit(X, y, sample_weight=s)
    stepped = TrimmedRegressor(weight_step=1.0, tol=1e-8, max_iter=500, random_state=0).fit(X, y, sample_weight=s)
    assert stepped.objective_ == pytest.approx(exact.objective_, rel=1e-6)


def test_weighted_smart_needs_no_incremental_selection(monkeypatch):
    # from _KEPT_SET_MIN_ROWS rows on the unweighted block is kept incrementally; with caps the
    # full selection runs, so the size threshold cannot change a weighted fit
    X, y = _regression(7)
    s = np.random.default_rng(7).uniform(0.5, 2.0, len(y))
    a = TrimmedRegressor(random_state=0).fit(X, y, sample_weight=s)
    monkeypatch.setattr(skrate._smart, "_KEPT_SET_MIN_ROWS", 0)
    b = TrimmedRegressor(random_state=0).fit(X, y, sample_weight=s)
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_sample_weight_reaches_fit_through_meta_estimators():
    X, y = _classes(8, k=2)
    s = np.where(np.arange(len(y)) % 2, 1.0, 2.0)
    assert has_fit_parameter(TrimmedClassifier(), "sample_weight")
    res = cross_validate(TrimmedClassifier(random_state=0), X, y, params={"sample_weight": s}, cv=3,
                         return_estimator=True)
    assert all(est.n_inliers_ != int(est.n_inliers_) or est.n_inliers_ > 0 for est in res["estimator"])
    assert np.all(res["test_score"] > 0.7)


# ------------------------------------------------------------------ errors
def test_weighted_errors_name_the_input_and_the_fix():
    X, y = _classes(9)
    s = np.ones(len(y))
    s[y == 2] = 0.0
    with pytest.raises(ValueError, match=r"classes \[2\] have no rows of positive sample_weight"):
        TrimmedClassifier().fit(X, y, sample_weight=s)
    with pytest.raises(ValueError, match="at least two classes with positive sample_weight"):
        TrimmedClassifier().fit(X, y, sample_weight=(y == 1).astype(float))
    frac = np.full(len(y), 0.5)
    with pytest.raises(ValueError, match="trim_fraction of at most 0.5"):
        TrimmedClassifier(trim_fraction=0.6).fit(X, y, sample_weight=frac)
    with pytest.raises(ValueError, match=r"samples counted by sample_weight.*Use trim_fraction below"):
        TrimmedClassifier(trim_fraction=0.6).fit(X, y, sample_weight=2 * np.ones(len(y)))
    with pytest.raises(ValueError, match="exceeds the total sample_weight 75"):
        TrimmedRegressor(n_inliers=100).fit(X, y.astype(float), sample_weight=frac)
    with pytest.raises(ValueError, match="negative"):
        TrimmedRegressor().fit(X, y.astype(float), sample_weight=-frac)
    frozen = frac.copy()
    TrimmedRegressor(n_inliers=60).fit(X, y.astype(float), sample_weight=frac)
    np.testing.assert_array_equal(frac, frozen)  # never modified in place


def test_weighted_smart_bounds_its_selections_per_epoch(monkeypatch):
    # the row kept in part sits at the cut and nearly every step crosses it: the weighted
    # selection (a sort of all n losses) must not run at every one of an epoch's steps
    X, y = _classes(10, n=4000, k=2)
    s = np.random.default_rng(10).uniform(0.5, 2.0, len(y))
    calls = []
    greedy = TrimmedProblem.greedy
    monkeypatch.setattr(TrimmedProblem, "greedy", lambda self, *a, **k: calls.append(1) or greedy(self, *a, **k))
    clf = TrimmedClassifier(batch_size=8, max_iter=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y, sample_weight=s)
    steps = clf.n_iter_ * len(y) // 8
    # per epoch: the selections, one start of epoch, and the stopping test's
    assert len(calls) <= clf.n_iter_ * (skrate._smart._CAPPED_SELECTIONS + 4) + 2 < steps / 10


@pytest.mark.parametrize("factor", [1e200, 1e280, 1e-280])
def test_weights_out_of_scale_fit_as_in_scale_and_report_in_their_units(factor):
    # the solvers' bounds square the weights (1e200 overflowed: a zero step, coef 0), and weights
    # beyond 2**900 are rescaled on validation: n_inliers and n_inliers_ stay in the user's units
    X, y = _regression(11, n=60)
    s = np.random.default_rng(11).uniform(0.5, 2.0, len(y))
    ref = TrimmedRegressor(random_state=0).fit(X, y, sample_weight=s)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        big = TrimmedRegressor(random_state=0).fit(X, y, sample_weight=s * factor)
    np.testing.assert_allclose(big.coef_, ref.coef_, rtol=1e-9)
    np.testing.assert_allclose(big.sample_weights_, ref.sample_weights_, atol=1e-12)
    assert big.n_inliers_ == pytest.approx(ref.n_inliers_ * factor, rel=1e-12)
    h = float(10 * factor)
    fixed = TrimmedRegressor(n_inliers=max(1, round(h)) if factor > 1 else 1, random_state=0)
    if factor > 1:
        fit = fixed.fit(X, y, sample_weight=s * factor)
        assert fit.n_inliers_ == pytest.approx(fixed.n_inliers, rel=1e-12)
    else:  # a total weight below 1 leaves no n_inliers to pass
        with pytest.raises(ValueError, match="exceeds the total sample_weight .*use trim_fraction, as n_inliers"):
            fixed.fit(X, y, sample_weight=s * factor)


def test_half_of_the_weight_trimmed_is_feasible_with_fractional_weights():
    # the floors, half of each class's weight, add up to h at trim_fraction=0.5 up to rounding,
    # which must not make the projection's sum(floors) <= h fail
    X, y = _classes(12, n=60, k=2)
    for seed in range(40):
        s = np.random.default_rng(seed).uniform(0.1, 3.0, len(y))
        clf = TrimmedClassifier(trim_fraction=0.5, weight_step=1.0, max_iter=3, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf.fit(X, y, sample_weight=s)
        kept = np.bincount(y, weights=s * clf.sample_weights_)
        np.testing.assert_allclose(kept, np.bincount(y, weights=s) / 2, rtol=1e-9)
