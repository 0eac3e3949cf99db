"""RankRefit (Eq. 18 as a GridSearchCV refit) and tradeoff_curve."""

import warnings

import numpy as np
import pandas as pd
import pytest
from joblib import parallel_backend
from scipy.stats import rankdata

from skrate import ConstrainedClassifier
from skrate.model_selection import RankRefit, tradeoff_curve
from skrate.problem import GroupTable, RateData, constraint_rows
from skrate.rates import as_constraints, statistical_parity


def _results(error, violation):
    """cv_results_ as scikit-learn stores them: scores, higher is better."""
    return {"mean_test_error": -np.asarray(error, float), "mean_test_violation": -np.asarray(violation, float),
            "params": [{} for _ in error]}


def test_rank_refit_minimises_the_larger_rank():
    # error ranks 1..5; violations: two feasible settings tie for the best violation rank.
    error = [0.10, 0.12, 0.15, 0.20, 0.30]
    violation = [0.20, 0.05, 0.10, -0.01, -0.02]
    # ranks: error 1,2,3,4,5 ; violation 5,3,4,1,1 -> max 5,3,4,4,5 -> pick index 1
    assert RankRefit()(_results(error, violation)) == 1
    # All feasible: the lowest error wins.
    assert RankRefit()(_results(error, [-0.1] * 5)) == 0


def test_rank_refit_gives_exact_ties_to_the_first_setting_as_scikit_learn():
    assert RankRefit()(_results([0.1] * 3, [0.0] * 3)) == 0
    assert RankRefit()(_results([0.2, 0.1, 0.1, 0.1], [-0.01, 0.02, -0.01, -0.01])) == 2
    assert RankRefit()(_results([0.1, 0.1], [0.05, 0.05])) == 0


def test_rank_refit_reads_every_feasible_setting_as_equally_feasible():
    # a setting meeting its constraints by more slack is no better: equal errors tie, and the
    # tie goes to the first setting; the error alone decides among feasible ones
    assert RankRefit()(_results([0.1, 0.1], [-0.01, -0.05])) == 0
    assert RankRefit()(_results([0.1, 0.1, 0.1], [0.0, -0.2, -0.1])) == 0
    assert RankRefit()(_results([0.2, 0.1, 0.1], [-0.3, 0.0, -0.2])) == 1


@pytest.mark.parametrize("seed", range(20))
def test_rank_refit_pick_is_not_dominated_and_has_minimal_score(seed):
    rng = np.random.default_rng(seed)
    n = 12
    error = rng.choice([0.1, 0.2, 0.3, 0.4], n)  # ties on purpose
    violation = rng.choice([-0.05, 0.0, 0.02, 0.1], n)
    pick = RankRefit()(_results(error, violation))
    vio = np.maximum(violation, 0)
    dominated = (error <= error[pick]) & (vio <= vio[pick]) & ((error < error[pick]) | (vio < vio[pick]))
    assert not dominated.any()
    score = np.maximum(rankdata(error, method="min"), rankdata(vio, method="min"))
    assert score[pick] == score.min()


def test_rank_refit_skips_failed_settings_and_names_missing_scorers():
    assert RankRefit()(_results([np.nan, 0.2, 0.1], [0.0, 0.0, np.nan])) == 1
    with pytest.raises(ValueError, match="needs the scorer 'fairness'.*scored \\['error', 'violation'\\]"):
        RankRefit(violation="fairness")(_results([0.1], [0.0]))


def test_rank_refit_warns_and_ranks_by_the_other_score_when_one_is_nan_everywhere():
    # a rank over NaN alone ties every setting: the last one won before
    with pytest.warns(UserWarning, match=r"every 'violation' score is NaN.*not routed.*lowest 'error' alone"):
        assert RankRefit()(_results([0.10, 0.30, 0.20], [np.nan] * 3)) == 0
    with pytest.warns(UserWarning, match=r"every 'error' score is NaN.*lowest 'violation' alone"):
        assert RankRefit()(_results([np.nan] * 3, [0.1, -0.3, -0.2])) == 1
    with pytest.raises(ValueError, match="every 'error' and every 'violation' score is NaN"):
        RankRefit()(_results([np.nan] * 2, [np.nan] * 2))


