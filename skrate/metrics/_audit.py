"""Fairness audit of any fitted binary classifier: per-group rates, gaps and constraints."""

from __future__ import annotations

from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params
from sklearn.utils.validation import _num_samples

from ..problem import GroupTable, RateData, constraint_violation, expand_constraints
from ..problem._evaluate import absent_values, evaluate_term, zero_denominator_reason
from ..problem._groups import check_row_order
from ..rates import Expression, Ratio, Slice, as_constraints
from ..rates._expression import Rate
from ..utils._validation import check_baseline, check_sample_weight
from ..utils._warnings import listed, warn
from ._bootstrap import RateParts, bootstrap_values, percentile_interval
from ._decisions import DECISIONS, decisions_of, is_stochastic, positive_labels

if TYPE_CHECKING:
    import pandas as pd
    import scipy.sparse as sp
    from numpy.typing import ArrayLike
    from sklearn.base import BaseEstimator

    from ..rates import Constraint

DEFAULT_METRICS = ("ppr", "tpr", "fpr", "tnr", "fnr", "accuracy", "precision")
_KINDS = {"ppr", "npr", "tpr", "fpr", "tnr", "fnr", "accuracy", "error_rate", "precision"}
# the rate language's other names of these rates; the report names them as above
_ALIASES = {"coverage": "ppr", "recall": "tpr", "error": "error_rate"}
ALL = "all"
#: Above this share of resamples leaving a value undefined, audit warns of its interval.
_UNDEFINED_SHARE = 0.01
CONSTRAINT = "constraint"
COLUMNS = ["attribute", "group", "metric", "count", "value", "value_low", "value_high",
           "difference", "difference_low", "difference_high", "ratio", "ratio_low", "ratio_high",
           "bound", "violation", "violation_low", "violation_high"]


def require_pandas(what: str):
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - exercised only without pandas
        raise ImportError(f"{what} returns a pandas DataFrame and needs pandas: pip install pandas") from exc
    return pd


def metric_term(kind: str, where: Slice):
    """The rate expression of a named audit metric on a slice."""
    if kind == "precision":
        return Ratio(Expression.of(Rate("tp_proportion", where)), Expression.of(Rate("ppr", where)))
    return Expression.of(Rate(kind, where))


def _cells(table: GroupTable, group_columns: list[str]) -> list[tuple[str, str, Slice, int]]:
    """``(attribute, group, slice, rows in the group)`` of the overall row and every group."""
    cells = [(ALL, ALL, Slice(), table.n)]
    for key in group_columns:
        values, codes = table.codes(key)
        counts = np.bincount(codes, minlength=len(values))
        cells += [(key, value, Slice.make({key: value}), int(c)) for value, c in zip(values, counts)]
    return cells


