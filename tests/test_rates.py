"""The declarative spec layer: algebra, equality, the parser and goal helpers."""

import pickle
import re
import warnings

import numpy as np
import pytest
from sklearn.base import clone

from skrate import ConstrainedClassifier
from skrate.exceptions import InfeasibleConstraintsWarning
from skrate.rates import (
    Constraint, Expression, Ratio, SpecParseError, accurate_coverage, accuracy, as_constraints, churn,
    equal_accuracy, equal_odds, equal_opportunity, error_rate, f1, fpr, label_rate, losses, minimum_recall,
    no_lost_benefits, not_worse_off, npr, parse_constraint, parse_expression, ppr, precision,
    statistical_parity, tpr, win_loss_ratio, wins,
)
from skrate.problem import GroupTable, RateData, constraint_rows
from skrate.problem._compile import expand_constraints
from skrate.rates import minimum_accuracy, minimum_coverage

SPECS = [
    "tpr[race=Black] >= 0.95 * tpr",
    "ppr[sex] - ppr <= 0.05",
    "ppr - ppr[sex] <= 0.05",
    "tpr[race=African-American|Caucasian, sex=Male] <= tpr + 0.05",
    "precision[race=Black] >= 0.8",
    "0.5 * precision >= 0.4",
    "win_loss_ratio >= 2",
    "churn[label=1] <= 0.1",
    "-tpr + 2 * fpr[sex=F] - 1 <= -0.5",
    'accuracy[city="New York"] >= 0.7',
    "error_rate[race, sex] <= error_rate + 0.02",
    "1e-3 <= ppr[baseline=1]",
    "tp_proportion / (2 * ppr) >= 0.3",
    "tpr / (1 - ppr) >= 0.5",
]


@pytest.mark.parametrize("text", SPECS)
def test_parse_repr_round_trip(text):
    con = parse_constraint(text)
    again = parse_constraint(str(con))
    assert again == con
    assert hash(again) == hash(con)
    assert eval(repr(con), {"parse_constraint": parse_constraint}) == con
    # every side too: Expression('tpr') built a broken object; the repr calls the parser
    for side in (con.lhs, con.rhs):
        assert eval(repr(side), {"parse_expression": parse_expression}) == side


def test_objects_and_strings_agree():
    assert (tpr(group="race") >= 0.95 * tpr()) == parse_constraint("tpr[race] >= 0.95 * tpr")
    assert (tpr(race="Black") >= 0.95 * tpr()) == parse_constraint("tpr[race=Black] >= 0.95 * tpr")
    assert (ppr(sex=["F", "M"]) <= 0.5) == parse_constraint("ppr[sex=M|F] <= 0.5")
    assert (precision(race="B") >= 0.8) == parse_constraint("precision[race=B] >= 0.8")
    assert parse_expression("error") == error_rate()
    assert parse_expression("2 * (tpr - fpr) / 4") == 0.5 * tpr() - 0.5 * fpr()


@pytest.mark.parametrize("text, built", [
    ('tpr(group="race") >= 0.95 * tpr()', tpr(group="race") >= 0.95 * tpr()),
    ("tpr('race') >= 0.95 * tpr", tpr("race") >= 0.95 * tpr()),
    ('fpr(race=["a b", "c)"], sex="F") <= fpr() + 0.05', fpr(race=["a b", "c)"], sex="F") <= fpr() + 0.05),
    ('precision(label=1, group=("race", "sex")) >= 0.5', precision(label=1, group=("race", "sex")) >= 0.5),
    ('ppr(where={"marital-status": "Married"}) <= ppr[sex=F] + 0.1',
     ppr(where={"marital-status": "Married"}) <= ppr(sex="F") + 0.1),
    ('0.5 * tpr( group = "race" ,\n ) >= error()', 0.5 * tpr(group="race") >= error_rate()),
])
def test_strings_take_the_python_calls(text, built):
    # "the same as a string": a goal written in Python reads the same inside quotes
    con = parse_constraint(text)
    assert con == built
    assert parse_constraint(str(con)) == con


# the Python call form inside a string
CALL_ERRORS = [
    ("tpr(group=race) >= 0.9", 10, "a literal value"),
    ('tpr(group="race" >= 0.9', 17, "')' to close the arguments before the comparison"),
    ('tpr(group="race"', 16, "')' to close"),
    ("tpr(group='race) >= 0", 21, "a closing quote"),
    ('tpr(group="race",, ) >= 0.9', 17, "do not parse as Python"),
    ("tpr(**d) >= 0.1", 4, "'**'"),
    ("tpr(*d) >= 0.1", 4, "'*'"),
    ('tpr(a="x", a="y") >= 0', 11, "each keyword once"),
    ('tpr("a", "b") >= 0.1', 0, "positional argument"),
    ('tpr(race="a",\n sex=x) >= 0', 19, "a literal value"),
    ('tpr(race="a")[sex] >= 0', 13, "an operator"),
    ("tpr(where='race') >= 0.5", 10, "where= takes a dict"),
    ("tpr(where={['race']: 'a'}) >= 0.5", 10, "a literal value"),
    ("tpr(race={['a']}) >= 0.5", 9, "a literal value"),
    ("tpr(race='é', sex=Female) >= 0", 18, "a literal value"),  # columns counted in characters, not bytes
    ("tpr(race='日本語', a=1, a=2) >= 0", 21, "each keyword once"),
    ("tpr(label=2) >= 0", 10, "takes 0 or 1"),
    ("tpr(group='label') >= 0", 10, "not a group column"),
    ("tpr(race=[]) >= 0", 9, "at least one value"),
    ("tpr[race] >= 1e400", 13, "overflows a float"),
    ("ppr >= 1.2.3", 7, "'1.2.3' is not a number; write it with at most one decimal point"),
    ("tpr(x=1 y=2) >= 0", 6, "forgot a comma?"),
]


