"""Distributionally robust linear classifier and regressor over f-divergence balls."""

from __future__ import annotations

from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.sparsefuncs import mean_variance_axis
from sklearn.utils.validation import check_is_fitted

from ._divergence import DIVERGENCES, _normalised
from ._dro_continuation import primal_lbfgs
from ._dro_losses import LOSSES
from ._dro_problem import LinearDRO, Result
from ._dro_sgd import dynamic_sgd
from ._row_order import RowOrderScoreMixin
from .models._design import Design
from .models._input_scale import column_extremes
from .problem._groups import check_row_order
from .utils._binary import power_of_two_above
from .utils._validation import (check_label_missing, check_sample_weight, check_weighted_classes,
                                unfitted_on_error, validate_numeric, without_weightless)
from .utils._warnings import warn

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

# the parameters of the sampled path and of stopping, the same for both estimators
_SAMPLING_PARAMETERS = """\
    initial_sample_size : int, default=256
        First sample size of ``"sgd"``.
    growth : float, default=2.0
        Geometric growth factor (> 1) of the sample size of ``"sgd"``.
    max_iter : int, default=1000
        Maximum number of iterations (for ``"sgd"``, steps on samples and on the full
        data together; for a large radius, see ``radius``, the ERM iterations and the
        interior-point ones: a conic solve that would need more is cut off).
    tol : float, default=1e-4
        Stop when the largest absolute entry of the full-batch gradient is at most ``tol``,
        the gradient of the standardised problem the solvers work on: the features
        centred (with an intercept; implicitly, so sparse ``X`` stays sparse) and divided
        by their standard deviation (their root mean square without intercept), both
        weighted by ``sample_weight``, and for :class:`DRORegressor` the target likewise,
        so that the objective is in units of the target's variance. It is the same
        problem in units where every feature (and the target) has scale 1: the test does not
        depend on the units of the data. Rescaling the target rescales the fit; a feature's
        units change it only through the penalty, taken in the data's units as
        :class:`~sklearn.linear_model.Ridge`'s is. Where the objective is not
        differentiable (tied losses, e.g. when the best model is constant, or at a large
        radius) the test applies to a subgradient of the distributions of the ball whose
        expected loss is within a relative 1.5e-8 of the robust loss, which the solvers
        reach by smoothing the objective (see the user guide); for the conic solution of
        the maximum-loss problem (a large radius), of its multipliers within a relative
        1e-6, the conic solver's accuracy. A fit that stops before the test passes, at
        ``max_iter`` or because no step decreases the objective any more, or with the
        working set of the maximum-loss problem unfinished or its conic solve failed or
        short of the test, raises a ``ConvergenceWarning`` that says which.
    random_state : int, RandomState instance or None, default=None
        Seeds the samples of ``"sgd"``."""


def _standardise(A, q: np.ndarray, centre: bool, extremes: tuple[np.ndarray, np.ndarray] | None = None):
    """The columns of ``A`` divided by their ``q``-weighted scale, and their scaled means.

    Returns ``(A / scale, offset, scale)``: ``A / scale - offset`` has ``q``-weighted mean 0
    (if ``centre``; ``offset`` is 0 otherwise) and standard deviation 1 (root mean square
    when not centred). The centring is left to the solvers, so a sparse ``A`` stays
    sparse. A column without spread on the support of ``q`` keeps scale 1: after
    centring, what is left of a constant column is the rounding of its mean.

    The moments are those of the columns divided by the power of 2 just above their
    largest magnitude, ``unit``: the division is exact, so they keep every bit, but
    squares of entries beyond 1e154 no longer overflow (nor below 1e-154 underflow),
    which made such a column's scale infinite (or 0, then 1) and its coefficient 0.
    ``extremes`` are the columns' ``(low, high)`` when the caller has them (:func:`~skrate.models._input_scale.column_extremes`).
    """
    low, high = column_extremes(A) if extremes is None else extremes
    unit = power_of_two_above(np.maximum(-low, high))  # 1 for a zero column
    if sp.issparse(A):
        scaled = (A @ sp.diags(1.0 / unit)).tocsr()
        if centre:
            mean, var = mean_variance_axis(scaled, axis=0, weights=q)
        else:
            mean = np.zeros(A.shape[1])
            var = np.asarray(scaled.multiply(scaled).T @ q).ravel()
    else:
        mean = (q @ A) / unit if centre else np.zeros(A.shape[1])
        centred = A / unit
        if centre:
            centred -= mean
        var = np.einsum("i,ij,ij->j", q, centred, centred)
        del centred  # before A / scale below: one copy of A at a time
    mean = mean * unit
    # rounding can leave a tiny negative variance
    scale = np.sqrt(np.maximum(var, 0.0)) * unit
    scale[scale <= A.shape[0] * np.finfo(float).eps * np.abs(mean)] = 1.0
    if sp.issparse(A):
        scaled.data /= (scale / unit)[scaled.indices]  # in place: one more copy of A at most
    else:
        scaled = A / scale
    return scaled, mean / scale, scale


