"""AUCClassifier: linear ROC-AUC maximisation with SPAM, VRSPAM or the exact quadratic solve."""

from __future__ import annotations

import copy
from contextlib import nullcontext
from dataclasses import replace
from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, log_expit
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted

from ._auc_calibration import RowReservoir, fit_platt
from ._auc_objective import ClassStatistics, smooth_objective, stream_loss
from ._auc_solvers import (column_scale, diverged, minibatch_smoothness, pinned_scale,
                           solve_exact, spam, spam_epoch, vrspam)
from ._prox import elastic_net_penalty
from ._row_order import RowOrderScoreMixin
from .models._input_scale import column_offsets, column_peaks, shifted_columns
from .problem._groups import check_row_order
from .utils._validation import (check_label_missing, check_sample_weight, check_weighted_classes,
                                unfitted_on_error, validate_numeric, without_weightless)
from .utils._warnings import warn

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["AUCClassifier"]

_EXACT_MAX_FEATURES = 1000  # solver="auto" builds the d x d quadratic up to this size
_RESERVOIR_SIZE = 2000  # rows kept by partial_fit to refit the calibration


# squares of entries beyond this, summed over rows, leave the float range (and of a column
# below its inverse, the preconditioned steps eta / scale^2)
_LARGEST_ENTRY = 1e150


