"""ConstrainedClassifier end to end: constraints met, scikit-learn integration, bad input."""

import pickle
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn import config_context
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skrate import ConstrainedClassifier, MetricOptimizer
from skrate.exceptions import InfeasibleConstraintsWarning
from skrate.problem import GroupTable, RateData, constraint_rows
from skrate.rates import as_constraints
from skrate.rates import equal_opportunity, minimum_accuracy, minimum_coverage, precision, tpr

from _data import two_group_data


def _max_violation(report):
    return report["violation"].iloc[:-1].max()


def _violation_of(model, spec, X, y, g):
    data = RateData(y, np.ones(len(y)), GroupTable.from_input(g, None, len(y)))
    return max(r["violation"] for r in constraint_rows(as_constraints(spec), data, model.predict_proba(X)[:, 1]))


@pytest.mark.parametrize("spec", [
    "ppr[group] >= ppr - 0.03",
    ["tpr[group] >= 0.98 * tpr", "tpr[group] <= tpr / 0.98"],
    "fpr[group=b] <= 0.2",
])
def test_m_stochastic_meets_constraints_on_training_data(spec):
    X, y, g = two_group_data(3000)
    unconstrained = ConstrainedClassifier(random_state=0).fit(X, y, groups=g)
    assert _violation_of(unconstrained, spec, X, y, g) > 0.02  # the constraints bind on this data
    clf = ConstrainedClassifier(spec, random_state=0).fit(X, y, groups=g)
    assert clf.feasible_
    assert _max_violation(clf.constraint_report(X, y, groups=g)) <= 1e-3
    assert _violation_of(clf, spec, X, y, g) <= 1e-3
    assert (clf.weights_ > 0).sum() <= len(clf.constraints_) + 1
    err = clf.score(X, y, sample_weight=None)
    assert err > unconstrained.score(X, y) - 0.1  # constrained, not degenerate


def test_default_multiplier_step_keeps_the_objective_under_many_constraints():
    # 40 constraints: the swap-regret player moves each weight in proportion to its size, about
    # 1 / 41 at the start; at the step set for a few constraints the objective kept a weight near
    # 0.18 and the model lost 0.05 of accuracy to the external-regret player's
    rng = np.random.default_rng(0)
    n = 6000
    X = rng.normal(size=(n, 10))
    g = rng.integers(0, 20, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-(X @ rng.normal(size=10) * 0.7 + 0.3 * (g % 3) - 0.5)))).astype(int)
    goal = ["tpr[g] >= 0.9 * tpr", "fpr[g] <= fpr + 0.05"]

    def error(clf):
        p = clf.fit(X, y, groups={"g": g.astype(str)}).predict_proba(X)[:, 1]
        return float(np.mean(np.where(y == 1, 1 - p, p)))

    default = ConstrainedClassifier(goal, random_state=0)
    external = ConstrainedClassifier(goal, solver="proxy_lagrangian_ext", random_state=0)
    assert error(default) <= error(external) + 0.01
    assert len(default.constraints_) == 40 and default.feasible_
    assert default.multipliers_[-1, 0] > 0.5  # the objective's weight at the end


def test_all_solutions_available_after_one_fit():
    X, y, g = two_group_data(3000)
    clf = ConstrainedClassifier("ppr[group] >= ppr - 0.03", random_state=0).fit(X, y, groups=g)
    assert set(clf.solutions_) == {"m_stochastic", "best", "last", "T_stochastic"}
    for name, w in clf.solutions_.items():
        assert np.isclose(w.sum(), 1.0) and w.shape == (clf.candidates_.shape[0],)
    assert (clf.solutions_["best"] > 0).sum() == 1
    p_best = clf.predict_proba(X, solution="best")[:, 1]
    assert set(np.unique(p_best)) <= {0.0, 1.0}
    clf.set_params(solution="best")
    np.testing.assert_array_equal(clf.predict_proba(X)[:, 1], p_best)
    np.testing.assert_array_equal(clf.predict(X), (p_best > 0.5).astype(int))
    with pytest.raises(ValueError, match="Unknown solution"):
        clf.predict(X, solution="median")


def test_score_and_predict_log_proba_take_the_solution_as_predict_does():
    X, y, g = two_group_data(3000)
    clf = ConstrainedClassifier("ppr[group] >= ppr - 0.03", random_state=0).fit(X, y, groups=g)
    w = np.random.default_rng(0).integers(0, 3, size=len(y)).astype(float)
    for solution in clf.solutions_:
        predicted = clf.predict(X, solution=solution)
        assert clf.score(X, y, solution=solution) == pytest.approx(np.mean(predicted == y))
        assert clf.score(X, y, w, solution=solution) == pytest.approx(np.average(predicted == y, weights=w))
        with np.errstate(divide="ignore"):
            np.testing.assert_array_equal(clf.predict_log_proba(X, solution=solution),
                                          np.log(clf.predict_proba(X, solution=solution)))
    # a deterministic solution: log 0 is -inf, with no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isneginf(clf.predict_log_proba(X, solution="best")).sum() == len(y)
    assert clf.score(X, y) == clf.score(X, y, solution=clf.solution)
    with pytest.raises(ValueError, match="Unknown solution"):
        clf.score(X, y, solution="median")


def test_stochastic_predict_is_reproducible_and_follows_probabilities():
    X, y, g = two_group_data(n=6000)
    clf = ConstrainedClassifier(["tpr[group] >= 0.98 * tpr", "tpr[group] <= tpr / 0.98"], random_state=0)
    clf.fit(X, y, groups=g)
    proba = clf.predict_proba(X)[:, 1]
    pred = clf.predict(X)
    np.testing.assert_array_equal(pred, clf.predict(X))
    np.testing.assert_array_equal(pred[::-1], clf.predict(X[::-1]))
    np.testing.assert_array_equal(pred, pickle.loads(pickle.dumps(clf)).predict(X))
    mixed = (proba > 0) & (proba < 1)
    assert mixed.sum() > 100  # the solution is a genuine mixture on this data
    assert abs(pred[mixed].mean() - proba[mixed].mean()) < 0.05
    np.testing.assert_array_equal(clf.decision_function(X) > 0, proba > 0.5)


def test_determinism_under_random_state():
    X, y, g = two_group_data(n=1000)
    kw = dict(constraints="ppr[group] >= ppr - 0.03", batch_size=128, max_iter=300)
    a = ConstrainedClassifier(random_state=3, **kw).fit(X, y, groups=g)
    b = ConstrainedClassifier(random_state=3, **kw).fit(X, y, groups=g)
    c = ConstrainedClassifier(random_state=4, **kw).fit(X, y, groups=g)
    np.testing.assert_array_equal(a.candidates_, b.candidates_)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert not np.array_equal(a.candidates_, c.candidates_)


@pytest.mark.parametrize("params", [
    dict(solver="proxy_lagrangian_ext"),
    dict(solver="lagrangian"),
    dict(surrogate="logistic"),
    dict(surrogate="sigmoid"),
    dict(model="mlp", hidden_layer_sizes=(8,), max_iter=500),
    dict(batch_size=256),
])
def test_variants_reach_feasibility(params):
    X, y, g = two_group_data(3000)
    clf = ConstrainedClassifier("ppr[group] >= ppr - 0.05", random_state=0, **params).fit(X, y, groups=g)
    assert clf.feasible_
    assert _max_violation(clf.constraint_report(X, y, groups=g)) <= 1e-3


