"""Generalized rate metrics: values against direct formulas and scikit-learn, gradients, classes,
xi-player closed forms against cvxpy, the plug-in oracle against brute force, mixtures."""

import math
import re
import warnings

import numpy as np
import scipy.sparse as sp
import pytest
from sklearn.base import clone
from sklearn.metrics import f1_score, fbeta_score, precision_score, recall_score

from skrate import MetricOptimizer
from skrate.generalized import (
    KLD,
    CvxpyXiPlayer,
    GMean,
    HMean,
    MaxOf,
    QMean,
    MetricConstraint,
    RateFunction,
    as_metric,
    as_objective,
    best_response,
    compile_program,
    error,
    f_measure,
    f_measure_parity,
    g_mean,
    g_mean_at_least,
    h_mean,
    kld,
    kld_fairness,
    max_of,
    min_of,
    pr_auc,
    precision,
    predictive_parity,
    q_mean,
    rate_function,
    ratio,
)
from skrate.generalized._mixture import best_mixture, hull_vertices
from skrate.generalized._plugin_oracle import PluginOracle, cell_decoders
from skrate.generalized._stopping import (
    EarlyStopping,
    Snapshots,
    WindowMean,
    candidate_indices,
)
from skrate.problem import GroupTable, RateData
from skrate.rates import fnr, fpr, parse_expression, ppr, tnr, tpr
from skrate.rates import precision as core_precision


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    g = np.where(rng.random(n) < 0.4, "a", "b")
    yhat = (rng.random(n) < 0.3 + 0.4 * y).astype(float)
    return y, g, yhat, RateData(y, np.ones(n), GroupTable.from_input({"g": g}, None, n))


def _value(metric, data, yhat):
    program = compile_program(metric, [], data)
    return float(program.values(program.rates(yhat))[0])


def test_values_match_direct_formulas_and_sklearn():
    y, g, yhat, data = _data()
    tpr_, tnr_ = recall_score(y, yhat), recall_score(1 - y, 1 - yhat)
    assert _value("f1", data, yhat) == pytest.approx(1 - f1_score(y, yhat))
    assert _value(f_measure(2.0), data, yhat) == pytest.approx(1 - fbeta_score(y, yhat, beta=2.0))
    assert _value(g_mean(), data, yhat) == pytest.approx(1 - np.sqrt(tpr_ * tnr_))
    assert _value(h_mean(), data, yhat) == pytest.approx(1 - 2 * tpr_ * tnr_ / (tpr_ + tnr_))
    assert _value(q_mean(), data, yhat) == pytest.approx(np.sqrt(((1 - tpr_) ** 2 + (1 - tnr_) ** 2) / 2))
    p, q = y.mean(), yhat.mean()
    assert _value(kld(), data, yhat) == pytest.approx(p * np.log(p / q) + (1 - p) * np.log((1 - p) / (1 - q)))
    assert _value(precision(), data, yhat) == pytest.approx(precision_score(y, yhat))
    assert _value("error", data, yhat) == pytest.approx(np.mean(y != yhat))
    a = g == "a"
    assert _value(f_measure(g="a"), data, yhat) == pytest.approx(1 - f1_score(y[a], yhat[a]))
    per_group = sum(p * np.log(p / yhat[g == v].mean()) + (1 - p) * np.log((1 - p) / (1 - yhat[g == v].mean()))
                    for v in ("a", "b"))
    assert _value(kld(group="g"), data, yhat) == pytest.approx(per_group)
    errs = [np.mean(y[g == v] != yhat[g == v]) for v in ("a", "b")]
    assert _value(max_of("error_rate[g=a]", "error_rate[g=b]"), data, yhat) == pytest.approx(max(errs))
    assert _value(min_of("error_rate[g=a]", "error_rate[g=b]"), data, yhat) == pytest.approx(min(errs))
    combo = g_mean() + 0.5 * kld() - 0.25
    assert _value(combo, data, yhat) == pytest.approx(_value(g_mean(), data, yhat) + 0.5 * _value(kld(), data, yhat) - 0.25)


def test_expected_decisions_give_expected_rates():
    y, _, _, data = _data()
    p = np.random.default_rng(1).random(y.shape[0])
    tp, pp = np.sum(p * y) / len(y), p.mean()
    assert _value("f1", data, p) == pytest.approx(1 - 2 * tp / (y.mean() + pp))


@pytest.mark.parametrize("atom, r", [
    (GMean(tpr(), tnr()), [0.7, 0.4]), (HMean(tpr(), tnr()), [0.3, 0.8]), (QMean(tpr(), tnr()), [0.2, 0.6]),
    (KLD(tpr(), tnr()), [0.3, 0.55]), (f_measure(2.0).terms[0][1], [0.2, 0.35, 0.3]),
    (ratio("tpr", "ppr").terms[0][1], [0.3, 0.5]),
    (RateFunction(lambda r: r[0] ** 2 + r[0] * r[1], (tpr(), tnr()), "nonconvex"), [0.3, 0.6]),
])
def test_gradients_match_finite_differences(atom, r):
    r = np.array(r)
    h = 1e-6
    fd = [(atom.value(r + h * e) - atom.value(r - h * e)) / (2 * h) for e in np.eye(len(r))]
    np.testing.assert_allclose(atom.gradient(r), fd, rtol=1e-4, atol=1e-6)


def test_classes_follow_atoms_and_signs():
    assert error().kind == "linear"
    assert g_mean().kind == "convex" and (-g_mean()).kind == "concave"
    assert (g_mean() + kld() + error()).kind == "convex"
    assert f_measure().kind == "ratio" and f_measure().is_pseudo_convex
    assert (precision("g") - precision()).kind == "ratio"
    assert (g_mean() + f_measure()).kind == "nonconvex"
    assert min_of("tpr", "tnr").kind == "concave" and (-min_of("tpr", "tnr")).kind == "convex"
    assert rate_function(lambda r: r[0], ["tpr"], convexity="nonconvex").kind == "nonconvex"
    assert (kld("g") <= 0.01).kind == "convex" and (g_mean() >= 0.5).kind == "concave"


def test_specs_are_values_and_clone_safe():
    assert f_measure(2.0, g="a") == f_measure(2.0, g="a") and hash(kld("g")) == hash(kld("g"))
    assert f_measure(2.0) != f_measure(1.0)
    assert as_metric("f1") == f_measure(1.0)
    est = MetricOptimizer(metric=g_mean() + 0.5 * kld(), constraints=[kld_fairness("g", 0.01), "ppr >= 0.2"])
    twin = clone(est)
    assert twin.get_params()["metric"] == est.metric and twin.get_params()["constraints"] == est.constraints


def test_unknown_metric_name_lists_known_ones():
    with pytest.raises(ValueError, match="Unknown metric 'g_means'.*'g_mean'.*'precision'.*'f<beta>'"):
        as_metric("g_means")
    with pytest.raises(ValueError, match="beta"):
        f_measure(-1.0)
    with pytest.raises(ValueError, match="beta"):
        as_metric("f0")
    for name, builder in (("max", "max_of"), ("min", "min_of")):
        with pytest.raises(ValueError, match=rf"'{name}' needs the rates.*{builder}\("):
            as_metric(name)


@pytest.mark.parametrize("spec, reason", [("tpr / 0", "division by zero"), ("tpr * fpr", "Cannot multiply")])
def test_a_rate_expression_that_means_nothing_is_not_an_unknown_name(spec, reason):
    # it was "Unknown metric 'tpr / 0' (did you mean 'tpr'?)", a score the estimator refuses
    with pytest.raises(ValueError, match=rf"^Invalid metric '{re.escape(spec)}', read as a rate expression: "
                                         rf"Invalid spec .*{reason}") as info:
        as_metric(spec)
    assert "did you mean" not in str(info.value) and str(info.value).rstrip().endswith("^")


def test_metric_names_ignore_case_and_suggest_close_ones():
    assert as_metric("F1") == as_metric(" f1 ") == f_measure(1.0)
    assert as_metric("G_Mean") == g_mean() and as_metric("F0.5") == f_measure(0.5)
    for typo, near in (("gmean", "g_mean"), ("g-mean", "g_mean"), ("f_1", "f1"), ("Precison", "precision")):
        with pytest.raises(ValueError, match=rf"Unknown metric '{typo}' \(did you mean '{near}'"):
            as_metric(typo)
    # each name once: 'precision' is a metric and a rate, and was suggested twice
    with pytest.raises(ValueError, match=r"\(did you mean 'precision'\?\)"):
        as_metric("Precison")


@pytest.mark.parametrize("build, what", [
    (lambda: g_mean() <= float("nan"), r"bound of 1 - g_mean\(tpr, tnr\) <= bound"),
    (lambda: g_mean() >= float("inf"), r"bound of 1 - g_mean\(tpr, tnr\) >= bound"),
    (lambda: kld("g") <= -float("inf"), r"bound of kld\(label_rate, ppr\[g\]\) <= bound"),
    (lambda: kld_fairness("g", float("nan")), "epsilon of kld_fairness"),
    (lambda: g_mean_at_least(float("nan")), "value of g_mean_at_least"),
    (lambda: predictive_parity("g", float("inf")), "epsilon of predictive_parity"),
    (lambda: f_measure_parity({"g": "a"}, {"g": "b"}, float("nan")), "epsilon of f_measure_parity"),
], ids=["le-nan", "ge-inf", "le-minus-inf", "kld_fairness", "g_mean_at_least", "predictive_parity", "f_measure_parity"])
def test_non_finite_bounds_are_refused_where_the_constraint_is_built(build, what):
    with pytest.raises(ValueError, match=rf"The {what} must be a finite number, got -?(nan|inf)"):
        build()


