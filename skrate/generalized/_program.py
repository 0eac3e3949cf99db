"""A metric objective and constraints compiled on data: one rate matrix plus the atoms over it.

All basic rates of all atoms are rows of one sparse matrix ``A`` (rates x examples), so the
rates of a model are ``A @ yhat + b`` (the core's compiler) and every atom reads its own rows.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from ..exceptions import UndefinedRateError
from ..problem import (CellMatrix, RateData, compile_factored, expand_constraints, ratio_value, report_rows, reported_rates,
                       violation_rows)
from ..problem._compile import constraint_scale
from ..problem._evaluate import absent_values, zero_within_rounding
from ..problem._feasibility import ratio_bound_out_of_range
from ..rates import Constraint, Ratio
from ..rates._expression import NEEDS_BASELINE
from ..rates._slice import BASELINE, group_columns
from ._atoms import MaxOf
from ._metric import LinearRate, MetricConstraint, MetricSum, RatioAtom
from ._names import as_metric

if TYPE_CHECKING:
    from ..problem import GroupTable
    from ..rates import Expression
    from ._metric import Metric


# rates are proportions: values this small are sums of terms that cancel, up to rounding
_NOISE = 1e-12


@dataclass
class CompiledSum:
    """``constant + sum_a coef_a * atom_a(r[idx_a])`` over the program's rate vector ``r``."""

    constant: float
    atoms: list  # (coef, atom, idx)
    label: str
    kind: str
    metric: MetricSum
    # a ratio bound (the core's ``precision >= 0.8``, or a metric one over one denominator) taken
    # multiplied out by its denominator: that denominator and its row, which must stay positive
    denominator: tuple[Expression, int] | None = None
    # and the ratio as stated, which the ratio game plays as a ratio (in ratio units its
    # multipliers settle as for any other ratio; on the linear form they lagged)
    stated: MetricSum | None = None
    # what a rate constraint's linear form was divided by for the solvers (its largest
    # coefficient, see skrate.problem.RateProblem); reports read it back in the stated units
    scale: float = 1.0

    def value(self, r: np.ndarray) -> np.ndarray:
        return _sum_value(self.constant, self.atoms, r)

    def exact_value(self, r: np.ndarray) -> np.ndarray:
        """``value`` with every atom's :meth:`~Atom.exact_value`: no denominator clipped, a zero
        one read as the core reads it (:func:`skrate.problem.ratio_value`)."""
        return _sum_value(self.constant, self.atoms, r, exact=True)

    def reported_value(self, r: np.ndarray) -> float:
        """:meth:`exact_value` at one rate vector."""
        return float(self.exact_value(r))

    def reported(self, r: np.ndarray) -> np.ndarray:
        """``value`` in the units the constraint was stated in, as the core reports it: a ratio
        bound multiplied out by its denominator ``D`` (``c D - N`` for ``N / D >= c``) divided by
        ``D`` again (``c - N / D``; over ``D = 0`` infinite, or NaN for ``0 / 0``, see
        :func:`~skrate.problem.ratio_value`), and NaN where :meth:`defined` is False."""
        exact = self.exact_value(r) * self.scale
        if self.denominator is not None:
            return ratio_value(exact, np.asarray(r)[self.denominator[1]])
        return np.where(self.defined(r), exact, np.nan)

    @property
    def is_linear(self) -> bool:
        return self.kind == "linear"

    @cached_property
    def floors_denominators(self) -> bool:
        """Whether :meth:`value` reads a ratio atom's denominator at the solvers' floor, so that
        :meth:`exact_value` can differ from it."""
        return any(atom.kind == "ratio" for _, atom, _ in self.atoms)

    def _denominators(self) -> list:
        """(expression, row) of every denominator: the bound's, then the ratio atoms'."""
        return ([self.denominator] if self.denominator else []) + [
            (atom.denominator, int(idx[1])) for _, atom, idx in self.atoms if isinstance(atom, RatioAtom)]

    def defined(self, r: np.ndarray):
        """Whether the constraint's ratios are defined at the rates ``r`` (shape (K,) or (K, k): one
        answer per column). A ratio atom needs a positive denominator: ``value`` clips a zero one,
        as the solvers need for values and gradients, and a report reads it as undefined. A
        ratio bound is undefined at ``0 / 0`` only: its linear form ``c D - N <= 0`` holds at
        ``D = N = 0`` though the ratio does not (predicting nothing meets ``precision >= 0.8``),
        while wins over no losses are an infinite win-loss ratio, as the core reads them."""
        r = np.asarray(r)
        return _defined(r.shape[1:], [idx[1] for _, atom, idx in self.atoms if isinstance(atom, RatioAtom)],
                        None if self.denominator is None else self.denominator[1], lambda: self.value(r), r)

    def zero_denominator(self, r: np.ndarray) -> Expression | None:
        """The first denominator that is not positive at the rate vector ``r``, if any: why a ratio
        of the constraint is undefined there."""
        return next((expr for expr, row in self._denominators() if r[row] <= 0), None)


