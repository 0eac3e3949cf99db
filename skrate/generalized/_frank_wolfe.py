"""Frank-Wolfe, SPADE and NEMSIS as special cases of the three-player game.

Narasimhan, Cotter and Gupta (NeurIPS 2019, Section 4) show the earlier algorithms for convex
metrics are the three-player game with particular players:

* Frank-Wolfe (Narasimhan et al. 2015): a cost-sensitive oracle against a follow-the-leader
  lambda-player, ``lam_t = grad psi(average rates so far)``; the uniform average of the
  oracle's answers is the Frank-Wolfe iterate with step ``1 / t``;
* SPADE (Narasimhan, Kar and Jain 2015): gradient steps for the model and gradient ascent for
  the dual variables, both on surrogate rates;
* NEMSIS (Kar, Li, Narasimhan et al. 2016): surrogate model steps against a follow-the-leader
  dual player on the running average of surrogate rates.

One loop (:func:`~skrate.generalized._three_player.solve_three_player`) plays them all; these
functions only name the configurations.
"""

from __future__ import annotations

from ._three_player import solve_three_player


def frank_wolfe(program, X, oracle, **kwargs):
    """Frank-Wolfe with a plug-in cost-sensitive oracle (linear candidates)."""
    from ..models import LinearModel

    return solve_three_player(program, LinearModel(oracle.theta_eta.shape[0] - 1), X, solver="frank_wolfe",
                              oracle=oracle, **kwargs)


def spade(program, model, X, **kwargs):
    """SPADE: surrogate primal and dual gradient steps."""
    return solve_three_player(program, model, X, solver="spade", **kwargs)


def nemsis(program, model, X, **kwargs):
    """NEMSIS: surrogate primal steps, follow-the-leader dual player on surrogate rates."""
    return solve_three_player(program, model, X, solver="nemsis", **kwargs)
