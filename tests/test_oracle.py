"""The oracle solvers: any sample_weight classifier trained under rate constraints."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linprog
from sklearn import config_context
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.tree import DecisionTreeClassifier

from skrate import ConstrainedClassifier
from skrate.exceptions import InfeasibleConstraintsWarning
from skrate.models._oracle import CostSensitiveOracle, warm_startable
from skrate.problem import GroupTable, RateData, compile_problem
from skrate.rates import as_constraints, as_expression
from skrate.solvers._oracle_game import N_ITER_NO_CHANGE, cost_sensitive_reduction, project_l1_ball, solve_oracle_game
from skrate.solutions import shrink

from _data import two_group_data

ORACLE_SOLVERS = ["oracle_lagrangian", "oracle_proxy_lagrangian"]


def _tiny(n=60, seed=0):
    """Two features, two groups whose base rates differ: demographic parity binds."""
    rng = np.random.default_rng(seed)
    group = np.where(rng.random(n) < 0.5, "a", "b")
    X = np.round(rng.normal(size=(n, 2)) + (group == "a")[:, None] * 0.7, 1)
    y = (X[:, 0] + 0.6 * rng.normal(size=n) > 0.35).astype(int)
    return X, y, group


# -- the exact references -----------------------------------------------------------------------
def _stump_specs(X):
    """Every depth-1 tree on X: (feature, threshold, label left, label right)."""
    specs = []
    for j in range(X.shape[1]):
        values = np.unique(X[:, j])
        for thr in np.r_[values[:-1] + np.diff(values) / 2, values[-1]]:
            specs += [(j, thr, a, b) for a in (0, 1) for b in (0, 1)]
    return specs


def _stump_decisions(X, specs):
    return np.column_stack([np.where(X[:, j] <= thr, a, b) for j, thr, a, b in specs]).astype(float)


def _all_stumps(X):
    """Decisions (n, K) of every depth-1 tree: a feature, a threshold, one label per leaf."""
    return _stump_decisions(X, _stump_specs(X))


def _parity_rates(y, group, yhat):
    """error, then ``ppr_g - ppr - 0.05`` and ``ppr - ppr_g - 0.05`` for g in (a, b), computed directly."""
    yhat = yhat.reshape(len(y), -1)
    err = np.abs(yhat - y[:, None]).mean(axis=0)  # expected error of P(predict 1) = yhat
    everyone = yhat.mean(axis=0)
    gaps = [yhat[group == g].mean(axis=0) - everyone for g in ("a", "b")]
    return err, np.array([gap - 0.05 for gap in gaps] + [-gap - 0.05 for gap in gaps])


PARITY = ["ppr[group] <= ppr + 0.05", "ppr[group] >= ppr - 0.05"]


def _lp_optimum(objective, constraints):
    """min_p p . objective s.t. constraints @ p <= 0, p in the simplex (scipy's HiGHS)."""
    k = objective.shape[0]
    res = linprog(objective, A_ub=constraints, b_ub=np.zeros(constraints.shape[0]), A_eq=np.ones((1, k)),
                  b_eq=[1.0], bounds=[(0, None)] * k, method="highs")
    assert res.status == 0
    return res.fun


class ExhaustiveStump(ClassifierMixin, BaseEstimator):
    """The exact weighted 0-1 minimiser over all stumps: an exact oracle for the finite class."""

    def fit(self, X, y, sample_weight=None):
        w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, float)
        specs = _stump_specs(X)
        loss = w @ (_stump_decisions(X, specs) != y[:, None])
        self.stump_ = specs[int(np.argmin(loss))]
        self.classes_ = np.array([0, 1])
        return self

    def predict(self, X):
        return _stump_decisions(np.asarray(X), [self.stump_])[:, 0].astype(int)


class RecordingLogisticRegression(LogisticRegression):
    """Remembers the coefficients it started from."""

    def fit(self, X, y, sample_weight=None):
        self.started_from_ = getattr(self, "coef_", None)
        self.started_from_ = None if self.started_from_ is None else self.started_from_.copy()
        return super().fit(X, y, sample_weight=sample_weight)