@pytest.mark.parametrize("text, built", [
    ("0.5 <= tpr()", 0.5 <= tpr()),
    ("0.9 >= tpr(group='race')", 0.9 >= tpr(group="race")),
    ("0.6 <= precision[race=a]", 0.6 <= precision(race="a")),
])
def test_a_number_on_the_left_reads_as_python_reads_it(text, built):
    # Python reflects '0.5 <= tpr()' into 'tpr() >= 0.5': the string must be that same constraint
    con = parse_constraint(text)
    assert con == built and hash(con) == hash(built) and str(con) == str(built)


def test_algebra_is_linear_and_canonical():
    a, b = tpr(race="A"), fpr(sex="F")
    assert a + b == b + a
    assert (a - a) == Expression((), 0.0)
    assert 2 * (a + 1) - a == a + 2
    assert (a / 4).terms[0][1] == 0.25
    assert -(-a) == a
    with pytest.raises(TypeError, match="combine linearly"):
        a * b
    with pytest.raises(TypeError, match="strict"):
        a < b
    with pytest.raises(ValueError, match="Division by zero"):
        a / 0


def test_ratio_rearrangement_is_exact():
    # precision >= c  <=>  c * ppr - tp_proportion <= 0
    con = precision(race="A") >= 0.8
    g = con.expression
    coefs = {str(r): c for r, c in g.terms}
    assert coefs == {"ppr[race=A]": 0.8, "tp_proportion[race=A]": -1.0}
    con = 0.8 >= precision()
    coefs = {str(r): c for r, c in con.expression.terms}
    assert coefs == {"ppr": -0.8, "tp_proportion": 1.0}
    with pytest.raises(TypeError, match="only be compared with a constant"):
        precision() >= tpr()
    with pytest.raises(TypeError, match="ratio"):
        precision() + 1
    assert str(win_loss_ratio() >= 2) == "win_loss_ratio >= 2"


def test_specs_are_hashable_and_clone_safe():
    cons = [tpr(group="race") >= 0.9 * tpr(), "ppr[sex] >= 0.2"]
    clf = ConstrainedClassifier(constraints=cons)
    cloned = clone(clf)
    assert cloned.get_params()["constraints"] == cons
    assert len({c for c in as_constraints(cons)}) == 2
    assert pickle.loads(pickle.dumps(cons[0])) == cons[0]


@pytest.mark.parametrize("text, pos, expected", [
    ("tpr[race=Black] >= 0.95 * ", 26, "a rate name"),
    ("tpx >= 1", 0, "a rate name (one of"),
    ("tpr >= 1 2", 9, "an operator or the end"),
    ("tpr[race=Black", 14, "',' or ']'"),
    ("tpr", 3, "'<=' or '>='"),
    ("tpr[=a] >= 1", 4, "a group column name"),
    ('tpr[race="Black] >= 1', 21, "a closing"),
    ("tpr[race=a, race=b] >= 1", 12, "each column once"),
    *CALL_ERRORS,
])
def test_parse_errors_point_at_the_position(text, pos, expected):
    with pytest.raises(SpecParseError) as info:
        parse_constraint(text)
    assert info.value.pos == pos
    assert expected in str(info.value)
    assert "^" in str(info.value).splitlines()[-1]


def test_goal_names_and_other_libraries_rate_names_in_a_spec_say_what_to_write():
    import skrate.rates
    from skrate.rates._parser import _GOALS, _RATE_SYNONYMS, _goal_call

    assert _goal_call("minimum_coverage") == "minimum_coverage(value, group=None)"
    assert _goal_call("equal_odds") == "equal_odds(group, slack=0.05)"
    for name, goal in _GOALS.items():
        assert callable(getattr(skrate.rates, goal))  # the helper the message names exists
        with pytest.raises(SpecParseError, match=rf"'{name}' names a goal, not a rate: pass "
                                                 rf"skrate\.rates\.{re.escape(_goal_call(goal))}, ") as info:
            ConstrainedClassifier(constraints=f"{name}(race, 0.05)").fit([[0.0], [1.0]], [0, 1])
        assert info.value.pos == 0
    for name, rate in _RATE_SYNONYMS.items():
        assert rate in skrate.rates._functions.RATE_FUNCTIONS
        with pytest.raises(SpecParseError, match=rf"'{name}' is '{rate}' here; one of"):
            parse_constraint(f"{name}[race=a] <= 0.5")
    # names are lower case
    for name, rate in (("TPR", "tpr"), ("F1", "f1"), ("Precision", "precision"), ("Selection_Rate", "ppr")):
        with pytest.raises(SpecParseError, match=rf"'{name}' is '{rate}' here; one of") as info:
            parse_constraint(f"ppr >= 0 * {name}[race=a]")
        assert info.value.pos == len("ppr >= 0 * ")
    with pytest.raises(SpecParseError, match="'F_Measure' is an F-measure"):
        parse_constraint("F_Measure >= 0.5")
    with pytest.raises(SpecParseError, match="'Demographic_Parity' names a goal, not a rate"):
        parse_constraint("Demographic_Parity(race) >= 0")


