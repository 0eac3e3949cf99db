"""Compilation of rates into the sparse rate matrix, against direct formulas."""

import inspect

import numpy as np
import pandas as pd
import pytest

from skrate.problem import (GroupTable, RateData, compile_expressions, compile_problem, constraint_rows,
                            constraint_violation)
from skrate.problem._compile import expand_constraints
from skrate.problem._groups import _column
from skrate.rates import as_constraints, equal_odds
from skrate.rates import parse_constraint, parse_expression


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    n = 500
    y = rng.integers(0, 2, n)
    b = rng.integers(0, 2, n)
    w = rng.uniform(0.5, 2.0, n)
    groups = {"race": rng.choice(["a", "b", "c"], n), "sex": rng.choice(["F", "M"], n)}
    yhat = rng.uniform(size=n)  # expected decisions: rates are linear, so they hold in expectation too
    return RateData(y, w, GroupTable.from_input(groups, None, n), b), groups, yhat


def _mean(v, m, w):
    return np.sum(w[m] * v[m]) / np.sum(w[m])


DIRECT = {
    "ppr[race=a]": lambda y, b, p, g, w: _mean(p, g["race"] == "a", w),
    "npr[sex=F]": lambda y, b, p, g, w: _mean(1 - p, g["sex"] == "F", w),
    "tpr[race=b|c]": lambda y, b, p, g, w: _mean(p, (g["race"] != "a") & (y == 1), w),
    "fnr": lambda y, b, p, g, w: _mean(1 - p, y == 1, w),
    "fpr[race=c, sex=M]": lambda y, b, p, g, w: _mean(p, (g["race"] == "c") & (g["sex"] == "M") & (y == 0), w),
    "tnr": lambda y, b, p, g, w: _mean(1 - p, y == 0, w),
    "accuracy[sex=M]": lambda y, b, p, g, w: _mean(y * p + (1 - y) * (1 - p), g["sex"] == "M", w),
    "error_rate": lambda y, b, p, g, w: _mean(y * (1 - p) + (1 - y) * p, y >= 0, w),
    "tp_proportion[race=a]": lambda y, b, p, g, w: _mean(y * p, g["race"] == "a", w),
    "label_rate[sex=F]": lambda y, b, p, g, w: _mean(y.astype(float), g["sex"] == "F", w),
    "baseline_ppr": lambda y, b, p, g, w: _mean(b.astype(float), y >= 0, w),
    "churn[sex=F]": lambda y, b, p, g, w: _mean(b * (1 - p) + (1 - b) * p, g["sex"] == "F", w),
    "wins": lambda y, b, p, g, w: _mean((b != y) * (y * p + (1 - y) * (1 - p)), y >= 0, w),
    "losses[label=1]": lambda y, b, p, g, w: _mean((b == y) * (y * (1 - p) + (1 - y) * p), y == 1, w),
    "ppr[baseline=1]": lambda y, b, p, g, w: _mean(p, b == 1, w),
}


@pytest.mark.parametrize("spec", list(DIRECT))
def test_every_rate_against_direct_formula(data, spec):
    rd, groups, p = data
    A, c = compile_expressions([parse_expression(spec)], rd)
    expected = DIRECT[spec](rd.y, rd.baseline, p, groups, rd.sample_weight)
    assert A.shape == (1, rd.n)
    np.testing.assert_allclose((A @ p + c)[0], expected, rtol=1e-12)


def test_problem_rows_and_expansion(data):
    rd, groups, p = data
    cons = [parse_constraint("tpr[race] >= 0.9 * tpr"), parse_constraint("precision[sex=F] >= 0.5")]
    prob = compile_problem(parse_expression("error"), cons, rd)
    assert prob.n_constraints == 4 and prob.A.shape == (5, rd.n)
    vals = prob.values(p)
    tpr_all = DIRECT["fnr"](rd.y, rd.baseline, 1 - p, groups, rd.sample_weight)
    for k, race in enumerate(["a", "b", "c"]):
        m = (groups["race"] == race) & (rd.y == 1)
        np.testing.assert_allclose(vals[1 + k], 0.9 * tpr_all - _mean(p, m, rd.sample_weight))
    f = groups["sex"] == "F"
    np.testing.assert_allclose(vals[4], 0.5 * _mean(p, f, rd.sample_weight) - _mean(rd.y * p, f, rd.sample_weight))
    # many candidates at once
    P = np.column_stack([p, 1 - p])
    np.testing.assert_allclose(prob.values(P)[:, 0], vals)


def test_constraint_rows_report_sides(data):
    rd, groups, p = data
    rows = constraint_rows([parse_constraint("precision[sex] >= 0.5")], rd, p)
    assert [r["constraint"] for r in rows] == ["precision[sex=F] >= 0.5", "precision[sex=M] >= 0.5"]
    for r, s in zip(rows, ["F", "M"]):
        m = groups["sex"] == s
        prec = np.sum((rd.sample_weight * rd.y * p)[m]) / np.sum((rd.sample_weight * p)[m])
        np.testing.assert_allclose(r["lhs"], prec)
        assert r["rhs"] == 0.5
        assert np.sign(r["violation"]) == np.sign(0.5 - prec)


def test_group_inputs_agree():
    rng = np.random.default_rng(1)
    race = rng.choice(["a", "b"], 50)
    X = pd.DataFrame({"race": race, "x": rng.normal(size=50)})
    forms = [
        GroupTable.from_input({"race": race}, None, 50),
        GroupTable.from_input(pd.DataFrame({"race": race}), None, 50),
        GroupTable.from_input(pd.Series(race, name="race"), None, 50),
        GroupTable.from_input(None, X, 50),
    ]
    for t in forms:
        np.testing.assert_array_equal(t.mask("race", ("a",)), race == "a")
    assert GroupTable.from_input(race, None, 50).values("group") == ["a", "b"]
    assert GroupTable.from_input(np.array([1, 2, 1]), None, 3).values("group") == ["1", "2"]


@pytest.mark.parametrize("spec, message", [
    ("tpr[race=z] >= 0.5", "Unknown value 'z' for group column 'race'; known values: 'a', 'b', 'c'"),
    ("tpr[color=red] >= 0.5", "Unknown group column 'color'; known group columns: 'race', 'sex'"),
    ("churn <= 0.1", "pass baseline="),
])
def test_compile_errors_name_the_input(data, spec, message):
    rd, _, _ = data
    rd = RateData(rd.y, rd.sample_weight, rd.groups, None)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("[", r"\[")):
        compile_problem(parse_expression("error"), [parse_constraint(spec)], rd)


def test_empty_slices_are_reported():
    y = np.array([0, 0, 1, 1])
    groups = GroupTable.from_input({"g": np.array(["a", "a", "b", "b"])}, None, 4)
    rd = RateData(y, np.ones(4), groups)
    with pytest.raises(ValueError, match=r"tpr\[g=a\] is undefined: its slice \(g=a\) matched 2 rows, none with label 1"):
        compile_problem(parse_expression("error"), [parse_constraint("tpr[g=a] >= 0.5")], rd)
    rd0 = RateData(y, np.array([0.0, 0.0, 1.0, 1.0]), groups)
    with pytest.raises(ValueError, match="matched no rows"):
        compile_problem(parse_expression("error"), [parse_constraint("ppr[g=a] >= 0.5")], rd0)


def test_group_column_validation():
    with pytest.raises(ValueError, match="has 3 entries but X has 4 rows"):
        GroupTable.from_input({"g": ["a", "b", "c"]}, None, 4).column("g")
    with pytest.raises(ValueError, match="has a missing value in 1 rows"):
        GroupTable.from_input({"g": [1.0, np.nan]}, None, 2).column("g")
    with pytest.raises(ValueError, match="2-D array has no column names"):
        GroupTable.from_input(np.zeros((3, 2)), None, 3)