# -- the reduction --------------------------------------------------------------------------------
def test_reduction_matches_a_direct_computation():
    X, y, group = _tiny(40)
    data = RateData(y, np.ones(len(y)), GroupTable.from_input(group, None, len(y)))
    problem = compile_problem(as_expression("error"), as_constraints(PARITY), data)
    assert [str(c) for c in problem.constraints] == [
        "ppr[group=a] <= ppr + 0.05", "ppr[group=b] <= ppr + 0.05",
        "ppr[group=a] >= ppr - 0.05", "ppr[group=b] >= ppr - 0.05"]
    w = np.array([1.0, 0.7, 0.0, 2.5, 0.3])
    labels, weights = cost_sensitive_reduction(problem.A, w)

    def lagrangian(yhat):
        err, cons = _parity_rates(y, group, yhat.astype(float))
        return float(w[0] * err[0] + w[1:] @ cons[:, 0])

    zero = lagrangian(np.zeros(len(y)))
    cost = np.array([lagrangian(np.eye(len(y))[i]) - zero for i in range(len(y))])
    np.testing.assert_array_equal(labels, (cost < 0).astype(int))
    np.testing.assert_allclose(weights, np.abs(cost) * len(y) / np.abs(cost).sum(), rtol=1e-10)
    # the weighted 0-1 loss is the Lagrangian up to a positive scale and a shift, for any decisions
    rng = np.random.default_rng(1)
    scale = np.abs(cost).sum() / len(y)
    for _ in range(5):
        yhat = rng.integers(0, 2, len(y))
        assert weights @ (yhat != labels) * scale == pytest.approx(lagrangian(yhat) - lagrangian(labels), abs=1e-12)


def test_reduction_with_sample_weight_and_zero_multipliers():
    X, y, group = _tiny(30)
    sw = np.random.default_rng(2).uniform(0.5, 2.0, len(y))
    data = RateData(y, sw, GroupTable.from_input(group, None, len(y)))
    problem = compile_problem(as_expression("error"), as_constraints(PARITY), data)
    labels, weights = cost_sensitive_reduction(problem.A, np.array([1.0, 0, 0, 0, 0]))
    np.testing.assert_array_equal(labels, y)  # the error alone: fit the labels,
    np.testing.assert_allclose(weights, sw * len(y) / sw.sum())  # weighted as the user said
    _, weights = cost_sensitive_reduction(problem.A, np.array([1.0, 0, 0, 0, 0]), total_weight=sw.sum())
    np.testing.assert_allclose(weights, sw)  # summing to the total weight: as if rows were repeated
    labels, weights = cost_sensitive_reduction(problem.A, np.zeros(5))
    assert not weights.any()


def test_l1_ball_projection_against_cvxpy():
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(0)
    for radius in (0.5, 3.0, 100.0):
        v = rng.normal(scale=2.0, size=6)
        lam = cp.Variable(6)
        cp.Problem(cp.Minimize(cp.sum_squares(lam - v)), [lam >= 0, cp.sum(lam) <= radius]).solve()
        np.testing.assert_allclose(project_l1_ball(v, radius), lam.value, atol=1e-6)


# -- the game reaches the LP optimum over a finite class -------------------------------------------
@pytest.mark.parametrize("solver", ORACLE_SOLVERS)
def test_exact_oracle_reaches_the_lp_optimum_over_stumps(solver):
    X, y, group = _tiny()
    err, cons = _parity_rates(y, group, _all_stumps(X))
    optimum = _lp_optimum(err, cons)
    assert optimum > err.min() + 0.01  # the constraints bind
    clf = ConstrainedClassifier(PARITY, estimator=ExhaustiveStump(), solver=solver, lambda_learning_rate=4.0,
                                max_iter=150, n_candidates=150, tol=None, solution="T_stochastic", random_state=0)
    clf.fit(X, y, groups=group)
    got_err, got_cons = _parity_rates(y, group, clf.predict_proba(X, solution="m_stochastic")[:, 1])
    assert clf.feasible_
    assert got_cons.max() <= 1e-9
    assert got_err[0] == pytest.approx(optimum, abs=1e-6)  # the LP over the game's stumps finds the optimum
    assert (clf.solutions_["m_stochastic"] > 0).sum() <= len(clf.constraints_) + 1
    # the game's own output, the uniform mixture of its iterates, is an approximate equilibrium
    avg_err, avg_cons = _parity_rates(y, group, clf.predict_proba(X)[:, 1])
    assert avg_cons.max() <= 0.01 and abs(avg_err[0] - optimum) <= 0.01