def test_bounds_beyond_a_float_are_refused_and_so_is_an_objective_that_overflows():
    for build in (lambda: g_mean() <= 10**400, lambda: kld_fairness("g", 10**400),
                  lambda: predictive_parity("g", -10**400)):
        with pytest.raises(ValueError, match="must be a finite number, got a number beyond a float's range"):
            build()
    with pytest.raises(ValueError, match=r"Invalid metric '1e300\*1e300'.*overflows a float"):
        as_objective("1e300*1e300")
    for build in (lambda: g_mean() * 1e300 * 1e300, lambda: precision() * 1e300 * 1e300, lambda: g_mean() + 1e308 + 1e308):
        with pytest.raises(ValueError, match="A coefficient or constant of the metric overflows a float"):
            build()


def test_max_of_over_a_group_column_expands_inside_the_max():
    y, g, yhat, data = _data()
    for pooled, listed in ((max_of("error_rate[g]"), max_of("error_rate[g=a]", "error_rate[g=b]")),
                           (max_of("fnr[g]", "fpr[g]"), max_of("fnr[g=a]", "fnr[g=b]", "fpr[g=a]", "fpr[g=b]")),
                           (min_of("tpr[g]"), min_of("tpr[g=a]", "tpr[g=b]"))):
        assert compile_program(pooled, [], data).objective.metric == listed
    class_errors = [np.mean(yhat[(g == v) & (y == c)] != c) for v in "ab" for c in (0, 1)]
    assert _value(max_of("fnr[g]", "fpr[g]"), data, yhat) == pytest.approx(max(class_errors))
    # as a constraint: one bound on the worst group, not one per group
    program = compile_program(error(), [max_of("error_rate[g]") <= 0.3], data)
    assert [c.label for c in program.constraints] == ["max(error_rate[g=a], error_rate[g=b]) <= 0.3"]


def test_a_constraint_over_a_group_column_reads_per_value_as_written():
    _, _, _, data = _data()
    cons = [precision("g") >= 0.55, 1 - precision("g") <= 0.45, precision("g") >= precision() - 0.1,
            f_measure(group="g") <= 0.3, max_of("error_rate[g]") + kld("g") <= 0.3]
    assert [str(c) for c in cons] == ["precision[g] >= 0.55", "1 - precision[g] <= 0.45",
                                      "precision[g] >= precision - 0.1", "1 - f_measure[g] <= 0.3",
                                      "max(error_rate[g]) + kld(label_rate, ppr[g]) <= 0.3"]
    labels = [c.label for c in compile_program(error(), cons, data).constraints]
    assert labels == ["precision[g=a] >= 0.55", "precision[g=b] >= 0.55", "1 - precision[g=a] <= 0.45",
                      "1 - precision[g=b] <= 0.45", "precision[g=a] >= precision - 0.1",
                      "precision[g=b] >= precision - 0.1", "1 - f_measure[g=a] <= 0.3", "1 - f_measure[g=b] <= 0.3",
                      "max(error_rate[g=a], error_rate[g=b]) + kld(label_rate, ppr[g=a]) <= 0.3",
                      "max(error_rate[g=a], error_rate[g=b]) + kld(label_rate, ppr[g=b]) <= 0.3"]


def test_an_objective_sums_only_its_terms_over_a_group_column():
    y, g, yhat, data = _data()
    objective = compile_program(g_mean() + kld("g") + 0.5, [], data).objective.metric
    assert [str(atom) for _, atom in objective.terms] == [str(g_mean()), "kld(label_rate, ppr[g=a])",
                                                          "kld(label_rate, ppr[g=b])"]
    assert objective.constant == 0.5
    assert _value(g_mean() + kld("g"), data, yhat) == pytest.approx(
        _value(g_mean(), data, yhat) + _value(kld("g"), data, yhat))


def test_names_and_core_ratios_give_the_metrics_they_name():
    y, g, yhat, data = _data()
    assert as_metric("f2") == f_measure(2.0) and as_metric("f0.5") == as_metric("f.5") == f_measure(0.5)
    assert _value("f0.5", data, yhat) == pytest.approx(1 - fbeta_score(y, yhat, beta=0.5))
    assert _value("precision", data, yhat) == pytest.approx(1 - precision_score(y, yhat))  # names are losses
    a = g == "a"
    # core ratios, as objects or strings, are the ratio itself
    assert _value(core_precision(g="a"), data, yhat) == pytest.approx(precision_score(y[a], yhat[a]))
    assert _value("precision[g=a]", data, yhat) == pytest.approx(precision_score(y[a], yhat[a]))
    assert _value(g_mean() + core_precision(), data, yhat) == pytest.approx(
        _value(g_mean(), data, yhat) + precision_score(y, yhat))
    assert as_objective("pr_auc") == pr_auc()
    with pytest.raises(TypeError, match="on its own"):
        as_metric("pr_auc")
    baseline = (np.arange(len(y)) % 3 == 0).astype(int)
    with_baseline = RateData(y, np.ones(len(y)), data.groups, baseline)
    wins = np.mean((yhat == y) & (baseline != y))
    losses = np.mean((yhat != y) & (baseline == y))
    assert _value("win_loss_ratio", with_baseline, yhat) == pytest.approx(-wins / losses)


def test_linear_user_function_is_its_rate_expression():
    affine = rate_function(lambda r: 0.05 * r[0] + r[1] + 0.1, ["fpr", "fnr"], convexity="linear")
    assert affine == as_metric("0.05 * fpr + fnr + 0.1")
    y, _, yhat, data = _data()
    fpr_, fnr_ = np.mean(yhat[y == 0]), 1 - np.mean(yhat[y == 1])
    assert _value(affine, data, yhat) == pytest.approx(0.05 * fpr_ + fnr_ + 0.1)
    with pytest.raises(ValueError, match=r"'square'.*convexity='linear' but is not affine"):
        rate_function(lambda r: r[0] ** 2, ["tpr"], convexity="linear", name="square")
    # built directly, the atom knows its coefficients and its ratio form
    atom = RateFunction(lambda r: 2 * r[0] - r[1] + 0.5, (fpr(), fnr()), convexity="linear")
    np.testing.assert_allclose(atom.linear_coefficients(), [2.0, -1.0])
    assert atom.ratios()[0][1] == 2 * fpr() - fnr() + 0.5
    assert (f_measure() + atom).ratio_form() is not None
    with pytest.raises(ValueError, match="not affine"):
        RateFunction(lambda r: r[0] * r[1], (fpr(), fnr()), convexity="linear")
    with pytest.raises(TypeError, match="not linear"):
        g_mean().terms[0][1].linear_coefficients()
    with pytest.raises(TypeError, match="max_of takes linear rate expressions.*precision"):
        max_of("precision", "tpr")


def test_undefined_metrics_name_metric_and_slice():
    y, g, _, _ = _data()
    y = y.copy()
    y[g == "a"] = 0  # group a has no positives
    data = RateData(y, np.ones(len(y)), GroupTable.from_input({"g": g}, None, len(y)))
    with pytest.raises(ValueError, match=r"kld.*g=a.*proportion.*0"):
        compile_program(kld(g="a", reference="slice"), [], data)
    with pytest.raises(ValueError, match=r"g_mean.*tpr\[g=a\].*none with label 1"):
        compile_program(g_mean(g="a"), [], data)
    with pytest.raises(ValueError, match=r"f_measure.*g=a.*no positive"):
        compile_program(f_measure(g="a"), [], data)
    with pytest.raises(ValueError, match=r"kld.*0 and 1"):
        compile_program("error", [kld_fairness("g", 0.1)], RateData(np.zeros(len(y), int), np.ones(len(y)), data.groups))


def test_constraint_labels_name_their_slice_and_stay_unique():
    _, _, _, data = _data()
    program = compile_program("error", [
        g_mean_at_least(0.7, g="a"), g_mean_at_least(0.7, g="b"), kld_fairness("g", 0.01),
        *predictive_parity("g", 0.05), kld(group="g") <= 0.02, g_mean() >= 0.5, "tpr[g] >= 0.5",
        MetricConstraint(kld(group="g") - 0.1, "my kld"), g_mean_at_least(0.7, g="a")], data)
    assert [c.label for c in program.constraints] == [
        "g_mean[g=a] >= 0.7", "g_mean[g=b] >= 0.7", "kld[g=a] <= 0.01", "kld[g=b] <= 0.01",
        "precision[g=a] - precision <= 0.05", "precision[g=b] - precision <= 0.05",
        "precision - precision[g=a] <= 0.05", "precision - precision[g=b] <= 0.05",
        "kld(label_rate, ppr[g=a]) <= 0.02", "kld(label_rate, ppr[g=b]) <= 0.02",
        "1 - g_mean(tpr, tnr) >= 0.5", "tpr[g=a] >= 0.5", "tpr[g=b] >= 0.5",
        "my kld [g=a]", "my kld [g=b]", "g_mean[g=a] >= 0.7 #2"]
    assert str(g_mean_at_least(0.6, group="g")) == "g_mean[g] >= 0.6"
    assert str(kld_fairness("g", 0.1)) == "kld[g] <= 0.1"


