"""UCI Adult (census income), downloaded once, verified and cached like scikit-learn's fetchers."""

from __future__ import annotations

import csv
import hashlib
import http.client
import os
import shutil
import tempfile
import urllib.request
from pathlib import Path

import numpy as np
from sklearn.datasets import get_data_home
from sklearn.utils import Bunch

from ._tabular import encode_bunch

COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
           "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week",
           "native-country", "income"]
NUMERIC = ["age", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
CATEGORICAL = ["workclass", "education", "marital-status", "occupation", "relationship", "race", "sex",
               "native-country"]
GROUPS = ["sex", "race"]
TARGET = "income"
_BASE = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"
# (file name, URL, SHA-256 of the UCI file)
REMOTE = {
    "adult.data": (_BASE + "adult.data", "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d"),
    "adult.test": (_BASE + "adult.test", "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05"),
}
SUBDIR = "skrate_adult"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download(url: str, checksum: str, target: Path) -> None:
    """Fetch ``url`` into ``target`` through a temporary file; keep it only if its checksum matches."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".part")
    try:
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=60) as response:
                shutil.copyfileobj(response, out)
        except (OSError, http.client.HTTPException) as exc:  # URLError, a reset or cut transfer, a timeout
            raise OSError(f"Could not download {target.name} from {url} ({exc}). Nothing was cached; retry when "
                          f"online, or download adult.data and adult.test from {_BASE} yourself and place them "
                          f"in data_home (or in {target.parent}).") from exc
        found = _sha256(Path(tmp))
        if found != checksum:
            raise OSError(f"The file downloaded from {url} has SHA-256 {found}, expected {checksum}: "
                          "the download is corrupt or the remote file changed. Nothing was cached; "
                          "retry, or place adult.data and adult.test in data_home yourself.")
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _locate(data_home, download_if_missing: bool) -> Path:
    """The folder holding adult.data and adult.test: ``data_home`` itself or its cache subfolder."""
    if data_home is not None:
        data_home = Path(data_home).expanduser()  # as get_data_home reads it
        if data_home.exists() and not data_home.is_dir():
            raise NotADirectoryError(f"data_home={str(data_home)!r} is a file: pass the folder that holds adult.data "
                                     "and adult.test, or where they are to be cached.")
        if all((data_home / name).is_file() for name in REMOTE):
            return data_home
    # scikit-learn's data folder, created only to download into
    home = data_home if data_home is not None else Path(
        os.environ.get("SCIKIT_LEARN_DATA", os.path.join("~", "scikit_learn_data"))).expanduser()
    folder = home / SUBDIR
    missing = [name for name in REMOTE if not (folder / name).is_file()]
    if missing and download_if_missing:
        folder = Path(get_data_home(data_home)) / SUBDIR
    if missing and not download_if_missing:
        where = f"{folder} (missing {', '.join(missing)})"
        if data_home is not None:  # the folder given is read as is first: say what it lacks too
            lacks = [name for name in REMOTE if not (data_home / name).is_file()]
            where = f"{data_home} (missing {', '.join(lacks)}) nor in {where}"
        raise OSError(f"UCI Adult is not in {where} and download_if_missing=False; place adult.data "
                      "and adult.test in data_home.")
    for name in missing:
        url, checksum = REMOTE[name]
        _download(url, checksum, folder / name)
    return folder


def _read(path: Path) -> dict[str, np.ndarray]:
    """Rows of a UCI Adult file with no missing value: fields stripped, the test labels' '.' removed."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:  # -sig: a byte-order mark some editors write
            rows = [[field.strip() for field in row] for row in csv.reader(fh, skipinitialspace=True)]
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path} is not the UCI Adult text file (not UTF-8: {exc}); replace it with the file "
                         f"from {_BASE}.") from exc
    # blank lines and the test file's "|1x3 Cross validator" header are no rows; any other line
    # without the 15 fields, or with a label that is none, is a truncated or edited file
    broken = [i + 1 for i, r in enumerate(rows) if any(r) and not r[0].startswith("|") and (
        len(r) != len(COLUMNS) or r[-1].rstrip(".") not in (">50K", "<=50K"))]
    if broken:
        raise ValueError(f"{path}: {len(broken)} line(s) do not hold the {len(COLUMNS)} UCI Adult fields ending in "
                         f"the label >50K or <=50K, the first at line {broken[0]}: the file is truncated or edited. "
                         f"Delete it to download it again, or replace it with the file from {_BASE}.")
    rows = [r for r in rows if len(r) == len(COLUMNS)]
    bad = [r for r in rows if "?" in r]
    rows = [r for r in rows if "?" not in r]
    if not rows:
        raise ValueError(f"{path} holds no complete row of the {len(COLUMNS)} UCI Adult columns "
                         f"({len(bad)} rows with missing values).")
    body = np.array(rows, dtype=object)
    out = {name: body[:, j].astype(str) for j, name in enumerate(COLUMNS)}
    for name in NUMERIC:
        try:
            finite = np.isfinite(out[name].astype(float)).all()
        except ValueError as exc:
            raise ValueError(f"{path}: the column {name!r} holds a value that is no number ({exc}).") from exc
        if not finite:
            raise ValueError(f"{path}: the column {name!r} holds a value that is no finite number (nan or inf).")
    out[TARGET] = np.char.rstrip(out[TARGET], ".")
    return out


