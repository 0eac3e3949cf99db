"""Compile rate expressions into one sparse matrix.

Every basic rate on a slice S with sample weights w is ``sum_{i in S} w_i (v_i yhat_i + c_i) / W_S``
for per-example coefficients ``v`` and ``c`` that depend only on the label and the baseline
decision. A linear expression is a combination of such rows, so the rates of a model are
``A @ yhat + b``: one sparse matrix-vector product for all rates, whatever their number, and
the surrogate gradient of any weighted sum of rates is ``X.T @ ((A.T @ lam) * dsurrogate)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from sklearn.utils import _safe_indexing

from ..exceptions import UndefinedRateError
from ..rates import Constraint, Expression
from ..rates._expression import NEEDS_LABELS, RATE_KINDS, Rate
from ..rates._slice import BASELINE, LABEL
from ..utils._validation import positive_rows
from ..utils._warnings import listed, warn
from ._cells import CellMatrix
from ._groups import GroupTable

if TYPE_CHECKING:
    from ._slice_cells import SliceCells


@dataclass
class RateData:
    """What rates are measured on: labels, sample weights, baseline decisions and groups.

    Parameters
    ----------
    y : ndarray of shape (n_samples,) or None
        The labels as 0/1 (1 for the positive class); None when there are none, for rates
        that need no labels.
    sample_weight : ndarray of shape (n_samples,)
        The rows' weights.
    groups : GroupTable
        The group columns of the rows.
    baseline : ndarray of shape (n_samples,), default=None
        The baseline model's 0/1 decisions; None when there are none.
    """

    y: np.ndarray | None
    sample_weight: np.ndarray
    groups: GroupTable
    baseline: np.ndarray | None = None

    @property
    def n(self) -> int:
        return self.sample_weight.shape[0]

    def take(self, idx: np.ndarray) -> "RateData":
        """The rows ``idx``.

        Parameters
        ----------
        idx : ndarray of int
            The rows to keep, in order (repeats allowed).

        Returns
        -------
        RateData
            New data of ``len(idx)`` rows.
        """
        pick = lambda a: None if a is None else a[idx]
        return RateData(pick(self.y), self.sample_weight[idx], self.groups.take(idx), pick(self.baseline))

    def weighted_rows(self) -> np.ndarray | None:
        """The rows of positive weight, or None when every row has one (:func:`positive_rows`).

        Returns
        -------
        ndarray of int or None
            The indices of the rows of positive weight, in order; None when every row has one.
        """
        return positive_rows(self.sample_weight)

    def without_weightless(self, *rows) -> tuple:
        """These data and each of ``rows`` (X, decisions, a mask; None passes) without the rows
        of weight 0.

        As scikit-learn has it, a row of weight 0 is a row dropped: it must not name a group
        value that constraints then expand over, land on the held-out side of a split, or reach a
        user's estimator, which need not read weights as counts.

        Parameters
        ----------
        *rows : array-like, sparse matrix, DataFrame or None
            Per-row inputs aligned with these data (indexed by row).

        Returns
        -------
        tuple
            ``(data, *rows)``: these data and ``rows`` as given when every row has a positive
            weight, else new data and each of ``rows`` on the rows of positive weight (None
            stays None).
        """
        kept = self.weighted_rows()
        if kept is None:
            return (self, *rows)
        return (self.take(kept), *(None if r is None else _safe_indexing(r, kept) for r in rows))


def _coefficients(kind: str, y, b):
    """Per-example (v, c) of a basic rate: its value is the slice-mean of v * yhat + c."""
    one = np.ones_like(y if y is not None else b, dtype=float)
    if kind in ("ppr", "tpr", "fpr"):
        return one, 0.0 * one
    if kind in ("npr", "fnr", "tnr"):
        return -one, one
    if kind == "accuracy":
        return 2.0 * y - 1.0, 1.0 - y
    if kind == "error_rate":
        return 1.0 - 2.0 * y, y.astype(float)
    if kind == "tp_proportion":
        return y.astype(float), 0.0 * one
    if kind == "label_rate":
        return 0.0 * one, y.astype(float)
    if kind == "baseline_ppr":
        return 0.0 * one, b.astype(float)
    if kind == "churn":
        return 1.0 - 2.0 * b, b.astype(float)
    if kind == "wins":
        differ = (b != y).astype(float)
        return differ * (2.0 * y - 1.0), differ * (1.0 - y)
    if kind == "losses":
        agree = (b == y).astype(float)
        return agree * (1.0 - 2.0 * y), agree * y
    raise ValueError(f"Unknown rate {kind!r}.")  # guarded by Rate itself


def warn_label_filters(rate: Rate, groups: GroupTable) -> None:
    """Warn that a slice ``[label=...]`` or ``[baseline=...]`` of ``rate`` does not read X's
    column of that name (only X's columns can hold one: groups= refuses the name)."""
    for key, values in rate.slice.filters:
        if key in (LABEL, BASELINE) and key in groups.raw:
            what = "the true label y" if key == LABEL else "the baseline model's decision"
            warn(f"The slice [{key}={','.join(values)}] selects rows by {what}; X's column {key!r} is not read "
                 f"by it. To filter on that column, rename it in X, e.g. X.rename(columns={{{key!r}: 'my_{key}'}}).")


def slice_mask(rate: Rate, data: RateData) -> np.ndarray:
    """Rows of ``data`` a basic rate is measured on (its slice, and the label its kind needs)."""
    warn_label_filters(rate, data.groups)
    mask = np.ones(data.n, dtype=bool)
    for key, values in rate.slice.filters:
        if key == LABEL:
            mask &= np.isin(data.y.astype(int).astype(str), values)
        elif key == BASELINE:
            mask &= np.isin(data.baseline.astype(int).astype(str), values)
        else:
            mask &= data.groups.mask(key, values)
    label = RATE_KINDS[rate.kind][1]
    if label is not None:
        mask &= data.y == int(label)
    return mask


def _describe_empty(rate: Rate, data: RateData) -> str:
    label = RATE_KINDS[rate.kind][1]
    where = str(rate.slice) or "all examples"
    if label is not None:
        plain = slice_mask(Rate("ppr", rate.slice), data)
        return (f"The rate {rate} is undefined: its slice ({where}) matched {int(plain.sum())} rows, "
                f"none with label {label} (in {RATE_KINDS[rate.kind][0]}, only rows of class y = {label} "
                "with positive weight count). "
                "Widen the slice or leave out the goal that uses it.")
    return (f"The rate {rate} is undefined: its slice ({where}) matched no rows (or only rows of zero "
            "weight). Check the group values or leave out the goal that uses it.")


def check_rate(rate: Rate, data: RateData) -> None:
    """Refuse a rate that ``data`` cannot measure: no labels, or no baseline decisions."""
    if rate.kind in NEEDS_LABELS and data.y is None:
        raise ValueError(f"The rate {rate} needs the true labels y.")
    if rate.needs_baseline and data.baseline is None:
        raise ValueError(f"The rate {rate} compares with a baseline model: pass baseline=<the baseline "
                         "model's 0/1 decisions on these rows> to fit, constraint_report, audit or the "
                         "scorer. Inside a Pipeline, GridSearchCV or cross_validate it reaches them by "
                         "metadata routing: sklearn.set_config(enable_metadata_routing=True), "
                         "estimator.set_fit_request(baseline=True) and scorer.set_score_request(baseline=True).")


def check_expanded(rate: Rate) -> None:
    """Refuse a rate that still expands over a bare group column (``tpr[race]``)."""
    if rate.slice.expand:
        raise ValueError(f"The rate {rate} still expands over {', '.join(rate.slice.expand)}; "
                         "expand the constraint first.")


def slice_weights(rate: Rate, data: RateData) -> tuple[np.ndarray, np.ndarray]:
    """Rows of a basic rate's slice and their weights in its mean (summing to 1)."""
    check_expanded(rate)
    check_rate(rate, data)
    mask = slice_mask(rate, data)
    w = data.sample_weight * mask
    total = w.sum()
    if not total > 0:
        raise UndefinedRateError(_describe_empty(rate, data), rate=rate)
    idx = np.flatnonzero(mask)
    return idx, w[idx] / total


def rate_coefficients(rate: Rate, data: RateData, idx: np.ndarray, y: np.ndarray | None = None):
    """Per-example ``(v, c)`` of a basic rate on the rows ``idx``: its value is the slice-mean of
    ``v * yhat + c``. ``y`` replaces the labels of those rows (default: ``data.y``)."""
    if y is None:
        y = None if data.y is None else data.y[idx]
    return _coefficients(rate.kind, y, None if data.baseline is None else data.baseline[idx])


def compile_factored(expressions: list[Expression], data: RateData) -> tuple[sp.csr_matrix, sp.csr_matrix, np.ndarray]:
    """``(mix, basis, b)``: values = ``mix @ (basis @ yhat) + b``.

    ``basis`` has one row per distinct basic rate (its non-zeros are the slice's rows) and
    ``mix`` (expressions x rates) combines them. Constraints share rates -- every parity
    constraint mentions the overall rate -- so products through the factors cost the sum of
    the distinct slices' sizes, not the number of constraints times n.

    Parameters
    ----------
    expressions : list of Expression
        Linear rate expressions, without bare group columns (see :func:`expand_constraints`).
    data : RateData
        The labels, weights, groups and baseline decisions the rates are measured on.

    Returns
    -------
    mix : scipy.sparse.csr_matrix of shape (n_expressions, n_rates)
        The coefficient of each distinct basic rate in each expression.
    basis : scipy.sparse.csr_matrix of shape (n_rates, n_samples)
        One row per distinct basic rate: the coefficient of each row's decision in the rate
        (zero outside its slice).
    b : ndarray of shape (n_expressions,)
        The constant of each expression (its own constant and its rates' constant parts).

    Raises
    ------
    UndefinedRateError
        When a rate's slice holds no row of positive weight (for a rate given a class, such as
        ``tpr``, no such row of that class).
    ValueError
        When a rate needs labels or baseline decisions ``data`` lacks, or still expands over a
        group column.
    """
    rates, mix, offsets, cells, total = rate_cells(expressions, data)
    rows, entry = cells.rows()
    rate_of = np.repeat(np.arange(len(rates)), np.diff(rows.indptr))
    # each row's weight in its rate's mean
    wi = np.asarray(data.sample_weight, dtype=float)[rows.indices] / total[rate_of]
    basis = sp.csr_matrix((wi * cells.V.data[entry], rows.indices, rows.indptr), shape=(len(rates), data.n))
    basis.eliminate_zeros()  # rows of weight 0, and coefficients 0 (label_rate's)
    consts = np.bincount(rate_of, weights=wi * cells.C.data[entry], minlength=len(rates))
    return mix, basis, offsets + mix @ consts


def rate_cells(expressions: list[Expression],
               data: RateData) -> tuple[dict[Rate, int], sp.csr_matrix, np.ndarray, SliceCells, np.ndarray]:
    """The distinct basic rates of ``expressions``, how the expressions combine them, and the
    cells of alike rows the rates read (the factors :func:`compile_factored` and the confidence
    margins build on).

    Parameters
    ----------
    expressions : list of Expression
        The linear rate expressions (no bare group columns) whose basic rates are sought.
    data : RateData
        The rows, labels, weights and group columns the rates read.

    Returns
    -------
    rates : dict of Rate to int
        Each distinct basic rate and its index, in the order the expressions first name them.
    mix : scipy.sparse.csr_matrix of shape (n_expressions, n_rates)
        The coefficient of each rate in each expression.
    offsets : ndarray of shape (n_expressions,)
        Each expression's own constant (not its rates' constant parts).
    cells : SliceCells
        The cells of the rows and each rate's cells and coefficients.
    total : ndarray of shape (n_rates,)
        Each rate's total weight over its slice (all positive).

    Raises
    ------
    UndefinedRateError, ValueError
        As :func:`compile_factored`.
    """
    from ._slice_cells import SliceCells  # (which imports this module)

    rates: dict[Rate, int] = {}
    for expr in expressions:
        for rate in expr.rates:
            rates.setdefault(rate, len(rates))
    for rate in rates:
        check_expanded(rate)
        warn_label_filters(rate, data.groups)
    # each rate's rows through the cells of alike rows: the cost of the slices' rows, not of
    # one pass over the data per rate
    cells = SliceCells(list(rates), data)
    total = cells.M @ np.bincount(cells.cell, weights=np.asarray(data.sample_weight, dtype=float),
                                  minlength=cells.n_cells)
    empty = np.flatnonzero(~(total > 0))
    if empty.size:
        raise UndefinedRateError(_describe_empty(list(rates)[empty[0]], data), rate=list(rates)[empty[0]])
    mix = sp.lil_matrix((len(expressions), len(rates)))
    offsets = np.zeros(len(expressions))
    for e, expr in enumerate(expressions):
        for rate, coef in expr.terms:
            mix[e, rates[rate]] += coef
        offsets[e] = expr.constant
    return rates, mix.tocsr(), offsets, cells, total


def compile_expressions(expressions: list[Expression], data: RateData) -> tuple[sp.csr_matrix, np.ndarray]:
    """Rows ``A`` (CSR, expressions x examples) and constants ``b`` so that values = ``A @ yhat + b``.

    The product of the factors of :func:`compile_factored`, which raises the same errors.

    Parameters
    ----------
    expressions : list of Expression
        Linear rate expressions, without bare group columns.
    data : RateData
        What the rates are measured on.

    Returns
    -------
    A : scipy.sparse.csr_matrix of shape (n_expressions, n_samples)
        Coefficient of each row's decision in each expression.
    b : ndarray of shape (n_expressions,)
        The constant of each expression.
    """
    mix, basis, b = compile_factored(expressions, data)
    return (mix @ basis).tocsr(), b


@dataclass
class RateProblem:
    """Objective and constraints ``g_j <= 0`` as rows of one matrix ``A = mix @ basis``.

    Row 0 of ``A`` / ``b`` is the objective, rows ``1..m`` the constraints, so the values of
    a model with 0/1 (or expected) decisions ``yhat`` are ``A @ yhat + b``. Products go
    through the factors (see :func:`compile_factored`).

    Each constraint's row is its linear form ``g_j`` divided by ``scale[j]``, its largest
    coefficient: the same constraint, in units every solver reads alike. The multipliers' steps,
    the LP's tolerance and the choice of the best iterate compare constraint values, so a
    constraint written in percent (``100 * tpr[a] >= 95 * tpr``) or times a tiny constant would
    otherwise weigh 100 times more, or go unseen. A constraint whose largest coefficient is 1, as
    most are (``tpr[a] >= 0.95 * tpr``, ``ppr[a] <= ppr + 0.05``), is its own ``g_j``.

    Parameters
    ----------
    mix : scipy.sparse.csr_matrix of shape (m + 1, n_rates)
        The coefficient of each distinct basic rate in the objective and each constraint.
    basis : scipy.sparse.csr_matrix of shape (n_rates, n_samples)
        The coefficient of each row's decision in each distinct basic rate.
    b : ndarray of shape (m + 1,)
        The constant of the objective and of each constraint.
    objective : Expression
        The linear rate expression minimised.
    constraints : list of Constraint
        The ``m`` constraints, expanded over the group values.
    scale : ndarray of shape (m,)
        What each constraint's ``g_j`` is divided by in its row: its largest absolute
        coefficient (1 for a constant). A value ``v`` on ``g_j``'s scale (a margin) is
        ``v / scale[j]`` on the row's.
    """

    mix: sp.csr_matrix
    basis: sp.csr_matrix
    b: np.ndarray
    objective: Expression
    constraints: list[Constraint]
    scale: np.ndarray

    @property
    def A(self) -> sp.csr_matrix:
        """The product, formed: ``n`` entries per row of a constraint on an overall rate."""
        return (self.mix @ self.basis).tocsr()

    @property
    def cells(self) -> CellMatrix:
        """``A`` over the cells of alike rows (:class:`~skrate.problem.CellMatrix`): n entries
        in all, however many rows of ``A`` read the overall rate."""
        return CellMatrix.from_factors(self.mix, self.basis)

    @property
    def n_constraints(self) -> int:
        return len(self.constraints)

    def tighten(self, margins: np.ndarray) -> None:
        """Tighten every constraint by its margin, given on its linear form ``g``'s scale (in
        place: ``g_j + margins[j] <= 0``).

        Parameters
        ----------
        margins : ndarray of shape (m,)
            Each constraint's margin, in the units of its ``g_j``.
        """
        self.b[1:] += margins / self.scale

    def values(self, yhat: np.ndarray) -> np.ndarray:
        """Objective and constraint values for decisions ``yhat`` (n,) or (n, k).

        Parameters
        ----------
        yhat : ndarray of shape (n_samples,) or (n_samples, k)
            Decisions (0/1 or probabilities of predicting 1), of one model or of ``k`` as
            columns.

        Returns
        -------
        ndarray of shape (m + 1,) or (m + 1, k)
            The objective's value (row 0) and the constraints' rows, ``g_j / scale[j]`` (met
            when ``<= 0``).
        """
        out = self.mix @ (self.basis @ yhat)
        return out + (self.b if out.ndim == 1 else self.b[:, None])


def _expand_one(con: Constraint, groups: GroupTable) -> list[Constraint]:
    keys = con.expand_keys
    if not keys:
        return [con]
    return [c for combo in groups.combinations(keys) for c in con.expand({k: [v] for k, v in zip(keys, combo)})]


def expand_constraints(constraints: list[Constraint], groups: GroupTable) -> list[Constraint]:
    """Replace constraints over bare group columns by one per combination of their values that
    occurs in the data (a cell with no rows has no rates to constrain).

    Parameters
    ----------
    constraints : list of Constraint
        Constraints, some of which may expand over bare group columns (``tpr[race]``).
    groups : GroupTable
        The group columns whose observed combinations of values the constraints expand over.

    Returns
    -------
    list of Constraint
        In the order given, each expanding constraint replaced by one constraint per
        combination of values, the others kept as they are.
    """
    return [c for con in constraints for c in _expand_one(con, groups)]


def _undefined(rate: Rate, data: RateData) -> bool:
    """Whether ``rate``'s slice holds no row of positive weight in ``data``."""
    try:
        return not (data.sample_weight * slice_mask(rate, data)).sum() > 0
    except UndefinedRateError:  # a group value these rows do not hold
        return True


def _in_constraint(exc: UndefinedRateError, constraints: list[Constraint], data: RateData) -> UndefinedRateError:
    """``exc`` naming the constraint that holds its rate, and for an expanded one how to leave out
    the value (a bare column constrains every value, so only naming the others drops one) and
    which other values it leaves undefined, so one fit names every slice to merge or drop."""
    for con in constraints:
        expanded = _expand_one(con, data.groups)
        for c in expanded:
            if exc.rate in c.rates:
                if c is con:
                    where = f" It is in the constraint '{con}'."
                else:
                    rates = dict.fromkeys(r for e in expanded for r in e.rates if r != exc.rate)
                    others = [r for r in rates if _undefined(r, data)]
                    where = (f" It is in '{c}', which '{con}' states for every value of "
                             f"{', '.join(con.expand_keys)}; to leave this one out, write the constraint "
                             "once per value to constrain instead of over the bare column.")
                    if others:
                        where += (f" The constraint leaves {len(others)} more rate{'s' * (len(others) > 1)} "
                                  f"undefined on these rows: {listed(others)}.")
                return UndefinedRateError(str(exc) + where, rate=exc.rate)
    return exc


def compile_problem(objective: Expression, constraints: list[Constraint], data: RateData) -> RateProblem:
    """Expand and compile the objective and constraints on ``data``.

    Parameters
    ----------
    objective : Expression
        The linear rate expression to minimise; it cannot expand over a group column.
    constraints : list of Constraint
        The constraints ``lhs <= rhs`` or ``lhs >= rhs``; those over bare group columns are
        expanded over the values of ``data.groups`` (see :func:`expand_constraints`).
    data : RateData
        What the rates are measured on.

    Returns
    -------
    RateProblem
        The objective (row 0) and the expanded constraints as ``g_j <= 0`` (rows ``1..m``, each
        divided by its largest coefficient), factored as ``mix @ basis``.

    Raises
    ------
    TypeError
        When ``objective`` is not an :class:`~skrate.rates.Expression` (a ratio, for one).
    ValueError
        When the objective expands over a group column, or a rate cannot be measured on
        ``data``; an :class:`~skrate.exceptions.UndefinedRateError` names the constraint
        that holds an undefined rate.
    """
    if not isinstance(objective, Expression):
        raise TypeError(f"The objective must be a linear rate expression, got {objective!r}.")
    if objective.rates and any(r.slice.expand for r in objective.rates):
        raise ValueError(f"The objective {objective} cannot expand over a group column; name a value.")
    expanded = expand_constraints(constraints, data.groups)
    try:
        mix, basis, b = compile_factored([objective] + [c.expression for c in expanded], data)
    except UndefinedRateError as exc:
        raise _in_constraint(exc, constraints, data) from None
    scale = np.array([constraint_scale(c) for c in expanded], dtype=float)
    if (scale != 1.0).any():  # most constraints are their own rows: no copy, no rounding
        rows = np.r_[1.0, scale]
        mix, b = sp.csr_matrix(sp.diags(1.0 / rows) @ mix), b / rows
    return RateProblem(mix, basis, b, objective, expanded, scale)


def constraint_scale(constraint: Constraint) -> float:
    """The constraint's largest absolute coefficient of a rate, 1 for one without rates (or
    whose rates cancel): what its linear form ``g`` is divided by for the solvers (see
    :class:`RateProblem`).

    Parameters
    ----------
    constraint : Constraint
        The constraint.

    Returns
    -------
    float
    """
    return float(max((abs(a) for _, a in constraint.expression.terms), default=0.0) or 1.0)
