"""The error / constraint-violation frontier over a grid of constraint slacks."""

from __future__ import annotations

import time
import warnings
from numbers import Real
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

import numpy as np
from joblib import Parallel, delayed
from sklearn import get_config
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.model_selection import train_test_split
from sklearn.model_selection._search import BaseSearchCV
from sklearn.utils import _safe_indexing
from sklearn.utils.metadata_routing import MetadataRouter, get_routing_for_object
from sklearn.utils.validation import _num_samples, has_fit_parameter

from ..exceptions import InfeasibleConstraintsWarning
from ..metrics._audit import require_pandas
from ..metrics._decisions import _innermost, check_decisions, decisions_of, positive_labels
from ..problem import GroupTable, RateData, evaluate_term
from ..problem._groups import ROUTING_HINT, check_row_order
from ..generalized._program import as_metric_constraints, constraint_violations
from ..rates import error_rate
from ..utils._validation import check_baseline, check_sample_weight
from ..utils._warnings import on_main_thread, warn
from ._progress import Progress

if TYPE_CHECKING:
    import pandas as pd
    import scipy.sparse as sp
    from numpy.typing import ArrayLike
    from sklearn.base import BaseEstimator

    from ..generalized import MetricConstraint
    from ..rates import Constraint


def _is_template(item) -> bool:
    return isinstance(item, str) and "{slack}" in item


def _check_template(constraints, source: str):
    """``constraints`` as a callable or a list holding at least one ``{slack}`` template; ``source``
    says where they came from, for the error."""
    if callable(constraints):
        return constraints
    items = [constraints] if isinstance(constraints, str) else constraints
    if not isinstance(items, (list, tuple)) or not any(map(_is_template, items)):
        raise ValueError(f"{source} {constraints!r}, but it must be a callable slack -> constraints (e.g. lambda s: "
                         "equal_opportunity('race', slack=s)) or strings of which at least one holds '{slack}' "
                         "(e.g. 'tpr[race] >= tpr - {slack}'; fixed ones next to it hold at every slack).")
    return list(items)


def _constraints_at(constraints, slack: float):
    """The constraints of one slack: a callable's result, or ``{slack}`` filled into the templates,
    the other constraints kept as they are (strings among them are not formatted)."""
    if callable(constraints):
        return constraints(slack)
    return [c.format(slack=slack) if _is_template(c) else c for c in constraints]


def _check_slacks(slacks) -> list[float]:
    items = list(slacks) if np.iterable(slacks) and not isinstance(slacks, str) else []
    if not items or not all(isinstance(s, Real) and not isinstance(s, bool) and np.isfinite(s) and s >= 0
                            for s in items):
        raise ValueError(f"slacks must be a non-empty list of finite numbers >= 0, e.g. [0, 0.05, 0.1]; "
                         f"got {slacks!r}.")
    return [float(s) for s in items]


def _forwards_unrouted(estimator, name: str) -> bool:
    """Whether ``estimator.fit`` hands the fit parameter ``name`` on to a fit that takes it
    without metadata routing: CalibratedClassifierCV passes its fit parameters to its estimator,
    and a search passes all but ``groups``, which go to its splitter."""
    if (isinstance(estimator, BaseSearchCV) and name != "groups") or isinstance(estimator, CalibratedClassifierCV):
        inner = estimator.estimator
        return inner is not None and (has_fit_parameter(inner, name) or _forwards_unrouted(inner, name))
    return False


def _check_metadata_reach(estimator, metadata: dict) -> None:
    """A meta-estimator (Pipeline, Bagging, a search's splitter for ``groups``) passes
    ``groups``, ``sample_weight`` and ``baseline`` on to its steps only under metadata routing;
    say how to enable it, before any fit, rather than scikit-learn's "Pipeline.fit does not
    accept the groups parameter" in every fit. A calibrator passes them on without it."""
    names = [k for k, v in metadata.items()
             if v is not None and not has_fit_parameter(estimator, k) and not _forwards_unrouted(estimator, k)]
    if names and not get_config()["enable_metadata_routing"] and isinstance(
            get_routing_for_object(estimator), MetadataRouter):
        others = "" if names == ["groups"] else (
            f" Request {', '.join(names)} likewise: set_fit_request({', '.join(f'{k}=True' for k in names)}).")
        raise ValueError(f"{type(estimator).__name__}.fit passes {', '.join(names)} on to its steps only by "
                         f"metadata routing, which is off.{ROUTING_HINT}{others}")


def _take_groups(groups, idx):
    if groups is None:
        return None
    if isinstance(groups, dict):
        return {k: np.asarray(v)[idx] for k, v in groups.items()}
    return _safe_indexing(groups, idx)