@validate_params(
    {
        "metrics": [list, tuple],
        "decisions": [StrOptions(set(DECISIONS))],
        "n_bootstrap": [Interval(Integral, 0, None, closed="left")],
        "confidence_level": [Interval(Real, 0, 1, closed="neither")],
        "random_state": ["random_state"],
        "n_jobs": [None, Integral],
        "weight_kind": [StrOptions({"sampling", "frequency"})],
    },
    prefer_skip_nested_validation=True,
)
def audit(
    estimator: BaseEstimator,
    X: ArrayLike | sp.spmatrix | sp.sparray,
    y: ArrayLike,
    *,
    groups: ArrayLike | dict[str, ArrayLike] | pd.DataFrame | None = None,
    constraints: Constraint | str | list | tuple | None = None,
    sample_weight: ArrayLike | None = None,
    baseline: ArrayLike | None = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
    decisions: str = "auto",
    n_bootstrap: int = 1000,
    confidence_level: float = 0.95,
    random_state: int | np.random.RandomState | None = None,
    n_jobs: int | None = None,
    weight_kind: str = "sampling",
) -> pd.DataFrame:
    """Audit a fitted binary classifier: per-group rates, their gaps to the overall rate, constraints.

    Works for any fitted scikit-learn binary classifier, deterministic or stochastic, skrate's
    or not. Every value comes with a percentile bootstrap interval: rows are resampled with
    replacement ``n_bootstrap`` times (in parallel with joblib) and every quantity is
    recomputed on each resample, so differences and ratios get paired intervals.

    Parameters
    ----------
    estimator : fitted classifier
        Binary classifier with ``classes_``; ``classes_[1]`` is the positive class.
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Features the estimator predicts on. When a DataFrame, constraints may name its columns.
    y : array-like of shape (n_samples,)
        True labels.
    groups : DataFrame, dict of arrays, or array-like of shape (n_samples,), default=None
        Group columns to audit (a 1-D array is the column ``"group"``). Every value of every
        column gets its own rows. The names ``"all"`` and ``"constraint"`` (the report's own
        rows) and ``"label"`` and ``"baseline"`` (filters of rates) are refused.
    constraints : Constraint, str, or list of them, default=None
        Rate constraints to evaluate, e.g. ``"tpr[race] >= 0.95 * tpr"``; group columns
        expand to one constraint per value these rows hold. A constraint naming a value no row
        holds (``fpr[race=Asian]`` on a batch without it) is reported as NaN, with a warning.
    sample_weight : array-like of shape (n_samples,), default=None
        Weights of the rows in every rate; negative weights are refused. A row of weight 0 is
        left out, as in ``fit``: a group value only such rows hold gets no rows of its own, and
        ``count`` does not count them.
    baseline : array-like of shape (n_samples,), default=None
        A baseline model's decisions, for churn, wins and losses constraints: 0/1, or labels
        of the estimator's ``classes_`` (e.g. ``old_model.predict(X)``), as in ``fit``.
    metrics : sequence of str, default=("ppr", "tpr", "fpr", "tnr", "fnr", "accuracy", "precision")
        Rates to report per group; also ``"npr"`` and ``"error_rate"``, and the aliases
        ``"coverage"``, ``"recall"`` and ``"error"`` (reported as ``ppr``, ``tpr`` and
        ``error_rate``). At least one: an empty sequence raises a ValueError.
    decisions : {"auto", "predict", "expected"}, default="auto"
        How decisions are read from the estimator: ``"predict"`` labels, or ``"expected"``
        rates from ``predict_proba(X)[:, 1]`` (the probability that a randomised classifier
        predicts 1). ``"auto"`` uses expected rates for skrate's stochastic estimators and
        ``predict`` for every other classifier. A stochastic model's ``predict`` gives the
        copies of a repeated row of features draws in turn, so with ``"predict"`` a group's
        rate can move with the order of such rows; expected rates do not.
    n_bootstrap : int, default=1000
        Number of bootstrap resamples; 0 skips the intervals (NaN bounds).
    confidence_level : float, default=0.95
        Coverage of the percentile intervals.
    random_state : int, RandomState instance or None, default=None
        Seeds the resamples; results do not depend on ``n_jobs``.
    n_jobs : int, default=None
        Parallel joblib workers for the resamples.
    weight_kind : {"sampling", "frequency"}, default="sampling"
        What ``sample_weight`` stands for in the intervals (the values do not depend on it).
        ``"sampling"``: rows are resampled and keep their weights, as for inverse-probability
        or survey weights. ``"frequency"``: an integer weight ``k`` is ``k`` identical rows
        (count-compressed data), and the resamples are those of the repeated rows; read as
        sampling weights, such counts give intervals about ``sqrt(E[k^2] / E[k])`` times too
        wide. Non-integer weights are refused with ``"frequency"``.

    Returns
    -------
    pandas.DataFrame
        A tidy frame, one row per (group, metric) and one per constraint, with columns
        ``attribute`` (group column, ``"all"`` or ``"constraint"``), ``group`` (its value, or
        the constraint's text), ``metric``, ``count`` (rows in the group), ``value``,
        ``difference`` (``value`` minus the overall rate), ``ratio`` (``value`` over the
        overall rate), ``bound`` (a constraint's right-hand side), ``violation`` (``value -
        bound`` for ``<=``, ``bound - value`` for ``>=``, in the constraint's own units, ratios
        included: ``> 0`` when a constraint is broken, NaN when a ratio is undefined) and
        ``*_low`` / ``*_high`` interval bounds of each. It
        prints as readable text tables and renders as HTML tables in notebooks, whose tables show
        ``count`` under the header ``rows`` and, for the constraints, ``group``, ``value`` and
        ``bound`` under ``constraint``, ``lhs`` and ``rhs`` (as ``constraint_report`` names them);
        ``pandas.DataFrame(result)`` is the plain frame.

    Notes
    -----
    The percentile intervals cover at about their level where a slice holds a few dozen rows
    of each kind its rates read. On smaller slices they undercover: a rate of 0 or 1 there
    (no false positive among a group's 30 rows) is the same in every resample, a zero-width
    interval that cannot hold the true rate, and a rate over very few rows (``tpr`` of a group
    with 2 positives) is undefined in the resamples that draw none of them. Those resamples
    are left out of the interval, which then understates the uncertainty; ``audit`` warns when
    they are more than 1% of the resamples. Read a small slice's interval with its ``count``.

    References
    ----------
    B. Efron, R. Tibshirani. An Introduction to the Bootstrap. Chapman & Hall, 1993 (percentile
    intervals).

    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization with
    Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and Other Goals.
    JMLR 20(172), 2019 (the rates and constraints).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skrate.datasets import load_compas
    >>> from skrate.metrics import audit
    >>> data = load_compas()
    >>> clf = LogisticRegression().fit(data.data, data.target)
    >>> report = audit(clf, data.data, data.target, groups=data.groups, n_bootstrap=100,
    ...                constraints="tpr[race] >= tpr - 0.05", random_state=0)
    >>> report.query("metric == 'tpr'")[["group", "value"]].round(3).to_numpy().tolist()[:2]
    [['all', 0.605], ['African-American', 0.707]]
    """
    pd = require_pandas("audit")
    if not metrics:
        raise ValueError(f"metrics is empty; name at least one rate to report per group, e.g. "
                         f"metrics=('tpr',), from {', '.join(sorted(_KINDS))}.")
    metrics = list(dict.fromkeys(_ALIASES.get(m, m) if isinstance(m, str) else m for m in metrics))
    unknown = [m for m in metrics if m not in _KINDS]
    if unknown:
        raise ValueError(f"Unknown audit metric {unknown[0]!r}; choose from {', '.join(sorted(_KINDS | set(_ALIASES)))}.")
    check_row_order(X, y=y, sample_weight=sample_weight, baseline=baseline)
    n = _num_samples(X)
    if n == 0:
        raise ValueError("X has 0 rows: audit measures rates on the rows it is given; pass at least one.")
    y01 = positive_labels(estimator, y)
    if y01.shape[0] != n:
        raise ValueError(f"y has {y01.shape[0]} entries but X has {n} rows.")
    weights = check_sample_weight(sample_weight, n)
    fractional = np.flatnonzero(weights != np.round(weights)) if weight_kind == "frequency" else []
    if len(fractional):
        row = int(fractional[0])
        raise ValueError(f"weight_kind='frequency' reads sample_weight as counts of identical rows, but "
                         f"sample_weight[{row}] = {float(weights[row])!r} is not an integer; pass "
                         "weight_kind='sampling' for weights that are not counts.")
    if weight_kind == "frequency" and weights.sum() >= 2.0**62:  # the resamples draw that many units
        raise ValueError(f"weight_kind='frequency' reads sample_weight as counts of identical rows, and "
                         f"they total {weights.sum():.3g}, more than the 2**62 units a resample can draw; "
                         "pass weight_kind='sampling', whose resamples draw rows.")
    baseline = check_baseline(baseline, np.asarray(estimator.classes_), n)
    table = GroupTable.from_input(groups, X, n)
    clash = sorted(set(table.given) & {ALL, CONSTRAINT})
    if clash:  # the report's attribute column marks the overall and constraint rows by these names
        raise ValueError(f"audit names its overall rows and its constraint rows 'all' and 'constraint' in the "
                         f"'attribute' column, so a group column cannot be called {clash[0]!r}; rename it, "
                         f"e.g. groups=groups.rename(columns={{{clash[0]!r}: 'my_{clash[0]}'}}).")
    p = decisions_of(estimator, X, decisions)
    if not np.all(np.isfinite(p)):
        raise ValueError(f"{type(estimator).__name__} returned non-finite predictions on X.")

    # as in fit, a row of weight 0 is a row dropped: no group value or count of its own
    data, p = RateData(y01, weights, table, baseline).without_weightless(p)
    cells = _cells(data.groups, table.given)
    cons = expand_constraints(as_constraints(constraints), data.groups)
    absent = {str(con): a for con in cons if (a := absent_values(con.rates, data.groups))}
    if absent:  # as constraint_report: a slice these rows do not reach is undefined, not an error
        warn(f"audit: no row holds the group value(s) {sorted({v for a in absent.values() for v in a})} "
             f"that {len(absent)} constraint(s) name, reported as NaN: {listed(absent)}.",
             UserWarning)
    measured = [con for con in cons if str(con) not in absent]

    # One set of cell sums per attribute, and one per set of columns constraints read: cells
    # crossing every audited column would reach one per row with a few columns. The blocks
    # share every resample (draws depend only on the seed), so differences stay paired.
    blocks: dict = {}
    for attribute, _, where, _ in cells:
        blocks.setdefault(attribute, []).extend(metric_term(kind, where) for kind in metrics)
    reading: dict[tuple, list] = {}
    for con in measured:
        reading.setdefault(tuple(sorted({k for r in con.rates for k, _ in r.slice.filters})), []).append(con)
    measured = [con for group in reading.values() for con in group]  # in the order of the blocks
    for columns, group in reading.items():
        blocks[CONSTRAINT, columns] = [t for con in group for t in (con.lhs, con.rhs)]
    seed = random_state if isinstance(random_state, Integral) else check_random_state(random_state).randint(2**31 - 1)
    parts = [RateParts(block, data, p) for block in blocks.values() if block]
    point = np.concatenate([part.values()[:, 0] for part in parts])
    frequency = data.sample_weight if weight_kind == "frequency" and sample_weight is not None else None
    samples = bootstrap_values(parts, n_bootstrap, seed, n_jobs, frequency)
    k = len(metrics)
    n_rates = len(cells) * k

    def interval(s):
        return percentile_interval(s, confidence_level)

    rates, rate_samples = point[:n_rates].reshape(len(cells), k), samples[:n_rates].reshape(len(cells), k, -1)
    overall, overall_samples = rates[0], rate_samples[0]
    records: list[dict[str, Any]] = []
    with np.errstate(invalid="ignore", divide="ignore"):
        diff, diff_s = rates - overall, rate_samples - overall_samples
        ratio = np.where(overall != 0, rates / np.where(overall != 0, overall, 1), np.nan)
        ratio_s = np.where(overall_samples != 0, rate_samples / np.where(overall_samples != 0, overall_samples, 1), np.nan)
    bounds = {name: interval(s.reshape(n_rates, -1)) for name, s in
              (("value", rate_samples), ("difference", diff_s), ("ratio", ratio_s))}
    for c, (attr, value, _, count) in enumerate(cells):
        for j, kind in enumerate(metrics):
            i = c * k + j
            records.append({
                "attribute": attr, "group": value, "metric": kind, "count": count,
                "value": rates[c, j], "value_low": bounds["value"][0][i], "value_high": bounds["value"][1][i],
                "difference": diff[c, j], "difference_low": bounds["difference"][0][i],
                "difference_high": bounds["difference"][1][i],
                "ratio": ratio[c, j], "ratio_low": bounds["ratio"][0][i], "ratio_high": bounds["ratio"][1][i],
            })
    # the share of resamples leaving each defined value undefined: its interval is over the others
    fragile: dict[str, float] = {}

    def note_undefined(name: str, point_value: float, draws: np.ndarray) -> None:
        share = float(np.isnan(draws).mean()) if draws.size else 0.0
        if not np.isnan(point_value) and share > _UNDEFINED_SHARE:
            fragile[name] = share

    for c, (attr, value, _, _) in enumerate(cells):
        for j, kind in enumerate(metrics):
            note_undefined(kind if attr == ALL else f"{kind}[{attr}={value}]", rates[c, j], rate_samples[c, j])
    if cons:
        # Violations from the two sides of each resample, so a ratio's is in its own units
        # (0.8 - precision), not the solvers' linear rearrangement.
        lhs, rhs = point[n_rates::2], point[n_rates + 1::2]
        lhs_s, rhs_s = samples[n_rates::2], samples[n_rates + 1::2]
        violation_s = np.array([constraint_violation(con, lhs_s[m], rhs_s[m]) for m, con in enumerate(measured)])
        low, high = interval(violation_s.reshape(len(measured), samples.shape[1]))
        at = {str(con): m for m, con in enumerate(measured)}
        undefined: list[str] = []
        over_no_positives: dict[str, list[str]] = {}  # why, by the model: a ratio's 0 / 0
        for con in cons:
            if str(con) in absent:
                records.append({"attribute": CONSTRAINT, "group": str(con), "metric": CONSTRAINT, "count": data.n})
                continue
            m = at[str(con)]
            if np.isnan(lhs[m]) or np.isnan(rhs[m]):
                ratio = con.ratio
                if ratio is not None and evaluate_term(ratio.denominator, data, p) == 0:
                    over_no_positives.setdefault(zero_denominator_reason(ratio.denominator), []).append(str(con))
                else:
                    undefined.append(str(con))
            records.append({
                "attribute": CONSTRAINT, "group": str(con), "metric": CONSTRAINT, "count": data.n,
                "value": lhs[m], "bound": rhs[m], "violation": constraint_violation(con, lhs[m], rhs[m]),
                "violation_low": low[m], "violation_high": high[m],
            })
            note_undefined(str(con), records[-1]["violation"], violation_s[m])
        # a slice with rows but none its rate divides by, or a ratio 0 / 0: no violation to report
        why = ([f"a slice holds no rows that a rate of theirs divides by (e.g. no positives, for a tpr), or only rows "
                f"of weight 0: {listed(undefined)}"] if undefined else []) + [
            f"{reason}: {listed(names)}" for reason, names in over_no_positives.items()]
        if why:
            warn(f"audit: {len(undefined) + sum(map(len, over_no_positives.values()))} constraint(s) are undefined "
                 f"on these rows, reported as NaN: {'; '.join(why)}.", UserWarning)
    if fragile:
        worst = sorted(fragile, key=fragile.get, reverse=True)
        shown = listed([f"{name} ({fragile[name]:.0%})" for name in worst])
        warn(f"audit: {len(fragile)} value(s) are undefined in more than {_UNDEFINED_SHARE:.0%} of the "
             f"{n_bootstrap} resamples, whose slice then holds no row a rate divides by (none of the "
             f"group for ppr, none of its positives for tpr): {shown}. Their intervals leave those resamples "
             "out and understate the uncertainty; read them with the slice's count.", UserWarning)
    frame = pd.DataFrame.from_records(records, columns=COLUMNS)
    from ._report import AuditFrame

    out = AuditFrame.wrap(frame)
    out.attrs.update({"estimator": type(estimator).__name__, "n_samples": data.n, "weighted": sample_weight is not None,
                      "n_weightless": n - data.n, "n_bootstrap": n_bootstrap,
                      "confidence_level": confidence_level,
                      "decisions": decisions if decisions != "auto" else
                      ("expected" if is_stochastic(estimator) else "predict")})
    return out
