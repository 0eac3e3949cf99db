"""Rate and violation scorers: values, signs, and groups routed through cross_validate and GridSearchCV."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn import config_context
from sklearn.dummy import DummyClassifier
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold, cross_validate

from skrate import ConstrainedClassifier
from skrate.metrics import make_metric_scorer, make_rate_scorer, make_violation_scorer
from skrate.model_selection import RankRefit
from skrate.problem import GroupTable, RateData, constraint_rows
from skrate.rates import as_constraints, precision

SPEC = ["ppr[race] >= ppr - 0.05", "tpr[race=b] >= tpr - 0.02"]


def _data(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    race = rng.choice(["a", "b"], n, p=[0.6, 0.4])
    X = rng.normal(size=(n, 3))
    X[:, 2] += 1.2 * (race == "a")
    y = (X[:, 0] + 0.7 * X[:, 2] + rng.normal(size=n) > 0.4).astype(int)
    return X, np.where(y == 1, "yes", "no"), pd.DataFrame({"race": race})


def _max_violation(spec, y01, p, groups):
    data = RateData(y01, np.ones(len(y01)), GroupTable.from_input(groups, None, len(y01)))
    return max(r["violation"] for r in constraint_rows(as_constraints(spec), data, p))


def test_rate_scorer_values_and_sign():
    X, y, g = _data()
    clf = LogisticRegression().fit(X, y)
    y01, p = (y == "yes").astype(int), (clf.predict(X) == "yes").astype(float)
    b = (g.race == "b").to_numpy()
    tpr_b = np.sum(p * y01 * b) / np.sum(y01 * b)
    assert make_rate_scorer("tpr[race=b]")(clf, X, y, groups=g) == pytest.approx(tpr_b)
    error = np.mean(p != y01)
    assert make_rate_scorer("error", greater_is_better=False)(clf, X, y) == pytest.approx(-error)
    prec = np.sum(p * y01 * b) / np.sum(p * b)
    assert make_rate_scorer(precision(race="b"))(clf, X, y, groups=g) == pytest.approx(prec)
    w = np.linspace(0.5, 2, len(y))
    assert make_rate_scorer("error")(clf, X, y, sample_weight=w) == pytest.approx(np.sum(w * (p != y01)) / w.sum())


def test_violation_scorer_is_minus_the_largest_violation():
    X, y, g = _data()
    clf = LogisticRegression().fit(X, y)
    y01, p = (y == "yes").astype(int), (clf.predict(X) == "yes").astype(float)
    expected = _max_violation(SPEC, y01, p, g)
    assert expected > 0  # the unconstrained model breaks the constraints here
    assert make_violation_scorer(SPEC)(clf, X, y, groups=g) == pytest.approx(-expected)


def test_stochastic_models_are_scored_in_expectation():
    X, y, g = _data()
    clf = ConstrainedClassifier(SPEC, max_iter=150, random_state=0).fit(X, y, groups=g)
    y01, p = (y == "yes").astype(int), clf.predict_proba(X)[:, 1]
    assert make_violation_scorer(SPEC)(clf, X, y, groups=g) == pytest.approx(-_max_violation(SPEC, y01, p, g))
    hard = (clf.predict(X) == "yes").astype(float)
    assert make_violation_scorer(SPEC, decisions="predict")(clf, X, y, groups=g) == pytest.approx(
        -_max_violation(SPEC, y01, hard, g))


def test_bad_specs():
    with pytest.raises(ValueError, match="expands over the group column"):
        make_rate_scorer("tpr[race]")
    with pytest.raises(ValueError, match="at least one constraint"):
        make_violation_scorer([])
    with pytest.raises(ValueError, match="decisions must be one of"):
        make_rate_scorer("tpr", decisions="proba")
    X, y, g = _data(200)
    clf = LogisticRegression().fit(X, y)
    with pytest.raises(TypeError, match="Unexpected scorer argument"):
        make_rate_scorer("tpr")(clf, X, y, group=g)
    with pytest.raises(ValueError, match="Unknown group column 'race'"):
        make_violation_scorer(SPEC)(clf, X, y)


def test_cross_validate_routes_groups_to_fit_and_scorers():
    X, y, g = _data()
    error = make_rate_scorer("error", greater_is_better=False)
    violation = make_violation_scorer(SPEC)
    cv = KFold(3, shuffle=True, random_state=0)
    with config_context(enable_metadata_routing=True):
        est = ConstrainedClassifier(SPEC, max_iter=150, random_state=0).set_fit_request(groups=True)
        violation.set_score_request(groups=True)
        error.set_score_request(groups=True)
        res = cross_validate(est, X, y, params={"groups": g}, cv=cv, return_estimator=True,
                             return_indices=True, scoring={"error": error, "violation": violation})
    for k, test in enumerate(res["indices"]["test"]):
        model = res["estimator"][k]
        p = model.predict_proba(X[test])[:, 1]
        y01 = (y[test] == "yes").astype(int)
        assert res["test_error"][k] == pytest.approx(-np.mean(np.where(y01 == 1, 1 - p, p)))
        assert res["test_violation"][k] == pytest.approx(-_max_violation(SPEC, y01, p, g.iloc[test]))
        # The fold's fit saw its groups: the constraints were compiled for the training rows.
        assert [str(c) for c in model.constraints_][:2] == ["ppr[race=a] >= ppr - 0.05", "ppr[race=b] >= ppr - 0.05"]


def test_grid_search_with_routed_groups_and_rank_refit():
    X, y, g = _data()
    scoring = {"error": make_rate_scorer("error", greater_is_better=False),
               "violation": make_violation_scorer(SPEC)}
    with config_context(enable_metadata_routing=True):
        scoring["violation"].set_score_request(groups=True)
        scoring["error"].set_score_request(groups=False)
        est = ConstrainedClassifier(max_iter=150, random_state=0).set_fit_request(groups=True)
        search = GridSearchCV(est, {"constraints": [None, SPEC]}, scoring=scoring,
                              refit=RankRefit("error", "violation"), cv=KFold(3))
        search.fit(X, y, groups=g)
    res = search.cv_results_
    # The unconstrained setting breaks the constraints on held-out folds, the constrained one less so.
    assert -res["mean_test_violation"][0] > -res["mean_test_violation"][1]
    assert search.best_index_ == RankRefit("error", "violation")(res)
    err, vio = -res["mean_test_error"], np.maximum(-res["mean_test_violation"], 0)
    best = search.best_index_
    assert not np.any((err <= err[best]) & (vio <= vio[best]) & ((err < err[best]) | (vio < vio[best])))
    assert hasattr(search.best_estimator_, "solutions_")


def test_scoring_without_routing_rejects_nothing_it_needs():
    X, y, g = _data(300)
    clf = LogisticRegression().fit(X, y)
    # Direct calls work without enabling routing (groups are plain keyword arguments).
    assert np.isfinite(make_violation_scorer(SPEC)(clf, X, y, groups=g))
    with pytest.raises(RuntimeError, match="metadata routing"):
        make_violation_scorer(SPEC).set_score_request(groups=True)


def test_violation_scorer_reads_ratios_as_ratios():
    from sklearn.metrics import precision_score

    X, y, g = _data()
    clf = LogisticRegression().fit(X, y)
    prec = precision_score(y, clf.predict(X), pos_label="yes")
    assert make_violation_scorer("precision >= 0.8")(clf, X, y) == pytest.approx(-(0.8 - prec))
    # With a linear constraint in the same units, the larger of the two violations is scored.
    ppr = np.mean(clf.predict(X) == "yes")
    both = make_violation_scorer(["precision >= 0.8", "ppr <= 0.25"])(clf, X, y)
    assert both == pytest.approx(-max(0.8 - prec, ppr - 0.25))
    # Precision without a positive prediction is undefined, not met.
    never = DummyClassifier(strategy="constant", constant="no").fit(X, y)
    with pytest.warns(UndefinedMetricWarning, match="max_violation is undefined for these decisions, scored NaN"):
        assert np.isnan(make_violation_scorer(["precision >= 0.5", "ppr <= 0.5"])(never, X, y))
    # as the rate itself, which names the slice where nothing is predicted positive
    with pytest.warns(UndefinedMetricWarning, match=r"precision\[race=b\] is undefined for these decisions, scored "
                                                    r"NaN: the model predicts no positives in the slice race=b"):
        assert np.isnan(make_rate_scorer("precision[race=b]")(never, X, y, groups=g))
    with pytest.warns(UndefinedMetricWarning, match="1 - precision is undefined for these decisions"):
        assert np.isnan(make_metric_scorer("precision")(never, X, y))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a defined value says nothing
        assert make_rate_scorer("precision")(clf, X, y) == pytest.approx(prec)


def test_violation_scorer_of_a_metric_constraint_is_nan_where_its_ratio_is_undefined():
    from sklearn.base import BaseEstimator, ClassifierMixin

    from skrate.generalized import predictive_parity

    class Fixed(ClassifierMixin, BaseEstimator):  # predicts the labels it is given, whatever X
        def __init__(self, labels=None):
            self.labels = labels

        def fit(self, X, y):
            self.classes_ = np.unique(y)
            return self

        def predict(self, X):
            return self.labels

    X, y, g = _data(300)
    parity = make_violation_scorer(predictive_parity("race", 0.05))
    # the solvers' clipped 0 / eps precision read as "holds" before
    with pytest.warns(UndefinedMetricWarning, match="max_violation is undefined for these decisions"):
        assert np.isnan(parity(Fixed(np.full(300, "no")).fit(X, y), X, y, groups=g))
    # positives in group a only: group b's precision is undefined
    only_a = np.where((g.race == "a").to_numpy() & (X[:, 0] > 0), "yes", "no")
    with pytest.warns(UndefinedMetricWarning, match="max_violation is undefined for these decisions"):
        assert np.isnan(parity(Fixed(only_a).fit(X, y), X, y, groups=g))
    assert np.isfinite(parity(Fixed(np.where(X[:, 0] > 0, "yes", "no")).fit(X, y), X, y, groups=g))


def test_scorers_refuse_negative_weights_as_fit_and_audit_do():
    X, y, g = _data(300)
    clf = LogisticRegression().fit(X, y)
    w = np.ones(300)
    w[5] = -1
    for scorer in (make_violation_scorer("tpr >= 0.9"), make_rate_scorer("tpr")):
        with pytest.raises(ValueError, match=r"sample_weight has negative entries \(smallest -1, row 5\)"):
            scorer(clf, X, y, sample_weight=w)


def test_rows_of_weight_zero_are_rows_dropped_in_every_scorer():
    # a group value held only by a row of weight 0 was expanded over: its constraint undefined,
    # the violation scored NaN (kld_fairness raised), where fit and the reports drop the row
    from skrate.generalized import kld_fairness
    from skrate.metrics import make_metric_scorer

    X, y, g = _data(400)
    clf = LogisticRegression().fit(X, y)
    race = g["race"].to_numpy().copy()
    w = np.ones(400)
    race[5], w[5] = "c", 0.0
    w[[10, 20, 30]] = 0.0
    keep = w > 0
    for scorer in (make_violation_scorer("tpr[race] >= tpr - 0.05"), make_violation_scorer(kld_fairness("race", 0.01)),
                   make_rate_scorer("tpr[race=a]"), make_metric_scorer("f1")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "undefined" warning either
            weighted = scorer(clf, X, y, groups={"race": race}, sample_weight=w)
        dropped = scorer(clf, X[keep], y[keep], groups={"race": race[keep]})
        assert np.isfinite(weighted) and weighted == pytest.approx(dropped, rel=1e-12, abs=1e-15)


def test_metric_scorers_score_nan_on_rows_that_leave_a_rate_undefined():
    # a metric constraint raised a plain ValueError where a rate constraint scored NaN with a warning
    from sklearn.exceptions import UndefinedMetricWarning

    from skrate.generalized import g_mean_at_least
    from skrate.metrics import make_metric_scorer

    X, y, g = _data(400)
    clf = LogisticRegression().fit(X, y)
    race = g["race"].to_numpy()
    rows = ~((race == "b") & (y == "yes"))  # no positives of race b
    for scorer, what in ((make_violation_scorer(g_mean_at_least(0.5, group="race")), "max_violation"),
                         (make_violation_scorer("tpr[race] >= tpr - 0.1"), "max_violation"),
                         (make_metric_scorer(g_mean_at_least(0.5, group="race").metric), None)):
        with pytest.warns(UndefinedMetricWarning, match=r"is undefined on these rows, scored NaN: .*tpr\[race=b\]"):
            assert np.isnan(scorer(clf, X[rows], y[rows], groups={"race": race[rows]}))
    # a metric scorer over all rows reads no slice: defined
    assert np.isfinite(make_metric_scorer("g_mean")(clf, X[rows], y[rows]))


def test_scorers_take_baseline_class_labels_as_fit_does():
    X, y, g = _data()
    clf = LogisticRegression().fit(X, y)
    base = LogisticRegression().fit(X[:, :1], y).predict(X[:, :1])
    churn = np.mean(clf.predict(X) != base)
    assert make_rate_scorer("churn")(clf, X, y, baseline=base) == pytest.approx(churn)
    assert make_violation_scorer("churn <= 0.01")(clf, X, y, baseline=base) == pytest.approx(0.01 - churn)
    with pytest.raises(ValueError, match=r"class labels \['no', 'yes'\]"):
        make_rate_scorer("churn")(clf, X, y, baseline=np.where(base == "yes", "y", "n"))


def test_a_rate_the_rows_leave_undefined_scores_nan_with_a_warning_naming_why():
    from sklearn.exceptions import UndefinedMetricWarning

    X, y, g = _data()
    clf = LogisticRegression().fit(X, y)
    no_positive_b = ~((g.race == "b").to_numpy() & (y == "yes"))  # rows without a positive in group b
    Xs, ys, gs = X[no_positive_b], y[no_positive_b], g[no_positive_b]
    with pytest.warns(UndefinedMetricWarning, match=r"tpr\[race=b\] is undefined on these rows, scored NaN") as record:
        assert np.isnan(make_rate_scorer("tpr[race=b]")(clf, Xs, ys, groups=gs))
    assert record[0].filename == __file__  # the user's line, not the library's
    with pytest.warns(UndefinedMetricWarning, match="max_violation is undefined"):
        assert np.isnan(make_violation_scorer(SPEC)(clf, Xs, ys, groups=gs))
    assert np.isfinite(make_violation_scorer(SPEC)(clf, X, y, groups=g))
    # a value these rows do not hold (a fold without the group, or a typo): NaN in every fold
    # alike, where it used to raise in the folds without the group only
    with pytest.warns(UndefinedMetricWarning, match="Unknown value 'c' for group column 'race'; known values: 'a', 'b'"):
        assert np.isnan(make_rate_scorer("tpr[race=c]")(clf, X, y, groups=g))
    without_b = (g.race != "b").to_numpy()
    with pytest.warns(UndefinedMetricWarning, match="Unknown value 'b'"):
        assert np.isnan(make_violation_scorer("tpr[race=b] >= 0.5")(clf, X[without_b], y[without_b],
                                                                     groups=g[without_b]))


def test_metric_scorer_is_minus_the_metric_optimizer_loss():
    from sklearn.metrics import f1_score

    from skrate import MetricOptimizer
    from skrate.generalized import g_mean_at_least, kld_fairness
    from skrate.metrics import make_metric_scorer

    X, y, g = _data()
    clf = LogisticRegression().fit(X, y)
    yhat = clf.predict(X)
    assert make_metric_scorer("f1")(clf, X, y) == pytest.approx(f1_score(y, yhat, pos_label="yes") - 1)
    y01, p = (y == "yes").astype(int), (yhat == "yes").astype(float)
    g_mean = np.sqrt(p[y01 == 1].mean() * (1 - p[y01 == 0].mean()))
    assert make_metric_scorer("g_mean")(clf, X, y) == pytest.approx(g_mean - 1)
    # a stochastic MetricOptimizer is scored in expectation, as its metric_values reads it
    opt = MetricOptimizer("g_mean", constraints=kld_fairness("race", 0.01), random_state=0).fit(X, y, groups=g)
    values = opt.metric_values(X, y, groups=g)
    assert make_metric_scorer("g_mean")(opt, X, y) == pytest.approx(-values["objective"])
    worst = max(v for k, v in values.items() if k != "objective")
    assert make_violation_scorer(kld_fairness("race", 0.01))(opt, X, y, groups=g) == pytest.approx(-worst)
    mixed = [g_mean_at_least(0.6), "ppr[race] >= ppr - 0.05"]
    expected = max(np.sqrt(p[y01 == 1].mean() * (1 - p[y01 == 0].mean())) * -1 + 0.6,
                   _max_violation("ppr[race] >= ppr - 0.05", y01, p, g))
    assert make_violation_scorer(mixed)(clf, X, y, groups=g) == pytest.approx(-expected)
    with pytest.raises(ValueError, match="is a score"):
        make_metric_scorer("accuracy")
    with pytest.raises(ValueError, match="average_precision"):
        make_metric_scorer("pr_auc")
    with config_context(enable_metadata_routing=True):
        search = GridSearchCV(MetricOptimizer("g_mean"), {"solver": ["frank_wolfe", "oracle"]},
                              scoring=make_metric_scorer("g_mean"), cv=3).fit(X, y)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()


def test_scorers_show_what_they_score():
    from skrate.metrics import make_metric_scorer

    assert repr(make_metric_scorer("g_mean")) == "make_metric_scorer(metric 1 - g_mean(tpr, tnr), decisions='auto')"
    assert repr(make_violation_scorer(["ppr >= 0.1", "tpr >= 0.5"], decisions="predict")) == (
        "make_violation_scorer(max violation of ppr >= 0.1; tpr >= 0.5, decisions='predict')")
    assert repr(make_rate_scorer("fpr", greater_is_better=False)) == (
        "make_rate_scorer(rate fpr, greater_is_better=False, decisions='auto')")


def test_ratio_of_rates_that_cancel_to_zero_is_read_as_zero_not_rounding_noise():
    # baseline == model: wins and losses are 0, but their signed sums came out at 1e-15, and
    # the win-loss ratio was reported as 0.27 (and 3.8e12 with wins and no losses)
    from sklearn.linear_model import LogisticRegression
    from skrate.datasets import load_compas
    from skrate.metrics import make_rate_scorer, make_violation_scorer
    d = load_compas()
    X, y = d.data, d.target
    clf = LogisticRegression(max_iter=1000).fit(X, y)
    same = clf.predict(X)
    assert make_rate_scorer("wins")(clf, X, y, baseline=same) == 0.0
    with pytest.warns(UndefinedMetricWarning, match="the ratio's denominator losses is 0"):
        assert np.isnan(make_rate_scorer("win_loss_ratio")(clf, X, y, baseline=same))
    with pytest.warns(UndefinedMetricWarning, match="max_violation is undefined for these decisions"):
        assert np.isnan(make_violation_scorer("win_loss_ratio >= 2")(clf, X, y, baseline=same))
    worse = same.copy()
    flip = np.flatnonzero(same == y)[:100]
    worse[flip] = 1 - worse[flip]  # the model wins on those rows and loses on none
    assert make_rate_scorer("win_loss_ratio")(clf, X, y, baseline=worse) == np.inf


def test_scorers_take_class_labels_from_the_threshold_tuner():
    # TunedThresholdClassifierCV calls the scorer's function with class labels, not 0/1
    from sklearn.model_selection import TunedThresholdClassifierCV

    from skrate.metrics import make_metric_scorer, make_rate_scorer, make_violation_scorer

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 2))
    y01 = (X[:, 0] + rng.normal(size=400) > 1).astype(int)
    for scorer in (make_metric_scorer("g_mean"), make_rate_scorer("tpr - fpr"), make_violation_scorer("tpr >= 0.8")):
        tuned = [TunedThresholdClassifierCV(LogisticRegression(), scoring=scorer).fit(X, y)
                 for y in (y01, np.where(y01 == 1, "yes", "no"), np.where(y01 == 1, 1, -1))]
        for other in tuned[1:]:
            assert other.best_threshold_ == tuned[0].best_threshold_
            assert other.best_score_ == tuned[0].best_score_
    with pytest.raises(ValueError, match=r"hold the labels \['a', 'b', 'c'\]; a rate scores two classes"):
        make_metric_scorer("g_mean")._score_func(np.array(["a", "b"]), np.array(["c", "a"]))


def test_class_labels_of_a_fold_holding_one_class_read_as_that_class():
    # labels 1 and 2 (2 positive), as the threshold tuner passes them: a fold whose y_true is all
    # 1 is a fold of negatives, whatever 0/1 its labels happen to look like, and scores as 0/1 do
    y01, p01 = np.array([0, 0, 0, 0, 1, 1]), np.array([0, 1, 1, 0, 1, 0])
    for spec in ("fpr", "ppr", "tnr"):
        score = make_rate_scorer(spec)._score_func
        assert score(y01[:4] + 1, p01[:4] + 1) == score(y01[:4], p01[:4]) == 0.5
        assert score(y01 + 1, p01 + 1) == score(y01, p01)
    g_mean = make_metric_scorer("g_mean")._score_func
    assert g_mean(y01 + 1, p01 + 1) == g_mean(y01, p01) == pytest.approx(np.sqrt(0.5 * 0.5))


def test_the_threshold_tuner_routes_a_baseline_of_class_labels():
    # it passes the routed baseline as given: labels, as fit takes them, were refused as no 0/1
    import sklearn
    from sklearn.model_selection import TunedThresholdClassifierCV

    from skrate.metrics import make_violation_scorer

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 2))
    y01 = (X[:, 0] + rng.normal(size=400) > 0).astype(int)
    old01 = (X[:, 1] + rng.normal(size=400) > 0).astype(int)
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = make_violation_scorer("churn <= 0.1").set_score_request(baseline=True)
        tuned = [TunedThresholdClassifierCV(LogisticRegression(), scoring=scorer).fit(X, y, baseline=old)
                 for y, old in [(y01, old01), (np.where(y01 == 1, "yes", "no"), np.where(old01 == 1, "yes", "no")),
                                (np.where(y01 == 1, "yes", "no"), old01)]]
    for other in tuned[1:]:
        assert other.best_threshold_ == tuned[0].best_threshold_
        assert other.best_score_ == tuned[0].best_score_


def test_expected_decisions_of_a_classifier_without_probabilities_are_refused_by_name():
    from sklearn.svm import LinearSVC

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="decisions='expected' needs predict_proba, which LinearSVC does not have"):
        make_rate_scorer("tpr", decisions="expected")(LinearSVC().fit(X, y), X, y)


def test_float_labels_are_matched_to_integer_classes_exactly():
    # float64 holds 2**53 but not 2**53 + 1: compared in float64 both classes are one number,
    # and every float label would read as the positive class
    X = np.random.default_rng(0).normal(size=(60, 2))
    classes = np.array([2**53, 2**53 + 1])
    clf = LogisticRegression().fit(X, classes[(X[:, 0] > 0).astype(int)])
    y_float = np.full(60, 2.0**53)  # exactly the negative class 2**53
    said_positive = np.mean(clf.predict(X) == classes[1])
    assert 0 < said_positive < 1
    scorer = make_rate_scorer("error_rate", greater_is_better=True)
    assert scorer(clf, X, y_float) == pytest.approx(said_positive)
    assert scorer(clf, X, np.full(60, 2**53)) == pytest.approx(said_positive)
