"""Pick a hyper-parameter setting by the rank heuristic of Cotter et al. (2019), Eq. 18."""

from __future__ import annotations

import numpy as np

from ..solutions import best_iterate
from ..utils._warnings import warn


class RankRefit:
    """``refit`` callable for ``GridSearchCV`` trading error against constraint violation.

    Every setting is ranked by its mean cross-validated error and by its mean maximum
    constraint violation (all settings that meet the constraints share the best violation
    rank); the pick minimises the larger of its two ranks, ties going to the lower error and
    exact ties to the first setting, as scikit-learn's ``refit`` by one score does.
    The setting picked is never beaten by another setting on both error and violation.

    A NaN score (GridSearchCV averages in the NaN of a fold whose scorer failed, with
    ``error_score=np.nan``, or whose ratio was undefined) puts its setting last on both ranks.
    When every violation score is NaN, RankRefit warns and picks the lowest error (and when
    every error score is NaN, the lowest violation); when both are, or when every setting lacks
    one score or the other, it raises. An infinite score (a ratio constraint met by a model
    with no losses) is no failure: it ranks by its sign.

    Parameters
    ----------
    error : str, default="error"
        Name of the error scorer in ``scoring`` (any scorer, higher is better as in
        scikit-learn: e.g. ``make_rate_scorer("error", greater_is_better=False)`` or
        ``"accuracy"``).
    violation : str, default="violation"
        Name of the violation scorer in ``scoring``, from
        :func:`skrate.metrics.make_violation_scorer` (its score is minus the violation).

    References
    ----------
    A. Cotter, H. Jiang, M. Gupta, S. Wang, T. Narayan, S. You, K. Sridharan. Optimization with
    Non-Differentiable Constraints with Applications to Fairness, Recall, Churn, and Other Goals.
    JMLR 20(172), 2019, Section 5, Eq. (18).

    Examples
    --------
    >>> from sklearn.model_selection import GridSearchCV
    >>> from skrate import ConstrainedClassifier
    >>> from skrate.metrics import make_rate_scorer, make_violation_scorer
    >>> from skrate.model_selection import RankRefit
    >>> search = GridSearchCV(
    ...     ConstrainedClassifier(constraints="tpr[race] >= tpr - 0.05"),
    ...     {"alpha": [1e-4, 1e-2]},
    ...     scoring={"error": make_rate_scorer("error", greater_is_better=False),
    ...              "violation": make_violation_scorer("tpr[race] >= tpr - 0.05")},
    ...     refit=RankRefit("error", "violation"))
    """

    def __init__(self, error: str = "error", violation: str = "violation"):
        self.error = error
        self.violation = violation

    def __call__(self, cv_results: dict) -> int:
        err, vio = (self._column(cv_results, name) for name in (self.error, self.violation))
        # Scores are "higher is better": negate back to error and violation.
        objective, violation = -err, -vio
        # only NaN is a failed score: an infinite one is a ratio beyond every bound (wins, no losses)
        failed = [name for name, v in ((self.error, err), (self.violation, vio)) if np.isnan(v).all()]
        if failed:  # a rank over NaN alone ties everything: rank by the other score, or give up
            some = [name for name in failed if self._scored_in_some_fold(cv_results, name)]
            every = [name for name in failed if name not in some]
            parts = []
            if some:
                parts.append(f"{' and '.join(map(repr, some))} failed in some folds only (a mean over folds is NaN "
                             "when one is): a fit that failed there (error_score=nan), e.g. a group value its "
                             "training rows lack, or a ratio undefined on its test rows")
            if every:
                parts.append(f"{' and '.join(map(repr, every))} failed (or a ratio it measures was undefined) in "
                             "every fold, e.g. groups or baseline not routed to the scorer "
                             "(scorer.set_score_request(groups=True) under "
                             "sklearn.set_config(enable_metadata_routing=True))")
            causes = (f"every {' and every '.join(map(repr, failed))} score is NaN: {'; '.join(parts)}; "
                      "GridSearchCV's warnings name the error")
            if len(failed) == 2:
                raise ValueError(f"RankRefit cannot pick a setting: {causes}.")
            other, values = (self.violation, violation) if failed[0] == self.error else (self.error, objective)
            warn(f"RankRefit: {causes}. Picking the lowest {other!r} alone.", UserWarning)
            return int(np.nanargmin(values))
        # Settings whose scores failed (NaN) rank last on both.
        bad = np.isnan(objective) | np.isnan(violation)
        if bad.all():  # each setting lacks one score or the other: no two can be compared
            raise ValueError(f"RankRefit cannot pick a setting: every setting has a NaN {self.error!r} or "
                             f"{self.violation!r} score (the scorer failed, or a ratio it measures was undefined, "
                             "in some fold); GridSearchCV's warnings name the error.")
        objective = np.where(bad, np.inf, objective)
        violation = np.where(bad, np.inf, violation)
        # reversed: best_iterate gives full ties to the last iterate, a search to the first setting
        pick = objective.shape[0] - 1 - best_iterate(objective[::-1], violation[None, ::-1])
        vio_pos = np.maximum(violation, 0.0)
        # Move to a setting that dominates the pick, if any (possible only through exact ties).
        while True:
            better = ((objective <= objective[pick]) & (vio_pos <= vio_pos[pick]) &
                      ((objective < objective[pick]) | (vio_pos < vio_pos[pick])))
            if not better.any():
                return int(pick)
            candidates = np.flatnonzero(better)
            pick = candidates[np.lexsort((vio_pos[candidates], objective[candidates]))[0]]

    @staticmethod
    def _scored_in_some_fold(cv_results: dict, name: str) -> bool:
        """Whether some fold scored ``name`` for some setting: its means are NaN without the
        scorer failing everywhere."""
        splits = [np.asarray(v, dtype=float) for k, v in cv_results.items()
                  if k.startswith("split") and k.endswith(f"_test_{name}")]
        return any(np.isfinite(v).any() for v in splits)

    @staticmethod
    def _column(cv_results: dict, name: str) -> np.ndarray:
        key = f"mean_test_{name}"
        if key not in cv_results:
            scores = sorted(k[len("mean_test_"):] for k in cv_results if k.startswith("mean_test_"))
            raise ValueError(f"RankRefit needs the scorer {name!r} in GridSearchCV's scoring; the search "
                             f"scored {scores}. Pass scoring={{'{name}': ..., ...}} or name the scorers "
                             "RankRefit(error=..., violation=...).")
        return np.asarray(cv_results[key], dtype=float)

    def __repr__(self) -> str:
        return f"RankRefit(error={self.error!r}, violation={self.violation!r})"
