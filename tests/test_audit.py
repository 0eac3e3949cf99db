"""audit: numbers against direct computation and fairlearn, bootstrap coverage, reports, bad input."""

import re
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from joblib import parallel_backend
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression

from skrate import ConstrainedClassifier
from skrate.metrics import audit, plot_audit
from skrate.metrics._bootstrap import RateParts, bootstrap_values
from skrate.metrics._audit import metric_term
from skrate.problem import GroupTable, RateData, evaluate_term
from skrate.problem._evaluate import violation_rows
from skrate.rates import Slice, as_constraints


class Fixed(ClassifierMixin, BaseEstimator):
    """A 'fitted' classifier whose prediction is column 0 of X (and its probability column 1)."""

    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        return self

    def predict(self, X):
        return np.asarray(X)[:, 0].astype(int)

    def predict_proba(self, X):
        p = np.asarray(X)[:, 1]
        return np.column_stack([1 - p, p])


def _data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    race = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    sex = rng.choice(["F", "M"], n)
    X = rng.normal(size=(n, 3))
    X[:, 2] += (race == "a")
    y = (X[:, 0] + 0.5 * X[:, 2] + rng.normal(size=n) > 0.3).astype(int)
    return X, y, pd.DataFrame({"race": race, "sex": sex})


def _direct(y, p, w, m, metric):
    """A rate computed from its definition."""
    y, p, w = y[m], p[m], w[m]
    if metric == "ppr":
        return np.sum(w * p) / np.sum(w)
    if metric == "tpr":
        return np.sum(w * p * y) / np.sum(w * y)
    if metric == "fnr":
        return np.sum(w * (1 - p) * y) / np.sum(w * y)
    if metric == "fpr":
        return np.sum(w * p * (1 - y)) / np.sum(w * (1 - y))
    if metric == "tnr":
        return np.sum(w * (1 - p) * (1 - y)) / np.sum(w * (1 - y))
    if metric == "accuracy":
        return np.sum(w * (p * y + (1 - p) * (1 - y))) / np.sum(w)
    if metric == "precision":
        return np.sum(w * p * y) / np.sum(w * p)
    raise AssertionError(metric)


@pytest.mark.parametrize("weighted", [False, True])
def test_rates_match_direct_computation(weighted):
    X, y, g = _data()
    w = np.random.default_rng(1).uniform(0.2, 3.0, len(y)) if weighted else np.ones(len(y))
    clf = LogisticRegression().fit(X, y)
    report = audit(clf, X, y, groups=g, sample_weight=w if weighted else None, n_bootstrap=0)
    p = clf.predict(X).astype(float)
    rows = pd.DataFrame(report)
    assert set(rows["metric"]) == {"ppr", "tpr", "fpr", "tnr", "fnr", "accuracy", "precision"}
    assert len(rows) == 7 * (1 + 3 + 2)
    for r in rows.itertuples():
        mask = np.ones(len(y), bool) if r.attribute == "all" else (g[r.attribute] == r.group).to_numpy()
        expected = _direct(y, p, w, mask, r.metric)
        overall = _direct(y, p, w, np.ones(len(y), bool), r.metric)
        assert r.value == pytest.approx(expected, abs=1e-12)
        assert r.count == mask.sum()
        assert r.difference == pytest.approx(expected - overall, abs=1e-12)
        assert r.ratio == pytest.approx(expected / overall, rel=1e-12)
        assert np.isnan(r.value_low) and np.isnan(r.value_high)


def test_rows_of_weight_zero_are_left_out_as_in_fit():
    # a group value held only by rows of weight 0 got rows of NaN and a NaN constraint with a
    # warning, and counts included rows of weight 0
    X, y, g = _data()
    clf = LogisticRegression().fit(X, y)
    g = g.copy()
    g["race"] = g["race"].astype(object)
    w = np.random.default_rng(2).uniform(0.5, 2.0, len(y))
    g.loc[5, "race"], w[5] = "other", 0.0
    w[[10, 20, 30]] = 0.0
    keep = w > 0
    spec = "tpr[race] >= tpr - 0.05"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        weighted = audit(clf, X, y, groups=g, sample_weight=w, constraints=spec, n_bootstrap=0)
    dropped = audit(clf, X[keep], y[keep], groups=g[keep].reset_index(drop=True), sample_weight=w[keep],
                    constraints=spec, n_bootstrap=0)
    pd.testing.assert_frame_equal(pd.DataFrame(weighted), pd.DataFrame(dropped))
    assert "other" not in set(pd.DataFrame(weighted)["group"])
    assert weighted.attrs["n_samples"] == keep.sum()
    assert "weighted by sample_weight (4 of weight 0 left out)" in str(weighted)
    assert "weighted" not in str(audit(clf, X, y, groups=g, n_bootstrap=0)).splitlines()[0]


def test_stochastic_estimator_is_audited_in_expectation():
    X, y, g = _data(1500)
    clf = ConstrainedClassifier("tpr[race] >= tpr - 0.05", max_iter=200, random_state=0).fit(X, y, groups=g)
    p = clf.predict_proba(X)[:, 1]
    assert np.any((p > 0) & (p < 1))  # a real mixture, so expected and predicted rates differ
    report = audit(clf, X, y, groups=g, n_bootstrap=0)
    assert report.attrs["decisions"] == "expected"
    tpr_b = report.query("group == 'b' and metric == 'tpr'")["value"].item()
    assert tpr_b == pytest.approx(_direct(y, p, np.ones(len(y)), (g.race == "b").to_numpy(), "tpr"))
    # so is a pipeline that ends in one: its first step decides nothing
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    pipe = make_pipeline(StandardScaler(), clf).fit(X, y, constrainedclassifier__groups=g)
    piped = audit(pipe, X, y, groups=g, n_bootstrap=0)
    assert piped.attrs["decisions"] == "expected"
    p_pipe = pipe.predict_proba(X)[:, 1]
    assert piped.query("group == 'b' and metric == 'tpr'")["value"].item() == pytest.approx(
        _direct(y, p_pipe, np.ones(len(y)), (g.race == "b").to_numpy(), "tpr"))
    labels = audit(clf, X, y, groups=g, decisions="predict", n_bootstrap=0)
    hard = (clf.predict(X) == 1).astype(float)
    assert labels.query("group == 'b' and metric == 'tpr'")["value"].item() == pytest.approx(
        _direct(y, hard, np.ones(len(y)), (g.race == "b").to_numpy(), "tpr"))


