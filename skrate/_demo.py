"""The README's main job: train with and without fairness constraints on COMPAS, audit both."""

from __future__ import annotations

import time

import numpy as np
from sklearn.model_selection import train_test_split

from .datasets import load_compas
from .problem import GroupTable, RateData, constraint_rows
from .rates import as_constraints

CONSTRAINTS = ["tpr[race] <= tpr + 0.05", "tpr[race] >= tpr - 0.05",
               "fpr[race] <= fpr + 0.05", "fpr[race] >= fpr - 0.05"]


def _group_lines(y, p, groups) -> list[str]:
    lines = [f"  {'slice':<26}{'rows':>6}{'ppr':>8}{'tpr':>8}{'fpr':>8}{'error':>8}"]
    cells = [("all", np.ones(len(y), bool))]
    cells += [(f"{k}={v}", groups[k] == v) for k in groups for v in np.unique(groups[k])]
    for name, m in cells:
        pos, neg = m & (y == 1), m & (y == 0)
        err = np.mean(np.where(y[m] == 1, 1 - p[m], p[m]))
        lines.append(f"  {name:<26}{m.sum():>6}{p[m].mean():>8.3f}{p[pos].mean():>8.3f}{p[neg].mean():>8.3f}{err:>8.3f}")
    return lines


def run_demo(print_fn=print, random_state: int = 0) -> dict:
    """Fit an unconstrained and an equalized-odds ConstrainedClassifier on COMPAS; print audits.

    Rates are computed in expectation from ``predict_proba`` on a held-out 30% split.
    Returns the fitted models under ``"unconstrained"`` and ``"constrained"``.
    """
    from ._constrained import ConstrainedClassifier

    data = load_compas()
    X, y = data.data, data.target
    tr, te = train_test_split(np.arange(len(y)), test_size=0.3, stratify=y, random_state=random_state)
    g_tr = {k: v[tr] for k, v in data.groups.items()}
    g_te = {k: v[te] for k, v in data.groups.items()}
    test_rates = RateData(y[te], np.ones(len(te)), GroupTable.from_input(g_te, None, len(te)))
    print_fn(f"skrate demo: ProPublica COMPAS two-year recidivism ({len(tr)} training rows, {len(te)} test rows)")
    print_fn("Goal: equalized odds over race, |TPR_g - TPR| <= 0.05 and |FPR_g - FPR| <= 0.05\n")
    models = {}
    for name, constraints in (("unconstrained", None), ("constrained", CONSTRAINTS)):
        start = time.perf_counter()
        clf = ConstrainedClassifier(constraints=constraints, random_state=random_state)
        clf.fit(X[tr], y[tr], groups=g_tr)
        secs = time.perf_counter() - start
        p = clf.predict_proba(X[te])[:, 1]
        print_fn(f"== {name}: fitted in {secs:.2f} s, a mixture of {int((clf.weights_ > 0).sum())} "
                 "linear model(s); test-set audit ==")
        for line in _group_lines(y[te], p, g_te):
            print_fn(line)
        print_fn("  constraints on the test set (violation > 0 means broken):")
        for row in constraint_rows(as_constraints(CONSTRAINTS), test_rates, p):
            print_fn(f"    {row['constraint']:<44}{row['violation']:+.4f}")
        print_fn("")
        models[name] = clf
    return models
