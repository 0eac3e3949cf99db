"""Shifts and powers of two that bring input columns in extreme units near unit size."""

from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.sparse as sp
from sklearn.utils.sparsefuncs import min_max_axis

from ..utils._warnings import listed

# Columns whose largest magnitude lies within [_LOW, _HIGH] are left as they are: one-hot and
# standardised columns, and most counts. A column in cents or in micro-units is not: a step of a
# first-order method moves every weight by about the same amount, which for a column of size 1e6
# moves the scores by 1e6 times as much as for its neighbours. The low end is near 1: a column
# of size 0.04 needs a weight of 100 to matter, which the default steps do not reach and the L2
# penalty holds back (accuracy 0.56 where scaled it is 0.92).
_LOW, _HIGH = 2.0**-2, 2.0**5


# A column whose mean exceeds this many standard deviations (a year, an offset id) is centred:
# unshifted, its values differ by a sliver of their size, and a step moves its scores alike on
# every row, like the intercept's, long before the weight that separates them is reached.
_OFFSET = 4.0

# Values of a column within this share of its largest magnitude of each other differ by rounding
# alone (a thousand machine epsilons)
_ROUNDING = 1e3 * np.finfo(float).eps


def column_extremes(X: np.ndarray | sp.spmatrix) -> tuple[np.ndarray, np.ndarray]:
    """The smallest and the largest entry of every column of ``X`` (a sparse column's implicit
    zeros included)."""
    return min_max_axis(X, axis=0) if sp.issparse(X) else (X.min(axis=0), X.max(axis=0))


def column_peaks(X: np.ndarray | sp.spmatrix) -> np.ndarray:
    """The largest magnitude of every column of ``X`` (dense or sparse)."""
    return _peaks(*column_extremes(X))


