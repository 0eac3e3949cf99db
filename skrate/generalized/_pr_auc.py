"""PR-AUC as a Riemann sum of precisions at recall thresholds (Eban et al., 2017).

``PR-AUC ~ (1/T) sum_t P@R(tau_t)``, the precision of a model whose recall is at least
``tau_t``, with one score ``f(x)`` shared by all T thresholds and a bias per threshold:
``h_t(x) = 1[f(x) + c_t > 0]``. Stacking the data once per threshold, with a one-hot column
for the threshold index (and a group column naming it), makes the T thresholded models one
linear model on the stacked rows, and the problem

    min 1 - (1/T) sum_t precision[threshold=t]   s.t.  tpr[threshold=t] >= tau_t

a sum of ratios with linear constraints: Algorithm 3 of Narasimhan, Cotter and Gupta (2019),
with every rate measured per threshold by the ordinary compiler.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

import numpy as np
import scipy.sparse as sp

from ..problem import GroupTable, RateData
from ..rates import _functions as R
from ._metric import Metric, MetricConstraint, RatioAtom
from ._names import as_metric

HEAD = "__threshold__"


@dataclass(frozen=True)
class PRAUC(Metric):
    """One minus the PR-AUC estimated at the recall levels ``levels`` (a ratio-class metric).

    Built by :func:`pr_auc`.

    Parameters
    ----------
    levels : sequence of float in (0, 1)
        The recall levels, distinct; kept as a tuple in increasing order.
    """

    levels: tuple[float, ...]

    def __post_init__(self):
        # checked and sorted however the metric is built, so every consumer (the deployed middle
        # level, the constraint labels, the starting biases) sees the levels in increasing order
        object.__setattr__(self, "levels", _sorted_levels(self.levels))

    @property
    def kind(self) -> str:
        return "ratio"

    def as_sum(self) -> NoReturn:
        raise TypeError("pr_auc() measures several thresholds of one score: use it on its own as "
                        "MetricOptimizer's metric, not inside sums or constraints.")

    def __str__(self) -> str:
        return f"1 - pr_auc(levels={list(self.levels)})"


def pr_auc(n_thresholds: int = 4, levels: Sequence[float] | None = None) -> PRAUC:
    """``1 - PR-AUC`` as the mean precision at recall >= each of ``levels``.

    Parameters
    ----------
    n_thresholds : int, default=4
        Number of recall levels, at the midpoints ``(k + 0.5) / n`` (a midpoint Riemann sum).
    levels : sequence of float in (0, 1), optional
        Explicit recall levels (overrides ``n_thresholds``), distinct, in any order: they are
        kept in increasing order, and the fitted classifier predicts with the threshold of the
        middle one (``levels[len(levels) // 2]`` once sorted).

    Returns
    -------
    PRAUC
        A ratio-class metric, usable only whole as ``MetricOptimizer``'s ``metric``.

    Raises
    ------
    ValueError
        For ``levels`` that are empty, not numbers, outside ``(0, 1)`` or repeated.

    References
    ----------
    E. Eban, M. Schain, A. Mackey, A. Gordon, R. A. Saurous, G. Elidan. Scalable Learning of
    Non-Decomposable Objectives. AISTATS 2017.
    """
    if levels is None:
        if not (isinstance(n_thresholds, (int, np.integer)) and n_thresholds >= 1):
            raise ValueError(f"n_thresholds must be a positive integer, got {n_thresholds!r}.")
        levels = [(k + 0.5) / n_thresholds for k in range(n_thresholds)]
    return PRAUC(levels)


def _sorted_levels(levels) -> tuple[float, ...]:
    """The recall levels, read once, checked and in increasing order: the fitted classifier
    deploys the middle one, and the labels number them from the lowest."""
    try:
        if isinstance(levels, (str, bytes)):
            raise TypeError
        values = tuple(float(v) for v in levels)
    except (TypeError, ValueError):
        raise ValueError(f"levels of pr_auc must be a sequence of numbers in (0, 1), got {levels!r}.") from None
    if not values:
        raise ValueError("levels of pr_auc needs at least one recall level, got none.")
    if not all(0.0 < v < 1.0 for v in values):
        raise ValueError(f"levels of pr_auc must be recall levels strictly between 0 and 1, got {list(values)}.")
    if len(set(values)) < len(values):
        raise ValueError(f"levels of pr_auc must be distinct, got {list(values)}: a repeated level "
                         "would count its precision twice in the mean.")
    return tuple(sorted(values))


def stacked_problem(metric: PRAUC, X: np.ndarray | sp.spmatrix, data: RateData):
    """The stacked rows, their rate data, and the objective and constraints on them."""
    T, n = len(metric.levels), X.shape[0]
    heads = np.repeat(np.eye(T), n, axis=0)  # one indicator column per level: its own bias
    if sp.issparse(X):
        X_big = sp.hstack([sp.vstack([X] * T), sp.csr_matrix(heads)], format="csr")
    else:
        X_big = np.hstack([np.tile(X, (T, 1)), heads])
    rows = np.tile(np.arange(n), T)
    data_big = data.take(rows)
    head = np.repeat(np.arange(T).astype(str), n)
    stacked = GroupTable(data_big.groups.raw.with_column(HEAD, head), n * T)
    data_big = RateData(data_big.y, data_big.sample_weight, stacked, data_big.baseline)
    objective = 1.0
    constraints = []
    for t, tau in enumerate(metric.levels):
        where = {HEAD: str(t)}
        objective = objective - (1.0 / T) * RatioAtom(R.tp_proportion(where=where), R.ppr(where=where))
        # labelled as the user knows it: the recall level of the sum, not the stacked copy's slice
        constraints.append(MetricConstraint(as_metric(tau - R.tpr(where=where)),
                                            f"recall >= {tau:g} (pr_auc level {t + 1} of {T})"))
    return X_big, data_big, objective, constraints


def deployed_params(params: np.ndarray, n_features: int, head: int) -> np.ndarray:
    """Linear-model parameters ``[w, b + c_head]`` of one threshold of stacked parameters."""
    return np.column_stack([params[:, :n_features], params[:, -1] + params[:, n_features + head]])


def initial_params(theta: np.ndarray, X: np.ndarray, y01: np.ndarray, levels,
                   sample_weight: np.ndarray) -> np.ndarray:
    """Start from a score ``theta`` with each threshold's bias at the recall level it must reach:
    the weighted ``1 - tau`` quantile of the positives' scores (an integer weight counts as that
    many copies of the row)."""
    scores = X @ theta[:-1] + theta[-1]
    positive = y01 == 1
    order = np.argsort(scores[positive], kind="stable")
    pos, cum = scores[positive][order], np.cumsum(sample_weight[positive][order])
    # the first positive whose cumulative weight passes (1 - tau) W: with unit weights the one at
    # position floor((1 - tau) n), with integer weights the same row as in the repeated rows
    k = np.minimum(np.searchsorted(cum, (1.0 - np.asarray(levels)) * cum[-1], side="right"), len(pos) - 1)
    return np.concatenate([theta[:-1], -pos[k] + 1e-6, [theta[-1]]])
