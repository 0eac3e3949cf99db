"""The square-loss AUC objective, its saddle reformulation and its gradients.

With positives ``x`` and negatives ``x'`` (``y`` coded 1 / 0), skrate minimises over ``w``::

    P(w) = 1/2 * mean_{i in +, j in -} (1 - w.(x_i - x_j))^2  +  penalty(w)
         = 1/2 * [(1 - w.delta)^2 + w' S_+ w + w' S_- w]       +  penalty(w)

with class means ``m_+``, ``m_-``, ``delta = m_+ - m_-`` and class covariances ``S_+``, ``S_-``
(normalised by the class sizes). ``P`` is a quadratic: ``grad = Q w - delta + grad penalty``
with ``Q = S_+ + S_- + delta delta'``.

Ying, Wen and Lyu (2016) write ``p (1 - p) * (2 * loss - 1)`` as the saddle problem
``min_{w,a,b} max_alpha E[F(w, a, b, alpha; z)]`` (see :func:`saddle_function`); at the inner
optimum ``a = w.m_+``, ``b = w.m_-``, ``alpha = w.(m_- - m_+)`` the gradient of ``F`` in
``w`` for one example, divided by ``2 p (1 - p)``, is::

    y = 1:  (x / p)       * (w.(x - m_-) - 1)
    y = 0:  (x / (1 - p)) * (w.(x - m_+) + 1)

an unbiased estimate of ``Q w - delta``. It stays unbiased when every ``x`` is shifted by the
same vector, so the solvers shift by the overall mean (smaller variance, and constant features
get a zero gradient up to rounding) without copying ``X`` (sparse input stays sparse).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = [
    "ClassStatistics",
    "column_extremes",
    "full_gradient",
    "gradient_and_loss",
    "minibatch_gradient",
    "pairwise_square_loss",
    "quadratic_form",
    "saddle_function",
    "smooth_objective",
    "stream_loss",
]


def _column_sum(X) -> np.ndarray:
    return np.asarray(X.sum(axis=0)).ravel()


def column_extremes(X) -> tuple[np.ndarray, np.ndarray]:
    """Smallest and largest value of every column (implicit zeros included for sparse ``X``)."""
    if sp.issparse(X):
        return tuple(np.asarray(m.toarray()).ravel() for m in (X.min(axis=0), X.max(axis=0)))
    return X.min(axis=0), X.max(axis=0)


@dataclass
class ClassStatistics:
    """Running class counts, feature sums and column extremes: all the solvers need besides
    ``X``.

    ``y`` is coded 1 (positive) / 0 (negative).
    """

    n_pos: int
    n_neg: int
    sum_pos: np.ndarray
    sum_neg: np.ndarray
    low: np.ndarray
    high: np.ndarray

    @classmethod
    def from_data(cls, X, y: np.ndarray) -> "ClassStatistics":
        pos = y == 1
        return cls(int(pos.sum()), int((~pos).sum()), _column_sum(X[pos]),
                   _column_sum(X[~pos]), *column_extremes(X))

    @classmethod
    def empty(cls, n_features: int) -> "ClassStatistics":
        return cls(0, 0, np.zeros(n_features), np.zeros(n_features),
                   np.full(n_features, np.inf), np.full(n_features, -np.inf))

    def update(self, X, y: np.ndarray) -> None:
        """Add a chunk of examples (streaming); makes new arrays, never changes old ones."""
        pos = y == 1
        self.n_pos += int(pos.sum())
        self.n_neg += int((~pos).sum())
        self.sum_pos = self.sum_pos + _column_sum(X[pos])
        self.sum_neg = self.sum_neg + _column_sum(X[~pos])
        low, high = column_extremes(X)
        self.low, self.high = np.minimum(self.low, low), np.maximum(self.high, high)

    @property
    def constant(self) -> np.ndarray:
        """Mask of the columns whose values seen so far are all equal (all, before any row).

        Such a column has no gradient, only the rounding error of its centred values: the
        solvers pin its coefficient at zero.
        """
        return ~(self.high > self.low)

    @property
    def p(self) -> float:
        return self.n_pos / (self.n_pos + self.n_neg)

    @property
    def mean_pos(self) -> np.ndarray:
        return self.sum_pos / max(self.n_pos, 1)

    @property
    def mean_neg(self) -> np.ndarray:
        return self.sum_neg / max(self.n_neg, 1)

    @property
    def shift(self) -> np.ndarray:
        """Overall mean, subtracted implicitly from every example."""
        return (self.sum_pos + self.sum_neg) / (self.n_pos + self.n_neg)

    def ready(self) -> bool:
        return self.n_pos > 0 and self.n_neg > 0


def _residuals(scores: np.ndarray, y: np.ndarray, w: np.ndarray, stats: ClassStatistics,
               affine: bool = True) -> np.ndarray:
    """Per-example factor ``r`` such that the example's gradient is ``(x - shift) * r``.

    ``affine=False`` drops the constant +-1 terms: the linear part ``H_i w``, which is what the
    variance-reduced difference ``g_i(w) - g_i(w_snapshot)`` needs.
    """
    p = stats.p
    one = 1.0 if affine else 0.0
    # w.(x - m_-) for positives, w.(x - m_+) for negatives: the shift cancels here.
    return np.where(y == 1, (scores - stats.mean_neg @ w - one) / p,
                    (scores - stats.mean_pos @ w + one) / (1.0 - p))


def minibatch_gradient(w: np.ndarray, X, y: np.ndarray, stats: ClassStatistics,
                       affine: bool = True) -> np.ndarray:
    """Mean of the per-example gradients over the rows of ``X`` (see the module docstring).

    With ``affine=False`` returns the linear part only, ``mean_i H_i w``.
    """
    r = _residuals(X @ w, y, w, stats, affine)
    return (X.T @ r - stats.shift * r.sum()) / len(r)


def full_gradient(w: np.ndarray, X, y: np.ndarray, stats: ClassStatistics) -> np.ndarray:
    """Gradient ``Q w - delta`` of the smooth part of the objective (one pass over ``X``)."""
    return minibatch_gradient(w, X, y, stats)


def gradient_and_loss(w: np.ndarray, X, y: np.ndarray,
                      stats: ClassStatistics) -> tuple[np.ndarray, float]:
    """:func:`full_gradient` and :func:`smooth_objective` from the same pass over ``X``."""
    scores = np.asarray(X @ w).ravel()
    r = _residuals(scores, y, w, stats)
    return (X.T @ r - stats.shift * r.sum()) / len(r), pairwise_square_loss(scores, y)


def pairwise_square_loss(scores: np.ndarray, y: np.ndarray) -> float:
    """``1/2 * mean over (positive, negative) pairs of (1 - (s_i - s_j))^2`` in O(n).

    The mean over pairs of a squared difference is the squared difference of the means plus
    the two (biased) within-class variances.
    """
    s_pos, s_neg = scores[y == 1], scores[y != 1]
    gap = 1.0 - (s_pos.mean() - s_neg.mean())
    return 0.5 * float(gap**2 + s_pos.var() + s_neg.var())


def smooth_objective(w: np.ndarray, X, y: np.ndarray) -> float:
    """The loss part of ``P(w)`` on data ``(X, y)`` (one pass over ``X``)."""
    return pairwise_square_loss(np.asarray(X @ w).ravel(), y)


def _centred_gram(X, m: np.ndarray) -> np.ndarray:
    """``Xc' Xc`` for the centred ``Xc = X - 1 m'`` of a sparse ``X``, without densifying it.

    ``X'X / n - m m'`` would cancel catastrophically on columns with a large offset. Instead the
    stored entries are centred (``S``) and the implicit zeros, ``-m`` once centred, are counted
    through the stored pattern ``P``: every entry of the result is a sum of products of centred
    values (split by which of the two entries are stored), as in the dense computation.
    """
    S = sp.csr_matrix(X, copy=True)
    S.sum_duplicates()
    P = S.copy()
    P.data[:] = 1.0
    S.data -= m[S.indices]
    both = (P.T @ P).toarray()  # rows where both columns are stored
    stored = both.diagonal()
    neither = X.shape[0] - stored[:, None] - stored[None, :] + both
    # sum over the rows where column j is stored and column k is not, of S_ij
    only = _column_sum(S)[:, None] - (S.T @ P).toarray()
    cross = only * m[None, :]
    return (S.T @ S).toarray() - cross - cross.T + np.outer(m, m) * neither


def quadratic_form(X, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Q, delta)`` with ``loss(w) = w' Q w / 2 - delta' w + 1/2``.

    Costs O(n d^2); ``Q`` is dense ``d x d``.
    """
    pos = y == 1
    Q = np.zeros((X.shape[1], X.shape[1]))
    means = []
    for mask in (pos, ~pos):
        Xc = X[mask]
        m = _column_sum(Xc) / Xc.shape[0]
        if sp.issparse(Xc):
            Q += _centred_gram(Xc, m) / Xc.shape[0]
        else:
            Xc = Xc - m
            Q += Xc.T @ Xc / Xc.shape[0]
        means.append(m)
    delta = means[0] - means[1]
    Q += np.outer(delta, delta)
    return 0.5 * (Q + Q.T), delta