@pytest.mark.parametrize("text, pos, advice", [
    ("ppr == 0.25", 4, "Write an equality a == b as two constraints, 'a <= b' and 'a >= b'"),
    ("ppr[sex] = ppr", 9, "Write an equality a == b as two constraints"),
    ("tpr[race] > 0.9 * tpr", 10, "write '>=' for '>'"),
    ("fpr < 0.1", 4, "write '<=' for '<'"),
])
def test_an_equality_or_a_strict_inequality_in_a_spec_says_what_to_write(text, pos, advice):
    with pytest.raises(SpecParseError, match="rates are compared with '<=' or '>='") as info:
        parse_constraint(text)
    assert info.value.pos == pos and advice in str(info.value)


@pytest.mark.parametrize("name", ["f_score", "f_measure"])
def test_an_f_measure_in_a_spec_names_f1_and_metric_optimizer(name):
    with pytest.raises(SpecParseError, match=rf"'{name}' is an F-measure: the F1 score is the ratio 'f1'") as info:
        parse_constraint(f"{name}[sex=a] >= 0.6")
    assert "MetricOptimizer(metric='f2')" in str(info.value)


@pytest.mark.parametrize("text, fix", [("g_mean >= 0.7", "constraints=[g_mean_at_least(0.7)]"),
                                       ("KLD[sex=a] <= 0.01", "constraints=[kld_fairness('sex', 0.01)]"),
                                       ("h_mean <= 0.3", "constraints=[h_mean() <= 0.3]"),
                                       ("pr_auc >= 0.5", "an objective only: MetricOptimizer(metric='pr_auc')")])
def test_a_metric_in_a_spec_says_how_to_bound_it(text, fix):
    with pytest.raises(SpecParseError, match="is a non-linear metric, not a rate") as info:
        parse_constraint(text)
    assert info.value.pos == 0 and fix in str(info.value)


def test_a_constraint_names_its_ratio_side():
    assert parse_constraint("precision[sex=a] >= 0.8").ratio == precision(sex="a")
    assert parse_constraint("0.5 >= win_loss_ratio").ratio == win_loss_ratio()
    assert parse_constraint("ppr <= 0.2 + tpr").ratio is None


def test_f1_is_a_named_ratio_whose_bound_is_linear():
    con = parse_constraint("f1[sex=a] >= 0.6")
    assert con == (f1(sex="a") >= 0.6) and str(con) == "f1[sex=a] >= 0.6"
    assert str(0.5 * f1(group="sex")) == "0.5 * f1[sex]" and str(-f1()) == "-f1"
    assert parse_constraint(str(0.5 * f1() <= 0.4)) == (0.5 * f1() <= 0.4)
    with pytest.warns(InfeasibleConstraintsWarning, match=r"meet 'f1 >= 1.5': f1 lies in \[0, 1\]"):
        ConstrainedClassifier("f1 >= 1.5", max_iter=5).fit(np.eye(4), [0, 1, 0, 1])
    # the bound it names is the F1 bound: on any decisions the two agree
    rng = np.random.default_rng(0)
    y, p, c = rng.integers(0, 2, 200), rng.random(200), 0.6
    tp, ppr, base = np.mean(y * p), np.mean(p), np.mean(y)
    assert (2 * tp / (ppr + base) >= c) == (2 * tp - c * ppr - c * base >= 0)
    assert str(con.expression) == "0.6 * label_rate[sex=a] + 0.6 * ppr[sex=a] - 2 * tp_proportion[sex=a]"


def test_semantic_errors_name_the_spec():
    with pytest.raises(ValueError, match="tpr \\* tpr"):
        parse_constraint("tpr * tpr >= 1")
    with pytest.raises(ValueError, match="takes 0 or 1"):
        parse_constraint("ppr[label=2] >= 1")
    with pytest.raises(TypeError, match="not a constraint"):
        as_constraints(tpr())


def test_expansion_over_group_values():
    con = parse_constraint("tpr[race, sex] >= 0.9 * tpr[sex]")
    out = con.expand({"race": ["a", "b"], "sex": ["F", "M"]})
    assert len(out) == 4
    assert parse_constraint("tpr[race=b, sex=M] >= 0.9 * tpr[sex=M]") in out


