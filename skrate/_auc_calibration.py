"""Increasing sigmoid calibration of scores (Platt scaling) and a row reservoir for streaming."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

__all__ = ["PlattCalibration", "RowReservoir", "fit_platt"]

_MIN_SLOPE = 1e-6  # of the standardised score; keeps the map strictly increasing


class PlattCalibration:
    """``P(y=1 | s) = expit(slope * (s + offset))`` with ``slope > 0``."""

    def __init__(self, slope: float, offset: float):
        self.slope = float(slope)
        self.offset = float(offset)

    def __call__(self, scores: np.ndarray) -> np.ndarray:
        return expit(self.slope * (scores + self.offset))


def fit_platt(scores: np.ndarray, y: np.ndarray, max_steps: int = 50,
              weight: np.ndarray | None = None) -> PlattCalibration:
    """Fit ``expit(a s + b)`` to 0/1 labels by Newton's method, with ``a`` kept positive.

    Uses Platt's smoothed targets ``(n_+ + 1) / (n_+ + 2)`` and ``1 / (n_- + 2)`` so the fit is
    finite on separable scores. When all scores are equal the slope is 1 and the offset puts
    the (constant) probability at the smoothed positive rate. With row weights (in the user's
    units, so that a weight ``k`` is ``k`` repeated rows) ``n_+`` and ``n_-`` are the classes'
    total weights, and the likelihood, the mean and the spread of the scores are weighted: the
    smoothing reads the weights as counts, so weights scaled down to a total near 1 pull the
    targets, and the probabilities, towards 1/2 (as that many rows would).

    References
    ----------
    Platt, J. Probabilistic Outputs for Support Vector Machines and Comparisons to
    Regularized Likelihood Methods. Advances in Large Margin Classifiers, 1999.
    """
    v = np.ones(len(y)) if weight is None else weight
    n_pos = float(v[y == 1].sum())
    n_neg = float(v[y != 1].sum())  # not the total less n_pos: that loses a light class to rounding
    t = np.where(y == 1, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))
    prior_logit = np.log((n_pos + 1.0) / (n_neg + 1.0))  # of the smoothed rate, which can round to 1
    # the likelihood's minimiser does not depend on the weights' scale: mean 1 keeps the Newton
    # system's sums (squared in its determinant) in range for weights of any size
    v = v / v.mean()
    center = float(np.average(scores, weights=v))
    spread = float(np.sqrt(np.average((scores - center) ** 2, weights=v)))
    if not spread > 1e-12 * max(1.0, abs(center)):
        return PlattCalibration(1.0, prior_logit - center)
    z = (scores - center) / spread
    zz = z * z

    def nll(u):
        return float(v @ (np.logaddexp(0.0, u) - t * u))

    # Newton on (slope, intercept) of the standardised score, the 2 x 2 system solved by hand
    # (this runs at every fit, so small-n fits are dominated by per-call overhead)
    ridge = 1e-12  # keeps the 2 x 2 system regular
    theta = np.array([0.0, prior_logit])
    u = np.full_like(z, prior_logit)
    current = nll(u)
    for _ in range(max_steps):
        prob = expit(u)
        r, w = v * (prob - t), v * prob * (1.0 - prob)
        g0, g1 = float(z @ r), float(r.sum())
        h00, h01, h11 = float(zz @ w) + ridge, float(z @ w), float(w.sum()) + ridge
        det = h00 * h11 - h01 * h01
        d0, d1 = (h11 * g0 - h01 * g1) / det, (h00 * g1 - h01 * g0) / det
        step = 1.0
        while (trial := nll(u_trial := u - step * (d0 * z + d1))) > current and step > 1e-10:
            step *= 0.5
        theta -= step * np.array([d0, d1])
        u, current = u_trial, trial
        if step * max(abs(d0), abs(d1)) < 1e-8:
            break
    a = max(theta[0], _MIN_SLOPE)
    slope = a / spread
    intercept = theta[1] - a * center / spread
    return PlattCalibration(slope, intercept / slope)


class RowReservoir:
    """Uniform sample of at most ``capacity`` rows of a stream (Vitter's Algorithm R), with
    their labels and weights (ones for rows given without).

    A uniform sample of the rows, each with its weight, estimates weighted means without
    bias. Row order inside the reservoir is irrelevant to its use (calibration), so a chunk's
    replacements are applied at once: evicted rows are dropped and newcomers appended.
    """

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.n_seen = 0
        self.X = None
        self.y = None
        self.weight = None

    @classmethod
    def from_sample(cls, capacity: int, X, y: np.ndarray, rng: np.random.Generator,
                    weight: np.ndarray | None = None) -> "RowReservoir":
        """A reservoir holding a uniform sample of the rows of ``X`` (a whole data set)."""
        res = cls(capacity)
        idx = np.sort(rng.choice(X.shape[0], size=min(capacity, X.shape[0]), replace=False))
        res.X, res.y, res.n_seen = X[idx], y[idx], X.shape[0]
        res.weight = np.ones(len(idx)) if weight is None else weight[idx]
        return res

    def add(self, X, y: np.ndarray, rng: np.random.Generator,
            weight: np.ndarray | None = None) -> None:
        """Offer the rows of a chunk, dense or sparse whatever the earlier chunks were.

        The reservoir is sparse once a sparse chunk came. Its arrays are replaced, never
        changed in place, so a shallow copy taken before is left as it was.
        """
        n = X.shape[0]
        weight = np.ones(n) if weight is None else weight
        stack = sp.vstack if sp.issparse(X) or sp.issparse(self.X) else np.vstack
        if self.X is None:
            self.X, self.y, self.weight = X[:0], y[:0], weight[:0]
        # filling phase: the first `capacity` rows always enter
        n_fill = min(max(self.capacity - self.y.shape[0], 0), n)
        if n_fill:
            self.X = stack([self.X, X[:n_fill]])
            self.y = np.concatenate([self.y, y[:n_fill]])
            self.weight = np.concatenate([self.weight, weight[:n_fill]])
        rest = np.arange(n_fill, n)
        if rest.size:
            seen = self.n_seen + rest  # 0-based stream index of each remaining row
            slot = np.floor(rng.random(rest.size) * (seen + 1)).astype(np.int64)
            hit = slot < self.capacity
            rows, slot = rest[hit], slot[hit]
            # a slot hit twice keeps the later row
            last = len(slot) - 1 - np.unique(slot[::-1], return_index=True)[1]
            rows, slot = rows[last], slot[last]
            if rows.size:  # late in a stream most chunks place no row: nothing to copy
                keep = np.setdiff1d(np.arange(self.y.shape[0]), slot)
                self.X = stack([self.X[keep], X[rows]])
                self.y = np.concatenate([self.y[keep], y[rows]])
                self.weight = np.concatenate([self.weight[keep], weight[rows]])
        if sp.issparse(self.X):
            self.X = sp.csr_matrix(self.X)
        self.n_seen += n
