"""Generalized rate metrics: non-linear functions of a few basic rates, as immutable specs.

A metric is a sum ``constant + sum_a coef_a * f_a(r_a)`` of *atoms*; each atom ``f_a`` is a
function of a short vector ``r_a`` of linear rate expressions (``tpr``, ``ppr[sex=Female]``...)
whose value and gradient are known, together with its class: linear, convex, a ratio of
rates (pseudo-convex), or non-convex. The class of a sum follows from its atoms and the signs
of their coefficients, so the estimator can pick an algorithm with guarantees or refuse.
Specs compare by value and hash (frozen dataclasses), so ``clone`` and ``GridSearchCV`` handle
them. Narasimhan, Cotter and Gupta (NeurIPS 2019), Table 1.

This module holds the algebra: ``Metric``, the ``Atom`` interface, ``MetricSum`` and
``MetricConstraint``, with the two atoms that a core rate expression or ratio becomes when it
enters a sum (``LinearRate``, ``RatioAtom``). The other atoms are in ``_atoms``, the
constructors in ``_constructors``, and the resolution of metric names in ``_names``.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from numbers import Real

import numpy as np

from ..problem._evaluate import ratio_value
from ..rates import Constraint, Expression, Ratio, Slice, as_expression
from ..rates._expression import _divisor
from ..rates._functions import display_ratio

_EPS = 1e-6
CLASSES = ("linear", "convex", "concave", "ratio", "nonconvex")


def _scalar(x) -> bool:
    return isinstance(x, Real) and not isinstance(x, bool)


def _bounded(metric: MetricSum) -> MetricSum:
    """``metric``, refused when arithmetic took a coefficient or its constant past a float."""
    if not all(math.isfinite(c) for c in (metric.constant, *(c for c, _ in metric.terms))):
        raise ValueError("A coefficient or constant of the metric overflows a float; scale the metric down.")
    return metric


def _finite(x, what: str) -> float:
    """``x`` as a float; a NaN or infinite bound would make every comparison with it false."""
    if not _scalar(x):
        raise TypeError(f"The {what} must be a number, got {x!r}.")
    try:
        value = float(x)
    except OverflowError:  # an int (or a Fraction) beyond float's range
        value, x = math.inf, "a number beyond a float's range"
    if not math.isfinite(value):
        raise ValueError(f"The {what} must be a finite number, got {x if isinstance(x, str) else repr(x)}.")
    return value


class Metric:
    """Arithmetic and comparisons shared by atoms and sums of atoms."""

    def as_sum(self) -> MetricSum:
        return MetricSum(((1.0, self),), 0.0)

    def __add__(self, other):
        a = self.as_sum()
        if _scalar(other):
            return _bounded(MetricSum(a.terms, a.constant + _finite(other, f"constant added to {self}")))
        b = _lift(other)
        if b is None:
            return NotImplemented
        return _bounded(MetricSum(a.terms + b.terms, a.constant + b.constant))

    __radd__ = __add__

    def __mul__(self, other):
        if not _scalar(other):
            return NotImplemented
        a = self.as_sum()
        factor = _finite(other, f"factor of {self}")
        return _bounded(MetricSum(tuple((c * factor, t) for c, t in a.terms), a.constant * factor))

    __rmul__ = __mul__

    def __truediv__(self, other):
        if not _scalar(other):  # a quotient of metrics is no sum of them: ratio metrics are precision() etc.
            return NotImplemented
        return self * (1.0 / _divisor(self.as_sum(), _finite(other, f"divisor of {self}")))

    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        return self + (-other if _scalar(other) else -_require(other))

    def __rsub__(self, other):
        return (-self) + other

    def __le__(self, other):
        bound = _finite(other, f"bound of {self.as_sum()} <= bound") if _scalar(other) else _require(other)
        return MetricConstraint(self - bound, stated=(self.as_sum(), "<=", bound))

    def __ge__(self, other):
        bound = _finite(other, f"bound of {self.as_sum()} >= bound") if _scalar(other) else _require(other)
        return MetricConstraint(bound - self, stated=(self.as_sum(), ">=", bound))

    def __lt__(self, other):
        raise TypeError("Use <= or >= to state a metric constraint.")

    __gt__ = __lt__

    @property
    def kind(self) -> str:
        """The metric's class: one of ``CLASSES``."""
        return self.as_sum().kind

    @property
    def is_smooth(self) -> bool:
        """Whether every piece has a gradient continuous in the rates (``max_of`` has not)."""
        return all(atom.smooth for _, atom in self.as_sum().terms)