def test_undefined_rate_says_whether_objective_or_constraint():
    y, g, _, _ = _data()
    y = y.copy()
    y[g == "a"] = 0
    data = RateData(y, np.ones(len(y)), GroupTable.from_input({"g": g}, None, len(y)))
    with pytest.raises(ValueError, match=r"^The objective 'tpr\[g=a\]'.*leave out the goal that uses it") as info:
        compile_program("tpr[g=a]", [], data)
    assert "constraint" not in str(info.value)
    # the constraint as written, not its rearrangement -tpr[g=a] + 0.5
    with pytest.raises(ValueError, match=r"^The constraint 'tpr\[g=a\] >= 0.5'.*leave out the goal that uses it"):
        compile_program("error", [tpr(g="a") >= 0.5], data)
    with pytest.raises(ValueError, match=r"^The constraint 'g_mean\[g=a\] >= 0.5'"):
        compile_program("error", [g_mean_at_least(0.5, group="g")], data)
    # metrics whose own definition fails (F-measure, KL) say so too
    with pytest.raises(ValueError, match=r"^The objective '1 - f_measure\[g=a\]'.*no positive examples"):
        compile_program(f_measure(g="a"), [], data)
    with pytest.raises(ValueError, match=r"^The constraint 'kld\(label_rate\[g=a\], ppr\[g=a\]\) <= 0.01'.*strictly between 0 and 1"):
        compile_program("error", [kld(g="a", reference="slice") <= 0.01], data)
    # the slice named is that of the true proportion, not of the prediction rate beside it
    with pytest.raises(ValueError, match=r"kld\(label_rate, ppr\[g=b\]\) is undefined on the slice \(all examples\)"):
        compile_program("error", [kld(g="b") <= 0.01],
                        RateData(np.zeros_like(y), np.ones(len(y)), GroupTable.from_input({"g": g}, None, len(y))))


def test_constraint_helpers_expand_per_group():
    y, g, yhat, data = _data()
    program = compile_program("error", [kld_fairness("g", 0.01), *predictive_parity("g", 0.05),
                                        f_measure_parity({"g": "a"}, {"g": "b"}, 0.02)], data)
    assert len(program.constraints) == 2 + 4 + 1
    _, cons = program.values(program.rates(yhat))
    a = g == "a"
    f_a, f_b = f1_score(y[a], yhat[a]), f1_score(y[~a], yhat[~a])
    assert cons[-1] == pytest.approx(f_b - f_a - 0.02)
    prec = [precision_score(y[g == v], yhat[g == v]) - precision_score(y, yhat) - 0.05 for v in ("a", "b")]
    np.testing.assert_allclose(sorted(cons[2:6])[-2:], sorted(prec + [-p - 0.1 for p in prec])[-2:])



def test_filters_on_columns_named_like_parameters_go_through_where():
    # "group" is the column a 1-D groups= array becomes; "beta" is f_measure's own parameter
    y, g, yhat, _ = _data()
    n = len(y)
    data = RateData(y, np.ones(n), GroupTable.from_input({"group": g, "beta": g}, None, n))
    a = g == "a"
    f_a, f_b = f1_score(y[a], yhat[a]), f1_score(y[~a], yhat[~a])
    for column in ("group", "beta"):
        parity = f_measure_parity({column: "a"}, {column: "b"}, 0.02)
        assert parity.label == f"f_measure[{column}=a] >= f_measure[{column}=b] - 0.02"
        program = compile_program("error", [parity], data)
        assert float(program.values(program.rates(yhat))[1][0]) == pytest.approx(f_b - f_a - 0.02)
    tpr_a, tnr_a = yhat[a & (y == 1)].mean(), 1 - yhat[a & (y == 0)].mean()
    checks = [(g_mean(where={"group": "a"}), 1 - np.sqrt(tpr_a * tnr_a)),
              (h_mean(where={"beta": "a"}), 1 - 2 * tpr_a * tnr_a / (tpr_a + tnr_a)),
              (error(where={"group": "a"}), np.mean(yhat[a] != y[a])),
              (precision(where={"group": "a"}), precision_score(y[a], yhat[a])),
              (f_measure(2.0, where={"beta": "a"}), 1 - fbeta_score(y[a], yhat[a], beta=2.0))]
    for metric, expected in checks:
        assert _value(metric, data, yhat) == pytest.approx(expected)
    with pytest.raises(ValueError, match="'beta' is filtered twice"):
        kld(where={"beta": "a"}, beta="a")


def test_reported_values_are_nan_where_a_ratio_is_undefined_but_the_solvers_keep_the_clipped_value():
    from skrate.generalized._program import program_values

    y, g, yhat, data = _data()
    only_a = yhat * (g == "a")  # no positive prediction in group b: its precision is undefined
    spec = [*predictive_parity("g", 0.05), g_mean_at_least(0.1)]
    values = program_values("error", spec, data, only_a)
    undefined = [k for k in values if "g=b" in k]
    assert len(undefined) == 2 and all(np.isnan(values[k]) for k in undefined)
    assert np.isfinite([v for k, v in values.items() if k not in undefined]).all()
    never = list(program_values("error", spec, data, 0 * yhat).values())
    assert np.isnan(never[1:5]).all() and np.isfinite(never[5])  # g_mean has no ratio
    program = compile_program("error", spec, data)  # what the solvers read: finite
    assert np.isfinite(program.values(program.rates(only_a))[1]).all()



def test_a_ratio_over_a_denominator_below_the_solvers_floor_is_reported_and_judged_as_it_is():
    """The solvers read ``precision[g=a]`` over ``max(ppr[g=a], 1e-6)``: a mixture predicting one
    positive of group a, with probability 1e-6, has precision[g=a] = 1, which the floor makes
    about 1 / n. Reports and the choice among models read the ratio itself."""
    from skrate.generalized._program import program_values

    y, g, yhat, data = _data()
    p = np.where(g == "b", yhat, 0.0)
    p[np.flatnonzero((g == "a") & (y == 1))[0]] = 1e-6
    spec = predictive_parity("g", 0.05)
    precision_all, precision_a = (p @ y) / p.sum(), 1.0
    values = program_values("error", spec, data, p)
    assert values["precision[g=a] - precision <= 0.05"] == pytest.approx(precision_a - precision_all - 0.05)
    assert values["precision - precision[g=a] <= 0.05"] == pytest.approx(precision_all - precision_a - 0.05)
    program = compile_program("error", spec, data)
    r = program.rates(p)
    clipped = program.values(r)[1]
    judged = program.flag_undefined(r, clipped)
    np.testing.assert_allclose(judged, [c.reported(r) for c in program.constraints])
    assert clipped[0] < 0 < judged[0]  # met as the solvers read it, broken as it is

# -- xi-player --------------------------------------------------------------------------------
@pytest.mark.parametrize("atom, fixed", [
    (KLD(tpr(), tnr()), np.array([0.3, np.nan])), (GMean(tpr(), tnr()), np.full(2, np.nan)),
    (HMean(tpr(), tnr()), np.full(2, np.nan)), (QMean(tpr(), tnr()), np.full(2, np.nan)),
    (MaxOf((tpr(), tnr(), tpr(g="a"))), np.full(3, np.nan)),
])
def test_xi_closed_forms_match_cvxpy(atom, fixed):
    pytest.importorskip("cvxpy")
    reference = CvxpyXiPlayer(atom, fixed)
    rng = np.random.default_rng(0)
    for _ in range(6):
        lam = rng.normal(scale=1.5, size=fixed.shape[0])
        w = float(rng.uniform(0.2, 2.0))
        xi = best_response(atom, lam, w, fixed)
        ref = reference(lam, w)
        value = lambda z, w=w, lam=lam: w * float(atom.value(z)) - lam @ np.where(np.isnan(fixed), z, 0.0)
        assert value(xi) <= value(ref) + 1e-5
        assert np.all(xi >= 0) and np.all(xi <= 1)


def test_rate_box_is_the_range_over_every_decision_vector():
    from itertools import product

    from skrate.generalized._xi_player import rate_box

    rng = np.random.default_rng(2)
    A = rng.normal(size=(3, 8)) * (rng.random((3, 8)) < 0.6)
    b = rng.normal(size=3)
    every = np.array(list(product([0.0, 1.0], repeat=8))).T  # the box's vertices hold the extremes
    lo, hi = rate_box(sp.csr_matrix(A), b)
    np.testing.assert_allclose(lo, (A @ every + b[:, None]).min(axis=1), atol=1e-12)
    np.testing.assert_allclose(hi, (A @ every + b[:, None]).max(axis=1), atol=1e-12)


