"""The two-player games of Cotter et al. (2019) over a compiled rate problem.

One loop serves the stochastic proxy-Lagrangian ("0-1 swap", Algorithm 3), its
external-regret variant ("0-1 ext", Algorithm 4) and the hinge Lagrangian (Algorithm 5);
they differ only in the lambda-player. Per iteration, on a batch B:

* scores ``f = model(X_B)``; the lambda-player sees the true 0-1 constraint values
  ``A_B @ 1[f > 0] + b`` (or their surrogates, for the Lagrangian);
* the theta-player takes an Adam step on the surrogate of ``sum_k lam_k rate_k``, whose
  gradient with respect to the scores is ``(A_B.T @ lam) * surrogate'(f)``: two products
  through the rows' cells (:class:`~skrate.problem.CellVectors`; a minibatch's rows alone) and one
  backward pass, however many constraints there are. For the Lagrangian
  it is ``sum_k lam_k surrogate(rate_k)`` instead, each row bounded on its own, the function
  its multipliers ascend: ``(A_B+.T @ lam) * upper'(f) + (A_B-.T @ lam) * lower'(f)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np
import scipy.sparse as sp
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import _num_samples

from ..models import Design
from ..problem import CellMatrix, CellVectors, RateProblem
from ._adam import Adam
from ._players import PLAYERS
from ._surrogates import surrogate_bounds, surrogate_grad
from ._trajectory import Trajectory

if TYPE_CHECKING:
    from ..models import LinearModel, MLPModel

#: Rows scored at a time when every candidate is evaluated: the decisions of 100 candidates on
#: 65536 rows take 50 MiB, whatever the number of rows; more candidates, proportionally fewer rows.
CHUNK_ROWS = 65536


def chunk_rows_for(k: int) -> int:
    """Rows scored at a time for ``k`` candidates: :data:`CHUNK_ROWS` up to 100 candidates, then
    fewer, so that a block of their scores stays at 50 MiB (a thousand candidates took 500 MiB)."""
    return max(1, CHUNK_ROWS * 100 // max(k, 100))


def decision_rates(model, X, params: np.ndarray, matrix, *, chunk_rows: int | None = None) -> np.ndarray:
    """``matrix @ 1[model.scores_many(X, params) > 0]``, shape (K, k), ``chunk_rows`` rows at a time.

    ``matrix`` (sparse, K x n) weighs the rows of ``X``: a rate problem's ``basis``, a metric
    program's ``A``. The (n, k) decisions of the k candidates ``params`` are never held whole,
    only a block of ``chunk_rows`` rows of them (default :func:`chunk_rows_for` k); the blocks'
    products are summed (equal to the one product up to rounding; with a single block it is that
    product).
    """
    n, k = X.shape[0], params.shape[0]
    chunk_rows = chunk_rows_for(k) if chunk_rows is None else chunk_rows
    if matrix.shape[0] == 0 or n == 0:
        return np.zeros((matrix.shape[0], k))
    if n <= chunk_rows:
        return matrix @ _decisions(model, X, params)
    cols = matrix if isinstance(matrix, CellMatrix) else sp.csc_matrix(matrix)  # cheap column blocks
    out = np.zeros((matrix.shape[0], k))
    for start in range(0, n, chunk_rows):
        rows = slice(start, min(start + chunk_rows, n))
        out += cols[:, rows] @ _decisions(model, X[rows], params)
    return out


def candidate_decisions(model, X, params: np.ndarray, *, chunk_rows: int | None = None) -> np.ndarray:
    """The 0/1 decisions of the candidates ``params`` on ``X`` as a boolean (n, k) array, scored
    ``chunk_rows`` rows at a time (default :func:`chunk_rows_for` the k candidates; one byte per
    entry: a million rows of 100 candidates is 100 MB)."""
    n, k = _num_samples(X), params.shape[0]
    chunk_rows = chunk_rows_for(k) if chunk_rows is None else chunk_rows
    out = np.empty((n, k), dtype=bool)
    for start in range(0, n, chunk_rows):
        rows = slice(start, min(start + chunk_rows, n))
        out[rows] = np.asarray(model.scores_many(_safe_indexing(X, rows), params), dtype=float) > 0
    return out


def _decisions(model, X, params: np.ndarray) -> np.ndarray:
    """The 0/1 decisions (n, k) of the candidates, written over their scores (one (n, k) array)."""
    scores = np.asarray(model.scores_many(X, params), dtype=float)
    return np.greater(scores, 0.0, out=scores)


def candidate_values(problem: RateProblem, model, X, params: np.ndarray, rows=slice(None), *,
                     chunk_rows: int | None = None) -> np.ndarray:
    """Rows ``rows`` of ``problem.values`` at the decisions of every candidate ``params``: (len(rows), k).

    Only the basic rates those rows combine are measured (see :func:`decision_rates`).
    """
    mix = problem.mix[rows]
    used = np.unique(mix.indices)
    rates = decision_rates(model, X, params, problem.basis[used], chunk_rows=chunk_rows)
    return mix[:, used] @ rates + problem.b[rows][:, None]


def _surrogate_rates(A_pos, A_neg, scores, b, kind):
    """Surrogate value of every row: upper bounds of the indicator on positive coefficients."""
    upper, lower = surrogate_bounds(scores, kind)
    return A_pos @ upper + A_neg @ lower + b


def _surrogate_rates_grad(A_pos, A_neg, scores, weights, kind):
    """Gradient in the scores of ``weights @ _surrogate_rates(A_pos, A_neg, scores, b, kind)``:
    each row's own surrogate, as the Lagrangian's multipliers see them, not the surrogate of
    the rows' weighted sum (which takes an example's bound from the sign of its combined
    coefficient, a different function where its coefficients differ in sign across rows)."""
    return surrogate_grad(scores, A_pos.T @ weights, kind) + surrogate_grad(scores, A_neg.T @ weights, kind)


def solve_rate_game(
    problem: RateProblem,
    model: LinearModel | MLPModel,
    X: np.ndarray | sp.spmatrix,
    *,
    solver: str = "proxy_lagrangian",
    surrogate: str = "hinge",
    learning_rate: float = 0.01,
    lambda_learning_rate: float = 1.0,
    alpha: float = 0.0,
    max_iter: int = 1000,
    batch_size: int | None = None,
    n_candidates: int = 100,
    rng: np.random.Generator,
    init_params: np.ndarray | None = None,
    held_out: tuple[RateProblem, object] | None = None,
    callback: Callable | None = None,
    verbose: int = 0,
) -> Trajectory:
    """Play the game and return snapshots of the iterates with their training rates.

    Parameters
    ----------
    problem : RateProblem
        Row 0 the objective, rows 1..m the constraints ``g_j <= 0``, compiled on the rows of
        ``X``.
    model : LinearModel or MLPModel
        The score function family.
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        The training rows, in the form ``model`` scores them.
    solver : {"proxy_lagrangian", "proxy_lagrangian_ext", "lagrangian"}, default="proxy_lagrangian"
        The multiplier player: swap regret (Algorithm 3), external regret (Algorithm 4) or
        projected gradient ascent on surrogate constraints (Algorithm 5).
    surrogate : {"hinge", "logistic", "sigmoid"}, default="hinge"
        Stand-in for the indicator in the model's gradient (and in the Lagrangian's
        constraints).
    learning_rate : float, default=0.01
        Adam step of the model.
    lambda_learning_rate : float, default=1.0
        Multiplicative (or additive, for the Lagrangian) step of the multipliers.
    alpha : float, default=0.0
        L2 penalty ``alpha / 2 * ||w||^2`` on the model's weights (not on intercepts or
        biases).
    max_iter : int, default=1000
        Iterations played, unless ``callback`` stops earlier.
    batch_size : int or None, default=None
        None plays full-batch; otherwise minibatches drawn without replacement per epoch.
    n_candidates : int, default=100
        At most this many evenly spaced snapshots are kept, and besides them the iterates
        of the last iteration and after it.
    rng : numpy.random.Generator
        Draws the initial parameters and the minibatch order.
    init_params : ndarray of shape (n_params,), default=None
        Starting parameters (copied); None draws them from ``model.init_params(rng)``.
    held_out : (RateProblem, X_held_out), default=None
        The two-dataset game of Cotter et al. (ICML 2019): the lambda-player, and the
        candidates' constraint values, use the true rates on this second sample, while the
        model trains on ``X`` and the objective is measured there (the held-out problem's
        objective row is not read). Not with ``solver="lagrangian"``.
    callback : callable, default=None
        ``callback(t, params, values)`` after iteration ``t``: ``params`` the iterate ``t`` played
        (before its step) and ``values`` its rates that the multipliers were updated with,
        objective first, on the batch, the constraints on the held-out sample when there is one
        (the surrogate rates for the Lagrangian); returning False stops the game.
    verbose : int, default=0
        When positive, print the objective and the largest violation about ten times over
        the run.

    Returns
    -------
    Trajectory
        The kept snapshots with their objective and constraint values (on the held-out
        sample for the constraints when there is one) and the multipliers at each.

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization
    with Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and
    Other Goals. JMLR 20(172), 2019.

    A. Cotter, M. Gupta, H. Jiang, N. Srebro, K. Sridharan, S. Wang, B. Woodworth, S. You.
    Training Well-Generalizing Classifiers for Fairness Metrics and Other Data-Dependent
    Constraints. ICML 2019.
    """
    design = Design(X)
    X = design.X
    n = X.shape[0]
    m = problem.n_constraints
    player = PLAYERS[solver](m, lambda_learning_rate)
    theta = model.init_params(rng) if init_params is None else init_params.copy()
    optimizer = Adam(theta.shape[0], learning_rate)
    reg = alpha * model.penalty_mask()
    mix, basis, b = problem.mix, problem.basis, problem.b
    full = batch_size is None or batch_size >= n
    if held_out is not None:
        held_problem, X_held = held_out
        X_held = Design(X_held).X
        # the objective alone is read on the training rows: its rates, taken once
        objective = mix[0]
        used = objective.indices
        objective, objective_basis = objective[:, used], basis[used] if full else sp.csc_matrix(basis[used])
    cells = problem.cells
    # the products with A, set up once: over every row, or over a minibatch's rows through each
    # row's cell (no columns of A gathered per step)
    A_rows = CellVectors(cells)
    if player.needs_surrogate:
        if held_out is not None:
            raise ValueError("solver='lagrangian' updates its multipliers on surrogate rates of the training "
                             "sample, so it cannot use held_out; use a proxy-Lagrangian solver with a held-out sample.")
        # a parity constraint's row of A reads every row: never formed
        A_pos, A_neg = cells.maximum(0), cells.minimum(0)

    every = max(1, -(-max_iter // max(1, n_candidates)))  # rounded up: at most n_candidates of them
    snaps, lams = [], []
    order, at = rng.permutation(n), 0
    for t in range(max_iter):
        if full:
            Xb, XTb, scale = X, design.T, 1.0
        else:
            if at + batch_size > n:
                order, at = rng.permutation(n), 0
            idx = order[at:at + batch_size]
            at += batch_size
            Xb, XTb, scale = design.rows(idx), None, n / batch_size
            A_batch = A_rows.batch(idx)
        scores, cache = model.forward(Xb, theta)  # cache: what backward reuses (an MLP's activations)
        if player.needs_surrogate:
            Ap, An = (A_pos, A_neg) if full else (A_pos[:, idx], A_neg[:, idx])
            Ap, An = Ap * scale, An * scale  # the batch's rows as estimates of the full rates
            values = _surrogate_rates(Ap, An, scores, b, surrogate)
        elif held_out is not None:  # the constraints on the held-out rows, the objective on the batch
            values = held_problem.values((model.scores(X_held, theta) > 0).astype(float))
            rows = objective_basis if full else objective_basis[:, idx]
            values[0] = scale * (objective @ (rows @ (scores > 0).astype(float)))[0] + b[0]
        elif full:
            values = A_rows.matvec((scores > 0).astype(float)) + b
        else:
            values = scale * A_batch.matvec((scores > 0).astype(float)) + b
        weights = player.weights()
        if player.needs_surrogate:  # the Lagrangian: both players on the rows' own surrogates
            dscores = _surrogate_rates_grad(Ap, An, scores, weights, surrogate)
        else:  # the proxy-Lagrangian: the model on the surrogate of the weighted sum
            coef = A_rows.rmatvec(weights) if full else scale * A_batch.rmatvec(weights)
            dscores = surrogate_grad(scores, coef, surrogate)
        grad = model.backward(Xb, theta, dscores, XTb, cache=cache) + reg * theta
        cache = None  # not held through the next forward pass
        if t % every == 0 or t == max_iter - 1:
            snaps.append(theta.copy())
            lams.append(np.asarray(weights, dtype=float).copy())
        # the callback gets the params the values were measured on, not the step they lead to
        theta, measured = optimizer.step(theta, grad), theta
        player.update(values[1:])
        if verbose and (t % max(1, max_iter // 10) == 0 or t == max_iter - 1):
            worst = values[1:].max() if m else 0.0
            print(f"[{solver}] iter {t + 1}/{max_iter} objective {values[0]:.4f} max violation {worst:+.4f}")
        if callback is not None and callback(t, measured, values) is False:
            break
    snaps.append(theta.copy())
    lams.append(np.asarray(player.weights(), dtype=float).copy())
    params = np.array(snaps)
    if held_out is None:
        rates = candidate_values(problem, model, X, params)
    else:  # the objective on the training rows, the constraints on the held-out ones
        rates = np.vstack([candidate_values(problem, model, X, params, [0]),
                           candidate_values(held_problem, model, X_held, params, slice(1, None))])
    return Trajectory(params, rates[0], rates[1:], np.array(lams), t + 1)
