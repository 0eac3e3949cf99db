"""Proximal operators of the L1, L2 and elastic-net penalties.

The elastic-net penalty follows scikit-learn's convention::

    alpha * (l1_ratio * ||w||_1 + (1 - l1_ratio) / 2 * ||w||_2^2)

so ``l1_ratio=0`` is the (halved) ridge penalty and ``l1_ratio=1`` the lasso.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["elastic_net_penalty", "elastic_net_prox", "prox_elastic_net", "soft_threshold"]


def soft_threshold(v: np.ndarray, threshold: float | np.ndarray) -> np.ndarray:
    """Soft-thresholding, the proximal operator of ``threshold * ||.||_1``.

    Parameters
    ----------
    v : ndarray
        Point to shrink.
    threshold : float or ndarray broadcastable to ``v``
        Non-negative threshold; an array gives each coordinate its own (the prox of
        a weighted L1 norm).

    Returns
    -------
    ndarray
        ``sign(v) * max(|v| - threshold, 0)``, a new array.
    """
    return _shrink(v, _checked(threshold))


def _checked(threshold: float | np.ndarray) -> float | np.ndarray:
    if np.any(np.asarray(threshold) < 0):
        raise ValueError(f"threshold must be non-negative, got {threshold}.")
    return threshold


def _shrink(v: np.ndarray, threshold: float | np.ndarray) -> np.ndarray:
    return np.sign(v) * np.maximum(np.abs(v) - threshold, 0.0)


def elastic_net_penalty(w: np.ndarray, alpha: float, l1_ratio: float) -> float:
    """Value of ``alpha * (l1_ratio * ||w||_1 + (1 - l1_ratio) / 2 * ||w||_2^2)``.

    Parameters
    ----------
    w : ndarray
        Coefficients.
    alpha : float
        Overall penalty strength (>= 0).
    l1_ratio : float
        Share of the L1 part, in [0, 1].

    Returns
    -------
    float
    """
    return float(alpha * (l1_ratio * np.abs(w).sum() + 0.5 * (1.0 - l1_ratio) * (w @ w)))


def prox_elastic_net(
    v: np.ndarray, step: float | np.ndarray, alpha: float, l1_ratio: float
) -> np.ndarray:
    """Proximal operator of ``step`` times the elastic-net penalty.

    Solves ``argmin_w ||w - v||^2 / 2 + step * elastic_net_penalty(w, alpha, l1_ratio)``,
    whose closed form is soft-thresholding followed by a ridge shrinkage.

    Parameters
    ----------
    v : ndarray
        Point to map.
    step : float or ndarray broadcastable to ``v``
        Step size (>= 0); an array gives each coordinate its own, which is the
        prox of a coordinate-weighted penalty.
    alpha : float
        Overall penalty strength (>= 0).
    l1_ratio : float
        Share of the L1 part, in [0, 1].

    Returns
    -------
    ndarray
        The minimiser, a new array.

    References
    ----------
    Parikh, N. and Boyd, S. Proximal Algorithms. Foundations and Trends in Optimization
    1(3), 2014, Sec. 6.5.3.
    """
    return elastic_net_prox(step, alpha, l1_ratio)(v)


def elastic_net_prox(step: float | np.ndarray, alpha: float,
                     l1_ratio: float) -> Callable[[np.ndarray], np.ndarray]:
    """:func:`prox_elastic_net` at a fixed ``step``, ``alpha`` and ``l1_ratio``, as a function
    of ``v``: its threshold and shrinkage factors (per coordinate for an array ``step``) are
    computed once, for the stochastic solvers' many minibatch steps.

    Parameters
    ----------
    step : float or ndarray
        Step size (>= 0), as for :func:`prox_elastic_net`.
    alpha : float
        Overall penalty strength (>= 0).
    l1_ratio : float
        Share of the L1 part, in [0, 1].

    Returns
    -------
    callable
        ``v -> prox_elastic_net(v, step, alpha, l1_ratio)``.
    """
    threshold = _checked(step * alpha * l1_ratio) if l1_ratio > 0 else None
    # no ridge part at l1_ratio=1, even at an infinite step (a coefficient held at 0), where
    # inf * 0 would be NaN
    shrinkage = 1.0 + step * alpha * (1.0 - l1_ratio) if l1_ratio < 1 else 1.0

    def prox(v: np.ndarray) -> np.ndarray:
        return (v if threshold is None else _shrink(v, threshold)) / shrinkage

    return prox
