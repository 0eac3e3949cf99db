"""
Retraining with limited churn
=============================

A model is deployed; new data arrives and the world has shifted. Retraining from scratch
fixes errors but also changes many decisions users have come to rely on. A churn
constraint against the deployed model's decisions (Cotter et al., 2019) retrains while
changing at most a chosen share of the decisions.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from skrate import ConstrainedClassifier
from skrate.metrics import audit

rng = np.random.default_rng(0)


def population(n, drift):
    """Labels depend on features through weights that drift over time."""
    X = rng.normal(size=(n, 5))
    w = np.array([1.0, -1.0, 0.5, 0.0, 0.0]) + drift * np.array([0.0, 0.8, -0.5, 1.0, 0.7])
    y = (X @ w + rng.normal(scale=0.8, size=n) > 0).astype(int)
    return X, y


X_old, y_old = population(3000, drift=0.0)
deployed = LogisticRegression().fit(X_old, y_old)

X_new, y_new = population(4000, drift=1.0)
X_tr, X_te, y_tr, y_te = train_test_split(X_new, y_new, test_size=0.5, random_state=0)
b_tr, b_te = deployed.predict(X_tr), deployed.predict(X_te)

# %%
# Churn against the deployed model, for several budgets
# -----------------------------------------------------
# ``baseline`` gives the deployed decisions on the training rows; the audit measures the
# churn on held-out rows against the deployed decisions there.
rows = []
for budget in [None, 0.2, 0.1, 0.05, 0.02]:
    spec = None if budget is None else f"churn <= {budget}"
    model = ConstrainedClassifier(constraints=spec, random_state=0).fit(X_tr, y_tr, baseline=b_tr)
    rep = audit(model, X_te, y_te, baseline=b_te, constraints="churn <= 1", metrics=("accuracy",),
                n_bootstrap=200, random_state=0)
    churn = rep[rep.attribute == "constraint"].iloc[0]
    error = 1 - rep.query("metric == 'accuracy'")["value"].item()
    rows.append((budget, error, churn["value"], churn["violation_low"] + 1, churn["violation_high"] + 1))
    print(f"budget {budget!s:>5}: test error {error:.3f}, test churn {churn['value']:.3f}")

print(f"deployed model on new data: test error {np.mean(deployed.predict(X_te) != y_te):.3f}, churn 0")

# %%
# Fewer changes cost accuracy on the new data; the budget trades one for the other.
budgets, errors, churns, low, high = zip(*rows)
fig, ax = plt.subplots(figsize=(5.5, 4))
ax.errorbar(churns, errors, xerr=[np.subtract(churns, low), np.subtract(high, churns)], fmt="o-", capsize=3)
for b, c, e in zip(budgets, churns, errors):
    ax.annotate("none" if b is None else f"{b:g}", (c, e), textcoords="offset points", xytext=(5, 5))
ax.axhline(np.mean(deployed.predict(X_te) != y_te), color="0.5", ls="--", label="deployed model")
ax.set_xlabel("test churn against the deployed model (95% interval)")
ax.set_ylabel("test error")
ax.set_title("retraining under a churn budget (labels: budget)")
ax.legend()
fig.tight_layout()