def test_group_codes_name_each_distinct_value_as_its_rows_are_named():
    """A column of one dtype is coded before its values are named: the names and codes must be
    those of naming every row (``_column``) and coding the names, dtype by dtype."""
    rng = np.random.default_rng(3)
    idx = rng.integers(0, 5, 200)
    columns = {"int": np.array([7, -2, 10, 2, 0])[idx], "whole": np.array([7.0, -2.0, 10.0, 2.0, 0.0])[idx],
               "float": np.array([0.5, -2.0, 10.0, 2.25, 0.0])[idx], "bool": np.array([True, False] * 3)[idx],
               "text": np.array(["b", "a", "10", "2", "01"])[idx], "uint": np.array([3, 1, 4, 1, 5], np.uint8)[idx],
               "dates": np.array(["2024-01-01", "2023-05-01", "2024-01-02", "2023-05-01", "2025-01-01"],
                                 dtype="datetime64[D]")[idx]}
    table = GroupTable.from_input(columns, None, 200)
    for key, col in columns.items():
        rows = _column(col, key, 200)
        known, codes = table.codes(key)
        np.testing.assert_array_equal(np.asarray(known)[codes], rows, err_msg=key)
        assert len(known) == len(set(rows)), key
        np.testing.assert_array_equal(table.column(key), rows, err_msg=key)
    # numbers sort by number, whatever their names' text order
    assert table.values("int") == ["-2", "0", "2", "7", "10"]
    assert table.values("float") == ["-2.0", "0.0", "0.5", "2.25", "10.0"]


def test_a_negative_zero_group_is_the_group_zero():
    """-0.0 == 0.0: one group, named 0.0 whichever sorts first, also among fractional values."""
    table = GroupTable.from_input({"g": np.array([-0.0, 0.5, 0.0, -0.0])}, None, 4)
    assert table.values("g") == ["0.0", "0.5"]
    np.testing.assert_array_equal(table.mask("g", ("0",)), [True, False, True, True])


def test_group_columns_refuse_every_kind_of_missing_value():
    pd = pytest.importorskip("pandas")
    g = np.array(["a", "b"] * 5, dtype=object)
    with_nan = g.copy()
    with_nan[3] = np.nan
    dates = pd.Series(pd.to_datetime(["2024-01-01", "2024-02-01"] * 5))
    dates[3] = pd.NaT
    for column in (with_nan, pd.Categorical(with_nan), pd.array(with_nan, dtype="string"), [None] + list(g[1:]),
                   dates.to_numpy()):
        table = GroupTable.from_input(pd.DataFrame({"grp": column}), None, 10)
        with pytest.raises(ValueError, match=r"Group column 'grp' has a missing value in 1 rows"):
            table.column("grp")


def test_float_coded_groups_are_named_as_integers():
    table = GroupTable.from_input({"bin": np.array([0.0, 1.0, 2.0, 1.0])}, None, 4)
    assert table.values("bin") == ["0", "1", "2"]
    np.testing.assert_array_equal(table.mask("bin", ("1",)), [False, True, False, True])
    np.testing.assert_array_equal(table.mask("bin", ("1.0",)), [False, True, False, True])  # as written in X
    fractional = GroupTable.from_input({"w": np.array([0.5, 1.0])}, None, 2)
    assert fractional.values("w") == ["0.5", "1.0"]
    # whole codes beyond int64 stay distinct (the cast merged them into one group)
    huge = GroupTable.from_input({"id": np.array([1e19, 2e19, 1e19])}, None, 3)
    assert len(huge.values("id")) == 2
    np.testing.assert_array_equal(huge.mask("id", ("1e19",)), [True, False, True])


def test_expansion_over_two_columns_skips_cells_without_rows():
    groups = GroupTable.from_input({"grp": np.array(["a", "a", "b", "b"]), "sex": np.array(["M", "M", "F", "M"])},
                                   None, 4)
    assert groups.combinations(("grp", "sex")) == [("a", "M"), ("b", "F"), ("b", "M")]
    expanded = expand_constraints(as_constraints("ppr[grp, sex] >= ppr - 0.1"), groups)
    assert [str(c) for c in expanded] == ["ppr[grp=a, sex=M] >= ppr - 0.1", "ppr[grp=b, sex=F] >= ppr - 0.1",
                                          "ppr[grp=b, sex=M] >= ppr - 0.1"]


def test_expansion_over_columns_of_many_values_takes_the_combinations_that_occur():
    # six id-like columns: the product of their value counts (2000**6) overflowed numpy's index
    rng = np.random.default_rng(0)
    n = 2000
    ids = {f"c{i}": rng.permutation(n) for i in range(6)}
    expanded = expand_constraints(as_constraints("ppr[c0, c1, c2, c3, c4, c5] >= 0"), GroupTable.from_input(ids, None, n))
    combos = [tuple(c.lhs.rates[0].slice.get(f"c{i}")[0] for i in range(6)) for c in expanded]
    assert combos == sorted(combos, key=lambda c: tuple(map(int, c))) and len(combos) == n  # numbers, by number
    assert set(combos) == {tuple(str(ids[f"c{i}"][r]) for i in range(6)) for r in range(n)}


def test_a_dict_of_group_arrays_longer_than_X_points_at_cross_validation():
    with pytest.raises(ValueError, match="has 12 entries but X has 8 rows.*not split by cross-validation"):
        GroupTable.from_input({"grp": np.array(["a", "b"] * 6)}, None, 8)