def test_goal_helpers():
    eo = equal_opportunity("race", 0.05, multiplicative=True)
    assert eo == [parse_constraint("tpr[race] >= 0.95 * tpr")]
    assert equal_opportunity("race", 0.05, two_sided=True)[1] == parse_constraint("tpr[race] <= tpr + 0.05")
    assert len(equal_odds("race")) == 4
    sp = statistical_parity("sex", 0.2, multiplicative=True)
    assert sp == [parse_constraint("ppr[sex] >= 0.8 * ppr"), parse_constraint("ppr >= 0.8 * ppr[sex]")]
    assert minimum_recall(0.7, "race") == [tpr(group="race") >= 0.7]
    assert not_worse_off("sex") == [wins(group="sex") - parse_expression("losses[sex]") >= 0]
    assert not_worse_off("sex", slack=0.02) == [parse_constraint("wins[sex] - losses[sex] >= -0.02")]
    with pytest.raises(ValueError, match="slack"):  # a ratio of 0 would bound nothing
        equal_opportunity("race", 1.0, multiplicative=True)
    assert no_lost_benefits("sex", 0.1)[0] == parse_constraint("ppr[sex] >= baseline_ppr[sex] - 0.1")
    with pytest.raises(ValueError, match="slack"):
        equal_odds("race", slack=-0.1)
    with pytest.raises(ValueError, match="minimum"):
        minimum_recall(1.5)
    assert (churn() <= 0.1) == parse_constraint("churn <= 0.1")
    assert (accuracy(group="x") >= 0.5) == parse_constraint("accuracy[x] >= 0.5")


def test_constraint_is_immutable():
    con = parse_constraint("tpr >= 0.5")
    with pytest.raises(Exception):
        con.op = "<="
    assert isinstance(con, Constraint)


# Each spec is given as text and as a function: applied to precision() it builds the
# constraint, applied to a number it states what the constraint means.
SCALED_PRECISION = [
    ("precision / -1 >= -0.7", lambda p: p / -1 >= -0.7),
    ("precision * -2 <= -1", lambda p: p * -2 <= -1),
    ("-2 * precision >= -1", lambda p: -2 * p >= -1),
    ("precision / -0.5 <= -1.2", lambda p: p / -0.5 <= -1.2),
    ("-precision / 4 >= -0.1", lambda p: -p / 4 >= -0.1),
    ("precision / 2 >= 0.3", lambda p: p / 2 >= 0.3),
    ("3 * precision <= 2.1", lambda p: 3 * p <= 2.1),
    ("-0.4 >= precision / -0.5", lambda p: -0.4 >= p / -0.5),
]


@pytest.mark.parametrize("text, spec", SCALED_PRECISION)
def test_scaled_ratio_keeps_its_direction(text, spec):
    con = parse_constraint(text)
    assert con.expression == spec(precision()).expression
    # The solvers read a constraint as expression <= 0: it must hold exactly where the
    # scaled precision satisfies the bound, on either side of it.
    ppr_value = 0.4
    for value in (0.05, 0.15, 0.35, 0.55, 0.65, 0.9):
        rates = {"ppr": ppr_value, "tp_proportion": value * ppr_value}
        g = con.expression
        g_value = sum(c * rates[str(r)] for r, c in g.terms) + g.constant
        assert (g_value <= 0) == spec(value), (text, value)
    ratio = con.lhs if isinstance(con.lhs, Ratio) else con.rhs
    assert ratio.denominator == ppr()


def test_scaling_a_ratio_scales_its_numerator():
    for scaled in (precision() / -2, -0.5 * precision(), precision() * -0.5, -precision() / 2):
        assert scaled == -0.5 * precision()
        assert scaled.denominator == ppr()
    # A denominator that cannot be positive is negated together with the numerator.
    assert (tpr() / -fpr()).denominator == fpr()


@pytest.mark.parametrize("text, pos", [
    ("precision / 0 >= 1", 12),
    ("tpr / 0 >= 1", 6),
    ("1 / 0 <= tpr", 4),
    ("tpr / (tpr - tpr) >= 1", 6),
])
def test_division_by_zero_in_a_spec(text, pos):
    with pytest.raises(ValueError, match=f"(?i)near position {pos}\\): division by zero"):
        parse_constraint(text)


def test_division_by_zero_in_python():
    for term in (tpr(), precision()):
        with pytest.raises(ValueError, match="Division by zero"):
            term / 0


@pytest.mark.parametrize("bad", [float("nan"), np.inf, -np.inf, np.float64("nan")])
def test_non_finite_constants_are_refused_where_they_enter(bad):
    for build in (lambda: tpr(group="race") >= tpr() - bad, lambda: tpr() * bad, lambda: precision() <= bad,
                  lambda: bad + ppr()):
        with pytest.raises(ValueError, match="finite constants, got"):
            build()
    with pytest.raises(SpecParseError, match="1e999 overflows a float") as info:
        parse_constraint("tpr >= 1e999")
    assert info.value.pos == 7  # the number itself, not the comparison


