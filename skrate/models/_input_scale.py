"""Powers of two that bring input columns in extreme units near unit size."""

from __future__ import annotations

from typing import Callable

import numpy as np

# Columns whose largest magnitude lies within [1/_BAND, _BAND] are left as they are: one-hot and
# standardised columns, and most counts. A column in cents or in micro-units is not: a step of a
# first-order method moves every weight by about the same amount, which for a column of size 1e6
# moves the scores by 1e6 times as much as for its neighbours.
_BAND = 2.0**5


def input_scale(X: np.ndarray) -> np.ndarray | None:
    """Per-column divisors for the game solvers' model inputs, or None when no column needs one.

    A column whose largest magnitude is outside ``[2**-5, 2**5]`` (and not 0) is divided by the
    power of two nearest its root mean square; every other column by 1. Division by a power of
    two is exact, so a column rescaled by a power of two is fitted exactly as before.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Finite training inputs.

    Returns
    -------
    ndarray of shape (n_features,) or None
        The divisor of each column (1 for the columns left as they are), or None when every
        column is left as it is.
    """
    peak = np.abs(X).max(axis=0) if X.shape[0] else np.zeros(X.shape[1])
    out = ((peak > _BAND) | (peak < 1.0 / _BAND)) & (peak > 0)
    if not out.any():
        return None
    _, top = np.frexp(peak[out])  # peak < 2**top: X * 2**-top lies in (-1, 1), exactly
    rms = np.sqrt(np.mean(np.ldexp(X[:, out], -top) ** 2, axis=0))
    scale = np.ones(X.shape[1])
    # within the normal range, so that the divisor and its inverse are finite powers of two
    scale[out] = np.ldexp(1.0, np.clip(top + np.round(np.log2(rms)).astype(int), -1021, 1023))
    return scale


def folding_callback(callback: Callable | None, unscale: Callable[[np.ndarray, np.ndarray], np.ndarray],
                     scale: np.ndarray | None) -> Callable | None:
    """``callback(iteration, params, values)`` as the user wrote it, handed the parameters of a
    game on ``X / scale`` folded back onto ``X`` by ``unscale(params, scale)`` (a model's
    ``unscale``); the callback itself when there is nothing to fold.

    Parameters
    ----------
    callback : callable or None
        The user's ``callback(iteration, params, values)``.
    unscale : callable
        ``unscale(thetas, scale)``, parameters of shape (k, n_params) fitted on ``X / scale``
        as parameters on ``X`` (a model's ``unscale``).
    scale : ndarray of shape (n_features,) or None
        The column divisors of :func:`input_scale`; None when the game plays on ``X`` itself.

    Returns
    -------
    callable or None
        A callback handing ``callback`` the folded parameters, or ``callback`` itself when it
        is None or ``scale`` is None.
    """
    if callback is None or scale is None:
        return callback
    return lambda iteration, params, values: callback(iteration, unscale(params[None], scale)[0], values)
