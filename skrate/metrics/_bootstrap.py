"""Rates of many bootstrap resamples at once.

A basic rate on slice S with weights w is ``sum_{i in S} w_i (v_i yhat_i + c_i) / sum_{i in S} w_i``
(the per-example coefficients ``v, c`` of :mod:`skrate.problem`). Resampling rows with
replacement multiplies every weight by the row's draw count ``k_i``, so with the numerator and
denominator contributions as two sparse matrices (rates x rows) the rates of B resamples are
``(N @ K.T) / (D @ K.T)`` for the (B x rows) count matrix ``K``: no loop over resamples or rows.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.utils import check_random_state

from ..problem import RateData
from ..problem._compile import _coefficients, check_rate, slice_mask
from ..rates import Ratio
from ..rates._expression import Rate

# Replicates per joblib task: bounds the (chunk x rows) count matrix held in memory.
_CHUNK = 100


class RateParts:
    """Numerator and denominator contributions of basic rates, and the terms built from them."""

    def __init__(self, terms: list, data: RateData, decisions: np.ndarray):
        self.rates: dict[Rate, int] = {}
        for term in terms:
            for rate in term.rates:
                self.rates.setdefault(rate, len(self.rates))
        self.terms = list(terms)
        n = data.n
        rows, cols, num, den = [], [], [], []
        for rate, k in self.rates.items():
            check_rate(rate, data)
            mask = slice_mask(rate, data)
            idx = np.flatnonzero(mask)
            y = None if data.y is None else data.y[idx]
            b = None if data.baseline is None else data.baseline[idx]
            v, c = _coefficients(rate.kind, y, b)
            w = data.sample_weight[idx]
            rows.append(np.full(idx.shape[0], k))
            cols.append(idx)
            num.append(w * (v * decisions[idx] + c))
            den.append(w)
        shape = (len(self.rates), n)
        cat = (lambda parts: np.concatenate(parts) if parts else np.zeros(0))
        r, c = cat(rows).astype(int), cat(cols).astype(int)
        self.N = sp.csr_matrix((cat(num), (r, c)), shape=shape)
        self.D = sp.csr_matrix((cat(den), (r, c)), shape=shape)

    def rate_values(self, counts: np.ndarray | None = None) -> np.ndarray:
        """Basic rates (rates x B) for row counts ``counts`` (B x rows); None is the sample itself."""
        if counts is None:
            num, den = self.N.sum(axis=1).A, self.D.sum(axis=1).A
        else:
            num, den = self.N @ counts.T, self.D @ counts.T
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)

    def term_values(self, rates: np.ndarray) -> np.ndarray:
        """Values (terms x B) of the terms from basic rate values (rates x B); NaN where undefined."""
        return np.vstack([self._term(t, rates) for t in self.terms]) if self.terms else np.zeros((0, rates.shape[1]))

    def _term(self, term, rates: np.ndarray) -> np.ndarray:
        if isinstance(term, Ratio):
            num, den = self._term(term.numerator, rates), self._term(term.denominator, rates)
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
        out = np.full(rates.shape[1], float(term.constant))
        for rate, coef in term.terms:
            out = out + coef * rates[self.rates[rate]]
        return out

    def values(self, counts: np.ndarray | None = None) -> np.ndarray:
        return self.term_values(self.rate_values(counts))


def _chunk(parts: RateParts, seed: int, size: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=size).astype(float)
    return parts.values(counts)


def bootstrap_values(parts: RateParts, n_bootstrap: int, random_state=None, n_jobs=None) -> np.ndarray:
    """Term values (terms x n_bootstrap) on resamples of the rows drawn with replacement.

    The draws depend only on ``random_state``, not on ``n_jobs``.
    """
    n = parts.N.shape[1]
    sizes = [_CHUNK] * (n_bootstrap // _CHUNK) + ([n_bootstrap % _CHUNK] if n_bootstrap % _CHUNK else [])
    seeds = check_random_state(random_state).randint(np.iinfo(np.int32).max, size=len(sizes))
    chunks = Parallel(n_jobs=n_jobs)(delayed(_chunk)(parts, int(s), k, n) for s, k in zip(seeds, sizes))
    return np.hstack(chunks) if chunks else np.zeros((len(parts.terms), 0))


def percentile_interval(samples: np.ndarray, confidence_level: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of each row, ignoring resamples where a value is undefined."""
    alpha = (1.0 - confidence_level) / 2.0
    if samples.shape[1] == 0:
        nan = np.full(samples.shape[0], np.nan)
        return nan, nan.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows (undefined rates) give NaN bounds
        low = np.nanquantile(samples, alpha, axis=1)
        high = np.nanquantile(samples, 1.0 - alpha, axis=1)
    return low, high