def _largest_violation(cons, data, p, fitted: GroupTable) -> tuple[float, list[str]]:
    """Largest violation of ``cons`` on ``data``, NaN when these rows leave one undefined, as
    ``ConstrainedClassifier.constraint_report`` reports rate constraints and
    ``MetricOptimizer.metric_values`` metric ones; and the undefined constraints. Bare group
    columns expand over the values of the rows the model was fitted on, ``fitted``: a value
    these rows lack leaves its constraint undefined rather than unmeasured."""
    undefined: list[str] = []
    violations = constraint_violations(cons, data, p, fitted, undefined)
    return (np.nan if undefined else float(np.max(violations))), undefined


def _score(est, X, y, groups, sample_weight, baseline, cons, strict, decisions,
           fitted: GroupTable) -> tuple[list, list[str]]:
    """Error, largest violation and largest gap of ``est`` on one part, weighted as in its fit, and
    the constraints the part leaves undefined (the group values of ``fitted``'s rows)."""
    p = decisions_of(est, X, decisions)
    n = p.shape[0]
    weights = np.ones(n) if sample_weight is None else sample_weight
    data, p = RateData(positive_labels(est, y), weights, GroupTable.from_input(groups, X, n),
                       baseline).without_weightless(p)
    error = evaluate_term(error_rate(), data, p)
    (violation, undefined), (gap, undefined_gap) = (_largest_violation(c, data, p, fitted) for c in (cons, strict))
    return [error, violation, gap], undefined + undefined_gap