def _sum_value(constant, atoms: list, r: np.ndarray, exact: bool = False) -> np.ndarray:
    """``constant + sum coef * atom.value(r[idx])`` over ``atoms`` (``(coef, atom, idx)``), term by
    term; with ``exact``, each atom's :meth:`~Atom.exact_value` (undefined ratios sum to NaN, as
    reports read them). Alike sums evaluate stacked: ``idx`` of shape (len(exprs), n_sums) and
    ``constant`` of shape (n_sums, 1, ...) give values of shape (n_sums,) + r.shape[1:], each as
    its sum alone gives it."""
    out = constant + 0.0 * r[0]
    with np.errstate(invalid="ignore") if exact else nullcontext():
        for coef, atom, idx in atoms:
            out = out + coef * (atom.exact_value(r[idx]) if exact else atom.value(r[idx]))
    return out


def _defined(shape: tuple, ratio_rows: list, denominator_row, value, r: np.ndarray) -> np.ndarray:
    """:meth:`CompiledSum.defined` from its rows: each ratio atom's denominator row
    (``ratio_rows``), the ratio bound's (``denominator_row``, or None) and a callable giving
    the value; rows of shape (n_sums,) (and ``shape`` (n_sums,) + r.shape[1:]) for alike sums."""
    ok = np.ones(shape, dtype=bool)
    for rows in ratio_rows:
        ok = ok & (r[rows] > 0)
    if denominator_row is None:
        return ok
    # the solvers' rates are not rounded: a bound's 0 / 0 is within rounding of zero
    g, d = value(), r[denominator_row]
    return ok & ~np.isnan(ratio_value(np.where(np.abs(g) <= _NOISE, 0.0, g), np.where(d <= _NOISE, 0.0, d)))


class _AlikeSums:
    """Constraints that differ only in their rates and constants (one constraint expanded over
    the values of a group column), evaluated together: each term's atoms at once on the rates
    stacked along a new axis, in the order and with the arithmetic of one sum alone. A sum of
    atoms without a :meth:`~Atom.stack_key` is a group of its own, evaluated as it is.

    Parameters
    ----------
    positions : list of int
        The sums' positions among the program's constraints.
    sums : list of CompiledSum
        The sums, alike (one, when ``stacked`` is False).
    stacked : bool
        Whether to stack the sums' rates; else ``sums`` holds one sum.
    """

    def __init__(self, positions: list[int], sums: list[CompiledSum], stacked: bool):
        first = sums[0]
        self.positions = np.asarray(positions, dtype=np.intp)
        self.stacked = stacked
        self.constant = np.array([s.constant for s in sums]) if stacked else first.constant
        self.atoms = [(coef, atom, np.stack([s.atoms[t][2] for s in sums], axis=1) if stacked else idx)
                      for t, (coef, atom, idx) in enumerate(first.atoms)]
        self.floors_denominators = first.floors_denominators
        self.ratio_rows = [idx[1] for _, atom, idx in self.atoms if isinstance(atom, RatioAtom)]
        self.denominator = (None if first.denominator is None
                            else np.array([s.denominator[1] for s in sums]) if stacked else first.denominator[1])

    def _shape(self, r: np.ndarray) -> tuple:
        return ((self.positions.size,) if self.stacked else ()) + r.shape[1:]

    def value(self, r: np.ndarray, exact: bool = False) -> np.ndarray:
        """The sums' values (exact values with ``exact``) at the rates ``r``, of shape
        (n_sums,) + r.shape[1:] (r.shape[1:] for a sum of its own)."""
        constant = np.reshape(self.constant, (-1,) + (1,) * (r.ndim - 1)) if self.stacked else self.constant
        return _sum_value(constant, self.atoms, r, exact)

    def defined(self, r: np.ndarray) -> np.ndarray:
        """:meth:`CompiledSum.defined` of each sum, in the shape of :meth:`value`."""
        return _defined(self._shape(r), self.ratio_rows, self.denominator, lambda: self.value(r), r)


