"""
Robust learning: trimmed losses against outliers, DRO for a minority
====================================================================

Two kinds of robustness, two estimators.

* **Gross outliers among the training rows.** ``TrimmedRegressor`` minimises the sum of
  the smallest ``(1 - trim_fraction) n`` losses (SMART, Aravkin et al.): the rows it leaves
  out get weight 0, so a few wild rows cannot pull the fit. Least squares follows them;
  ``HuberRegressor`` bounds the pull of a large residual, but not that of a row far out in
  feature space (a leverage point).
* **A subpopulation the average hides.** ``DROClassifier`` minimises the worst expected loss
  over the reweightings of the training rows within an f-divergence ball around the
  empirical distribution (Ghosh et al.). The worst case puts weight on the rows the model
  fits worst, here mostly those of a small group whose labels follow another direction.
"""

# %%
# Trimmed least squares against leverage outliers
# -----------------------------------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import HuberRegressor, LinearRegression, LogisticRegression
from sklearn.metrics import log_loss

from skrate import DROClassifier, TrimmedRegressor

rng = np.random.default_rng(0)
n, d = 400, 5
X = rng.normal(size=(n, d))
coef = np.array([2.0, -1.0, 0.5, 0.0, 1.5])
y = X @ coef + 0.3 * rng.normal(size=n)
bad = rng.choice(n, size=40, replace=False)  # 10% of the rows corrupted
X[bad, 0] = 4 + rng.normal(size=bad.size)  # far out along the first feature...
y[bad] = -10 + rng.normal(size=bad.size)  # ...with targets from elsewhere

models = {
    "LinearRegression": LinearRegression(),
    "HuberRegressor": HuberRegressor(max_iter=1000),
    "TrimmedRegressor(trim_fraction=0.15)": TrimmedRegressor(trim_fraction=0.15, random_state=0),
}
for name, model in models.items():
    model.fit(X, y)
    print(f"{name:>38}: coefficient error {np.linalg.norm(model.coef_ - coef):.3f}")

trimmed = models["TrimmedRegressor(trim_fraction=0.15)"]
left_out = np.flatnonzero(~trimmed.inlier_mask_)
print(f"the trimmed fit leaves out {left_out.size} rows, "
      f"{np.isin(bad, left_out).mean():.0%} of the corrupted ones")

# %%
# ``trim_fraction`` should be at least the share of outliers. Trimming a few clean rows
# more costs little: those left out are the clean rows with the largest residuals.
#
# Distributionally robust classification for a minority
# -----------------------------------------------------
# A majority (90%) whose label follows the first feature and a minority (10%) whose label
# follows the second. No linear model serves both; the average loss serves the majority.


def sample(n_rows, rng):
    minority = rng.random(n_rows) < 0.1
    X = rng.normal(size=(n_rows, 2))
    signal = np.where(minority, X[:, 1], X[:, 0])
    y = (signal + 0.3 * rng.normal(size=n_rows) > 0).astype(int)
    return X, y, minority


X_tr, y_tr, g_tr = sample(4000, rng)
X_te, y_te, g_te = sample(20000, rng)

radii = [0.0, 0.01, 0.03, 0.1, 0.3]
losses = []
for radius in radii:
    model = (LogisticRegression() if radius == 0 else
             DROClassifier(divergence="kl", radius=radius, random_state=0))
    proba = model.fit(X_tr, y_tr).predict_proba(X_te)
    losses.append([log_loss(y_te[~g_te], proba[~g_te]), log_loss(y_te[g_te], proba[g_te])])
    print(f"KL radius {radius:>4}: test log loss majority {losses[-1][0]:.3f}, "
          f"minority {losses[-1][1]:.3f}")
losses = np.array(losses)

fig, ax = plt.subplots(figsize=(5, 3.5))
ax.plot(radii, losses[:, 0], marker="o", label="majority")
ax.plot(radii, losses[:, 1], marker="o", label="minority")
ax.plot(radii, losses.max(axis=1), linestyle="--", color="k", label="worst group")
ax.set_xscale("symlog", linthresh=0.01)
ax.set_xlabel("KL radius (0: LogisticRegression)")
ax.set_ylabel("test log loss")
ax.legend()
fig.tight_layout()

# %%
# The worst group's loss falls as the ball grows, and the majority pays for it: the
# radius sets the trade-off. DRO bounds expected *losses*, and buys that here mostly by
# shrinking the coefficients towards less confident scores; it turns the boundary towards
# the minority only a little, so the error rates move little. A ball too large for the data
# (a radius of about 1 here) lets the worst case sit on the noisiest rows, and the fit
# degenerates towards a constant score. Choose the radius on held-out rows, e.g. with
# ``GridSearchCV`` and a scorer of the worst group's loss.
