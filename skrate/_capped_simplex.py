"""Euclidean projection onto the capped simplex, optionally with a floor per group.

The set is ``{w in [0, 1]^n : sum(w) = h}`` (or ``0 <= w_i <= upper_i``: per-entry caps),
intersected with ``{sum_{i in group k} w_i >= floors[k]}`` when groups are given.
"""

from __future__ import annotations

import numpy as np

from .utils._sorting import stable_argsort


# Newton steps tried before the shift is found from all the sorted breakpoints
_NEWTON_STEPS = 12


def _shift(
    v: np.ndarray, h: float, cap: np.ndarray | float = np.inf, upper: np.ndarray | None = None
) -> float:
    """The shift ``tau`` with ``sum_i clip(v_i - min(tau, cap_i), 0, upper_i) = h``
    (``upper_i = 1`` when None).

    The sum ``g`` is continuous, piecewise linear and non-increasing in ``tau``: entry
    ``i`` has slope -1 between ``low_i = min(v_i - upper_i, cap_i)`` and ``high_i =
    min(v_i, cap_i)`` and 0 elsewhere. Newton's method on ``g`` lands on the root once
    it steps within one linear piece, which no breakpoint between the step's ends
    certifies; a step leaving the bracket bisects it. It takes ``O(n)`` per step and a
    few steps (a sort of all ``2n`` breakpoints, :func:`_shift_sorted`, backs it up).
    """
    u = 1.0 if upper is None else upper
    low, high = np.minimum(v - u, cap), np.minimum(v, cap)
    lo, hi = float(low.min()), float(high.max())  # g(lo) = sum(u) >= h >= g(hi)
    # start where the entries' mean mass puts h on the largest ones
    k = min(max(int(np.ceil(h * v.size / (v.size if upper is None else np.sum(upper)))), 1), v.size)
    t = float(np.partition(high, v.size - k)[v.size - k]) - 0.5 * float(np.mean(u))
    for _ in range(_NEWTON_STEPS):
        if not lo < t < hi:
            t = 0.5 * (lo + hi)
        g = float(np.sum(np.clip(v - np.minimum(t, cap), 0.0, u)))
        if g == h:
            return t
        # the slope on the side of t the root lies on: an entry whose breakpoint is t
        # counts on its segment's side only
        if g > h:
            lo, slope = t, np.count_nonzero((low <= t) & (t < high))
        else:
            hi, slope = t, np.count_nonzero((low < t) & (t <= high))
        if not slope:
            t = 0.5 * (lo + hi)
            continue
        step = t + (g - h) / slope
        a, b = min(t, step), max(t, step)
        if not (np.any((low > a) & (low < b)) or np.any((high > a) & (high < b))):
            return step  # g is linear from t to the step: it is the root
        t = step
    return _shift_sorted(v, h, cap, upper)


def _shift_sorted(
    v: np.ndarray, h: float, cap: np.ndarray | float = np.inf, upper: np.ndarray | None = None
) -> float:
    """:func:`_shift` from all ``2n`` sorted breakpoints at once: ``g`` at each by a
    cumulative sum of slope times gap, and ``tau`` interpolated on the bracketing
    segment, in ``O(n log n)``.
    """
    n = v.shape[0]
    low, total = (v - 1.0, n) if upper is None else (v - upper, float(np.sum(upper)))
    breaks = np.concatenate([np.minimum(low, cap), np.minimum(v, cap)])
    # any order of equal breakpoints gives the same sums (their gaps are 0): no stable sort,
    # which cost 7x and every minibatch of a finite weight step
    order = np.argsort(breaks)
    t = breaks[order]
    slope = np.cumsum(np.where(order < n, -1.0, 1.0))
    g = total + np.concatenate([[0.0], np.cumsum(slope[:-1] * np.diff(t))])
    # g is non-increasing from n (at the first breakpoint); bracket h
    j = int(np.searchsorted(-g, -h, side="left"))
    j = min(max(j, 1), 2 * n - 1)
    t_lo, t_hi, g_lo, g_hi = t[j - 1], t[j], g[j - 1], g[j]
    return t_hi if g_lo <= g_hi else t_lo + (g_lo - h) * (t_hi - t_lo) / (g_lo - g_hi)


