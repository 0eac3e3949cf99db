"""Confidence margins: tighten constraints by the sampling error of their estimates."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from scipy.optimize import brentq
from scipy.special import ndtr, ndtri
from scipy.stats import norm

from ..rates import Constraint, Ratio
from ..rates._expression import NEEDS_LABELS, RATE_KINDS
from ..rates._slice import LABEL
from ._compile import RateData, _coefficients, rate_cells
from ._evaluate import constraint_rows, evaluate_term, ratio_value, violation_rows

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


def confidence_margins(constraints: list[Constraint], data: RateData, confidence: float) -> np.ndarray:
    """A margin per constraint so that, met with it on ``data``, it holds on new data.

    A constraint is linear in the decisions: its estimate ``g`` sums each example's
    contribution ``f_i(y_i, yhat_i)``, the constraint's coefficients over the slices row i
    belongs to, over the slices' weights. The examples are independent, so the standard
    deviation of ``g`` is about ``sqrt(sum_i Var f_i)``, and ``Var f_i <= r_i^2 / 4`` with
    ``r_i`` the range of ``f_i`` (Popoviciu's inequality) over what is random in it: the
    decision ``yhat_i`` in ``[0, 1]`` and, for a rate whose slice does not fix the label
    (``precision = tp_proportion / ppr``, ``error_rate``, ``wins``), the label too. A slice
    that fixes the label (``tpr``, ``fpr``, ``label=1``) is a sample of its own class, whose
    size the normal approximation takes as given. So ``s = ||r||_2 / 2``; overlapping slices
    are accounted for exactly (``tpr[g] - tpr`` has smaller coefficients than either rate
    alone), and the linear form ``c D - N`` of a ratio constraint ``N / D >= c`` counts the
    labels' spread: ``c ppr - tp_proportion`` ranges over 1 / n per example, not ``|c - y| / n``.

    The margin is ``z * s``, ``z`` the one-sided normal quantile of ``confidence``: meeting
    ``g + margin <= 0`` on ``data`` implies ``g <= 0`` in the population with about that
    probability per constraint, for a model fixed in advance (normal approximation);
    :func:`simultaneous_margins` covers a model chosen on ``data`` among candidates. For a
    single rate on a slice of effective size n it is ``z / (2 sqrt(n))``.

    Parameters
    ----------
    constraints : list of Constraint
        Expanded constraints (no bare group columns); their linear forms ``g`` are measured.
    data : RateData
        The sample the constraints are met on, whose slices' sizes and weights set the spread.
    confidence : float
        The one-sided confidence level (e.g. 0.95): the probability that each constraint met
        with its margin holds on new data.

    Returns
    -------
    ndarray of shape (n_constraints,)
        The margin of each constraint on its linear form ``g``, in the order given.
    """
    if not constraints:
        return np.zeros(0)
    return norm.ppf(confidence) * 0.5 * _spreads([c.expression for c in constraints], data)


def _spreads(expressions: list, data: RateData) -> np.ndarray:
    """``||r||_2`` of :func:`confidence_margins` for each expression: per example, the range of
    its contribution over the decision and, where a slice leaves it free, the label.

    Rows alike in label, baseline decision and the slices' groups (a cell) contribute their
    weight times one shared 2 x 2 table, so an expression's ``||r||^2`` is the sum over its cells
    of the table's range squared times the cell's sum of squared weights: the tables of every
    expression come from one sparse product with the rates' per-cell tables, a block of
    expressions at a time, at the cost of the cells each expression reads, not of the rows."""
    rates, mix, _, cells, total = rate_cells(expressions, data)
    M, n_cells = cells.M, cells.n_cells
    rate_of = np.repeat(np.arange(len(rates)), np.diff(M.indptr))
    # each (rate, cell)'s contribution per unit of weight at label (0, 1) x decision (0, 1); the
    # same at either label where the slice fixes it, else the coefficients at each label
    table = np.empty((M.nnz, 2, 2))
    table[:, :, 0], table[:, :, 1] = cells.C.data[:, None], (cells.V.data + cells.C.data)[:, None]
    free = [r.kind if r.kind in NEEDS_LABELS and not _fixes_label(r) else "" for r in rates]
    kinds = np.array(free, dtype=str)[rate_of]
    if data.baseline is not None:
        rep = np.zeros(n_cells, dtype=np.intp)
        rep[cells.cell] = np.arange(data.n)  # a row of each cell: all its rows are alike
    for kind in np.unique(kinds[kinds != ""]):
        at = np.flatnonzero(kinds == kind)
        b = None if data.baseline is None else data.baseline[rep[M.indices[at]]]
        for label in (0, 1):
            v, c = _coefficients(kind, np.full(at.size, label), b)
            table[at, label, 0], table[at, label, 1] = c, v + c
    table /= total[rate_of, None, None]
    per_cell = sp.csr_matrix((table.reshape(-1), (4 * M.indices[:, None] + np.arange(4)).ravel(), 4 * M.indptr),
                             shape=(len(rates), 4 * n_cells))
    w = np.asarray(data.sample_weight, dtype=float)
    squares = np.bincount(cells.cell, weights=w * w, minlength=n_cells)
    # blocks of expressions whose tables hold about _ENTRIES entries (parity constraints each
    # read every cell of the overall rate)
    size = np.cumsum(abs(mix).sign() @ np.diff(per_cell.indptr))
    out = np.zeros(len(expressions))
    lo = 0
    while lo < len(expressions):
        done = size[lo - 1] if lo else 0
        hi = max(lo + 1, int(np.searchsorted(size, done + _ENTRIES, side="right")))
        out[lo:hi] = _squared_ranges(mix[lo:hi] @ per_cell, squares)
        lo = hi
    return np.sqrt(out)


def _squared_ranges(tables: sp.csr_matrix, squares: np.ndarray) -> np.ndarray:
    """Each row's sum over cells of ``(max - min)^2`` of the cell's four entries (columns
    ``4 c .. 4 c + 3`` of ``tables``; an entry not stored is 0) times ``squares[c]``."""
    tables = sp.csr_matrix(tables)
    tables.sort_indices()
    if not tables.nnz:
        return np.zeros(tables.shape[0])
    row = np.repeat(np.arange(tables.shape[0]), np.diff(tables.indptr))
    cell = tables.indices // 4
    starts = np.flatnonzero(np.r_[True, (row[1:] != row[:-1]) | (cell[1:] != cell[:-1])])
    hi, lo = np.maximum.reduceat(tables.data, starts), np.minimum.reduceat(tables.data, starts)
    partial = np.diff(np.r_[starts, tables.nnz]) < 4  # a 0 among the four
    hi, lo = np.where(partial, np.maximum(hi, 0.0), hi), np.where(partial, np.minimum(lo, 0.0), lo)
    return np.bincount(row[starts], weights=(hi - lo) ** 2 * squares[cell[starts]], minlength=tables.shape[0])


def _fixes_label(rate) -> bool:
    return RATE_KINDS[rate.kind][1] is not None or any(key == LABEL for key, _ in rate.slice.filters)


#: Entries of the (rows, candidates) blocks held at a time (32 MiB of floats).
_ENTRIES = 2**22
#: Monte Carlo draws of the candidates' joint errors: at least this many, and enough for this many
#: beyond the quantile, up to the cap (5,000 put a 0.95 quantile within about 2%, one standard error).
_DRAWS, _TAIL_DRAWS, _MAX_DRAWS = 5_000, 100, 200_000


def simultaneous_margins(constraints: list[Constraint], data: RateData, decisions: ArrayLike,
                         confidence: float, random_state: int | np.random.Generator | None = None) -> np.ndarray:
    """A margin per constraint that holds for every mixture of the candidates at once.

    The solution is chosen among candidates on the rows its constraints are measured on, and
    the choice favours candidates whose estimate happens to look good, so a margin that
    covers one model fixed in advance (:func:`confidence_margins`) covers the chosen one less
    often. A mixture's constraint value is the mixture of its candidates' values, so its
    estimation error is at most the largest of theirs: a bound on the largest error over
    the candidates holds whatever the choice.

    Each candidate's estimate ``g_k`` is a sum over independent examples; example i's
    influence on it is its contribution ``coef * w_i (v_i yhat_ik + c_i)`` to each of the
    constraint's rates, less that rate's value (the slices' weights taken as given, as in
    :func:`confidence_margins`), at its own label and decision. The errors of the ``k``
    estimates are then jointly about normal with covariance ``C = I^T I`` (``I`` the n x k
    influences), and the margin is the ``confidence`` quantile of ``max_k Z_k``, ``Z ~ N(0, C)``,
    drawn by Monte Carlo (the Gaussian multiplier bootstrap for maxima of sums; Chernozhukov,
    Chetverikov and Kato, 2013). The variances are the candidates' own, not the worst case.

    Parameters
    ----------
    constraints : list of Constraint
        Expanded constraints; their linear forms ``g`` are measured.
    data : RateData
        The rows the solution is chosen on.
    decisions : array-like of shape (n_samples, n_candidates)
        Each candidate's 0/1 (or expected) decisions on those rows.
    confidence : float
        The one-sided level: the probability that each constraint, met with its margin by a
        mixture of the candidates on ``data``, holds on new data.
    random_state : int, Generator or None, default=None
        Seeds the Monte Carlo draws.

    Returns
    -------
    ndarray of shape (n_constraints,)
        The margin of each constraint on its linear form ``g``, in the order given.

    References
    ----------
    V. Chernozhukov, D. Chetverikov, K. Kato. Gaussian approximations and multiplier bootstrap
    for maxima of sums of high-dimensional random vectors. Annals of Statistics 41(6), 2013.
    """
    decisions = np.asarray(decisions)
    if decisions.ndim != 2 or decisions.shape[0] != data.n:
        raise ValueError(f"decisions must have shape ({data.n}, n_candidates), one row per row of data; "
                         f"got shape {decisions.shape}")
    # the constraints whose quantile is drawn: the first of each set of terms, which a difference
    # and its negation share ("<=" and ">=" on one difference: g and -g err alike)
    drawn, seen = [], {frozenset()}  # a constant: nothing is estimated
    for con in constraints:
        terms = con.expression.terms
        if frozenset(terms) not in seen:
            drawn.append(terms)
            seen |= {frozenset(terms), frozenset((r, -a) for r, a in terms)}
    influences = _Influences(data, decisions, [c.expression for c in constraints],
                             [(r, s) for terms in drawn for r, _ in terms for s, _ in terms])
    rng = np.random.default_rng(random_state)
    quantiles = {frozenset(): 0.0}
    for terms in drawn:
        gram = sum(a * b * influences.gram(r, s) for r, a in terms for s, b in terms)
        quantiles[frozenset(terms)] = quantiles[frozenset((r, -a) for r, a in terms)] = _largest_error_quantile(
            gram, confidence, rng)
    return np.array([quantiles[frozenset(c.expression.terms)] for c in constraints], dtype=float)


class _Influences:
    """Each rate's influences on the candidates' estimates, ``I_r`` (n x k, zero outside its
    slice), and the products ``I_r^T I_s`` constraints combine: a constraint's ``I`` is
    ``sum_r coef_r I_r``, and parity constraints share their rates (every one of them the
    overall rate), so each product is formed once, over the rows the two slices share.

    On its slice ``I_r = diag(w v) D + U V^T``, ``D`` the decisions, ``U = [w c, -w]`` and
    ``V = [1, value]``: the product is one weighted ``D^T D`` and rank-two corrections. Rows
    far from every candidate's boundary share their decisions, so ``D`` is read over its
    distinct rows, each weighted by the sum over the rows that repeat it. The slices' rows and
    the rows two slices share are found through the cells of alike rows, at the cost of those
    rows rather than of a pass over the data per rate.

    A slice's total is summed over every row's weight (0 outside it) and the products over the
    shared rows in order, so the margins repeat to the bit the values recorded in the benchmarks;
    the Monte Carlo draws through the grams' symmetric roots, so another order would move a
    margin only by its rounding.

    Given the ``requests`` to come, in order, a product is held only until its pair's last one:
    the overall rate's is asked for by every parity constraint, a group's by its own alone, and
    2,000 groups' products over 100 candidates would hold 330 MB. Each is computed in the
    orientation of its first request and transposed for the other, as when all were held
    (without ``requests``, every product is).
    """

    def __init__(self, data: RateData, decisions: np.ndarray, expressions: list, requests: list | None = None):
        self.data, self._rates, self._grams = data, {}, {}
        self._left: dict[frozenset, int] | None = None  # requests to come per pair, either order
        if requests is not None:
            self._left = {}
            for r, s in requests:
                pair = frozenset((r, s))
                self._left[pair] = self._left.get(pair, 0) + 1
        # each row's pattern: an index into the distinct rows of decisions
        _, first, pattern = np.unique(_row_keys(decisions), return_index=True, return_inverse=True)
        self._pattern, distinct = pattern.ravel(), decisions[first]
        # candidates with the same decisions on the weighted rows err together, so one of each
        # is enough (exactly, compared on the distinct rows); a row of weight 0 is no row
        seen = distinct[np.unique(self._pattern[data.sample_weight > 0])]
        _, keep = np.unique(_row_keys(seen.T), return_index=True)
        self._distinct = distinct[:, np.sort(keep)]
        self._index, _, _, self._cells, _ = rate_cells(expressions, data)
        self._slices, entry = self._cells.rows()
        self._v, self._c = self._cells.V.data[entry], self._cells.C.data[entry]  # of each row in each slice
        self._by_cell = np.argsort(self._cells.cell, kind="stable")  # rows in order within each cell
        self._cell_start = np.r_[0, np.cumsum(np.bincount(self._cells.cell, minlength=self._cells.n_cells))]

    def _pattern_sums(self, rows: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The distinct rows ``rows`` repeat, and the sums of ``weights`` (one column per sum)
        over the rows that repeat each."""
        pattern, which = np.unique(self._pattern[rows], return_inverse=True)
        return pattern, np.column_stack([np.bincount(which.ravel(), weights=col, minlength=pattern.size)
                                         for col in weights.T])

    def _rate(self, rate):
        """Rows of the rate's slice, ``w v`` and ``U`` on them, and ``V``."""
        if rate not in self._rates:
            at = slice(*self._slices.indptr[self._index[rate]:self._index[rate] + 2])
            idx, v, c = self._slices.indices[at], self._v[at], self._c[at]
            # the slice's total summed over every row's weight, 0 outside it: the order of the sum
            w = np.zeros_like(self.data.sample_weight)
            w[idx] = self.data.sample_weight[idx]
            w = w[idx] / w.sum()
            pattern, per = self._pattern_sums(idx, (w * v)[:, None])
            k = self._distinct.shape[1]
            value = sum(per[b, 0] @ self._distinct[pattern[b]] for b in _blocks(pattern.size, k)) + np.dot(w, c)
            self._rates[rate] = (idx, w * v, np.column_stack([w * c, -w]), np.column_stack([np.ones(k), value]))
        return self._rates[rate]

    def _shared(self, r, s) -> np.ndarray:
        """The rows both slices hold, in order: those of the cells both hold."""
        M = self._cells.M
        cells_r, cells_s = (M.indices[M.indptr[self._index[q]]:M.indptr[self._index[q] + 1]] for q in (r, s))
        shared = np.intersect1d(cells_r, cells_s, assume_unique=True)
        start, count = self._cell_start[shared], np.diff(self._cell_start)[shared]
        at = np.arange(count.sum()) + np.repeat(start - np.cumsum(count) + count, count)
        return np.sort(self._by_cell[at])

    def gram(self, r, s) -> np.ndarray:
        """``I_r^T I_s``, held while requests for the pair are to come."""
        # a held product is looked up as (s, r) first and returned transposed, so a rate's own
        # product comes transposed from its second request on: the draws read its last bits
        if (s, r) in self._grams:
            key, gram, out = (s, r), self._grams[(s, r)], self._grams[(s, r)].T
        else:
            key = (r, s)
            gram = out = self._grams[key] if key in self._grams else self._product(r, s)
        if self._left is None:
            self._grams[key] = gram
        else:
            pair = frozenset((r, s))
            self._left[pair] = self._left.get(pair, 0) - 1
            if self._left[pair] > 0:
                self._grams[key] = gram
            else:
                self._grams.pop(key, None)
        return out

    def _product(self, r, s) -> np.ndarray:
        """``I_r^T I_s``, summed over the rows the slices share a block at a time."""
        (idx_r, a_r, U_r, V_r), (idx_s, a_s, U_s, V_s) = self._rate(r), self._rate(s)
        shared = idx_r if r == s else self._shared(r, s)
        i, j = np.searchsorted(idx_r, shared), np.searchsorted(idx_s, shared)
        # the row weights of D^T diag(a_r a_s) D, D^T diag(a_r) U_s and D^T diag(a_s) U_r,
        # summed over the rows of each pattern
        pattern, per = self._pattern_sums(shared, np.column_stack(
            [a_r[i] * a_s[j], a_r[i, None] * U_s[j], a_s[j, None] * U_r[i]]))
        k = self._distinct.shape[1]
        DD, DU = np.zeros((k, k)), np.zeros((k, 4))
        for b in _blocks(pattern.size, k):
            D = self._distinct[pattern[b]].astype(float)
            DD += (D * per[b, :1]).T @ D
            DU += D.T @ per[b, 1:]
        UU = U_r[i].T @ U_s[j]
        return DD + DU[:, :2] @ V_s.T + V_r @ DU[:, 2:].T + V_r @ UU @ V_s.T


def _row_keys(a: np.ndarray) -> np.ndarray:
    """Each row of ``a`` as one value that compares by its bytes (0/1 rows packed 8 to a byte),
    for ``np.unique`` to find equal rows exactly."""
    rows = np.ascontiguousarray(np.packbits(a, axis=1) if a.dtype == bool else a)
    return rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()


def _blocks(n: int, k: int):
    """Slices of ``n`` rows whose blocks of ``k`` columns hold about ``_ENTRIES`` entries."""
    step = max(1, _ENTRIES // max(k, 1))
    return (slice(lo, lo + step) for lo in range(0, n, step))


def _merge_identical(gram: np.ndarray) -> np.ndarray:
    """``gram`` over one of each set of coordinates that are one variable: ``Z_i - Z_j`` of
    variance 0 (to rounding), as candidates that differ only on rows a constraint does not
    read are. Their maximum is any one of them, which the draws would only blur."""
    var = np.diag(gram)
    apart = var[:, None] + var[None, :] - 2 * gram  # Var(Z_i - Z_j)
    same = apart <= 1e-11 * max(var.max(initial=0.0), np.finfo(float).tiny)
    keep = ~np.triu(same, 1).any(axis=0)  # the first of each set
    return gram[np.ix_(keep, keep)]


def _largest_error_quantile(gram: np.ndarray, confidence: float, rng: np.random.Generator) -> float:
    """The ``confidence`` quantile of ``max_k Z_k`` for ``Z ~ N(0, gram)``, by Monte Carlo.

    It lies between the largest of the single quantiles, ``z sigma_k``, and the union bound,
    the ``t`` at which ``sum_k P(Z_k > t) = 1 - confidence``; the estimate is kept within them,
    which bounds its noise where few draws fall beyond the quantile (``confidence`` near 1).
    """
    gram = _merge_identical(gram)
    sd = np.sqrt(np.clip(np.diag(gram), 0.0, None))
    if not sd.max() > 0:
        return 0.0
    alpha, spread = 1.0 - confidence, sd[sd > 0]
    # norm.ppf, norm.isf and norm.sf by the functions they call, without their checks' cost
    # (brentq evaluates the excess a dozen times per constraint)
    lower = ndtri(confidence) * spread.max()
    bracket = -ndtri(alpha / spread.size) * spread.max()  # every term at most alpha / k there
    excess = lambda t: ndtr(-(t / spread)).sum() - alpha  # noqa: E731 (decreasing in t)
    # at either end the root may lie only by rounding (k equal spreads put it at bracket)
    if not bracket > lower or excess(lower) <= 0:
        upper = lower
    elif excess(bracket) >= 0:
        upper = bracket
    else:
        upper = brentq(excess, lower, bracket)
    values, vectors = np.linalg.eigh((gram + gram.T) / 2)
    # the symmetric root (root @ root.T == gram): V sqrt(L) alone would turn each eigenvector's
    # sign, which LAPACK picks and a last-bit change of the gram can flip, into other draws
    root = (vectors * np.sqrt(np.clip(values, 0.0, None))) @ vectors.T
    draws = int(min(_MAX_DRAWS, max(_DRAWS, np.ceil(_TAIL_DRAWS / alpha))))
    step = max(1, _ENTRIES // root.shape[0])  # draws held at a time
    largest = np.concatenate([(rng.standard_normal((min(step, draws - lo), root.shape[0])) @ root.T).max(axis=1)
                              for lo in range(0, draws, step)])
    return float(np.clip(np.quantile(largest, confidence), lower, upper))


def _ratio_denominators(constraints: list[Constraint], data: RateData, decisions: np.ndarray) -> np.ndarray:
    """The denominator of each constraint's ratio side at ``decisions``; NaN for a linear one."""
    return np.array([np.nan if c.ratio is None else evaluate_term(c.ratio.denominator, data, decisions)
                     for c in constraints])


def in_own_units(constraints: list[Constraint], margins: ArrayLike, data: RateData,
                 decisions: np.ndarray) -> np.ndarray:
    """Margins on the linear forms ``g`` (as :func:`confidence_margins` gives them) in each
    constraint's own units, for reports beside its violation ``lhs - rhs``.

    A linear constraint's ``g`` is its violation, so its margin is unchanged. A ratio's ``g`` is
    ``c D - N`` (or ``N - c D``), its violation ``c - N / D``: a margin ``m`` on ``g`` is
    ``m / D`` in the ratio's units, with ``D`` the denominator at ``decisions``; infinite when
    ``D`` is 0 (see :func:`excess_in_own_units` for the violation with it).

    Parameters
    ----------
    constraints : list of Constraint
        Expanded constraints, aligned with ``margins``.
    margins : array-like of shape (n_constraints,)
        Margins on the constraints' linear forms.
    data : RateData
        What the denominators are measured on.
    decisions : ndarray of shape (n_samples,)
        0/1 decisions, or probabilities of predicting 1, at which the denominators are read.

    Returns
    -------
    ndarray of shape (n_constraints,)
        The margins in the constraints' own units.
    """
    return _divided(np.asarray(margins, dtype=float), _ratio_denominators(constraints, data, decisions))


def _divided(margins: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``margins / den`` where ``den`` is a ratio's denominator (see :func:`ratio_value`), the
    margin itself for a linear constraint (``den`` NaN) and 0 where it is 0."""
    return np.where(np.isnan(den) | (margins == 0), margins, ratio_value(margins, den))


def excess_in_own_units(constraints: list[Constraint], margins: ArrayLike, data: RateData,
                        decisions: np.ndarray) -> np.ndarray:
    """Each constraint's violation with its margin on the linear form, ``g + m``, in its own
    units (``> 0``: broken with the margin).

    A linear constraint's is its violation plus ``m``. A ratio's is ``(g + m) / D``: its
    violation plus :func:`in_own_units`' margin where ``D > 0``, and over ``D = 0``, where those
    two are infinite, infinite with the sign of ``g + m`` (0 where ``g + m`` is); but NaN where
    the ratio is ``0 / 0`` (a precision with no positive prediction), undefined with or without
    a margin.

    Parameters
    ----------
    constraints : list of Constraint
        Expanded constraints, aligned with ``margins``.
    margins : array-like of shape (n_constraints,)
        Margins on the constraints' linear forms.
    data : RateData
        What the rates are measured on.
    decisions : ndarray of shape (n_samples,)
        0/1 decisions, or probabilities of predicting 1.

    Returns
    -------
    ndarray of shape (n_constraints,)
        The violations with the margins, in the constraints' own units.
    """
    return own_units(constraints, margins, data, decisions)[2]


def own_units(constraints: list[Constraint], margins: ArrayLike, data: RateData,
              decisions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The violations, the margins (:func:`in_own_units`) and the violations with them
    (:func:`excess_in_own_units`), all in the constraints' own units, from one reading of the
    rates and denominators: for a report that shows the three."""
    margins = np.asarray(margins, dtype=float)
    den = _ratio_denominators(constraints, data, decisions)
    own = np.array([row["violation"] for row in violation_rows(constraints, data, decisions)], dtype=float)
    margin = _divided(margins, den)
    with np.errstate(invalid="ignore"):  # inf - inf over a zero denominator, replaced below
        out = own + margin
    infinite = (den <= 0) & ~np.isnan(own)
    if infinite.any():  # both parts infinite: the linear form decides, met with equality at 0
        linear = np.array([row["violation"] for row in constraint_rows(constraints, data, decisions)], dtype=float)
        at = linear + margins
        out = np.where(infinite, np.where(at == 0, 0.0, ratio_value(at, den)), out)
    return own, margin, out


def tightened(constraint: Constraint, margin: float) -> Constraint:
    """``constraint`` with its bound moved ``margin`` into the feasible side, in its own units:
    ``lhs <= rhs - margin`` or ``lhs >= rhs + margin`` (``precision >= 0.72`` for
    ``precision >= 0.7`` and a margin of 0.02). For a linear constraint that is ``g + margin <= 0``;
    a ratio is compared with a constant, so the constant side moves.

    Parameters
    ----------
    constraint : Constraint
        The constraint to tighten.
    margin : float
        How far to move its bound, in the constraint's own units; ``0`` leaves it as it is.

    Returns
    -------
    Constraint
        The tightened constraint (``constraint`` itself for a zero margin).
    """
    if margin == 0:
        return constraint
    shift = -margin if constraint.op == "<=" else margin
    if isinstance(constraint.rhs, Ratio):
        return Constraint(constraint.lhs - shift, constraint.op, constraint.rhs)
    return Constraint(constraint.lhs, constraint.op, constraint.rhs + shift)
