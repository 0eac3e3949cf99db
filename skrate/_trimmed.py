"""Trimmed estimators: fit on the h best-explained samples, found jointly with the model."""

from __future__ import annotations

from numbers import Integral, Real
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.special import log_softmax, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from ._row_order import RowOrderScoreMixin
from ._concentration import concentration_steps
from ._smart import smart
from ._trimmed_location import trimmed_location
from ._trimmed_losses import PENALTY_DEGREE, penalty_weight
from ._trimmed_problem import TrimmedProblem, column_scaling, held_rows, preconditioned
from .problem._groups import check_row_order
from .utils._validation import (check_label_missing, check_sample_weight_scaled, check_weighted_classes,
                                unfitted_on_error, validate_numeric, without_weightless)
from .utils._warnings import warn

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


class _RowWeights(NamedTuple):
    """The sample weights of a fit, as the trimmed solvers take them."""

    caps: np.ndarray | None  # weights of the rows fitted; None when all 1 (fit as no weights)
    rows: np.ndarray | None  # the rows of positive weight; None for all
    n_samples: int  # rows given, those of weight 0 included
    exponent: int  # the given weights are caps * 2**exponent (out of the float range otherwise)
    whole: bool  # whole numbers: counts of repeated rows, trimmed as those rows would be

    def in_user_units(self, value: float) -> float:
        return float(np.ldexp(value, self.exponent))


def _row_weights(X, y, sample_weight):
    """``(X, y, weights)``: the rows of positive ``sample_weight`` (a row of weight 0 is a row
    removed) and their :class:`_RowWeights`."""
    n = X.shape[0]
    if sample_weight is None:
        return X, y, _RowWeights(None, None, n, 0, False)
    sample_weight, exponent = check_sample_weight_scaled(sample_weight, n)
    X, y, sample_weight, rows = without_weightless(X, y, sample_weight)
    caps = None if np.all(sample_weight == 1.0) else sample_weight
    whole = (caps is not None and exponent == 0 and bool(np.all(caps == np.round(caps)))
             and float(np.sum(caps)) < 2.0**52)
    return X, y, _RowWeights(caps, rows, n, exponent, whole)


# Iteration limit of each exact refit of the concentration steps, per concentration step
# allowed: one knob, max_iter, raises both.
_REFIT_ITER_PER_STEP = 100

_REFERENCES = """
    References
    ----------
    .. [1] Aravkin, A. and Davis, D. "A SMART Stochastic Algorithm for Nonconvex
       Optimization with Applications to Robust Machine Learning", 2016.
       arXiv:1610.01101.
    .. [2] Rousseeuw, P. J. and Van Driessen, K. "Computing LTS regression for
       large data sets", Data Mining and Knowledge Discovery 12, 2006
       (concentration steps, ``solver="alternating"``).
"""