@pytest.mark.parametrize("held_out", [False, True])
def test_auto_batch_size_is_full_batch_on_small_data_and_minibatches_beyond(monkeypatch, held_out):
    import skrate._constrained as constrained

    X, y, g = two_group_data(3000)
    kw = dict(constraints="ppr[group] >= ppr - 0.05", max_iter=100, random_state=0,
              validation_fraction=0.3 if held_out else None)

    def fit(**params):
        return ConstrainedClassifier(**kw, **params).fit(X, y, groups=g)

    full = fit(batch_size=None)
    np.testing.assert_array_equal(fit().candidates_, full.candidates_)  # 3,000 rows: full-batch
    # with the thresholds lowered, the training rows (2,100 with a held-out split) are many:
    # minibatches of a hundredth of them
    monkeypatch.setattr(constrained, "_FULL_BATCH_MAX", 1000)
    monkeypatch.setattr(constrained, "_AUTO_BATCH", 10)
    auto = fit()
    np.testing.assert_array_equal(auto.candidates_, fit(batch_size=(2100 if held_out else 3000) // 100).candidates_)
    assert not np.array_equal(auto.candidates_, full.candidates_)
    assert auto.feasible_


@pytest.mark.parametrize("sizes", [(), (0,), (-3,), (4.7,), (True,), (8, "8")])
@pytest.mark.parametrize("estimator", ["ConstrainedClassifier", "MetricOptimizer"])
def test_hidden_layer_sizes_must_be_positive_integers(estimator, sizes):
    import skrate

    X, y, g = two_group_data(200)
    cls = getattr(skrate, estimator)
    with pytest.raises(ValueError, match=r"hidden_layer_sizes must be a tuple of positive integers, got"):
        cls(model="mlp", hidden_layer_sizes=sizes, max_iter=5).fit(X, y)
    # numpy integers are integers
    fitted = cls(model="mlp", hidden_layer_sizes=[np.int64(3)], max_iter=5, random_state=0).fit(X, y)
    assert fitted._model.sizes == (X.shape[1], 3, 1)


def test_a_win_loss_ratio_without_losses_is_met_and_an_empty_precision_undefined():
    from skrate.problem import ratio_value

    np.testing.assert_array_equal(ratio_value([1.0, -1.0, 0.0, 3.0], [0.0, 0.0, 0.0, 2.0]),
                                  [np.inf, -np.inf, np.nan, 1.5])
    rng = np.random.default_rng(7)
    X = rng.normal(size=(400, 2))
    y = (X[:, 0] > 0).astype(int)  # separable: a model can fix the baseline's errors, make none
    base = (X[:, 0] > 0.5).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InfeasibleConstraintsWarning)  # fixes without a new mistake meet it
        clf = ConstrainedClassifier("win_loss_ratio >= 2", max_iter=500, random_state=0).fit(X, y, baseline=base)
    p = clf.predict_proba(X)[:, 1]
    wins, losses = np.mean((base != y) * np.where(y == 1, p, 1 - p)), np.mean((base == y) * np.where(y == 1, 1 - p, p))
    assert clf.feasible_ and wins > 0.1 and losses == 0.0
    row = clf.constraint_report(X, y, baseline=base).iloc[0]
    assert row["lhs"] == np.inf and row["violation"] == -np.inf
    # 0 / 0 stays undefined: a precision where nothing is predicted positive
    never = ConstrainedClassifier("precision >= 0.5", max_iter=5, random_state=0).fit(X, y)
    never.candidates_ = np.zeros_like(never.candidates_)
    never.candidates_[:, -1] = -10.0
    with pytest.warns(UserWarning, match=r"constraint_report: 1 constraint\(s\) are undefined for the model's "
                                         r"decisions .* 0 / 0 .*\['precision >= 0.5'\]"):
        assert np.isnan(never.constraint_report(X, y).iloc[0]["lhs"])


def test_precision_and_churn_constraints():
    X, y, g = two_group_data(3000)
    baseline = LogisticRegression().fit(X[:, :2], y).predict(X[:, :2])
    clf = ConstrainedClassifier(["precision >= 0.82", "churn <= 0.12"], random_state=0)
    clf.fit(X, y, groups=g, baseline=baseline)
    report = clf.constraint_report(X, y, groups=g, baseline=baseline)
    assert clf.feasible_ and _max_violation(report) <= 1e-3
    p = clf.predict_proba(X)[:, 1]
    assert (y * p).sum() / p.sum() >= 0.82 - 1e-3
    assert np.mean(np.abs(p - baseline)) <= 0.12 + 1e-3
    with pytest.raises(ValueError, match="pass baseline="):
        clf.constraint_report(X, y, groups=g)


def test_infeasible_problem_warns_with_largest_violation():
    X, y, g = two_group_data(n=800)
    with pytest.warns(InfeasibleConstraintsWarning, match="No mixture of the trained models meets every constraint "
                                                          ".*; its largest violation is") as caught:
        clf = ConstrainedClassifier(["ppr >= 0.9", "ppr <= 0.1"], max_iter=200, random_state=0).fit(X, y, groups=g)
    assert not clf.feasible_
    # contradictory bounds: no classifier can do better than violating both by 0.4
    assert "No classifier at all can meet them" in str(caught[0].message)
    assert "least possible largest violation is 0.4," in str(caught[0].message)
    assert caught[0].filename == __file__  # the warning points at the user's fit call
    # decisions equal to the labels meet these, a linear model on noisy data does not
    with pytest.warns(InfeasibleConstraintsWarning) as caught:
        ConstrainedClassifier(["tpr >= 0.98", "fpr <= 0.02"], max_iter=100, random_state=0).fit(X, y, groups=g)
    message = str(caught[0].message)
    assert "No classifier at all" not in message and "train longer (max_iter) or with a larger model" in message
    # a precision above 1 is met in linear form only by predicting nothing: impossible, not short
    with pytest.warns(InfeasibleConstraintsWarning) as caught:
        ConstrainedClassifier("precision[group=a] >= 1.5", max_iter=100, random_state=0).fit(X, y, groups=g)
    message = str(caught[0].message)
    assert "No classifier at all can meet 'precision[group=a] >= 1.5': precision[group=a] lies in [0, 1]" in message
    assert "train longer" not in message


@pytest.mark.parametrize("make", [
    lambda: ConstrainedClassifier(constraints="tpr >= 0.9", solution="T_stochastic", random_state=0, max_iter=200),
    lambda: MetricOptimizer(metric="g_mean", solver="three_player", solution="T_stochastic", random_state=0,
                            max_iter=100),
])
def test_the_seed_of_stochastic_predictions_depends_on_random_state_alone(make):
    # integer weights and repeated rows fit the same model; the game's draws differ with the row
    # count, and the predictions' seed used to follow them
    rng = np.random.RandomState(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + rng.normal(size=300) > 0).astype(int)
    sw = rng.randint(1, 3, 300)
    a, b = make().fit(X, y, sample_weight=sw), make().fit(X.repeat(sw, axis=0), y.repeat(sw))
    assert a.random_seed_ == b.random_seed_ == make().fit(X[:150], y[:150]).random_seed_
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), atol=1e-12)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_a_ratio_met_only_by_predicting_no_positives_is_reported_undefined():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(1000, 2)), (rng.random(1000) < 0.3).astype(int)  # labels the features cannot tell
    with pytest.warns(InfeasibleConstraintsWarning, match=r"leaves \['precision >= 0.9'\] undefined"):
        clf = ConstrainedClassifier("precision >= 0.9", max_iter=200, random_state=0).fit(X, y)
    assert clf.predict_proba(X)[:, 1].sum() == 0 and not clf.feasible_
    assert np.isnan(clf.fit_report_["train"].iloc[0])