@pytest.mark.parametrize("text, pos", [
    ("tpr[race] * 1e300 * 1e300 <= 0.5", 18), ("tpr + 1e308 + 1e308 >= 0", 12), ("1e308*tpr + 1e308*tpr >= 0", 10),
    ("tpr >= 1e300 * 1e300", 13), ("ppr <= 1e300*1e300 - 1e300*1e300", 12),
])
def test_arithmetic_past_a_float_is_refused_where_it_overflows(text, pos):
    # an infinite coefficient must not read as a zero one (the rate dropped), nor crash unexplained
    with pytest.raises(SpecParseError, match="overflows a float") as info:
        parse_constraint(text)
    assert info.value.pos == pos
    with pytest.raises(SpecParseError, match="overflows a float"):
        parse_expression("1e300 * 1e300")
    with pytest.raises(ValueError, match="overflows a float"):
        tpr() * 1e300 * 1e300
    with pytest.raises(ValueError, match="finite constants, got a number beyond a float's range"):
        tpr() >= 10**400


def test_large_numbers_print_in_short_form_and_python_syntax_warnings_stay_quiet():
    con = parse_constraint("tpr >= 1e30 * ppr - 2")
    assert str(con) == "tpr >= 1e+30 * ppr - 2" and parse_constraint(str(con)) == con
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 'invalid decimal literal' from Python's parser
        with pytest.raises(SpecParseError, match="a literal value"):
            parse_constraint("tpr(sex=1and 2) >= 0.5")
        assert parse_constraint(r"tpr(sex='a\d') >= 0.5") == (tpr(sex="a\\d") >= 0.5)  # invalid escape, kept


@pytest.mark.parametrize("text, pos, message", [
    ("ppr[label=a] >= 0.1", 10, "takes 0 or 1"),
    ("ppr[label=0|b] >= 0.1", 12, "takes 0 or 1"),
    ("ppr[race, label] >= 0.1", 10, "Cannot expand over 'label'"),
    ("precision[race] >= precision", 16, "two ratios"),
    ("tpr * tpr >= 1", 4, "combine linearly"),
    ("tpr + precision >= 1", 4, "Cannot add the ratio"),
])
def test_semantic_errors_point_at_the_offending_token(text, pos, message):
    with pytest.raises(ValueError, match=message) as info:
        parse_constraint(text)
    assert f"near position {pos})" in str(info.value)
    assert str(info.value).splitlines()[-1].index("^") == 4 + pos


def test_integer_group_column_names():
    from skrate.problem._compile import RateData, expand_constraints
    from skrate.problem._evaluate import evaluate_term
    from skrate.problem._groups import GroupTable

    assert ppr(group=0) == ppr(group="0")
    assert ppr(where={0: "x"}) == ppr(where={"0": "x"})
    with pytest.raises(ValueError, match="filtered twice"):
        ppr(where={0: "x"}, **{"0": "y"})
    groups = GroupTable.from_input({0: np.array(["x", "x", "y", "y"])}, None, 4)
    data = RateData(np.array([1, 0, 1, 0]), np.ones(4), groups)
    decisions = np.array([1.0, 1.0, 0.0, 1.0])
    assert evaluate_term(ppr(where={0: "x"}), data, decisions) == decisions[:2].mean()
    expanded = expand_constraints([ppr(group=0) >= 0.1], groups)
    assert [str(c) for c in expanded] == ["ppr[0=x] >= 0.1", "ppr[0=y] >= 0.1"]


@pytest.mark.parametrize("slack", ["0.05", None, True])
def test_goal_slack_must_be_a_number(slack):
    with pytest.raises(TypeError, match="slack must be a real number"):
        equal_odds("race", slack=slack)
    with pytest.raises(TypeError, match="slack must be a real number"):
        not_worse_off("race", slack=slack)


def test_column_names_beyond_identifiers_are_quoted_and_round_trip():
    import pandas as pd

    from skrate.problem import GroupTable, RateData
    from skrate.problem._evaluate import evaluate_term

    for spec in ('ppr["marital-status"=Married] >= 0.1', "ppr[0] >= 0.3", "ppr[0=x] >= ppr - 0.1",
                 'ppr["a \\"b\\""=1] >= 0.2', 'tpr["native country"] >= 0.5'):
        con = parse_constraint(spec)
        assert str(con) == spec and parse_constraint(str(con)) == con
    assert str(ppr(group=0) >= 0.3) == "ppr[0] >= 0.3"
    with pytest.raises(ValueError, match=r"a group column name \(in double quotes"):
        parse_constraint("ppr[-x] >= 0.1")
    groups = pd.DataFrame({"marital-status": ["Married", "Single", "Married", "Single"]})
    data = RateData(np.array([1, 0, 1, 0]), np.ones(4), GroupTable.from_input(groups, None, 4))
    term = parse_constraint('ppr["marital-status"=Married] >= 0.1').lhs
    assert evaluate_term(term, data, np.array([1.0, 1.0, 0.0, 0.0])) == pytest.approx(0.5)


