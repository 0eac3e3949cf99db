"""A constraint times a positive constant is the same constraint: the solvers read each one
divided by its largest coefficient, and reports keep the units it was written in."""

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from skrate import ConstrainedClassifier, MetricOptimizer
from skrate.datasets import load_compas
from skrate.exceptions import InfeasibleConstraintsWarning
from skrate.problem import GroupTable, RateData, compile_problem
from skrate.rates import as_constraints, as_expression

from _data import two_group_data


# 0.9 * 2**10 and 0.9 * 2**-10 are 0.9's double times a power of two: exactly the same rows
PLAIN, TIMES_1024, OVER_1024 = ("tpr[group] >= 0.9 * tpr", "1024 * tpr[group] >= 921.6 * tpr",
                                "0.0009765625 * tpr[group] >= 0.00087890625 * tpr")


def test_compiled_rows_are_the_constraints_over_their_largest_coefficient():
    X, y, g = two_group_data(300)
    data = RateData(y, np.ones(len(y)), GroupTable.from_input(g, None, len(y)))
    cons = as_constraints(["100 * ppr[group=a] <= 30", "tpr >= 0.8"])
    problem = compile_problem(as_expression("error_rate"), cons, data)
    np.testing.assert_array_equal(problem.scale, [100.0, 1.0])
    p = np.random.default_rng(0).uniform(size=len(y))
    rows = problem.values(p)[1:]
    ppr_a = p[g == "a"].mean()
    np.testing.assert_allclose(rows, [(100 * ppr_a - 30) / 100, 0.8 - p[y == 1].mean()], rtol=1e-12)


@pytest.mark.parametrize("params", [
    {},
    {"solver": "proxy_lagrangian_ext"},
    {"margin": "auto"},
    {"solver": "oracle_proxy_lagrangian", "estimator": LogisticRegression(), "max_iter": 20},
])
def test_a_constraint_scaled_by_a_power_of_two_fits_the_same_model(params):
    X, y, g = two_group_data(2000)
    fits = [ConstrainedClassifier(spec, random_state=0, **params).fit(X, y, groups=g)
            for spec in (PLAIN, TIMES_1024, OVER_1024)]
    for fit, factor in zip(fits[1:], (1024.0, 2.0**-10)):
        np.testing.assert_array_equal(fit.weights_, fits[0].weights_)
        np.testing.assert_array_equal(fit.predict_proba(X), fits[0].predict_proba(X))
        # what the user reads stays in the units the constraint was written in
        np.testing.assert_array_equal(fit.train_constraints_, factor * fits[0].train_constraints_)
        np.testing.assert_array_equal(fit.margins_, factor * fits[0].margins_)
        report, plain = (f.constraint_report(X, y, groups=g) for f in (fit, fits[0]))
        np.testing.assert_allclose(report["violation"].iloc[:-1], factor * plain["violation"].iloc[:-1],
                                   rtol=1e-12, atol=1e-15 * factor)
    assert fits[0].margins_.any() == (params.get("margin") == "auto")


@pytest.mark.parametrize("estimator", ["ConstrainedClassifier", "MetricOptimizer"])
@pytest.mark.parametrize("factor", [1e-4, 250.0])
def test_a_constraint_in_other_units_is_neither_ignored_nor_overweighted(estimator, factor):
    # read as written, COMPAS's race parity times 1e-4 went unseen by the multipliers, and the
    # mixtures of the candidates that met it within the LP's tolerance were the all-negative
    # start's: error at the base rate, reported feasible; times 250 it cost 0.01 of accuracy
    data = load_compas()
    X, y, g = data.data, data.target, data.groups
    make = {"ConstrainedClassifier": lambda spec: ConstrainedClassifier(spec, random_state=0),
            "MetricOptimizer": lambda spec: MetricOptimizer(metric="f1", constraints=spec, random_state=0)}[estimator]
    scaled = f"{factor!r} * tpr[race] >= {0.98 * factor!r} * tpr"
    plain, other = (make(spec).fit(X, y, groups=g) for spec in ("tpr[race] >= 0.98 * tpr", scaled))
    assert other.feasible_
    assert abs(other.score(X, y) - plain.score(X, y)) < 0.002
    assert other.score(X, y) > max(y.mean(), 1 - y.mean()) + 0.05  # not the constant classifier


def test_metric_optimizer_reads_a_scaled_rate_constraint_alike_and_reports_it_as_written():
    data = load_compas()  # where the parity binds: read as written, the scaled one fitted another model
    X, y, g = data.data, data.target, data.groups
    fits = [MetricOptimizer(metric="f1", constraints=spec, random_state=0).fit(X, y, groups=g)
            for spec in ("tpr[race] >= 0.98 * tpr", "1024 * tpr[race] >= 1003.52 * tpr")]
    np.testing.assert_array_equal(fits[1].predict_proba(X), fits[0].predict_proba(X))
    values = [f.metric_values(X, y, groups=g) for f in fits]
    for (label, plain), scaled in zip(values[0].items(), values[1].values()):
        np.testing.assert_allclose(scaled, (1 if label == "objective" else 1024) * plain, rtol=1e-12)


@pytest.mark.parametrize("estimator", ["ConstrainedClassifier", "MetricOptimizer"])
def test_infeasibility_is_told_in_the_units_of_the_constraints(estimator):
    X, y, g = two_group_data(500)
    spec = ["100 * ppr <= 10", "100 * ppr >= 20"]  # at best 5 apart, in these units
    make = {"ConstrainedClassifier": lambda: ConstrainedClassifier(spec, random_state=0),
            "MetricOptimizer": lambda: MetricOptimizer(metric="error", constraints=spec, random_state=0)}[estimator]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make().fit(X, y, groups=g)
    messages = [str(w.message) for w in caught if issubclass(w.category, InfeasibleConstraintsWarning)]
    assert messages and "least possible largest violation is 5," in messages[0]