def test_feasible_describes_the_mixture_and_the_selected_solution_is_warned_about():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(1000, 2)), (rng.random(1000) < 0.3).astype(int)  # labels the features cannot tell
    fits = {}
    for solution in ("m_stochastic", "best"):
        with pytest.warns(InfeasibleConstraintsWarning) as caught:
            fits[solution] = ConstrainedClassifier("precision >= 0.9", solution=solution, max_iter=200,
                                                   random_state=0).fit(X, y)
        assert not fits[solution].feasible_  # the mixture predicts no positives, whatever predict uses
        assert str(caught[0].message).startswith("The m_stochastic solution")
    mixtures = [fit.solutions_["m_stochastic"] for fit in fits.values()]
    np.testing.assert_array_equal(*mixtures)
    assert len(caught) == 2 and "The best solution, which predict uses," in str(caught[1].message)
    # a feasible mixture, and a selected iterate that breaks the constraint by itself
    X, y, _ = two_group_data(n=800)
    with pytest.warns(InfeasibleConstraintsWarning, match=r"The last solution, which predict uses, does not meet "
                                                          r"every constraint .*\(the m_stochastic solution does\)"):
        clf = ConstrainedClassifier("ppr <= 0.3", solution="last", max_iter=100, random_state=0).fit(X, y)
    assert clf.feasible_ and clf.fit_report_["train"].iloc[0] > 0


def test_infeasibility_warning_gives_ratios_in_their_own_units():
    X, y, _ = two_group_data(n=800)
    with pytest.warns(InfeasibleConstraintsWarning) as caught:
        clf = ConstrainedClassifier(["ppr >= 0.4", "precision >= 0.95"], max_iter=100, random_state=0).fit(X, y)
    message = str(caught[0].message)
    worst = clf.fit_report_["train"].idxmax()
    assert clf.fit_report_["constraint"][worst] == "precision >= 0.95"  # larger in its own units than as c D - N
    assert f"its largest violation is {clf.fit_report_['train'][worst]:.4g}, on 'precision >= 0.95'" in message


def test_groups_from_dataframe_columns_and_dict_agree():
    X, y, g = two_group_data(n=800)
    frame = pd.DataFrame(X, columns=[f"x{k}" for k in range(4)])
    frame_groups = pd.DataFrame({"group": g})
    a = ConstrainedClassifier("ppr[group] >= ppr - 0.05", random_state=0).fit(X, y, groups=g)
    b = ConstrainedClassifier("ppr[group] >= ppr - 0.05", random_state=0).fit(frame, y, groups=frame_groups)
    c = ConstrainedClassifier("ppr[group] >= ppr - 0.05", random_state=0).fit(X, y, groups={"group": g})
    np.testing.assert_allclose(a.candidates_, b.candidates_)
    np.testing.assert_allclose(a.candidates_, c.candidates_)
    # slices may name X's own columns
    Xg = frame.assign(flag=(X[:, 3] > 0).astype(int))
    d = ConstrainedClassifier("ppr[flag=0] >= 0.2", random_state=0).fit(Xg, y)
    assert d.feasible_ and d.n_features_in_ == 5


def test_inputs_are_not_modified():
    X, y, g = two_group_data(n=500)
    w = np.ones(500)
    copies = [a.copy() for a in (X, y, g, w)]
    ConstrainedClassifier("ppr[group] >= 0.3", random_state=0).fit(X, y, groups=g, sample_weight=w)
    for a, b in zip((X, y, g, w), copies):
        np.testing.assert_array_equal(a, b)


def test_sample_weight_enters_the_rates():
    X, y, g = two_group_data(n=1500)
    w = np.where(g == "b", 3.0, 1.0)
    clf = ConstrainedClassifier("ppr[group=a] >= ppr - 0.02", random_state=0).fit(X, y, groups=g, sample_weight=w)
    report = clf.constraint_report(X, y, groups=g, sample_weight=w)
    assert _max_violation(report) <= 1e-3
    p = clf.predict_proba(X)[:, 1]
    np.testing.assert_allclose(report["lhs"].iloc[0], p[g == "a"].mean())
    np.testing.assert_allclose(report["rhs"].iloc[0], np.average(p, weights=w) - 0.02)


@pytest.mark.parametrize("fit_kwargs, message", [
    (dict(groups=None), r"no groups were given.*metadata routing.*set_fit_request\(groups=True\)"),
    (dict(groups={"race": np.array(["a"] * 300)}), "Unknown group column 'group'; known group columns: 'race'"),
    (dict(groups=np.array(["a", "b"] * 100)), "has 200 entries but X has 300 rows"),
])
def test_bad_groups(fit_kwargs, message):
    X, y, _ = two_group_data(n=300)
    with pytest.raises(ValueError, match=message):
        ConstrainedClassifier("ppr[group] >= 0.2").fit(X, y, **fit_kwargs)


def test_a_group_column_missing_from_a_dataframe_x_asks_for_groups():
    # X's columns were listed as the "known group columns", and groups= was never named
    X, y, _ = two_group_data(n=300)
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
    with pytest.raises(ValueError, match=r"Unknown group column 'group'; no groups were given, and X's columns "
                                         r"\(\['x0', 'x1'.*\]\) do not include it: pass groups=\.\.\."):
        ConstrainedClassifier("ppr[group] >= 0.2").fit(frame, y)


def test_bad_inputs_have_clear_errors():
    X, y, g = two_group_data(n=300)
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        ConstrainedClassifier().fit(Xn, y)
    with pytest.raises(ValueError, match="Only binary classification"):
        ConstrainedClassifier().fit(X, np.arange(300) % 3)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        ConstrainedClassifier().fit(X, y[:-1])
    with pytest.raises(ValueError, match="Unknown value 'c' for group column 'group'; known values: 'a', 'b'"):
        ConstrainedClassifier("tpr[group=c] >= 0.5").fit(X, y, groups=g)
    with pytest.raises(ValueError, match="position"):
        ConstrainedClassifier("tpr[group=c >= 0.5").fit(X, y, groups=g)
    with pytest.raises(ValueError, match="ratio of rates"):
        ConstrainedClassifier(objective="precision").fit(X, y)
    with pytest.raises(ValueError, match="baseline must hold"):
        ConstrainedClassifier("churn <= 0.1").fit(X, y, baseline=np.full(300, 7))
    with pytest.raises(ValueError, match="learning_rate"):
        ConstrainedClassifier(learning_rate=-1).fit(X, y)