@pytest.mark.parametrize("box", [
    (np.full(3, -1.0), np.zeros(3)),  # min_of's negated rates
    (np.array([-1.0, 0.0, -0.5]), np.array([0.0, 1.0, 0.5])),  # differences of rates, and others
])
def test_xi_player_answers_in_the_range_of_its_rate_expressions(box):
    # the box was [0, 1] for every expression: for min_of's -tpr in [-1, 0] the slack could not
    # follow the rates, and the game pushed the rates the wrong way
    pytest.importorskip("cvxpy")
    lo, hi = box
    user = RateFunction(lambda r: np.log(np.exp(r).sum()), (tpr(), tnr(), ppr()),
                        grad=lambda r: np.exp(r) / np.exp(r).sum(), convexity="convex",
                        cvx=lambda r: __import__("cvxpy").log_sum_exp(r))
    rng = np.random.default_rng(1)
    for atom in (MaxOf((-tpr(), -tnr(), -ppr())), user):
        fixed = np.full(3, np.nan)
        reference = CvxpyXiPlayer(atom, fixed, box=box)
        for _ in range(6):
            lam, w = rng.normal(scale=1.5, size=3), float(rng.uniform(0.2, 2.0))
            xi = best_response(atom, lam, w, fixed, box=box)
            value = lambda z, w=w, lam=lam, atom=atom: w * float(atom.value(z)) - lam @ z  # noqa: E731
            assert np.all(xi >= lo - 1e-9) and np.all(xi <= hi + 1e-9)
            assert value(xi) <= value(reference(lam, w)) + 1e-5
    answer = best_response(MaxOf((-tpr(), -tnr())), np.array([-0.3, -0.2]), 1.0, np.full(2, np.nan),
                           box=(np.full(2, -1.0), np.zeros(2)))
    np.testing.assert_allclose(answer, [-1.0, -1.0])  # value -1 + 0.5, below any point of [0, 1]^2
    # KL's closed form, clipped to the box: a multiplier pushing q up stops at the box's side
    kld = lambda hi: best_response(KLD(tpr(), tnr()), np.array([0.0, 5.0]), 1.0,  # noqa: E731
                                   np.array([0.3, np.nan]), box=(np.zeros(2), np.array([1.0, hi])))
    assert kld(1.0)[1] > 0.5 and kld(0.2)[1] == pytest.approx(0.2)


def test_cvxpy_xi_player_of_a_concave_function_entering_negated():
    # 1 - geo_mean: the weight is negative, which the cvxpy problem refused ("must be nonnegative")
    cp = pytest.importorskip("cvxpy")
    gm = RateFunction(lambda r: np.sqrt(max(r[0] * r[1], 1e-300)), (tpr(), tnr()), convexity="concave",
                      grad=lambda r: 0.5 * np.sqrt(max(r[0] * r[1], 1e-300)) / np.maximum(r, 1e-150),
                      cvx=lambda r: cp.geo_mean(r))
    player = CvxpyXiPlayer(gm, np.full(2, np.nan), sign=-1.0)
    with pytest.raises(ValueError, match="other sign"):  # not silently solved for |w|
        player(np.zeros(2), 1.0)
    rng = np.random.default_rng(3)
    for _ in range(5):
        lam, w = rng.normal(size=2), -float(rng.uniform(0.2, 2.0))
        xi = player(lam, w)
        value = lambda z, w=w, lam=lam: w * float(gm.value(z)) - lam @ z  # noqa: E731
        grid = np.linspace(0, 1, 201)
        best = min(value(np.array([a, b_])) for a in grid for b_ in grid)
        assert value(xi) <= best + 1e-5


def test_numeric_fallback_matches_closed_form():
    gm = GMean(tpr(), tnr())
    user = RateFunction(lambda r: 1 - np.sqrt(max(r[0] * r[1], 1e-12)), (tpr(), tnr()),
                        grad=lambda r: gm.gradient(r))
    for lam in ([-0.3, -0.6], [0.2, -1.0]):
        lam = np.array(lam)
        closed = best_response(gm, lam, 1.0, np.full(2, np.nan))
        numeric = best_response(user, lam, 1.0, np.full(2, np.nan), start=np.array([0.5, 0.5]))
        value = lambda z, lam=lam: float(gm.value(z)) - lam @ z
        assert value(numeric) == pytest.approx(value(closed), abs=1e-4)


# -- plug-in oracle and mixtures ----------------------------------------------------------------
def test_plugin_oracle_is_the_brute_force_best_threshold_per_cell():
    rng = np.random.default_rng(3)
    n = 120
    cells = rng.integers(0, 2, n)
    X = np.column_stack([rng.normal(size=n), cells == 0, cells == 1]).astype(float)
    theta_eta = np.array([1.5, 0.2, -0.3, 0.1])
    oracle = PluginOracle(X, theta_eta, cells)
    assert oracle.per_cell
    cost = rng.normal(size=n)
    theta = oracle.best_response(cost)
    got = cost @ (X @ theta[:-1] + theta[-1] > 0)
    s = X @ theta_eta[:-1] + theta_eta[-1]
    best = 0.0
    for c in (0, 1):  # brute force: every threshold of every cell, independently
        rows = cells == c
        best += min(0.0, min(cost[rows] @ (s[rows] >= t) for t in s[rows]))
    assert got == pytest.approx(best)
    assert cell_decoders(np.column_stack([rng.normal(size=n)]), cells) is None


def test_group_cells_are_the_intersections_of_the_columns():
    """Rows share a cell exactly when they share every named column's value, whatever the
    columns' types (text, numbers, a pandas categorical)."""
    pd = pytest.importorskip("pandas")
    from skrate.generalized._program import group_cells

    rng = np.random.default_rng(0)
    n = 300
    frame = pd.DataFrame({"text": rng.choice(["b", "a", "c"], n), "number": rng.choice([10, 2, 7], n),
                          "kind": pd.Categorical(rng.choice(["lo", "hi"], n), categories=["lo", "hi"])})
    data = RateData(np.zeros(n, int), np.ones(n), GroupTable.from_input(frame, None, n))
    for columns in (["text"], ["text", "number"], ["kind", "number", "text"]):
        cells = group_cells(columns, data)
        same_cell = cells[:, None] == cells[None, :]
        same_values = np.ones((n, n), dtype=bool)
        for c in columns:
            values = frame[c].astype(str).to_numpy()
            same_values &= values[:, None] == values[None, :]
        np.testing.assert_array_equal(same_cell, same_values)
        assert set(cells) == set(range(len(set(cells))))  # numbered 0 .. n_cells - 1
    assert np.all(group_cells([], data) == 0)


def test_cell_decoders_bound_the_cells_by_the_columns(monkeypatch):
    rng = np.random.default_rng(0)
    cells = rng.integers(3, size=200)
    dropped = (cells[:, None] == np.arange(1, 3)).astype(float)  # one-hot, first level dropped
    V, c = cell_decoders(dropped, cells)  # 3 cells from 2 columns and the intercept
    np.testing.assert_allclose(dropped @ V + c, cells[:, None] == np.arange(3), atol=1e-9)
    # more columns than rows fit any indicator exactly, a group that is not in X included
    wide = rng.normal(size=(100, 120))
    assert cell_decoders(wide, rng.integers(2, size=100)) is None
    # more cells than columns + 1 cannot decode: refused before any n x cells system is formed
    monkeypatch.setattr(np.linalg, "lstsq", lambda *a, **k: pytest.fail("solved a hopeless system"))
    assert cell_decoders(dropped, rng.integers(4, size=200)) is None


def test_cell_decoders_of_sparse_x_stay_sparse():
    import tracemalloc

    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    n, d = 20000, 2000
    cells = rng.integers(3, size=n)
    onehot = sp.csr_matrix((cells[:, None] == np.arange(3)).astype(float))
    X = sp.hstack([sp.random(n, d, density=0.001, format="csr", random_state=0), onehot], format="csr")
    tracemalloc.start()
    V, c = cell_decoders(X, cells)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    # a dense copy of X is 320 MB; the decoder needs the cells' values and one column per cell
    assert peak < 20 * 2**20, peak
    np.testing.assert_allclose(X @ V + c, cells[:, None] == np.arange(3), atol=1e-9)
    assert not V[:d].any()  # the random columns vary within cells: unused
    small = X[:3000]
    dense = cell_decoders(small.toarray(), cells[:3000])
    np.testing.assert_allclose(dense[0], cell_decoders(small, cells[:3000])[0])


def test_best_mixture_keeps_rates_on_a_small_support():
    _, _, _, data = _data(200)
    rng = np.random.default_rng(0)
    decisions = (rng.random((200, 30)) < 0.5).astype(float)
    program = compile_program(g_mean(), ["ppr <= 0.5"], data)
    R = program.rates(decisions)
    uniform = np.full(30, 1 / 30)
    p = best_mixture(program, R, [uniform])
    obj, cons = program.values(R @ p)
    u_obj, _ = program.values(R @ uniform)
    assert obj <= u_obj + 1e-9 and cons.max() <= 1e-6
    model_rows = np.asarray(abs(program.A).sum(axis=1)).ravel() > 0
    assert np.count_nonzero(p) <= model_rows.sum() + 1
    # no mixture does better: the same problem in cvxpy
    cp = pytest.importorskip("cvxpy")
    q = cp.Variable(30, nonneg=True)
    r = R @ q
    ref = cp.Problem(cp.Minimize(1 - cp.geo_mean(cp.hstack([r[0], r[1]]))), [cp.sum(q) == 1, r[2] <= 0])  # the row holds ppr - 0.5
    ref.solve()
    assert obj == pytest.approx(ref.value, abs=1e-4)


def test_cvxpy_xi_player_meets_a_closed_form_to_the_tolerance_it_asks_for():
    # log-sum-exp less lam . x on [0, 1]^3: the optimum is x = (ln 2, 0, 0), value 1.5 ln 2. At its
    # default tolerances (1e-8) Clarabel stopped 3e-9 above it
    cp = pytest.importorskip("cvxpy")
    from skrate.rates import ppr, tnr, tpr

    user = RateFunction(lambda r: np.log(np.exp(r).sum()), (tpr(), tnr(), ppr()),
                        grad=lambda r: np.exp(r) / np.exp(r).sum(), convexity="convex",
                        cvx=lambda r: cp.log_sum_exp(r))
    lam = np.array([0.5, -0.2, 0.1])
    xi = CvxpyXiPlayer(user, np.full(3, np.nan))(lam, 1.0)
    assert np.log(np.exp(xi).sum()) - lam @ xi == pytest.approx(1.5 * np.log(2.0), abs=2e-10)


