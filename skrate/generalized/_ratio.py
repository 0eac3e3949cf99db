"""Algorithm 3 of Narasimhan, Cotter and Gupta (NeurIPS 2019): sums of ratios of rates.

An objective ``c_0 + sum_k c_k N_k(h) / D_k(h)`` (F-measure, precision) and constraints of the same
form (predictive parity, F-measure parity) are made linear in the rates by one slack per ratio,
``xi_k >= c_k N_k / D_k``, which (denominators being positive) is the linear constraint
``c_k N_k(h) - xi_k D_k(h) <= 0``:

    min_{h, xi} sum_{k in obj} xi_k   s.t.  c_j + sum_{k in j} xi_k <= 0,  c_k N_k(h) - xi_k D_k(h) <= 0.

Its Lagrangian is linear in the rates of ``h`` for fixed ``(xi, lam)``: the theta-player takes
surrogate steps on ``sum_k lam_k (c_k N_k - xi_k D_k)``. The Lagrangian is linear in ``xi`` too,
and its stationarity conditions tie the players together: ``lam_k D_k = w_k`` (``w_k`` = 1 in
the objective, ``mu_j`` in constraint j) and, at a tight slack, ``xi_k = c_k N_k / D_k``. The
slack and ratio multipliers are played at these relations over a running (exponentially
weighted, step ``xi_learning_rate``) average of the true rates -- a follow-the-leader answer,
which avoids the oscillation of plain gradient play on a bilinear game -- while the constraint
multipliers ``mu_j`` ascend on the true, 0-1 constraint values. With ``lam_k = 1 / D_k`` and
``xi_k`` the current ratio, the model's step is Dinkelbach's parametric step for a ratio.

With a plug-in oracle (``MetricOptimizer(estimator=...)``) the model player answers that linear
Lagrangian exactly, by the best thresholds of ``eta`` per group cell, instead of a surrogate step:
the parametric step then is Dinkelbach's own, and the snapshots are threshold classifiers.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..problem import CellMatrix, RateData, compile_factored
from ._multipliers import MultiplierAscent
from ._program import MetricProgram
from ._stopping import EarlyStopping, Snapshots, WindowMean
from ._theta_player import SurrogateTheta
from ._three_player import MetricTrajectory, trajectory


class RatioProgram:
    """Numerators and denominators of every ratio term, stacked as ``[N; D]`` rate rows."""

    def __init__(self, program: MetricProgram, data: RateData):
        owners, coefs, nums, dens, constants = [], [], [], [], []
        for owner, s in enumerate([program.objective] + program.constraints):
            form = (s.metric if s.stated is None else s.stated).ratio_form()
            if form is None:
                raise ValueError(f"'{s.label}' is not a sum of ratios of rates.")
            constants.append(form[0])
            for coef, num, den in form[1]:
                owners.append(owner - 1)
                coefs.append(coef)
                nums.append(num)
                dens.append(den)
        self.owner = np.array(owners, dtype=int)
        self.coef = np.array(coefs, dtype=float)
        self.constant = np.array(constants)
        try:
            mix, basis, self.b = compile_factored(nums + dens, data)
        except ValueError as exc:
            raise ValueError(f"A ratio of the problem cannot be measured on this data: {exc}") from None
        self.k = len(coefs)
        self.A = CellMatrix.from_factors(mix, basis)

    def split(self, r: np.ndarray):
        return r[: self.k], r[self.k:]


def solve_ratio_game(
    program: MetricProgram,
    ratios: RatioProgram,
    model,
    X,
    *,
    oracle=None,
    surrogate: str = "hinge",
    learning_rate: float = 0.05,
    lambda_learning_rate: float = 0.5,
    xi_learning_rate: float = 0.05,
    lambda_bound: float = 100.0,
    alpha: float = 0.0,
    max_iter: int = 500,
    batch_size: int | None = None,
    n_candidates: int = 100,
    tol: float | None = None,
    n_iter_no_change: int = 50,
    rng: np.random.Generator,
    init_params: np.ndarray | None = None,
    callback: Callable | None = None,
    verbose: int = 0,
) -> MetricTrajectory:
    """Play Algorithm 3 and return snapshots of the model with their true metric values.

    ``oracle`` (a :class:`~skrate.generalized._plugin_oracle.PluginOracle`), when given, plays the
    model's best responses, starting from its own threshold; ``batch_size`` then does not apply.
    Full-batch games stop on the plateau rule of
    :class:`~skrate.generalized._stopping.EarlyStopping` (``tol=None``: never).

    References
    ----------
    H. Narasimhan, A. Cotter, M. Gupta. Optimizing Generalized Rate Metrics with Three Players.
    NeurIPS 2019, Section 5 (Algorithm 3).
    """
    m = program.n_constraints
    player = SurrogateTheta(model, X, ratios.A, surrogate=surrogate, learning_rate=learning_rate, alpha=alpha,
                            batch_size=batch_size, rng=rng, init_params=init_params, oracle=oracle)
    if oracle is not None and init_params is None:  # the plug-in model's own threshold, eta(x) > 1/2
        player.theta = oracle.theta_eta.copy()
    c, owner = ratios.coef, ratios.owner
    bound = 10.0 * np.abs(c)
    multipliers = MultiplierAscent(m, lambda_learning_rate, lambda_bound)
    mu = multipliers.mu
    stopper = EarlyStopping(tol if player.full else None, n_iter_no_change)
    snaps = Snapshots(max_iter, n_candidates)
    N_avg = D_avg = None
    recent = WindowMean(n_iter_no_change)
    for t in range(max_iter):
        N, D = ratios.split(player.batch() + ratios.b)
        if N_avg is None:
            N_avg, D_avg = N.copy(), D.copy()
        # slack and multiplier players at their equilibrium relations over the running rates:
        # xi_k = c_k N_k / D_k makes lam stationary, lam_k D_k = w_k makes xi stationary
        N_avg += xi_learning_rate * (N - N_avg)
        D_avg += xi_learning_rate * (D - D_avg)
        Dpos = np.maximum(D_avg, 1e-3)
        w = np.concatenate(([1.0], mu))[owner + 1]
        xi = np.clip(c * N_avg / Dpos, -bound, bound)
        lam = np.minimum(w / Dpos, lambda_bound)
        current, owner_w = player.theta.copy(), np.concatenate(([1.0], mu))
        snaps.offer(t, current, owner_w)
        player.step(np.concatenate([lam * c, -lam * xi]))
        obj, phi = _values(ratios, c * N / np.maximum(D, 1e-3), m)
        if m:
            mu = multipliers.update(phi)
        # the rates of the uniform mixture of the iterates are the means of theirs
        N_mix, D_mix = ratios.split(recent.push(np.concatenate([N, D])))
        mixed = stopper.merit(*_values(ratios, c * N_mix / np.maximum(D_mix, 1e-3), m))
        stop = stopper.update(t, stopper.merit(obj, phi), mixed)
        if stopper.best_iterate == t:
            snaps.mark_best(t, current, owner_w)
        if verbose and (t % max(1, max_iter // 10) == 0 or t == max_iter - 1 or stop):
            print(f"[ratio] iter {t + 1}/{max_iter} objective {obj:.4f}")
        if callback is not None and callback(t, current, np.concatenate([N, D])) is False:
            break
        if stop:
            break
    params, mus = snaps.candidates(n_candidates, (player.theta.copy(), np.concatenate(([1.0], mu))))
    return trajectory(program, model, player.X, params, mus, t + 1)


def _values(ratios: RatioProgram, terms: np.ndarray, m: int) -> tuple[float, np.ndarray]:
    """Objective and constraint values from the ratio terms ``c_k N_k / D_k``."""
    owner = ratios.owner
    obj = float(ratios.constant[0] + terms[owner < 0].sum())
    phi = ratios.constant[1:] + np.bincount(owner[owner >= 0], terms[owner >= 0], minlength=m)
    return obj, phi