def test_rank_refit_tells_a_score_failing_in_some_folds_from_one_failing_in_all():
    # a fit failing in one fold (a rare group missing from its training rows) makes every mean NaN:
    # it was reported as the scorer failing in every fold, with routing as the likely cause
    results = _results([np.nan] * 2, [np.nan] * 2)
    results.update({"split0_test_error": [-0.1, -0.2], "split1_test_error": [np.nan, np.nan],
                    "split0_test_violation": [np.nan, np.nan], "split1_test_violation": [np.nan, np.nan]})
    with pytest.raises(ValueError, match=r"'error' failed in some folds only .* group value its training rows "
                                         r"lack.*; 'violation' failed .* in every fold, e.g. groups or baseline"):
        RankRefit()(results)


def test_rank_refit_refuses_when_every_setting_lacks_one_score():
    # neither column is NaN throughout, yet no setting has both: an arbitrary one was picked
    with pytest.raises(ValueError, match="every setting has a NaN 'error' or 'violation' score"):
        RankRefit()(_results([np.nan, 0.3], [0.0, np.nan]))


def _data(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    race = rng.choice(["a", "b"], n, p=[0.6, 0.4])
    X = rng.normal(size=(n, 3))
    X[:, 2] += 1.2 * (race == "a")
    y = (X[:, 0] + 0.7 * X[:, 2] + rng.normal(size=n) > 0.4).astype(int)
    return X, y, {"race": race}


TEMPLATE = ["ppr[race] >= ppr - {slack}", "ppr[race] <= ppr + {slack}"]


def _violation(model, spec, X, y, groups):
    data = RateData(y, np.ones(len(y)), GroupTable.from_input(groups, None, len(y)))
    return max(r["violation"] for r in constraint_rows(as_constraints(spec), data, model.predict_proba(X)[:, 1]))


def test_tradeoff_curve_measures_each_fit(capsys):
    X, y, g = _data()
    slacks = [0.0, 0.05, 0.3]
    curve, models = tradeoff_curve(ConstrainedClassifier(max_iter=200, random_state=0), X, y, groups=g,
                                   constraints=TEMPLATE, slacks=slacks, random_state=0, progress=True,
                                   return_estimators=True)
    assert list(curve["slack"]) == slacks and len(models) == 3
    err = capsys.readouterr().err
    assert "tradeoff_curve [" in err and "3/3" in err
    # Recompute every column from the fitted models on the same split.
    from sklearn.model_selection import train_test_split

    tr, te = train_test_split(np.arange(len(y)), test_size=0.3, stratify=y, random_state=0)
    for row, model, s in zip(curve.itertuples(), models, slacks):
        spec = [t.format(slack=s) for t in TEMPLATE]
        strict = [t.format(slack=0) for t in TEMPLATE]
        for split, idx in (("train", tr), ("test", te)):
            gi = {"race": g["race"][idx]}
            p = model.predict_proba(X[idx])[:, 1]
            assert getattr(row, f"{split}_error") == pytest.approx(np.mean(np.where(y[idx] == 1, 1 - p, p)))
            assert getattr(row, f"{split}_violation") == pytest.approx(_violation(model, spec, X[idx], y[idx], gi))
            assert getattr(row, f"{split}_gap") == pytest.approx(_violation(model, strict, X[idx], y[idx], gi))
    # Each fit meets its own constraints on the training data; a looser slack allows a larger gap
    # and a lower training error.
    assert (curve["train_violation"] <= 1e-3).all()
    assert curve["train_gap"].iloc[-1] > curve["train_gap"].iloc[0] + 0.05
    assert curve["train_error"].iloc[-1] < curve["train_error"].iloc[0]


def test_tradeoff_curve_any_joblib_backend_and_callables():
    X, y, g = _data(800)
    est = ConstrainedClassifier(max_iter=100, random_state=0)
    seq = tradeoff_curve(est, X, y, groups=g, constraints=lambda s: statistical_parity("race", slack=s),
                         slacks=[0.0, 0.1], random_state=1)
    with parallel_backend("threading", n_jobs=2):
        par = tradeoff_curve(est, X, y, groups=g, constraints=lambda s: statistical_parity("race", slack=s),
                             slacks=[0.0, 0.1], random_state=1)
    cols = ["slack", "train_error", "train_violation", "train_gap", "test_error", "test_violation", "test_gap"]
    pd.testing.assert_frame_equal(seq[cols], par[cols])
    from_estimator = tradeoff_curve(ConstrainedClassifier(TEMPLATE, max_iter=100, random_state=0), X, y, groups=g,
                                    slacks=[0.0, 0.1], random_state=1)
    templated = tradeoff_curve(est, X, y, groups=g, constraints=TEMPLATE, slacks=[0.0, 0.1], random_state=1)
    pd.testing.assert_frame_equal(from_estimator[cols], templated[cols])
    no_test = tradeoff_curve(est, X, y, groups=g, constraints=TEMPLATE, slacks=[0.1], test_size=None)
    assert np.isnan(no_test["test_error"]).all() and np.isfinite(no_test["train_error"]).all()


def test_tradeoff_curve_threading_backend_reads_feasibility_from_each_fit_and_leaves_warnings_alone():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + rng.normal(size=300) > 0.4).astype(int)
    est = ConstrainedClassifier(max_iter=100, random_state=0)
    template = ["ppr >= 0.9 - {slack}", "ppr <= 0.1"]
    slacks = [0.0, 0.85] * 3  # infeasible, feasible, ...
    seq = tradeoff_curve(est, X, y, constraints=template, slacks=slacks, random_state=0)
    assert seq["feasible"].tolist() == [False, True] * 3
    hook, filters = warnings.showwarning, list(warnings.filters)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the threads' fits warn as they would alone
        with parallel_backend("threading", n_jobs=2):
            par = tradeoff_curve(est, X, y, constraints=template, slacks=slacks, random_state=0)
    assert par["feasible"].tolist() == seq["feasible"].tolist()
    # catch_warnings in worker threads swapped the process-wide hook and left it behind
    assert warnings.showwarning is hook and warnings.filters == filters