def _freeze(X, offset: np.ndarray, ridge: np.ndarray, flat: np.ndarray | None = None):
    """The standardised features without those whose coefficient is 0 for every purpose, and
    their ridge.

    A penalty strength ``s = alpha / scale^2`` beyond ``1 / sqrt(eps)`` (6.7e7: a feature in
    units far below the others') holds the feature's standardised coefficient below ``g / s``
    for a loss gradient ``g`` along it, and the objective it could lower by below
    ``g^2 / (2 s)``, under 1e-8 for a gradient of unit size: nothing any ``tol`` resolves.
    Left in, its curvature stalls the quasi-Newton steps of every coefficient (all 0 after the
    fit at 1e-12 units), and beyond the float range it makes the penalty at 0 NaN (``inf * 0``).
    A column ``flat`` (constant on the rows, with an intercept that takes its value) holds only
    the rounding of its offset once centred, noise that at an offset of 1e18 swamped the other
    features.
    Such features are zeroed, with strength 0, so their coefficients stay at their start, 0.
    """
    frozen = ~(ridge <= 1.0 / np.sqrt(np.finfo(float).eps))  # NaN-safe: an infinite strength too
    if flat is not None:
        frozen |= flat
    if not frozen.any():
        return X, offset, ridge
    if sp.issparse(X):
        X = (X @ sp.diags((~frozen).astype(float))).tocsr()
    else:
        X[:, frozen] = 0.0  # the solver's own copy
    return X, np.where(frozen, 0.0, offset), np.where(frozen, 0.0, ridge)