def stream_loss(w: np.ndarray, X, y: np.ndarray, stats: ClassStatistics) -> float:
    """``1/2 * mean_i (1 - w.(x_i - m_other))^2`` over the rows of ``X`` (sign flipped for
    negatives), with the running class means of ``stats``.

    Each term is a lower bound on the row's mean pairwise loss against the other class (that
    mean is this term plus the other class's score variance): a loss estimate for a chunk of a
    stream, which need not hold both classes. It is 1/2 at ``w = 0``.
    """
    r = _residuals(np.asarray(X @ w).ravel(), y, w, stats)
    return 0.5 * float(np.mean((r * np.where(y == 1, stats.p, 1.0 - stats.p)) ** 2))


def saddle_function(w: np.ndarray, a: float, b: float, alpha: float, X, y: np.ndarray,
                    p: float) -> float:
    """Sample mean of Ying et al.'s ``F(w, a, b, alpha; z)`` over the rows of ``X``.

    ``F = (1-p)(w.x - a)^2 [y=1] + p (w.x - b)^2 [y=0]
    + 2 (1 + alpha) (p w.x [y=0] - (1-p) w.x [y=1]) - p (1-p) alpha^2``.

    References
    ----------
    Ying, Y., Wen, L. and Lyu, S. Stochastic Online AUC Maximization. NeurIPS 2016.
    """
    s = np.asarray(X @ w).ravel()
    pos = y == 1
    value = np.where(pos, (1 - p) * (s - a) ** 2 - 2 * (1 + alpha) * (1 - p) * s,
                     p * (s - b) ** 2 + 2 * (1 + alpha) * p * s)
    return float(value.mean() - p * (1 - p) * alpha**2)
