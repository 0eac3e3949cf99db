"""The declarative spec layer: algebra, equality, the parser and goal helpers."""

import pickle

import pytest
from sklearn.base import clone

from skrate import ConstrainedClassifier
from skrate.rates import (
    Constraint, Expression, SpecParseError, accuracy, as_constraints, churn, equal_odds,
    equal_opportunity, error_rate, fpr, minimum_recall, no_lost_benefits, not_worse_off,
    parse_constraint, parse_expression, ppr, precision, statistical_parity, tpr, win_loss_ratio, wins,
)

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
]


@pytest.mark.parametrize("text", SPECS)
def test_parse_repr_round_trip(text):
    con = parse_constraint(text)
    again = parse_constraint(str(con))
    assert again == con
    assert hash(again) == hash(con)
    assert eval(repr(con), {"Constraint": lambda s: parse_constraint(s)}) == con


def test_objects_and_strings_agree():
    assert (tpr(group="race") >= 0.95 * tpr()) == parse_constraint("tpr[race] >= 0.95 * tpr")
    assert (tpr(race="Black") >= 0.95 * tpr()) == parse_constraint("tpr[race=Black] >= 0.95 * tpr")
    assert (ppr(sex=["F", "M"]) <= 0.5) == parse_constraint("ppr[sex=M|F] <= 0.5")
    assert (precision(race="B") >= 0.8) == parse_constraint("precision[race=B] >= 0.8")
    assert parse_expression("error") == error_rate()
    assert parse_expression("2 * (tpr - fpr) / 4") == 0.5 * tpr() - 0.5 * fpr()


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
    with pytest.raises(ZeroDivisionError):
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
])
def test_parse_errors_point_at_the_position(text, pos, expected):
    with pytest.raises(SpecParseError) as info:
        parse_constraint(text)
    assert info.value.pos == pos
    assert expected in str(info.value)
    assert "^" in str(info.value).splitlines()[-1]


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
