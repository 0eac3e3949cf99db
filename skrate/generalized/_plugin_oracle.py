"""A cost-sensitive oracle from a plug-in class-probability model (Algorithm 1's theta-player).

For any linear combination of rates ``sum_k c_k rate_k = sum_i a_i yhat_i + const`` (``a = A.T c``
on the training rows) the Bayes-optimal cost-sensitive classifier thresholds the class
probability ``eta(x)`` at a cost-dependent point (Narasimhan et al. 2015; Koyejo et al. 2014).
The oracle fits ``eta`` once, by L2-regularised logistic regression, and answers every cost
vector with the threshold of ``eta`` that minimises the combination exactly on the training
rows: a sort once, then one cumulative sum per call. Each answer is a linear model
``x . w + (b - t)``, so the candidates are ordinary linear score functions.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from ..models import Design


def fit_logistic(X, y01: np.ndarray, sample_weight: np.ndarray, alpha: float) -> np.ndarray:
    """``[w, b]`` of L2-regularised logistic regression (mean weighted log-loss + alpha/2 |w|^2)."""
    design = Design(X)
    Xd, XT = design.X, design.T
    sw = sample_weight / sample_weight.sum()
    sign = 2.0 * y01 - 1.0

    def fun(theta):
        z = sign * (Xd @ theta[:-1] + theta[-1])
        loss = sw @ np.logaddexp(0.0, -z) + 0.5 * alpha * theta[:-1] @ theta[:-1]
        g = -sw * sign * expit(-z)
        return loss, np.append(XT @ g + alpha * theta[:-1], g.sum())

    res = minimize(fun, np.zeros(Xd.shape[1] + 1), jac=True, method="L-BFGS-B", options={"maxiter": 500})
    return res.x


class PluginOracle:
    """Best responses over the thresholds of a fitted class-probability model.

    Parameters
    ----------
    X : array-like of shape (n, d)
    theta_eta : ndarray of shape (d + 1,)
        Logistic-regression parameters of ``eta``.
    """

    def __init__(self, X, theta_eta: np.ndarray):
        self.theta_eta = np.asarray(theta_eta, dtype=float)
        s = Design(X).X @ self.theta_eta[:-1] + self.theta_eta[-1]
        self.order = np.argsort(-s, kind="stable")
        s_sorted = s[self.order]
        # cut points: above every score, between consecutive distinct scores, below every score
        mids = 0.5 * (s_sorted[:-1] + s_sorted[1:])
        self.cuts = np.concatenate(([s_sorted[0] + 1.0], mids, [s_sorted[-1] - 1.0]))
        self.distinct = np.concatenate(([True], s_sorted[1:] < s_sorted[:-1], [True]))

    def best_response(self, per_example_cost: np.ndarray) -> np.ndarray:
        """Parameters of the thresholded model minimising ``sum_i cost_i 1[f(x_i) > 0]``."""
        total = np.concatenate(([0.0], np.cumsum(per_example_cost[self.order])))
        total[~self.distinct] = np.inf  # a cut inside a run of tied scores is not realisable
        k = int(np.argmin(total))
        theta = self.theta_eta.copy()
        theta[-1] -= self.cuts[k]
        return theta
