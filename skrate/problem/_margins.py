"""Confidence margins: tighten constraints by the sampling error of their rate estimates."""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from ..rates import Constraint
from ._compile import RateData, slice_mask


def confidence_margins(constraints: list[Constraint], data: RateData, confidence: float) -> np.ndarray:
    """A margin per constraint so that, met with it on ``data``, it holds on new data.

    A basic rate on a slice of effective size ``n_k = (sum w)^2 / sum w^2`` is a mean of
    indicators, so its standard deviation is at most ``0.5 / sqrt(n_k)``. By the triangle
    inequality the constraint ``g = sum_k a_k r_k + c`` has standard deviation at most
    ``s = sum_k |a_k| 0.5 / sqrt(n_k)`` whatever the correlations between its rates (overlapping
    slices), and the margin is ``z * s`` with ``z`` the one-sided normal quantile of
    ``confidence``. Meeting ``g + margin <= 0`` on ``data`` then implies ``g <= 0`` in the
    population with probability about ``confidence`` for each constraint (normal approximation,
    for a model chosen independently of ``data``).
    """
    z = norm.ppf(confidence)
    out = np.zeros(len(constraints))
    for j, con in enumerate(constraints):
        for rate, coef in con.expression.terms:
            w = data.sample_weight[slice_mask(rate, data)]
            n_eff = w.sum() ** 2 / np.square(w).sum() if w.size and w.sum() > 0 else 0.0
            if n_eff == 0:
                raise ValueError(f"The rate {rate} in '{con}' has no rows to estimate a margin from.")
            out[j] += abs(coef) * 0.5 / np.sqrt(n_eff)
    return z * out
