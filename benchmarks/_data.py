"""Benchmark data loaders following ../shared/BENCHMARKS.md (the data directory is an argument)."""

from __future__ import annotations

import argparse
import os

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import OneHotEncoder, StandardScaler

ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week",
    "native-country", "income",
]


def command_line(doc: str) -> argparse.ArgumentParser:
    """The parser every benchmark starts from: its docstring as help, the data folder first."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", help="folder holding adult.data, adult.test and compas-scores-two-years.csv")
    return parser


def _encode(train: pd.DataFrame, test: pd.DataFrame, numeric, categorical):
    ct = ColumnTransformer([
        ("num", StandardScaler(), numeric),
        ("cat", OneHotEncoder(handle_unknown="ignore", sparse_output=False), categorical),
    ])
    return ct.fit_transform(train), ct.transform(test)


def load_adult(data_dir: str):
    """Adult per the protocol: returns X_train, y_train, g_train, X_test, y_test, g_test.

    Groups are DataFrames with columns ``sex`` and ``race`` (raw strings).
    """
    read = dict(names=ADULT_COLUMNS, skipinitialspace=True, na_values="?")
    train = pd.read_csv(os.path.join(data_dir, "adult.data"), **read).dropna()
    test = pd.read_csv(os.path.join(data_dir, "adult.test"), skiprows=1, **read).dropna()
    test["income"] = test["income"].str.rstrip(".")
    out = []
    for df in (train, test):
        out.append((df.drop(columns=["fnlwgt", "income"]), (df["income"] == ">50K").to_numpy(int),
                    df[["sex", "race"]].reset_index(drop=True)))
    numeric = ["age", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
    categorical = [c for c in out[0][0].columns if c not in numeric]
    X_train, X_test = _encode(out[0][0], out[1][0], numeric, categorical)
    return X_train, out[0][1], out[0][2], X_test, out[1][1], out[1][2]


def load_compas(data_dir: str, seed: int = 0):
    """COMPAS per the protocol, stratified 70/30 split with ``random_state=seed``."""
    df = pd.read_csv(os.path.join(data_dir, "compas-scores-two-years.csv"))
    df = df[df.days_b_screening_arrest.between(-30, 30) & (df.is_recid != -1)
            & (df.c_charge_degree != "O") & (df.score_text != "N/A")
            & df.race.isin(["African-American", "Caucasian"])].reset_index(drop=True)
    numeric = ["age", "priors_count", "juv_fel_count", "juv_misd_count", "juv_other_count"]
    categorical = ["sex", "race", "age_cat", "c_charge_degree"]
    y = df["two_year_recid"].to_numpy(int)
    tr, te = train_test_split(np.arange(len(df)), test_size=0.3, stratify=y, random_state=seed)
    X_train, X_test = _encode(df.iloc[tr], df.iloc[te], numeric, categorical)
    groups = df[["race", "sex"]]
    return (X_train, y[tr], groups.iloc[tr].reset_index(drop=True),
            X_test, y[te], groups.iloc[te].reset_index(drop=True))


def load_task_data(data_dir: str, quick: bool, n_seeds: int = 3):
    """Adult and the COMPAS splits of the T1-T4 tasks: ``(adult, {seed: compas}, seeds)``.

    COMPAS splits use the seeds ``0 .. n_seeds - 1``; ``quick`` keeps one COMPAS seed and 4000
    Adult training rows, for smoke runs.
    """
    seeds = [0] if quick else list(range(n_seeds))
    adult = load_adult(data_dir)
    if quick:
        keep = np.random.default_rng(0).choice(len(adult[1]), 4000, replace=False)
        adult = (adult[0][keep], adult[1][keep], adult[2].iloc[keep].reset_index(drop=True), *adult[3:])
    return adult, {s: load_compas(data_dir, s) for s in seeds}, seeds
