"""polars and Arrow-backed pandas frames: read as pandas frames are, with the same results."""

import numpy as np
import pytest

from skrate import AUCClassifier, ConstrainedClassifier, DROClassifier, MetricOptimizer, TrimmedClassifier
from skrate.metrics import audit

pl = pytest.importorskip("polars")
pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    race = rng.choice(["Black", "White"], n)
    sex = rng.choice(["F", "M"], n)
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    y = (x1 + 0.5 * (race == "Black") + rng.normal(size=n) > 0).astype(int)
    return {"x1": x1, "x2": x2, "black": (race == "Black").astype(float)}, y, {"race": race, "sex": sex}


GOAL = "tpr[race] >= tpr - 0.05"


def test_polars_groups_fit_as_a_dict_of_arrays():
    # a polars frame as groups was refused as "a 2-D array (which has no column names)"
    columns, y, groups = _data()
    X = np.column_stack(list(columns.values()))
    expected = ConstrainedClassifier(GOAL, random_state=0).fit(X, y, groups=groups).predict_proba(X)
    for given in (pl.DataFrame(groups), {k: pl.Series(k, v) for k, v in groups.items()},
                  pd.DataFrame(groups).astype("string[pyarrow]")):
        got = ConstrainedClassifier(GOAL, random_state=0).fit(X, y, groups=given).predict_proba(X)
        np.testing.assert_array_equal(got, expected)
    report = audit(ConstrainedClassifier(GOAL, random_state=0).fit(X, y, groups=groups), X, y,
                   groups=pl.DataFrame(groups), n_bootstrap=0)
    assert {"Black", "White"} <= {str(v) for v in np.ravel(np.asarray(report, dtype=object))}


def test_an_unnamed_polars_series_is_the_column_group():
    # polars names an unnamed Series "", which became a group column named ""
    columns, y, groups = _data()
    X = np.column_stack(list(columns.values()))
    fit = lambda g: ConstrainedClassifier("tpr[group] >= tpr - 0.05", random_state=0).fit(X, y, groups=g)
    np.testing.assert_array_equal(fit(pl.Series(groups["race"])).predict_proba(X),
                                  fit(groups["race"]).predict_proba(X))


def test_constraints_name_the_columns_of_a_polars_X():
    # "X reached the estimator as an array, whose columns have no names: pass X as a DataFrame"
    columns, y, _ = _data()
    goal = "tpr[black=1] >= tpr - 0.05"
    expected = ConstrainedClassifier(goal, random_state=0).fit(pd.DataFrame(columns), y)
    got = ConstrainedClassifier(goal, random_state=0).fit(pl.DataFrame(columns), y)
    np.testing.assert_array_equal(got.predict_proba(pl.DataFrame(columns)),
                                  expected.predict_proba(pd.DataFrame(columns)))


@pytest.mark.parametrize("make", [
    lambda est: ConstrainedClassifier(GOAL, solver="oracle_proxy_lagrangian", estimator=est, max_iter=20,
                                      random_state=0),
    lambda est: MetricOptimizer("g_mean", constraints=GOAL, estimator=est, random_state=0),
], ids=["ConstrainedClassifier", "MetricOptimizer"])
def test_estimator_gets_a_polars_X_as_it_is(make):
    # a polars X reached the user's estimator as an array, where a ColumnTransformer selects by name
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    columns, y, groups = _data()
    columns["grade"] = np.where(columns["x2"] > 0, "high", "low")
    est = make_pipeline(ColumnTransformer([("num", StandardScaler(), ["x1", "x2", "black"]),
                                           ("cat", OneHotEncoder(), ["grade"])]), LogisticRegression())
    frame = pd.DataFrame(columns)
    expected = make(est).fit(frame, y, groups=groups).predict_proba(frame)
    got = make(est).fit(pl.DataFrame(columns), y, groups=groups).predict_proba(pl.DataFrame(columns))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def test_a_text_column_of_a_polars_X_is_refused_by_name():
    columns, y, _ = _data()
    columns["s"] = np.where(columns["x2"] > 0, "u", "v")
    with pytest.raises(ValueError, match=r"X has the non-numeric columns \['s'\]"):
        ConstrainedClassifier("ppr <= 0.9").fit(pl.DataFrame(columns), y)


@pytest.mark.parametrize("make", [lambda: ConstrainedClassifier(GOAL, random_state=0),
                                  lambda: MetricOptimizer(metric="f1", random_state=0),
                                  lambda: AUCClassifier(), lambda: DROClassifier(), lambda: TrimmedClassifier()])
def test_a_polars_lazyframe_is_refused_by_name(make):
    # it was refused with numpy's "setting an array element with a sequence"
    columns, y, groups = _data()
    X = pl.DataFrame(columns)
    fit_groups = {"groups": groups} if isinstance(make(), (ConstrainedClassifier, MetricOptimizer)) else {}
    with pytest.raises(TypeError, match=r"X is a polars LazyFrame.*X\.collect\(\)"):
        make().fit(X.lazy(), y, **fit_groups)
    est = make().fit(X, y, **fit_groups)
    with pytest.raises(TypeError, match=r"X is a polars LazyFrame"):
        est.predict(X.lazy())


def test_lazy_groups_are_refused_by_name():
    columns, y, groups = _data()
    X = np.column_stack(list(columns.values()))
    with pytest.raises(TypeError, match=r"groups is a polars LazyFrame.*groups\.collect\(\)"):
        ConstrainedClassifier(GOAL, random_state=0).fit(X, y, groups=pl.DataFrame(groups).lazy())


def test_a_lazy_X_is_refused_by_name_in_audit_and_tradeoff_curve():
    from skrate.model_selection import tradeoff_curve

    columns, y, groups = _data()
    X = pl.DataFrame(columns)
    clf = ConstrainedClassifier(GOAL, random_state=0).fit(X, y, groups=groups)
    with pytest.raises(TypeError, match=r"X is a polars LazyFrame"):
        audit(clf, X.lazy(), y, groups=groups, n_bootstrap=0)
    with pytest.raises(TypeError, match=r"X is a polars LazyFrame"):
        tradeoff_curve(ConstrainedClassifier(random_state=0), X.lazy(), y, groups=groups,
                       constraints="tpr[race] >= tpr - {slack}", slacks=[0.05])
