"""The trimmed linear M-estimation problem, as the solvers take it.

The problem, for a linear model ``s_i = x_i @ W + b`` with per-sample loss
``f_i`` and ``h`` kept samples, is::

    min_{W, b, w}  (1 / h) * sum_i w_i f_i(W, b) + alpha * R(W)
    s.t.           w in Delta_h = {w in [0, 1]^n : sum(w) = h}

optionally with a least kept weight per group of samples (per class). The solvers
work on preconditioned columns ``Z = (X - offset) / scale`` (see
:func:`column_scaling`); the penalty is then taken of ``W / scale``, the
coefficients in the original units, so the minimiser is that of the problem in
``X``. :class:`TrimmedProblem` holds data and model, with the exact weight block;
:class:`TrimmedFit` is a solver's result. No scikit-learn estimators here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from skrate._capped_simplex import project_capped_simplex
from skrate._centred_columns import CentredColumns, largest_eigenvalue, row_sq_norms
from skrate._kept_set import keep_first
from skrate._trimmed_location import _fill, trimmed_location
from skrate._trimmed_losses import CURVATURE, linear_loss, penalty_prox, penalty_value, penalty_weight
from skrate.utils._binary import power_of_two_above
from skrate.utils._sorting import stable_argsort


# ------------------------------------------------------------------------ the model
def column_scaling(X, fit_intercept: bool) -> tuple[np.ndarray, np.ndarray]:
    """Offset and scale of each column, for the solvers to work on ``(X - offset) / scale``.

    First-order steps are set by the largest curvature, so columns on very
    different scales (an income next to an age) leave the small-scale directions
    and the intercept nearly still. The offset is the mean with an intercept
    (which absorbs it; 0 without), the scale the root mean square of ``X -
    offset``: the diagonal of the curvature then is 1. Both are taken of the column
    clipped at Tukey's far-out fences (quartiles -/+ 3 interquartile ranges): a few
    gross values (sentinel codes, unit errors), which the trimmed fit leaves out,
    would otherwise set the scale and squeeze the spread of the rest to nearly
    nothing. A column whose quartiles coincide (mostly one value) is not
    clipped; a constant one is scaled by 1.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
        A sparse ``X`` gets the same statistics as its dense form, from its non-zeros and
        the count of its zeros per column.
    fit_intercept : bool

    Returns
    -------
    offset, scale : ndarray of shape (n_features,)
    """
    if sp.issparse(X):
        return _sparse_column_scaling(sp.csc_matrix(X), fit_intercept)
    # a few columns at a time: the statistics hold about six arrays of the columns' size (the
    # quartiles' sort among them), which for all of them at once were six copies of X. Each
    # column's are its own, and blocks of at least two columns reduce over the rows in the
    # same order as X whole (a single one would be summed pairwise: another rounding)
    n, d = X.shape
    blocks = max(1, min(d // 2, -(-n * d // _SCALING_BLOCK)))
    parts = [_dense_column_scaling(X[:, cols], fit_intercept) for cols in _column_blocks(d, blocks)]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


#: Most entries of ``X`` whose statistics :func:`column_scaling` takes at once.
_SCALING_BLOCK = 2**22


def _column_blocks(d: int, blocks: int) -> list[slice]:
    """``blocks`` consecutive slices of ``d`` columns, of sizes differing by at most one."""
    edges = np.linspace(0, d, blocks + 1).round().astype(int)
    return [slice(a, b) for a, b in zip(edges[:-1], edges[1:])]


def _dense_column_scaling(X: np.ndarray, fit_intercept: bool) -> tuple[np.ndarray, np.ndarray]:
    """:func:`column_scaling` of the columns of a dense ``X``."""
    q1, q3 = np.percentile(X, [25, 75], axis=0)
    # moments in units of the quartiles' magnitude: squares beyond 1e154 overflowed
    unit = power_of_two_above(np.maximum(np.abs(q1), np.abs(q3)))
    X, q1, q3 = X / unit, q1 / unit, q3 / unit
    iqr = q3 - q1
    clipped = np.where(iqr > 0, np.clip(X, q1 - 3.0 * iqr, q3 + 3.0 * iqr), X)
    # then in units of the largest clipped entry (exact too): a column mostly 0 has quartiles of
    # 0, and its other entries of 1e-300 squared to a scale of 0 (a coefficient of -inf)
    big = power_of_two_above(np.max(np.abs(clipped), axis=0, initial=0.0))
    X, clipped, unit = X / big, clipped / big, unit * big
    flat = np.ptp(X, axis=0) == 0
    # a constant column's offset is its value, exactly: a mean's rounding (1e234 at 1e250) left
    # behind as the centred column overflowed the solvers
    offset = np.where(flat, X[0], clipped.mean(axis=0)) if fit_intercept and X.shape[0] else np.zeros(X.shape[1])
    scale = np.sqrt(np.mean((clipped - offset) ** 2, axis=0))
    return offset * unit, np.where(flat, 1.0, scale * unit)


def _sparse_column_scaling(X: sp.csc_matrix, fit_intercept: bool) -> tuple[np.ndarray, np.ndarray]:
    """:func:`column_scaling` of a sparse ``X``, without forming its zeros.

    Each column sorted is its negative entries, its zeros, then its positive entries: the
    quartiles are read at their ranks in that order, and the zeros enter the moments as one
    value counted ``n - nnz`` times.
    """
    n, d = X.shape
    counts = np.diff(X.indptr)
    col = np.repeat(np.arange(d), counts)
    order = np.lexsort((X.data, col))
    v = np.append(X.data[order], 0.0)  # the sentinel stands for a column with no entries
    start, zeros = X.indptr[:-1], n - counts
    neg = np.bincount(col[X.data < 0], minlength=d)

    def at(rank):
        """Each column's value at ``rank`` (per column) in its sorted order."""
        k = np.where(rank < neg, rank, rank - zeros)
        at_zero = (rank >= neg) & (rank < neg + zeros)
        return np.where(at_zero, 0.0, v[np.where(at_zero, v.size - 1, start + k)])

    def quantile(q):  # numpy's "linear" method
        pos = q * (n - 1)
        lo = int(np.floor(pos))
        t = pos - lo
        a, b = at(np.full(d, lo)), at(np.full(d, min(lo + 1, n - 1)))
        return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t

    q1, q3 = quantile(0.25), quantile(0.75)
    unit = power_of_two_above(np.maximum(np.abs(q1), np.abs(q3)))
    data, q1, q3 = X.data / unit[col], q1 / unit, q3 / unit
    iqr = q3 - q1
    low, high = q1 - 3.0 * iqr, q3 + 3.0 * iqr
    clipped = np.where(iqr[col] > 0, np.clip(data, low[col], high[col]), data)
    zero = np.where(iqr > 0, np.clip(0.0, low, high), 0.0)  # each column's zeros, clipped
    largest = np.maximum(np.where(zeros > 0, np.abs(zero), 0.0), _column_max(np.abs(clipped), col, d))
    big = power_of_two_above(largest)
    clipped, zero, unit = clipped / big[col], zero / big, unit * big
    last = start + counts - 1
    top = np.where(counts > 0, v[np.minimum(last, v.size - 1)] / unit, 0.0)
    bottom = np.where(counts > 0, v[np.minimum(start, v.size - 1)] / unit, 0.0)
    top, bottom = np.where(zeros > 0, np.maximum(top, 0.0), top), np.where(zeros > 0, np.minimum(bottom, 0.0), bottom)
    flat = top == bottom
    if fit_intercept and n:
        mean = (np.bincount(col, weights=clipped, minlength=d) + zeros * zero) / n
        offset = np.where(flat, bottom, mean)
    else:
        offset = np.zeros(d)
    dev = clipped - offset[col]
    scale = np.sqrt((np.bincount(col, weights=dev * dev, minlength=d) + zeros * (zero - offset) ** 2) / n)
    return offset * unit, np.where(flat, 1.0, scale * unit)