@pytest.mark.parametrize("solution", ["best", "last"])
def test_tradeoff_curve_feasible_is_the_selected_solutions_on_every_backend(solution):
    # feasible_ is the m-stochastic solution's; the verdict on another solution was only warned,
    # and a warning on a worker thread is not recorded
    rng = np.random.RandomState(0)
    n = 400
    X = rng.normal(size=(n, 3))
    g = np.array(["a", "b"])[rng.randint(0, 2, n)]
    y = (X[:, 0] + (g == "a") + rng.normal(size=n) > 0).astype(int)
    est = ConstrainedClassifier(solution=solution, max_iter=30, random_state=0)
    kw = dict(groups=pd.DataFrame({"grp": g}), constraints=lambda s: statistical_parity("grp", slack=s),
              slacks=[0.0, 0.001, 0.01, 0.05], random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seq, fitted = tradeoff_curve(est, X, y, return_estimators=True, **kw)
        with parallel_backend("threading", n_jobs=2):
            par = tradeoff_curve(est, X, y, **kw)
    assert par["feasible"].tolist() == seq["feasible"].tolist()
    # the verdict agrees with the selected solution's constraints on the rows it was chosen on
    for feasible, model in zip(seq["feasible"], fitted):
        assert feasible == bool((model.train_constraints_ @ model.weights_ <= 1e-9).all())
    assert not seq["feasible"].all() and seq["feasible"].any()


def test_tradeoff_curve_takes_metric_constraints():
    from skrate import MetricOptimizer
    from skrate.generalized import kld_fairness
    from skrate.metrics import make_violation_scorer

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + rng.normal(size=300) > 0.4).astype(int)
    g = {"race": rng.choice(["a", "b"], 300)}
    curve, fitted = tradeoff_curve(MetricOptimizer(metric="g_mean", max_iter=20, random_state=0), X, y, groups=g,
                                   constraints=lambda s: kld_fairness("race", s), slacks=[0.0, 0.05],
                                   test_size=None, return_estimators=True)
    for slack, est, violation, gap in zip([0.0, 0.05], fitted, curve["train_violation"], curve["train_gap"]):
        expected = -make_violation_scorer(kld_fairness("race", slack))(est, X, y, groups=g)
        np.testing.assert_allclose(violation, expected, rtol=1e-12)
        np.testing.assert_allclose(gap, -make_violation_scorer(kld_fairness("race", 0.0))(est, X, y, groups=g))