_PARAMETERS = """
    trim_fraction : float in [0, 1), default=0.1
        Share of the training samples left out of the fit: ``floor(trim_fraction *
        n_samples)`` samples are trimmed (at most ``n_samples - 1``) and ``h =
        n_samples - that`` kept. A product within a relative ``1e-9`` below an
        integer counts as that integer, so rounding in floating point does not
        lose a sample: 0.29 of 100 samples trims 29 (the product ``0.29 * 100`` is
        ``28.999999999999996``). Set it to (an upper bound of) the expected share of
        outliers. Ignored when ``n_inliers`` is given.

        :class:`TrimmedClassifier` trims the worst-explained samples of any class,
        but keeps at least half of every class (rounded up), so no class can be
        trimmed away, also on imbalanced data whose minority class is smaller than
        the trimmed share. An ``h`` below that total (more than about half the
        samples trimmed) raises a ValueError before solving, with a value that
        works.

        With ``sample_weight``, the share ``trim_fraction`` of the total weight is
        trimmed, exactly, and a sample may be kept in part; whole-number weights
        count repeated rows, as without weights (see Notes).

    n_inliers : int, default=None
        Number ``h`` of samples to keep, ``1 <= h <= n_samples``; overrides
        ``trim_fraction``. With ``sample_weight``, the weight to keep, at most the
        total weight.

    penalty : {"l2", "l1", "l0", "none"} or None, default="l2"
        Regulariser ``R`` of the coefficients (never of the intercept):
        ``||coef||^2 / 2``, ``||coef||_1``, the non-convex ``||coef||_0`` (number of
        non-zeros, prox by hard thresholding), or none (``"none"`` or None, as
        scikit-learn spells it).

    alpha : float, default=1e-4
        Strength of the penalty; the objective is
        ``(1/h) sum_i w_i loss_i + alpha * R(coef)``. With ``penalty="l2"`` and
        ``trim_fraction=0`` that is scikit-learn's ``Ridge(alpha=alpha * n_samples)``
        (TrimmedRegressor) or ``LogisticRegression(C=1 / (alpha * n_samples))``
        (TrimmedClassifier).

    fit_intercept : bool, default=True
        Whether to fit an (unpenalised) intercept.

    solver : {"smart", "alternating"}, default="smart"
        "smart": stochastic variance-reduced block prox-gradient over the model
        and the sample weights jointly [1]_. "alternating": concentration steps,
        refit exactly on the ``h`` smallest losses until the kept set is stable
        (the FAST-LTS style baseline [2]_).

    variance_reduction : {"saga", "svrg"}, default="saga"
        Gradient estimator of the "smart" solver: a table of per-sample score
        derivatives refreshed per minibatch ("saga") or at a snapshot per epoch
        ("svrg").

    batch_size : int or "auto", default="auto"
        Minibatch size of the "smart" solver (capped at ``n_samples``). "auto"
        takes the ratio of the mean-square smoothness of single terms to the
        smoothness of the whole sum, clipped to [128, 256] to bound the cost per
        step (below that ratio an epoch gains little from smaller batches, above
        it progress per epoch falls), and at most ``max(64, n_samples // 8)`` so
        small problems still take 8 steps an epoch.

    block : {"cyclic", "random"}, default="cyclic"
        Block-coordinate choice of the "smart" solver: "cyclic" updates the model
        then the weights at every iteration; "random" updates one of the two,
        drawn uniformly, per iteration.

    weight_step : float > 0 or inf, default=np.inf
        Step of the projected-gradient update of the weights onto the capped
        simplex, relative to the current mean kept loss. The objective is linear in
        the weights (Lipschitz constant 0), so the default unbounded step is the
        exact minimisation over them: weight 1 on the ``h`` smallest losses. A
        finite step moves the weights gradually (fractional on the way).

    max_iter : int, default=100
        Maximum number of epochs ("smart") or concentration steps
        ("alternating"); each exact refit of "alternating" runs at most ``100 *
        max_iter`` iterations. A fit that reaches either limit before its stopping
        test (see ``tol``) is met emits a
        :class:`~sklearn.exceptions.ConvergenceWarning`.

    tol : float, default=1e-4
        "smart" stops when the model is stationary for its kept samples (the
        norm of its prox-gradient mapping at most ``tol`` times a reference: that
        norm at the start, or the median norm of the per-sample gradients there if
        smaller, but at least ``tol`` times that median) and the kept samples are
        the best for the model (to within ``tol``, relative). When the kept set
        settles (or the epochs cycle between kept sets), the model is refitted on
        it exactly to that tolerance. "alternating" refits exactly (no entry of the
        gradient above ``min(tol, 1e-6)``) and stops when the kept set is stable.
        Both return a local solution, not necessarily the global one (see the user
        guide); a small gradient bounds the objective's distance from the minimum
        on the kept samples only up to the conditioning there, so on raw,
        nearly separable data a smaller ``tol`` can still lower the objective
        noticeably. Both solve in units where the features and, for
        :class:`TrimmedRegressor`, the target have a (trimmed) scale of 1, so
        their steps and tests do not depend on the units of the data; the
        minimiser does only through the penalty, which is taken of the
        coefficients in the units given (see the user guide).

    random_state : int, RandomState instance or None, default=None
        Seeds the minibatch order and block draws of "smart".
"""

