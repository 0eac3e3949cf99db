"""Rate expressions and constraints: immutable, hashable values.

A basic rate (:class:`Rate`) is a named rate measured on a :class:`~skrate.rates.Slice`.
Linear combinations of basic rates plus a constant form an :class:`Expression`; the
quotient of two expressions (precision, win-loss ratio) is a :class:`Ratio`. Comparing
with ``<=`` or ``>=`` gives a :class:`Constraint`. All of them compare equal by value and
hash, so they survive ``sklearn.base.clone`` and can sit in a ``GridSearchCV`` grid.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from numbers import Real
from typing import Union

from ._slice import Slice

# name -> (what it measures, the label it needs in its slice: None, "0" or "1")
RATE_KINDS: dict[str, tuple[str, str | None]] = {
    "ppr": ("positive prediction rate", None),
    "npr": ("negative prediction rate", None),
    "tpr": ("true positive rate", "1"),
    "fnr": ("false negative rate", "1"),
    "fpr": ("false positive rate", "0"),
    "tnr": ("true negative rate", "0"),
    "accuracy": ("accuracy", None),
    "error_rate": ("error rate", None),
    "tp_proportion": ("proportion of examples that are positive and predicted positive", None),
    "label_rate": ("proportion of positive labels (constant in the model)", None),
    "baseline_ppr": ("positive prediction rate of the baseline (constant in the model)", None),
    "churn": ("proportion of decisions differing from the baseline", None),
    "wins": ("proportion the model gets right and the baseline wrong", None),
    "losses": ("proportion the model gets wrong and the baseline right", None),
}
NEEDS_BASELINE = frozenset({"baseline_ppr", "churn", "wins", "losses"})
NEEDS_LABELS = frozenset({"tpr", "fnr", "fpr", "tnr", "accuracy", "error_rate", "tp_proportion",
                          "label_rate", "wins", "losses"})


def _is_scalar(x) -> bool:
    if not isinstance(x, Real) or isinstance(x, bool):
        return False
    try:
        shown = x = float(x)
    except OverflowError:  # an int (or a Fraction) beyond float's range
        x, shown = math.inf, "a number beyond a float's range"
    if not math.isfinite(x):
        # refused where the constant enters: a NaN bound would otherwise surface deep in a solver
        raise ValueError(f"Rate expressions take finite constants, got {shown}; check the value the constant "
                         "was computed from.")
    return True


def _divisor(term, other) -> float:
    """``other`` as a float, refusing zero with an error that names the dividend."""
    if float(other) == 0.0:
        raise ValueError(f"Division by zero: cannot divide {term} by {other}; divide by a nonzero constant.")
    return float(other)


def _sum(values: list[float]) -> float:
    """Exact sum, with a cancellation to rounding noise (``0.1 + 0.2 - 0.3``) read as 0; a sum or
    a term beyond float's range is refused (an infinite coefficient would read as noise)."""
    try:
        total = math.fsum(values)
    except (OverflowError, ValueError):  # past float's range mid-sum, or inf - inf
        total = math.inf
    if not math.isfinite(total):
        raise ValueError("A coefficient or constant of the rate expression overflows a float; scale the "
                         "expression down.")
    return 0.0 if abs(total) <= 1e-12 * max(map(abs, values), default=0.0) else total


def _num(x: float) -> str:
    """``x`` as written back into a spec: a whole number as an integer (``2``, not ``2.0``) while it
    has no more digits than a float holds, else in its shortest exact form (``1e+30``)."""
    x = float(x)
    return str(int(x)) if x == int(x) and abs(x) < 1e16 else repr(x)


@dataclass(frozen=True)
class Rate:
    """A named basic rate on a slice, e.g. ``tpr`` on ``race=Black``.

    Parameters
    ----------
    kind : str
        The rate's name, one of ``RATE_KINDS`` (``"tpr"``, ``"ppr"``, ``"error_rate"``, ...).
    slice : Slice, default=Slice()
        The examples the rate is measured on; by default all of them.
    """

    kind: str
    slice: Slice = Slice()

    def __post_init__(self):
        if self.kind not in RATE_KINDS:
            raise ValueError(f"Unknown rate {self.kind!r}; known rates: {', '.join(RATE_KINDS)}.")

    @property
    def needs_baseline(self) -> bool:
        """Whether measuring it takes a baseline model's decisions (churn, or a baseline slice)."""
        return self.kind in NEEDS_BASELINE or self.slice.get("baseline") is not None

    def __str__(self) -> str:
        s = str(self.slice)
        return f"{self.kind}[{s}]" if s else self.kind