def test_matches_fairlearn_metricframe():
    fairlearn = pytest.importorskip("fairlearn.metrics")
    from sklearn.metrics import accuracy_score, precision_score

    X, y, g = _data(3000, seed=3)
    clf = LogisticRegression().fit(X, y)
    y_pred = clf.predict(X)
    report = pd.DataFrame(audit(clf, X, y, groups=g, n_bootstrap=0))
    fns = {"ppr": fairlearn.selection_rate, "tpr": fairlearn.true_positive_rate,
           "fpr": fairlearn.false_positive_rate, "tnr": fairlearn.true_negative_rate,
           "fnr": fairlearn.false_negative_rate, "accuracy": accuracy_score, "precision": precision_score}
    for attribute in ("race", "sex"):
        frame = fairlearn.MetricFrame(metrics=fns, y_true=y, y_pred=y_pred, sensitive_features=g[attribute])
        ours = report[report.attribute == attribute].pivot(index="group", columns="metric", values="value")
        pd.testing.assert_frame_equal(ours[list(fns)], frame.by_group[list(fns)], check_names=False, atol=1e-12)
        for metric in fns:
            assert report[report.attribute == "all"].set_index("metric").loc[metric, "value"] == pytest.approx(
                frame.overall[metric])
            sub = report[(report.attribute == attribute) & (report.metric == metric)]
            # fairlearn's to_overall difference is the largest gap; its ratio the smallest of min/max.
            assert sub["difference"].abs().max() == pytest.approx(frame.difference(method="to_overall")[metric])
            r = sub["ratio"].to_numpy()
            assert np.minimum(r, 1 / r).min() == pytest.approx(frame.ratio(method="to_overall")[metric])


def test_constraints_match_violation_rows_and_bootstrap_identity():
    X, y, g = _data()
    clf = LogisticRegression().fit(X, y)
    spec = ["tpr[race] >= 0.9 * tpr", "precision[sex=F] >= 0.5", "fpr[race=a] <= fpr + 0.01"]
    report = audit(clf, X, y, groups=g, constraints=spec, n_bootstrap=50, random_state=0)
    cons = report[report.attribute == "constraint"]
    data = RateData(y, np.ones(len(y)), GroupTable.from_input(g, None, len(y)))
    p = clf.predict(X).astype(float)
    rows = violation_rows(as_constraints(spec), data, p)
    assert list(cons["group"]) == [r["constraint"] for r in rows]
    np.testing.assert_allclose(cons["value"], [r["lhs"] for r in rows])
    np.testing.assert_allclose(cons["bound"], [r["rhs"] for r in rows])
    np.testing.assert_allclose(cons["violation"], [r["violation"] for r in rows])
    assert (cons["violation_low"] <= cons["violation"] + 1e-12).all()
    assert (cons["violation"] <= cons["violation_high"] + 1e-12).all()
    # Resampling machinery: every row drawn once reproduces the exact values of the problem layer.
    terms = [metric_term(k, Slice.make({"race": "b"})) for k in ("tpr", "precision")]
    parts = RateParts(terms, data, p)
    once = parts.values(np.ones((1, len(y))))[:, 0]
    assert once == pytest.approx([evaluate_term(t, data, p) for t in terms])
    # Doubling every count changes no rate.
    assert parts.values(2 * np.ones((1, len(y))))[:, 0] == pytest.approx(once)


def test_ratio_violation_is_in_the_ratio_units():
    from sklearn.metrics import precision_score

    X, y, g = _data()
    clf = LogisticRegression().fit(X, y)
    spec = ["precision >= 0.8", "ppr <= 0.2"]
    report = audit(clf, X, y, groups=g, constraints=spec, n_bootstrap=200, random_state=0)
    cons = report[report.attribute == "constraint"].set_index("group")
    prec = precision_score(y, clf.predict(X))
    assert cons.loc["precision >= 0.8", "violation"] == pytest.approx(0.8 - prec)
    assert cons.loc["ppr <= 0.2", "violation"] == pytest.approx(np.mean(clf.predict(X)) - 0.2)
    # Same resamples for every row: the interval is the precision interval mirrored at the bound.
    overall = report[(report.attribute == "all") & (report.metric == "precision")]
    assert cons.loc["precision >= 0.8", "violation_low"] == pytest.approx(0.8 - overall["value_high"].item())
    assert cons.loc["precision >= 0.8", "violation_high"] == pytest.approx(0.8 - overall["value_low"].item())
    assert f"{0.8 - prec:+.3f}" in str(report)


def test_undefined_ratio_constraint_has_nan_violation():
    X, y, _ = _data(300)
    never = np.column_stack([np.zeros(len(y)), np.zeros(len(y))])  # Fixed predicts 0 everywhere
    with pytest.warns(UserWarning, match=r"1 constraint\(s\) are undefined on these rows, reported as NaN: the "
                                         r"model predicts no positives \(the ratio's denominator ppr is 0\): "
                                         r"\['precision >= 0.8'\]"):
        report = audit(Fixed().fit(never, y), never, y, constraints="precision >= 0.8", n_bootstrap=20,
                       random_state=0)
    row = report[report.attribute == "constraint"]
    assert np.isnan(row["violation"].item()) and np.isnan(row["violation_high"].item())
    line = next(t for t in str(report).splitlines() if t.lstrip().startswith("precision >= 0.8"))
    assert "nan" not in line and line.split()[-3:] == ["-", "0.800", "-"]  # undefined reads "-", as rates do


def test_baseline_as_class_labels_as_in_fit():
    X, y, g = _data(600)
    labels = np.where(y == 1, "yes", "no")
    clf = LogisticRegression().fit(X, labels)
    old = LogisticRegression().fit(X[:, :1], labels)
    base = old.predict(X[:, :1])
    report = audit(clf, X, labels, constraints="churn <= 0.05", baseline=base, n_bootstrap=0)
    churn = np.mean(clf.predict(X) != base)
    assert churn > 0.05
    assert report[report.attribute == "constraint"]["value"].item() == pytest.approx(churn)
    with pytest.raises(ValueError, match=r"class labels \['no', 'yes'\]"):
        audit(clf, X, labels, constraints="churn <= 0.05", baseline=np.where(base == "yes", "y", "n"))


def _simulate(n, rng):
    """Labels and decisions with known population rates: group u has tpr 0.7, group v tpr 0.5."""
    group = rng.choice(["u", "v"], n)
    y = (rng.random(n) < 0.4).astype(int)
    tpr = np.where(group == "u", 0.7, 0.5)
    yhat = np.where(y == 1, rng.random(n) < tpr, rng.random(n) < 0.2).astype(int)
    return np.column_stack([yhat, yhat]).astype(float), y, group


