"""Input validation with errors that say how to fix the input."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
from sklearn.utils.validation import _check_sample_weight, validate_data


def _is_numeric(dtype) -> bool:
    # pandas extension dtypes (Int64, Float64, boolean, category, string) carry their kind
    # too; np.dtype() refuses them
    kind = getattr(dtype, "kind", None)
    if kind is None:
        try:
            kind = np.dtype(dtype).kind
        except TypeError:
            return False
    return kind in "biufc"


@contextmanager
def unfitted_on_error(estimator):
    """Leave ``estimator`` unfitted when the fit inside the block raises.

    ``validate_data`` sets ``n_features_in_`` before anything can fail, and a refit would
    otherwise keep the previous fit's attributes next to it: either way ``check_is_fitted``
    would pass on a mix of states.
    """
    try:
        yield
    except BaseException:
        for name in [k for k in vars(estimator) if k.endswith("_") and not k.startswith("__")]:
            delattr(estimator, name)
        raise


def validate_numeric(estimator, X, y="no_validation", *, advice: str = "", **kwargs):
    """``validate_data`` for an estimator that fits numeric features; text in ``X`` is refused
    naming the offending columns (of a DataFrame) and how to encode them."""
    try:
        return validate_data(estimator, X, y, **kwargs)
    except ValueError as exc:
        if "could not convert" not in str(exc):
            raise
        dtypes = getattr(X, "dtypes", None)
        columns = [] if dtypes is None else [str(c) for c, t in dtypes.items() if not _is_numeric(t)]
        where = f"the non-numeric columns {columns}" if columns else "non-numeric values"
        raise ValueError(
            f"X has {where}, and {type(estimator).__name__} fits numeric features ({exc}). Encode them "
            f"first, e.g. with OneHotEncoder in a Pipeline before it{advice}.") from exc


def check_sample_weight(sample_weight, n: int) -> np.ndarray:
    """``sample_weight`` as a float array of ``n`` finite entries (ones when None), refusing
    negative entries: a rate is a weighted share of rows, and a negative weight would make it
    one no data has (below 0, above 1, or a denominator of 0)."""
    weights = _check_sample_weight(sample_weight, np.empty((n, 0)))
    if (weights < 0).any():
        raise ValueError(f"sample_weight has negative entries (smallest {weights.min():.4g}, row "
                         f"{int(np.argmin(weights))}); rates weigh examples by it, so it must be >= 0.")
    return weights


def check_baseline(baseline, classes: np.ndarray, n: int) -> np.ndarray | None:
    """A baseline model's decisions as 0/1: given as labels of ``classes`` (``old_model.predict(X)``;
    read as labels whenever every value is one, also for classes such as ``[1, 2]`` whose labels
    look like decisions) or as 0/1 decisions (or bools)."""
    if baseline is None:
        return None
    b = np.asarray(baseline)
    if b.ndim != 1 or b.shape[0] != n:
        raise ValueError(f"baseline must hold one decision per row of X ({n}), got shape {b.shape}.")
    values = set(np.unique(b).tolist())
    if values <= set(classes.tolist()):
        return (b == classes[1]).astype(int)
    if not values <= {0, 1, True, False}:
        raise ValueError(f"baseline must hold 0/1 decisions (or the class labels {classes.tolist()}); "
                         f"got values {sorted(values)[:5]}.")
    return b.astype(int)
