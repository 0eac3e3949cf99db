"""Splitting off a held-out sample for the lambda-player, stratified by label and group."""

from __future__ import annotations

import numpy as np
from sklearn.model_selection import train_test_split

from .problem import RateData
from .problem._compile import slice_mask
from .rates import Constraint, Rate
from .rates._expression import RATE_KINDS
from .rates._slice import BASELINE, LABEL, Slice, group_columns
from .utils._warnings import listed


def constraint_columns(constraints: list[Constraint]) -> list[str]:
    """The group columns the constraints' slices mention."""
    return group_columns(r.slice for c in constraints for r in c.rates)


def check_goal_columns(objective, constraints: list[Constraint], data: RateData) -> None:
    """Validate every group column the goals filter on or expand over on all rows, before a
    split: an error (a missing value) then counts rows as they were given."""
    keys = {k for c in constraints for k in c.expand_keys}
    keys |= set(constraint_columns(constraints)) | set(group_columns(r.slice for r in objective.rates))
    for key in sorted(keys):
        data.groups.codes(key)  # validates the column (missing values, one per row)


def check_held_out_values(constraints: list[Constraint], train: RateData, held: RateData, source: str) -> None:
    """Refuse held-out rows whose values of a column the constraints expand over differ from the
    training rows': the constraints are expanded over the training rows' values, so a value only
    held out would be neither trained nor checked, and one never held out could not be checked."""
    for key in sorted({k for c in constraints for k in c.expand_keys}):
        trained, checked = set(train.groups.values(key)), set(held.groups.values(key))
        for values, where in ((checked - trained, "held-out rows and no training row"),
                              (trained - checked, "training rows and no held-out row")):
            if values:
                raise ValueError(f"On the {held.n} held-out rows ({source}): the value(s) {sorted(values)} of the "
                                 f"group column {key!r}, which constraints expand over, are held by {where}; "
                                 "every value needs rows on both sides. Move rows of it to the other side, or "
                                 "leave them out.")


def _named_slices(constraints: list[Constraint], data: RateData) -> dict[str, np.ndarray]:
    """The rows each rate of the constraints reads (its groups, and the label its kind or its
    slice names; the baseline's decisions are not split on): description -> rows. A ``tpr``
    reads no negative row, so a slice's negatives need not split for it."""
    out = {}
    for con in constraints:
        for rate in con.rates:
            filters = tuple((k, v) for k, v in rate.slice.filters if k != BASELINE)
            label = RATE_KINDS[rate.kind][1]
            named = [f"label={label}"] if label is not None and LABEL not in dict(filters) else []
            name = ", ".join(named + [f"{k}={'|'.join(v)}" for k, v in filters]) or "all rows"
            out[name] = slice_mask(Rate(rate.kind, Slice(filters)), data)
    return out


def holdout_split(data: RateData, constraints: list[Constraint], fraction: float,
                  random_state) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, held-out), stratified by the label and the groups the constraints name.

    Rows are stratified by label x the values of every group column the (expanded)
    constraints filter on, pooling cells of a single row, so every slice keeps its share on
    both sides. The rows each rate of a constraint reads (its slice, of the label its kind
    reads: positives for ``tpr``) must lie on both sides; a slice that is too small to split,
    or that the split leaves on one side, is an error that names it. Cells no constraint
    names (a rare combination of two columns that are constrained separately, or the
    negatives of a slice only ``tpr`` reads) need not split.
    """
    fraction = float(fraction)  # train_test_split takes a Python float, not a numpy float32
    columns = constraint_columns(constraints)
    groups, _ = data.groups.cells(columns)
    cells = 2 * groups + data.y  # label x groups
    values, counts = np.unique(cells, return_counts=True)
    strata = np.where(np.isin(cells, values[counts < 2]), -1, cells)  # pool single-row cells
    if (strata == -1).sum() == 1:
        strata[strata == -1] = values[np.argmax(counts)]
    fix = "Merge rare groups, change validation_fraction, or pass validation_fraction=None."
    slices = {name: rows for name, rows in _named_slices(constraints, data).items() if rows.any()}
    single = [name for name, rows in slices.items() if rows.sum() < 2]
    if single:
        which = (f"The slice {single[0]} has" if len(single) == 1
                 else f"The {len(single)} slices {listed(single)} have")
        raise ValueError(f"{which} 1 row: too small to split into training and held-out "
                         f"parts (validation_fraction={fraction}). Merge rare groups, or pass "
                         "validation_fraction=None.")
    by = f"label and {', '.join(columns)}" if columns else "label"
    n_strata = np.unique(strata).size
    n_held = int(np.ceil(fraction * data.n))
    if min(n_held, data.n - n_held) < n_strata:
        # scikit-learn's message counts the strata as "classes"
        least = n_strata / data.n
        use = (f"Use a validation_fraction between {least:.3g} and {1 - least:.3g}, merge rare groups"
               if least <= 0.5 else "Merge rare groups")
        raise ValueError(f"Cannot split off validation_fraction={fraction} stratified by {by}: its "
                         f"{n_strata} strata need a row each on both sides, and {n_held} of {data.n} rows "
                         f"would be held out. {use}, or pass validation_fraction=None.")
    try:
        train, held = train_test_split(np.arange(data.n), test_size=fraction, stratify=strata,
                                       random_state=random_state)
    except ValueError as exc:
        raise ValueError(f"Cannot split off validation_fraction={fraction} stratified by {by}: {exc}") from None
    in_held = np.zeros(data.n, dtype=bool)
    in_held[held] = True
    # stratification rounds each cell's share, so a small slice can land on one side only
    one_sided = [f"{name} ({int(rows.sum())} rows, all {'held-out' if in_held[rows].all() else 'training'})"
                 for name, rows in slices.items() if in_held[rows].all() or not in_held[rows].any()]
    if one_sided:
        raise ValueError(f"validation_fraction={fraction} puts every row of {len(one_sided)} slice"
                         f"{'s' * (len(one_sided) > 1)} on one side: {listed(one_sided)}; every slice a "
                         "constraint names needs rows on both. " + fix)
    return train, held