def test_bootstrap_intervals_cover_the_truth_at_nominal_rate():
    rng = np.random.default_rng(0)
    clf = Fixed().fit(None, None)
    true = {"tpr_u": 0.7, "fpr_all": 0.2, "diff_u": 0.7 - 0.6}  # overall tpr = (0.7 + 0.5) / 2
    hits = {k: 0 for k in true}
    n_sim = 120
    for s in range(n_sim):
        X, y, group = _simulate(600, rng)
        rep = pd.DataFrame(audit(clf, X, y, groups=group, metrics=("tpr", "fpr"), n_bootstrap=300, random_state=s))
        rep = rep.set_index(["group", "metric"])
        u, a = rep.loc[("u", "tpr")], rep.loc[("all", "fpr")]
        hits["tpr_u"] += u.value_low <= true["tpr_u"] <= u.value_high
        hits["fpr_all"] += a.value_low <= true["fpr_all"] <= a.value_high
        hits["diff_u"] += u.difference_low <= true["diff_u"] <= u.difference_high
    coverage = {k: v / n_sim for k, v in hits.items()}
    for k, c in coverage.items():
        assert 0.87 <= c <= 0.995, (k, coverage)


def test_interval_width_and_confidence_level():
    rng = np.random.default_rng(5)
    X, y, group = _simulate(800, rng)
    clf = Fixed().fit(None, None)
    wide = audit(clf, X, y, groups=group, confidence_level=0.99, n_bootstrap=400, random_state=0)
    narrow = audit(clf, X, y, groups=group, confidence_level=0.5, n_bootstrap=400, random_state=0)
    width = lambda r: (r["value_high"] - r["value_low"]).to_numpy()
    assert np.all(width(wide) > width(narrow))


def test_results_do_not_depend_on_n_jobs():
    X, y, g = _data(800)
    clf = LogisticRegression().fit(X, y)
    one = audit(clf, X, y, groups=g, n_bootstrap=250, random_state=7)
    with parallel_backend("threading"):
        two = audit(clf, X, y, groups=g, n_bootstrap=250, random_state=7, n_jobs=2)
    pd.testing.assert_frame_equal(pd.DataFrame(one), pd.DataFrame(two))
    other = audit(clf, X, y, groups=g, n_bootstrap=250, random_state=8)
    assert not np.allclose(one["value_low"], other["value_low"])


def test_report_prints_tables_and_renders_html():
    X, y, g = _data(600)
    clf = LogisticRegression().fit(X, y)
    report = audit(clf, X, y, groups=g, constraints="tpr[race] >= tpr - 0.05", n_bootstrap=30, random_state=0)
    text = str(report)
    assert text == repr(report)
    for piece in ("Audit of LogisticRegression on 600 rows", "rates", "difference to the overall rate",
                  "race=b", "tpr[race=b] >= tpr - 0.05", "95% bootstrap intervals"):
        assert piece in text
    html = report._repr_html_()
    assert html.count("<table>") == 4 and "race=c" in html
    # Derived frames are plain DataFrames with pandas' own display.
    sub = report[report.metric == "tpr"]
    assert type(sub) is pd.DataFrame
    assert "[6 rows x 17 columns]" in repr(sub)


def test_undefined_rates_are_nan_not_errors():
    X, y, g = _data(300)
    y = y.copy()
    y[(g.race == "c").to_numpy()] = 0  # group c has no positive: its tpr is undefined
    clf = LogisticRegression().fit(X, y)
    report = audit(clf, X, y, groups=g, n_bootstrap=20, random_state=0)
    row = report.query("group == 'c' and metric == 'tpr'")
    assert np.isnan(row["value"].item()) and np.isnan(row["value_low"].item())
    assert "-" in str(report)


def test_bad_input():
    X, y, g = _data(200)
    clf = LogisticRegression().fit(X, y)
    with pytest.raises(ValueError, match="Unknown audit metric 'f1'"):
        audit(clf, X, y, metrics=("f1",))
    with pytest.raises(ValueError, match=r"metrics is empty; name at least one rate .*metrics=\('tpr',\)"):
        audit(clf, X, y, metrics=[])
    with pytest.raises(ValueError, match="y has 199 entries but X has 200 rows"):
        audit(clf, X, y[:-1])
    with pytest.raises(ValueError, match=r"labels \[7\]"):
        audit(clf, X, np.where(y == 1, 7, 0))
    with pytest.raises(ValueError, match="Unknown group column 'age'"):
        audit(clf, X, y, groups=g, constraints="tpr[age] >= tpr - 0.1")
    with pytest.raises(ValueError, match="n_bootstrap"):
        audit(clf, X, y, n_bootstrap=-1)
    with pytest.raises(NotFittedError, match="no classes_"):
        audit(LogisticRegression(), X, y)
    with pytest.raises(ValueError, match="sample_weight contains NaN"):
        audit(clf, X, y, sample_weight=np.full(200, np.nan))
    with pytest.raises(ValueError, match="sample_weight has negative entries"):
        audit(clf, X, y, sample_weight=-np.ones(200))
    with pytest.raises(ValueError, match="X has 0 rows"):  # not a complaint about weights never given
        audit(clf, X[:0], y[:0], n_bootstrap=0)


@pytest.mark.parametrize("name, message", [
    ("label", "'label' is reserved: in a rate, label=... selects rows by the true label"),
    ("baseline", "'baseline' is reserved: in a rate, baseline=... selects rows by the baseline decision"),
    ("all", "group column cannot be called 'all'"),
    ("constraint", "group column cannot be called 'constraint'"),
])
def test_a_group_column_named_like_a_filter_or_a_report_marker_is_refused(name, message):
    # before, 'label' audited by the true label under the column's counts, and 'all' rows
    # merged with the overall row
    X, y, g = _data(200)
    clf = LogisticRegression().fit(X, y)
    with pytest.raises(ValueError, match=message):
        audit(clf, X, y, groups=g.rename(columns={"race": name}), n_bootstrap=0)


def test_groups_given_as_column_names_point_at_the_columns():
    X, y, g = _data(200)
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2"]).join(g)
    clf = LogisticRegression().fit(frame[["x0", "x1", "x2"]], y)
    for names in ("race", ["race"], ["race", "sex"]):
        shown = [names] if isinstance(names, str) else names
        with pytest.raises(ValueError, match=rf"names columns, .* groups=X\[{re.escape(repr(shown))}\]"):
            audit(clf, frame, y, groups=names, n_bootstrap=0)


