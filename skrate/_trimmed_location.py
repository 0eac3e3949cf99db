"""The trimmed location and scale of a sample: those of its ``h`` values with the least spread.

:func:`trimmed_location` is the least trimmed squares estimate of a constant (with sample
weights, of values with masses), which values as gross as the largest floats do not move.
The trimmed regressor centres and scales its targets by it, and SMART starts its
intercept there. :func:`_fill`, the greedy pour of a mass over capped entries, also
serves the weighted selection of :class:`~skrate._trimmed_problem.TrimmedProblem`.
"""

from __future__ import annotations

import numpy as np

from skrate.utils._binary import power_of_two_above


def _outward_cumsum(v: np.ndarray, m: int) -> np.ndarray:
    """Partial sums of ``v`` outward from entry ``m``: ``c[j] - c[i]`` is ``sum(v[i:j])``, and
    never subtracts entries beyond ``i:j``, so gross values at the ends cannot cancel the ones
    in between (``c[m] = 0``)."""
    c = np.zeros(v.size + 1)
    c[m + 1 :] = np.cumsum(v[m:])
    c[:m] = -np.cumsum(v[:m][::-1])[::-1]
    return c


def _fill(caps: np.ndarray, mass: float) -> np.ndarray:
    """The weight each entry takes when ``mass`` is poured over them in order, each up to its cap:
    the greedy minimiser of a linear cost over ``{0 <= w <= caps, sum w = mass}`` with the
    entries sorted by cost (the last one taken in part)."""
    return np.clip(mass - (np.cumsum(caps) - caps), 0.0, caps)


def _weighted_trimmed_location(y, weights, h, centre):
    """:func:`trimmed_location` of values ``y`` of masses ``weights``, keeping mass ``h``
    (the last value kept in part). The spread of a window of mass ``h`` is concave as the
    window slides between two values, so the least is at a window that starts or ends at
    a value's edge: those ``2n`` windows are compared."""
    if not centre:
        order = np.argsort(np.abs(y), kind="stable")
        a = np.abs(y)[order]
        kept = _fill(weights[order], h)
        unit = power_of_two_above(a[kept > 0][-1])
        return 0.0, float(np.sqrt(kept @ (a / unit) ** 2 / h) * unit)
    order = np.argsort(y, kind="stable")
    ys, s = y[order], weights[order]
    C = np.concatenate([[0.0], np.cumsum(s)])  # mass before each value
    m = int(np.searchsorted(C, C[-1] / 2, side="right")) - 1  # the weighted median's value
    z = ys - ys[m]
    unit = power_of_two_above(np.median(np.abs(z)))
    z = z / unit
    starts = np.concatenate([C[:-1], C[1:] - h])
    starts = np.clip(starts, 0.0, C[-1] - h)

    def mass_sums(v):
        """Sums of ``s * v`` over every window ``[a, a + h]`` of mass, ``a`` in ``starts``."""
        c = _outward_cumsum(s * v, m)

        def upto(t):  # the sum over mass [0, t], less that over [0, C[m]]
            k = np.clip(np.searchsorted(C, t, side="right") - 1, 0, v.size - 1)
            return c[k] + (t - C[k]) * v[k]

        return upto(starts + h) - upto(starts)

    with np.errstate(over="ignore", invalid="ignore"):
        s1, s2 = mass_sums(z), mass_sums(z * z)
        spread = s2 - s1 * s1 / h
    j = np.argmin(np.where(np.isnan(spread), np.inf, spread))
    return float(ys[m] + s1[j] / h * unit), float(np.sqrt(max(spread[j], 0.0) / h) * unit)


def trimmed_location(
    y: np.ndarray, h: float, centre: bool = True, weights: np.ndarray | None = None
) -> tuple[float, float]:
    """Location and scale of the ``h`` values of ``y`` with the least spread.

    With ``centre``, the mean of the ``h`` consecutive sorted values with the least sum
    of squared deviations from their mean, and the root mean square of those deviations
    (the least trimmed squares location and scale); without, 0 and the root mean square
    of the ``h`` values smallest in magnitude. The other values, however gross (up to
    the largest floats), move neither. With ``weights``, each value has that mass, and
    ``h`` is the mass kept (a value may be kept in part).
    """
    if weights is not None:
        return _weighted_trimmed_location(y, weights, h, centre)
    h = int(h)
    if not centre:
        kept = np.partition(np.abs(y), h - 1)[:h]
        unit = power_of_two_above(kept[-1])  # squares of the kept values cannot overflow
        return 0.0, float(np.sqrt(np.mean((kept / unit) ** 2)) * unit)
    ys = np.sort(y)
    m = ys.size // 2
    z = ys - ys[m]  # centred at the median: no cancellation in s2 - s1^2 / h
    # in units of the median deviation, which gross values do not move: squares of targets
    # beyond 1e154 overflowed (below 1e-162, underflowed), and every window read alike
    unit = power_of_two_above(np.median(np.abs(z)))
    z = z / unit

    def window_sums(v):
        c = _outward_cumsum(v, m)
        return c[h:] - c[:-h]

    with np.errstate(over="ignore", invalid="ignore"):
        s1 = window_sums(z)
        s2 = window_sums(z * z)
        spread = s2 - s1 * s1 / h  # h times the variance of each window
    j = np.argmin(np.where(np.isnan(spread), np.inf, spread))  # NaN: inf - inf, gross values
    return float(ys[m] + s1[j] / h * unit), float(np.sqrt(max(spread[j], 0.0) / h) * unit)
