"""
Rate constraints on a gradient-boosting model
=============================================

``ConstrainedClassifier(estimator=...)`` trains any scikit-learn classifier that accepts
``sample_weight`` under rate constraints. Each iteration fits a copy of the estimator to a
weighted relabelling of the data (the cost-sensitive reduction of the current Lagrangian);
the multipliers are updated on the true rates; a linear program mixes the fitted models into
a randomised classifier that meets the constraints on the training data with at most m + 1
of them (Cotter et al., JMLR 2019).

Here the estimator is a ``HistGradientBoostingClassifier`` on COMPAS, and the goal is
demographic parity over race: each race's rate of positive predictions within 0.05 of the
overall rate.
"""

# %%
# An unconstrained model and its audit
# ------------------------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import train_test_split

from skrate import ConstrainedClassifier
from skrate.datasets import load_compas
from skrate.metrics import audit

data = load_compas(as_frame=True)
X_tr, X_te, y_tr, y_te, g_tr, g_te = train_test_split(
    data.data, data.target, data.groups, test_size=0.3, stratify=data.target, random_state=0)
goal = ["ppr[race] <= ppr + 0.05", "ppr[race] >= ppr - 0.05"]
boosting = HistGradientBoostingClassifier(max_iter=20, random_state=0)

plain = boosting.fit(X_tr, y_tr)
print(audit(plain, X_te, y_te, groups=g_te, constraints=goal, metrics=("ppr", "tpr"),
            n_bootstrap=300, random_state=0))

# %%
# The same model under the constraints
# ------------------------------------
# ``solver="oracle_proxy_lagrangian"`` plays the proxy-Lagrangian game with the boosting model
# as the best-response oracle. Fitting stops once the linear program over the fitted models has
# stopped improving and one more fit, at the program's own multipliers, finds nothing better.
fair = ConstrainedClassifier(goal, estimator=boosting, solver="oracle_proxy_lagrangian",
                             random_state=0).fit(X_tr, y_tr, groups=g_tr)
weights = fair.solutions_["m_stochastic"]
kept = [k for k, e in enumerate(fair.estimators_) if e is not None]
print(f"{fair.n_iter_} models fitted; the returned mixture uses {np.count_nonzero(weights)} "
      f"(at most m + 1 = {len(fair.constraints_) + 1}) and {len(kept)} are kept after fit")
# fit_report_: each constraint's margin and its violation (<= 0 is met) on the training rows;
# "held_out" is NaN, as no validation_fraction held rows out
print(fair.fit_report_)
print(audit(fair, X_te, y_te, groups=g_te, constraints=goal, metrics=("ppr", "tpr"),
            n_bootstrap=300, random_state=0))

# %%
# Every fitted model, and the mixture the linear program picks
# ------------------------------------------------------------
# Each dot is one fitted model: its training error against its largest constraint value
# (``<= 0`` is met). Early models answer multipliers that weigh fairness heavily; later ones
# move towards accuracy. The program weighs models so that the mixture's expected constraint
# values are at most 0 at the least expected error.
worst = fair.train_constraints_.max(axis=0)
fig, ax = plt.subplots(figsize=(6, 4))
ax.scatter(worst, fair.train_objective_, c=np.arange(fair.n_iter_), cmap="viridis", s=25,
           label="fitted models (colour: iteration)")
ax.scatter(worst[weights > 0], fair.train_objective_[weights > 0], facecolors="none",
           edgecolors="red", s=120, label="in the m-stochastic mixture")
ax.scatter([worst @ weights], [fair.train_objective_ @ weights], marker="*", s=200, c="red",
           label="the mixture (in expectation)")
ax.axvline(0.0, color="grey", lw=0.8)
ax.set_xlabel("largest constraint value on training data")
ax.set_ylabel("training error")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# ``predict_proba`` is the mixture's exact probability of saying 1; ``predict`` draws from it,
# reproducibly per row. ``solution="best"`` switches to the best single model instead.
for name in ("m_stochastic", "best"):
    proba = fair.predict_proba(X_te, solution=name)[:, 1]
    error = np.mean(np.where(y_te == 1, 1 - proba, proba))
    print(f"{name:>12}: test error {error:.3f}")