@pytest.mark.parametrize("objective, loss, negated", [
    ("accuracy", "error_rate", "-accuracy"), ("recall", "fnr", "-recall"),
    ("tpr[group=a]", "fnr[group=a]", "-tpr[group=a]"), ("0.5 * tnr", "fpr", "-0.5 * tnr")])
def test_a_score_as_objective_is_refused_naming_its_loss(objective, loss, negated):
    # minimised, a score gives the worst classifier: accuracy 0.19 where 0.5 is a coin's
    X, y = make_classification(200, random_state=0)
    groups = np.where(np.arange(200) % 2, "a", "b")
    with pytest.raises(ValueError, match=rf"ConstrainedClassifier minimises its objective, and '{re.escape(objective)}' "
                                         rf"is a score \(higher is better\).*Pass the loss '{re.escape(loss)}' instead"):
        ConstrainedClassifier(objective=objective).fit(X, y, groups=groups)
    ConstrainedClassifier(objective=negated, max_iter=5).fit(X, y, groups=groups)  # maximised: accepted


@pytest.mark.parametrize("objective", ["-precision", "precision", -precision()])
def test_a_ratio_objective_names_metric_optimizer(objective):
    X, y = make_classification(200, random_state=0)
    with pytest.raises(ValueError, match=r"is a ratio of rates; ConstrainedClassifier minimises linear combinations "
                                         r"of rates\. MetricOptimizer minimises ratios.*metric='-precision'"):
        ConstrainedClassifier(objective=objective, constraints="tpr >= 0.8").fit(X, y)


def test_pipeline_and_grid_search_route_groups():
    X, y, g = two_group_data(n=1200)
    with config_context(enable_metadata_routing=True):
        clf = ConstrainedClassifier("ppr[group] >= ppr - 0.05", max_iter=300, random_state=0)
        pipe = make_pipeline(StandardScaler(), clf.set_fit_request(groups=True))
        pipe.fit(X, y, groups=g)
        assert pipe[-1].feasible_
        search = GridSearchCV(pipe, {"constrainedclassifier__constraints": [
            "ppr[group] >= ppr - 0.05", tpr(group="group") >= 0.9 * tpr()]}, cv=3)
        search.fit(X, y, groups=g)
        assert search.best_estimator_[-1].n_iter_ == 300
        assert clone(search.best_estimator_).get_params()["constrainedclassifier__constraints"] in (
            "ppr[group] >= ppr - 0.05", tpr(group="group") >= 0.9 * tpr())
        scores = cross_val_score(pipe, X, y, params={"groups": g}, cv=3)
        assert scores.shape == (3,) and scores.min() > 0.6


def test_goal_helpers_and_mixed_specs_are_accepted():
    X, y, g = two_group_data(n=1500)
    clf = ConstrainedClassifier([equal_opportunity("group", 0.05), "ppr >= 0.3"], random_state=0).fit(X, y, groups=g)
    assert [str(c) for c in clf.constraints_] == ["tpr[group=a] >= tpr - 0.05", "tpr[group=b] >= tpr - 0.05", "ppr >= 0.3"]
    assert clf.feasible_


def test_callback_can_stop_training():
    X, y, g = two_group_data(n=300)
    seen = []
    clf = ConstrainedClassifier(callback=lambda t, theta, values: seen.append(t) or t < 9).fit(X, y)
    assert clf.n_iter_ == 10 and seen == list(range(10))
    # only the object False stops: a falsy numpy value (a comparison's result) does not
    assert ConstrainedClassifier(max_iter=20, callback=lambda t, theta, values: np.False_).fit(X, y).n_iter_ == 20
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ConstrainedClassifier(max_iter=50, verbose=1).fit(X, y)


def test_callback_gets_the_params_its_values_were_measured_on():
    X, y, _ = two_group_data(n=300)
    seen = []
    clf = ConstrainedClassifier("ppr >= 0.6", max_iter=5,
                                callback=lambda t, theta, values: seen.append((theta.copy(), values.copy())))
    clf.fit(X, y)
    theta, values = seen[0]  # full batch, a snapshot at iteration 0: the values are the candidate's rates
    np.testing.assert_array_equal(theta, clf.candidates_[0])
    np.testing.assert_allclose(values, np.r_[clf.train_objective_[0], clf.train_constraints_[:, 0]])


def test_constraint_report_reads_a_ratio_in_its_own_units():
    from sklearn.metrics import precision_score

    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 2))
    y = (X[:, 0] + rng.normal(size=400) > 0).astype(int)
    clf = ConstrainedClassifier("precision >= 0.95", solution="best", max_iter=100, random_state=0)
    with pytest.warns(InfeasibleConstraintsWarning) as caught:
        clf.fit(X, y)
    assert any("The best solution, which predict uses" in str(w.message) for w in caught)
    row = clf.constraint_report(X, y).iloc[0]
    precision = precision_score(y, clf.predict(X))
    assert row["lhs"] == pytest.approx(precision)
    assert row["violation"] == pytest.approx(0.95 - precision)


def test_constraint_report_on_rows_that_leave_the_objective_undefined():
    # positives only: fpr has no rows to divide by, while the ppr constraints are measured
    X, y, g = two_group_data(n=600)
    clf = ConstrainedClassifier("ppr[group] >= ppr - 0.05", objective="fpr", max_iter=50,
                                random_state=0).fit(X, y, groups=g)
    pos = y == 1
    with pytest.warns(UserWarning, match=r"the objective is undefined on these rows, reported as NaN\. "
                                         r"The rate fpr is undefined.*none with label 0"):
        report = clf.constraint_report(X[pos], y[pos], groups=g[pos])
    objective = report["constraint"] == "objective: fpr"
    assert objective.sum() == 1 and report["lhs"][objective].isna().all()
    p = clf.predict_proba(X[pos])[:, 1]
    for value in np.unique(g):
        row = report[report["constraint"].str.startswith(f"ppr[group={value}]")].iloc[0]
        assert row["lhs"] == pytest.approx(p[g[pos] == value].mean())


def test_constraint_report_on_rows_without_a_fitted_group_or_with_a_new_one():
    X, y, g = two_group_data(n=600)
    clf = ConstrainedClassifier("tpr[group] >= 0.9 * tpr", max_iter=50, random_state=0).fit(X, y, groups=g)
    only = g == g[0]
    with pytest.warns(UserWarning, match=r"1 constraint\(s\) are undefined on these rows, reported as NaN"):
        report = clf.constraint_report(X[only], y[only], groups=g[only])
    kept = report["constraint"].str.startswith(f"tpr[group={g[0]}]")
    other = report["constraint"].str.startswith("tpr[") & ~kept
    assert kept.sum() == 1 and other.sum() == 1
    assert np.isfinite(report["violation"][kept]).all() and report["violation"][other].isna().all()
    renamed = g.astype(object).copy()
    renamed[:50] = "new"
    with pytest.warns(UserWarning, match=r"values the model was not constrained on .*'group': \['new'\]"):
        clf.constraint_report(X, y, groups=renamed)
    with pytest.raises(ValueError, match="Unknown group column 'group'"):
        clf.constraint_report(X, y)
    # the report describes the fitted model: a parameter set after fit does not change it
    clf.set_params(constraints=None)
    with pytest.warns(UserWarning, match=r"values the model was not constrained on .*'group': \['new'\]"):
        clf.constraint_report(X, y, groups=renamed)


