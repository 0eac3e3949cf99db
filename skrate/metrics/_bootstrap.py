"""Rates of many bootstrap resamples at once, through per-cell sums.

A basic rate on slice S with weights w is ``sum_{i in S} w_i (v_i yhat_i + c_i) / sum_{i in S} w_i``
(the per-example coefficients ``v, c`` of :mod:`skrate.problem`). Whether a row is in ``S`` and
its ``v, c`` depend only on its *cell*: which of the rates' group filters it passes, its label
and its baseline decision. So every rate's numerator and denominator are combinations of
two sums per cell, ``sum w_i`` and ``sum w_i yhat_i``: ``num = V @ S_wp + C @ S_w`` and
``den = M @ S_w`` for small (rates x cells) matrices. Resampling rows with replacement
multiplies every weight by the row's draw count ``k_i``, which only changes the cell sums (one
``bincount`` each per resample): no (resamples x rows) matrix, and O(rows) memory.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from joblib import Parallel, delayed
from sklearn.utils import check_random_state

from ..problem import RateData, ratio_value
from ..problem._evaluate import zero_within_rounding
from ..problem._groups import cell_index
from ..problem._slice_cells import SliceCells
from ..rates import Ratio
from ..rates._expression import Rate

# Replicates per joblib task: the seeds are drawn per chunk, so the resamples (and the results)
# do not depend on n_jobs.
_CHUNK = 100


class RateParts:
    """Numerator and denominator of basic rates as combinations of per-cell sums, and the terms
    built from the rates.

    Attributes: ``cell`` (each row's cell), ``w`` and ``wp`` (its weight and weight times
    decision), and the CSR (rates x cells) matrices ``V``, ``C``, ``M``: for cell sums
    ``S_w = sum w`` and ``S_wp = sum w p``, a rate's numerator is ``V @ S_wp + C @ S_w`` and its
    denominator ``M @ S_w``.
    """

    def __init__(self, terms: list, data: RateData, decisions: np.ndarray):
        self.rates: dict[Rate, int] = {}
        for term in terms:
            for rate in term.rates:
                self.rates.setdefault(rate, len(self.rates))
        self.terms = list(terms)
        self.n = data.n
        cells = SliceCells(list(self.rates), data)
        self.cell, self.V, self.C, self.M = cells.cell, cells.V, cells.C, cells.M
        self.w = np.asarray(data.sample_weight, dtype=float)
        self.wp = self.w * np.asarray(decisions, dtype=float)

    @property
    def n_cells(self) -> int:
        return self.V.shape[1]

    def cell_sums(self, counts=None) -> tuple[np.ndarray, np.ndarray]:
        """``(S_w, S_wp)`` (cells x B) for row counts ``counts`` (B x rows); None is the sample."""
        counts = [None] if counts is None else np.atleast_2d(counts)
        s_w = np.empty((self.n_cells, len(counts)))
        s_wp = np.empty_like(s_w)
        for j, k in enumerate(counts):
            s_w[:, j], s_wp[:, j] = self._sums(k)
        return s_w, s_wp

    def _sums(self, k: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Cell sums of ``k * w`` and ``k * w * p`` for one vector of row counts (None: all 1)."""
        w, wp = (self.w, self.wp) if k is None else (k * self.w, k * self.wp)
        m = self.n_cells
        return np.bincount(self.cell, weights=w, minlength=m), np.bincount(self.cell, weights=wp, minlength=m)

    def rates_from_sums(self, s_w: np.ndarray, s_wp: np.ndarray) -> np.ndarray:
        """Basic rates (rates x B) from cell sums (cells x B); NaN where a slice has no weight."""
        # zero within rounding as the reports' rates are (wins over no losses are inf, not 1e16)
        num = zero_within_rounding(self.V @ s_wp + self.C @ s_w, abs(self.V) @ s_wp + abs(self.C) @ s_w)
        den = self.M @ s_w
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)

    def rate_values(self, counts: np.ndarray | None = None) -> np.ndarray:
        """Basic rates (rates x B) for row counts ``counts`` (B x rows); None is the sample itself."""
        return self.rates_from_sums(*self.cell_sums(counts))

    def term_values(self, rates: np.ndarray) -> np.ndarray:
        """Values (terms x B) of the terms from basic rate values (rates x B); NaN where undefined."""
        return np.vstack([self._term(t, rates) for t in self.terms]) if self.terms else np.zeros((0, rates.shape[1]))

    def _term(self, term, rates: np.ndarray) -> np.ndarray:
        if isinstance(term, Ratio):
            return ratio_value(self._term(term.numerator, rates), self._term(term.denominator, rates))
        out = np.full(rates.shape[1], float(term.constant))
        for rate, coef in term.terms:
            out = out + coef * rates[self.rates[rate]]
        return out

    def values(self, counts: np.ndarray | None = None) -> np.ndarray:
        return self.term_values(self.rate_values(counts))


def resample_counts(rng: np.random.Generator, n: int) -> np.ndarray:
    """How often each of ``n`` rows is drawn in a resample of ``n`` rows with replacement
    (multinomial with equal probabilities)."""
    return np.bincount(rng.integers(n, size=n), minlength=n)