def test_user_function_in_cvxpy_form_uses_the_cached_cvxpy_xi_player():
    cp = pytest.importorskip("cvxpy")
    gm = g_mean().terms[0][1]
    user = rate_function(lambda r: 1 - np.sqrt(max(r[0] * r[1], 0.0)), ["tpr", "tnr"], gradient=gm.gradient,
                         cvxpy=lambda r: 1 - cp.geo_mean(r)).terms[0][1]
    player = CvxpyXiPlayer(user, np.full(2, np.nan))
    problem = player.problem
    for lam in ([-0.3, -0.6], [0.2, -1.0], [-2.0, -0.1]):
        lam = np.array(lam)
        xi = player(lam, 1.0)
        assert player.problem is problem  # built once, re-solved with new parameters
        closed = best_response(gm, lam, 1.0, np.full(2, np.nan))
        value = lambda z, lam=lam: float(gm.value(z)) - lam @ z
        # Clarabel, named with tight tolerances: cvxpy's default pick was ECOS (with a warning to
        # the user) in cvxpy 1.4, and Clarabel at its defaults left the optimum 1e-7 off later
        assert player.problem.solver_stats.solver_name == "CLARABEL"
        assert value(xi) == pytest.approx(value(closed), abs=1e-9)
    # and in the game: the same optimum as the built-in G-mean
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 1))
    y = (rng.random(200) < 1 / (1 + np.exp(-2 * X[:, 0] + 0.8))).astype(int)
    a = MetricOptimizer(metric=rate_function(user.fn, ["tpr", "tnr"], gradient=gm.gradient,
                                             cvxpy=lambda r: 1 - cp.geo_mean(r)), max_iter=60,
                        random_state=0).fit(X, y)
    b = MetricOptimizer(metric="g_mean", max_iter=60, random_state=0).fit(X, y)
    assert a.metric_values(X, y)["objective"] == pytest.approx(b.metric_values(X, y)["objective"], abs=0.01)


def _in_hull(points, x):
    """Whether ``x`` is a convex combination of the rows of ``points`` (an LP feasibility test)."""
    from scipy.optimize import linprog

    A_eq = np.vstack([points.T, np.ones(points.shape[0])])
    res = linprog(np.zeros(points.shape[0]), A_eq=A_eq, b_eq=np.append(x, 1.0), bounds=[(0, None)] * points.shape[0])
    return res.status == 0


def test_hull_vertices_keep_every_mixture():
    from scipy.spatial import ConvexHull

    rng = np.random.default_rng(0)
    P = rng.random((40, 2))
    # a third rate that is an affine function of the others: the points span a plane in 3-D
    R = np.vstack([P.T, 0.3 * P[:, 0] - 0.2 * P[:, 1] + 0.1])
    cols = np.arange(40)
    kept = hull_vertices(R, cols)
    np.testing.assert_array_equal(kept, np.sort(ConvexHull(P).vertices))
    assert len(kept) < 40
    for j in np.setdiff1d(cols, kept):
        assert _in_hull(R[:, kept].T, R[:, j])
    # collinear points keep their two ends, identical points one, few points all
    line = np.vstack([np.linspace(0, 1, 7), np.linspace(1, 0, 7)])
    np.testing.assert_array_equal(hull_vertices(line, np.arange(7)), [0, 6])
    assert hull_vertices(np.ones((3, 5)), np.arange(5)).shape == (1,)
    np.testing.assert_array_equal(hull_vertices(R[:, :3], np.arange(3)), np.arange(3))


def _h_mean_candidates():
    """60 random candidates' decisions on 200 rows, and the H-mean program under ppr <= 0.45."""
    _, _, _, data = _data(200)
    rng = np.random.default_rng(1)
    decisions = (rng.random((200, 60)) < rng.random(60)).astype(float)
    program = compile_program(h_mean(), ["ppr <= 0.45"], data)
    return data, decisions, program, program.rates(decisions)


def test_best_mixture_over_hull_vertices_equals_over_all_candidates():
    _, _, program, R = _h_mean_candidates()
    p = best_mixture(program, R, [np.full(60, 1 / 60)])
    cp = pytest.importorskip("cvxpy")
    q = cp.Variable(60, nonneg=True)
    r = R @ q
    # the constraint's rate row holds ``ppr - 0.45``
    ref = cp.Problem(cp.Minimize(1 - cp.harmonic_mean(cp.hstack([r[0], r[1]]))), [cp.sum(q) == 1, r[2] <= 0])
    ref.solve()
    unconstrained = cp.Problem(cp.Minimize(1 - cp.harmonic_mean(cp.hstack([r[0], r[1]]))), [cp.sum(q) == 1])
    assert ref.value > unconstrained.solve() + 1e-3  # the constraint binds
    obj, cons = program.values(R @ p)
    assert cons.max() <= 1e-6
    assert obj == pytest.approx(ref.value, abs=1e-5)


def test_best_mixture_reads_violations_within_its_tolerance_as_met():
    data, decisions, program, R = _h_mean_candidates()
    met = best_mixture(program, R, [np.full(60, 1 / 60)])
    unconstrained = compile_program(h_mean(), [], data)
    free = best_mixture(unconstrained, unconstrained.rates(decisions), [np.full(60, 1 / 60)])
    # a start between the two: the constraint broken by 0.01, a better objective
    t = 0.01 / program.values(R @ free)[1].max()
    start = (1 - t) * met + t * free
    (obj_met, cons_met), (obj_start, cons_start) = program.values(R @ met), program.values(R @ start)
    assert cons_start.max() == pytest.approx(0.01) and obj_start < obj_met - 1e-5 and cons_met.max() <= 1e-6
    # within a tolerance of 0.05 that start counts as feasible and wins; within the default it does not
    np.testing.assert_allclose(best_mixture(program, R, [start], tol=0.05), start)
    assert program.values(R @ best_mixture(program, R, [start]))[1].max() <= 1e-6


def test_plugin_oracle_ignores_zero_weight_rows():
    rng = np.random.default_rng(4)
    n = 80
    X = rng.normal(size=(n, 2))
    theta_eta = np.array([1.0, -0.5, 0.2])
    weight = rng.integers(0, 3, n).astype(float)
    cost = rng.normal(size=n) * weight  # a zero-weight row costs nothing either way
    keep = weight > 0
    with_zeros = PluginOracle(X, theta_eta, sample_weight=weight).best_response(cost)
    without = PluginOracle(X[keep], theta_eta).best_response(cost[keep])
    np.testing.assert_allclose(with_zeros, without)
    # without the weights, a cut next to a zero-weight row ties with its neighbour's
    assert PluginOracle(X, theta_eta).groups[0][0].shape[0] == n
    assert PluginOracle(X, theta_eta, sample_weight=weight).groups[0][0].shape[0] == keep.sum()


# -- early stopping ---------------------------------------------------------------------------------
def test_early_stopping_waits_for_feasibility_then_a_plateau():
    stop = EarlyStopping(tol=1e-4, n_iter_no_change=5)
    stop.update(0, (0.3, 0.1), (0.3, 0.1))  # infeasible, with the better objective
    stop.update(1, (0.0, 0.5), (0.0, 0.5))
    assert stop.best_iterate == 1  # a feasible iterate beats an infeasible one
    stop = EarlyStopping(tol=1e-3, n_iter_no_change=3)
    infeasible = (0.2, 0.1)
    # infeasible forever: never stops, however flat
    assert not any(stop.update(t, infeasible, infeasible) for t in range(10))
    stop = EarlyStopping(tol=1e-3, n_iter_no_change=3)
    objectives = [0.5, 0.4, 0.3, 0.2995, 0.2992, 0.299]  # improvements below tol from t = 3 on
    flags = [stop.update(t, (0.0, v), (0.0, v + 1)) for t, v in enumerate(objectives)]
    assert flags == [False, False, False, False, False, True]
    assert stop.best_iterate == 5 and stop.best == (0.0, 0.299)
    # a mixture that improves counts as progress
    stop = EarlyStopping(tol=1e-3, n_iter_no_change=2)
    flags = [stop.update(t, (0.0, 0.5), (0.0, 0.5 - 0.01 * t)) for t in range(5)]
    assert not any(flags) and stop.best_iterate == 0
    never = EarlyStopping(tol=None, n_iter_no_change=1)
    assert not any(never.update(t, (0.0, 1.0), (0.0, 1.0)) for t in range(5))


def test_window_mean_and_candidate_indices():
    w = WindowMean(3)
    rng = np.random.default_rng(0)
    xs = rng.random((6, 2))
    for t in range(6):
        np.testing.assert_allclose(w.push(xs[t]), xs[max(0, t - 2):t + 1].mean(0))
    idx = candidate_indices(200, 10)
    assert idx[0] == 0 and idx[-1] == 199 and len(idx) == 10
    assert np.ptp(np.diff(idx)) <= 1  # evenly spaced
    np.testing.assert_array_equal(candidate_indices(5, 100), np.arange(5))


