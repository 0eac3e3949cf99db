"""MetricOptimizer: minimise a non-linear function of rates subject to rate-metric constraints."""

from __future__ import annotations

import contextlib
from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import _fit_context, clone
from sklearn.compose import ColumnTransformer
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import PredefinedSplit, check_cv
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder
from sklearn.utils import _safe_indexing
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from ._base import RateClassifierBase, warn_uncovered
from .exceptions import InfeasibleConstraintsWarning, UndefinedRateError
from .generalized._metric import Metric, _combine_kinds
from .generalized._names import as_objective, refuse_score
from .generalized._mixture import FEASIBLE_TOL, best_mixture
from .generalized._plugin_oracle import PluginOracle, cell_decoders, fit_logistic
from .generalized._pr_auc import PRAUC, deployed_params, initial_params, stacked_problem
from .generalized._program import (
    Expansion,
    as_metric_constraints,
    compile_program,
    group_cells,
    out_of_range_bounds,
    program_group_columns,
    program_reads_baseline,
    program_values,
)
from .generalized._ratio import RatioProgram, solve_ratio_game
from .generalized._three_player import CONFIGURATIONS, appended, solve_three_player, trajectory
from .generalized._threshold_polish import polish_thresholds
from .models import (Design, LinearModel, MLPModel, ProbabilityScoreModel, folding_callback, input_scale, log_odds,
                     scaled_input, score_threshold, with_score)
from .models._oracle import fit_weighted, sample_weight_key, seeded
from .problem import least_largest, zero_denominator_reason
from .rates import Expression, Ratio
from .solutions import SOLUTIONS, StochasticModel, best_iterate, shrink
from .solvers import SURROGATES
from .utils._categories import unseen_rows
from .utils._frames import frame_dtypes, frame_floats, is_frame
from .utils._validation import _is_numeric, unfitted_on_error
from .utils._warnings import ignoring, listed, warn

if TYPE_CHECKING:
    import pandas as pd
    import scipy.sparse as sp
    from numpy.typing import ArrayLike

CONVEX_SOLVERS = ("three_player", "oracle", "frank_wolfe", "spade", "nemsis")
PLUGIN_SOLVERS = tuple(name for name, (theta, *_) in CONFIGURATIONS.items() if theta == "oracle")
SOLVERS = CONVEX_SOLVERS + ("ratio",)
# early-stopping patience of n_iter_no_change="auto": exact oracle answers against
# follow-the-leader multipliers settle smoothly, so do the ratio game's running-average players;
# gradient-ascent multipliers oscillate before they settle; surrogate steps are small
AUTO_PATIENCE = {"frank_wolfe": 25, "oracle": 50, "ratio": 50}


def applicable_solvers(kinds) -> tuple[str, ...]:
    """Solvers whose guarantees hold for a problem whose metrics have the classes ``kinds``."""
    kinds = set(kinds) - {"linear"}
    if not kinds:
        return SOLVERS
    if kinds == {"convex"}:
        return CONVEX_SOLVERS
    if kinds == {"ratio"}:
        return ("ratio",)
    return ()


def _out_of_fold(folds, n: int, score, n_jobs: int | None = None) -> np.ndarray:
    """Each row's score by a model fitted without its fold: ``score(train, test)`` scores the rows
    ``test``; the folds test every row once (checked by ``MetricOptimizer._folds``). ``n_jobs``
    folds at a time through joblib, as ``cross_val_predict`` runs them: the scores do not depend
    on it, each fold's model being seeded apart."""
    folds = list(folds)
    scores = Parallel(n_jobs=n_jobs)(delayed(score)(train, test) for train, test in folds)
    z = np.empty(n)
    for (_, test), z_test in zip(folds, scores):
        z[test] = z_test
    return z


def _splitting_cells(columns: list[str], data) -> np.ndarray | None:
    """The group cells of ``columns``, or None when they do not split the rows (no columns, one cell)."""
    cells = group_cells(columns, data) if columns else None
    return cells if cells is not None and np.unique(cells).size >= 2 else None


def _cells_decodable(columns: list[str], data, X) -> bool:
    """Whether the group cells of ``columns`` are linear functions of ``X``'s columns (one-hot in
    ``X``), so that the plug-in oracle can threshold each cell apart."""
    cells = _splitting_cells(columns, data)
    return cells is None or cell_decoders(Design(X).X, cells) is not None


def _warn_if_cells_undecodable(oracle: PluginOracle, columns: list[str], data, X, n_decode: int,
                               estimator_given: bool) -> None:
    """Warn when the oracle answers with one threshold for every row although the problem names
    groups: its models predict from ``X`` alone, so when the groups are not one-hot columns of
    ``X`` its answers cannot treat them apart, and a tight constraint on them may be met only by
    predicting alike for everyone. When each column is one-hot but there are several, their
    intersections are products of indicators, not linear functions of ``X``."""
    if oracle.per_cell or _splitting_cells(columns, data) is None:
        return
    Xd = Design(X).X[:, :n_decode]
    decodable = [c for c in columns if cell_decoders(Xd, group_cells([c], data)) is not None]
    if decodable:
        warn(
            f"The plug-in oracle thresholds every row alike: the cells of {' x '.join(map(repr, columns))} are "
            f"not linear functions of X's columns, though {', '.join(map(repr, decodable))} is one-hot in X. "
            "For one threshold per cell, add a one-hot column of each combination to X.", UserWarning)
    else:
        names = " and ".join(map(repr, columns))
        warn(
            f"The plug-in oracle thresholds every row alike: {names} {'is' if len(columns) == 1 else 'are'} not "
            "one-hot in X, and the model predicts from X alone, so its thresholds cannot differ by group; a tight "
            "constraint on the groups may then be met only by predicting alike for everyone. For one threshold "
            "per group, add the group's one-hot columns to X (predicting then reads them from X); to weigh X's "
            f"other columns instead, {'drop estimator= and ' if estimator_given else ''}pass solver='three_player'.",
            UserWarning)


def _as_floats(X) -> np.ndarray:
    """The numeric columns of a frame as floats, a missing value (``pd.NA`` of a nullable or
    Arrow column included) as NaN: a ColumnTransformer refuses to pass ``pd.NA`` on in arrays."""
    return frame_floats(X) if is_frame(X) else np.asarray(X, dtype=float)


class _EncodedScoreModel(ProbabilityScoreModel):
    """:class:`ProbabilityScoreModel` of a DataFrame with category or text columns: the estimator
    reads the rows as given, the linear part (from which the oracle decodes the group cells) their
    numeric columns and the others one-hot encoded by ``encoder``, which selects them by position;
    ``columns`` are the labels of X's columns in fit."""

    def __init__(self, estimator, encoder: ColumnTransformer, n_features: int, columns: list, positive=1):
        super().__init__(estimator, n_features, positive)
        self.encoder, self.columns = encoder, columns

    def augment(self, X, z: np.ndarray | None = None):
        if z is None:
            z = log_odds(self.estimator, X, self.positive)
        encoded = self.encoder.transform(X)
        self._warn_unseen(X, encoded)
        return super().augment(encoded, z)

    def _warn_unseen(self, X, encoded: np.ndarray) -> None:
        """Warn of values of an encoded column that the training rows never held: they are encoded
        as none of its categories, so the thresholds the oracle fitted per group do not apply to
        them (an intercept alone decides), and no constraint on that column spoke of them."""
        _, encoder, positions = self.encoder.transformers_[0]
        for index, unseen in unseen_rows(encoded, encoder.categories_):
            column, known = self.columns[positions[index]], encoder.categories_[index]
            values = sorted({str(v) for v in np.asarray(_safe_indexing(X, positions[index], axis=1))[unseen]})
            warn(f"X's column {column!r} holds value(s) the training rows never held, {listed(values, 5)}, "
                 f"in {int(unseen.sum())} row(s): the model reads them as none of its categories "
                 f"{listed(known, 5)}, so no group's fitted threshold, and no constraint on that column, "
                 "applies to them.")


