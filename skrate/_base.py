"""What every skrate rate classifier shares: binary targets, groups, stochastic predictions."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import accuracy_score
from sklearn.utils import check_random_state, get_tags
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from ._row_order import RowOrderScoreMixin
from .problem import GroupTable, RateData
from .problem._groups import check_row_order
from .solutions import StochasticModel
from .utils._frames import check_collected, frame_dtypes, is_frame
from .utils._validation import (_is_numeric, check_baseline, check_label_missing, check_sample_weight,
                                check_weighted_classes, validate_numeric)
from .utils._warnings import listed, warn

if TYPE_CHECKING:
    import scipy.sparse as sp
    from numpy.typing import ArrayLike


def warn_uncovered(method: str, data: RateData, fitted: dict[str, set], empty: list[str],
                   advice: str, zero_over_zero: list[str] = ()) -> None:
    """Say which fitted constraints a report's rows leave undefined (``empty``, reported as NaN),
    which the model's decisions leave undefined (``zero_over_zero``: a ratio ``0 / 0``, also
    NaN) and which group values of these rows no fitted constraint covers: the fitted
    constraints were expanded over the values of each column in ``fitted`` seen in fit.
    ``advice`` says how to expand over these rows' values instead."""
    # as the fitted filters select these rows' values: "1.0" is the group "1" unless "1" is here too;
    # values held only by rows of weight 0 are not there, as in fit
    groups = data.groups.weighted(data.sample_weight)
    new = {k: sorted(set(groups.values(k)) - groups.selected(k, vs))
           for k, vs in fitted.items() if k in groups.raw}
    new = {k: v for k, v in new.items() if v}
    notes = []
    if empty:
        notes.append(f"{len(empty)} constraint(s) are undefined on these rows, reported as NaN: a slice holds "
                     f"no rows, or none that a rate of theirs divides by (e.g. no positives, for a tpr): {listed(empty)}")
    if zero_over_zero:
        notes.append(f"{len(zero_over_zero)} constraint(s) are undefined for the model's decisions on these rows, "
                     "reported as NaN: a ratio of theirs is 0 / 0 (for precision, the model predicts no positives "
                     f"in its slice): {listed(zero_over_zero)}")
    if new:
        notes.append("these rows hold group values the model was not constrained on (its constraints "
                     f"were expanded over the values seen in fit): {new}; {advice}")
    if notes:
        warn(f"{method}: " + "; ".join(notes) + ".", UserWarning)


def _takes_nan(estimator) -> bool:
    """Whether ``estimator`` fits on X with missing values. A Pipeline's own tag says False
    even after an imputer: it does when every step up to its first imputer (of
    ``sklearn.impute``), or every step, takes them; a scaler passes NaN on to the next step."""
    steps = [step for _, step in getattr(estimator, "steps", None) or [(None, estimator)]
             if step not in (None, "passthrough")]
    for step in steps:
        if not get_tags(step).input_tags.allow_nan:
            return False
        if type(step).__module__.startswith("sklearn.impute"):
            return True
    return True


