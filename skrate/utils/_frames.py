"""DataFrames of pandas and polars, read through the few operations skrate needs of them.

scikit-learn takes both; skrate reads a frame's columns by name (group columns, the dtypes
that mark text), passes a frame on to a user's estimator as it is, and converts it to floats.
"""

from __future__ import annotations

import numpy as np


def is_polars(obj) -> bool:
    """Whether ``obj`` is a polars object (DataFrame, Series), without importing polars."""
    return type(obj).__module__.partition(".")[0] == "polars"


def is_frame(obj) -> bool:
    """Whether ``obj`` is a pandas or a polars DataFrame: named columns, read by name."""
    if is_polars(obj):  # a LazyFrame's ``columns`` resolves its query plan, with a warning
        return hasattr(type(obj), "iter_columns")
    return hasattr(obj, "columns") and hasattr(obj, "iloc")


def check_collected(**inputs) -> None:
    """Refuse a polars LazyFrame, naming its keyword: it is a query, not data, and scikit-learn's
    conversion to an array fails on it with a message about sequences."""
    for name, obj in inputs.items():
        if is_polars(obj) and hasattr(type(obj), "collect") and not hasattr(type(obj), "iter_columns"):
            raise TypeError(f"{name} is a polars LazyFrame, a query whose rows are not computed yet; "
                            f"pass {name}.collect() instead.")


def frame_items(frame) -> list[tuple]:
    """``(label, column)`` of every column of a pandas or polars DataFrame, in order (a repeated
    pandas label as often as it occurs)."""
    if is_polars(frame):
        return [(column.name, column) for column in frame.iter_columns()]
    return list(frame.items())


def frame_dtypes(frame) -> list[tuple]:
    """``(label, dtype)`` of every column of a DataFrame, as :func:`frame_items` orders them."""
    if is_polars(frame):
        return list(zip(frame.columns, frame.dtypes))
    return list(frame.dtypes.items())


def frame_floats(frame) -> np.ndarray:
    """A frame of numbers as a float array, a missing value (``pd.NA``, a polars null) as NaN."""
    if is_polars(frame):
        import polars as pl  # importable: frame is one of its objects

        # polars before 1.13 takes its own dtypes only, not Python's float
        return np.asarray(frame.cast(pl.Float64).fill_null(np.nan).to_numpy(), dtype=float)
    return frame.to_numpy(dtype=float, na_value=np.nan)