@pytest.mark.parametrize("solver", ORACLE_SOLVERS)
def test_decision_trees_of_depth_one_near_the_lp_optimum(solver):
    # DecisionTreeClassifier picks splits by Gini impurity, so it is only an approximate oracle
    X, y, group = _tiny()
    err, cons = _parity_rates(y, group, _all_stumps(X))
    optimum = _lp_optimum(err, cons)
    clf = ConstrainedClassifier(PARITY, estimator=DecisionTreeClassifier(max_depth=1), solver=solver,
                                lambda_learning_rate=4.0, max_iter=200, n_candidates=200, random_state=0)
    clf.fit(X, y, groups=group)
    got_err, got_cons = _parity_rates(y, group, clf.predict_proba(X)[:, 1])
    assert clf.feasible_ and got_cons.max() <= 1e-9
    assert optimum - 1e-9 <= got_err[0] <= optimum + 0.05


# -- estimator semantics ----------------------------------------------------------------------------
@pytest.mark.parametrize("solver", ORACLE_SOLVERS)
def test_predictions_follow_the_fitted_estimators(solver):
    X, y, g = two_group_data(1500)
    clf = ConstrainedClassifier("ppr[group] >= ppr - 0.03", estimator=LogisticRegression(), solver=solver,
                                solution="T_stochastic", random_state=0).fit(X, y, groups=g)  # keeps every fit
    estimators = clf.estimators_
    assert len(estimators) == clf.n_iter_ == clf.candidates_.shape[0]
    assert len({id(e) for e in estimators}) == len(estimators)
    decisions = np.column_stack([e.predict(X) == 1 for e in estimators])
    for name, w in clf.solutions_.items():
        np.testing.assert_allclose(clf.predict_proba(X, solution=name)[:, 1], decisions @ w)
    np.testing.assert_allclose(clf.train_objective_, (decisions != y[:, None]).mean(axis=0))
    assert clf.feasible_ and (clf.solutions_["m_stochastic"] > 0).sum() <= 2
    labels = clf.predict(X)
    np.testing.assert_array_equal(labels, clf.predict(X))
    assert abs(labels.mean() - clf.predict_proba(X)[:, 1].mean()) < 0.03
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict(X), labels)
    unconstrained = LogisticRegression().fit(X, y)
    gap = lambda yhat: yhat.mean() - yhat[g == "b"].mean()
    assert gap(unconstrained.predict(X)) > 0.1  # the constraint binds...
    assert gap(clf.predict_proba(X)[:, 1]) <= 0.03 + 1e-9  # ...and holds


def test_only_the_estimators_of_the_solutions_are_kept():
    X, y, g = two_group_data(600)
    kw = dict(constraints="ppr[group] >= ppr - 0.03", estimator=LogisticRegression(), tol=None, max_iter=30,
              solver="oracle_proxy_lagrangian", random_state=0)
    small = ConstrainedClassifier(**kw).fit(X, y, groups=g)
    full = ConstrainedClassifier(**kw, solution="T_stochastic").fit(X, y, groups=g)
    kept = [k for k, e in enumerate(small.estimators_) if e is not None]
    assert len(small.estimators_) == small.candidates_.shape[0] == 30
    assert set(kept) == set(np.flatnonzero(sum(w for n, w in small.solutions_.items() if n != "T_stochastic")))
    assert len(full.estimators_) == 30 and all(e is not None for e in full.estimators_)
    assert len(kept) <= len(small.constraints_) + 3
    assert len(pickle.dumps(small._model)) < len(pickle.dumps(full._model)) / 3
    for name in ("m_stochastic", "best", "last"):  # the same models, the same predictions
        np.testing.assert_array_equal(small.predict_proba(X, solution=name), full.predict_proba(X, solution=name))
        np.testing.assert_array_equal(small.predict(X, solution=name), full.predict(X, solution=name))
    with pytest.raises(ValueError, match="refit with solution='T_stochastic'"):
        small.predict(X, solution="T_stochastic")


