"""The error / constraint-violation frontier over a grid of constraint slacks."""

from __future__ import annotations

import sys
import time
import warnings
from numbers import Real
from typing import Callable, Sequence

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.model_selection import train_test_split
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import _check_sample_weight, _num_samples

from ..exceptions import InfeasibleConstraintsWarning
from ..metrics._audit import require_pandas
from ..metrics._decisions import decisions_of, positive_labels
from ..problem import GroupTable, RateData, evaluate_term, violation_rows
from ..rates import as_constraints, error_rate
from ..utils._validation import check_baseline
from ._progress import Progress


def _constraints_at(constraints, slack: float):
    """The constraints of one slack: a callable's result, or ``{slack}`` filled into the strings."""
    if callable(constraints):
        return constraints(slack)
    texts = [constraints] if isinstance(constraints, str) else constraints
    if not isinstance(texts, (list, tuple)) or not texts or not all(isinstance(t, str) and "{slack}" in t for t in texts):
        raise ValueError("constraints must be a callable slack -> constraints (e.g. "
                         "lambda s: equal_opportunity('race', slack=s)) or strings holding '{slack}', "
                         "e.g. 'tpr[race] >= tpr - {slack}'.")
    return [t.format(slack=slack) for t in texts]


def _take_groups(groups, idx):
    if groups is None:
        return None
    if isinstance(groups, dict):
        return {k: np.asarray(v)[idx] for k, v in groups.items()}
    return _safe_indexing(groups, idx)


def _score(est, X, y, groups, sample_weight, baseline, cons, strict, decisions) -> tuple[float, float, float]:
    """Error, largest violation and largest gap of ``est`` on one part, weighted as in its fit."""
    p = decisions_of(est, X, decisions)
    n = p.shape[0]
    weights = np.ones(n) if sample_weight is None else sample_weight
    data = RateData(positive_labels(est, y), weights, GroupTable.from_input(groups, X, n), baseline)
    error = evaluate_term(error_rate(), data, p)
    violation = np.max([r["violation"] for r in violation_rows(cons, data, p)])
    gap = np.max([r["violation"] for r in violation_rows(strict, data, p)])
    return error, float(violation), float(gap)