def _column_max(values: np.ndarray, col: np.ndarray, d: int) -> np.ndarray:
    """The largest of ``values`` in each of ``d`` columns (0 for none), ``col`` their column."""
    out = np.zeros(d)
    np.maximum.at(out, col, values)
    return out


#: Entries of the scaled columns beyond this many spreads from the centre are held there.
_FAR = 2.0**64


def held_within(Z: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The scaled columns of :func:`column_scaling` with entries beyond ``2**64`` spreads held
    at ``+-2**64``. Such an entry (a sentinel code, a unit error) makes its row an outlier the
    trimmed fit sets aside, whatever its exact size; left as it is, one of ``1e160`` squared to
    inf in the curvature bounds and the losses, and the fit failed or returned NaN."""
    return np.clip(Z, -_FAR, _FAR, out=out)


def held_rows(Z: np.ndarray | CentredColumns) -> np.ndarray:
    """The rows of ``Z`` (from :func:`preconditioned`) with an entry held by :func:`held_within`
    (a sparse ``Z``'s zeros lie within the fences, see :func:`preconditioned`)."""
    far = _FAR / 2  # the held entries, up to the rounding of the shift and division
    if isinstance(Z, CentredColumns):
        S = Z.S.tocoo()
        return np.bincount(S.row[np.abs(S.data - Z.shift[S.col]) >= far], minlength=Z.shape[0]) > 0
    return (np.abs(Z) >= far).any(axis=1)


def preconditioned(X, offset: np.ndarray, scale: np.ndarray):
    """The columns ``(X - offset) / scale`` as the solvers take them: a dense array held by
    :func:`held_within`, or for a sparse ``X`` a :class:`CentredColumns` whose entries are held
    alike (``X`` is left as it is).

    A sparse column with at least half of its rows stored is centred in place, its zeros
    filled (at most doubling its storage): left to the implicit centring, a mean of ``1e6``
    over a spread of ``1e-3`` cancelled 9 digits of every score. The others have a median of
    0, within the quartiles' fences, so their offset is at most ``sqrt(2)`` spreads: the
    implicit centring loses no digits there, and their zeros need no holding.
    """
    if not sp.issparse(X):
        # one array: each step in place, where X - offset, its quotient and its clip were three
        Z = np.subtract(X, offset)
        np.divide(Z, scale, out=Z)
        return held_within(Z, out=Z)
    X = sp.csc_matrix(X, copy=True)
    n, d = X.shape
    col = np.repeat(np.arange(d), np.diff(X.indptr))
    with np.errstate(over="ignore"):  # a bound past the float range holds nothing
        X.data = np.clip(X.data, offset[col] - _FAR * scale[col], offset[col] + _FAR * scale[col])
    filled = np.diff(X.indptr) * 2 >= n
    if filled.any():
        kept = np.flatnonzero(~filled)
        F = sp.coo_matrix(X[:, filled].toarray() - offset[filled])
        R = X[:, kept].tocoo()
        cols = np.r_[np.flatnonzero(filled)[F.col], kept[R.col]]
        X = sp.csr_matrix((np.r_[F.data, R.data], (np.r_[F.row, R.row], cols)), shape=(n, d))
    return CentredColumns.of(X, np.where(filled, 0.0, offset), scale)


def kept_sum(w: np.ndarray, v: np.ndarray) -> float:
    """``w @ v`` over the rows with ``w > 0``: a trimmed row's loss may be inf (a gross
    target) and ``0 * inf`` is NaN."""
    kept = w > 0
    return float(w[kept] @ v[kept])


@dataclass
class TrimmedProblem:
    """Data and model of a trimmed linear M-estimation problem.

    ``coef_scale`` (default ones): the penalty applies to ``W / coef_scale``, the
    coefficients for the columns ``X * coef_scale`` (with ``X`` preconditioned by
    :func:`column_scaling`, the original units). ``groups`` and ``floors``: each
    group ``k`` of samples keeps a weight of at least ``floors[k]``. ``caps``
    (default ones): the sample weights, the most weight each sample can keep; the
    solvers' weights ``w`` then lie in ``0 <= w_i <= caps_i``, ``sum_i w_i = h``, and
    ``w_i / caps_i`` is the share of sample ``i`` kept.
    """

    X: np.ndarray | CentredColumns
    Y: np.ndarray
    loss: str
    h: float
    penalty: str = "l2"
    alpha: float = 0.0
    fit_intercept: bool = True
    coef_scale: np.ndarray | None = None
    groups: np.ndarray | None = None
    floors: np.ndarray | None = None
    caps: np.ndarray | None = None
    n_scores: int = field(init=False)

    group_rows: list = field(init=False, repr=False, compare=False)
    floor_counts: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        self.n_scores = self.Y.shape[1] if self.loss == "multinomial" else 1
        if self.coef_scale is None:
            self.coef_scale = np.ones(self.X.shape[1])
        # the rows of each group with a floor, in increasing order, and how many of them
        # the floor keeps (ceil(floors[k]), at most the group): found once, not at every
        # weight step, and shared with KeptSet so both select alike
        self.group_rows = []
        self.floor_counts = np.zeros(0, dtype=np.intp)
        if self.floors is not None:
            order = np.argsort(self.groups, kind="stable")
            counts = np.bincount(self.groups, minlength=len(self.floors))
            self.group_rows = np.split(order, np.cumsum(counts)[:-1])[: len(self.floors)]
            sizes = np.array([rows.size for rows in self.group_rows], dtype=np.intp)
            ceil = np.ceil(np.asarray(self.floors, dtype=float))
            self.floor_counts = np.clip(ceil, 0, sizes).astype(np.intp)

    def scores(self, W, b):
        return self.X @ W + b

    def losses(self, W, b):
        return linear_loss(self.loss, self.scores(W, b), self.Y)[0]

    def penalty_value(self, W) -> float:
        """``R`` of the coefficients in the original units, ``W / coef_scale``."""
        return penalty_value(self.penalty, W / self.coef_scale[:, None])

    def prox(self, W, t: float):
        """Prox of ``t * alpha * R(W / s)``: per coordinate ``s * prox_{t alpha R / s^2}(W / s)``.

        ``R`` being separable, the substitution ``W = s V`` turns it into the prox of
        ``R`` with a step weighted per coordinate.
        """
        return self.prox_at(t)(W)

    def prox_at(self, t: float) -> Callable[[np.ndarray], np.ndarray]:
        """:meth:`prox` at step ``t``, as a function of ``W``: its weights are computed once,
        for an epoch's many minibatch steps at one step size."""
        if self.penalty == "none":
            return lambda W: W
        s = self.coef_scale[:, None]
        with np.errstate(over="ignore"):  # inf holds the coefficient at 0, as penalty_weight's
            weight = t * penalty_weight(self.alpha, s)
        prox = penalty_prox(self.penalty, weight)
        return lambda W: s * prox(W / s)

    def objective(self, W, b, w) -> float:
        """``(1/h) sum_i w_i f_i + alpha R(W)``."""
        return kept_sum(w, self.losses(W, b)) / self.h + self.alpha * self.penalty_value(W)

    def keep_smallest(self, losses: np.ndarray) -> np.ndarray:
        """The exact minimiser over the weights: 1 on the ``h`` smallest losses.

        With floors the problem is a linear program over a polymatroid, solved
        greedily: each group's ``floors[k]`` smallest losses first (of equal losses,
        the first rows), then the smallest of the rest. With caps, each row takes
        up to its cap in that order until the mass is reached (the last in part).
        """
        return self.greedy(losses)[0]

    def kept_mask(self, w: np.ndarray) -> np.ndarray:
        """The rows kept more than half."""
        return w > 0.5 if self.caps is None else w > 0.5 * self.caps

    def _greedy_capped(self, losses: np.ndarray, bounds: bool) -> tuple:
        """:meth:`greedy` with caps: one stable sort by loss (NaN last, of equal losses
        the first rows), each group's floor filled in that order within the group, then
        the mass left over the capacity left."""
        caps = self.caps
        order = stable_argsort(losses)
        c = caps[order]
        w_floor = np.zeros_like(c)
        if self.floors is not None:
            by_group = np.argsort(self.groups[order], kind="stable")  # group, then loss
            g = self.groups[order][by_group]
            cb = c[by_group]
            before = np.cumsum(cb) - cb
            before -= before[np.searchsorted(g, g)]  # mass before a row within its group
            w_floor[by_group] = np.clip(np.asarray(self.floors, dtype=float)[g] - before, 0.0, cb)
        spare = c - w_floor
        mass = self.h - (0.0 if self.floors is None else float(np.sum(self.floors)))
        w_rest = _fill(spare, mass)
        w = np.empty_like(c)
        w[order] = np.where(w_rest >= spare, c, w_floor + w_rest)
        if not bounds:
            return w, None
        kept, free = w > 0, w < caps
        top = np.max(losses[kept]) if kept.any() else -np.inf
        low = np.min(losses[free]) if free.any() else np.inf
        return w, None, float(top), float(low)

    def greedy(self, losses: np.ndarray, bounds: bool = False) -> tuple:
        """:meth:`keep_smallest`, the rows left after the floors (None without floors)
        and, with ``bounds``, the largest kept and the least trimmed loss.

        No sort: a floor keeps the losses up to its group's ``floors[k]``-th smallest,
        of those equal to it the first rows (as a stable sort by group and loss
        would; NaN last), in ``O(n_k)``; the rest is one ``argpartition``. With caps,
        one sort (:meth:`_greedy_capped`), and the least trimmed loss is the least of
        the rows not kept in full.
        """
        if self.caps is not None:
            return self._greedy_capped(losses, bounds)
        h = round(self.h)
        w = np.zeros(losses.shape[0])
        rest, tops = None, []  # tops: the largest loss each floor keeps
        for rows, f in zip(self.group_rows, self.floor_counts.tolist()):
            if f <= 0:
                continue
            v = losses[rows]
            if f == rows.size:
                w[rows] = 1.0
                tops.append(v.max())
                continue
            keep, t = keep_first(v, rows, f)
            if t != t:  # NaN: all the numbers, then the first NaN
                keep = ~np.isnan(v)
                keep[np.flatnonzero(~keep)[: f - np.count_nonzero(keep)]] = True
            w[rows] = keep
            tops.append(t)
        if self.floors is not None:
            rest = np.flatnonzero(w == 0)
        m = h - int(w.sum())
        l_rest = losses if rest is None else losses[rest]
        if m > 0:
            part = np.argpartition(l_rest, m - 1)
            w[part[:m] if rest is None else rest[part[:m]]] = 1.0
        if not bounds:
            return w, rest
        # max and min propagate NaN, as the maximum over the kept rows would
        if m > 0:
            top = np.max([l_rest[part[m - 1]], *tops])
            low = l_rest[part[m:]].min() if m < l_rest.size else np.inf
        else:
            top = np.max(tops) if tops else -np.inf
            low = l_rest.min() if l_rest.size else np.inf
        return w, rest, float(top), float(low)

    def project(self, v: np.ndarray) -> np.ndarray:
        """Euclidean projection onto the weights' set."""
        return project_capped_simplex(v, self.h, self.groups, self.floors, self.caps)

    def start_intercept(self) -> np.ndarray:
        """Intercept of SMART's start, ``W = 0``.

        For the squared loss the trimmed location (:func:`trimmed_location`, the best
        intercept at ``W = 0``): unlike the mean of all of ``Y``, outliers do not move
        it towards themselves. 0 for the classification losses.
        """
        b = np.zeros(self.n_scores)
        if self.fit_intercept and self.loss == "squared":
            h = self.h if self.caps is not None else round(self.h)
            b[0] = trimmed_location(self.Y, h, weights=self.caps)[0]
        return b

    def start_model(self) -> tuple[np.ndarray, np.ndarray]:
        """SMART's start of the model: ``W = 0`` and :meth:`start_intercept`."""
        return np.zeros((self.X.shape[1], self.n_scores)), self.start_intercept()

    def start_weights(self, losses: np.ndarray) -> np.ndarray:
        """SMART's start of the weights, given the ``losses`` at :meth:`start_model`
        (taken by the caller, which needs them anyway for its tables).

        For the squared loss the weights keep the ``h`` smallest losses there (the
        targets nearest the trimmed location): gross targets are trimmed from the first
        step on, where uniform weights would let them dominate the first gradients and
        set the scale of the stopping test. For classification every loss is equal at
        the start (log 2, log K) and so every weight optimal; the uniform ``h / n``
        favours no sample (as for a fractional ``h``, which the exact weights miss),
        with caps the same share ``h / sum(caps)`` of every cap.
        """
        if self.loss == "squared" and (self.caps is not None or float(self.h).is_integer()):
            return self.keep_smallest(losses)
        return self.uniform_weights()

    def uniform_weights(self) -> np.ndarray:
        """The same share of every sample: ``h / n``, or ``h / sum(caps)`` of each cap."""
        if self.caps is None:
            n = self.X.shape[0]
            return np.full(n, self.h / n)
        return self.caps * (self.h / float(np.sum(self.caps)))

    def lipschitz(self) -> tuple[float, float]:
        """Lipschitz constants of the gradient in ``(W, b)`` of the smooth part.

        Returns ``(L_full, L_terms)``: ``L_full`` bounds the whole smooth part
        ``(1/h) sum_i w_i f_i`` for any ``w`` in the capped simplex, ``L_terms`` each
        term ``(n/h) f_i`` of its average form ``(1/n) sum_i (n w_i / h) f_i`` in
        the mean-square sense: ``sqrt(mean_i L_i^2)``.
        """
        kappa = CURVATURE[self.loss]
        X = self.X
        row_sq = row_sq_norms(X) + float(self.fit_intercept)
        n = X.shape[0]
        # with caps a term's weight is at most its cap: row i's curvature scales by it
        scaled = row_sq if self.caps is None else self.caps * row_sq
        lam = largest_eigenvalue(X, self.caps, self.fit_intercept)
        # mean-square (not worst-case) smoothness of the terms: what bounds the
        # variance of the minibatch gradient differences
        l_ms = float(np.sqrt(np.mean(scaled * scaled)))
        return kappa * lam / self.h, kappa * n * l_ms / self.h


@dataclass
class TrimmedFit:
    """Result of a trimmed solver."""

    coef: np.ndarray  # (d, K)
    intercept: np.ndarray  # (K,)
    weights: np.ndarray  # (n,), in the capped simplex
    n_iter: int
    objective: list = field(default_factory=list)  # after each epoch / C-step
    converged: bool = False
    # False when the model is an exact refit (concentration steps) short of its tol
    refit_converged: bool = True
