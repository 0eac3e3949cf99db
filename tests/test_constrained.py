"""ConstrainedClassifier end to end: constraints met, scikit-learn integration, bad input."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn import config_context
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skrate import ConstrainedClassifier
from skrate.exceptions import InfeasibleConstraintsWarning
from skrate.problem import GroupTable, RateData, constraint_rows
from skrate.rates import as_constraints
from skrate.rates import equal_opportunity, tpr


def _fair_data(n=3000, seed=0):
    """Two groups whose labels depend on the features differently: unconstrained models are unfair."""
    rng = np.random.default_rng(seed)
    group = rng.choice(["a", "b"], n, p=[0.7, 0.3])
    X = rng.normal(size=(n, 4))
    shift = np.where(group == "a", 0.8, -0.8)
    y = (X[:, 0] + 0.5 * X[:, 1] + shift + rng.normal(scale=0.8, size=n) > 0).astype(int)
    X[:, 3] += shift  # the model can see a proxy of the group
    return X, y, group


def _max_violation(report):
    return report["violation"].iloc[:-1].max()


def _violation_of(model, spec, X, y, g):
    data = RateData(y, np.ones(len(y)), GroupTable.from_input(g, None, len(y)))
    return max(r["violation"] for r in constraint_rows(as_constraints(spec), data, model.predict_proba(X)[:, 1]))


@pytest.mark.parametrize("spec", [
    "ppr[group] >= ppr - 0.03",
    ["tpr[group] >= 0.98 * tpr", "tpr[group] <= tpr / 0.98"],
    "fpr[group=b] <= 0.2",
])
def test_m_stochastic_meets_constraints_on_training_data(spec):
    X, y, g = _fair_data()
    unconstrained = ConstrainedClassifier(random_state=0).fit(X, y, groups=g)
    assert _violation_of(unconstrained, spec, X, y, g) > 0.02  # the constraints bind on this data
    clf = ConstrainedClassifier(spec, random_state=0).fit(X, y, groups=g)
    assert clf.feasible_
    assert _max_violation(clf.constraint_report(X, y, groups=g)) <= 1e-3
    assert _violation_of(clf, spec, X, y, g) <= 1e-3
    assert (clf.weights_ > 0).sum() <= len(clf.constraints_) + 1
    err = clf.score(X, y, sample_weight=None)
    assert err > unconstrained.score(X, y) - 0.1  # constrained, not degenerate


