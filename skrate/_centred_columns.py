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
    """The columns ``(X - offset) / scale`` of a sparse ``X`` (CSR), without forming them.

    Parameters
    ----------
    X : sparse matrix of shape (n_samples, n_features)
    offset, scale : ndarray of shape (n_features,)
    """

    ndim = 2

    def __init__(self, X: sp.csr_matrix, offset: np.ndarray, scale: np.ndarray):
        self.X, self.offset, self.scale = sp.csr_matrix(X), offset, scale

    @property
    def shape(self) -> tuple[int, int]:
        return self.X.shape

    def __getitem__(self, rows) -> "CentredColumns":
        return CentredColumns(self.X[rows], self.offset, self.scale)

    def __truediv__(self, D: np.ndarray) -> "CentredColumns":
        """The columns divided once more, by ``D`` (n_features,)."""
        return CentredColumns(self.X, self.offset, self.scale * D)

    def __matmul__(self, W: np.ndarray) -> np.ndarray:
        V = W / (self.scale if W.ndim == 1 else self.scale[:, None])
        return np.asarray(self.X @ V) - self.offset @ V

    @property
    def T(self) -> "_Transposed":
        return _Transposed(self)


class _Transposed:
    """``Z.T`` of a :class:`CentredColumns` ``Z``, for the products ``Z.T @ M``."""

    def __init__(self, Z: CentredColumns):
        self.Z = Z

    def __matmul__(self, M: np.ndarray) -> np.ndarray:
        Z = self.Z
        G = np.asarray(Z.X.T @ M) - np.multiply.outer(Z.offset, M.sum(axis=0))
        return G / (Z.scale if G.ndim == 1 else Z.scale[:, None])


def row_sq_norms(Z) -> np.ndarray:
    """``||z_i||^2`` of each row of ``Z`` (an array or :class:`CentredColumns`)."""
    if not isinstance(Z, CentredColumns):
        return row_norms(Z, squared=True)
    u = Z.offset / Z.scale
    sq = row_norms(Z.X @ sp.diags(1.0 / Z.scale), squared=True) - 2.0 * (Z.X @ (u / Z.scale)) + u @ u
    return np.maximum(sq, 0.0)  # the expansion rounds a row at the offset to about -eps


def weighted_column_sq(Z, c: np.ndarray) -> np.ndarray:
    """``c @ (Z * Z)``: the weighted sum of squares of each column."""
    if not isinstance(Z, CentredColumns):
        return c @ (Z * Z)
    X, o = Z.X, Z.offset
    sq = (X.multiply(X).T @ c) - 2.0 * o * (X.T @ c) + o * o * c.sum()
    return np.maximum(sq, 0.0) / (Z.scale * Z.scale)


def weighted_gram(Z, c: np.ndarray | None, fit_intercept: bool) -> np.ndarray:
    """``Zt.T @ (c[:, None] * Zt)``, ``Zt`` the columns of ``Z`` with a column of ones when
    there is an intercept; ``c`` None for weights of 1."""
    n = Z.shape[0]
    if not isinstance(Z, CentredColumns):
        Zt = np.hstack([Z, np.ones((n, 1))]) if fit_intercept else Z
        return Zt.T @ Zt if c is None else Zt.T @ (c[:, None] * Zt)
    c = np.ones(n) if c is None else c
    X, o, s = Z.X, Z.offset, Z.scale
    Xc = np.asarray(X.T @ c)  # sum_i c_i x_i
    total = float(c.sum())
    # (X - 1 o')' C (X - 1 o') = X'CX - Xc o' - o Xc' + total o o'
    G = (X.T @ sp.diags(c) @ X).toarray() - np.outer(Xc, o) - np.outer(o, Xc) + total * np.outer(o, o)
    G /= np.outer(s, s)
    if not fit_intercept:
        return G
    side = (Xc - total * o) / s
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

    op = LinearOperator((d, d), matvec=product, dtype=np.float64)
    # a start of fixed seed: the fit must not depend on ARPACK's random one, and a structured
    # start (all ones) can be orthogonal to the top eigenvector, which Lanczos then misses
    v0 = np.random.default_rng(0).standard_normal(d)
    return float(eigsh(op, k=1, which="LA", tol=1e-6, v0=v0, return_eigenvectors=False)[0]) * (1.0 + 1e-3)
