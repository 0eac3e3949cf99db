"""The bundled, processed ProPublica COMPAS dataset."""

from __future__ import annotations

from importlib import resources

import numpy as np
from sklearn.utils import Bunch

NUMERIC = ["age", "priors_count", "juv_fel_count", "juv_misd_count", "juv_other_count"]
CATEGORICAL = ["sex", "race", "age_cat", "c_charge_degree"]
GROUPS = ["race", "sex"]
TARGET = "two_year_recid"


def _read_raw() -> dict[str, np.ndarray]:
    import csv
    import gzip

    path = resources.files("skrate.datasets") / "compas.csv.gz"
    with path.open("rb") as fh, gzip.open(fh, "rt", newline="") as text:
        rows = list(csv.reader(text))
    header, body = rows[0], np.array(rows[1:], dtype=object)
    return {name: body[:, j] for j, name in enumerate(header)}


def load_compas(*, as_frame: bool = False) -> Bunch:
    """Load the processed ProPublica COMPAS two-year recidivism data (5,278 rows).

    Parameters
    ----------
    as_frame : bool, default=False
        If True, ``data``, ``target`` and ``groups`` are pandas objects (pandas required).

    Returns
    -------
    Bunch
        ``data`` (standardized numerics and one-hot categoricals, float), ``target``
        (0/1 int), ``groups`` (dict of string arrays ``race`` and ``sex``, or a DataFrame),
        ``feature_names``, ``frame`` (raw columns, a DataFrame when ``as_frame``, else a dict
        of arrays) and ``DESCR``.

    References
    ----------
    J. Angwin, J. Larson, S. Mattu, L. Kirchner. Machine Bias. ProPublica, 2016.
    """
    raw = _read_raw()
    numeric = np.column_stack([raw[c].astype(float) for c in NUMERIC])
    numeric = (numeric - numeric.mean(axis=0)) / numeric.std(axis=0)
    blocks, names = [numeric], list(NUMERIC)
    for col in CATEGORICAL:
        values = np.unique(raw[col])
        blocks.append((raw[col][:, None] == values[None, :]).astype(float))
        names += [f"{col}={v}" for v in values]
    data = np.hstack(blocks)
    target = raw[TARGET].astype(int)
    groups = {g: raw[g].astype(str) for g in GROUPS}
    frame = {c: (raw[c].astype(float) if c in NUMERIC else raw[c].astype(str)) for c in NUMERIC + CATEGORICAL}
    frame[TARGET] = target
    descr = (resources.files("skrate.datasets") / "compas.rst").read_text()
    if as_frame:
        import pandas as pd

        data = pd.DataFrame(data, columns=names)
        target = pd.Series(target, name=TARGET)
        groups = pd.DataFrame(groups)
        frame = pd.DataFrame(frame)
    return Bunch(data=data, target=target, groups=groups, feature_names=names, frame=frame, DESCR=descr)