def test_unset_random_states_of_pipeline_steps_are_seeded():
    from sklearn.ensemble import RandomForestClassifier

    from skrate.models._oracle import seeded

    X, y, g = two_group_data(300)
    est = make_pipeline(StandardScaler(), RandomForestClassifier(n_estimators=3, max_depth=3))
    kw = dict(estimator=est, solver="oracle_proxy_lagrangian", random_state=0, max_iter=3)
    fit = lambda: ConstrainedClassifier(PARITY, **kw).fit(X, y, groups=g).predict_proba(X)
    np.testing.assert_array_equal(fit(), fit())  # the forest's bootstrap follows random_state
    forest = seeded(est, 0).get_params()["randomforestclassifier__random_state"]
    assert isinstance(forest, int) and est[-1].random_state is None  # the user's estimator is untouched
    fixed = make_pipeline(StandardScaler(), RandomForestClassifier(random_state=7))
    assert seeded(fixed, 0) is fixed  # nothing left None: nothing to seed


def test_a_built_in_refit_drops_the_oracle_estimators():
    X, y, g = two_group_data(300)
    clf = ConstrainedClassifier("ppr <= 0.3", estimator=LogisticRegression(), solver="oracle_proxy_lagrangian",
                                max_iter=3, random_state=0).fit(X, y)
    assert hasattr(clf, "estimators_")
    clf.set_params(estimator=None, solver="proxy_lagrangian", max_iter=5).fit(X, y)
    assert not hasattr(clf, "estimators_")


def test_n_jobs_gives_the_same_predictions():
    X, y, g = two_group_data(600)
    kw = dict(constraints="ppr[group] >= ppr - 0.03", estimator=LogisticRegression(),
              solver="oracle_proxy_lagrangian", solution="T_stochastic", random_state=0)
    one = ConstrainedClassifier(**kw).fit(X, y, groups=g)
    two = ConstrainedClassifier(**kw, n_jobs=2).fit(X, y, groups=g)
    np.testing.assert_array_equal(one.predict_proba(X), two.predict_proba(X))


def test_held_out_constraints():
    X, y, g = two_group_data(1200)
    clf = ConstrainedClassifier("ppr[group] >= ppr - 0.03", estimator=LogisticRegression(),
                                solver="oracle_lagrangian", validation_fraction=0.3, random_state=0)
    clf.fit(X, y, groups=g)
    held = np.isfinite(clf.fit_report_["held_out"]).all()
    assert held and clf.fit_report_["held_out"].max() <= 1e-9


# -- warm start and early stopping ----------------------------------------------------------------
def test_warm_start_continues_from_the_previous_fit():
    X, y, g = two_group_data(800)
    clf = ConstrainedClassifier("ppr[group] >= ppr - 0.03", estimator=RecordingLogisticRegression(),
                                solver="oracle_lagrangian", solution="T_stochastic",  # keeps every fit
                                random_state=0).fit(X, y, groups=g)
    fitted = [e for e in clf.estimators_ if isinstance(e, RecordingLogisticRegression)]
    assert len(fitted) >= 3 and fitted[0].started_from_ is None
    for before, after in zip(fitted, fitted[1:]):
        assert after.warm_start
        np.testing.assert_array_equal(after.started_from_, before.coef_)
    assert clf.estimator.get_params()["warm_start"] is False  # the user's estimator is untouched
    assert not hasattr(clf.estimator, "coef_")


def test_which_estimators_are_warm_started():
    assert warm_startable(LogisticRegression())
    assert not warm_startable(HistGradientBoostingClassifier())  # its warm start appends trees
    assert not warm_startable(DecisionTreeClassifier())
    X, y, g = two_group_data(400)
    X = np.round(X, 1)  # few distinct values: binning skips the (slow) weighted quantiles
    clf = ConstrainedClassifier("ppr[group] >= ppr - 0.03", estimator=HistGradientBoostingClassifier(max_iter=5),
                                solver="oracle_proxy_lagrangian", random_state=0).fit(X, y, groups=g)
    assert all(e.n_iter_ <= 5 for e in clf.estimators_ if hasattr(e, "n_iter_"))