def test_new_group_values_are_told_apart_from_fitted_ones_as_filters_match_them():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = (X[:, 0] + rng.normal(size=300) > 0).astype(int)
    g = pd.Series(np.r_[np.zeros(150), np.ones(150)], name="bin")  # float-coded, fitted as bin=0 and bin=1
    clf = ConstrainedClassifier("tpr[bin] >= tpr - 0.05", max_iter=30, random_state=0).fit(X, y, groups=g)
    batch = g.copy()
    batch.iloc[:3] = 0.5  # the batch's column reads 0.0, 0.5 and 1.0: only 0.5 is new
    with pytest.warns(UserWarning, match=r"not constrained on .*\{'bin': \['0\.5'\]\}"):
        report = clf.constraint_report(X, y, groups=batch)
    assert np.isfinite(report["violation"][report["constraint"].str.startswith("tpr[")]).all()
    # text codes: "1.0" is the fitted "1" only where no row holds "1" itself (filters match exactly
    # first), and fitted "01" and "1" beside a new "1.0" leave it uncovered, without an error
    for fitted, batch in ((["1", "2"], ["1", "1.0", "2"]), (["01", "1"], ["01", "1", "1.0"])):
        codes = pd.Series(np.resize(fitted, 300), name="code")
        clf = ConstrainedClassifier("ppr[code] >= 0.2", max_iter=10, random_state=0).fit(X, y, groups=codes)
        with pytest.warns(UserWarning, match=r"not constrained on .*\{'code': \['1\.0'\]\}"):
            clf.constraint_report(X, y, groups=pd.Series(np.resize(batch, 300), name="code"))


def test_a_baseline_of_class_labels_is_read_as_labels_even_when_they_look_like_decisions():
    from skrate.utils._validation import check_baseline

    classes = np.array([1, 2])  # label 1 is the negative class
    np.testing.assert_array_equal(check_baseline(np.ones(4, int), classes, 4), [0, 0, 0, 0])
    np.testing.assert_array_equal(check_baseline(np.array([1, 2, 2, 1]), classes, 4), [0, 1, 1, 0])
    np.testing.assert_array_equal(check_baseline(np.array([0, 1, 1, 0]), classes, 4), [0, 1, 1, 0])  # 0 is no label
    np.testing.assert_array_equal(check_baseline(np.array([0, 0, 1, 1]), np.array([0, 1]), 4), [0, 0, 1, 1])
    X, y, _ = two_group_data(n=300)
    labels = y + 1
    clf = ConstrainedClassifier("churn <= 0.05", random_state=0).fit(X, labels, baseline=np.ones(300, int))
    assert clf.predict_proba(X)[:, 1].mean() <= 0.05 + 1e-3  # the baseline said "class 1" (negative) everywhere


def test_a_baseline_with_a_missing_decision_is_refused_by_row():
    # a None among text labels failed in numpy's sort, a pandas NA in bool(NA), naming neither
    X, y, _ = two_group_data(n=300)
    labels = np.where(y == 1, "yes", "no")
    given = [labels.astype(object), y.astype(float), y.astype(object)]
    for b, missing in zip(given, [None, np.nan, None]):
        b[7] = missing
        with pytest.raises(ValueError, match=r"baseline has 1 missing decision\(s\) \(None, NaN or NA\), the first "
                                             r"in row 7; drop those rows or fill in"):
            ConstrainedClassifier("churn <= 0.1", max_iter=5).fit(X, labels, baseline=b)
    pd = pytest.importorskip("pandas")
    for b in (pd.Series(labels, dtype="string"), pd.Series(y, dtype="Int64")):
        b[7] = pd.NA
        with pytest.raises(ValueError, match=r"baseline has 1 missing decision\(s\).*row 7"):
            ConstrainedClassifier("churn <= 0.1", max_iter=5).fit(X, labels, baseline=b)


@pytest.mark.parametrize("make", [lambda: ConstrainedClassifier(max_iter=50),
                                  lambda: __import__("skrate").MetricOptimizer(metric="g_mean", max_iter=50)])
def test_a_failed_refit_leaves_the_estimator_unfitted(make):
    from sklearn.exceptions import NotFittedError

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = (X[:, 0] > 0).astype(int)
    est = make().fit(X, y)
    with pytest.raises(ValueError, match=r"y holds one class only, 0; binary classification needs"):
        est.fit(X[:, :2], np.zeros(200, int))
    # not the new n_features_in_ beside the old candidates: nothing fitted is left
    assert not [k for k in vars(est) if k.endswith("_") and not k.startswith("__")]
    with pytest.raises(NotFittedError):
        est.predict(X[:, :2])
    assert est.fit(X, y).predict(X).shape == (200,)


def _units_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=600) > 0).astype(int)
    g = np.where(rng.random(600) < 0.3, "a", "b")
    return X, y, g


@pytest.mark.parametrize("params", [{}, {"model": "mlp", "hidden_layer_sizes": (4,)},
                                    {"validation_fraction": 0.3, "batch_size": 64}])
def test_columns_in_extreme_units_are_fitted_as_in_unit_ones(params):
    # Columns in powers-of-two units (2^20, 2^-12) train exactly as unit ones: the game divides
    # them back by a power of two, and the parameters fold onto the user's columns.
    X, y, g = _units_data()
    units = np.array([1.0, 2.0**20, 2.0**-12])
    played = {"unit": [], "scaled": []}
    fits = {}
    for name, Z in (("unit", X), ("scaled", X * units)):
        fits[name] = ConstrainedClassifier(
            "tpr[group=a] >= 0.8", max_iter=100, random_state=0,
            callback=lambda it, p, v, seen=played[name]: seen.append(p.copy()), **params).fit(Z, y, groups=g)
    np.testing.assert_array_equal(fits["scaled"].predict_proba(X * units), fits["unit"].predict_proba(X))
    if "model" not in params:  # linear: the weights of x are the unit fit's divided by the units
        np.testing.assert_array_equal(fits["scaled"].candidates_[:, :3] * units, fits["unit"].candidates_[:, :3])
        np.testing.assert_array_equal(np.array(played["scaled"])[:, :3] * units, np.array(played["unit"])[:, :3])


def test_a_column_in_large_units_does_not_sink_the_fit():
    # a useless column in cents next to unit ones: Adam's steps on its raw weight moved the
    # scores by 5e4 each and the fit ended near chance
    X, y, g = _units_data()
    Xc = X.copy()
    Xc[:, 1] *= 1e6
    for model in ("linear", "mlp"):
        clf = ConstrainedClassifier("tpr >= 0.6", model=model, random_state=0)
        acc = [np.mean(clf.fit(Z, y).predict(Z) == y) for Z in (X, Xc)]
        assert acc[1] >= acc[0] - 0.01