def test_a_chained_comparison_is_refused_not_truncated():
    with pytest.raises(TypeError, match="chained comparison .* two constraints"):
        0.8 * ppr() <= ppr(group="race") <= 1.25 * ppr()  # noqa: B015 (the chain is what is tested)
    with pytest.raises(ValueError, match="one comparison.*two constraints") as info:
        parse_constraint("0.1 <= ppr <= 0.5")
    assert "\n    " + " " * 11 + "^" in str(info.value)


@pytest.mark.parametrize("helper", [statistical_parity, equal_odds, equal_opportunity])
@pytest.mark.parametrize("group", [None, [], ""])
def test_parity_goals_need_a_group_column(helper, group):
    # without one, ppr[group] is ppr and every constraint would hold trivially
    with pytest.raises(ValueError, match="needs the group column"):
        helper(group)


def test_a_denominator_of_mixed_sign_is_refused():
    # c * (tpr - fpr) - ppr <= 0 would read "met" where the ratio is negative
    for text in ("ppr / (tpr - fpr) >= 2", "ppr / (tpr + fpr - 0.9) >= 1"):
        with pytest.raises(ValueError, match="can take both signs"):
            parse_constraint(text)
    assert parse_constraint("ppr / (tpr + fpr) >= 2").expression == parse_constraint("2 * tpr + 2 * fpr - ppr <= 0").expression
    assert parse_constraint("ppr / (-tpr - fpr) >= 2") == ((-ppr()) / (tpr() + fpr()) >= 2)
    # a denominator with negative terms that still cannot go below 0 (1 - ppr is npr) is a ratio
    assert (parse_constraint("tpr / (1 - ppr) >= 0.5").expression
            == parse_constraint("0.5 - 0.5 * ppr - tpr <= 0").expression)
    assert parse_constraint("tpr / (ppr - 1) >= 0.5") == ((-tpr()) / (1 - ppr()) >= 0.5)


def test_a_number_divided_by_a_rate_is_a_ratio_of_a_constant():
    # as Expression((), c) / rate already built: 1 / ppr >= 2 is 2 * ppr - 1 <= 0, ppr <= 0.5
    assert 0.5 / tpr() == Expression((), 0.5) / tpr()
    assert parse_constraint("1/ppr >= 2") == (1 / ppr() >= 2)
    assert (1 / ppr() >= 2).expression == 2 * ppr() - 1
    assert parse_constraint("1 / (ppr - 1) <= -2") == (1 / (ppr() - 1) <= -2)  # negated, as for a rate
    with pytest.raises(TypeError, match="Cannot divide by the ratio precision"):
        2 / precision()


@pytest.mark.parametrize("con", [0 * precision() >= -0.5, (ppr() - ppr() + 0.5) / npr() <= 2,
                                 -2 * win_loss_ratio() / 4 * 0 <= 1])
def test_a_ratio_with_a_constant_numerator_round_trips(con):
    # printed as (c) / (D), which did not parse: a number over a rate was refused
    assert parse_constraint(str(con)) == con
    assert parse_expression(str(con.lhs)) == con.lhs


def test_a_constraint_given_as_an_expression_is_named():
    with pytest.raises(ValueError, match="a constraint, not an expression"):
        parse_expression("ppr >= 0.2")


def test_unary_plus():
    assert parse_constraint("ppr >= +0.1") == (ppr() >= 0.1)
    assert parse_constraint("+tpr - fpr <= 0.2") == (+tpr() - fpr() <= 0.2)


def test_array_like_filter_values_mean_any_of():
    pd = pytest.importorskip("pandas")
    expected = ppr(g=["a", "b"])
    for values in (np.array(["b", "a"]), pd.Series(["a", "b"]), pd.Index(["a", "b"])):
        assert ppr(g=values) == expected
    assert ppr(g=range(2)) == ppr(g=[0, 1])
    assert ppr(g=np.str_("a")) == ppr(g="a")


@pytest.mark.parametrize("value", ["C:\\data", "a\\", '\\"', 'say "hi"\\'])
def test_backslashes_round_trip(value):
    for con in (ppr(path=value) >= 0.1, ppr(where={value: "x"}) >= 0.1):
        assert parse_constraint(str(con)) == con


@pytest.mark.parametrize("text, hint", [
    ("ppr[marital-status=Married] >= 0.1", 'double quotes: "marital-status"'),
    ("ppr[native country] >= 0.1", 'double quotes: "native country"'),
    ("ppr[sex=Female age_cat=x] >= 0.1", "',' between two filters"),
])
def test_unquoted_names_and_missing_commas_get_a_hint(text, hint):
    with pytest.raises(SpecParseError, match=hint):
        parse_constraint(text)
    assert parse_constraint('ppr[a="x=y"] >= 0.1') == (ppr(a="x=y") >= 0.1)


def test_rounding_noise_cancels_and_negated_ratios_print_plainly():
    assert (0.1 * tpr() + 0.2 * tpr() - 0.3 * tpr()).terms == ()
    assert (tpr() + 0.1 + 0.2 - 0.3).constant == 0.0
    assert str(-precision()) == "-precision"
    assert parse_expression(str(-precision())) == -precision()