def _raise_far_below(v, h, floored, upper=None):
    """``v`` with the entries that project to 0 at any value raised to just below the rest.

    Far below the rest (a gradient step along a huge or an inf loss) ``v_i - 1`` rounds
    to ``v_i`` (or is NaN), and the breakpoint sums of :func:`_shift_sorted` lose the entry's
    segment. The shift is at least the ``ceil(h)``-th largest entry minus 1 (there the
    mass is at least ``h``) and each group's at least its ``ceil(floor)``-th largest
    minus 1, so an entry 2 below the least of those is 0 in the projection either way.
    With caps ``upper`` the same holds of the largest entry whose caps and those of the
    larger entries add up to ``h``, less twice the largest cap.
    ``floored`` holds ``(k, members, floor)`` of each group ``k`` with a positive floor,
    ``members`` its mask.
    """
    sets = [(v, h, upper)] if h > 0 else []
    sets += [(v[members], m, None if upper is None else upper[members]) for _, members, m in floored]
    if not sets:
        return v

    def kth_largest(u, m, caps):
        if caps is None:
            k = u.size - int(np.ceil(m))
            return np.partition(u, k)[k]
        order = stable_argsort(-u)
        k = min(int(np.searchsorted(np.cumsum(caps[order]), m)), u.size - 1)
        return u[order[k]]

    reach = 2.0 if upper is None else 2.0 * float(np.max(upper))
    return np.maximum(v, min(kth_largest(u, m, c) for u, m, c in sets) - reach)


def project_capped_simplex(
    v: np.ndarray,
    h: float,
    groups: np.ndarray | None = None,
    floors: np.ndarray | None = None,
    upper: np.ndarray | None = None,
) -> np.ndarray:
    """Project ``v`` onto the capped simplex ``{w : 0 <= w_i <= 1, sum_i w_i = h}``.

    Without groups the projection is ``w_i = clip(v_i - tau, 0, 1)`` for the unique
    shift ``tau`` with ``sum_i clip(v_i - tau, 0, 1) = h``; with caps ``upper`` the
    bounds are ``0 <= w_i <= upper_i`` and the projection ``clip(v_i - tau, 0, upper_i)``. With a floor ``m_k`` of
    mass on each group ``k``, the KKT conditions give each group the shift
    ``min(tau, t_k)``, where ``t_k`` is the shift putting mass ``m_k`` on the group
    alone: a group whose mass at ``tau`` would fall below its floor is held at it.
    Each shift is the root of a piecewise-linear sum, found by Newton's method in a few
    ``O(n)`` steps.

    Parameters
    ----------
    v : ndarray of shape (n,)
        Point to project. Not modified.
    h : float
        Total mass, ``sum(floors) <= h <= n`` (``sum(upper)`` with caps).
    groups : ndarray of int of shape (n,), default=None
        Group index ``0 .. n_groups - 1`` of each entry.
    floors : ndarray of shape (n_groups,), default=None
        Least mass of each group, at most the group's size (the sum of its caps).
        Needs ``groups``.
    upper : ndarray of shape (n,), default=None
        Positive cap of each entry; 1 when None.

    Returns
    -------
    w : ndarray of shape (n,)
        The projection.

    References
    ----------
    .. [1] Aravkin, A. and Davis, D. "A SMART Stochastic Algorithm for Nonconvex
       Optimization with Applications to Robust Machine Learning", 2016
       (the weight block of trimmed estimation lives on this set).
    """
    v = np.asarray(v, dtype=float).ravel()
    n = v.shape[0]
    total = n if upper is None else float(np.sum(upper))
    least = 0.0 if floors is None else float(np.sum(floors))
    if not least <= h <= total:
        raise ValueError(
            f"The capped simplex needs sum(floors) <= h <= {'n' if upper is None else 'sum(upper)'}; "
            f"got h={h} for {'n' if upper is None else 'sum(upper)'}={total}"
            + (f" and sum(floors)={least}." if floors is not None else ".")
        )
    if h == total:
        return np.ones(n) if upper is None else np.array(upper, dtype=float)
    # the members of each group with a floor, found once for both uses below
    floored = []
    if floors is not None:
        positive = np.flatnonzero(np.asarray(floors) > 0)
        floored = [(k, groups == k, float(floors[k])) for k in positive]
    v = _raise_far_below(v, h, floored, upper)
    cap = np.inf
    if floors is not None:
        group_cap = np.full(len(floors), np.inf)
        for k, members, m in floored:
            group_cap[k] = _shift(v[members], m, upper=None if upper is None else upper[members])
        cap = group_cap[groups]
    elif h == 0:
        return np.zeros(n)
    return np.clip(v - np.minimum(_shift(v, h, cap, upper), cap), 0.0, 1.0 if upper is None else upper)
