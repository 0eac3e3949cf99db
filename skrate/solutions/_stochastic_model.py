"""A distribution over candidate models, with reproducible randomised predictions."""

from __future__ import annotations

from numbers import Integral
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import _num_samples

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)

#: Scores held at a time when predicting: blocks of rows whose (rows, k) scores take ~32 MiB,
#: so the T iterates of ``solution="T_stochastic"`` on a million rows never sit in memory whole.
_SCORE_ENTRIES = 2**22


def _mix(h: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: a bijective scrambling of 64-bit words."""
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


# Python's and NumPy's numbers (bool is an int): hashed by value, whatever their type
_NUMBERS = (int, float, np.integer, np.floating, np.bool_)


def _number_words(values) -> np.ndarray:
    """One 64-bit word per number: the bytes of its float64 value, so 3 and 3.0 agree, with
    -0.0 read as 0.0 and every NaN as one (a NaN's sign and payload depend on how it arose)."""
    v = np.ascontiguousarray(values, dtype=np.float64) + 0.0  # + 0.0 folds -0.0 into 0.0
    return np.where(np.isnan(v), np.nan, v).view(np.uint64)


def _text_words(text: np.ndarray) -> np.ndarray:
    """One 64-bit word per string: its code points folded one position at a time, skipping
    the zero padding of NumPy's fixed-width strings, so an entry's word does not depend on
    the longest entry of the batch it arrives in."""
    codes = text.view(np.uint32).reshape(text.shape[0], text.itemsize // 4).astype(np.uint64)
    h = np.full(text.shape[0], _GOLDEN, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in range(codes.shape[1]):  # over characters, never over rows
            h = np.where(codes[:, k] > 0, _mix(h ^ (codes[:, k] + _GOLDEN * np.uint64(k + 1))), h)
    return h


def _column_words(column: np.ndarray) -> np.ndarray:
    """One 64-bit word per entry of a non-numeric column.

    Each entry is read on its own, never by the column's dtype, so a row's word does not
    depend on the batch it arrives in: numbers by value (an int column of a DataFrame and the
    same values as floats agree, as in numeric arrays), other entries by their text.
    """
    column = np.asarray(column)
    number = (np.frompyfunc(lambda v: isinstance(v, _NUMBERS), 1, 1)(column).astype(bool)
              if column.dtype == object else np.zeros(column.shape[0], dtype=bool))
    words = np.empty(column.shape[0], dtype=np.uint64)
    words[number] = _number_words(column[number])
    words[~number] = _text_words(column[~number].astype(str))
    return words


def row_uniforms(X: ArrayLike | sp.spmatrix | sp.sparray, seed: int = 0) -> np.ndarray:
    """A uniform number in [0, 1) per row, a pure function of the row's values and ``seed``.

    The same row gets the same number in every call and every process; distinct rows get
    (pseudo-)independent numbers. Numbers are hashed by their float64 bytes, whatever their
    dtype (-0.0 as 0.0, every NaN alike); other entries (text, categories) by their text. Loops
    over columns and blocks of rows, never over single rows, and holds no copy of all of a dense
    ``X``; a sparse one is read by columns (a CSC copy of a CSR ``X``), at a cost of
    ``n_samples * n_features``: every row's hash mixes each column, stored or not.

    A row repeated within ``X`` (discrete features) would otherwise draw the same number every
    time, so all its copies would get the same decision. Its ``k``-th repeat takes the ``k``-th
    point of the golden-ratio sequence ``frac(u + k (sqrt(5) - 1) / 2)`` started at its number
    ``u``: among ``m`` copies the fraction of draws below ``p`` is then within about ``1 / m``
    of ``p``. The first copy keeps ``u``, and the same ``X`` gives the same numbers.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features) or (n_samples,)
        The rows to draw for: numbers, text or a mix (an object array); a 1-D ``X`` is one
        column. A sparse matrix draws as its dense rows do.
    seed : int in [0, 2**64), default=0
        Salt of the hash: another seed gives other, equally reproducible, numbers.

    Returns
    -------
    ndarray of shape (n_samples,)
        One number in ``[0, 1)`` per row.
    """
    if not (isinstance(seed, Integral) and 0 <= seed < 2**64):
        raise ValueError(f"seed must be an integer in [0, 2**64); got {seed!r}")
    if sp.issparse(X):
        h = _sparse_row_hashes(X, seed)
    else:
        X = np.asarray(X)
        h = _row_hashes(X[:, None] if X.ndim == 1 else X, seed)
    u = (h >> np.uint64(11)).astype(np.float64) * 2.0**-53
    return np.mod(u + _repeat_index(h) * _PHI, 1.0)


_PHI = (np.sqrt(5.0) - 1.0) / 2.0

# Entries of X hashed at a time: row blocks of about 8 MB of words, never a copy of all of X.
_BLOCK = 2**20
_NUMBER_ROWS = 2**16


def _start(seed: int) -> np.uint64:
    """Every row's hash before its first column: the seed, scrambled."""
    return _mix(np.array([seed], dtype=np.uint64) + _GOLDEN)[0]


def _row_hashes(X: np.ndarray, seed: int) -> np.ndarray:
    """The 64-bit hash of each row of a 2-D ``X``, computed column by column in blocks of rows
    (a row's hash reads only its own entries, so the blocks do not change it).

    A block holds one column's words at a time, so numbers go in blocks of ``2**16`` rows
    whatever the width (blocks of ``2**20 / width`` rows took a pass per column per handful of
    rows of a wide ``X``). A column of text becomes an array as wide as its longest entry, so
    other entries go in blocks of ``2**20 / width`` rows.
    """
    n = X.shape[0]
    if n == 0:  # reshape cannot infer the width of no rows
        return np.empty(0, dtype=np.uint64)
    X = X.reshape(n, -1)
    numeric = X.dtype.kind in "biuf"
    words = _number_words if numeric else _column_words
    step = _NUMBER_ROWS if numeric else max(1, _BLOCK // max(X.shape[1], 1))
    h = np.empty(n, dtype=np.uint64)
    with np.errstate(over="ignore"):  # 64-bit wrap-around is the point of the hash
        for lo in range(0, n, step):
            block = X[lo:lo + step]
            hb = np.full(block.shape[0], _start(seed), dtype=np.uint64)
            for j in range(block.shape[1]):  # over columns, never over rows
                hb = _mix(hb ^ (words(block[:, j]) + _GOLDEN * np.uint64(j + 1)))
            h[lo:lo + step] = hb
    return h


def _sparse_row_hashes(X: sp.spmatrix, seed: int) -> np.ndarray:
    """:func:`_row_hashes` of the dense rows of a sparse ``X``, column by column over all rows:
    a stored entry mixes its word, every other row the word of 0 (the bytes of +0.0). One pass
    per column, where blocks of dense rows of a wide ``X`` (text features) took a pass per
    column per handful of rows."""
    X = sp.csc_matrix(X)
    if not X.has_canonical_format:  # duplicate entries add up, as in the dense rows
        X = X.copy()
        X.sum_duplicates()
    words = _number_words(X.data)
    with np.errstate(over="ignore"):
        h = np.full(X.shape[0], _start(seed), dtype=np.uint64)
        for j in range(X.shape[1]):  # over columns, never over rows
            salt = _GOLDEN * np.uint64(j + 1)
            rows, span = X.indices[X.indptr[j]:X.indptr[j + 1]], slice(X.indptr[j], X.indptr[j + 1])
            stored = _mix(h[rows] ^ (words[span] + salt))
            h = _mix(h ^ salt)
            h[rows] = stored
    return h


def _repeat_index(h: np.ndarray) -> np.ndarray:
    """How many earlier rows of the batch share each row's hash (0 for a first occurrence)."""
    order = np.argsort(h, kind="stable")
    first = np.r_[True, h[order][1:] != h[order][:-1]]
    position = np.arange(h.shape[0])
    rank = np.empty(h.shape[0], dtype=np.int64)
    rank[order] = position - np.maximum.accumulate(np.where(first, position, 0))
    return rank


class StochasticModel:
    """Weights over candidate score models; predicts 1 with probability ``sum_k p_k 1[f_k(x) > 0]``.

    Parameters
    ----------
    model : LinearModel, MLPModel or ProbabilityScoreModel
        The score function family: any object whose ``scores_many(X, params)`` gives the
        scores of the candidates ``params`` on the rows ``X``, shape (n_samples, k).
    params : ndarray of shape (k, n_params)
        The candidates; those of zero weight are dropped.
    weights : ndarray of shape (k,)
        The weight ``p_k`` of each candidate in the mixture.
    seed : int
        Salt of the per-row draws of :meth:`predict`.
    """

    def __init__(self, model: Any, params: np.ndarray, weights: np.ndarray, seed: int = 0):
        keep = weights > 0
        self.model, self.params, self.weights, self.seed = model, params[keep], weights[keep], seed

    @property
    def is_deterministic(self) -> bool:
        """Whether the support is a single model, whose predictions involve no draw."""
        return self.weights.shape[0] == 1

    def scores(self, X: ArrayLike) -> np.ndarray:
        """Scores of every model in the support, shape (n, k).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows in the form the score model takes.

        Returns
        -------
        ndarray of shape (n_samples, k)
            The raw scores of the models in the support, in the order of ``params``.
        """
        return self.model.scores_many(X, self.params)

    def proba(self, X: ArrayLike) -> np.ndarray:
        """Probability that the randomised classifier predicts 1.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows in the form the score model takes.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``sum_k p_k 1[f_k(x) > 0]`` per row, in ``[0, 1]``.
        """
        n, k = _num_samples(X), self.weights.shape[0]
        step = max(1, _SCORE_ENTRIES // max(k, 1))
        if n <= step:
            return np.clip(self._mixed(self.scores(X)), 0.0, 1.0)
        p = np.empty(n)
        for lo in range(0, n, step):  # over blocks of rows: each row's score reads only that row
            p[lo:lo + step] = self._mixed(self.scores(_safe_indexing(X, slice(lo, lo + step))))
        return np.clip(p, 0.0, 1.0)

    def _mixed(self, scores: np.ndarray) -> np.ndarray:
        """``sum_k p_k 1[scores_k > 0]`` per row, summed row by row: a matrix product orders its
        additions by the batch's shape, so a row's probability would move with the rows
        beside it (by an ulp, enough to put an exact 0 at -1e-16). Equal weights (T_stochastic,
        every snapshot) take a count, which is exact and a fraction of the cost."""
        above = scores > 0
        if np.all(self.weights == self.weights[0]):
            return np.count_nonzero(above, axis=1) * self.weights[0]
        return np.where(above, self.weights, 0.0).sum(axis=1)

    def predict(self, X: ArrayLike, rows: ArrayLike | None = None) -> np.ndarray:
        """0/1 decisions: 1 when the row's reproducible uniform draw falls below its probability.

        ``rows`` (default ``X``) is what the draw hashes, for models that take ``X`` in a form
        the hash does not read (e.g. a DataFrame).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows in the form the score model takes.
        rows : array-like of shape (n_samples, n_features), default=None
            The same rows as the draws hash them (see :func:`row_uniforms`); None hashes ``X``.

        Returns
        -------
        ndarray of shape (n_samples,)
            0/1 decisions (ints). A single model predicts 1 where its score is positive, with no
            draw.
        """
        p = self.proba(X)
        if self.is_deterministic:
            return (p > 0.5).astype(int)
        return (row_uniforms(X if rows is None else rows, self.seed) < p).astype(int)