def test_snapshots_bound_memory_and_keep_the_best_in_order():
    snaps = Snapshots(max_iter=5000, n_candidates=10)
    assert snaps.stride == 50
    for t in range(3000):  # an early stop at 3000
        snaps.offer(t, np.array([float(t)]), np.array([1.0, t]))
        if t == 1234:
            snaps.mark_best(t, np.array([float(t)]), np.array([1.0, t]))
    assert len(snaps.kept) == 60
    params, mus = snaps.candidates(10, (np.array([-1.0]), np.array([1.0, -1.0])))
    played = params[:-1, 0]
    assert 1234.0 in played and played[0] == 0.0 and played[-1] == 2950.0
    assert np.all(np.diff(played) > 0) and len(params) <= 12
    assert params[-1, 0] == -1.0 and mus.shape == (len(params), 2)
    np.testing.assert_array_equal(mus[:-1, 1], played)
    # short runs keep every iterate
    assert Snapshots(max_iter=500, n_candidates=100).stride == 1


@pytest.mark.parametrize("make", [
    lambda g: f_measure(2.0, g), g_mean, h_mean, q_mean, kld, lambda g: kld(g, reference="slice"),
    precision, lambda g: g_mean_at_least(0.5, g),
])
def test_metrics_read_a_one_shot_group_once(make):
    # a generator read for each rate was empty from the second: g_mean(tpr[race], tnr)
    assert str(make((c for c in ["race"]))) == str(make(["race"]))


def test_g_mean_at_least_reads_one_shot_filter_values_once():
    assert str(g_mean_at_least(0.5, race=(v for v in "ab"))) == str(g_mean_at_least(0.5, race=["a", "b"]))


# -- pr_auc levels, user-function gradients at the box, parity labels, beta --------------------
def test_pr_auc_levels_are_checked_and_sorted_where_the_metric_is_built():
    from skrate.generalized import PRAUC

    assert pr_auc(levels=[0.9, 0.1, 0.5]).levels == (0.1, 0.5, 0.9)
    assert pr_auc(levels=iter([0.9, 0.1, 0.5])) == pr_auc(levels=[0.1, 0.5, 0.9])
    assert PRAUC((0.9, 0.1, 0.5)).levels == (0.1, 0.5, 0.9)
    assert str(pr_auc(levels=(0.75, 0.25))) == "1 - pr_auc(levels=[0.25, 0.75])"
    for bad, why in [([0.5, 0.5], "distinct"), ([0.0, 0.5], "between 0 and 1"), ([0.5, 1.0], "between 0 and 1"),
                     ([float("nan")], "between 0 and 1"), ([], "at least one"), (0.5, "sequence of numbers"),
                     (["a"], "sequence of numbers")]:
        with pytest.raises(ValueError, match=rf"levels of pr_auc.*{why}"):
            pr_auc(levels=bad)


def test_pr_auc_deploys_the_middle_recall_level_whatever_the_order_given():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + X[:, 1] + rng.normal(size=300) > 1.0).astype(int)
    fit = lambda levels: MetricOptimizer(pr_auc(levels=levels), max_iter=60, random_state=0).fit(X, y)
    given, ordered = fit([0.9, 0.1, 0.5]), fit([0.1, 0.5, 0.9])
    # the Riemann sum is the same mean of precisions, the deployed threshold that of recall 0.5
    np.testing.assert_array_equal(given.candidates_, ordered.candidates_)
    assert given.metric_values(X, y) == ordered.metric_values(X, y)
    assert given.constraints_[0] == "recall >= 0.1 (pr_auc level 1 of 3)"
    np.testing.assert_array_equal(given.predict_proba(X), ordered.predict_proba(X))


def _in_box_only(r):
    # undefined outside the box, as a user function of rates may be
    if np.any(r < 0) or np.any(r > 1):
        raise AssertionError(f"evaluated outside [0, 1]: {r}")
    return r[0] ** 1.5 + r[0] + (1 - r[1]) ** 1.5 - 2 * r[1] + r[0] * r[1] + r[2] ** 2


def test_user_function_differences_stay_in_the_box_and_are_one_sided_at_its_faces():
    atom = RateFunction(_in_box_only, (tpr(), tnr(), fpr()))
    exact = lambda r: np.array([1.5 * r[0] ** 0.5 + 1 + r[1], -1.5 * (1 - r[1]) ** 0.5 - 2 + r[0], 2 * r[2]])
    for r in ([0.0, 1.0, 0.4], [1.0, 0.0, 0.0], [0.3, 0.6, 1.0]):
        r = np.array(r)
        np.testing.assert_allclose(atom.gradient(r), exact(r), atol=2e-3)  # one-sided: O(sqrt(h)) here
    # a function that is NaN outside the box: the slack answer is the grid's best, not its start
    f = lambda r: 1 - np.sqrt(r[0] * r[1])
    user = rate_function(f, ["fnr", "fpr"]).terms[0][1]
    grid = np.linspace(0, 1, 401)
    A, B = (v.ravel() for v in np.meshgrid(grid, grid))
    rng = np.random.default_rng(0)
    for _ in range(25):
        lam, w = rng.normal(0, 2, 2), float(rng.choice([0.1, 1.0, 5.0]))
        with np.errstate(invalid="raise"):
            xi = best_response(user, lam, w, np.full(2, np.nan), start=rng.random(2))
        best = np.min(w * f(np.array([A, B])) - lam[0] * A - lam[1] * B)
        assert w * user.value(xi) - lam @ xi <= best + 1e-4


def test_f_measure_parity_labels_its_slices_as_every_slice_reads():
    listed = f_measure_parity({"g": ["b", "a"]}, {"g": "c"}, 0.1)
    assert listed.label == "f_measure[g=a|b] >= f_measure[g=c] - 0.1"
    once = f_measure_parity({"g": iter(["a", "b"])}, {"g": (v for v in ["c"])}, 0.1)
    assert once.label == listed.label and once.metric == listed.metric  # each read once, both used
    quoted = f_measure_parity({"home town": ["x/y", "z"]}, {"sex": "F"}, 0.1)
    assert quoted.label == 'f_measure["home town"="x/y"|z] >= f_measure[sex=F] - 0.1'


@pytest.mark.parametrize("beta", [float("inf"), float("nan"), 1e200, 0.0, -1.0])
def test_f_measure_refuses_a_beta_that_is_not_a_finite_positive_number(beta):
    with pytest.raises(ValueError, match=r"beta of the F-measure must be a finite number > 0, at most 1e\+150"):
        f_measure(beta=beta)
    with pytest.raises(ValueError, match="beta of the F-measure"):
        f_measure_parity({"g": "a"}, {"g": "b"}, 0.1, beta=beta)


def test_f_measure_with_the_largest_beta_is_the_recall_and_its_gradient_finite():
    atom = f_measure(beta=1e150).terms[0][1]
    r = np.array([0.3, 0.5, 0.4])  # tp, ppr, pi
    assert float(atom.value(r)) == pytest.approx(1 - 0.3 / 0.4)
    np.testing.assert_allclose(atom.gradient(r), [-1 / 0.4, 0.0, 0.3 / 0.4 ** 2], atol=1e-12)


def test_the_numeric_slack_answer_is_not_left_where_the_function_is_linear_along_a_direction():
    # log-sum-exp is linear along (1, 1): L-BFGS-B stalled there, 0.04 above the optimum
    lse = rate_function(lambda r: np.log(np.exp(3 * r[0]) + np.exp(3 * r[1])) / 3, ["fnr", "fpr"]).terms[0][1]
    grid = np.linspace(0, 1, 401)
    A, B = np.meshgrid(grid, grid)
    rng = np.random.default_rng(1)
    for _ in range(40):
        lam, w = rng.normal(0, 2, 2), float(rng.choice([0.1, 1.0, 5.0]))
        xi = best_response(lse, lam, w, np.full(2, np.nan), start=rng.random(2))
        on_grid = w * np.log(np.exp(3 * A) + np.exp(3 * B)) / 3 - lam[0] * A - lam[1] * B
        assert w * lse.value(xi) - lam @ xi <= on_grid.min() + 1e-6
    lam, w = np.array([3.58436109, 1.19429131]), 5.0  # the stalled case, from its start
    xi = best_response(lse, lam, w, np.full(2, np.nan), start=np.array([0.27410529, 0.44630484]))
    np.testing.assert_allclose(xi, [0.3096, 0.0], atol=1e-3)


def _fit_data(n=400, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=n) > 0.3).astype(int)
    return X, y


def test_a_wrong_curvature_declaration_is_refused():
    # declared convex, -(fnr^2 + fpr^2) fitted with no word, voiding the solvers' guarantees
    with pytest.raises(ValueError, match=r"declared convexity='convex' but is not"):
        rate_function(lambda r: -(r[0] ** 2 + r[1] ** 2), ["fnr", "fpr"], name="bad")
    with pytest.raises(ValueError, match=r"declared convexity='concave' but is not"):
        rate_function(lambda r: r[0] ** 2, ["fnr"], convexity="concave")
    # true declarations pass, and a function with a kink or infinite somewhere is not refused
    rate_function(lambda r: max(r[0], r[1]), ["fnr", "fpr"])
    rate_function(lambda r: -np.log(r[0]), ["tpr"])
    rate_function(lambda r: np.sqrt(r[0]), ["tpr"], convexity="concave")
    rate_function(lambda r: -(r[0] ** 2), ["fnr"], convexity="nonconvex")
    # a function outside its domain on part of the box is built, without a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rate_function(lambda r: -math.log(r[0] - 0.2), ["tpr"])
        rate_function(lambda r: np.inf if r[0] < 0.2 else r[0] ** 2, ["tpr"])


