"""ConstrainedClassifier: minimise a rate subject to rate constraints."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils import _safe_indexing
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from ._base import RateClassifierBase, warn_uncovered
from .exceptions import InfeasibleConstraintsWarning, UndefinedRateError
from .models import LinearModel, MLPModel, folding_callback, input_scale, scaled_input
from .models._fitted import FittedEstimators
from .generalized._names import as_metric, refuse_score, score_loss
from ._holdout import check_goal_columns, check_held_out_values, holdout_split
from .problem import (compile_problem, confidence_margins, evaluate_term, least_violation, ratio_bound_out_of_range,
                      report_rows, simultaneous_margins, tightened, violation_rows, zero_denominator_reason)
from .problem._margins import own_units
from .rates import Expression, Ratio, as_constraints, as_expression
from .solutions import SOLUTIONS, StochasticModel, best_iterate, shrink
from .solvers import GAME_SOLVERS, SURROGATES, solve_rate_game
from .solvers._rate_game import candidate_decisions
from .solvers._oracle_game import ORACLE_PLAYERS, ORACLE_SOLVERS
from .solvers._players import PLAYERS, SwapRegretPlayer
from ._oracle import check_oracle_params, fit_oracle_game
from .utils._frames import is_frame
from .utils._validation import unfitted_on_error
from .utils._warnings import warn

if TYPE_CHECKING:
    import pandas as pd
    import scipy.sparse as sp
    from numpy.typing import ArrayLike


# Default multiplier steps. The hinge Lagrangian's additive steps on surrogate rates (which
# exceed the 0-1 rates) need a smaller one than the players on true rates.
LAMBDA_STEPS = {"proxy_lagrangian": 2.0, "proxy_lagrangian_ext": 2.0, "lagrangian": 0.5,
                "oracle_proxy_lagrangian": 10.0, "oracle_lagrangian": 2.0}
# The swap-regret player's step on a column of its matrix is scaled by that column's weight,
# about 1 / (m + 1): its defaults, set on problems of up to this many constraints, grow with
# m + 1 beyond them. With the step fixed, 420 constraints left the objective a weight of 0.003
# and the model near the trivial one.
SWAP_STEP_CONSTRAINTS = 8


#: Games played again, at most, when no mixture of the candidates meets the widened "auto" margins.
_REPLAYS = 2
#: batch_size="auto": full-batch up to this many training rows, minibatches of at least
#: _AUTO_BATCH rows (a hundredth of them, five passes over the rows in 500 iterations) beyond.
_FULL_BATCH_MAX, _AUTO_BATCH = 50_000, 10_000


def _pinned_by_margins(constraints: list, margins: np.ndarray) -> tuple[int, int] | None:
    """The first pair of constraints that state an equality (one's linear form is the other's
    negative) and both carry a positive margin, which no value can meet; None if there is none."""
    seen: dict = {}
    for j in np.flatnonzero(margins > 0):
        g = constraints[j].expression
        if -g in seen:
            return seen[-g], int(j)
        seen.setdefault(g, int(j))
    return None


class ConstrainedClassifier(RateClassifierBase):
    """Binary classifier trained to minimise a rate subject to rate constraints.

    The constraints -- fairness across groups, recall, coverage, churn against a baseline,
    precision, and any linear combination of rates -- are stated declaratively as spec
    objects (``tpr(group="race") >= 0.95 * tpr()``) or strings
    (``"tpr[race] >= 0.95 * tpr"``). Training plays the proxy-Lagrangian game of Cotter et
    al. (2019): the model minimises a surrogate of the weighted rates while a swap-regret
    lambda-player weighs the true, non-differentiable 0-1 constraints. The result is a
    distribution over snapshots of the model, shrunk by a linear program to at most m + 1
    models (m constraints) that meet the constraints on the training data; the deterministic
    best iterate is available too.

    Parameters
    ----------
    constraints : Constraint, str, or list of them, default=None
        Rate constraints. A bare group column (``tpr[race]``, ``tpr(group="race")``) expands
        to one constraint per value of that column at fit time. A constraint times a positive
        constant trains the same model: the solvers read each one's linear form divided by its
        largest coefficient (``100 * tpr >= 80`` as ``tpr - 0.8 >= 0``).
    objective : str or Expression, default="error"
        The rate to minimise, e.g. ``"error"``, ``"fpr"``, ``"-tpr"`` or ``0.5 * fnr() + fpr()``.
    model : {"linear", "mlp"}, default="linear"
        Score function: ``x . w + b`` or a ReLU network with ``hidden_layer_sizes``.
    hidden_layer_sizes : tuple of int, default=(16,)
        Hidden layers of the ``"mlp"`` model.
    solver : {"proxy_lagrangian", "proxy_lagrangian_ext", "lagrangian", "oracle_lagrangian", \
            "oracle_proxy_lagrangian"}, default="proxy_lagrangian"
        The lambda-player: swap regret ("0-1 swap", Algorithm 3), external regret ("0-1 ext",
        Algorithm 4), or the hinge-relaxed Lagrangian baseline (Algorithm 5). The swap-regret
        player holds an (m + 1) x (m + 1) matrix for m constraints: a step costs O(m^2), passes
        over the matrix and a Krylov solve for its stationary distribution (a few to a few tens
        of products with it). With thousands of constraints (a rule over every value of a column
        of thousands) it dominates the fit, where ``"proxy_lagrangian_ext"`` costs O(m) a step
        (``doc/benchmarks/scaling.md``). With an
        ``estimator``: ``"oracle_lagrangian"`` (Algorithm 1) or ``"oracle_proxy_lagrangian"``
        (Algorithm 2), see ``estimator``.
    surrogate : {"hinge", "logistic", "sigmoid"}, default="hinge"
        Stand-in for the indicator in the model's updates.
    solution : {"m_stochastic", "best", "last", "T_stochastic"}, default="m_stochastic"
        Which solution ``predict``/``predict_proba`` use. All four are computed by ``fit``
        (``solutions_``); this only picks the default, and can be changed after fitting.
        The oracle solvers keep only the fitted estimators of the first three (at most m + 3
        models), unless ``solution="T_stochastic"`` at fit time, which keeps all of them.
        Only ``"m_stochastic"`` is guaranteed to meet the constraints on the training data
        when a feasible mixture exists; ``"best"`` is the deterministic candidate ranked best
        by objective and violation together (Eq. 18). It can break a constraint, by a few
        points of a rate when the game's iterates oscillate around a tight one, even where
        feasible candidates exist; ``fit`` warns about it (``feasible_`` describes
        ``"m_stochastic"`` either way).
    learning_rate : float, default=0.05
        Adam step size of the model parameters.
    lambda_learning_rate : float or "auto", default="auto"
        Step size of the multipliers. ``"auto"`` takes 0.5 for ``"lagrangian"`` (additive
        steps on surrogate constraints), 10.0 for ``"oracle_proxy_lagrangian"`` (its game plays
        tens of fits, not hundreds of steps, so its multipliers must move faster) and 2.0
        for the other solvers. For ``"proxy_lagrangian"`` and ``"oracle_proxy_lagrangian"``,
        whose swap-regret player moves each weight in proportion to its size (about
        ``1 / (m + 1)``), these hold up to
        ``m = 8`` constraints and grow as ``(m + 1) / 9`` beyond: with a fixed step, hundreds
        of constraints leave the objective almost no weight and the model near a trivial one.
    alpha : float, default=1e-4
        L2 penalty on the weights (not the intercept). Columns whose mean exceeds four standard
        deviations (a year) are centred, and columns whose largest magnitude then lies outside
        ``[2**-2, 2**5]`` (money in cents, micro-units) are divided by the power of two nearest
        their root mean square, before the game plays on them, as a scaler would, so that one
        step moves every column's scores alike; their weights are penalised in those units and
        folded back onto ``X`` (``candidates_``, ``callback``). Other columns, one-hot and
        standardised ones among them, are used as given.
    max_iter : int, default=500
        Number of iterations: a fixed budget for the game solvers. The oracle solvers fit one
        model per iteration, each kept as a candidate, so they play at most
        ``min(max_iter, n_candidates)`` iterations, and stop earlier once ``tol`` certifies the
        mixture.
    batch_size : int, "auto" or None, default="auto"
        None trains full-batch; an int trains on minibatches of that size. ``"auto"`` trains
        full-batch up to 50,000 rows and on minibatches of ``max(10_000, n_samples // 100)`` rows
        beyond: a full-batch iteration reads every row twice, and on a million rows of 20
        features the 500 of them took 29 s where minibatches of 10,000 took 3.5 s, to within
        0.001 of the training error, the rule met by both (``doc/benchmarks/rows.md``). The candidates, the LP and
        the reports read every row either way.
    n_candidates : int, default=100
        Evenly spaced snapshots of the iterates kept as candidates for the solutions: at most
        this many, besides the last iterates (see ``candidates_``). For the oracle solvers,
        every fitted model is a candidate: this bounds the number of fits.
    validation_fraction : float or None, default=None
        Hold out this fraction of the rows, stratified by label and by the groups the
        constraints name, for the two-dataset proxy-Lagrangian (Cotter et al., ICML 2019):
        the model trains on the rest while the multipliers and the choice of the solution
        (LP shrink, best iterate) use the held-out constraint values, so the solution is chosen
        on rows the model did not train on. It costs training rows: on the benchmark tasks
        (:doc:`/generalization`) ``margin`` carries constraints to new data, the held-out
        split alone does not. ``fit(..., validation_mask=...)`` chooses the held-out rows
        explicitly. Not with ``solver="lagrangian"``, whose multipliers follow surrogate rates of
        the training rows. The fraction counts rows: a weighted row goes wholly to one side, and
        the weights do not balance the sides' total weights. (Rows repeated instead of weighted
        would put copies of a row on both sides, training on rows the multipliers then check.)
    margin : "auto", float, array-like or None, default=None
        Tighten each constraint. A number (or one per constraint) moves its bound, in the
        constraint's own units: ``lhs <= rhs - margin``, ``lhs >= rhs + margin``
        (``precision >= 0.72`` for ``precision >= 0.7`` and 0.02). ``"auto"`` tightens the linear
        form ``g <= 0`` to ``g + margin <= 0`` with a confidence bound on ``g``'s estimate from
        its slices' sizes, sample weights read as importance weights, not as counts of repeated
        rows (see :func:`skrate.problem.confidence_margins`; for a ratio ``N / D
        >= c``, ``g`` is ``c D - N``), measured on the sample the solution is chosen on (the
        held-out part when there is one). After training, each margin widens where needed to
        one that holds for every mixture of the candidates at once
        (:func:`skrate.problem.simultaneous_margins`), so that choosing the solution on those
        rows does not lower the level; when no mixture meets the wider margins, the game plays
        again aiming at them (at most twice more, ``callback`` and ``verbose`` following every
        game; ``n_iter_`` counts the last).
    margin_confidence : float, default=0.95
        Per-constraint probability that a constraint met with ``margin="auto"`` holds on new
        data, whichever mixture of the candidates the solution is (measured in the user guide's
        "Constraints that hold on new data").
    random_state : int, RandomState instance or None, default=None
        Seeds minibatches, MLP initialisation, the held-out split, the per-row draws of
        stochastic predictions and the ``estimator``'s ``random_state`` parameters left None
        (its steps' and sub-estimators' included).
    verbose : int, default=0
        Print progress when > 0: every tenth of the iterations for the game solvers, every
        fit for the oracle solvers.
    callback : callable, default=None
        ``callback(iteration, params, values)`` after every iteration: ``params`` are the model
        parameters the iteration played (before its update; with the oracle solvers, the
        estimator fitted at that iteration, a certificate fit included, see ``tol``) and
        ``values`` their objective and constraint values the multipliers were updated with, on
        the batch (surrogate rates for ``"lagrangian"``; a certificate's update nothing), each
        constraint's divided by its largest coefficient (see ``constraints``).
        With a held-out set (``validation_fraction``, ``validation_mask``) the constraint values are
        those on the held-out rows and the objective is the training rows'. Training stops when
        it returns the object ``False``; any other value, ``None``, ``0`` and ``numpy.False_``
        included, continues.
    estimator : classifier or None, default=None
        For the oracle solvers: a scikit-learn classifier whose ``fit`` accepts
        ``sample_weight`` (e.g. ``HistGradientBoostingClassifier()``), or a ``Pipeline`` whose
        final step does. Each iteration fits a copy on the cost-sensitive reduction of the
        current Lagrangian and every fitted copy is a candidate; after ``fit`` only the copies
        the ``"m_stochastic"``, ``"best"`` and ``"last"`` solutions use are kept (at most
        m + 3), all of them when ``solution="T_stochastic"``. ``X`` reaches the estimator as
        given (a DataFrame keeps its dtypes and column names, so text and categorical columns
        work with an estimator or pipeline that encodes them; a sparse ``X`` arrives as CSR).
        ``surrogate``, ``learning_rate``, ``alpha`` and ``batch_size`` do not apply, and
        ``model="mlp"`` is refused. See :doc:`/oracle`.
    n_jobs : int or None, default=None
        Threads predicting the fitted estimators of the oracle solvers in parallel (read when
        predicting: ``set_params(n_jobs=...)`` on a fitted model takes effect).
    tol : float or None, default=1e-4
        Early stopping of the oracle solvers: once the best mixture of the candidates (the
        m-stochastic LP) is feasible and has improved neither its largest violation nor its
        objective by more than ``tol`` over 3 consecutive iterations, one more model is fitted
        at the LP's dual multipliers; fitting stops when that model's Lagrangian shows no
        improvement of the mixture by more than ``tol`` (a column-generation certificate, see
        :doc:`/oracle`). None fits every iteration (``min(max_iter, n_candidates)``).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    n_features_in_ : int
        Number of columns of ``X`` in ``fit``.
    feature_names_in_ : ndarray of str
        Present when X was a DataFrame with string column names.
    constraints_ : list of Constraint
        The constraints after expanding group columns.
    objective_ : Expression
        The objective as parsed (``error_rate`` by default).
    candidates_ : ndarray of shape (n_snapshots, n_params)
        Snapshots of the model parameters (with the oracle solvers, the candidate's index): up to
        ``n_candidates`` evenly spaced over the iterations, then the last iterate and the
        parameters its update led to; ``"best"`` is the one
        of them ranked best (Eq. 18), as in Cotter et al.
    estimators_ : list of fitted estimators or None
        Oracle solvers only: the estimator fitted at each iteration, aligned with
        ``candidates_``; ``None`` where it was dropped after fit (see ``solution``).
    solutions_ : dict of str to ndarray
        Weights over ``candidates_`` of every solution.
    weights_ : ndarray of shape (n_snapshots,)
        Weights of the solution selected by ``solution``.
    train_objective_ : ndarray of shape (n_snapshots,)
        Objective of each candidate on the training data (the training part, with a held-out
        set).
    train_constraints_ : ndarray of shape (n_constraints, n_snapshots)
        Constraint values ``g_j`` (``<= 0`` is met; margins included) of each candidate on the
        data the solution is chosen on: the training data, or the held-out rows when there are
        some (``validation_fraction``, ``validation_mask``).
    feasible_ : bool
        Whether the m-stochastic solution meets every constraint (with its margin) on the
        data the solution is chosen on, every ratio defined there (a ratio over a zero
        denominator is infinite, met by a lower bound, unless its numerator is 0 too:
        precision with no positive prediction is undefined), whatever ``solution`` is.
        ``fit`` warns (``InfeasibleConstraintsWarning``) when it does not, and when the
        selected solution, if another, does not.
    margins_ : ndarray of shape (n_constraints,)
        The margin of each constraint in its own units, as its violation is reported (zeros
        without ``margin``). ``"auto"`` sets a ratio's margin ``m`` on its linear form
        ``c D - N``; it is shown as ``m / D``, ``D`` the denominator of the solution selected
        at fit time on the data the solution is chosen on (infinite where ``D`` is 0: the
        linear form with the margin, ``c D - N + m``, then says whether the bound is met).
    fit_report_ : DataFrame or list of dict
        Per constraint of the solution selected at fit time (``set_params(solution=...)``
        afterwards does not redo it; :meth:`constraint_report` on the training rows reads the
        current one): the margin and the violation (``lhs - rhs``
        for ``<=``, ``rhs - lhs`` for ``>=``, ratios in their own units, as in
        :meth:`constraint_report`) on the training part and on the held-out part (NaN
        without one).
    multipliers_ : ndarray of shape (n_snapshots, n_constraints + 1)
        The weights of (objective, constraints) the lambda-player played when each candidate
        was produced: a distribution for the proxy-Lagrangian players, ``(1, lam)`` for the
        Lagrangian ones. With the oracle solvers, a certificate fit (see ``tol``) carries the
        LP's ``(1, mu)``.
    n_iter_ : int
        Iterations played; with the oracle solvers, estimators fitted (certificate included).
    random_seed_ : int
        Seed of the per-row draws of ``predict`` (from ``random_state``), so a row's
        decision is reproducible.

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization with
    Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and Other Goals.
    Journal of Machine Learning Research 20(172):1-59, 2019.

    Examples
    --------
    >>> from skrate import ConstrainedClassifier
    >>> from skrate.datasets import load_compas
    >>> data = load_compas()
    >>> clf = ConstrainedClassifier(constraints="tpr[race] <= tpr + 0.05", random_state=0)
    >>> clf = clf.fit(data.data, data.target, groups=data.groups)
    >>> bool(clf.feasible_)
    True
    """

    _text_advice = (", or use solver='oracle_proxy_lagrangian' with an estimator that encodes them itself "
                    "(a Pipeline, or HistGradientBoostingClassifier with categorical_features)")

    _parameter_constraints = {
        "constraints": [None, list, tuple, str, object],
        "objective": [str, Expression, Ratio],
        "model": [StrOptions({"linear", "mlp"})],
        "hidden_layer_sizes": [tuple, list],
        "solver": [StrOptions(set(GAME_SOLVERS) | set(ORACLE_SOLVERS))],
        "estimator": [None, HasMethods(["fit", "predict"])],
        "n_jobs": [None, Integral],
        "tol": [None, Interval(Real, 0, None, closed="left")],
        "surrogate": [StrOptions(set(SURROGATES))],
        "solution": [StrOptions(set(SOLUTIONS))],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "lambda_learning_rate": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [None, StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "n_candidates": [Interval(Integral, 1, None, closed="left")],
        "validation_fraction": [None, Interval(Real, 0, 1, closed="neither")],
        "margin": [None, StrOptions({"auto"}), Interval(Real, 0, None, closed="left"), "array-like"],
        "margin_confidence": [Interval(Real, 0.5, 1, closed="neither")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "callback": [None, callable],
    }

    def __init__(
        self,
        constraints=None,
        objective="error",
        *,
        model="linear",
        hidden_layer_sizes=(16,),
        solver="proxy_lagrangian",
        surrogate="hinge",
        solution="m_stochastic",
        learning_rate=0.05,
        lambda_learning_rate="auto",
        alpha=1e-4,
        max_iter=500,
        batch_size="auto",
        n_candidates=100,
        validation_fraction=None,
        margin=None,
        margin_confidence=0.95,
        random_state=None,
        verbose=0,
        callback=None,
        estimator=None,
        n_jobs=None,
        tol=1e-4,
    ):
        self.constraints = constraints
        self.objective = objective
        self.model = model
        self.hidden_layer_sizes = hidden_layer_sizes
        self.solver = solver
        self.surrogate = surrogate
        self.solution = solution
        self.learning_rate = learning_rate
        self.lambda_learning_rate = lambda_learning_rate
        self.alpha = alpha
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.n_candidates = n_candidates
        self.validation_fraction = validation_fraction
        self.margin = margin
        self.margin_confidence = margin_confidence
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback
        self.estimator = estimator
        self.n_jobs = n_jobs
        self.tol = tol

    def _make_model(self, n_features: int):
        if self.model == "linear":
            return LinearModel(n_features)
        return MLPModel(n_features, self.hidden_layer_sizes)

    # not skipped: the oracle solvers fit the user's estimator, whose parameters must be validated
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X: ArrayLike | sp.spmatrix | sp.sparray, y: ArrayLike, *,
            groups: ArrayLike | dict[str, ArrayLike] | pd.DataFrame | None = None,
            sample_weight: ArrayLike | None = None, baseline: ArrayLike | None = None,
            validation_mask: ArrayLike | None = None) -> "ConstrainedClassifier":
        """Train on ``X, y`` with the constraints measured on ``groups``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Numeric features. When a DataFrame, its columns can also be named in slices. A
            sparse matrix (one-hot encodings, counts) stays sparse, read as CSR.
        y : array-like of shape (n_samples,)
            Binary labels; ``classes_[1]`` is the positive class.
        groups : DataFrame, dict of arrays, or array-like of shape (n_samples,), default=None
            Group membership columns named by the constraints (a 1-D array is the column
            ``"group"``). Routed by metadata routing: ``set_fit_request(groups=True)``.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the examples in every rate. The rates read only their ratios, and so do
            the built-in models: weights whose largest entry lies beyond ``2**900`` or below
            ``2**-900`` are divided by its power of two first (exactly), so that their totals
            stay finite. A user's ``estimator`` gets weights that sum to their total, as a
            weight ``k`` is ``k`` repeated rows: their scale sets the balance of its
            regularisation, as it would for the estimator alone (whether it then fits the same
            model as on repeated rows is the estimator's own property: a weighted quantile
            binning, as ``HistGradientBoostingClassifier``'s, does not). A row of weight 0 is
            dropped, as if it were not given: its group values expand no constraint, and it
            lands on neither side of a held-out split.
        baseline : array-like of shape (n_samples,), default=None
            The baseline model's decisions, for churn, wins and losses constraints: its predicted
            class labels (``old_model.predict(X)``; read as labels whenever every value is one of
            ``classes_``) or 0/1 decisions.
        validation_mask : array-like of bool or 0/1 of shape (n_samples,), default=None
            Rows held out for the multipliers and the choice of solution (overrides
            ``validation_fraction``). To use a separate validation set, stack it under the
            training rows and mark it here.

        Returns
        -------
        self : ConstrainedClassifier
        """
        with unfitted_on_error(self):  # a failed (re)fit leaves no mix of old and new state
            return self._fit(X, y, groups=groups, sample_weight=sample_weight, baseline=baseline,
                             validation_mask=validation_mask)

    def _fit(self, X, y, *, groups=None, sample_weight=None, baseline=None, validation_mask=None):
        X_raw = X
        X, y = self._validate_binary(X, y)
        if self._raw_X and is_frame(X_raw):
            X = X_raw  # the estimator gets the DataFrame: its dtypes and column names
        objective = as_expression(self.objective)
        if isinstance(objective, Ratio):
            loss = score_loss(as_metric(objective)) or str(objective)
            raise ValueError(f"The objective {objective} is a ratio of rates; ConstrainedClassifier minimises linear "
                             f"combinations of rates. MetricOptimizer minimises ratios, under the same constraints: "
                             f"MetricOptimizer(metric={loss!r}, constraints=...).")
        refuse_score(self.objective, as_metric(objective), "ConstrainedClassifier minimises its objective")
        constraints = as_constraints(self.constraints)
        self._expand_keys = {k for c in constraints for k in c.expand_keys}  # read by reports, not the parameter
        data = self._rate_data(X_raw, X, y, groups, sample_weight, baseline, validation_mask=validation_mask)
        # checked on the rows as given, before those of weight 0 go
        given = self._check_mask(validation_mask, data.n)
        data, X, mask = self._without_weightless(data, X, given)
        self._check_sides(given, mask)
        _, gen, seed = self._random_streams()
        check_goal_columns(objective, constraints, data)
        train, held = self._split(data, constraints, mask, gen)
        # where the held-out rows come from, for errors about them (a mask overrides the fraction)
        source = "validation_mask" if validation_mask is not None else f"validation_fraction={self.validation_fraction}"
        if held is not None and self.solver == "lagrangian":
            raise ValueError(f"solver='lagrangian' updates its multipliers on surrogate rates of the training rows, "
                             f"so it cannot use the held-out rows of {source}; use solver='proxy_lagrangian' or "
                             "'proxy_lagrangian_ext' with a held-out set.")
        fit_data = data if held is None else data.take(train)
        held_data = None if held is None else data.take(held)
        # errors on one side of a split name it: the full data may well have what that side lacks
        train_side = None if held is None else "training"
        problem = self._compile_part(objective, constraints, fit_data, data, source, train_side)
        expanded = problem.constraints  # over the training rows' group values, on both sides
        # the held-out rows measure the constraints alone: the objective is the training rows'
        # (a slice it names need not reach the held-out side)
        unmeasured = Expression((), 0.0)
        if held is not None:
            check_held_out_values(constraints, fit_data, held_data, source)
            held_problem = self._compile_part(unmeasured, expanded, held_data, data, source, "held-out")
        else:
            held_problem = None
        self.margins_ = self._margins(expanded, data if held is None else held_data)
        if isinstance(self.margin, str) or self.margin is None:
            for p in (problem, held_problem):  # "auto": the spread of each constraint's linear form g
                if p is not None:
                    p.tighten(self.margins_)
        else:  # the user's margins, in each constraint's own units (a ratio's included)
            tight = [tightened(c, m) for c, m in zip(expanded, self.margins_)]
            problem = self._compile_part(objective, tight, fit_data, data, source, train_side)
            held_problem = None if held is None else self._compile_part(unmeasured, tight, held_data, data, source,
                                                                        "held-out")
        check_oracle_params(self.estimator, self.solver, self.model)
        traj = self._play(problem, held_problem, X, data, train, held, gen)
        lp = None  # the LP shrink of traj, once solved
        if isinstance(self.margin, str):
            # "auto" covers the choice among the candidates too: each margin widens to one that
            # holds for every mixture of them at once, on the rows the solution is chosen on. The
            # game aimed at the narrower margins; when no mixture meets the wider ones, it plays
            # again aiming at them
            X_chosen, chosen_on = (X, data) if held is None else (_safe_indexing(X, held), held_data)
            # draws of their own: the game's stream depends on the row count, and rows of
            # weight 0 must not move the margins
            draws = np.random.default_rng([seed, 2])
            for replay in range(_REPLAYS + 1):
                extra = self._selection_allowance(expanded, traj, X_chosen, chosen_on, draws)
                traj.constraints = traj.constraints + (extra / problem.scale)[:, None]
                self.margins_ = self.margins_ + extra
                for p in (problem, held_problem):
                    if p is not None:
                        p.tighten(extra)
                lp = None if replay == _REPLAYS or not extra.any() else shrink(traj.objective, traj.constraints)
                if lp is None or lp.feasible:
                    break
                traj = self._play(problem, held_problem, X, data, train, held, gen)
        self.constraints_ = expanded
        self.objective_ = objective
        self._keep_trajectory(traj, seed)
        if (problem.scale != 1.0).any():  # the rows' values back on each constraint's g scale
            self.train_constraints_ = traj.constraints * problem.scale[:, None]
        lp = self._set_solutions(traj, lp)
        if self.solver in ORACLE_SOLVERS:
            if self.solution != "T_stochastic":
                # keep the models some solution other than the uniform mixture uses: at most m + 3
                self._model.keep(np.flatnonzero(sum(w for name, w in self.solutions_.items() if name != "T_stochastic")))
            self.estimators_ = self._model.estimators
        self.fit_report_ = self._fit_report(X, data, train, held, lp.feasible,
                                            problem if held is None else held_problem)
        return self

    def _play(self, problem, held_problem, X, data, train, held, gen):
        """Play the game on ``problem`` (and ``held_problem`` on the held-out rows); set the score
        model and return the trajectory."""
        if self.solver in ORACLE_SOLVERS:
            self._model, traj = fit_oracle_game(
                self, problem, _safe_indexing(X, train) if held is not None else X,
                None if held is None else (held_problem, _safe_indexing(X, held)), int(gen.integers(2**31)),
                float(data.sample_weight[train].sum()))
        else:
            vars(self).pop("estimators_", None)  # left by an earlier fit with an oracle solver
            self._model = self._make_model(X.shape[1])
            # the game plays on offset columns centred and columns in extreme units divided by powers
            # of two; its parameters are folded back, so the model, candidates_ and callback all
            # speak of X
            transform = input_scale(X, data.sample_weight)
            X_game = scaled_input(X, transform)
            fold = None if transform is None else partial(self._model.unscale, transform=transform)
            traj = solve_rate_game(
                problem, self._model, X_game[train] if held is not None else X_game, solver=self.solver,
                surrogate=self.surrogate, learning_rate=self.learning_rate,
                lambda_learning_rate=self._lambda_step(problem.n_constraints), alpha=self.alpha,
                max_iter=self.max_iter,
                batch_size=self._batch_size(X_game.shape[0] if held is None else train.size),
                n_candidates=self.n_candidates, rng=gen,
                held_out=None if held is None else (held_problem, X_game[held]),
                callback=folding_callback(self.callback, fold), verbose=self.verbose,
            )
            if fold is not None:
                traj.params = fold(traj.params)
        return traj

    def _selection_allowance(self, constraints, traj, X_chosen, chosen_on, draws) -> np.ndarray:
        """How far each "auto" margin must widen to hold for every mixture of the candidates on
        the rows the solution is chosen on (``X_chosen``, with ``chosen_on`` their rate data)."""
        decisions = candidate_decisions(self._model, X_chosen, traj.params)
        wider = simultaneous_margins(constraints, chosen_on, decisions, self.margin_confidence, draws)
        return np.maximum(wider - self.margins_, 0.0)

    def stochastic_model(self, solution: str | None = None) -> StochasticModel:
        model = super().stochastic_model(solution)
        if isinstance(model.model, FittedEstimators) and model.model.n_jobs != self.n_jobs:
            # n_jobs is read when predicting, as scikit-learn's ensembles read theirs
            model.model = FittedEstimators(model.model.estimators, n_jobs=self.n_jobs)
        return model

    stochastic_model.__doc__ = RateClassifierBase.stochastic_model.__doc__

    def _takes_raw_X(self) -> bool:
        return self.estimator is not None and self.solver in ORACLE_SOLVERS

    def _batch_size(self, n: int) -> int | None:
        """The game's minibatch size on ``n`` training rows (None: full-batch)."""
        if self.batch_size != "auto":
            return self.batch_size
        return None if n <= _FULL_BATCH_MAX else max(_AUTO_BATCH, n // 100)

    def _lambda_step(self, n_constraints: int) -> float:
        """The multipliers' step: the parameter, or for ``"auto"`` the solver's default, grown in
        proportion to ``m + 1`` beyond ``SWAP_STEP_CONSTRAINTS`` for the swap-regret players."""
        if self.lambda_learning_rate != "auto":
            return float(self.lambda_learning_rate)
        step = LAMBDA_STEPS[self.solver]
        if {**PLAYERS, **ORACLE_PLAYERS}.get(self.solver) is SwapRegretPlayer:
            step *= max(1.0, (n_constraints + 1) / (SWAP_STEP_CONSTRAINTS + 1))
        return step

    @staticmethod
    def _check_mask(validation_mask, n: int) -> np.ndarray | None:
        """``validation_mask`` as a boolean array of ``n`` entries; a clear error otherwise."""
        if validation_mask is None:
            return None
        if hasattr(validation_mask, "isna") and validation_mask.isna().any():  # a nullable boolean's NA
            raise ValueError(f"validation_mask has {int(validation_mask.isna().sum())} missing value(s); "
                             "mark every row True (held out) or False.")
        mask = np.asarray(validation_mask)
        if mask.dtype.kind in "iuf" and np.isin(mask, (0, 1)).all():
            mask = mask.astype(bool)  # a 0/1 indicator reads as the boolean mask it is
        if mask.shape != (n,) or mask.dtype != bool:
            raise ValueError(f"validation_mask must be a boolean (or 0/1) array with one entry per row "
                             f"({n}); got dtype {mask.dtype} and shape {mask.shape}.")
        return mask

    @staticmethod
    def _check_sides(given: np.ndarray | None, kept: np.ndarray | None) -> None:
        """``validation_mask`` (``given``; ``kept`` on the rows of positive weight) must leave
        rows on both sides."""
        if given is None:
            return
        held = int(given.sum())
        if held in (0, given.size):
            raise ValueError(f"validation_mask must leave rows on both sides; it marks {held} of "
                             f"{given.size} rows as held out.")
        if kept.all() or not kept.any():
            side = "training" if kept.all() else "held-out"
            raise ValueError(f"validation_mask marks {held} of {given.size} rows as held out, but every "
                             f"{side} row has sample_weight 0, and a row of weight 0 is a row removed. "
                             "Give rows on both sides a positive weight.")

    def _split(self, data, constraints, mask, gen):
        if mask is not None:
            return np.flatnonzero(~mask), np.flatnonzero(mask)
        if self.validation_fraction is None:
            return np.arange(data.n), None
        from .problem import expand_constraints

        return holdout_split(data, expand_constraints(constraints, data.groups), self.validation_fraction,
                             int(gen.integers(2**31)))

    @staticmethod
    def _compile_part(objective, constraints, part, data, source: str, side: str | None):
        """The problem on the rows ``part`` of ``data``; with a held-out split (``side``:
        "training" or "held-out"), an error that the full ``data`` does not raise (a group value
        or a label the split left on the other side) says which side."""
        try:
            return compile_problem(objective, constraints, part)
        except ValueError as exc:
            if side is None:
                raise
            compile_problem(objective, constraints, data)  # an error of the problem itself: unprefixed
            message = f"On the {part.n} {side} rows ({source}): {exc}"
            raise (UndefinedRateError(message, rate=exc.rate) if isinstance(exc, UndefinedRateError)
                   else ValueError(message)) from None

    def _margins(self, constraints, data) -> np.ndarray:
        m = len(constraints)
        if self.margin is None:
            return np.zeros(m)
        if isinstance(self.margin, str):
            return confidence_margins(constraints, data, self.margin_confidence)
        if any(isinstance(v, str) for v in np.ravel(np.asarray(self.margin, dtype=object))):
            raise ValueError(f"margin={self.margin!r} mixes text and numbers; 'auto' sets every constraint's "
                             "margin, so pass margin='auto' alone, or a number per constraint.")
        try:
            margin = np.asarray(self.margin, dtype=float)
        except (TypeError, ValueError):
            margin = np.full(m + 1, np.nan)  # a dict or ragged input: refused below, by shape
        if (margin.ndim and margin.shape != (m,)) or (margin < 0).any():
            raise ValueError(f"margin must be 'auto', a number >= 0 or one number >= 0 per constraint "
                             f"({m} after expanding group columns: {[str(c) for c in constraints]}); got {self.margin!r}.")
        bad = np.flatnonzero(~np.isfinite(margin.ravel()))
        if bad.size:  # caught here: the tightened constraint would only say it got a non-finite constant
            j = int(bad[0])
            which = f"margin[{j}] (for '{constraints[j]}')" if margin.ndim else "margin"
            raise ValueError(f"{which} is {margin.flat[j]}; margins must be finite numbers >= 0.")
        return np.full(m, margin)

    def _expanded_values(self) -> dict[str, set]:
        """The values of each group column the constraints were expanded over in fit."""
        return {key: {v for c in self.constraints_ for r in c.rates for k, vs in r.slice.filters
                      if k == key for v in vs}
                for key in self._expand_keys}

    def _fit_report(self, X, data, train, held, lp_feasible: bool, problem):
        """Violations in the constraints' own units on each part, ``margins_`` in them too; then
        ``feasible_`` and the warnings, on the part the solution is chosen on (``problem``'s)."""
        parts = {"train": train} if held is None else {"train": train, "held_out": held}
        chosen_on = "held_out" if held is not None else "train"
        linear = self.margins_ if isinstance(self.margin, str) else None  # "auto" sets them on the linear forms g

        def measure(solution, part):
            """``solution``'s violation of each constraint on ``part``, and on the part the
            solution is chosen on the margins and the violations with them, in own units (None
            elsewhere)."""
            # without a split the training rows are all the rows, as _play reads them: no copies
            rows = data if held is None else data.take(parts[part])
            p = self.stochastic_model(solution).proba(X if held is None else _safe_indexing(X, parts[part]))
            if part == chosen_on and linear is not None:
                # over a zero denominator the margin in own units is infinite: the linear form decides
                return own_units(self.constraints_, linear, rows, p)
            violation = np.array([r["violation"] for r in violation_rows(self.constraints_, rows, p)])
            if part != chosen_on:
                return violation, None, None
            return violation, self.margins_, violation + self.margins_

        on = {part: measure(self.solution, part) for part in parts}
        mixture = on[chosen_on] if self.solution == "m_stochastic" else measure("m_stochastic", chosen_on)
        self.margins_ = on[chosen_on][1]
        # an "auto" ratio margin in its own units divides by the solution's denominator: keep it
        # per solution for constraint_report(solution=...)
        self._solution_margins = {self.solution: self.margins_, "m_stochastic": mixture[1]}
        if linear is not None and any(c.ratio is not None for c in self.constraints_):
            kept = [n for n in self.solutions_ if n != "T_stochastic" or self.solver not in ORACLE_SOLVERS
                    or self.solution == "T_stochastic"]  # the oracle solvers drop T_stochastic's models
            for name in set(kept) - set(self._solution_margins):
                self._solution_margins[name] = measure(name, chosen_on)[1]
        # a ratio's linear form holds trivially when its denominator is 0 (precision of a model
        # that predicts no positives): met in form, undefined in fact. The deployed model is
        # judged too: its parameters act on the raw X, and folding the centring of a column
        # whose offset dwarfs its spread into them can lose the digits the decisions hang on.
        deployed = mixture[2]
        # a linear constraint's own units are its g's: judged on its row's scale, as the LP judged it
        scale = np.array([1.0 if c.ratio is not None else s for c, s in zip(self.constraints_, problem.scale)])
        self.feasible_ = bool(lp_feasible) and not np.isnan(deployed).any() and bool(np.all(deployed / scale <= 1e-6))
        where = "held-out" if held is not None else "training"
        if not self.feasible_:
            self._warn_shortfall("m_stochastic", deployed, where, problem, linear)
        chosen = on[chosen_on][2]
        # the candidates' linear forms (margins included) are the LP's test of the mixture;
        # tradeoff_curve reads this verdict on the solution predict uses
        self._selected_feasible = self.feasible_ if self.solution == "m_stochastic" else not (
            np.isnan(chosen).any() or (self.train_constraints_ @ self.weights_ / problem.scale > 1e-9).any())
        if not self._selected_feasible and self.solution != "m_stochastic":
            self._warn_shortfall(self.solution, chosen, where, problem, linear)
        on_held = on["held_out"][0] if held is not None else np.full(len(self.constraints_), np.nan)
        rows = [{"constraint": str(c), "margin": mg, "train": a, "held_out": b}
                for c, mg, a, b in zip(self.constraints_, self.margins_, on["train"][0], on_held)]
        try:
            import pandas as pd
        except ImportError:
            return rows
        return pd.DataFrame(rows, columns=["constraint", "margin", "train", "held_out"])

    def _warn_shortfall(self, solution: str, excess: np.ndarray, where: str, problem, linear) -> None:
        """Warn that ``solution`` does not meet every constraint on the data it is chosen on;
        ``excess`` is each constraint's violation plus its margin, in its own units (NaN: undefined);
        ``linear`` the "auto" margins on the linear forms ``problem`` holds (None for others)."""
        defined = np.where(np.isnan(excess), -np.inf, excess)
        worst = int(np.argmax(defined)) if defined.size else 0
        broken = bool(defined.size) and defined[worst] > 0
        named = f"{solution} solution{', which predict uses,' if solution == self.solution else ''}"
        every = f"every constraint{', margins included,' if self.margins_.any() else ''} on the {where} data"
        if solution == "m_stochastic" and broken:
            text = f"No mixture of the trained models meets {every}: the {named} minimises the violation"
        else:
            note = "" if solution == "m_stochastic" else (
                " (the m_stochastic solution does)" if self.feasible_ else " (nor does the m_stochastic solution)")
            text = f"The {named} does not meet {every}{note}"
        if broken:
            margin = ", margin included," if self.margins_.any() else ""
            text += (f"; its largest violation{margin} is {defined[worst]:.4g}, on '{self.constraints_[worst]}', in "
                     "the constraint's own units (fit_report_ lists each constraint's margin and violation on each "
                     "part)")
        undefined = [c for c, e in zip(self.constraints_, excess) if np.isnan(e)]
        if undefined:
            text += (f"; it leaves {[str(c) for c in undefined]} undefined, because "
                     f"{zero_denominator_reason(undefined[0].ratio.denominator)}, so only the linear form holds")
        if solution != "m_stochastic":
            advice = " Set solution='m_stochastic' to meet them." if self.feasible_ else ""
        else:
            # tell an impossible problem from a model that fell short: the advice differs
            least, hardest = least_violation(problem) if broken else (0.0, 0)
            least_g = least * problem.scale[hardest] if problem.scale.size else least  # on the constraint's g
            # a bound beyond a named ratio's range, the user's margin included: the linear form is met
            # by predicting no positives, where the ratio is undefined, so the LP cannot see it
            moved = not (isinstance(self.margin, str) or self.margin is None) and self.margins_.any()
            stated = ([tightened(c, m) for c, m in zip(self.constraints_, self.margins_)] if moved
                      else self.constraints_)
            beyond = [reason for c in stated if (reason := ratio_bound_out_of_range(c))]
            pinned = _pinned_by_margins(self.constraints_, self.margins_)
            # among finite margins: over a zero denominator a ratio's is infinite in its own units
            widest = int(np.argmax(np.where(np.isfinite(self.margins_), self.margins_, -np.inf)))
            if pinned:
                lower, upper = (self.constraints_[i] for i in pinned)
                advice = (f" '{lower}' and '{upper}' state an equality, and the margins on both of them "
                          f"({self.margins_[pinned[0]]:.4g} and {self.margins_[pinned[1]]:.4g}) leave no value "
                          "that meets both. Widen the pair into a band wider than the two margins together, "
                          "or give it no margin.")
            elif beyond:
                advice = (f" No classifier at all can meet {beyond[0]}{', margin included' if moved else ''}. "
                          f"Loosen or drop that constraint{' or its margin' if moved else ''}.")
            elif least > 1e-9 and linear is not None and least_violation(
                    replace(problem, b=np.r_[problem.b[0], problem.b[1:] - linear / problem.scale]))[0] <= 1e-9:
                advice = (f" No classifier at all can meet them together with their margins on these rows (the least "
                          f"possible largest violation is {least_g:.4g}, on '{self.constraints_[hardest]}'), though "
                          f"one can without: the margins of margin='auto' at margin_confidence="
                          f"{self.margin_confidence} ask more than {problem.basis.shape[1]} rows can promise. The "
                          f"widest, {self.margins_[widest]:.4g}, is on "
                          f"'{self.constraints_[widest]}': a margin grows as one over the "
                          "square root of the rows of its slices. Lower margin_confidence, merge "
                          "small groups, or train on more rows (or hold fewer out).")
            elif least > 1e-9:
                advice = (f" No classifier at all can meet them together on these rows, even one choosing each "
                          f"row's decision freely: the least possible largest violation is {least_g:.4g}, on "
                          f"'{self.constraints_[hardest]}' (of the constraints' linear forms g <= 0). Loosen or "
                          "drop the constraints that conflict (a bound outside a rate's range, bounds that "
                          "contradict each other).")
            else:
                advice = " Loosen the constraints, or train longer (max_iter) or with a larger model."
            if isinstance(self.margin, str) and broken and "margin_confidence" not in advice and not pinned:
                advice += (" The margins of margin='auto' cover the choice among the trained models, which "
                           "widens them with few rows per slice; a lower margin_confidence narrows them.")
        warn(f"{text}.{advice}", InfeasibleConstraintsWarning)

    def _set_solutions(self, traj, lp=None):
        """Set ``solutions_`` and return the LP shrink of the candidates (the m-stochastic one),
        solved unless given as ``lp``."""
        k = traj.params.shape[0]
        one_hot = np.eye(k)
        lp = shrink(traj.objective, traj.constraints) if lp is None else lp
        self.solutions_ = {
            "m_stochastic": lp.weights,
            "best": one_hot[best_iterate(traj.objective, traj.constraints)],
            "last": one_hot[-1],
            "T_stochastic": np.full(k, 1.0 / k),
        }
        return lp

    def constraint_report(self, X: ArrayLike | sp.spmatrix | sp.sparray, y: ArrayLike, *,
                          groups: ArrayLike | dict[str, ArrayLike] | pd.DataFrame | None = None,
                          sample_weight: ArrayLike | None = None, baseline: ArrayLike | None = None,
                          solution: str | None = None) -> pd.DataFrame | list[dict]:
        """Value of each constraint's two sides and its violation on ``X, y``, in expectation.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows to evaluate, with the features seen in ``fit``.
        y : array-like of shape (n_samples,)
            True labels, in ``X``'s row order, among the ``classes_`` seen in ``fit``.
        groups : DataFrame, dict of arrays, or array-like of shape (n_samples,), default=None
            Group membership columns named by the constraints, as in :meth:`fit`.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows in every rate, as in :meth:`fit`; None means equal weights.
        baseline : array-like of shape (n_samples,), default=None
            The baseline model's decisions on these rows, for churn, wins and losses
            constraints, as in :meth:`fit`.
        solution : str, default=None
            Which solution to report on (default: the ``solution`` parameter).

        Returns
        -------
        pandas.DataFrame or list of dict
            One row per constraint with ``constraint``, ``lhs``, ``rhs``, ``violation``
            (``lhs - rhs`` for ``<=``, ``rhs - lhs`` for ``>=``, ratios in their own units; ``> 0``
            when broken; without the margin) and the ``margin`` it was trained with,
            and a last row for the objective. A constraint or objective these rows leave
            undefined (a group value none of them holds, no negatives for ``fpr``), or the
            model's decisions do (a precision over a slice it predicts no positives in,
            ``0 / 0``), is NaN, with a warning. A DataFrame when pandas is installed.
        """
        X_raw = X
        X = self._features(X)
        y = self._check_scoring_labels(X_raw, X, y)
        p = self.predict_proba(X_raw, solution=solution)[:, 1]
        data = self._rate_data(X_raw, X, y, groups, sample_weight, baseline)
        check_goal_columns(self.objective_, self.constraints_, data)  # an error, not an undefined constraint
        rows, empty = report_rows(self.constraints_, data, p)
        margins = self._solution_margins.get(self.solution if solution is None else solution, self.margins_)
        rows = [{**row, "margin": margin} for row, margin in zip(rows, margins)]
        objective = f"objective: {self.objective_}"
        try:  # rows that leave the objective undefined (no negatives for fpr) still report the constraints
            value = evaluate_term(self.objective_, data, p)
        except UndefinedRateError as exc:
            value = np.nan
            warn(f"constraint_report: the objective is undefined on these rows, reported as NaN. {exc}", UserWarning)
        warn_uncovered("constraint_report", data, self._expanded_values(), empty,
                       "audit(model, X, y, groups=..., constraints=model.constraints) expands over "
                       "these rows' values",
                       [row["constraint"] for row in rows if np.isnan(row["violation"]) and row["constraint"] not in empty])
        rows.append({"constraint": objective, "lhs": value, "rhs": np.nan, "violation": np.nan, "margin": np.nan})
        try:
            import pandas as pd
        except ImportError:
            return rows
        return pd.DataFrame(rows)