_NOTES = """
    Notes
    -----
    With ``sample_weight`` ``s``, each sample's weight bounds how much of it the fit
    can keep: the kept weights ``v_i = s_i w_i`` lie in ``0 <= v_i <= s_i`` with
    ``sum_i v_i = h``, the objective is ``(1/h) sum_i v_i loss_i + alpha * R(coef)``,
    and ``w_i`` (``sample_weights_``) is the share of sample ``i`` kept. A sample of
    integer weight ``k`` is then ``k`` repeated rows, of which the fit may keep some
    (the last sample kept is kept in part). ``h`` is ``(1 - trim_fraction)`` times the
    total weight, exactly, or ``n_inliers``; TrimmedClassifier keeps at least half of
    every class's weight. Whole-number weights count repeated rows: ``h`` and the
    class floors are then those of the repeated data (``trim_fraction`` rounds the
    trimmed weight down to a whole number, the floors round up). Rows of weight 0 are
    left out, as if removed.
"""

_ATTRIBUTES = """
    sample_weights_ : ndarray of shape (n_samples,)
        Fitted weights ``w`` in the capped simplex ``{0 <= w_i <= 1, sum w = h}``;
        at a solution they are 1 on kept samples and 0 on trimmed ones. With
        ``sample_weight``, the share of each sample kept (``sum_i s_i w_i = h``; 0
        on samples of weight 0; one sample may be kept in part).

    inlier_mask_ : ndarray of bool of shape (n_samples,)
        ``sample_weights_ > 0.5``.

    n_inliers_ : int or float
        The number ``h`` of kept samples; with ``sample_weight``, the weight kept
        (a float).

    n_iter_ : int
        Epochs ("smart") or concentration steps ("alternating") run.

    objective_ : float
        Trimmed objective ``(1/h) sum_i w_i loss_i + alpha * R(coef)`` (with
        ``sample_weight``, ``(1/h) sum_i s_i w_i loss_i + alpha * R(coef)``) at the
        fitted coefficients and weights: the last entry of ``objective_path_``. In the
        target's squared units for :class:`TrimmedRegressor` (fitted on a rescaled target),
        so ``inf`` for a target whose spread is beyond about ``1e154``; the coefficients
        are unaffected.

    objective_path_ : ndarray of shape (n_records,)
        Trimmed objective at the initial point and after each accepted epoch
        ("smart", plus each exact refit on a settled kept set and a final exact
        weight step, when they lower it) or concentration step ("alternating");
        non-increasing.

    n_features_in_ : int
        Number of features seen during fit.

    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of features seen during fit, when ``X`` has string column names.
"""