@pytest.mark.parametrize("length", [100, 400])
def test_group_columns_of_another_length_are_refused_though_no_goal_reads_them(length):
    # routed groups reach every fit; a short column used to crash in an IndexError, a long one passed
    from skrate import ConstrainedClassifier, MetricOptimizer
    from skrate.metrics import make_rate_scorer

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = (X[:, 0] > 0).astype(int)
    g = np.array(["a", "b"] * (length // 2))
    message = f"Group column 'group' has {length} entries but X has 300 rows"
    with pytest.raises(ValueError, match=message):
        ConstrainedClassifier("tpr >= 0.5", max_iter=5).fit(X, y, groups=g)
    with pytest.raises(ValueError, match=message):
        MetricOptimizer("f1", max_iter=5).fit(X, y, groups=g)
    clf = ConstrainedClassifier("tpr >= 0.5", max_iter=5).fit(X, y)
    with pytest.raises(ValueError, match=message):
        clf.constraint_report(X, y, groups=g)
    with pytest.raises(ValueError, match=message):
        make_rate_scorer("tpr")(clf, X, y, groups=g)
    # a group column standing before X's column of its name is held to the same rule
    frame = pd.DataFrame({"a": X[:, 0], "race": X[:, 1]})
    with pytest.raises(ValueError, match=f"Group column 'race' has {length} entries but X has 300 rows"):
        GroupTable.from_input({"race": g}, frame, 300)


def test_groups_in_another_row_order_than_X_are_refused():
    X = pd.DataFrame({"x": np.arange(6.0)}, index=[5, 3, 1, 0, 2, 4])  # e.g. a shuffled test split
    groups = pd.DataFrame({"g": list("aabbab")}, index=range(6))  # the same labels, sorted
    with pytest.raises(ValueError, match=r"another order, .* groups\.loc\[X\.index\]"):
        GroupTable.from_input(groups, X, 6)
    aligned = GroupTable.from_input(groups.loc[X.index], X, 6)
    np.testing.assert_array_equal(aligned.column("g"), groups.loc[X.index, "g"].to_numpy())
    # a Series in a dict of columns, or on its own, is held to the same rule
    with pytest.raises(ValueError, match=r"index of groups\['g'\] .* groups\['g'\]\.set_axis\(X\.index\)"):
        GroupTable.from_input({"g": groups["g"]}, X, 6)
    with pytest.raises(ValueError, match=r"another order"):
        GroupTable.from_input(groups["g"], X, 6)
    in_order = GroupTable.from_input({"g": groups["g"].set_axis(X.index)}, X, 6)
    np.testing.assert_array_equal(in_order.column("g"), list("aabbab"))
    # other labels, or a plain array, mean rows by position, as in scikit-learn
    positional = pd.Series(list("aabbab"), name="g", index=range(10, 16))
    np.testing.assert_array_equal(GroupTable.from_input(positional, X, 6).column("g"), list("aabbab"))
    np.testing.assert_array_equal(GroupTable.from_input(np.array(list("aabbab")), X, 6).column("group"),
                                  list("aabbab"))


def test_a_pipeline_frame_made_from_an_array_matches_rows_by_position():
    # set_output(transform="pandas") turns an array into a frame indexed 0..n-1: labels and groups
    # of a shuffled frame, passed in the array's row order, were refused as "another order"
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from skrate import ConstrainedClassifier

    rng = np.random.default_rng(1)
    df = pd.DataFrame({"x": rng.normal(size=300), "g": rng.choice(["a", "b"], 300)})
    df["y"] = (df["x"] + rng.normal(size=300) > 0).astype(int)
    df = df.sample(frac=1.0, random_state=0)  # index: a permutation of 0..299
    X = df[["x"]].to_numpy()
    clf = ConstrainedClassifier("tpr[g] >= tpr - 0.05", max_iter=30, random_state=0)
    plain = make_pipeline(StandardScaler(), clf).fit(X, df["y"], constrainedclassifier__groups=df[["g"]])
    framed = make_pipeline(StandardScaler(), clf).set_output(transform="pandas")
    framed.fit(X, df["y"], constrainedclassifier__groups=df[["g"]])
    np.testing.assert_array_equal(framed.predict_proba(X), plain.predict_proba(X))
    # a frame with row labels of its own is still held to them
    with pytest.raises(ValueError, match="another order"):
        GroupTable.from_input(df[["g"]].sort_index(), df[["x"]], 300)


def test_labels_weights_and_baselines_in_another_row_order_than_X_are_refused():
    # the same pitfall as groups', where it is likelier still: y[y.index.isin(X_test.index)]
    from sklearn.linear_model import LogisticRegression

    from skrate import ConstrainedClassifier, MetricOptimizer
    from skrate.metrics import audit, make_rate_scorer
    from skrate.model_selection import tradeoff_curve

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.normal(size=60), "g": np.tile([0, 1], 30)})
    X = X.sample(frac=1.0, random_state=0)  # a shuffled split: index out of order
    y = pd.Series((X["x"] + rng.normal(size=60) > 0).astype(int).to_numpy(), index=X.index)
    w, base = y * 0 + 1.0, y.copy()
    swapped = {"y": y.sort_index(), "sample_weight": w.sort_index(), "baseline": base.sort_index()}
    lr = LogisticRegression().fit(X[["x"]], y)
    cc = ConstrainedClassifier("tpr[g=1] >= tpr - 0.1", max_iter=20, random_state=0)
    calls = {
        "fit": lambda y, **kw: cc.fit(X, y, **kw),
        "MetricOptimizer.fit": lambda y, **kw: MetricOptimizer("f1", max_iter=20, random_state=0).fit(X, y, **kw),
        "audit": lambda y, **kw: audit(lr, X[["x"]], y, groups=X["g"].to_numpy(), n_bootstrap=0, **kw),
        "scorer": lambda y, **kw: make_rate_scorer("tpr")(lr, X[["x"]], y, **kw),
        "tradeoff_curve": lambda y, **kw: tradeoff_curve(ConstrainedClassifier("tpr[g=1] >= tpr - {slack}", max_iter=5),
                                                          X, y, slacks=[0.1], **kw),
    }
    for name, call in calls.items():
        call(y)  # aligned: fine
        for key, value in swapped.items():
            if key == "baseline" and name in ("MetricOptimizer.fit", "tradeoff_curve"):
                continue  # no churn goal here to take a baseline
            which = "y_true" if (key == "y" and name == "scorer") else key
            args = {k: v for k, v in {"sample_weight": w, **{key: value}}.items() if k != "y"}
            with pytest.raises(ValueError, match=rf"index of {which} holds the labels of X's index in another "
                                                 rf"order.*{which}\.loc\[X\.index\]"):
                call(value if key == "y" else y, **args)
    cc.fit(X, y)
    with pytest.raises(ValueError, match=r"index of y holds"):
        cc.constraint_report(X, y.sort_index())
    # a plain array, or other labels, are rows by position, as in scikit-learn
    cc.fit(X, y.to_numpy())
    cc.fit(X, y.set_axis(range(100, 160)))
    # labels of mixed types, which do not sort: the guard used to crash fit on them
    mixed = pd.Index([f"id{i}" if i % 2 else i for i in range(60)], dtype=object)
    cc.fit(X.set_axis(mixed), y.to_numpy())
    cc.fit(X.set_axis(mixed), y.set_axis(range(60)))
    with pytest.raises(ValueError, match="index of y holds"):
        cc.fit(X.set_axis(mixed), y.set_axis(mixed[::-1]))


def test_a_label_filter_warns_when_x_has_a_column_of_that_name():
    """``[label=1]`` selects by y; a column of X named ``label`` is not read by it, and a user
    who meant that column is told how to reach it."""
    import warnings

    X = pd.DataFrame({"label": [0, 1, 1, 0]})
    y = np.array([1, 1, 0, 0])
    with pytest.warns(UserWarning, match=r"\[label=1\] selects rows by the true label y; X's column 'label' is not read"):
        A, _ = compile_expressions([parse_expression("ppr[label=1]")], RateData(y, np.ones(4), GroupTable.from_input(None, X, 4)))
    np.testing.assert_allclose(A.toarray().ravel(), [0.5, 0.5, 0.0, 0.0])  # y's rows, not X's column
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compile_expressions([parse_expression("ppr[label=1]")], RateData(y, np.ones(4), GroupTable.from_input(None, None, 4)))


def test_a_group_column_named_label_is_refused_but_a_feature_of_that_name_is_not():
    # a filter on it would select by the true label instead
    with pytest.raises(ValueError, match="'label' is reserved.*Rename the group column"):
        GroupTable.from_input({"label": np.array(list("abab"))}, None, 4)
    X = pd.DataFrame({"label": np.arange(4.0)})  # X's columns are only read when named in a spec
    table = GroupTable.from_input({"g": np.array(list("abab"))}, X, 4)
    assert table.values("g") == ["a", "b"]


def test_groups_are_matched_as_numbers():
    table = GroupTable.from_input({"bin": np.array([1.5, 2.0, 2.0]), "mixed": np.array([1, 1.0, 2], dtype=object)},
                                  None, 3)
    np.testing.assert_array_equal(table.mask("bin", ("2",)), [False, True, True])  # written as an integer
    assert table.values("mixed") == ["1", "2"]  # 1 and 1.0 are one group
    with pytest.raises(ValueError, match="Unknown value '3'"):
        table.mask("bin", ("3",))


def test_number_valued_groups_sort_as_numbers():
    # an audit of months listed 1, 10, 11, 12, 2, ...: the text order of their names
    month = np.tile(np.arange(1, 13), 2)
    table = GroupTable.from_input({"month": month, "score": month / 4.0, "mixed": month.astype(object),
                                   "text": month.astype(str)}, None, 24)
    assert table.values("month") == [str(m) for m in range(1, 13)]
    assert table.values("score") == [str(m / 4.0) for m in range(1, 13)]
    assert table.values("mixed") == table.values("month")
    assert table.values("text")[:3] == ["1", "10", "11"]  # text stays text
    values, codes = table.codes("month")
    np.testing.assert_array_equal(np.asarray(values)[codes], month.astype(str))  # codes follow the order
    np.testing.assert_array_equal(table.mask("month", ("10",)), month == 10)