def _peaks(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The largest magnitudes of columns of extremes ``low`` and ``high`` (+0.0: a column of
    zeros peaks at 0, not at -0)."""
    return np.maximum(high, -low) + 0.0


def _row_shares(sample_weight: np.ndarray | None, n: int) -> np.ndarray:
    """Each row's share of the total weight (``1 / n`` each without weights): moments taken with
    them treat a weight ``k`` as ``k`` repeated rows."""
    if sample_weight is None:
        return np.full(n, 1.0 / n)
    return np.asarray(sample_weight, dtype=float) / np.sum(sample_weight)


def column_offsets(X: np.ndarray | sp.spmatrix, sample_weight: np.ndarray | None = None) -> np.ndarray:
    """The mean of every column of ``X`` whose mean exceeds four standard deviations in
    magnitude, 0 for the other columns (a constant one among them, even when rounding leaves its
    computed deviation above 0); means and deviations weighted by ``sample_weight``.

    Such a column holds few zeros, if any: a zero lies over four standard deviations from the
    mean, so under 1/17 of its entries can be 0. Shifting it in a sparse ``X``
    (:func:`shifted_columns`) fills only those.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        Finite inputs.
    sample_weight : ndarray of shape (n_samples,), default=None
        Positive row weights (None: equal).

    Returns
    -------
    ndarray of shape (n_features,)
    """
    if not X.shape[0]:
        return np.zeros(X.shape[1])
    return _offsets(X, column_extremes(X), _row_shares(sample_weight, X.shape[0]))


def _offsets(X: np.ndarray | sp.spmatrix, extremes: tuple[np.ndarray, np.ndarray], share: np.ndarray) -> np.ndarray:
    """:func:`column_offsets` given the columns' extremes and each row's share of the weight."""
    low, high = extremes
    peak = _peaks(low, high)
    shift = np.zeros(X.shape[1])
    # the moments of X * 2**-top, in (-1, 1) exactly: no overflow for columns near the float limit
    _, top = np.frexp(np.where(peak > 0, peak, 1.0))
    if sp.issparse(X):
        unit = sp.csc_matrix(X @ sp.diags(np.ldexp(1.0, -top)))
        mean = share @ unit
        # two passes, as the dense std: E[x^2] - mean^2 cancels to 0 for a spread under 1e-8
        # of the mean; the stored entries' deviations, then the zeros' (each -mean)
        stored = np.diff(unit.indptr)
        columns = np.repeat(np.arange(unit.shape[1]), stored)
        dev = unit.data - mean[columns]
        w = share[unit.indices]
        zeros = 1.0 - np.bincount(columns, weights=w, minlength=unit.shape[1])
        sd = np.sqrt(np.bincount(columns, weights=w * dev**2, minlength=unit.shape[1])
                     + np.clip(zeros, 0.0, None) * mean**2)
    else:
        unit = np.ldexp(X, -top)
        mean = share @ unit
        # in place: one copy of X, not three (it set the peak memory of whole fits)
        unit -= mean
        sd = np.sqrt(share @ np.square(unit, out=unit))
    # a column constant up to rounding is not centred: its deviation is the mean's rounding
    # (1e-16 of it), and the residue of the shift would be scaled to unit size, its weight to 1e14
    varies = high - low > _ROUNDING * peak
    shifted = varies & (sd > 0) & (np.abs(mean) > _OFFSET * sd)
    shift[shifted] = np.ldexp(mean[shifted], top[shifted])
    return shift


def shifted_columns(X: np.ndarray | sp.spmatrix, shift: np.ndarray) -> np.ndarray | sp.spmatrix:
    """``X - shift``; a sparse ``X`` stays sparse (CSR), only the shifted columns fill."""
    if not sp.issparse(X):
        return X - shift
    cols = np.flatnonzero(shift)
    if not cols.size:
        return X
    n = X.shape[0]
    dense = sp.csr_matrix((np.tile(shift[cols], n), (np.repeat(np.arange(n), cols.size), np.tile(cols, n))),
                          shape=X.shape)
    out = sp.csr_matrix(X - dense)
    out.eliminate_zeros()
    return out


def input_scale(X: np.ndarray | sp.spmatrix,
                sample_weight: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-column shifts and divisors for the game solvers' model inputs, or None when no column
    needs one: the game plays on ``(X - shift) / scale`` (see :func:`scaled_input`).

    A column whose mean exceeds four standard deviations in magnitude is shifted by its mean
    (in a sparse ``X`` too: such a column is nearly full, see :func:`column_offsets`); a constant
    column, up to rounding, is not (shifted, it would be its mean's rounding error). A column
    whose largest magnitude (after the shift) is outside ``[2**-2, 2**5]`` (and not 0) is
    divided by the power of two nearest its root mean square; every other column by 1.
    Division by a power of two is exact, so a column rescaled by a power of two alone is fitted
    exactly as before. Means, deviations and root mean squares weigh the rows by
    ``sample_weight``, so that a weight ``k`` scales as ``k`` repeated rows do.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        Finite training inputs.
    sample_weight : ndarray of shape (n_samples,), default=None
        Positive row weights (None: equal).

    Returns
    -------
    (shift, scale) : tuple of ndarray of shape (n_features,), or None
        The shift and the divisor of each column (0 and 1 for the columns left as they are), or
        None when every column is left as it is.
    """
    if not X.shape[0]:
        return None
    extremes = column_extremes(X)
    peak = _peaks(*extremes)
    subnormal = np.flatnonzero((peak > 0) & (peak < np.finfo(float).tiny))
    if subnormal.size:  # its weight on X, the fitted one over a divisor below 2**-1022, is no float
        raise ValueError(f"X's column(s) {listed(subnormal)} (by position) hold no value above "
                         f"{np.finfo(float).tiny:.3g} in magnitude, which a coefficient in these units "
                         "cannot weigh in float64; multiply them by a large constant (1e300) or drop them.")
    _, top = np.frexp(np.where(peak > 0, peak, 1.0))
    share = _row_shares(sample_weight, X.shape[0])
    shift = _offsets(X, extremes, share)
    shifted = shift != 0
    moved = None  # the shifted columns, shifted once for their peaks and root mean squares
    if shifted.any():
        moved = shifted_columns(X[:, shifted], shift[shifted])
        peak[shifted] = column_peaks(moved)
        _, top[shifted] = np.frexp(peak[shifted])
    out = ((peak > _HIGH) | (peak < _LOW)) & (peak > 0)
    if not (out.any() or shift.any()):
        return None
    rms = np.empty(X.shape[1])
    for cols, block in ((out & ~shifted, X), (out & shifted, moved)):
        if cols.any():
            within = cols if block is X else cols[shifted]  # moved holds the shifted columns only
            rms[cols] = _root_mean_square(block[:, within], top[cols], share)
    scale = np.ones(X.shape[1])
    # within the normal range, so that the divisor and its inverse are finite powers of two
    scale[out] = np.ldexp(1.0, np.clip(top[out] + np.round(np.log2(rms[out])).astype(int), -1021, 1023))
    return shift, scale


def _root_mean_square(X: np.ndarray | sp.spmatrix, top: np.ndarray, share: np.ndarray) -> np.ndarray:
    """The root mean square of every column of ``X * 2**-top``, rows weighted by ``share``."""
    if sp.issparse(X):
        unit = X @ sp.diags(np.ldexp(1.0, -top))
        return np.sqrt(share @ unit.multiply(unit))
    return np.sqrt(share @ np.ldexp(X, -top) ** 2)


def scaled_input(X: np.ndarray | sp.spmatrix,
                 transform: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray | sp.spmatrix:
    """``(X - shift) / scale`` for the ``transform`` of :func:`input_scale`.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        The inputs ``transform`` was computed on (or rows of the same kind).
    transform : (shift, scale) or None
        The result of :func:`input_scale`; None leaves ``X`` as it is.

    Returns
    -------
    ndarray or CSR matrix of shape (n_samples, n_features)
        The shifted and divided columns; a sparse ``X`` stays sparse.
    """
    if transform is None:
        return X
    shift, scale = transform
    X = shifted_columns(X, shift)
    if sp.issparse(X):
        return sp.csr_matrix(X @ sp.diags(1.0 / scale))  # powers of two: exact
    return X / scale


def folding_callback(callback: Callable | None, fold: Callable[[np.ndarray], np.ndarray] | None) -> Callable | None:
    """``callback(iteration, params, values)`` as the user wrote it, handed the parameters of the
    game folded by ``fold`` into those of the fitted model (``candidates_``'s): a game on
    ``(X - shift) / scale`` back onto ``X``, say; the callback itself when there is nothing to fold.

    Parameters
    ----------
    callback : callable or None
        The user's ``callback(iteration, params, values)``.
    fold : callable or None
        ``fold(thetas)``: parameter vectors of shape (k, n_params) of the game as those of the
        fitted model, a new array; None when the game plays the fitted model's parameters.

    Returns
    -------
    callable or None
        A callback handing ``callback`` the folded parameters, or ``callback`` itself when it
        or ``fold`` is None.
    """
    if callback is None or fold is None:
        return callback
    return lambda iteration, params, values: callback(iteration, fold(params[None])[0], values)