def test_one_class_reduction_gives_a_constant_model():
    X, y, _ = two_group_data(100)
    oracle = CostSensitiveOracle(LogisticRegression())
    model = oracle(X, np.ones(100, int), np.ones(100))
    np.testing.assert_array_equal(model.predict(X), np.ones(100))
    model = oracle(X, y, np.where(y == 0, 1.0, 0.0))  # only label-0 rows carry weight
    np.testing.assert_array_equal(model.predict(X), np.zeros(100))


def _is_certificate(clf, k):
    """Whether candidate k was fitted at the multipliers of the LP over the candidates before it."""
    if k == 0:
        return False
    lp = shrink(clf.train_objective_[:k], clf.train_constraints_[:, :k])
    return lp.feasible and np.allclose(clf.multipliers_[k], np.r_[1.0, lp.multipliers])


def _certificate_gap(clf):
    """The last candidate answers the LP of the ones before it: its multipliers and Lagrangian gap."""
    lp = shrink(clf.train_objective_[:-1], clf.train_constraints_[:, :-1])
    np.testing.assert_allclose(clf.multipliers_[-1], np.r_[1.0, lp.multipliers])
    lagrangian = clf.train_objective_[-1] + lp.multipliers @ clf.train_constraints_[:, -1]
    return lp.weights @ clf.train_objective_[:-1] - lagrangian


@pytest.mark.parametrize("solver", ORACLE_SOLVERS)
def test_early_stopping_certifies_the_lp_optimum_over_stumps(solver):
    X, y, group = _tiny()
    err, cons = _parity_rates(y, group, _all_stumps(X))
    optimum = _lp_optimum(err, cons)
    kw = dict(constraints=PARITY, estimator=ExhaustiveStump(), solver=solver,
              lambda_learning_rate=4.0, max_iter=200, n_candidates=200, random_state=0)
    early = ConstrainedClassifier(**kw, tol=1e-4).fit(X, y, groups=group)
    full = ConstrainedClassifier(**kw, tol=None).fit(X, y, groups=group)
    assert full.n_iter_ == 200
    assert early.n_iter_ < 200
    # the stop: the LP over the game's candidates did not improve in its last moves ...
    game, k = (early.train_objective_[:-1], early.train_constraints_[:, :-1]), N_ITER_NO_CHANGE
    before = shrink(game[0][:-k], game[1][:, :-k])
    after = shrink(*game)
    assert after.max_violation >= before.max_violation - 1e-4
    assert before.weights @ game[0][:-k] - after.weights @ game[0] <= 1e-4
    # ... and the exact oracle, asked at the LP's multipliers, found nothing better
    assert _certificate_gap(early) <= 1e-4
    # which, the oracle being exact, certifies the optimum over every stump
    got_err, got_cons = _parity_rates(y, group, early.predict_proba(X)[:, 1])
    assert got_cons.max() <= 1e-9 and got_err[0] <= optimum + 1e-4
    # the game's own moves (certificates aside, which the multipliers never see) are a prefix of the full one
    moves = [k for k in range(early.n_iter_) if not _is_certificate(early, k)]
    assert len(moves) < early.n_iter_
    np.testing.assert_array_equal(early.train_objective_[moves], full.train_objective_[:len(moves)])


@pytest.mark.parametrize("solver", ORACLE_SOLVERS)
def test_round_off_in_the_lp_violation_does_not_keep_the_game_going(solver):
    # the LP mixes models to meet the constraints with equality, and reports a violation like
    # 1.7e-18 as readily as 0: read as progress, it reset the stall count every move, so the
    # certificate was never asked for and the game played all max_iter fits, short of the optimum
    rng = np.random.default_rng(1)
    x, grp = rng.normal(size=80), (rng.random(80) < 0.4).astype(int)
    y = (x + 0.8 * rng.normal(size=80) + 0.7 * grp > 0.3).astype(int)
    X = x[:, None]
    D = _all_stumps(X)
    tpr = [D[(y == 1) & (grp == a)].mean(axis=0) for a in (0, 1)]
    cons = np.array([0.9 - tpr[0], 0.9 - tpr[1], D[grp == 1].mean(axis=0) - D[grp == 0].mean(axis=0) - 0.05])
    optimum = _lp_optimum(np.abs(D - y[:, None]).mean(axis=0), cons)
    clf = ConstrainedClassifier(["tpr[group] >= 0.9", "ppr[group=1] <= ppr[group=0] + 0.05"], solver=solver,
                                estimator=ExhaustiveStump(), random_state=0).fit(X, y, groups=grp)
    assert clf.n_iter_ < 100 and _certificate_gap(clf) <= 1e-4
    p = clf.predict_proba(X)[:, 1]
    assert np.abs(p - y).mean() <= optimum + 1e-4


