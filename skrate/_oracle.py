"""ConstrainedClassifier's oracle path: any scikit-learn classifier as the theta-player."""

from __future__ import annotations

from sklearn.base import is_classifier

from .models._fitted import FittedEstimators
from .models._oracle import CostSensitiveOracle, seeded
from .solvers._oracle_game import ORACLE_SOLVERS, OracleTrajectory, solve_oracle_game


def check_oracle_params(estimator, solver: str, model: str = "linear") -> None:
    """The estimator and the solver must come together: oracle solvers need one, the others none;
    and the built-in ``model`` is not asked for beside an estimator, which replaces it."""
    if solver in ORACLE_SOLVERS and estimator is None:
        raise ValueError(f"solver={solver!r} fits a classifier on a weighted problem at every iteration; "
                         "pass it as estimator=..., e.g. estimator=LogisticRegression().")
    if estimator is not None and not is_classifier(estimator):
        raise ValueError(f"estimator={type(estimator).__name__} is not a classifier; the oracle solvers need "
                         "one whose predict returns the labels 0/1 of a weighted classification problem, "
                         "e.g. LogisticRegression() or HistGradientBoostingClassifier().")
    if estimator is not None and solver not in ORACLE_SOLVERS:
        raise ValueError(f"estimator={type(estimator).__name__} is used by the oracle solvers only; set "
                         f"solver to one of {list(ORACLE_SOLVERS)} (solver={solver!r} trains the built-in "
                         "'model' instead), or drop estimator.")
    if estimator is not None and model != "linear":
        raise ValueError(f"model={model!r} has no effect with estimator=: the oracle solvers fit the estimator "
                         "itself at every iteration. Drop one of them.")


def fit_oracle_game(clf, problem, X, held_out, seed: int,
                    total_weight: float) -> tuple[FittedEstimators, OracleTrajectory]:
    """Play the oracle game for the parameters of ``clf``; return the score model and trajectory.

    ``total_weight`` is the sum of the user's sample weights on ``X``: the reduction's weights
    sum to it, so weighting a row by 2 fits the same models as repeating it (in a Pipeline, whose
    final step alone gets the weights, when the steps before it ignore repetition). The estimator's
    ``random_state`` parameters left None, its steps' included, are drawn from ``seed``
    (:func:`~skrate.models._oracle.seeded`), so every fit is reproducible. One
    model is fitted per iteration and every one is a candidate, so there are at most
    ``min(max_iter, n_candidates)`` iterations.
    """
    oracle = CostSensitiveOracle(seeded(clf.estimator, seed))
    traj = solve_oracle_game(
        problem, oracle, X, solver=clf.solver, lambda_learning_rate=clf._lambda_step(problem.n_constraints),
        max_iter=min(clf.max_iter, clf.n_candidates), tol=clf.tol, total_weight=total_weight, held_out=held_out,
        callback=clf.callback, verbose=clf.verbose,
    )
    return FittedEstimators(traj.estimators, n_jobs=clf.n_jobs), traj