class _BaseTrimmed(BaseEstimator):
    _parameter_constraints: dict = {
        "trim_fraction": [Interval(Real, 0, 1, closed="left")],
        "n_inliers": [Interval(Integral, 1, None, closed="left"), None],
        "penalty": [StrOptions({"l2", "l1", "l0", "none"}), None],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "fit_intercept": ["boolean"],
        "solver": [StrOptions({"smart", "alternating"})],
        "variance_reduction": [StrOptions({"saga", "svrg"})],
        "batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "block": [StrOptions({"cyclic", "random"})],
        "weight_step": [Interval(Real, 0, np.inf, closed="right")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        trim_fraction=0.1,
        n_inliers=None,
        penalty="l2",
        alpha=1e-4,
        fit_intercept=True,
        solver="smart",
        variance_reduction="saga",
        batch_size="auto",
        block="cyclic",
        weight_step=np.inf,
        max_iter=100,
        tol=1e-4,
        random_state=None,
    ):
        self.trim_fraction = trim_fraction
        self.n_inliers = n_inliers
        self.penalty = penalty
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.variance_reduction = variance_reduction
        self.batch_size = batch_size
        self.block = block
        self.weight_step = weight_step
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _kept(self, n_samples: int, weights: _RowWeights) -> float:
        """``h``: :meth:`_n_kept` without caps (sample weights), else the kept weight (in the
        units of ``weights.caps``)."""
        caps = weights.caps
        if caps is None:
            return self._n_kept(n_samples)
        total = float(np.sum(caps))
        if self.n_inliers is None:
            if weights.whole:  # repeated rows: the rule of whole samples on their number
                return float(self._n_kept(round(total)))
            return (1.0 - self.trim_fraction) * total
        h = float(np.ldexp(self.n_inliers, -weights.exponent))
        if h > total:
            user_total = weights.in_user_units(total)
            raise ValueError(
                f"n_inliers={self.n_inliers} exceeds the total sample_weight {user_total:.6g}; with "
                "sample_weight, n_inliers is the weight kept: "
                + ("pass at most the total, or use trim_fraction." if user_total >= 1
                   else "use trim_fraction, as n_inliers is a whole number of at least 1.")
            )
        return h

    def _n_kept(self, n_samples: int) -> int:
        if self.n_inliers is not None:
            if self.n_inliers > n_samples:
                raise ValueError(
                    f"n_inliers={self.n_inliers} exceeds the number of training samples, "
                    f"n_samples = {n_samples}; pass at most n_samples, or use trim_fraction."
                )
            return int(self.n_inliers)
        # a product within a relative 1e-9 below an integer is that integer: in floating
        # point 0.29 * 100 = 28.999999999999996, which is meant as 29
        trimmed = int(np.floor(self.trim_fraction * n_samples * (1.0 + 1e-9)))
        return n_samples - min(trimmed, n_samples - 1)  # trim_fraction < 1 keeps one

    def _trim_setting(self) -> str:
        """The parameter that sets ``h``, as the user wrote it."""
        if self.n_inliers is not None:
            return f"n_inliers={self.n_inliers}"
        return f"trim_fraction={self.trim_fraction}"

    def _solve(self, X, Y, loss, h, groups=None, floors=None, caps=None):
        e = 0
        if caps is not None:
            # weights of mean about 1, by a power of two (exact; the objective is a mean over the
            # kept weight): the solvers' bounds square them, which overflowed from about 1e153
            _, e = np.frexp(np.mean(caps))
            caps, h = np.ldexp(caps, -e), float(np.ldexp(h, -e))
            floors = None if floors is None else np.ldexp(floors, -e)
        # The solvers work on centred, scaled columns: an exact reparametrisation
        # (the intercept absorbs the centring, the penalty is taken in the original
        # units), so the minimiser is unchanged while the steps no longer depend on
        # the units of the features.
        offset, scale = column_scaling(X, self.fit_intercept)
        alpha, y_loc, y_scale = float(self.alpha), 0.0, 1.0
        # alpha=0 is no penalty: the penalty's rescaling by the column scales would divide
        # columns below 1e-154 past the float range, to a NaN objective (0 * inf)
        penalty = self.penalty if alpha > 0 and self.penalty is not None else "none"
        if loss == "squared":
            # Likewise the target, in units of its trimmed spread and centred (with an
            # intercept) at its trimmed location, neither moved by gross targets: the
            # fit no longer depends on its units (the refits' tolerances, L-BFGS's
            # included, are absolute). The penalty, homogeneous of degree p, takes
            # alpha * y_scale^(p - 2): the minimiser is unchanged.
            y_loc, y_scale = trimmed_location(Y, h, centre=self.fit_intercept, weights=caps)
            y_scale = y_scale if 0.0 < y_scale < np.inf else 1.0  # h equal targets
            Y = (Y - y_loc) / y_scale
            if alpha > 0:  # l0's y_scale^-2 passes the float range for targets below 1e-154:
                # the largest float, still a weight no coefficient pays (and inf * 0 is NaN)
                with np.errstate(over="ignore"):
                    alpha = float(min(alpha * np.float64(y_scale) ** (PENALTY_DEGREE[penalty] - 2),
                                      np.finfo(float).max))
        # a penalty weight alpha / scale^2 past the float range (a column below 1e-154 in
        # magnitude) holds the coefficient at 0: the solvers leave such a column out, as
        # inf * 0 in their steps and rescalings would be NaN
        d = X.shape[1]
        free = ~(np.isinf(penalty_weight(alpha, scale)) if penalty != "none" else np.zeros(d, bool))
        if free.all():
            free = slice(None)  # X[:, mask] is in Fortran order: the solvers' sums would round apart
        Z = preconditioned(X if isinstance(free, slice) else X[:, free], offset[free], scale[free])
        # a row with an entry past 2**64 spreads (a sentinel) is set aside from the squared loss's
        # trimmed fit, when the others hold h: kept from the start, where every coefficient is 0
        # and its loss is small, it would hold its column's coefficient at 0 and stay kept
        aside = held_rows(Z) if loss == "squared" and floors is None else np.zeros(Z.shape[0], bool)
        if (Z.shape[0] - aside.sum() if caps is None else caps[~aside].sum()) < h:  # the others cannot hold h
            aside[:] = False
        kept = np.flatnonzero(~aside)
        if aside.any():
            Z, Y = Z[kept], Y[kept]
            caps, groups = (None if a is None else a[kept] for a in (caps, groups))
        problem = TrimmedProblem(
            Z, Y, loss, float(h), penalty, alpha,
            bool(self.fit_intercept), coef_scale=scale[free], groups=groups, floors=floors, caps=caps,
        )
        if self.solver == "alternating":
            fit = concentration_steps(
                problem,
                max_iter=self.max_iter,
                tol=self._refit_tol(),
                refit_max_iter=_REFIT_ITER_PER_STEP * self.max_iter,
            )
        else:
            seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
            fit = smart(
                problem,
                variance_reduction=self.variance_reduction,
                batch_size=self.batch_size,
                block=self.block,
                weight_step=float(self.weight_step),
                max_iter=self.max_iter,
                tol=self.tol,
                rng=np.random.default_rng(seed),
            )
        if aside.any():  # the rows set aside keep no weight
            weights = np.zeros(aside.shape[0])
            weights[kept] = fit.weights
            fit.weights = weights
        if e:
            fit.weights = np.ldexp(fit.weights, e)
        coef = np.zeros((d, fit.coef.shape[1]))
        coef[free] = fit.coef * (y_scale / scale[free, None])
        fit.coef = coef
        fit.intercept = y_scale * fit.intercept + y_loc - offset @ fit.coef
        with np.errstate(over="ignore"):  # a mean square beyond the largest float reads inf
            fit.objective = np.asarray(fit.objective, dtype=float) * y_scale * y_scale
        return fit

    def _set_fitted(self, fit, h, weights: _RowWeights, **attributes):
        """Set every fitted attribute, only once the fit has succeeded. With sample weights
        the solver's weights are the weight kept of each row, here the share; rows of weight 0
        (not among ``weights.rows``) have a share of 0."""
        caps, rows = weights.caps, weights.rows
        share = kept = fit.weights if caps is None else fit.weights / caps
        if rows is not None:
            share = np.zeros(weights.n_samples)
            share[rows] = kept
        self.sample_weights_ = share
        self.inlier_mask_ = share > 0.5
        self.n_inliers_ = int(h) if caps is None else weights.in_user_units(h)
        self.n_iter_ = fit.n_iter
        self.objective_path_ = np.asarray(fit.objective, dtype=float)
        self.objective_ = float(self.objective_path_[-1])
        for name, value in attributes.items():
            setattr(self, name, value)

    def _refit_tol(self) -> float:
        """Tolerance of the exact refits of the concentration steps."""
        return min(self.tol, 1e-6)

    def _warn_if_not_converged(self, fit):
        if fit.converged and fit.refit_converged:
            return
        name = type(self).__name__
        if fit.converged:
            msg = (
                f"{name}(solver='alternating'): the exact refit on the final kept set "
                f"stopped with a gradient (in standardised units) above {self._refit_tol():g}, "
                f"within its limit of {_REFIT_ITER_PER_STEP} * max_iter = "
                f"{_REFIT_ITER_PER_STEP * self.max_iter} iterations, so the fit is not a local "
                "solution to within tol. The kept set is ill-conditioned: drop or combine "
                "nearly collinear features, or raise alpha; look for gross leverage rows (a "
                "few rows far out in X); or raise max_iter."
            )
        elif self.solver == "alternating":
            msg = (
                f"{name}(solver='alternating'): the kept set still changed at the last of "
                f"max_iter={self.max_iter} concentration steps, so the fit is not a local "
                f"solution yet; increase max_iter (tol={self.tol} sets the precision of each "
                "refit, not this test)."
            )
        else:
            msg = (
                f"{name}(solver='smart') stopped after {fit.n_iter} epochs (max_iter="
                f"{self.max_iter}) before the model was stationary on its kept samples to "
                f"within tol={self.tol} (relative to the start); the fit may be far from "
                "a local solution. Increase max_iter, or raise tol for a coarser fit"
                + (", or raise alpha (on nearly separable classes a weakly penalised loss keeps "
                   "decreasing)." if isinstance(self, ClassifierMixin) else ".")
            )
        warn(msg, ConvergenceWarning)

    def _scores(self, X):
        check_is_fitted(self)
        X = validate_numeric(self, X, accept_sparse="csr", reset=False, dtype=[np.float64, np.float32])
        return X @ np.atleast_2d(self.coef_).T + self.intercept_


class TrimmedRegressor(RowOrderScoreMixin, RegressorMixin, _BaseTrimmed):
    __doc__ = (
        """Least trimmed squares: a linear model fitted on the ``h`` samples it explains best.

    Minimises jointly over the coefficients and sample weights ``w`` on the capped
    simplex ``{0 <= w_i <= 1, sum_i w_i = h}``::

        (1/h) sum_i w_i (y_i - x_i @ coef - intercept)^2 / 2 + alpha * R(coef)

    which equals half the mean of the ``h`` smallest squared residuals plus the penalty.

    Parameters
    ----------"""
        + _PARAMETERS
        + """
    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Coefficients.

    intercept_ : float
        Intercept (0.0 when ``fit_intercept=False``).
"""
        + _ATTRIBUTES
        + """
    See Also
    --------
    TrimmedClassifier : Trimmed logistic regression.
    sklearn.linear_model.HuberRegressor : Linear regression robust to outliers through the
        Huber loss.
    sklearn.linear_model.RANSACRegressor : Linear regression fitted on a consensus set of
        inliers found by random sampling.
"""
        + _NOTES
        + _REFERENCES
        + """
    Examples
    --------
    >>> import numpy as np
    >>> from skrate import TrimmedRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 2))
    >>> y = X @ [1.0, -2.0] + 0.01 * rng.normal(size=200)
    >>> y[:20] += 50.0
    >>> reg = TrimmedRegressor(trim_fraction=0.15, random_state=0).fit(X, y)
    >>> bool(reg.inlier_mask_[:20].any())
    False
    >>> np.round(reg.coef_, 1)
    array([ 1., -2.])
    """
    )

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike | sp.spmatrix | sp.sparray, y: ArrayLike,
            sample_weight: ArrayLike | None = None) -> "TrimmedRegressor":
        """Fit the model and the sample weights.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; NaN or infinite values are rejected. A sparse matrix stays
            sparse (as CSR): the centring of its columns is implicit, and the fit is that
            of the same data dense.
        y : array-like of shape (n_samples,)
            Targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each sample: the most of it the fit can keep (see
            Notes). Rows of weight 0 are left out.

        Returns
        -------
        self : object

        Warns
        -----
        ConvergenceWarning
            When the solver stops at ``max_iter`` before its stopping test is met,
            or the last exact refit of "alternating" at its iteration limit.
        """
        with unfitted_on_error(self):
            check_row_order(X, y=y, sample_weight=sample_weight)
            X, y = validate_numeric(self, X, y, accept_sparse="csr", dtype=np.float64, y_numeric=True)
            X, y, weights = _row_weights(X, np.asarray(y, dtype=np.float64), sample_weight)
            h = self._kept(X.shape[0], weights)
            fit = self._solve(X, y, "squared", h, caps=weights.caps)
            self._set_fitted(
                fit, h, weights, coef_=fit.coef[:, 0].copy(), intercept_=float(fit.intercept[0])
            )
        self._warn_if_not_converged(fit)
        return self

    def predict(self, X: ArrayLike | sp.spmatrix | sp.sparray) -> np.ndarray:
        """Predict with the linear model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples to predict, with the features seen in ``fit``.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``X @ coef_ + intercept_``.
        """
        return self._scores(X)[:, 0]