@pytest.mark.parametrize("text, pos", [
    ("tpr[race=Black >= 0.9 * tpr", 15),
    ("tpr[race >= 0.9 * tpr", 9),
    ("tpr[race=A|B <= tpr", 13),
    ("tpr[race, sex >= tpr", 14),
    ('tpr[race="B" >= tpr', 13),
])
def test_a_forgotten_closing_bracket_is_named(text, pos):
    # was read as a missing comma, or as a column name "race >" to quote
    with pytest.raises(SpecParseError, match="expected ']' to close the filters before the comparison") as info:
        parse_constraint(text)
    assert info.value.pos == pos


def _once(*columns):
    return (c for c in columns)


def test_goal_helpers_read_a_one_shot_group_once():
    # a generator read twice was empty the second time: ppr[race] >= ... became ppr >= ppr - 0.05
    assert statistical_parity(_once("race")) == statistical_parity("race")
    assert equal_odds(iter(["race", "sex"])) == equal_odds(["race", "sex"])
    assert equal_opportunity(map(str, ["race"]), two_sided=True) == equal_opportunity("race", two_sided=True)
    assert accurate_coverage(_once("race")) == [ppr(group="race") >= label_rate(group="race") - 0.05,
                                                ppr(group="race") <= label_rate(group="race") + 0.05]
    assert not_worse_off(_once("race")) == [wins(group="race") - losses(group="race") >= 0]
    assert no_lost_benefits(_once("race")) == no_lost_benefits("race")
    assert precision(group=_once("race")) == precision(group="race")
    assert win_loss_ratio(group=_once("race")) == win_loss_ratio(group="race")
    assert precision(race=_once("A", "B")) == precision(race=["A", "B"])  # filter values too
    with pytest.raises(ValueError, match="needs the group column"):
        statistical_parity(_once())


@pytest.mark.parametrize("helper", [statistical_parity, equal_odds, equal_opportunity, equal_accuracy])
def test_parity_goals_take_an_integer_column_name(helper):
    # as the rates do: the column 0 of a DataFrame without column names
    assert helper(0) == helper("0")
    assert str(equal_opportunity(0)[0]) == "tpr[0] >= tpr - 0.05"


def test_a_set_of_filter_values_means_any_of():
    assert tpr(race={"A", "B"}) == tpr(race=["A", "B"]) == parse_expression("tpr[race=A|B]")
    assert tpr(race=frozenset({"A"})) == tpr(race="A")
    assert ppr(g=np.array("a")) == ppr(g="a")  # a 0-d array is one value
    assert ppr(g=b"ab") == ppr(g=str(b"ab"))  # bytes are one value, not their byte values


def test_an_equality_between_rates_says_how_to_write_one():
    equal = ppr(group="race") == ppr()  # a bool: dataclass equality, kept for round trips and hashing
    assert equal is False
    with pytest.raises(TypeError, match=r"== between rate expressions compares them as objects.*two "
                                        r"constraints, \[a <= b, a >= b\]"):
        as_constraints([tpr() >= 0.5, equal])


@pytest.mark.parametrize("opener", ["(", "-", "+"])
def test_nesting_past_the_limit_is_refused_at_its_position_not_with_a_recursion_error(opener):
    closer = ")" if opener == "(" else ""
    # an even number of signs: the rate itself
    assert parse_constraint(opener * 100 + "tpr" + closer * 100 + " >= 0.5") == parse_constraint("tpr >= 0.5")
    text = opener * 5000 + "tpr" + closer * 5000 + " >= 0.5"
    with pytest.raises(SpecParseError, match="nest deeper than 100 levels") as info:
        parse_constraint(text)
    assert info.value.pos == 100


def test_nesting_inside_call_arguments_is_refused_at_the_call():
    # Python's own parser raised RecursionError on thousands of signs in a call's argument
    text = "ppr(race=" + "-" * 3000 + "1) >= 0"
    with pytest.raises(SpecParseError, match="nest too deeply") as info:
        parse_constraint(text)
    assert info.value.pos == 3


def test_a_constant_on_the_left_is_written_as_python_reads_it():
    # a constant expression on the left printed '0.5 <= ppr', which parsed back to 'ppr >= 0.5'
    for con in (parse_constraint("0 * tpr + 0.5 <= ppr"), parse_expression("0.5") <= ppr(), 0.5 <= ppr()):
        assert con == parse_constraint("ppr >= 0.5") and str(con) == "ppr >= 0.5"
        assert eval(repr(con), {"parse_constraint": parse_constraint}) == con
    assert (parse_expression("0.8") >= precision()) == parse_constraint("precision <= 0.8")


def test_the_caret_stands_under_the_position_on_its_own_line():
    for text, line in (("tpr[race] >=\n    0.95 * tpx", "    0.95 * tpx"), ("tpr >=\t0.9 *\ttpx", "tpr >=\t0.9 *\ttpx")):
        with pytest.raises(SpecParseError) as info:
            parse_constraint(text)
        shown, caret = str(info.value).splitlines()[-2:]
        assert shown == "    " + line
        assert caret.rstrip("^").replace("\t", " ") == " " * len(caret.rstrip("^")) and caret.endswith("^")
        assert text[info.value.pos:].startswith("tpx") and line[len(caret) - 5:].startswith("tpx")


