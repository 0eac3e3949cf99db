"""Find the public estimators of skrate."""

from __future__ import annotations

import inspect

from sklearn.base import BaseEstimator


def all_estimators() -> list[tuple[str, type]]:
    """Return ``(name, class)`` for every public estimator exported by :mod:`skrate`.

    Returns
    -------
    list of (str, type)
        Sorted by name.
    """
    import skrate

    return sorted(
        (name, obj)
        for name in skrate.__all__
        if inspect.isclass(obj := getattr(skrate, name)) and issubclass(obj, BaseEstimator)
    )
