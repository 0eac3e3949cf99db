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
from dataclasses import dataclass

import numpy as np

from ..solutions._shrink import ShrinkResult, shrink

#: Lagrangian improvements at most this are rounding: the oracle's costs are rounded at 12 digits.
_GAP = 1e-10


@dataclass
class Priced:
    """What column generation added to the candidates, and where it stopped.

    Attributes
    ----------
    scored : list
        What ``values`` returned for each added model, in order.
    multipliers : ndarray of shape (n_added, m + 1)
        The prices ``(w, mu)`` each added model answered.
    feasible : bool
        Whether some mixture of the candidates, the added ones included, meets the constraints:
        then, when ``complete``, their LP is the optimum over the oracle's class.
    lp : ShrinkResult
        That LP, over all the candidates, the added ones included.
    complete : bool
        Whether no model priced out any more; False when ``max_rounds`` cut the pricing short.
    """

    scored: list
    multipliers: np.ndarray
    feasible: bool
    lp: ShrinkResult
    complete: bool


def price_out(values: Callable[[np.ndarray], tuple], respond: Callable[[np.ndarray, float], np.ndarray],
              objective: np.ndarray, constraints: np.ndarray, max_rounds: int) -> Priced:
    """Add the oracle's models that price out against the candidates' LP, until none does.

    Parameters
    ----------
    values : callable
        ``values(theta)``: the objective and the constraint values of the model ``theta`` first,
        then anything else to keep of it (returned in ``Priced.scored``).
    respond : callable
        ``respond(mu, w)``: the oracle's model of least ``w f + mu . g``.
    objective, constraints :
        The candidates' objective values and their constraint values, shape (m, k).
    max_rounds : int
        Largest number of oracle calls.

    Returns
    -------
    Priced
        While no mixture of the candidates meets the constraints, models are priced against the
        LP of the least largest violation (``w = 0``): one that lowers it joins them, until a
        feasible mixture exists or none does; then against the LP's duals (``w = 1``).
    """
    scored, prices = [], []
    obj, cons = objective, constraints
    lp = shrink(obj, cons)
    complete = False
    for _ in range(max_rounds):
        if lp.feasible:
            weight, mu, current = 1.0, lp.multipliers, lp.weights @ (obj + lp.multipliers @ cons)
        else:
            weight, mu, current = 0.0, lp.violation_prices, lp.least_violation
        record = values(respond(mu, weight))
        f, g = record[0], record[1]
        if weight * f + mu @ g >= current - _GAP:
            complete = True
            break
        scored.append(record)
        prices.append(np.r_[weight, mu])
        obj, cons = np.r_[obj, f], np.column_stack([cons, g])
        lp = shrink(obj, cons)
    return Priced(scored, np.reshape(prices, (len(prices), constraints.shape[0] + 1)), lp.feasible, lp,
                  complete)