class TrimmedClassifier(RowOrderScoreMixin, ClassifierMixin, _BaseTrimmed):
    __doc__ = (
        """Trimmed logistic regression (binary or multinomial).

    Minimises jointly over the coefficients and sample weights ``w`` on the capped
    simplex ``{0 <= w_i <= 1, sum_i w_i = h}``::

        (1/h) sum_i w_i logloss_i(coef, intercept) + alpha * R(coef)

    so mislabelled or otherwise unexplainable samples are left out of the fit.
    Two classes use the logistic loss of one score; more classes the softmax
    (multinomial) loss.

    Parameters
    ----------"""
        + _PARAMETERS
        + """
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.

    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Coefficients (one row for two classes).

    intercept_ : ndarray of shape (1,) or (n_classes,)
        Intercepts.
"""
        + _ATTRIBUTES
        + """
    See Also
    --------
    TrimmedRegressor : Least trimmed squares.
    sklearn.linear_model.LogisticRegression : Logistic regression fitted on every sample.
"""
        + _NOTES
        + _REFERENCES
        + """
    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skrate import TrimmedClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = TrimmedClassifier(trim_fraction=0.05, alpha=1e-3, random_state=0).fit(X, y)
    >>> int(clf.inlier_mask_.sum())
    143
    >>> bool(clf.score(X, y) > 0.9)
    True
    """
    )

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: ArrayLike | sp.spmatrix | sp.sparray, y: ArrayLike,
            sample_weight: ArrayLike | None = None) -> "TrimmedClassifier":
        """Fit the model and the sample weights.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; NaN or infinite values are rejected. A sparse matrix stays
            sparse (as CSR): the centring of its columns is implicit, and the fit is that
            of the same data dense.
        y : array-like of shape (n_samples,)
            Class labels (at least two classes).
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each sample: the most of it the fit can keep (see
            Notes). Rows of weight 0 are left out; every class needs rows of positive
            weight.

        Returns
        -------
        self : object

        Raises
        ------
        ValueError
            Before solving, when ``h`` is below the least number of kept samples:
            half of every class, rounded up (see ``trim_fraction``); with
            ``sample_weight``, half of every class's weight. When a class has no
            rows of positive weight.

        Warns
        -----
        ConvergenceWarning
            When the solver stops at ``max_iter`` before its stopping test is met,
            or the last exact refit of "alternating" at its iteration limit.
        """
        with unfitted_on_error(self):
            check_row_order(X, y=y, sample_weight=sample_weight)
            check_label_missing(y)
            X, y = validate_numeric(self, X, y, accept_sparse="csr", dtype=np.float64)
            check_classification_targets(y)
            classes, y_index = np.unique(y, return_inverse=True)
            if classes.size < 2:
                raise ValueError(
                    "TrimmedClassifier needs samples of at least 2 classes; y has 1 class "
                    f"({classes[0]})."
                )
            X, y_index, weights = _row_weights(X, y_index, sample_weight)
            if weights.rows is not None:
                check_weighted_classes(y_index, classes, "TrimmedClassifier")
            h = self._kept(X.shape[0], weights)
            floors = self._class_floors(y_index, classes, weights, h)
            if classes.size == 2:
                Y, loss = np.where(y_index == 1, 1.0, -1.0), "logistic"
            else:
                Y, loss = LabelBinarizer().fit(np.arange(classes.size)).transform(y_index).astype(float), "multinomial"
            fit = self._solve(X, Y, loss, h, groups=y_index, floors=floors, caps=weights.caps)
            self._set_fitted(
                fit, h, weights, classes_=classes, coef_=fit.coef.T.copy(),
                intercept_=fit.intercept.copy(),
            )
        self._warn_if_not_converged(fit)
        return self

    def _class_floors(self, y_index, classes, weights: _RowWeights, h):
        """Least number of kept samples of each class: half of it, rounded up; with sample
        weights, half of its weight (whole-number weights: of the rows they count).

        The trimming stays global (the ``h`` best-explained samples), but a fit free
        to drop a class would keep the others alone and drive their loss towards 0
        through the unpenalised intercept: the objective then has no minimum. Any
        floor of 1 or more rules that out; half of the class also keeps the fit from
        declaring most of a class wrong, for which it has no evidence (the same reason
        least trimmed squares keeps at least half the samples). On imbalanced data the
        default ``trim_fraction`` then works whatever the minority's share.
        """
        caps = weights.caps
        mass = np.bincount(y_index, weights=caps, minlength=classes.size)
        if not (mass > 0).all():
            raise ValueError(
                f"TrimmedClassifier keeps at least half of every class's weight, and classes "
                f"{classes[mass == 0].tolist()} have no rows of positive sample_weight (a row "
                "of weight 0 is a row removed). Give those rows a positive weight, or drop them."
            )
        if caps is not None and not weights.whole:
            floors = mass / 2.0
            if floors.sum() > h * (1.0 + 1e-12):
                raise ValueError(
                    f"{self._trim_setting()} keeps a weight of {weights.in_user_units(h):.6g} of the "
                    f"total sample_weight {weights.in_user_units(mass.sum()):.6g}, less than the half "
                    "of every class's weight that TrimmedClassifier keeps at least. Use "
                    + ("n_inliers of at least half the total weight." if self.n_inliers is not None
                       else "trim_fraction of at most 0.5.")
                )
            if floors.sum() > h * (1.0 - 1e-12):  # at half the weight: rounding must not pass h
                floors = floors * (h / floors.sum() * (1.0 - 1e-12))
            return floors
        # whole samples, or whole-number weights counting repeated rows
        counts = np.round(mass).astype(np.int64)
        n = int(counts.sum())
        floors = -(-counts // 2)
        if floors.sum() > h:
            samples = "training samples" if caps is None else "samples counted by sample_weight"
            raise ValueError(
                f"{self._trim_setting()} keeps {h:g} of the {n} {samples}, fewer than "
                f"the {floors.sum()} that TrimmedClassifier keeps at least (half of every "
                f"class, rounded up). Use {self._trim_at_most(n - floors.sum(), n)}."
            )
        return floors if caps is None else floors.astype(float)

    def _trim_at_most(self, k: int, n: int) -> str:
        """The setting, in the parameter the user set, that trims at most ``k`` of ``n``."""
        if self.n_inliers is not None:
            return f"n_inliers of at least {n - k}"
        return f"trim_fraction below {k + 1}/{n} (at most {k} trimmed)"

    def decision_function(self, X: ArrayLike | sp.spmatrix | sp.sparray) -> np.ndarray:
        """Scores: the log-odds of ``classes_[1]`` (two classes) or one per class.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples to score, with the features seen in ``fit``.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            ``X @ coef_.T + intercept_``; one column (returned as a 1-D array) for two classes.
        """
        S = self._scores(X)
        return S[:, 0] if S.shape[1] == 1 else S

    def predict_proba(self, X: ArrayLike | sp.spmatrix | sp.sparray) -> np.ndarray:
        """Class probabilities.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples to predict, with the features seen in ``fit``.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.
        """
        return softmax(self._class_scores(X), axis=1)

    def predict_log_proba(self, X: ArrayLike | sp.spmatrix | sp.sparray) -> np.ndarray:
        """Logarithm of the class probabilities, computed without underflow.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples to predict, with the features seen in ``fit``.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.
        """
        return log_softmax(self._class_scores(X), axis=1)

    def _class_scores(self, X):
        """One score per class whose softmax is the probabilities: with two classes
        ``(0, log-odds)``, as ``expit(s) = softmax((0, s))[1]``."""
        S = self._scores(X)
        return np.column_stack([np.zeros_like(S), S]) if S.shape[1] == 1 else S

    def predict(self, X: ArrayLike | sp.spmatrix | sp.sparray) -> np.ndarray:
        """Most probable class.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples to predict, with the features seen in ``fit``.

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels among ``classes_``.
        """
        S = self._scores(X)
        idx = (S[:, 0] > 0).astype(int) if S.shape[1] == 1 else np.argmax(S, axis=1)
        return self.classes_[idx]
