"""RankRefit (Eq. 18 as a GridSearchCV refit) and tradeoff_curve."""

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