def _fit_one(estimator, param, slack, spec, strict, train, test, decisions):
    X_tr, y_tr, g_tr, w_tr, b_tr = train
    est = clone(estimator).set_params(**{param: spec})
    fit_params = {k: v for k, v in (("sample_weight", w_tr), ("baseline", b_tr)) if v is not None}
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", InfeasibleConstraintsWarning)
        est.fit(X_tr, y_tr, groups=g_tr, **fit_params)
    fit_time = time.perf_counter() - start
    for w in caught:  # pass on every other warning
        if not issubclass(w.category, InfeasibleConstraintsWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    cons = as_constraints(spec)
    row = {"slack": slack, "feasible": bool(getattr(est, "feasible_", True)) and not any(
        issubclass(w.category, InfeasibleConstraintsWarning) for w in caught), "fit_time": fit_time}
    row.update(zip(("train_error", "train_violation", "train_gap"), _score(est, *train, cons, strict, decisions)))
    if test is not None:
        row.update(zip(("test_error", "test_violation", "test_gap"), _score(est, *test, cons, strict, decisions)))
    else:
        row.update(test_error=np.nan, test_violation=np.nan, test_gap=np.nan)
    return row, est


def tradeoff_curve(
    estimator,
    X,
    y,
    *,
    groups=None,
    constraints: Callable[[float], object] | str | Sequence[str] | None = None,
    slacks: Sequence[float] = (0.0, 0.025, 0.05, 0.1, 0.2),
    param: str = "constraints",
    test_size: float | None = 0.3,
    sample_weight=None,
    baseline=None,
    decisions: str = "auto",
    random_state=None,
    n_jobs: int | None = None,
    progress: bool | None = None,
    return_estimators: bool = False,
):
    """Fit over a grid of constraint slacks and measure error and violation on train and test.

    Each slack gives one clone of ``estimator`` with ``param`` (default ``constraints``) set
    to the constraints at that slack; the fits run in parallel with joblib, so any joblib
    backend works unchanged (``with joblib.parallel_backend("dask"): tradeoff_curve(...)``
    runs on a Dask cluster, likewise Ray's backend).

    Parameters
    ----------
    estimator : estimator
        An unfitted estimator taking ``groups`` in ``fit``, e.g.
        :class:`skrate.ConstrainedClassifier`.
    X, y : array-like
        Data; a stratified ``test_size`` share is held out for the test frontier.
    groups : DataFrame, dict of arrays, or array-like, default=None
        Group columns of ``X``'s rows, as in ``fit``.
    constraints : callable or str or list of str, default=None
        ``constraints(slack)`` returning the constraints at a slack (``lambda s:
        equal_opportunity("race", slack=s)``), or strings with a ``{slack}`` placeholder
        (``"tpr[race] >= tpr - {slack}"``). None takes the template from the estimator's
        ``param``: ``ConstrainedClassifier(constraints="tpr[race] >= tpr - {slack}")``.
    slacks : sequence of float, default=(0, 0.025, 0.05, 0.1, 0.2)
        The grid.
    param : str, default="constraints"
        The estimator parameter receiving the constraints (``"classifier__constraints"`` in a
        Pipeline).
    test_size : float or None, default=0.3
        Held-out share; None trains on everything and leaves the test columns NaN.
    sample_weight : array-like of shape (n_samples,), default=None
        Passed to ``fit`` (its training rows) and weighing the rows of every error and
        violation, on train and test alike.
    baseline : array-like of shape (n_samples,), default=None
        A baseline model's decisions (0/1 or class labels, as in ``fit``), for churn, wins
        and losses constraints; split with the rows, passed to ``fit`` and used in scoring.
    decisions : {"auto", "predict", "expected"}, default="auto"
        How rates are read from the fitted models, as in :func:`skrate.metrics.audit`.
    random_state : int, RandomState instance or None, default=None
        Seeds the split.
    n_jobs : int, default=None
        Parallel fits.
    progress : bool, default=None
        Show a progress bar on stderr; by default when stderr is a terminal and there are
        several fits.
    return_estimators : bool, default=False
        Also return the fitted estimators, in the order of ``slacks``.

    Returns
    -------
    curve : pandas.DataFrame
        One row per slack: ``slack``, ``train_error``, ``train_violation`` (largest violation
        of the constraints at that slack), ``train_gap`` (largest violation of the
        constraints at slack 0: the distance from the exact goal), the same three for
        ``test_``, ``feasible`` and ``fit_time`` (seconds).
    estimators : list
        Only when ``return_estimators``.

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization with
    Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and Other Goals.
    JMLR 20(172), 2019.
    """
    pd = require_pandas("tradeoff_curve")
    if constraints is None:
        params = estimator.get_params()
        if param not in params:
            raise ValueError(f"{type(estimator).__name__} has no parameter {param!r}; name the parameter that "
                             "takes the constraints with param=... (e.g. 'classifier__constraints').")
        constraints = params[param]
    slacks = [float(s) for s in slacks]
    if not slacks or not all(isinstance(s, Real) and np.isfinite(s) and s >= 0 for s in slacks):
        raise ValueError(f"slacks must be a non-empty list of finite numbers >= 0, got {slacks!r}.")
    specs = [_constraints_at(constraints, s) for s in slacks]
    strict = as_constraints(_constraints_at(constraints, 0.0))
    for spec in specs:
        as_constraints(spec)  # a malformed constraint fails here, before any fit
    n = _num_samples(X)
    if np.shape(y)[0] != n:
        raise ValueError(f"y has {np.shape(y)[0]} entries but X has {n} rows.")
    if sample_weight is not None:
        sample_weight = _check_sample_weight(sample_weight, np.empty((n, 0)))
    # Labels mapped as fit maps them (classes_ = np.unique(y)); checked before any fit.
    baseline = check_baseline(baseline, np.unique(y), n)
    idx = np.arange(n)
    if test_size:
        tr, te = train_test_split(idx, test_size=test_size, stratify=np.asarray(y), random_state=random_state)
    else:
        tr, te = idx, None

    def part(rows):
        return (_safe_indexing(X, rows), _safe_indexing(y, rows), _take_groups(groups, rows),
                None if sample_weight is None else sample_weight[rows], None if baseline is None else baseline[rows])

    train, test = part(tr), None if te is None else part(te)
    tasks = [delayed(_fit_one)(estimator, param, s, spec, strict, train, test, decisions)
             for s, spec in zip(slacks, specs)]
    show = (len(tasks) > 1 and sys.stderr.isatty()) if progress is None else bool(progress)
    try:
        runner = Parallel(n_jobs=n_jobs, return_as="generator")
    except TypeError:  # joblib < 1.3 has no generators: no live progress
        runner = Parallel(n_jobs=n_jobs)
    results = []
    with Progress(len(tasks), "tradeoff_curve", enabled=show) as bar:
        for result in runner(tasks):
            results.append(result)
            bar.update()
    columns = ["slack", "train_error", "train_violation", "train_gap", "test_error", "test_violation",
               "test_gap", "feasible", "fit_time"]
    curve = pd.DataFrame([r for r, _ in results], columns=columns)
    return (curve, [e for _, e in results]) if return_estimators else curve