class RateClassifierBase(RowOrderScoreMixin, ClassifierMixin, BaseEstimator):
    """Base of the classifiers whose solution is a distribution over candidate models.

    Subclasses fit ``classes_``, ``candidates_`` (parameters, one row per candidate),
    ``solutions_`` (name -> weights over the candidates), ``random_seed_`` and ``_model``
    (the score function family, with ``scores_many(X, candidates)``), and have a
    ``solution`` parameter naming the default solution.
    """

    _raw_X = False  # set by fit: see _takes_raw_X
    _text_advice = ""  # how else text columns can be fitted, for the error that refuses them

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.sparse = True  # the built-in models take CSR rows
        estimator = getattr(self, "estimator", None)
        if estimator is not None:  # X reaches the user's estimator as given, which decides on NaN and sparse X
            tags.input_tags.allow_nan = _takes_nan(estimator)
            tags.input_tags.sparse = get_tags(estimator).input_tags.sparse
        return tags

    def _rate_data(self, X_raw, X, y, groups, sample_weight, baseline, **aligned) -> RateData:
        """The rate data of a fit; ``aligned`` names further per-row inputs held to X's row order."""
        check_row_order(X_raw, sample_weight=sample_weight, baseline=baseline, **aligned)
        y01 = None if y is None else (np.asarray(y) == self.classes_[1]).astype(int)
        weights = check_sample_weight(sample_weight, X.shape[0])
        return RateData(y01, weights, GroupTable.from_input(groups, X_raw, X.shape[0]),
                        check_baseline(baseline, self.classes_, X.shape[0]))

    def _without_weightless(self, data: RateData, *rows) -> tuple:
        """``data.without_weightless(*rows)``, refusing a class that only rows of weight 0 hold."""
        out = data.without_weightless(*rows)
        check_weighted_classes(out[0].y.astype(int), self.classes_, type(self).__name__)
        return out

    def _random_streams(self) -> tuple[np.random.RandomState, np.random.Generator, int]:
        """``random_state`` as a RandomState, the game's generator drawn from it, and the seed of
        the per-row draws of ``predict`` (``random_seed_``): a stream of its own, so stochastic
        predictions depend on ``random_state`` alone, not on how many draws the data made the
        game take (weights as repeated rows predict alike)."""
        rng = check_random_state(self.random_state)
        base = rng.randint(np.iinfo(np.int32).max)
        return rng, np.random.default_rng(base), int(np.random.default_rng([base, 1]).integers(2**62))

    def _takes_raw_X(self) -> bool:
        """Whether ``fit`` hands ``X`` as given to a user's estimator (which validates it itself)
        rather than to a built-in model that needs a float array."""
        return False

    def _check_X(self, X, y="no_validation", **kwargs):
        check_collected(X=X)
        if self._raw_X:
            # a user's estimator may take text, categories and NaN, and refuses what it cannot
            # take itself: only its fit knows (tags guess, e.g. a Pipeline's from its first step)
            # a frame that mixes categories with nullable numbers (Int64) would be cast to float
            # as a whole: rows of objects keep both (the estimator still gets the frame itself)
            mixed = is_frame(X) and not all(_is_numeric(d) for _, d in frame_dtypes(X))
            return validate_data(self, X, y, accept_sparse="csr", dtype=object if mixed else None,
                                 ensure_all_finite="allow-nan", **kwargs)
        return validate_numeric(self, X, y, accept_sparse="csr", dtype=np.float64, advice=self._text_advice,
                                **kwargs)

    def _validate_binary(self, X, y):
        """Validate ``X, y`` for a binary problem and set ``classes_`` (positive class last)."""
        self._raw_X = self._takes_raw_X()
        check_row_order(X, y=y)
        check_label_missing(y)
        X, y = self._check_X(X, y)
        y_type = type_of_target(y, input_name="y", raise_unknown=True)
        if y_type != "binary":
            check_classification_targets(y)  # scikit-learn's error for a continuous target
        self.classes_ = np.unique(y)
        if self.classes_.shape[0] == 1:
            raise ValueError(f"y holds one class only, {self.classes_.tolist()[0]!r}; binary classification needs "
                             "examples of both classes (rates such as tpr and fpr are defined on each).")
        if y_type != "binary":  # two classes: one was refused above
            raise ValueError(
                "Only binary classification is supported. The type of the target is "
                f"{y_type}, with {self.classes_.shape[0]} class(es): {self.classes_.tolist()[:10]}; "
                "rates such as tpr are defined for a positive class (classes_[1]).")
        return X, y

    @property
    def weights_(self) -> np.ndarray:
        return self._solution_weights(None)

    def _keep_trajectory(self, traj, seed: int) -> None:
        """The fitted attributes every game leaves: its candidates, their values and multipliers."""
        self.candidates_ = traj.params
        self.train_objective_ = traj.objective
        self.train_constraints_ = traj.constraints
        self.multipliers_ = traj.multipliers
        self.n_iter_ = traj.n_iter
        self.random_seed_ = seed

    def stochastic_model(self, solution: str | None = None) -> StochasticModel:
        """The fitted distribution over models of a solution.

        Parameters
        ----------
        solution : {"m_stochastic", "T_stochastic", "best", "last"}, default=None
            Which fitted solution; None uses the ``solution`` parameter.

        Returns
        -------
        StochasticModel
            The candidates in the solution's support with their weights; its ``scores(X)``
            gives each model's raw scores.
        """
        weights = self._solution_weights(solution)  # checks the estimator is fitted first
        return StochasticModel(self._model, self.candidates_, weights, self.random_seed_)

    def _solution_weights(self, solution: str | None) -> np.ndarray:
        """The weights over ``candidates_`` of a solution (None: the ``solution`` parameter)."""
        check_is_fitted(self)
        name = self.solution if solution is None else solution
        if name not in self.solutions_:
            raise ValueError(f"Unknown solution {name!r}; choose from {list(self.solutions_)}.")
        return self.solutions_[name]

    def _features(self, X):
        check_is_fitted(self)
        return self._check_X(X, reset=False)

    def _check_scoring_labels(self, X_raw, X, y) -> np.ndarray:
        """``y`` to score the fitted model on ``X`` (validated from ``X_raw``) with: one label per
        row, all seen in fit."""
        check_row_order(X_raw, y=y)
        check_label_missing(y)
        y = np.asarray(y)
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"y has {y.shape[0]} entries but X has {X.shape[0]} rows.")
        unknown = set(np.unique(y).tolist()) - set(self.classes_.tolist())
        if unknown:
            raise ValueError(f"y holds labels {sorted(unknown)} unseen in fit; classes are {self.classes_.tolist()}.")
        return y

    def _model_input(self, X):
        """What the models predict on, and the validated rows the reproducible draws hash."""
        checked = self._features(X)
        return (X if self._raw_X and is_frame(X) else checked), checked

    def predict_proba(self, X: ArrayLike | sp.spmatrix | sp.sparray,
                      *, solution: str | None = None) -> np.ndarray:
        """Class probabilities: column 1 is the probability that the (randomised) classifier says 1.

        For a stochastic solution this is ``sum_k p_k 1[f_k(x) > 0]``, so expected rates computed
        from it are exact; for a deterministic one it is 0 or 1.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows to predict, with the features seen in ``fit``.
        solution : {"m_stochastic", "T_stochastic", "best", "last"}, default=None
            Which fitted solution predicts; None uses the ``solution`` parameter.

        Returns
        -------
        ndarray of shape (n_samples, 2)
            Columns in the order of ``classes_``.
        """
        p = self.stochastic_model(solution).proba(self._model_input(X)[0])
        return np.column_stack([1.0 - p, p])

    def predict_log_proba(self, X: ArrayLike | sp.spmatrix | sp.sparray,
                          *, solution: str | None = None) -> np.ndarray:
        """Logarithm of :meth:`predict_proba`: ``-inf`` where a class has probability 0, as it
        has on every row for a deterministic solution.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows to predict, with the features seen in ``fit``.
        solution : {"m_stochastic", "T_stochastic", "best", "last"}, default=None
            Which fitted solution predicts; None uses the ``solution`` parameter.

        Returns
        -------
        ndarray of shape (n_samples, 2)
            Columns in the order of ``classes_``.
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X, solution=solution))

    def decision_function(self, X: ArrayLike | sp.spmatrix | sp.sparray,
                          *, solution: str | None = None) -> np.ndarray:
        """``predict_proba(X)[:, 1] - 0.5``: ranks as the probabilities do.

        The raw scores of the models in the support are ``stochastic_model().scores(X)``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows to predict, with the features seen in ``fit``.
        solution : {"m_stochastic", "T_stochastic", "best", "last"}, default=None
            Which fitted solution predicts; None uses the ``solution`` parameter.

        Returns
        -------
        ndarray of shape (n_samples,)
            Positive where the classifier says ``classes_[1]`` with probability above 1/2. For a
            solution with more than one model, ``predict`` draws each row's label with that
            probability, so it may differ from ``decision_function > 0``.
        """
        return self.predict_proba(X, solution=solution)[:, 1] - 0.5

    def predict(self, X: ArrayLike | sp.spmatrix | sp.sparray,
                *, solution: str | None = None) -> np.ndarray:
        """Labels. For a stochastic solution each row's label is drawn with its probability
        from a uniform number that is a hash of the row, so predictions are reproducible
        across calls and processes while, over many rows, following the mixture. Copies of
        a row within ``X`` (discrete features) draw along a low-discrepancy sequence from
        that number, so the fraction of them predicted 1 matches their probability (see
        :func:`skrate.solutions.row_uniforms`). The hash folds in every column of a row, zeros
        included, so that draws stay the same from version to version: on a sparse ``X`` it
        costs one pass over ``n_samples`` per column, more than the scores (10,000 rows of
        20,000 columns: about 0.5 s). ``predict_proba`` has no such cost.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows to predict, with the features seen in ``fit``.
        solution : {"m_stochastic", "T_stochastic", "best", "last"}, default=None
            Which fitted solution predicts; None uses the ``solution`` parameter.

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels among ``classes_``.
        """
        X, rows = self._model_input(X)
        labels = self.stochastic_model(solution).predict(X, rows)
        return self.classes_[labels]

    def score(self, X: ArrayLike | sp.spmatrix | sp.sparray, y: ArrayLike,
              sample_weight: ArrayLike | None = None, *,
              solution: str | None = None) -> float:
        """Accuracy of :meth:`predict`, weighted by ``sample_weight``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows to predict, with the features seen in ``fit``.
        y : array-like of shape (n_samples,)
            True labels, in ``X``'s row order.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights.
        solution : {"m_stochastic", "T_stochastic", "best", "last"}, default=None
            Which fitted solution predicts; None uses the ``solution`` parameter.

        Returns
        -------
        float
            The (weighted) fraction of rows whose drawn label is ``y``; for the expected
            accuracy of a stochastic solution, score ``predict_proba`` instead.
        """
        sample_weight = self._score_weights(X, y, sample_weight)
        return float(accuracy_score(y, self.predict(X, solution=solution), sample_weight=sample_weight))

