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

Row weights (``weight``, positive, scaled to mean 1) weigh every pair by the product of its
rows' weights, as repeated rows would: the class means, covariances and shares ``p`` are
weighted, and an example's gradient is multiplied by its weight, which keeps it unbiased for
the weighted objective.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from .models._input_scale import column_extremes

__all__ = [
    "ClassStatistics",
    "full_gradient",
    "gradient_and_loss",
    "minibatch_gradient",
    "pairwise_square_loss",
    "quadratic_form",
    "rows_of",
    "saddle_function",
    "smooth_objective",
    "stream_loss",
]


def _column_sum(X, weight: np.ndarray | None = None) -> np.ndarray:
    if weight is not None:
        return np.asarray(X.T @ weight).ravel()
    return np.asarray(X.sum(axis=0)).ravel()


def _total(mask: np.ndarray, weight: np.ndarray | None) -> float:
    """Number of rows in ``mask``, or their total weight."""
    return float(mask.sum()) if weight is None else float(weight[mask].sum())


def rows_of(weight: np.ndarray | None, idx: np.ndarray) -> np.ndarray | None:
    """The weights of the rows ``idx`` (a mask or indices); None for unweighted rows."""
    return None if weight is None else weight[idx]


def _mean_var(s: np.ndarray, weight: np.ndarray | None) -> tuple[float, float]:
    """Mean and (biased) variance of ``s``, weighted."""
    if weight is None:
        return float(s.mean()), float(s.var())
    m = float(np.average(s, weights=weight))
    return m, float(np.average((s - m) ** 2, weights=weight))


# read by every minibatch step, and constant between updates
_DERIVED = ("p", "mean_pos", "mean_neg", "shift")


@dataclass
class ClassStatistics:
    """Running class totals, feature sums and column extremes: all the solvers need besides
    ``X``.

    ``y`` is coded 1 (positive) / 0 (negative). ``n_pos`` and ``n_neg`` count the rows of each
    class, or sum their weights when the rows are weighted.
    """

    n_pos: float
    n_neg: float
    sum_pos: np.ndarray
    sum_neg: np.ndarray
    low: np.ndarray
    high: np.ndarray

    @classmethod
    def from_data(cls, X, y: np.ndarray, weight: np.ndarray | None = None) -> "ClassStatistics":
        stats = cls.empty(X.shape[1])
        stats.update(X, y, weight)
        return stats

    @classmethod
    def empty(cls, n_features: int) -> "ClassStatistics":
        return cls(0.0, 0.0, np.zeros(n_features), np.zeros(n_features),
                   np.full(n_features, np.inf), np.full(n_features, -np.inf))

    def update(self, X, y: np.ndarray, weight: np.ndarray | None = None) -> None:
        """Add a chunk of examples (streaming), weighted by ``weight`` when given; makes new
        arrays, never changes old ones."""
        pos = y == 1
        self.n_pos += _total(pos, weight)
        self.n_neg += _total(~pos, weight)
        self.sum_pos = self.sum_pos + _column_sum(X[pos], rows_of(weight, pos))
        self.sum_neg = self.sum_neg + _column_sum(X[~pos], rows_of(weight, ~pos))
        low, high = column_extremes(X)
        self.low, self.high = np.minimum(self.low, low), np.maximum(self.high, high)
        for name in _DERIVED:  # computed from the totals just changed
            self.__dict__.pop(name, None)

    @property
    def constant(self) -> np.ndarray:
        """Mask of the columns whose values seen so far are all equal (all, before any row).

        Such a column has no gradient, only the rounding error of its centred values: the
        solvers pin its coefficient at zero.
        """
        return ~(self.high > self.low)

    @cached_property
    def p(self) -> float:
        return self.n_pos / (self.n_pos + self.n_neg)

    @cached_property
    def mean_pos(self) -> np.ndarray:
        return self.sum_pos / (self.n_pos or 1.0)

    @cached_property
    def mean_neg(self) -> np.ndarray:
        return self.sum_neg / (self.n_neg or 1.0)

    @cached_property
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


def _weighted_mean_gradient(X, r: np.ndarray, stats: ClassStatistics,
                            weight: np.ndarray | None) -> np.ndarray:
    """``mean_i weight_i (x_i - shift) r_i``: the rows' gradients of factors ``r``, weighted."""
    if weight is not None:
        r = r * weight
    return (X.T @ r - stats.shift * r.sum()) / len(r)


def minibatch_gradient(w: np.ndarray, X, y: np.ndarray, stats: ClassStatistics,
                       affine: bool = True, weight: np.ndarray | None = None) -> np.ndarray:
    """Mean of the per-example gradients over the rows of ``X`` (see the module docstring),
    each multiplied by its row's ``weight`` when given (weights of mean 1 over the data).

    With ``affine=False`` returns the linear part only, ``mean_i H_i w``.
    """
    return _weighted_mean_gradient(X, _residuals(X @ w, y, w, stats, affine), stats, weight)