def test_importing_metrics_needs_no_pandas_and_audit_says_how_to_get_it():
    # an import hook, as if they were not installed (sys.modules[name] = None broke scikit-learn's
    # own pandas check before 1.9)
    code = ("import importlib.abc, sys\n"
            "class Missing(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path, target=None):\n"
            "        if name.split('.')[0] in ('pandas', 'matplotlib'):\n"
            "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
            "sys.meta_path.insert(0, Missing())\n"
            "import numpy as np\n"
            "from sklearn.dummy import DummyClassifier\n"
            "import skrate.metrics as m, skrate.model_selection\n"
            "clf = DummyClassifier().fit(np.zeros((4, 1)), [0, 1, 0, 1])\n"
            "try:\n    m.audit(clf, np.zeros((4, 1)), [0, 1, 0, 1])\nexcept ImportError as e:\n    print(e)\n"
            "try:\n    m.plot_tradeoff(None)\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pip install pandas" in out
    assert "pip install matplotlib" in out


def test_plots(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    X, y, g = _data(400)
    clf = LogisticRegression().fit(X, y)
    report = audit(clf, X, y, groups=g, n_bootstrap=30, random_state=0)
    axes = plot_audit(report, ["tpr", "fpr"])
    assert len(axes) == 2
    line = axes[0].lines[0]
    np.testing.assert_allclose(line.get_xdata(), report.query("metric == 'tpr'")["value"])
    with pytest.raises(ValueError, match="no metric 'f1'"):
        plot_audit(report, ["f1"])
    one = plot_audit(report, "tpr")  # a name alone, not its letters
    assert len(one) == 1 and one[0].get_title() == "tpr"
    # the dashed line is the overall rate; a report filtered to one attribute has none (it
    # was drawn at the first group's rate)
    tpr = report.query("metric == 'tpr'")
    dashed = [ln for ln in one[0].lines if ln.get_linestyle() == "--"]
    assert len(dashed) == 1
    assert dashed[0].get_xdata()[0] == tpr.loc[tpr["attribute"] == "all", "value"].iloc[0]
    filtered = plot_audit(report[report["attribute"] != "all"], "tpr")
    assert not [ln for ln in filtered[0].lines if ln.get_linestyle() == "--"]


def test_plots_refuse_frames_of_another_kind_and_join_slacks_in_order():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from skrate.metrics import plot_tradeoff

    X, y, g = _data(400)
    clf = ConstrainedClassifier("tpr[race] >= tpr - 0.1", max_iter=50, random_state=0).fit(X, y, groups=g)
    report = clf.constraint_report(X, y, groups=g)
    with pytest.raises(ValueError, match=r"report lacks the column\(s\) \['attribute', 'group', 'metric'.*"
                                         r"plot_audit takes the frame skrate.metrics.audit returns"):
        plot_audit(report)
    with pytest.raises(ValueError, match="metrics is empty"):
        plot_audit(audit(clf, X, y, groups=g, n_bootstrap=0), metrics=[])
    table = audit(clf, X, y, groups=g, n_bootstrap=0, constraints=clf.constraints)
    with pytest.raises(ValueError, match=r"the report holds no rates of groups, only constraint rows: plot an audit that "
                                         r"measures rates \(audit's default metrics"):
        plot_audit(table[table["attribute"] == "constraint"])
    # a fit report or an audit drew an empty plot, in silence
    for wrong in (clf.fit_report_, report):
        with pytest.raises(ValueError, match=r"curve lacks the column\(s\) .*tradeoff_curve returns"):
            plot_tradeoff(wrong)
    # slacks given out of order: the line still runs from the least slack to the largest
    curve = pd.DataFrame({"slack": [0.1, 0.0, 0.2, 0.05], "train_error": [0.2, 0.3, 0.1, 0.25],
                          "train_violation": [0.0, -0.01, 0.02, 0.005]})
    ax = plot_tradeoff(curve)
    np.testing.assert_array_equal(ax.lines[0].get_xdata(), [-0.01, 0.005, 0.0, 0.02])
    np.testing.assert_array_equal(curve["slack"], [0.1, 0.0, 0.2, 0.05])  # not sorted in place
    matplotlib.pyplot.close("all")


def test_plot_height_follows_the_rows_drawn():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    rng = np.random.RandomState(0)
    X = rng.randn(300, 2)
    y = (X[:, 0] + rng.randn(300) > 0).astype(int)
    clf = LogisticRegression().fit(X, y)
    heights = {}
    for k in (1, 10):  # ten 0/1 flags: 21 rows, though only two distinct values
        flags = pd.DataFrame({f"flag{i}": rng.randint(0, 2, 300) for i in range(k)})
        axes = plot_audit(audit(clf, X, y, groups=flags, metrics=("tpr",), n_bootstrap=0))
        assert len(axes[0].get_yticks()) == 2 * k + 1
        heights[k] = axes[0].figure.get_size_inches()[1]
        matplotlib.pyplot.close(axes[0].figure)
    assert heights[10] - heights[1] > 0.3 * 18  # room for every label as the rows grow


def _rich_data(n=3000, seed=4):
    rng = np.random.default_rng(seed)
    g = pd.DataFrame({"race": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]), "sex": rng.choice(["F", "M"], n),
                      "zip": rng.integers(0, 40, n).astype(str)})
    y = (rng.random(n) < 0.4).astype(int)
    base = (rng.random(n) < 0.5).astype(int)
    w = rng.uniform(0.2, 3.0, n)
    w[:50] = 0.0
    p = rng.random(n)
    return y, base, w, p, g


def _evaluate_or_nan(term, data, p):
    from skrate.exceptions import UndefinedRateError

    try:
        return evaluate_term(term, data, p)
    except UndefinedRateError:  # a slice without weight: NaN in audits
        return np.nan