def test_a_user_function_declared_rough_avoids_frank_wolfe():
    # max(fnr, fpr) written by hand got frank_wolfe from "auto", which stalled above the optimum
    X, y = _fit_data()
    rough = rate_function(lambda r: max(r[0], r[1]), ["fnr", "fpr"], smooth=False)
    assert MetricOptimizer(rough, max_iter=50, random_state=0).fit(X, y).solver_ != "frank_wolfe"
    smooth = rate_function(lambda r: r[0] ** 2 + r[1] ** 2, ["fnr", "fpr"])
    assert MetricOptimizer(smooth, max_iter=50, random_state=0).fit(X, y).solver_ == "frank_wolfe"
    with pytest.raises(ValueError, match="needs metrics with a continuous gradient"):
        MetricOptimizer(rough, solver="frank_wolfe").fit(X, y)
    # expanded over a group, each copy stays rough
    g = np.where(np.arange(len(y)) % 2 == 0, "a", "b")
    grouped = rate_function(lambda r: max(r[0], r[1]), ["fnr[group]", "fpr[group]"], smooth=False)
    with pytest.raises(ValueError, match="needs metrics with a continuous gradient"):
        MetricOptimizer("error", [grouped <= 0.6], solver="frank_wolfe").fit(X, y, groups=g)


@pytest.mark.parametrize("cons", [[f_measure_parity({"group": "a"}, {"group": "b"}, 0.1)],
                                  [kld(group="group", reference="slice") <= 0.1, g_mean_at_least(0.3, group="group")]],
                         ids=["ratio", "convex"])
def test_metric_constraints_undefined_on_new_rows_are_nan_in_metric_values(cons):
    # an F-measure or a slice's KL-divergence without positives in a slice raised in metric_values
    X, y = _fit_data()
    g = np.where(np.arange(len(y)) % 3 == 0, "a", "b")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = MetricOptimizer("error", cons, max_iter=30, random_state=0).fit(X, y, groups=g)
    y_new = y.copy()
    y_new[g == "a"] = 0
    with pytest.warns(UserWarning, match=rf"{len(cons)} constraint\(s\) are undefined on these rows"):
        values = clf.metric_values(X, y_new, groups=g)
    undefined = [k for k, v in values.items() if np.isnan(v)]
    assert len(undefined) == len(cons) and all("group=a" in k for k in undefined)
    with pytest.raises(ValueError, match=r"cannot be measured on this data: The metric .* is undefined on the slice"):
        MetricOptimizer("error", cons[:1]).fit(X, y_new, groups=g)


def test_metric_arithmetic_and_bounds_refuse_what_no_model_meets():
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"factor of 1 - g_mean\(tpr, tnr\) must be a finite number"):
            g_mean() * bad
        with pytest.raises(ValueError, match=r"constant added to .* must be a finite number"):
            g_mean() + bad
    with pytest.raises(ValueError, match=r"epsilon of kld_fairness must be >= 0"):
        kld_fairness("group", -0.1)
    with pytest.raises(ValueError, match=r"value of g_mean_at_least must be at most 1"):
        g_mean_at_least(1.5)
    with pytest.raises(ValueError, match=r"denominator of ratio\(\) is the constant 0"):
        ratio("fpr", "0")
    with pytest.raises(TypeError, match=r"epsilon of kld_fairness must be a number, got '0.1'"):
        kld_fairness("group", "0.1")
    with pytest.raises(TypeError, match=r"epsilon of kld_fairness must be a number, got None"):
        kld_fairness("group", None)
    assert str(f_measure_parity({"g": "a"}, {"g": "b"}, -0.1)) == "f_measure[g=a] >= f_measure[g=b] + 0.1"
    # a division by a number is the product by its inverse, as for rates (it was a TypeError)
    assert (g_mean() + f_measure()) / 4 == 0.25 * (g_mean() + f_measure())
    with pytest.raises(ValueError, match=r"Division by zero: cannot divide 1 - g_mean\(tpr, tnr\) by 0.0"):
        g_mean() / 0
    with pytest.raises(ValueError, match=r"divisor of 1 - g_mean\(tpr, tnr\) must be a finite number"):
        g_mean() / float("nan")
    with pytest.raises(TypeError):
        g_mean() / g_mean()


def test_a_bound_on_ratios_over_one_denominator_compiles_linear():
    """``f_measure(g="a") <= 0.4`` (``1 - F <= 0.4``) is ``0.6 (pi + ppr) - 2 tp <= 0`` on slice a:
    linear, of the sign of ``0.6 - F`` wherever ``pi + ppr > 0``, and reported as stated."""
    y, g, yhat, data = _data()
    a = g == "a"
    cons = [f_measure(g="a") <= 0.4, precision() >= 0.5, ratio("tp_proportion - 0.1", "ppr") <= 0.4,
            *predictive_parity("g", 0.05)]
    program = compile_program("error", cons, data)
    assert [c.kind for c in program.constraints] == ["linear"] * 3 + ["ratio"] * 4
    for p in (yhat, 0.5 * yhat, 1.0 - yhat):
        r = program.rates(p)
        f1, prec = 2 * (p[a] @ y[a]) / (p[a].sum() + y[a].sum()), (p @ y) / p.sum()
        stated = [0.6 - f1, 0.5 - prec, (p @ y / y.size - 0.1) / p.mean() - 0.4]
        np.testing.assert_allclose([c.reported(r) for c in program.constraints[:3]], stated)
        # the linear form the solvers read: the stated value times the denominator
        np.testing.assert_allclose(program.values(r)[1][:3],
                                   np.multiply(stated, [(p[a].sum() + y[a].sum()) / a.sum(), p.mean(), p.mean()]))
    # no positive predicted: the linear form of the precision floor is met, the floor undefined
    r = program.rates(np.zeros(y.size))
    assert program.values(r)[1][1] == 0.0 and np.isnan(program.constraints[1].reported(r))
    assert np.isinf(program.flag_undefined(r, program.values(r)[1])[1])
    # why: a denominator each undefined ratio has at 0 (predictive parity's precisions too); a
    # negative numerator over 0 is below every bound, as the core reads it
    assert [str(c.zero_denominator(r)) for c in program.constraints if np.isnan(c.reported(r))] == \
        ["ppr", "ppr[g=a]", "ppr[g=b]", "ppr[g=a]", "ppr[g=b]"]
    assert program.constraints[2].reported(r) == -np.inf and program.constraints[0].zero_denominator(r) is None
    # the solvers' rates are not rounded: a 0 / 0 within rounding of zero is still undefined
    noisy = r.copy()
    floor = program.constraints[1]
    noisy[floor.denominator[1]], noisy[floor.atoms[0][2]] = 1e-17, -1e-17
    assert program.values(noisy)[1][1] != 0 and not floor.defined(noisy)
    # the F-measure is still checked on the data as stated
    no_positives = RateData(np.where(a, 0, y), np.ones(y.size), data.groups)
    with pytest.raises(ValueError, match=r"f_measure.*g=a.*no positive examples"):
        compile_program("error", [f_measure(g="a") <= 0.4], no_positives)


def test_ratio_takes_a_denominator_of_one_sign_only():
    # bounds on a ratio are multiplied out by its denominator: one that can take both signs
    # would flip them, one never positive is negated on both sides
    with pytest.raises(TypeError, match=r"Cannot divide by ppr - 0.1: it can take both signs"):
        ratio("tp_proportion", "ppr - 0.1")
    assert ratio("tpr", "2").kind == "linear" and str(ratio("tpr", "2")) == "0.5 * tpr"  # a constant denominator
    (coef, atom), = ratio("tp_proportion", "-ppr").terms
    assert coef == 1.0 and (atom.numerator, atom.denominator) == (-parse_expression("tp_proportion"), ppr())


def test_reported_ratio_constraints_read_as_the_core_reports_them_repeated_or_over_no_denominator():
    from skrate.generalized._program import program_values
    from skrate.problem import violation_rows
    from skrate.rates import as_constraints

    y, g, yhat, data = _data()
    baseline = (np.arange(len(y)) % 3 == 0).astype(int)
    data = RateData(y, np.ones(len(y)), data.groups, baseline)
    never_lose = np.where(baseline == y, y, yhat)  # wins, and no losses: the win-loss ratio is infinite
    core = ["precision[g=a] >= 0.6", "win_loss_ratio >= 2", "precision[g=a] >= 0.6"]
    stated = [as_metric("win_loss_ratio") <= -2, -as_metric("precision[g=a]") <= -0.6]
    for decisions in (yhat, 0 * yhat, never_lose):
        values = list(program_values("error", core + stated, data, decisions).values())[1:]
        expected = [row["violation"] for row in violation_rows(as_constraints(core), data, decisions)]
        # the metric forms state the same bounds as the second and first core constraint
        np.testing.assert_allclose(values, expected + expected[1::-1], rtol=1e-12)
    assert values[1] == values[3] == -np.inf  # met, as its linear form says


