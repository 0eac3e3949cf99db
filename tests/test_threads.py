"""Fits on threads leave the process's warning state alone.

``warnings.catch_warnings`` swaps the process-wide filters and hook; two threads whose blocks
overlap (joblib's threading backend, Dask's worker threads) restore each other's state, which can
leave a filter (``ignore UserWarning``) or a record list installed for good.
"""

import sys
import threading
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from skrate import DROClassifier, MetricOptimizer
from skrate.metrics import audit


def _skrate_catch_warnings_on_a_thread(monkeypatch, fit):
    """Run ``fit`` on a worker thread; the skrate modules that called ``catch_warnings`` there."""
    callers, original = [], warnings.catch_warnings

    def watched(*args, **kwargs):  # still the real one: pytest's hooks use it too
        callers.append(sys._getframe(1).f_globals.get("__name__", ""))
        return original(*args, **kwargs)

    monkeypatch.setattr(warnings, "catch_warnings", watched)
    errors = []

    def run():
        try:
            with warnings.catch_warnings():  # the thread's own warnings are not this test's subject
                warnings.simplefilter("ignore")
                fit()
        except BaseException as exc:  # noqa: BLE001 - re-raised on the main thread
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return [c for c in callers if c.startswith("skrate")]


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + rng.normal(size=n) > 0.4).astype(int)
    return X, y, rng.choice(["a", "b"], n)


FITS = {
    # cv="auto" cross-fits the built-in logistic regression, its folds made quietly
    "MetricOptimizer": lambda X, y, g: MetricOptimizer("g_mean", max_iter=20, random_state=0).fit(X, y),
    # a large radius solves the max-loss problem with Clarabel, its accuracy warning ignored
    "DROClassifier": lambda X, y, g: DROClassifier(radius=200.0).fit(X, y),
    # a slice some resamples leave empty has NaN samples, whose quantiles would warn
    "audit": lambda X, y, g: audit(LogisticRegression().fit(X, y), X, y, groups=np.where(np.arange(len(y)) < 2, "c", g),
                                   n_bootstrap=50, random_state=0),
}


@pytest.mark.parametrize("name", list(FITS))
def test_no_catch_warnings_off_the_main_thread(monkeypatch, name):
    X, y, g = _data()
    assert _skrate_catch_warnings_on_a_thread(monkeypatch, lambda: FITS[name](X, y, g)) == []
