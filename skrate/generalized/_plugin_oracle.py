"""A cost-sensitive oracle from a plug-in class-probability model (Algorithm 1's theta-player).

For any linear combination of rates ``sum_k c_k rate_k = sum_i a_i yhat_i + const`` (``a = A.T c``
on the training rows) the Bayes-optimal cost-sensitive classifier thresholds the class
probability ``eta(x)`` at a cost-dependent point (Narasimhan et al. 2015; Koyejo et al. 2014).
The oracle fits ``eta`` once, by L2-regularised logistic regression, and answers every cost
vector with the thresholds of ``eta`` that minimise the combination exactly on the training
rows: a sort once, then one cumulative sum per call. Each answer is a linear model
``x . w + (b - t)``, so the candidates are ordinary linear score functions.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize
from scipy.special import expit

from ..models import Design


def fit_logistic(X, y01: np.ndarray, sample_weight: np.ndarray, alpha: float,
                 init: np.ndarray | None = None) -> np.ndarray:
    """``[w, b]`` of L2-regularised logistic regression (mean weighted log-loss + alpha/2 |w|^2),
    started from ``init`` (default: zeros)."""
    design = Design(X)
    Xd, XT = design.X, design.T
    sw = sample_weight / sample_weight.sum()
    sign = 2.0 * y01 - 1.0

    def fun(theta):
        z = sign * (Xd @ theta[:-1] + theta[-1])
        loss = sw @ np.logaddexp(0.0, -z) + 0.5 * alpha * theta[:-1] @ theta[:-1]
        g = -sw * sign * expit(-z)
        return loss, np.append(XT @ g + alpha * theta[:-1], g.sum())

    start = np.zeros(Xd.shape[1] + 1) if init is None else init
    res = minimize(fun, start, jac=True, method="L-BFGS-B", options={"maxiter": 500})
    return res.x


def cell_decoders(X, cells: np.ndarray, tol: float = 1e-6):
    """``(V, c)`` with ``X @ V + c`` the 0/1 indicator of every cell, or None when not exact.

    When the group columns are one-hot features of ``X`` (the usual case) each cell's
    indicator is an exact linear function of ``X``; a per-cell threshold then is a linear
    model on ``X``, which needs no group at prediction time. The decoder is sought among the
    columns constant within every cell, through their values per cell: a small system of
    cells x columns, never a dense copy of ``X`` (a sparse ``X`` stays sparse).
    """
    Xd = Design(X).X
    n = Xd.shape[0]
    n_cells = int(cells.max()) + 1
    # disjoint indicators span n_cells dimensions, [X, 1] at most d + 1; and a cell per row is
    # fitted by any columns that span the rows, which says nothing of new rows
    if n_cells > Xd.shape[1] + 1 or n_cells >= n:
        return None
    member = sp.csr_matrix((np.ones(n), (cells, np.arange(n))), shape=(n_cells, n))
    count = np.maximum(np.bincount(cells, minlength=n_cells), 1)[:, None]
    squares = Xd.multiply(Xd) if sp.issparse(Xd) else np.square(Xd)
    mean = _dense(member @ Xd) / count
    spread = _dense(member @ squares) / count - mean**2
    flat = np.flatnonzero(np.all(spread <= (tol * np.maximum(np.abs(mean), 1.0)) ** 2, axis=0))
    values = np.column_stack([mean[:, flat], np.ones(n_cells)])
    coef, _, rank, _ = np.linalg.lstsq(values, np.eye(n_cells), rcond=None)
    if rank < n_cells:
        return None
    V = np.zeros((Xd.shape[1], n_cells))
    V[flat] = coef[:-1]
    # exact on every row, not only on the cells' means
    fitted = Xd[:, flat] @ coef[:-1] + coef[-1]
    if np.abs(fitted - (cells[:, None] == np.arange(n_cells)[None, :])).max() > tol:
        return None
    return V, coef[-1]


def _dense(a) -> np.ndarray:
    return a.toarray() if sp.issparse(a) else np.asarray(a)


class PluginOracle:
    """Best responses over per-cell thresholds of a fitted class-probability model.

    Parameters
    ----------
    X : array-like of shape (n, d)
    theta_eta : ndarray of shape (d + 1,)
        Logistic-regression parameters of ``eta``.
    cells : ndarray of shape (n,) of int, optional
        The group cell of every row (the intersections of the group columns the metrics
        name). Costs differ only by cell and label, so the Bayes-optimal answer thresholds
        ``eta`` per cell; that is used when the cells are exact linear functions of ``X``
        (one-hot group features), else a single threshold.
    sample_weight : ndarray of shape (n,), optional
        Rows of weight 0 cost nothing either side of a threshold and place no cut point, so
        the answer is the same as without those rows.
    n_decode : int, optional
        Decode the cells from the first ``n_decode`` columns of ``X`` only (default: all).
        When the last column is a fitted model's score, decoding must not lean on it: it
        separates the training rows' cells by chance, not on new rows.
    """

    def __init__(self, X, theta_eta: np.ndarray, cells: np.ndarray | None = None,
                 sample_weight: np.ndarray | None = None, n_decode: int | None = None):
        self.theta_eta = np.asarray(theta_eta, dtype=float)
        Xd = Design(X).X
        s = Xd @ self.theta_eta[:-1] + self.theta_eta[-1]
        n = s.shape[0]
        decoders = None
        if cells is not None and np.unique(cells).shape[0] >= 2:
            d = Xd.shape[1] if n_decode is None else n_decode
            decoders = cell_decoders(Xd[:, :d], cells)
            if decoders is not None and d < Xd.shape[1]:  # zero weight on the columns not used
                V, c = decoders
                decoders = (np.vstack([V, np.zeros((Xd.shape[1] - d, V.shape[1]))]), c)
        self.cells = np.zeros(n, dtype=int) if decoders is None else np.asarray(cells)
        self.decoders = decoders
        self.per_cell = decoders is not None
        self.groups = []
        weighted = np.ones(n, bool) if sample_weight is None else np.asarray(sample_weight) > 0
        for g in range(self.cells.max() + 1):
            rows = np.flatnonzero((self.cells == g) & weighted)
            order = rows[np.argsort(-s[rows], kind="stable")]
            s_sorted = s[order]
            if s_sorted.size == 0:
                self.groups.append((order, np.zeros(1), np.ones(1, bool)))
                continue
            # cut points: above every score, between consecutive scores, below every score
            cuts = np.concatenate(([s_sorted[0] + 1.0], 0.5 * (s_sorted[:-1] + s_sorted[1:]), [s_sorted[-1] - 1.0]))
            distinct = np.concatenate(([True], s_sorted[1:] < s_sorted[:-1], [True]))
            self.groups.append((order, cuts, distinct))

    def best_response(self, per_example_cost: np.ndarray) -> np.ndarray:
        """Parameters of the thresholded model minimising ``sum_i cost_i 1[f(x_i) > 0]``."""
        t = np.zeros(len(self.groups))
        for g, (order, cuts, distinct) in enumerate(self.groups):
            total = np.concatenate(([0.0], np.cumsum(per_example_cost[order])))
            total[~distinct] = np.inf  # a cut inside a run of tied scores is not realisable
            # equal costs summed in another order (weights vs repeated rows) must tie exactly
            total = np.round(total, 12)
            t[g] = cuts[int(np.argmin(total))]
        theta = self.theta_eta.copy()
        if self.per_cell:
            V, c = self.decoders
            theta[:-1] -= V @ t
            theta[-1] -= c @ t
        else:
            theta[-1] -= t[0]
        return theta
