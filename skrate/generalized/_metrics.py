"""Generalized rate metrics: non-linear functions of a few basic rates, as immutable specs.

A metric is a sum ``constant + sum_a coef_a * f_a(r_a)`` of *atoms*; each atom ``f_a`` is a
function of a short vector ``r_a`` of linear rate expressions (``tpr``, ``ppr[sex=Female]``...)
whose value and gradient are known, together with its class: linear, convex, a ratio of
rates (pseudo-convex), or non-convex. The class of a sum follows from its atoms and the signs
of their coefficients, so the estimator can pick an algorithm with guarantees or refuse.
Specs compare by value and hash (frozen dataclasses), so ``clone`` and ``GridSearchCV`` handle
them. Narasimhan, Cotter and Gupta (NeurIPS 2019), Table 1.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from numbers import Real
from typing import Any

import numpy as np
from scipy.special import rel_entr

from ..exceptions import UndefinedRateError
from ..rates import Constraint, Expression, Rate, Ratio, Slice, as_expression
from ..rates import _functions as R
from ..rates._functions import RATE_FUNCTIONS, display_ratio, named_ratio, rates_on
from ..rates._goals import parity_columns

_EPS = 1e-6
CLASSES = ("linear", "convex", "concave", "ratio", "nonconvex")


# the largest beta of an F-measure: its square stays far from overflow in the solvers' sums
_MAX_BETA = 1e150


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


def _linear(spec, where: str) -> Expression:
    """A linear rate expression for ``where``; ratios (``precision``) are refused by name."""
    expr = as_expression(spec)
    if isinstance(expr, Ratio):
        raise TypeError(f"{where} takes linear rate expressions, but {spec!r} is the ratio {expr}; "
                        "build ratios with skrate.generalized.ratio(numerator, denominator).")
    return expr


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

    def ratios(self) -> list[tuple[float, Expression, Expression]] | None:
        return [(1.0, self.expr, Expression((), 1.0))]

    def bind(self, assignment: dict[str, str]) -> LinearRate:
        return LinearRate(self.expr.bind(assignment))

    def __str__(self) -> str:
        return str(self.expr)


@dataclass(frozen=True)
class FMeasure(Atom):
    """``1 - F_beta`` with ``F_beta = (1 + b^2) TP / ((1 + b^2) TP + b^2 FN + FP)``.

    In rates: ``F = (1 + b^2) tp / (b^2 pi + ppr)`` with ``tp`` the proportion of true
    positives and ``pi`` the proportion of positive labels of the slice: a ratio of rates.

    Parameters
    ----------
    tp : Expression
        The proportion of examples of the slice that are positive and predicted positive
        (``tp_proportion``).
    ppr : Expression
        The positive prediction rate of the slice.
    pi : Expression
        The proportion of positive labels of the slice (``label_rate``).
    beta : float, default=1.0
        Weight of recall against precision.
    """

    tp: Expression
    ppr: Expression
    pi: Expression
    beta: float = 1.0
    name = "f_measure"

    @property
    def exprs(self) -> tuple[Expression, ...]:
        return (self.tp, self.ppr, self.pi)

    @property
    def kind(self) -> str:
        return "ratio"

    def _den(self, r: np.ndarray) -> np.ndarray:
        return self.beta ** 2 * r[2] + r[1]

    def value(self, r: np.ndarray) -> float | np.ndarray:
        r = np.asarray(r, dtype=float)
        return 1.0 - (1 + self.beta ** 2) * r[0] / np.maximum(self._den(r), _EPS)

    def gradient(self, r: np.ndarray) -> np.ndarray:
        r = np.asarray(r, dtype=float)
        d = max(float(self._den(r)), _EPS)
        g = (1 + self.beta ** 2) / d  # divided before squaring d: no overflow for a large beta
        return np.array([-g, g * r[0] / d, g * r[0] * (self.beta ** 2 / d)])

    def check(self, r: np.ndarray) -> None:
        if not r[2] > 0:
            raise UndefinedRateError(f"The metric {self} is undefined on the slice ({self.slice_text()}): it has "
                                     "no positive examples, so the F-measure has no true positives to count.")

    def ratios(self) -> list[tuple[float, Expression, Expression]] | None:
        c = 1 + self.beta ** 2
        return [(-1.0, c * self.tp, self.beta ** 2 * self.pi + self.ppr), (1.0, Expression((), 1.0), Expression((), 1.0))]

    def bind(self, a: dict[str, str]) -> FMeasure:
        return FMeasure(*_bind_exprs(self.exprs, a), beta=self.beta)

    def __str__(self) -> str:
        s = str(self.ppr)[3:]
        return f"1 - f_measure{s}" + (f"(beta={self.beta:g})" if self.beta != 1 else "")


@dataclass(frozen=True)
class _TwoRates(Atom):
    """Shared storage of the class-balanced means of two rates."""

    a: Expression
    b: Expression

    @property
    def exprs(self) -> tuple[Expression, ...]:
        return (self.a, self.b)

    @property
    def kind(self) -> str:
        return "convex"

    def bind(self, assignment: dict[str, str]) -> _TwoRates:
        return type(self)(*_bind_exprs(self.exprs, assignment))

    def check(self, r: np.ndarray) -> None:  # tpr/tnr slices without positives or negatives fail at compile time
        return None


@dataclass(frozen=True)
class GMean(_TwoRates):
    """``1 - sqrt(TPR * TNR)``: one minus the geometric mean (convex; degree-1 homogeneous part).

    Parameters
    ----------
    a : Expression
        The first rate (``tpr`` in :func:`g_mean`).
    b : Expression
        The second rate (``tnr`` in :func:`g_mean`).
    """

    name = "g_mean"

    def value(self, r: np.ndarray) -> float | np.ndarray:
        r = np.clip(np.asarray(r, dtype=float), 0.0, 1.0)
        return 1.0 - np.sqrt(r[0] * r[1])

    def gradient(self, r: np.ndarray) -> np.ndarray:
        a, b = np.clip(np.asarray(r, dtype=float), _EPS, 1.0)
        g = np.sqrt(a * b)
        return np.array([-0.5 * b / g, -0.5 * a / g])

    def __str__(self) -> str:
        return f"1 - g_mean({self.a}, {self.b})"


@dataclass(frozen=True)
class HMean(_TwoRates):
    """``1 - 2 TPR TNR / (TPR + TNR)``: one minus the harmonic mean (convex).

    Parameters
    ----------
    a : Expression
        The first rate (``tpr`` in :func:`h_mean`).
    b : Expression
        The second rate (``tnr`` in :func:`h_mean`).
    """

    name = "h_mean"

    def value(self, r: np.ndarray) -> float | np.ndarray:
        a, b = np.clip(np.asarray(r, dtype=float), 0.0, 1.0)
        return 1.0 - 2.0 * a * b / np.maximum(a + b, _EPS)

    def gradient(self, r: np.ndarray) -> np.ndarray:
        a, b = np.clip(np.asarray(r, dtype=float), _EPS, 1.0)
        s2 = (a + b) ** 2
        return np.array([-2.0 * b * b / s2, -2.0 * a * a / s2])

    def __str__(self) -> str:
        return f"1 - h_mean({self.a}, {self.b})"


@dataclass(frozen=True)
class QMean(_TwoRates):
    """``sqrt((FNR^2 + FPR^2) / 2)``: the quadratic mean of the class errors (convex).

    Parameters
    ----------
    a : Expression
        The first rate (``fnr`` in :func:`q_mean`).
    b : Expression
        The second rate (``fpr`` in :func:`q_mean`).
    """

    name = "q_mean"

    def value(self, r: np.ndarray) -> float | np.ndarray:
        r = np.asarray(r, dtype=float)
        return np.sqrt(0.5 * (r[0] ** 2 + r[1] ** 2))

    def gradient(self, r: np.ndarray) -> np.ndarray:
        r = np.asarray(r, dtype=float)
        v = max(float(np.sqrt(0.5 * (r[0] ** 2 + r[1] ** 2))), _EPS)
        return 0.5 * r / v


@dataclass(frozen=True)
class KLD(Atom):
    """``KL(p || q)`` between the true positive proportion ``p`` (a constant of the data) and the
    predicted one ``q``, ``p log(p / q) + (1 - p) log((1 - p) / (1 - q))``: convex in ``q``.

    Quantification (Esuli and Sebastiani) and, per group, demographic-parity fairness.

    Parameters
    ----------
    p : Expression
        The true positive proportion (``label_rate``, of all examples or of the slice).
    q : Expression
        The predicted positive proportion (``ppr`` of the slice).
    """

    p: Expression
    q: Expression
    name = "kld"

    @property
    def exprs(self) -> tuple[Expression, ...]:
        return (self.p, self.q)

    @property
    def kind(self) -> str:
        return "convex"

    def value(self, r: np.ndarray) -> float | np.ndarray:
        # rel_entr(x, y) = x log(x / y), 0 at x = 0: one ufunc per class (hot in the games' loops)
        p = np.asarray(r[0], dtype=float)
        q = np.minimum(np.maximum(np.asarray(r[1], dtype=float), _EPS), 1 - _EPS)
        return rel_entr(p, q) + rel_entr(1.0 - p, 1.0 - q)

    def gradient(self, r: np.ndarray) -> np.ndarray:
        p = min(max(float(r[0]), _EPS), 1 - _EPS)
        q = min(max(float(r[1]), _EPS), 1 - _EPS)
        return np.array([np.log(p / q) - np.log((1 - p) / (1 - q)), -p / q + (1 - p) / (1 - q)])

    def check(self, r: np.ndarray) -> None:
        if not 0.0 < float(r[0]) < 1.0:
            raise UndefinedRateError(
                f"The metric {self} is undefined on the slice ({self.slice_text((self.p,))}): the true positive "
                f"proportion there is {float(r[0]):g}, and KL-divergence needs it strictly between 0 and 1 (it "
                "is infinite for any other prediction rate). Use another slice or another metric.")

    def bind(self, a: dict[str, str]) -> KLD:
        return KLD(*_bind_exprs(self.exprs, a))


@dataclass(frozen=True)
class MaxOf(Atom):
    """``max_k r_k``: the worst of several rates (convex, with a subgradient).

    Parameters
    ----------
    rates : tuple of Expression
        The linear rate expressions ``r_k``.
    """

    rates: tuple[Expression, ...]
    name = "max"
    smooth = False

    @property
    def exprs(self) -> tuple[Expression, ...]:
        return self.rates

    @property
    def kind(self) -> str:
        return "convex"

    def value(self, r: np.ndarray) -> float | np.ndarray:
        return np.max(np.asarray(r, dtype=float), axis=0)

    def gradient(self, r: np.ndarray) -> np.ndarray:
        g = np.zeros(len(self.rates))
        g[int(np.argmax(r))] = 1.0
        return g

    def bind(self, a: dict[str, str]) -> MaxOf:
        return MaxOf(_bind_exprs(self.rates, a))


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

    def gradient(self, r: np.ndarray) -> np.ndarray:
        d = max(float(r[1]), _EPS)
        return np.array([1.0 / d, -float(r[0]) / d ** 2])

    def ratios(self) -> list[tuple[float, Expression, Expression]] | None:
        return [(1.0, self.numerator, self.denominator)]

    def bind(self, a: dict[str, str]) -> RatioAtom:
        return RatioAtom(*_bind_exprs(self.exprs, a))

    def __str__(self) -> str:
        return display_ratio(Ratio(self.numerator, self.denominator))


@dataclass(frozen=True)
class RateFunction(Atom):
    """A user function ``fn(r) -> float`` of named rates, with its declared class.

    ``grad`` (``r -> array``) is optional: without it, central differences are used inside the box
    ``[0, 1]^k`` and one-sided ones at its faces, so ``fn`` is only evaluated on the box.
    ``cvx`` (``cvxpy vector -> cvxpy expression``), optional, is the same function in cvxpy: the
    xi-player then solves its problem with cvxpy instead of a quasi-Newton method.

    Parameters
    ----------
    fn : callable
        ``fn(r) -> float`` for the vector ``r`` of the values of ``rates``.
    rates : tuple of Expression, default=()
        The linear rate expressions ``fn`` takes.
    convexity : {"linear", "convex", "concave", "nonconvex"}, default="convex"
        The declared class of ``fn`` on the box ``[0, 1]^k``, checked when the atom is built
        (see :func:`rate_function`).
    grad : callable, default=None
        ``grad(r) -> array``, the gradient of ``fn``; None means finite differences.
    label : str, default="rate_function"
        The function's name, as the metric reads (``label(rates)``).
    cvx : callable, default=None
        ``fn`` as a function of a cvxpy vector; None means the xi-player solves numerically.
    smooth : bool, default=True
        Whether the gradient of ``fn`` is continuous in the rates.
    """

    fn: Callable = field(compare=True)
    rates: tuple[Expression, ...] = ()
    convexity: str = "convex"
    grad: Callable | None = None
    label: str = "rate_function"
    cvx: Callable | None = None
    smooth: bool = True

    def __post_init__(self):
        # a wrong declaration fails here, not as a silently bad fit
        if self.convexity == "linear":
            self.linear_coefficients()
        elif self.convexity in ("convex", "concave"):
            self._check_curvature()

    def _check_curvature(self) -> None:
        """Refuse a function declared convex (concave) that is not: at fixed pairs of points of
        the box, its value at their midpoint above (below) the mean of its values there. A
        probe where ``fn`` fails or is not finite proves nothing and is skipped."""
        k = len(self.rates)
        a, b = np.random.default_rng(0).random((2, 16, k))

        def at(p):
            try:
                return float(self.fn(p))
            except (ValueError, ArithmeticError):  # outside its domain (a log of 0)
                return np.nan

        sign = 1.0 if self.convexity == "convex" else -1.0
        with np.errstate(all="ignore"):
            fa, fb, fm = (np.array([at(p) for p in pts]) for pts in (a, b, (a + b) / 2))
            excess = sign * (fm - (fa + fb) / 2)
            tol = 1e-9 * (1.0 + np.abs(fa) + np.abs(fb))
        bad = np.flatnonzero(np.isfinite(excess) & (excess > tol))
        if bad.size:
            i = bad[np.argmax(excess[bad])]
            side = "above" if sign > 0 else "below"
            raise ValueError(
                f"The user function '{self.label}' of ({', '.join(map(str, self.rates))}) is declared "
                f"convexity={self.convexity!r} but is not: at the midpoint of r={np.round(a[i], 3).tolist()} and "
                f"r={np.round(b[i], 3).tolist()} it gives {fm[i]:.6g}, {side} the mean {(fa[i] + fb[i]) / 2:.6g} of "
                "its values there. Declare its class ('convex', 'concave' or 'nonconvex').")

    @property
    def name(self) -> str:
        return self.label

    def _affine(self) -> tuple[float, np.ndarray]:
        """``(c0, c)`` with ``fn(r) = c0 + c . r``, from ``fn`` at zero and at the unit vectors,
        checked at fixed points inside the box."""
        if self.convexity != "linear":
            raise TypeError(_not_linear(self))
        k = len(self.rates)
        c0 = float(self.fn(np.zeros(k)))
        # differences carry roundoff (0.15 - 0.1 = 0.05000000000000002): 12 significant digits
        # give back the coefficients as written
        c = np.array([float(f"{float(self.fn(e)) - c0:.12g}") for e in np.eye(k)])
        probes = np.random.default_rng(0).random((3, k))
        got = np.array([float(self.fn(p)) for p in probes])
        want = c0 + probes @ c
        if not np.allclose(got, want, rtol=1e-6, atol=1e-9):
            worst = int(np.argmax(np.abs(got - want)))
            raise ValueError(
                f"The user function '{self.label}' of ({', '.join(map(str, self.rates))}) is declared "
                f"convexity='linear' but is not affine: at r={np.round(probes[worst], 3).tolist()} it gives "
                f"{got[worst]:.6g}, its affine extension from r=0 and the unit vectors {want[worst]:.6g}. "
                "Declare its class ('convex', 'concave' or 'nonconvex').")
        return c0, c

    def linear_coefficients(self) -> np.ndarray:
        return self._affine()[1]

    def linear_expression(self) -> Expression:
        """The function as the rate expression ``c0 + sum_i c_i rates_i`` (declared linear only).

        Returns
        -------
        Expression
            ``c0 + sum_i c_i rates_i``, with ``c0 = fn(0)`` and ``c_i`` read from ``fn`` at the
            unit vectors (rounded to 12 significant digits).

        Raises
        ------
        TypeError
            When the function is not declared ``"linear"``.
        ValueError
            When ``fn`` is not affine at the probe points.
        """
        c0, c = self._affine()
        return sum((float(ci) * e for ci, e in zip(c, self.rates)), Expression((), c0))

    def ratios(self) -> list[tuple[float, Expression, Expression]] | None:
        if self.convexity != "linear":
            return None
        return [(1.0, self.linear_expression(), Expression((), 1.0))]

    @property
    def exprs(self) -> tuple[Expression, ...]:
        return self.rates

    @property
    def kind(self) -> str:
        return self.convexity

    def value(self, r: np.ndarray) -> float | np.ndarray:
        r = np.asarray(r, dtype=float)
        if r.ndim == 1:
            return float(self.fn(r))
        return np.array([float(self.fn(r[:, j])) for j in range(r.shape[1])])

    def gradient(self, r: np.ndarray) -> np.ndarray:
        r = np.asarray(r, dtype=float)
        if self.grad is not None:
            return np.asarray(self.grad(r), dtype=float)
        # central differences inside the box, one-sided at its faces: rates live in [0, 1] and the
        # function may be undefined outside it (sqrt of a negative rate), so no step leaves it
        h = 1e-6
        out = np.empty(r.shape[0])
        for i, ri in enumerate(r):
            lo, hi = r.copy(), r.copy()
            lo[i], hi[i] = min(max(ri - h, 0.0), ri), max(min(ri + h, 1.0), ri)
            out[i] = (float(self.fn(hi)) - float(self.fn(lo))) / (hi[i] - lo[i])
        return out

    def bind(self, a: dict[str, str]) -> RateFunction:
        return replace(self, rates=_bind_exprs(self.rates, a))


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


# -- constructors -------------------------------------------------------------------------------
def error(group: str | Iterable[str] | None = None, *, where: dict[str, Any] | None = None,
          **filters: Any) -> MetricSum:
    """The error rate P(yhat != y) on a slice (linear).

    Parameters
    ----------
    group : str or list of str, optional
        Group columns to expand over: as an objective, the sum over their values; in a
        constraint, one constraint per value.
    where : dict, optional
        Filters as a dict, for column names that are not valid keywords or that name a
        parameter (``group``).
    **filters
        Group column = value (or list of values) restricting the slice.

    Returns
    -------
    MetricSum
    """
    return LinearRate(R.error_rate(group, where=where, **filters)).as_sum()


def f_measure(beta: float = 1.0, group: str | Iterable[str] | None = None, *,
              where: dict[str, Any] | None = None, **filters: Any) -> MetricSum:
    """``1 - F_beta`` on a slice: minimise it to maximise the F-measure (a ratio of rates).

    Parameters
    ----------
    beta : float, default=1.0
        Weight of recall against precision: a finite number in ``(0, 1e150]``.
    group : str or list of str, optional
        Group columns to expand over (a sum over groups as an objective, one constraint per
        group in a constraint).
    where : dict, optional
        Filters as a dict, for column names that are not valid keywords or that name a
        parameter (``group``).
    **filters
        Group column = value(s) restricting the slice.

    Returns
    -------
    MetricSum
    """
    # an infinite beta gives F = inf / inf = NaN, and a square near overflow overflows in the
    # solvers' sums; long before the cap F_beta is the recall to machine precision
    if not (_scalar(beta) and 0 < beta <= _MAX_BETA):
        raise ValueError(f"beta of the F-measure must be a finite number > 0, at most {_MAX_BETA:g} "
                         f"(F_beta is the recall long before), got {beta!r}.")
    return FMeasure(*rates_on(("tp_proportion", "ppr", "label_rate"), group, where, filters), float(beta)).as_sum()


def g_mean(group: str | Iterable[str] | None = None, *, where: dict[str, Any] | None = None,
           **filters: Any) -> MetricSum:
    """``1 - sqrt(TPR * TNR)`` on a slice (convex).

    Parameters
    ----------
    group : str or list of str, optional
        Group columns to expand over: as an objective, the sum over their values; in a
        constraint, one constraint per value.
    where : dict, optional
        Filters as a dict, for column names that are not valid keywords or that name a
        parameter (``group``).
    **filters
        Group column = value (or list of values) restricting the slice.

    Returns
    -------
    MetricSum
    """
    return GMean(*rates_on(("tpr", "tnr"), group, where, filters)).as_sum()


def h_mean(group: str | Iterable[str] | None = None, *, where: dict[str, Any] | None = None,
           **filters: Any) -> MetricSum:
    """``1 - 2 TPR TNR / (TPR + TNR)`` on a slice (convex).

    Parameters
    ----------
    group : str or list of str, optional
        Group columns to expand over: as an objective, the sum over their values; in a
        constraint, one constraint per value.
    where : dict, optional
        Filters as a dict, for column names that are not valid keywords or that name a
        parameter (``group``).
    **filters
        Group column = value (or list of values) restricting the slice.

    Returns
    -------
    MetricSum
    """
    return HMean(*rates_on(("tpr", "tnr"), group, where, filters)).as_sum()


def q_mean(group: str | Iterable[str] | None = None, *, where: dict[str, Any] | None = None,
           **filters: Any) -> MetricSum:
    """``sqrt((FNR^2 + FPR^2) / 2)`` on a slice (convex).

    Parameters
    ----------
    group : str or list of str, optional
        Group columns to expand over: as an objective, the sum over their values; in a
        constraint, one constraint per value.
    where : dict, optional
        Filters as a dict, for column names that are not valid keywords or that name a
        parameter (``group``).
    **filters
        Group column = value (or list of values) restricting the slice.

    Returns
    -------
    MetricSum
    """
    return QMean(*rates_on(("fnr", "fpr"), group, where, filters)).as_sum()


def kld(group: str | Iterable[str] | None = None, *, reference: str = "overall",
        where: dict[str, Any] | None = None, **filters: Any) -> MetricSum:
    """KL-divergence between the true and the predicted positive proportion (convex).

    Parameters
    ----------
    group : str, optional
        Expand over this group column: as an objective, ``sum_g KL(p, ppr_g)``; in a constraint,
        one ``KL(p, ppr_g) <= eps`` per group (KL fairness, Narasimhan et al. 2019, Section 6).
    reference : {"overall", "slice"}, default="overall"
        Whether ``p`` is the positive proportion of all examples or of the slice itself
        (quantification within the slice).
    where : dict, optional
        Filters as a dict, for column names that are not valid keywords or that name a
        parameter (``group``).
    **filters
        Group column = value (or list of values) restricting the slice.

    Returns
    -------
    MetricSum

    Notes
    -----
    The predicted proportion is read within ``[1e-6, 1 - 1e-6]``, so the divergence stays finite
    for the games' steps: a model that predicts no positive at all (or only positives) on a
    slice reads ``p log(p / 1e-6) + (1 - p) log(1 - p)`` (6.2 at ``p = 0.5``) instead of
    infinity.
    """
    if reference not in ("overall", "slice"):
        raise ValueError(f"reference must be 'overall' or 'slice', got {reference!r}.")
    label, ppr = rates_on(("label_rate", "ppr"), group, where, filters)
    return KLD(R.label_rate() if reference == "overall" else label, ppr).as_sum()


def max_of(*rates: Expression | str) -> MetricSum:
    """The largest of several rates (e.g. the worst group error), convex.

    A rate over a bare group column stands for its rate on every value, inside the max:
    ``max_of("error_rate[race]")`` is the worst group error, the same metric as
    ``max_of("error_rate[race=A]", "error_rate[race=B]")`` when race takes the values A and B.

    Parameters
    ----------
    *rates : Expression or str
        Linear rate expressions, e.g. ``"error_rate[race=A]"`` or ``"fnr[race]"``; ratios are
        refused.

    Returns
    -------
    MetricSum
    """
    if not rates:
        raise ValueError("max_of needs at least one rate.")
    return MaxOf(tuple(_linear(r, "max_of") for r in rates)).as_sum()


def min_of(*rates: Expression | str) -> MetricSum:
    """The smallest of several rates, ``-max(-r)``: concave (maximise it as ``-min_of(...)``).

    A rate over a bare group column stands for its rate on every value, inside the min
    (``min_of("tpr[race]")`` is the lowest group TPR).

    Parameters
    ----------
    *rates : Expression or str
        Linear rate expressions; ratios are refused.

    Returns
    -------
    MetricSum
    """
    if not rates:
        raise ValueError("min_of needs at least one rate.")
    return -MaxOf(tuple(-_linear(r, "min_of") for r in rates)).as_sum()


def ratio(numerator: Expression | str, denominator: Expression | str) -> MetricSum:
    """The ratio of two linear rate expressions (sums of these suit ``solver="ratio"``).

    Parameters
    ----------
    numerator, denominator : Expression or str
        Linear rate expressions, e.g. ``"wins"`` and ``"losses"``; ratios are refused.

    Returns
    -------
    MetricSum
        A ratio-class metric; a linear one over a constant denominator.

    Raises
    ------
    ValueError
        When the denominator is the constant 0.
    TypeError
        When the denominator can take both signs (``"ppr - 0.1"``): bounds on the ratio could
        not be multiplied out by it, as :class:`skrate.rates.Ratio` refuses too.
    """
    numerator, denominator = _linear(numerator, "ratio"), _linear(denominator, "ratio")
    if not denominator.terms and denominator.constant == 0:
        raise ValueError("The denominator of ratio() is the constant 0: the ratio is undefined for every model.")
    # the core's division: over a constant, a linear expression (tpr / 2); otherwise a ratio whose
    # denominator of one sign is kept non-negative (-ppr / -npr as ppr / npr), one of both signs refused
    q = numerator / denominator
    return (LinearRate(q) if isinstance(q, Expression) else RatioAtom(q.numerator, q.denominator)).as_sum()


def precision(group: str | Iterable[str] | None = None, *, where: dict[str, Any] | None = None,
              **filters: Any) -> MetricSum:
    """Precision ``tp / ppr`` on a slice, a ratio of rates.

    As a loss to minimise, use ``1 - precision()`` (the metric name ``"precision"``).

    Parameters
    ----------
    group : str or list of str, optional
        Group columns to expand over: as an objective, the sum over their values; in a
        constraint, one constraint per value.
    where : dict, optional
        Filters as a dict, for column names that are not valid keywords or that name a
        parameter (``group``).
    **filters
        Group column = value (or list of values) restricting the slice.

    Returns
    -------
    MetricSum
        A ratio-class metric.
    """
    return ratio(*rates_on(("tp_proportion", "ppr"), group, where, filters))


def rate_function(fn: Callable, rates: Iterable[Expression | str] | str, *, convexity: str = "convex",
                  gradient: Callable | None = None, name: str = "rate_function",
                  cvxpy: Callable | None = None, smooth: bool = True) -> MetricSum:
    """A metric defined by a user function of named rates, with its declared class.

    Parameters
    ----------
    fn : callable
        ``fn(r) -> float`` for the vector ``r`` of the values of ``rates``.
    rates : list of str or Expression
        The rates ``fn`` takes, e.g. ``["tpr", "fpr"]``.
    convexity : {"linear", "convex", "concave", "nonconvex"}, default="convex"
        The class of ``fn`` in the rates on the box ``[0, 1]^k``; it decides which solvers
        apply, and their guarantees rest on it. A ``"linear"`` function is checked to be affine
        and becomes the rate expression with its coefficients (``fn`` at zero and at the unit
        vectors), optimised exactly as if written out. A ``"convex"`` (``"concave"``) one is
        checked at 16 fixed pairs of points of the box, midpoint against the mean: a check
        that catches most wrong declarations, not a proof.
    gradient : callable, optional
        ``gradient(r) -> array``; when omitted, finite differences that evaluate ``fn`` only
        on the box ``[0, 1]^k`` (central inside, one-sided at a rate of 0 or 1).
    name : str, default="rate_function"
        The function's name, as the metric reads (``name(rates)``).
    cvxpy : callable, optional
        The same function of a cvxpy vector of rates (``lambda r: cp.norm(r)``): the xi-player
        then solves its small convex problem with cvxpy, built once and re-solved with new
        multipliers; without it, a box-constrained quasi-Newton method.
    smooth : bool, default=True
        Whether ``fn``'s gradient is continuous. Declare a function with kinks (a maximum of
        rates written by hand) ``smooth=False``: ``solver="auto"`` then avoids Frank-Wolfe,
        whose multipliers, the gradient at the running average, jump between the kink's sides
        and never settle (as for :func:`max_of`).

    Returns
    -------
    MetricSum
        A linear rate expression for ``convexity="linear"``, else the user function.

    Raises
    ------
    ValueError
        For an unknown ``convexity`` or ``"ratio"``, or a function found not to be of its
        declared class.
    """
    if convexity not in CLASSES:
        raise ValueError(f"convexity must be one of {CLASSES}, got {convexity!r}.")
    if convexity == "ratio":
        raise ValueError("A user function cannot be declared a ratio; build ratios with ratio(N, D).")
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {fn!r}.")
    exprs = tuple(_linear(r, "rate_function") for r in ([rates] if isinstance(rates, str) else rates))
    atom = RateFunction(fn, exprs, convexity, gradient, name, cvxpy, bool(smooth))
    if convexity == "linear":
        return LinearRate(atom.linear_expression()).as_sum()
    return atom.as_sum()


# -- constraints --------------------------------------------------------------------------------
def kld_fairness(group: str, epsilon: float) -> MetricConstraint:
    """``KL(p, ppr_g) <= epsilon`` for every value ``g`` of the group column (``kld[g=a] <= eps``).

    ``p`` is the overall positive proportion, so the constraint keeps every group's positive
    prediction rate near it: a smooth form of demographic parity. The same constraint as
    ``kld(group) <= epsilon``, labelled shorter.

    Parameters
    ----------
    group : str
        The group column to expand over.
    epsilon : float
        Bound on each group's KL-divergence.

    Returns
    -------
    MetricConstraint
        Convex; reads ``kld[group=value] <= epsilon`` once expanded.
    """
    epsilon = _finite(epsilon, "epsilon of kld_fairness")
    if epsilon < 0:
        raise ValueError(f"The epsilon of kld_fairness must be >= 0, got {epsilon:g}: a KL-divergence is never "
                         "negative, so no classifier could meet the constraint.")
    group = parity_columns(group)
    return MetricConstraint(kld(group) - epsilon, f"kld{{slice}} <= {epsilon:g}", Slice.make({}, group))


def g_mean_at_least(value: float, group: str | Iterable[str] | None = None, *,
                    where: dict[str, Any] | None = None, **filters: Any) -> MetricConstraint:
    """``G-mean >= value`` on a slice (one per value of ``group`` when given).

    Parameters
    ----------
    value : float
        Lower bound on ``sqrt(TPR * TNR)``.
    group : str or list of str, optional
        Group columns to expand over: one constraint per value.
    where : dict, optional
        Filters as a dict, for column names that are not valid keywords or that name a
        parameter (``group``).
    **filters
        Group column = value (or list of values) restricting the slice.

    Returns
    -------
    MetricConstraint
        Convex; reads ``g_mean[group=value] >= value`` once expanded.
    """
    value = _finite(value, "value of g_mean_at_least")
    if value > 1:
        raise ValueError(f"The value of g_mean_at_least must be at most 1, got {value:g}: the G-mean "
                         "sqrt(TPR * TNR) lies in [0, 1], so no classifier could meet the constraint.")
    tpr, tnr = rates_on(("tpr", "tnr"), group, where, filters)  # the slice, built once
    return MetricConstraint(GMean(tpr, tnr).as_sum() - (1.0 - value), f"g_mean{{slice}} >= {value:g}",
                            tpr.rates[0].slice)


def predictive_parity(group: str, epsilon: float) -> list[MetricConstraint]:
    """``|precision_g - precision| <= epsilon`` for every value of the group column (ratios).

    Parameters
    ----------
    group : str
        The group column to expand over.
    epsilon : float
        Allowed gap between a group's precision and the overall one.

    Returns
    -------
    list of MetricConstraint
        Two ratio-class constraints, one per side, for ``solver="ratio"`` (which
        ``"auto"`` picks).
    """
    epsilon = _finite(epsilon, "epsilon of predictive_parity")
    group = parity_columns(group)
    gap = precision(group) - precision()
    where = Slice.make({}, group)
    return [MetricConstraint(gap - epsilon, f"precision{{slice}} - precision <= {epsilon:g}", where),
            MetricConstraint(-gap - epsilon, f"precision - precision{{slice}} <= {epsilon:g}", where)]


def f_measure_parity(protected: dict, other: dict, epsilon: float, beta: float = 1.0) -> MetricConstraint:
    """``F(protected) >= F(other) - epsilon`` between two slices given as filter dicts (ratios).

    Parameters
    ----------
    protected, other : dict
        Filters of the two slices, e.g. ``{"sex": "Female"}`` and ``{"sex": "Male"}``.
    epsilon : float
        How far the protected slice's F-measure may fall below the other's.
    beta : float, default=1.0
        Weight of recall against precision in ``F_beta``.

    Returns
    -------
    MetricConstraint
        A ratio-class constraint, for ``solver="ratio"`` (which ``"auto"`` picks).
    """
    epsilon = _finite(epsilon, "epsilon of f_measure_parity")
    for name, value in (("protected", protected), ("other", other)):
        if not isinstance(value, Mapping):
            raise TypeError(f"The {name} slice of f_measure_parity is a dict of group column filters, such as "
                            f"{{'sex': 'Female'}} ({{}} for every row), got {value!r}.")
    # F_other - F_prot - eps = (1 - F_prot) - (1 - F_other) - eps
    # where=: a filter on a column named like a parameter of f_measure ("group", "beta")
    # each slice read once (a generator of values would be empty on a second reading) and
    # written as every slice is: f_measure[g=a|b]
    protected, other = Slice.make(protected), Slice.make(other)
    if protected == other:
        raise ValueError(f"f_measure_parity compares two slices, but both are [{protected}]: every classifier "
                         "would meet it. Pass the protected slice and the one it is compared with.")
    gap = f_measure(beta, where=dict(protected.filters)) - f_measure(beta, where=dict(other.filters))
    label = f"f_measure[{protected}] >= f_measure[{other}] {'-' if epsilon >= 0 else '+'} {abs(epsilon):g}"
    return MetricConstraint(gap - epsilon, label)


def _pr_auc() -> Metric:
    from ._pr_auc import pr_auc  # it builds on this module's atoms

    return pr_auc()


# names denote losses, as the estimator minimises: "f1" is 1 - F1, "precision" 1 - precision
METRICS: dict[str, Callable[[], Metric]] = {
    "error": error, "f1": lambda: f_measure(1.0), "f_measure": lambda: f_measure(1.0),
    "g_mean": g_mean, "h_mean": h_mean, "q_mean": q_mean, "kld": kld,
    "precision": lambda: 1.0 - precision(), "win_loss_ratio": lambda: -ratio(R.wins(), R.losses()),
    "pr_auc": _pr_auc,
}
# rates that are scores (higher is better) and the loss that complements each
SCORE_LOSSES = {"accuracy": "error_rate", "tpr": "fnr", "tnr": "fpr"}
# F-beta by name: "f2", "f0.5", "f.5"
_F_BETA = re.compile(r"f(\d+(?:\.\d*)?|\.\d+)")
# names that need arguments: the constructor to use instead
_NEEDS_ARGUMENTS = {"max": "max_of", "min": "min_of", "max_of": "max_of", "min_of": "min_of"}


def metric_names() -> list[str]:
    """The names ``metric=`` accepts, ``"f<beta>"`` standing for any F-beta."""
    return sorted(METRICS) + ["f<beta>"]


def as_objective(spec: Metric | Expression | Ratio | str) -> Metric:
    """A metric from a name (``"f1"``, ``"F1"``, ``"f0.5"``; names ignore case), a metric, a core
    rate expression or ratio, or its string; a metric given whole (``pr_auc()``) is returned as it is.

    Parameters
    ----------
    spec : str, Metric, Expression or Ratio
        A metric name (see ``MetricOptimizer``'s ``metric``; ``"f<beta>"`` for any F-beta), a
        metric of :mod:`skrate.generalized`, or a rate expression or ratio of
        :mod:`skrate.rates`, as an object or a string (``"fpr + fnr"``).

    Returns
    -------
    Metric
        ``spec`` itself when it is a metric; a named metric as its constructor builds it (a
        :class:`MetricSum`, or a :class:`PRAUC` for ``"pr_auc"``); a rate expression or ratio
        as a one-atom :class:`MetricSum`.

    Raises
    ------
    ValueError
        For an unknown name (listing the known ones and suggesting close matches) or a name that
        needs arguments.
    """
    if isinstance(spec, Metric):
        return spec
    if isinstance(spec, str):
        name = spec.strip().lower()
        if name in METRICS:
            return METRICS[name]()
        beta = _F_BETA.fullmatch(name)
        if beta:
            return f_measure(float(beta.group(1)))
        if name in _NEEDS_ARGUMENTS:
            fn = _NEEDS_ARGUMENTS[name]
            raise ValueError(f"The metric {spec!r} needs the rates it compares: build it with "
                             f"skrate.generalized.{fn}('error_rate[g=a]', 'error_rate[g=b]') (any rate "
                             "expressions) and pass that as the metric.")
    try:
        return _rate_atom(spec).as_sum()
    except (TypeError, ValueError) as exc:
        if getattr(exc, "reason", None) is not None:
            # a rate expression that reads but means nothing (a division by zero): no name is near
            raise ValueError(f"Invalid metric {spec!r}, read as a rate expression: {exc}") from None
        names = dict.fromkeys([*METRICS, *RATE_FUNCTIONS])  # a name in both is suggested once
        close = (difflib.get_close_matches(spec.strip().lower(), list(names), n=3)
                 if isinstance(spec, str) else [])
        hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
        raise ValueError(f"Unknown metric {spec!r}{hint}: give a name among {metric_names()}, a metric such as "
                         "skrate.generalized.f_measure(beta=2), or a rate expression such as 'fpr + fnr' "
                         f"({exc}).") from None


def score_loss(metric: Metric) -> str | None:
    """The loss to minimise instead of ``metric`` when it is a lone score, else None.

    A score is better when higher: one rate such as ``accuracy`` or ``tpr[g=a]`` (its
    complement, ``error_rate`` or ``fnr[g=a]``), one named ratio such as ``precision[g=a]``
    or a ratio of a score to a rate such as ``tpr / fpr`` (their negative), with a positive
    coefficient. Minimising it gives the worst classifier. Sums such as ``"fpr + fnr"`` and
    ratios of losses (``fpr / tpr``) are read as written.
    """
    terms = metric.terms if isinstance(metric, MetricSum) else ()
    if len(terms) != 1 or terms[0][0] <= 0:
        return None
    atom = terms[0][1]
    if isinstance(atom, LinearRate) and len(atom.expr.terms) == 1:
        rate, coef = atom.expr.terms[0]
        if coef > 0 and rate.kind in SCORE_LOSSES:
            return str(Rate(SCORE_LOSSES[rate.kind], rate.slice))
    if isinstance(atom, RatioAtom):
        named = named_ratio(Ratio(atom.numerator, atom.denominator))
        if named is not None and named[2] * named[3] > 0:
            return f"-{atom}"
        if len(atom.numerator.terms) == len(atom.denominator.terms) == 1:
            (num, a), (_, b) = atom.numerator.terms[0], atom.denominator.terms[0]
            if a * b > 0 and num.kind in SCORE_LOSSES:
                return f"-{atom}"
    return None


def refuse_score(spec: Metric | Expression | Ratio | str, metric: Metric, minimised: str) -> None:
    """Raise when ``metric``, read from ``spec``, is a lone score (:func:`score_loss`), naming its
    loss; ``minimised`` says who minimises what (``"MetricOptimizer minimises its metric"``)."""
    loss = score_loss(metric)
    if loss is None:
        return
    name = spec if isinstance(spec, str) else str(metric)
    alone = (" Alone it is minimised by predicting one class everywhere: pair it, as in 'fpr + fnr', or state "
             f"the score as a constraint, as in '{name} >= 0.8'.") if loss.startswith(("fnr", "fpr")) else ""
    raise ValueError(f"{minimised}, and {name!r} is a score (higher is better): minimising it gives the "
                     f"worst classifier. Pass the loss {loss!r} instead.{alone}")


def as_metric(spec: Metric | Expression | Ratio | str) -> MetricSum:
    """:func:`as_objective` as a sum of atoms (what sums and constraints are made of).

    Parameters
    ----------
    spec : str, Metric, Expression or Ratio
        As for :func:`as_objective`.

    Returns
    -------
    MetricSum
        The metric's sum form.

    Raises
    ------
    ValueError
        As :func:`as_objective`.
    TypeError
        For a metric that has no sum form (``pr_auc()``, usable only whole).
    """
    return as_objective(spec).as_sum()