def _frequency_factors(rng: np.random.Generator, frequency: np.ndarray) -> np.ndarray:
    """Factors on the weights ``frequency`` (integers: row ``i`` stands for ``frequency[i]``
    units) that make each row's weight the number of its units drawn in a resample of all the
    units with replacement: the bootstrap of the repeated rows, drawn through one multinomial."""
    total = int(frequency.sum())
    return rng.multinomial(total, frequency / total) / frequency


def _shared_cells(blocks: list[RateParts]) -> tuple[np.ndarray, int, list[np.ndarray]] | None:
    """The cells crossing every block's, their number, and each one's cell in every block, when
    the blocks weigh the same rows alike and the crossed cells are few (at most half the rows):
    one pair of ``bincount`` over the rows a resample then serves every block, whose cell sums
    are summed from the crossed cells'. None otherwise (a block's sums over the rows, as ever)."""
    first = blocks[0]
    if len(blocks) < 2 or not all(np.array_equal(b.w, first.w) and np.array_equal(b.wp, first.wp)
                                  for b in blocks[1:]):
        return None
    joint, size = cell_index([(b.cell, b.n_cells) for b in blocks], first.n)
    if size > first.n // 2:
        return None
    to_block = []
    for b in blocks:
        index = np.zeros(size, dtype=np.intp)
        index[joint] = b.cell  # rows of a crossed cell share each block's cell
        to_block.append(index)
    return joint, size, to_block


def _chunk(blocks: list[RateParts], seed: int, size: int, frequency: np.ndarray | None = None,
           shared: tuple | None = None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    sums = [(np.empty((b.n_cells, size)), np.empty((b.n_cells, size))) for b in blocks]
    for j in range(size):
        # one resample's row counts at a time, shared by every block: O(rows + cells x size) memory
        counts = resample_counts(rng, blocks[0].n) if frequency is None else _frequency_factors(rng, frequency)
        if shared is None:
            for block, (s_w, s_wp) in zip(blocks, sums):
                s_w[:, j], s_wp[:, j] = block._sums(counts)
            continue
        joint, n_joint, to_block = shared
        j_w = np.bincount(joint, weights=counts * blocks[0].w, minlength=n_joint)
        j_wp = np.bincount(joint, weights=counts * blocks[0].wp, minlength=n_joint)
        for block, index, (s_w, s_wp) in zip(blocks, to_block, sums):
            s_w[:, j] = np.bincount(index, weights=j_w, minlength=block.n_cells)
            s_wp[:, j] = np.bincount(index, weights=j_wp, minlength=block.n_cells)
    return np.vstack([b.term_values(b.rates_from_sums(*s)) for b, s in zip(blocks, sums)])


def bootstrap_values(parts: RateParts | Sequence[RateParts], n_bootstrap: int, random_state=None,
                     n_jobs=None, frequency: np.ndarray | None = None) -> np.ndarray:
    """Term values (terms x n_bootstrap) on resamples of the rows drawn with replacement.

    ``parts`` may be several blocks of terms on the same rows (each with its own cells): they
    are measured on the same resamples, drawn once, and their terms stacked in order. The draws
    depend only on ``random_state``, not on ``n_jobs``: each chunk of ``_CHUNK`` resamples has
    its own seed, drawn from ``random_state`` in order. Rows keep their weights in a resample
    (sampling weights); with ``frequency``, the rows' integer weights, the resamples are those
    of the rows repeated that many times instead.
    """
    blocks = [parts] if isinstance(parts, RateParts) else list(parts)
    sizes = [_CHUNK] * (n_bootstrap // _CHUNK) + ([n_bootstrap % _CHUNK] if n_bootstrap % _CHUNK else [])
    seeds = check_random_state(random_state).randint(np.iinfo(np.int32).max, size=len(sizes))
    shared = _shared_cells(blocks) if sizes else None
    chunks = Parallel(n_jobs=n_jobs)(delayed(_chunk)(blocks, int(s), k, frequency, shared)
                                     for s, k in zip(seeds, sizes))
    return np.hstack(chunks) if chunks else np.zeros((sum(len(b.terms) for b in blocks), 0))


def percentile_interval(samples: np.ndarray, confidence_level: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of each row, ignoring resamples where a value is undefined."""
    alpha = (1.0 - confidence_level) / 2.0
    # rows undefined in every resample (every row, without resamples) get NaN bounds; nanquantile
    # would warn of them
    low, high = np.full(samples.shape[0], np.nan), np.full(samples.shape[0], np.nan)
    some = ~np.isnan(samples).all(axis=1)
    low[some] = _quantile(samples[some], alpha)
    high[some] = _quantile(samples[some], 1.0 - alpha)
    return low, high


def _quantile(samples: np.ndarray, q: float) -> np.ndarray:
    """Linear-interpolation quantile of each row that keeps infinite values: a ratio is inf in a
    resample without losses, and interpolating towards an infinity gives that infinity, where
    numpy's ``inf - inf`` would give NaN."""
    with np.errstate(invalid="ignore"):
        value = np.nanquantile(samples, q, axis=1)
    undefined = np.isnan(value)
    if undefined.any():
        rows = samples[undefined]
        below = np.nanquantile(rows, q, axis=1, method="lower")
        above = np.nanquantile(rows, q, axis=1, method="higher")
        value[undefined] = np.where(np.isneginf(below), np.where(np.isposinf(above), np.nan, below), above)
    return value