class MetricOptimizer(RateClassifierBase):
    """Binary classifier trained to minimise a generalized rate metric under metric constraints.

    The objective ``psi`` is a non-linear function of rates -- one minus the F-measure, G-mean or
    H-mean, the Q-mean, a KL-divergence between true and predicted positive proportions (per
    group: fairness; overall: quantification), the worst of several rates, a sum of ratios, or a
    user function with a declared class -- and the constraints are ``phi_j(rates) <= 0`` for such
    metrics (KL fairness, G-mean, predictive parity, F-measure parity) or the linear rate
    constraints of :class:`ConstrainedClassifier` (error, churn, win-loss ratio...).
    Training plays the games of Narasimhan, Cotter and Gupta (2019): for convex metrics a model
    (theta) player, a slack (xi) player answering in closed form and a multiplier (lambda)
    player; for sums of ratios their Algorithm 3. The result is a distribution over snapshots of
    the model; its uniform mixture is the solution with guarantees, the best iterate a
    deterministic alternative.

    Parameters
    ----------
    metric : str, Metric, Expression or Ratio, default="error"
        What to minimise: a name (``"error"``, ``"f1"``, ``"f2"``, any ``"f<beta>"`` such as
        ``"f0.5"``, ``"precision"``, ``"g_mean"``, ``"h_mean"``, ``"q_mean"``, ``"kld"``,
        ``"pr_auc"``, ``"win_loss_ratio"``; any case, an unknown one is refused with the close
        matches), a metric from :mod:`skrate.generalized`
        (``f_measure(beta=2)``, ``kld(group="sex")``, ``g_mean() + 0.5 * kld()``, ``pr_auc()``,
        ``max_of(...)``), or a rate expression or ratio of :mod:`skrate.rates`, minimised as
        written (``"fpr + fnr"``, ``-precision(sex="Female")``). Names denote losses: ``"f1"``
        minimises ``1 - F1``, ``"precision"`` ``1 - precision``, ``"win_loss_ratio"`` its negative.
        A lone score, better when higher, is refused with the loss to pass instead, as minimising
        it gives the worst classifier: ``"accuracy"`` (pass ``"error_rate"``), ``"recall"`` or
        ``"tpr"`` (``"fnr"``), ``"tnr"`` (``"fpr"``), on any slice, and a named ratio on a slice
        (``"precision[sex=Female]"``: pass ``"-precision[sex=Female]"``).
        ``pr_auc()`` trains one score with a bias per recall level (the rows are stacked once
        per level) and predicts with the bias of the middle level.
    constraints : MetricConstraint, Constraint, str or list of them, default=None
        ``metric <= bound`` / ``metric >= bound`` from :mod:`skrate.generalized`, helpers such
        as ``kld_fairness("sex", 0.01)`` or ``f_measure_parity(...)``, and core rate constraints
        (``"error_rate <= 0.2"``, ``churn() <= 0.1``). A bare group column expands to one
        constraint per value. A bound on ratios over one denominator (``precision() >= 0.8``,
        ``f_measure() <= 0.4``: F1 at least 0.6) is linear multiplied out by it, and solved in
        that form (the ratio solver plays it as a ratio). A core rate constraint times a positive
        constant trains the same model: the solvers read its linear form divided by its largest
        coefficient.
    solver : {"auto", "three_player", "oracle", "frank_wolfe", "spade", "nemsis", "ratio"}, default="auto"
        ``"three_player"``: Algorithm 2 (surrogate model steps, multipliers on true rates,
        closed-form slack player). ``"oracle"``: Algorithm 1 with a cost-sensitive oracle that
        thresholds a plug-in logistic-regression estimate of ``P(y = 1 | x)`` (one
        threshold per answer and group cell). ``"frank_wolfe"``, ``"spade"``, ``"nemsis"``: the earlier
        algorithms as special cases of the game. ``"ratio"``: Algorithm 3 for sums of ratios
        (F-measure, precision, their parities): surrogate model steps, or with ``estimator=``
        exact plug-in oracle answers (Dinkelbach steps over thresholds of ``eta``). ``"auto"``
        picks ``"ratio"`` for ratio metrics; for the others, with ``model="linear"``,
        ``"frank_wolfe"`` when every constraint is linear in
        the rates (exact plug-in oracle answers, which settle in a few dozen rounds; constraint
        multipliers ascend as in Algorithm 1) and ``"oracle"`` when one is not (a KL or G-mean
        constraint: follow-the-leader multipliers on it settle slowly, and a tight one may not
        be met within ``max_iter``) or a metric is a ``max_of`` (not smooth: refused by
        ``"frank_wolfe"``, whose multipliers would jump between its rates);
        ``"three_player"`` with ``model="mlp"``, when the problem reads the baseline's
        decisions (churn, wins, losses), which the plug-in oracle cannot follow, or when the
        group cells the metrics name (each combination of their columns' values) are not linear
        functions of ``X``'s columns, as one group column one-hot in ``X`` is and two are not
        (their intersections are products). The oracle thresholds per group cell when they are
        (exactly decodable), else every row alike, with a warning: its
        thresholds cannot then differ by group, where a linear model can lean on ``X``'s other
        columns instead.
        A solver whose guarantees do not cover the metric's class is refused with the list of
        solvers that apply.
    model : {"linear", "mlp"}, default="linear"
        Score function of the surrogate solvers; the plug-in solvers (``"oracle"``,
        ``"frank_wolfe"``) produce linear models and refuse ``"mlp"``.
    hidden_layer_sizes : tuple of int, default=(16,)
        Hidden layer widths of ``model="mlp"``.
    init : {"logistic", "zeros"}, default="logistic"
        Starting point of the linear model of the surrogate solvers: L2-regularised logistic
        regression (a good model of the labels, the natural start for a metric of them) or
        zeros. The MLP starts from its random initialisation either way.
    surrogate : {"auto", "hinge", "logistic", "sigmoid"}, default="auto"
        Stand-in for the indicator in the model's updates. ``"auto"``: ``"logistic"`` for the
        ratio solver (its smooth steps reach lower training F-measure losses than the hinge's on
        the benchmark data), ``"hinge"`` for the others.
    solution : {"m_stochastic", "T_stochastic", "best", "last"}, default="m_stochastic"
        Default solution of ``predict``/``predict_proba`` (all are computed by ``fit``, in
        ``solutions_``): ``"m_stochastic"`` is the best mixture of the snapshots on the training
        data -- the LP shrink of Cotter et al. (2019) to at most m + 1 models when the problem is
        linear in the rates (with the plug-in solvers, the exact optimum over every mixture of
        per-cell thresholds of the probability model: the oracle's answers at the LP's dual
        values join the snapshots until none improves the LP, column generation), otherwise the
        optimal mixture for the metric (SLSQP over the simplex; a local optimum for ratio
        metrics and constraints, whose program is not convex), reduced by an LP to at most
        K + 1 models with the same K rates;
        ``"T_stochastic"`` the uniform mixture over the snapshots (the game's guarantee); ``"best"``
        the best iterate (Cotter et al. 2019, Eq. 18, on the metric values); ``"last"`` the last.
    learning_rate : float, default=0.05
        Adam step size of the model.
    lambda_learning_rate : float, default=0.5
        Gradient-ascent step of the multipliers. A constraint's step grows by 5% each round its
        violation (or slack, while its multiplier is positive) persists, and falls back to
        ``lambda_learning_rate`` when the sign changes: a tight ratio floor, violated by
        thousandths in its linear form, is met in tens of rounds rather than thousands. Against
        the oracle of ``"oracle"`` the multipliers of non-linear metrics take the decaying step
        ``lambda_learning_rate / sqrt(t)`` at round ``t``: its exact answers jump between extreme
        models.
    xi_learning_rate : float, default=0.05
        Step of the slack player of the ratio solver.
    lambda_bound : float, default=100.0
        Bound on the magnitude of the multipliers.
    alpha : float, default=1e-4
        L2 penalty on the weights (and of the plug-in probability model). Without
        ``estimator``, columns whose mean exceeds four standard deviations are centred, and columns
        whose largest magnitude then lies outside ``[2**-2, 2**5]`` are divided by the power of
        two nearest their root mean square before fitting, and their weights penalised in those
        units, as for :class:`ConstrainedClassifier`; ``candidates_`` and
        the weights on ``x`` in the ``callback``'s parameters are folded back onto ``X``.
    max_iter : int, default=500
        Rounds of the game (fewer when ``tol`` stops it on a plateau).
    batch_size : int or None, default=None
        None trains full-batch; an int trains the surrogate player on minibatches. The plug-in
        oracle (``"oracle"``, ``"frank_wolfe"``, and ``"ratio"`` with ``estimator=``) answers
        on every training row at once, so it ignores ``batch_size``.
    n_candidates : int, default=100
        Snapshots kept as candidates: this many evenly spaced over the iterations played, plus
        the best iterate and the last.
    tol : float or None, default=1e-4
        Early stopping of full-batch games: stop once the best of the iterates and of the
        uniform mixtures of the last ``n_iter_no_change`` iterates (scored by the largest
        constraint violation, then, within ``tol`` of feasibility, by the objective, all on the
        training rows) is feasible and has not improved by more than ``tol`` for
        ``n_iter_no_change`` iterations. A problem linear in the rates under a plug-in solver
        stops sooner, on the column-generation certificate that its m-stochastic solution is
        optimal (checked every ten rounds; see ``solution``). None plays ``max_iter`` iterations;
        minibatch games always do.
    n_iter_no_change : int or "auto", default="auto"
        Patience of the early stopping: ``"auto"`` is 25 for ``"frank_wolfe"`` (exact answers
        against follow-the-leader multipliers), 50 for ``"oracle"`` (gradient-ascent
        multipliers oscillate before they settle) and for ``"ratio"`` (players at running
        averages), 100 for the other surrogate solvers (small steps).
    random_state : int, RandomState instance or None, default=None
        Seeds the surrogate model's initialisation, the minibatches, the stochastic ``predict``
        and the ``random_state`` parameters of ``estimator`` left None.
    verbose : int, default=0
        Print progress every tenth of ``max_iter`` when positive.
    callback : callable, default=None
        ``callback(iteration, params, rates)`` after every iteration (counted from 0), with the
        parameters of the model the iteration played (before its update; as ``candidates_``
        holds them, on ``X``'s columns) and the rates the metrics read of that model, on the
        training rows or the minibatch (for ``"ratio"``, the numerators then the denominators of
        the ratios). Training stops when it returns the object ``False`` (``n_iter_`` then counts
        that iteration); any other value, ``None``, ``0`` and
        ``numpy.False_`` included, continues.
    estimator : classifier with ``predict_proba``, default=None
        The class-probability model ``eta(x) = P(y = 1 | x)`` the plug-in oracle of
        ``"oracle"``, ``"frank_wolfe"`` and ``"ratio"`` thresholds, instead of the built-in L2 logistic
        regression -- for users who trust their own probability estimates (gradient boosting,
        a calibrated model). A clone is fitted on the training rows as given (a DataFrame keeps
        its column names and dtypes, category and text columns included, for a ``Pipeline``
        that encodes them or ``HistGradientBoostingClassifier(categorical_features="from_dtype")``;
        ``predict`` takes the same DataFrame; missing values reach it too, for a model or a
        ``Pipeline`` that handles them, and one that does not refuses them itself), with
        ``sample_weight`` when its ``fit`` takes it or a
        ``Pipeline``'s final step does; its ``random_state`` parameters left None, its steps'
        included, are drawn from ``random_state``, so fits are reproducible. A model fitted
        elsewhere is used as it is when wrapped in
        ``sklearn.frozen.FrozenEstimator``. The candidates threshold ``logit eta(x)`` per group
        cell, decoded from the numeric columns of ``X`` and its category and text columns one-hot
        encoded; ``"auto"`` picks ``"ratio"``, ``"frank_wolfe"`` or ``"oracle"`` as above, and the
        surrogate solvers are refused.
    cv : "auto", int, cross-validation generator, iterable or None, default="auto"
        Cross-fitting of the plug-in oracle's probability model: the oracle chooses its
        thresholds on out-of-fold probabilities (each row scored by a model fitted on the other
        folds; stratified folds for an int), while the deployed model thresholds the one fitted
        on all rows, as ``sklearn.model_selection.TunedThresholdClassifierCV`` does. A model is
        too confident on its own training rows -- very much so for flexible ones (boosted trees,
        nearest neighbours), a little for a linear one -- and thresholds set there miss their
        goal on new rows; out-of-fold probabilities behave like new rows. The training metric
        values (``train_objective_``, ``train_constraints_``, ``feasible_``) are then
        out-of-fold estimates, while :meth:`metric_values` on the training rows scores the
        deployed model's in-sample probabilities and can differ. ``"auto"``: 5 folds for
        ``estimator``, and for the built-in logistic regression of a problem without
        constraints; with constraints the built-in model is thresholded on its own training
        rows, where ``feasible_`` then certifies them exactly. An int or splitter cross-fits
        either model; ``None`` uses the in-sample probabilities (one fit instead of
        ``cv + 1``). Ignored for the surrogate solvers and ``pr_auc()``, and for a
        ``FrozenEstimator``, fitted on other rows. Rows of zero ``sample_weight`` are dropped
        before the folds are drawn, as if they were not given; splits that number the rows as
        given (a list of them, ``PredefinedSplit``) are renumbered onto the rows kept. The folds
        split rows, so a row of weight 2 lies in one fold where two copies of it may lie in two:
        cross-fitted, integer weights and repeated rows give close, not equal, models.
    n_jobs : int or None, default=None
        Folds of the cross-fitted ``estimator`` (``cv``) fitted in parallel, through joblib as
        ``sklearn.model_selection.cross_val_predict`` fits them (None: one at a time; -1: as
        many as there are cores). The fit does not depend on it.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    n_features_in_ : int
        Number of columns of ``X`` in ``fit``.
    feature_names_in_ : ndarray of str
        Present when X was a DataFrame with string column names.
    objective_ : MetricSum
        The objective after expanding group columns.
    constraints_ : list of str
        The constraints after expansion, each naming its slice (``kld(label_rate, ppr[g=a]) <=
        0.01``, or ``kld[g=a] <= 0.01`` from ``kld_fairness``); unique, as they key
        :meth:`metric_values`.
    metric_class_ : str
        Class of the problem: ``"linear"``, ``"convex"``, ``"ratio"``.
    solver_ : str
        The solver used.
    candidates_ : ndarray of shape (n_snapshots, n_params)
        Up to ``n_candidates`` snapshots evenly spaced over the iterations, the best iterate and
        the last; then, for a problem linear in the rates under a plug-in solver, the oracle's
        answers priced in by column generation, or, for the linear model of a surrogate game,
        up to three of the best snapshots with the intercept of least (violation, objective)
        on the training rows (both outside ``"T_stochastic"`` and ``"last"``).
    solutions_ : dict of str to ndarray
        Weights over ``candidates_`` of every solution (``"m_stochastic"``, ``"T_stochastic"``,
        ``"best"``, ``"last"``).
    weights_ : ndarray of shape (n_snapshots,)
        Weights of the solution selected by ``solution``.
    train_objective_ : ndarray of shape (n_snapshots,)
        Objective ``psi`` of each candidate on the training data.
    train_constraints_ : ndarray of shape (n_constraints, n_snapshots)
        Constraint values ``phi_j`` (``<= 0`` is met) of each candidate on the training data,
        as the solvers read them: a ratio bound in its linear form (``0.8 ppr - tp`` for
        ``precision >= 0.8``), where :meth:`metric_values` reads ``0.8 - precision``.
    multipliers_ : ndarray of shape (n_snapshots, n_constraints + 1)
        The weights ``(1, mu)`` of the objective and the constraints when each candidate was
        played.
    feasible_ : bool
        Whether the selected solution (the ``solution`` parameter, also when set after ``fit``)
        meets every constraint on the training data; False also
        when a ratio constraint is undefined there (a zero denominator: for precision, no
        positives predicted in its slice), which its linear form would count as met.
    n_iter_ : int
        Iterations of the game played.
    random_seed_ : int
        Seed of the per-row draws of ``predict`` (from ``random_state``), so a row's
        decision is reproducible.

    References
    ----------
    H. Narasimhan, A. Cotter, M. Gupta. Optimizing Generalized Rate Metrics with Three Players.
    Advances in Neural Information Processing Systems 32 (NeurIPS 2019).

    H. Narasimhan, P. Kar, P. Jain. Optimizing Non-decomposable Performance Measures: A Tale of
    Two Classes. ICML 2015.

    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization with
    Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and Other Goals.
    JMLR 20(172), 2019.

    Examples
    --------
    >>> from skrate import MetricOptimizer
    >>> from skrate.datasets import load_compas
    >>> data = load_compas()
    >>> clf = MetricOptimizer(metric="g_mean", random_state=0).fit(data.data, data.target)
    >>> clf.metric_class_, clf.solver_
    ('convex', 'frank_wolfe')
    """

    _text_advice = (", or give estimator= a classifier that encodes them itself (a Pipeline, or "
                    "HistGradientBoostingClassifier with categorical_features) for the plug-in solvers")

    _parameter_constraints = {
        "metric": [str, Metric, Expression, Ratio],
        "constraints": [None, list, tuple, str, object],
        "solver": [StrOptions(set(SOLVERS) | {"auto"})],
        "model": [StrOptions({"linear", "mlp"})],
        "hidden_layer_sizes": [tuple, list],
        "init": [StrOptions({"zeros", "logistic"})],
        "surrogate": [StrOptions(set(SURROGATES) | {"auto"})],
        "solution": [StrOptions(set(SOLUTIONS))],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "lambda_learning_rate": [Interval(Real, 0, None, closed="neither")],
        "xi_learning_rate": [Interval(Real, 0, None, closed="neither")],
        "lambda_bound": [Interval(Real, 0, None, closed="neither")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [None, Interval(Integral, 1, None, closed="left")],
        "n_candidates": [Interval(Integral, 1, None, closed="left")],
        "tol": [None, Interval(Real, 0, None, closed="left")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "callback": [None, callable],
        "estimator": [None, HasMethods(["fit", "predict_proba"])],
        "cv": [None, StrOptions({"auto"}), "cv_object"],
        "n_jobs": [None, Integral],
    }

    def __init__(
        self,
        metric="error",
        constraints=None,
        *,
        solver="auto",
        model="linear",
        hidden_layer_sizes=(16,),
        init="logistic",
        surrogate="auto",
        solution="m_stochastic",
        learning_rate=0.05,
        lambda_learning_rate=0.5,
        xi_learning_rate=0.05,
        lambda_bound=100.0,
        alpha=1e-4,
        max_iter=500,
        batch_size=None,
        n_candidates=100,
        tol=1e-4,
        n_iter_no_change="auto",
        random_state=None,
        verbose=0,
        callback=None,
        estimator=None,
        cv="auto",
        n_jobs=None,
    ):
        self.metric = metric
        self.constraints = constraints
        self.solver = solver
        self.model = model
        self.hidden_layer_sizes = hidden_layer_sizes
        self.init = init
        self.surrogate = surrogate
        self.solution = solution
        self.learning_rate = learning_rate
        self.lambda_learning_rate = lambda_learning_rate
        self.xi_learning_rate = xi_learning_rate
        self.lambda_bound = lambda_bound
        self.alpha = alpha
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.n_candidates = n_candidates
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback
        self.estimator = estimator
        self.cv = cv
        self.n_jobs = n_jobs

    def _choose_solver(self, program, objective_label: str | None = None, decodable: bool = True) -> str:
        """The solver to play, refusing one that does not apply; ``objective_label`` names the
        objective in messages (``pr_auc`` rather than its stacked precisions); ``decodable``
        says whether the plug-in oracle can threshold the group cells apart (``"auto"`` reads it)."""
        kinds = [program.objective.kind] + [c.kind for c in program.constraints]
        ok = applicable_solvers(kinds)
        labels = [objective_label or program.objective.label] + [c.label for c in program.constraints]
        described = ", ".join(f"'{label}' is {kind}" for label, kind in zip(labels, kinds) if kind != "linear")
        if not ok:
            # each atom as it enters (a convex one negated is concave): a sum of a convex and a
            # ratio metric is nonconvex as a whole, but has nothing concave to negate
            signed = {_combine_kinds([(coef, atom)]) for s in [program.objective, *program.constraints]
                      for coef, atom, _ in s.atoms}
            if signed & {"concave", "nonconvex"}:
                advice = ("Reformulate: maximise a concave metric by minimising its negative (a user "
                          "function's class is its convexity= argument).")
            else:  # convex and ratio pieces together
                advice = ("Convex and ratio metrics do not mix. A bound on ratios over one denominator "
                          "(precision() >= 0.7, f_measure() <= 0.4) is linear in the rates once multiplied "
                          "out, and every solver takes it; ratios over different denominators (a parity "
                          "between groups) are not: pair them with a ratio objective (solver='ratio'), or "
                          "bound each ratio by a constant.")
            raise ValueError(
                f"No solver of MetricOptimizer has guarantees for this problem ({described}): the "
                "convex solvers (three_player, oracle, frank_wolfe, spade, nemsis) need convex metrics, "
                f"the ratio solver sums of ratios of rates. {advice}")
        if program_reads_baseline(program):  # thresholds of eta(x) cannot follow the baseline's decisions
            surrogate = ", ".join(s for s in ok if s not in PLUGIN_SOLVERS)
            reason = ("The problem compares the model with the baseline's decisions (churn, wins, losses or a "
                      "baseline= slice), which the plug-in oracle cannot follow: it thresholds P(y = 1 | x) per "
                      "group cell, and the baseline is not a function of the cell.")
            if self.estimator is not None:
                raise ValueError(f"{reason} estimator= is the plug-in oracle's probability model: drop it and use "
                                 f"one of the solvers that apply: {surrogate}.")
            if self.solver in PLUGIN_SOLVERS:
                raise ValueError(f"{reason} solver={self.solver!r} does not apply; solvers that do: {surrogate}.")
            ok = tuple(s for s in ok if s not in PLUGIN_SOLVERS)
        rough = [label for label, metric in zip(labels, [program.objective.metric]
                                                + [c.metric for c in program.constraints])
                 if not metric.is_smooth]
        if self.estimator is not None:  # only the plug-in oracle uses a probability model
            plugin = tuple(s for s in ok if s in PLUGIN_SOLVERS + ("ratio",))
            if self.solver not in plugin + ("auto",):
                raise ValueError(
                    f"estimator={type(self.estimator).__name__} is the probability model of the plug-in oracle; "
                    f"got solver={self.solver!r}. Choose solver in {list(plugin)}, or drop estimator.")
            if self.model != "linear":
                raise ValueError(f"model={self.model!r} has no effect with estimator=: the plug-in oracle's "
                                 "answers threshold the estimator's probabilities. Drop one of them.")
            ok = plugin
        if rough:  # Frank-Wolfe's guarantee needs a smooth psi: on max_of its candidates alternate
            ok = tuple(s for s in ok if s != "frank_wolfe")
            if self.solver == "frank_wolfe":
                others = [s for s in ok if self.model == "linear" or s not in PLUGIN_SOLVERS]
                raise ValueError(
                    f"solver='frank_wolfe' needs metrics with a continuous gradient, and {rough[0]!r} is a "
                    "maximum of rates: its follow-the-leader multipliers jump between the rates and never "
                    f"settle. Solvers that apply: {', '.join(others)}.")
        if self.solver == "auto":
            if ok == ("ratio",):
                return "ratio"
            # without the group cells in X the oracle's thresholds cannot differ by group: on Adult
            # without sex, error under parity 0.23 (0.17 for a linear model of X's other columns)
            if (self.estimator is None and (self.model != "linear" or not decodable)) or "oracle" not in ok:
                return "three_player"
            if rough or any(not c.is_linear for c in program.constraints):
                # follow-the-leader multipliers on a non-linear constraint settle slowly, and a tight
                # one may not be met in max_iter rounds; gradient-ascent multipliers settle
                return "oracle"
            return "frank_wolfe"
        if self.solver not in ok:
            raise ValueError(f"solver={self.solver!r} does not apply to this problem ({described}); "
                             f"solvers that do: {', '.join(ok)}.")
        if self.model != "linear" and self.solver in PLUGIN_SOLVERS:
            raise ValueError(f"model={self.model!r} has no effect with solver={self.solver!r}: the plug-in "
                             "oracle's answers are thresholds of a logistic regression, linear models. Use a "
                             f"surrogate solver ({', '.join(s for s in ok if s not in PLUGIN_SOLVERS)}) for an "
                             "MLP, or model='linear'.")
        return self.solver

    def _takes_raw_X(self) -> bool:
        return self.estimator is not None

    def _plugin_scores(self, X_in, data, seed: int, rows_given: tuple) -> tuple[np.ndarray, np.ndarray]:
        """``[x, logit eta(x)]`` of the training rows and the oracle's base parameters (weight 1
        on the last column), with ``eta`` a clone of ``estimator`` fitted on the rows ``X_in`` (the
        user's DataFrame as given, column names and dtypes, or the validated array); ``x`` is
        numeric, category and text columns one-hot encoded. ``random_state`` parameters left None
        are drawn from ``seed``; ``rows_given`` as in :meth:`_folds`."""
        base = seeded(self.estimator, seed)
        est = clone(base)
        frozen = isinstance(est, FrozenEstimator)  # fit is a no-op; it keeps the labels it was fitted on
        weighted = sample_weight_key(est) is not None
        if not (weighted or np.ptp(data.sample_weight) == 0 or frozen):
            raise ValueError(f"estimator={type(est).__name__} does not accept sample_weight in fit, and the "
                             "rows have unequal weights; choose an estimator whose fit takes sample_weight.")

        def fit(model, rows=slice(None)):
            X_rows = _safe_indexing(X_in, rows)
            if weighted:
                return fit_weighted(model, X_rows, data.y[rows], data.sample_weight[rows])
            return model.fit(X_rows, data.y[rows])

        fit(est)
        positive = self.classes_[1] if frozen else 1
        # by position: a ColumnTransformer reads integer column labels (pd.DataFrame(array)) as positions
        text = [i for i, (_, t) in enumerate(frame_dtypes(X_in)) if not _is_numeric(t)] if is_frame(X_in) else []
        if text:
            encoder = ColumnTransformer([("categories", OneHotEncoder(handle_unknown="ignore", sparse_output=False),
                                          text)], remainder=FunctionTransformer(_as_floats), sparse_threshold=0.0)
            encoder.set_output(transform="default")  # an array whatever scikit-learn's transform_output says
            self._model = _EncodedScoreModel(est, encoder, encoder.fit_transform(X_in).shape[1], list(X_in.columns),
                                             positive)
        else:
            self._model = ProbabilityScoreModel(est, X_in.shape[1], positive)
        theta = score_threshold(self._model.n_features)
        if not self._cross_fits_estimator():
            return self._model.augment(X_in, log_odds(est, X_in, positive)), theta
        # out-of-fold log-odds: what the thresholds meet on new rows, not the fit's own optimism
        z = _out_of_fold(self._folds(X_in, data.y, rows_given), data.n,
                         lambda train, test: log_odds(fit(clone(base), train), _safe_indexing(X_in, test)),
                         self.n_jobs)
        return self._model.augment(X_in, z), theta

    def _cross_fits_estimator(self) -> bool:
        """Whether ``estimator`` is cross-fitted; a frozen model was fitted on other rows, so its
        scores are honest as they are."""
        return (self.estimator is not None and self._cv() is not None
                and not isinstance(self.estimator, FrozenEstimator))

    def _cv(self, cross_fit_builtin: bool = True):
        """``cv`` with ``"auto"`` resolved: 5 folds for ``estimator`` and, when
        ``cross_fit_builtin``, for the built-in logistic regression; else None."""
        if self.cv != "auto":
            return self.cv
        return 5 if self.estimator is not None or cross_fit_builtin else None

    def _cv_text(self) -> str:
        return f"{self.cv!r} (5 folds)" if self.cv == "auto" else repr(self.cv)

    def _out_of_fold_logistic(self, X, data, theta_full: np.ndarray, rows_given: tuple) -> tuple | None:
        """``[x, z]`` with ``z`` each row's log-odds under the built-in logistic regression fitted
        on the other ``cv`` folds (each fit started from ``theta_full``, the fit on all rows), and
        the oracle's base parameters (weight 1 on ``z``); None when ``cv="auto"`` cannot give
        every fold both classes (a class of a few rows), which then uses the in-sample scores;
        ``rows_given`` as in :meth:`_folds`."""
        folds = self._folds(X, data.y, rows_given, strict=self.cv != "auto")
        if folds is None:
            return None
        design = Design(X).X

        def score(train, test):
            theta = fit_logistic(design[train], data.y[train], data.sample_weight[train], self.alpha, init=theta_full)
            return design[test] @ theta[:-1] + theta[-1]

        return with_score(design, _out_of_fold(folds, data.n, score)), score_threshold(X.shape[1])

    def _folds(self, X, y01: np.ndarray, rows_given: tuple, strict: bool = True) -> list | None:
        """The ``cv`` splits, each training fold holding both classes; when they cannot be made,
        an error naming ``cv``, or None if not ``strict``. ``rows_given`` is ``(n, kept)``, the
        number of rows given to fit and the positions of those kept (None: all), by which
        explicit splits, numbering the rows as given, are renumbered."""
        try:
            # a class smaller than the folds is handled below
            cv = self._cv()
            with contextlib.nullcontext() if strict else ignoring(UserWarning):
                splits = list(check_cv(cv, y01, classifier=True).split(X, y01))
            n_given, kept = rows_given
            if kept is not None and (isinstance(cv, PredefinedSplit) or not (
                    isinstance(cv, Integral) or hasattr(cv, "split"))):
                # explicit (train, test) splits index the rows as given, those of weight 0 included
                position = np.full(n_given, -1)
                position[kept] = np.arange(len(kept))
                on_kept = lambda idx: (p := position[np.arange(n_given)[np.asarray(idx)]])[p >= 0]
                splits = [(on_kept(train), on_kept(test)) for train, test in splits]
        except ValueError as exc:
            if not strict:
                return None
            hint = ("the folds are drawn from X and y alone, so pass an int or a splitter that needs no groups"
                    if "groups" in str(exc) else "choose fewer folds, or cv=None for the in-sample probabilities")
            raise ValueError(f"cv={self._cv_text()} cannot split the {len(y01)} training rows ({exc}); {hint}.") from exc
        # every row scored exactly once, as cross_val_predict asks: other rows would keep no score
        tested = np.zeros(len(y01), dtype=int)
        for _, test in splits:
            np.add.at(tested, np.arange(len(y01))[np.asarray(test)], 1)  # indices or a boolean mask
        if not np.all(tested == 1):
            raise ValueError(f"cv={self._cv_text()} must put every training row in exactly one test fold, as "
                             f"KFold does; its {len(splits)} splits test {int(np.sum(tested == 0))} rows never and "
                             f"{int(np.sum(tested > 1))} more than once. Pass an int, a KFold-like splitter, or "
                             "cv=None for the in-sample probabilities.")
        lacking = [k for k, (train, _) in enumerate(splits) if np.unique(y01[train]).size < 2]
        if lacking and not strict:
            return None
        if lacking:
            model = ("the built-in logistic regression" if self.estimator is None
                     else f"estimator={type(self.estimator).__name__}")
            raise ValueError(f"Cross-fitting {model} with cv={self._cv_text()}: "
                             f"training fold {lacking[0]} holds a single class, so its model has no probability "
                             "for the other. Choose fewer folds, or cv=None for the in-sample probabilities.")
        return splits

    def _make_model(self, n_features: int, solver: str):
        if self.model == "linear" or CONFIGURATIONS.get(solver, ("",))[0] == "oracle":
            return LinearModel(n_features)
        return MLPModel(n_features, self.hidden_layer_sizes)

    # not skipped: the plug-in oracle fits the user's estimator, whose parameters must be validated
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X: ArrayLike | sp.spmatrix | sp.sparray, y: ArrayLike, *,
            groups: ArrayLike | dict[str, ArrayLike] | pd.DataFrame | None = None,
            sample_weight: ArrayLike | None = None, baseline: ArrayLike | None = None) -> "MetricOptimizer":
        """Train on ``X, y`` with the metrics measured on ``groups``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Numeric features (text and categories with ``estimator=`` only). A sparse matrix
            (one-hot encodings, counts) stays sparse, read as CSR.
        y : array-like of shape (n_samples,)
            Binary labels; ``classes_[1]`` is the positive class.
        groups : DataFrame, dict of arrays, or array-like of shape (n_samples,), default=None
            Group columns named by the metrics (a 1-D array is the column ``"group"``).
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the examples in every rate, as in :meth:`ConstrainedClassifier.fit`.
        baseline : array-like of shape (n_samples,), default=None
            A baseline model's decisions, for churn and win-loss constraints: its predicted class
            labels (``old_model.predict(X)``; read as labels whenever every value is one of
            ``classes_``) or 0/1 decisions.

        Returns
        -------
        self : MetricOptimizer
        """
        with unfitted_on_error(self):  # a failed (re)fit leaves no mix of old and new state
            return self._fit(X, y, groups=groups, sample_weight=sample_weight, baseline=baseline)

    def _fit(self, X, y, *, groups=None, sample_weight=None, baseline=None):
        X_raw = X
        X, y = self._validate_binary(X, y)
        if self._raw_X and not is_frame(X_raw):
            try:  # only a DataFrame's dtypes say which columns to encode
                X = X.astype(np.float64)
            except ValueError as exc:  # text; an object that is no number raises numpy's TypeError
                raise ValueError(f"X has non-numeric values ({exc}); estimator= takes category and text "
                                 "columns in a DataFrame, whose dtypes mark them.") from exc
        data = self._rate_data(X_raw, X, y, groups, sample_weight, baseline)
        # explicit cv splits number the rows as given: kept to renumber them
        rows_given = (data.n, data.weighted_rows())
        data, X, X_raw = self._without_weightless(data, X, X_raw)
        # the built-in models play on offset columns centred and columns in extreme units divided
        # by powers of two; every parameter handed out (candidates_, the callback's) is folded
        # back onto X
        transform = input_scale(X, data.sample_weight) if self.estimator is None else None
        X = scaled_input(X, transform)
        if self.estimator is None:  # a mostly-zero X as CSR once, not again by every part that multiplies by it
            X = Design(X).X
        metric = _as_loss(self.metric)
        constraints = stated = as_metric_constraints(self.constraints)
        X_fit, data_fit, objective = X, data, metric
        if isinstance(metric, PRAUC):
            if constraints or self.model != "linear" or self.estimator is not None:
                raise ValueError("pr_auc() is optimised alone, with model='linear' and no estimator (one linear "
                                 f"score, one bias per recall level); got constraints={self.constraints!r}, "
                                 f"model={self.model!r}, estimator={self.estimator!r}.")
            X_fit, data_fit, objective, constraints = stacked_problem(metric, X, data)
        expansion = Expansion(data_fit.groups)
        program = compile_program(objective, constraints, data_fit, expansion)
        self._expansion = expansion.frozen()  # later rows expand into the fitted constraints
        # read by "auto" alone; with estimator= X may be raw, and the oracle is the only choice
        decodable = (self.solver != "auto" or self.estimator is not None
                     or _cells_decodable(program_group_columns(program), data_fit, X_fit))
        solver = self._choose_solver(program, "pr_auc" if isinstance(metric, PRAUC) else None, decodable)
        rng, gen, seed = self._random_streams()
        self._model = self._make_model(X_fit.shape[1], solver)
        # an MLP's first layer, or the weights on x of any linear game (stacked or cross-fitted)
        unscale = None if transform is None else (
            self._model if isinstance(self._model, MLPModel) else LinearModel(X.shape[1])).unscale
        surrogate = self.surrogate if self.surrogate != "auto" else ("logistic" if solver == "ratio" else "hinge")
        common = dict(surrogate=surrogate, learning_rate=self.learning_rate,
                      lambda_learning_rate=self.lambda_learning_rate, lambda_bound=self.lambda_bound,
                      alpha=self.alpha, max_iter=self.max_iter, batch_size=self.batch_size,
                      n_candidates=self.n_candidates, tol=self.tol, rng=gen, verbose=self.verbose)
        # the ratio game's theta-player is the plug-in oracle when a probability model is given
        uses_oracle = (self.estimator is not None if solver == "ratio"
                       else CONFIGURATIONS[solver][0] == "oracle")
        common["n_iter_no_change"] = (self.n_iter_no_change if self.n_iter_no_change != "auto"
                                      else AUTO_PATIENCE.get(solver, 100))
        theta_eta = None
        if self.estimator is not None:  # the game plays on [x, logit eta(x)]
            # the seed comes from rng, not gen, so the game's draws do not depend on the estimator
            X_fit, theta_eta = self._plugin_scores(X_raw if is_frame(X_raw) else X, data,
                                                   rng.randint(np.iinfo(np.int32).max), rows_given)
        elif uses_oracle or (self.init == "logistic" and isinstance(self._model, LinearModel)):
            theta_eta = fit_logistic(X, data.y, data.sample_weight, self.alpha)
        # the built-in logistic regression cross-fitted like an estimator: the oracle plays on
        # [x, out-of-fold log-odds], and the answers fold back into linear models of x below
        cross_fit = uses_oracle and self.estimator is None and self._cv(cross_fit_builtin=not constraints) is not None
        eta_full = theta_eta
        folded = self._out_of_fold_logistic(X, data, eta_full, rows_given) if cross_fit else None
        cross_fit = folded is not None
        if cross_fit:
            X_fit, theta_eta = folded

        def to_model(thetas: np.ndarray) -> np.ndarray:
            """The game's parameter vectors as the fitted model's (``candidates_``, the callback's)."""
            if cross_fit:  # weight v on the score z = x . w_eta + b_eta is weight v w_eta on x
                v = thetas[:, -2:-1]
                thetas = np.hstack([thetas[:, :-2] + v * eta_full[:-1], thetas[:, -1:] + v * eta_full[-1]])
            if isinstance(metric, PRAUC):  # predict with the threshold of the middle (sorted) recall level
                thetas = deployed_params(thetas, X.shape[1], len(metric.levels) // 2)
            return thetas if unscale is None else unscale(thetas, transform)

        common["callback"] = folding_callback(self.callback, to_model)
        init_params = theta_eta if isinstance(self._model, LinearModel) and self.init == "logistic" else None
        if init_params is not None and isinstance(metric, PRAUC):
            init_params = initial_params(theta_eta, X, data.y, metric.levels, data.sample_weight)
        game_model = LinearModel(X_fit.shape[1]) if cross_fit else (
            self._model if self.estimator is None else self._model.linear)
        oracle = None
        if uses_oracle:
            # the cells decode from x alone, not from an appended score column
            n_decode = X_fit.shape[1] - (self.estimator is not None or cross_fit)
            columns = program_group_columns(program)
            oracle = PluginOracle(X_fit, theta_eta, group_cells(columns, data), data.sample_weight, n_decode=n_decode)
            _warn_if_cells_undecodable(oracle, columns, data, X_fit, n_decode, self.estimator is not None)
        if solver == "ratio":
            traj = solve_ratio_game(program, RatioProgram(program, data_fit), game_model, X_fit, oracle=oracle,
                                    xi_learning_rate=self.xi_learning_rate, init_params=init_params, **common)
        else:
            traj = solve_three_player(program, game_model, X_fit, solver=solver, oracle=oracle,
                                      init_params=init_params, **common)
        # a surrogate's intercept is not the metric's: the best snapshots re-thresholded join them
        if not uses_oracle and type(game_model) is LinearModel and not isinstance(metric, PRAUC):
            traj = _with_polished(program, game_model, X_fit, traj)
        self.objective_ = program.objective.metric
        # what metric_values measures: the problem fitted, not parameters set since
        self._fitted_problem = (metric, stated)
        self.constraints_ = [c.label for c in program.constraints]
        self.metric_class_ = _problem_class(program)
        self.solver_ = solver
        self._keep_trajectory(traj, seed)
        self._set_solutions(program, traj)
        self._check_feasible(program, traj, constraints, cross_fit or self._cross_fits_estimator())
        self.candidates_ = to_model(traj.params)
        if isinstance(metric, PRAUC):  # [w, one bias per level, b]: w on the first columns
            self._stacked_params = traj.params if unscale is None else unscale(traj.params, transform)
            self._model = LinearModel(X.shape[1])
        return self

    def _set_solutions(self, program, traj) -> None:
        k = traj.params.shape[0]
        # the game's snapshots, then any candidates priced out of the LP after it
        played = k if traj.n_played is None else traj.n_played
        one_hot = np.eye(k)
        self.solutions_ = {
            "T_stochastic": np.r_[np.full(played, 1.0 / played), np.zeros(k - played)],
            "best": one_hot[best_iterate(traj.objective, program.flag_undefined(traj.rates, traj.constraints))],
            "last": one_hot[played - 1],
        }
        # the rates of a mixture are the mixture of the rates: exact metric values of each solution
        rates = traj.rates
        if program.is_linear:  # the LP column generation ended on, when it ran
            lp = getattr(traj, "lp", None)
            lp = shrink(traj.objective, traj.constraints) if lp is None else lp
            self.solutions_["m_stochastic"] = lp.weights
        else:
            self.solutions_["m_stochastic"] = best_mixture(program, rates, list(self.solutions_.values()))

    def _check_feasible(self, program, traj, constraints, cross_fitted: bool) -> None:
        """Record, for every solution, whether it meets every constraint on the training rows
        (``feasible_`` reads the selected one), and warn when the selected one does not: with the
        largest violation, a ratio's in its own units, as :meth:`metric_values` reports it, or
        with a ratio left undefined by a zero denominator."""
        self._infeasibility = {name: self._violation(program, traj, weights) for name, weights in self.solutions_.items()}
        problem = self._infeasibility[self.solution]
        if problem is None:
            return
        rows = "training data (out-of-fold probabilities)" if cross_fitted else "training data"
        warn(f"The {self.solution} solution does not meet every constraint on the {rows}: "
             f"{problem}.{self._shortfall_advice(program, constraints)}",
             InfeasibleConstraintsWarning)

    def _shortfall_advice(self, program, constraints) -> str:
        """What to do about an infeasible solution: an impossible problem (a named ratio bounded
        beyond its range; linear constraints no choice of each row's decision meets together)
        is told apart from a model or a training run that fell short."""
        beyond = out_of_range_bounds(constraints)
        if beyond:
            return f" No classifier at all can meet {beyond[0]}. Loosen or drop that constraint."
        kept, cells, offsets = program.linear_constraints()
        least, worst = least_largest(cells, offsets) if kept else (0.0, 0)
        if least > 1e-9:
            least *= program.constraints[kept[worst]].scale  # on the constraint's linear form as stated
            return (f" No classifier at all can meet the constraints linear in the rates together on these rows, "
                    f"even one choosing each row's decision freely: the least possible largest violation is "
                    f"{least:.4g}, on '{self.constraints_[kept[worst]]}' (of the constraints' linear forms "
                    "g <= 0). Loosen or drop the constraints that conflict (a bound outside a rate's range, bounds "
                    "that contradict each other).")
        other = [name for name, miss in self._infeasibility.items() if miss is None]
        return (" Loosen the constraints, train longer (max_iter) or with a larger model"
                + (f", or choose the {other[0]} solution, which meets them." if other else "."))

    @staticmethod
    def _violation(program, traj, weights) -> str | None:
        """None when the mixture ``weights`` meets every constraint, else what it misses."""
        r = program.mixed_rates(traj.rates, weights)
        # a ratio bound multiplied out by its denominator reads as stated
        violations = {c.label: float(c.reported(r)) for c in program.constraints}
        undefined = {c.label: c.zero_denominator(r) for c in program.constraints if np.isnan(violations[c.label])}
        # a linear constraint judged on its solvers' scale, as the LP judged it
        if all(violations[c.label] / (c.scale if c.denominator is None else 1.0) <= FEASIBLE_TOL
               for c in program.constraints):  # False at NaN: undefined
            return None
        if undefined:
            label, denominator = next(iter(undefined.items()))
            return f"'{label}' is undefined, because {zero_denominator_reason(denominator)}"
        label = max(violations, key=violations.get)
        return f"the largest violation is {violations[label]:.4g}, on '{label}'"

    @property
    def feasible_(self) -> bool:
        self._solution_weights(None)  # fitted, and a known solution (set_params may name any)
        return self._infeasibility[self.solution] is None

    def metric_values(self, X: ArrayLike | sp.spmatrix | sp.sparray, y: ArrayLike, *,
                      groups: ArrayLike | dict[str, ArrayLike] | pd.DataFrame | None = None,
                      sample_weight: ArrayLike | None = None, baseline: ArrayLike | None = None,
                      solution: str | None = None) -> dict[str, float]:
        """Objective and constraint values on ``X, y`` in expectation over the stochastic model.

        Parameters
        ----------
        X, y : array-like
            Rows and their labels, among the ``classes_`` seen in ``fit``.
        groups : DataFrame, dict of arrays, or array-like of shape (n_samples,), default=None
            Group columns named by the metrics, as in :meth:`fit`.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows in every rate, as in :meth:`fit`; None means equal weights.
        baseline : array-like of shape (n_samples,), default=None
            A baseline model's decisions on these rows, for churn and win-loss constraints, as
            in :meth:`fit`.
        solution : str, default=None
            Which solution to evaluate (default: the ``solution`` parameter).

        Returns
        -------
        dict
            ``{"objective": psi, label: phi_j, ...}`` with ``phi_j <= 0`` meaning met; the
            labels are those of ``constraints_``: a constraint over a bare group column stands
            for the values seen in ``fit``. One that these rows leave undefined (a value none of
            them holds, an empty slice) is NaN, with a warning, which also names the group
            values of these rows that no fitted constraint covers; so is an objective they
            leave undefined (no negatives for ``g_mean``'s ``tnr``). A bound on a ratio, a rate
            constraint's or a metric one's (``precision() >= 0.8``), reads in the ratio's units
            (``0.8 - precision``) as ``ConstrainedClassifier.constraint_report`` gives it: over
            a zero denominator infinite (wins over no losses meet a win-loss floor), NaN at
            ``0 / 0``. A metric holding a ratio with a zero denominator (``predictive_parity``
            for a group without positive predictions) is NaN; both with a warning.
            ``train_constraints_`` keep the linear form the solvers work with.

        Raises
        ------
        ValueError
            When ``y`` holds a label not in ``classes_``.
        """
        X_raw = X
        X = self._features(X)
        y = self._check_scoring_labels(X_raw, X, y)
        data = self._rate_data(X_raw, X, y, groups, sample_weight, baseline)
        metric, fitted_constraints = self._fitted_problem
        if isinstance(metric, PRAUC):
            X_big, data, objective, constraints = stacked_problem(metric, X, data)
            weights = self._solution_weights(solution)
            p = StochasticModel(LinearModel(X_big.shape[1]), self._stacked_params, weights).proba(X_big)
        else:
            objective, constraints = metric, fitted_constraints
            p = self.predict_proba(X_raw, solution=solution)[:, 1]
        undefined: list[str] = []
        try:
            values = program_values(objective, constraints, data, p, self._expansion, undefined)
        except UndefinedRateError as exc:  # the objective's: an unmeasured constraint is in `undefined`
            warn(f"metric_values: the objective is undefined on these rows, reported as NaN. {exc}", UserWarning)
            undefined.clear()
            values = {**program_values("error", constraints, data, p, self._expansion, undefined), "objective": np.nan}
        else:
            if np.isnan(values["objective"]):
                warn("metric_values: the objective is undefined for the model's decisions on these rows, reported "
                     "as NaN: a ratio of it is 0 / 0 (for precision, the model predicts no positives in its slice).",
                     UserWarning)
        out = {"objective": values["objective"], **{label: values.get(label, np.nan) for label in self.constraints_}}
        warn_uncovered("metric_values", data, self._expansion.values(), undefined,
                       "make_violation_scorer(model.constraints) expands over these rows' values",
                       [label for label in self.constraints_ if np.isnan(out[label]) and label not in undefined])
        return out


def _with_polished(program, model, X, traj):
    """``traj`` and, after its snapshots, its best ones at their best thresholds on the metric."""
    params, source = polish_thresholds(program, model, X, traj.params, traj.rates)
    if not params.shape[0]:
        return traj
    return appended(traj, [trajectory(program, model, X, params, traj.multipliers[source], traj.n_iter)])


def _as_loss(spec) -> Metric:
    """The metric to minimise; a lone score (``"accuracy"``, ``"tpr"``) is refused, naming its loss."""
    metric = as_objective(spec)
    refuse_score(spec, metric, "MetricOptimizer minimises its metric")
    return metric


def _problem_class(program) -> str:
    kinds = {program.objective.kind} | {c.kind for c in program.constraints}
    kinds.discard("linear")
    return kinds.pop() if len(kinds) == 1 else ("linear" if not kinds else "mixed")
