"""Input validation with errors that say how to fix the input."""

from __future__ import annotations

import inspect
from contextlib import contextmanager

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.utils.validation import _check_sample_weight, validate_data

from ._frames import check_collected, frame_dtypes, is_frame


def _is_numeric(dtype) -> bool:
    # pandas extension dtypes (Int64, Float64, boolean, category, string) carry their kind
    # too; np.dtype() refuses them
    if hasattr(dtype, "is_numeric"):  # polars'
        return dtype.is_numeric() or str(dtype) == "Boolean"
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


def _converts(a) -> bool:
    """Whether ``a`` (array-like or sparse) converts to floats."""
    try:
        np.asarray(a.data if sp.issparse(a) else a, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return True


def _text_target_error(estimator, exc: Exception) -> ValueError:
    return ValueError(
        f"y has non-numeric values, and {type(estimator).__name__} fits a numeric target ({exc}). "
        "Pass numbers; class labels call for a classifier.")


def _canonical(X):
    """A sparse ``X`` in canonical form (sorted indices, no duplicate entries), a copy if it was
    not: scipy sorts and sums them in place on the first ``abs`` or product, which would rewrite
    the caller's matrix, and duplicates would count apart in per-entry statistics."""
    if sp.issparse(X) and not X.has_canonical_format:
        had_inf = np.isinf(X.data).any()
        X = X.copy()
        with np.errstate(over="ignore"):
            X.sum_duplicates()
        if not had_inf and np.isinf(X.data).any():  # the finiteness check saw the entries apart
            raise ValueError(
                "X has duplicate entries (stored more than once at one position) that add up past the "
                "largest float, so its dense form holds infinity. Rescale those entries, or sum "
                "them yourself (X.sum_duplicates()) to see which.")
    return X


def validate_numeric(estimator, X, y="no_validation", *, advice: str = "", **kwargs):
    """``validate_data`` for an estimator that fits numeric features; text in ``X`` is refused
    naming the offending columns (of a DataFrame) and how to encode them, text in a target
    asked to be numeric (``y_numeric=True``) naming ``y``. A sparse ``X`` comes back in
    canonical form (:func:`_canonical`)."""
    y_numeric = kwargs.get("y_numeric", False)
    check_collected(X=X)
    try:
        out = validate_data(estimator, X, y, **kwargs)
    except ValueError as exc:
        if "could not convert" not in str(exc):
            raise
        # X is converted first: if it converts, the failure was y's
        if y_numeric and _converts(X):
            raise _text_target_error(estimator, exc) from exc
        columns = [str(c) for c, t in frame_dtypes(X) if not _is_numeric(t)] if is_frame(X) else []
        where = f"the non-numeric columns {columns}" if columns else "non-numeric values"
        raise ValueError(
            f"X has {where}, and {type(estimator).__name__} fits numeric features ({exc}). Encode them "
            f"first, e.g. with OneHotEncoder in a Pipeline before it{advice}.") from exc
    out = (_canonical(out[0]), out[1]) if isinstance(out, tuple) else _canonical(out)
    if y_numeric and out[1].dtype.kind in "SU":
        # scikit-learn converts an object y to floats but passes an array of strings through
        try:
            return out[0], out[1].astype(np.float64)
        except ValueError as exc:
            raise _text_target_error(estimator, exc) from exc
    return out


# scikit-learn >= 1.7 refuses weights all 0 itself, 1.6 does not: refused here, alike in both
_ZERO_WEIGHTS_CHECKED_HERE = ({"allow_all_zero_weights": True}
                              if "allow_all_zero_weights" in inspect.signature(_check_sample_weight).parameters
                              else {})

# Weights whose largest entry lies beyond 2**+-_WEIGHT_RANGE are brought to unit size: their sums
# over up to 2**60 rows stay finite, and their products with rates stay normal floats
_WEIGHT_RANGE = 900


def check_sample_weight(sample_weight, n: int) -> np.ndarray:
    """``sample_weight`` as a float array of ``n`` finite entries (ones when None), refusing
    negative entries: a rate is a weighted share of rows, and a negative weight would make it
    one no data has (below 0, above 1, or a denominator of 0).

    Weights whose largest entry is beyond ``2**900`` or below ``2**-900`` are divided by the power
    of two of that entry, exactly: rates, shares of the total weight, are unchanged, and the
    totals no longer overflow (nor lose their digits to subnormals). The input is never modified.
    """
    return check_sample_weight_scaled(sample_weight, n)[0]


def check_sample_weight_scaled(sample_weight, n: int) -> tuple[np.ndarray, int]:
    """:func:`check_sample_weight` and the exponent ``e`` it divided by: the user's weights are
    the returned ones times ``2**e`` (``e = 0`` within range), for estimators that report a total
    weight in the user's units."""
    try:  # float64 whatever the input's dtype: float32 weights would sum in float32
        weights = _check_sample_weight(sample_weight, np.empty((n, 0)), dtype=np.float64,
                                       **_ZERO_WEIGHTS_CHECKED_HERE)
    except ValueError as exc:
        if "convert" not in str(exc):
            raise
        raise ValueError(f"sample_weight must hold numbers, one weight per row ({exc}).") from exc
    if (weights < 0).any():
        raise ValueError(f"sample_weight has negative entries (smallest {weights.min():.4g}, row "
                         f"{int(np.argmin(weights))}); it weighs each row's share, so it must be >= 0.")
    if not weights.any():
        raise ValueError(f"sample_weight is zero on all {n} rows: a row of weight 0 is a row removed, so "
                         "no row is left. Give the rows to use a positive weight.")
    _, top = np.frexp(weights.max())
    if abs(top) > _WEIGHT_RANGE:
        return np.ldexp(weights, -top), int(top)  # a new array: _check_sample_weight may return the input
    return weights, 0


def check_weighted_classes(codes: np.ndarray, classes: ArrayLike, estimator: str) -> None:
    """Refuse rows of positive weight that hold one class only. ``codes`` are those rows' class
    indices into ``classes``: a row of weight 0 is a row removed, so with the others a class
    held only by rows of weight 0 is gone, and ``fit`` refuses one class whatever ``y`` is."""
    held = np.unique(codes)
    if held.size < 2:
        raise ValueError(f"{estimator} needs rows of at least two classes with positive sample_weight; the rows "
                         f"of positive sample_weight hold only class {np.asarray(classes).tolist()[int(held[0])]!r} "
                         "(a row of weight 0 is a row removed).")


def positive_rows(sample_weight: np.ndarray | None) -> np.ndarray | None:
    """The rows of positive weight, or None when every row has one (or no weights are given):
    a row of weight 0 is a row dropped, as scikit-learn has it."""
    if sample_weight is None or np.all(sample_weight > 0):
        return None
    return np.flatnonzero(sample_weight > 0)


def without_weightless(X, y: np.ndarray, sample_weight: np.ndarray | None) -> tuple:
    """``(X, y, sample_weight, rows)`` on the rows of positive weight (:func:`positive_rows`,
    ``rows`` None when every row has one): a row of weight 0 is a row removed, also from what an
    estimator derives of its rows (column scales, calibration, trimmed capacities)."""
    rows = positive_rows(sample_weight)
    if rows is None:
        return X, y, sample_weight, None
    return X[rows], y[rows], sample_weight[rows], rows


def check_baseline(baseline, classes: np.ndarray, n: int) -> np.ndarray | None:
    """A baseline model's decisions as 0/1: given as labels of ``classes`` (``old_model.predict(X)``;
    read as labels whenever every value is one, also for classes such as ``[1, 2]`` whose labels
    look like decisions) or as 0/1 decisions (or bools)."""
    if baseline is None:
        return None
    b = np.asarray(baseline)
    if b.ndim != 1 or b.shape[0] != n:
        raise ValueError(f"baseline must hold one decision per row of X ({n}), got shape {b.shape}.")
    missing = np.flatnonzero(missing_entries(b))
    if missing.size:
        raise ValueError(f"baseline has {missing.size} missing decision(s) (None, NaN or NA), the first in row "
                         f"{missing[0]}; drop those rows or fill in the baseline model's decisions.")
    values = set(np.unique(b).tolist())
    if values <= set(classes.tolist()):
        return (b == classes[1]).astype(int)
    if not values <= {0, 1, True, False}:
        raise ValueError(f"baseline must hold 0/1 decisions (or the class labels {classes.tolist()}); "
                         f"got values {sorted(values)[:5]}.")
    return b.astype(int)


def missing_entries(col: np.ndarray) -> np.ndarray:
    """Missing entries: NaN, and in object columns also None, pandas' NA and NaT."""
    if col.dtype.kind == "f":
        return np.isnan(col)
    if col.dtype.kind in "mM":  # datetimes and durations
        return np.isnat(col)
    if col.dtype != object:
        return np.zeros(col.shape[0], dtype=bool)
    try:
        import pandas as pd
    except ImportError:  # without pandas there is no NA: None and NaN
        return np.frompyfunc(lambda v: v is None or v != v, 1, 1)(col).astype(bool)
    return np.asarray(pd.isna(col), dtype=bool)


def check_label_missing(y: ArrayLike, name: str = "y") -> None:
    """Refuse missing class labels, in ``y`` as given (before validation): scikit-learn checks
    float labels for NaN, but object labels with a None among strings fail later in its sort,
    and a ``pd.NA`` (nullable and Arrow-backed columns) in its ``bool(NA)``, with messages that
    name neither."""
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:  # a column vector, which validation ravels with a warning
        y = y.ravel()
    if y.ndim == 1:
        missing = np.flatnonzero(missing_entries(y))
        if missing.size:
            raise ValueError(f"{name} has {missing.size} missing label(s) (None, NaN or NA), the first in row "
                             f"{missing[0]}; drop those rows or fill in their labels.")