def test_categorical_groups_follow_their_categories():
    # age bands of a categorical came out in text order: 25-45, <25, >45
    bands = ["<25", "25-45", ">45"]
    age = pd.Categorical(["25-45", ">45", "<25", "25-45"] * 5, categories=bands, ordered=True)
    for given in (pd.DataFrame({"age": age}), {"age": pd.Series(age)}, pd.Series(age, name="age"), {"age": age}):
        table = GroupTable.from_input(given, None, 20)
        assert table.values("age") == bands
        assert table.take(np.arange(8)).values("age") == bands
    assert GroupTable.from_input(age, None, 20).values("group") == bands  # a bare Categorical
    from_x = GroupTable.from_input(None, pd.DataFrame({"age": age, "x": np.arange(20.0)}), 20)
    assert from_x.values("age") == bands
    values, codes = from_x.codes("age")
    np.testing.assert_array_equal(np.asarray(values)[codes], np.asarray(age))
    # an audit lists them so
    from sklearn.dummy import DummyClassifier

    from skrate.metrics import audit

    y = np.arange(20) % 2
    report = audit(DummyClassifier().fit(np.zeros((20, 1)), y), np.zeros((20, 1)), y,
                   groups=pd.DataFrame({"age": age}), metrics=("ppr",), n_bootstrap=0)
    assert list(pd.DataFrame(report).query("attribute == 'age'")["group"]) == bands


def test_an_undefined_rate_names_its_constraint_and_how_to_leave_one_value_out():
    y = np.array([0, 1, 0, 1, 1, 1])
    groups = GroupTable.from_input({"g": np.array(list("aabbcc"))}, None, 6)  # c has no negatives
    rd = RateData(y, np.ones(6), groups)
    with pytest.raises(ValueError, match=r"fpr\[g=c\] is undefined.*It is in 'fpr\[g=c\] >= fpr - 0.05', which "
                                         r"'fpr\[g\] >= fpr - 0.05' states for every value of g") as info:
        compile_problem(parse_expression("error"), equal_odds("g"), rd)
    assert info.value.rate == parse_expression("fpr[g=c]").rates[0]
    with pytest.raises(ValueError, match=r"It is in the constraint 'fpr\[g=c\] <= 0.5'"):
        compile_problem(parse_expression("error"), [parse_constraint("fpr[g=c] <= 0.5")], rd)


def test_an_undefined_rate_of_a_bare_column_names_the_other_undefined_values():
    # c and d have no negatives: one error names both, so one fit shows every group to merge
    y = np.array([0, 1, 0, 1, 1, 1, 1, 1])
    groups = GroupTable.from_input({"g": np.array(list("aabbccdd"))}, None, 8)
    rd = RateData(y, np.ones(8), groups)
    with pytest.raises(ValueError, match=r"fpr\[g=c\] is undefined.*The constraint leaves 1 more rate undefined "
                                         r"on these rows: \['fpr\[g=d\]'\]\.$"):
        compile_problem(parse_expression("error"), [parse_constraint("fpr[g] >= fpr - 0.05")], rd)
    # one undefined value: nothing more to name
    rd = RateData(y[:6], np.ones(6), GroupTable.from_input({"g": np.array(list("aabbcc"))}, None, 6))
    with pytest.raises(ValueError) as info:
        compile_problem(parse_expression("error"), [parse_constraint("fpr[g] >= fpr - 0.05")], rd)
    assert "more rate" not in str(info.value)


def test_a_column_named_by_one_of_its_values_points_at_the_filter():
    table = GroupTable.from_input(np.array(["Black", "White"]), None, 2)
    with pytest.raises(ValueError, match=r"'Black' is a value of the column 'group'.*where=\{'group': 'Black'\}.*"
                                         r"slice \[group=Black\] after the rate's name"):
        table.column("Black")


def test_the_hint_for_a_value_given_as_a_column_parses_and_names_no_rate():
    # 'tpr[marital-status=Married]' did not parse, and named tpr whatever the rate
    table = GroupTable.from_input({"marital-status": np.array(["Married", "Single"])}, None, 2)
    with pytest.raises(ValueError) as info:
        table.column("Married")
    message = str(info.value)
    assert "tpr" not in message
    spec = message.split("slice ")[1].split(" after")[0]
    assert spec == '["marital-status"=Married]'
    assert parse_expression("ppr" + spec) == parse_expression('ppr["marital-status"=Married]')


def test_a_positional_groups_frame_is_told_how_to_take_X_index():
    X = pd.DataFrame({"x": np.arange(4.0)}, index=[2, 0, 3, 1])
    groups = pd.DataFrame({"g": list("abab")})
    with pytest.raises(ValueError, match=r"groups\.set_axis\(X\.index\)"):
        GroupTable.from_input(groups, X, 4)
    np.testing.assert_array_equal(GroupTable.from_input(groups.set_axis(X.index), X, 4).column("g"), list("abab"))


def test_a_constraint_met_with_equality_reports_zero_violation():
    assert constraint_violation(parse_constraint("ppr <= 0.3"), 0.3 + 5e-15, 0.3) == 0.0
    assert constraint_violation(parse_constraint("ppr <= 0.3"), 0.3 + 1e-9, 0.3) > 0
    np.testing.assert_array_equal(constraint_violation(parse_constraint("ppr >= 0.3"), np.array([0.3, np.nan]),
                                                       np.array([0.3 + 1e-14, 0.3])), [0.0, np.nan])


def test_an_unknown_column_with_X_as_an_array_says_how_to_keep_names():
    hint = r"X reached the estimator as an array.*set_output\(transform='pandas'\)"
    with pytest.raises(ValueError, match=hint):
        GroupTable.from_input(None, np.zeros((3, 2)), 3).column("black")
    with pytest.raises(ValueError) as info:
        GroupTable.from_input(None, pd.DataFrame({"x": [1, 2, 3]}), 3).column("black")
    assert "as an array" not in str(info.value)
    assert "as an array" in str(pytest.raises(ValueError, GroupTable.from_input(None, np.zeros((3, 2)), 3)
                                              .take(np.arange(2)).column, "black").value)


def test_taking_rows_keeps_the_coded_columns_consistent():
    table = GroupTable.from_input({"g": np.array(list("abcab")), "h": np.array([1, 2, 1, 2, 1])}, None, 5)
    table.combinations(("g", "h"))  # codes both columns
    idx = np.array([4, 0, 3])
    taken, fresh = table.take(idx), GroupTable.from_input({"g": np.array(list("abcab"))[idx],
                                                           "h": np.array([1, 2, 1, 2, 1])[idx]}, None, 3)
    for key in ("g", "h"):
        assert taken.values(key) == fresh.values(key)
        np.testing.assert_array_equal(taken.mask(key, (taken.values(key)[0],)), fresh.mask(key, (fresh.values(key)[0],)))
    assert taken.values("g") == ["a", "b"]  # c is not among the rows
    assert taken.combinations(("g", "h")) == fresh.combinations(("g", "h"))


def test_taking_rows_that_drop_the_first_value_renumbers_the_rest():
    # a value the kept rows do not hold leaves the codes of the others pointing at their own rows
    g = np.array(list("abcacbc"))
    table = GroupTable.from_input(g, None, len(g))
    table.codes("group")
    idx = np.array([2, 4, 5, 6])  # no "a"
    taken = table.take(idx)
    assert taken.values("group") == ["b", "c"]
    for value in ("b", "c"):
        np.testing.assert_array_equal(taken.mask("group", (value,)), g[idx] == value)
    assert taken.combinations(("group",)) == [("b",), ("c",)]


def test_a_number_naming_several_text_groups_is_refused():
    # "01" equals both "1" and "1.0" as a number: neither is picked silently
    table = GroupTable.from_input({"k": np.array(["1", "1.0", "2", "1", "2"], dtype=object)}, None, 5)
    with pytest.raises(ValueError, match="matches several groups as a number: '1', '1.0'"):
        table.mask("k", ("01",))
    np.testing.assert_array_equal(table.mask("k", ("1.0",)), [False, True, False, False, False])
    np.testing.assert_array_equal(table.mask("k", ("02",)), [False, False, True, False, True])


def test_a_list_X_has_no_index_to_match_groups_by():
    # a list's .index is a method, not row labels: rows are matched by position
    X = [[0.0], [1.0], [2.0], [3.0]]
    for groups in (pd.DataFrame({"g": list("abab")}, index=[3, 2, 1, 0]), pd.Series(list("abab"), name="g")):
        np.testing.assert_array_equal(GroupTable.from_input(groups, X, 4).column("g"), list("abab"))