def _fit_quietly(est, X, y, fit_params) -> None:
    """Fit ``est`` without showing its warning that a solution misses a constraint, which the
    curve's ``feasible`` column says. ``catch_warnings`` swaps process-wide state, so off the main
    thread (joblib's threading backend, Dask's worker threads) the fit warns as it would alone."""
    if not on_main_thread():
        est.fit(X, y, **fit_params)
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", InfeasibleConstraintsWarning)
        est.fit(X, y, **fit_params)
    for w in caught:  # pass on every other warning
        if not issubclass(w.category, InfeasibleConstraintsWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _feasible(est) -> bool | None:
    """The fit's own verdict on the solution it predicts with, read from the estimator that
    decides (through a Pipeline's last step and a search's ``best_estimator_``), never from its
    warnings, which threads cannot record: ``feasible_``, but for ConstrainedClassifier, whose
    ``feasible_`` is its m-stochastic solution's, that of its ``solution``. None when it gives
    none."""
    est = _innermost(est)
    verdict = getattr(est, "_selected_feasible", getattr(est, "feasible_", None))
    return None if verdict is None else bool(verdict)


def _fit_one(estimator, param, slack, spec, strict, train, test, decisions):
    X_tr, y_tr, g_tr, w_tr, b_tr = train
    est = clone(estimator).set_params(**{param: spec})
    # None is not passed: a Pipeline without metadata routing refuses any metadata, even None
    fit_params = {k: v for k, v in (("groups", g_tr), ("sample_weight", w_tr), ("baseline", b_tr)) if v is not None}
    start = time.perf_counter()
    _fit_quietly(est, X_tr, y_tr, fit_params)
    fit_time = time.perf_counter() - start
    cons = as_metric_constraints(spec)
    # the fit drops the rows of weight 0: their values are not fitted
    fitted = GroupTable.from_input(g_tr, X_tr, _num_samples(X_tr)).weighted(w_tr)
    row = {"slack": slack, "fit_time": fit_time}
    undefined = {}
    for name, part in (("train", train), ("test", test)):
        values, undefined[name] = (([np.nan] * 3, []) if part is None
                                   else _score(est, *part, cons, strict, decisions, fitted))
        row.update(zip((f"{name}_error", f"{name}_violation", f"{name}_gap"), values))
    verdict = _feasible(est)
    row["feasible"] = bool(row["train_violation"] <= 0) if verdict is None else verdict
    return row, est, undefined


def tradeoff_curve(
    estimator: BaseEstimator,
    X: ArrayLike | sp.spmatrix | sp.sparray,
    y: ArrayLike,
    *,
    groups: ArrayLike | dict[str, ArrayLike] | pd.DataFrame | None = None,
    constraints: Callable[[float], object] | str | Sequence[str | Constraint | MetricConstraint] | None = None,
    slacks: Iterable[float] = (0.0, 0.025, 0.05, 0.1, 0.2),
    param: str = "constraints",
    test_size: float | None = 0.3,
    sample_weight: ArrayLike | None = None,
    baseline: ArrayLike | None = None,
    decisions: str = "auto",
    random_state: int | np.random.RandomState | None = None,
    n_jobs: int | None = None,
    progress: bool | None = None,
    return_estimators: bool = False,
) -> pd.DataFrame | tuple[pd.DataFrame, list[BaseEstimator]]:
    """Fit over a grid of constraint slacks and measure error and violation on train and test.

    Each slack gives one clone of ``estimator`` with ``param`` (default ``constraints``) set
    to the constraints at that slack; the fits run in parallel with joblib, so any joblib
    backend works unchanged (``with joblib.parallel_backend("dask"): tradeoff_curve(...)``
    runs on a Dask cluster, likewise Ray's backend).

    Parameters
    ----------
    estimator : estimator
        An unfitted estimator taking ``groups`` in ``fit``, e.g.
        :class:`skrate.ConstrainedClassifier`, or a Pipeline ending in one: a Pipeline passes
        ``groups``, ``sample_weight`` and ``baseline`` on only under metadata routing
        (``sklearn.set_config(enable_metadata_routing=True)`` and
        ``set_fit_request(groups=True)`` on the step), and refuses them otherwise, with an
        error saying so before any fit.
    X, y : array-like
        Data; a stratified ``test_size`` share is held out for the test frontier.
    groups : DataFrame, dict of arrays, or array-like, default=None
        Group columns of ``X``'s rows, as in ``fit``: matched by position, so a frame or Series
        whose index holds ``X``'s labels in another order is refused.
    constraints : callable or str or list, default=None
        ``constraints(slack)`` returning the constraints at a slack (``lambda s:
        equal_opportunity("race", slack=s)``), or strings with a ``{slack}`` placeholder
        (``"tpr[race] >= tpr - {slack}"``), next to which fixed constraints (``"ppr >= 0.3"``)
        hold at every slack as they are. None takes the template from the estimator's
        ``param``: ``ConstrainedClassifier(constraints="tpr[race] >= tpr - {slack}")``. With
        :class:`skrate.MetricOptimizer` the callable may return metric constraints
        (``lambda s: kld_fairness("race", s)``), scored as its ``metric_values`` reads them.
    slacks : array-like of float, default=(0, 0.025, 0.05, 0.1, 0.2)
        The grid: a non-empty sequence (list, tuple, array) of finite numbers ``>= 0``.
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
        ``test_``, ``feasible`` (the fit's own verdict on the solution it predicts with, margins
        included: ``feasible_``, for :class:`skrate.ConstrainedClassifier` that of its
        ``solution``, read through a Pipeline's last step and a search's
        ``best_estimator_``; for an estimator with no verdict, whether ``train_violation``
        is at most 0) and ``fit_time`` (seconds). A violation or gap is NaN where a ratio is
        undefined, and where the split leaves a constraint undefined (a group value it
        names that no row of the split holds; a bare column stands for the values of the
        training split, which the model was fitted on), with a warning naming the split, as
        ``constraint_report`` does.
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
        constraints = _check_template(params[param], f"constraints=None takes the template from the parameter "
                                      f"{param!r} of {type(estimator).__name__} (param=...), which is")
    else:
        constraints = _check_template(constraints, "constraints is")
    slacks = _check_slacks(slacks)
    check_decisions(decisions)
    specs = [_constraints_at(constraints, s) for s in slacks]
    strict = as_metric_constraints(_constraints_at(constraints, 0.0))
    for spec in specs:
        as_metric_constraints(spec)  # a malformed constraint fails here, before any fit
    check_row_order(X, y=y, sample_weight=sample_weight, baseline=baseline)
    n = _num_samples(X)
    if np.shape(y)[0] != n:
        raise ValueError(f"y has {np.shape(y)[0]} entries but X has {n} rows.")
    # as fit does, on the whole data: the split keeps rows by position, and would silently cut a
    # column longer than X down to the split's rows
    GroupTable.from_input(groups, X, n).check_rows()
    if sample_weight is not None:
        sample_weight = check_sample_weight(sample_weight, n)
    # Labels mapped as fit maps them (classes_ = np.unique(y)); checked before any fit.
    baseline = check_baseline(baseline, np.unique(y), n)
    _check_metadata_reach(estimator, {"groups": groups, "sample_weight": sample_weight, "baseline": baseline})
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
    # by default a bar on a terminal only, and only for more than one fit
    show = (None if len(tasks) > 1 else False) if progress is None else bool(progress)
    try:
        runner = Parallel(n_jobs=n_jobs, return_as="generator")
    except TypeError:  # joblib < 1.3 has no generators: no live progress
        runner = Parallel(n_jobs=n_jobs)
    results = []
    with Progress(len(tasks), "tradeoff_curve", enabled=show) as bar:
        for result in runner(tasks):
            results.append(result)
            bar.update()
    for name, rows in (("train", tr), ("test", te)):
        undefined = list(dict.fromkeys(c for *_, u in results for c in u[name]))
        if undefined:  # the split, not the models: as constraint_report, NaN and a warning
            split = "training split" if name == "train" else f"held-out test split (test_size={test_size!r})"
            warn(f"tradeoff_curve: the {len(rows)} rows of the {split} leave {undefined} undefined (a group "
                 f"value they name has no row there, or a rate's slice no rows of its class), so "
                 f"{name}_violation and {name}_gap are NaN. A value this rare needs a larger test_size or "
                 "another random_state.", UserWarning)
    columns = ["slack", "train_error", "train_violation", "train_gap", "test_error", "test_violation",
               "test_gap", "feasible", "fit_time"]
    curve = pd.DataFrame([r for r, *_ in results], columns=columns)
    return (curve, [e for _, e, _ in results]) if return_estimators else curve
