"""The three-player game of Narasimhan, Cotter and Gupta (NeurIPS 2019), and its special cases.

For ``min psi(R(h))`` subject to ``phi_j(R(h)) <= 0`` (P2), every non-linear atom ``f_a`` of the
objective and of the constraints gets its own slack vector ``xi_a`` with ``R_a(h) = xi_a``:

    L(h, xi; lam, mu) = sum_{a in psi} c_a f_a(xi_a) + sum_j mu_j phi_j
                        + sum_a lam_a . (R_a(h) - xi_a) + (linear atoms, which need no slack).

* theta-player: minimises the linear ``sum_a lam_a . R_a(h) + sum_lin w R(h)`` -- by a surrogate
  gradient step (Algorithm 2) or by a cost-sensitive oracle (Algorithm 1);
* xi-player: best response ``argmin c_a w f_a(xi) - lam_a . xi`` (closed form, see ``_xi_player``);
* lambda-player: online gradient ascent ``lam_a += eta (R_a(h_t) - xi_a)`` on the true rates
  (Algorithms 1-2; against an oracle with the decaying step ``eta / sqrt(t)``), or
  follow-the-leader ``lam_a = c_a w grad f_a(mean_t R_a(h_t))``, which turns the game into
  Frank-Wolfe (oracle theta-player) or NEMSIS (surrogate theta-player, surrogate rates); gradient
  ascent on surrogate rates with a surrogate theta-player is SPADE (Section 4).
  The constraint multipliers ``mu_j`` ascend on ``phi_j`` at the current rates.

The output is a trajectory of snapshots; the uniform mixture over iterates is the game's
stochastic solution. Full-batch games stop early on a plateau (``_stopping``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ..solvers import Trajectory
from ..solvers._rate_game import decision_rates
from ..utils._warnings import warn
from ._column_generation import price_out
from ._atoms import RateFunction
from ._multipliers import MultiplierAscent
from ._program import MetricProgram
from ._stopping import EarlyStopping, Snapshots, WindowMean
from ._theta_player import SurrogateTheta
from ._xi_player import CvxpyXiPlayer, best_response, rate_box

# Rounds between the column-generation checks of a linear problem against the oracle: each is an
# LP over the candidates and a few oracle calls; the benchmarks certify within twenty rounds.
_CERTIFY_EVERY = 10
# Models column generation may add: each strictly improves the LP, so it ends long before (one to
# four on the benchmarks); the cap only bounds the time of a degenerate case.
_MAX_PRICED = 500

# solver name -> (theta-player, lambda-player, rates the lambda-player sees)
CONFIGURATIONS = {
    "three_player": ("surrogate", "ogd", "true"),
    "oracle": ("oracle", "ogd", "true"),
    "frank_wolfe": ("oracle", "ftl", "true"),
    "spade": ("surrogate", "ogd", "surrogate"),
    "nemsis": ("surrogate", "ftl", "surrogate"),
}


@dataclass
class _Block:
    owner: int  # -1 for the objective, j for constraint j
    coef: float
    atom: object
    idx: np.ndarray
    fixed: np.ndarray  # NaN where the rate depends on the model
    lam: np.ndarray
    xi: np.ndarray
    box: tuple  # the range (lo, hi) of each of its rate expressions
    cvxpy: object = None  # a cached cvxpy xi-player for user functions given in cvxpy form

    def answer(self, w: float) -> np.ndarray:
        if self.cvxpy is not None:
            return self.cvxpy(self.lam, w)
        return best_response(self.atom, self.lam, w, self.fixed, self.xi, self.box)


def _blocks(program: MetricProgram):
    model_free = np.asarray(abs(program.A).sum(axis=1)).ravel() == 0
    lo, hi = rate_box(program.A, program.b)
    blocks, linear = [], []
    for owner, s in enumerate([program.objective] + program.constraints):
        for coef, atom, idx in s.atoms:
            if atom.kind == "linear":
                # a linear atom needs no slack: its coefficients weigh its rate rows directly
                linear.extend((owner - 1, coef * float(c), int(row))
                              for c, row in zip(atom.linear_coefficients(), idx))
                continue
            fixed = np.where(model_free[idx], program.b[idx], np.nan)
            box = (lo[idx], hi[idx])
            blk = _Block(owner - 1, coef, atom, idx, fixed, np.zeros(len(idx)),
                         np.where(model_free[idx], program.b[idx], (lo[idx] + hi[idx]) / 2), box)
            if isinstance(atom, RateFunction) and atom.cvx is not None:
                blk.cvxpy = CvxpyXiPlayer(atom, fixed, sign=coef, box=box)
            blocks.append(blk)
    return blocks, linear


def solve_three_player(
    program: MetricProgram,
    model,
    X,
    *,
    solver: str = "three_player",
    oracle=None,
    surrogate: str = "hinge",
    learning_rate: float = 0.05,
    lambda_learning_rate: float = 0.5,
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
    """Play the game named by ``solver`` (see ``CONFIGURATIONS``) and return its snapshots.

    Parameters
    ----------
    program : MetricProgram
    model : LinearModel or MLPModel
        Score family of the surrogate theta-player (the oracle returns linear models).
    X : array-like of shape (n_samples, n_features)
    oracle : PluginOracle, optional
        Required by the oracle-based configurations.
    init_params : ndarray, optional
        Starting parameters of the surrogate theta-player (default: the model's own).
    lambda_learning_rate, lambda_bound : float
        Step size of the multipliers and the bound on their magnitude.
    tol, n_iter_no_change :
        Plateau stopping rule of :class:`~skrate.generalized._stopping.EarlyStopping`, applied
        to full-batch games only (minibatch rates are estimates); ``tol=None`` plays
        ``max_iter`` iterations.

    Returns
    -------
    MetricTrajectory

    References
    ----------
    H. Narasimhan, A. Cotter, M. Gupta. Optimizing Generalized Rate Metrics with Three Players.
    NeurIPS 2019.
    """
    theta_kind, lam_kind, lam_rates = CONFIGURATIONS[solver]
    if theta_kind == "oracle" and oracle is None:
        raise ValueError(f"solver={solver!r} needs a plug-in oracle.")
    A, b = program.A, program.b
    m = program.n_constraints
    blocks, linear = _blocks(program)
    multipliers = MultiplierAscent(m, lambda_learning_rate, lambda_bound)
    mu = multipliers.mu
    player = SurrogateTheta(model, X, A, surrogate=surrogate, learning_rate=learning_rate, alpha=alpha,
                            batch_size=batch_size, rng=rng, init_params=init_params,
                            oracle=oracle if theta_kind == "oracle" else None)
    if theta_kind == "oracle":
        cost = player.costs(_linear_weights(A.shape[0], linear, mu))
        # a zero cost (a non-linear objective before any play) has no preferred answer: start from
        # the plug-in model's own threshold, not from the first cut (a model that predicts nothing,
        # which meets ratio constraints in their linear form and stalls Frank-Wolfe's average there)
        if np.any(cost):
            player.theta = oracle.best_response(cost)
        elif init_params is None:  # init="zeros" sets the surrogate solvers' start, not this one
            player.theta = oracle.theta_eta.copy()
    # An oracle's answers are best responses that jump between extreme models; constant steps on
    # their rates swung the slack multipliers with them, and the answers stayed at the extremes
    # (H-mean under KL fairness: 0.59 where the optimum is 0.41). Against an oracle they take the
    # decaying steps eta / sqrt(t) of online gradient ascent.
    jumps = theta_kind == "oracle"
    rate_sum = np.zeros(A.shape[0])
    recent = WindowMean(n_iter_no_change)
    stopper = EarlyStopping(tol if player.full else None, n_iter_no_change)
    snaps = Snapshots(max_iter, n_candidates)
    # a linear problem against the exact oracle: column generation certifies the optimum, so
    # the game stops once its candidates' LP is feasible and priced out (see _column_generation)
    certify = theta_kind == "oracle" and program.is_linear and stopper.tol is not None
    weights_prev = np.zeros(A.shape[0])
    for t in range(max_iter):
        r = player.batch() + b
        seen = r if lam_rates == "true" else player.surrogate_rates(weights_prev) + b
        rate_sum += seen
        owner_w = np.concatenate(([1.0], mu))
        weights = _linear_weights(A.shape[0], linear, mu)
        for blk in blocks:
            w = blk.coef * owner_w[blk.owner + 1]
            if lam_kind == "ftl":
                blk.lam = w * blk.atom.gradient(rate_sum[blk.idx] / (t + 1))
            else:
                blk.xi = blk.answer(w)
            weights[blk.idx] += np.where(np.isnan(blk.fixed), blk.lam, 0.0)
        current = player.theta.copy()
        snaps.offer(t, current, owner_w)
        weights_prev = weights
        player.step(weights)
        if lam_kind == "ogd":
            step = lambda_learning_rate / np.sqrt(t + 1) if jumps else lambda_learning_rate
            for blk in blocks:
                free = np.isnan(blk.fixed)
                blk.lam = np.clip(blk.lam + step * free * (seen[blk.idx] - blk.xi), -lambda_bound, lambda_bound)
        # the current iterate and the mixture of the recent ones, in one vectorised evaluation
        both = np.column_stack([r, recent.push(r)])
        obj, cons = program.values(both)
        phi = cons[:, 0] if lam_rates == "true" else np.array([c.value(seen) for c in program.constraints])
        if m:
            mu = multipliers.update(phi)
        judged = program.flag_undefined(both, cons)
        here, mixed = stopper.merit(obj[0], judged[:, 0]), stopper.merit(obj[1], judged[:, 1])
        stop = stopper.update(t, here, mixed)
        if stopper.best_iterate == t:
            snaps.mark_best(t, current, owner_w)
        if verbose and (t % max(1, max_iter // 10) == 0 or t == max_iter - 1 or stop):
            print(f"[{solver}] iter {t + 1}/{max_iter} objective {here[1]:.4f} max violation {here[0]:+.4f}")
        if callback is not None and callback(t, current, r) is False:
            break
        if stop:
            break
        if certify and (t + 1) % _CERTIFY_EVERY == 0 and t + 1 < max_iter:
            done, optimal = _priced_out(_played(snaps, program, model, player, mu, n_candidates, t), program, model,
                                        player, oracle, linear)
            if optimal:
                return done
    traj = _played(snaps, program, model, player, mu, n_candidates, t)
    if theta_kind == "oracle" and program.is_linear:
        traj = _priced_out(traj, program, model, player, oracle, linear, final=True)[0]
    return traj


def _played(snaps, program, model, player, mu, n_candidates: int, t: int) -> MetricTrajectory:
    """The game's candidates after round ``t``: the snapshots and the current model."""
    params, mus = snaps.candidates(n_candidates, (player.theta.copy(), np.concatenate(([1.0], mu))))
    return trajectory(program, model, player.X, params, mus, t + 1)


def _priced_out(traj: MetricTrajectory, program: MetricProgram, model, player, oracle,
                linear, final: bool = False) -> tuple[MetricTrajectory, bool]:
    """``traj`` with the oracle's answers that improve the candidates' LP appended (see
    :mod:`._column_generation`), and whether its LP ended feasible: priced out to the end from
    there, the m-stochastic solution is the exact optimum over the oracle's class, not only over
    the answers the game played. The game stops on a feasible LP, and on the ``final`` one
    either way: a warning then says when the round limit cut the pricing short."""
    k_rates = program.A.shape[0]

    def values(theta):
        one = trajectory(program, model, player.X, theta[None, :], traj.multipliers[:1], 0)
        return one.objective[0], one.constraints[:, 0], one

    def respond(mu, weight):
        return oracle.best_response(player.costs(_linear_weights(k_rates, linear, mu, weight)))

    priced = price_out(values, respond, traj.objective, traj.constraints, _MAX_PRICED)
    added = [one for _, _, one in priced.scored]
    if not priced.complete and (final or priced.feasible):  # the game stops on this LP
        warn(f"Column generation stopped at its limit of {_MAX_PRICED} added models with models still "
             "pricing out: the m_stochastic solution is the best mixture of the candidates found, which "
             "may be short of the optimum over the oracle's class (with hundreds of constraints, each "
             "round adds one model).", ConvergenceWarning)
    if not added:
        return replace(traj, lp=priced.lp), priced.feasible
    # each answer with the prices it answered
    added = [replace(one, multipliers=mu[None, :]) for one, mu in zip(added, priced.multipliers)]
    return appended(traj, added, lp=priced.lp), priced.feasible


def appended(traj: MetricTrajectory, added: list[MetricTrajectory], **changes) -> MetricTrajectory:
    """``traj`` with the candidates of ``added`` after its own, which stay the game's
    (``n_played``): the added ones are outside ``"T_stochastic"`` and ``"last"``. ``changes``
    replace other fields (the LP)."""
    return replace(traj, params=np.vstack([traj.params, *(a.params for a in added)]),
                   objective=np.concatenate([traj.objective, *(a.objective for a in added)]),
                   constraints=np.hstack([traj.constraints, *(a.constraints for a in added)]),
                   multipliers=np.vstack([traj.multipliers, *(a.multipliers for a in added)]),
                   rates=np.hstack([traj.rates, *(a.rates for a in added)]),
                   n_played=traj.params.shape[0] if traj.n_played is None else traj.n_played, **changes)


def _linear_weights(k: int, linear, mu, objective: float = 1.0) -> np.ndarray:
    weights = np.zeros(k)
    owner_w = np.concatenate(([objective], mu))
    for owner, coef, row in linear:
        weights[row] += coef * owner_w[owner + 1]
    return weights


@dataclass
class MetricTrajectory(Trajectory):
    """A :class:`Trajectory` with the snapshots' rates, shape (K, n_snapshots): the mixture
    selection of non-linear metrics works on them."""

    rates: np.ndarray
    #: the game's own snapshots come first; candidates after them were priced out of its LP
    n_played: int | None = None
    #: the LP over all the candidates (a ShrinkResult), when column generation solved it last
    lp: object | None = None


def trajectory(program: MetricProgram, model, X, params: np.ndarray, multipliers: np.ndarray,
               n_iter: int) -> MetricTrajectory:
    """Snapshots with their rates and their objective and constraint values on the training rows."""
    rates = decision_rates(model, X, params, program.A) + program.b[:, None]
    obj, cons = program.values(rates)
    return MetricTrajectory(params, np.asarray(obj, dtype=float),
                            np.asarray(cons, dtype=float).reshape(-1, params.shape[0]), multipliers, n_iter, rates)