def full_gradient(w: np.ndarray, X, y: np.ndarray, stats: ClassStatistics,
                  weight: np.ndarray | None = None) -> np.ndarray:
    """Gradient ``Q w - delta`` of the smooth part of the objective (one pass over ``X``)."""
    return minibatch_gradient(w, X, y, stats, weight=weight)


def gradient_and_loss(w: np.ndarray, X, y: np.ndarray, stats: ClassStatistics,
                      weight: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """:func:`full_gradient` and :func:`smooth_objective` from the same pass over ``X``."""
    scores = np.asarray(X @ w).ravel()
    r = _residuals(scores, y, w, stats)
    return (_weighted_mean_gradient(X, r, stats, weight),
            pairwise_square_loss(scores, y, weight))


def pairwise_square_loss(scores: np.ndarray, y: np.ndarray,
                         weight: np.ndarray | None = None) -> float:
    """``1/2 * mean over (positive, negative) pairs of (1 - (s_i - s_j))^2`` in O(n), a pair
    weighted by the product of its rows' ``weight`` when given.

    The mean over pairs of a squared difference is the squared difference of the means plus
    the two (biased) within-class variances.
    """
    pos = y == 1
    (m_pos, v_pos), (m_neg, v_neg) = (_mean_var(scores[rows], rows_of(weight, rows))
                                      for rows in (pos, ~pos))
    try:
        square = (1.0 - (m_pos - m_neg)) ** 2
    except OverflowError:  # Python floats raise where numpy's are inf: a diverged step's loss
        square = np.inf
    return 0.5 * float(square + v_pos + v_neg)


def smooth_objective(w: np.ndarray, X, y: np.ndarray, weight: np.ndarray | None = None) -> float:
    """The loss part of ``P(w)`` on data ``(X, y)`` (one pass over ``X``)."""
    return pairwise_square_loss(np.asarray(X @ w).ravel(), y, weight)


def _centred_gram(X, m: np.ndarray, weight: np.ndarray | None = None) -> np.ndarray:
    """``Xc' W Xc`` for the centred ``Xc = X - 1 m'`` of a sparse ``X``, without densifying it
    (``W`` the diagonal of the row weights, the identity when None).

    ``X'X / n - m m'`` would cancel catastrophically on columns with a large offset. Instead the
    stored entries are centred (``S``) and the implicit zeros, ``-m`` once centred, are counted
    (weighed) through the stored pattern ``P``: every entry of the result is a sum of products
    of centred values (split by which of the two entries are stored), as in the dense
    computation.
    """
    S = sp.csr_matrix(X, copy=True)
    S.sum_duplicates()
    P = S.copy()
    P.data[:] = 1.0
    S.data -= m[S.indices]
    total = float(X.shape[0])
    WP, WS = P, S
    if weight is not None:
        total = float(weight.sum())
        WP, WS = (sp.csr_matrix(sp.diags(weight) @ A) for A in (P, S))
    both = (P.T @ WP).toarray()  # rows where both columns are stored
    stored = both.diagonal()
    neither = total - stored[:, None] - stored[None, :] + both
    # sum over the rows where column j is stored and column k is not, of S_ij
    only = _column_sum(S, weight)[:, None] - (S.T @ WP).toarray()
    cross = only * m[None, :]
    return (S.T @ WS).toarray() - cross - cross.T + np.outer(m, m) * neither


def quadratic_form(X, y: np.ndarray,
                   weight: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(Q, delta)`` with ``loss(w) = w' Q w / 2 - delta' w + 1/2``, the rows weighted by
    ``weight`` when given.

    Costs O(n d^2); ``Q`` is dense ``d x d``.
    """
    pos = y == 1
    Q = np.zeros((X.shape[1], X.shape[1]))
    means = []
    for mask in (pos, ~pos):
        Xc, wc = X[mask], rows_of(weight, mask)
        total = _total(mask, weight)
        m = _column_sum(Xc, wc) / total
        if sp.issparse(Xc):
            Q += _centred_gram(Xc, m, wc) / total
        else:
            Xc = Xc - m
            Q += (Xc.T if wc is None else Xc.T * wc) @ Xc / total
        means.append(m)
    delta = means[0] - means[1]
    Q += np.outer(delta, delta)
    return 0.5 * (Q + Q.T), delta


def stream_loss(w: np.ndarray, X, y: np.ndarray, stats: ClassStatistics,
                weight: np.ndarray | None = None) -> float:
    """``1/2 * mean_i (1 - w.(x_i - m_other))^2`` over the rows of ``X`` (sign flipped for
    negatives; a mean weighted by ``weight`` when given), with the running class means of
    ``stats``.

    Each term is a lower bound on the row's mean pairwise loss against the other class (that
    mean is this term plus the other class's score variance): a loss estimate for a chunk of a
    stream, which need not hold both classes. It is 1/2 at ``w = 0``.
    """
    r = _residuals(np.asarray(X @ w).ravel(), y, w, stats)
    return 0.5 * float(np.average((r * np.where(y == 1, stats.p, 1.0 - stats.p)) ** 2,
                                  weights=weight))


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
