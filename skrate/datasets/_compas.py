"""The bundled, processed ProPublica COMPAS dataset."""

from __future__ import annotations

from importlib import resources

import numpy as np
from sklearn.utils import Bunch

from ._tabular import encode_bunch

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
        ``feature_names``, ``frame`` (the columns the features are built
        from, unencoded: numeric ones as float, the others as strings; plus the 0/1 target; a
        DataFrame when ``as_frame``, else a dict of arrays) and ``DESCR``.

    References
    ----------
    J. Angwin, J. Larson, S. Mattu, L. Kirchner. Machine Bias. ProPublica, 2016.
    """
    raw = _read_raw()
    return encode_bunch(raw, numeric=NUMERIC, categorical=CATEGORICAL, groups=GROUPS,
                        target=raw[TARGET].astype(int), target_name=TARGET, descr="compas.rst",
                        as_frame=as_frame)