def test_cell_sums_give_the_rates_of_the_resampled_rows():
    from skrate.metrics._bootstrap import resample_counts
    from skrate.rates import Expression, Ratio
    from skrate.rates._expression import RATE_KINDS, Rate

    y, base, w, p, g = _rich_data()
    n = len(y)
    slices = [Slice(), Slice.make({"race": "b"}), Slice.make({"race": ["a", "c"], "sex": "F"}),
              Slice.make({"label": 1}), Slice.make({"baseline": 0, "sex": "M"}), Slice.make({"zip": "17"})]
    terms = [Expression.of(Rate(kind, s)) for s in slices for kind in RATE_KINDS]
    terms += [metric_term("precision", s) for s in slices]
    terms += [Ratio(Expression.of(Rate("tpr", slices[1])), Expression.of(Rate("tpr")))]
    data = RateData(y, w, GroupTable.from_input(g, None, n), base)
    parts = RateParts(terms, data, p)
    assert parts.n_cells <= 3 * 2 * 40 * 2 * 2  # the cells of the filtered columns, label and baseline
    rng = np.random.default_rng(0)
    counts = np.vstack([np.ones(n), 2 * np.ones(n)] + [resample_counts(rng, n) for _ in range(3)])
    assert (counts[2:].sum(axis=1) == n).all()
    got = parts.values(counts)
    assert np.isnan(got).any() and not np.isnan(got).all()  # fpr[label=1] has no rows
    for b, k in enumerate(counts):
        resampled = RateData(y, w * k, data.groups, base)
        expected = [_evaluate_or_nan(t, resampled, p) for t in terms]
        np.testing.assert_allclose(got[:, b], expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(parts.values()[:, 0], got[:, 0], rtol=1e-14, atol=1e-15)


def test_cells_of_columns_with_many_values():
    from skrate.problem._groups import cell_index

    rng = np.random.default_rng(1)
    n = 2000
    cols = [rng.integers(0, 700, n), rng.integers(0, 900, n), rng.integers(0, 2, n)]
    cell, size = cell_index([(c, c.max() + 1) for c in cols], n)  # 1.26M combinations: compressed on the way
    rows = np.column_stack(cols)
    _, inverse = np.unique(rows, axis=0, return_inverse=True)
    # the distinct rows, numbered in their sorted order
    np.testing.assert_array_equal(cell, inverse.ravel())
    assert size == inverse.max() + 1
    # a group column with a value per row
    y, base, w, p, g = _rich_data(n)
    g["id"] = np.arange(n).astype(str)
    data = RateData(y, w, GroupTable.from_input(g, None, n), base)
    terms = [metric_term(k, Slice.make({"id": str(i)})) for i in (63, 600, 1999) for k in ("ppr", "accuracy")]
    terms += [metric_term("tpr", Slice.make({"zip": ["3", "5"]})), metric_term("precision", Slice())]
    parts = RateParts(terms, data, p)
    np.testing.assert_allclose(parts.values()[:, 0], [evaluate_term(t, data, p) for t in terms], rtol=1e-12)
    # a few filters split a column of many values into few cells: ids 63, 600, 1999 and the rest
    assert parts.n_cells <= 4 * 2 * 2 * 2
    # every value filtered (audited groups): a cell per id and label and baseline, compressed
    every = [metric_term("ppr", Slice.make({"id": str(i)})) for i in range(n)] + terms
    values = RateParts(every, data, p).values()[:, 0]
    np.testing.assert_allclose(values[n:], parts.values()[:, 0], rtol=1e-12)
    np.testing.assert_allclose(values[50:n], p[50:], rtol=1e-15)  # an id's ppr is its decision
    assert np.isnan(values[:50]).all()  # ids of weight 0


def test_bootstrap_is_the_same_in_worker_processes():
    X, y, g = _data(500)
    clf = LogisticRegression().fit(X, y)
    spec = "tpr[race] >= tpr - 0.05"
    one = audit(clf, X, y, groups=g, constraints=spec, n_bootstrap=130, random_state=3)  # chunks of 100 and 30
    two = audit(clf, X, y, groups=g, constraints=spec, n_bootstrap=130, random_state=3, n_jobs=2)
    pd.testing.assert_frame_equal(pd.DataFrame(one), pd.DataFrame(two))
    assert not pd.DataFrame(one).query("attribute != 'constraint'")["value_low"].isna().any()


def test_an_any_of_filter_on_a_column_of_X(monkeypatch):
    # region=1|2|3 merges the values into one class: a cell's representative row holds one of them,
    # and the filter still names the others
    from skrate.problem import _slice_cells

    rng = np.random.default_rng(0)
    n = 2000
    X = pd.DataFrame({"x": rng.normal(size=n), "region": rng.integers(0, 10, n)})
    y = (X["x"] + rng.normal(size=n) > 0).astype(int).to_numpy()
    clf = LogisticRegression().fit(X, y)
    spec = ["ppr[region=1|2|3] >= 0.6", "tpr[region=7|8] >= tpr - 0.1"]
    merged = pd.DataFrame(audit(clf, X, y, constraints=spec, n_bootstrap=40, random_state=0))
    data = RateData(y, np.ones(n), GroupTable.from_input(None, X, n))
    rows = violation_rows(as_constraints(spec), data, clf.predict(X).astype(float))
    cons = merged[merged.attribute == "constraint"]
    np.testing.assert_allclose(cons["value"], [r["lhs"] for r in rows])
    # the same values and resamples as without merging values into classes
    monkeypatch.setattr(_slice_cells, "_value_classes", lambda key, known, codes, filters: (codes, len(known)))
    plain = pd.DataFrame(audit(clf, X, y, constraints=spec, n_bootstrap=40, random_state=0))
    pd.testing.assert_frame_equal(merged, plain, rtol=1e-12)


def test_a_list_X_with_groups_as_a_frame_or_series():
    X, y = [[0.0], [1.0], [2.0], [3.0]], [0, 1, 0, 1]
    groups = pd.DataFrame({"sex": ["F", "M", "F", "M"]})
    clf = LogisticRegression().fit(X, y)
    for g in (groups, groups["sex"]):
        report = pd.DataFrame(audit(clf, X, y, groups=g, n_bootstrap=0)).query("attribute == 'sex'")
        assert set(report["group"]) == {"F", "M"} and (report["count"] == 2).all()


def test_a_missing_text_label_is_named_not_a_sorting_error():
    from skrate.metrics import make_rate_scorer

    X = np.arange(10.0)[:, None]
    y = pd.Series(np.where(X[:, 0] > 4, "yes", "no"))
    clf = LogisticRegression().fit(X, y)
    with_nan = y.copy()
    with_nan[3] = np.nan
    with_na = y.astype("string").where(y.index != 3)
    for bad in (with_nan, with_na):
        with pytest.raises(ValueError, match=r"y has 1 missing label\(s\) \(None, NaN or NA\), the first in row 3"):
            audit(clf, X, bad, n_bootstrap=0)
    with pytest.raises(ValueError, match=r"y_true has 1 missing label\(s\)"):
        make_rate_scorer("tpr")(clf, X, with_nan)


def test_audit_zeroes_rates_within_rounding_as_the_reports_do():
    # probabilities a hair under 1 (a mixture's weights summed): no loss, up to rounding
    from skrate.metrics import make_rate_scorer

    class Mixture(ClassifierMixin, BaseEstimator):
        classes_ = np.array([0, 1])

        def predict_proba(self, X):
            p = np.asarray(X)[:, 0]
            return np.c_[1 - p, p]

        def predict(self, X):
            return (np.asarray(X)[:, 0] > 0.5).astype(int)

    y = np.array([1, 1, 0, 0, 1, 0])
    b = np.array([1, 0, 0, 1, 1, 0])
    X = np.where(y == 1, 0.7 + 0.2 + 0.1, 0.0)[:, None]
    assert X.max() < 1
    for spec, expected in (("losses", 0.0), ("win_loss_ratio", np.inf)):
        report = audit(Mixture(), X, y, baseline=b, constraints=f"{spec} >= 0", n_bootstrap=20, random_state=0,
                       decisions="expected")
        row = report[report.attribute == "constraint"]
        assert row.value.item() == expected
        assert make_rate_scorer(spec, decisions="expected")(Mixture(), X, y, baseline=b) == expected


def test_percentile_intervals_keep_infinite_resamples():
    from skrate.metrics._bootstrap import percentile_interval

    finite = np.random.default_rng(0).normal(size=100)
    samples = np.vstack([
        finite,
        np.r_[finite[:88], np.full(12, np.inf)],  # a ratio with no losses in 12% of resamples
        np.r_[np.full(12, -np.inf), finite[:88]],
        np.r_[finite[:98], np.nan, np.inf],  # one undefined resample, one infinite
        np.full(100, np.nan),
    ])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's inf - inf used to warn, and give NaN
        low, high = percentile_interval(samples, 0.9)
    np.testing.assert_allclose([low[0], high[0]], np.quantile(finite, [0.05, 0.95]))
    assert np.isfinite(low[1]) and high[1] == np.inf
    assert low[2] == -np.inf and np.isfinite(high[2])
    assert np.isfinite(low[3]) and np.isfinite(high[3])  # 0.95 of 99 defined values: still finite
    assert np.isnan(low[4]) and np.isnan(high[4])


def test_audit_interval_of_a_ratio_infinite_in_some_resamples():
    rng = np.random.RandomState(0)
    X = rng.randn(400, 2)
    y = (X[:, 0] + 0.5 * rng.randn(400) > 0).astype(int)
    g = np.where(np.arange(400) < 40, "minority", "majority")
    X[:40, 0] -= 2.0  # two positive predictions in the minority: none in about 12% of resamples
    clf = LogisticRegression().fit(X, y)
    assert clf.predict(X[:40]).sum() == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        report = audit(clf, X, y, groups=g, constraints="ppr[group=majority] / ppr[group=minority] <= 8",
                       metrics=("ppr",), n_bootstrap=400, random_state=0)
    row = pd.DataFrame(report).query("attribute == 'constraint'").iloc[0]
    assert np.isfinite(row["violation_low"]) and row["violation_high"] == np.inf
    assert "+inf]" in str(report)


def test_audit_reports_a_constraint_on_a_group_value_absent_from_the_rows_as_nan():
    # constraint_report's advice, audit(model, X, y, groups=..., constraints=model.constraints),
    # used to raise on a batch without one of the fitted groups
    X, y, g = _data(400)
    clf = LogisticRegression().fit(X, y)
    present = (g.race != "c").to_numpy()
    cons = ["tpr[race=c] >= 0.5", "tpr[race=b] >= 0.5"]
    with pytest.warns(UserWarning, match=r"no row holds the group value\(s\) \['race=c'\] that 1 "
                                         r"constraint\(s\) name, reported as NaN"):
        report = audit(clf, X[present], y[present], groups=g[present], constraints=cons,
                       n_bootstrap=20, random_state=0)
    rows = pd.DataFrame(report).query("attribute == 'constraint'").set_index("group")
    assert list(rows.index) == cons
    assert rows.loc[cons[0], ["value", "bound", "violation", "violation_low", "violation_high"]].isna().all()
    assert np.isfinite(rows.loc[cons[1], ["value", "violation", "violation_low", "violation_high"]].astype(float)).all()
    full = pd.DataFrame(audit(clf, X[present], y[present], groups=g[present], constraints=cons[1:],
                              n_bootstrap=20, random_state=0)).query("attribute == 'constraint'")
    np.testing.assert_allclose(full["violation"], rows.loc[[cons[1]], "violation"].astype(float))
    with pytest.raises(ValueError, match="Unknown group column 'colour'"):  # a wrong column still raises
        audit(clf, X, y, groups=g, constraints="tpr[colour=red] >= 0.5", n_bootstrap=0)


def test_audit_of_several_group_columns_keeps_memory_linear_and_intervals_paired():
    # cells crossing every audited column reach one per row with a few columns: 6 columns on
    # 50k rows took ~180 MB; one set of cell sums per attribute takes ~40
    import tracemalloc

    from sklearn.dummy import DummyClassifier

    rng = np.random.default_rng(0)
    n = 50_000
    X, y = rng.normal(size=(n, 2)), (rng.random(n) < 0.4).astype(int)
    g = pd.DataFrame({"race": rng.integers(0, 6, n), "sex": rng.integers(0, 2, n), "age": rng.integers(0, 10, n),
                      "region": rng.integers(0, 50, n), "job": rng.integers(0, 15, n), "store": rng.integers(0, 30, n)})
    clf = DummyClassifier(strategy="stratified", random_state=0).fit(X, y)
    tracemalloc.start()
    try:
        report = pd.DataFrame(audit(clf, X, y, groups=g, metrics=("tpr", "ppr"), n_bootstrap=100, random_state=0))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 90e6, peak
    # each attribute's rows are those of its audit alone, intervals of differences included
    alone = pd.DataFrame(audit(clf, X, y, groups=g[["region"]], metrics=("tpr", "ppr"), n_bootstrap=100,
                               random_state=0))
    mine = report[report["attribute"].isin(["all", "region"])].reset_index(drop=True)
    pd.testing.assert_frame_equal(mine, alone.reset_index(drop=True))
    # a RandomState is drawn from once, so the attributes still share their resamples
    state = pd.DataFrame(audit(clf, X, y, groups=g[["sex", "race"]], metrics=("tpr",), n_bootstrap=50,
                               random_state=np.random.RandomState(3)))
    again = pd.DataFrame(audit(clf, X, y, groups=g[["sex", "race"]], metrics=("tpr",), n_bootstrap=50,
                               random_state=np.random.RandomState(3)))
    pd.testing.assert_frame_equal(state, again)


def test_blocks_on_few_crossed_cells_sum_them_once_a_resample(monkeypatch):
    # each block took two bincounts over every row a resample: half the audit of 15k rows
    import skrate.metrics._bootstrap as bootstrap

    y, base, w, p, g = _rich_data(3000)
    data = RateData(y, w, GroupTable.from_input(g, None, 3000), base)
    blocks = [RateParts([metric_term(k, Slice.make({col: v})) for k in ("tpr", "ppr") for v in sorted(set(g[col]))],
                        data, p) for col in ("race", "sex")]
    blocks.append(RateParts([metric_term("precision", Slice.make({"race": "b", "sex": "F"}))], data, p))
    shared = bootstrap._shared_cells(blocks)
    assert shared is not None and shared[1] <= 3 * 2 * 2 * 2
    rows, bincount = [], np.bincount
    monkeypatch.setattr(np, "bincount", lambda x, weights=None, minlength=0: (
        weights is not None and rows.append(len(x))) or bincount(x, weights, minlength))
    fast = bootstrap_values(blocks, 40, random_state=0)
    assert rows.count(3000) == 2 * 40  # sums over the rows: two a resample, the rest over the cells
    monkeypatch.setattr(bootstrap, "_shared_cells", lambda blocks: None)
    slow = bootstrap_values(blocks, 40, random_state=0)
    np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-15)
    # blocks of other decisions, or cells crossing to one per row, keep their own sums
    other = RateParts([metric_term("tpr", Slice())], data, 1 - p)
    assert bootstrap._shared_cells([blocks[0], other]) is None
    g = g.assign(id=np.arange(3000).astype(str))
    data = RateData(y, w, GroupTable.from_input(g, None, 3000), base)
    ids = RateParts([metric_term("ppr", Slice.make({"id": str(i)})) for i in range(3000)], data, p)
    assert bootstrap._shared_cells([blocks[0], ids]) is None


