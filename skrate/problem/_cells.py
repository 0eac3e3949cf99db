"""Rate matrices over the cells of alike rows: ``A = K @ P``, never formed.

A row of the data enters a basic rate through its weight over the slice's total, times a
coefficient of its label (and baseline decision). Its column of the rate basis is therefore its
weight times a direction shared by every row alike in label, groups and baseline decision: the
rows fall into a few *cells*. A rate matrix ``A = mix @ basis`` is then ``K @ P``, ``K`` the
coefficient of each cell in each row of ``A`` (sparse: a row holds the cells of its slices) and
``P`` one entry per row of the data, its scale, in its cell's row. A row of ``A`` that combines a
group's rate with the overall rate (every parity constraint) holds n entries; ``P`` holds n in
all, and a product costs one pass over them. Since the scales are ``>= 0``, the positive and negative parts of
``A`` (the surrogate games' upper and lower bounds) are ``K``'s, times ``P``: exactly. ``K`` is in turn
``mix @ unit``, ``unit`` the cells' directions in the basic rates: with thousands of parity rows ``K``
repeats the overall rate's cells in each, and is left unformed, its products going through the factors.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.sparse as sp

from ..solutions._stochastic_model import _GOLDEN, _mix, _number_words


def row_cells(basis: sp.spmatrix) -> tuple[np.ndarray, np.ndarray, sp.csc_matrix]:
    """The cell of every row of the data, its scale, and the cells' directions.

    Parameters
    ----------
    basis : sparse matrix of shape (n_rates, n_samples)
        The coefficient of each row's decision in each basic rate.

    Returns
    -------
    cell : ndarray of int of shape (n_samples,)
        The cell of each row; -1 for a row in no slice or of weight 0, which moves no rate.
    scale : ndarray of shape (n_samples,)
        The largest magnitude in each row's column of ``basis`` (0 for a row in no cell).
    unit : scipy.sparse.csc_matrix of shape (n_rates, n_cells)
        Each cell's column of ``basis`` over its scale: a largest entry of magnitude 1. Directions
        are compared to 12 significant digits, below which the weights' rounding parts them.
    """
    B = sp.csc_matrix(basis, dtype=float)
    if B.shape[0] == 0:  # no rates (a constant objective): no row moves any
        return np.full(B.shape[1], -1), np.zeros(B.shape[1]), sp.csc_matrix((0, 0))
    scale = np.asarray(abs(B).max(axis=0).toarray()).ravel()
    used = np.flatnonzero(scale > 0)
    unit = sp.csc_matrix(B[:, used])
    # divided, not multiplied by the reciprocal: a subnormal scale (weights 1e300 apart) has none
    unit.data = unit.data / np.repeat(scale[used], np.diff(unit.indptr))
    unit = unit.tocsr()
    key = unit.T.tocsr()
    key.data = np.round(key.data, 12) + 0.0
    key.sum_duplicates()
    first, inverse = _alike_rows(key)
    cell = np.full(B.shape[1], -1)
    cell[used] = inverse
    return cell, scale, sp.csc_matrix(unit[:, first])


def _alike_rows(key: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """The first row of each group of equal rows of ``key`` (canonical CSR), in the order they
    first occur, and each row's group. Rows are told apart by an order-free hash of their
    stored entries, in O(nnz) (a hash of every entry of a row costs a pass over the rows per
    column, n x rates for the group rates of a column of many values); the rows a hash groups
    are then compared entry by entry, so a collision is never a merge."""
    counts = np.diff(key.indptr)
    filled = np.flatnonzero(counts)
    with np.errstate(over="ignore"):
        for seed in range(1, 9):
            entry = _mix(_number_words(key.data) ^ _mix(key.indices.astype(np.uint64) + _GOLDEN * np.uint64(seed)))
            h = np.zeros(key.shape[0], dtype=np.uint64)
            h[filled] = np.add.reduceat(entry, key.indptr[filled])
            h = _mix(h + counts.astype(np.uint64))
            _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
            rank = np.empty(first.size, dtype=np.intp)
            rank[np.argsort(first)] = np.arange(first.size)  # numbered by first row, not by hash
            first, inverse = np.sort(first), rank[inverse.ravel()]
            if (key[first[inverse]] != key).nnz == 0:
                return first, inverse
    raise RuntimeError("Could not tell the rows' rate coefficients apart by hashing; please report this.")


class CellMatrix:
    """``A = K @ P`` with the few operations the solvers ask of a sparse rate matrix.

    Products with vectors and matrices, the transpose (as an operator), positive and negative
    parts, magnitudes, row sums, negation and scaling, and selections of rows and columns
    (minibatches) all go through the factors.

    Parameters
    ----------
    K : sparse matrix of shape (n_rows, n_cells), or None
        The coefficient of each cell in each row of ``A``. None (with ``factors``): formed only
        when an entrywise operation needs it, every product going through the factors
        (:attr:`factored`).
    P : sparse matrix of shape (n_cells, n_samples)
        At most one entry per column: the row's scale, in its cell's row.
    factors : tuple of two sparse matrices, optional
        ``(mix, unit)`` with ``K = mix @ unit`` (see :meth:`from_factors`): products with many
        columns (:meth:`grouped_sums`) go through them, as ``unit`` holds a basic rate's few
        cells where ``K`` repeats the overall rate's in every parity row.

    Attributes
    ----------
    factored : bool
        Whether products go through ``mix @ unit`` rather than ``K`` (``K`` given as None).
    """

    #: ``K`` is left unformed, its products going through ``mix @ unit``, when it would hold more
    #: than this many times the factors' entries. It holds fewer than its rows times them, so a
    #: ``K`` of at most this many rows (63 constraints and the objective) is always formed, and
    #: products with it are as they were before the factors were kept.
    FACTORED_RATIO = 64

    def __init__(self, K: sp.spmatrix | None, P: sp.spmatrix, factors: tuple | None = None):
        if K is None and factors is None:
            raise ValueError("CellMatrix needs K or its factors.")
        self.P = sp.csc_matrix(P)
        self.factors = None if factors is None else tuple(sp.csr_matrix(f, dtype=float) for f in factors)
        self._K = None if K is None else sp.csr_matrix(K, dtype=float)
        self.factored = K is None
        self._n_rows = self.factors[0].shape[0] if K is None else self._K.shape[0]

    @classmethod
    def from_factors(cls, mix: sp.spmatrix, basis: sp.spmatrix) -> "CellMatrix":
        """``mix @ basis`` (see :func:`~skrate.problem.compile_factored`) as cells.

        Parameters
        ----------
        mix : sparse matrix of shape (n_rows, n_rates)
            The coefficient of each basic rate in each row of ``A``.
        basis : sparse matrix of shape (n_rates, n_samples)
            The coefficient of each row's decision in each basic rate.

        Returns
        -------
        CellMatrix
            ``A = mix @ basis`` over the cells of alike rows (see :func:`row_cells`); ``K`` left
            unformed when its factors are much smaller (:attr:`FACTORED_RATIO`).
        """
        cell, scale, unit = row_cells(basis)
        used = np.flatnonzero(cell >= 0)
        P = sp.csc_matrix((scale[used], (cell[used], used)), shape=(unit.shape[1], basis.shape[1]))
        return cls._over_cells(sp.csr_matrix(mix), unit, P)

    @classmethod
    def _over_cells(cls, mix: sp.csr_matrix, unit: sp.spmatrix, P: sp.spmatrix) -> "CellMatrix":
        """``(mix @ unit) @ P``, ``K = mix @ unit`` formed unless it would hold more than
        :attr:`FACTORED_RATIO` times the factors' entries (2,000 parity rows over 2,000 cells:
        4 million where the factors hold 8,000)."""
        canonical = mix.copy()
        canonical.sum_duplicates()
        # each row of K holds at most the cells of its rates (exactly, but for slices that
        # overlap): at most K's rows times unit's entries
        bound = np.bincount(sp.csc_matrix(unit).indices, minlength=unit.shape[0])[canonical.indices].sum()
        if bound > cls.FACTORED_RATIO * (mix.nnz + unit.nnz):
            return cls(None, P, (mix, unit))
        return cls(mix @ unit, P, (mix, unit))

    @property
    def K(self) -> sp.csr_matrix:
        """The coefficient of each cell in each row of ``A``, formed from the factors when first
        asked for (entrywise operations need it; products go through the factors)."""
        if self._K is None:
            mix, unit = self.factors
            self._K = sp.csr_matrix(mix @ unit, dtype=float)
        return self._K

    def cell_product(self, x: np.ndarray | sp.spmatrix) -> np.ndarray | sp.spmatrix:
        """``K @ x``, through the factors when ``K`` is left unformed.

        Parameters
        ----------
        x : ndarray or sparse matrix of shape (n_cells,) or (n_cells, k)
            A value per cell (sums of decisions over the cells' rows).

        Returns
        -------
        ndarray or sparse matrix of shape (n_rows,) or (n_rows, k)
        """
        if self.factored:
            mix, unit = self.factors
            return mix @ (unit @ x)
        return self.K @ x

    def combined(self, W: sp.spmatrix | np.ndarray) -> "CellMatrix":
        """``W @ A``, rows that combine ``A``'s, kept factored as ``(W @ mix) @ unit`` when ``A``
        has factors.

        Parameters
        ----------
        W : sparse matrix or ndarray of shape (n_new_rows, n_rows)
            The coefficient of each row of ``A`` in each new row.

        Returns
        -------
        CellMatrix of shape (n_new_rows, n_samples)
        """
        W = sp.csr_matrix(W)
        if self.factors is None:
            return CellMatrix(W @ self.K, self.P)
        mix, unit = self.factors
        if self.factored:
            return CellMatrix._over_cells(sp.csr_matrix(W @ mix), unit, self.P)
        return CellMatrix(W @ self.K, self.P, (W @ mix, unit))

    @property
    def shape(self) -> tuple[int, int]:
        return self._n_rows, self.P.shape[1]

    @property
    def T(self) -> "_Transposed":
        return _Transposed(self)

    def __matmul__(self, x):
        return self.cell_product(self.P @ x)

    def maximum(self, value: float) -> "CellMatrix":
        return CellMatrix(self.K.maximum(value), self.P)

    def minimum(self, value: float) -> "CellMatrix":
        return CellMatrix(self.K.minimum(value), self.P)

    def __abs__(self) -> "CellMatrix":
        return CellMatrix(abs(self.K), self.P)

    def __neg__(self) -> "CellMatrix":
        return CellMatrix(-self.K, self.P)

    def __mul__(self, scalar: float) -> "CellMatrix":
        return CellMatrix(self.K * scalar, self.P)

    __rmul__ = __mul__

    def __getitem__(self, key) -> "CellMatrix":
        rows, cols = key if isinstance(key, tuple) else (key, slice(None))
        if self.factored:  # a minibatch's columns: K stays unformed
            return CellMatrix(None, self.P[:, cols], (self.factors[0][rows], self.factors[1]))
        return CellMatrix(self.K[rows], self.P[:, cols])

    def sum(self, axis: int) -> np.ndarray:
        """Row sums (``axis=1``).

        Parameters
        ----------
        axis : int
            Must be 1: only the row sums are computed.

        Returns
        -------
        ndarray of shape (n_rows,)
            The sum of each row of ``A``.

        Raises
        ------
        ValueError
            When ``axis`` is not 1.
        """
        if axis != 1:
            raise ValueError("CellMatrix sums its rows only (axis=1).")
        return self.cell_product(np.asarray(self.P.sum(axis=1)).ravel())

    def grouped_sums(self, labels: np.ndarray, n_labels: int) -> np.ndarray:
        """``A``'s columns summed by label: ``A @ M`` for the 0/1 matrix ``M`` of column ``i`` in
        group ``labels[i]``, from one ``bincount`` over ``P``'s entries (a sparse ``M`` costs a
        product and its construction).

        Parameters
        ----------
        labels : ndarray of int of shape (n_samples,)
            The group of each column, in ``[0, n_labels)``.
        n_labels : int
            The number of groups (columns of the result).

        Returns
        -------
        ndarray of shape (n_rows, n_labels)
        """
        P = sp.csc_matrix(self.P)
        column = np.repeat(np.arange(P.shape[1]), np.diff(P.indptr))  # every entry's column
        cells = np.bincount(P.indices.astype(np.int64) * n_labels + labels[column], weights=P.data,
                            minlength=P.shape[0] * n_labels).reshape(P.shape[0], n_labels)
        if self.factors is not None:
            mix, unit = self.factors
            return np.asarray(mix @ (unit @ cells))
        return np.asarray(self.K @ cells)

    def toarray(self) -> np.ndarray:
        """``A`` formed, for small checks.

        Returns
        -------
        ndarray of shape (n_rows, n_samples)
            ``K @ P`` as a dense array.
        """
        return (self.K @ self.P).toarray()


class _Transposed:
    """``A.T`` of a :class:`CellMatrix`: products ``A.T @ w`` through the factors."""

    def __init__(self, A: CellMatrix):
        self.A = A
        # formed once: a solver multiplies by them every step
        self._KT, self._PT = _Factored(*A.factors).T if A.factored else A.K.T, A.P.T

    @property
    def shape(self) -> tuple[int, int]:
        return self.A.shape[::-1]

    @property
    def T(self) -> CellMatrix:
        return self.A

    def __matmul__(self, w):
        return self._PT @ (self._KT @ w)


class CellVectors:
    """Products of a :class:`CellMatrix` ``A`` with single vectors, at NumPy speed.

    A full-batch game multiplies by ``A`` and ``A.T`` once each per iteration. Through sparse
    factors those are four sparse products whose dispatch, on a few thousand rows, costs more
    than their arithmetic. Here ``K``, a few constraints by a few cells, is dense, and so is
    ``P`` while it is small (a cache-resident matrix-vector product); a larger ``P`` is each
    row's cell and scale, a ``bincount`` and a gather. A ``K`` too large to be dense goes through
    its factors ``mix @ unit`` when they hold fewer entries: a rule over every value of a column
    of thousands has one row per value, each reading the overall rate's every cell, so ``K``
    holds m times the cells where ``mix`` and ``unit`` hold a few per row.

    Parameters
    ----------
    A : CellMatrix
        The rate matrix ``K @ P``.
    """

    #: Largest ``K`` (entries) made dense; beyond, it stays sparse (or factored).
    DENSE_K_MAX = 1 << 20
    #: Largest ``P`` (cells times rows) made dense.
    DENSE_P_MAX = 1 << 17

    def __init__(self, A: CellMatrix):
        P = sp.csc_matrix(A.P)
        P.sum_duplicates()
        if A.shape[0] * P.shape[0] <= self.DENSE_K_MAX:
            self.K = A.K.toarray()
        elif A.factored or (A.factors is not None and A.factors[0].nnz + A.factors[1].nnz < A.K.nnz):
            # 2,000 parity rows over 2,000 cells: K held 4 million entries, its factors 8,000
            self.K = _Factored(*A.factors)
        else:
            self.K = sp.csr_matrix(A.K)
        self.KT = self.K.T if isinstance(self.K, (np.ndarray, _Factored)) else self.K.T.tocsr()
        self.n = P.shape[1]
        self.P = P.toarray() if P.shape[0] * P.shape[1] <= self.DENSE_P_MAX else None
        self.rows = np.flatnonzero(np.diff(P.indptr))  # rows in a cell, in the order of P's entries
        self.cell, self.scale = P.indices, P.data
        self.every_row = self.rows.size == self.n

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """``A @ x``.

        Parameters
        ----------
        x : ndarray of shape (n_samples,)
            A value per row of the data (its decisions).

        Returns
        -------
        ndarray of shape (n_rows,)
            The rates' combinations that the rows of ``A`` hold.
        """
        if self.P is not None:
            return self.K @ (self.P @ x)
        per_cell = np.bincount(self.cell, self.scale * (x if self.every_row else x[self.rows]),
                               minlength=self.K.shape[1])
        return self.K @ per_cell

    @cached_property
    def _row_cells(self) -> tuple[np.ndarray, np.ndarray]:
        """Each data row's cell and scale (cell 0 and scale 0 for a row in no cell), for batches."""
        cell, scale = np.zeros(self.n, dtype=self.cell.dtype), np.zeros(self.n)
        cell[self.rows], scale[self.rows] = self.cell, self.scale
        return cell, scale

    def batch(self, idx: np.ndarray) -> "_BatchVectors":
        """The products with ``A[:, idx]``, the columns of a minibatch's rows: O(len(idx)) work
        each, through the rows' cells (no columns of ``A`` gathered).

        Parameters
        ----------
        idx : ndarray of shape (batch,)
            Data rows (a minibatch).

        Returns
        -------
        _BatchVectors
            ``matvec(x)`` is ``A[:, idx] @ x`` and ``rmatvec(w)`` is ``A[:, idx].T @ w``.
        """
        cell, scale = self._row_cells
        return _BatchVectors(self.K, self.KT, cell[idx], scale[idx])

    def rmatvec(self, w: np.ndarray) -> np.ndarray:
        """``A.T @ w``.

        Parameters
        ----------
        w : ndarray of shape (n_rows,)
            A weight per row of ``A`` (the multipliers).

        Returns
        -------
        ndarray of shape (n_samples,)
            Each data row's coefficient in ``w @ A``; 0 for a row in no cell.
        """
        if self.P is not None:
            return (self.KT @ w) @ self.P
        out = (self.KT @ w)[self.cell] * self.scale
        if self.every_row:
            return out
        full = np.zeros(self.n)
        full[self.rows] = out
        return full


class _BatchVectors:
    """Products with the columns of ``A`` of a minibatch's rows (see :meth:`CellVectors.batch`):
    each row's cell and scale, gathered once for both products."""

    def __init__(self, K, KT, cell: np.ndarray, scale: np.ndarray):
        self.K, self.KT, self.cell, self.scale = K, KT, cell, scale

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """``A[:, idx] @ x`` for a value per batch row."""
        return self.K @ np.bincount(self.cell, self.scale * x, minlength=self.K.shape[1])

    def rmatvec(self, w: np.ndarray) -> np.ndarray:
        """``A[:, idx].T @ w``: each batch row's coefficient (0 for a row in no cell)."""
        return (self.KT @ w)[self.cell] * self.scale


class _Factored:
    """``mix @ unit`` as an operator on vectors, and its transpose, both factors kept CSR."""

    def __init__(self, mix: sp.spmatrix, unit: sp.spmatrix):
        self.mix, self.unit = sp.csr_matrix(mix), sp.csr_matrix(unit)
        self.shape = (self.mix.shape[0], self.unit.shape[1])

    @property
    def T(self) -> "_Factored":
        return _Factored(self.unit.T, self.mix.T)

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        return self.mix @ (self.unit @ x)