class _Algebra:
    """Arithmetic and comparisons shared by expressions and ratios."""

    def __le__(self, other):
        return Constraint.make(self, "<=", other)

    def __ge__(self, other):
        return Constraint.make(self, ">=", other)

    def __lt__(self, other):
        raise TypeError("Use <= or >= to state a rate constraint (strict inequalities have no meaning here).")

    __gt__ = __lt__

    def __radd__(self, other):
        return self + other

    def __rsub__(self, other):
        return (-self) + other

    def __rmul__(self, other):
        return self * other

    def __pos__(self):
        return self


@dataclass(frozen=True)
class Expression(_Algebra):
    """``sum_k coef_k * rate_k + constant``, linear in the basic rates.

    Parameters
    ----------
    terms : tuple of (Rate, float), default=()
        The basic rates and their coefficients.
    constant : float, default=0.0
        The constant term.
    """

    terms: tuple[tuple[Rate, float], ...] = ()
    constant: float = 0.0

    @classmethod
    def of(cls, rate: Rate) -> "Expression":
        return cls(((rate, 1.0),), 0.0)

    @classmethod
    def _combine(cls, pairs, constant: float) -> "Expression":
        acc: dict[Rate, list[float]] = {}
        for rate, coef in pairs:
            acc.setdefault(rate, []).append(float(coef))
        terms = tuple(sorted(((r, c) for r, c in ((r, _sum(cs)) for r, cs in acc.items()) if c != 0.0),
                             key=lambda rc: str(rc[0])))
        return cls(terms, float(constant))

    def __add__(self, other):
        if _is_scalar(other):
            return Expression(self.terms, _sum([self.constant, float(other)]))
        if isinstance(other, Expression):
            return Expression._combine(self.terms + other.terms, _sum([self.constant, other.constant]))
        if isinstance(other, Ratio):
            raise TypeError(f"Cannot add the ratio {other} to {self}: ratios only compare with constants.")
        return NotImplemented

    def __neg__(self):
        return self * -1.0

    def __sub__(self, other):
        if _is_scalar(other) or isinstance(other, (Expression, Ratio)):
            return self + (-other)
        return NotImplemented

    def __mul__(self, other):
        if _is_scalar(other):
            return Expression._combine([(r, c * float(other)) for r, c in self.terms], self.constant * float(other))
        if isinstance(other, (Expression, Ratio)):
            raise TypeError(f"Cannot multiply {self} by {other}: rates combine linearly; "
                            "use ratio metrics such as precision() for quotients.")
        return NotImplemented

    def __truediv__(self, other):
        if _is_scalar(other):
            return self * (1.0 / _divisor(self, other))
        if isinstance(other, Expression):
            if not other.terms:
                return self / other.constant
            # Rates lie in [0, 1], so the denominator lies in [low, high]: one never positive is
            # negated on both sides, to keep it non-negative as Constraint.expression requires
            # (1 - ppr is npr, never negative). One that can take both signs is refused: the
            # rearranged constraint would flip with it.
            low = other.constant + sum(min(c, 0.0) for _, c in other.terms)
            high = other.constant + sum(max(c, 0.0) for _, c in other.terms)
            if high <= 0:
                return Ratio(-self, -other)
            if low >= 0:
                return Ratio(self, other)
            raise TypeError(f"Cannot divide by {other}: it can take both signs, and a ratio constraint is "
                            "rearranged as numerator - bound * denominator, which needs a denominator "
                            "of one sign (a sum of rates). Compare the expressions linearly instead.")
        return NotImplemented

    def __rtruediv__(self, other):
        # c / D is the ratio Expression((), c) / D builds: the printed form of a ratio with a
        # constant numerator, (c) / (D), parses back through here
        if _is_scalar(other):
            return Expression((), float(other)) / self
        return NotImplemented

    @property
    def rates(self) -> tuple[Rate, ...]:
        return tuple(r for r, _ in self.terms)

    def bind(self, assignment: dict[str, str]) -> "Expression":
        return Expression._combine([(Rate(r.kind, r.slice.bind(assignment)), c) for r, c in self.terms], self.constant)

    def __str__(self) -> str:
        out = ""
        # Positive terms first reads naturally ("tpr[a] - tpr"); order does not affect equality.
        for rate, coef in sorted(self.terms, key=lambda rc: rc[1] < 0):
            sign = "-" if coef < 0 else "+"
            mag = abs(coef)
            body = str(rate) if mag == 1.0 else f"{_num(mag)} * {rate}"
            out += (f" {sign} " if out else ("-" if sign == "-" else "")) + body
        if self.constant != 0.0 or not out:
            if out:
                out += f" {'-' if self.constant < 0 else '+'} {_num(abs(self.constant))}"
            else:
                out = _num(self.constant)
        return out

    def __repr__(self) -> str:
        return f"parse_expression({str(self)!r})"  # evaluable with skrate.rates' names, unlike the bare fields