def test_every_audited_column_and_the_constraints_share_one_draw_of_each_resample(monkeypatch):
    # each block (one per group column, one for the constraints) drew the same resamples again:
    # four columns cost 2.3 times one
    import skrate.metrics._bootstrap as bootstrap

    draws, resample = [], bootstrap.resample_counts
    monkeypatch.setattr(bootstrap, "resample_counts", lambda rng, n: draws.append(n) or resample(rng, n))
    X, y, g = _data(300)
    groups = g.assign(third=np.where(np.arange(300) % 3 == 0, "u", "v"))
    clf = LogisticRegression().fit(X, y)
    audit(clf, X, y, groups=groups, constraints="tpr[race] >= tpr - 0.1", n_bootstrap=120, random_state=0)
    assert len(draws) == 120


def test_a_metric_constraint_is_refused_naming_where_it_is_evaluated_but_a_ratio_bound_taken():
    from skrate.generalized import kld_fairness
    from skrate.metrics import make_violation_scorer

    X, y, g = _data(400)
    clf = LogisticRegression().fit(X, y)
    con = kld_fairness("race", 0.02)
    with pytest.raises(TypeError, match=r"kld\[race\] <= 0.02 is a metric constraint.*make_violation_scorer"):
        audit(clf, X, y, groups=g, constraints=[con])
    assert np.isfinite(make_violation_scorer(con)(clf, X, y, groups=g))  # where it is evaluated
    # a bound on one ratio is a rate constraint: audited as its string form
    from skrate.generalized import precision

    stated = audit(clf, X, y, groups=g, constraints=[precision(race="a") >= 0.5], n_bootstrap=50, random_state=0)
    parsed = audit(clf, X, y, groups=g, constraints=["precision[race=a] >= 0.5"], n_bootstrap=50, random_state=0)
    pd.testing.assert_frame_equal(stated, parsed)


