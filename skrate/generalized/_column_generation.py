"""Column generation over an exact oracle: the m-stochastic solution of a linear program, exactly.

When the objective and every constraint are linear in the rates, the best mixture of the
game's candidates is a linear program (:func:`skrate.solutions.shrink`) whose dual values
``mu`` price the constraints. A model can improve that mixture only if its Lagrangian
``f + mu . g`` is below the mixture's, and the plug-in oracle's best response at ``(1, mu)`` is
the model of least Lagrangian among all thresholds of ``eta`` (per group cell): when it does not
improve, no such model does, and the mixture is the optimum over the oracle's whole class.
Otherwise it joins the candidates and the LP is solved again (Dantzig-Wolfe decomposition: the
oracle is the pricing problem). Each round is one cumulative sum over the rows, one product of
``X`` with the new parameters and a small LP. The game checks this every few rounds and stops
once the LP is feasible and priced out: the optimum is then certified.

A game's multipliers oscillate around the optimum's, and the optimal mixture may need a pair of
answers on either side of it that the game did not happen to play: a stochastic post-processing
of a probability model under exact demographic parity is an example (a few rows' worth of
error above the optimum after any number of rounds, until priced out here).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.optimize import linprog

from ..solutions._shrink import shrink

#: Lagrangian improvements at most this are rounding: the oracle's costs are rounded at 12 digits.
_GAP = 1e-10


def price_out(values: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
              respond: Callable[[np.ndarray], np.ndarray], params: np.ndarray, objective: np.ndarray,
              constraints: np.ndarray, max_rounds: int) -> tuple[np.ndarray, ...]:
    """The columns that price out against the candidates' LP, until none does.

    Parameters
    ----------
    values : callable
        ``values(theta)``: the objective and the constraint values of the model ``theta``.
    respond : callable
        ``respond(mu, w)``: the oracle's model of least ``w f + mu . g``.
    params, objective, constraints :
        The candidates (rows of ``params``), their objective values and their constraint values,
        shape (m, k).
    max_rounds : int
        Largest number of oracle calls.

    Returns
    -------
    new_params, new_objective, new_constraints, new_multipliers :
        The added candidates, in the shapes of the inputs, and the multipliers ``(w, mu)`` each
        answered. While no mixture of the candidates meets the constraints, the columns are
        priced against the LP of the least largest violation (``w = 0``); a model that lowers it
        joins them, until a feasible mixture exists or none does.
    """
    added_params, added_obj, added_cons, added_mu = [], [], [], []
    obj, cons = objective, constraints
    for _ in range(max_rounds):
        lp = shrink(obj, cons)
        if lp.feasible:
            weight, mu, current = 1.0, lp.multipliers, lp.weights @ (obj + lp.multipliers @ cons)
        else:  # no mixture meets the constraints yet: price the least largest violation
            weight, mu, current = 0.0, *_violation_prices(cons)
        theta = respond(mu, weight)
        f, g = values(theta)
        if weight * f + mu @ g >= current - _GAP:
            break
        added_params.append(theta)
        added_obj.append(f)
        added_cons.append(g)
        added_mu.append(np.r_[weight, mu])
        obj, cons = np.r_[obj, f], np.column_stack([cons, g])
    k, m = len(added_params), constraints.shape[0]
    return (np.reshape(added_params, (k, params.shape[1])), np.asarray(added_obj, dtype=float),
            np.reshape(np.column_stack(added_cons) if k else np.empty((m, 0)), (m, k)),
            np.reshape(added_mu, (k, m + 1)))


def _violation_prices(constraints: np.ndarray) -> tuple[np.ndarray, float]:
    """Dual prices ``mu`` (``>= 0``, summing to 1) of the LP ``min s`` s.t. ``constraints @ p <= s``
    over mixtures ``p``, and its value: a model with ``mu . g`` below it lowers the least largest
    violation."""
    m, k = constraints.shape
    res = linprog(np.r_[np.zeros(k), 1.0], A_ub=np.hstack([constraints, -np.ones((m, 1))]), b_ub=np.zeros(m),
                  A_eq=np.r_[np.ones(k), 0.0][None, :], b_eq=[1.0],
                  bounds=[(0, None)] * k + [(None, None)], method="highs-ds")
    return np.clip(-res.ineqlin.marginals, 0.0, None), float(res.fun)