@dataclass(frozen=True)
class Ratio(_Algebra):
    """``numerator / denominator`` of two expressions (precision, win-loss ratio).

    A ratio enters a constraint only against a constant ``c``, through the exact
    rearrangement ``numerator - c * denominator >= 0`` (valid since the denominator, a rate,
    is non-negative), as in Cotter et al. (2019), Section 2. Scaling a ratio by a constant
    therefore scales its numerator and leaves the denominator non-negative.

    Parameters
    ----------
    numerator : Expression
        The expression divided.
    denominator : Expression
        The expression divided by; non-negative for every model (a sum of rates).
    """

    numerator: Expression
    denominator: Expression

    def __mul__(self, other):
        if _is_scalar(other):
            return Ratio(self.numerator * other, self.denominator)
        raise TypeError(f"A ratio ({self}) can only be scaled by a constant.")

    def __truediv__(self, other):
        if _is_scalar(other):
            # Scale the numerator, never the denominator: a negative divisor there would
            # flip the direction of the rearranged constraint.
            return self * (1.0 / _divisor(self, other))
        raise TypeError(f"A ratio ({self}) can only be divided by a constant.")

    def __rtruediv__(self, other):
        raise TypeError(f"Cannot divide by the ratio {self}: a ratio can only be scaled by a constant "
                        "and compared with one.")

    def __neg__(self):
        return self * -1.0

    def __add__(self, other):
        raise TypeError(f"Cannot add to the ratio {self}: ratios only compare with constants.")

    __sub__ = __add__

    def bind(self, assignment: dict[str, str]) -> "Ratio":
        return Ratio(self.numerator.bind(assignment), self.denominator.bind(assignment))

    @property
    def rates(self) -> tuple[Rate, ...]:
        return self.numerator.rates + self.denominator.rates

    def __str__(self) -> str:
        from ._functions import display_ratio

        return display_ratio(self)

    def __repr__(self) -> str:
        return f"parse_expression({str(self)!r})"  # evaluable with skrate.rates' names, unlike the bare fields


Term = Union[Expression, Ratio]
_FLIPPED = {"<=": ">=", ">=": "<="}  # the comparison read from its other side


def _lift(x) -> Term:
    if _is_scalar(x):
        return Expression((), float(x))
    if isinstance(x, Rate):
        return Expression.of(x)
    if isinstance(x, (Expression, Ratio)):
        return x
    raise TypeError(f"Expected a rate expression or a number, got {type(x).__name__}: {x!r}.")