def fetch_adult(data_home: str | os.PathLike | None = None, *, subset: str = "train", as_frame: bool = False,
                download_if_missing: bool = True) -> Bunch:
    """Load the UCI Adult census income data, downloading it on first use.

    The files are fetched once from the UCI repository, verified against their SHA-256
    checksums and cached in ``data_home`` (scikit-learn's data folder by default, subfolder
    ``skrate_adult``). A ``data_home`` that already holds ``adult.data`` and ``adult.test``
    is read as is, without download or checksum.

    Processing follows the benchmark protocol: rows with a missing value (``?``) are dropped,
    ``fnlwgt`` is dropped, numeric columns are standardized with the training file's mean
    and deviation and categorical ones one-hot encoded with the training file's categories
    (unseen ones in the test file get all zeros). The group attributes stay in the features.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder holding (or to hold) the files.
    subset : {"train", "test", "all"}, default="train"
        ``adult.data`` (30,162 complete rows), ``adult.test`` (15,060) or both, training rows first.
    as_frame : bool, default=False
        If True, ``data``, ``target`` and ``groups`` are pandas objects (pandas required).
    download_if_missing : bool, default=True
        If False, raise an OSError when the files are not there instead of downloading them.

    Returns
    -------
    Bunch
        ``data`` (float features), ``target`` (1 for income >50K), ``groups`` (``sex`` and
        ``race`` as string arrays, or a DataFrame), ``feature_names``, ``frame`` (the
        columns the features are built from, unencoded: numeric ones as float, the others as
        strings, with ``fnlwgt`` left out; plus the 0/1 target; a DataFrame when ``as_frame``
        else a dict of arrays) and ``DESCR``.

    Raises
    ------
    OSError
        When the files are missing and cannot be downloaded (or ``download_if_missing`` is
        False), naming the files, the URL and where to place them by hand; nothing partial
        is cached, and a lookup without download creates no folder.
    NotADirectoryError
        When ``data_home`` is a file.
    ValueError
        When a file is truncated or edited: a line without the 15 fields and a label, or a
        numeric column holding text.

    References
    ----------
    B. Becker, R. Kohavi. Adult. UCI Machine Learning Repository, 1996.
    https://doi.org/10.24432/C5XW20
    """
    if subset not in ("train", "test", "all"):
        raise ValueError(f"subset must be 'train', 'test' or 'all', got {subset!r}.")
    folder = _locate(data_home, download_if_missing)
    train, test = _read(folder / "adult.data"), _read(folder / "adult.test")
    numeric_train = np.column_stack([train[c].astype(float) for c in NUMERIC])
    raw = {"train": [train], "test": [test], "all": [train, test]}[subset]
    raw = {c: np.concatenate([part[c] for part in raw]) for c in COLUMNS}
    return encode_bunch(raw, numeric=NUMERIC, categorical=CATEGORICAL, groups=GROUPS,
                        target=(raw[TARGET] == ">50K").astype(int), target_name=TARGET, descr="adult.rst",
                        as_frame=as_frame, mean=numeric_train.mean(axis=0), std=numeric_train.std(axis=0),
                        categories={c: np.unique(train[c]) for c in CATEGORICAL})