def test_group_lengths_are_checked_before_the_rows_are_split():
    for groups in (pd.DataFrame({"g": list("ab" * 6)}), {"g": np.array(list("ab" * 6))}):
        with pytest.raises(ValueError, match="Group column 'g' has 12 entries but X has 8 rows"):
            GroupTable.from_input(groups, None, 8).check_rows()
    with pytest.raises(ValueError, match="Group column 'g' has 3 entries but X has 8 rows"):
        GroupTable.from_input({"g": ["a", "b", "a"]}, None, 8).check_rows()
    with pytest.raises(ValueError, match="must be 1-D"):
        GroupTable.from_input({"g": np.zeros((8, 2))}, None, 8).check_rows()
    table = GroupTable.from_input({"g": ["a", None]}, pd.DataFrame({"x": [1, 2]}), 2)
    table.check_rows()  # only the lengths: a missing value fails where the column is used
    with pytest.raises(ValueError, match="missing value"):
        table.column("g")


def test_a_coded_table_knows_the_values_no_row_holds():
    table = GroupTable.coded({"g": (["a", "b", "c"], np.array([0, 2]))}, 2)
    assert table.values("g") == ["a", "b", "c"]
    np.testing.assert_array_equal(table.mask("g", ("b",)), [False, False])
    np.testing.assert_array_equal(table.mask("g", ("a", "b")), [True, False])
    with pytest.raises(ValueError, match="Unknown value 'd'"):
        table.mask("g", ("d",))


def test_integer_ids_beyond_float_precision_stay_distinct():
    import io

    # pandas reads 21-digit ids as Python ints in an object column; as floats they were one group '1e+20'
    ids = pd.read_csv(io.StringIO("branch\n100000000000000000001\n100000000000000000002\n100000000000000000001\n"))
    table = GroupTable.from_input(ids, None, 3)
    assert table.values("branch") == ["100000000000000000001", "100000000000000000002"]
    np.testing.assert_array_equal(table.mask("branch", ("100000000000000000001",)), [True, False, True])
    mixed = GroupTable.from_input({"id": np.array([2**62 + 1, 2**62, 1, 1.0, 10**20, 1e20], dtype=object)}, None, 6)
    assert mixed.column("id").tolist() == ["4611686018427387905", "4611686018427387904", "1", "1",
                                           "100000000000000000000", "100000000000000000000"]
    floats = GroupTable.from_input({"w": np.array([0.5, 1.0, 1e19], dtype=object)}, None, 3)
    assert floats.values("w") == ["0.5", "1.0", "1e+19"]  # without integers, named as a float column


def test_object_columns_of_text_and_numbers_group_as_pandas_does():
    # 1 and 1.0 are one group, 1 and "1" are two for pandas: skrate did the opposite, silently
    mixed = GroupTable.from_input({"g": np.array([1, 1.0, "x", 2.5, "y"], dtype=object)}, None, 5)
    assert mixed.column("g").tolist() == ["1", "1", "x", "2.5", "y"]
    # booleans as written, whatever comes first (pandas takes True for 1, named by the first seen)
    for values in ([True, 1, "a", False, 0], [1, True, "a", 0, False]):
        column = GroupTable.from_input({"g": np.array(values, dtype=object)}, None, 5).column("g")
        assert column.tolist() == [str(v) for v in values]
    with pytest.raises(ValueError, match="holds True and 'True'"):
        GroupTable.from_input({"g": np.array([True, "True"], dtype=object)}, None, 2).column("g")
    with pytest.raises(ValueError, match=r"Group column 'g' holds 1 and '1', two values a spec names alike \(1\)"):
        GroupTable.from_input({"g": np.array([1, "1", 1.0, "x"], dtype=object)}, None, 4).column("g")
    text = GroupTable.from_input({"g": np.array(["01", "1", "a"], dtype=object)}, None, 3)
    assert text.values("g") == ["01", "1", "a"]  # text as written


def test_a_series_named_0_is_the_column_0():
    frame = pd.DataFrame(np.array([["A"], ["B"], ["A"]]))  # no column names: its column is 0
    for groups in (frame, frame[0]):
        table = GroupTable.from_input(groups, None, 3)
        assert sorted(table.raw) == ["0"]
        assert table.values("0") == ["A", "B"]


def test_a_value_equal_to_several_groups_as_a_number_is_refused():
    table = GroupTable.from_input({"code": np.array(["01", "1", "1.0", "2", "2", "2"])}, None, 6)
    np.testing.assert_array_equal(table.mask("code", ("1",)), [False, True, False, False, False, False])  # exact
    np.testing.assert_array_equal(table.mask("code", ("2.0",)), [False, False, False, True, True, True])  # one group
    for value in ("001", "1.00"):  # matched all three groups without a word
        with pytest.raises(ValueError, match=r"'code' matches several groups as a number: '01', '1', '1.0'; "
                                             r"name the one meant exactly"):
            table.mask("code", (value,))


def test_reports_of_many_parity_constraints_hold_no_constraints_by_rows_matrix():
    # every parity constraint's right side is the overall rate, a row of n entries: compiled as
    # one matrix mix @ basis, 200 constraints on 50k rows took ~240 MB in each fit's report
    import tracemalloc

    from skrate.problem import report_rows, violation_rows

    rng = np.random.default_rng(0)
    n = 50_000
    zip_ = rng.integers(0, 100, n)
    data = RateData((rng.random(n) < 0.4).astype(int), np.ones(n), GroupTable.from_input({"zip": zip_}, None, n))
    cons = as_constraints(["ppr[zip] >= ppr - 0.05", "ppr[zip] <= ppr + 0.05"])
    p = rng.random(n)
    tracemalloc.start()
    try:
        rows = violation_rows(cons, data, p)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(rows) == 200 and peak < 40e6, peak
    overall = p.mean()
    np.testing.assert_allclose([r["rhs"] for r in rows[:100]], overall - 0.05)
    first = rows[0]["constraint"].split("[")[1].split("]")[0].split("=")[1]
    assert rows[0]["lhs"] == pytest.approx(p[zip_ == int(first)].mean())
    # and the report of new rows compiles them all at once, not once per constraint
    import skrate.problem._evaluate as evaluate

    calls = []
    original = evaluate.compile_factored
    evaluate.compile_factored = lambda *a: calls.append(1) or original(*a)
    try:
        reported, undefined = report_rows(cons, data, p)
    finally:
        evaluate.compile_factored = original
    assert len(calls) == 1 and not undefined and [r["violation"] for r in reported] == [r["violation"] for r in rows]


def test_columns_of_a_frame_x_are_read_only_when_a_goal_names_them():
    # every column of X was copied into the group table: a sparse frame of 20000 x 2000 (0.5 MB)
    # became 320 MB of arrays at every fit, report, audit and scorer call
    import tracemalloc

    import scipy.sparse as sp

    from skrate import ConstrainedClassifier

    M = sp.random(20000, 2000, density=0.001, format="csr", random_state=0)
    X = pd.DataFrame.sparse.from_spmatrix(M, columns=[f"f{j}" for j in range(2000)])
    tracemalloc.start()
    try:
        table = GroupTable.from_input(None, X, 20000)
        rows = table.take(np.arange(0, 20000, 2))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5e6
    assert "f7" in table.raw and len(table.raw) == 2000 and table.given == []
    np.testing.assert_array_equal(rows.raw["f7"], M[::2, 7].toarray().ravel())
    # a frame column named by a goal is read, through row selections (held-out rows) too
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(size=400), "g": rng.choice([0, 1], 400)})
    y = (frame["x"] + rng.normal(size=400) > 0).astype(int)
    clf = ConstrainedClassifier("ppr[g=1] >= ppr - 0.02", validation_fraction=0.3, max_iter=50, random_state=0)
    clf.fit(frame, y)
    report = clf.constraint_report(frame, y)
    p = clf.predict_proba(frame)[:, 1]
    np.testing.assert_allclose(report["lhs"].iloc[0], p[frame["g"] == 1].mean())


