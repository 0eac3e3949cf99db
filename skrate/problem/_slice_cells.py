"""Rows grouped by what decides every rate's slice and coefficients.

Whether a row is in a basic rate's slice, and its coefficients ``v, c`` there (the rate is the
slice-mean of ``v * yhat + c``), depend only on which of the rates' group filters the row
passes, its label and its baseline decision: its *cell*. Slices are then sets of cells, found
on one row per cell, and a rate's rows are its cells' rows: the cost of the slices is that of
the cells plus the rows they hold, not one pass over the data per rate (a constraint expanded
over a column of 2,000 values has 2,000 rates).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._compile import RateData, _coefficients, check_rate, slice_mask
from ._groups import GroupTable, cell_index
from ..rates._expression import Rate
from ..rates._slice import BASELINE, LABEL


def _codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Each entry's index into the distinct values, and their number (0/1 arrays as they are)."""
    values = np.asarray(values)
    if values.dtype == bool or (values.dtype.kind in "iu" and values.size and values.min() >= 0
                                and values.max() <= 1):
        return values.astype(np.intp), 2
    uniques, inverse = np.unique(values, return_inverse=True)
    return inverse.astype(np.intp).ravel(), max(len(uniques), 1)


def _value_classes(key: str, known: list, codes: np.ndarray, filters: list) -> tuple[np.ndarray, int]:
    """Each row's class of the group column ``key`` and their number: values that every filter
    on the column takes or leaves together share a class (one filter ``zip=10`` splits a column
    of many values in two). The values themselves when each has its filter (audited groups)."""
    size = len(known)
    if not len(filters) < size - 1 or len(filters) * size > 2**24:
        return codes.astype(np.intp, copy=False), size
    values = GroupTable({key: np.asarray(known)}, size)  # one row per value: its masks, by value
    classes, card = np.zeros(size, dtype=np.intp), 1
    for spec in filters:
        classes, card = 2 * classes + values.mask(key, spec), 2 * card
        if card > 2 * size:
            classes, card = _codes(classes)
    classes, card = _codes(classes)
    return classes[codes], card


class SliceCells:
    """The cells of the rows for the basic rates ``rates``, and each rate's cells.

    Every rate is validated as :func:`~skrate.problem._compile.slice_mask` would, in order,
    so the errors are the problem layer's: the rate's data, then each group filter's column
    and values.

    Parameters
    ----------
    rates : list of Rate
        The basic rates, without bare group columns to expand over.
    data : RateData
        The rows.

    Attributes
    ----------
    cell : ndarray of int of shape (n_samples,)
        Each row's cell.
    n_cells : int
        The number of cells (those some row holds).
    V, C, M : scipy.sparse.csr_matrix of shape (n_rates, n_cells)
        Over each rate's cells (one structure for the three): the coefficients ``v`` and ``c``
        of the cell's rows, and 1.
    """

    def __init__(self, rates: list[Rate], data: RateData):
        n = data.n
        filters: dict[tuple, None] = {}  # each group filter, checked once (an ordered set)
        for rate in rates:
            check_rate(rate, data)
            for key, values in rate.slice.filters:
                if key not in (LABEL, BASELINE) and (key, values) not in filters:
                    if data.groups.unknown(key, values):  # a missing column raises here first
                        data.groups.mask(key, values)  # raises, naming the known values
                    filters[key, values] = None
        codes = {key: data.groups.codes(key) for key in dict.fromkeys(key for key, _ in filters)}
        columns = [_value_classes(key, known, c, [v for k, v in filters if k == key])
                   for key, (known, c) in codes.items()]
        columns += [_codes(a) for a in (data.y, data.baseline) if a is not None]
        self.cell = cell_index(columns, n)[0]
        self.n_cells = int(self.cell.max()) + 1 if n else 0
        rep = np.zeros(self.n_cells, dtype=np.intp)
        rep[self.cell] = np.arange(n)  # a row of each cell: all its rows are alike
        y = None if data.y is None else data.y[rep]
        b = None if data.baseline is None else data.baseline[rep]
        # The group values of the cells, as a table of one row per cell: its masks are those of
        # the rows, at the cost of the cells. It knows every value of the rows: a value merged
        # into another's class (region=1|2|3) may be no cell's representative, yet filters name it.
        table = GroupTable.coded({key: (known, c[rep]) for key, (known, c) in codes.items()}, self.n_cells)
        cell_data = RateData(y, np.ones(self.n_cells), table, b)
        indptr, indices, vs, cs = [0], [], [], []
        for rate in rates:
            idx = np.flatnonzero(slice_mask(rate, cell_data))
            v, c = _coefficients(rate.kind, None if y is None else y[idx], None if b is None else b[idx])
            indices.append(idx)
            vs.append(np.broadcast_to(v, idx.shape))
            cs.append(np.broadcast_to(c, idx.shape))
            indptr.append(indptr[-1] + idx.shape[0])
        cat = (lambda parts, dtype: np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype))
        index = np.int32 if max(self.n_cells, indptr[-1]) < np.iinfo(np.int32).max else np.int64
        indices, indptr = cat(indices, index), np.asarray(indptr, dtype=index)
        shape = (len(rates), self.n_cells)
        self.V = sp.csr_matrix((cat(vs, float), indices, indptr), shape=shape)
        self.C = sp.csr_matrix((cat(cs, float), indices, indptr), shape=shape)
        self.M = sp.csr_matrix((np.ones(indices.shape[0]), indices, indptr), shape=shape)

    def rows(self) -> tuple[sp.csr_matrix, np.ndarray]:
        """Each rate's rows, and for every row listed, the entry of its rate and cell in ``V``.

        Returns
        -------
        rows : scipy.sparse.csr_matrix of shape (n_rates, n_samples)
            A 1 at each row of each rate's slice, column indices sorted.
        entry : ndarray of int of shape (rows.nnz,)
            For each stored entry of ``rows``, the index into ``V.data`` (and ``C.data``) of
            its rate and its row's cell.
        """
        n = self.cell.shape[0]
        order = np.argsort(self.cell, kind="stable")
        members = sp.csr_matrix((np.ones(n), order, np.r_[0, np.cumsum(np.bincount(self.cell,
                                                                                  minlength=self.n_cells))]),
                                shape=(self.n_cells, n))
        # each row enters a rate once, through its one cell: the product's entries are the
        # entries of V they come from (numbered from 1, as a product drops zeros), exactly
        at = sp.csr_matrix((np.arange(1.0, self.M.nnz + 1.0), self.M.indices, self.M.indptr), shape=self.M.shape)
        rows = at @ members
        rows.sort_indices()
        entry = rows.data.astype(np.intp) - 1
        rows.data = np.ones_like(rows.data)
        return rows, entry