def test_a_margin_that_pushes_a_ratio_bound_out_of_range_is_called_impossible():
    # precision >= 0.9 with margin 0.2 is precision >= 1.1: the advice said "train longer"
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 2))
    y = (X[:, 0] + rng.normal(size=400) > 0).astype(int)
    with pytest.warns(InfeasibleConstraintsWarning) as record:
        ConstrainedClassifier("precision >= 0.9", margin=0.2, max_iter=100, random_state=0).fit(X, y)
    message = str(record[-1].message)
    assert "No classifier at all can meet 'precision >= 1.1': precision lies in [0, 1], margin included" in message
    assert "or its margin" in message and "train longer" not in message


def test_a_column_near_the_largest_float_is_scaled_without_overflow():
    # its power-of-two divisor was 2**1024 = inf, and every candidate NaN
    X, y, _ = _units_data()
    X[:, 1] *= 1.5e308 / np.abs(X[:, 1]).max()
    clf = ConstrainedClassifier(max_iter=30, random_state=0).fit(X, y)
    assert np.isfinite(clf.candidates_).all() and np.mean(clf.predict(X) == y) > 0.7


def test_a_column_of_subnormal_values_is_refused_by_position():
    # no float divisor brings it to unit size: the weight on X overflowed, leaving NaN candidates
    # reported feasible (and a sparse X overflowed elsewhere)
    import scipy.sparse as sp

    from skrate import MetricOptimizer

    X, y, _ = _units_data()
    X[:, 1] *= 1e-309 / np.abs(X[:, 1]).max()
    for est in (ConstrainedClassifier("ppr <= 0.5", max_iter=5), MetricOptimizer("g_mean", max_iter=5)):
        for given in (X, sp.csr_matrix(X)):
            with pytest.raises(ValueError, match=r"X's column\(s\) \['1'\] \(by position\) hold no value above "
                                                 r"2.23e-308 in magnitude"):
                clone(est).fit(given, y)


@pytest.mark.parametrize("model", ["linear", "mlp"])
def test_an_offset_column_is_centred_for_the_game(model):
    # a year column (2015-2024) differs from row to row by a sliver of its size: played as is,
    # its weight never grew and accuracy fell from 0.93 to 0.61, with no warning
    rng = np.random.default_rng(0)
    year = rng.integers(2015, 2025, 1000).astype(float)
    x = rng.normal(size=1000)
    y = ((year - 2019.5) / 3 + 0.3 * x + 0.3 * rng.normal(size=1000) > 0).astype(int)
    accuracy = {}
    for name, Z in (("year", np.c_[year, x]), ("centred", np.c_[year - 2019.5, x])):
        clf = ConstrainedClassifier("tpr >= 0.6", model=model, random_state=0).fit(Z, y)
        accuracy[name] = np.mean(clf.predict_proba(Z)[:, 1].round() == y)
    assert accuracy["centred"] > 0.9 and accuracy["year"] >= accuracy["centred"] - 0.01


@pytest.mark.parametrize("sd", [0.1, 0.03, 0.01])
def test_a_column_of_small_spread_is_fitted_as_one_of_unit_spread(sd):
    # a column of size 0.04 was used as given: its weight had to reach 100, which the default
    # steps do not and the L2 penalty holds back (accuracy 0.56 where at unit size it is 0.92)
    from skrate import MetricOptimizer

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=400) > 0).astype(int)
    small = X * np.r_[sd, 1.0, 1.0]
    for est in (ConstrainedClassifier(random_state=0), ConstrainedClassifier("tpr >= 0.8", random_state=0),
                MetricOptimizer("g_mean", solver="three_player", random_state=0)):
        unit = np.mean(clone(est).fit(X, y).predict(X) == y)
        assert np.mean(clone(est).fit(small, y).predict(small) == y) >= unit - 0.02


def test_unscale_folds_the_shift_and_scale_into_the_parameters():
    from skrate.models import LinearModel, MLPModel, input_scale

    rng = np.random.default_rng(0)
    X = np.c_[rng.integers(2015, 2025, 50), 1e6 * rng.normal(size=50), rng.normal(size=50)]
    shift, scale = input_scale(X)
    assert shift[0] != 0 and shift[1:].tolist() == [0, 0] and scale[1] != 1 and scale[[0, 2]].tolist() == [1, 1]
    for model in (LinearModel(3), MLPModel(3, (4,))):
        thetas = rng.normal(size=(2, model.n_params))
        folded = model.unscale(thetas, (shift, scale))
        for theta, back in zip(thetas, folded):
            np.testing.assert_allclose(model.scores(X, back), model.scores((X - shift) / scale, theta), atol=1e-9)


@pytest.mark.parametrize("factor", [1e306, 1e-300])
def test_weights_of_any_magnitude_give_the_rates_of_unit_weights(factor):
    # the weight total of 1e306 x 1500 rows overflowed to inf (every rate NaN, a null model);
    # tiny weights are brought to unit size as well
    from skrate.metrics import audit

    X, y, g = two_group_data(n=1500)
    w = np.where(g == "b", 3.0, 1.0) + np.random.default_rng(0).random(1500)
    spec = "ppr[group=a] >= ppr - 0.02"
    ref = ConstrainedClassifier(spec, random_state=0).fit(X, y, groups=g, sample_weight=w)
    scaled = w * factor
    before = scaled.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        clf = ConstrainedClassifier(spec, random_state=0).fit(X, y, groups=g, sample_weight=scaled)
        report = clf.constraint_report(X, y, groups=g, sample_weight=scaled)
        table = audit(clf, X, y, groups=g, sample_weight=scaled, n_bootstrap=20, random_state=0)
    np.testing.assert_array_equal(scaled, before)
    np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(X), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(report["lhs"], ref.constraint_report(X, y, groups=g, sample_weight=w)["lhs"],
                               rtol=1e-12)
    expected = audit(clf, X, y, groups=g, sample_weight=w, n_bootstrap=20, random_state=0)
    pd.testing.assert_frame_equal(table, expected, check_exact=False, rtol=1e-9)


def test_feasible_judges_the_deployed_model_not_only_the_lp():
    # a column whose offset dwarfs its spread is centred for training; folding the centring back
    # into the parameters of the model predict uses loses the digits the decisions hang on. The
    # LP on the centred rows said feasible while the deployed model broke tpr >= 0.9 by 0.07
    rng = np.random.default_rng(3)
    g = (rng.random(500) < 0.35).astype(int)
    X = rng.normal(size=(500, 5))
    X[:, 4] = g
    y = (X[:, 0] + 0.7 * X[:, 1] - 0.8 * g + 0.6 * rng.normal(size=500) > 0).astype(int)
    X[:, 0] += 1e15
    with pytest.warns(InfeasibleConstraintsWarning, match="tpr >= 0.9"):
        clf = ConstrainedClassifier(["tpr >= 0.9", "fpr <= 0.2"], max_iter=300, random_state=1).fit(X, y)
    assert clf.fit_report_["train"].max() > 1e-6  # the premise: the deployed model breaks a constraint
    assert not clf.feasible_