def test_tradeoff_curve_bad_input():
    X, y, g = _data(200)
    est = ConstrainedClassifier(max_iter=20)
    with pytest.raises(ValueError, match="'\\{slack\\}'"):
        tradeoff_curve(est, X, y, groups=g, constraints="ppr[race] >= ppr - 0.1")
    with pytest.raises(ValueError, match="'\\{slack\\}'"):
        tradeoff_curve(est, X, y, groups=g)  # the estimator holds no template
    with pytest.raises(ValueError, match="has no parameter 'classifier__constraints'"):
        tradeoff_curve(est, X, y, groups=g, param="classifier__constraints")
    with pytest.raises(ValueError, match="slacks must be"):
        tradeoff_curve(est, X, y, groups=g, constraints=TEMPLATE, slacks=[-0.1])
    with pytest.raises(ValueError, match="Cannot parse"):
        tradeoff_curve(est, X, y, groups=g, constraints=["ppr[race >= {slack}"], slacks=[0.1])
    with pytest.raises(ValueError, match="y has 199 entries"):
        tradeoff_curve(est, X, y[:-1], groups=g, constraints=TEMPLATE)


def test_tradeoff_curve_checks_decisions_before_any_fit():
    X, y, g = _data(200)
    fitted = []

    class Counting(ConstrainedClassifier):
        def fit(self, X, y, **kwargs):
            fitted.append(1)
            return super().fit(X, y, **kwargs)

    with pytest.raises(ValueError, match="decisions must be one of"):
        tradeoff_curve(Counting(max_iter=5), X, y, groups=g, constraints=TEMPLATE, decisions="foo")
    assert fitted == []


def _report_violation(model, X, y, groups, **kwargs):
    report = model.constraint_report(X, y, groups=groups, **kwargs)
    return report["violation"].iloc[:-1].max()  # the last row is the objective


def test_tradeoff_curve_scores_with_the_fit_weights():
    from sklearn.model_selection import train_test_split

    X, y, g = _data(800)
    sw = np.where(g["race"] == "a", 4.0, 0.5) * np.random.default_rng(1).uniform(0.5, 1.5, len(y))
    curve, (model,) = tradeoff_curve(ConstrainedClassifier(max_iter=100, random_state=0), X, y, groups=g,
                                     constraints=TEMPLATE, slacks=[0.02], sample_weight=sw, random_state=0,
                                     return_estimators=True)
    tr, te = train_test_split(np.arange(len(y)), test_size=0.3, stratify=y, random_state=0)
    for split, idx in (("train", tr), ("test", te)):
        gi, p = {"race": g["race"][idx]}, model.predict_proba(X[idx])[:, 1]
        expected = _report_violation(model, X[idx], y[idx], gi, sample_weight=sw[idx])
        assert expected != pytest.approx(_report_violation(model, X[idx], y[idx], gi))  # the weights matter
        assert curve[f"{split}_violation"].item() == pytest.approx(expected)
        error = np.average(np.where(y[idx] == 1, 1 - p, p), weights=sw[idx])
        assert curve[f"{split}_error"].item() == pytest.approx(error)


