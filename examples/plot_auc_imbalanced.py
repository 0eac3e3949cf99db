"""
ROC-AUC on an imbalanced problem
================================

With 3% positives, accuracy says little and a model should rank well. ``AUCClassifier``
maximises a square-loss surrogate of the ROC-AUC with the variance-reduced stochastic
proximal algorithm (VRSPAM, Dan and Sahoo), here compared with a logistic regression. On
this data both rank about equally well (the logistic loss is slightly better here); the AUC
learner's point is that it optimises the ranking directly, in a few passes over the rows
(never over the pairs: its memory does not grow with their number), and takes elastic-net
penalties; ``partial_fit`` learns from a stream chunk by chunk.
"""

# %%
import matplotlib.pyplot as plt
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import RocCurveDisplay, roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skrate import AUCClassifier

X, y = make_classification(n_samples=6000, n_features=20, n_informative=6, weights=[0.97],
                           flip_y=0.01, class_sep=0.8, random_state=0)
X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.5, stratify=y, random_state=0)
print(f"{y_tr.mean():.1%} positives among {len(y_tr)} training rows")

models = {
    "AUCClassifier (VRSPAM)": make_pipeline(StandardScaler(), AUCClassifier(random_state=0)),
    "LogisticRegression": make_pipeline(StandardScaler(), LogisticRegression()),
}
fig, ax = plt.subplots(figsize=(5, 5))
for name, model in models.items():
    model.fit(X_tr, y_tr)
    score = model.decision_function(X_te)
    print(f"{name:>24}: test ROC-AUC {roc_auc_score(y_te, score):.4f}")
    RocCurveDisplay.from_predictions(y_te, score, name=name, ax=ax)
ax.set_title("ROC curves on held-out rows")
fig.tight_layout()
