"""The two-player games of Cotter et al. (2019) over a compiled rate problem.

One loop serves the stochastic proxy-Lagrangian ("0-1 swap", Algorithm 3), its
external-regret variant ("0-1 ext", Algorithm 4) and the hinge Lagrangian (Algorithm 5);
they differ only in the lambda-player. Per iteration, on a batch B:

* scores ``f = model(X_B)``; the lambda-player sees the true 0-1 constraint values
  ``A_B @ 1[f > 0] + b`` (or their surrogates, for the Lagrangian);
* the theta-player takes an Adam step on ``sum_k lam_k surrogate(rate_k)``, whose gradient
  with respect to the scores is ``(A_B.T @ lam) * surrogate'(f)``: two sparse products and
  one backward pass, however many constraints there are.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.sparse as sp

from ..models import Design
from ..problem import RateProblem
from ._adam import Adam
from ._players import PLAYERS
from ._surrogates import surrogate_grad
from ._trajectory import Trajectory


def _surrogate_rates(A_pos, A_neg, scores, b, kind):
    """Surrogate value of every row: upper bounds of the indicator on positive coefficients."""
    if kind == "hinge":
        up, low = np.maximum(0.0, 1.0 + scores), 1.0 - np.maximum(0.0, 1.0 - scores)
    elif kind == "logistic":
        up = np.logaddexp(0.0, scores) / np.log(2.0)
        low = 1.0 - np.logaddexp(0.0, -scores) / np.log(2.0)
    else:
        up = low = 1.0 / (1.0 + np.exp(-scores))
    return A_pos @ up + A_neg @ low + b


def solve_rate_game(
    problem: RateProblem,
    model,
    X,
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
        Row 0 the objective, rows 1..m the constraints ``g_j <= 0``.
    model : LinearModel or MLPModel
    X : array-like of shape (n_samples, n_features)
    solver : {"proxy_lagrangian", "proxy_lagrangian_ext", "lagrangian"}
    learning_rate, lambda_learning_rate : float
        Adam step of the model; multiplicative (or additive, for the Lagrangian) step of the
        multipliers.
    batch_size : int or None
        None plays full-batch; otherwise minibatches drawn without replacement per epoch.
    n_candidates : int
        Number of evenly spaced snapshots kept (the last iterate is always one).
    held_out : (RateProblem, X_held_out), optional
        The two-dataset game of Cotter et al. (ICML 2019): the lambda-player, and the
        candidates' constraint values, use the true rates on this second sample, while the
        model trains on ``X``; constraint estimates then do not share the model's overfitting.

    Returns
    -------
    Trajectory

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization
    with Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and
    Other Goals. JMLR 20(172), 2019.
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
    mixT = mix.T.tocsr()
    if held_out is not None:
        held_problem, X_held = held_out
        X_held = Design(X_held).X
    full = batch_size is None or batch_size >= n
    basis_cols = None if full else sp.csc_matrix(basis)
    basisT = basis.T.tocsr() if full else None  # the full-batch transpose, built once
    if player.needs_surrogate:
        if held_out is not None:
            raise ValueError("The Lagrangian's multipliers follow surrogate rates on the training sample; "
                             "use a proxy-Lagrangian solver with a held-out sample.")
        A = problem.A
        A_pos, A_neg = A.maximum(0).tocsr(), A.minimum(0).tocsr()

    every = max(1, max_iter // max(1, n_candidates))
    snaps, lams = [], []
    order, at = rng.permutation(n), 0
    for t in range(max_iter):
        if full:
            Xb, XTb, Bb, BbT, scale = X, design.T, basis, basisT, 1.0
        else:
            if at + batch_size > n:
                order, at = rng.permutation(n), 0
            idx = order[at:at + batch_size]
            at += batch_size
            Bb = basis_cols[:, idx]
            Xb, XTb, BbT, scale = X[idx], None, Bb.T, n / batch_size
        scores = model.scores(Xb, theta)
        if player.needs_surrogate:
            Ap, An = (A_pos, A_neg) if full else (A_pos[:, idx], A_neg[:, idx])
            values = _surrogate_rates(Ap * scale, An * scale, scores, b, surrogate)
        elif held_out is not None:
            values = held_problem.values((model.scores(X_held, theta) > 0).astype(float))
        else:
            values = scale * (mix @ (Bb @ (scores > 0).astype(float))) + b
        weights = player.weights()
        coef = scale * (BbT @ (mixT @ weights))
        grad = model.backward(Xb, theta, surrogate_grad(scores, coef, surrogate), XTb) + reg * theta
        if t % every == 0 or t == max_iter - 1:
            snaps.append(theta.copy())
            lams.append(np.asarray(weights, dtype=float).copy())
        theta = optimizer.step(theta, grad)
        player.update(values[1:])
        if verbose and (t % max(1, max_iter // 10) == 0 or t == max_iter - 1):
            worst = values[1:].max() if m else 0.0
            print(f"[{solver}] iter {t + 1}/{max_iter} objective {values[0]:.4f} max violation {worst:+.4f}")
        if callback is not None and callback(t, theta, values) is False:
            break
    snaps.append(theta.copy())
    lams.append(np.asarray(player.weights(), dtype=float).copy())
    params = np.array(snaps)
    rates = problem.values((model.scores_many(X, params) > 0).astype(float))
    if held_out is not None:
        rates[1:] = held_problem.values((model.scores_many(X_held, params) > 0).astype(float))[1:]
    lam_hist = np.array(lams)
    if lam_hist.shape[1] != m + 1:  # the Lagrangian's multipliers omit the objective's weight
        lam_hist = np.column_stack([np.ones(len(lam_hist)), lam_hist[:, -m:]]) if m else lam_hist[:, :1]
    return Trajectory(params, rates[0], rates[1:], lam_hist, t + 1)