def _lift(x) -> MetricSum | None:
    if isinstance(x, Metric):
        return x.as_sum()
    if isinstance(x, (Expression, Ratio, str)):
        return _rate_atom(x).as_sum()
    return None


def _rate_atom(spec) -> Atom:
    """The atom of a core rate expression or ratio, given as an object or a string."""
    expr = as_expression(spec)
    if isinstance(expr, Ratio):
        return RatioAtom(expr.numerator, expr.denominator)
    return LinearRate(expr)

def _require(x) -> MetricSum:
    out = _lift(x)
    if out is None:
        raise TypeError(f"Expected a metric, a rate expression or a number, got {x!r}.")
    return out


class Atom(Metric):
    """A function of a vector of linear rate expressions ``exprs`` with value and gradient.

    Subclasses define ``exprs``, ``kind``, ``value(r)``, ``gradient(r)`` and ``check(r)``; a
    ratio-class atom also defines ``ratios()``.
    """

    name = "metric"
    # a gradient continuous in the rates: Frank-Wolfe's multipliers are the gradient at the
    # running average, which for a max jumps between vertices and never settles
    smooth = True

    @property
    def exprs(self) -> tuple[Expression, ...]:
        raise NotImplementedError

    def value(self, r: np.ndarray) -> float | np.ndarray:
        """Value for rates ``r`` of shape (len(exprs),) or (len(exprs), k)."""
        raise NotImplementedError

    def exact_value(self, r: np.ndarray) -> float | np.ndarray:
        """:meth:`value` without the solvers' floor on a denominator, for reports and for choosing
        among models: a ratio over a denominator of ``1e-8`` is read as it is, not over ``1e-6``
        (the floor keeps the solvers' gradients bounded); over a zero one as the core reads it
        (:func:`~skrate.problem.ratio_value`: infinite, NaN for ``0 / 0``)."""
        return self.value(r)

    def gradient(self, r: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def check(self, r: np.ndarray) -> None:
        """Raise when the metric is undefined for the data (model-independent rates only)."""

    def ratios(self) -> list[tuple[float, Expression, Expression]] | None:
        """``[(coef, numerator, denominator)]`` with ``value = sum coef N / D``, or None."""
        return None

    def linear_coefficients(self) -> np.ndarray:
        """``c`` with ``value(r) = c . r + constant``, for atoms of class ``"linear"``."""
        raise TypeError(_not_linear(self))

    def stack_key(self) -> Hashable | None:
        """What, besides its rates, the atom's value depends on, when :meth:`value` and
        :meth:`exact_value` read each entry of ``r[i]`` alone, whatever its shape; else None.

        Atoms of equal keys are evaluated together, their rates stacked along a new axis
        (``r`` of shape (len(exprs), n_atoms, k)): a constraint over 200 group values is 200
        alike atoms.
        """
        return None

    def bind(self, assignment: dict[str, str]) -> Atom:
        """The atom with expanded group columns replaced by values."""
        raise NotImplementedError

    @property
    def expand_keys(self) -> tuple[str, ...]:
        return tuple(sorted({k for e in self.exprs for r in e.rates for k in r.slice.expand}))

    def slice_text(self, exprs: tuple[Expression, ...] | None = None) -> str:
        """The slices the rates of ``exprs`` (by default all of them) are measured on."""
        texts = sorted({str(r.slice) for e in (self.exprs if exprs is None else exprs) for r in e.rates} - {""})
        return ", ".join(texts) or "all examples"

    def __str__(self) -> str:
        return f"{self.name}({', '.join(map(str, self.exprs))})"


def _not_linear(atom: Atom) -> str:
    return f"The metric {atom} is {atom.kind}, not linear in its rates."


def _bind_exprs(exprs, assignment):
    return tuple(e.bind(assignment) for e in exprs)


@dataclass(frozen=True, eq=True)
class LinearRate(Atom):
    """A linear rate expression, e.g. ``error_rate`` or ``ppr[sex=Female] - ppr``.

    Parameters
    ----------
    expr : Expression
        The rate expression.
    """

    expr: Expression
    name = "rate"

    @property
    def exprs(self) -> tuple[Expression, ...]:
        return (self.expr,)

    @property
    def kind(self) -> str:
        return "linear"

    def value(self, r: np.ndarray) -> float | np.ndarray:
        return np.asarray(r)[0]

    def gradient(self, r: np.ndarray) -> np.ndarray:
        return np.ones(1)

    def linear_coefficients(self) -> np.ndarray:
        return np.ones(1)

    def stack_key(self) -> Hashable | None:
        return type(self)

    def ratios(self) -> list[tuple[float, Expression, Expression]] | None:
        return [(1.0, self.expr, Expression((), 1.0))]

    def bind(self, assignment: dict[str, str]) -> LinearRate:
        return LinearRate(self.expr.bind(assignment))

    def __str__(self) -> str:
        return str(self.expr)


@dataclass(frozen=True)
class RatioAtom(Atom):
    """``numerator / denominator`` of two linear rate expressions (precision, win-loss ratio).

    Parameters
    ----------
    numerator : Expression
        The expression divided.
    denominator : Expression
        The expression divided by; its value is read as at least ``1e-6``.
    """

    numerator: Expression
    denominator: Expression
    name = "ratio"

    @property
    def exprs(self) -> tuple[Expression, ...]:
        return (self.numerator, self.denominator)

    @property
    def kind(self) -> str:
        return "ratio"

    def value(self, r: np.ndarray) -> float | np.ndarray:
        r = np.asarray(r, dtype=float)
        return r[0] / np.maximum(r[1], _EPS)

    def exact_value(self, r: np.ndarray) -> float | np.ndarray:
        r = np.asarray(r, dtype=float)
        return ratio_value(r[0], r[1])

    def gradient(self, r: np.ndarray) -> np.ndarray:
        d = max(float(r[1]), _EPS)
        return np.array([1.0 / d, -float(r[0]) / d ** 2])

    def ratios(self) -> list[tuple[float, Expression, Expression]] | None:
        return [(1.0, self.numerator, self.denominator)]

    def stack_key(self) -> Hashable | None:
        return type(self)

    def bind(self, a: dict[str, str]) -> RatioAtom:
        return RatioAtom(*_bind_exprs(self.exprs, a))

    def __str__(self) -> str:
        return display_ratio(Ratio(self.numerator, self.denominator))


def _combine_kinds(terms) -> str:
    kinds = set()
    for coef, atom in terms:
        k = atom.kind
        if k in ("convex", "concave") and coef < 0:
            k = "concave" if k == "convex" else "convex"
        kinds.add(k)
    kinds.discard("linear")
    if not kinds:
        return "linear"
    if kinds == {"convex"}:
        return "convex"
    if kinds == {"concave"}:
        return "concave"
    if kinds == {"ratio"}:
        return "ratio"
    return "nonconvex"


@dataclass(frozen=True)
class MetricSum(Metric):
    """``constant + sum_a coef_a * atom_a``; the form every metric takes once combined.

    Parameters
    ----------
    terms : tuple of (float, Atom), default=()
        The coefficients ``coef_a`` and their atoms.
    constant : float, default=0.0
        The constant term.
    """

    terms: tuple[tuple[float, Atom], ...] = ()
    constant: float = 0.0

    def as_sum(self) -> MetricSum:
        return self

    @property
    def kind(self) -> str:
        return _combine_kinds(self.terms)

    @property
    def is_pseudo_convex(self) -> bool:
        """A single ratio of rates plus a constant is pseudo-convex (and pseudo-concave)."""
        return len(self.terms) == 1 and self.terms[0][1].kind == "ratio"

    @property
    def expand_keys(self) -> tuple[str, ...]:
        return tuple(sorted({k for _, a in self.terms for k in a.expand_keys}))

    def bind(self, assignment: dict[str, str]) -> MetricSum:
        return MetricSum(tuple((c, a.bind(assignment)) for c, a in self.terms), self.constant)

    def ratio_form(self) -> tuple[float, list[tuple[float, Expression, Expression]]] | None:
        """``(constant, [(coef, N, D)])`` when every atom is a ratio of rates, else None.

        Returns
        -------
        tuple of (float, list of (float, Expression, Expression)) or None
            The constant and the terms ``coef * N / D`` whose sum with it is the metric (linear
            atoms are ratios over 1; constant terms fold into the constant); None when an atom
            is not a ratio of rates.
        """
        constant, out = self.constant, []
        for coef, atom in self.terms:
            parts = atom.ratios()
            if parts is None:
                return None
            for c, num, den in parts:
                if not num.terms and not den.terms:
                    constant += coef * c * num.constant / den.constant
                else:
                    out.append((coef * c, num, den))
        return constant, out

    def __str__(self) -> str:
        return _sum_text(self.terms, self.constant)


def _sum_text(terms, constant: float) -> str:
    """``a - 0.5 * (1 - g_mean(tpr, tnr)) + 0.2``: signs written out, compound atoms bracketed
    where a coefficient applies to them."""
    # a leading constant reads better before a subtracted term: "1 - precision"
    lead = bool(constant) and bool(terms) and terms[0][0] < 0
    out = f"{constant:g}" if lead else ""
    for coef, atom in terms:
        text = str(atom)
        if coef != 1 and (" + " in text or " - " in text):
            text = f"({text})"
        body = text if abs(coef) == 1 else f"{abs(coef):g} * {text}"
        out += (f" {'-' if coef < 0 else '+'} {body}" if out else ("-" if coef < 0 else "") + body)
    if (constant and not lead) or not out:
        out += f" {'-' if constant < 0 else '+'} {abs(constant):g}" if out else f"{constant:g}"
    return out


@dataclass(frozen=True)
class MetricConstraint:
    """``metric <= 0``: a (possibly non-linear) constraint on rates.

    Parameters
    ----------
    metric : MetricSum
        The constrained metric: the constraint is ``metric <= 0``.
    label : str, default=""
        How the constraint reads; ``{slice}`` in it stands for ``slice`` in brackets, so a
        constraint over a bare group column reads per value once expanded (``kld[g=a] <= 0.01``).
        Without a label it reads as ``stated``, else as ``terms <= -constant``.
    slice : Slice, default=Slice()
        The slice ``{slice}`` names.
    stated : tuple, default=()
        The comparison as written, ``(lhs, op, bound)`` with ``lhs`` a MetricSum, ``op`` ``"<="``
        or ``">="`` and ``bound`` a number or a MetricSum; bound to each group value with the
        metric, so ``precision("g") >= 0.55`` reads ``precision[g=a] >= 0.55`` once expanded.
    """

    metric: MetricSum
    label: str = ""
    slice: Slice = Slice()
    stated: tuple = ()

    @property
    def kind(self) -> str:
        return self.metric.kind

    @property
    def expand_keys(self) -> tuple[str, ...]:
        return self.metric.expand_keys

    __bool__ = Constraint.__bool__  # refuses a chained comparison, which would keep its last part

    def bind(self, assignment: dict[str, str]) -> MetricConstraint:
        """The constraint for one value of each expanded group column, labelled with the values.

        Parameters
        ----------
        assignment : dict of str to str
            A value for each expanded group column.

        Returns
        -------
        MetricConstraint
            A new constraint on those values; a label without ``{slice}`` gets them appended in
            brackets.
        """
        label = self.label
        if label and "{slice}" not in label and assignment:
            label = f"{label} [{Slice.make(assignment)}]"
        stated = tuple(side.bind(assignment) if isinstance(side, MetricSum) else side for side in self.stated)
        return MetricConstraint(self.metric.bind(assignment), label, self.slice.bind(assignment), stated)

    def __str__(self) -> str:
        if self.label:
            where = str(self.slice)
            return self.label.replace("{slice}", f"[{where}]" if where else "")
        if self.stated:
            lhs, op, bound = self.stated
            return f"{lhs} {op} {bound:g}" if _scalar(bound) else f"{lhs} {op} {bound}"
        return f"{_sum_text(self.metric.terms, 0.0)} <= {-self.metric.constant:g}"