@pytest.mark.parametrize("specs", [
    ["tpr[race] >= tpr - 0.02", "ppr[sex=M] <= 0.2", "ppr[sex=M] >= 0.6"],  # contradictory bounds
    ["error <= 0.1", "fpr[race=b] <= 0.05", "tpr[race=a] >= 0.99"],
    ["ppr[race] <= ppr + 0.01", "ppr[race] >= ppr - 0.01", "churn <= 0.3"],  # feasible
])
def test_least_violation_merges_alike_rows_into_the_per_row_optimum(specs):
    # the LP had one variable per training row: at a million rows HiGHS ran out of memory inside
    # a warning's diagnosis. Rows alike in every slice share a variable, with the same optimum
    import scipy.sparse as sp
    from scipy.optimize import linprog

    from skrate.problem import CellMatrix, least_violation

    rng = np.random.default_rng(1)
    n = 2000
    groups = {"race": rng.choice(["a", "b", "c"], n), "sex": rng.choice(["F", "M"], n)}
    data = RateData(rng.integers(0, 2, n), rng.uniform(0.5, 2.0, n), GroupTable.from_input(groups, None, n),
                    rng.integers(0, 2, n))
    problem = compile_problem(parse_expression("error"), [c for s in specs for c in as_constraints(s)], data)
    cells = CellMatrix.from_factors(problem.mix, problem.basis)
    assert cells.K.shape[1] <= 3 * 2 * 2 * 2  # race x sex x label x baseline decision
    A, b = sp.csr_matrix(problem.A[1:]), problem.b[1:]
    m, n = A.shape
    per_row = linprog(np.r_[np.zeros(n), 1.0], A_ub=sp.hstack([A, -np.ones((m, 1))]), b_ub=-b,
                      bounds=[(0.0, 1.0)] * n + [(None, None)], method="highs")
    value, worst = least_violation(problem)
    assert value == pytest.approx(per_row.fun, abs=1e-9)
    assert (A @ per_row.x[:n] + b)[worst] == pytest.approx(per_row.fun, abs=1e-9)


def test_cell_matrix_is_the_product_of_the_rate_factors():
    import scipy.sparse as sp

    from skrate.problem import CellMatrix, compile_factored

    rng = np.random.default_rng(3)
    n = 3000
    groups = {"race": rng.choice(["a", "b", "c"], n), "sex": rng.choice(["F", "M"], n)}
    w = rng.uniform(0.5, 2.0, n)
    w[:10] = 0.0  # rows of weight 0 move no rate
    data = RateData(rng.integers(0, 2, n), w, GroupTable.from_input(groups, None, n), rng.integers(0, 2, n))
    specs = ["ppr[race] <= ppr + 0.05", "tpr[sex=F] >= 0.9 * tpr", "error <= 0.3", "churn <= 0.2",
             "accuracy[race=a] >= accuracy - 0.1"]
    exprs = [c.expression for c in expand_constraints([c for s in specs for c in as_constraints(s)], data.groups)]
    mix, basis, _ = compile_factored(exprs, data)
    A, cells = sp.csr_matrix(mix @ basis).toarray(), CellMatrix.from_factors(mix, basis)
    assert cells.P.nnz == n - 10 and cells.K.shape[1] <= 3 * 2 * 2 * 2  # race x sex x label x baseline
    np.testing.assert_allclose(cells.toarray(), A, rtol=1e-12, atol=1e-18)
    np.testing.assert_allclose(cells.maximum(0).toarray(), np.maximum(A, 0), rtol=1e-12, atol=1e-18)
    np.testing.assert_allclose(cells.minimum(0).toarray(), np.minimum(A, 0), rtol=1e-12, atol=1e-18)
    np.testing.assert_allclose(abs(cells).sum(axis=1), np.abs(A).sum(axis=1), rtol=1e-12)
    x, v = rng.random((n, 3)), rng.normal(size=A.shape[0])
    np.testing.assert_allclose(cells @ x, A @ x, rtol=1e-12)
    np.testing.assert_allclose(cells.T @ v, A.T @ v, rtol=1e-12, atol=1e-18)
    idx = rng.permutation(n)[:500]
    np.testing.assert_allclose((cells[:, idx] * 2.0).toarray(), 2.0 * A[:, idx], rtol=1e-12, atol=1e-18)
    np.testing.assert_allclose((-cells[1:3]).toarray(), -A[1:3], rtol=1e-12, atol=1e-18)


def test_factored_rates_are_the_slice_means_row_by_row():
    """The rate basis built through the cells of alike rows holds, for every rate, each row of
    its slice at its weight over the slice's total times its coefficient, and the rate's
    constant part: as measured on the rows of the slice directly."""
    from skrate.problem import compile_factored
    from skrate.problem._compile import rate_coefficients, slice_weights

    rng = np.random.default_rng(8)
    n = 2000
    groups = {"race": rng.choice(["a", "b", "c", "d"], n), "age": rng.integers(18, 80, n)}
    w = rng.uniform(0.2, 3.0, n)
    w[rng.random(n) < 0.05] = 0.0
    data = RateData(rng.integers(0, 2, n), w, GroupTable.from_input(groups, None, n), rng.integers(0, 2, n))
    specs = ["tpr[race] >= tpr - 0.05", "error[race=a|b, age=30] <= 0.4", "wins[label=1] >= losses",
             "label_rate[race=c] <= 0.6", "fnr[age=20|21|22, baseline=0] <= 0.3", "churn[race=d] <= 0.2"]
    exprs = [c.expression for c in expand_constraints([c for s in specs for c in as_constraints(s)], data.groups)]
    mix, basis, b = compile_factored(exprs, data)
    rates = list(dict.fromkeys(r for e in exprs for r in e.rates))
    assert basis.shape == (len(rates), n) and basis.has_sorted_indices
    consts = np.zeros(len(rates))
    for k, rate in enumerate(rates):
        idx, wi = slice_weights(rate, data)
        v, c = rate_coefficients(rate, data, idx)
        row = np.zeros(n)
        row[idx] = wi * v
        np.testing.assert_allclose(basis[k].toarray().ravel(), row, rtol=1e-14, atol=0, err_msg=str(rate))
        assert np.all(basis[k].data != 0)  # rows of weight 0, coefficients 0 left out
        consts[k] = wi @ c
    offsets = np.array([e.constant for e in exprs])
    np.testing.assert_allclose(b, offsets + mix @ consts, rtol=1e-13, atol=1e-15)


def test_alike_rows_are_equal_rows_numbered_by_first_occurrence(monkeypatch):
    """Cells are the groups of equal rows of the rate coefficients, against grouping the rows'
    (column, value) tuples in a dict; a hash that cannot tell rows apart is refused, never a merge."""
    import scipy.sparse as sp

    from skrate.problem import _cells

    rng = np.random.default_rng(5)
    distinct = sp.random(40, 30, density=0.2, random_state=1, format="csr")
    distinct.data = np.round(distinct.data, 2)
    key = sp.csr_matrix(distinct[rng.integers(0, 40, 500)])
    key.sum_duplicates()
    first, inverse = _cells._alike_rows(key)
    seen: dict = {}
    expected = np.array([seen.setdefault((tuple(r.indices), tuple(r.data)), len(seen)) for r in key])
    np.testing.assert_array_equal(inverse, expected)
    np.testing.assert_array_equal(first, [int(np.argmax(expected == c)) for c in range(len(seen))])
    monkeypatch.setattr(_cells, "_mix", lambda h: np.zeros_like(h))  # every row hashes alike
    with pytest.raises(RuntimeError, match="tell the rows' rate coefficients apart"):
        _cells._alike_rows(key)