def test_constraints_on_separate_columns_are_resampled_in_separate_blocks(monkeypatch):
    # one block for every constraint crossed their columns: 3 columns of 30 values made up to
    # 27000 cells where each column has 60 (its values x the label)
    rng = np.random.default_rng(0)
    n = 6000
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    groups = pd.DataFrame({f"c{i}": rng.integers(0, 30, n).astype(str) for i in range(3)})
    model = LogisticRegression().fit(X, y)
    sizes = []
    init = RateParts.__init__

    def counting(self, *args, **kwargs):
        init(self, *args, **kwargs)
        sizes.append(self.n_cells)

    monkeypatch.setattr(RateParts, "__init__", counting)
    cons = [f"tpr[c{i}] >= tpr - 0.05" for i in range(3)]
    together = audit(model, X, y, groups=groups, metrics=["ppr"], constraints=cons, n_bootstrap=50, random_state=0)
    assert max(sizes) <= 2 * 30
    # the draws depend on the seed only: each constraint audited alone has the same intervals
    rows = together[together["attribute"] == "constraint"].reset_index(drop=True)
    for i, con in enumerate(cons):
        alone = audit(model, X, y, groups=groups, metrics=["ppr"], constraints=[con], n_bootstrap=50, random_state=0)
        alone = alone[alone["attribute"] == "constraint"].reset_index(drop=True)
        mine = rows[rows["group"].str.startswith(f"tpr[c{i}=")].reset_index(drop=True)
        assert len(mine) == 30
        pd.testing.assert_frame_equal(mine, alone, check_exact=False, rtol=1e-12)


@pytest.mark.parametrize("how", ["no positives", "zero weight"])
def test_a_constraint_undefined_on_rows_of_its_slice_is_warned_of(how):
    # the slice has rows, but none its rate divides by: NaN, as absent group values, and said so
    X, y, g = _data(400)
    y, weight = y.copy(), np.ones(len(y))
    in_c = (g.race == "c").to_numpy()
    if how == "no positives":
        y[in_c] = 0
    else:  # its positives weigh 0; a group all of weight 0 is no group (rows dropped, as in fit)
        weight[in_c & (y == 1)] = 0.0
    clf = LogisticRegression().fit(X, y)
    with pytest.warns(UserWarning, match=r"audit: 1 constraint\(s\) are undefined on these rows, reported as "
                                         r"NaN.*\['tpr\[race=c\] >= tpr - 0.1'\]"):
        report = audit(clf, X, y, groups=g, sample_weight=weight, constraints="tpr[race] >= tpr - 0.1",
                       n_bootstrap=20, random_state=0)
    rows = pd.DataFrame(report).query("attribute == 'constraint'").set_index("group")
    assert np.isnan(rows.loc["tpr[race=c] >= tpr - 0.1", "violation"])
    assert np.isfinite(rows.loc["tpr[race=a] >= tpr - 0.1", "violation"])


def test_audit_takes_the_rate_languages_aliases_of_its_metrics():
    from skrate.rates._functions import RATE_FUNCTIONS
    from skrate.metrics._audit import _ALIASES

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = (X[:, 0] + rng.normal(size=300) > 0).astype(int)
    g = np.where(rng.random(300) < 0.4, "a", "b")
    lr = LogisticRegression().fit(X, y)
    for alias, name in _ALIASES.items():
        assert RATE_FUNCTIONS[alias]() == RATE_FUNCTIONS[name]()  # the same rate in the language
        by_alias = audit(lr, X, y, groups={"g": g}, metrics=(alias,), n_bootstrap=0)
        pd.testing.assert_frame_equal(by_alias, audit(lr, X, y, groups={"g": g}, metrics=(name,), n_bootstrap=0))
    with pytest.raises(ValueError, match=r"Unknown audit metric 'selection_rate'; choose from .*coverage.*recall"):
        audit(lr, X, y, groups={"g": g}, metrics=("selection_rate",))