def test_tradeoff_curve_drops_rows_of_weight_zero_as_fit_does():
    # a group value held only by a row of weight 0 was expanded over: the train violation NaN
    X, y, g = _data(500)
    race = g["race"].copy()
    w = np.ones(500)
    race[5], w[5] = "c", 0.0
    w[[10, 20, 30]] = 0.0
    keep = w > 0
    est = ConstrainedClassifier(max_iter=100, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        weighted = tradeoff_curve(est, X, y, groups={"race": race}, sample_weight=w, constraints=TEMPLATE,
                                  slacks=[0.05], test_size=None)
    dropped = tradeoff_curve(est, X[keep], y[keep], groups={"race": race[keep]}, sample_weight=w[keep],
                             constraints=TEMPLATE, slacks=[0.05], test_size=None)
    columns = ["train_error", "train_violation", "train_gap", "feasible"]
    assert np.isfinite(weighted["train_violation"]).all()
    pd.testing.assert_frame_equal(weighted[columns], dropped[columns])


def test_tradeoff_curve_reads_the_verdict_through_a_search():
    # feasible read True off the search (no feasible_) for a model that missed its constraints
    from sklearn import config_context
    from sklearn.model_selection import GridSearchCV

    X, y, g = _data(400)
    impossible = ["ppr[race] >= ppr - {slack}", "ppr <= 0.05", "tpr >= 0.9"]
    with config_context(enable_metadata_routing=True), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = GridSearchCV(ConstrainedClassifier(max_iter=50, random_state=0).set_fit_request(groups=True),
                              {"alpha": [1e-4, 1e-2]}, cv=2)
        curve, (fitted,) = tradeoff_curve(search, X, y, groups=pd.DataFrame(g), constraints=impossible,
                                          slacks=[0.1], param="estimator__constraints", return_estimators=True)
    assert not fitted.best_estimator_.feasible_
    assert not curve["feasible"].item()


def test_tradeoff_curve_without_a_verdict_reads_the_training_violation():
    from sklearn.linear_model import LogisticRegression

    class Template(LogisticRegression):  # takes the constraints and ignores them: no feasible_
        def __init__(self, constraints=None, C=1.0):
            super().__init__(C=C)
            self.constraints = constraints

        def fit(self, X, y, groups=None):
            return super().fit(X, y)

    X, y, g = _data(400)
    curve = tradeoff_curve(Template(), X, y, groups=g, constraints=TEMPLATE, slacks=[0.0, 0.5])
    np.testing.assert_array_equal(curve["feasible"], curve["train_violation"] <= 0)
    assert curve["feasible"].tolist() == [False, True]
    # bounds between the training and the test rates: the verdict follows the training rows
    curve = tradeoff_curve(Template(), X, y, constraints="ppr <= {slack}", slacks=np.arange(0.2, 0.8, 0.01),
                           test_size=0.3, random_state=0)
    np.testing.assert_array_equal(curve["feasible"], curve["train_violation"] <= 0)
    assert ((curve["train_violation"] <= 0) != (curve["test_violation"] <= 0)).any()


def test_tradeoff_curve_passes_groups_to_a_calibrator_without_routing():
    from sklearn.calibration import CalibratedClassifierCV

    X, y, g = _data(400)
    cal = CalibratedClassifierCV(ConstrainedClassifier(max_iter=50, random_state=0), cv=2)
    curve = tradeoff_curve(cal, X, y, groups=pd.DataFrame(g), constraints=TEMPLATE, slacks=[0.05],
                           param="estimator__constraints")
    assert np.isfinite(curve["train_violation"]).all()


def test_tradeoff_curve_asks_for_routing_before_a_bagging_fit():
    from sklearn.ensemble import BaggingClassifier

    X, y, g = _data(200)
    bag = BaggingClassifier(ConstrainedClassifier(max_iter=20, random_state=0), n_estimators=2)
    with pytest.raises(ValueError, match=r"BaggingClassifier.fit passes groups on to its steps only by metadata "
                                         r"routing, which is off"):
        tradeoff_curve(bag, X, y, groups=pd.DataFrame(g), constraints=TEMPLATE, slacks=[0.05],
                       param="estimator__constraints")


def test_tradeoff_curve_runs_with_no_stderr(monkeypatch):
    import sys

    monkeypatch.setattr(sys, "stderr", None)
    X, y, g = _data(300)
    curve = tradeoff_curve(ConstrainedClassifier(max_iter=30, random_state=0), X, y, groups=g,
                           constraints=TEMPLATE, slacks=[0.0, 0.1])
    assert len(curve) == 2


def test_tradeoff_curve_traces_churn_against_a_baseline():
    X, y, g = _data(600)
    labels = np.where(y == 1, "yes", "no")
    base = ConstrainedClassifier(max_iter=50, random_state=1).fit(X[:, :1], labels).predict(X[:, :1])
    curve, (model,) = tradeoff_curve(ConstrainedClassifier(max_iter=100, random_state=0), X, labels,
                                     constraints="churn <= {slack}", slacks=[0.05], baseline=base,
                                     test_size=None, return_estimators=True)
    expected = _report_violation(model, X, labels, None, baseline=base)
    assert curve["train_violation"].item() == pytest.approx(expected)
    with pytest.raises(ValueError, match=r"baseline must hold one decision per row of X \(600\)"):
        tradeoff_curve(ConstrainedClassifier(), X, labels, constraints="churn <= {slack}", baseline=base[:-1])


def test_tradeoff_curve_fits_a_pipeline_and_says_how_to_route_its_groups():
    from sklearn import config_context
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    X, y, g = _data(400)
    Xb = pd.DataFrame(X, columns=["x0", "x1", "x2"]).assign(a=(g["race"] == "a").astype(int))
    pipe = Pipeline([("sc", StandardScaler()), ("clf", ConstrainedClassifier(
        "ppr[a] >= ppr - {slack}", max_iter=20, random_state=0))]).set_output(transform="pandas")
    # without groups nothing needs routing: groups=None is not passed to fit
    curve = tradeoff_curve(pipe, Xb, y, param="clf__constraints", slacks=[0.1], random_state=0)
    assert np.isfinite(curve[["train_violation", "test_violation"]].to_numpy()).all()
    pipe.set_params(clf__constraints=TEMPLATE)
    with pytest.raises(ValueError, match=r"Pipeline.fit passes groups on to its steps only by metadata "
                                         r"routing.*enable_metadata_routing=True"):
        tradeoff_curve(pipe, X, y, groups=g, param="clf__constraints", slacks=[0.1])
    with config_context(enable_metadata_routing=True):
        pipe.named_steps["clf"].set_fit_request(groups=True)
        curve = tradeoff_curve(pipe, X, y, groups=g, param="clf__constraints", slacks=[0.1], random_state=0)
    assert np.isfinite(curve[["train_violation", "test_violation"]].to_numpy()).all()


def test_tradeoff_curve_reports_a_group_value_absent_from_the_test_split_as_nan():
    X, y, g = _data(400)
    race = g["race"].copy()
    race[np.flatnonzero(y == 0)[:3]] = "c"  # random_state=2 puts all three in the training split
    with pytest.warns(UserWarning, match=r"the 120 rows of the held-out test split \(test_size=0.3\) leave "
                                         r"\['ppr\[race=c\] <= ppr \+ 0.1', 'ppr\[race=c\] <= ppr'\] undefined.*"
                                         r"test_violation and test_gap are NaN"):
        curve = tradeoff_curve(ConstrainedClassifier(max_iter=20, random_state=0), X, y, groups={"race": race},
                               constraints="ppr[race=c] <= ppr + {slack}", slacks=[0.1], random_state=2)
    assert curve[["test_violation", "test_gap"]].isna().all(axis=None)
    assert np.isfinite(curve[["test_error", "train_violation", "train_gap"]].to_numpy()).all()


def test_tradeoff_curve_refuses_groups_in_another_row_order():
    X, y, g = _data(200)
    frame = pd.DataFrame(X, index=np.arange(200)[::-1])  # a split's rows, labelled
    with pytest.raises(ValueError, match="holds the labels of X's index in another order"):
        tradeoff_curve(ConstrainedClassifier(max_iter=5), frame, y, groups=pd.DataFrame(g),
                       constraints=TEMPLATE, slacks=[0.1])


@pytest.mark.parametrize("kind", ["rate", "metric"])
def test_tradeoff_curve_expands_bare_columns_over_the_values_the_model_was_fitted_on(kind):
    # a value only the training split holds left the test rows' expansion without a word, so
    # the test violation read as met; constraint_report and metric_values report it undefined
    from sklearn.model_selection import train_test_split

    from skrate import MetricOptimizer
    from skrate.generalized import kld_fairness

    rng = np.random.default_rng(0)
    n = 600
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    r = np.array(["b"] * n, dtype=object)
    tr, _ = train_test_split(np.arange(n), test_size=0.3, stratify=y, random_state=1)  # tradeoff_curve's split
    r[tr[:5]] = "a"
    g = pd.DataFrame({"r": r})
    if kind == "rate":
        est, constraints = ConstrainedClassifier(max_iter=50, random_state=0), "ppr[r] >= ppr - {slack}"
    else:
        est, constraints = MetricOptimizer(max_iter=30, random_state=0), (lambda s: kld_fairness("r", s))
    with pytest.warns(UserWarning, match=r"held-out test split .* leave \[.*r=a.*\] undefined"):
        curve = tradeoff_curve(est, X, y, groups=g, constraints=constraints, slacks=[0.05], random_state=1)
    assert np.isnan(curve.loc[0, "test_violation"]) and np.isnan(curve.loc[0, "test_gap"])
    assert np.isfinite(curve.loc[0, "train_violation"]) and np.isfinite(curve.loc[0, "train_gap"])


def test_tradeoff_curve_names_the_template_it_read_and_checks_slacks():
    X, y, g = _data(300)
    with pytest.raises(ValueError, match=r"constraints=None takes the template from the parameter 'constraints' "
                                         r"of ConstrainedClassifier \(param=...\), which is None"):
        tradeoff_curve(ConstrainedClassifier(), X, y, groups=g)
    with pytest.raises(ValueError, match=r"which is 'ppr >= 0.1', but it must"):
        tradeoff_curve(ConstrainedClassifier("ppr >= 0.1"), X, y, groups=g)
    for bad in (0.1, ["a"], [], [True], [np.inf]):
        with pytest.raises(ValueError, match=r"slacks must be a non-empty list of finite numbers >= 0.*got"):
            tradeoff_curve(ConstrainedClassifier(TEMPLATE), X, y, groups=g, slacks=bad)
    # a fixed constraint next to a template holds as it is at every slack
    _, models = tradeoff_curve(ConstrainedClassifier(max_iter=5), X, y, groups=g, slacks=[0, 0.1], test_size=None,
                               constraints=["ppr[race] >= ppr - {slack}", "ppr >= 0.3"], return_estimators=True)
    assert [m.constraints for m in models] == [["ppr[race] >= ppr - 0.0", "ppr >= 0.3"],
                                               ["ppr[race] >= ppr - 0.1", "ppr >= 0.3"]]


def test_tradeoff_curve_checks_the_length_of_the_groups():
    # a longer column was cut down to the split's rows without a word, a shorter one an IndexError
    X, y, g = _data(300)
    race = g["race"]
    for values in (np.concatenate([race, race[:100]]), race[:200]):
        for groups in (pd.DataFrame({"race": values}), {"race": values}, pd.Series(values, name="race")):
            with pytest.raises(ValueError, match=f"Group column 'race' has {len(values)} entries but X has 300 rows"):
                tradeoff_curve(ConstrainedClassifier(max_iter=5), X, y, groups=groups, constraints=TEMPLATE,
                               slacks=[0.1])


def test_tradeoff_curve_takes_a_list_X_with_groups_as_a_frame():
    X, y, g = _data(300)
    curve = tradeoff_curve(ConstrainedClassifier(max_iter=20, random_state=0), X.tolist(), y,
                           groups=pd.DataFrame(g), constraints=TEMPLATE, slacks=[0.1], random_state=0)
    array = tradeoff_curve(ConstrainedClassifier(max_iter=20, random_state=0), X, y,
                           groups=pd.DataFrame(g), constraints=TEMPLATE, slacks=[0.1], random_state=0)
    cols = ["train_error", "train_violation", "test_error", "test_violation"]
    pd.testing.assert_frame_equal(curve[cols], array[cols])


def test_rank_refit_reads_an_infinite_score_as_a_score_not_a_failure():
    # a win-loss ratio with no losses meets its bound by +inf: that setting, with the lower
    # error, was ranked last as if its scorer had failed
    assert RankRefit()(_results([0.1, 0.2], [-np.inf, 0.5])) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert RankRefit()(_results([0.3, 0.2], [-np.inf, -np.inf])) == 1


def test_progress_by_default_draws_on_a_terminal_only():
    import io

    from skrate.model_selection._progress import Progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    for stream, drawn in ((Terminal(), True), (io.StringIO(), False)):
        with Progress(3, "sweep", enabled=None, stream=stream) as bar:
            bar.update(3)
        assert ("sweep [" in stream.getvalue()) == drawn
    pipe = io.StringIO()
    with Progress(3, "sweep", enabled=True, stream=pipe) as bar:
        bar.update(3)
    assert pipe.getvalue().count("sweep [") >= 2  # asked for, it draws on a pipe too