@pytest.mark.parametrize("dense_p", [True, False])
@pytest.mark.parametrize("zero_weight_rows", [0, 10])
def test_cell_vectors_multiply_as_the_formed_product(monkeypatch, dense_p, zero_weight_rows):
    # the games' products with A and A.T, on a dense P (small data) and by cells, over every row
    # and over a minibatch's
    import scipy.sparse as sp

    from skrate.problem import CellMatrix, CellVectors, compile_factored

    rng = np.random.default_rng(8)
    n = 2000
    groups = {"race": rng.choice(["a", "b", "c"], n), "sex": rng.choice(["F", "M"], n)}
    w = rng.uniform(0.5, 2.0, n)
    w[:zero_weight_rows] = 0.0  # rows in no cell
    data = RateData(rng.integers(0, 2, n), w, GroupTable.from_input(groups, None, n))
    specs = ["ppr[race] <= ppr + 0.05", "tpr[sex=F] >= 0.9 * tpr", "error <= 0.3"]
    exprs = [c.expression for c in expand_constraints([c for s in specs for c in as_constraints(s)], data.groups)]
    mix, basis, _ = compile_factored(exprs, data)
    A = sp.csr_matrix(mix @ basis).toarray()
    monkeypatch.setattr(CellVectors, "DENSE_P_MAX", 1 << 30 if dense_p else 0)
    vectors = CellVectors(CellMatrix.from_factors(mix, basis))
    assert (vectors.P is not None) == dense_p and vectors.every_row == (zero_weight_rows == 0)
    x, v = (rng.random(n) > 0.5).astype(float), rng.normal(size=A.shape[0])
    np.testing.assert_allclose(vectors.matvec(x), A @ x, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(vectors.rmatvec(v), A.T @ v, rtol=1e-12, atol=1e-18)
    assert np.all(vectors.rmatvec(v)[:zero_weight_rows] == 0.0)
    # a minibatch's part of them, the weightless rows among it
    idx = np.r_[rng.permutation(n)[:300], np.arange(zero_weight_rows)]
    batch = vectors.batch(idx)
    np.testing.assert_allclose(batch.matvec(x[idx]), A[:, idx] @ x[idx], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(batch.rmatvec(v), A[:, idx].T @ v, rtol=1e-12, atol=1e-18)


def test_games_over_rates_never_form_the_product_of_the_rate_factors(monkeypatch):
    # a parity constraint's row of A = mix @ basis holds n entries: MetricOptimizer's programs and
    # the Lagrangian's surrogates held one such row per group (1 GB at 300k rows and 50 groups)
    import skrate.problem as problem_module
    import skrate.problem._compile as compile_module
    from skrate import ConstrainedClassifier, MetricOptimizer

    rng = np.random.default_rng(4)
    n = 600
    X = rng.normal(size=(n, 3))
    g = rng.choice(list("abcde"), n)
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    specs = ["ppr[group] >= ppr - 0.05"]
    refs = [MetricOptimizer("g_mean", constraints=specs, solver="three_player", max_iter=60, random_state=0),
            MetricOptimizer("f1", constraints=specs, max_iter=60, random_state=0),  # sums of ratios
            MetricOptimizer("g_mean", constraints=specs, solver="frank_wolfe", batch_size=100, max_iter=60,
                            random_state=0),
            ConstrainedClassifier(specs, solver="lagrangian", max_iter=60, random_state=0),
            ConstrainedClassifier(specs, solver="lagrangian", batch_size=100, max_iter=60, random_state=0)]
    expected = [ref.fit(X, y, groups=g).predict_proba(X) for ref in refs]
    assert [r.solver_ for r in refs[:3]] == ["three_player", "ratio", "frank_wolfe"]

    def formed(*args, **kwargs):
        raise AssertionError("A = mix @ basis was formed")

    monkeypatch.setattr(compile_module.RateProblem, "A", property(formed))
    monkeypatch.setattr(compile_module, "compile_expressions", formed)
    monkeypatch.setattr(problem_module, "compile_expressions", formed)
    for module in ("skrate.generalized._program", "skrate.generalized._ratio"):  # any copy of the name
        monkeypatch.setattr(f"{module}.compile_expressions", formed, raising=False)
    for ref, p in zip(refs, expected):
        np.testing.assert_allclose(ref.fit(X, y, groups=g).predict_proba(X), p, atol=1e-12)


def test_cell_matrix_with_weights_a_subnormal_apart_and_without_rates():
    import scipy.sparse as sp

    from skrate import ConstrainedClassifier, MetricOptimizer
    from skrate.problem import CellMatrix, compile_factored

    rng = np.random.default_rng(5)
    n = 300
    g = rng.choice(["a", "b", "c"], n)
    w = np.full(n, 1e10)
    w[:5] = 1e-300  # their scales over the slices' totals are subnormal: 1 / scale overflows
    data = RateData(rng.integers(0, 2, n), w, GroupTable.from_input({"group": g}, None, n))
    exprs = [c.expression for c in expand_constraints(as_constraints("ppr[group] >= ppr - 0.05"), data.groups)]
    mix, basis, _ = compile_factored(exprs, data)
    cells = CellMatrix.from_factors(mix, basis)
    assert np.isfinite(cells.K.toarray()).all()
    np.testing.assert_allclose(cells.toarray(), sp.csr_matrix(mix @ basis).toarray(), rtol=1e-12, atol=1e-300)
    # a program without rates (a constant objective) has an empty matrix of the data's width
    empty = CellMatrix.from_factors(sp.csr_matrix((2, 0)), sp.csr_matrix((0, 7)))
    assert empty.shape == (2, 7) and not (empty @ np.ones(7)).any()
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] > 0).astype(int)
    assert MetricOptimizer("0*ppr + 0.3", max_iter=20).fit(X, y).predict_proba(X).shape == (n, 2)
    assert ConstrainedClassifier("0*ppr <= 1", objective="0*ppr", solver="lagrangian",
                                 max_iter=20).fit(X, y).predict_proba(X).shape == (n, 2)


def test_repeated_index_labels_in_another_row_order_are_refused():
    # an index with repeated labels, as pd.concat of two frames leaves, was not checked
    index = np.repeat(np.arange(50), 2) + 1000
    X = pd.DataFrame({"x": np.arange(100.0)}, index=index)
    groups = pd.DataFrame({"g": np.tile(["a", "b"], 50)}, index=index)
    GroupTable.from_input(groups, X, 100)  # in X's order
    with pytest.raises(ValueError, match=r"another order, .* groups\.loc\[X\.index\]"):
        GroupTable.from_input(groups.sample(frac=1.0, random_state=0), X, 100)


@pytest.mark.parametrize("make", [lambda r: pd.DataFrame({1: r, "1": r[::-1]}), lambda r: {1: r, "1": r[::-1]},
                                  lambda r: pd.DataFrame(np.column_stack([r, r]), columns=["race", "race"])])
def test_group_columns_whose_names_clash_are_refused(make):
    # 1 and "1" both read as the column "1": one hid the other without a word
    r = np.array(["a", "b"] * 5)
    with pytest.raises(ValueError, match=r"groups has more than one column named '(1|race)' \(labels "):
        GroupTable.from_input(make(r), None, 10)


def test_repeated_labels_held_other_times_are_not_a_reordering():
    # [0]*7 + [1] and [0] + [1]*7 share their labels, not their counts: rows by position, as before
    X = pd.DataFrame({"x": np.arange(8.0)}, index=[0] * 7 + [1])
    groups = pd.DataFrame({"g": list("aabbabab")}, index=[0] + [1] * 7)
    np.testing.assert_array_equal(GroupTable.from_input(groups, X, 8).column("g"), list("aabbabab"))


@pytest.mark.parametrize("name", ["AUCClassifier", "DROClassifier", "DRORegressor", "TrimmedClassifier",
                                  "TrimmedRegressor", "ConstrainedClassifier"])
def test_every_estimators_fit_and_score_refuse_labels_in_another_row_order(name):
    import skrate

    rng = np.random.default_rng(1)
    X = pd.DataFrame({"x": rng.normal(size=80), "z": rng.normal(size=80)}).sample(frac=1.0, random_state=0)
    y = pd.Series((X["x"] + 0.3 * rng.normal(size=80) > 0).astype(int).to_numpy(), index=X.index)
    params = {"max_iter": 20} if name == "ConstrainedClassifier" else {}
    est = getattr(skrate, name)(**params).fit(X, y)  # aligned: fine
    est.score(X, y)
    with pytest.raises(ValueError, match=r"index of y holds the labels of X's index in another order"):
        getattr(skrate, name)(**params).fit(X, y.sort_index())
    with pytest.raises(ValueError, match=r"index of y holds the labels of X's index in another order"):
        est.score(X, y.sort_index())
    if "sample_weight" in inspect.signature(est.fit).parameters:
        with pytest.raises(ValueError, match=r"index of sample_weight holds the labels"):
            getattr(skrate, name)(**params).fit(X, y, sample_weight=(y * 0 + 1.0).sort_index())


