"""Encode a raw table into the ``Bunch`` every skrate dataset loader returns."""

from __future__ import annotations

from importlib import resources

import numpy as np
from sklearn.utils import Bunch


def encode_bunch(raw: dict, *, numeric: list[str], categorical: list[str], groups: list[str],
                 target: np.ndarray, target_name: str, descr: str, as_frame: bool,
                 mean: np.ndarray | None = None, std: np.ndarray | None = None,
                 categories: dict | None = None) -> Bunch:
    """Standardize ``numeric`` and one-hot encode ``categorical`` columns of ``raw``.

    ``mean``, ``std`` and ``categories`` default to the table's own (pass a training file's
    to encode its test file alike; unseen categories get all zeros).
    """
    num = np.column_stack([raw[c].astype(float) for c in numeric])
    mean = num.mean(axis=0) if mean is None else mean
    std = num.std(axis=0) if std is None else std
    blocks, names = [(num - mean) / np.where(std > 0, std, 1.0)], list(numeric)
    for col in categorical:
        values = np.unique(raw[col]) if categories is None else categories[col]
        blocks.append((raw[col][:, None] == values[None, :]).astype(float))
        names += [f"{col}={v}" for v in values]
    data = np.hstack(blocks)
    group_cols = {g: raw[g].astype(str) for g in groups}
    frame = {c: (raw[c].astype(float) if c in numeric else raw[c].astype(str)) for c in numeric + categorical}
    frame[target_name] = target
    text = (resources.files("skrate.datasets") / descr).read_text()
    if as_frame:
        import pandas as pd

        data = pd.DataFrame(data, columns=names)
        target = pd.Series(target, name=target_name)
        group_cols = pd.DataFrame(group_cols)
        frame = pd.DataFrame(frame)
    return Bunch(data=data, target=target, groups=group_cols, feature_names=names, frame=frame, DESCR=text)
