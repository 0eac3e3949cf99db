"""
Constraints that hold on new data
=================================

A model trained to meet ``ppr[race] >= ppr - 0.05`` meets it on its training rows, by
construction. On new rows the rates are new estimates, and the model was chosen *because*
its training estimates looked good, so the constraint often breaks by about the noise of the
smallest slice. ``margin="auto"`` tightens each constraint by a confidence bound on its
estimate (``margin_confidence=0.95`` by default), widened after training to hold for every
mixture of the trained models at once, so that a constraint met with its margin on the
training rows holds in the population with about that probability, although the solution is
chosen on those same rows.

Here: positive prediction rates across race within 0.05 of the overall rate (demographic
parity) on COMPAS, over ten random 70/30 splits, with and without margins. Each split's test violation is itself an estimate
from about 1,600 rows, so it scatters around the population value.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import train_test_split

from skrate import ConstrainedClassifier
from skrate.datasets import load_compas

data = load_compas()
race = data.groups["race"]
constraints = ["ppr[race] <= ppr + 0.05", "ppr[race] >= ppr - 0.05"]
settings = {"no margin": {}, "margin='auto'": {"margin": "auto"},
            "margin='auto', confidence 0.99": {"margin": "auto", "margin_confidence": 0.99}}

violation = {name: [] for name in settings}
error = {name: [] for name in settings}
for seed in range(10):
    X_tr, X_te, y_tr, y_te, g_tr, g_te = train_test_split(
        data.data, data.target, race, test_size=0.3, stratify=race, random_state=seed)
    for name, params in settings.items():
        clf = ConstrainedClassifier(constraints=constraints, random_state=0, **params)
        clf.fit(X_tr, y_tr, groups={"race": g_tr})
        report = clf.constraint_report(X_te, y_te, groups={"race": g_te})
        violation[name].append(report["violation"].max())  # the worst constraint
        error[name].append(np.mean(clf.predict(X_te) != y_te))

for name in settings:
    v = np.array(violation[name])
    print(f"{name:>31}: test violation mean {v.mean():+.4f}, worst split {v.max():+.4f}, "
          f"test error {np.mean(error[name]):.4f}")

# %%
fig, ax = plt.subplots(figsize=(6, 3.2))
for i, name in enumerate(settings):
    ax.scatter(np.full(10, i) + np.linspace(-0.15, 0.15, 10), violation[name], s=18)
    ax.hlines(np.mean(violation[name]), i - 0.25, i + 0.25, color="k")
ax.axhline(0.0, color="grey", linestyle="--")
ax.set_xticks(range(len(settings)), list(settings))
ax.set_ylabel("worst test violation\n(one dot per split, bar: mean)")
fig.tight_layout()

# %%
# Without margins, some splits break the constraint on their test rows: the fit stands at
# the training boundary, and the test estimates scatter around it. The margins move every
# split's violation down, the higher confidence on average a little more (not on every
# split: each fit plays its own game to its own margins), at little cost in error on this
# task. Each split's test estimate has its own noise (a standard deviation of about 0.01
# here), so a worst split a little above zero is no proof of a broken constraint.
# ``constraint_report`` shows the margin used beside each violation, and
# :doc:`/generalization` explains the bound.