@dataclass(frozen=True)
class Constraint:
    """``lhs <= rhs`` or ``lhs >= rhs`` between rate expressions.

    Parameters
    ----------
    lhs : Expression or Ratio
        The left-hand side.
    op : {"<=", ">="}
        The comparison.
    rhs : Expression or Ratio
        The right-hand side; a ratio on either side is compared with a constant only.

    Attributes
    ----------
    expression : Expression
        The canonical form ``g <= 0`` that the solvers work with. For a ratio ``N / D``
        compared with ``c`` it is the exact linear rearrangement ``c * D - N <= 0``
        (for ``>=``) or ``N - c * D <= 0`` (for ``<=``).
    """

    lhs: Term
    op: str
    rhs: Term

    @classmethod
    def make(cls, lhs, op: str, rhs) -> "Constraint":
        if op not in ("<=", ">="):
            raise ValueError(f"A constraint compares with <= or >=, got {op!r}.")
        lhs, rhs = _lift(lhs), _lift(rhs)
        if isinstance(lhs, Expression) and not lhs.terms and (isinstance(rhs, Ratio) or rhs.terms):
            # '0.5 <= tpr' is 'tpr >= 0.5', as Python reads it: one constraint, written one way
            lhs, op, rhs = rhs, _FLIPPED[op], lhs
        con = cls(lhs, op, rhs)
        con.expression  # validate ratio placement now, not at fit time
        return con

    @property
    def ratio(self) -> Ratio | None:
        """The ratio side (``precision`` in ``precision >= 0.8``), None without one; a ratio
        compares only with a constant, so a constraint has at most one."""
        return next((t for t in (self.lhs, self.rhs) if isinstance(t, Ratio)), None)

    @property
    def ratio_bound(self) -> tuple[Ratio, str, Term] | None:
        """``(ratio, op, other)``: the constraint read with its ratio side on the left
        (``0.8 <= precision`` is ``(precision, ">=", 0.8)``), None without a ratio side."""
        ratio = self.ratio
        if ratio is None:
            return None
        return (ratio, self.op, self.rhs) if ratio is self.lhs else (ratio, _FLIPPED[self.op], self.lhs)

    @property
    def expression(self) -> Expression:
        lhs, rhs = self.lhs, self.rhs
        if self.ratio is not None:
            if isinstance(lhs, Ratio) and isinstance(rhs, Ratio):
                raise TypeError(f"Cannot compare two ratios ({lhs} and {rhs}); compare a ratio with a constant.")
            ratio, op, other = self.ratio_bound
            if other.terms:
                raise TypeError(f"A ratio ({ratio}) can only be compared with a constant, not with {other}.")
            # ratio <= c  <=>  N - c D <= 0 ;  ratio >= c  <=>  c D - N <= 0
            diff = ratio.numerator - ratio.denominator * other.constant
            return diff if op == "<=" else -diff
        return lhs - rhs if self.op == "<=" else rhs - lhs

    @property
    def rates(self) -> tuple[Rate, ...]:
        return self.lhs.rates + self.rhs.rates

    @property
    def expand_keys(self) -> tuple[str, ...]:
        return tuple(sorted({k for r in self.rates for k in r.slice.expand}))

    def expand(self, values: dict[str, list[str]]) -> list["Constraint"]:
        """One constraint per combination of values of the expanded group columns.

        Parameters
        ----------
        values : dict of str to list of str
            The values of each group column in ``expand_keys``.

        Returns
        -------
        list of Constraint
            One constraint per combination, its rates on the combination's values; ``[self]``
            when the constraint expands over no column.
        """
        keys = self.expand_keys
        if not keys:
            return [self]
        out = []
        for combo in itertools.product(*(values[k] for k in keys)):
            assignment = dict(zip(keys, combo))
            out.append(Constraint(self.lhs.bind(assignment), self.op, self.rhs.bind(assignment)))
        return out

    def __bool__(self):
        # ``a <= b <= c`` is ``(a <= b) and (b <= c)`` in Python: a truthy constraint would
        # silently drop all but the last comparison.
        raise TypeError(f"A constraint ({self}) has no truth value. A chained comparison a <= b <= c "
                        "is two constraints: pass them as a list, [a <= b, b <= c].")

    def __str__(self) -> str:
        return f"{self.lhs} {self.op} {self.rhs}"

    def __repr__(self) -> str:
        return f"parse_constraint({str(self)!r})"  # evaluable with skrate.rates' names, unlike the bare fields