class AUCClassifier(RowOrderScoreMixin, ClassifierMixin, BaseEstimator):
    """Linear classifier maximising ROC-AUC through the pairwise square loss.

    Minimises over ``w`` the penalised square-loss AUC objective::

        P(w) = 1/2 * mean_{i: y_i = 1, j: y_j = 0} (1 - w.(x_i - x_j))^2
               + alpha * (l1_ratio * ||w||_1 + (1 - l1_ratio) / 2 * ||w||_2^2)

    where the mean runs over all (positive, negative) pairs of the training set. The loss is
    a quadratic in ``w`` that needs only the class means and covariances; its saddle-point
    reformulation (Ying et al., 2016) gives per-example stochastic gradients, used by SPAM
    (proximal SGD, Natole et al., 2018) and VRSPAM (proximal SVRG, Dan and Sahoo). See the
    user guide ``doc/auc.rst``.

    Parameters
    ----------
    penalty : {"l2", "elasticnet", "l1"}, default="l2"
        Penalty; ``"l2"`` and ``"l1"`` set ``l1_ratio`` to 0 and 1.
    alpha : float, default=0.01
        Penalty strength (>= 0).
    l1_ratio : float, default=0.5
        Share of L1 in the elastic-net penalty, used only with ``penalty="elasticnet"``.
    solver : {"vrspam", "spam", "exact", "auto"}, default="vrspam"
        ``"exact"`` forms the ``d x d`` quadratic (O(n d^2)) and minimises it: one
        equilibrated linear solve for ``"l2"`` (the least-squares solution of minimum norm in
        the equilibrated variables when ``alpha=0`` leaves it singular), accelerated proximal
        gradient on the equilibrated quadratic, polished by an exact solve on the sign
        pattern, for ``"l1"``/``"elasticnet"``.
        ``"spam"``: proximal SGD with step ``eta0 / sqrt(k)`` in pass ``k``. ``"vrspam"``: one
        SPAM pass, then proximal SVRG with the constant step ``eta0``. Both stochastic solvers
        are preconditioned by the column scales (see ``eta0``), which leaves their minimiser
        unchanged. ``"auto"``: ``"exact"`` when ``n_features <= 1000``, else ``"vrspam"``.
    max_iter : int, default=30
        Maximum number of passes over the data (stochastic solvers; one pass is ``n``
        example gradients: VRSPAM's full gradient and each inner epoch count one pass each).
    tol : float, default=1e-4
        The stochastic solvers stop once a bound on the relative objective gap
        ``(P(w) - P*) / min(P*, 1/2 - P*)`` is at most ``tol`` (``1/2`` is the objective of
        the zero model): with ``alpha > 0`` the duality gap ``(P(w) - D) / min(D, 1/2 - D)``
        for a dual lower bound ``D`` built from the full gradient at ``w`` (never below the
        true gap, often well above it on noisy iterates); with
        ``alpha = 0`` the relative decrease of ``P`` since the last check. VRSPAM checks at
        each snapshot, from the full-gradient pass it makes anyway; SPAM checks after every
        pass, with one extra full-gradient pass (two products with ``X``, little next to the
        pass's minibatch steps, not counted in ``n_iter_``). Either solver emits a
        :class:`~sklearn.exceptions.ConvergenceWarning` when it reaches ``max_iter`` first.
        ``partial_fit`` makes no such check. See ``doc/auc.rst``.
    inner_iter : int or None, default=None
        VRSPAM's inner minibatch steps per outer loop (``m``); None means one epoch
        (``ceil(n / batch_size)`` steps, each example once). A loop that would end after
        ``max_iter - 1`` passes is cut to end there, so that the last check (see ``tol``) is
        at the returned point; when that would leave no step, the loop runs to ``max_iter``
        and the returned point is checked with an extra full-gradient pass, as SPAM's are.
    batch_size : int, default=16
        Minibatch size of the stochastic steps.
    eta0 : "auto" or float, default="auto"
        Base step size of the preconditioned problem: the stochastic solvers work on the
        columns ``X / s``, with ``s_j`` the root mean square of the centred column ``j`` (at
        least a tenth of its largest deviation from its mean; 1 for a constant column), an
        exact reparametrisation ``w = v / s`` with the penalty kept in the original units, so
        coordinate ``j`` moves with step ``eta0 / s_j**2``; a column constant in the data (in
        ``partial_fit``: in all rows seen so far) does not move, its coefficient stays 0.
        ``"auto"`` is ``1 / L_b`` where ``L_b`` is the expected smoothness of a minibatch
        gradient on ``X / s``, bounded from the norms of the examples (see ``doc/auc.rst``);
        it needs no tuning, whatever the units of the features. It is 0 (no step) when
        ``L_b`` is: the gradient is then only rounding error. ``partial_fit`` keeps the
        scales of a preceding stochastic ``fit``, or takes those of its first chunk.
    random_state : int, RandomState instance or None, default=None
        Seeds the minibatch order (and the calibration reservoir of ``partial_fit``).
    verbose : int, default=0
        When positive, print the objective and the estimated gap (see ``tol``) after every
        SPAM pass and at every VRSPAM snapshot of ``fit``; ``partial_fit``, which makes no
        check, prints nothing.
    callback : callable or None, default=None
        Called as ``callback({"coef": w, "n_iter": passes})`` after every SPAM pass, after
        VRSPAM's warm-start pass and every outer loop (and once by ``"exact"``). Training
        stops when it returns the object ``False``; any other value, ``None``, ``0`` and
        ``numpy.False_`` included, continues. ``partial_fit`` does not call it.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    coef_ : ndarray of shape (1, n_features)
        The minimiser ``w`` found.
    intercept_ : ndarray of shape (1,)
        ``b / a`` of the Platt calibration ``expit(a w.x + b)`` fitted on the training
        scores, so that ``decision_function > 0`` exactly when ``predict_proba > 1/2``. It
        does not change the ranking, hence not the AUC.
    n_iter_ : int
        Passes over the data made by the last ``fit`` (1 for ``"exact"``, rounded up), or 1
        after a ``partial_fit`` call (one pass over its chunk), as in scikit-learn's
        ``SGDClassifier``.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of str
        Present when X was a DataFrame with string column names.
    t_ : int
        Rows seen by the last ``fit`` and the ``partial_fit`` calls since (or since the first
        ``partial_fit``).
    solver_ : str
        The solver used (resolves ``"auto"``).
    step_size_ : float or None
        Base step size of the stochastic solvers, in the preconditioned units (see ``eta0``;
        None after ``"exact"`` with ``eta0="auto"``, and before ``partial_fit`` has seen both
        classes).
    objective_ : float
        ``P(coef_)`` on the training data (only set by ``fit``).

    Notes
    -----
    So that ``partial_fit`` can refit the calibration as the stream goes on, the fitted model
    keeps a uniform sample of at most 2000 of the rows it was trained on (``fit`` and
    ``partial_fit`` alike), features and labels, and a pickle of it carries them. Where the
    model is shared and the training rows must not be, share ``coef_``, ``intercept_`` and
    ``classes_``, or the model's predictions, instead.

    References
    ----------
    Ying, Y., Wen, L. and Lyu, S. Stochastic Online AUC Maximization. NeurIPS 2016.

    Natole, M., Ying, Y. and Lyu, S. Stochastic Proximal Algorithms for AUC Maximization.
    ICML 2018.

    Dan, S. and Sahoo, D. Variance Reduced Stochastic Proximal Algorithm for AUC
    Maximization. ECML PKDD 2021 (arXiv:1911.03548).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skrate import AUCClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = AUCClassifier(solver="exact").fit(X, y)
    >>> clf.decision_function(X[:3]).shape
    (3,)
    """

    _parameter_constraints: dict = {
        "penalty": [StrOptions({"l2", "elasticnet", "l1"})],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "l1_ratio": [Interval(Real, 0, 1, closed="both")],
        "solver": [StrOptions({"vrspam", "spam", "exact", "auto"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "inner_iter": [Interval(Integral, 1, None, closed="left"), None],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "eta0": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "callback": [callable, None],
    }

    def __init__(self, penalty="l2", alpha=0.01, l1_ratio=0.5, solver="vrspam", max_iter=30,
                 tol=1e-4, inner_iter=None, batch_size=16, eta0="auto", random_state=None,
                 verbose=0, callback=None):
        self.penalty = penalty
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.inner_iter = inner_iter
        self.batch_size = batch_size
        self.eta0 = eta0
        self.random_state = random_state
        self.verbose = verbose
        self.callback = callback

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.input_tags.sparse = True
        return tags

    # ------------------------------------------------------------------ helpers
    def _l1_ratio(self) -> float:
        return {"l2": 0.0, "l1": 1.0}.get(self.penalty, float(self.l1_ratio))

    @staticmethod
    def _encode_target(y, classes=None, known: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(classes, 0/1 codes of y)``, 1 for ``classes[1]``; the classes of ``y`` when not
        given. ``known``: the classes a stream's first call checked."""
        if known and np.isin(y, classes).all():  # a later chunk of a stream: nothing to infer
            return classes, (y == classes[1]).astype(np.int8)
        y_type = type_of_target(y, input_name="y")
        if classes is not None and y_type != "continuous":
            # named first: a label beside both classes would read as a multiclass target
            unknown = np.setdiff1d(np.unique(y), classes)
            if unknown.size:
                raise ValueError(f"y contains labels {unknown.tolist()} not in classes "
                                 f"{classes.tolist()}.")
        if y_type != "binary":
            check_classification_targets(y)  # scikit-learn's error for a continuous target
            raise ValueError("Only binary classification is supported. The type of the "
                             f"target is {y_type}.")
        if classes is None:
            classes = np.unique(y)
            if classes.size < 2:
                raise ValueError(
                    "AUCClassifier needs examples of both classes to rank positives above "
                    f"negatives; y contains only one class: {classes.tolist()}.")
        return classes, (y == classes[1]).astype(np.int8)

    def _validate(self, X, y, sample_weight, reset: bool):
        """Validated ``(X, y, sample_weight)``, a sparse ``X`` in canonical CSR form (a copy if it
        was not: duplicate stored entries would count apart in the column scales and the step's
        row norms); ``sample_weight`` checked (None when not given)."""
        check_row_order(X, y=y, sample_weight=sample_weight)
        check_label_missing(y)
        X, y = validate_numeric(self, X, y, accept_sparse="csr", dtype=np.float64, reset=reset,
                                y_numeric=False)
        if sample_weight is not None:
            sample_weight = check_sample_weight(sample_weight, X.shape[0])
        return X, y, sample_weight

    @staticmethod
    def _solver_weights(sample_weight, n: int, unit: float | None) -> tuple[float, np.ndarray | None]:
        """``(unit, weight)``: the ``n`` rows' weights divided by the stream's unit, the mean
        weight of its first rows (``fit``'s, or the first chunk's, when ``unit`` is None). The
        solvers take weights of mean 1: the objective is a mean over pairs, so only the weights'
        ratios matter to it, and the steps then need no rescaling. None when every row weighs
        the unit."""
        if unit is None:
            unit = 1.0 if sample_weight is None else float(sample_weight.mean())
        if sample_weight is None:
            return unit, None if unit == 1.0 else np.full(n, 1.0 / unit)
        return unit, sample_weight / unit

    def _check_magnitudes(self, X) -> None:
        """Refuse columns whose squares leave the float range (or, inverted, the steps')."""
        peak = column_peaks(X)
        for bad, what, fix in ((peak > _LARGEST_ENTRY, f"reach beyond {_LARGEST_ENTRY:g}", "Divide"),
                               ((peak > 0) & (peak < 1 / _LARGEST_ENTRY),
                                f"all lie below {1 / _LARGEST_ENTRY:g}", "Multiply")):
            if bad.any():
                names = getattr(self, "feature_names_in_", None)
                columns = (names[bad] if names is not None else np.flatnonzero(bad)).tolist()
                raise ValueError(
                    f"X has columns whose entries {what} in magnitude: {columns[:10]}. The pairwise "
                    f"square loss and the steps square them, past the float range. {fix} those "
                    "columns by a constant first (a column's units change the fit only through the "
                    "penalty).")

    def _step_size(self, smoothness: float) -> float:
        """The base step: ``eta0``, or ``1 / smoothness`` for ``"auto"``."""
        if self.eta0 != "auto":
            return float(self.eta0)
        # a zero bound leaves no gradient but rounding error (every column pinned, or every row
        # at the centre): there is nothing to step along, and 1 / 0 would amplify that error
        return 1.0 / smoothness if smoothness > 0 else 0.0

    def _calibration(self, X, y01: np.ndarray, w: np.ndarray,
                     sample_weight: np.ndarray | None) -> tuple[float, np.ndarray]:
        """``(slope, intercept_)`` of the Platt calibration of the scores ``X @ w``, for rows
        ``X`` already :meth:`_centred` (uncentred scores of a column in offset units would
        differ by less than their rounding error), weighted by the user's ``sample_weight``."""
        cal = fit_platt(np.asarray(X @ w).ravel(), y01, weight=sample_weight)
        return cal.slope, np.array([cal.offset - self._offset @ w])

    @staticmethod
    def _check_divergence(loss: float, solver: str, step_size: float) -> None:
        """FloatingPointError when the loss of an iterate shows its steps diverged."""
        if diverged(loss):
            raise FloatingPointError(
                f"The {solver} solver diverged (loss {loss:.3g} at its iterate, against 0.5 "
                f"at zero coefficients) with step size {step_size:.3g}; use a smaller eta0 (sample weights "
                "multiply the steps: heavier rows need a smaller one).")

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike | sp.spmatrix | sp.sparray, y: ArrayLike,
            sample_weight: ArrayLike | None = None) -> "AUCClassifier":
        """Fit the classifier on ``(X, y)``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; NaN and infinite values are rejected.
        y : array-like of shape (n_samples,)
            Binary labels; both classes must be present (among the rows of positive weight).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative row weights. A (positive, negative) pair weighs the product of its
            rows' weights, so an integer weight ``k`` fits as ``k`` copies of the row (exactly
            with ``solver="exact"``; up to the stopping tolerance with the stochastic solvers,
            which draw other minibatches). ``coef_`` depends on their ratios only; the
            calibration reads them as counts (see ``doc/auc.rst``: weights with a total near 1
            flatten ``predict_proba``). Rows of weight 0 are left out, also of the column
            scales and the calibration. None means equal weights.

        Returns
        -------
        self : AUCClassifier

        Raises
        ------
        FloatingPointError
            When a stochastic solver diverges (a user-set ``eta0`` too large). A fit that
            raises leaves the estimator unfitted.

        Warns
        -----
        ConvergenceWarning
            When a stochastic solver reaches ``max_iter`` before its stopping test (see
            ``tol``) is met, or the exact solver's proximal-gradient iterations (an L1 part)
            stop before their tolerance.
        scipy.linalg.LinAlgWarning
            When the exact solver's linear system is ill-conditioned (nearly collinear
            columns and a tiny ``alpha > 0``).
        """
        with unfitted_on_error(self):  # a failed (re)fit leaves no mix of old and new state
            X, y, sample_weight = self._validate(X, y, sample_weight, reset=True)
            self.classes_, y01 = self._encode_target(y)
            X, y01, sample_weight, _ = without_weightless(X, y01, sample_weight)
            if sample_weight is not None:  # to rank positives above negatives
                check_weighted_classes(y01, self.classes_, "AUCClassifier")
            self._check_magnitudes(X)
            self._fit(X, y01, sample_weight)
        return self

    def _centred(self, X, offset: np.ndarray | None = None):
        """``X`` less ``offset``, by default the offsets of the stream's columns, which the
        solvers play on.

        The objective depends on differences of rows only, so the shift leaves it unchanged;
        it keeps the scores of a column in large offset units (a timestamp) from cancelling
        to their last digits against the class means.
        """
        offset = self._offset if offset is None else offset
        return shifted_columns(X, offset) if offset.any() else X

    def _fit(self, X, y01: np.ndarray, sample_weight: np.ndarray | None) -> None:
        l1_ratio = self._l1_ratio()
        unit, weight = self._solver_weights(sample_weight, X.shape[0], None)
        raw, self._offset = X, column_offsets(X, sample_weight=weight)
        X = self._centred(X)
        stats = ClassStatistics.from_data(X, y01, weight)
        rng = np.random.default_rng(check_random_state(self.random_state).randint(2**31))
        solver = self.solver
        if solver == "auto":
            solver = "exact" if X.shape[1] <= _EXACT_MAX_FEATURES else "vrspam"
        self.solver_ = solver
        # the column scales and the step's smoothness bound cost passes: only the stochastic
        # solvers need them now (after "exact", partial_fit takes the scales of its first chunk)
        if solver == "exact":
            scale, step, self._fit_smoothness = None, None, 0.0
            self.step_size_ = None if self.eta0 == "auto" else float(self.eta0)
        else:
            scale = column_scale(X, (stats.low, stats.high), weight)
            solver_scale = pinned_scale(scale, stats)  # constant columns pinned at zero
            self._fit_smoothness = minibatch_smoothness(X, y01, stats, self.batch_size,
                                                        solver_scale, weight)
            self.step_size_ = self._step_size(self._fit_smoothness)
            step = self.step_size_ / solver_scale**2
        common = dict(alpha=self.alpha, l1_ratio=l1_ratio, step=step,
                      max_iter=self.max_iter, batch_size=self.batch_size, rng=rng,
                      callback=self.callback, verbose=self.verbose, weight=weight)
        if solver == "exact":
            result = solve_exact(X, y01, self.alpha, l1_ratio, stats=stats, weight=weight)
            if not result.converged:
                warn("The exact solver's proximal-gradient iterations stopped before "
                     "reaching their tolerance; the coefficients are approximate.",
                     ConvergenceWarning)
            if self.callback is not None:
                self.callback({"coef": result.coef.copy(), "n_iter": 1.0})
            loss = smooth_objective(result.coef, X, y01, weight)
        else:
            # diverging steps overflow: FloatingPointError reports them, not numpy's warnings
            with np.errstate(over="ignore", invalid="ignore"):
                if solver == "spam":
                    result = spam(X, y01, stats, tol=self.tol, **common)
                else:
                    inner = self.inner_iter or int(np.ceil(X.shape[0] / self.batch_size))
                    result = vrspam(X, y01, stats, inner_iter=inner, tol=self.tol, **common)
                loss = smooth_objective(result.coef, X, y01, weight)
            self._check_divergence(loss, solver, self.step_size_)
            if not result.converged and not result.stopped:
                self._warn_not_converged(solver, result.gap)
        self.coef_ = result.coef.reshape(1, -1)
        self.n_iter_ = int(np.ceil(result.n_passes - 1e-9))
        self.objective_ = loss + elastic_net_penalty(result.coef, self.alpha, l1_ratio)
        slope, intercept = self._calibration(X, y01, result.coef, sample_weight)
        # later partial_fit calls continue from here
        self._init_stream(stats, n_calls=self.n_iter_, smoothness=self._fit_smoothness,
                          scale=scale, offset=self._offset, weight_unit=unit)
        self._reservoir = RowReservoir.from_sample(_RESERVOIR_SIZE, raw, y01, self._rng,
                                                   sample_weight)
        self._calibrated = (self.coef_, self._reservoir, slope, intercept)
        self.t_ = X.shape[0]

    def _warn_not_converged(self, solver: str, gap: float) -> None:
        # with a penalty the gap is certified by a dual bound; without one it is the last
        # relative decrease of the objective
        what = ("the relative objective gap bounded by" if self.alpha > 0
                else "the objective's last relative decrease at")
        where = f"with {what} {gap:.2g}, above tol={self.tol}"
        # stochastic passes needed grow with L_b / (alpha n): on small collinear data the
        # direct solve is the remedy, not more passes
        hint = ("use solver='exact' (one linear solve of the d x d quadratic; solver='auto' picks "
                "it), or increase max_iter" + (", or use solver='vrspam'" if solver == "spam" else ""))
        warn(f"{solver.upper()} reached max_iter={self.max_iter} passes {where}; "
             f"{hint}.", ConvergenceWarning)

    def _init_stream(self, stats: ClassStatistics, n_calls: int, smoothness: float,
                     scale: np.ndarray | None, offset: np.ndarray | None,
                     weight_unit: float | None) -> None:
        self._stats = stats
        # None: partial_fit takes those of its first chunk. The weight unit is the mean weight
        # the solver's weights were divided by: later chunks' weights are divided by it too
        self._offset, self._scale, self._weight_unit = offset, scale, weight_unit
        self._reservoir = RowReservoir(_RESERVOIR_SIZE)
        self._rng = np.random.default_rng(check_random_state(self.random_state).randint(2**31))
        self._n_calls = n_calls
        self._smoothness = smoothness
        self.t_ = 0

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X: ArrayLike | sp.spmatrix | sp.sparray, y: ArrayLike,
                    classes: ArrayLike | None = None,
                    sample_weight: ArrayLike | None = None) -> "AUCClassifier":
        """One SPAM pass over a chunk of a stream (one example or a minibatch at a time).

        Class counts and means are running estimates over everything seen so far; the step
        in call ``k`` is ``eta0 / sqrt(k)`` (``"auto"``: from the largest smoothness bound
        seen so far), preconditioned by column scales (see ``eta0``): those of a preceding
        stochastic ``fit``, else (on a fresh stream or after ``solver="exact"``) those of the
        first chunk, then kept fixed. That chunk should show the spread of every feature (a
        feature constant in it keeps scale 1). Features constant in all the rows seen so far
        keep a zero coefficient. Chunks may be dense or sparse, in any mix.
        Updates start once both classes have been seen. The calibration is refitted on a
        uniform reservoir of at most 2000 rows seen so far, when it is next read
        (``intercept_``, ``decision_function``, ``predict``, ``predict_proba``), so a stream
        of single rows pays for the update only.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            A chunk of training data.
        y : array-like of shape (n_samples,)
            Its labels.
        classes : array-like of shape (2,), default=None
            Both class labels; required on the first call.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the chunk's rows, in the units of the stream's other
            weights (a weight ``k`` counts as ``k`` rows; None means 1 each). Rows of weight 0
            are left out.

        Returns
        -------
        self : AUCClassifier

        Raises
        ------
        FloatingPointError
            When the step diverges (a user-set ``eta0`` too large). A call that raises leaves
            the estimator as it was (unfitted, on the first call): its statistics, reservoir
            and random generator included, so that the stream goes on as if the call had not
            been made.
        """
        first = not hasattr(self, "classes_")
        # a rejected first call leaves the estimator unfitted; a later one leaves it as it was,
        # all its updates being made once nothing can fail any more
        with unfitted_on_error(self) if first else nullcontext():
            if first:
                if classes is None:
                    raise ValueError("classes must be given on the first call to partial_fit, "
                                     "e.g. classes=[0, 1].")
                classes = np.unique(classes)
                if classes.size != 2:
                    raise ValueError("Only binary classification is supported: classes must "
                                     f"hold exactly two labels, got {classes.tolist()}.")
            elif classes is not None and not np.array_equal(np.unique(classes), self.classes_):
                raise ValueError(f"classes {np.unique(classes).tolist()} differ from the "
                                 f"classes {self.classes_.tolist()} seen before.")
            X, y, sample_weight = self._validate(X, y, sample_weight, reset=first)
            classes, y01 = self._encode_target(y, classes if first else self.classes_, known=not first)
            X, y01, sample_weight, _ = without_weightless(X, y01, sample_weight)
            self._check_magnitudes(X)
            if first:
                self.classes_ = classes
                self._init_stream(ClassStatistics.empty(X.shape[1]), n_calls=0,
                                  smoothness=0.0, scale=None, offset=None, weight_unit=None)
                self.coef_ = np.zeros((1, X.shape[1]))
                self.solver_ = "spam"
            self._partial_fit(X, y01, sample_weight)
        return self

    def _partial_fit(self, X, y01: np.ndarray, sample_weight: np.ndarray | None) -> None:
        raw = X
        unit, weight = self._solver_weights(sample_weight, X.shape[0], self._weight_unit)
        # then fixed for the whole stream: changing them would not be a reparametrisation
        offset = self._offset
        if offset is None:
            offset = column_offsets(X, sample_weight=weight)
        X = self._centred(X, offset)
        scale = column_scale(X, weight=weight) if self._scale is None else self._scale
        # the new state is built aside (copies of the statistics, the generator and the
        # reservoir) and committed at the end, once nothing can fail: a call that raises
        # leaves the stream as it was
        stats = replace(self._stats)
        stats.update(X, y01, weight)  # makes new arrays: self._stats keeps its own
        rng = copy.deepcopy(self._rng)
        w, n_calls, smoothness = self.coef_.ravel(), self._n_calls, self._smoothness
        step_size = getattr(self, "step_size_", None)
        if stats.ready():
            n_calls += 1
            # columns constant so far are pinned at zero until they vary
            solver_scale = pinned_scale(scale, stats)
            smoothness = max(smoothness, minibatch_smoothness(X, y01, stats, self.batch_size,
                                                              solver_scale, weight))
            step_size = self._step_size(smoothness)
            step = step_size / np.sqrt(n_calls) / solver_scale**2
            # diverging steps overflow: FloatingPointError reports them, not numpy's warnings
            with np.errstate(over="ignore", invalid="ignore"):
                w = spam_epoch(w, X, y01, stats, step, self.alpha, self._l1_ratio(),
                               self.batch_size, rng, weight)
                loss = stream_loss(w, X, y01, stats, weight)
            self._check_divergence(loss, "SPAM", step_size)
        reservoir = copy.copy(self._reservoir)  # add() replaces its arrays
        reservoir.add(raw, y01, rng, sample_weight)
        self._scale, self._stats, self._rng, self._reservoir = scale, stats, rng, reservoir
        self._offset, self._weight_unit = offset, unit
        self._n_calls, self._smoothness, self.step_size_ = n_calls, smoothness, step_size
        self.t_ += X.shape[0]
        self.coef_ = w.reshape(1, -1)
        self.n_iter_ = 1

    # ------------------------------------------------------------------ predict
    @property
    def intercept_(self) -> np.ndarray:
        if "coef_" not in vars(self):  # unfitted, or a refit failed
            raise AttributeError(f"'{type(self).__name__}' object has no attribute 'intercept_'")
        return self._calibration_state()[2]

    @intercept_.setter
    def intercept_(self, value) -> None:
        coef, slope, _ = self._calibration_state()
        self._calibrated = (coef, self._reservoir, slope, np.atleast_1d(np.asarray(value, dtype=float)))

    def _calibration_state(self) -> tuple[np.ndarray, float, np.ndarray]:
        """``(coef_, slope, intercept_)``, the calibration refitted on the kept rows when
        ``partial_fit`` has moved on since it was fitted: refitting it at every call (on up to
        2000 rows) cost more than a stream of single rows' updates. The calibration is kept with
        the coefficients and the reservoir it was fitted for, which every call replaces, so a
        read during a call cannot keep one that no longer fits."""
        coef, reservoir = self.coef_, self._reservoir
        cached = vars(self).get("_calibrated")
        if cached is None or cached[0] is not coef or cached[1] is not reservoir:
            slope, intercept = self._calibration(self._centred(reservoir.X), reservoir.y, coef.ravel(),
                                                 reservoir.weight)
            cached = self._calibrated = (coef, reservoir, slope, intercept)
        return cached[0], cached[2], cached[3]

    def _scores(self, X) -> tuple[np.ndarray, float]:
        """``X @ coef_ + intercept_`` and the calibration's slope, of one calibration state: a
        stream may move on meanwhile."""
        check_is_fitted(self)
        X = validate_numeric(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        coef, slope, intercept = self._calibration_state()
        return np.asarray(X @ coef.ravel()).ravel() + intercept[0], slope

    def decision_function(self, X: ArrayLike | sp.spmatrix | sp.sparray) -> np.ndarray:
        """``X @ coef_ + intercept_``: the AUC score shifted by the calibration's threshold.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
            Positive values predict ``classes_[1]``.
        """
        return self._scores(X)[0]

    def predict_proba(self, X: ArrayLike | sp.spmatrix | sp.sparray) -> np.ndarray:
        """Calibrated probabilities, an increasing function of the score (same AUC).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, 2)
        """
        scores, slope = self._scores(X)
        p = expit(slope * scores)
        return np.column_stack([1.0 - p, p])

    def predict_log_proba(self, X: ArrayLike | sp.spmatrix | sp.sparray) -> np.ndarray:
        """Logarithm of :meth:`predict_proba`, computed without underflow (finite far out
        in the tails, where the probabilities round to 0).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, 2)
        """
        scores, slope = self._scores(X)
        z = slope * scores
        return np.column_stack([log_expit(-z), log_expit(z)])

    def predict(self, X: ArrayLike | sp.spmatrix | sp.sparray) -> np.ndarray:
        """``classes_[1]`` where the calibrated probability exceeds 1/2.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        return self.classes_[(self.decision_function(X) > 0).astype(int)]