def test_parity_metric_constraints_need_what_they_compare():
    for build in (lambda: predictive_parity(None, 0.05), lambda: kld_fairness([], 0.1)):
        with pytest.raises(ValueError, match="A parity goal needs the group column"):
            build()
    for protected in ("sex=F", None, [("sex", "F")]):
        with pytest.raises(TypeError, match=r"The protected slice of f_measure_parity is a dict of group column "
                                            r"filters, such as \{'sex': 'Female'\} \(\{\} for every row\), got"):
            f_measure_parity(protected, {"sex": "M"}, 0.1)
    with pytest.raises(ValueError, match=r"compares two slices, but both are \[sex=F\]"):
        f_measure_parity({"sex": "F"}, {"sex": "F"}, 0.1)
    assert str(f_measure_parity({"sex": "F"}, {}, 0.1)) == "f_measure[sex=F] >= f_measure[] - 0.1"  # with everyone
    assert str(kld_fairness(["g", "h"], 0.1).bind({"g": "a", "h": "b"})) == "kld[g=a, h=b] <= 0.1"


def test_a_chained_metric_comparison_is_refused_not_cut_to_its_last_part():
    # 0.5 <= precision() <= 0.9 kept precision <= 0.9 alone, and training dropped the other bound
    with pytest.raises(TypeError, match=r"chained comparison .* two constraints"):
        0.5 <= precision() <= 0.9  # noqa: B015 (the chain is what is tested)
    with pytest.raises(TypeError, match=r"\(1 - g_mean\(tpr, tnr\) >= 0.3\) has no truth value"):
        0.3 <= g_mean() <= 0.5  # noqa: B015
    first, second = 0.5 <= precision(), precision() <= 0.9  # as a list, each is kept
    assert [str(first), str(second)] == ["precision >= 0.5", "precision <= 0.9"]


@pytest.mark.parametrize("surrogate", ["hinge", "logistic"])
@pytest.mark.parametrize("batch_size", [None, 40])
def test_surrogate_rates_bound_the_batch_rates_from_the_side_they_are_weighed(surrogate, batch_size):
    # a rate penalised (direction >= 0) is bounded from above, one rewarded from below, on the
    # full sample and on a minibatch scaled up to it, so direction . surrogate >= direction . rates
    from skrate.generalized._theta_player import SurrogateTheta
    from skrate.models import LinearModel

    rng = np.random.default_rng(0)
    n = 320
    X = rng.normal(size=(n, 2))
    y, g = (X[:, 0] + rng.normal(size=n) > 0).astype(int), np.where(rng.random(n) < 0.5, "a", "b")
    data = RateData(y, np.ones(n), GroupTable.from_input(g, None, n))
    program = compile_program(g_mean(), ["tpr[group] >= tpr - 0.05", "fpr <= 0.3"], data)
    theta = SurrogateTheta(LinearModel(2), X, program.A, surrogate=surrogate, learning_rate=0.1, alpha=0.0,
                           batch_size=batch_size, rng=np.random.default_rng(1), init_params=np.array([0.8, -0.3, 0.1]))
    K = program.A.shape[0]
    direction = np.where(np.arange(K) % 2 == 0, 1.0, -1.0)
    for _ in range(3):
        rates = theta.batch()
        upper, lower = theta.surrogate_rates(np.ones(K)), theta.surrogate_rates(-np.ones(K))
        assert np.all(upper >= rates - 1e-12) and np.all(lower <= rates + 1e-12)
        np.testing.assert_array_equal(theta.surrogate_rates(direction), np.where(direction >= 0, upper, lower))
        assert direction @ theta.surrogate_rates(direction) >= direction @ rates - 1e-12


def test_mixed_rates_of_models_without_errors_are_exactly_zero():
    # fnr + fpr = 1 - tpr + fpr sums a constant and the rows' terms; for models without errors a
    # rounding residue of the sum (a few 1e-16, as summing the rows in another order leaves) is
    # reported as the 0 it is, while rates that are not zero stay as they are
    for seed in range(20):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(5, 60))
        y, w = rng.integers(0, 2, n), rng.uniform(0.1, 3.0, n)
        program = compile_program("fnr + fpr", [], RateData(y, w, GroupTable.from_input(None, None, n)))
        exact = program.rates(np.column_stack([y, y]).astype(float))
        np.testing.assert_allclose(exact, 0.0, rtol=0, atol=1e-15)
        rounded = exact + np.array([[2.2e-16, -4.4e-16]])
        np.testing.assert_array_equal(program.mixed_rates(rounded, np.array([0.3, 0.7])), 0.0)
        wrong = program.rates(np.column_stack([y, 1 - y]).astype(float))
        np.testing.assert_allclose(program.mixed_rates(wrong, np.array([0.5, 0.5])), [1.0], rtol=1e-12)


# -- compiled programs: atoms compiled together, alike constraints evaluated together -------------
def _mixed_program(weighted: bool):
    """Constraints over a column of four values (linear, ratio, F-measure and ratio-bound
    families), one that stacks with nothing (a G-mean floor) and an objective of many atoms."""
    from skrate.problem._groups import GroupTable as Table

    rng = np.random.default_rng(3)
    n = 400
    y = rng.integers(0, 2, n)
    g = rng.choice(["a", "b", "c", "d"], n)
    w = rng.uniform(0.5, 2.0, n) if weighted else np.ones(n)
    data = RateData(y, w, Table.from_input({"g": g}, None, n))
    spec = ["tpr[g] >= tpr - 0.05", "precision[g] >= 0.2", *predictive_parity("g", 0.05),
            g_mean_at_least(0.1), f_measure_parity({"g": "a"}, {"g": "b"}, 0.02),
            f_measure_parity({"g": "c"}, {"g": "d"}, 0.02)]
    return compile_program(f_measure() + kld("g"), spec, data), data, rng


@pytest.mark.parametrize("weighted", [False, True])
def test_atoms_compiled_together_read_the_rates_each_gives_alone(weighted, monkeypatch):
    import skrate.generalized._program as P
    from skrate.problem import compile_factored

    calls = []
    monkeypatch.setattr(P, "compile_factored", lambda e, d: calls.append(len(e)) or compile_factored(e, d))
    program, data, _ = _mixed_program(weighted)
    assert len(calls) <= 2  # all atoms at once (and the rows the solvers read, when they differ)
    for s in [program.objective, *program.constraints]:
        for _, atom, idx in s.atoms:
            _, _, alone = compile_factored(list(atom.exprs), data)
            np.testing.assert_allclose(program.b[idx], alone, rtol=0, atol=1e-15)
            if not weighted:  # counts: every partial sum exact
                np.testing.assert_array_equal(program.b[idx], alone)
    # every row's expression, the ratio bounds' denominators among them
    rows = {int(i): e for s in [program.objective, *program.constraints] for _, atom, idx in s.atoms
            for i, e in zip(idx, atom.exprs)}
    rows.update({s.denominator[1]: s.denominator[0] for s in program.constraints if s.denominator})
    assert sorted(rows) == list(range(program.b.size))
    mix, basis, _ = compile_factored([rows[i] for i in range(program.b.size)], data)
    np.testing.assert_allclose(program.A.toarray(), (mix @ basis).toarray(), rtol=0, atol=1e-15)


def test_an_unmeasurable_atom_compiled_together_is_still_named_or_left_out():
    y, g, yhat, data = _data()
    with pytest.raises(ValueError, match="The constraint 'tpr\\[g=zz\\] >= 0.5' cannot be measured"):
        compile_program("error", ["tpr >= 0.1", "tpr[g=zz] >= 0.5"], data)
    left_out = []
    program = compile_program("error", ["tpr >= 0.1", "tpr[g=zz] >= 0.5"], data, undefined=left_out)
    assert left_out == ["tpr[g=zz] >= 0.5"] and [c.label for c in program.constraints] == ["tpr >= 0.1"]


def test_alike_constraints_evaluated_together_match_each_alone(monkeypatch):
    import skrate.generalized._program as P

    program, data, rng = _mixed_program(weighted=True)
    assert len(program._alike) < program.n_constraints  # some stacked
    assert any(not group.stacked for group in program._alike)  # and the G-mean floor alone
    monkeypatch.setattr(P, "_BLOCK", 3 * program.n_constraints)  # several blocks of columns
    n = data.n
    group_a = np.asarray(data.groups.mask("g", ("a",)))
    decisions = np.column_stack([rng.random(n) < 0.5, np.zeros(n), np.ones(n), (rng.random(n) < 0.3) & ~group_a,
                                 rng.random(n) * 1e-7, rng.random(n) < 0.8]).astype(float)
    r = program.rates(decisions)
    obj, cons = program.values(r)
    np.testing.assert_array_equal(obj, program.objective.value(r))
    np.testing.assert_array_equal(cons, np.array([c.value(r) for c in program.constraints]))
    for j in range(r.shape[1]):  # one rate vector
        np.testing.assert_array_equal(program.values(r[:, j])[1], cons[:, j])
    # as judged one constraint at a time: exact values of those with ratio atoms, inf where undefined
    with np.errstate(invalid="ignore"):
        exact = np.array([c.exact_value(r) if c.floors_denominators else cons[i]
                          for i, c in enumerate(program.constraints)])
    expected = np.where(np.array([~c.defined(r) for c in program.constraints]), np.inf, exact)
    judged = program.flag_undefined(r, cons)
    assert np.isinf(judged).any() and (np.isfinite(judged) & (judged != cons)).any()
    np.testing.assert_array_equal(judged, expected)
    np.testing.assert_array_equal(program.largest_violation(r), expected.max(axis=0))