class _BaseDRO(BaseEstimator):
    """Shared fitting of linear models minimising a worst-case expected loss."""

    _parameter_constraints: dict = {
        "divergence": [StrOptions(set(DIVERGENCES))],
        "radius": [Interval(Real, 0, None, closed="left")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "fit_intercept": ["boolean"],
        "solver": [StrOptions({"lbfgs", "sgd"})],
        "initial_sample_size": [Interval(Integral, 1, None, closed="left")],
        "growth": [Interval(Real, 1, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        divergence="chi2",
        radius=0.1,
        alpha=1e-3,
        fit_intercept=True,
        solver="lbfgs",
        initial_sample_size=256,
        growth=2.0,
        max_iter=1000,
        tol=1e-4,
        random_state=None,
    ):
        self.divergence = divergence
        self.radius = radius
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.initial_sample_size = initial_sample_size
        self.growth = growth
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _solve(self, X, T, loss: str, n_outputs: int, sw: np.ndarray, scale_target: bool):
        """Fit on the standardised problem (see ``tol``); ``(W, b)`` in the data's units, for
        the weights ``sw`` checked by :func:`~skrate.utils._validation.check_sample_weight`."""
        # Rows of weight 0 take no part, not even in the standardisation: a huge value
        # there overflowed its loss (0 * inf = NaN) or its column's scale.
        n_samples = X.shape[0]
        X, T, sw, rows = without_weightless(X, T, sw)
        X = Design(X).X  # a one-hot table as CSR: every product then costs its non-zeros
        support = np.arange(n_samples) if rows is None else rows
        q = _normalised(sw)
        low, high = column_extremes(X)
        flat = (low == high) if self.fit_intercept else None  # with an intercept, a constant column adds nothing
        X, x_offset, x_scale = _standardise(X, q, self.fit_intercept, (low, high))
        t_mean, t_scale = 0.0, 1.0
        if scale_target:
            T, (t_offset,), (t_scale,) = _standardise(T[:, None], q, self.fit_intercept)
            T, t_mean = T[:, 0] - t_offset, t_offset * t_scale
            if t_scale > np.sqrt(np.finfo(float).max):
                raise ValueError(
                    f"y is too large: its standard deviation {t_scale:.3g} squares beyond "
                    f"the float64 range, the unit of the squared-error objective. Divide y "
                    f"by a constant (its standard deviation) before fitting."
                )
            # A sample of normalised weight q_i lies up to 1 / sqrt(q_i) standard deviations
            # out; beyond 1e154 its loss at coef_ = 0 overflows and the objective is NaN.
            far = int(np.argmax(np.abs(T)))
            if abs(T[far]) > np.sqrt(np.finfo(float).max):
                raise ValueError(
                    f"y[{support[far]}], of {q[far]:.3g} of the total sample weight, lies "
                    f"{abs(T[far]):.3g} weighted standard deviations of y (root mean squares "
                    f"without intercept) out: its squared error in that unit, the "
                    f"objective's, leaves the float64 range. Give that sample weight 0 (or "
                    f"remove it) or a larger weight."
                )
        # The penalty on the original coefficients W_j = t_scale U_j / x_scale_j, over
        # t_scale^2 (the unit of the standardised objective).
        with np.errstate(over="ignore"):
            ridge = float(self.alpha) / x_scale / x_scale
        X, x_offset, ridge = _freeze(X, x_offset, ridge, flat)
        problem = LinearDRO(X, T, LOSSES[loss], q, self.divergence, float(self.radius),
                            ridge, n_outputs, self.fit_intercept, x_offset)
        theta = np.zeros(problem.n_params)
        if self.solver == "sgd":
            seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
            result = dynamic_sgd(problem, theta, np.random.default_rng(seed),
                                 self.initial_sample_size, self.growth, self.max_iter,
                                 self.tol)
        else:
            result = primal_lbfgs(problem, theta, self.max_iter, self.tol)
        if not result.converged:
            warn(self._convergence_message(result), ConvergenceWarning)
        objective, _, p, _ = problem.objective(result.theta)
        self.sample_weights_ = np.zeros(n_samples)
        self.sample_weights_[support] = p
        self.objective_ = t_scale**2 * objective
        # A fit whose start already passes the tol test still evaluated it once.
        self.n_iter_ = max(result.n_iter, 1)
        W, b = problem.unpack(result.theta)
        b = t_scale * (b - x_offset @ W) + t_mean
        with np.errstate(over="ignore", invalid="ignore"):  # a subnormal column's 1 / scale overflows
            return np.where(W == 0.0, 0.0, W * (t_scale / x_scale)[:, None]), b

    def _convergence_message(self, result: Result) -> str:
        """Why an unconverged fit stopped, and what to change."""
        at_max_iter = result.n_iter >= self.max_iter
        if at_max_iter:
            stop = f"stopped at max_iter={self.max_iter}"
        else:
            stop = f"stopped after {result.n_iter} of max_iter={self.max_iter} iterations"
        test = f"the gradient test tol={self.tol}"
        gradient = f"largest gradient entry {result.grad_max:.3g}"
        conic = "the conic solution of the maximum-loss problem (tried where a few losses carry the worst case)"
        if result.n_outside:
            passed = "passed" if result.grad_max <= self.tol else "failed"
            why = (f"with {result.n_outside} samples outside the working set of the "
                   f"maximum-loss problem whose loss still exceeds the "
                   f"set's largest, so the set's optimum is not yet the data's ({test} "
                   f"{passed} on the set: {gradient})")
            hint = "increase max_iter"
        elif np.isnan(result.grad_max) and at_max_iter:
            # Only the conic solves of a large radius end without a gradient.
            why = (f"before a conic solve of the maximum-loss problem finished, so before "
                   f"{test}")
            hint = "increase max_iter"
        elif np.isnan(result.grad_max):
            why = f"when the conic solver of the maximum-loss problem failed, before {test}"
            hint = "a radius below the maximum-loss bound (see radius) avoids that solver"
        elif result.conic and at_max_iter:  # the last solve was cut off at max_iter
            why = f"at {conic}, before {test} passed ({gradient})"
            hint = "increase max_iter"
        elif result.conic and result.gap == np.inf:
            why = (f"at {conic}, whose multipliers are no distribution of the divergence "
                   f"ball, so no subgradient ({test}: {gradient})")
            hint = "the descent path ended above it: check the fit against an exact solver"
        elif result.conic and not result.gap_ok:
            why = (f"at {conic}, whose multipliers are a subgradient only to within "
                   f"{result.gap:.3g} of the objective ({test}: {gradient})")
            hint = "that is the solver's accuracy there: the objective is within about it"
        elif result.conic:
            why = f"at {conic}, before {test} passed ({gradient}, of its multipliers)"
            hint = "the solver's multipliers are not that accurate: increase tol"
        else:
            why = f"before {test} passed ({gradient})"
            hint = self._stall_hint(result) if not at_max_iter else "increase max_iter or tol"
            if not at_max_iter:
                stop += ", no step decreasing the objective any more,"
        return (f"{type(self).__name__}(solver={self.solver!r}) did not converge: it {stop} "
                f"{why}; {hint}.")

    @staticmethod
    def _stall_hint(result: Result) -> str:
        """What to change when a descent path found no step decreasing the objective."""
        if result.gap_ok:
            return "rounding keeps that tol out of reach: increase tol"
        # The smoothing continuation ran out of temperatures next to tied losses.
        return (f"the objective is not differentiable there (tied losses) and the gradient "
                f"is a subgradient only to within {result.gap:.3g} of the objective: check "
                f"the fit against an exact conic solver")

    def _scores(self, X) -> np.ndarray:
        check_is_fitted(self)
        X = validate_numeric(self, X, accept_sparse="csr", reset=False, dtype=np.float64)
        return np.asarray(X @ np.atleast_2d(self.coef_).T) + self.intercept_


class DROClassifier(RowOrderScoreMixin, ClassifierMixin, _BaseDRO):
    """Logistic regression minimising the worst-case expected loss over an f-divergence ball.

    Fits ``min_{w, b} sup_{p in P} sum_i p_i loss_i(w, b) + (alpha / 2) ||w||^2`` with the
    logistic loss (multinomial for more than two classes) and the intercept unpenalised,
    where ``P = {p in the simplex : sum_i q_i f(p_i / q_i) <= radius}`` is the ball around
    the training distribution ``q`` (uniform, or the normalised ``sample_weight``; for uniform
    ``q`` the constraint reads ``(1/n) sum_i f(n p_i) <= radius``) with
    ``f(t) = (t - 1)^2 / 2`` (``"chi2"``) or ``f(t) = t log t`` (``"kl"``). The worst case
    up-weights the samples the model fits worst, which guards against shifts towards
    hard subpopulations.

    Parameters
    ----------
    divergence : {"chi2", "kl"}, default="chi2"
        The f-divergence defining the ball.
    radius : float, default=0.1
        Radius ``rho >= 0``; 0 is plain (weighted) regularised logistic regression. A radius
        of at least ``(n - 1) / 2`` (chi2) or ``log n`` (kl) (with sample weights,
        ``(1 / q_min - 1) / 2`` or ``-log q_min`` for the smallest positive normalised
        weight ``q_min``) lets the worst case put all mass on the largest loss whatever the
        model, so the objective is the maximum loss plus the penalty. Both solvers then
        solve that problem exactly (its epigraph form, with cvxpy's Clarabel on a working
        set of the largest losses, refined to rounding by Newton's method where at most
        ``n_params + 1`` losses tie). For two classes that are not linearly separable its
        solution is ``coef_ = 0`` with probabilities 1/2: rarely a useful model.
    alpha : float, default=1e-3
        L2 penalty strength on the coefficients (not the intercept).
        At ``radius=0`` the fit is scikit-learn's
        ``LogisticRegression(C=1 / (alpha * sum(sample_weight)))``.
    fit_intercept : bool, default=True
        Whether to fit an unpenalised intercept.
    solver : {"lbfgs", "sgd"}, default="lbfgs"
        ``"lbfgs"``: L-BFGS-B on the full-batch objective, the inner maximisation solved
        exactly at every evaluation (deterministic; the gradient is Danskin's). Where
        tied losses make the objective non-differentiable (at ``coef_ = 0`` all losses
        tie) it runs on smoothings of the objective at decreasing temperatures, equal to
        the objective near an optimum where that is smooth; an optimum at such a tie is
        reached and certified that way, or, at a large radius, is the maximum-loss
        optimum, which it tries exactly (cvxpy) when few samples carry the worst case.
        ``"sgd"``: the dynamically sampled descent of [1]_. It works on samples of
        ``m = initial_sample_size * growth**t`` points drawn without replacement (each
        sample adds new points to the previous one) until they cover the data. On each
        sample the inner maximisation is solved exactly and L-BFGS steps (two-loop
        recursion, 20 curvature pairs kept from sample to sample, Armijo backtracking on
        the sample's objective) are taken until the sample's gradient is no larger than
        its own sampling noise (the norm test of [3]_), at most 10 per sample; on the
        full data the same steps continue until the ``tol`` test passes, smoothed like
        ``"lbfgs"``. It starts with two iterations of plain logistic regression on the
        first sample, cheaper than robust ones. The early steps touch few points, so on
        large data it reaches a given accuracy sooner than ``"lbfgs"`` (see the user
        guide); ``random_state`` seeds the samples.
%(sampling_parameters)s

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Coefficients (one row for binary problems).
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Intercepts.
    sample_weights_ : ndarray of shape (n_samples,)
        The worst-case distribution over the training samples at the solution.
    objective_ : float
        The objective (robust loss plus penalty) at the solution.
    n_iter_ : int
        Number of solver iterations (for ``"sgd"``, including the steps on samples; for
        a large radius, the interior-point iterations), at least 1 and at most
        ``max_iter``.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names seen during fit, when ``X`` has string column names.

    See Also
    --------
    DRORegressor : The same for the squared loss.
    skrate.robust_loss : The robust loss of any vector of per-sample losses.

    References
    ----------
    .. [1] S. Ghosh, M. Squillante, E. Wollega. "Efficient Stochastic Gradient Descent for
       Distributionally Robust Learning". arXiv:1805.08728, 2018.
    .. [2] J. Duchi, H. Namkoong. "Learning Models with Uniform Performance via
       Distributionally Robust Optimization". Annals of Statistics 49(3), 2021.
    .. [3] R. Byrd, G. Chin, J. Nocedal, Y. Wu. "Sample Size Selection in Optimization
       Methods for Machine Learning". Mathematical Programming 134(1), 2012.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import scale
    >>> from skrate import DROClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = DROClassifier(divergence="kl", radius=0.2).fit(scale(X), y)
    >>> clf.sample_weights_.shape
    (569,)
    """
    __doc__ = __doc__.replace("%(sampling_parameters)s", _SAMPLING_PARAMETERS)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike | sp.spmatrix | sp.sparray, y: ArrayLike,
            sample_weight: ArrayLike | None = None) -> "DROClassifier":
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Class labels (two or more classes).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; their normalisation is the centre of the ball.

        Returns
        -------
        self : DROClassifier
            The fitted estimator.
        """
        with unfitted_on_error(self):
            check_row_order(X, y=y, sample_weight=sample_weight)
            check_label_missing(y)
            X, y = validate_numeric(self, X, y, accept_sparse="csr", dtype=np.float64)
            check_classification_targets(y)
            classes, y_idx = np.unique(y, return_inverse=True)
            if classes.size < 2:
                raise ValueError(
                    f"DROClassifier needs samples of at least 2 classes in y; got only one "
                    f"class: {classes[0]}."
                )
            sample_weight = check_sample_weight(sample_weight, X.shape[0])
            check_weighted_classes(y_idx[sample_weight > 0], classes, "DROClassifier")
            if classes.size == 2:
                W, b = self._solve(X, y_idx.astype(np.float64), "logistic", 1, sample_weight,
                                   scale_target=False)
            else:
                W, b = self._solve(X, np.eye(classes.size)[y_idx], "multinomial",
                                   classes.size, sample_weight, scale_target=False)
                # A common shift of the intercepts changes nothing; report the centred one.
                b = b - b.mean()
            self.classes_, self.coef_, self.intercept_ = classes, W.T.copy(), b.copy()
        return self

    def decision_function(self, X: ArrayLike | sp.spmatrix | sp.sparray) -> np.ndarray:
        """Scores: the log-odds of the second class (binary) or one column per class.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            Decision scores.
        """
        scores = self._scores(X)
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict_proba(self, X: ArrayLike | sp.spmatrix | sp.sparray) -> np.ndarray:
        """Class probabilities of the fitted logistic model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Probabilities, columns in the order of ``classes_``.
        """
        scores = self._scores(X)
        if scores.shape[1] == 1:
            p1 = expit(scores[:, 0])
            return np.column_stack([1.0 - p1, p1])
        return softmax(scores, axis=1)

    def predict_log_proba(self, X: ArrayLike | sp.spmatrix | sp.sparray) -> np.ndarray:
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Log-probabilities.
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X: ArrayLike | sp.spmatrix | sp.sparray) -> np.ndarray:
        """Most probable class.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        ndarray of shape (n_samples,)
            Predicted labels.
        """
        scores = self._scores(X)
        if scores.shape[1] == 1:
            return self.classes_[(scores[:, 0] > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]


class DRORegressor(RowOrderScoreMixin, RegressorMixin, _BaseDRO):
    """Least squares minimising the worst-case expected loss over an f-divergence ball.

    Fits ``min_{w, b} sup_{p in P} sum_i p_i (y_i - x_i w - b)^2 / 2 + (alpha / 2) ||w||^2``
    with the intercept unpenalised and ``P = {p in the simplex : sum_i q_i f(p_i / q_i) <=
    radius}`` the ball around the training distribution ``q`` (uniform, or the normalised
    ``sample_weight``; for uniform ``q`` the constraint reads
    ``(1/n) sum_i f(n p_i) <= radius``), ``f(t) = (t - 1)^2 / 2`` (``"chi2"``) or
    ``f(t) = t log t`` (``"kl"``).

    Parameters
    ----------
    divergence : {"chi2", "kl"}, default="chi2"
        The f-divergence defining the ball.
    radius : float, default=0.1
        Radius ``rho >= 0``; 0 is ridge regression. A radius of at least ``(n - 1) / 2``
        (chi2) or ``log n`` (kl) (with sample weights, ``(1 / q_min - 1) / 2`` or
        ``-log q_min`` for the smallest positive normalised weight ``q_min``) lets the
        worst case put all mass on the largest loss whatever the model, so the objective
        is the maximum halved squared error plus the penalty; both solvers then solve that
        problem exactly (see :class:`DROClassifier`).
    alpha : float, default=1e-3
        L2 penalty strength on the coefficients (not the intercept).
        At ``radius=0`` the fit is scikit-learn's
        ``Ridge(alpha=alpha * sum(sample_weight))``, as for :class:`TrimmedRegressor` at
        ``trim_fraction=0``.
    fit_intercept : bool, default=True
        Whether to fit an unpenalised intercept.
    solver : {"lbfgs", "sgd"}, default="lbfgs"
        ``"lbfgs"``: L-BFGS-B on the full-batch objective with the exact inner
        maximiser. ``"sgd"``: the dynamically sampled descent of [1]_ with L-BFGS
        steps on geometrically growing samples, each sample's steps ending at the norm
        test of [3]_ (see :class:`DROClassifier`).
%(sampling_parameters)s

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Coefficients.
    intercept_ : float
        Intercept.
    sample_weights_ : ndarray of shape (n_samples,)
        The worst-case distribution over the training samples at the solution.
    objective_ : float
        The objective (robust loss plus penalty) at the solution.
    n_iter_ : int
        Number of solver iterations (for ``"sgd"``, including the steps on samples; for
        a large radius, the interior-point iterations), at least 1 and at most
        ``max_iter``.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names seen during fit, when ``X`` has string column names.

    See Also
    --------
    DROClassifier : The same for the logistic loss.
    skrate.robust_loss : The robust loss of any vector of per-sample losses.

    References
    ----------
    .. [1] S. Ghosh, M. Squillante, E. Wollega. "Efficient Stochastic Gradient Descent for
       Distributionally Robust Learning". arXiv:1805.08728, 2018.
    .. [2] J. Duchi, H. Namkoong. "Learning Models with Uniform Performance via
       Distributionally Robust Optimization". Annals of Statistics 49(3), 2021.
    .. [3] R. Byrd, G. Chin, J. Nocedal, Y. Wu. "Sample Size Selection in Optimization
       Methods for Machine Learning". Mathematical Programming 134(1), 2012.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from skrate import DRORegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> reg = DRORegressor(radius=0.5).fit(X, y)
    >>> bool(reg.objective_ > 0)
    True
    """
    __doc__ = __doc__.replace("%(sampling_parameters)s", _SAMPLING_PARAMETERS)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike | sp.spmatrix | sp.sparray, y: ArrayLike,
            sample_weight: ArrayLike | None = None) -> "DRORegressor":
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Targets; a standard deviation beyond 1e154, whose square (the unit of the
            objective) leaves the float range, is refused.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; their normalisation is the centre of the ball.

        Returns
        -------
        self : DRORegressor
            The fitted estimator.
        """
        with unfitted_on_error(self):
            check_row_order(X, y=y, sample_weight=sample_weight)
            X, y = validate_numeric(self, X, y, accept_sparse="csr", dtype=np.float64,
                                    y_numeric=True)
            W, b = self._solve(X, y.astype(np.float64), "squared", 1,
                               check_sample_weight(sample_weight, X.shape[0]), scale_target=True)
            self.coef_, self.intercept_ = W[:, 0].copy(), float(b[0])
        return self

    def predict(self, X: ArrayLike | sp.spmatrix | sp.sparray) -> np.ndarray:
        """Predicted targets.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        ndarray of shape (n_samples,)
            Predictions.
        """
        return self._scores(X)[:, 0]
