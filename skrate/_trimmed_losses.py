"""Per-sample losses and penalties of trimmed linear M-estimation.

The losses ``f_i`` of a linear model's scores, with their derivatives and curvature
(:func:`linear_loss`, :func:`loss_curvature`, ``CURVATURE``), and the penalties ``R``
of its coefficients, with their values and prox (:func:`penalty_value`,
:func:`penalty_prox`, :func:`penalty_weight`). Plain functions over arrays.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.special import expit

from skrate._prox import elastic_net_penalty, elastic_net_prox

# Bound on the second derivative of each loss in the score: the Lipschitz constant of
# grad f_i is CURVATURE[loss] * ||(x_i, 1)||^2.
CURVATURE = {"squared": 1.0, "logistic": 0.25, "multinomial": 0.5}


# --------------------------------------------------------------------------- losses
def linear_loss(loss: str, S: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample losses and their derivatives in the scores.

    Parameters
    ----------
    loss : {"squared", "logistic", "multinomial"}
    S : ndarray of shape (m, K)
        Scores; ``K = 1`` for "squared" and "logistic".
    Y : ndarray
        Targets: real values (m,) for "squared", labels in {-1, +1} (m,) for
        "logistic", a one-hot matrix (m, K) for "multinomial".

    Returns
    -------
    losses : ndarray of shape (m,)
    dS : ndarray of shape (m, K)
        ``d f_i / d s_i``; for a linear model the gradient of ``f_i`` is
        ``x_i^T dS_i`` (and ``dS_i`` for the intercept), so tables store ``dS`` only.
    """
    if loss == "squared":
        r = S[:, 0] - Y
        # a gross target (|r| > 1e154) has an inf loss: still ranked last, so trimmed
        with np.errstate(over="ignore"):
            return 0.5 * r * r, r[:, None]
    if loss == "logistic":
        z = Y * S[:, 0]
        return np.logaddexp(0.0, -z), (-Y * expit(-z))[:, None]
    # log-sum-exp by hand: scipy's array-API wrapper costs more than the maths here
    shifted = S - S.max(axis=1, keepdims=True)
    E = np.exp(shifted)
    total = E.sum(axis=1, keepdims=True)
    return (np.log(total) - np.sum(shifted * Y, axis=1, keepdims=True))[:, 0], E / total - Y


def loss_curvature(loss: str, S: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Second derivatives ``d^2 f_i / d s_ik^2`` of the losses in their scores.

    Parameters
    ----------
    loss : {"squared", "logistic", "multinomial"}
    S : ndarray of shape (m, K)
        Scores, as for :func:`linear_loss`.
    Y : ndarray
        Targets, as for :func:`linear_loss`.

    Returns
    -------
    ndarray of shape (m, K)
        At most ``CURVATURE[loss]``: 1, ``p (1 - p)`` for the probability ``p`` of
        the label, ``p_k (1 - p_k)`` for that of class ``k``.
    """
    if loss == "squared":
        return np.ones_like(S)
    if loss == "logistic":
        p = expit(Y * S[:, 0])
        return (p * (1.0 - p))[:, None]
    E = np.exp(S - S.max(axis=1, keepdims=True))
    p = E / E.sum(axis=1, keepdims=True)
    return p * (1.0 - p)


# ------------------------------------------------------------------------- penalties
# l1 / l2 share the elastic-net prox of skrate._prox (l1_ratio 1 / 0); l0 is the
# non-convex option, prox by hard thresholding.
_L1_RATIO = {"l1": 1.0, "l2": 0.0}
# Degree p of homogeneity, R(c W) = c^p R(W): rescaling the target by c rescales the
# minimiser by c when alpha is rescaled by c^(p - 2) ("none": any p)
PENALTY_DEGREE = {"l2": 2, "l1": 1, "l0": 0, "none": 2}


def hard_threshold(x: np.ndarray, t: float) -> np.ndarray:
    """Prox of ``t * ||.||_0`` (non-convex): keep entries with ``x^2 > 2 t``."""
    return np.where(x * x > 2.0 * t, x, 0.0)


def penalty_value(penalty: str, W: np.ndarray) -> float:
    """``R(W)``: ``||W||^2 / 2``, ``||W||_1``, ``||W||_0`` or 0."""
    if penalty in _L1_RATIO:
        return elastic_net_penalty(W.ravel(), 1.0, _L1_RATIO[penalty])
    if penalty == "l0":
        return float(np.count_nonzero(W))
    return 0.0


def penalty_prox(penalty: str, t: float | np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Prox of ``t * R``, as a function of ``W``; an array ``t`` weights each coordinate."""
    if penalty in _L1_RATIO:
        return elastic_net_prox(t, 1.0, _L1_RATIO[penalty])
    if penalty == "l0":
        return lambda W: hard_threshold(W, t)
    return lambda W: W


def penalty_weight(alpha: float, scale: np.ndarray) -> np.ndarray:
    """``alpha / scale**2``: the weight of a coefficient's penalty taken in the original units
    of a column that was divided by ``scale``. A scale beyond ``1e154`` gives 0 (no penalty, to
    the precision of floats) and one below ``1e-154`` inf (the coefficient is held at 0),
    without overflow warnings."""
    with np.errstate(over="ignore", divide="ignore"):
        return alpha / scale / scale
