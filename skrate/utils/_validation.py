"""Input validation with errors that say how to fix the input."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import validate_data


def _is_numeric(dtype) -> bool:
    try:
        return np.dtype(dtype).kind in "biufc"
    except TypeError:  # pandas extension types: category, string
        return False


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