def test_a_comparison_inside_a_quoted_value_is_not_taken_for_a_missing_bracket():
    for text, pos in (("ppr(race='a>=b' >= 0", 16), ('tpr[race="a<=b" >= 0.9 * tpr', 16)):
        with pytest.raises(SpecParseError, match="to close the") as info:
            parse_constraint(text)
        assert info.value.pos == pos


def _coverage(y, p, w):
    """The positive prediction rate, by hand: the weighted mean of the decisions."""
    return np.sum(w * p) / np.sum(w)


def _accuracy(y, p, w):
    """The accuracy, by hand: the weighted mean of the decisions that match the label."""
    return np.sum(w * (y * p + (1 - y) * (1 - p))) / np.sum(w)


MINIMUM_GOALS = [(minimum_coverage, ppr, "ppr", _coverage), (minimum_accuracy, accuracy, "accuracy", _accuracy)]


@pytest.mark.parametrize("helper, rate, name, direct", MINIMUM_GOALS)
def test_minimum_goals_bound_their_rate_from_below(helper, rate, name, direct):
    assert helper(0.3) == [rate() >= 0.3] == [parse_constraint(f"{name} >= 0.3")]
    assert helper(0.7, "race") == [rate(group="race") >= 0.7] == [parse_constraint(f"{name}[race] >= 0.7")]
    assert helper(0.7, ["race", "sex"]) == [parse_constraint(f"{name}[race, sex] >= 0.7")]
    assert helper(0, "race") == [parse_constraint(f"{name}[race] >= 0")]  # the ends of [0, 1] are bounds too
    assert helper(1) == [parse_constraint(f"{name} >= 1")]
    # measured on data, each expanded constraint reads its group's rate against the bound
    rng = np.random.default_rng(0)
    n = 400
    y = rng.integers(0, 2, n)
    w = rng.uniform(0.5, 2.0, n)
    p = rng.uniform(size=n)
    race = rng.choice(["a", "b", "c"], n)
    data = RateData(y, w, GroupTable.from_input({"race": race}, None, n))
    expanded = expand_constraints(helper(0.45, "race"), data.groups)
    assert [str(c) for c in expanded] == [f"{name}[race={v}] >= 0.45" for v in "abc"]
    rows = constraint_rows(expanded, data, p)
    for row, v in zip(rows, "abc"):
        m = race == v
        assert row["lhs"] == pytest.approx(direct(y[m], p[m], w[m]), rel=1e-12)
        assert row["rhs"] == 0.45
        assert row["violation"] == pytest.approx(0.45 - direct(y[m], p[m], w[m]), rel=1e-10, abs=1e-12)
    (overall,) = constraint_rows(helper(0.45), data, p)
    assert overall["lhs"] == pytest.approx(direct(y, p, w), rel=1e-12)


@pytest.mark.parametrize("helper, name", [(minimum_coverage, "ppr"), (minimum_accuracy, "accuracy")])
@pytest.mark.parametrize("value", ["0.5", None, True, [0.5]])
def test_a_minimum_goal_that_is_not_a_number_is_refused(helper, name, value):
    with pytest.raises(TypeError, match=rf"A minimum {name} must be a number in \[0, 1\], got {type(value).__name__}"):
        helper(value)


@pytest.mark.parametrize("helper, name", [(minimum_coverage, "ppr"), (minimum_accuracy, "accuracy")])
@pytest.mark.parametrize("value", [-0.1, 1.5, np.inf, np.nan])
def test_a_minimum_goal_outside_the_unit_interval_is_refused(helper, name, value):
    with pytest.raises(ValueError, match=rf"A minimum {name} must lie in \[0, 1\], got {value}"):
        helper(value, "race")


def test_small_coefficients_are_kept_not_read_as_rounding_noise():
    # cancellation is judged against the size of the summands, so a tiny coefficient on its own
    # is exact, and scaling an expression down and up again gives it back
    e = 1e-13 * tpr() + 2e-13
    assert e.terms == ((tpr().terms[0][0], 1e-13),) and e.constant == 2e-13
    assert parse_expression("1e-13 * tpr + 2e-13") == e
    g = 0.5 * tpr() - 0.25 * fpr() + 0.125
    assert (g * 1e-13) * 1e13 == g


def test_a_constraint_built_with_its_ratio_on_the_right_reads_flipped():
    # '0.8 <= precision' built directly (not through the operators) is 'precision >= 0.8'
    direct = Constraint(Expression((), 0.8), "<=", precision())
    assert direct.ratio_bound == (precision(), ">=", Expression((), 0.8))
    assert direct.expression == (precision() >= 0.8).expression
    upper = Constraint(Expression((), 0.3), ">=", tpr() / ppr())
    assert upper.expression == (tpr() / ppr() <= 0.3).expression
