"""A scikit-learn classifier as a cost-sensitive best-response oracle."""

from __future__ import annotations

import copy

import numpy as np
from sklearn import config_context
from sklearn.base import clone
from sklearn.dummy import DummyClassifier
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.pipeline import Pipeline
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import has_fit_parameter


def warm_startable(estimator) -> bool:
    """Whether ``warm_start=True`` makes a refit start from the previous solution.

    True for estimators with a ``warm_start`` parameter (LogisticRegression, SGDClassifier,
    MLPClassifier, ...), except ensembles whose warm start appends stages
    (``n_estimators``-style ensembles and HistGradientBoostingClassifier): there a warm start
    does not change the starting point of the fit but grows the model, so every candidate
    would be larger than the one before; those are fitted from a fresh clone instead.
    """
    params = estimator.get_params(deep=False)
    if "warm_start" not in params:
        return False
    return "n_estimators" not in params and not isinstance(estimator, HistGradientBoostingClassifier)


def sample_weight_key(estimator) -> str | None:
    """The ``fit`` keyword that weights the examples: ``sample_weight``, ``<last step>__sample_weight``
    for a :class:`~sklearn.pipeline.Pipeline` (its final estimator weighs them), or None."""
    if isinstance(estimator, Pipeline):
        name, last = estimator.steps[-1]
        if last is None or last == "passthrough":
            return None
        key = sample_weight_key(last)
        return None if key is None else f"{name}__{key}"
    return "sample_weight" if has_fit_parameter(estimator, "sample_weight") else None


def seeded(estimator, seed: int):
    """``estimator``, or a clone whose ``random_state`` parameters left None are set from ``seed``:
    its own and those of its steps and sub-estimators at any depth (``get_params(deep=True)``), so
    that a Pipeline's random step refits the same way too. Each gets its own seed drawn from
    ``seed``, as scikit-learn's ensembles seed their members."""
    unset = [key for key, value in estimator.get_params(deep=True).items()
             if value is None and (key == "random_state" or key.endswith("__random_state"))]
    if not unset:
        return estimator
    seeds = np.random.default_rng(seed).integers(np.iinfo(np.int32).max, size=len(unset))
    return clone(estimator).set_params(**{key: int(s) for key, s in zip(unset, seeds)})


def fit_weighted(model, X, y, sample_weight: np.ndarray):
    """``model.fit`` with the example weights under its :func:`sample_weight_key` (which must
    exist). The keyword names their target, a Pipeline's final step included, so the call is made
    with metadata routing off: with it on, a Pipeline would offer them to every step."""
    with config_context(enable_metadata_routing=False):
        return model.fit(X, y, **{sample_weight_key(model): sample_weight})


def _describe(estimator) -> str:
    if isinstance(estimator, Pipeline):
        return f"Pipeline (final step {type(estimator.steps[-1][1]).__name__})"
    return type(estimator).__name__


class CostSensitiveOracle:
    """Fit a copy of ``estimator`` on labels and sample weights: one call, one fitted model.

    Parameters
    ----------
    estimator : classifier
        Must accept ``sample_weight`` in ``fit`` (a Pipeline: its final step); never modified.
    warm_start : bool, default=True
        Start each fit from the previous one's solution when the estimator supports it
        (:func:`warm_startable`); the returned models are independent copies either way.

    Notes
    -----
    When every example with a positive weight carries the same label, the best response is
    the constant classifier; it is returned as a fitted ``DummyClassifier`` (many learners
    refuse a single class). Examples of zero weight are left out of the fit.
    """

    def __init__(self, estimator, warm_start: bool = True):
        if sample_weight_key(estimator) is None:
            raise ValueError(
                f"The estimator {_describe(estimator)} does not accept sample_weight in fit, which "
                "the oracle solvers need (the constrained problem is reduced to weighted classification). "
                "Choose a classifier whose fit takes sample_weight, e.g. LogisticRegression or "
                "HistGradientBoostingClassifier.")
        self.estimator = estimator
        self.warm_start = warm_start and warm_startable(estimator)
        self._previous = None

    def __call__(self, X, labels: np.ndarray, sample_weight: np.ndarray):
        active = sample_weight > 0
        present = np.unique(labels[active])
        if present.shape[0] < 2:
            label = int(present[0]) if present.shape[0] else 0
            return DummyClassifier(strategy="constant", constant=label).fit(_safe_indexing(X, [0]), [label])
        if not active.all():
            rows = np.flatnonzero(active)
            X, labels, sample_weight = _safe_indexing(X, rows), labels[rows], sample_weight[rows]
        if self.warm_start and self._previous is not None:
            model = copy.deepcopy(self._previous)
        else:
            model = clone(self.estimator)
            if self.warm_start:
                model.set_params(warm_start=True)
        fit_weighted(model, X, labels, sample_weight)
        if self.warm_start:
            self._previous = model
        return model
