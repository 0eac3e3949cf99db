"""The atoms beyond a core rate expression or ratio: the F-measure, the means of two rates,
KL-divergence, the max of rates and user functions of rates."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.special import rel_entr

from ..exceptions import UndefinedRateError
from ..problem._evaluate import ratio_value
from ..rates import Expression
from ._metric import _EPS, Atom, _bind_exprs, _not_linear


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

    def exact_value(self, r: np.ndarray) -> float | np.ndarray:
        r = np.asarray(r, dtype=float)
        return 1.0 - (1 + self.beta ** 2) * ratio_value(r[0], self._den(r))

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

    def stack_key(self) -> Hashable | None:
        return type(self), self.beta

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
