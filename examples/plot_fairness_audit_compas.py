"""
Fairness audit on COMPAS
========================

Audit a logistic regression and an equal-opportunity constrained model on the ProPublica
COMPAS data: per-group rates with bootstrap intervals, constraint violations on held-out
rows, the error / violation trade-off over slacks, and hyper-parameters chosen by the rank
heuristic of Cotter et al. (2019).
"""

# %%
# Data and a baseline
# -------------------
import matplotlib.pyplot as plt
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from skrate import ConstrainedClassifier
from skrate.datasets import load_compas
from skrate.metrics import audit, plot_audit, plot_tradeoff
from skrate.model_selection import tradeoff_curve

data = load_compas(as_frame=True)
X_tr, X_te, y_tr, y_te, g_tr, g_te = train_test_split(
    data.data, data.target, data.groups, test_size=0.3, stratify=data.target, random_state=0)

# Equal opportunity over race, both sides: every race's recall within 0.05 of the overall one.
goal = ["tpr[race] >= tpr - 0.05", "tpr[race] <= tpr + 0.05"]

logreg = LogisticRegression().fit(X_tr, y_tr)
print(audit(logreg, X_te, y_te, groups=g_te, constraints=goal, metrics=("ppr", "tpr", "fpr"),
            n_bootstrap=300, random_state=0))

# %%
# A constrained model
# -------------------
# The result is a mixture of at most five linear models (m + 1 for the m = 4 constraints: two
# per race value);
# the audit reads its rates in expectation from ``predict_proba``.
fair = ConstrainedClassifier(constraints=goal, random_state=0).fit(X_tr, y_tr, groups=g_tr)
report = audit(fair, X_te, y_te, groups=g_te, constraints=goal, metrics=("ppr", "tpr", "fpr"),
               n_bootstrap=300, random_state=0)
print(report)

# %%
# The tidy frame behind the tables filters and pivots like any DataFrame:
import pandas as pd

frame = pd.DataFrame(report)
print(frame.query("metric == 'tpr'")[["attribute", "group", "value", "value_low", "value_high"]])

# %%
# Per-group rates with their 95% intervals (the dashed line is the overall rate):
axes = plot_audit(report)
axes[0].figure.tight_layout()

# %%
# The trade-off between error and the recall gap
# ----------------------------------------------
# One fit per slack; ``gap`` is the violation of the exact goal (slack 0) on each split.
template = ["tpr[race] >= tpr - {slack}", "tpr[race] <= tpr + {slack}"]
curve = tradeoff_curve(ConstrainedClassifier(random_state=0), data.data, data.target, groups=data.groups,
                       constraints=template, slacks=[0.0, 0.025, 0.05, 0.1, 0.2], random_state=0)
print(curve.round(3).to_string())
ax = plot_tradeoff(curve, violation="gap")
plt.tight_layout()

# %%
# Choosing hyper-parameters by error *and* violation
# --------------------------------------------------
# With metadata routing, the groups follow the rows into every fold: the estimator's ``fit``
# and the violation scorer request them.
import sklearn
from sklearn.model_selection import GridSearchCV

from skrate.metrics import make_rate_scorer, make_violation_scorer
from skrate.model_selection import RankRefit

with sklearn.config_context(enable_metadata_routing=True):
    scoring = {"error": make_rate_scorer("error", greater_is_better=False).set_score_request(groups=False),
               "violation": make_violation_scorer(goal).set_score_request(groups=True)}
    search = GridSearchCV(
        ConstrainedClassifier(constraints=goal, random_state=0).set_fit_request(groups=True),
        {"alpha": [1e-4, 1e-2], "max_iter": [300, 1000]}, scoring=scoring, cv=3,
        refit=RankRefit("error", "violation"))
    search.fit(X_tr, y_tr, groups=g_tr)

results = pd.DataFrame(search.cv_results_)[["param_alpha", "param_max_iter", "mean_test_error",
                                            "mean_test_violation"]]
print(results.assign(error=-results.mean_test_error, violation=-results.mean_test_violation)
      .drop(columns=["mean_test_error", "mean_test_violation"]).round(4))
print("chosen:", search.best_params_)
