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


def _cells(parts: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
    """A cell id per row for the combinations of values in ``parts``; and each column's values."""
    uniques, codes = zip(*(np.unique(np.asarray(p).astype(str), return_inverse=True) for p in parts))
    ids = np.ravel_multi_index(codes, [u.shape[0] for u in uniques])
    return ids, list(uniques)


def _describe(cell: int, names: list[str], uniques: list[np.ndarray]) -> str:
    index = np.unravel_index(cell, [u.shape[0] for u in uniques])
    return ", ".join(f"{k}={u[i]}" for k, u, i in zip(names, uniques, index))


def holdout_split(data: RateData, columns: list[str], fraction: float, random_state) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, held-out), stratified by the label and every group column in ``columns``.

    Every cell (label x group values) keeps its share on both sides, so each slice a constraint
    is measured on is represented in the held-out sample. A cell too small to split, or one
    the split leaves on a single side, is an error that names it.
    """
    names = ["label"] + columns
    cells, uniques = _cells([data.y] + [data.groups.column(k) for k in columns])
    values, counts = np.unique(cells, return_counts=True)
    fix = "Merge rare groups, change validation_fraction, or pass validation_fraction=None."
    small = counts < 2
    if small.any():
        raise ValueError(f"The slice {_describe(values[small][0], names, uniques)} has {counts[small][0]} row(s): "
                         f"too small to split into training and held-out parts (validation_fraction={fraction}). "
                         + fix)
    try:
        train, held = train_test_split(np.arange(data.n), test_size=fraction, stratify=cells,
                                       random_state=random_state)
    except ValueError as exc:
        raise ValueError(f"Cannot split off validation_fraction={fraction} stratified by label and "
                         f"{', '.join(columns) or 'no group'}: {exc}") from None
    # stratification rounds each cell's share, so a small cell can land on one side only
    one_sided = np.setxor1d(np.unique(cells[train]), np.unique(cells[held]))
    if one_sided.size:
        cell = one_sided[0]
        size = int(counts[values == cell][0])
        side = "training" if cell in cells[train] else "held-out"
        raise ValueError(f"The slice {_describe(cell, names, uniques)} has {size} rows, all of which "
                         f"validation_fraction={fraction} puts on the {side} side; every slice a constraint "
                         f"names needs rows on both. " + fix)
    return train, held