@pytest.mark.parametrize("kind", ["game", "held_out", "oracle", "metric"])
def test_a_row_of_weight_zero_is_a_row_dropped(kind):
    # a group whose rows all weigh 0 was expanded over (UndefinedRateError), and weight-0 rows
    # landed on the held-out side of a split; scikit-learn's convention: weight 0 drops the row
    from sklearn.linear_model import LogisticRegression

    from skrate import MetricOptimizer

    rng = np.random.default_rng(0)
    g = rng.integers(0, 3, 300)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + 0.3 * g + rng.normal(size=300) > 0).astype(int)
    w = np.ones(300)
    w[g == 1] = 0.0
    w[::7] = 0.0
    keep = w > 0
    cons = ["tpr[group] >= tpr - 0.02", "tpr[group] <= tpr + 0.02"]
    make = {"game": lambda: ConstrainedClassifier(cons, max_iter=200, random_state=0),
            "held_out": lambda: ConstrainedClassifier(cons, max_iter=200, validation_fraction=0.3, random_state=0),
            "oracle": lambda: ConstrainedClassifier(cons, estimator=LogisticRegression(), solver="oracle_lagrangian",
                                                    random_state=0),
            "metric": lambda: MetricOptimizer("g_mean", cons[:1], random_state=0)}[kind]
    weighted = make().fit(X, y, groups=g, sample_weight=w)
    dropped = make().fit(X[keep], y[keep], groups=g[keep])
    np.testing.assert_array_equal(weighted.predict_proba(X), dropped.predict_proba(X))
    assert [str(c) for c in weighted.constraints_] == [str(c) for c in dropped.constraints_]
    assert not any("group=1" in str(c) for c in weighted.constraints_)


@pytest.mark.parametrize("kind", ["constrained", "mlp", "metric"])
def test_a_constant_column_gets_no_weight_of_rounding_size(kind):
    # a constant column's computed deviation is its mean's rounding (1e-16 of it): it was centred
    # and its residue scaled to unit size, so its weight came out near 1e13 against an intercept
    # of the same size, and moving the column by 1e-6 at predict time flipped every decision
    from skrate import MetricOptimizer
    from skrate.models import input_scale

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=400) > 0).astype(int)
    Xc = np.c_[X, np.full(400, 3.0)]
    shift, scale = input_scale(np.c_[Xc, rng.integers(2015, 2025, 400)])
    assert shift[3] == 0 and scale[3] == 1 and shift[4] != 0  # a column near its offset still is centred
    make = {"constrained": lambda: ConstrainedClassifier("tpr >= 0.6", max_iter=100, random_state=0),
            "mlp": lambda: ConstrainedClassifier("tpr >= 0.6", model="mlp", max_iter=100, random_state=0),
            "metric": lambda: MetricOptimizer("f1", random_state=0)}[kind]
    clf = make().fit(Xc, y)
    moved = Xc.copy()
    moved[:, 3] += 1e-6
    np.testing.assert_allclose(clf.predict_proba(moved), clf.predict_proba(Xc), atol=1e-3)
    if kind != "mlp":
        assert np.abs(clf.candidates_).max() < 1e3


def test_column_offsets_take_one_copy_of_x():
    # the moments were taken through three temporaries of X's size, the peak of whole fits
    import tracemalloc

    from skrate.models._input_scale import column_offsets

    X = np.random.default_rng(0).normal(size=(50_000, 20)) + 5.0
    before = X.copy()
    tracemalloc.start()
    try:
        shift = column_offsets(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 1.5 * X.nbytes
    np.testing.assert_array_equal(X, before)  # the input is untouched
    np.testing.assert_allclose(shift, X.mean(axis=0), rtol=1e-12)


@pytest.mark.parametrize("kind", ["constrained", "metric"])
def test_integer_weights_scale_the_inputs_as_repeated_rows(kind):
    # the built-in models' column scale was read from unweighted moments: a column near 100 on
    # most rows and 8000 on a tenth of them, weighted 20, scaled by 2048 weighted and by 8192
    # repeated, and the two fits differed by up to 1 in probability
    from skrate import MetricOptimizer
    from skrate.models import input_scale

    rng = np.random.default_rng(0)
    n = 300
    g = rng.integers(0, 2, n)
    big = rng.uniform(size=n) < 0.1
    X = np.column_stack([rng.normal(size=n), np.where(big, 8000.0, 100.0) * (1 + 0.1 * rng.normal(size=n))])
    y = (X[:, 0] + 0.5 * big + rng.normal(size=n) > 0).astype(int)
    w = np.where(big, 20, 1)
    rep = np.repeat(np.arange(n), w)
    assert input_scale(X, w.astype(float))[1][1] == input_scale(X[rep])[1][1]
    make = {"constrained": lambda: ConstrainedClassifier("tpr[group] >= tpr - 0.05", max_iter=200, random_state=0),
            "metric": lambda: MetricOptimizer("g_mean", solver="three_player", max_iter=200, random_state=0)}[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weighted = make().fit(X, y, groups=g, sample_weight=w)
        repeated = make().fit(X[rep], y[rep], groups=g[rep])
    np.testing.assert_allclose(weighted.candidates_, repeated.candidates_, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kind", ["constrained", "metric", "dro"])
def test_a_class_only_rows_of_weight_zero_hold_is_refused(kind):
    # with those rows dropped one class is left: ConstrainedClassifier fitted it silently and
    # predicted 0 everywhere, DROClassifier fitted a one-class problem
    from skrate import DROClassifier, MetricOptimizer

    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 2))
    y = np.where(X[:, 0] > 0, "yes", "no")
    w = np.where(y == "yes", 0.0, 1.0)
    make = {"constrained": lambda: ConstrainedClassifier(max_iter=50, random_state=0),
            "metric": lambda: MetricOptimizer("g_mean", random_state=0), "dro": lambda: DROClassifier()}[kind]
    with pytest.raises(ValueError, match=r"'yes' has sample_weight 0|hold only class 'no'"):
        make().fit(X, y, sample_weight=w)
    w[np.flatnonzero(y == "yes")[0]] = 1.0  # one weighted row of the class: fitted
    assert make().fit(X, y, sample_weight=w).classes_.tolist() == ["no", "yes"]


def test_weights_are_read_as_float64_and_checked_in_score():
    # float32 weights summed in float32 (candidates 1e-5 apart from the same float64 weights);
    # score took negative weights; text weights failed with numpy's message
    from skrate import DROClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = (X[:, 0] + rng.normal(size=200) > 0).astype(int)
    w = rng.uniform(0.1, 3.0, 200).astype(np.float32)
    make = lambda: ConstrainedClassifier("tpr >= 0.8", max_iter=100, random_state=0)  # noqa: E731
    single = make().fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(single.candidates_, make().fit(X, y, sample_weight=w.astype(float)).candidates_)
    for est in (single, DROClassifier().fit(X, y)):
        with pytest.raises(ValueError, match=r"sample_weight has negative entries"):
            est.score(X, y, sample_weight=-np.ones(200))
    with pytest.raises(ValueError, match=r"sample_weight must hold numbers"):
        make().fit(X, y, sample_weight=np.array(["a"] * 200))


def test_weight_zero_rows_are_checked_before_they_are_dropped():
    from sklearn.model_selection import PredefinedSplit

    from skrate import MetricOptimizer

    rng = np.random.default_rng(1)
    g = rng.integers(0, 2, 200)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + rng.normal(size=200) > 0).astype(int)
    w = np.ones(200)
    w[:5] = 0.0
    cons = ["tpr[group] >= tpr - 0.05"]
    for length in (207, 197):  # the mask's length is that of the rows as given, weight 0 or not
        with pytest.raises(ValueError, match=r"validation_mask must be a boolean \(or 0/1\) array with one entry "
                                             r"per row \(200\)"):
            ConstrainedClassifier(cons, max_iter=20).fit(X, y, groups=g, sample_weight=w,
                                                          validation_mask=np.arange(length) % 3 == 0)
    # a PredefinedSplit numbers the rows as given: renumbered onto the kept rows, as explicit splits are
    folds = np.arange(200) % 4
    keep = w > 0
    weighted = MetricOptimizer("g_mean", cons, cv=PredefinedSplit(folds), random_state=0).fit(
        X, y, groups=g, sample_weight=w)
    dropped = MetricOptimizer("g_mean", cons, cv=PredefinedSplit(folds[keep]), random_state=0).fit(
        X[keep], y[keep], groups=g[keep])
    np.testing.assert_array_equal(weighted.predict_proba(X), dropped.predict_proba(X))
    # and the reports on those rows do not count a group value only weightless rows hold
    g3 = np.where(np.arange(200) < 5, 7, g)
    fitted = ConstrainedClassifier(cons, max_iter=50, random_state=0).fit(X, y, groups=g3, sample_weight=w)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        fitted.constraint_report(X, y, groups=g3, sample_weight=w)


