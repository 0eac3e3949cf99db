"""Splitting off a held-out sample for the lambda-player, stratified by label and group."""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import train_test_split

from .problem import RateData
from .rates import Constraint
from .rates._slice import group_columns


def constraint_columns(constraints: list[Constraint]) -> list[str]:
    """The group columns the constraints' slices mention."""
    return group_columns(r.slice for c in constraints for r in c.rates)


def holdout_split(data: RateData, columns: list[str], fraction: float, random_state) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, held-out), stratified by the label and every group column in ``columns``.

    Every cell (label x group values) keeps its share on both sides, so each slice a constraint
    is measured on is represented in the held-out sample. A cell too small to split is an error
    that names it.
    """
    n = data.n
    parts = [data.y.astype(str)] + [data.groups.column(k) for k in columns]
    names = ["label"] + columns
    cells = np.array(["|".join(row) for row in zip(*parts)]) if n else np.array([])
    values, counts = np.unique(cells, return_counts=True)
    small = counts < 2
    if small.any():
        cell = dict(zip(names, values[small][0].split("|")))
        desc = ", ".join(f"{k}={v}" for k, v in cell.items())
        raise ValueError(f"The slice {desc} has {counts[small][0]} row(s): too small to split into training and "
                         f"held-out parts (validation_fraction={fraction}). Merge rare groups, or pass "
                         "validation_fraction=None.")
    idx = np.arange(n)
    try:
        return train_test_split(idx, test_size=fraction, stratify=cells, random_state=random_state)
    except ValueError as exc:
        raise ValueError(f"Cannot split off validation_fraction={fraction} stratified by label and "
                         f"{', '.join(columns) or 'no group'}: {exc}") from None
