"""Differentiable stand-ins for the indicator 1[f > 0] in a weighted sum of rates.

For a combined coefficient ``c_i`` on example i, the surrogate replaces ``c_i 1[f_i > 0]`` by
an upper bound on it: for ``c_i > 0`` an upper bound of the indicator (hinge ``max(0, 1 + f)``,
logistic ``log2(1 + e^f)``), for ``c_i < 0`` a lower bound (``1 - max(0, 1 - f)``,
``1 - log2(1 + e^-f)``). ``sigmoid`` uses ``sigma(f)`` on both sides (no bound, smooth).
Cotter et al. (2019), Section 4.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

SURROGATES = ("hinge", "logistic", "sigmoid")
_LN2 = np.log(2.0)


def surrogate_grad(scores: np.ndarray, coef: np.ndarray, kind: str) -> np.ndarray:
    """Derivative of the surrogate of ``sum_i coef_i 1[scores_i > 0]`` with respect to the scores.

    Parameters
    ----------
    scores : ndarray of shape (n_samples,)
        The model's scores ``f_i``.
    coef : ndarray of shape (n_samples,)
        The combined coefficient ``c_i`` of each example's indicator; for the hinge and the
        logistic, its sign picks an upper (``c_i > 0``) or a lower bound of the indicator.
    kind : {"hinge", "logistic", "sigmoid"}
        The surrogate.

    Returns
    -------
    ndarray of shape (n_samples,)
        ``coef_i`` times the slope of example i's surrogate at ``scores_i``.

    Raises
    ------
    ValueError
        For an unknown ``kind``.
    """
    pos = coef > 0
    if kind == "hinge":
        slope = np.where(pos, scores > -1.0, scores < 1.0)
    elif kind == "logistic":
        slope = expit(np.where(pos, scores, -scores)) / _LN2  # one expit, of the side each row takes
    elif kind == "sigmoid":
        s = expit(scores)
        slope = s * (1.0 - s)
    else:
        raise ValueError(f"Unknown surrogate {kind!r}; choose from {SURROGATES}.")
    return coef * slope


def surrogate_bounds(scores: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Each example's upper and lower stand-in for the indicator ``1[scores_i > 0]``.

    Parameters
    ----------
    scores : ndarray of shape (n_samples,)
        The model's scores ``f_i``.
    kind : {"hinge", "logistic", "sigmoid"}
        The surrogate.

    Returns
    -------
    upper : ndarray of shape (n_samples,)
        The bound taken on a positive coefficient (``max(0, 1 + f)``, ``log2(1 + e^f)``).
    lower : ndarray of shape (n_samples,)
        The bound taken on a negative coefficient (``1 - max(0, 1 - f)``,
        ``1 - log2(1 + e^-f)``); ``sigmoid`` gives ``sigma(f)`` for both.

    Raises
    ------
    ValueError
        For an unknown ``kind``.
    """
    if kind == "hinge":
        return np.maximum(0.0, 1.0 + scores), 1.0 - np.maximum(0.0, 1.0 - scores)
    if kind == "logistic":
        return np.logaddexp(0.0, scores) / _LN2, 1.0 - np.logaddexp(0.0, -scores) / _LN2
    if kind == "sigmoid":
        value = expit(scores)
        return value, value
    raise ValueError(f"Unknown surrogate {kind!r}; choose from {SURROGATES}.")


def surrogate_value(scores: np.ndarray, coef: np.ndarray, kind: str) -> float:
    """The surrogate of ``sum_i coef_i 1[scores_i > 0]`` (for monitoring and gradient checks).

    Parameters
    ----------
    scores : ndarray of shape (n_samples,)
        The model's scores ``f_i``.
    coef : ndarray of shape (n_samples,)
        The combined coefficient ``c_i`` of each example's indicator; for the hinge and the
        logistic, its sign picks an upper (``c_i > 0``) or a lower bound of the indicator.
    kind : {"hinge", "logistic", "sigmoid"}
        The surrogate.

    Returns
    -------
    float
        ``sum_i coef_i s_i(scores_i)``, ``s_i`` example i's stand-in for the indicator.

    Raises
    ------
    ValueError
        For an unknown ``kind``.
    """
    upper, lower = surrogate_bounds(scores, kind)
    val = np.where(coef > 0, upper, lower)
    return float(coef @ val)