def _mean(p, mask):
    return p[mask].mean()


def test_constraint_report_on_rows_where_a_group_has_no_positives_is_nan_for_that_constraint_only():
    X, y, g = two_group_data(n=600)
    spec = ["tpr[group] >= 0.9 * tpr", "ppr >= 0.3", "fpr[group=b] <= 0.3"]
    clf = ConstrainedClassifier(spec, max_iter=50, random_state=0).fit(X, y, groups=g)
    rows = ~((g == "b") & (y == 1))  # group b keeps its negatives, so it is no absent value
    X, y, g = X[rows], y[rows], g[rows]
    assert (g == "b").any() and not y[g == "b"].any()
    with pytest.warns(UserWarning, match=r"1 constraint\(s\) are undefined on these rows, reported as NaN.*"
                                         r"no positives, for a tpr.*\['tpr\[group=b\] >= 0.9 \* tpr'\]"):
        report = clf.constraint_report(X, y, groups=g)
    assert list(report["constraint"]) == ["tpr[group=a] >= 0.9 * tpr", "tpr[group=b] >= 0.9 * tpr", "ppr >= 0.3",
                                          "fpr[group=b] <= 0.3", "objective: error_rate"]
    assert report.iloc[1][["lhs", "rhs", "violation"]].isna().all()
    # every other row as a direct computation on the model's probabilities
    p = clf.predict_proba(X)[:, 1]
    expected = [
        (_mean(p, (g == "a") & (y == 1)), 0.9 * _mean(p, y == 1)),
        (p.mean(), 0.3),
        (_mean(p, (g == "b") & (y == 0)), 0.3),
    ]
    for (lhs, rhs), (_, row) in zip(expected, report.iloc[[0, 2, 3]].iterrows()):
        assert row["lhs"] == pytest.approx(lhs, rel=1e-10)
        assert row["rhs"] == pytest.approx(rhs, rel=1e-10)
    assert report["violation"].iloc[0] == pytest.approx(expected[0][1] - expected[0][0], rel=1e-8)
    assert report["violation"].iloc[2] == pytest.approx(0.3 - p.mean(), rel=1e-8)
    assert report["violation"].iloc[3] == pytest.approx(expected[2][0] - 0.3, rel=1e-8)
    assert report["lhs"].iloc[4] == pytest.approx(np.mean(y * (1 - p) + (1 - y) * p), rel=1e-10)


@pytest.mark.parametrize("helper, value, group", [
    (minimum_coverage, 0.55, "group"),  # binds on group b
    (minimum_coverage, 0.7, None),  # binds overall
    (minimum_accuracy, 0.78, "group"),  # binds on group b, at a's expense
])
def test_a_fit_with_a_minimum_goal_meets_it_on_the_training_data(helper, value, group):
    X, y, g = two_group_data(n=1500)
    cells = {"all": np.ones(len(y), bool)} if group is None else {v: g == v for v in np.unique(g)}

    def rates(model):  # the expected coverage (share predicted positive) or accuracy, by hand
        p = model.predict_proba(X)[:, 1]
        hit = p if helper is minimum_coverage else y * p + (1 - y) * (1 - p)
        return {v: hit[m].mean() for v, m in cells.items()}

    unconstrained = ConstrainedClassifier(random_state=0).fit(X, y, groups=g)
    assert min(rates(unconstrained).values()) < value - 0.01  # the goal binds on this data
    clf = ConstrainedClassifier(helper(value, group), random_state=0).fit(X, y, groups=g)
    assert clf.feasible_
    got = rates(clf)
    assert min(got.values()) >= value - 1e-3
    report = clf.constraint_report(X, y, groups=g).iloc[:-1]
    assert len(report) == len(cells)
    np.testing.assert_allclose(report["lhs"], list(got.values()), rtol=1e-10)
    np.testing.assert_allclose(report["violation"], value - np.array(list(got.values())), atol=1e-10)


def test_a_bound_on_ratios_over_one_denominator_is_taken_as_a_rate_constraint():
    """``skrate.generalized``'s ``precision(group="group") >= 0.6`` and ``f_measure() <= 0.3``
    (``F1 >= 0.7``) are rate constraints once multiplied out; other metric constraints are not."""
    from skrate.generalized import f_measure, kld_fairness
    from skrate.generalized import precision as metric_precision

    X, y, g = two_group_data(n=800)
    fits = [ConstrainedClassifier(con, max_iter=300, random_state=0).fit(X, y, groups=g)
            for con in (metric_precision(group="group") >= 0.6, "precision[group] >= 0.6")]
    np.testing.assert_array_equal(fits[0].predict_proba(X), fits[1].predict_proba(X))
    assert [str(c) for c in fits[0].constraints_] == [str(c) for c in fits[1].constraints_]
    clf = ConstrainedClassifier(f_measure() <= 0.3, random_state=0).fit(X, y)
    p = clf.predict_proba(X)[:, 1]
    assert clf.feasible_ and 2 * (p @ y) / (p.sum() + y.sum()) >= 0.7 - 1e-6
    assert str(clf.constraints_[0]) == "f1 >= 0.7"
    with pytest.raises(TypeError, match=r"kld\[group\] <= 0.01 is a metric constraint.*precision\(\) >= 0.8"):
        ConstrainedClassifier(kld_fairness("group", 0.01)).fit(X, y, groups=g)
