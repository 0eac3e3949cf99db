"""Centred, scaled columns of a sparse matrix, kept sparse.

The trimmed solvers work on the preconditioned columns ``Z = (X - offset) / scale``.
Subtracting the offset from a sparse ``X`` would fill it; :class:`CentredColumns` holds ``X``,
``offset`` and ``scale`` apart and does the products the solvers take (``Z @ W``, ``Z.T @ M``,
rows ``Z[rows]``, a further column scaling ``Z / D``) with the centring folded into a rank-one
term. :func:`row_sq_norms`, :func:`weighted_column_sq`, :func:`weighted_gram` and
:func:`largest_eigenvalue` take either form, so the solvers need not know which they have.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, eigsh
from sklearn.utils.extmath import row_norms

#: Most columns (with the intercept's) whose Gram matrix is formed for its eigenvalues.
GRAM_MAX = 2000


class CentredColumns:
    """The columns ``(X - offset) / scale`` of a sparse ``X``, without forming them.

    Held as the scaled columns ``S = X / scale`` (CSR) and their shift ``u = offset / scale``:
    ``Z = S - 1 u'``. Every product is taken in these units, where a column of entries near
    ``1e300`` or ``1e-300`` is of order 1, so nothing overflows or underflows that would not in
    ``Z`` itself.

    Parameters
    ----------
    S : sparse matrix of shape (n_samples, n_features)
        The scaled columns.
    shift : ndarray of shape (n_features,)
    """

    ndim = 2

    def __init__(self, S: sp.csr_matrix, shift: np.ndarray):
        self.S, self.shift = sp.csr_matrix(S), shift

    @classmethod
    def of(cls, X, offset: np.ndarray, scale: np.ndarray) -> "CentredColumns":
        """``(X - offset) / scale`` of a sparse ``X`` (left as it is)."""
        S = sp.csr_matrix(X, copy=True)
        S.data = S.data / scale[S.indices]  # divided, as the dense columns are, not times 1 / scale
        return cls(S, offset / scale)

    @property
    def shape(self) -> tuple[int, int]:
        return self.S.shape

    def __getitem__(self, rows) -> "CentredColumns":
        return CentredColumns(self.S[rows], self.shift)

    def __truediv__(self, D: np.ndarray) -> "CentredColumns":
        """The columns divided once more, by ``D`` (n_features,)."""
        return CentredColumns.of(self.S, self.shift, D)

    def __matmul__(self, W: np.ndarray) -> np.ndarray:
        return np.asarray(self.S @ W) - self.shift @ W

    @property
    def T(self) -> "_Transposed":
        return _Transposed(self)


class _Transposed:
    """``Z.T`` of a :class:`CentredColumns` ``Z``, for the products ``Z.T @ M``."""

    def __init__(self, Z: CentredColumns):
        self.Z = Z

    def __matmul__(self, M: np.ndarray) -> np.ndarray:
        Z = self.Z
        return np.asarray(Z.S.T @ M) - np.multiply.outer(Z.shift, M.sum(axis=0))


def row_sq_norms(Z) -> np.ndarray:
    """``||z_i||^2`` of each row of ``Z`` (an array or :class:`CentredColumns`)."""
    if not isinstance(Z, CentredColumns):
        return row_norms(Z, squared=True)
    S, u = Z.S, Z.shift
    sq = row_norms(S, squared=True) - 2.0 * (S @ u) + u @ u
    return np.maximum(sq, 0.0)  # the expansion rounds a row at the offset to about -eps


def weighted_column_sq(Z, c: np.ndarray) -> np.ndarray:
    """``c @ (Z * Z)``: the weighted sum of squares of each column."""
    if not isinstance(Z, CentredColumns):
        return c @ (Z * Z)
    S, u = Z.S, Z.shift
    sq = (S.multiply(S).T @ c) - 2.0 * u * (S.T @ c) + u * u * c.sum()
    return np.maximum(sq, 0.0)


def weighted_gram(Z, c: np.ndarray | None, fit_intercept: bool) -> np.ndarray:
    """``Zt.T @ (c[:, None] * Zt)``, ``Zt`` the columns of ``Z`` with a column of ones when
    there is an intercept; ``c`` None for weights of 1."""
    n = Z.shape[0]
    if not isinstance(Z, CentredColumns):
        Zt = np.hstack([Z, np.ones((n, 1))]) if fit_intercept else Z
        return Zt.T @ Zt if c is None else Zt.T @ (c[:, None] * Zt)
    c = np.ones(n) if c is None else c
    S, u = Z.S, Z.shift
    Sc = np.asarray(S.T @ c)  # sum_i c_i s_i
    total = float(c.sum())
    # (S - 1 u')' C (S - 1 u') = S'CS - Sc u' - u Sc' + total u u'
    G = (S.T @ sp.diags(c) @ S).toarray() - np.outer(Sc, u) - np.outer(u, Sc) + total * np.outer(u, u)
    if not fit_intercept:
        return G
    side = Sc - total * u
    return np.block([[G, side[:, None]], [side[None, :], np.array([[total]])]])


def largest_eigenvalue(Z, c: np.ndarray | None, fit_intercept: bool) -> float:
    """The largest eigenvalue of :func:`weighted_gram`, a bound on the curvature of a weighted
    sum of losses of the scores ``Z @ W + b`` (``c`` None for weights of 1).

    Up to ``GRAM_MAX`` columns, of the Gram matrix itself. Beyond, by Lanczos iterations on
    its products: forming ``d x d`` numbers and their ``O(d^3)`` eigendecomposition would
    not fit wide sparse data (text) in memory or time, and the trace, a cheap bound, exceeds
    the eigenvalue by up to the rank, which shrank the first steps as much. Lanczos approaches the eigenvalue from
    below; ``1e-6`` of relative error, then ``1e-3`` of margin, keeps it a bound.
    """
    d = Z.shape[1] + int(fit_intercept)
    if d <= GRAM_MAX:
        return float(np.linalg.eigvalsh(weighted_gram(Z, c, fit_intercept))[-1])

    def product(v):
        v = np.ravel(v)
        u = Z @ v[: Z.shape[1]] + (v[-1] if fit_intercept else 0.0)
        u = u if c is None else c * u
        g = Z.T @ u
        return np.append(g, u.sum()) if fit_intercept else g

    # a start of fixed seed: the fit must not depend on ARPACK's random one, and a structured
    # start (all ones) can be orthogonal to the top eigenvector, which Lanczos then misses
    v0 = np.random.default_rng(0).standard_normal(d)
    if not np.any(product(v0)):  # the zero matrix (no entries, no intercept): ARPACK refuses it
        return 0.0
    op = LinearOperator((d, d), matvec=product, dtype=np.float64)
    return float(eigsh(op, k=1, which="LA", tol=1e-6, v0=v0, return_eigenvectors=False)[0]) * (1.0 + 1e-3)