@pytest.mark.parametrize("solver", ORACLE_SOLVERS)
def test_no_early_stop_while_the_mixture_has_slack(solver):
    # the first proxy-Lagrangian responses are fairer than needed; stopping there would waste accuracy
    X, y, g = two_group_data(800)
    clf = ConstrainedClassifier("tpr[group] <= tpr + 0.05", estimator=LogisticRegression(), solver=solver,
                                lambda_learning_rate=2.0 if solver == "oracle_proxy_lagrangian" else 0.3,
                                random_state=0).fit(X, y, groups=g)
    assert clf.feasible_
    assert clf.n_iter_ == 100 or _certificate_gap(clf) <= 1e-4
    unconstrained = (LogisticRegression().fit(X, y).predict(X) != y).mean()
    assert clf.train_objective_ @ clf.solutions_["m_stochastic"] <= unconstrained + 0.005


def test_early_stopping_when_the_unconstrained_model_is_feasible():
    X, y, g = two_group_data(600)
    clf = ConstrainedClassifier("ppr >= 0.1", estimator=LogisticRegression(), solver="oracle_lagrangian",
                                random_state=0).fit(X, y, groups=g)
    assert clf.n_iter_ == 5  # one useful fit, three without improvement, the certificate
    np.testing.assert_array_equal(clf.multipliers_[:, 1:], 0.0)  # the multiplier never left zero
    assert _certificate_gap(clf) <= 1e-4


def test_solver_callback_and_budget():
    X, y, g = two_group_data(300)
    problem = compile_problem(as_expression("error"), as_constraints("ppr[group] >= ppr - 0.03"),
                              RateData(y, np.ones(len(y)), GroupTable.from_input(g, None, len(y))))
    seen = []
    traj = solve_oracle_game(problem, CostSensitiveOracle(LogisticRegression()), X, max_iter=7, tol=None,
                             callback=lambda t, model, values: seen.append(t) or t < 3)
    assert seen == [0, 1, 2, 3] and traj.n_iter == 4 and len(traj.estimators) == 4
    np.testing.assert_array_equal(traj.params[:, 0], np.arange(4))


def test_callback_sees_every_fitted_estimator_certificates_included():
    X, y, g = two_group_data(600)
    seen = []
    clf = ConstrainedClassifier("ppr >= 0.1", estimator=LogisticRegression(), solver="oracle_lagrangian",
                                callback=lambda t, model, values: seen.append((t, values)),
                                random_state=0).fit(X, y, groups=g)
    assert _is_certificate(clf, clf.n_iter_ - 1)  # the game ended on one
    assert [t for t, _ in seen] == list(range(clf.n_iter_))
    np.testing.assert_allclose([values[0] for _, values in seen], clf.train_objective_)


# -- errors and integration -----------------------------------------------------------------------
def test_clear_errors():
    X, y, g = two_group_data(200)
    with pytest.raises(ValueError, match="estimator=LogisticRegression"):
        ConstrainedClassifier("ppr >= 0.3", solver="oracle_lagrangian").fit(X, y, groups=g)
    with pytest.raises(ValueError, match="KNeighborsClassifier does not accept sample_weight"):
        ConstrainedClassifier("ppr >= 0.3", estimator=KNeighborsClassifier(),
                              solver="oracle_proxy_lagrangian").fit(X, y, groups=g)
    with pytest.raises(ValueError, match="estimator=LogisticRegression is used by the oracle solvers only"):
        ConstrainedClassifier("ppr >= 0.3", estimator=LogisticRegression()).fit(X, y, groups=g)
    with pytest.raises(ValueError, match="'C' parameter of LogisticRegression"):  # the estimator's own checks run
        ConstrainedClassifier("ppr >= 0.3", estimator=LogisticRegression(C=-1.0),
                              solver="oracle_lagrangian").fit(X, y, groups=g)
    with pytest.raises(ValueError, match="tol"):
        ConstrainedClassifier("ppr >= 0.3", estimator=LogisticRegression(), solver="oracle_lagrangian",
                              tol=-1.0).fit(X, y, groups=g)
    # the built-in network beside an estimator that replaces it: refused, as MetricOptimizer does
    with pytest.raises(ValueError, match="model='mlp' has no effect with estimator="):
        ConstrainedClassifier("ppr >= 0.3", estimator=LogisticRegression(), solver="oracle_lagrangian",
                              model="mlp").fit(X, y, groups=g)


