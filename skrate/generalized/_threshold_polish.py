"""Snapshots re-thresholded on the true metric: a surrogate's intercept is not the metric's.

A theta-player trained on a surrogate (hinge, logistic) turns a linear model's direction well,
but its intercept answers the surrogate's costs. For a metric whose optimum predicts few
positives (an F-measure with ``beta < 1``) every snapshot of the game may sit at a threshold of
its direction well off the metric's best one, and the mixtures of the snapshots cannot reach it
either. Every threshold of one direction is one cumulative sum: the rows in the order of their
scores, the rates of predicting the first ``j`` of them positive are the first ``j`` columns of
the rate matrix summed. The threshold of least (largest violation, objective) among them joins
the candidates with its exact rates, and the mixture selection reads it as any other.
"""

from __future__ import annotations

import numpy as np

from ..models import LinearModel
from ._mixture import FEASIBLE_TOL, merits
from ._program import MetricProgram

#: Largest number of values one sweep holds (K rates, or the cells of alike rows, x cut
#: positions): beyond it, the cuts are taken every few rows (the rates of the one kept are
#: computed exactly all the same).
_MAX_ENTRIES = 2**24


def _ranked(program: MetricProgram, rates: np.ndarray) -> np.ndarray:
    """The columns of ``rates`` best first by (largest violation, objective), each rounded at 12
    decimals: models that tie up to rounding keep their order (the first wins), so that a fit
    with integer weights ranks as the fit on repeated rows does."""
    violation, objective = merits(program, rates, FEASIBLE_TOL)
    return np.lexsort((np.round(objective, 12), np.round(violation, 12)))


def best_cut(program: MetricProgram, scores: np.ndarray) -> float | None:
    """The shift ``c`` that makes ``scores + c > 0`` the decisions of least (violation, objective)
    among every threshold of ``scores``; None when none is better than ``c = 0`` (up to rounding).

    Parameters
    ----------
    program : MetricProgram
        The problem, its rate matrix over the rows of ``scores``.
    scores : ndarray of shape (n_samples,)
        A model's scores; it predicts 1 where they are positive.

    Returns
    -------
    float or None
    """
    n = scores.shape[0]
    order = np.argsort(-scores)  # the order of tied rows is moot: cuts fall between distinct scores
    ranked = scores[order]
    # j rows predicted 1: the cuts between distinct scores, and none or all
    cuts = np.r_[0, np.flatnonzero(ranked[:-1] > ranked[1:]) + 1, n]
    width = max(program.A.shape[0], program.A.P.shape[0], 1)  # rates, cells: the sums' rows
    if width * cuts.size > _MAX_ENTRIES:
        cuts = cuts[np.unique(np.linspace(0, cuts.size - 1, _MAX_ENTRIES // width).astype(int))]
    K = program.A.shape[0]
    # the rows between consecutive cuts as one block: A's columns summed per block
    block = np.empty(n, dtype=np.intp)
    block[order] = np.searchsorted(cuts, np.arange(n), side="right") - 1
    steps = program.A.grouped_sums(block, cuts.size)
    # the current decisions first: a cut only as good as them up to rounding is no change;
    # then the cuts' rates, filled in place (K x cuts values: one array, not four)
    rates = np.empty((K, cuts.size + 1))
    rates[:, 0] = program.rates((scores > 0).astype(float))
    rates[:, 1] = 0.0
    np.cumsum(steps[:, :-1], axis=1, out=rates[:, 2:])
    rates[:, 1:] += program.b[:, None]
    order_by_merit = _ranked(program, rates)
    if order_by_merit[0] == 0:
        return None
    j = int(order_by_merit[0]) - 1
    # between the last row predicted 1 and the first predicted 0
    above = ranked[cuts[j] - 1] if cuts[j] > 0 else ranked[0] + 1.0
    below = ranked[cuts[j]] if cuts[j] < n else ranked[-1] - 1.0
    return -(above + below) / 2.0


def polish_thresholds(program: MetricProgram, model: LinearModel, X, params: np.ndarray, rates: np.ndarray,
                      n_polish: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """The ``n_polish`` best distinct snapshots, each at its best threshold.

    Parameters
    ----------
    program : MetricProgram
    model : LinearModel
        The snapshots' model; its last parameter is the intercept.
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        The rows of ``program``.
    params : ndarray of shape (k, n_params)
        The snapshots.
    rates : ndarray of shape (K, k)
        Their rates.
    n_polish : int, default=3
        How many snapshots to re-threshold, best (least violation, then objective) first.

    Returns
    -------
    params : ndarray of shape (n_new, n_params)
        The re-thresholded snapshots that are better than the snapshot they came from (possibly
        none).
    source : ndarray of int of shape (n_new,)
        The snapshot each came from.
    """
    _, distinct = np.unique(np.round(params, 12), axis=0, return_index=True)
    distinct = np.sort(distinct)
    ranked = distinct[_ranked(program, rates[:, distinct])][:n_polish]
    new, source = [], []
    for i in ranked:
        shift = best_cut(program, model.scores(X, params[i]))
        if shift is not None:
            theta = params[i].copy()
            theta[-1] += shift
            new.append(theta)
            source.append(i)
    return np.reshape(new, (len(new), params.shape[1])), np.array(source, dtype=int)