def _width(report, attribute, group, metric, column="value"):
    row = report[(report.attribute == attribute) & (report.group == group) & (report.metric == metric)]
    return float(row[f"{column}_high"].iloc[0] - row[f"{column}_low"].iloc[0])


def test_frequency_weights_give_the_intervals_of_the_repeated_rows():
    # count-compressed rows: weight k stands for k identical rows; read as sampling weights the
    # intervals are about sqrt(E[k^2] / E[k]) = 1.9 times those of the repeated rows
    rng = np.random.default_rng(3)
    n = 400
    X = np.column_stack([rng.integers(0, 2, n), rng.random(n)]).astype(float)
    y = (rng.random(n) < 0.3 + 0.4 * X[:, 0]).astype(int)
    groups = pd.DataFrame({"g": rng.choice(["u", "v"], n)})
    k = rng.integers(1, 6, n)
    clf = Fixed().fit(X, y)
    common = dict(metrics=("tpr", "ppr"), constraints="tpr[g] >= tpr - 0.1", n_bootstrap=2000,
                  decisions="predict", random_state=0)
    repeated = audit(clf, np.repeat(X, k, axis=0), np.repeat(y, k), groups=groups.loc[groups.index.repeat(k)],
                     **common)
    counted = audit(clf, X, y, groups=groups, sample_weight=k, weight_kind="frequency", **common)
    sampled = audit(clf, X, y, groups=groups, sample_weight=k, **common)
    np.testing.assert_allclose(counted["value"], repeated["value"], rtol=1e-12)  # the values agree
    cases = [("all", "all", "tpr"), ("all", "all", "ppr"), ("g", "u", "tpr"), ("g", "v", "ppr")]
    for case in cases:
        assert _width(counted, *case) / _width(repeated, *case) == pytest.approx(1.0, abs=0.12), case
        assert _width(sampled, *case) / _width(repeated, *case) > 1.5, case
    con = ("constraint", "tpr[g=u] >= tpr - 0.1", "constraint")
    assert _width(counted, *con, "violation") / _width(repeated, *con, "violation") == pytest.approx(1.0, abs=0.12)
    with pytest.raises(ValueError, match=r"sample_weight\[2\] = 0\.5 is not an integer"):
        audit(clf, X, y, sample_weight=np.r_[1.0, 2.0, 0.5, np.ones(n - 3)], weight_kind="frequency")
    # counts beyond what a multinomial draws overflowed int64 with a bare OverflowError
    with pytest.raises(ValueError, match=r"they total 4e\+19, more than the 2\*\*62 units a resample can "
                                         r"draw; pass weight_kind='sampling'"):
        audit(clf, X, y, sample_weight=np.full(n, 1e17), weight_kind="frequency", n_bootstrap=5)


def test_audit_warns_of_values_undefined_in_many_resamples():
    X, y, groups = _data(n=600, seed=2)
    y = y.copy()
    tiny = np.flatnonzero(groups["race"].to_numpy() == "c")[:15]
    groups = groups.copy()
    groups.loc[groups.index[tiny], "race"] = "d"
    y[tiny] = 0
    y[tiny[:2]] = 1  # two positives: tpr[race=d] is undefined in the resamples that draw neither
    clf = LogisticRegression().fit(X, y)
    with pytest.warns(UserWarning, match=r"undefined in more than 1% of the 500 resamples.*tpr\[race=d\] \(\d+%\)"):
        audit(clf, X, y, groups=groups, constraints="tpr[race] >= tpr - 0.2", n_bootstrap=500, random_state=0)
    with warnings.catch_warnings():  # groups of a hundred rows and more: every resample defines every value
        warnings.simplefilter("error")
        audit(clf, X, y, groups=groups[["sex"]], constraints="tpr[sex] >= tpr - 0.2", n_bootstrap=500,
              random_state=0)


def test_a_warning_lists_at_most_ten_undefined_constraints_and_counts_the_rest():
    rng = np.random.default_rng(0)
    n = 600
    X = rng.normal(size=(n, 2))
    g = np.repeat([f"g{i:02d}" for i in range(30)], n // 30)
    y = (rng.random(n) < 0.5).astype(int)
    y[np.isin(g, [f"g{i:02d}" for i in range(15)])] = 0  # 15 groups without positives: tpr undefined
    clf = LogisticRegression().fit(X, y)
    with pytest.warns(UserWarning, match=r"15 constraint\(s\) are undefined") as record:
        audit(clf, X, y, groups={"g": g}, constraints="tpr[g] >= tpr - 0.1", n_bootstrap=0)
    message = next(str(w.message) for w in record if "are undefined" in str(w.message))
    assert "'tpr[g=g09] >= tpr - 0.1'] and 5 more" in message and "g10" not in message


def test_a_difference_interval_pairs_the_group_and_overall_rate_of_each_resample():
    # a group of half the rows moves with the overall rate: their difference varies less than the
    # group's rate, and its interval is that of a paired bootstrap of the difference by hand
    rng = np.random.default_rng(0)
    n = 2000
    g = rng.choice(["a", "b"], n)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    clf = LogisticRegression().fit(X, y)
    report = audit(clf, X, y, groups={"g": g}, metrics=("ppr",), n_bootstrap=2000, random_state=0)
    assert _width(report, "g", "a", "ppr", "difference") < 0.85 * _width(report, "g", "a", "ppr")
    p, draws = clf.predict(X), np.random.default_rng(1).integers(0, n, (2000, n))
    by_hand = [p[i][g[i] == "a"].mean() - p[i].mean() for i in draws]
    low, high = np.quantile(by_hand, [0.025, 0.975])
    assert _width(report, "g", "a", "ppr", "difference") == pytest.approx(high - low, rel=0.1)


def test_frequency_weights_that_follow_the_decisions_give_the_repeated_rows_bounds():
    # counts of 5 where the model says 1, of 1 elsewhere: the counted rows' bounds (not only their
    # widths) are the repeated rows', around the same value
    rng = np.random.default_rng(3)
    n = 400
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    k = np.where(X[:, 0] > 0, 5, 1)
    clf = LogisticRegression().fit(X, y)
    common = dict(metrics=("ppr",), n_bootstrap=2000, decisions="predict", random_state=0)
    repeated = audit(clf, np.repeat(X, k, axis=0), np.repeat(y, k), **common).iloc[0]
    counted = audit(clf, X, y, sample_weight=k, weight_kind="frequency", **common).iloc[0]
    assert counted["value_low"] <= counted["value"] <= counted["value_high"]
    np.testing.assert_allclose(counted[["value_low", "value_high"]].astype(float),
                               repeated[["value_low", "value_high"]].astype(float), atol=0.01)