def test_non_classifiers_and_pipelines_without_weights_are_refused():
    X, y, g = two_group_data(200)
    with pytest.raises(ValueError, match="estimator=Ridge is not a classifier"):
        ConstrainedClassifier("ppr >= 0.3", estimator=Ridge(), solver="oracle_lagrangian").fit(X, y, groups=g)
    with pytest.raises(ValueError, match=r"Pipeline \(final step KNeighborsClassifier\) does not accept sample_weight"):
        ConstrainedClassifier("ppr >= 0.3", estimator=make_pipeline(StandardScaler(), KNeighborsClassifier()),
                              solver="oracle_lagrangian").fit(X, y, groups=g)


def _with_text_column(n=600, seed=0):
    """A DataFrame with a numeric and a text column; the label depends on both."""
    rng = np.random.default_rng(seed)
    group = rng.choice(["a", "b"], n)
    x = rng.normal(size=n) + (group == "a")
    cat = rng.choice(["u", "v", "w"], n)
    y = (x + (cat == "u") + rng.normal(size=n) > 0.8).astype(int)
    return pd.DataFrame({"x": x, "cat": cat}), y, group


@pytest.mark.parametrize("kind", ["pipeline", "categorical", "categorical_and_nullable"])
def test_estimators_receive_the_dataframe_as_given(kind):
    X, y, group = _with_text_column()
    if kind == "pipeline":  # the final step weighs the examples (step__sample_weight)
        est = make_pipeline(make_column_transformer((OneHotEncoder(), ["cat"]), remainder="passthrough"),
                            LogisticRegression())
    else:  # a categorical column named by its column name
        X = X.astype({"cat": "category"})
        est = HistGradientBoostingClassifier(max_iter=10, categorical_features=["cat"], random_state=0)
    if kind == "categorical_and_nullable":  # next to a category, an Int64 column was cast to float with it
        X["k"] = pd.array(np.random.default_rng(1).integers(0, 5, X.shape[0]), dtype="Int64")
    before = X.copy()
    clf = ConstrainedClassifier(PARITY, estimator=est, solver="oracle_proxy_lagrangian",
                                random_state=0).fit(X, y, groups=group)
    pd.testing.assert_frame_equal(X, before)
    assert list(clf.feature_names_in_) == list(X.columns)
    p = clf.predict_proba(X)[:, 1]
    _, cons = _parity_rates(y, group, p)
    assert clf.feasible_ and cons.max() <= 1e-9
    labels = clf.predict(X)
    np.testing.assert_array_equal(labels, clf.predict(X.iloc[::-1])[::-1])  # reproducible per row
    assert abs(labels.mean() - p.mean()) < 0.05
    with pytest.raises(ValueError, match="feature names"):
        clf.predict(X[["cat", "x"]])


def test_predict_draws_follow_the_values_not_the_dtypes():
    X, y, group = _with_text_column()
    X["k"] = np.random.default_rng(1).integers(0, 8, X.shape[0])  # an int column, as a CSV may give it
    est = make_pipeline(make_column_transformer((OneHotEncoder(), ["cat"]), remainder="passthrough"),
                        LogisticRegression())
    clf = ConstrainedClassifier(PARITY, estimator=est, solver="oracle_proxy_lagrangian",
                                random_state=0).fit(X, y, groups=group)
    p = clf.predict_proba(X)[:, 1]
    assert ((p > 0) & (p < 1)).sum() > 50  # the rows whose label is drawn
    labels = clf.predict(X)
    np.testing.assert_array_equal(labels, clf.predict(X.astype({"k": float})))
    order = np.random.default_rng(2).permutation(X.shape[0])[:200]
    np.testing.assert_array_equal(labels[order], clf.predict(X.iloc[order]))