def test_least_violation_bounds_each_cell_by_its_weight():
    # ppr[g=a] <= 0.1 and ppr >= 0.9 with halves a and b: the best is ppr[g=a] = 1/3 and
    # ppr[g=b] = 1, both constraints then off by 7/30; a cell of half the rows adds at most 1/2 to ppr
    from skrate.problem import least_violation

    rng = np.random.default_rng(0)
    n = 1000
    data = RateData(rng.integers(0, 2, n), np.ones(n), GroupTable.from_input({"g": np.repeat(["a", "b"], n // 2)}, None, n))
    problem = compile_problem(parse_expression("error"), as_constraints(["ppr[g=a] <= 0.1", "ppr >= 0.9"]), data)
    value, _ = least_violation(problem)
    assert value == pytest.approx(7 / 30)


def _many_groups_problem(seed, specs, n_groups=60, n=3000):
    """A compiled problem whose rules expand over ``n_groups`` values of ``g`` (and a column ``h``)."""
    rng = np.random.default_rng(seed)
    groups = {"g": rng.integers(0, n_groups, n).astype(str), "h": rng.choice(["a", "b"], n)}
    data = RateData(rng.integers(0, 2, n), rng.uniform(0.5, 2.0, n), GroupTable.from_input(groups, None, n),
                    rng.integers(0, 2, n))
    return compile_problem(parse_expression("error"), [c for s in specs for c in as_constraints(s)], data)


def _least_largest_over_formed_K(K, upper, offsets):
    """The LP of least_largest with one variable per cell and K formed: the reference."""
    import scipy.sparse as sp
    from scipy.optimize import linprog

    m, n = K.shape
    res = linprog(np.r_[np.zeros(n), 1.0], A_ub=sp.hstack([K, -np.ones((m, 1))]), b_ub=-offsets,
                  bounds=[(0.0, u) for u in upper] + [(None, None)], method="highs")
    assert res.status == 0
    return res.fun


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("specs, feasible", [
    (["tpr[g] >= tpr - 0.05", "ppr[h=a] <= 0.2", "ppr[h=a] >= 0.6"], False),  # contradictory bounds
    (["fpr[g] <= fpr + 0.01", "ppr[g] <= 0.1", "tpr[h=a] >= 0.9"], False),
    (["ppr[g] <= ppr + 0.02", "ppr[g] >= ppr - 0.02", "tpr[h=b] >= 0.5"], True),
])
def test_factored_least_largest_matches_the_lp_over_formed_cells(seed, specs, feasible):
    # the LP reads mix r + offsets <= t with r = unit s: the factors' entries, not K's, which
    # repeat the overall rate's cells in every parity row; same optimum as over K
    from skrate.problem import CellMatrix, least_largest

    problem = _many_groups_problem(seed, specs)
    cells, offsets = CellMatrix.from_factors(problem.mix[1:], problem.basis), problem.b[1:]
    assert cells.factors is not None
    upper = np.asarray(cells.P.sum(axis=1)).ravel()
    expected = _least_largest_over_formed_K(cells.K, upper, offsets)
    assert (expected <= 1e-9) == feasible
    value, worst = least_largest(cells, offsets)
    assert value == pytest.approx(expected, abs=1e-8)
    # the LP over K alone (no factors) too, and the index each names attains the value
    unfactored = least_largest(CellMatrix(cells.K, cells.P), offsets)
    assert unfactored[0] == pytest.approx(expected, abs=1e-8)
    for j in (worst, unfactored[1]):
        assert 0 <= j < len(problem.constraints)


def test_least_largest_names_the_first_constraint_among_those_tied_at_the_optimum():
    # ppr >= 0.9 and ppr[g=a] <= 0.1 both miss by 7/30 at the optimum; a third constraint 1e-12
    # above the first makes the first fall short of the largest by a hair: still the first of
    # the tied is named, not whichever the solution's rounding puts on top
    from skrate.problem import least_violation

    rng = np.random.default_rng(0)
    n = 1000
    data = RateData(rng.integers(0, 2, n), np.ones(n), GroupTable.from_input({"g": np.repeat(["a", "b"], n // 2)}, None, n))
    specs = ["ppr >= 0.9", "ppr[g=a] <= 0.1", "ppr >= 0.900000000001"]
    problem = compile_problem(parse_expression("error"), as_constraints(specs), data)
    value, worst = least_violation(problem)
    assert value == pytest.approx(7 / 30) and worst == 0


def test_least_violation_matches_cvxpy_on_a_tiny_problem():
    # the per-row LP min t s.t. A yhat + b <= t, 0 <= yhat <= 1, solved by another modeller
    cp = pytest.importorskip("cvxpy")
    from skrate.problem import least_violation

    problem = _many_groups_problem(4, ["tpr[g] >= tpr - 0.01", "ppr[h=a] >= 0.7", "ppr <= 0.2"], n_groups=5, n=60)
    A, b = problem.A[1:].toarray(), problem.b[1:]
    yhat, t = cp.Variable(A.shape[1]), cp.Variable()
    reference = cp.Problem(cp.Minimize(t), [A @ yhat + b <= t, yhat >= 0, yhat <= 1])
    reference.solve(solver="CLARABEL")
    value, worst = least_violation(problem)
    assert value > 0 and value == pytest.approx(reference.value, abs=1e-6)


def test_cell_matrix_of_many_parity_rows_multiplies_through_its_factors_unformed(monkeypatch):
    # 300 parity rows over 300 groups: K would repeat the overall rate's cells in every row
    # (over 64 times the factors' entries), so it is left unformed and every product goes
    # through mix @ unit, equal to the products with the formed matrix
    import scipy.sparse as sp

    from skrate.problem import CellMatrix, CellVectors

    problem = _many_groups_problem(5, ["tpr[g] >= tpr - 0.05", "ppr[h=a] <= 0.4"], n_groups=300, n=6000)
    mix, basis = problem.mix, problem.basis
    A = sp.csr_matrix(mix @ basis).toarray()
    cells = CellMatrix.from_factors(mix, basis)
    assert cells.factored and cells.shape == A.shape
    rng = np.random.default_rng(0)
    x, v = rng.random((A.shape[1], 3)), rng.normal(size=A.shape[0])
    idx, rows = rng.permutation(A.shape[1])[:700], np.arange(0, A.shape[0], 3)
    W = sp.random(5, A.shape[0], density=0.3, random_state=0)
    np.testing.assert_allclose(cells @ x, A @ x, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(cells.T @ v, A.T @ v, rtol=1e-12, atol=1e-18)
    np.testing.assert_allclose(cells.sum(axis=1), A.sum(axis=1), rtol=1e-12, atol=1e-13)  # parity rows: 0
    np.testing.assert_allclose(cells[rows][:, idx] @ x[idx], A[rows][:, idx] @ x[idx], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(cells.combined(W) @ x, W @ (A @ x), rtol=1e-12, atol=1e-15)
    monkeypatch.setattr(CellVectors, "DENSE_K_MAX", 0)  # else a K this small is made dense
    vectors = CellVectors(cells)
    np.testing.assert_allclose(vectors.matvec(x[:, 0]), A @ x[:, 0], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(vectors.rmatvec(v), A.T @ v, rtol=1e-12, atol=1e-18)
    assert cells._K is None  # none of them formed K
    # entrywise operations form it, as the product of the factors
    np.testing.assert_allclose(cells.maximum(0).toarray(), np.maximum(A, 0), rtol=1e-12, atol=1e-18)
    np.testing.assert_allclose(cells.toarray(), A, rtol=1e-12, atol=1e-18)
    # a few rows (the objective and 63 constraints at most) always form K, as before
    assert not CellMatrix.from_factors(mix[:64], basis).factored