#: Largest number of values (constraints x rate vectors) evaluated at once: the stacked
#: temporaries stay in cache, as one constraint's did when each was evaluated alone.
_BLOCK = 2**16


def _column_blocks(r: np.ndarray, n_rows: int) -> list[tuple]:
    """Index tuples of the blocks of ``r``'s columns (one empty tuple for a single rate vector)
    that hold at most :data:`_BLOCK` values of ``n_rows`` constraints each."""
    if r.ndim < 2:
        return [()]
    width = max(1, _BLOCK // max(n_rows, 1))
    return [(slice(lo, lo + width),) for lo in range(0, r.shape[1], width)] or [(slice(None),)]


def _alike_groups(constraints: list[CompiledSum]) -> list[_AlikeSums]:
    """The constraints grouped into :class:`_AlikeSums`: by their terms' coefficients and atoms'
    stack keys, whether they bound a ratio, and how many rows each atom reads."""
    groups: dict = {}
    alone = []
    for j, c in enumerate(constraints):
        keys = tuple((coef, atom.stack_key(), len(idx)) for coef, atom, idx in c.atoms)
        if any(key is None for _, key, _ in keys):
            alone.append(_AlikeSums([j], [c], stacked=False))
        else:
            groups.setdefault((keys, c.denominator is None), []).append(j)
    return alone + [_AlikeSums(js, [constraints[j] for j in js], stacked=True) for js in groups.values()]


@dataclass
class MetricProgram:
    """Objective (row 0 of ``values``) and constraints ``<= 0`` over the rates ``A @ yhat + b``.

    Built by :func:`compile_program`.

    Parameters
    ----------
    A : CellMatrix of shape (K, n_samples)
        The coefficient of each example's decision in each of the ``K`` basic rates of all
        atoms.
    b : ndarray of shape (K,)
        The rates' parts that do not depend on the decisions.
    objective : CompiledSum
        The objective, a function of the rate vector ``r``.
    constraints : list of CompiledSum
        The constraints, each met when its value is ``<= 0``.
    """

    A: CellMatrix
    b: np.ndarray
    objective: CompiledSum
    constraints: list

    @property
    def n_constraints(self) -> int:
        return len(self.constraints)

    @property
    def is_linear(self) -> bool:
        return self.objective.is_linear and all(c.is_linear for c in self.constraints)

    def rates(self, yhat: np.ndarray) -> np.ndarray:
        out = self.A @ yhat
        return out + (self.b if out.ndim == 1 else self.b[:, None])

    def mixed_rates(self, rates: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """The rates of a mixture of models, for a report: zero within rounding of the terms they
        sum (no losses are no losses, not ``1e-17``, see :func:`~skrate.problem.reported_rates`).

        Parameters
        ----------
        rates : ndarray of shape (K, k)
            The rates of ``k`` models, as columns.
        weights : ndarray of shape (k,)
            The mixture's probability of each model.

        Returns
        -------
        ndarray of shape (K,)
            The mixture's rates, ``rates @ weights``.
        """
        return zero_within_rounding(rates @ weights, np.abs(rates - self.b[:, None]) @ weights + np.abs(self.b))

    def values(self, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Objective and constraint values for rates ``r`` of shape (K,) or (K, k).

        Parameters
        ----------
        r : ndarray of shape (K,) or (K, k)
            One rate vector, or ``k`` of them as columns (``rates(yhat)``).

        Returns
        -------
        objective : float or ndarray of shape (k,)
            The objective's value at each rate vector.
        constraints : ndarray of shape (n_constraints,) or (n_constraints, k)
            Each constraint's value at each rate vector.
        """
        obj = self.objective.value(r)
        cons = np.zeros((self.n_constraints,) + np.shape(obj))
        for cols in _column_blocks(r, self.n_constraints):
            cons[(slice(None), *cols)] = self._constraint_values(r[(slice(None), *cols)])
        return obj, cons

    def _constraint_values(self, r: np.ndarray) -> np.ndarray:
        """The constraints' values at the rates ``r`` (one block of columns), alike ones together."""
        cons = np.zeros((self.n_constraints,) + r.shape[1:])
        for group in self._alike:
            cons[group.positions] = group.value(r)
        return cons

    @cached_property
    def _alike(self) -> list[_AlikeSums]:
        """The constraints in groups evaluated together (:class:`_AlikeSums`)."""
        return _alike_groups(self.constraints)

    def linear_constraints(self) -> tuple[list[int], CellMatrix, np.ndarray]:
        """The constraints linear in the rates, as the indices among ``constraints`` and the
        values ``K s + offsets`` they take at the cells' sums of decisions ``s`` (see
        :func:`skrate.problem.least_largest`).

        Returns
        -------
        indices : list of int
            The positions among ``constraints`` of the linear ones, in order.
        cells : CellMatrix of shape (len(indices), n_samples)
            Their coefficients of the examples' decisions.
        offsets : ndarray of shape (len(indices),)
            Their values at decisions all 0.
        """
        kept = [j for j, c in enumerate(self.constraints) if c.is_linear]
        W = np.zeros((len(kept), self.b.size))
        constant = np.zeros(len(kept))
        for i, j in enumerate(kept):
            constant[i] = self.constraints[j].constant
            for coef, atom, idx in self.constraints[j].atoms:
                np.add.at(W[i], idx, coef * atom.linear_coefficients())
        return kept, self.A.combined(W), W @ self.b + constant

    def flag_undefined(self, r: np.ndarray, cons: np.ndarray) -> np.ndarray:
        """The constraint values ``cons`` at ``r`` as models are judged by them: a constraint
        with ratio atoms at its exact value (:meth:`CompiledSum.exact_value`: a ratio over a
        denominator below the solvers' floor of ``1e-6`` read as it is, not as the solvers clip
        it, lest a mixture meet ``precision[g] <= precision + 0.05`` by predicting almost
        nothing for ``g``), and those whose ratio is undefined there read as violated without bound:
        choosing among models, one that meets a ratio's linear form by predicting nothing is
        not feasible.

        Parameters
        ----------
        r : ndarray of shape (K,) or (K, k)
            One rate vector, or ``k`` of them as columns.
        cons : ndarray of shape (n_constraints,) or (n_constraints, k)
            The constraint values at ``r``, as :meth:`values` gives them.

        Returns
        -------
        ndarray of the shape of ``cons``
            ``cons`` with the exact values of the constraints with ratio atoms, and ``inf`` where a
            constraint's ratio is undefined at ``r`` (``0 / 0`` for a ratio bound, a zero
            denominator for a ratio in a metric); ``cons`` itself when there are no constraints.
        """
        if not self.constraints:
            return cons
        r = np.asarray(r)
        out = np.array(cons, dtype=float)
        for cols in _column_blocks(r, self.n_constraints):
            self._flag(r[(slice(None), *cols)], out[(slice(None), *cols)])
        return out

    def largest_violation(self, r: np.ndarray) -> np.ndarray:
        """The largest of :meth:`flag_undefined`'s constraint values at each column of ``r``,
        a block of columns at a time: with many constraints and many rate vectors (the cuts of
        a threshold sweep) the (constraints x columns) values are never all held.

        Parameters
        ----------
        r : ndarray of shape (K, k)
            ``k`` rate vectors, as columns.

        Returns
        -------
        ndarray of shape (k,)
            The largest constraint value at each (``-inf`` without constraints).
        """
        out = np.full(r.shape[1], -np.inf)
        if self.constraints:
            for cols in _column_blocks(r, self.n_constraints):
                block = r[(slice(None), *cols)]
                cons = self._constraint_values(block)
                out[cols] = self._flag(block, cons).max(axis=0)
        return out

    def _flag(self, r: np.ndarray, cons: np.ndarray) -> np.ndarray:
        """:meth:`flag_undefined` of one block of columns, into ``cons``; returns it."""
        for group in self._alike:
            at = group.positions
            if group.floors_denominators:  # an undefined ratio's NaN is replaced below
                cons[at] = group.value(r, exact=True)
            cons[at] = np.where(group.defined(r), cons[at], np.inf)
        return cons


class Expansion:
    """The combinations of group values a program is expanded over, recorded on the fit rows.

    Built on the fit rows' :class:`~skrate.problem.GroupTable`, it answers and records every
    ``combinations(keys)`` the expansion asks for; :meth:`frozen` keeps only those answers, so
    that rows seen later (a test split without some value, or with a new one) expand into the
    fitted constraints, labelled as in ``constraints_``.
    """

    def __init__(self, groups=None, recorded: dict | None = None):
        self._groups = groups
        self.recorded = {} if recorded is None else recorded

    def combinations(self, keys: tuple[str, ...]) -> list[tuple[str, ...]]:
        keys = tuple(keys)
        if self._groups is not None and keys not in self.recorded:
            self.recorded[keys] = self._groups.combinations(keys)
        return self.recorded[keys]

    def frozen(self) -> "Expansion":
        return Expansion(None, dict(self.recorded))

    def values(self) -> dict[str, set]:
        """The values of each expanded column."""
        out: dict[str, set] = {}
        for keys, combos in self.recorded.items():
            for i, key in enumerate(keys):
                out.setdefault(key, set()).update(combo[i] for combo in combos)
        return out


def group_cells(program_groups: list[str], data: RateData) -> np.ndarray:
    """Integer cell of every row: the intersection of the named group columns' values."""
    if not program_groups:
        return np.zeros(data.n, dtype=int)
    # through the columns' integer codes (cached per table): sorting the rows' strings is slow
    coded = [data.groups.codes(k) for k in program_groups]
    sizes = tuple(len(values) for values, _ in coded)
    codes = tuple(c for _, c in coded)
    if np.prod(sizes, dtype=float) < 2.0**62:
        return np.unique(np.ravel_multi_index(codes, sizes), return_inverse=True)[1].ravel()
    return np.unique(np.column_stack(codes), axis=0, return_inverse=True)[1].ravel()


def program_group_columns(program: MetricProgram) -> list[str]:
    """Group columns filtered on by any rate of the program."""
    return group_columns(r.slice for s in [program.objective] + program.constraints
                         for _, atom, _ in s.atoms for e in atom.exprs for r in e.rates)


def program_reads_baseline(program: MetricProgram) -> bool:
    """Whether a rate of the program weighs the model's decisions by the baseline's (churn,
    wins, losses, or a slice on ``baseline``); ``baseline_ppr`` is a constant and does not."""
    return any((r.kind in NEEDS_BASELINE and r.kind != "baseline_ppr") or r.slice.get(BASELINE) is not None
               for s in [program.objective] + program.constraints
               for _, atom, _ in s.atoms for e in atom.exprs for r in e.rates)


def _bound_exprs(expr, groups) -> list:
    """``expr`` bound to every combination of values of the group columns it expands over."""
    keys = tuple(sorted({k for r in expr.rates for k in r.slice.expand}))
    return [expr.bind(dict(zip(keys, combo))) for combo in groups.combinations(keys)] if keys else [expr]


def _pool_maxima(metric: MetricSum, groups) -> MetricSum:
    """``metric`` with every ``max_of`` / ``min_of`` over a bare group column taken over the rates
    of all its values (the worst group), not summed over values as the other atoms are."""
    terms = []
    for coef, atom in metric.terms:
        if isinstance(atom, MaxOf) and atom.expand_keys:  # dict: a rate listed twice enters once
            atom = MaxOf(tuple(dict.fromkeys(b for e in atom.rates for b in _bound_exprs(e, groups))))
        terms.append((coef, atom))
    return MetricSum(tuple(terms), metric.constant)


def _expand(spec, groups) -> list:
    """``spec`` (a metric or a metric constraint) bound to every combination of values of the
    group columns it expands over that occurs in the data; a max over a group column expands
    inside the max."""
    if isinstance(spec, MetricConstraint):
        spec = replace(spec, metric=_pool_maxima(spec.metric, groups),
                       stated=tuple(_pool_maxima(side, groups) if isinstance(side, MetricSum) else side
                                    for side in spec.stated))
    else:
        spec = _pool_maxima(spec, groups)
    keys = spec.expand_keys
    if not keys:
        return [spec]
    return [spec.bind(dict(zip(keys, combo))) for combo in groups.combinations(keys)]


def _expand_objective(objective, groups) -> MetricSum:
    """The objective with each term over a group column summed over the column's values; terms
    that name no group column (and the constant) count once: ``g_mean() + kld("g")`` is one
    G-mean plus a KL term per group."""
    objective = _pool_maxima(objective.as_sum(), groups)
    terms = []
    for coef, atom in objective.terms:
        keys = atom.expand_keys
        combos = groups.combinations(keys) if keys else [()]
        terms += [(coef, atom.bind(dict(zip(keys, combo))) if keys else atom) for combo in combos]
    return MetricSum(tuple(terms), objective.constant)


def _over_one_denominator(metric: MetricSum) -> tuple[float, Expression, Expression] | None:
    """``(constant, N, D)`` with ``metric = constant + N / D``, ``D`` depending on the rates, for a
    ratio metric whose ratios share their denominator; else None."""
    form = metric.ratio_form() if metric.kind == "ratio" else None
    if form is None or len({den for _, _, den in form[1]}) != 1 or not form[1][0][2].terms:
        return None
    constant, terms = form
    numerator = terms[0][0] * terms[0][1]
    for coef, num, _ in terms[1:]:
        numerator = numerator + coef * num
    return constant, numerator, terms[0][2]


def multiplied_out(metric: MetricSum) -> tuple[Expression, Expression] | None:
    """``(constant * D + N, D)`` for a ratio metric ``constant + N / D`` whose ratios share the
    denominator ``D`` (``precision() >= 0.8``, ``f_measure() <= 0.3``), else None. A denominator
    is never negative (see :func:`~skrate.generalized.ratio`), so where ``D > 0`` the metric is
    ``<= 0`` exactly where this linear form is: the constraint is linear in the rates, and the
    LP and the convex solvers take it, as they take the core's ``precision >= 0.8``.

    Parameters
    ----------
    metric : MetricSum
        The constrained metric (the constraint is ``metric <= 0``).

    Returns
    -------
    tuple of (Expression, Expression) or None
        The linear form and the denominator ``D``, or None when the metric is not a sum of
        ratios over one denominator that depends on the rates.
    """
    parts = _over_one_denominator(metric)
    if parts is None:
        return None
    constant, numerator, denominator = parts
    return constant * denominator + numerator, denominator


def rate_constraint(constraint: MetricConstraint) -> Constraint | None:
    """The core rate constraint a bound on ratios over one denominator states
    (``f_measure() <= 0.3`` is ``f1 >= 0.7``), else None.

    Parameters
    ----------
    constraint : MetricConstraint
        The metric constraint.

    Returns
    -------
    Constraint or None
        ``N / D >= -constant`` when ``N``'s coefficients are all negative (a floor, negated),
        else ``N / D <= -constant``; None when :func:`multiplied_out` does not apply.
    """
    parts = _over_one_denominator(constraint.metric)
    if parts is None:
        return None
    constant, numerator, denominator = parts
    if all(c <= 0 for _, c in numerator.terms) and numerator.constant <= 0:
        return Ratio(-numerator, denominator) >= constant
    return Ratio(numerator, denominator) <= -constant


def as_metric_constraints(spec) -> list:
    """Flatten constraints: metric constraints, core constraints, strings, nested lists."""
    from ..rates import as_constraints

    if spec is None:
        return []
    if isinstance(spec, MetricConstraint):
        return [spec]
    if isinstance(spec, (list, tuple)):
        return [c for item in spec for c in as_metric_constraints(item)]
    return as_constraints(spec)


def compile_program(objective: Metric | Expression | Ratio | str,
                    constraints: MetricConstraint | Constraint | str | list | tuple | None, data: RateData,
                    expand_over: Expansion | GroupTable | None = None,
                    undefined: list | None = None) -> MetricProgram:
    """Expand group columns and compile every atom's rates on ``data``.

    An objective over a bare group column is the sum over its values; a constraint over one
    stands for one constraint per value. A ``max_of`` / ``min_of`` over one is the max (min) over
    the rates of all its values. The values are those of ``expand_over`` (an
    ``Expansion``), by default those of ``data``. A metric undefined on the data (an empty
    slice, a class proportion of 0 or 1 for a KL-divergence, no positives for an F-measure)
    raises an error naming the metric and its slice; but given a list ``undefined`` (a report
    on later rows), a constraint whose slice these rows leave empty, or that names a group
    value none of them holds, is left out of the program and its label appended to the list.

    Parameters
    ----------
    objective : str, Metric, Expression or Ratio
        The metric to minimise, as :func:`as_metric` reads it.
    constraints : MetricConstraint, Constraint, str, list of them or None
        Metric constraints and core rate constraints, as ``MetricOptimizer``'s ``constraints``.
    data : RateData
        What the rates are measured on.
    expand_over : Expansion or GroupTable, default=None
        Whose combinations of group values bare group columns expand over; None uses
        ``data.groups``.
    undefined : list, default=None
        When given, receives the labels of the constraints left out as unmeasurable on
        ``data`` instead of raising.

    Returns
    -------
    MetricProgram
        The rates of all atoms as ``A @ yhat + b``, and the compiled objective and constraints
        (each met when ``<= 0``), labelled uniquely (a repeated label numbered ``#2``...).

    Raises
    ------
    ValueError
        When the objective or a constraint cannot be measured on ``data`` (and is not left out
        through ``undefined``), naming it.

    References
    ----------
    H. Narasimhan, A. Cotter, M. Gupta. Optimizing Generalized Rate Metrics with Three Players.
    NeurIPS 2019.
    """
    groups = data.groups if expand_over is None else expand_over
    objective = _expand_objective(as_metric(objective), groups)
    # (metric, role, the text the user wrote (a core constraint's, not its rearrangement's), the
    # denominators that must stay positive for a linear form to mean the ratio bound it stands for,
    # the atoms as stated, checked on the data, the ratio bound as stated, and the scale a rate
    # constraint's linear form is divided by)
    sums: list[tuple[MetricSum, str, str, tuple, tuple, MetricSum | None, float]] = [
        (objective, "objective", str(objective), (), (), None, 1.0)]
    for con in as_metric_constraints(constraints):
        if isinstance(con, Constraint):
            for c in expand_constraints([con], groups):
                guards = () if c.ratio is None else (LinearRate(c.ratio.denominator),)
                scale = constraint_scale(c)
                form = c.expression if scale == 1.0 else c.expression * (1.0 / scale)
                sums.append((LinearRate(form).as_sum(), "constraint", str(c), guards, (), _as_ratio(c), scale))
        else:
            for bound in _expand(con, groups):
                linear = multiplied_out(bound.metric)
                if linear is None:
                    sums.append((bound.metric, "constraint", str(bound), (), (), None, 1.0))
                else:
                    sums.append((LinearRate(linear[0]).as_sum(), "constraint", str(bound), (LinearRate(linear[1]),),
                                 tuple(atom for _, atom in bound.metric.terms), bound.metric, 1.0))
    labels = _unique([text if role == "constraint" else f"objective: {text}" for _, role, text, *_ in sums])
    terms = [[*((None, a) for a in checked), *metric.terms, *((0.0, g) for g in guards)]
             for metric, _, _, guards, checked, _, _ in sums]
    together = _compile_together(list(dict.fromkeys(atom for listed in terms for _, atom in listed)), data)
    exprs, consts, compiled, cache = [], [], [], {}
    n_rows = 0
    for (metric, role, text, guards, checked, as_ratio, scale), label, listed in zip(sums, labels, terms):
        atoms, measured = [], True
        for coef, atom in listed:
            if atom not in cache:
                if together is not None:
                    b_a = together[2][atom]
                else:  # one at a time, to name the one that cannot be measured
                    try:
                        _, _, b_a = compile_factored(list(atom.exprs), data)
                        atom.check(b_a)
                    except ValueError as exc:
                        unmeasured = _unmeasured(atom, data, exc)
                        if undefined is not None and role == "constraint" and unmeasured:
                            measured = False
                            break
                        # still an UndefinedRateError when the rows leave it undefined: scorers score NaN
                        error = UndefinedRateError if unmeasured else ValueError
                        raise error(f"The {role} '{text}' cannot be measured on this data: {exc}") from None
                if coef is None:  # checked only: the solvers read the linear form
                    continue
                cache[atom] = np.arange(n_rows, n_rows + len(atom.exprs))
                exprs.extend(atom.exprs)
                consts.append(b_a)
                n_rows += len(atom.exprs)
            if coef is not None:
                atoms.append((float(coef), atom, cache[atom]))
        if measured:
            atoms, guarded = atoms[:len(metric.terms)], atoms[len(metric.terms):]
            denominator = (guards[0].expr, int(guarded[0][2][0])) if guards else None
            compiled.append(CompiledSum(metric.constant, atoms, label, metric.kind, metric, denominator, as_ratio, scale))
        else:
            undefined.append(label)
    # the rates over the cells of alike rows: a parity constraint's row reads every row of the data
    if together is not None and list(together[2]) == list(cache):  # the rows compiled are the program's
        A = CellMatrix.from_factors(*together[:2])
    elif exprs:
        A = CellMatrix.from_factors(*compile_factored(exprs, data)[:2])
    else:
        A = CellMatrix(sp.csr_matrix((0, 0)), sp.csc_matrix((0, data.n)))
    b = np.concatenate(consts) if consts else np.zeros(0)
    return MetricProgram(A, b, compiled[0], compiled[1:])


def _compile_together(atoms: list, data: RateData) -> tuple[sp.csr_matrix, sp.csr_matrix, dict] | None:
    """The rates of all ``atoms`` in one :func:`~skrate.problem.compile_factored` (one pass over
    the slices, not one per atom: a constraint over 200 group values has 200 atoms), checked.

    Parameters
    ----------
    atoms : list of Atom
        Distinct atoms, in the order of their rows.
    data : RateData
        What the rates are measured on.

    Returns
    -------
    tuple of (csr_matrix, csr_matrix, dict) or None
        ``mix`` and ``basis`` of every atom's expressions in turn, and each atom's constants
        (its rows of ``b``), in order; None when some atom cannot be measured on ``data`` or fails
        its check, which compiling the atoms one at a time names.
    """
    exprs = [e for atom in atoms for e in atom.exprs]
    if not exprs:
        return None
    try:
        mix, basis, b = compile_factored(exprs, data)
        ends = np.cumsum([len(atom.exprs) for atom in atoms])
        offsets = dict(zip(atoms, np.split(b, ends[:-1])))
        for atom, b_a in offsets.items():
            atom.check(b_a)
    except ValueError:
        return None
    return mix, basis, offsets


def _as_ratio(constraint: Constraint) -> MetricSum | None:
    """A core constraint with a ratio side as ``metric <= 0`` in the ratio's units (``precision >=
    0.8`` as ``0.8 - precision``), None without one: ratios compare only with constants."""
    oriented = constraint.ratio_bound
    if oriented is None:
        return None
    ratio, op, bound = oriented
    sign = 1.0 if op == "<=" else -1.0
    return MetricSum(((sign, RatioAtom(ratio.numerator, ratio.denominator)),), -sign * bound.constant)


def _unmeasured(atom, data: RateData, exc: ValueError) -> bool:
    """Whether ``exc`` says the rows leave a slice of ``atom`` empty, or lack a group value it names."""
    return isinstance(exc, UndefinedRateError) or bool(absent_values((r for e in atom.exprs for r in e.rates),
                                                                     data.groups))


def _unique(labels: list[str]) -> list[str]:
    """The labels, a repeated one numbered from its second occurrence (``label #2``): labels key
    ``metric_values`` and name the constraints in ``constraints_``."""
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
    return out


def out_of_range_bounds(constraints) -> list[str]:
    """Why no classifier meets each bound on a named ratio beyond the ratio's range (see
    :func:`~skrate.problem.ratio_bound_out_of_range`): a rate constraint's, or a metric one's
    over one denominator as the rate constraint it states, named as written (``'1 - f_measure <=
    -0.1' ('f1 >= 1.1': f1 lies in [0, 1])``)."""
    out = []
    for c in as_metric_constraints(constraints):
        stated = rate_constraint(c) if isinstance(c, MetricConstraint) else c
        reason = None if stated is None else ratio_bound_out_of_range(stated)
        if reason is not None:
            out.append(reason if stated is c or str(c) == str(stated) else f"'{c}' ({reason})")
    return out


def program_values(objective, constraints, data: RateData, p: np.ndarray, expand_over=None,
                   undefined: list | None = None) -> dict:
    """``{"objective": psi, label: phi_j, ...}`` of the expected decisions ``p`` on ``data``.

    ``phi_j <= 0`` is met; a bound on a ratio, a rate constraint's or a metric constraint's
    (``precision() >= 0.8``), reads in the ratio's units (``0.8 - precision``, though the solvers
    take its linear form) as the core reports it: wins over no losses are infinite, ``0 / 0`` is
    NaN. A metric constraint is NaN where a ratio it holds (``precision`` in
    ``predictive_parity``) has a zero denominator, which the solvers clip. The objective reads
    such a ratio as the core does.
    """
    program = compile_program(objective, constraints, data, expand_over, undefined)
    r = reported_rates(program.A, program.b, p)
    out = {"objective": program.objective.reported_value(r)}
    out.update({c.label: float(c.reported(r)) for c in program.constraints})
    return out


def constraint_violations(constraints, data: RateData, p: np.ndarray, expand_over=None,
                          undefined: list | None = None) -> list[float]:
    """Each constraint's violation (``> 0`` when broken) at the expected decisions ``p``: rate
    constraints in their own units, as their reports give them (:func:`~skrate.problem.violation_rows`),
    metric constraints as :func:`program_values` (``metric_values``) reads them.

    Bare group columns expand over the values of ``expand_over`` (default: ``data``'s). A
    constraint these rows cannot measure raises; but given a list ``undefined``, it is named
    there instead, a rate constraint's violation NaN and a metric one left out.
    """
    if not all(isinstance(c, Constraint) for c in constraints):
        return list(program_values("error", constraints, data, p, expand_over, undefined).values())[1:]
    expanded = expand_constraints(constraints, data.groups if expand_over is None else expand_over)
    if undefined is None:
        rows = violation_rows(expanded, data, p)
    else:
        rows, missing = report_rows(expanded, data, p)
        undefined.extend(missing)
    return [row["violation"] for row in rows]