def test_a_pipeline_gets_its_weights_under_metadata_routing():
    import sklearn

    X, y, group = _with_text_column()
    est = make_pipeline(make_column_transformer((OneHotEncoder(), ["cat"]), remainder="passthrough"),
                        LogisticRegression())
    plain = ConstrainedClassifier(PARITY, estimator=est, solver="oracle_proxy_lagrangian", random_state=0)
    plain.fit(X, y, groups=group)
    with sklearn.config_context(enable_metadata_routing=True):
        routed = ConstrainedClassifier(PARITY, estimator=est, solver="oracle_proxy_lagrangian",
                                       random_state=0).set_fit_request(groups=True)
        routed.fit(X, y, groups=group)
    np.testing.assert_allclose(routed.predict_proba(X), plain.predict_proba(X))
    assert routed.n_iter_ == plain.n_iter_


def test_infeasible_problem_is_reported():
    X, y, g = two_group_data(300)
    with pytest.warns(InfeasibleConstraintsWarning, match="its largest violation is 0.3, on"):
        clf = ConstrainedClassifier(["ppr >= 0.8", "ppr <= 0.2"], estimator=LogisticRegression(),
                                    solver="oracle_proxy_lagrangian", random_state=0).fit(X, y, groups=g)
    assert not clf.feasible_
    assert clf.n_iter_ == 100  # no early stop while infeasible: min(max_iter, n_candidates) fits


def test_pipeline_and_grid_search_with_gradient_boosting():
    X, y, g = two_group_data(600)
    X = np.round(X, 1)  # few distinct values: binning skips the (slow) weighted quantiles
    with config_context(enable_metadata_routing=True), warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleConstraintsWarning)
        clf = ConstrainedClassifier("ppr[group] >= ppr - 0.05", estimator=HistGradientBoostingClassifier(max_iter=10),
                                    solver="oracle_proxy_lagrangian", random_state=0, max_iter=15)
        pipe = make_pipeline(StandardScaler(), clf.set_fit_request(groups=True))
        pipe.fit(X, y, groups=g)
        assert pipe[-1].feasible_
        search = GridSearchCV(pipe, {"constrainedclassifier__solver": ORACLE_SOLVERS,
                                     "constrainedclassifier__estimator__max_iter": [5, 10]}, cv=2)
        search.fit(X, y, groups=g)
        best = search.best_estimator_[-1]
        assert best.estimator.max_iter in (5, 10) and best.solver in ORACLE_SOLVERS
        assert isinstance(clone(best).estimator, HistGradientBoostingClassifier)
        assert search.predict(X).shape == (600,)


def test_n_jobs_is_read_when_predicting():
    # as scikit-learn's ensembles read theirs: a model fitted with one setting can predict with another
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + rng.normal(size=300) > 0).astype(int)
    clf = ConstrainedClassifier("tpr >= 0.8", solver="oracle_proxy_lagrangian", estimator=LogisticRegression(),
                                random_state=0).fit(X, y)
    p = clf.predict_proba(X)
    clf.set_params(n_jobs=2)
    assert clf.stochastic_model().model.n_jobs == 2
    np.testing.assert_array_equal(clf.predict_proba(X), p)


def test_oracle_games_never_form_the_product_of_the_rate_factors(monkeypatch):
    # a constraint on an overall rate puts n entries in its row of A = mix @ basis: the
    # reduction formed A at every oracle call (3.6 s of a 5.4 s fit at 300k rows, 100 groups)
    import skrate.problem._compile as compile_module

    def formed(self):
        raise AssertionError("RateProblem.A was formed")

    X, y, group = _tiny(300)
    ref = ConstrainedClassifier(constraints="ppr[group] >= ppr - 0.05", solver="oracle_proxy_lagrangian",
                                estimator=LogisticRegression(), max_iter=8, random_state=0)
    expected = clone(ref).fit(X, y, groups=group).predict_proba(X)
    monkeypatch.setattr(compile_module.RateProblem, "A", property(formed))
    np.testing.assert_array_equal(clone(ref).fit(X, y, groups=group).predict_proba(X), expected)
